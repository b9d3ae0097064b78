//! Verdicts you can trust: `nexus fly` never passes items that were not flown (LAND-only,
//! single-item and RTL-ended plans), and a step that fails says why — an arm PX4 never became
//! armable for, a mode PX4 refused — on its line, in the failure line and in the JSON report.
//! Against the simulated vehicle over UDP.
//!
//! SITL instances used here: 224–231 (reserved for these tests).

mod cli_support;

use cli_support::{json, nexus, reasons, Scratch, SPEED};
use serde_json::Value;

/// A .plan of `items` (command, latitude, altitude) around the simulated vehicle's home.
fn plan_text(items: &[(u16, f64, f64)]) -> String {
    let items: Vec<String> = items
        .iter()
        .map(|(c, lat, alt)| match c {
            // As QGroundControl writes an RTL: no position, MAV_FRAME_MISSION.
            20 => r#"{"type": "SimpleItem", "command": 20, "frame": 2, "params": [0, 0, 0, 0, 0, 0, 0]}"#.to_string(),
            _ => format!(
                r#"{{"type": "SimpleItem", "command": {c}, "frame": 3, "params": [0, 0, 0, null, {lat}, 8.545594, {alt}]}}"#
            ),
        })
        .collect();
    format!(
        r#"{{"fileType": "Plan", "mission": {{"items": [{}], "plannedHomePosition": [47.397742, 8.545594, 488]}}}}"#,
        items.join(",\n")
    )
}

/// Fly `items` with `nexus fly` on `instance`; returns (exit code, human output, report).
fn fly(
    name: &str,
    items: &[(u16, f64, f64)],
    instance: &str,
    extra: &[&str],
) -> (i32, String, Value) {
    let scratch = Scratch::new(name);
    let plan = scratch.file("p.plan", &plan_text(items));
    let mut args = vec![
        "fly",
        plan.to_str().unwrap(),
        "--speed",
        SPEED,
        "--instance",
        instance,
        "--json",
    ];
    args.extend_from_slice(extra);
    let out = nexus(&args)
        .timeout(std::time::Duration::from_secs(240))
        .output()
        .unwrap();
    let human = String::from_utf8_lossy(&out.stderr).to_string();
    (out.status.code().unwrap_or(-1), human, json(&out.stdout))
}

/// Run `program` (TOML) with `nexus run` on `instance`; returns (exit code, stdout, report).
fn run(name: &str, program: &str, instance: &str) -> (i32, String, Value) {
    let scratch = Scratch::new(name);
    let prog = scratch.file("p.toml", program);
    let report = scratch.path("report.json");
    let out = nexus(&[
        "run",
        prog.to_str().unwrap(),
        "--speed",
        SPEED,
        "--instance",
        instance,
        "--json",
        report.to_str().unwrap(),
    ])
    .timeout(std::time::Duration::from_secs(240))
    .output()
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let r = json(&std::fs::read(&report).unwrap_or_else(|e| panic!("no report ({e}): {stdout}")));
    (out.status.code().unwrap_or(-1), stdout, r)
}

const HOME_LAT: f64 = 47.397742;
const TAKEOFF: u16 = 22;
const WAYPOINT: u16 = 16;
const LAND: u16 = 21;
const RTL: u16 = 20;

#[test]
fn a_plan_of_999_land_items_fails_with_the_items_flown_counted_honestly() {
    let items = vec![(LAND, HOME_LAT, 0.0); 999];
    let (code, human, r) = fly("truth-lands", &items, "224", &[]);
    assert_eq!(code, 1, "{human}");
    assert!(!human.contains("PASS"), "{human}");
    let verdict = r["verdict"].as_str().unwrap();
    assert!(verdict.starts_with("FAIL: "), "{verdict}");
    assert!(verdict.contains("(1 of 999 items flown)"), "{verdict}");
    assert!(verdict.contains("never left the ground"), "{verdict}");
    assert!(
        verdict.contains("998 of the plan's 999 items come after item 0"),
        "{verdict}"
    );
    let m = &r["mission"];
    assert_eq!(m["items_flown"], 1, "{m}");
    assert_eq!(m["last_reachable"], 0, "{m}");
    assert_eq!(m["reached"], 0, "{m}");
    assert_eq!(r["passed"], false);
}

#[test]
fn items_after_a_landing_are_never_flown_and_the_plan_fails() {
    // Takeoff, land, then a waypoint: PX4 ends the mission on touchdown and disarms; the
    // flight itself goes well, the waypoint is never flown.
    let items = [
        (TAKEOFF, HOME_LAT, 5.0),
        (LAND, HOME_LAT, 0.0),
        (WAYPOINT, HOME_LAT + 0.0002, 10.0),
    ];
    let (code, human, r) = fly("truth-after-land", &items, "230", &[]);
    assert_eq!(code, 1, "{human}");
    assert_eq!(reasons(&r), ["met", "met", "met", "met"], "{human}");
    let verdict = r["verdict"].as_str().unwrap();
    assert_eq!(
        verdict,
        "FAIL: 1 of the plan's 3 items come after item 1, the last one PX4 flies, and are never \
         flown (2 of 3 items flown)"
    );
    assert_eq!(r["mission"]["complete"], true);
    assert_eq!(r["mission"]["items_flown"], 2);
}

