//! `nexus fly`/`run` on PX4 SITL, through the launcher's stand-in PX4 (`tests/fixtures/fake-px4`,
//! which boots like PX4 and, told to, runs the simulated vehicle on PX4's ports): a PX4 that dies
//! (while booting or in flight) is a failure with PX4's own reason, one that never speaks names
//! the port, and the report says so.

mod cli_support;

use cli_support::{json, nexus, nexus_exe, repo, Scratch};
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

#[test]
fn a_px4_that_dies_in_flight_fails_the_flight_with_its_cause() {
    // The stand-in runs the simulated vehicle on PX4's ports and speed factor, then dies of
    // SIGABRT 3 s (30 s of sim time at ×10) in: armed and flying the box mission, whose flight
    // takes ~47 s of sim time.
    let out = nexus(&[
        "fly",
        "examples/box.plan",
        "--px4",
        &fake_px4(),
        "--speed",
        "10",
        "--instance",
        "159",
        "--json",
    ])
    .env("FAKE_PX4_MODE", "sim:3")
    .env("FAKE_PX4_NEXUS", nexus_exe())
    .assert()
    .code(1)
    .stderr(predicate::str::contains("FAIL: "))
    .stderr(predicate::str::contains(
        "PX4 was killed by signal 6 (SIGABRT)",
    ))
    // The vehicle's last words come with the verdict.
    .stderr(predicate::str::contains("fake-px4: aborting in flight"))
    .get_output()
    .clone();
    let r = json(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(r["vehicle"]["kind"], "px4");
    assert_eq!(r["passed"], false, "{stderr}");
    assert_eq!(r["exit_code"], 1);
    assert!(r["died"].as_str().unwrap().contains("SIGABRT"), "{r}");
    assert_eq!(r["mission"]["uploaded"], true, "{r}");
    assert_eq!(r["mission"]["complete"], false, "{r}");
    // It had armed and was flying the mission when it died: that step ended `died`.
    let steps = r["steps"].as_array().unwrap();
    assert_eq!(steps[0]["reason"], "met", "{r}");
    assert_eq!(steps[1]["reason"], "died", "{r}");
    assert_eq!(steps[1]["snapshot"]["armed"], true, "{r}");
    let why = steps[1]["explanation"].as_str().unwrap();
    assert!(why.starts_with("the vehicle died: "), "{why}");
    assert!(why.contains("SIGABRT"), "{why}");
    assert_eq!(r["final"]["armed"], true, "{r}");
}

/// `scripts/px4-check` (docs/px4.md): without a PX4 build it refuses with exit 2 and says what to
/// give; with `--sim-only` it flies the file on the built-in vehicle and prints the verdict.
#[test]
fn px4_check_runs_side_by_side_and_refuses_without_a_build() {
    let exe = nexus_exe();
    let script = repo("scripts/px4-check");
    let out = std::process::Command::new(&script)
        .args([
            "--nexus",
            exe.to_str().unwrap(),
            "examples/takeoff-hover-land.toml",
        ])
        .env_remove("NEXUS_PX4_BUILD")
        .current_dir(repo(""))
        .output()
        .expect("run scripts/px4-check");
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("NEXUS_PX4_BUILD"),
        "{out:?}"
    );
    let out = std::process::Command::new(&script)
        .args([
            "--nexus",
            exe.to_str().unwrap(),
            "--sim-only",
            "--speed",
            "20",
            "--instance",
            "248",
            "examples/takeoff-hover-land.toml",
        ])
        .env_remove("NEXUS_PX4_BUILD")
        .current_dir(repo(""))
        .output()
        .expect("run scripts/px4-check");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{out:?}");
    assert!(
        stdout.contains("examples/takeoff-hover-land.toml"),
        "{stdout}"
    );
    assert!(stdout.contains("PASS"), "{stdout}");
    assert!(
        stdout.contains("1 rows, 0 with differing verdicts"),
        "{stdout}"
    );
}

#[test]
fn model_picks_the_sih_airframe_px4_starts() {
    // The stand-in flies the built-in vehicle on PX4's ports; what matters here is what PX4 was
    // told: the hexarotor's SIH model (the stand-in exits at once on any other).
    let out = nexus(&[
        "fly",
        "examples/box.plan",
        "--px4",
        &fake_px4(),
        "--model",
        "hex",
        "--speed",
        "10",
        "--instance",
        "158",
        "--json",
    ])
    .env("FAKE_PX4_MODE", "fly")
    .env("FAKE_PX4_NEXUS", nexus_exe())
    .env("FAKE_PX4_EXPECT_MODEL", "sihsim_hex")
    .assert()
    .code(0)
    .get_output()
    .clone();
    let r = json(&out.stdout);
    assert_eq!(r["vehicle"]["kind"], "px4");
    assert_eq!(r["vehicle"]["model"], "hex", "{r}");
    assert_eq!(r["passed"], true, "{r}");
}

