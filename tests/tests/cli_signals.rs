//! Interrupts of `nexus fly` / `nexus run` mid-flight: SIGINT, SIGTERM and
//! SIGHUP end the flight within a second with the report written (`aborted`, "interrupted by
//! SIGINT"), exit 128 + the signal's number, leave no process of the vehicle behind (also one
//! that left PX4's process group) and free the ports; a second signal during a slow shutdown
//! still ends it promptly; and a `nexus fly` stopped (SIGSTOP) for longer than the stall limit
//! goes on after SIGCONT without declaring the vehicle dead.
//!
//! SITL instance numbers used here: 232–239.

mod cli_support;

use cli_support::{json, nexus_exe, reasons, repo, Scratch};
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How soon after the signal the command must have exited (wall).
const STOP_LIMIT: Duration = Duration::from_secs(1);

/// How long a test waits for anything before it fails instead of hanging.
const PATIENCE: Duration = Duration::from_secs(90);

/// The fake PX4's build directory.
fn fake_px4() -> String {
    repo("tests/fixtures/fake-px4").display().to_string()
}

/// A running `nexus` whose output lines are collected as they come.
struct Running {
    child: Child,
    lines: mpsc::Receiver<String>,
    seen: Vec<String>,
}

impl Running {
    /// Start `nexus args` with `env`, human output on stdout (the report goes to a file).
    fn start(args: &[&str], env: &[(&str, String)]) -> Running {
        let mut cmd = Command::new(nexus_exe());
        cmd.current_dir(repo(""))
            .env_remove("NEXUS_PX4_BUILD")
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().expect("start nexus");
        let (tx, lines) = mpsc::channel();
        for stream in [
            Box::new(child.stdout.take().expect("stdout")) as Box<dyn std::io::Read + Send>,
            Box::new(child.stderr.take().expect("stderr")),
        ] {
            let tx = tx.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(stream).lines().map_while(Result::ok) {
                    let _ = tx.send(line);
                }
            });
        }
        Running {
            child,
            lines,
            seen: Vec::new(),
        }
    }

    /// Wait until a line containing `text` has been printed.
    fn wait_line(&mut self, text: &str) {
        let start = Instant::now();
        while !self.seen.iter().any(|l| l.contains(text)) {
            let left = PATIENCE.saturating_sub(start.elapsed());
            match self.lines.recv_timeout(left) {
                Ok(l) => self.seen.push(l),
                Err(_) => {
                    let _ = self.child.kill();
                    panic!("no line with {text:?}; output:\n{}", self.seen.join("\n"));
                }
            }
        }
    }

    /// Send `signal` (a `kill` name: INT, TERM, HUP, STOP, CONT).
    fn signal(&self, signal: &str) {
        let ok = Command::new("kill")
            .args([&format!("-{signal}"), &self.child.id().to_string()])
            .status()
            .expect("run kill")
            .success();
        assert!(ok, "kill -{signal} failed");
    }

    /// Wait for the exit, at most `limit`; the status, how long it took, and all the output.
    fn wait_exit(mut self, limit: Duration) -> (ExitStatus, Duration, String) {
        let start = Instant::now();
        let status = loop {
            if let Some(st) = self.child.try_wait().expect("try_wait") {
                break st;
            }
            if start.elapsed() > PATIENCE {
                let _ = self.child.kill();
                panic!("nexus did not exit; output:\n{}", self.seen.join("\n"));
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        let took = start.elapsed();
        // The output pipes close with the process: collect the rest.
        while let Ok(l) = self.lines.recv_timeout(Duration::from_secs(2)) {
            self.seen.push(l);
        }
        let out = self.seen.join("\n");
        assert!(
            took <= limit,
            "exited {:.2} s after the signal, limit {:.2} s:\n{out}",
            took.as_secs_f64(),
            limit.as_secs_f64()
        );
        (status, took, out)
    }
}

/// Whether process `pid` still runs (exists and is not a zombie).
fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => false,
        Ok(stat) => {
            let state = stat
                .rfind(')')
                .and_then(|i| stat[i + 1..].split_whitespace().next());
            !matches!(state, Some("Z") | Some("X") | None)
        }
    }
}

