//! End to end over real loopback UDP: pymavlink flies the simulated PX4 through boot, an early
//! arming attempt, takeoff, reposition and land. The expected sequences are docs/px4-wire.md's.

mod sim_support;

use nexus_host::sim::{SimConfig, SimHandle};
use serde_json::json;
use sim_support::*;
use std::time::Duration;

#[test]
fn takeoff_reposition_land_like_px4_sitl() {
    let cfg = SimConfig::realtime(65, speed());
    // The client listens first, as a GCS waiting for PX4 to boot.
    let mut run = Scenario::spawn(
        "sim_flight.py",
        &[
            cfg.remote_port().to_string(),
            cfg.vehicle.sysid().to_string(),
        ],
    );
    run.wait_event("listening", Duration::from_secs(30));
    let sim = SimHandle::start(cfg).expect("start sim");
    let p = sim.ports();
    assert_eq!(
        (p.offboard.port, p.offboard.system_id, p.vehicle_port),
        (14605, 66, 14645)
    );
    let ev = run.finish(Duration::from_secs(240));

    // Boot as the px4-traces' time_boot_ms: first heartbeat 1.24–1.25 s, Hold, UNINIT until
    // armable (prearm bit at 4.07–4.08 s, STANDBY at the next heartbeat, 4.26–4.28 s).
    let connected = get(&ev, 0, &json!({"ev": "connected"}));
    assert!(
        (1_200..=1_600).contains(&t(connected)),
        "first heartbeat at {}",
        t(connected)
    );
    let first = get(&ev, 0, &json!({"ev": "mode"}));
    assert_eq!(first["mode"], "Hold");
    assert_eq!(first["base_mode"], 0x1d);
    assert_eq!(get(&ev, 0, &json!({"ev": "status"}))["status"], 0);
    let standby = get(&ev, 0, &json!({"ev": "status", "status": 3}));
    assert!(
        (4_050..=5_300).contains(&t(standby)),
        "armable at {}",
        t(standby)
    );

    // Arming before ready: ACK 1 and the CRITICAL text in two chunks.
    let i = assert_in_order(
        &ev,
        0,
        &[
            json!({"ev": "ack", "cmd": 400, "result": 1}),
            json!({"ev": "text", "sev": 2, "text": "Arming denied: Resolve system health failures first", "chunks": 2}),
            json!({"ev": "armable"}),
        ],
    );

    // Takeoff: two acks for DO_SET_MODE, ON_GROUND → TAKEOFF → IN_AIR, Hold by itself, armed.
    let i = assert_in_order(
        &ev,
        i,
        &[
            json!({"ev": "param", "name": "MIS_TAKEOFF_ALT", "value": 5.0, "type": 9}),
            json!({"ev": "ack", "cmd": 176, "result": 0}),
            json!({"ev": "ack", "cmd": 176, "result": 0}),
            json!({"ev": "mode", "mode": "Takeoff"}),
            json!({"ev": "arm_sent"}),
            json!({"ev": "ack", "cmd": 400, "result": 0}),
            json!({"ev": "text", "sev": 6, "text": "Armed by external command"}),
            json!({"ev": "text", "sev": 6, "text": "Takeoff detected"}),
            json!({"ev": "landed", "state": 3}),
            json!({"ev": "landed", "state": 2}),
            json!({"ev": "at_altitude"}),
        ],
    );
    let armed = get(&ev, 0, &json!({"ev": "ack", "cmd": 400, "result": 0}));
    let detected = get(&ev, 0, &json!({"ev": "text", "text": "Takeoff detected"}));
    let dt = t(detected) - t(armed);
    assert!(
        (1_600..=2_300).contains(&dt),
        "Takeoff detected {dt} ms after arming (PX4: ~1.9 s)"
    );
    let hold = get(
        &ev,
        find(&ev, 0, &json!({"ev": "arm_sent"})).unwrap(),
        &json!({"ev": "mode", "mode": "Hold"}),
    );
    assert_eq!(hold["base_mode"], 0x9d, "auto mode, armed");
    let arm_sent = find(&ev, 0, &json!({"ev": "arm_sent"})).unwrap();
    let land_sent = find(&ev, 0, &json!({"ev": "land_sent"})).unwrap();
    let disarm = find(&ev, arm_sent, &json!({"ev": "armed", "armed": false})).unwrap_or(usize::MAX);
    assert!(
        disarm > land_sent,
        "still armed in Hold until Land:{}",
        dump(&ev)
    );

    // Reposition: accepted, Hold, 15 m in ~6.5 s; PX4's error results.
    let sent = get(&ev, i, &json!({"ev": "reposition_sent"}));
    let arrived = get(&ev, i, &json!({"ev": "arrived"}));
    let took = t(arrived) - t(sent);
    assert!(
        (5_000..=9_000).contains(&took),
        "15 m in {took} ms (PX4: ~6.5 s)"
    );
    assert_eq!(arrived["mode"], "Hold");
    let i = assert_in_order(
        &ev,
        i,
        &[
            json!({"ev": "ack", "cmd": 192, "result": 0}),
            json!({"ev": "arrived"}),
            json!({"ev": "ack", "cmd": 192, "result": 9}),
            json!({"ev": "ack", "cmd": 192, "result": 3}),
            json!({"ev": "land_sent"}),
        ],
    );

    // Land: LANDING at once, ON_GROUND, "Disarmed by landing" 2.0–2.4 s later, then Hold.
    let land_sent = t(&ev[i - 1]);
    let j = assert_in_order(
        &ev,
        i,
        &[
            json!({"ev": "ack", "cmd": 176, "result": 0}),
            json!({"ev": "ack", "cmd": 176, "result": 0}),
            json!({"ev": "landed", "state": 4}),
            json!({"ev": "text", "text": "Landing detected"}),
            json!({"ev": "landed", "state": 1}),
            json!({"ev": "text", "sev": 6, "text": "Disarmed by landing"}),
            json!({"ev": "armed", "armed": false}),
        ],
    );
    let landing = get(&ev, i, &json!({"ev": "landed", "state": 4}));
    assert!(
        t(landing) - land_sent <= 400,
        "LANDING at once ({} ms)",
        t(landing) - land_sent
    );
    let ground = get(&ev, i, &json!({"ev": "landed", "state": 1}));
    let disarmed = get(
        &ev,
        i,
        &json!({"ev": "text", "text": "Disarmed by landing"}),
    );
    let d = t(disarmed) - t(ground);
    assert!(
        (2_000..=2_400).contains(&d),
        "disarmed {d} ms after ON_GROUND (PX4: 2.0–2.4 s)"
    );
    assert!(
        find(&ev, j - 2, &json!({"ev": "mode", "mode": "Hold"})).is_some(),
        "Hold after disarm:{}",
        dump(&ev)
    );

    // PX4's own gimbal/camera commands were on the link, addressed to itself.
    assert!(ev
        .iter()
        .any(|e| e["ev"] == "foreign_command" && e["target"] == 66 && e["cmd"] == 1001));
    assert!(sim.is_running());
    assert_eq!(sim.client().map(|a| a.port()), Some(14605));
}
