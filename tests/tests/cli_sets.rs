//! A set of programs (`nexus run A B … --jobs N`, `--partition K/N`) takes every option of a
//! single run: `--connect` reaches each program's run (a silent vehicle is a
//! FAIL, never the built-in vehicle's PASS), with `--sysid`, `--compid`, `--real-vehicle`; the
//! set refuses what a single run refuses (`--speed` with `--connect`) and what it cannot do
//! (`--connect` with `--jobs` > 1). And an interrupted set (item 3) ends its programs, writes
//! its summary, `--json`, `--junit` and each program's `--report`, saying which programs were
//! interrupted and which never ran.
//!
//! SITL instances of these tests: 27–33 (ports 14567–14573 and 14607–14613; 34 is
//! `cli_outputs`'): free, and so are N − 40 and N + 40, whose ports overlap theirs (instance
//! N's 14580+N is instance N + 40's 14540+N).

mod cli_support;

use cli_support::{json, nexus, nexus_exe, repo, Bg, Scratch};
use predicates::prelude::*;
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::net::UdpSocket;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// How long a test waits for anything before it fails instead of hanging.
const PATIENCE: Duration = Duration::from_secs(90);

/// A copy of the example takeoff, hover and land program, as `name` in `dir`.
fn takeoff(dir: &Scratch, name: &str) -> PathBuf {
    dir.file(
        name,
        &std::fs::read_to_string(repo("examples/takeoff-hover-land.toml")).unwrap(),
    )
}

#[test]
fn a_set_refuses_connect_with_several_jobs_and_speed_with_connect() {
    let dir = Scratch::new("sets-refused");
    let (a, b) = (takeoff(&dir, "a.toml"), takeoff(&dir, "b.toml"));
    // One vehicle, two programs at once: refused before anything starts.
    nexus(&[
        "run",
        s(&a),
        s(&b),
        "--jobs",
        "2",
        "--connect",
        "udpout:127.0.0.1:14699",
    ])
    .assert()
    .code(2)
    .stderr(predicate::str::contains(
        "--connect udpout:127.0.0.1:14699 names one vehicle, and --jobs 2",
    ))
    .stderr(predicate::str::contains("PASS").not());
    // What a single run refuses, the set refuses (here with one job, so only the speed is
    // wrong).
    for set in [
        vec![s(&a), s(&b)],
        vec![s(&a), "--partition", "1/1"],
        vec![s(&a), "--jobs", "2", "--sim"],
    ] {
        let mut args = vec!["run"];
        args.extend(set.iter().copied());
        let connect = !args.contains(&"--sim");
        if connect {
            args.extend(["--connect", "udpout:127.0.0.1:14699", "--speed", "20"]);
        } else {
            args.extend(["--speed", "900", "--instance", "33"]);
        }
        let want = if connect {
            "--speed 20 paces a vehicle nexus starts"
        } else {
            "--speed must be a positive number from 0.1 to 500"
        };
        nexus(&args)
            .assert()
            .code(2)
            .stderr(predicate::str::contains(want))
            .stderr(predicate::str::contains("programs,").not());
    }
}

#[test]
fn a_set_connected_to_a_silent_port_fails_and_flies_nothing_else() {
    let dir = Scratch::new("sets-silent");
    let a = takeoff(&dir, "a.toml");
    // Ours, so nothing else answers on it: it takes what is sent and says nothing.
    let silent = UdpSocket::bind("127.0.0.1:0").unwrap();
    let conn = format!("udpout:{}", silent.local_addr().unwrap());
    let report = dir.path("set.json");
    let out = nexus(&[
        "run",
        s(&a),
        "--partition",
        "1/1",
        "--connect",
        &conn,
        "--json",
        s(&report),
    ])
    .assert()
    .code(1)
    .stdout(predicate::str::contains(
        "FAIL: 1 programs: 0 passed, 1 failed",
    ))
    .get_output()
    .clone();
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(!text.contains("PASS"), "{text}");
    let r = json(&std::fs::read(&report).unwrap());
    assert_eq!(r["passed"], false, "{r}");
    let p = &r["reports"][0];
    assert_eq!(p["vehicle"]["kind"], "attached", "{p}");
    assert_eq!(p["vehicle"]["connection"], conn.as_str(), "{p}");
    let verdict = p["verdict"].as_str().unwrap();
    assert!(verdict.contains("no heartbeat"), "{verdict}");
    // The program's run spoke to the port: the link was the one given.
    silent.set_nonblocking(true).unwrap();
    let mut buf = [0u8; 512];
    assert!(
        silent.recv_from(&mut buf).is_ok(),
        "nothing was sent to {conn}"
    );
}

