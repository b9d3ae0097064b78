//! `nexus run`: flight programs on the simulated vehicle — the examples pass, a step that times
//! out fails the run naming the step and the reason, and the report says what happened.

mod cli_support;

use cli_support::{json, nexus, reasons, Scratch, SPEED};
use predicates::prelude::*;

#[test]
fn takeoff_hover_land_passes_and_reports_each_step() {
    let out = nexus(&[
        "run",
        "examples/takeoff-hover-land.toml",
        "--speed",
        SPEED,
        "--instance",
        "152",
        "--json",
    ])
    .assert()
    .success()
    // With the report on stdout, the person's lines go to stderr.
    .stderr(predicate::str::contains("PASS: all 4 steps met"))
    .stderr(predicate::str::contains(
        "ok   step 1/4 (take off): met after",
    ))
    .get_output()
    .clone();
    let r = json(&out.stdout);
    assert_eq!(r["command"], "run");
    assert_eq!(r["name"], "takeoff, hover, land");
    assert_eq!(r["passed"], true);
    assert_eq!(reasons(&r), ["met", "met", "met", "met"]);
    let names: Vec<&str> = r["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["take off", "hover", "land", "disarm"]);
    // hold_s = 2: the take-off step cannot be met in less than 2 s of sim time, and the
    // vehicle was at least 4.5 m up when it was.
    let takeoff = &r["steps"][0];
    assert!(
        takeoff["waited_sim_s"].as_f64().unwrap() >= 2.0,
        "{takeoff}"
    );
    assert!(
        takeoff["snapshot"]["height_m"].as_f64().unwrap() >= 4.5,
        "{takeoff}"
    );
    assert_eq!(takeoff["snapshot_at"], "settle");
    // The hover step is 10 s of sim time, however fast the wall clock ran.
    let hover = &r["steps"][1];
    let hover_s = hover["waited_sim_s"].as_f64().unwrap();
    assert!((10.0..10.5).contains(&hover_s), "{hover}");
    assert!(
        hover["waited_wall_s"].as_f64().unwrap() < hover_s,
        "{hover}"
    );
    assert_eq!(r["final"]["landed_state"], "ON_GROUND");
    assert_eq!(r["final"]["armed"], false);
}

#[test]
fn a_step_that_times_out_fails_the_run_with_its_name_and_reason() {
    let scratch = Scratch::new("run-timeout");
    let prog = scratch.file(
        "climb.toml",
        r#"
name = "too high"

[[step]]
name = "take off"
action = "takeoff"
alt_m = 3
until = { altitude = 2.5 }
timeout_s = 60

[[step]]
name = "climb too high"
until = { altitude = 50 }
timeout_s = 8

[[step]]
name = "never reached"
action = "land"
until = "landed"
timeout_s = 60
"#,
    );
    let report = scratch.path("r.json");
    let out = nexus(&[
        "run",
        prog.to_str().unwrap(),
        "--speed",
        SPEED,
        "--instance",
        "153",
        "--json",
        report.to_str().unwrap(),
    ])
    .assert()
    .code(1)
    .stdout(predicate::str::contains(
        "FAIL: step 2/3 (climb too high) failed: timeout after 8.0 s sim — waited for altitude >= 50 m",
    ))
    .stdout(predicate::str::contains("FAIL step 2/3 (climb too high): timeout after 8.0 s sim"))
    .get_output()
    .clone();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!stdout.contains("step 3/3 (never reached):"), "{stdout}");
    let r = json(&std::fs::read(&report).unwrap());
    assert_eq!(r["passed"], false);
    assert_eq!(r["exit_code"], 1);
    assert_eq!(r["steps_total"], 3);
    assert_eq!(reasons(&r), ["met", "timeout"]);
    let climb = &r["steps"][1];
    assert_eq!(climb["satisfied"], false);
    assert_eq!(climb["waited_sim_s"].as_f64().unwrap(), 8.0);
    assert!(climb["snapshot"]["height_m"].as_f64().unwrap() < 50.0);
    assert!(r["verdict"].as_str().unwrap().contains("climb too high"));
}

