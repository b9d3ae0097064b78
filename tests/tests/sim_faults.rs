//! Injected faults seen by an independent client (pymavlink) over real loopback UDP, the way
//! the real failure would look, plus what the supervisor sees through the handle.

mod sim_support;

use nexus_host::sim::{ExitStatus, Fault, SimConfig, SimHandle};
use serde_json::Value;
use sim_support::*;
use std::net::UdpSocket;
use std::sync::Mutex;
use std::time::Duration;

/// The scenarios are CPU-heavy (a Python client per vehicle): one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

fn observe(instance: u8, kind: &str, fault: Fault) -> (SimHandle, Value) {
    let cfg = SimConfig::realtime(instance, speed());
    let mut run = Scenario::spawn(
        "sim_faults.py",
        &[
            cfg.remote_port().to_string(),
            cfg.vehicle.sysid().to_string(),
            kind.to_string(),
        ],
    );
    run.wait_event("listening", Duration::from_secs(30));
    let sim = SimHandle::start(cfg).expect("start sim");
    run.wait_event("ready", Duration::from_secs(60));
    sim.inject(fault).expect("inject");
    run.send_line("go");
    let obs = run.wait_event("observed", Duration::from_secs(60));
    (sim, obs)
}

fn delta(obs: &Value, ty: &str) -> i64 {
    obs["delta"][ty].as_i64().unwrap_or(0)
}

fn total(obs: &Value) -> i64 {
    obs["delta"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_i64().unwrap())
        .sum()
}

#[test]
fn stalled_clock_keeps_heartbeats_but_time_stops() {
    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let (sim, obs) = observe(69, "stall", Fault::StallClock);
    assert!(delta(&obs, "HEARTBEAT") >= 2, "{obs}");
    assert!(delta(&obs, "ATTITUDE") > 50, "{obs}");
    assert_eq!(obs["clock_advanced_ms"], 0, "time_boot_ms frozen: {obs}");
    let t = sim.sim_time_ms();
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(sim.sim_time_ms(), t, "the handle sees the stall too");
    assert!(sim.snapshot().stalled);
    sim.clear_faults().unwrap();
    std::thread::sleep(Duration::from_millis(300));
    assert!(sim.sim_time_ms() > t);
}

#[test]
fn silence_is_no_bytes_at_all() {
    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let (sim, obs) = observe(70, "silence", Fault::Silence);
    assert_eq!(total(&obs), 0, "{obs}");
    assert!(sim.is_running());
}

#[test]
fn garbage_is_interleaved_with_valid_frames() {
    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let (_sim, obs) = observe(71, "garbage", Fault::Garbage);
    assert!(delta(&obs, "BAD_DATA") > 10, "{obs}");
    assert!(delta(&obs, "HEARTBEAT") >= 2, "{obs}");
    assert!(obs["clock_advanced_ms"].as_i64().unwrap() > 1_000, "{obs}");
}

#[test]
fn refused_arming_comes_with_px4s_ack_and_the_text() {
    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let text = "Arming denied: sensors need calibration (injected)";
    let (_sim, obs) = observe(72, "refuse", Fault::RefuseArming { text: text.into() });
    assert_eq!(obs["acks"], serde_json::json!([1]), "{obs}");
    assert_eq!(obs["armed"], false);
    assert!(
        obs["texts"].as_array().unwrap().iter().any(|t| t == text),
        "{obs}"
    );
}

#[test]
fn exit_closes_the_socket_and_reports_the_status() {
    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let (sim, obs) = observe(73, "exit", Fault::Exit { code: 3 });
    assert_eq!(total(&obs), 0, "{obs}");
    assert_eq!(sim.exit_status(), Some(ExitStatus::Code(3)));
    assert!(!sim.is_running());
    assert!(sim.output_log().iter().any(|l| l.contains("Exiting NOW.")));
    assert!(sim.step(10).is_err());
    // The vehicle's port is free again: its socket is closed.
    UdpSocket::bind(("127.0.0.1", sim.ports().vehicle_port)).expect("port released after exit");
}

#[test]
fn panic_prints_panic_then_stops() {
    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let fault = Fault::Panic {
        module: "ekf2".into(),
        message: "assertion failed".into(),
    };
    let (sim, obs) = observe(74, "exit", fault);
    assert_eq!(total(&obs), 0, "{obs}");
    assert_eq!(sim.exit_status(), Some(ExitStatus::Signal(6)));
    assert!(
        sim.output_log()
            .iter()
            .any(|l| l == "PANIC [ekf2] assertion failed"),
        "{:?}",
        sim.output_log()
    );
}
