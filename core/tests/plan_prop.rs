//! The plan reader never panics: real plans mutated (byte flips, truncations, insertions of
//! bytes and JSON tokens) and arbitrary bytes give a plan or a typed error whose offset lies in
//! the input.

use nexus_core::plan::json::validate;
use nexus_core::plan::{line_col, read_plan, PlanError};
use proptest::prelude::*;

const PLANS: [&[u8]; 3] = [
    include_bytes!("../../fixtures/plans/MC_mission_box.plan"),
    include_bytes!("../../fixtures/plans/MC_safe_landing.plan"),
    include_bytes!("../../fixtures/plan_errors/survey_complex_item.plan"),
];

const TOKENS: [&str; 16] = [
    "{",
    "}",
    "[",
    "]",
    ",",
    ":",
    "\"",
    "null",
    "true",
    "-",
    "1e999",
    "\"SimpleItem\"",
    "\"items\": ",
    "\\u00",
    "0.5",
    "\u{e9}",
];

fn check(bytes: &[u8]) {
    let read = read_plan::<8>(bytes);
    // The reader checks syntax (UTF-8 included) in its own pass: the same verdict as
    // `validate`, at the same offset, or none.
    let syntax = match &read {
        Err(PlanError::Syntax(e)) => Some(*e),
        _ => None,
    };
    assert_eq!(
        syntax,
        validate(bytes).err(),
        "{:?}",
        String::from_utf8_lossy(bytes)
    );
    match read {
        Ok(plan) => {
            assert!(plan.items.len() <= 8);
            for (i, it) in plan.items.iter().enumerate() {
                assert_eq!(it.seq as usize, i);
                it.validate().unwrap();
            }
        }
        Err(e) => {
            assert!(e.offset() <= bytes.len(), "{e:?} beyond {}", bytes.len());
            let _ = line_col(bytes, e.offset());
            let _ = e.to_string();
        }
    }
}

#[derive(Debug, Clone)]
enum Edit {
    Flip(usize, u8),
    Truncate(usize),
    InsertByte(usize, u8),
    InsertToken(usize, usize),
    Delete(usize, usize),
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        (any::<usize>(), any::<u8>()).prop_map(|(i, b)| Edit::Flip(i, b)),
        any::<usize>().prop_map(Edit::Truncate),
        (any::<usize>(), any::<u8>()).prop_map(|(i, b)| Edit::InsertByte(i, b)),
        (any::<usize>(), 0..TOKENS.len()).prop_map(|(i, t)| Edit::InsertToken(i, t)),
        (any::<usize>(), 1usize..40).prop_map(|(i, n)| Edit::Delete(i, n)),
    ]
}

fn apply(mut doc: Vec<u8>, edits: &[Edit]) -> Vec<u8> {
    for e in edits {
        let len = doc.len().max(1);
        match *e {
            Edit::Flip(i, b) => {
                if !doc.is_empty() {
                    doc[i % len] = b;
                }
            }
            Edit::Truncate(i) => doc.truncate(i % len),
            Edit::InsertByte(i, b) => doc.insert(i % (doc.len() + 1), b),
            Edit::InsertToken(i, t) => {
                let at = i % (doc.len() + 1);
                doc.splice(at..at, TOKENS[t].bytes());
            }
            Edit::Delete(i, n) => {
                let at = i % len;
                let end = (at + n).min(doc.len());
                if at < end {
                    doc.drain(at..end);
                }
            }
        }
    }
    doc
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2_000))]

    #[test]
    fn mutated_plans_never_panic(which in 0..PLANS.len(), edits in prop::collection::vec(edit(), 1..6)) {
        check(&apply(PLANS[which].to_vec(), &edits));
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..400)) {
        check(&bytes);
    }

    #[test]
    fn json_like_soup_never_panics(tokens in prop::collection::vec(0..TOKENS.len(), 0..80)) {
        let doc: String = tokens.iter().map(|&t| TOKENS[t]).collect();
        check(doc.as_bytes());
        let wrapped = format!("{{\"fileType\": \"Plan\", \"mission\": {{\"items\": [{doc}]}}}}");
        check(wrapped.as_bytes());
    }
}

#[test]
fn deep_nesting_is_an_error_not_a_stack_overflow() {
    let deep = format!(
        "{{\"fileType\": \"Plan\", \"mission\": {{\"x\": {}1{}}}}}",
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    assert!(matches!(
        read_plan::<8>(deep.as_bytes()),
        Err(nexus_core::plan::PlanError::Syntax(_))
    ));
}
