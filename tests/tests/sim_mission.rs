//! End to end over real loopback UDP: pymavlink uploads a 3-item mission to the simulated PX4
//! and flies it. Expected sequences from docs/px4-wire.md §Mission upload, §Mission progress
//! and §Flight.

mod sim_support;

use nexus_host::sim::{SimConfig, SimHandle};
use serde_json::json;
use sim_support::*;
use std::time::Duration;

#[test]
fn three_item_mission_upload_and_flight_like_px4_sitl() {
    let cfg = SimConfig::realtime(66, speed());
    let mut run = Scenario::spawn(
        "sim_mission.py",
        &[
            cfg.remote_port().to_string(),
            cfg.vehicle.sysid().to_string(),
        ],
    );
    run.wait_event("listening", Duration::from_secs(30));
    let _sim = SimHandle::start(cfg).expect("start sim");
    let ev = run.finish(Duration::from_secs(300));
    let expected = get(&ev, 0, &json!({"ev": "expected_crc"}));
    let crc = expected["crc"].clone();
    let crc_legacy = expected["legacy"].clone();
    assert_ne!(crc, crc_legacy);

    // No mission yet: seq 0, total 65535, state NO_MISSION (1).
    assert_in_order(
        &ev,
        0,
        &[json!({"ev": "mission_current", "seq": 0, "total": 65535, "state": 1})],
    );

    // Unanswered MISSION_COUNT: MISSION_REQUEST_INT 0 repeated every ~0.26 s for 5 s, then
    // "Operation timeout" and no ACK.
    let s = find(&ev, 0, &json!({"ev": "count_unanswered"})).unwrap();
    let e = find(&ev, s, &json!({"ev": "upload_legacy"})).unwrap();
    let reqs: Vec<i64> = ev[s..e]
        .iter()
        .filter(|x| x["ev"] == "request")
        .map(t)
        .collect();
    assert!(
        (17..=21).contains(&reqs.len()),
        "{} requests:{}",
        reqs.len(),
        dump(&ev[s..e])
    );
    for w in reqs.windows(2) {
        assert!(
            (230..=300).contains(&(w[1] - w[0])),
            "retry period {} ms",
            w[1] - w[0]
        );
    }
    let timeout = get(
        &ev,
        s,
        &json!({"ev": "text", "sev": 2, "text": "Operation timeout"}),
    );
    assert!(
        (4_900..=5_400).contains(&(t(timeout) - reqs[0])),
        "timeout after {} ms",
        t(timeout) - reqs[0]
    );
    assert!(
        ev[s..e].iter().all(|x| x["ev"] != "mission_ack"),
        "no ACK after a timeout"
    );

    // Answering with a legacy MISSION_ITEM switches to MISSION_REQUEST until *_INT comes back;
    // the CRC covers the fields as they travelled (x/y float bits for the legacy item).
    let u = find(&ev, 0, &json!({"ev": "upload_1"})).unwrap();
    let requests: Vec<_> = ev[e..u]
        .iter()
        .filter(|x| x["ev"] == "request")
        .map(|x| (x["seq"].clone(), x["int"].clone()))
        .collect();
    assert_eq!(
        requests,
        vec![
            (json!(0), json!(true)),
            (json!(1), json!(false)),
            (json!(2), json!(true))
        ]
    );
    assert_in_order(
        &ev,
        e,
        &[
            json!({"ev": "mission_ack", "result": 0, "opaque": crc_legacy}),
            json!({"ev": "mission_current", "seq": 0, "total": 3, "state": 2}),
        ],
    );
    // Upload: one MISSION_REQUEST_INT per seq, ACK 0 with opaque_id = PX4's CRC32.
    let start = find(&ev, 0, &json!({"ev": "start"})).unwrap();
    let i = assert_in_order(
        &ev,
        u,
        &[
            json!({"ev": "request", "seq": 0, "int": true}),
            json!({"ev": "request", "seq": 1, "int": true}),
            json!({"ev": "request", "seq": 2, "int": true}),
            json!({"ev": "mission_ack", "result": 0, "opaque": crc}),
        ],
    );
    assert!(i <= start);

    // Flight: Mission mode + arm on the ground climbs by itself, items reached in order,
    // "Mission finished, loitering", Hold, MISSION_CURRENT complete at the last index.
    let rtl = find(&ev, 0, &json!({"ev": "rtl"})).unwrap();
    let i = assert_in_order(
        &ev,
        start,
        &[
            json!({"ev": "ack", "cmd": 176, "result": 0}),
            json!({"ev": "ack", "cmd": 176, "result": 0}),
            json!({"ev": "mode", "mode": "Mission"}),
            json!({"ev": "mission_current", "seq": 0, "total": 3, "state": 3}),
            json!({"ev": "ack", "cmd": 400, "result": 0}),
            json!({"ev": "text", "text": "Armed by external command"}),
            json!({"ev": "text", "sev": 6, "text": "Climb to 10.0 meters above home"}),
            json!({"ev": "text", "text": "Takeoff detected"}),
            json!({"ev": "landed", "state": 3}),
            json!({"ev": "mission_current", "seq": 1, "total": 3, "state": 3}),
            json!({"ev": "reached", "seq": 0}),
            json!({"ev": "mission_current", "seq": 2, "total": 3, "state": 3}),
            json!({"ev": "reached", "seq": 1}),
            json!({"ev": "reached", "seq": 2}),
            json!({"ev": "text", "sev": 6, "text": "Mission finished, loitering"}),
        ],
    );
    assert!(i < rtl);
    assert_in_order(&ev, i - 1, &[json!({"ev": "mode", "mode": "Hold"})]);
    assert_in_order(
        &ev,
        i - 1,
        &[json!({"ev": "mission_current", "seq": 2, "total": 3, "state": 5})],
    );
    // MISSION_ITEM_REACHED for the last item: once, then ten more times at 1 Hz.
    let r2: Vec<i64> = ev[..rtl]
        .iter()
        .filter(|x| x["ev"] == "reached" && x["seq"] == 2)
        .map(t)
        .collect();
    assert_eq!(r2.len(), 11, "{r2:?}");
    for w in r2[1..].windows(2) {
        assert!((900..=1_100).contains(&(w[1] - w[0])), "{r2:?}");
    }

    // RTL and disarm: MISSION_CURRENT stays at the last item, complete.
    let reupload = find(&ev, 0, &json!({"ev": "reupload"})).unwrap();
    // The text and the mode come in the same tick, in no fixed order: the heartbeat that
    // shows the mode is PX4's 1 Hz one.
    assert_in_order(
        &ev,
        rtl,
        &[
            json!({"ev": "ack", "cmd": 20, "result": 0}),
            json!({"ev": "text", "text": "Returning to launch"}),
        ],
    );
    assert_in_order(
        &ev,
        rtl,
        &[
            json!({"ev": "ack", "cmd": 20, "result": 0}),
            json!({"ev": "mode", "mode": "RTL"}),
            json!({"ev": "landed", "state": 4}),
            json!({"ev": "landed", "state": 1}),
            json!({"ev": "text", "text": "Disarmed by landing"}),
        ],
    );
    assert!(
        ev[rtl..reupload]
            .iter()
            .filter(|x| x["ev"] == "mission_current")
            .all(|x| x["seq"] == 2 && x["state"] == 5),
        "{}",
        dump(&ev[rtl..reupload])
    );
    // Identical re-upload: every item requested again, same id, still complete; then
    // MISSION_SET_CURRENT 0 restarts it.
    let set0 = find(&ev, 0, &json!({"ev": "set_current_0"})).unwrap();
    assert_in_order(
        &ev,
        reupload,
        &[
            json!({"ev": "request", "seq": 0}),
            json!({"ev": "request", "seq": 1}),
            json!({"ev": "request", "seq": 2}),
            json!({"ev": "mission_ack", "result": 0, "opaque": crc}),
        ],
    );
    assert!(ev[reupload..set0]
        .iter()
        .filter(|x| x["ev"] == "mission_current")
        .all(|x| x["seq"] == 2 && x["state"] == 5));
    let dl = find(&ev, 0, &json!({"ev": "download"})).unwrap();
    assert_in_order(
        &ev,
        set0,
        &[json!({"ev": "mission_current", "seq": 0, "total": 3, "state": 2})],
    );
    assert!(dl > set0);
    // Download: MISSION_COUNT carries the same id.
    get(
        &ev,
        dl,
        &json!({"ev": "mission_count", "count": 3, "opaque": crc}),
    );
}
