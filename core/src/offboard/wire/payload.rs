//! The machine's frames, laid out by hand: each payload in MAVLink 2 wire order (extensions
//! zero) as the typed builder beside it in [`super`] encodes to, and every frame encoded
//! through one `encode_payload` call: one copy of the framing for every message the machine
//! sends, instead of mavlink's serialiser instantiated per message type (~1 KB of thumbv7em
//! flash). The offboard tests (`hand_laid_payloads_match_the_dialect`) hold every layout to
//! its builder's bytes on random inputs; the builders are the ones golden-tested against
//! pymavlink.

// MAV_FRAME_GLOBAL_INT is what PX4's DO_REPOSITION takes (docs/px4-wire.md §Reposition);
// PX4 still takes MISSION_SET_CURRENT.
#![allow(deprecated)]

use super::{mission_item_int_payload, Addr};
use crate::action::ParamName;
use crate::frame::Encoder;
use crate::mission::MissionItem;
use crate::offboard::{OneShot, Tx};
use crate::rc::RcSticks;
use mavlink::dialects::common as mav;
use mavlink::MessageData;

/// The longest payload laid out by hand (MISSION_ITEM_INT, extensions included).
const MAX_PAYLOAD: usize = mav::MISSION_ITEM_INT_DATA::ENCODED_LEN;

/// A payload being laid out.
type Payload = [u8; MAX_PAYLOAD];

/// Message id, CRC extra and full payload length (extensions included) of a layout.
type Meta = (u32, u8, usize);

/// Our HEARTBEAT's payload ([`super::gcs_heartbeat`]): custom_mode 0, MAV_TYPE_GCS,
/// MAV_AUTOPILOT_INVALID, no base mode, MAV_STATE_ACTIVE, MAVLink version 3.
const GCS_HEARTBEAT: [u8; 9] = [
    0,
    0,
    0,
    0,
    mav::MavType::MAV_TYPE_GCS as u8,
    mav::MavAutopilot::MAV_AUTOPILOT_INVALID as u8,
    0,
    mav::MavState::MAV_STATE_ACTIVE as u8,
    3,
];