#[test]
fn a_single_waypoint_plan_is_met_only_once_the_vehicle_got_there() {
    // One waypoint 10 m up: PX4 climbs and flies to it, then loiters there (a mission without
    // a landing never lands): the mission step is met in the air, the landing step times out.
    let items = [(WAYPOINT, HOME_LAT + 0.0002, 10.0)];
    let (code, human, r) = fly("truth-one", &items, "225", &[]);
    assert_eq!(code, 1, "{human}");
    assert_eq!(reasons(&r)[..2], ["met", "met"], "{human}");
    let mission_step = &r["steps"][1];
    assert!(
        mission_step["waited_sim_s"].as_f64().unwrap() > 3.0,
        "met only after flying: {mission_step}"
    );
    assert!(
        mission_step["snapshot"]["height_m"].as_f64().unwrap() > 8.0,
        "met in the air: {mission_step}"
    );
    assert_eq!(r["mission"]["items_flown"], 1);
    assert_eq!(r["mission"]["complete"], true);
    let verdict = r["verdict"].as_str().unwrap();
    assert!(
        verdict.starts_with("FAIL: step 3/4 failed: timeout"),
        "{verdict}"
    );
    assert!(verdict.contains("(1 of 1 items flown)"), "{verdict}");
    // The landing step says what it read: the vehicle was still in the air.
    let why = r["steps"][2]["explanation"].as_str().unwrap();
    assert_eq!(why, "nothing outstanding; `landed` read IN_AIR at the end");
}

#[test]
fn an_rtl_ended_plan_passes_counting_the_items_reached_and_the_rtl() {
    let items = [
        (TAKEOFF, HOME_LAT, 5.0),
        (WAYPOINT, HOME_LAT + 0.0002, 10.0),
        (RTL, 0.0, 0.0),
    ];
    let (code, human, r) = fly("truth-rtl", &items, "226", &[]);
    assert_eq!(code, 0, "{human}");
    assert!(
        human.contains(
            "PASS: mission complete: 2 items flown of 3, then the final RTL, landed and disarmed"
        ),
        "{human}"
    );
    assert_eq!(reasons(&r), ["met", "met", "met", "met"]);
    let m = &r["mission"];
    assert_eq!(m["last_reachable"], 1, "{m}");
    assert_eq!(m["items_flown"], 2, "{m}");
    assert_eq!(m["complete"], true, "{m}");
    assert_eq!(r["final"]["armed"], false);
    assert!(r["steps"][0]["explanation"].is_null());
}

#[test]
fn arming_in_mission_mode_without_a_mission_ends_with_not_armable() {
    let program = r#"
[[step]]
action = "mode"
mode = "Mission"
until = { mode = "Mission" }
timeout_s = 10

[[step]]
name = "arm"
action = "arm"
until = "armed"
timeout_s = 25
"#;
    let (code, out, r) = run("truth-unarmable", program, "227");
    assert_eq!(code, 1, "{out}");
    assert_eq!(reasons(&r), ["met", "timeout"], "{out}");
    let want = "arm not sent: PX4 not armable for 25 s in Mission mode, with no mission uploaded \
                on this link (system_status UNINIT";
    let line = out
        .lines()
        .find(|l| l.starts_with("FAIL step 2/2 (arm): timeout"))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(line.contains(want), "{line}");
    let fail = out.lines().find(|l| l.starts_with("FAIL: ")).unwrap();
    assert!(fail.contains(want), "{fail}");
    let why = r["steps"][1]["explanation"].as_str().unwrap();
    assert!(why.starts_with(want), "{why}");
    assert!(r["steps"][0]["explanation"].is_null());
}

#[test]
fn a_mode_px4_refuses_ends_with_its_refusal() {
    // In the air without a mission, PX4 refuses Mission mode (TEMPORARILY_REJECTED).
    let program = r#"
[[step]]
action = "takeoff"
alt_m = 5
until = { altitude = 4.5 }
timeout_s = 60

[[step]]
name = "mission"
action = "mode"
mode = "Mission"
until = { mode = "Mission" }
timeout_s = 4

[[step]]
action = "land"
until = "landed"
timeout_s = 60
"#;
    let (code, out, r) = run("truth-refused", program, "228");
    assert_eq!(code, 1, "{out}");
    assert_eq!(reasons(&r), ["met", "timeout"], "{out}");
    let want = "mode Mission refused (TEMPORARILY_REJECTED, 1)";
    let line = out
        .lines()
        .find(|l| l.starts_with("FAIL step 2/3 (mission): timeout"))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(line.contains(want), "{line}");
    let fail = out.lines().find(|l| l.starts_with("FAIL: ")).unwrap();
    assert!(fail.contains(want), "{fail}");
    let why = r["steps"][1]["explanation"].as_str().unwrap();
    assert!(why.contains(want), "{why}");
}

#[test]
fn a_plan_that_starts_with_an_rtl_is_refused_before_flying() {
    let scratch = Scratch::new("truth-rtl-first");
    let plan = scratch.file(
        "p.plan",
        &plan_text(&[(RTL, 0.0, 0.0), (WAYPOINT, HOME_LAT, 10.0)]),
    );
    let out = nexus(&["fly", plan.to_str().unwrap(), "--instance", "231"])
        .timeout(std::time::Duration::from_secs(60))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("the plan starts with an RTL, so PX4 reports no item of it reached"),
        "{stderr}"
    );
    assert!(!String::from_utf8_lossy(&out.stdout).contains("PASS"));
}