#[test]
fn a_set_passes_connect_sysid_compid_and_real_vehicle_to_each_program() {
    // A vehicle of its own, sending to 14540+N before anyone speaks; the programs of the set
    // fly it one after another, each listening on that port.
    let _vehicle = Bg::nexus(&[
        "sim",
        "--instance",
        "32",
        "--speed",
        "10",
        "--offboard-port-per-instance",
    ]);
    let dir = Scratch::new("sets-connect");
    let (a, b) = (takeoff(&dir, "a.toml"), takeoff(&dir, "b.toml"));
    let report = dir.path("set.json");
    let evidence = dir.path("evidence");
    nexus(&[
        "run",
        s(&a),
        s(&b),
        "--connect",
        "udpin:127.0.0.1:14572",
        "--sysid",
        "33",
        "--compid",
        "1",
        "--real-vehicle",
        "--json",
        s(&report),
        // Both kinds of file in one directory: their names differ by the extension.
        "--tlog",
        s(&evidence),
        "--report",
        s(&evidence),
    ])
    .assert()
    .success()
    .stdout(predicate::str::contains(
        "PASS: 2 programs: 2 passed, 0 failed",
    ));
    let r = json(&std::fs::read(&report).unwrap());
    let reports = r["reports"].as_array().unwrap();
    assert_eq!(reports.len(), 2, "{r}");
    for p in reports {
        let v = &p["vehicle"];
        assert_eq!(v["kind"], "attached", "{v}");
        assert_eq!(v["connection"], "udpin:127.0.0.1:14572", "{v}");
        assert_eq!(v["system_id"], 33, "{v}");
        assert_eq!(v["component_id"], 1, "{v}");
        assert_eq!(p["passed"], true, "{p}");
        let tlog = PathBuf::from(p["link"]["tlog"].as_str().expect("a tlog"));
        assert!(tlog.starts_with(&evidence), "{}", tlog.display());
        assert!(std::fs::metadata(&tlog).unwrap().len() > 0);
    }
    let files = std::fs::read_dir(&evidence).unwrap().count();
    assert_eq!(files, 4, "a .tlog and a .html per program");
    // `--sysid` reaches the programs: another system id is not this vehicle.
    nexus(&[
        "run",
        s(&a),
        "--jobs",
        "1",
        "--partition",
        "1/1",
        "--connect",
        "udpin:127.0.0.1:14572",
        "--sysid",
        "77",
    ])
    .assert()
    .code(1)
    .stderr(predicate::str::contains(
        "no heartbeat of system 77's autopilot",
    ));
}

/// A running `nexus` whose output lines are collected as they come.
struct Running {
    child: std::process::Child,
    lines: mpsc::Receiver<String>,
    seen: Vec<String>,
}