/// Encode `tx` for `to` into `buf`: the frame's length, or `None` when there is no frame
/// (`item` missing for a MISSION_ITEM_INT, an empty parameter name) or `buf` is too small.
/// `item`: the mission, fence or rally item a MISSION_ITEM_INT carries; `time_boot_ms`: the
/// vehicle's clock, for a setpoint.
#[cfg_attr(not(feature = "setpoints"), allow(unused_variables))]
pub(crate) fn encode_tx(
    tx: &Tx,
    to: Addr,
    item: Option<&MissionItem>,
    time_boot_ms: u32,
    enc: &mut Encoder,
    buf: &mut [u8],
) -> Option<usize> {
    let mission = mav::MavMissionType::MAV_MISSION_TYPE_MISSION;
    let mut p = [0u8; MAX_PAYLOAD];
    let (id, extra, len) = match tx {
        Tx::Heartbeat => {
            p[..GCS_HEARTBEAT.len()].copy_from_slice(&GCS_HEARTBEAT);
            meta::<mav::HEARTBEAT_DATA>()
        }
        Tx::Rc(s) => manual_control(&mut p, to, *s),
        // Sent typed: three messages, each rarely beside the others.
        #[cfg(feature = "setpoints")]
        Tx::Setpoint(sp) => {
            use crate::offboard::setpoint::{setpoint_msg, SetpointMsg};
            let r = match setpoint_msg(sp, to.system, to.component, time_boot_ms) {
                SetpointMsg::Local(m) => enc.encode(&m, buf),
                SetpointMsg::Global(m) => enc.encode(&m, buf),
                SetpointMsg::Attitude(m) => enc.encode(&m, buf),
            };
            return r.ok();
        }
        Tx::SetMode { mode, confirmation } => {
            let (main, sub) = mode.main_sub();
            // MAV_MODE_FLAG_CUSTOM_MODE_ENABLED, PX4's main and sub mode (super::do_set_mode).
            let params = [1.0, main as f32, sub as f32];
            let cmd = mav::MavCmd::MAV_CMD_DO_SET_MODE;
            command_long(&mut p, to, cmd, params, *confirmation)
        }
        Tx::Arm { confirmation } => {
            let cmd = mav::MavCmd::MAV_CMD_COMPONENT_ARM_DISARM;
            command_long(&mut p, to, cmd, [1.0, 0.0, 0.0], *confirmation)
        }
        // param1 0: disarm, never forced (super::arm_disarm).
        Tx::OneShot(OneShot::Disarm) => {
            let cmd = mav::MavCmd::MAV_CMD_COMPONENT_ARM_DISARM;
            command_long(&mut p, to, cmd, [0.0; 3], 0)
        }
        #[cfg(feature = "failure-injection")]
        Tx::OneShot(OneShot::InjectFailure {
            unit,
            kind,
            instance,
        }) => {
            let params = [*unit as f32, *kind as f32, *instance as f32];
            command_long(&mut p, to, mav::MavCmd::MAV_CMD_INJECT_FAILURE, params, 0)
        }
        // param1 MAV_VTOL_STATE (4 fixed-wing, 3 multicopter), param2 0: the normal
        // transition, not PX4's immediate one (super::vtol_transition).
        #[cfg(feature = "vtol")]
        Tx::OneShot(OneShot::VtolTransition { fw }) => {
            let state = if *fw {
                mav::MavVtolState::MAV_VTOL_STATE_FW
            } else {
                mav::MavVtolState::MAV_VTOL_STATE_MC
            };
            let cmd = mav::MavCmd::MAV_CMD_DO_VTOL_TRANSITION;
            command_long(&mut p, to, cmd, [state as u8 as f32, 0.0, 0.0], 0)
        }
        Tx::MissionSetCurrent(seq) => mission_set_current(&mut p, to, *seq),
        Tx::MissionCount(n) => mission_count(&mut p, to, *n, mission),
        Tx::MissionItem(_) => mission_item(&mut p, to, item?, mission),
        #[cfg(feature = "mission-download")]
        Tx::MissionRequestList => return enc.encode(&super::mission_request_list(to), buf).ok(),
        #[cfg(feature = "mission-download")]
        Tx::MissionRequestInt(seq) => {
            return enc.encode(&super::mission_request_int(to, *seq), buf).ok()
        }
        Tx::MissionAck(r) => mission_ack(&mut p, to, *r, mission),
        #[cfg(feature = "mission-download")]
        Tx::MissionClearAll => return enc.encode(&super::mission_clear_all(to), buf).ok(),
        #[cfg(feature = "geofence")]
        Tx::Geo(kind, g) => {
            use crate::offboard::geofence::GeoTx;
            let ty = kind.mission_type();
            match g {
                GeoTx::Count(n) => mission_count(&mut p, to, *n, ty),
                GeoTx::Item(_) => mission_item(&mut p, to, item?, ty),
                GeoTx::RequestList => {
                    return enc
                        .encode(&super::mission_request_list_of(to, ty), buf)
                        .ok()
                }
                GeoTx::RequestInt(seq) => {
                    return enc
                        .encode(&super::mission_request_int_of(to, *seq, ty), buf)
                        .ok()
                }
                GeoTx::Ack(r) => mission_ack(&mut p, to, *r, ty),
                GeoTx::ClearAll => {
                    return enc.encode(&super::mission_clear_all_of(to, ty), buf).ok()
                }
            }
        }
        Tx::OneShot(OneShot::Reposition {
            lat_e7,
            lon_e7,
            alt_amsl_m,
            yaw_ned_rad,
        }) => reposition(&mut p, to, *lat_e7, *lon_e7, *alt_amsl_m, *yaw_ned_rad),
        Tx::OneShot(OneShot::Param { name, bits, int32 }) => {
            param_set(&mut p, to, name, *bits, *int32)?
        }
    };
    enc.encode_payload(id, extra, &p[..len], buf).ok()
}

/// Message id, CRC extra and full payload length (extensions included) of `M`.
fn meta<M: MessageData>() -> Meta {
    (M::ID, M::EXTRA_CRC, M::ENCODED_LEN)
}

/// An `f32` at byte `at` of a payload, little-endian.
fn put_f32(p: &mut Payload, at: usize, v: f32) {
    if let Some(d) = p.get_mut(at..at + 4) {
        d.copy_from_slice(&v.to_le_bytes());
    }
}

/// MANUAL_CONTROL for these sticks, no buttons, the extensions zero
/// ([`super::manual_control_sticks`]).
fn manual_control(p: &mut Payload, to: Addr, s: RcSticks) -> Meta {
    let (x, y, z, r) = s.to_manual_control();
    for (i, v) in [x, y, z, r].into_iter().enumerate() {
        p[2 * i..2 * i + 2].copy_from_slice(&v.to_le_bytes());
    }
    // buttons (8..10) none; the extensions zero.
    p[10] = to.system;
    meta::<mav::MANUAL_CONTROL_DATA>()
}

