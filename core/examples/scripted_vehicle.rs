//! The core with no I/O at all: a [`Client`] driven by a vehicle scripted in memory. It waits
//! for the vehicle to arm (5 s of its clock at most); the script sends PX4's heartbeat and
//! clock every second and arms at 3 s. Everything a driver does is here: hand the client each
//! frame with the time, send what it asks to send, act on its events.
//!
//! ```text
//! cargo run -p nexus-core --example scripted_vehicle
//! ```

use nexus_core::mav;
use nexus_core::prelude::*;
use nexus_core::telemetry::LinkIds;
use nexus_core::{Frame, GroundTruth, Instant, Msg};

/// One second of a scripted PX4: its clock (SYSTEM_TIME) and its heartbeat, armed from 3 s.
fn vehicle_at(s: u32) -> [Frame; 2] {
    let mut base_mode = mav::MavModeFlag::MAV_MODE_FLAG_CUSTOM_MODE_ENABLED;
    if s >= 3 {
        base_mode |= mav::MavModeFlag::MAV_MODE_FLAG_SAFETY_ARMED;
    }
    let heartbeat = mav::HEARTBEAT_DATA {
        custom_mode: Mode::Hold.custom_mode(),
        mavtype: mav::MavType::MAV_TYPE_QUADROTOR,
        autopilot: mav::MavAutopilot::MAV_AUTOPILOT_PX4,
        base_mode,
        system_status: mav::MavState::MAV_STATE_STANDBY,
        mavlink_version: 3,
    };
    let clock = mav::SYSTEM_TIME_DATA {
        time_unix_usec: 0,
        time_boot_ms: s * 1000,
    };
    [
        Frame::from_msg(1, 1, Msg::SystemTime(clock)),
        Frame::from_msg(1, 1, Msg::Heartbeat(heartbeat)),
    ]
}

fn main() {
    let config = ClientConfig {
        ids: LinkIds::default(),
        offboard: Default::default(),
        ground_truth: GroundTruth::Never,
        target_compid: None,
        stall: None,
    };
    // 4 waits, 16 texts, 8 mission items, 4 program steps: fixed capacity, no heap.
    let mut client: Client<4, 16, 8, 4> = Client::new(config);
    let mut buf = [0u8; 280];
    let mut result = None;
    for s in 0..10u32 {
        let now = Instant::from_millis(u64::from(s) * 1000);
        for frame in vehicle_at(s) {
            client.handle(now, &frame);
        }
        if s == 0 {
            client
                .wait(now, &Wait::armed().timeout_s(5.0))
                .expect("a valid wait");
        }
        while let Some(n) = client.poll_transmit(now, &mut buf) {
            println!("t={s} s: the client sends a {n}-byte frame");
        }
        while let Some(event) = client.poll_event() {
            if let Event::Settled { result: r, .. } = event {
                result = Some(r);
            }
        }
        if result.is_some() {
            break;
        }
    }
    let r = result.expect("the wait ends within its 5 s");
    println!(
        "{} after {:.1} s of the vehicle's clock",
        r.reason, r.waited_sim_s
    );
    assert_eq!(r.reason, Reason::Met);
}
