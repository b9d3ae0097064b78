//! Golden frames: what the machine encodes equals pymavlink's reference frames
//! (fixtures/vectors/all.json) byte for byte, through the same builders and encoding path the
//! machine uses — and, where the machine can be driven to it, through `poll_transmit` itself.

mod offboard_rig;

use nexus_core::action::ParamValue;
use nexus_core::frame::{Encoder, MAX_FRAME_LEN};
use nexus_core::mav;
use nexus_core::mission::MissionItem;
use nexus_core::msg::{Frame, Msg};
use nexus_core::offboard::wire::{self, Addr};
use nexus_core::offboard::{Offboard, OffboardConfig};
use nexus_core::telemetry::{LinkIds, Telemetry};
use nexus_core::{Instant, Mode, RcSticks};
use offboard_rig::FakePx4;

fn vector(name: &str) -> serde_json::Value {
    let all: serde_json::Value =
        serde_json::from_str(include_str!("../../fixtures/vectors/all.json")).unwrap();
    all["vectors"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == name)
        .unwrap_or_else(|| panic!("no vector {name}"))
        .clone()
}

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn expected(v: &serde_json::Value) -> Vec<u8> {
    hex(v["frame_hex"].as_str().unwrap())
}

/// An encoder with the vector's sender and sequence number.
fn encoder_for(v: &serde_json::Value) -> Encoder {
    let h = &v["header"];
    let mut enc = Encoder::new(
        h["sysid"].as_u64().unwrap() as u8,
        h["compid"].as_u64().unwrap() as u8,
    );
    enc.set_next_seq(h["seq"].as_u64().unwrap() as u8);
    enc
}

fn encode<M: mavlink::MessageData>(v: &serde_json::Value, m: &M) -> Vec<u8> {
    let mut buf = [0u8; MAX_FRAME_LEN];
    let n = encoder_for(v).encode(m, &mut buf).unwrap();
    buf[..n].to_vec()
}

const PX4: Addr = Addr {
    system: 1,
    component: 1,
};

/// A machine and telemetry that know PX4 (system 1) and have a position, speaking as
/// `own_sysid`/`own_compid`; the heartbeat has been drained.
struct Machine {
    tel: Telemetry<4>,
    ob: Offboard<4>,
    enc: Encoder,
}

impl Machine {
    fn new(own_sysid: u8, own_compid: u8) -> Machine {
        let cfg = OffboardConfig {
            wait_clear_s: 0.0,
            ..OffboardConfig::default()
        };
        let mut m = Machine {
            tel: Telemetry::new(LinkIds {
                target_sysid: 1,
                own_sysid,
                own_compid,
            }),
            ob: Offboard::new(cfg),
            enc: Encoder::new(own_sysid, own_compid),
        };
        let px4 = FakePx4 {
            ready_at_ms: 0,
            ..FakePx4::default()
        };
        m.feed(px4.heartbeat(1000));
        m.feed(px4.global_position(1000));
        m.drain(); // our heartbeat
        m
    }

    fn feed(&mut self, msg: Msg) {
        let f = Frame::from_msg(1, 1, msg);
        assert!(self.tel.handle(Instant::ZERO, &f));
        self.ob.handle(Instant::ZERO, &self.tel, &f);
    }

    fn next(&mut self) -> Option<Vec<u8>> {
        let mut buf = [0u8; MAX_FRAME_LEN];
        let n = self
            .ob
            .poll_transmit(Instant::ZERO, &self.tel, &mut self.enc, &mut buf)?;
        Some(buf[..n].to_vec())
    }

    fn drain(&mut self) -> Vec<Vec<u8>> {
        std::iter::from_fn(|| self.next()).collect()
    }

    /// The machine's next frame, encoded with the vector's sequence number.
    fn next_as(&mut self, v: &serde_json::Value) -> Vec<u8> {
        self.enc
            .set_next_seq(v["header"]["seq"].as_u64().unwrap() as u8);
        self.next().expect("a frame")
    }
}

