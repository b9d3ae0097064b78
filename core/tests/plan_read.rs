//! Every plan in fixtures/plans/ reads to the items QGroundControl wrote (values checked
//! against the files by hand), and every malformed input gives its typed error with a position.

use nexus_core::mission::MissionItem;
use nexus_core::plan::{line_col, read_plan, PlanError, PlannedHome, SyntaxKind};

const BOX: &[u8] = include_bytes!("../../fixtures/plans/MC_mission_box.plan");
const SAFE: &[u8] = include_bytes!("../../fixtures/plans/MC_safe_landing.plan");
const SURVEY: &[u8] = include_bytes!("../../fixtures/plan_errors/survey_complex_item.plan");

fn s(b: &[u8]) -> String {
    String::from_utf8(b.to_vec()).unwrap()
}

fn wp(seq: u16, command: u16, param1: f32, x: i32, y: i32, z: f32) -> MissionItem {
    MissionItem {
        seq,
        frame: 3,
        command,
        autocontinue: true,
        params: [param1, 0.0, 0.0, f32::NAN],
        x,
        y,
        z,
    }
}

#[test]
fn every_fixture_plan_reads() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../fixtures/plans");
    let mut n = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "plan") {
            let bytes = std::fs::read(&path).unwrap();
            let plan = read_plan::<64>(&bytes).unwrap_or_else(|e| panic!("{path:?}: {e}"));
            assert!(!plan.items.is_empty());
            for (i, it) in plan.items.iter().enumerate() {
                assert_eq!(it.seq as usize, i);
                it.validate().unwrap();
            }
            n += 1;
        }
    }
    assert!(n >= 2);
}

#[test]
fn the_box_mission() {
    let plan = read_plan::<8>(BOX).unwrap();
    assert_eq!(
        plan.home,
        PlannedHome {
            lat_deg: 47.397742,
            lon_deg: 8.545594,
            alt_amsl_m: 488.0
        }
    );
    let want = [
        wp(0, 22, 0.0, 473977394, 85455904, 5.0),
        wp(1, 16, 0.0, 473978729, 85455933, 10.0),
        wp(2, 16, 0.0, 473978729, 85453415, 10.0),
        wp(3, 16, 0.0, 473977394, 85453367, 10.0),
        wp(4, 16, 0.0, 473977394, 85455904, 10.0),
        wp(5, 21, 0.0, 473977394, 85455914, 0.0),
    ];
    assert_eq!(&plan.items[..], &want[..]);
}

#[test]
fn the_safe_landing_mission() {
    let plan = read_plan::<8>(SAFE).unwrap();
    assert_eq!(
        plan.home,
        PlannedHome {
            lat_deg: 47.3977419,
            lon_deg: 8.5455941,
            alt_amsl_m: 489.0
        }
    );
    let want = [
        wp(0, 22, 15.0, 473977394, 85455942, 18.0),
        wp(1, 16, 0.0, 473977394, 85456982, 18.0),
        wp(2, 16, 0.0, 473977432, 85458050, 18.0),
        wp(3, 21, 0.0, 473977432, 85458040, 0.0),
    ];
    assert_eq!(&plan.items[..], &want[..]);
}

#[test]
fn defaults_nulls_and_rounding() {
    let doc = br#"{"fileType": "Plan", "mission": {"items": [
        {"type": "SimpleItem", "command": 16, "frame": 3,
         "params": [null, null, null, null, null, null, null]},
        {"type": "SimpleItem", "command": 16, "frame": 3, "autoContinue": false,
         "params": [1, 2, 3, 4, 0.00000005, -0.00000025, 7.25]}
    ]}}"#;
    let plan = read_plan::<2>(doc).unwrap();
    assert_eq!(
        plan.home,
        PlannedHome::default(),
        "no plannedHomePosition: (0, 0, 0)"
    );
    let a = plan.items[0];
    assert!(a.params.iter().all(|p| p.is_nan()));
    assert_eq!((a.x, a.y, a.z, a.autocontinue), (0, 0, 0.0, true));
    let b = plan.items[1];
    assert_eq!(b.params, [1.0, 2.0, 3.0, 4.0]);
    // Half to even, as Python's round: 0.5 → 0 and -2.5 → -2 (half away from zero: 1, -3).
    assert_eq!((b.x, b.y, b.z, b.autocontinue), (0, -2, 7.25, false));
}

