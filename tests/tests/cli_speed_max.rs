//! `--speed max`: the built-in vehicle in lockstep, stepped as fast as nexus takes in what it
//! sends. The box mission and a program fly to PASS, and the report and the last line give the
//! speed factor achieved. How fast is a benchmark's business (docs/figures.md), not this test's: it
//! checks that the figure is there and agrees with the report's own sim and wall seconds.
//!
//! SITL instance numbers used here: 88–89.

mod cli_support;

use cli_support::{json, nexus, reasons, Scratch};
use predicates::prelude::*;

fn achieved_is_reported(r: &serde_json::Value, stdout: &str) {
    assert_eq!(r["vehicle"]["speed"], "max", "{stdout}");
    let wall = r["wall_s"].as_f64().expect("wall_s");
    let sim = r["sim_s"].as_f64().expect("sim_s");
    let x = r["achieved_speed"].as_f64().expect("achieved_speed");
    assert!(wall > 0.0 && sim > 0.0, "{r}");
    assert!(
        ((sim / wall) - x).abs() <= 1e-6 * x,
        "{x} vs {sim} / {wall}"
    );
    // The last line gives it too: "(0.12 s wall, ×467)".
    let last = stdout.lines().last().unwrap_or_default();
    assert!(
        last.contains("s wall, ×") && last.starts_with("PASS"),
        "{last}"
    );
}

#[test]
fn fly_speed_max_flies_the_box_mission_and_reports_the_factor() {
    let scratch = Scratch::new("speed-max-fly");
    let report_path = scratch.path("report.json");
    let out = nexus(&[
        "fly",
        "examples/box.plan",
        "--sim",
        "--speed",
        "max",
        "--instance",
        "88",
        "--json",
        report_path.to_str().unwrap(),
    ])
    .assert()
    .success()
    .stdout(predicate::str::contains(
        "PASS: mission complete: 6 items flown",
    ))
    .get_output()
    .clone();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let r = json(&std::fs::read(&report_path).expect("the report file"));
    assert_eq!(r["passed"], true, "{stdout}");
    assert_eq!(reasons(&r), ["met", "met", "met", "met"], "{stdout}");
    assert_eq!(r["mission"]["complete"], true);
    // The whole mission was flown on the vehicle's clock: ~48 s of sim from takeoff to landed.
    assert!(r["sim_s"].as_f64().unwrap() > 40.0, "{}", r["sim_s"]);
    achieved_is_reported(&r, &stdout);
}

#[test]
fn run_speed_max_passes_a_program_and_reports_the_factor() {
    let scratch = Scratch::new("speed-max-run");
    let report_path = scratch.path("report.json");
    let out = nexus(&[
        "run",
        "examples/takeoff-hover-land.toml",
        "--sim",
        "--speed",
        "max",
        "--instance",
        "89",
        "--json",
        report_path.to_str().unwrap(),
    ])
    .assert()
    .success()
    .get_output()
    .clone();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let r = json(&std::fs::read(&report_path).expect("the report file"));
    assert_eq!(r["passed"], true, "{stdout}");
    assert!(reasons(&r).iter().all(|x| x == "met"), "{stdout}");
    achieved_is_reported(&r, &stdout);
}

#[test]
fn speed_max_is_refused_for_px4_and_a_misspelling_is_refused() {
    nexus(&[
        "fly",
        "examples/box.plan",
        "--px4",
        "/nonexistent/px4-build",
        "--speed",
        "max",
        "--instance",
        "88",
    ])
    .assert()
    .code(2)
    .stderr(predicate::str::contains(
        "--speed max needs the built-in vehicle",
    ));
    nexus(&["fly", "examples/box.plan", "--sim", "--speed", "maxx"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("expected a speed factor or `max`"));
}
