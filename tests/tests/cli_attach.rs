//! `nexus fly`/`run --connect`: flying a vehicle nexus did not start — a separate `nexus sim`,
//! a separately started stand-in PX4 (`tests/fixtures/fake-px4`) — found by its first autopilot
//! heartbeat, named in the report as attached; the `--real-vehicle` guard against a vehicle
//! that does not identify as a simulator; silence still ends the flight `died`.
//!
//! SITL instances of these tests: 200–209 (ports 14740–14749 and 14780–14789). Like PX4, a
//! vehicle above instance 9 sends to 14549 until a client speaks first to its 14580+N: a
//! client of one connects `udpout:` to that port; the tests of listening spellings start the
//! vehicle with `--offboard-port-per-instance`.

mod cli_support;

use cli_support::{json, nexus, nexus_exe, repo, Scratch};
use predicates::prelude::*;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A vehicle started apart from the command under test, in a process group of its own; the
/// whole group is ended when dropped.
struct Vehicle(Child);

impl Vehicle {
    fn spawn(mut cmd: Command) -> Vehicle {
        cmd.process_group(0)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        Vehicle(cmd.spawn().expect("start the vehicle"))
    }

    /// `nexus sim` as instance `n` at `speed`, with extra arguments.
    fn sim(n: u8, speed: &str, extra: &[&str]) -> Vehicle {
        let mut cmd = Command::new(nexus_exe());
        cmd.args(["sim", "--instance", &n.to_string(), "--speed", speed])
            .args(extra);
        Vehicle::spawn(cmd)
    }

    /// The stand-in PX4 binary as instance `n`, flying the simulated vehicle (`fly` mode).
    fn fake_px4(n: u8, speed: &str, work: &Scratch, hardware: bool) -> Vehicle {
        let fixture = repo("tests/fixtures/fake-px4");
        let mut cmd = Command::new(fixture.join("bin/px4"));
        cmd.args(["-i", &n.to_string(), "-d", "-w"])
            .arg(&work.0)
            .arg(fixture.join("etc"))
            .env("PX4_SIMULATOR", "sihsim")
            .env("PX4_SIM_MODEL", "sihsim_quadx")
            .env("PX4_SIM_SPEED_FACTOR", speed)
            .env("FAKE_PX4_MODE", "fly")
            .env("FAKE_PX4_NEXUS", nexus_exe());
        if hardware {
            cmd.env("FAKE_PX4_HARDWARE", "1");
        }
        Vehicle::spawn(cmd)
    }

    /// End the vehicle's process group now.
    fn kill(&mut self) {
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", self.0.id())])
            .status();
        let _ = self.0.wait();
    }
}

impl Drop for Vehicle {
    fn drop(&mut self) {
        self.kill();
    }
}

#[test]
fn run_attached_to_a_separate_sim_passes_and_the_report_names_it() {
    // It sends to 14540+N before anyone speaks (as PX4 up to instance 9), for the listening
    // spelling.
    let _vehicle = Vehicle::sim(200, "10", &["--offboard-port-per-instance"]);
    // MAVSDK's spelling: listen on every interface, port 14740 (instance 200's offboard port).
    let out = nexus(&[
        "run",
        "examples/takeoff-hover-land.toml",
        "--connect",
        "udp://:14740",
        "--json",
    ])
    .assert()
    .success()
    .stderr(predicate::str::contains(
        "nexus: attached vehicle on udpin:0.0.0.0:14740 (a simulator), system id 201",
    ))
    .stderr(predicate::str::contains("PASS: all 4 steps met"))
    .get_output()
    .clone();
    let r = json(&out.stdout);
    assert_eq!(r["passed"], true, "{r}");
    let v = &r["vehicle"];
    assert_eq!(v["kind"], "attached", "{v}");
    assert_eq!(v["connection"], "udpin:0.0.0.0:14740", "{v}");
    assert_eq!(v["system_id"], 201, "{v}");
    assert_eq!(v["component_id"], 1, "{v}");
    assert_eq!(v["simulator"], true, "{v}");
    // It identified as a simulator, so the height is its ground truth, as on a vehicle we start.
    let takeoff = &r["steps"][0]["snapshot"];
    assert!(takeoff["height_m"].as_f64().unwrap() >= 4.5, "{takeoff}");
}