#[test]
fn a_model_the_built_in_vehicle_lacks_is_refused_naming_px4() {
    // A program flown on the airframes that take off; the rover's own plan (a rover program
    // that takes off is refused for the takeoff, a plan's vehicleType is checked first).
    for (verb, file, model) in [
        ("run", "examples/takeoff-hover-land.toml", "tailsitter"),
        ("run", "examples/takeoff-hover-land.toml", "vtol"),
        ("fly", "examples/rover-mission.plan", "rover"),
    ] {
        nexus(&[verb, file, "--sim", "--model", model])
            .assert()
            .code(2)
            .stderr(predicate::str::contains(format!(
                "--model {model}: the built-in vehicle models the quad, the hex and the \
             airplane, not the {model}; fly it on PX4 SITL with --px4 BUILD_DIR"
            )));
    }
    nexus(&["fly", "examples/box.plan", "--sim", "--model", "octo"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "unknown model 'octo' (one of: quad, hex, airplane, tailsitter, vtol, rover)",
        ));
    nexus(&[
        "fly",
        "examples/box.plan",
        "--connect",
        "udpin:127.0.0.1:0",
        "--model",
        "hex",
    ])
    .assert()
    .code(2)
    .stderr(predicate::str::contains("--model"));
}

/// The VTOL, tailsitter and rover examples name their airframe (a plan's vehicleType, a
/// program's `model`): PX4 is started with that airframe's SIH model, and the built-in vehicle,
/// which models none of them, refuses each naming `--px4`.
#[test]
fn the_px4_only_examples_start_their_own_airframe() {
    let cases = [
        (
            "fly",
            "examples/vtol-mission.plan",
            "vtol",
            "sihsim_standard_vtol",
            "airframe: vtol (the plan's vehicleType 22)",
        ),
        (
            "fly",
            "examples/rover-mission.plan",
            "rover",
            "sihsim_rover_ackermann",
            "airframe: rover (the plan's vehicleType 10)",
        ),
        (
            "run",
            "examples/tailsitter-transition.toml",
            "tailsitter",
            "sihsim_xvert",
            "airframe: tailsitter (the program's model)",
        ),
    ];
    for (verb, file, model, sih, line) in cases {
        nexus(&[verb, file, "--sim"])
            .assert()
            .code(2)
            .stderr(predicate::str::contains(format!(
                "--model {model}: the built-in vehicle models the quad, the hex and the \
                 airplane, not the {model}; fly it on PX4 SITL with --px4"
            )));
        // The stand-in exits 3 at once when told another model; told this one it boots
        // half-way and exits 5: the flight fails with PX4's exit, not the model's.
        let out = nexus(&[
            verb,
            file,
            "--px4",
            &fake_px4(),
            "--speed",
            "10",
            "--instance",
            "159",
        ])
        .env("FAKE_PX4_MODE", "exit:5")
        .env("FAKE_PX4_EXPECT_MODEL", sih)
        .assert()
        .code(1)
        .get_output()
        .clone();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stdout.contains(line), "{file}: {stdout}");
        assert!(!stdout.contains("PX4_SIM_MODEL is"), "{file}: {stdout}");
        assert!(!stderr.contains("PX4_SIM_MODEL is"), "{file}: {stderr}");
        assert!(
            stdout.contains("PX4 exited with code 5"),
            "{file}: {stdout}"
        );
    }
}

/// A rover takes no takeoff: a program that asks for one is refused before anything starts,
/// naming the step and what to do instead; so is a transition on a vehicle that is no VTOL.
#[test]
fn a_rover_program_that_takes_off_is_refused_before_it_starts() {
    let dir = Scratch::new("rover-takeoff");
    let prog = dir.file(
        "rover.toml",
        "model = \"rover\"\n\n[[step]]\naction = \"takeoff\"\nalt_m = 5\nuntil = { altitude = 4 }\ntimeout_s = 30\n",
    );
    nexus(&["run", prog.to_str().unwrap(), "--sim"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "step 1 of 1 cannot be flown on the rover: takeoff: the vehicle is a rover \
             (HEARTBEAT type 10): a rover does not take off",
        ));
    let prog = dir.file(
        "hex.toml",
        "model = \"hex\"\n\n[[step]]\naction = \"vtol_transition\"\nto = \"fw\"\nuntil = { vtol_state = \"fw\" }\ntimeout_s = 30\n",
    );
    nexus(&["run", prog.to_str().unwrap(), "--sim"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "cannot be flown on the hex: vtol_transition: the vehicle is a multicopter \
             (HEARTBEAT type 13): only a VTOL transitions",
        ));
}

/// `scripts/px4-check` takes the built-in vehicle's refusal of an airframe as expected: the
/// file is "PX4 only", no verdicts differ, and its instance goes to the PX4 flight.
#[test]
fn px4_check_takes_a_refused_airframe_as_px4_only() {
    let out = std::process::Command::new(repo("scripts/px4-check"))
        .args([
            "--nexus",
            nexus_exe().to_str().unwrap(),
            "--sim-only",
            "--speed",
            "4",
            "examples/vtol-mission.plan",
        ])
        .env_remove("NEXUS_PX4_BUILD")
        .current_dir(repo(""))
        .output()
        .expect("run scripts/px4-check");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{out:?}");
    assert!(stdout.contains("refused (PX4 only)"), "{stdout}");
    assert!(
        stdout.contains("1 rows, 0 with differing verdicts, 1 PX4 only"),
        "{stdout}"
    );
}
