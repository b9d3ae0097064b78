//! Pure builders for every message the machine sends, and the machine's encoding of them.
//!
//! The builders here are typed (the dialect's message structs), and the golden tests compare
//! what they build, encoded, with pymavlink's reference frames byte for byte. They are public
//! so a simulated vehicle or a test can speak the same dialect. The machine sends the same
//! messages through `payload::encode_tx`, which lays most payloads out by hand to keep
//! mavlink's per-message serialisers out of the firmware; each layout names its builder here
//! and is held to its bytes by the offboard tests.

// MAV_FRAME_GLOBAL_INT is what PX4's DO_REPOSITION takes (docs/px4-wire.md §Reposition).
#![allow(deprecated)]

mod payload;

pub(crate) use payload::encode_tx;

use crate::mission::{ItemError, MissionItem};
use crate::mode::Mode;
use crate::rc::RcSticks;
use mavlink::dialects::common as mav;
use mavlink::types::CharArray;

/// Who a message is for: system and component id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Addr {
    /// Target system id (PX4 SITL instance N: N + 1).
    pub system: u8,
    /// Target component id (the autopilot: 1).
    pub component: u8,
}

/// A HEARTBEAT with these fields (MAVLink version 3).
pub fn heartbeat(
    mavtype: mav::MavType,
    autopilot: mav::MavAutopilot,
    base_mode: mav::MavModeFlag,
    custom_mode: u32,
    system_status: mav::MavState,
) -> mav::HEARTBEAT_DATA {
    mav::HEARTBEAT_DATA {
        custom_mode,
        mavtype,
        autopilot,
        base_mode,
        system_status,
        mavlink_version: 3,
    }
}

/// Our own HEARTBEAT: a ground station (MAV_TYPE_GCS, MAV_AUTOPILOT_INVALID), active.
pub fn gcs_heartbeat() -> mav::HEARTBEAT_DATA {
    heartbeat(
        mav::MavType::MAV_TYPE_GCS,
        mav::MavAutopilot::MAV_AUTOPILOT_INVALID,
        mav::MavModeFlag::empty(),
        0,
        mav::MavState::MAV_STATE_ACTIVE,
    )
}

/// A COMMAND_LONG. `confirmation` counts resends of the same command (0 for the first).
pub fn command_long(
    to: Addr,
    command: mav::MavCmd,
    params: [f32; 7],
    confirmation: u8,
) -> mav::COMMAND_LONG_DATA {
    let [param1, param2, param3, param4, param5, param6, param7] = params;
    mav::COMMAND_LONG_DATA {
        param1,
        param2,
        param3,
        param4,
        param5,
        param6,
        param7,
        command,
        target_system: to.system,
        target_component: to.component,
        confirmation,
    }
}

/// DO_SET_MODE (176) as COMMAND_LONG: param1 = MAV_MODE_FLAG_CUSTOM_MODE_ENABLED (1),
/// param2 = PX4 main mode, param3 = sub mode.
pub fn do_set_mode(to: Addr, mode: Mode, confirmation: u8) -> mav::COMMAND_LONG_DATA {
    let (main, sub) = mode.main_sub();
    command_long(
        to,
        mav::MavCmd::MAV_CMD_DO_SET_MODE,
        [1.0, main as f32, sub as f32, 0.0, 0.0, 0.0, 0.0],
        confirmation,
    )
}