/// Bytes that are not UTF-8 are an error at the first of them, unless the JSON before them is
/// wrong already (the end of that part does not count).
#[test]
fn bytes_that_are_not_utf8() {
    let err = |doc: &[u8]| match read_plan::<8>(doc) {
        Err(PlanError::Syntax(e)) => (e.offset, e.kind),
        other => panic!("{other:?}"),
    };
    let bad = SyntaxKind::BadUtf8;
    assert_eq!(err(b"{\"fileType\": \"Pl\xffan\"}"), (16, bad));
    assert_eq!(
        err(b"{\"fileType\": \"Plan\xc3\"}"),
        (18, bad),
        "a cut sequence"
    );
    assert_eq!(
        err(b"[1.\xff]"),
        (3, bad),
        "the part before ends in a number"
    );
    assert_eq!(err(b"{} \xff"), (3, bad), "after the value");
    assert_eq!(err(b"\xff"), (0, bad));
    assert_eq!(err(b"{x \xff}"), (1, SyntaxKind::UnexpectedByte(b'x')));
    assert_eq!(err(b"{}x\xff"), (2, SyntaxKind::TrailingData));
    // Valid UTF-8 outside a string is a syntax error of its own.
    assert_eq!(
        err("[\u{e9}]".as_bytes()),
        (1, SyntaxKind::UnexpectedByte(0xc3))
    );
    let mut doc = BOX.to_vec();
    let at = s(BOX).find("SimpleItem").unwrap();
    doc[at] = 0xe9;
    assert_eq!(err(&doc), (at, bad));
}

#[test]
fn truncated_json_is_a_syntax_error_at_the_end() {
    for cut in [1, 100, 500, 1234, BOX.len() - 2] {
        let e = read_plan::<8>(&BOX[..cut]).unwrap_err();
        assert_eq!(
            e,
            PlanError::Syntax(nexus_core::plan::SyntaxError {
                offset: cut,
                kind: SyntaxKind::UnexpectedEnd
            }),
            "cut at {cut}"
        );
    }
    let e = read_plan::<8>(b"").unwrap_err();
    assert_eq!(e.offset(), 0);
    // A stray comma: pointed at, with its line and column.
    let doc = s(BOX).replacen("\"version\": 2\n    },", "\"version\": 2,\n    },", 1);
    let e = read_plan::<8>(doc.as_bytes()).unwrap_err();
    assert!(matches!(e, PlanError::Syntax(se) if se.kind == SyntaxKind::UnexpectedByte(b'}')));
    assert_eq!(line_col(doc.as_bytes(), e.offset()), (9, 5));
}

#[test]
fn not_a_plan() {
    let doc = s(BOX).replace("\"fileType\": \"Plan\"", "\"fileType\": \"Mission\"");
    let e = read_plan::<8>(doc.as_bytes()).unwrap_err();
    assert_eq!(
        e,
        PlanError::NotAPlan {
            offset: doc.find("\"Mission\"").unwrap(),
            found: Some("\"Mission\"".try_into().unwrap())
        }
    );
    assert_eq!(e.to_string(), "not a QGC .plan (fileType=\"Mission\")");
    let doc = s(BOX).replace("\"fileType\": \"Plan\",", "");
    assert!(matches!(
        read_plan::<8>(doc.as_bytes()),
        Err(PlanError::NotAPlan { found: None, .. })
    ));
    assert!(matches!(
        read_plan::<8>(b"[1, 2]"),
        Err(PlanError::NotAPlan { offset: 0, .. })
    ));
    // Not a plan beats everything the mission holds (the Python client checks it first).
    let doc = s(SURVEY).replace("\"Plan\"", "\"plan\"");
    assert!(matches!(
        read_plan::<8>(doc.as_bytes()),
        Err(PlanError::NotAPlan { .. })
    ));
}