#[test]
fn fly_attached_to_a_separately_started_fake_px4_passes() {
    let work = Scratch::new("attach-fake-px4");
    let _px4 = Vehicle::fake_px4(201, "10", &work, false);
    let out = nexus(&[
        "fly",
        "examples/box.plan",
        "--connect",
        // PX4 above instance 9 answers only a client that speaks first to its 14580+N.
        "udpout:127.0.0.1:14781",
        "--sysid",
        "202",
        "--json",
    ])
    .assert()
    .success()
    .stderr(predicate::str::contains(
        "PASS: mission complete: 6 items flown",
    ))
    .get_output()
    .clone();
    let r = json(&out.stdout);
    let v = &r["vehicle"];
    assert_eq!(v["kind"], "attached", "{v}");
    assert_eq!(v["connection"], "udpout:127.0.0.1:14781", "{v}");
    assert_eq!(v["system_id"], 202, "{v}");
    assert_eq!(v["simulator"], true, "{v}");
    assert_eq!(
        r["mission"]["items"].as_array().map(Vec::len),
        Some(6),
        "{r}"
    );
}

#[test]
fn a_vehicle_that_says_it_is_real_is_refused_unless_real_vehicle_is_given() {
    // PX4 latches its first client for good, and each command speaks from a port of its own:
    // a fresh vehicle for each (instances 202, 206, 207).
    let real = |n: u8| {
        let work = Scratch::new(&format!("attach-real-{n}"));
        let px4 = Vehicle::fake_px4(n, "10", &work, true);
        (
            work,
            px4,
            format!("udpout:127.0.0.1:{}", 14580 + u16::from(n)),
        )
    };
    let (_work, _px4, conn) = real(202);
    // The program arms and takes off: refused before anything is sent that could fly it.
    nexus(&[
        "run",
        "examples/takeoff-hover-land.toml",
        "--connect",
        &conn,
    ])
    .assert()
    .code(2)
    .stderr(predicate::str::contains(
        "refusing to fly system 203 on udpout:127.0.0.1:14782: it does not identify as a \
             simulator (AUTOPILOT_VERSION did not identify PX4 SITL)",
    ))
    .stderr(predicate::str::contains("pass --real-vehicle"));
    // `fly` always starts a mission: refused too.
    let (_work, _px4, conn) = real(206);
    nexus(&["fly", "examples/box.plan", "--connect", &conn])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("does not identify as a simulator"));
    // Said plainly, it flies; the report says it is not a simulator.
    let (_work, _px4, conn) = real(207);
    let out = nexus(&[
        "run",
        "examples/takeoff-hover-land.toml",
        "--connect",
        &conn,
        "--real-vehicle",
        "--json",
    ])
    .assert()
    .success()
    .stderr(predicate::str::contains("(not a simulator), system id 208"))
    .get_output()
    .clone();
    let r = json(&out.stdout);
    assert_eq!(r["vehicle"]["simulator"], false, "{r}");
    assert_eq!(r["passed"], true, "{r}");
}

/// `nexus sim --identify-as-hardware` (a simulated vehicle that says it is a Pixhawk) as
/// instance `n` at `speed`, sending to 14540+N whoever listens there, so one vehicle serves
/// several commands in turn; its console goes to `console`.
fn hardware_sim(n: u8, speed: &str, console: &std::path::Path) -> Vehicle {
    let mut cmd = Command::new(nexus_exe());
    cmd.args(["sim", "--instance", &n.to_string(), "--speed", speed])
        .args(["--identify-as-hardware", "--offboard-port-per-instance"])
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(console).expect("console file"))
        .stderr(Stdio::null());
    Vehicle(cmd.spawn().expect("start the vehicle"))
}

/// Programs that arm or move the vehicle without an `arm`, `takeoff`, `start` or `resume`
/// step: by the stick gesture (an `rc` action once the vehicle is armable, then Position by a
/// `then_mode` within the gesture's second), by a `then_rc` reaction of a wait whose step
/// does nothing, by an Offboard setpoint.
const GESTURE: &str = r#"
[[step]]
action = "hold"
until = { time = 8 }
timeout_s = 30

[[step]]
action = "rc"
sticks = { throttle = 0, yaw = 1 }
until = { time = 0.2, then_mode = "Position" }
timeout_s = 30

[[step]]
until = "armed"
timeout_s = 30
"#;
const THEN_RC: &str = r#"
[[step]]
until = { time = 8, then_rc = { throttle = 0, yaw = 1 }, then_mode = "Position" }
timeout_s = 30

[[step]]
until = "armed"
timeout_s = 30
"#;
const OFFBOARD: &str = r#"
[[step]]
action = "offboard"
north_m = 0
east_m = 0
down_m = -5
until = { mode = "Offboard" }
timeout_s = 30
"#;
/// Only Hold and waits: nothing that arms or moves a vehicle.
const QUIET: &str = r#"
[[step]]
action = "hold"
until = { time = 2, guards = [{ armed = true }] }
timeout_s = 10