#[test]
fn a_reaction_fires_in_the_tick_the_text_arrives() {
    let out = nexus(&[
        "run",
        "examples/wait-for-text-with-reaction.toml",
        "--speed",
        SPEED,
        "--instance",
        "154",
        "--json",
    ])
    .assert()
    .success()
    .get_output()
    .clone();
    let r = json(&out.stdout);
    assert_eq!(reasons(&r), ["met", "met", "met", "met"]);
    // The text step's snapshot is the tick the text arrived in: its newest text is that one.
    let first = &r["steps"][0];
    assert_eq!(first["snapshot"]["last_text"], "Takeoff detected");
    // Hold was requested before the vehicle got anywhere near the 10 m it was climbing to.
    assert!(r["steps"][1]["snapshot"]["height_m"].as_f64().unwrap() < 8.0);
    assert_eq!(r["steps"][1]["snapshot"]["mode"], "Hold");
}

#[test]
fn on_timeout_continue_goes_on_but_the_run_still_fails() {
    let scratch = Scratch::new("run-continue");
    let prog = scratch.file(
        "p.toml",
        r#"
[[step]]
name = "wait for a text that never comes"
until = { text = "no such text" }
timeout_s = 3
on_timeout = "continue"

[[step]]
name = "then wait 2 s"
until = { time = 2 }
timeout_s = 5
"#,
    );
    let out = nexus(&[
        "run",
        prog.to_str().unwrap(),
        "--speed",
        SPEED,
        "--instance",
        "155",
        "--json",
    ])
    .assert()
    .code(1)
    .get_output()
    .clone();
    let r = json(&out.stdout);
    assert_eq!(reasons(&r), ["timeout", "met"]);
    assert!(r["verdict"]
        .as_str()
        .unwrap()
        .contains("step 1/2 (wait for a text that never comes) failed: timeout"));
}

