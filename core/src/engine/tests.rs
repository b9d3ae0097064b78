//! Internal checks that the public API cannot see (compiled thresholds, the text cursor).
//! Behaviour is tested through the public API in `core/tests/engine_*.rs`.

use super::condition::{Cmp, CmpMs, Cond};
use super::*;

#[test]
fn thresholds_compile_to_ms_and_ops() {
    let c = Condition::sim_time_s(1.5).op(Op::Le).compile(0).unwrap();
    assert_eq!(
        c,
        Cond::SimTime {
            cmp: CmpMs::Le(1500),
            relative: false
        }
    );
    let c = Condition::sim_time_s(2.0)
        .within(0.25)
        .relative()
        .compile(0)
        .unwrap();
    assert_eq!(
        c,
        Cond::SimTime {
            cmp: CmpMs::Within(2000, 250),
            relative: true
        }
    );
    assert_eq!(
        Condition::altitude_m(5.0).compile(0).unwrap(),
        Cond::Height(Cmp::Ge(5.0))
    );
    assert_eq!(
        Condition::time_s(0.0015).compile(0).unwrap(),
        Cond::Time { ms: 2 }
    );
}

#[test]
fn text_cursor_defaults_to_newest_seq_and_honours_since_seq() {
    assert_eq!(
        Condition::text("x").compile(7).unwrap().text_cursor(),
        Some(7)
    );
    assert_eq!(
        Condition::text("x")
            .since_seq(3)
            .compile(7)
            .unwrap()
            .text_cursor(),
        Some(3)
    );
}

#[test]
fn hold_and_timeout_compile_to_ms() {
    let w = Wait::armed().timeout_s(2.5).hold_s(0.5).compile(0).unwrap();
    assert_eq!((w.hold_ms, w.timeout_ms), (500, 2500));
    assert!(!w.relative);
    let w = Wait::armed()
        .timeout_s(1.0)
        .guard(Condition::sim_time_s(1.0).relative())
        .compile(0)
        .unwrap();
    assert!(w.relative, "a relative guard needs a reference tick too");
}

#[test]
fn wake_is_the_start_of_a_time_window_still_ahead() {
    let at = |c: Condition, sim: u64, start: Option<u64>, base: Option<u64>| {
        c.compile(0).unwrap().wake_ms(sim, start, base)
    };
    assert_eq!(at(Condition::time_s(2.0), 1_000, Some(500), None), 2_500);
    assert_eq!(at(Condition::time_s(2.0), 3_000, Some(500), None), u64::MAX);
    assert_eq!(at(Condition::sim_time_s(5.0), 1_000, None, None), 5_000);
    assert_eq!(
        at(Condition::sim_time_s(5.0).op(Op::Eq), 6_000, None, None),
        u64::MAX
    );
    assert_eq!(
        at(Condition::sim_time_s(5.0).op(Op::Le), 6_000, None, None),
        u64::MAX
    );
    assert_eq!(
        at(Condition::sim_time_s(5.0).within(0.5), 1_000, None, None),
        4_500
    );
    assert_eq!(
        at(
            Condition::sim_time_s(1.0).relative(),
            1_000,
            None,
            Some(800)
        ),
        1_800
    );
    assert_eq!(
        at(Condition::sim_time_s(1.0).relative(), 1_000, None, None),
        u64::MAX
    );
    assert_eq!(at(Condition::altitude_m(5.0), 0, None, None), u64::MAX);
}

#[test]
fn changed_readings_are_flagged_and_a_new_clock_flags_everything() {
    use super::condition::{dep, Readings};
    let a = Readings {
        sim_ms: Some(10),
        height_m: Some(1.0),
        ..Readings::UNKNOWN
    };
    assert_eq!(a.changed_since(&Readings::UNKNOWN), dep::ALL);
    let b = Readings {
        sim_ms: Some(20),
        height_m: Some(1.5),
        last_seq: 3,
        ..a
    };
    assert_eq!(b.changed_since(&a), dep::HEIGHT | dep::TEXT);
    assert_eq!(b.changed_since(&b), 0, "the clock alone is not a change");
}

proptest::proptest! {
    /// The text condition's byte search finds exactly what `str::contains` finds.
    #[test]
    fn text_search_is_str_contains(hay in "[ab\u{e9}\u{1F600} ]{0,40}", needle in "[ab\u{e9}]{0,4}") {
        proptest::prop_assert_eq!(
            super::condition::contains(hay.as_bytes(), needle.as_bytes()),
            hay.contains(needle.as_str())
        );
    }
}