#[test]
fn heartbeats() {
    for name in [
        "heartbeat_px4_takeoff_armed",
        "heartbeat_px4_takeoff_disarmed_standby",
    ] {
        let v = vector(name);
        let f = &v["fields"];
        let hb = wire::heartbeat(
            mav::MavType::MAV_TYPE_QUADROTOR,
            mav::MavAutopilot::MAV_AUTOPILOT_PX4,
            mav::MavModeFlag::from_bits_retain(f["base_mode"].as_u64().unwrap() as u8),
            Mode::Takeoff.custom_mode(),
            if f["system_status"] == 4 {
                mav::MavState::MAV_STATE_ACTIVE
            } else {
                mav::MavState::MAV_STATE_STANDBY
            },
        );
        assert_eq!(
            f["custom_mode"].as_u64().unwrap() as u32,
            Mode::Takeoff.custom_mode()
        );
        assert_eq!(encode(&v, &hb), expected(&v), "{name}");
    }
}

#[test]
fn our_heartbeat_is_a_gcs_one() {
    let mut tel = Telemetry::<4>::new(LinkIds::default());
    let mut ob = Offboard::<4>::new(OffboardConfig::default());
    let mut enc = Encoder::new(255, 240);
    let mut buf = [0u8; MAX_FRAME_LEN];
    let n = ob
        .poll_transmit(Instant::ZERO, &tel, &mut enc, &mut buf)
        .unwrap();
    assert_eq!(
        offboard_rig::decode(&buf[..n]),
        mav::MavMessage::HEARTBEAT(mav::HEARTBEAT_DATA {
            custom_mode: 0,
            mavtype: mav::MavType::MAV_TYPE_GCS,
            autopilot: mav::MavAutopilot::MAV_AUTOPILOT_INVALID,
            base_mode: mav::MavModeFlag::empty(),
            system_status: mav::MavState::MAV_STATE_ACTIVE,
            mavlink_version: 3,
        })
    );
    // Before the vehicle is heard, nothing else goes out, even with requests pending.
    ob.set_mode(Mode::Takeoff);
    assert_eq!(
        ob.poll_transmit(Instant::ZERO, &tel, &mut enc, &mut buf),
        None
    );
    let f = Frame::from_msg(1, 1, FakePx4::default().heartbeat(0));
    assert!(tel.handle(Instant::ZERO, &f));
    ob.handle(Instant::ZERO, &tel, &f);
    assert!(ob
        .poll_transmit(Instant::ZERO, &tel, &mut enc, &mut buf)
        .is_some());
}

#[test]
fn do_set_mode_through_the_machine() {
    let v = vector("command_long_do_set_mode_px4_takeoff");
    assert_eq!(
        encode(&v, &wire::do_set_mode(PX4, Mode::Takeoff, 0)),
        expected(&v)
    );
    let mut m = Machine::new(255, 190);
    m.ob.set_mode(Mode::Takeoff);
    assert_eq!(m.next_as(&v), expected(&v));
}

#[test]
fn arm_through_the_machine() {
    let v = vector("command_long_arm");
    assert_eq!(encode(&v, &wire::arm_disarm(PX4, true, 0)), expected(&v));
    let mut m = Machine::new(255, 190);
    m.ob.arm(Instant::ZERO, &m.tel);
    assert_eq!(m.next_as(&v), expected(&v));
}