#[test]
fn speedups_gotos_params_and_rtl_fly_as_written() {
    let scratch = Scratch::new("run-actions");
    let prog = scratch.file(
        "actions.toml",
        r#"
name = "every kind of action"

[[step]]
name = "faster"
action = "speedup"
factor = 25
until = { time = 1 }
timeout_s = 5

[[step]]
name = "takeoff altitude"
action = "param"
param = "MIS_TAKEOFF_ALT"
real = 4

[[step]]
name = "take off"
action = "takeoff"
alt_m = 4
until = { altitude = 3.5, then_speedup = 40 }
timeout_s = 60

[[step]]
name = "go north"
action = "goto"
x_m = 12
y_m = 0
z_m = 4
until = { time = 6, guards = ["landed"] }
timeout_s = 10

[[step]]
name = "hold"
action = "hold"
until = { mode = "Hold" }
timeout_s = 10

[[step]]
name = "home"
action = "rtl"
until = "landed"
timeout_s = 180
"#,
    );
    let out = nexus(&[
        "run",
        prog.to_str().unwrap(),
        "--speed",
        SPEED,
        "--instance",
        "150",
        "--json",
    ])
    .assert()
    .success()
    .stderr(predicate::str::contains("speed-up ×25"))
    .get_output()
    .clone();
    let r = json(&out.stdout);
    assert_eq!(reasons(&r), ["met", "met", "met", "met", "met", "met"]);
    let events: Vec<&str> = r["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e.as_str().unwrap())
        .collect();
    assert!(events.contains(&"speed-up ×25"), "{events:?}");
    assert!(events.contains(&"speed-up ×40"), "{events:?}");
    // The reaction fired in the take-off step's tick: the altitude it saw is the one met.
    assert!(r["steps"][2]["snapshot"]["height_m"].as_f64().unwrap() >= 3.5);
    assert_eq!(r["steps"][4]["snapshot"]["mode"], "Hold");
    assert_eq!(r["final"]["landed_state"], "ON_GROUND");
}

#[test]
fn the_box_mission_program_uploads_flies_and_lands() {
    let out = nexus(&[
        "run",
        "examples/box-mission.toml",
        "--speed",
        SPEED,
        "--instance",
        "151",
        "--json",
    ])
    .assert()
    .success()
    .get_output()
    .clone();
    let r = json(&out.stdout);
    assert_eq!(reasons(&r), ["met", "met", "met", "met", "met"]);
    let m = &r["mission"];
    assert!(
        m["plan"].as_str().unwrap().ends_with("examples/box.plan"),
        "{m}"
    );
    assert_eq!(m["uploaded"], true);
    assert_eq!(m["complete"], true);
    assert_eq!(m["items"].as_array().unwrap().len(), 6);
    assert_eq!(r["steps"][2]["snapshot"]["waypoint"], 5);
    assert_eq!(r["final"]["armed"], false);
}

/// A plan with a fence and a rally point: a 10 m inclusion circle at home, a waypoint 5 m north
/// inside it, a rally point 16 m south-east.
const FENCED: &str = r#"{
    "fileType": "Plan", "groundStation": "QGroundControl", "version": 1,
    "geoFence": {
        "circles": [
            { "circle": { "center": [47.397742, 8.545594], "radius": 10 },
              "inclusion": true, "version": 1 }
        ],
        "polygons": [], "version": 2
    },
    "mission": {
        "cruiseSpeed": 5, "firmwareType": 12, "hoverSpeed": 5,
        "items": [
            { "autoContinue": true, "command": 22, "doJumpId": 1, "frame": 3,
              "params": [0, 0, 0, null, 47.397742, 8.545594, 5], "type": "SimpleItem" },
            { "autoContinue": true, "command": 16, "doJumpId": 2, "frame": 3,
              "params": [0, 0, 0, null, 47.397787, 8.545594, 5], "type": "SimpleItem" }
        ],
        "plannedHomePosition": [47.397742, 8.545594, 488], "vehicleType": 2, "version": 2
    },
    "rallyPoints": { "points": [[47.39760, 8.54560, 15]], "version": 2 }
}"#;

/// The program's upload puts the plan's fence on the vehicle, which then refuses a goto out
/// of it as PX4 does: the goto step fails (its timeout) with PX4's words, and the program with
/// it. The rally point, in QGroundControl's frame, leaves the vehicle quiet enough to arm.
#[test]
fn a_programs_upload_puts_the_plans_fence_on_the_vehicle() {
    let scratch = Scratch::new("run-fence");
    scratch.file("fenced.plan", FENCED);
    let prog = scratch.file(
        "fence.toml",
        r#"
[[step]]
action = "upload"
plan = "fenced.plan"

[[step]]
action = "takeoff"
alt_m = 5
until = { altitude = 4.5 }
timeout_s = 60

[[step]]
name = "leave the fence"
# Only a vehicle holding the fence refuses it.
action = "goto"
x_m = 22
y_m = 0
z_m = 5
until = "at_target"
timeout_s = 15

[[step]]
action = "land"
until = "landed"
timeout_s = 60
"#,
    );
    let out = nexus(&[
        "run",
        prog.to_str().unwrap(),
        "--speed",
        SPEED,
        "--instance",
        "170",
        "--json",
    ])
    .assert()
    .failure()
    .get_output()
    .clone();
    let r = json(&out.stdout);
    assert_eq!(reasons(&r), ["met", "met", "timeout"], "{r}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("uploading 1 geofence items from") && err.contains("uploading 1 rally points"),
        "{err}"
    );
    let why = r["steps"][2]["explanation"].as_str().unwrap_or_default();
    assert!(
        why.contains("reposition refused after an ACCEPTED ack: Reposition is outside geofence"),
        "{why}\n{r}"
    );
    assert!(!err.contains("RTL: unsupported MAV_FRAME"), "{err}");
}