/// Both UDP ports of `instance` (ours 14540+N, the vehicle's 14580+N) can be bound again.
fn assert_ports_free(instance: u16) {
    for port in [14540 + instance, 14580 + instance] {
        if let Err(e) = std::net::UdpSocket::bind(("0.0.0.0", port)) {
            panic!("UDP {port} still taken after the exit: {e}");
        }
    }
}

/// The report says the flight was interrupted by `name` and exits with `code`.
fn assert_interrupted(report: &Value, name: &str, code: i32, out: &str) {
    let why = format!("interrupted by {name}");
    assert_eq!(report["exit_code"], code, "{report}\n{out}");
    assert_eq!(report["passed"], false, "{report}");
    let verdict = report["verdict"].as_str().expect("verdict");
    assert!(verdict.starts_with("FAIL: "), "{verdict}");
    assert!(verdict.contains(&why), "{verdict}");
    assert!(
        reasons(report).iter().any(|r| r == "aborted"),
        "a step ended aborted: {report}"
    );
    assert!(
        report["events"]
            .as_array()
            .expect("events")
            .iter()
            .any(|e| e == &Value::from(why.as_str())),
        "{report}"
    );
    assert!(out.contains("FAIL: ") && out.contains(&why), "{out}");
}

fn read_report(path: &std::path::Path) -> Value {
    json(&std::fs::read(path).expect("the JSON report was written"))
}

#[test]
fn sigint_mid_flight_on_the_built_in_vehicle_writes_the_report_and_exits_130() {
    let dir = Scratch::new("sig-int-sim");
    let report = dir.path("report.json");
    let mut r = Running::start(
        &[
            "fly",
            "examples/box.plan",
            "--speed",
            "10",
            "--instance",
            "232",
            "--json",
            report.to_str().unwrap(),
        ],
        &[],
    );
    r.wait_line("step 2/4: fly the mission");
    r.signal("INT");
    let (status, took, out) = r.wait_exit(STOP_LIMIT);
    assert_eq!(status.code(), Some(130), "{out}");
    eprintln!("SIGINT → exit in {:.3} s", took.as_secs_f64());
    assert_interrupted(&read_report(&report), "SIGINT", 130, &out);
    assert_ports_free(232);
}

#[test]
fn sighup_mid_program_exits_129_with_the_report() {
    let dir = Scratch::new("sig-hup-run");
    let report = dir.path("report.json");
    let mut r = Running::start(
        &[
            "run",
            "examples/takeoff-hover-land.toml",
            "--speed",
            "10",
            "--instance",
            "233",
            "--json",
            report.to_str().unwrap(),
        ],
        &[],
    );
    r.wait_line("(hover)");
    r.signal("HUP");
    let (status, _, out) = r.wait_exit(STOP_LIMIT);
    assert_eq!(status.code(), Some(129), "{out}");
    assert_interrupted(&read_report(&report), "SIGHUP", 129, &out);
    assert_ports_free(233);
}

