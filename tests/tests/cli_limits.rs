//! Limits on every input of `nexus` (`cli/src/limits.rs`, docs/cli.md): generated speeds,
//! durations, instances, plan values and program values never panic and never hang; out of range
//! they exit 2 with a message, in range they are accepted (shown by an unwritable `--json` or an
//! unopenable link refusing the command next, so nothing flies). Input files that are not regular
//! (a FIFO, /dev/zero) are refused without blocking, a huge one-line plan gives a bounded error, an
//! unwritable `--json` stops the command before anything flies.
//!
//! SITL instance numbers used here: 240–247.

mod cli_support;

use cli_support::{nexus, repo, Scratch};
use nexus_cli::limits::{
    INSTANCE_MAX, MAX_DURATION_S, MAX_INPUT_BYTES, PX4_SPEED_MAX, SIM_SPEED_MAX, SPEED_MIN,
};
use nexus_host::launcher::DeathCause;
use std::process::Output;
use std::time::{Duration, Instant};

/// Wall limit of one invocation: each case is refused before any vehicle starts.
const CASE_LIMIT: Duration = Duration::from_secs(20);

/// Numbers as a user might type them: generated over signs, mantissas and exponents, plus the
/// words Rust's float parser takes.
fn generated_numbers() -> Vec<String> {
    let mut v = Vec::new();
    for sign in ["", "-"] {
        for mant in ["1", "2.5", "6.5", "9.99"] {
            for exp in [-400, -9, -1, 0, 1, 2, 6, 7, 19, 38, 308, 400] {
                v.push(format!("{sign}{mant}e{exp}"));
            }
        }
    }
    for edge in [
        "0", "-0", "0.1", "0.0999", "10", "10.001", "50", "50.001", "65", "200", "200.001", "500",
        "1000000", "1000001", "inf", "-inf", "NaN",
    ] {
        v.push(edge.to_string());
    }
    v
}

/// Run `nexus args` with a wall limit; the output (a hang fails the test).
fn run(args: &[&str]) -> Output {
    let t0 = Instant::now();
    let out = nexus(args).timeout(CASE_LIMIT).output().expect("run nexus");
    assert!(
        t0.elapsed() < CASE_LIMIT,
        "nexus {args:?} took {:?}",
        t0.elapsed()
    );
    out
}

/// Assert exit 2 with `want` in stderr and no panic.
fn refused(args: &[&str], want: &str) {
    let out = run(args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(2),
        "nexus {args:?}\nstdout: {stdout}\nstderr: {stderr}"
    );
    assert!(!stderr.contains("panicked"), "nexus {args:?}: {stderr}");
    assert!(
        stderr.contains(want),
        "nexus {args:?}: wanted {want:?} in\n{stderr}"
    );
    assert!(
        !stdout.contains("on UDP"),
        "nexus {args:?} started a vehicle"
    );
}

/// A value within `lo..=hi`, as the documented rule says (the test's own reading of it).
fn within(s: &str, lo: f64, hi: f64) -> bool {
    s.parse::<f64>()
        .is_ok_and(|x| x.is_finite() && x >= lo && x <= hi)
}

#[test]
fn generated_speeds_are_refused_out_of_range_and_accepted_in_it() {
    let scratch = Scratch::new("limits-speed");
    // In range, the speed passes and the unwritable --json is what stops the command.
    let json = scratch.path("no/such/dir/report.json");
    let json = json.to_str().unwrap();
    let mut accepted = 0;
    for v in generated_numbers() {
        let speed = format!("--speed={v}");
        let args = [
            "fly",
            "examples/box.plan",
            "--sim",
            &speed,
            "--instance",
            "240",
            "--json",
            json,
        ];
        if within(&v, SPEED_MIN, SIM_SPEED_MAX) {
            accepted += 1;
            refused(&args, "cannot write there");
        } else {
            refused(
                &args,
                &format!("--speed must be a positive number from 0.1 to {SIM_SPEED_MAX}"),
            );
        }
    }
    assert!(accepted >= 8, "only {accepted} generated speeds in range");
    // PX4's range is its own: 20 (not the built-in vehicle's) is its maximum. No PX4 is started: the speed is
    // checked before the build is looked for.
    for (v, ok) in [("20", true), ("20.5", false), ("50", false)] {
        let speed = format!("--speed={v}");
        let args = [
            "fly",
            "examples/box.plan",
            "--px4",
            "/nonexistent/px4-build",
            &speed,
            "--instance",
            "240",
            "--json",
            json,
        ];
        if ok {
            assert!(within(v, SPEED_MIN, PX4_SPEED_MAX));
            refused(&args, "cannot write there");
        } else {
            refused(&args, "from 0.1 to 20 on PX4 SITL");
        }
    }
}

