//! nexus-host and rust-mavlink with its default `std` features in one crate: the same message
//! types, frames exchanged both ways through mavlink's std reader and writer, and a flight on
//! the built-in vehicle from the same binary.

use mavlink::dialects::common::{self as user_mav, MavMessage};
use mavlink::{MavHeader, MavlinkVersion};
use nexus_host::nexus_core::frame::{encode_v2, Decoder};
use nexus_host::nexus_core::msg::{Frame, Msg};
use nexus_host::prelude::*;

/// Test instances of this file (the task's range is 160–167).
const INSTANCE: u8 = 160;

/// A COMMAND_LONG encoded by nexus-core reads back through mavlink's std reader: one crate,
/// one set of types (the user's `COMMAND_LONG_DATA` is nexus-core's).
#[test]
fn core_frame_reads_with_mavlink_std_reader() {
    let cmd = user_mav::COMMAND_LONG_DATA {
        target_system: 1,
        target_component: 1,
        command: user_mav::MavCmd::MAV_CMD_NAV_TAKEOFF,
        param7: 2.5,
        ..Default::default()
    };
    let mut buf = [0u8; 280];
    let n = encode_v2(7, 255, 190, &cmd, &mut buf).expect("a COMMAND_LONG fits 280 bytes");
    let mut reader = mavlink::MavlinkReader::new(&buf[..n]);
    let (header, msg) = reader
        .read_message::<MavMessage>(MavlinkVersion::V2)
        .expect("mavlink's reader accepts nexus-core's frame");
    assert_eq!((header.system_id, header.component_id), (255, 190));
    assert_eq!(header.sequence, 7);
    match msg {
        MavMessage::COMMAND_LONG(c) => {
            assert_eq!(c.command, user_mav::MavCmd::MAV_CMD_NAV_TAKEOFF);
            assert_eq!(c.param7, 2.5);
        }
        other => panic!("expected COMMAND_LONG, read {other:?}"),
    }
}

/// A HEARTBEAT written by mavlink's std writer decodes in nexus-core's decoder.
#[test]
fn mavlink_std_frame_decodes_in_core() {
    let hb = user_mav::HEARTBEAT_DATA {
        mavtype: user_mav::MavType::MAV_TYPE_QUADROTOR,
        autopilot: user_mav::MavAutopilot::MAV_AUTOPILOT_PX4,
        base_mode: user_mav::MavModeFlag::MAV_MODE_FLAG_SAFETY_ARMED,
        ..Default::default()
    };
    let header = MavHeader {
        system_id: 1,
        component_id: 1,
        sequence: 42,
    };
    let mut wire = Vec::new();
    mavlink::write_v2_msg(&mut wire, header, &MavMessage::HEARTBEAT(hb.clone()))
        .expect("writing to a Vec cannot fail");
    let mut dec = Decoder::new();
    let (used, raw) = dec.feed(&wire);
    assert_eq!(used, wire.len());
    let raw = raw.expect("one complete frame");
    let frame = Frame::decode(&raw)
        .expect("checksum and payload valid")
        .expect("HEARTBEAT is in the core's subset");
    assert_eq!((frame.header.sysid, frame.header.seq), (1, 42));
    match frame.msg {
        Msg::Heartbeat(got) => assert_eq!(got, hb),
        other => panic!("expected HEARTBEAT, decoded {other:?}"),
    }
}

/// The host library works in this crate graph: a lockstep takeoff on the built-in vehicle.
#[test]
fn host_flies_beside_mavlink_std() {
    let sim = Run::started(RunOptions::simulated(INSTANCE).lockstep()).expect("sim starts");
    let op = OffboardClient::connect(&sim, 10.0).expect("client connects");
    op.takeoff(2.0).expect("takeoff sent");
    let r = sim
        .wait(&Wait::altitude_m(1.5).op(Op::Ge).timeout_s(60.0))
        .expect("the wait runs");
    assert_eq!(r.reason, Reason::Met, "{r:?}");
    // Arming and climbing 1.5 m take PX4 seconds of sim time, however fast lockstep runs.
    assert!(r.waited_sim_s > 1.0, "met after {} s", r.waited_sim_s);
    assert!(op.is_armed());
}
