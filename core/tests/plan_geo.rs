//! The `.plan` reader's `geoFence` and `rallyPoints`: QGroundControl's layout to PX4's fence and
//! rally items, and errors at the byte of the value they concern.

use nexus_core::plan::{read_geo, read_plan, GeoPlan, PlanError};

const PLAN: &str = r#"{"fileType": "Plan", "version": 1,
 "geoFence": {"circles": [
   {"circle": {"center": [47.3977, 8.5456], "radius": 150.5}, "inclusion": true, "version": 1},
   {"circle": {"center": [47.398, 8.546], "radius": 10}, "inclusion": false, "version": 1}],
  "polygons": [
   {"inclusion": true, "polygon": [[47.39, 8.54], [47.39, 8.55], [47.40, 8.55], [47.40, 8.54]], "version": 1},
   {"polygon": [[47.395, 8.545], [47.395, 8.546], [47.396, 8.546]], "inclusion": false, "version": 1}],
  "version": 2},
 "mission": {"items": [
   {"type": "SimpleItem", "command": 22, "frame": 3, "params": [0, 0, 0, null, 47.3977, 8.5456, 5]}],
  "plannedHomePosition": [47.3977, 8.5456, 488]},
 "rallyPoints": {"points": [[47.3981, 8.5461, 20], [47.3970, 8.5450, 15.5]], "version": 2}}"#;

type Geo = GeoPlan<16, 4>;

#[test]
fn polygons_then_circles_then_rally_points_as_px4_items() {
    let g: Geo = read_geo(PLAN.as_bytes()).unwrap();
    let cmds: Vec<u16> = g.fence.iter().map(|i| i.command).collect();
    assert_eq!(
        cmds,
        [5001, 5001, 5001, 5001, 5002, 5002, 5002, 5003, 5004],
        "polygons in order, then circles"
    );
    for (i, it) in g.fence.iter().enumerate() {
        assert_eq!(it.seq as usize, i);
        assert_eq!(
            it.frame, 0,
            "GLOBAL, as QGroundControl sends fence items to PX4"
        );
        assert!(!it.autocontinue);
    }
    assert_eq!(
        g.fence[0].params[0], 4.0,
        "vertex count of the first polygon"
    );
    assert_eq!(g.fence[4].params[0], 3.0, "vertex count of the second");
    assert_eq!((g.fence[1].x, g.fence[1].y), (473_900_000, 85_500_000));
    assert_eq!(g.fence[7].params[0], 150.5, "radius, m");
    assert_eq!((g.fence[7].x, g.fence[7].y), (473_977_000, 85_456_000));
    assert_eq!(g.fence[8].params[0], 10.0);
    assert_eq!(g.rally.len(), 2);
    assert_eq!(
        (g.rally[1].command, g.rally[1].frame, g.rally[1].seq),
        (5100, 3, 1),
        "GLOBAL_RELATIVE_ALT: QGroundControl's frame, one PX4's RTL takes"
    );
    assert!(!g.rally[1].autocontinue);
    assert_eq!(
        (g.rally[1].x, g.rally[1].y, g.rally[1].z),
        (473_970_000, 85_450_000, 15.5)
    );
    // The mission is read as before, the sections skipped.
    assert_eq!(read_plan::<4>(PLAN.as_bytes()).unwrap().items.len(), 1);
}

/// What PX4 sends back on a download (its `format_mavlink_mission_item` over what it stored):
/// fence items in GLOBAL_INT with autocontinue off, rally points in the `_INT` variant of their
/// frame. The same plans; any other difference is one.
#[test]
fn px4s_download_is_the_upload() {
    use nexus_core::offboard::GeoKind;
    let g: Geo = read_geo(PLAN.as_bytes()).unwrap();
    let fence: Vec<_> = g
        .fence
        .iter()
        .map(|i| nexus_core::mission::MissionItem { frame: 5, ..*i })
        .collect();
    let rally: Vec<_> = g
        .rally
        .iter()
        .map(|i| nexus_core::mission::MissionItem { frame: 6, ..*i })
        .collect();
    assert!(GeoKind::Fence.same_items(&g.fence, &fence));
    assert!(GeoKind::Rally.same_items(&g.rally, &rally));
    // A fence item stored in another global frame also comes back in GLOBAL_INT, autocontinue
    // off; a rally point's autocontinue is kept by PX4, so a difference there is one.
    let mut up = g.fence[0];
    (up.frame, up.autocontinue) = (3, true);
    assert!(GeoKind::Fence.same_item(&up, &fence[0]));
    let mut down = rally[0];
    down.autocontinue = true;
    assert!(!GeoKind::Rally.same_item(&g.rally[0], &down));
    // GLOBAL (AMSL) and GLOBAL_RELATIVE_ALT are different rally points.
    assert!(!GeoKind::Rally.same_item(
        &g.rally[0],
        &nexus_core::mission::MissionItem {
            frame: 5,
            ..rally[0]
        }
    ));
    // Another place, another count.
    let mut moved = rally.clone();
    moved[1].x += 1;
    assert!(!GeoKind::Rally.same_items(&g.rally, &moved));
    assert!(!GeoKind::Fence.same_items(&g.fence, &fence[1..]));
}