#[test]
fn generated_durations_are_refused_out_of_range_and_accepted_in_it() {
    for v in generated_numbers() {
        let ok = within(&v, 0.0, MAX_DURATION_S);
        // watch: an address that cannot be bound stops an accepted duration.
        let dur = format!("--duration={v}");
        let args = ["watch", "udpin:203.0.113.1:14787", &dur];
        if ok {
            refused(&args, "nexus watch: ");
            let out = run(&args);
            assert!(!String::from_utf8_lossy(&out.stderr).contains("--duration"));
        } else {
            refused(
                &args,
                "--duration must be a number of seconds from 0 to 1e6",
            );
        }
        let int = format!("--interval={v}");
        let args = ["watch", "udpin:203.0.113.1:14787", &int];
        let positive = ok && v.parse::<f64>().is_ok_and(|x| x > 0.0);
        if positive {
            let out = run(&args);
            assert_eq!(out.status.code(), Some(2));
            assert!(!String::from_utf8_lossy(&out.stderr).contains("--interval"));
        } else if ok {
            refused(&args, "--interval must be above 0");
        } else {
            refused(
                &args,
                "--interval must be a number of seconds from 0 to 1e6",
            );
        }
        // bridge: a link that cannot open stops an accepted --stats-s.
        let stats = format!("--stats-s={v}");
        let args = [
            "bridge",
            "udpin:203.0.113.1:14788",
            "udpin:203.0.113.1:14789",
            &stats,
        ];
        if ok {
            let out = run(&args);
            assert_eq!(out.status.code(), Some(2));
            assert!(!String::from_utf8_lossy(&out.stderr).contains("--stats-s"));
        } else {
            refused(&args, "--stats-s must be a number of seconds from 0 to 1e6");
        }
        // fly --timeout-s (f32: the generated value as the CLI reads it).
        let t = format!("--timeout-s={v}");
        let args = ["fly", "examples/box.plan", "--instance", "241", &t];
        let t_ok = v
            .parse::<f32>()
            .is_ok_and(|x| x.is_finite() && x > 0.0 && x as f64 <= MAX_DURATION_S);
        if !t_ok {
            refused(
                &args,
                "--timeout-s must be a positive number of sim seconds",
            );
        }
    }
}

#[test]
fn instances_stop_before_the_system_id_would_be_ours() {
    let scratch = Scratch::new("limits-inst");
    let json = scratch.path("no/such/dir/r.json");
    let json = json.to_str().unwrap();
    for n in (0..=300).step_by(7).chain([253, 254, 255, 256]) {
        let inst = format!("--instance={n}");
        let args = ["fly", "examples/box.plan", "--sim", &inst, "--json", json];
        if n <= INSTANCE_MAX as i32 {
            refused(&args, "cannot write there");
        } else if n <= 255 {
            refused(&args, "--instance must be 0 to 253");
        } else {
            // Not a u8: clap's own error.
            refused(&args, "--instance");
        }
    }
    refused(
        &["sim", "--instance=250", "--count=5"],
        "instances must be 0 to 253",
    );
}

/// The box plan with `from` replaced by `to` (first occurrence), written to `scratch`.
fn edited_plan(scratch: &Scratch, name: &str, from: &str, to: &str) -> String {
    let text = std::fs::read_to_string(repo("examples/box.plan")).unwrap();
    assert!(text.contains(from), "box.plan has no {from:?}");
    let p = scratch.file(name, &text.replacen(from, to, 1));
    p.to_str().unwrap().to_string()
}