[[step]]
until = { mode = "Hold" }
timeout_s = 10
"#;

#[test]
fn sticks_a_then_rc_reaction_and_offboard_are_refused_on_a_real_vehicle_before_anything_is_sent() {
    // Instance 208 sends to 14748 whoever listens: each command in turn, the same vehicle.
    let work = Scratch::new("attach-guard-refused");
    let console = work.path("console.txt");
    let _vehicle = hardware_sim(208, "5", &console);
    let conn = "udpin:127.0.0.1:14748";
    for (name, text, what) in [
        (
            "gesture",
            GESTURE,
            "step 2/3, `sticks roll 0, pitch 0, throttle 0, yaw 1`, streams sticks",
        ),
        (
            "then-rc",
            THEN_RC,
            "the then_rc reaction of step 1/2 streams sticks",
        ),
        (
            "offboard",
            OFFBOARD,
            "step 1/1, `offboard to NED (0, 0, -5) m`, streams an Offboard setpoint",
        ),
    ] {
        let program = work.file(&format!("{name}.toml"), text);
        let out = nexus(&["run", program.to_str().unwrap(), "--connect", conn])
            .output()
            .expect("run nexus");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{name}: {stderr}");
        assert!(
            stderr.contains("refusing to fly system 209 on udpin:127.0.0.1:14748: it does not identify as a simulator"),
            "{name}: {stderr}"
        );
        assert!(stderr.contains(what), "{name}: {stderr}");
        assert!(stderr.contains("pass --real-vehicle"), "{name}: {stderr}");
        // Refused before the first step: none was announced.
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(!stdout.contains("step 1/"), "{name}: {stdout}");
    }
    // A program that only holds and waits is no danger: it runs without --real-vehicle, and
    // finds the vehicle as it was, disarmed, in Hold, on the ground.
    let quiet = work.file("quiet.toml", QUIET);
    let out = nexus(&["run", quiet.to_str().unwrap(), "--connect", conn, "--json"])
        .assert()
        .success()
        .stderr(predicate::str::contains("(not a simulator), system id 209"))
        .get_output()
        .clone();
    let r = json(&out.stdout);
    assert_eq!(r["passed"], true, "{r}");
    assert_eq!(r["vehicle"]["simulator"], false, "{r}");
    let end = &r["final"];
    assert_eq!(end["armed"], false, "{end}");
    assert_eq!(end["mode"], "Hold", "{end}");
    // A caller that attaches with nothing declared and then starts a program that arms: the
    // flight refuses that program itself, before its first step.
    {
        use nexus_cli::exec::{Flight, StepMeta};
        use nexus_cli::vehicle::{Speed, VehicleArgs};
        use nexus_core::engine::{Program, ProgramEnd, Step, Wait};
        let args = VehicleArgs {
            signing: Default::default(),
            px4: None,
            sim: false,
            connect: Some(conn.into()),
            sysid: None,
            compid: None,
            real_vehicle: false,
            link_rate_baud: None,
            speed: Speed::Factor(1.0),
            instance: 0,
            listen: nexus_host::run::DEFAULT_LISTEN,
            model: None,
        };
        let connected = nexus_cli::vehicle::start(&args, None, None, None).expect("attach");
        assert!(!connected.may_move);
        let out = nexus_cli::output::Out::new(None);
        let mut flight = Flight::new(connected, &out, 0, false);
        let mut program = Program::new();
        program
            .push(Step::new(
                nexus_core::Action::Arm,
                Wait::armed().timeout_s(10.0),
            ))
            .unwrap();
        let meta = [StepMeta {
            name: None,
            action: "arm".into(),
            action_text: "arm".into(),
            until: "armed".into(),
        }];
        let end = flight.run(program, &meta);
        assert!(matches!(end, ProgramEnd::Aborted { step: 0 }), "{end:?}");
        let why = flight.log.failure(end, &meta).expect("a failure");
        assert!(
            why.contains("the program was refused: step 1, its action, can arm"),
            "{why}"
        );
    }
    // And the vehicle never armed, never lost a stick stream it never had.
    let log = std::fs::read_to_string(&console).unwrap_or_default();
    assert!(log.contains("Ready for takeoff"), "{log}");
    assert!(!log.contains("Armed by"), "{log}");
    assert!(!log.contains("Manual control lost"), "{log}");
}

