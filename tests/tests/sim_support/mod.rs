//! Shared plumbing of the `sim_*` end-to-end tests: run a pymavlink scenario from `tests/py/`
//! against a simulated PX4 on real loopback UDP and collect the JSON events it prints.
//!
//! Python comes from `NEXUS_PYTHON` (default: the workspace's `.venv/bin/python`, created by
//! `scripts/env.sh`). A missing interpreter or pymavlink is a test failure, not a skip.
//!
//! SITL instance numbers used by these tests (ports 14540+N / 14580+N): 65–86 (clear of PX4 SITL
//! instances 0–20, UDP 14540–14600, so the tests pass while a SITL or QGC runs); the bench uses
//! 90–91. Other tests should stay clear of them.

#![allow(dead_code)]

use serde_json::Value;
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

/// The workspace root.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The Python interpreter with pymavlink.
pub fn python() -> PathBuf {
    let p = std::env::var_os("NEXUS_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join(".venv/bin/python"));
    assert!(
        p.exists(),
        "no Python at {} — run `. scripts/env.sh` (or set NEXUS_PYTHON) to create the venv with pymavlink",
        p.display()
    );
    p
}

/// Speed factor for real-time scenario runs (`NEXUS_SIM_SPEED`, default 5).
pub fn speed() -> f64 {
    std::env::var("NEXUS_SIM_SPEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .filter(|s: &f64| s.is_finite() && *s > 0.0)
        .unwrap_or(5.0)
}

/// A running scenario script.
pub struct Scenario {
    child: Child,
    stdin: Option<ChildStdin>,
    rx: Receiver<String>,
    /// Every event read so far.
    pub events: Vec<Value>,
    stderr: Receiver<String>,
}

impl Scenario {
    /// Start `tests/py/<script>` with `args`.
    pub fn spawn(script: &str, args: &[String]) -> Scenario {
        let mut child = Command::new(python())
            .arg(root().join("tests/py").join(script))
            .args(args)
            .env("PYTHONUNBUFFERED", "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start the Python scenario");
        let out = child.stdout.take().expect("stdout");
        let err = child.stderr.take().expect("stderr");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let (etx, erx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(err).lines().map_while(Result::ok) {
                let _ = etx.send(line);
            }
        });
        Scenario {
            stdin: child.stdin.take(),
            child,
            rx,
            events: Vec::new(),
            stderr: erx,
        }
    }

    fn stderr_text(&self) -> String {
        self.stderr.try_iter().collect::<Vec<_>>().join("\n")
    }

    /// Read events until one named `ev` arrives (returned) or `timeout` of wall time passes.
    pub fn wait_event(&mut self, ev: &str, timeout: Duration) -> Value {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.rx.recv_timeout(left) {
                Ok(line) => {
                    let v: Value = serde_json::from_str(&line).unwrap_or_else(|e| {
                        panic!("scenario printed a non-JSON line {line:?}: {e}")
                    });
                    self.events.push(v.clone());
                    if v["ev"] == ev {
                        return v;
                    }
                    if v["ev"] == "timeout" {
                        panic!(
                            "scenario timed out: {}\nevents: {}\nstderr: {}",
                            v["what"],
                            dump(&self.events),
                            self.stderr_text()
                        );
                    }
                }
                Err(RecvTimeoutError::Timeout) => {
                    panic!(
                        "no {ev:?} event within {timeout:?}\nevents: {}\nstderr: {}",
                        dump(&self.events),
                        self.stderr_text()
                    )
                }
                Err(RecvTimeoutError::Disconnected) => {
                    panic!(
                        "scenario ended before {ev:?}\nevents: {}\nstderr: {}",
                        dump(&self.events),
                        self.stderr_text()
                    )
                }
            }
        }
    }

    /// Write a line to the scenario's stdin.
    pub fn send_line(&mut self, line: &str) {
        let s = self.stdin.as_mut().expect("stdin");
        writeln!(s, "{line}").expect("write to scenario");
        s.flush().expect("flush scenario stdin");
    }

    /// Wait for "done" and the exit, returning all events.
    pub fn finish(mut self, timeout: Duration) -> Vec<Value> {
        self.wait_event("done", timeout);
        let status = self.child.wait().expect("scenario exit");
        assert!(
            status.success(),
            "scenario exited with {status}\nstderr: {}",
            self.stderr_text()
        );
        std::mem::take(&mut self.events)
    }
}

impl Drop for Scenario {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The events, one per line, for failure messages.
pub fn dump(ev: &[Value]) -> String {
    ev.iter().map(|e| format!("\n  {e}")).collect()
}

/// Whether event `e` matches every field of `want` (an object).
pub fn matches(e: &Value, want: &Value) -> bool {
    want.as_object()
        .expect("pattern is an object")
        .iter()
        .all(|(k, v)| &e[k] == v)
}

/// Index of the first event at or after `from` matching `want`.
pub fn find(ev: &[Value], from: usize, want: &Value) -> Option<usize> {
    ev.iter()
        .skip(from)
        .position(|e| matches(e, want))
        .map(|i| i + from)
}

/// Assert that `want` occur in order, starting at `from`; returns the index after the last.
pub fn assert_in_order(ev: &[Value], from: usize, want: &[Value]) -> usize {
    let mut at = from;
    for w in want {
        match find(ev, at, w) {
            Some(i) => at = i + 1,
            None => panic!("expected {w} (in order after index {at}) in:{}", dump(ev)),
        }
    }
    at
}

/// The event matching `want`, at or after `from`.
pub fn get<'a>(ev: &'a [Value], from: usize, want: &Value) -> &'a Value {
    let i = find(ev, from, want).unwrap_or_else(|| panic!("no {want} in:{}", dump(ev)));
    &ev[i]
}

/// Sim time of an event, ms.
pub fn t(e: &Value) -> i64 {
    e["t_ms"].as_i64().expect("t_ms")
}