#[test]
fn mission_items() {
    let v = vector("mission_item_int_waypoint");
    let waypoint = MissionItem {
        seq: 1,
        frame: 6,
        command: 16,
        autocontinue: true,
        params: [0.0, 2.0, 0.0, f32::NAN],
        x: 473977508,
        y: 85456074,
        z: 20.5,
    };
    let built = wire::mission_item_int(
        PX4,
        &waypoint,
        false,
        mav::MavMissionType::MAV_MISSION_TYPE_MISSION,
    )
    .unwrap();
    assert_eq!(encode(&v, &built), expected(&v));

    // Through the upload handshake: PX4 asks for item 1, the machine answers with it.
    let mut m = Machine::new(255, 190);
    let first = MissionItem {
        seq: 0,
        command: 22,
        ..waypoint
    };
    m.ob.upload_mission_items(&[first, waypoint]).unwrap();
    m.drain(); // MISSION_COUNT
    let ask = Msg::MissionRequestInt(mav::MISSION_REQUEST_INT_DATA {
        seq: 1,
        target_system: 255,
        target_component: 190,
        mission_type: mav::MavMissionType::MAV_MISSION_TYPE_MISSION,
    });
    m.feed(ask.clone());
    m.feed(ask); // a duplicate before we answered: one answer
    assert_eq!(m.next_as(&v), expected(&v));
    assert_eq!(m.next(), None);

    let v = vector("mission_item_int_fence_vertex");
    let vertex = MissionItem {
        seq: 0,
        frame: 0,
        command: 5001,
        autocontinue: false,
        params: [4.0, 0.0, 0.0, 0.0],
        x: -338688000,
        y: 1512093000,
        z: 0.0,
    };
    let built = wire::mission_item_int(
        PX4,
        &vertex,
        true,
        mav::MavMissionType::MAV_MISSION_TYPE_FENCE,
    )
    .unwrap();
    assert_eq!(encode(&v, &built), expected(&v));
}

/// The machine lays MISSION_ITEM_INT out by hand; it must be what mavlink encodes, byte for
/// byte, for any valid item (the golden vectors above cover two; these cover the rest).
#[test]
fn hand_laid_mission_items_equal_mavlink_encoding() {
    use proptest::prelude::*;
    use proptest::test_runner::{Config, TestRunner};
    let bits = any::<u32>().prop_map(f32::from_bits);
    let item = (
        any::<u16>(),
        0u8..=21,
        prop::sample::select(vec![16u16, 20, 21, 22, 176, 5001, 31000, 43003]),
        any::<bool>(),
        [bits.clone(), bits.clone(), bits.clone(), bits.clone()],
        (any::<i32>(), any::<i32>(), bits),
    )
        .prop_map(
            |(seq, frame, command, autocontinue, params, (x, y, z))| MissionItem {
                seq,
                frame,
                command,
                autocontinue,
                params,
                x,
                y,
                z,
            },
        );
    let mut runner = TestRunner::new(Config::with_cases(2_000));
    runner
        .run(
            &(item, any::<bool>(), any::<(u8, u8, u8)>()),
            |(it, current, (sys, comp, seq))| {
                let to = Addr {
                    system: sys,
                    component: comp,
                };
                let ty = if seq % 2 == 0 {
                    mav::MavMissionType::MAV_MISSION_TYPE_MISSION
                } else {
                    mav::MavMissionType::MAV_MISSION_TYPE_FENCE
                };
                let mut a = [0u8; MAX_FRAME_LEN];
                let mut b = [0u8; MAX_FRAME_LEN];
                let mut enc = Encoder::new(255, 190);
                enc.set_next_seq(seq);
                let built = wire::mission_item_int(to, &it, current, ty).unwrap();
                let n = enc.encode(&built, &mut a).unwrap();
                let mut enc = Encoder::new(255, 190);
                enc.set_next_seq(seq);
                let payload = wire::mission_item_int_payload(to, &it, current, ty);
                let m = enc
                    .encode_payload(
                        <mav::MISSION_ITEM_INT_DATA as mavlink::MessageData>::ID,
                        <mav::MISSION_ITEM_INT_DATA as mavlink::MessageData>::EXTRA_CRC,
                        &payload,
                        &mut b,
                    )
                    .unwrap();
                prop_assert_eq!(&a[..n], &b[..m]);
                prop_assert_eq!(enc.next_seq(), seq.wrapping_add(1));
                Ok(())
            },
        )
        .unwrap();
    // Too small a buffer: refused, nothing written past it, the sequence does not move.
    let mut enc = Encoder::new(255, 190);
    let mut small = [0u8; 20];
    assert!(enc.encode_payload(73, 38, &[1; 38], &mut small).is_err());
    assert_eq!(enc.next_seq(), 0);
}

