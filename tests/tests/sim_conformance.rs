//! pymavlink checks the simulated PX4 against real PX4's answers (docs/px4-wire.md §Parameters,
//! §Commands, §Streams): multicopter parameter defaults, PARAM_ERROR for an unknown name and a
//! wrong type, TIMESYNC, GET_MESSAGE_INTERVAL, FLIGHT_INFORMATION, AUTOPILOT_VERSION 1.18 dev with
//! capabilities 0xe8ff, GPS_GLOBAL_ORIGIN and AVAILABLE_MODES on request, PX4's stream set, reboot
//! refused and shutdown honoured (exit 0).

mod sim_support;

use nexus_host::sim::{ExitStatus, SimConfig, SimHandle};
use serde_json::json;
use sim_support::*;
use std::time::Duration;

#[test]
fn pymavlink_sees_px4s_messages_commands_and_parameter_answers() {
    let cfg = SimConfig::realtime(197, speed());
    let mut run = Scenario::spawn(
        "sim_conformance.py",
        &[
            cfg.remote_port().to_string(),
            cfg.vehicle.sysid().to_string(),
        ],
    );
    run.wait_event("listening", Duration::from_secs(30));
    let sim = SimHandle::start(cfg).expect("start sim");
    let ev = run.finish(Duration::from_secs(120));
    assert!(
        find(&ev, 0, &json!({"ev": "done"})).is_some(),
        "{}",
        dump(&ev)
    );

    for (name, value) in [
        ("RTL_RETURN_ALT", 30.0),
        ("RTL_DESCEND_ALT", 10.0),
        ("MPC_YAWRAUTO_MAX", 60.0),
    ] {
        let p = get(&ev, 0, &json!({"ev": "param_default", "name": name}));
        assert_eq!(p["value"].as_f64(), Some(value), "{p}");
        assert_eq!(p["type"], 9, "{p}");
    }
    let read = get(&ev, 0, &json!({"ev": "param_error", "op": "read"}));
    assert_eq!(read["name"], "NO_SUCH_PARAM");
    assert_eq!(read["error"], 1, "DOES_NOT_EXIST: {read}");
    assert!(read["wall_ms"].as_f64().unwrap() < 500.0, "{read}");
    let set = get(&ev, 0, &json!({"ev": "param_error", "op": "set"}));
    assert_eq!(set["name"], "COM_RC_IN_MODE");
    assert_eq!(set["error"], 7, "TYPE_MISMATCH: {set}");

    let ts = get(&ev, 0, &json!({"ev": "timesync"}));
    assert_eq!(ts["ts1"], 987654321, "{ts}");
    assert!(
        ts["tc1"].as_i64().unwrap() > 1_000_000_000,
        "our clock in ns: {ts}"
    );
    let mi = get(&ev, 0, &json!({"ev": "message_interval"}));
    assert_eq!(
        (mi["id"].as_u64(), mi["interval_us"].as_i64()),
        (Some(33), Some(20_000))
    );
    assert!(find(&ev, 0, &json!({"ev": "flight_information"})).is_some());
    let av = get(&ev, 0, &json!({"ev": "autopilot_version"}));
    assert_eq!(av["sw"], 0x0112_0000, "{av}");
    assert_eq!(av["caps"], 0xe8ff, "{av}");
    // The pad as the estimator's origin; 16 modes then one; an index past the end DENIED (2).
    let origin = get(&ev, 0, &json!({"ev": "gps_origin"}));
    assert_eq!(origin["lat"], 473977420, "{origin}");
    assert_eq!(origin["alt"], 489400, "{origin}");
    let modes = get(&ev, 0, &json!({"ev": "available_modes"}));
    assert_eq!(modes["count"], 17, "{modes}");
    assert_eq!(modes["acks"], json!([0, 0, 2]), "{modes}");

    // PX4's stream set on this link (the box trace), each seen in 3 s (LINK_NODE_STATUS, 8,
    // is not in pymavlink's dialect; `tests::rates` of the sim counts it).
    let counts = &get(&ev, 0, &json!({"ev": "streams"}))["counts"];
    for id in [
        0, 1, 2, 4, 24, 29, 30, 31, 32, 33, 36, 42, 74, 83, 85, 105, 111, 132, 141, 230, 245, 331,
        436, 12901, 12904,
    ] {
        assert!(
            counts[id.to_string()].as_u64().unwrap_or(0) > 0,
            "no message {id} in {counts}"
        );
    }

    // Reboot DENIED (2), shutdown ACCEPTED (0); then the process ended with status 0.
    let acks = get(&ev, 0, &json!({"ev": "acks_246"}));
    assert_eq!(acks["results"], json!([2, 0]), "{acks}");
    let done = get(&ev, 0, &json!({"ev": "done"}));
    assert!(
        done["silent_s"].as_f64().unwrap() > 2.0,
        "still talking: {done}"
    );
    assert_eq!(sim.exit_status(), Some(ExitStatus::Code(0)));
}
