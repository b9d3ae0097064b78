//! `nexus run examples/goto-and-check.toml`: the extra conditions (gps_fix, at_target,
//! distance to a world point and to home, ground speed, heading, landed state) met in a
//! program flown on the simulated vehicle (instance 93).

mod cli_support;

use cli_support::{json, nexus, reasons, SPEED};
use predicates::prelude::*;

#[test]
fn the_goto_and_check_example_passes() {
    let out = nexus(&[
        "run",
        "examples/goto-and-check.toml",
        "--speed",
        SPEED,
        "--instance",
        "93",
        "--json",
    ])
    .assert()
    .success()
    .stderr(predicate::str::contains("PASS: all 7 steps met"))
    .get_output()
    .clone();
    let r = json(&out.stdout);
    assert_eq!(reasons(&r), ["met"; 7]);
    assert_eq!(r["final"]["landed_state"], "ON_GROUND");
}

#[test]
fn the_offboard_square_example_passes() {
    let out = nexus(&[
        "run",
        "examples/offboard-square.toml",
        "--speed",
        SPEED,
        "--instance",
        "98",
        "--json",
    ])
    .assert()
    .success()
    .stderr(predicate::str::contains("PASS: all 7 steps met"))
    .get_output()
    .clone();
    let r = json(&out.stdout);
    assert_eq!(reasons(&r), ["met"; 7]);
    // The velocity side ended in Offboard; the stop put the vehicle in Hold.
    assert_eq!(r["steps"][4]["snapshot"]["mode"], "Offboard");
    assert_eq!(r["steps"][5]["snapshot"]["mode"], "Hold");
}
