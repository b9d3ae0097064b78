//! `nexus fly`: the box mission on the simulated vehicle, with progress, verdict and report.

mod cli_support;

use cli_support::{json, nexus, reasons, Scratch, SPEED};
use predicates::prelude::*;

#[test]
fn flies_the_box_mission_to_landed_and_disarmed() {
    let scratch = Scratch::new("fly-box");
    let report_path = scratch.path("report.json");
    let report_arg = report_path.to_str().unwrap();
    let out = nexus(&[
        "fly",
        "examples/box.plan",
        "--speed",
        SPEED,
        "--instance",
        "150",
        "--json",
        report_arg,
    ])
    .assert()
    .success()
    .stdout(predicate::str::contains(
        "PASS: mission complete: 6 items flown",
    ))
    // Not a terminal: progress comes as plain lines with the item, mode, altitude, distance.
    .stdout(
        predicate::str::is_match(
            r"item 3/6 \| Mission \| armed \| alt \d+\.\d m \| \d+ m to next \| t \d+\.\d s",
        )
        .unwrap(),
    )
    .stdout(
        predicate::str::contains("PX4 [").and(predicate::str::contains("Mission finished, landed")),
    )
    .get_output()
    .clone();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let r = json(&std::fs::read(&report_path).expect("the report file"));
    assert_eq!(r["command"], "fly", "{stdout}");
    assert_eq!(r["passed"], true);
    assert_eq!(r["exit_code"], 0);
    assert_eq!(reasons(&r), ["met", "met", "met", "met"]);
    let mission = &r["mission"];
    assert_eq!(mission["items"].as_array().unwrap().len(), 6);
    assert_eq!(mission["items"][0]["command_name"], "NAV_TAKEOFF");
    assert_eq!(mission["uploaded"], true);
    assert_eq!(mission["complete"], true);
    assert_eq!(mission["current"], 5);
    // PX4 moved through every item, in order, on its own clock.
    let progress: Vec<u64> = mission["progress"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["item"].as_u64().unwrap())
        .collect();
    assert_eq!(progress, [0, 1, 2, 3, 4, 5], "{stdout}");
    let fin = &r["final"];
    assert_eq!(fin["armed"], false);
    assert_eq!(fin["landed_state"], "ON_GROUND");
    let texts: Vec<&str> = r["texts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["text"].as_str().unwrap())
        .collect();
    assert!(texts.contains(&"Mission finished, landed"), "{texts:?}");
    assert!(texts.contains(&"Disarmed by landing"), "{texts:?}");
    // The mission step says how long it took, in both clocks: its last reachable item is the
    // LAND, which PX4 reports reached on touchdown, so the step ends on the ground (its 5 Hz
    // EXTENDED_SYS_STATE may still say LANDING) and the landing step is met soon after.
    let flown = &r["steps"][1];
    assert!(flown["waited_sim_s"].as_f64().unwrap() > 10.0, "{flown}");
    assert!(flown["waited_wall_s"].as_f64().unwrap() > 0.0, "{flown}");
    assert!(
        flown["snapshot"]["height_m"].as_f64().unwrap().abs() < 0.5,
        "{flown}"
    );
    assert_eq!(mission["items_flown"], 6);
    assert_eq!(mission["reached"], 5);
    let land = &r["steps"][2];
    assert!(land["waited_sim_s"].as_f64().unwrap() < 2.0, "{land}");
    assert_eq!(land["snapshot"]["landed_state"], "ON_GROUND");
}

#[test]
fn a_plan_that_cannot_be_flown_fails_with_the_reason() {
    // A mission whose only item is a waypoint 40 km away and whose timeout is short: PX4 flies
    // toward it and the step times out.
    let scratch = Scratch::new("fly-far");
    let plan = scratch.file(
        "far.plan",
        r#"{"fileType": "Plan", "mission": {"items": [
  {"type": "SimpleItem", "command": 22, "frame": 3, "params": [0, 0, 0, null, 47.397742, 8.545594, 5]},
  {"type": "SimpleItem", "command": 16, "frame": 3, "params": [0, 0, 0, null, 47.75, 8.545594, 10]},
  {"type": "SimpleItem", "command": 21, "frame": 3, "params": [0, 0, 0, null, 47.75, 8.545594, 0]}
], "plannedHomePosition": [47.397742, 8.545594, 488]}}"#,
    );
    let out = nexus(&[
        "fly",
        plan.to_str().unwrap(),
        "--speed",
        SPEED,
        "--instance",
        "151",
        "--timeout-s",
        "25",
        "--json",
    ])
    .assert()
    .code(1)
    .stderr(predicate::str::contains(
        "FAIL: step 2/4 failed: timeout after 25.0 s sim",
    ))
    .get_output()
    .clone();
    let r = json(&out.stdout);
    assert_eq!(r["passed"], false);
    assert_eq!(r["exit_code"], 1);
    assert_eq!(reasons(&r), ["met", "timeout"]);
    assert_eq!(r["steps_total"], 4);
    assert_eq!(r["mission"]["complete"], false);
    assert_eq!(r["final"]["armed"], true);
}

#[test]
fn a_mission_px4_rejects_fails_with_its_answer() {
    // Item 1 is in MAV_FRAME_LOCAL_NED, which PX4's mission protocol refuses.
    let scratch = Scratch::new("fly-rejected");
    let plan = scratch.file(
        "local.plan",
        r#"{"fileType": "Plan", "mission": {"items": [
  {"type": "SimpleItem", "command": 22, "frame": 3, "params": [0, 0, 0, null, 47.397742, 8.545594, 5]},
  {"type": "SimpleItem", "command": 16, "frame": 1, "params": [0, 0, 0, null, 10, 10, 10]}
], "plannedHomePosition": [47.397742, 8.545594, 488]}}"#,
    );
    let out = nexus(&[
        "fly",
        plan.to_str().unwrap(),
        "--speed",
        SPEED,
        "--instance",
        "152",
        "--json",
    ])
    .assert()
    .code(1)
    .stderr(predicate::str::contains(
        "FAIL: mission upload failed: PX4 did not take the mission: rejected: UNSUPPORTED_FRAME (2)",
    ))
    .get_output()
    .clone();
    let r = json(&out.stdout);
    assert_eq!(r["mission"]["uploaded"], false);
    assert_eq!(r["mission"]["ack"], 2);
    assert_eq!(r["steps"].as_array().unwrap().len(), 0);
    assert_eq!(r["final"]["armed"], false);
}

#[test]
fn a_plan_with_a_geofence_and_rally_points_uploads_them_after_the_mission() {
    nexus(&[
        "fly",
        "examples/fenced.plan",
        "--speed",
        SPEED,
        "--instance",
        "253",
    ])
    .assert()
    .success()
    .stdout(
        predicate::str::contains("uploading 4 mission items from examples/fenced.plan")
            .and(predicate::str::contains(
                "uploading 5 geofence items from examples/fenced.plan",
            ))
            .and(predicate::str::contains(
                "uploading 2 rally points from examples/fenced.plan",
            ))
            .and(predicate::str::contains(
                "PASS: mission complete: 4 items flown",
            )),
    );
}