/// Fly the fake PX4 (which runs the built-in vehicle as its child, started as `detach` says),
/// send `signal` mid-flight; returns the report, the output, and the vehicle's and PX4's pids.
fn interrupt_fake_px4(
    instance: u16,
    detach: &str,
    signal: &str,
    extra_env: &[(&str, String)],
    limit: Duration,
    second: Option<&str>,
) -> (ExitStatus, Value, String, Vec<u32>) {
    let dir = Scratch::new(&format!("sig-px4-{instance}"));
    let report = dir.path("report.json");
    let pids = dir.path("pids");
    let mut env = vec![
        ("FAKE_PX4_MODE", "fly".to_string()),
        ("FAKE_PX4_NEXUS", nexus_exe().display().to_string()),
        ("FAKE_PX4_DETACH", detach.to_string()),
        ("FAKE_PX4_PIDS", pids.display().to_string()),
    ];
    env.extend(extra_env.iter().cloned());
    let inst = instance.to_string();
    let mut r = Running::start(
        &[
            "fly",
            "examples/box.plan",
            "--px4",
            &fake_px4(),
            "--speed",
            "10",
            "--instance",
            &inst,
            "--json",
            report.to_str().unwrap(),
        ],
        &env,
    );
    r.wait_line("step 2/4: fly the mission");
    let pids: Vec<u32> = std::fs::read_to_string(&pids)
        .expect("the fake PX4 wrote its pids")
        .lines()
        .map(|l| l.trim().parse().expect("a pid"))
        .collect();
    assert_eq!(pids.len(), 2, "{pids:?}");
    assert!(pids.iter().all(|&p| alive(p)), "vehicle and PX4 run");
    r.signal(signal);
    if let Some(s) = second {
        // The verdict is out and the report written: PX4 is being closed.
        r.wait_line("FAIL: ");
        let start = Instant::now();
        while std::fs::read(&report)
            .ok()
            .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
            .is_none()
        {
            assert!(start.elapsed() < PATIENCE, "no report");
            std::thread::sleep(Duration::from_millis(5));
        }
        r.signal(s);
    }
    let (status, took, out) = r.wait_exit(limit);
    eprintln!(
        "instance {instance}: {signal} → exit in {:.3} s",
        took.as_secs_f64()
    );
    for &p in &pids {
        assert!(!alive(p), "process {p} was left running:\n{out}");
    }
    assert_ports_free(instance);
    (status, read_report(&report), out, pids)
}

#[test]
fn sigterm_ends_a_px4_whose_vehicle_was_orphaned_out_of_its_group() {
    // The vehicle (holding UDP 14580+N) is started through setsid from a subshell that exits:
    // it is in no group of PX4's and not even PX4's child.
    let (status, report, out, _) = interrupt_fake_px4(234, "orphan", "TERM", &[], STOP_LIMIT, None);
    assert_eq!(status.code(), Some(143), "{out}");
    assert_interrupted(&report, "SIGTERM", 143, &out);
    assert_eq!(report["vehicle"]["kind"], "px4");
}

#[test]
fn sigint_ends_a_px4_whose_vehicle_left_its_process_group() {
    let (status, report, out, _) = interrupt_fake_px4(235, "setsid", "INT", &[], STOP_LIMIT, None);
    assert_eq!(status.code(), Some(130), "{out}");
    assert_interrupted(&report, "SIGINT", 130, &out);
}

#[test]
fn a_second_signal_during_a_slow_shutdown_ends_it_at_once() {
    // PX4 ignores SIGTERM: closing it would take the kill grace (2 s) before SIGKILL. A second
    // SIGINT, once the verdict is out, ends everything at once.
    let (status, report, out, _) = interrupt_fake_px4(
        236,
        "",
        "INT",
        &[("FAKE_PX4_IGNORE_TERM", "1".into())],
        STOP_LIMIT,
        Some("INT"),
    );
    assert_eq!(status.code(), Some(130), "{out}");
    assert!(out.contains("SIGINT again: ending at once"), "{out}");
    // The report was written before PX4 was closed.
    assert_interrupted(&report, "SIGINT", 130, &out);
}

#[test]
fn a_stopped_nexus_does_not_declare_the_vehicle_dead_after_sigcont() {
    let dir = Scratch::new("sig-stop");
    let report = dir.path("report.json");
    let mut r = Running::start(
        &[
            "fly",
            "examples/box.plan",
            "--speed",
            "5",
            "--instance",
            "237",
            "--json",
            report.to_str().unwrap(),
        ],
        &[],
    );
    r.wait_line("step 2/4: fly the mission");
    // Longer than the 5 s stall limit: the built-in vehicle is paused with us.
    r.signal("STOP");
    std::thread::sleep(Duration::from_secs(7));
    r.signal("CONT");
    let (status, _, out) = r.wait_exit(PATIENCE);
    assert_eq!(status.code(), Some(0), "{out}");
    assert!(!out.contains("died"), "{out}");
    assert!(out.contains("PASS: mission complete"), "{out}");
    let report = read_report(&report);
    assert_eq!(report["passed"], true, "{report}");
    assert_eq!(report["died"], Value::Null, "{report}");
}

