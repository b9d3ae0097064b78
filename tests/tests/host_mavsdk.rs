//! Conformance against an independent autopilot: MAVSDK's C++ core (PyPI `mavsdk` ≥ 4, in
//! process through ctypes) configured as an AUTOPILOT with its server plugins
//! (`tests/py/mavsdk_autopilot.py`). It must accept our parameter sets, mission upload, arm and
//! mode commands as it understands MAVLink, and where it answers nothing our client must give
//! up with a typed result, never hang.
//!
//! Port: UDP 14665 (SITL instance 125 of the host tests' range).

mod host_support;
#[path = "sim_support/mod.rs"]
mod sim_support;

use nexus_host::groups::{ActionApi, InfoApi, MissionApi, ParamApi, TelemetryApi};
use std::time::{Duration, Instant};

use nexus_core::offboard::{GiveUpReason, OffboardConfig, OffboardEvent, Request};
use nexus_core::Mode;
use nexus_host::error::OffboardClientError;
use nexus_host::nexus_core::action::ParamValue;
use nexus_host::offboard_client::{read_plan_file, OffboardClient, OffboardOptions};
use nexus_host::pump::{LinkEvent, ParamError, Pump};
use serde_json::json;
use sim_support::Scenario;

const PORT: u16 = 14665;

