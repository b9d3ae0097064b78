//! Retries that follow the measured round trip, end to end: `nexus run --connect` flies the box
//! mission through `nexus bridge --latency-ms 400` (800 ms of wall per round trip) to a
//! separately started simulated vehicle running ×5, so a round trip is ~4 s of the vehicle's
//! clock, four times the mission protocol's 1 s retry floor and more than the commands' 1.5 s.
//! With fixed timers every request went out again and again while its answer was on the way;
//! with the RTT estimate only the first requests (before any sample) are resent.
//!
//! SITL instance of this test: 161 (UDP 14701 and 14741); the bridge's TCP side on 14702.

mod cli_support;

use cli_support::{json, nexus, Bg};
use std::time::Duration;

const INSTANCE: u8 = 161;
const BRIDGE_TCP_PORT: u16 = 14540 + 162;

#[test]
fn a_400_ms_link_to_a_x5_vehicle_flies_the_box_with_few_retries() {
    let _vehicle = Bg::nexus(&["sim", "--instance", &INSTANCE.to_string(), "--speed", "5"]);
    let vehicle_port = 14580 + u16::from(INSTANCE);
    let _bridge = Bg::nexus(&[
        "bridge",
        &format!("tcpin:127.0.0.1:{BRIDGE_TCP_PORT}"),
        &format!("udpout:127.0.0.1:{vehicle_port}"),
        "--latency-ms",
        "400",
    ]);
    let conn = format!("tcp:127.0.0.1:{BRIDGE_TCP_PORT}");
    // The bridge listens a moment after it starts: retry the connect briefly.
    let mut out = None;
    for _ in 0..20 {
        let o = nexus(&[
            "run",
            "examples/box-mission.toml",
            "--connect",
            &conn,
            "--json",
        ])
        .timeout(Duration::from_secs(200))
        .output()
        .expect("run nexus");
        if !o.stdout.is_empty() {
            out = Some(o);
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let out = out.expect("nexus run never connected to the bridge");
    let r = json(&out.stdout);
    assert!(
        out.status.success(),
        "exit {:?}: {r}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(r["passed"], true, "{r}");
    let q = &r["requests"];
    eprintln!("requests over a 400 ms link to a x5 vehicle: {q}");
    // The estimate is in the vehicle's clock: 800 ms of wall at ×5 is ~4 000 ms (more if the
    // machine is loaded: the timer then follows that too).
    let rtt = q["rtt_ms"].as_f64().expect("a round trip was measured");
    assert!((3_500.0..=12_000.0).contains(&rtt), "{q}");
    assert!(q["rtt_samples"].as_u64().unwrap() >= 5, "{q}");
    assert!(q["mission_retry_ms"].as_u64().unwrap() as f64 > rtt, "{q}");
    assert!(q["command_retry_ms"].as_u64().unwrap() as f64 > rtt, "{q}");
    // Fixed 1 s / 1.5 s timers (measured before this change, same link and vehicle): 9
    // commands, 5 counts and 97 MISSION_ITEM_INT for 6 items (every re-ask answered while the
    // item was in flight). Now: ~4 commands, ~3 counts (before the first sample), 6 items.
    assert_eq!(q["mission_items"], 6, "{q}");
    assert!(q["mission_item_retries"].as_u64().unwrap() <= 2, "{q}");
    assert!(q["commands_sent"].as_u64().unwrap() <= 6, "{q}");
    let events = r["events"].to_string();
    assert!(!events.contains("gave up"), "{events}");
}