#[test]
fn sim_watch_and_bridge_exit_cleanly_on_each_signal() {
    // `nexus sim` stops its vehicles, `watch` and `bridge` their links: the exit code names the
    // signal, a line says why, and the ports are free afterwards.
    let cases: [(&str, i32, &str); 3] = [
        ("INT", 130, "SIGINT"),
        ("TERM", 143, "SIGTERM"),
        ("HUP", 129, "SIGHUP"),
    ];
    for (signal, code, name) in cases {
        let why = format!("interrupted by {name}");
        // The simulated vehicle of instance 238, and a watch of its offboard port.
        let mut sim = Running::start(&["sim", "--instance", "238"], &[]);
        sim.wait_line("nexus sim: instance 238");
        let mut watch = Running::start(
            // Speaking first to the vehicle's 14580+N, as PX4's rule above instance 9 needs.
            &["watch", "udpout:127.0.0.1:14818", "--interval", "0.2"],
            &[],
        );
        watch.wait_line("armed");
        watch.signal(signal);
        let (status, _, out) = watch.wait_exit(STOP_LIMIT);
        assert_eq!(status.code(), Some(code), "watch: {out}");
        assert!(out.contains(&why), "watch: {out}");
        sim.signal(signal);
        let (status, _, out) = sim.wait_exit(STOP_LIMIT);
        assert_eq!(status.code(), Some(code), "sim: {out}");
        assert!(out.contains(&why), "sim: {out}");
        assert_ports_free(238);

        // On the vehicle's port, free again.
        let mut bridge = Running::start(
            &["bridge", "tcpin:127.0.0.1:0", "udpin:127.0.0.1:14818"],
            &[],
        );
        bridge.wait_line("nexus bridge: ");
        bridge.signal(signal);
        let (status, _, out) = bridge.wait_exit(STOP_LIMIT);
        assert_eq!(status.code(), Some(code), "bridge: {out}");
        assert!(
            out.contains(&format!("nexus bridge: {why}: stopped")),
            "bridge: {out}"
        );
        assert_ports_free(238);
    }
}

#[test]
fn a_signal_while_px4_starts_ends_it_at_once_with_its_child_and_the_report() {
    // This fake PX4 never speaks MAVLink: `fly` waits for its heartbeat. It has started a child
    // that ignores SIGTERM.
    let dir = Scratch::new("sig-px4-start");
    let pids = dir.path("pids");
    let json_path = dir.path("report.json");
    let mut r = Running::start(
        &[
            "fly",
            "examples/box.plan",
            "--px4",
            &fake_px4(),
            "--instance",
            "239",
            "--json",
            &json_path.display().to_string(),
        ],
        &[
            ("FAKE_PX4_MODE", "child".to_string()),
            ("FAKE_PX4_PIDS", pids.display().to_string()),
        ],
    );
    r.wait_line("nexus fly: ");
    let start = Instant::now();
    let pids: Vec<u32> = loop {
        let got: Vec<u32> = std::fs::read_to_string(&pids)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.trim().parse().ok())
            .collect();
        if got.len() == 2 {
            break got;
        }
        assert!(start.elapsed() < PATIENCE, "the fake PX4 wrote no pids");
        std::thread::sleep(Duration::from_millis(10));
    };
    assert!(pids.iter().all(|&p| alive(p)));
    r.signal("INT");
    let (status, _, out) = r.wait_exit(STOP_LIMIT);
    assert_eq!(status.code(), Some(130), "{out}");
    assert!(
        out.contains("FAIL: interrupted by SIGINT while the vehicle was starting"),
        "{out}"
    );
    let report = read_report(&json_path);
    assert_eq!(report["exit_code"], 130, "{report}");
    assert_eq!(report["passed"], false, "{report}");
    assert!(
        report["verdict"]
            .as_str()
            .is_some_and(|v| v.contains("interrupted by SIGINT")),
        "{report}"
    );
    for &p in &pids {
        assert!(!alive(p), "process {p} was left running:\n{out}");
    }
    assert_ports_free(239);
}