/// Poll `f` until it holds or `limit` passes.
fn eventually(what: &str, limit: Duration, op: &OffboardClient, mut f: impl FnMut() -> bool) {
    let t0 = Instant::now();
    while !f() {
        assert!(
            t0.elapsed() < limit,
            "{what}: not within {limit:?}\n{}",
            host_support::events(op)
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The first offboard event matching `f`, waiting up to `limit`.
fn offboard_event(
    op: &OffboardClient,
    limit: Duration,
    mut f: impl FnMut(&OffboardEvent) -> bool,
) -> OffboardEvent {
    let t0 = Instant::now();
    loop {
        for (_, e) in op.events_since(0) {
            if let LinkEvent::Offboard(o) = e {
                if f(&o) {
                    return o;
                }
            }
        }
        assert!(
            t0.elapsed() < limit,
            "no such event within {limit:?}\n{}",
            host_support::events(op)
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The next event named `ev` that satisfies `f` (MAVSDK may see a command twice: the client
/// re-sends until telemetry confirms).
fn next_matching(
    sc: &mut Scenario,
    ev: &str,
    limit: Duration,
    mut f: impl FnMut(&serde_json::Value) -> bool,
) -> serde_json::Value {
    let t0 = Instant::now();
    loop {
        let left = limit.saturating_sub(t0.elapsed());
        let e = sc.wait_event(ev, left);
        if f(&e) {
            return e;
        }
    }
}

/// Read events until one matching `want` is among those from index `from` on.
fn read_until(sc: &mut Scenario, from: usize, want: serde_json::Value, limit: Duration) {
    let t0 = Instant::now();
    while sim_support::find(&sc.events, from, &want).is_none() {
        let ev = want["ev"]
            .as_str()
            .expect("a pattern names its event")
            .to_owned();
        sc.wait_event(&ev, limit.saturating_sub(t0.elapsed()));
    }
}

#[test]
fn mavsdk_as_an_autopilot_accepts_our_commands() {
    let mut sc = Scenario::spawn("mavsdk_autopilot.py", &[PORT.to_string(), "120".into()]);
    let ready = sc.wait_event("ready", Duration::from_secs(30));
    assert!(
        ready["mavsdk"].as_str().unwrap().starts_with("v4"),
        "{ready}"
    );

    let pump = Pump::start().unwrap();
    let op = OffboardClient::new(
        &format!("udpin:127.0.0.1:{PORT}"),
        OffboardOptions {
            system_id: 1,
            // Refusals are retried every command_retry_s: keep the give-up quick.
            offboard: OffboardConfig {
                wait_clear_s: 0.5,
                command_retry_s: 0.5,
                ..OffboardConfig::default()
            },
            pump: Some(pump),
            ..OffboardOptions::default()
        },
    )
    .unwrap();
    op.open().unwrap();
    let t = Duration::from_secs(20);
    eventually("MAVSDK's heartbeat", t, &op, || op.connected());

    // Parameters: an INT32 sent bytewise and a REAL32; both read back.
    op.set_param("COM_RC_IN_MODE", ParamValue::Int(2)).unwrap();
    let e = sc.wait_event("param_int", t);
    assert_eq!(e["name"], "COM_RC_IN_MODE");
    assert_eq!(e["value"], 2, "MAVSDK read the int's bits, not 2.0's");
    assert_eq!(op.param_get("COM_RC_IN_MODE", t).unwrap().as_int(), Some(2));
    op.set_param("MIS_TAKEOFF_ALT", ParamValue::Real(3.5))
        .unwrap();
    let e = sc.wait_event("param_float", t);
    assert_eq!(e["name"], "MIS_TAKEOFF_ALT");
    assert_eq!(e["value"], 3.5);
    assert_eq!(
        op.param_get("MIS_TAKEOFF_ALT", t).unwrap().as_real(),
        Some(3.5)
    );

    // The mission upload handshake, item for item.
    let path = host_support::plan("MC_mission_box.plan");
    let plan = read_plan_file(&path).unwrap();
    op.upload_mission(path.as_path()).unwrap();
    eventually("MISSION_ACK accepted", t, &op, || op.mission_uploaded());
    let e = sc.wait_event("mission", t);
    assert_eq!(e["result"], "SUCCESS", "{e}");
    let items = e["items"].as_array().unwrap();
    assert_eq!(items.len(), plan.items.len());
    for (got, want) in items.iter().zip(plan.items.iter()) {
        assert_eq!(got["seq"], json!(want.seq));
        assert_eq!(got["command"], json!(want.command));
        assert_eq!(got["frame"], json!(want.frame));
        assert_eq!(got["x"], json!(want.x));
        assert_eq!(got["y"], json!(want.y));
        assert!(
            (got["z"].as_f64().unwrap() - want.z as f64).abs() < 1e-4,
            "{got}"
        );
    }

    // start_mission: MISSION_SET_CURRENT 0 confirmed by MISSION_CURRENT, then Mission mode
    // confirmed by the heartbeat, then the arm: in that order, as the Python OffboardClient does.
    let from = sc.events.len();
    op.start_mission().unwrap();
    eventually("armed for the mission", t, &op, || op.is_armed());
    assert_eq!(op.mode(), Some(Mode::Mission));
    read_until(&mut sc, from, json!({"ev": "arm", "arm": true}), t);
    sim_support::assert_in_order(
        &sc.events,
        from,
        &[
            json!({"ev": "current_item", "seq": 0}),
            json!({"ev": "mode", "mode": "MISSION", "result": "SUCCESS"}),
            json!({"ev": "arm", "arm": true, "result": "SUCCESS"}),
        ],
    );
    op.disarm().unwrap();
    let e = next_matching(&mut sc, "arm", t, |e| e["arm"] == false);
    assert_eq!(e["result"], "SUCCESS", "{e}");
    eventually("disarmed", t, &op, || !op.is_armed());

    // takeoff: MIS_TAKEOFF_ALT, Takeoff mode confirmed, then the arm.
    let from = sc.events.len();
    op.takeoff(4.0).unwrap();
    eventually("armed for the takeoff", t, &op, || op.is_armed());
    assert_eq!(op.mode(), Some(Mode::Takeoff));
    assert!(op.status().unwrap().pending.mode.is_none(), "confirmed");
    read_until(&mut sc, from, json!({"ev": "arm", "arm": true}), t);
    sim_support::assert_in_order(
        &sc.events,
        from,
        &[
            json!({"ev": "param_float", "name": "MIS_TAKEOFF_ALT", "value": 4.0}),
            json!({"ev": "mode", "mode": "TAKEOFF", "result": "SUCCESS"}),
            json!({"ev": "arm", "arm": true, "result": "SUCCESS"}),
        ],
    );
    op.disarm().unwrap();
    eventually("disarmed", t, &op, || !op.is_armed());

    // A mode MAVSDK refuses (TEMPORARILY_REJECTED): reported, retried, then given up.
    op.set_mode(Mode::Altitude).unwrap();
    let g = offboard_event(
        &op,
        Duration::from_secs(60),
        |e| matches!(e, OffboardEvent::GaveUp(g) if g.request == Request::Mode(Mode::Altitude)),
    );
    match g {
        OffboardEvent::GaveUp(g) => {
            assert!(matches!(g.reason, GiveUpReason::Refused { .. }), "{g}")
        }
        _ => unreachable!(),
    }
    let refusal = op.last_refusal().expect("the refusal is kept");
    assert_eq!(refusal.result, Some(1), "{refusal}");

    // Download: MAVSDK serves back the mission it holds; clear; an empty one downloads empty.
    op.download_mission().unwrap();
    let e = offboard_event(&op, t, |e| {
        matches!(e, OffboardEvent::MissionDownloaded { .. })
    });
    assert_eq!(e, OffboardEvent::MissionDownloaded { count: 6 });
    assert_eq!(op.mission_items().unwrap(), plan.items.to_vec());
    op.clear_mission().unwrap();
    offboard_event(&op, t, |e| matches!(e, OffboardEvent::MissionCleared));
    assert_eq!(op.mission_count(), 0);
    let e = sc.wait_event("mission_clear", t);
    assert_eq!(e["kind"], 0, "{e}");

    // MAVSDK answers PARAM_REQUEST_READ of an unknown name with PARAM_ERROR, as PX4 does: the
    // read fails at once with that error.
    let t0 = Instant::now();
    match op.param_get("NO_SUCH_PARAM", Duration::from_millis(5000)) {
        Err(OffboardClientError::Param(ParamError::Refused { name, .. })) => {
            assert_eq!(name, "NO_SUCH_PARAM")
        }
        other => panic!("{other:?}"),
    }
    assert!(t0.elapsed() < Duration::from_secs(2), "{:?}", t0.elapsed());
    // DO_REPOSITION gets no COMMAND_ACK from MAVSDK either: goto is one-shot by design (the
    // Python client's), so it returns at once and nothing waits on the missing ack.
    let t0 = Instant::now();
    op.goto_flu(5.0, 0.0, 3.0, None).unwrap();
    assert!(t0.elapsed() < Duration::from_secs(1));
    assert!(!op.at_target());
    op.close();
}