/// COMPONENT_ARM_DISARM (400): param1 = 1 arm, 0 disarm; never forced (param2 = 0).
pub fn arm_disarm(to: Addr, arm: bool, confirmation: u8) -> mav::COMMAND_LONG_DATA {
    command_long(
        to,
        mav::MavCmd::MAV_CMD_COMPONENT_ARM_DISARM,
        [if arm { 1.0 } else { 0.0 }, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
        confirmation,
    )
}

/// DO_VTOL_TRANSITION (3000): param1 = the MAV_VTOL_STATE to reach (4 fixed-wing, 3
/// multicopter), param2 = 0 (PX4's normal transition; 1 would be its immediate one).
#[cfg(feature = "vtol")]
pub fn vtol_transition(to: Addr, fw: bool) -> mav::COMMAND_LONG_DATA {
    let state = if fw {
        mav::MavVtolState::MAV_VTOL_STATE_FW
    } else {
        mav::MavVtolState::MAV_VTOL_STATE_MC
    };
    command_long(
        to,
        mav::MavCmd::MAV_CMD_DO_VTOL_TRANSITION,
        [state as u8 as f32, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
        0,
    )
}

/// A COMMAND_INT (current = 0, autocontinue = 0).
pub fn command_int(
    to: Addr,
    command: mav::MavCmd,
    frame: mav::MavFrame,
    params: [f32; 4],
    x: i32,
    y: i32,
    z: f32,
) -> mav::COMMAND_INT_DATA {
    let [param1, param2, param3, param4] = params;
    mav::COMMAND_INT_DATA {
        param1,
        param2,
        param3,
        param4,
        x,
        y,
        z,
        command,
        target_system: to.system,
        target_component: to.component,
        frame,
        current: 0,
        autocontinue: 0,
    }
}

/// DO_REPOSITION (192) as PX4 takes it: COMMAND_INT, frame 5 (GLOBAL_INT), param1 = -1
/// (default ground speed), param2 = 1 (exactly: PX4 refuses anything else), param4 = yaw in
/// rad in PX4's NED heading (NaN keeps the heading), x/y = lat/lon × 1e7, z = altitude AMSL, m.
pub fn reposition(
    to: Addr,
    lat_e7: i32,
    lon_e7: i32,
    alt_amsl_m: f32,
    yaw_ned_rad: f32,
) -> mav::COMMAND_INT_DATA {
    command_int(
        to,
        mav::MavCmd::MAV_CMD_DO_REPOSITION,
        mav::MavFrame::MAV_FRAME_GLOBAL_INT,
        [-1.0, 1.0, 0.0, yaw_ned_rad],
        lat_e7,
        lon_e7,
        alt_amsl_m,
    )
}

/// A parameter name that is not 1..=16 bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct BadParamName;

/// PARAM_SET.param_id: NUL-padded, no terminator at exactly 16 bytes.
pub fn param_id(name: &str) -> Result<CharArray<16>, BadParamName> {
    let bytes = name.as_bytes();
    if bytes.is_empty() || bytes.len() > 16 {
        return Err(BadParamName);
    }
    let mut id = [0u8; 16];
    id[..bytes.len()].copy_from_slice(bytes);
    Ok(CharArray::new(id))
}

/// PARAM_SET with the raw 32 bits of the value field and its type.
pub fn param_set_bits(
    to: Addr,
    name: &str,
    bits: u32,
    param_type: mav::MavParamType,
) -> Result<mav::PARAM_SET_DATA, BadParamName> {
    Ok(mav::PARAM_SET_DATA {
        param_value: f32::from_bits(bits),
        target_system: to.system,
        target_component: to.component,
        param_id: param_id(name)?,
        param_type,
    })
}

/// PARAM_SET of a REAL32 parameter (type 9).
pub fn param_set_real(
    to: Addr,
    name: &str,
    value: f32,
) -> Result<mav::PARAM_SET_DATA, BadParamName> {
    param_set_bits(
        to,
        name,
        value.to_bits(),
        mav::MavParamType::MAV_PARAM_TYPE_REAL32,
    )
}

/// PARAM_SET of an INT32 parameter (type 6): the int's bits ride in the float field, as PX4
/// reads them (sending `1` as 1.0 would have PX4 read 1065353216).
pub fn param_set_int(
    to: Addr,
    name: &str,
    value: i32,
) -> Result<mav::PARAM_SET_DATA, BadParamName> {
    param_set_bits(
        to,
        name,
        value as u32,
        mav::MavParamType::MAV_PARAM_TYPE_INT32,
    )
}

/// MANUAL_CONTROL with raw axes (x pitch, y roll, z throttle 0..1000, r yaw) and buttons; the
/// MAVLink 2 extensions are zero.
pub fn manual_control(
    target: u8,
    x: i16,
    y: i16,
    z: i16,
    r: i16,
    buttons: u16,
) -> mav::MANUAL_CONTROL_DATA {
    mav::MANUAL_CONTROL_DATA {
        x,
        y,
        z,
        r,
        buttons,
        target,
        ..mav::MANUAL_CONTROL_DATA::DEFAULT
    }
}

/// MANUAL_CONTROL for these sticks (clamped and scaled as the Python client's `set_rc`), no
/// buttons.
pub fn manual_control_sticks(target: u8, sticks: RcSticks) -> mav::MANUAL_CONTROL_DATA {
    let (x, y, z, r) = sticks.to_manual_control();
    manual_control(target, x, y, z, r, 0)
}

/// MISSION_ITEM_INT for `item`; an unknown command or frame is an error, never a panic.
pub fn mission_item_int(
    to: Addr,
    item: &MissionItem,
    current: bool,
    mission_type: mav::MavMissionType,
) -> Result<mav::MISSION_ITEM_INT_DATA, ItemError> {
    let [param1, param2, param3, param4] = item.params;
    Ok(mav::MISSION_ITEM_INT_DATA {
        param1,
        param2,
        param3,
        param4,
        x: item.x,
        y: item.y,
        z: item.z,
        seq: item.seq,
        command: item.mav_command()?,
        target_system: to.system,
        target_component: to.component,
        frame: item.mav_frame()?,
        current: current as u8,
        autocontinue: item.autocontinue as u8,
        mission_type,
    })
}

/// MISSION_ITEM_INT's payload for `item`, laid out by hand in MAVLink 2 wire order (the
/// extension `mission_type` included, before truncation): what [`mission_item_int`] encodes
/// to, without converting `command` and `frame` to the dialect's enums. The numbers ride as
/// they are, so this cannot fail; whether they are values the dialect knows is checked when a
/// mission is lodged ([`MissionItem::validate`]). Encode it with
/// [`crate::frame::Encoder::encode_payload`].
pub fn mission_item_int_payload(
    to: Addr,
    item: &MissionItem,
    current: bool,
    mission_type: mav::MavMissionType,
) -> [u8; mav::MISSION_ITEM_INT_DATA::ENCODED_LEN] {
    let mut p = [0u8; mav::MISSION_ITEM_INT_DATA::ENCODED_LEN];
    let words = [
        item.params[0].to_bits(),
        item.params[1].to_bits(),
        item.params[2].to_bits(),
        item.params[3].to_bits(),
        item.x as u32,
        item.y as u32,
        item.z.to_bits(),
    ];
    for (chunk, w) in p.chunks_exact_mut(4).zip(words) {
        chunk.copy_from_slice(&w.to_le_bytes());
    }
    p[28..30].copy_from_slice(&item.seq.to_le_bytes());
    p[30..32].copy_from_slice(&item.command.to_le_bytes());
    p[32] = to.system;
    p[33] = to.component;
    p[34] = item.frame;
    p[35] = current as u8;
    p[36] = item.autocontinue as u8;
    p[37] = mission_type as u8;
    p
}

/// MISSION_COUNT (mission type MISSION, no opaque id: PX4 computes its own).
pub fn mission_count(to: Addr, count: u16) -> mav::MISSION_COUNT_DATA {
    mission_count_of(to, count, mav::MavMissionType::MAV_MISSION_TYPE_MISSION)
}

/// MISSION_COUNT of the plan `mission_type` (mission, fence or rally).
pub fn mission_count_of(
    to: Addr,
    count: u16,
    mission_type: mav::MavMissionType,
) -> mav::MISSION_COUNT_DATA {
    mav::MISSION_COUNT_DATA {
        count,
        target_system: to.system,
        target_component: to.component,
        mission_type,
        opaque_id: 0,
    }
}

/// MISSION_REQUEST_LIST (start of a download).
pub fn mission_request_list(to: Addr) -> mav::MISSION_REQUEST_LIST_DATA {
    mission_request_list_of(to, mav::MavMissionType::MAV_MISSION_TYPE_MISSION)
}

/// MISSION_REQUEST_LIST of the plan `mission_type` (start of its download).
pub fn mission_request_list_of(
    to: Addr,
    mission_type: mav::MavMissionType,
) -> mav::MISSION_REQUEST_LIST_DATA {
    mav::MISSION_REQUEST_LIST_DATA {
        target_system: to.system,
        target_component: to.component,
        mission_type,
    }
}

/// MISSION_REQUEST_INT for item `seq` (download).
pub fn mission_request_int(to: Addr, seq: u16) -> mav::MISSION_REQUEST_INT_DATA {
    mission_request_int_of(to, seq, mav::MavMissionType::MAV_MISSION_TYPE_MISSION)
}

/// MISSION_REQUEST_INT for item `seq` of the plan `mission_type` (download).
pub fn mission_request_int_of(
    to: Addr,
    seq: u16,
    mission_type: mav::MavMissionType,
) -> mav::MISSION_REQUEST_INT_DATA {
    mav::MISSION_REQUEST_INT_DATA {
        seq,
        target_system: to.system,
        target_component: to.component,
        mission_type,
    }
}

/// MISSION_ACK with `result` (end of a download, or an abort).
pub fn mission_ack(to: Addr, result: mav::MavMissionResult) -> mav::MISSION_ACK_DATA {
    mission_ack_of(to, result, mav::MavMissionType::MAV_MISSION_TYPE_MISSION)
}

/// MISSION_ACK with `result` for the plan `mission_type`.
pub fn mission_ack_of(
    to: Addr,
    result: mav::MavMissionResult,
    mission_type: mav::MavMissionType,
) -> mav::MISSION_ACK_DATA {
    mav::MISSION_ACK_DATA {
        target_system: to.system,
        target_component: to.component,
        mavtype: result,
        mission_type,
        opaque_id: 0,
    }
}

/// MISSION_CLEAR_ALL of the mission (not fence or rally points).
pub fn mission_clear_all(to: Addr) -> mav::MISSION_CLEAR_ALL_DATA {
    mission_clear_all_of(to, mav::MavMissionType::MAV_MISSION_TYPE_MISSION)
}

/// MISSION_CLEAR_ALL of the plan `mission_type` only (PX4 clears one type per request).
pub fn mission_clear_all_of(
    to: Addr,
    mission_type: mav::MavMissionType,
) -> mav::MISSION_CLEAR_ALL_DATA {
    mav::MISSION_CLEAR_ALL_DATA {
        target_system: to.system,
        target_component: to.component,
        mission_type,
    }
}

/// MISSION_SET_CURRENT: make item `seq` the one PX4 flies next.
pub fn mission_set_current(to: Addr, seq: u16) -> mav::MISSION_SET_CURRENT_DATA {
    mav::MISSION_SET_CURRENT_DATA {
        seq,
        target_system: to.system,
        target_component: to.component,
    }
}
