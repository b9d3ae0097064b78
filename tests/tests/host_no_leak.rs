//! Nothing outlives `close`/`Drop`: after runs, clients, sessions, the idle reaper and a PX4
//! process have been used and let go, this process has the threads, file descriptors (sockets)
//! and child processes it had before. One test in this binary, so nothing else runs meanwhile.

mod host_support;

use nexus_host::groups::{ActionApi, TelemetryApi};
use std::collections::BTreeSet;
use std::fs;
use std::thread;
use std::time::{Duration, Instant};

use host_support::*;
use nexus_core::engine::{Reason, Wait};
use nexus_host::offboard_client::{OffboardClient, OffboardOptions};
use nexus_host::pump::Pump;
use nexus_host::run::{Run, RunOptions};
use nexus_host::session::Sessions;

fn threads() -> usize {
    fs::read_dir("/proc/self/task").unwrap().count()
}

fn fds() -> BTreeSet<String> {
    fs::read_dir("/proc/self/fd")
        .unwrap()
        .filter_map(|e| {
            let e = e.ok()?;
            let target = fs::read_link(e.path()).ok()?;
            Some(format!(
                "{} -> {}",
                e.file_name().to_string_lossy(),
                target.display()
            ))
        })
        .collect()
}

fn sockets() -> usize {
    fds().iter().filter(|f| f.contains("socket:")).count()
}

/// Every process whose parent is this process.
fn children() -> Vec<u32> {
    let me = std::process::id();
    let mut kids = Vec::new();
    for e in fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // pid (comm) state ppid …; comm may hold spaces: split after the last ')'.
        let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else {
            continue;
        };
        let ppid = rest
            .split_whitespace()
            .nth(1)
            .and_then(|p| p.parse::<u32>().ok());
        if ppid == Some(me) {
            kids.push(pid);
        }
    }
    kids
}

/// Counts come back to `(threads, sockets)` within a second, and no child remains.
fn assert_back_to(base_threads: usize, base_fds: &BTreeSet<String>, what: &str) {
    let t0 = Instant::now();
    loop {
        let (t, f, c) = (threads(), fds(), children());
        if t == base_threads && &f == base_fds && c.is_empty() {
            return;
        }
        if t0.elapsed() > Duration::from_secs(1) {
            let extra: Vec<_> = f.difference(base_fds).collect();
            panic!(
                "after {what}: {t} threads (was {base_threads}), new fds {extra:?}, children {c:?}"
            );
        }
        thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn nothing_outlives_close_or_drop() {
    let base_threads = threads();
    let base_fds = fds();
    assert!(children().is_empty());

    // 1. A run and a client, closed explicitly.
    {
        let sim = Run::started(realtime(137)).unwrap();
        let op = OffboardClient::connect(&sim, 10.0).unwrap();
        assert!(
            threads() > base_threads,
            "the pump and the vehicle run threads"
        );
        assert!(sockets() >= 2, "the vehicle's and the client's sockets");
        op.takeoff(2.0).unwrap();
        sim.until(|| op.is_armed(), 60.0).unwrap();
        op.close();
        op.close();
        sim.close();
    }
    assert_back_to(base_threads, &base_fds, "close");

    // 2. The same, let go by Drop only, with a wait left pending and a handle clone lingering.
    {
        let sim = Run::started(lockstep(137)).unwrap();
        let op = OffboardClient::connect(&sim, 10.0).unwrap();
        let link = op.link().unwrap();
        let pending = link
            .register(&Wait::altitude_m(100.0).timeout_s(600.0))
            .unwrap();
        drop(pending); // aborted on the pump, slot freed
        let _clone = link.clone();
        let _op2 = OffboardClient::new("udpin:127.0.0.1:0", OffboardOptions::default()).unwrap();
        _op2.open().unwrap();
    }
    assert_back_to(base_threads, &base_fds, "drop");

    // 3. Sessions with the idle reaper, a wait ended by close, a kill, then the registry dropped.
    {
        let sessions = Sessions::new(Some(Duration::from_secs(30)));
        let a = sessions.open(realtime(138), 10.0).unwrap();
        let _b = sessions.open(lockstep(139), 10.0).unwrap();
        let a2 = a.clone();
        let w = thread::spawn(move || a2.wait(&Wait::armed().timeout_s(600.0), None));
        thread::sleep(Duration::from_millis(100));
        sessions.kill_instance(138).unwrap();
        assert_eq!(w.join().unwrap().unwrap().reason, Reason::Closed);
    }
    assert_back_to(base_threads, &base_fds, "sessions");

    // 4. A PX4 process (the launcher's fake PX4): the child and its supervisor go with the run.
    {
        let build = root().join("tests/fixtures/fake-px4");
        let sim = Run::started(RunOptions::px4(124, Some(build))).unwrap();
        assert_eq!(children().len(), 1, "PX4 runs as our child");
        assert!(OffboardClient::connect(&sim, 0.5).is_err());
    }
    assert_back_to(base_threads, &base_fds, "a PX4 run");

    // 5. A pump of our own with several links, dropped with the links open.
    {
        let pump = Pump::start().unwrap();
        let mut clients = Vec::new();
        for _ in 0..5 {
            let c = OffboardClient::new(
                "udpin:127.0.0.1:0",
                OffboardOptions {
                    pump: Some(pump.clone()),
                    ..OffboardOptions::default()
                },
            )
            .unwrap();
            c.open().unwrap();
            clients.push(c);
        }
        drop(pump);
        assert!(clients.iter().all(|c| c.is_open()));
    }
    assert_back_to(base_threads, &base_fds, "a pump of our own");
}
