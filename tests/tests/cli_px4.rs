//! `nexus fly`/`run` on PX4 SITL, through the launcher's stand-in PX4 (`tests/fixtures/fake-px4`,
//! which boots like PX4 but speaks no MAVLink): a PX4 that dies is a failure with PX4's own
//! reason, one that never speaks names the port, and the report says so.

mod cli_support;

use cli_support::{json, nexus, repo};
use predicates::prelude::*;

fn fake_px4() -> String {
    repo("tests/fixtures/fake-px4").display().to_string()
}

#[test]
fn a_px4_that_dies_fails_the_flight_with_its_cause() {
    let out = nexus(&[
        "run",
        "examples/takeoff-hover-land.toml",
        "--px4",
        &fake_px4(),
        "--speed",
        "20",
        "--instance",
        "156",
        "--json",
    ])
    .env("FAKE_PX4_MODE", "abort")
    .assert()
    .code(1)
    // Before or after its startup script finished: either way the cause is PX4's.
    .stderr(predicate::str::contains("FAIL: PX4 SITL (instance 156): "))
    .stderr(predicate::str::contains(
        "PX4 was killed by signal 6 (SIGABRT)",
    ))
    .get_output()
    .clone();
    let r = json(&out.stdout);
    assert_eq!(r["vehicle"]["kind"], "px4");
    assert_eq!(r["passed"], false);
    assert_eq!(r["exit_code"], 1);
    assert!(r["died"].as_str().unwrap().contains("SIGABRT"), "{r}");
    assert_eq!(r["steps"].as_array().unwrap().len(), 0);
}

#[test]
fn a_px4_that_never_speaks_names_the_port() {
    // At ×20, PX4's clock (wall × speed before its first report) runs out the 60 s heartbeat
    // wait in 3 s of wall time.
    nexus(&[
        "fly",
        "examples/box.plan",
        "--px4",
        &fake_px4(),
        "--speed",
        "20",
        "--instance",
        "157",
    ])
    .env("FAKE_PX4_MODE", "run")
    .assert()
    .code(1)
    .stdout(predicate::str::contains(
        "FAIL: PX4 SITL (instance 157): no PX4 heartbeat on the offboard link, UDP port 14697",
    ));
}