/// COMMAND_LONG of `command` with params 1..=3 (4..=7 zero), as [`super::command_long`] lays
/// it out.
#[inline(never)] // three commands: one copy
fn command_long(
    p: &mut Payload,
    to: Addr,
    command: mav::MavCmd,
    params: [f32; 3],
    confirmation: u8,
) -> Meta {
    for (i, v) in params.into_iter().enumerate() {
        put_f32(p, 4 * i, v);
    }
    p[28..30].copy_from_slice(&(command as u16).to_le_bytes());
    p[30] = to.system;
    p[31] = to.component;
    p[32] = confirmation;
    meta::<mav::COMMAND_LONG_DATA>()
}

/// MISSION_SET_CURRENT of item `seq` ([`super::mission_set_current`]).
fn mission_set_current(p: &mut Payload, to: Addr, seq: u16) -> Meta {
    p[..2].copy_from_slice(&seq.to_le_bytes());
    p[2] = to.system;
    p[3] = to.component;
    meta::<mav::MISSION_SET_CURRENT_DATA>()
}

/// MISSION_COUNT of `count` items of plan `ty`, no opaque id ([`super::mission_count_of`]).
fn mission_count(p: &mut Payload, to: Addr, count: u16, ty: mav::MavMissionType) -> Meta {
    p[..2].copy_from_slice(&count.to_le_bytes());
    p[2] = to.system;
    p[3] = to.component;
    p[4] = ty as u8;
    meta::<mav::MISSION_COUNT_DATA>()
}

/// MISSION_ITEM_INT of `item` of plan `ty`, not current ([`mission_item_int_payload`]: no
/// MAV_CMD enum conversion, the items were validated when lodged).
fn mission_item(p: &mut Payload, to: Addr, item: &MissionItem, ty: mav::MavMissionType) -> Meta {
    let m = mission_item_int_payload(to, item, false, ty);
    p[..m.len()].copy_from_slice(&m);
    meta::<mav::MISSION_ITEM_INT_DATA>()
}

/// MISSION_ACK of plan `ty` with `result`, no opaque id ([`super::mission_ack_of`]).
fn mission_ack(
    p: &mut Payload,
    to: Addr,
    result: mav::MavMissionResult,
    ty: mav::MavMissionType,
) -> Meta {
    p[0] = to.system;
    p[1] = to.component;
    p[2] = result as u8;
    p[3] = ty as u8;
    meta::<mav::MISSION_ACK_DATA>()
}

/// COMMAND_INT DO_REPOSITION as [`super::reposition`]: param1 -1 (default speed), param2 1,
/// param4 the yaw; frame GLOBAL_INT; current and autocontinue 0.
fn reposition(
    p: &mut Payload,
    to: Addr,
    lat_e7: i32,
    lon_e7: i32,
    alt_amsl_m: f32,
    yaw_ned_rad: f32,
) -> Meta {
    put_f32(p, 0, -1.0);
    put_f32(p, 4, 1.0);
    put_f32(p, 12, yaw_ned_rad);
    p[16..20].copy_from_slice(&lat_e7.to_le_bytes());
    p[20..24].copy_from_slice(&lon_e7.to_le_bytes());
    put_f32(p, 24, alt_amsl_m);
    p[28..30].copy_from_slice(&(mav::MavCmd::MAV_CMD_DO_REPOSITION as u16).to_le_bytes());
    p[30] = to.system;
    p[31] = to.component;
    p[32] = mav::MavFrame::MAV_FRAME_GLOBAL_INT as u8;
    meta::<mav::COMMAND_INT_DATA>()
}

/// PARAM_SET of `name` with the value's raw bits, INT32 or REAL32 ([`super::param_set_bits`]).
/// The name was checked when queued (1..=16 bytes); an empty one is no frame, as the builder
/// refuses it.
fn param_set(p: &mut Payload, to: Addr, name: &ParamName, bits: u32, int32: bool) -> Option<Meta> {
    if name.is_empty() {
        return None;
    }
    p[..4].copy_from_slice(&bits.to_le_bytes());
    p[4] = to.system;
    p[5] = to.component;
    p[6..6 + name.len()].copy_from_slice(name.as_bytes());
    p[22] = if int32 {
        mav::MavParamType::MAV_PARAM_TYPE_INT32
    } else {
        mav::MavParamType::MAV_PARAM_TYPE_REAL32
    } as u8;
    Some(meta::<mav::PARAM_SET_DATA>())
}
