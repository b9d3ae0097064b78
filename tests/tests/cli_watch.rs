//! `nexus watch`: live telemetry of a running simulated vehicle.

mod cli_support;

use cli_support::nexus;
use nexus_host::sim::{SimConfig, SimHandle};
use predicates::prelude::*;

#[test]
fn watch_prints_mode_altitude_and_position_of_a_running_sim() {
    // Build the command first: the vehicle's boot texts are only kept 5 s (as PX4's queue).
    let mut watch = nexus(&[
        "watch",
        // Instance 159 sends to 14549 until a client speaks to its 14580+N (PX4's rule).
        "udpout:127.0.0.1:14739",
        "--count",
        "8",
        "--interval",
        "0.5",
        "--duration",
        "60",
    ]);
    let sim = SimHandle::start(SimConfig::realtime(159, 1.0)).expect("start the simulated vehicle");
    let out = watch
        .assert()
        .success()
        .stdout(predicate::str::contains("nexus watch: system 160"))
        .stdout(
            predicate::str::is_match(r"mode=Hold armed=no alt=-?\d+\.\d m pos=47\.39\d+,8\.54\d+")
                .unwrap(),
        )
        .stdout(predicate::str::contains("landed=ON_GROUND"))
        .get_output()
        .clone();
    let stdout = String::from_utf8_lossy(&out.stdout);
    // One line per 0.5 s from the first heartbeat (1.5 s after boot) to 5.5 s: the position
    // (3 s) and the boot texts (from 2.7 s) arrive in between.
    assert_eq!(stdout.matches(" mode=").count(), 8, "{stdout}");
    // The watcher's heartbeat makes PX4 stream its texts.
    assert!(stdout.contains("text #1 ["), "{stdout}");
    drop(sim);
}

#[test]
fn watch_without_a_vehicle_says_so() {
    nexus(&["watch", "udpin:127.0.0.1:14695", "--duration", "1"])
        .assert()
        .code(1)
        .stdout(predicate::str::contains(
            "no autopilot heartbeat on udpin:127.0.0.1:14695",
        ));
}

/// Two free UDP ports on loopback (bound and released: no instance number, no default port).
fn free_udp_ports() -> (u16, u16) {
    let a = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let b = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    (
        a.local_addr().unwrap().port(),
        b.local_addr().unwrap().port(),
    )
}

/// A watch stopped (SIGSTOP) for longer than its silence limit and continued goes on as if
/// nothing happened: it does not call the vehicle silent for the time it was not itself
/// listening, and does not print the status lines it missed all at once.
#[test]
fn a_stopped_watch_resumes_without_a_false_silence_or_a_burst_of_lines() {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};
    use std::sync::mpsc;
    use std::time::{Duration, Instant};
    let (vehicle_port, watch_port) = free_udp_ports();
    let mut config = SimConfig::realtime(0, 1.0);
    config.local_port_base = vehicle_port;
    config.remote_port_base = watch_port;
    config.offboard_port_per_instance = true;
    let sim = SimHandle::start(config).expect("start the simulated vehicle");
    let mut watch = Command::new(cli_support::nexus_exe())
        .args(["watch", &format!("udpin:127.0.0.1:{watch_port}")])
        .args(["--interval", "0.5", "--duration", "12"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start nexus watch");
    let (tx, rx) = mpsc::channel();
    let out = watch.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            let _ = tx.send((Instant::now(), line));
        }
    });
    let signal = |name: &str| {
        let pid = watch.id().to_string();
        assert!(Command::new("kill")
            .args([&format!("-{name}"), &pid])
            .status()
            .unwrap()
            .success());
    };
    let mut seen = Vec::new();
    // The first status line: the vehicle is heard.
    while !seen
        .iter()
        .any(|(_, l): &(Instant, String)| l.contains(" mode="))
    {
        seen.push(
            rx.recv_timeout(Duration::from_secs(30))
                .expect("a status line"),
        );
    }
    signal("STOP");
    // Longer than the watch's silence limit (2 s) and than several of its intervals.
    std::thread::sleep(Duration::from_secs(4));
    while let Ok(l) = rx.try_recv() {
        seen.push(l);
    }
    let continued = Instant::now();
    signal("CONT");
    while let Ok(l) = rx.recv_timeout(Duration::from_secs(30)) {
        seen.push(l);
    }
    assert!(watch.wait().unwrap().success());
    drop(sim);
    let text: Vec<&str> = seen.iter().map(|(_, l)| l.as_str()).collect();
    let text = text.join("\n");
    assert!(!text.contains("SILENT"), "{text}");
    let burst = seen
        .iter()
        .filter(|(t, l)| l.contains(" mode=") && *t >= continued)
        .filter(|(t, _)| t.duration_since(continued) < Duration::from_millis(300))
        .count();
    assert!(
        burst <= 1,
        "{burst} status lines at once after SIGCONT:\n{text}"
    );
    assert!(
        seen.iter()
            .any(|(t, l)| l.contains(" mode=")
                && t.duration_since(continued) > Duration::from_secs(1)),
        "status lines go on after SIGCONT:\n{text}"
    );
}
