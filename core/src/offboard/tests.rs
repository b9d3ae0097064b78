//! The machine's hand-laid payloads (`Offboard::encode`, [`wire::encode_tx`]) against the
//! [`wire`] builders encoded by mavlink's serialiser (the builders pymavlink's golden frames
//! check), on random inputs.

extern crate std;

use super::*;
use crate::frame::MAX_FRAME_LEN;
use crate::mission::MissionItem;
use crate::telemetry::LinkIds;
use mavlink::MessageData;
use num_traits::FromPrimitive;
use proptest::prelude::*;
use std::vec;
use std::vec::Vec;

fn telemetry(target_sysid: u8) -> Telemetry<4> {
    Telemetry::new(LinkIds {
        target_sysid,
        own_sysid: 255,
        own_compid: 190,
    })
}

fn addr(tel: &Telemetry<4>) -> Addr {
    Addr {
        system: tel.ids().target_sysid,
        component: tel.target_compid(),
    }
}

/// The machine's frame for `tx` equals the reference message's, from the same encoder state,
/// and both advance the sequence number alike.
fn same<M: MessageData>(ob: &Offboard<4>, tel: &Telemetry<4>, tx: Tx, reference: &M, seq: u8) {
    let mut ours = Encoder::new(255, 190);
    ours.set_next_seq(seq);
    let mut theirs = ours.clone();
    let (mut a, mut b) = ([0u8; MAX_FRAME_LEN], [0u8; MAX_FRAME_LEN]);
    let n = ob.encode(&tx, tel, &mut ours, &mut a).expect("encoded");
    let m = theirs.encode(reference, &mut b).expect("reference encoded");
    assert_eq!(&a[..n], &b[..m], "{tx:?}");
    assert_eq!(ours.next_seq(), theirs.next_seq());
}

fn f32_bits() -> impl Strategy<Value = f32> {
    prop_oneof![
        any::<u32>().prop_map(f32::from_bits),
        Just(0.0f32),
        Just(-0.0f32),
        Just(f32::NAN),
        -2.0f32..2.0,
    ]
}

fn mode() -> impl Strategy<Value = Mode> {
    let named: Vec<Mode> = Mode::all().collect();
    prop_oneof![
        proptest::sample::select(named),
        (any::<u8>(), any::<u8>()).prop_map(|(main, sub)| Mode::Unknown { main, sub }),
    ]
}