impl Running {
    /// Start `nexus args…` in a process group of its own, as a shell starts a job.
    fn start(args: &[&str]) -> Running {
        let mut child = Command::new(nexus_exe())
            .current_dir(repo(""))
            .env_remove("NEXUS_PX4_BUILD")
            .args(args)
            .process_group(0)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start nexus");
        let (tx, lines) = mpsc::channel();
        for stream in [
            Box::new(child.stdout.take().unwrap()) as Box<dyn std::io::Read + Send>,
            Box::new(child.stderr.take().unwrap()),
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

    /// Send `signal` (`kill`'s name) to the process, or to its whole group as a terminal's
    /// Ctrl-C does.
    fn signal(&self, signal: &str, group: bool) {
        let pid = self.child.id().to_string();
        let target = if group { format!("-{pid}") } else { pid };
        let ok = Command::new("kill")
            .args([&format!("-{signal}"), "--", &target])
            .status()
            .unwrap()
            .success();
        assert!(ok, "kill -{signal} {target}");
    }

    /// Wait for the exit; its status, how long after the call it came, and all the output.
    fn wait_exit(mut self) -> (ExitStatus, Duration, String) {
        let since = Instant::now();
        let status = loop {
            if let Some(st) = self.child.try_wait().unwrap() {
                break st;
            }
            if since.elapsed() > PATIENCE {
                let _ = self.child.kill();
                panic!("the set did not exit:\n{}", self.seen.join("\n"));
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        let took = since.elapsed();
        while let Ok(l) = self.lines.recv_timeout(Duration::from_secs(2)) {
            self.seen.push(l);
        }
        (status, took, self.seen.join("\n"))
    }

    /// Wait until a line containing `text` has been printed.
    fn wait_line(&mut self, text: &str) {
        let start = Instant::now();
        while !self.seen.iter().any(|l| l.contains(text)) {
            match self
                .lines
                .recv_timeout(PATIENCE.saturating_sub(start.elapsed()))
            {
                Ok(l) => self.seen.push(l),
                Err(_) => {
                    let _ = self.child.kill();
                    panic!("no line with {text:?}; output:\n{}", self.seen.join("\n"));
                }
            }
        }
    }
}

/// Wait until `n` recordings in `dir` (but one whose name starts with `except`) have grown
/// past 4 KiB: their vehicles fly.
fn wait_flying(dir: &Path, except: Option<&str>, n: usize) {
    let start = Instant::now();
    loop {
        let flying = std::fs::read_dir(dir)
            .map(|d| {
                d.filter_map(Result::ok)
                    .filter(|e| {
                        except.is_none_or(|x| !e.file_name().to_string_lossy().starts_with(x))
                    })
                    .filter(|e| e.metadata().is_ok_and(|m| m.len() > 4096))
                    .count()
            })
            .unwrap_or(0);
        if flying >= n {
            return;
        }
        assert!(start.elapsed() < PATIENCE, "the flights did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Every UDP port of these instances can be bound again: their vehicles are gone.
fn assert_ports_free(instances: std::ops::RangeInclusive<u16>, out: &str) {
    for instance in instances {
        for port in [14540 + instance, 14580 + instance] {
            if let Err(e) = UdpSocket::bind(("0.0.0.0", port)) {
                panic!("UDP {port} still taken after the exit: {e}\n{out}");
            }
        }
    }
}

#[test]
fn an_interrupted_set_writes_its_reports_and_says_what_was_interrupted() {
    let dir = Scratch::new("sets-interrupt");
    // Met at once: it passes before the signal. Then three long flights on three workers,
    // and a fifth program no worker reaches before the signal.
    let quick = dir.file(
        "a-quick.toml",
        "[[step]]\nuntil = \"disarmed\"\ntimeout_s = 30\n",
    );
    let long: Vec<PathBuf> = ["b.toml", "c.toml", "d.toml", "e.toml"]
        .iter()
        .map(|n| takeoff(&dir, n))
        .collect();
    let (report, junit, html, tlogs) = (
        dir.path("set.json"),
        dir.path("set.xml"),
        dir.path("html"),
        dir.path("tlogs"),
    );
    let mut args = vec!["run", s(&quick)];
    args.extend(long.iter().map(|p| s(p)));
    args.extend([
        "--jobs",
        "3",
        "--instance",
        "27",
        "--speed",
        "2",
        "--json",
        s(&report),
        "--junit",
        s(&junit),
        "--report",
        s(&html),
        "--tlog",
        s(&tlogs),
    ]);
    let mut r = Running::start(&args);
    r.wait_line("PASS: all 1 steps met");
    // b, c and d fly: their recordings grow.
    wait_flying(&tlogs, Some("a-quick"), 3);
    r.signal("INT", false);
    let (status, took, out) = r.wait_exit();
    assert_eq!(status.code(), Some(130), "{out}");
    assert!(
        took <= Duration::from_secs(2),
        "exited {:.2} s after the signal:\n{out}",
        took.as_secs_f64()
    );
    assert!(
        out.contains(
            "FAIL: 5 programs: 1 passed, 0 failed, 3 interrupted, 1 not run (interrupted by SIGINT)"
        ),
        "{out}"
    );
    // Every vehicle is gone, its ports free.
    assert_ports_free(27..=29, &out);

    // --json: each program's status, the interrupted ones' own reports.
    let set = json(&std::fs::read(&report).expect("the set's --json"));
    assert_eq!(set["exit_code"], 130, "{set}");
    assert_eq!(set["interrupted"], "SIGINT", "{set}");
    let status_of = |name: &str| -> (String, Value) {
        let i = set["programs"]
            .as_array()
            .unwrap()
            .iter()
            .position(|p| p["program"].as_str().unwrap().ends_with(name))
            .unwrap_or_else(|| panic!("{name} not in {set}"));
        (
            set["programs"][i]["status"].as_str().unwrap().to_string(),
            set["reports"][i].clone(),
        )
    };
    assert_eq!(status_of("a-quick.toml").0, "passed");
    for name in ["b.toml", "c.toml", "d.toml"] {
        let (st, rep) = status_of(name);
        assert_eq!(st, "interrupted", "{name}: {rep}");
        assert_eq!(rep["exit_code"], 130, "{rep}");
        let verdict = rep["verdict"].as_str().unwrap();
        assert!(verdict.contains("interrupted by SIGINT"), "{verdict}");
        let aborted = rep["steps"]
            .as_array()
            .unwrap()
            .iter()
            .any(|st| st["reason"] == "aborted");
        assert!(aborted, "{name}: its pending step ended aborted: {rep}");
    }
    let (st, rep) = status_of("e.toml");
    assert_eq!(st, "not run", "{rep}");
    assert_eq!(
        rep["verdict"], "FAIL: not run: the set was interrupted by SIGINT",
        "{rep}"
    );
    assert_eq!(rep["steps_total"], 4, "{rep}");

    // --junit: the interrupted steps are failures `aborted`, the program not run skipped.
    let x = std::fs::read_to_string(&junit).expect("the set's --junit");
    assert_eq!(x.matches("<testsuite ").count(), 5, "{x}");
    assert_eq!(x.matches("type=\"aborted\"").count(), 3, "{x}");
    assert_eq!(
        x.matches("<skipped message=\"not run: the set was interrupted by SIGINT\"/>")
            .count(),
        4,
        "{x}"
    );
    // --report: one page per program, the one not run among them.
    let pages: Vec<String> = std::fs::read_dir(&html)
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| std::fs::read_to_string(e.path()).unwrap())
        .collect();
    assert_eq!(pages.len(), 5);
    assert_eq!(
        pages
            .iter()
            .filter(|p| p.contains("interrupted by SIGINT"))
            .count(),
        4
    );
}

#[test]
fn sigterm_to_the_whole_group_and_sighup_end_a_set_with_their_codes() {
    // SIGTERM to the set's process group, as a terminal or a CI runner sends it: the programs
    // (each in a group of its own) get it once, from the set, and still write their reports.
    for (signal, group, code, name) in [
        ("TERM", true, 143, "SIGTERM"),
        ("HUP", false, 129, "SIGHUP"),
    ] {
        let dir = Scratch::new(&format!("sets-{signal}"));
        let (a, b) = (takeoff(&dir, "a.toml"), takeoff(&dir, "b.toml"));
        let (report, junit, tlogs) = (dir.path("set.json"), dir.path("set.xml"), dir.path("t"));
        let r = Running::start(&[
            "run",
            s(&a),
            s(&b),
            "--jobs",
            "2",
            "--instance",
            "30",
            "--speed",
            "2",
            "--json",
            s(&report),
            "--junit",
            s(&junit),
            "--tlog",
            s(&tlogs),
        ]);
        wait_flying(&tlogs, None, 2);
        r.signal(signal, group);
        let (status, took, out) = r.wait_exit();
        assert_eq!(status.code(), Some(code), "{out}");
        assert!(
            took <= Duration::from_secs(2),
            "{:.2} s:\n{out}",
            took.as_secs_f64()
        );
        assert_ports_free(30..=31, &out);
        let set = json(&std::fs::read(&report).expect("the set's --json"));
        assert_eq!(set["interrupted"], name, "{set}");
        assert_eq!(set["exit_code"], code, "{set}");
        for (p, rep) in set["programs"]
            .as_array()
            .unwrap()
            .iter()
            .zip(set["reports"].as_array().unwrap())
        {
            assert_eq!(p["status"], "interrupted", "{p}");
            let verdict = rep["verdict"].as_str().unwrap();
            assert!(
                verdict.contains(&format!("interrupted by {name}")),
                "{verdict}"
            );
            // Its own report: a program that got the signal twice would have ended at once,
            // without one.
            let aborted = rep["steps"]
                .as_array()
                .unwrap()
                .iter()
                .any(|st| st["reason"] == "aborted");
            assert!(aborted, "its pending step ended aborted: {rep}");
        }
        let x = std::fs::read_to_string(&junit).expect("the set's --junit");
        assert_eq!(x.matches("type=\"aborted\"").count(), 2, "{x}");
    }
}
