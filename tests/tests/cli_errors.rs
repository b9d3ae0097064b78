//! `nexus` errors a person can act on: a bad plan or program names the file, line and column;
//! a missing PX4 build says what was looked for; a port in use names the port.

mod cli_support;

use cli_support::{nexus, Scratch};
use predicates::prelude::*;
use std::net::UdpSocket;

#[test]
fn a_bad_plan_names_file_line_and_column() {
    let scratch = Scratch::new("err-plan");
    let plan = scratch.file(
        "bad.plan",
        "{\"fileType\": \"Plan\",\n \"mission\": {\"items\": [\n  {\"type\": \"SimpleItem\", \"command\": 16, \"frame\": 3, \"params\": [0, 0, 0]}\n ]}}\n",
    );
    nexus(&["fly", plan.to_str().unwrap(), "--instance", "156"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "bad.plan:3:3: item 0 has 3 params, expected 7",
        ))
        .stderr(predicate::str::contains("3 |   {\"type\": \"SimpleItem\""));
    let broken = scratch.file("broken.plan", "{\"fileType\": \"Plan\",\n \"mission\": {\n");
    nexus(&["fly", broken.to_str().unwrap(), "--instance", "156"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("broken.plan:3:1: invalid JSON"));
    nexus(&["fly", "no/such.plan", "--instance", "156"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("cannot read no/such.plan"));
}

#[test]
fn a_bad_program_names_file_line_column_and_key() {
    let scratch = Scratch::new("err-prog");
    let prog = scratch.file(
        "prog.toml",
        "[[step]]\naction = \"takeoff\"\nalt = 5\nuntil = { altitude = 4 }\ntimeout_s = 30\n",
    );
    nexus(&["run", prog.to_str().unwrap(), "--instance", "156"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "prog.toml:3:1: unknown key `alt` in step 1 (did you mean `alt_m`?)",
        ));
    let mode = scratch.file(
        "mode.toml",
        "[[step]]\naction = \"mode\"\nmode = \"Hover\"\n",
    );
    nexus(&["run", mode.to_str().unwrap(), "--instance", "156"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("mode.toml:3:8:"))
        .stderr(predicate::str::contains(
            "unknown mode; known: Manual, Altitude, Position",
        ));
    let op = scratch.file(
        "op.toml",
        "[[step]]\nuntil = { armed = true, op = \"<=\" }\ntimeout_s = 5\n",
    );
    nexus(&["run", op.to_str().unwrap(), "--instance", "156"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "op.toml:2:30: `until.op` does not apply to `armed`",
        ));
    // A plan the program uploads is checked too, with its own position.
    scratch.file(
        "m.plan",
        "{\"fileType\": \"Plan\", \"mission\": {\"items\": [{\"type\": \"ComplexItem\"}]}}",
    );
    let up = scratch.file(
        "up.toml",
        "[[step]]\naction = \"upload\"\nplan = \"m.plan\"\n",
    );
    nexus(&["run", up.to_str().unwrap(), "--instance", "156"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "m.plan:1:44: item 0 is a 'ComplexItem'",
        ));
}

#[test]
fn check_prints_the_steps_without_flying() {
    nexus(&["run", "examples/box-mission.toml", "--check"])
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "step 2/5 (start) (line 17): start the mission; until armed",
        ))
        .stdout(predicate::str::contains("program OK"));
}

#[test]
fn a_missing_px4_build_says_what_was_looked_for() {
    nexus(&[
        "fly",
        "examples/box.plan",
        "--px4",
        "/nonexistent/px4-build",
        "--instance",
        "156",
    ])
    .assert()
    .code(2)
    .stderr(predicate::str::contains(
        "no PX4 build at /nonexistent/px4-build",
    ))
    .stderr(predicate::str::contains("bin/px4"));
}

#[test]
fn a_port_in_use_is_named() {
    // The vehicle's port (14580 + N) taken.
    let vehicle_port = UdpSocket::bind("127.0.0.1:14737").unwrap();
    nexus(&["fly", "examples/box.plan", "--instance", "157"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("14737"))
        .stderr(predicate::str::contains("--instance"));
    drop(vehicle_port);
    // Our own port (14540 + N) taken.
    let our_port = UdpSocket::bind("0.0.0.0:14698").unwrap();
    nexus(&[
        "run",
        "examples/takeoff-hover-land.toml",
        "--instance",
        "158",
    ])
    .assert()
    .code(2)
    // fly and run listen on loopback by default (the vehicle is local).
    .stderr(predicate::str::contains("udpin:127.0.0.1:14698"))
    .stderr(predicate::str::contains("already listens on this port"));
    drop(our_port);
}

#[test]
fn bad_arguments_are_refused() {
    nexus(&[
        "fly",
        "examples/box.plan",
        "--speed",
        "0",
        "--instance",
        "156",
    ])
    .assert()
    .code(2)
    .stderr(predicate::str::contains(
        "--speed must be a positive number",
    ));
    nexus(&["watch", "udpx:1.2.3.4:5"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("udpx"));
}