#[test]
fn no_mission_object() {
    let doc = r#"{"fileType": "Plan", "geoFence": {}}"#;
    assert_eq!(
        read_plan::<8>(doc.as_bytes()),
        Err(PlanError::NoMission { offset: 0 })
    );
    let doc = r#"{"fileType": "Plan", "mission": [1]}"#;
    assert_eq!(
        read_plan::<8>(doc.as_bytes()),
        Err(PlanError::NoMission {
            offset: doc.find('[').unwrap()
        })
    );
    assert_eq!(
        read_plan::<8>(br#"{"fileType": "Plan", "mission": null}"#)
            .unwrap_err()
            .to_string(),
        "no 'mission' object"
    );
}

#[test]
fn a_complex_item_is_refused() {
    let e = read_plan::<8>(SURVEY).unwrap_err();
    let text = s(SURVEY);
    let item1 = text
        .find("{\n                \"TransectStyleComplexItem\"")
        .unwrap();
    assert_eq!(
        e,
        PlanError::NotSimpleItem {
            index: 1,
            offset: item1,
            kind: Some("ComplexItem".try_into().unwrap())
        }
    );
    assert_eq!(
        e.to_string(),
        "item 1 is a 'ComplexItem'; only 'SimpleItem' is supported"
    );
    assert_eq!(line_col(SURVEY, e.offset()), (36, 13));
}

#[test]
fn six_params() {
    // Item 2 loses its last param.
    let text = s(BOX);
    let at = text
        .find("8.545341491699219,\n                    10")
        .unwrap();
    let doc = format!(
        "{}{}",
        &text[..at + "8.545341491699219".len()],
        &text[at + "8.545341491699219,\n                    10".len()..]
    );
    let e = read_plan::<8>(doc.as_bytes()).unwrap_err();
    assert!(
        matches!(
            e,
            PlanError::ParamCount {
                index: 2,
                count: 6,
                ..
            }
        ),
        "{e:?}"
    );
    assert_eq!(e.to_string(), "item 2 has 6 params, expected 7");
    // The first bad item wins, as in the Python client: a complex item before it.
    let doc = doc.replacen("\"type\": \"SimpleItem\"", "\"type\": \"ComplexItem\"", 2);
    assert!(matches!(
        read_plan::<8>(doc.as_bytes()),
        Err(PlanError::NotSimpleItem { index: 0, .. })
    ));
}

#[test]
fn too_many_items() {
    let e = read_plan::<3>(BOX).unwrap_err();
    let text = s(BOX);
    let fourth = text
        .match_indices("{\n                \"AMSLAltAboveTerrain\"")
        .nth(3)
        .unwrap()
        .0;
    assert_eq!(
        e,
        PlanError::TooManyItems {
            capacity: 3,
            count: 6,
            offset: fourth
        }
    );
    assert!(read_plan::<6>(BOX).is_ok());
}

#[test]
fn wrong_types_point_at_the_value() {
    let text = s(BOX);
    // (replace, with, the value a type error must point at, what was expected there)
    let cases: [(&str, &str, &str, &str); 6] = [
        (
            "\"command\": 16",
            "\"command\": \"16\"",
            "\"16\"",
            "a number",
        ),
        (
            "\"autoContinue\": true",
            "\"autoContinue\": \"yes\"",
            "\"yes\"",
            "true, false or null",
        ),
        ("\"type\": \"SimpleItem\"", "\"type\": 5", "5", "a string"),
        (
            "47.39787292480469",
            "\"47.39787292480469\"",
            "\"47.39787292480469\"",
            "a number or null",
        ),
        ("\"frame\": 3", "\"frame\": [3]", "[3]", "a number"),
        (
            "\"items\": [",
            "\"items\": {\"a\": 1}, \"x\": [",
            "{\"a\": 1}",
            "an array of items",
        ),
    ];
    for (from, to, value, expected) in cases {
        let doc = text.replacen(from, to, 1);
        let e = read_plan::<8>(doc.as_bytes()).unwrap_err();
        let at = doc.find(to).unwrap() + to.find(value).unwrap();
        assert_eq!(
            e,
            PlanError::Type {
                offset: at,
                expected
            },
            "{to}"
        );
    }
    let doc = text.replacen("\"params\": [", "\"params\": 5, \"x\": [", 1);
    assert!(matches!(
        read_plan::<8>(doc.as_bytes()),
        Err(PlanError::Type {
            expected: "an array of numbers or nulls",
            ..
        })
    ));
    let doc = text.replacen(
        "\"plannedHomePosition\": [",
        "\"plannedHomePosition\": [null, ",
        1,
    );
    assert!(matches!(
        read_plan::<8>(doc.as_bytes()),
        Err(PlanError::Type {
            expected: "a number",
            ..
        })
    ));
}

#[test]
fn bad_fields_and_values() {
    let text = s(BOX);
    let e = read_plan::<8>(
        text.replacen("\"command\": 16", "\"command\": 9999", 1)
            .as_bytes(),
    );
    assert!(matches!(
        e,
        Err(PlanError::UnknownCommand {
            index: 1,
            command: 9999,
            ..
        })
    ));
    let e = read_plan::<8>(text.replacen("\"frame\": 3", "\"frame\": 99", 1).as_bytes());
    assert!(matches!(
        e,
        Err(PlanError::UnknownFrame {
            index: 0,
            frame: 99,
            ..
        })
    ));
    let e = read_plan::<8>(
        text.replacen("\"frame\": 3", "\"frame\": 3.5", 1)
            .as_bytes(),
    );
    assert!(matches!(
        e,
        Err(PlanError::BadField {
            index: 0,
            field: "frame",
            missing: false,
            ..
        })
    ));
    let e = read_plan::<8>(text.replacen("\"command\": 16,", "", 1).as_bytes());
    assert!(matches!(
        e,
        Err(PlanError::BadField {
            index: 1,
            field: "command",
            missing: true,
            ..
        })
    ));
    // A latitude too large for MISSION_ITEM_INT is out of range, said as a latitude.
    let doc = text.replacen("47.39787292480469", "1e300", 1);
    let e = read_plan::<8>(doc.as_bytes()).unwrap_err();
    assert!(
        matches!(
            e,
            PlanError::OutOfRange {
                index: Some(1),
                field: "latitude (params[4])",
                ..
            }
        ),
        "{e:?}"
    );
    assert_eq!(e.offset(), doc.find("1e300").unwrap());
    let doc = text.replacen("            488\n", "            488,\n 5\n", 1);
    let e = read_plan::<8>(doc.as_bytes()).unwrap_err();
    assert_eq!(
        e,
        PlanError::BadHome {
            offset: doc.find("[\n            47.397742").unwrap(),
            count: 4
        }
    );
}

#[test]
fn unknown_keys_and_sections_are_skipped() {
    let text = s(BOX).replacen(
        "\"fileType\": \"Plan\",",
        "\"fileType\": \"Plan\", \"extra\": {\"deep\": [[{\"a\": [true, null, \"x\\\"y\"]}]]},",
        1,
    );
    let text = text.replacen(
        "\"doJumpId\": 1,",
        "\"doJumpId\": 1, \"TransectStyleComplexItem\": {\"Items\": [{\"params\": \"no\"}]},",
        1,
    );
    assert_eq!(
        read_plan::<8>(text.as_bytes()).unwrap(),
        read_plan::<8>(BOX).unwrap()
    );
}

/// `text` with the `n`th (0-based) occurrence of `from` replaced by `to`, and the offset of the
/// replacement.
fn replace_nth(text: &str, from: &str, to: &str, n: usize) -> (String, usize) {
    let at = text.match_indices(from).nth(n).unwrap().0;
    let mut doc = text.to_string();
    doc.replace_range(at..at + from.len(), to);
    (doc, at)
}

/// What is replaced, which occurrence, by what, the error's index, field, words in it.
type RangeCase = (
    &'static str,
    usize,
    &'static str,
    Option<usize>,
    &'static str,
    &'static str,
);

#[test]
fn values_out_of_range_are_errors_at_the_value() {
    let text = s(BOX);
    let cases: &[RangeCase] = &[
        (
            "47.39787292480469",
            0,
            "91",
            Some(1),
            "latitude (params[4])",
            "-90 to 90",
        ),
        (
            "47.39787292480469",
            0,
            "-94.5",
            Some(1),
            "latitude (params[4])",
            "-90 to 90",
        ),
        (
            "8.54559326171875",
            0,
            "999",
            Some(1),
            "longitude (params[5])",
            "-180 to 180",
        ),
        (
            "8.54559326171875",
            0,
            "-180.0000001",
            Some(1),
            "longitude (params[5])",
            "-180 to 180",
        ),
        (
            "            10\n",
            0,
            "            1e400\n",
            Some(1),
            "altitude (params[6])",
            "finite",
        ),
        (
            "            10\n",
            1,
            "            -1e6\n",
            Some(2),
            "altitude (params[6])",
            "-1000 to 10000",
        ),
        (
            "            5\n",
            0,
            "            10000.5\n",
            Some(0),
            "altitude (params[6])",
            "-1000 to 10000",
        ),
        (
            "                    0,\n",
            0,
            "                    1e39,\n",
            Some(0),
            "param1 (params[0])",
            "finite",
        ),
        (
            "                    0,\n",
            2,
            "                    -4e38,\n",
            Some(0),
            "param3 (params[2])",
            "finite",
        ),
        (
            "            47.397742,",
            0,
            "            90.5,",
            None,
            "latitude",
            "-90 to 90",
        ),
        (
            "            8.545594,",
            0,
            "            181,",
            None,
            "longitude",
            "-180 to 180",
        ),
        (
            "            488\n",
            0,
            "            1e400\n",
            None,
            "altitude",
            "finite",
        ),
    ];
    for &(from, nth, to, index, field, words) in cases {
        let (doc, at) = replace_nth(&text, from, to, nth);
        let value_at = at + to.len() - to.trim_start().len();
        let e = read_plan::<8>(doc.as_bytes()).unwrap_err();
        match &e {
            PlanError::OutOfRange {
                index: i,
                field: f,
                offset,
                ..
            } => {
                assert_eq!((*i, *f, *offset), (index, field, value_at), "{to}: {e}");
            }
            other => panic!("{to}: {other:?}"),
        }
        let shown = e.to_string();
        assert!(shown.contains(words), "{to}: {shown}");
        let value = to.trim().trim_end_matches(',');
        assert!(shown.contains(value), "{to}: {shown}");
        let (line, _) = line_col(doc.as_bytes(), e.offset());
        assert_eq!(line, doc[..value_at].matches('\n').count() + 1, "{to}");
    }
    // The edges are in range, and a non-global frame keeps x and y as they are.
    for (from, to) in [
        ("47.39787292480469", "-90"),
        ("8.54559326171875", "180"),
        ("            10\n", "            -1000\n"),
    ] {
        let (doc, _) = replace_nth(&text, from, to, 0);
        read_plan::<8>(doc.as_bytes()).unwrap_or_else(|e| panic!("{to}: {e}"));
    }
}