#[test]
fn param_sets_through_the_machine() {
    let v = vector("param_set_real32");
    let mut m = Machine::new(255, 190);
    m.ob.set_param("MPC_XY_CRUISE", ParamValue::Real(7.5))
        .unwrap();
    assert_eq!(m.next_as(&v), expected(&v));
    assert_eq!(
        encode(
            &v,
            &wire::param_set_real(PX4, "MPC_XY_CRUISE", 7.5).unwrap()
        ),
        expected(&v)
    );

    for name in [
        "param_set_int32_bytewise_2",
        "param_set_int32_bytewise_minus1",
        "param_set_int32_bytewise_big",
        "param_set_id_16_chars",
    ] {
        let v = vector(name);
        let id = v["fields"]["param_id"].as_str().unwrap();
        let bits = u32::from_str_radix(
            v["float_bits_le_u32"]["param_value"]
                .as_str()
                .unwrap()
                .trim_start_matches("0x"),
            16,
        )
        .unwrap();
        let value = bits as i32;
        m.ob.set_param(id, ParamValue::Int(value)).unwrap();
        assert_eq!(m.next_as(&v), expected(&v), "{name}");
        assert_eq!(
            encode(&v, &wire::param_set_int(PX4, id, value).unwrap()),
            expected(&v),
            "{name}"
        );
    }
}

#[test]
fn param_set_int_one_is_bits_one_on_the_wire() {
    let mut m = Machine::new(255, 240);
    m.ob.set_param("COM_RC_IN_MODE", ParamValue::Int(1))
        .unwrap();
    let frame = m.next().unwrap();
    match offboard_rig::decode(&frame) {
        mav::MavMessage::PARAM_SET(p) => {
            assert_eq!(p.param_value.to_bits(), 0x0000_0001);
            assert_eq!(p.param_type, mav::MavParamType::MAV_PARAM_TYPE_INT32);
            assert_eq!(p.param_id.to_str().unwrap(), "COM_RC_IN_MODE");
        }
        other => panic!("{other:?}"),
    }
    // The payload's first four bytes are the int, little-endian.
    assert_eq!(&frame[10..14], &[1, 0, 0, 0]);
}

#[test]
fn manual_control() {
    let v = vector("manual_control_basic");
    // Sticks that scale to x=0 (pitch), y=500 (roll), z=500 (throttle), r=-250 (yaw).
    let sticks = RcSticks {
        roll: 0.5,
        pitch: 0.0,
        throttle: 0.5,
        yaw: -0.25,
    };
    assert_eq!(
        encode(&v, &wire::manual_control_sticks(1, sticks)),
        expected(&v)
    );
    let mut m = Machine::new(1, 191);
    m.ob.set_rc(sticks);
    assert_eq!(m.next_as(&v), expected(&v));

    let v = vector("manual_control_buttons_negative");
    assert_eq!(
        encode(&v, &wire::manual_control(1, -1000, 1000, 0, 32767, 0x8001)),
        expected(&v)
    );
}

#[test]
fn builders_refuse_bad_input_without_panicking() {
    assert!(wire::param_set_real(PX4, "", 1.0).is_err());
    assert!(wire::param_set_int(PX4, "ABCDEFGHIJKLMNOPQ", 1).is_err());
    let bad = MissionItem {
        command: 1,
        ..MissionItem::default()
    };
    assert!(wire::mission_item_int(
        PX4,
        &bad,
        false,
        mav::MavMissionType::MAV_MISSION_TYPE_MISSION
    )
    .is_err());
    let mut m = Machine::new(255, 240);
    assert_eq!(
        m.ob.set_param("ABCDEFGHIJKLMNOPQ", ParamValue::Real(1.0)),
        Err(nexus_core::offboard::OffboardError::BadParamName)
    );
    assert_eq!(
        m.ob.set_param("X", ParamValue::Real(f32::NAN)),
        Err(nexus_core::offboard::OffboardError::InvalidArgument(
            "parameter value must be finite"
        ))
    );
    assert!(m.ob.upload_mission_items(&[bad]).is_err());
    assert_eq!(m.drain().len(), 0);
}