fn mission_result() -> impl Strategy<Value = mav::MavMissionResult> {
    (0u8..=15).prop_filter_map("a MAV_MISSION_RESULT", mav::MavMissionResult::from_u8)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn hand_laid_payloads_match_the_dialect(
        sysid in any::<u8>(),
        seq in any::<u8>(),
        sticks in (f32_bits(), f32_bits(), f32_bits(), f32_bits()),
        mode in mode(),
        confirmation in any::<u8>(),
        n in any::<u16>(),
        result in mission_result(),
        lat_e7 in any::<i32>(),
        lon_e7 in any::<i32>(),
        alt_amsl_m in f32_bits(),
        yaw_ned_rad in f32_bits(),
        name in "[A-Z0-9_]{1,16}",
        bits in any::<u32>(),
        int32 in any::<bool>(),
    ) {
        let tel = telemetry(sysid);
        let to = addr(&tel);
        let ob = Offboard::<4>::new(OffboardConfig::default());
        same(&ob, &tel, Tx::Heartbeat, &wire::gcs_heartbeat(), seq);
        let (roll, pitch, throttle, yaw) = sticks;
        let s = RcSticks { roll, pitch, throttle, yaw };
        same(&ob, &tel, Tx::Rc(s), &wire::manual_control_sticks(sysid, s), seq);
        same(&ob, &tel, Tx::SetMode { mode, confirmation }, &wire::do_set_mode(to, mode, confirmation), seq);
        same(&ob, &tel, Tx::Arm { confirmation }, &wire::arm_disarm(to, true, confirmation), seq);
        same(&ob, &tel, Tx::OneShot(OneShot::Disarm), &wire::arm_disarm(to, false, 0), seq);
        #[cfg(feature = "vtol")]
        for fw in [false, true] {
            same(&ob, &tel, Tx::OneShot(OneShot::VtolTransition { fw }), &wire::vtol_transition(to, fw), seq);
        }
        same(&ob, &tel, Tx::MissionSetCurrent(n), &wire::mission_set_current(to, n), seq);
        same(&ob, &tel, Tx::MissionCount(n), &wire::mission_count(to, n), seq);
        same(&ob, &tel, Tx::MissionAck(result), &wire::mission_ack(to, result), seq);
        #[cfg(feature = "geofence")]
        {
            use geofence::{GeoKind, GeoTx};
            for kind in [GeoKind::Fence, GeoKind::Rally] {
                let t = kind.mission_type();
                same(&ob, &tel, Tx::Geo(kind, GeoTx::Count(n)), &wire::mission_count_of(to, n, t), seq);
                same(&ob, &tel, Tx::Geo(kind, GeoTx::Ack(result)), &wire::mission_ack_of(to, result, t), seq);
            }
        }
        let repo = OneShot::Reposition { lat_e7, lon_e7, alt_amsl_m, yaw_ned_rad };
        let reference = wire::reposition(to, lat_e7, lon_e7, alt_amsl_m, yaw_ned_rad);
        same(&ob, &tel, Tx::OneShot(repo), &reference, seq);
        let param = OneShot::Param { name: crate::action::param_name(&name).unwrap(), bits, int32 };
        let pt = if int32 {
            mav::MavParamType::MAV_PARAM_TYPE_INT32
        } else {
            mav::MavParamType::MAV_PARAM_TYPE_REAL32
        };
        same(&ob, &tel, Tx::OneShot(param), &wire::param_set_bits(to, &name, bits, pt).unwrap(), seq);
    }

    #[test]
    fn mission_items_go_out_as_the_dialect_encodes_them(
        sysid in any::<u8>(),
        seq in any::<u8>(),
        command in proptest::sample::select(vec![16u16, 17, 19, 20, 21, 22, 82, 84, 85, 178, 189, 201, 206, 530, 2000]),
        frame in proptest::sample::select(vec![0u8, 2, 3, 5, 6, 10, 11]),
        autocontinue in any::<bool>(),
        params in (f32_bits(), f32_bits(), f32_bits(), f32_bits()),
        x in any::<i32>(),
        y in any::<i32>(),
        z in f32_bits(),
        count in 1usize..=4,
    ) {
        let tel = telemetry(sysid);
        let to = addr(&tel);
        let mut ob = Offboard::<4>::new(OffboardConfig::default());
        for i in 0..count {
            let item = MissionItem {
                seq: i as u16,
                frame,
                command,
                autocontinue,
                params: [params.0, params.1, params.2, params.3],
                x: x.wrapping_add(i as i32),
                y,
                z,
            };
            ob.mission.items.push(item).unwrap();
        }
        for (i, item) in ob.mission.items.iter().enumerate() {
            let reference = wire::mission_item_int(
                to,
                item,
                false,
                mav::MavMissionType::MAV_MISSION_TYPE_MISSION,
            )
            .unwrap();
            same(&ob, &tel, Tx::MissionItem(i as u16), &reference, seq);
        }
        // An item the mission does not hold is no frame.
        let mut enc = Encoder::new(255, 190);
        let mut buf = [0u8; MAX_FRAME_LEN];
        prop_assert_eq!(ob.encode(&Tx::MissionItem(count as u16), &tel, &mut enc, &mut buf), None);
        prop_assert_eq!(enc.next_seq(), 0);
    }
}

#[test]
fn an_empty_parameter_name_is_no_frame() {
    let tel = telemetry(1);
    let ob = Offboard::<4>::new(OffboardConfig::default());
    let mut enc = Encoder::new(255, 190);
    let mut buf = [0u8; MAX_FRAME_LEN];
    let tx = Tx::OneShot(OneShot::Param {
        name: ParamName::new(),
        bits: 1,
        int32: true,
    });
    assert_eq!(ob.encode(&tx, &tel, &mut enc, &mut buf), None);
    assert_eq!(enc.next_seq(), 0, "nothing counted");
    // A buffer one byte short of the frame gets nothing either.
    let tx = Tx::Heartbeat;
    let mut small = [0u8; 12 + 9 - 1];
    assert_eq!(ob.encode(&tx, &tel, &mut enc, &mut small), None);
    assert_eq!(enc.next_seq(), 0);
}