#[test]
fn absent_and_empty_sections_are_empty() {
    let g: Geo = read_geo(br#"{"fileType": "Plan", "mission": {"items": []}}"#).unwrap();
    assert!(g.is_empty());
    // QGC writes empty sections into every plan (examples/box.plan is one of its files).
    let src = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/box.plan")).unwrap();
    assert!(String::from_utf8_lossy(&src).contains("\"geoFence\""));
    let g: Geo = read_geo(&src).unwrap();
    assert!(g.is_empty());
}

#[test]
fn the_example_plan_has_a_fence_and_rally_points() {
    let src = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../examples/fenced.plan"
    ))
    .unwrap();
    let g: Geo = read_geo(&src).unwrap();
    assert!(g.fence.iter().any(|i| i.command == 5001));
    assert!(g.fence.iter().any(|i| i.command == 5004));
    assert!(!g.rally.is_empty());
}

fn err(doc: &str) -> PlanError {
    read_geo::<16, 4>(doc.as_bytes()).unwrap_err()
}

fn at(doc: &str, needle: &str) -> usize {
    doc.find(needle).unwrap()
}

#[test]
fn errors_point_at_the_value() {
    let doc = PLAN.replace(
        "[[47.395, 8.545], [47.395, 8.546], [47.396, 8.546]]",
        "[[47.395, 8.545], [47.395, 8.546]]",
    );
    let e = err(&doc);
    assert!(matches!(e, PlanError::BadGeo { .. }), "{e}");
    assert_eq!(
        e.offset(),
        at(&doc, "[[47.395, 8.545]"),
        "two vertices: {e}"
    );

    let doc = PLAN.replace("[47.40, 8.54]]", "[47.40]]");
    assert_eq!(
        err(&doc).offset(),
        at(&doc, "[47.40]]"),
        "a vertex without longitude"
    );

    let doc = PLAN.replace("\"radius\": 10}", "\"radius\": -10}");
    let e = err(&doc);
    assert_eq!(e.offset(), at(&doc, "-10}"), "{e}");
    assert!(e.to_string().contains("radius"), "{e}");

    let doc = PLAN.replace("[47.3981, 8.5461, 20]", "[97.3981, 8.5461, 20]");
    let e = err(&doc);
    assert_eq!(e.offset(), at(&doc, "97.3981"), "{e}");
    assert!(e.to_string().contains("latitude"), "{e}");

    let doc = PLAN.replace(
        "\"inclusion\": false, \"version\": 1}],\n  \"polygons\"",
        "\"inclusion\": \"no\", \"version\": 1}],\n  \"polygons\"",
    );
    assert_eq!(err(&doc).offset(), at(&doc, "\"no\""));

    let doc = PLAN
        .replace("\"points\": [[", "\"points\": {\"a\": [[")
        .replace("15.5]]", "15.5]]}");
    assert_eq!(
        err(&doc).offset(),
        at(&doc, "{\"a\""),
        "points is not an array"
    );

    let e = err(r#"{"fileType": "Mission"}"#);
    assert!(matches!(e, PlanError::NotAPlan { offset: 13, .. }), "{e:?}");
    let e = err(r#"{"fileType": "Plan", "geoFence": [}"#);
    assert!(matches!(e, PlanError::Syntax(_)), "{e:?}");
}

#[test]
fn capacity_is_an_error_at_the_first_item_that_does_not_fit() {
    let e = read_geo::<5, 4>(PLAN.as_bytes()).unwrap_err();
    assert_eq!(
        e,
        PlanError::TooManyItems {
            capacity: 5,
            count: 9,
            offset: at(PLAN, "[47.395, 8.546]"),
        }
    );
    let e = read_geo::<16, 1>(PLAN.as_bytes()).unwrap_err();
    assert_eq!(e.offset(), at(PLAN, "[47.3970, 8.5450, 15.5]"));
}

#[test]
fn never_panics_on_cut_documents() {
    for n in 0..PLAN.len() {
        if PLAN.is_char_boundary(n) {
            let _ = read_geo::<16, 4>(&PLAN.as_bytes()[..n]);
        }
    }
}