#[test]
fn generated_plan_values_are_refused_at_their_position() {
    let scratch = Scratch::new("limits-plan");
    let json = scratch.path("no/such/dir/r.json");
    let json = json.to_str().unwrap();
    let text = std::fs::read_to_string(repo("examples/box.plan")).unwrap();
    // A latitude, a longitude and an altitude of the box plan, as written there.
    let lat = "47.39787292480469";
    let lon = "8.54559326171875";
    assert!(text.contains(lat) && text.contains(lon));
    let mut n = 0;
    for v in generated_numbers() {
        // JSON has no inf or NaN words: those are syntax errors (also exit 2).
        let Ok(x) = v.parse::<f64>() else { continue };
        for (field, from, lo, hi, words) in [
            ("latitude", lat, -90.0, 90.0, "latitude (params[4])"),
            ("longitude", lon, -180.0, 180.0, "longitude (params[5])"),
        ] {
            n += 1;
            let plan = edited_plan(&scratch, &format!("p{n}.plan"), from, &v);
            let args = ["fly", &plan, "--instance", "242", "--json", json];
            if matches!(v.trim_start_matches('-'), "inf" | "NaN") {
                // inf, NaN: not JSON numbers.
                refused(&args, "invalid JSON");
            } else if x.is_finite() && (lo..=hi).contains(&x) {
                refused(&args, "cannot write there");
            } else {
                let out = run(&args);
                let stderr = String::from_utf8_lossy(&out.stderr);
                assert_eq!(out.status.code(), Some(2), "{field} {v}: {stderr}");
                assert!(
                    stderr.contains(words) && stderr.contains("is out of range"),
                    "{field} {v}: {stderr}"
                );
                // file:line:col of the value, then the caret line.
                assert!(
                    stderr.contains(&format!("p{n}.plan:")) && stderr.trim_end().ends_with('^'),
                    "{field} {v}: {stderr}"
                );
            }
        }
    }
    // Altitudes: finite, -1000 to 10000 m.
    for (v, ok) in [
        ("1e400", false),
        ("-1e6", false),
        ("10000.5", false),
        ("10000", true),
        ("-1000", true),
    ] {
        let body = text.replacen(
            "                    10\n",
            &format!("                    {v}\n"),
            1,
        );
        let plan = scratch.file("alt.plan", &body);
        let args = [
            "fly",
            plan.to_str().unwrap(),
            "--instance",
            "242",
            "--json",
            json,
        ];
        if ok {
            refused(&args, "cannot write there");
        } else {
            refused(&args, "altitude (params[6])");
        }
    }
}