#[test]
fn sticks_a_then_rc_reaction_and_offboard_fly_a_real_vehicle_with_real_vehicle() {
    // Instance 209, a fresh (disarmed) vehicle for each program.
    let work = Scratch::new("attach-guard-allowed");
    let conn = "udpin:127.0.0.1:14749";
    // What each did: armed by the gesture in Position, or in Offboard (disarmed).
    for (name, text, armed, mode) in [
        ("gesture", GESTURE, true, "Position"),
        ("then-rc", THEN_RC, true, "Position"),
        ("offboard", OFFBOARD, false, "Offboard"),
    ] {
        let console = work.path(&format!("{name}-console.txt"));
        let vehicle = hardware_sim(209, "5", &console);
        let program = work.file(&format!("{name}.toml"), text);
        let out = nexus(&[
            "run",
            program.to_str().unwrap(),
            "--connect",
            conn,
            "--real-vehicle",
            "--json",
        ])
        .output()
        .expect("run nexus");
        drop(vehicle);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{name}: {stderr}");
        let r = json(&out.stdout);
        assert_eq!(r["passed"], true, "{name}: {r}");
        assert_eq!(r["vehicle"]["simulator"], false, "{name}: {r}");
        let end = &r["final"];
        assert_eq!(end["armed"], armed, "{name}: {end}");
        assert_eq!(end["mode"], mode, "{name}: {end}");
        let log = std::fs::read_to_string(&console).unwrap_or_default();
        assert_eq!(
            log.contains("Armed by Stick gesture"),
            armed,
            "{name}: {log}"
        );
    }
}

#[test]
fn an_attached_vehicle_that_goes_silent_ends_the_flight_died() {
    let mut vehicle = Vehicle::sim(203, "1", &["--offboard-port-per-instance"]);
    let started = Instant::now();
    let run = std::thread::spawn(|| {
        nexus(&[
            "run",
            "examples/takeoff-hover-land.toml",
            "--connect",
            "udpin:127.0.0.1:14743",
            "--json",
        ])
        .output()
        .expect("run nexus")
    });
    // In flight (the take-off step holds for 2 s after 5 m), the vehicle vanishes.
    std::thread::sleep(Duration::from_secs(8));
    vehicle.kill();
    let out = run.join().expect("the run thread");
    // Supervision's 5 s of silence, on the wall clock, plus the shutdown: well under a minute.
    assert!(started.elapsed() < Duration::from_secs(60), "took too long");
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let r = json(&out.stdout);
    let died = r["died"].as_str().unwrap_or_default();
    assert!(died.contains("silent"), "{r}");
    assert_eq!(r["vehicle"]["kind"], "attached");
}

#[test]
fn speed_and_a_bad_connection_string_are_refused_before_anything_opens() {
    nexus(&[
        "run",
        "examples/takeoff-hover-land.toml",
        "--connect",
        "udpin:127.0.0.1:14744",
        "--speed",
        "10",
    ])
    .assert()
    .code(2)
    .stderr(predicate::str::contains("runs at its own pace"));
    nexus(&[
        "fly",
        "examples/box.plan",
        "--connect",
        "udpout://127.0.0.1:0",
    ])
    .assert()
    .code(2)
    .stderr(predicate::str::contains("port 0 is not a destination"));
    nexus(&["fly", "examples/box.plan", "--sysid", "3"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--connect"));
}

/// A vehicle whose autopilot is component 2: `--compid 2` flies it, and so does the default,
/// which latches the component of the first autopilot heartbeat; either way every command
/// addresses component 2 (the simulated vehicle ignores commands for component 1) and the
/// report names it.
#[test]
fn an_autopilot_on_component_2_is_flown_with_compid_2_and_by_default() {
    // Instances 194 and 195 (this test's own: cli_serial uses 204–207).
    for (n, compid) in [(194u8, Some("2")), (195, None)] {
        let _vehicle = Vehicle::sim(n, "10", &["--component-id", "2"]);
        // PX4's rule above instance 9: speak first to 14580+N.
        let conn = format!("udpout:127.0.0.1:{}", 14580 + u16::from(n));
        let mut args = vec![
            "run",
            "examples/takeoff-hover-land.toml",
            "--connect",
            &conn,
            "--json",
        ];
        if let Some(c) = compid {
            args.extend(["--compid", c]);
        }
        let out = nexus(&args)
            .assert()
            .success()
            .stderr(predicate::str::contains("PASS: all 4 steps met"))
            .get_output()
            .clone();
        let r = json(&out.stdout);
        assert_eq!(r["vehicle"]["component_id"], 2, "{compid:?}: {r}");
        assert_eq!(r["vehicle"]["system_id"], n + 1, "{r}");
    }
}