#[test]
fn program_values_are_checked_with_their_position() {
    let scratch = Scratch::new("limits-prog");
    let cases = [
        ("action = \"takeoff\"\nalt_m = 1e30\n", "alt_m", "3:9"),
        ("action = \"speedup\"\nfactor = 1e9\n", "factor", "3:10"),
        ("action = \"speedup\"\nfactor = 1e-9\n", "factor", "3:10"),
        (
            "action = \"goto\"\nx_m = 1e12\ny_m = 0\nz_m = 5\n",
            "x_m",
            "3:7",
        ),
    ];
    for (i, (body, key, at)) in cases.iter().enumerate() {
        let p = scratch.file(
            &format!("p{i}.toml"),
            &format!("[[step]]\n{body}until = \"landed\"\ntimeout_s = 10\n"),
        );
        let out = run(&["run", p.to_str().unwrap(), "--check"]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{body}: {stderr}");
        assert!(
            stderr.contains(&format!("p{i}.toml:{at}: `{key}` must be")),
            "{body}: {stderr}"
        );
    }
    for (v, ok) in [
        ("1e19", false),
        ("1000001", false),
        ("1e6", true),
        ("-1", false),
    ] {
        let p = scratch.file(
            "t.toml",
            &format!("[[step]]\naction = \"none\"\nuntil = \"landed\"\ntimeout_s = {v}\n"),
        );
        let out = run(&["run", p.to_str().unwrap(), "--check"]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        if ok {
            assert_eq!(out.status.code(), Some(0), "{v}: {stderr}");
        } else {
            assert_eq!(out.status.code(), Some(2), "{v}: {stderr}");
            assert!(
                stderr.contains("t.toml:4:13: `timeout_s` must"),
                "{v}: {stderr}"
            );
        }
    }
    let p = scratch.file(
        "r.toml",
        "[[step]]\naction = \"none\"\nuntil = { sim_time = 1, then_speedup = 1e9 }\ntimeout_s = 5\n",
    );
    let out = run(&["run", p.to_str().unwrap(), "--check"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("r.toml:3:") && stderr.contains("then_speedup` must be a positive number"),
        "{stderr}"
    );
}

#[test]
fn files_that_are_not_regular_are_refused_without_blocking() {
    let scratch = Scratch::new("limits-files");
    let fifo = scratch.path("plan.fifo");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo");
    assert!(made.success());
    for p in ["/dev/zero", fifo.to_str().unwrap()] {
        refused(
            &["fly", p, "--instance", "243"],
            "not a regular file (a FIFO, a device or a socket is not read)",
        );
        refused(&["run", p, "--check"], "not a regular file");
    }
    let dir = scratch.0.to_str().unwrap();
    refused(&["fly", dir, "--instance", "243"], "it is a directory");
    // A program whose upload names a FIFO.
    let prog = scratch.file(
        "up.toml",
        "[[step]]\naction = \"upload\"\nplan = \"plan.fifo\"\n",
    );
    refused(
        &["run", prog.to_str().unwrap(), "--check"],
        "not a regular file",
    );
}

#[test]
fn a_huge_one_line_plan_gives_a_bounded_error() {
    let scratch = Scratch::new("limits-huge");
    let item =
        r#"{"type":"SimpleItem","command":16,"frame":3,"params":[0,0,0,null,47.39,8.54,10]}"#;
    // Just under the size limit, on one line, the error at its very end.
    let n = (MAX_INPUT_BYTES as usize - 200) / (item.len() + 1);
    let mut text = String::from(r#"{"fileType":"Plan","mission":{"items":["#);
    text.push_str(&vec![item; n].join(","));
    text.push_str(r#"],"plannedHomePosition":[47.39,8.54,"x"]}}"#);
    assert!(text.len() as u64 <= MAX_INPUT_BYTES && text.len() > 3_000_000);
    let plan = scratch.file("huge.plan", &text);
    let out = run(&["fly", plan.to_str().unwrap(), "--instance", "244"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.len() < 2_000, "{} bytes of error", stderr.len());
    assert!(stderr.contains("expected a number"), "{stderr}");
    assert!(
        stderr.contains("…") && stderr.trim_end().ends_with('^'),
        "{stderr}"
    );
    // Over the limit: refused by size, without reading it.
    text.push_str(&" ".repeat(300));
    let plan = scratch.file("huger.plan", &text);
    refused(
        &["fly", plan.to_str().unwrap(), "--instance", "244"],
        "an input file may hold",
    );
}

#[test]
fn an_unwritable_json_destination_stops_the_command_before_it_flies() {
    let scratch = Scratch::new("limits-json");
    let missing = scratch.path("no/such/dir/report.json");
    // A FIFO nobody reads: refused at once, not waited on.
    let fifo = scratch.path("report.fifo");
    assert!(std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo")
        .success());
    for json in [
        missing.to_str().unwrap(),
        scratch.0.to_str().unwrap(),
        fifo.to_str().unwrap(),
    ] {
        let t0 = Instant::now();
        refused(
            &[
                "fly",
                "examples/box.plan",
                "--instance",
                "245",
                "--json",
                json,
            ],
            "nothing was flown",
        );
        refused(
            &[
                "run",
                "examples/takeoff-hover-land.toml",
                "--instance",
                "245",
                "--json",
                json,
            ],
            "nothing was flown",
        );
        assert!(t0.elapsed() < Duration::from_secs(10));
    }
}

/// The built-in vehicle at `speed` on `instance`, connected as `fly` and `run` connect, with
/// no stall supervision (so only the wall bound can end a wait on a stopped clock).
fn connected(instance: u8, speed: f64) -> nexus_cli::vehicle::Connected {
    use nexus_host::offboard_client::OffboardClient;
    use nexus_host::run::{Run, RunOptions};
    let sim = Run::started(RunOptions::simulated(instance).speed(speed).stall(None))
        .expect("start the simulated vehicle");
    let port = sim.offboard_port().expect("offboard port");
    let client = OffboardClient::connect(&sim, 60.0).expect("connect");
    let link = client.link().expect("link");
    nexus_cli::vehicle::Connected {
        sim,
        client: Some(client),
        link,
        kind: "sim",
        what: format!("simulated PX4 (instance {instance})"),
        system_id: port.system_id,
        port: port.port,
        may_move: true,
        attached: None,
    }
}

/// A program of `steps`.
fn program(
    steps: &[nexus_core::engine::Step],
) -> nexus_core::engine::Program<{ nexus_cli::program::STEPS }> {
    let mut p = nexus_core::engine::Program::new();
    for s in steps {
        p.push(s.clone()).unwrap();
    }
    p
}

/// Step metadata for `n` steps.
fn metas(n: usize) -> Vec<nexus_cli::exec::StepMeta> {
    (0..n)
        .map(|i| nexus_cli::exec::StepMeta {
            name: None,
            action: "none".into(),
            action_text: format!("step {i}"),
            until: "something".into(),
        })
        .collect()
}

#[test]
fn a_stopped_vehicle_clock_ends_the_step_at_its_wall_bound() {
    use nexus_cli::exec::Flight;
    use nexus_cli::output::Out;
    use nexus_core::engine::{ProgramEnd, Step, Wait};
    use nexus_core::Action;
    use nexus_host::run::wall_bound;
    let speed = 10.0;
    let vehicle = connected(246, speed);
    vehicle
        .sim
        .inject(nexus_host::sim::Fault::StallClock)
        .expect("stall the clock");
    let out = Out::new(None);
    let mut flight = Flight::new(vehicle, &out, 0, false);
    let p = program(&[Step::new(
        Action::None,
        Wait::altitude_m(100.0).timeout_s(1.0),
    )]);
    let t0 = Instant::now();
    let end = flight.run(p, &metas(1));
    let took = t0.elapsed();
    let bound = wall_bound(1.0, speed);
    assert!(
        took >= bound && took < bound + Duration::from_secs(5),
        "{took:?} (bound {bound:?})"
    );
    assert!(matches!(end, ProgramEnd::Aborted { .. }), "{end:?}");
    let why = flight.log.failure(end, &metas(1)).expect("a failure");
    assert!(
        why.contains("no progress of the vehicle clock") && why.contains("1 s sim timeout at ×10"),
        "{why}"
    );
}

#[test]
fn a_refused_speedup_at_run_time_is_an_event_not_a_death() {
    use nexus_cli::exec::Flight;
    use nexus_cli::output::Out;
    use nexus_core::engine::{Step, Wait};
    use nexus_core::Action;
    let vehicle = connected(247, 10.0);
    let out = Out::new(None);
    let mut flight = Flight::new(vehicle, &out, 0, false);
    let p = program(&[
        Step::action_only(Action::Speedup(1e9)),
        Step::new(
            Action::None,
            Wait::sim_time_s(3.0).relative().timeout_s(20.0),
        ),
    ]);
    let end = flight.run(p, &metas(2));
    assert_eq!(
        flight.log.failure(end, &metas(2)),
        None,
        "{:?}",
        flight.log.events
    );
    assert_eq!(flight.log.died(), None);
    assert!(
        flight
            .log
            .events
            .iter()
            .any(|e| e.contains("speed-up ×1000000000 not applied")
                && e.contains(&format!("from 0.1 to {SIM_SPEED_MAX}"))),
        "{:?}",
        flight.log.events
    );
}

#[test]
fn a_library_wait_on_a_stopped_clock_ends_at_its_wall_bound() {
    use nexus_core::engine::Wait;
    use nexus_host::error::RunError;
    use nexus_host::run::{Run, RunOptions};
    // Instance 244's other users (the huge-plan test) never start a vehicle.
    let sim = Run::started(RunOptions::simulated(244).speed(10.0).stall(None))
        .expect("start the simulated vehicle");
    let client = nexus_host::offboard_client::OffboardClient::connect(&sim, 60.0).expect("connect");
    sim.inject(nexus_host::sim::Fault::StallClock)
        .expect("stall the clock");
    let t0 = Instant::now();
    let r = sim.until(&Wait::altitude_m(100.0), 1.0);
    let took = t0.elapsed();
    let bound = nexus_host::run::wall_bound(1.0, 10.0);
    assert!(
        took >= bound && took < bound + Duration::from_secs(5),
        "{took:?}"
    );
    match r {
        Err(RunError::Died { cause }) => {
            assert!(
                matches!(
                    cause,
                    DeathCause::NoClockProgress {
                        speed: Some(s),
                        ..
                    } if s == 10.0
                ),
                "{cause:?}"
            );
            assert!(
                cause
                    .to_string()
                    .starts_with("no progress of the vehicle clock"),
                "{cause}"
            )
        }
        other => panic!("{other:?}"),
    }
    drop(client);
}
