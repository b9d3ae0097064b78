//! The MAVLink mission protocol as PX4's `MavlinkMissionManager` runs it, and the stored plans.
//!
//! Upload: MISSION_COUNT → the vehicle asks for each item by seq (MISSION_REQUEST_INT, or legacy
//! MISSION_REQUEST after the client has answered with a legacy MISSION_ITEM) → MISSION_ACK with
//! `opaque_id` = the plan's CRC32. An unanswered request is repeated every 250 ms (checked at
//! the mavlink loop rate, so ~0.26 s apart); 5 s after the last message from the partner the
//! transfer is abandoned with "Operation timeout" and no ACK. An upload identical to the stored
//! plan (same CRC) is still transferred in full and acked, but does not replace the active
//! mission, so the current item and "finished" state survive it.
//!
//! The CRC is PX4's `crc32_for_mission_item`: per item, NuttX `crc32part` (reflected polynomial
//! 0xEDB88320, no initial or final inversion, running value chained from item to item starting at
//! 0) over a packed `{u8 frame; u16 command; u8 autocontinue; float params[7]}` whose params are
//! param1..4, x, y, z *as they arrived* (for MISSION_ITEM_INT the int32 bits of x/y).
#![allow(deprecated)] // PX4 still speaks SET_MODE, MISSION_SET_CURRENT and the *_INT frames.

use super::io::Io;
use super::wire::RawMissionItem;
use mav::{MavCmd, MavFrame, MavMissionResult, MavMissionType, MissionState};
use mavlink::dialects::common as mav;

/// Retry period of an unanswered request, µs (MAVLINK_MISSION_RETRY_TIMEOUT_DEFAULT).
pub const RETRY_US: u64 = 250_000;
/// Transfer abandoned this long after the partner's last message, µs.
pub const PROTOCOL_TIMEOUT_US: u64 = 5_000_000;
/// PX4 SITL's capacity per plan type (NUM_MISSIONS_SUPPORTED on POSIX).
pub const MAX_ITEMS: u16 = u16::MAX - 1;
/// MISSION_ITEM_REACHED repeats after the first.
pub const REACHED_REPEATS: u8 = 10;

/// One stored item, in the form PX4 keeps (`mission_item_s`) plus what a download returns.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Item {
    /// MAV_FRAME as received.
    pub frame: u8,
    /// MAV_CMD.
    pub command: u16,
    /// param1..param4.
    pub params: [f32; 4],
    /// Latitude, deg (global frames) or param5 (MISSION frame).
    pub x: f64,
    /// Longitude, deg (global frames) or param6 (MISSION frame).
    pub y: f64,
    /// Altitude, m (relative to home when `relative`), or param7.
    pub z: f32,
    /// Altitude is relative to home.
    pub relative: bool,
    /// Continue to the next item on arrival.
    pub autocontinue: bool,
}

impl Item {
    /// Whether the item has a position (global frame).
    pub fn has_position(&self) -> bool {
        self.frame != MavFrame::MAV_FRAME_MISSION as u8
    }

    /// The command as the mavlink crate's enum; `None` for a number the dialect lacks.
    pub fn cmd(&self) -> Option<MavCmd> {
        <MavCmd as num_traits::FromPrimitive>::from_u16(self.command)
    }
}

/// Whether `command` is a region-of-interest item (NAV_ROI, DO_SET_ROI), whose param1 is a
/// mode PX4 checks per frame.
fn is_roi(command: u16) -> bool {
    command == MavCmd::MAV_CMD_NAV_ROI as u16 || command == MavCmd::MAV_CMD_DO_SET_ROI as u16
}

/// A stored plan of one type.
#[derive(Debug, Clone, Default)]
pub struct StoredPlan {
    /// Items, seq = index.
    pub items: Vec<Item>,
    /// CRC32 of the plan (0 when empty).
    pub crc: u32,
}

/// The navigator's progress through the active mission (PX4 `mission_result`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MissionResult {
    /// Item being flown (or to be flown).
    pub current: u16,
    /// Highest item reached, −1 for none.
    pub reached: i32,
    /// Mission flown to its end.
    pub finished: bool,
    /// Bumped whenever the active mission is replaced (navigator restarts its work items).
    pub generation: u32,
}

fn crc32_table() -> &'static [u32; 256] {
    static TABLE: std::sync::OnceLock<[u32; 256]> = std::sync::OnceLock::new();
    TABLE.get_or_init(|| {
        let mut t = [0u32; 256];
        for (i, e) in t.iter_mut().enumerate() {
            let mut c = i as u32;
            for _ in 0..8 {
                c = if c & 1 != 0 {
                    0xEDB8_8320 ^ (c >> 1)
                } else {
                    c >> 1
                };
            }
            *e = c;
        }
        t
    })
}

/// NuttX `crc32part`: table CRC-32 without inversions.
pub fn crc32part(bytes: &[u8], mut crc: u32) -> u32 {
    let t = crc32_table();
    for &b in bytes {
        crc = t[((crc ^ b as u32) & 0xff) as usize] ^ (crc >> 8);
    }
    crc
}

/// PX4's `crc32_for_mission_item` over a raw item.
pub fn crc_for_item(it: &RawMissionItem, prev: u32) -> u32 {
    let mut b = [0u8; 32];
    b[0] = it.frame;
    b[1..3].copy_from_slice(&it.command.to_le_bytes());
    b[3] = it.autocontinue;
    let words = [
        it.params[0].to_bits(),
        it.params[1].to_bits(),
        it.params[2].to_bits(),
        it.params[3].to_bits(),
        it.x_bits,
        it.y_bits,
        it.z.to_bits(),
    ];
    for (i, w) in words.iter().enumerate() {
        b[4 + 4 * i..8 + 4 * i].copy_from_slice(&w.to_le_bytes());
    }
    crc32part(&b, prev)
}

const GLOBAL_NAV: &[u16] = &[
    MavCmd::MAV_CMD_NAV_WAYPOINT as u16,
    MavCmd::MAV_CMD_NAV_LOITER_UNLIM as u16,
    MavCmd::MAV_CMD_NAV_LOITER_TIME as u16,
    MavCmd::MAV_CMD_NAV_LAND as u16,
    MavCmd::MAV_CMD_NAV_TAKEOFF as u16,
    MavCmd::MAV_CMD_NAV_LOITER_TO_ALT as u16,
    MavCmd::MAV_CMD_NAV_ROI as u16,
    MavCmd::MAV_CMD_NAV_VTOL_TAKEOFF as u16,
    MavCmd::MAV_CMD_NAV_VTOL_LAND as u16,
    MavCmd::MAV_CMD_DO_SET_ROI_LOCATION as u16,
    MavCmd::MAV_CMD_DO_SET_ROI as u16,
    MavCmd::MAV_CMD_CONDITION_GATE as u16,
    MavCmd::MAV_CMD_NAV_FENCE_RETURN_POINT as u16,
    MavCmd::MAV_CMD_NAV_FENCE_POLYGON_VERTEX_INCLUSION as u16,
    MavCmd::MAV_CMD_NAV_FENCE_POLYGON_VERTEX_EXCLUSION as u16,
    MavCmd::MAV_CMD_NAV_FENCE_CIRCLE_INCLUSION as u16,
    MavCmd::MAV_CMD_NAV_FENCE_CIRCLE_EXCLUSION as u16,
    MavCmd::MAV_CMD_NAV_RALLY_POINT as u16,
];
const MISSION_FRAME_CMDS: &[u16] = &[
    MavCmd::MAV_CMD_NAV_RETURN_TO_LAUNCH as u16,
    MavCmd::MAV_CMD_NAV_DELAY as u16,
    MavCmd::MAV_CMD_CONDITION_DELAY as u16,
    MavCmd::MAV_CMD_CONDITION_DISTANCE as u16,
    MavCmd::MAV_CMD_DO_JUMP as u16,
    MavCmd::MAV_CMD_DO_CHANGE_SPEED as u16,
    MavCmd::MAV_CMD_DO_SET_HOME as u16,
    MavCmd::MAV_CMD_DO_SET_ACTUATOR as u16,
    MavCmd::MAV_CMD_DO_LAND_START as u16,
    MavCmd::MAV_CMD_DO_SET_ROI_WPNEXT_OFFSET as u16,
    MavCmd::MAV_CMD_DO_SET_ROI_NONE as u16,
    MavCmd::MAV_CMD_DO_CONTROL_VIDEO as u16,
    MavCmd::MAV_CMD_DO_DIGICAM_CONTROL as u16,
    MavCmd::MAV_CMD_DO_MOUNT_CONFIGURE as u16,
    MavCmd::MAV_CMD_DO_MOUNT_CONTROL as u16,
    MavCmd::MAV_CMD_DO_SET_CAM_TRIGG_DIST as u16,
    MavCmd::MAV_CMD_DO_GRIPPER as u16,
    MavCmd::MAV_CMD_DO_SET_CAM_TRIGG_INTERVAL as u16,
    MavCmd::MAV_CMD_OBLIQUE_SURVEY as u16,
    MavCmd::MAV_CMD_SET_CAMERA_MODE as u16,
    MavCmd::MAV_CMD_SET_CAMERA_FOCUS as u16,
    MavCmd::MAV_CMD_DO_GIMBAL_MANAGER_PITCHYAW as u16,
    MavCmd::MAV_CMD_DO_GIMBAL_MANAGER_CONFIGURE as u16,
    MavCmd::MAV_CMD_IMAGE_START_CAPTURE as u16,
    MavCmd::MAV_CMD_IMAGE_STOP_CAPTURE as u16,
    MavCmd::MAV_CMD_DO_TRIGGER_CONTROL as u16,
    MavCmd::MAV_CMD_VIDEO_START_CAPTURE as u16,
    MavCmd::MAV_CMD_VIDEO_STOP_CAPTURE as u16,
    MavCmd::MAV_CMD_DO_VTOL_TRANSITION as u16,
    MavCmd::MAV_CMD_DO_WINCH as u16,
];
const FENCE_RALLY_CMDS: &[u16] = &[
    MavCmd::MAV_CMD_NAV_FENCE_POLYGON_VERTEX_INCLUSION as u16,
    MavCmd::MAV_CMD_NAV_FENCE_POLYGON_VERTEX_EXCLUSION as u16,
    MavCmd::MAV_CMD_NAV_FENCE_CIRCLE_INCLUSION as u16,
    MavCmd::MAV_CMD_NAV_FENCE_CIRCLE_EXCLUSION as u16,
    MavCmd::MAV_CMD_NAV_RALLY_POINT as u16,
];

/// PX4's `parse_mavlink_mission_item`: the stored item, or the MISSION_ACK error.
pub fn parse_item(it: &RawMissionItem, int_mode: bool) -> Result<Item, MavMissionResult> {
    let f = it.frame;
    let global = f == MavFrame::MAV_FRAME_GLOBAL as u8
        || f == MavFrame::MAV_FRAME_GLOBAL_RELATIVE_ALT as u8
        || (int_mode
            && (f == MavFrame::MAV_FRAME_GLOBAL_INT as u8
                || f == MavFrame::MAV_FRAME_GLOBAL_RELATIVE_ALT_INT as u8));
    let (x, y) = if int_mode {
        (it.x_bits as i32 as f64, it.y_bits as i32 as f64)
    } else {
        (
            f32::from_bits(it.x_bits) as f64,
            f32::from_bits(it.y_bits) as f64,
        )
    };
    let mut item = Item {
        frame: f,
        command: it.command,
        params: it.params,
        x,
        y,
        z: it.z,
        relative: false,
        autocontinue: it.autocontinue != 0,
    };
    if global {
        if int_mode {
            item.x = x * 1e-7;
            item.y = y * 1e-7;
        }
        item.relative = f == MavFrame::MAV_FRAME_GLOBAL_RELATIVE_ALT as u8
            || f == MavFrame::MAV_FRAME_GLOBAL_RELATIVE_ALT_INT as u8;
        if !GLOBAL_NAV.contains(&it.command) {
            return Err(MavMissionResult::MAV_MISSION_UNSUPPORTED);
        }
        if is_roi(it.command) && !matches!(it.params[0] as i32, 0 | 3) {
            return Err(MavMissionResult::MAV_MISSION_INVALID_PARAM1);
        }
        Ok(item)
    } else if f == MavFrame::MAV_FRAME_MISSION as u8 {
        if is_roi(it.command) && !matches!(it.params[0] as i32, 0..=2) {
            return Err(MavMissionResult::MAV_MISSION_INVALID_PARAM1);
        }
        if !MISSION_FRAME_CMDS.contains(&it.command) && !is_roi(it.command) {
            return Err(MavMissionResult::MAV_MISSION_UNSUPPORTED);
        }
        Ok(item)
    } else {
        Err(MavMissionResult::MAV_MISSION_UNSUPPORTED_FRAME)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Idle,
    SendList,
    GetList,
}

fn type_index(t: u8) -> Option<usize> {
    match t {
        0 => Some(0),
        1 => Some(1),
        2 => Some(2),
        _ => None,
    }
}

fn mission_type(i: usize) -> MavMissionType {
    match i {
        1 => MavMissionType::MAV_MISSION_TYPE_FENCE,
        2 => MavMissionType::MAV_MISSION_TYPE_RALLY,
        _ => MavMissionType::MAV_MISSION_TYPE_MISSION,
    }
}

/// What the vehicle needs to know for MISSION_CURRENT's state field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VehicleView {
    /// Mission mode is the vehicle's mode.
    pub in_mission_mode: bool,
}

/// The mission manager: protocol state, stored plans, and the active mission's progress.
#[derive(Debug)]
pub struct MissionManager {
    sysid: u8,
    compid: u8,
    state: State,
    ty: usize,
    int_mode: bool,
    partner: (u8, u8),
    transfer_seq: u16,
    transfer_count: u16,
    transfer_crc: u32,
    transfer_current: i32,
    transfer_items: Vec<Item>,
    in_progress: bool,
    last_recv_us: Option<u64>,
    last_sent_us: Option<u64>,
    /// Stored plans: mission, fence, rally.
    pub plans: [StoredPlan; 3],
    /// Progress through the mission.
    pub progress: MissionResult,
    sent_current: Option<u16>,
    sent_reached: i32,
    reached_repeats: u8,
    next_slow_us: u64,
}

impl MissionManager {
    /// An empty manager for the vehicle `sysid`/`compid`.
    pub fn new(sysid: u8, compid: u8) -> Self {
        MissionManager {
            sysid,
            compid,
            state: State::Idle,
            ty: 0,
            int_mode: true,
            partner: (0, 0),
            transfer_seq: 0,
            transfer_count: 0,
            transfer_crc: 0,
            transfer_current: -1,
            transfer_items: Vec::new(),
            in_progress: false,
            last_recv_us: None,
            last_sent_us: None,
            plans: Default::default(),
            progress: MissionResult {
                current: 0,
                reached: -1,
                finished: false,
                generation: 0,
            },
            sent_current: None,
            sent_reached: -1,
            reached_repeats: REACHED_REPEATS,
            next_slow_us: 0,
        }
    }

    /// The active mission's items.
    pub fn mission(&self) -> &[Item] {
        &self.plans[0].items
    }

    /// Whether a mission PX4 would fly is stored.
    pub fn mission_valid(&self) -> bool {
        !self.plans[0].items.is_empty()
    }

    fn addressed(&self, ts: u8, tc: u8) -> bool {
        ts == self.sysid && (tc == self.compid || tc == 190 || tc == 0)
    }

    fn ack(&self, io: &mut Io, result: MavMissionResult, opaque_id: u32) {
        io.out.push(&mav::MISSION_ACK_DATA {
            target_system: self.partner.0,
            target_component: self.partner.1,
            mavtype: result,
            mission_type: mission_type(self.ty),
            opaque_id,
        });
    }

    fn request(&mut self, now: u64, io: &mut Io, seq: u16) {
        self.last_sent_us = Some(now);
        #[allow(deprecated)]
        if self.int_mode {
            io.out.push(&mav::MISSION_REQUEST_INT_DATA {
                seq,
                target_system: self.partner.0,
                target_component: self.partner.1,
                mission_type: mission_type(self.ty),
            });
        } else {
            io.out.push(&mav::MISSION_REQUEST_DATA {
                seq,
                target_system: self.partner.0,
                target_component: self.partner.1,
                mission_type: mission_type(self.ty),
            });
        }
    }

    fn replace(&mut self, ty: usize, items: Vec<Item>, crc: u32, current: i32) {
        self.plans[ty] = StoredPlan { items, crc };
        if ty == 0 {
            self.progress = MissionResult {
                current: current.max(0) as u16,
                reached: -1,
                finished: false,
                generation: self.progress.generation.wrapping_add(1),
            };
            self.sent_reached = -1;
            self.reached_repeats = REACHED_REPEATS;
        }
    }

    /// MISSION_COUNT from `src`.
    pub fn on_count(&mut self, now: u64, io: &mut Io, src: (u8, u8), m: &mav::MISSION_COUNT_DATA) {
        if !self.addressed(m.target_system, m.target_component) {
            return;
        }
        match self.state {
            State::Idle => {
                self.last_recv_us = Some(now);
                if self.in_progress {
                    self.ack(io, MavMissionResult::MAV_MISSION_ERROR, 0);
                    return;
                }
                let Some(ty) = type_index(m.mission_type as u8) else {
                    self.partner = src;
                    self.ack(io, MavMissionResult::MAV_MISSION_INVALID, 0);
                    return;
                };
                self.ty = ty;
                self.transfer_crc = 0;
                if m.count > MAX_ITEMS {
                    self.ack(io, MavMissionResult::MAV_MISSION_NO_SPACE, 0);
                    return;
                }
                if m.count == 0 {
                    self.replace(ty, Vec::new(), 0, 0);
                    self.ack(io, MavMissionResult::MAV_MISSION_ACCEPTED, 0);
                    return;
                }
                self.in_progress = true;
                self.state = State::GetList;
                self.transfer_seq = 0;
                self.partner = src;
                self.transfer_count = m.count;
                self.transfer_current = -1;
                self.transfer_items = Vec::with_capacity(m.count.min(1024) as usize);
            }
            State::GetList => {
                self.last_recv_us = Some(now);
                if self.transfer_seq != 0 {
                    io.critical(now, "mavlink", "WPM: REJ. CMD: Busy\t");
                    self.ack(io, MavMissionResult::MAV_MISSION_ERROR, 0);
                    return;
                }
            }
            State::SendList => {
                io.critical(now, "mavlink", "WPM: IGN MISSION_COUNT: Busy\t");
                self.ack(io, MavMissionResult::MAV_MISSION_ERROR, 0);
                return;
            }
        }
        self.request(now, io, self.transfer_seq);
    }

    /// MISSION_ITEM or MISSION_ITEM_INT; returns true when the active mission was replaced.
    pub fn on_item(&mut self, now: u64, io: &mut Io, it: &RawMissionItem) -> bool {
        self.int_mode = it.is_int;
        if !self.addressed(it.target_system, it.target_component) {
            return false;
        }
        if type_index(it.mission_type) != Some(self.ty) {
            self.ack(io, MavMissionResult::MAV_MISSION_ERROR, 0);
            return false;
        }
        match self.state {
            State::GetList => {
                self.last_recv_us = Some(now);
                if it.seq != self.transfer_seq {
                    return false;
                }
            }
            State::Idle => {
                if self.transfer_seq == it.seq.wrapping_add(1) {
                    self.ack(
                        io,
                        MavMissionResult::MAV_MISSION_ACCEPTED,
                        self.transfer_crc,
                    );
                } else {
                    io.critical(now, "mavlink", "IGN MISSION_ITEM: No transfer\t");
                    self.ack(io, MavMissionResult::MAV_MISSION_ERROR, 0);
                }
                return false;
            }
            State::SendList => {
                io.critical(now, "mavlink", "IGN MISSION_ITEM: Busy\t");
                self.ack(io, MavMissionResult::MAV_MISSION_ERROR, 0);
                return false;
            }
        }
        let item = match parse_item(it, self.int_mode) {
            Ok(i) => i,
            Err(e) => {
                io.critical(now, "mavlink", "IGN MISSION_ITEM: Invalid item\t");
                self.ack(io, e, 0);
                self.state = State::Idle;
                self.in_progress = false;
                return false;
            }
        };
        self.transfer_crc = crc_for_item(it, self.transfer_crc);
        let wrong_type = match self.ty {
            0 => FENCE_RALLY_CMDS.contains(&item.command),
            // PX4's feasibility check of a polygon vertex: its polygon has at least 3
            // ("Fence: too few vertices", MAV_MISSION_ERROR).
            1 => {
                matches!(
                    item.cmd(),
                    Some(
                        MavCmd::MAV_CMD_NAV_FENCE_POLYGON_VERTEX_INCLUSION
                            | MavCmd::MAV_CMD_NAV_FENCE_POLYGON_VERTEX_EXCLUSION
                    )
                ) && ((item.params[0] + 0.5) as i32) < 3
            }
            _ => false,
        };
        if wrong_type {
            self.ack(io, MavMissionResult::MAV_MISSION_ERROR, 0);
            self.state = State::Idle;
            self.in_progress = false;
            return false;
        }
        if it.current != 0 {
            self.transfer_current = it.seq as i32;
        }
        self.transfer_items.push(item);
        self.transfer_seq = it.seq + 1;
        if self.transfer_seq < self.transfer_count {
            self.request(now, io, self.transfer_seq);
            return false;
        }
        // Got them all.
        let ty = self.ty;
        let changed = self.transfer_crc != self.plans[ty].crc;
        if changed {
            let items = std::mem::take(&mut self.transfer_items);
            self.replace(ty, items, self.transfer_crc, self.transfer_current);
        } else {
            self.transfer_items.clear();
        }
        self.state = State::Idle;
        self.ack(
            io,
            MavMissionResult::MAV_MISSION_ACCEPTED,
            self.transfer_crc,
        );
        self.in_progress = false;
        changed && ty == 0
    }

    /// MISSION_REQUEST_LIST: start a download.
    pub fn on_request_list(
        &mut self,
        now: u64,
        io: &mut Io,
        src: (u8, u8),
        m: &mav::MISSION_REQUEST_LIST_DATA,
    ) {
        if !self.addressed(m.target_system, m.target_component) {
            return;
        }
        if self.transfer_seq == self.current_count() {
            self.state = State::Idle;
        }
        let Some(ty) = type_index(m.mission_type as u8) else {
            return;
        };
        if self.state == State::Idle || (self.state == State::SendList && self.ty == ty) {
            self.last_recv_us = Some(now);
            self.state = State::SendList;
            self.ty = ty;
            self.transfer_seq = 0;
            self.transfer_count = self.plans[ty].items.len() as u16;
            self.partner = src;
            io.out.push(&mav::MISSION_COUNT_DATA {
                count: self.transfer_count,
                target_system: src.0,
                target_component: src.1,
                mission_type: mission_type(ty),
                opaque_id: self.plans[ty].crc,
            });
            self.last_sent_us = Some(now);
        } else {
            io.info(
                now,
                "mavlink",
                "Mission download request ignored, already active\t",
            );
        }
    }

    fn current_count(&self) -> u16 {
        self.plans[self.ty].items.len() as u16
    }

    /// MISSION_REQUEST (`is_int` false) or MISSION_REQUEST_INT during a download.
    pub fn on_request(
        &mut self,
        now: u64,
        io: &mut Io,
        src: (u8, u8),
        (seq, ts, tc, mtype): (u16, u8, u8, u8),
        is_int: bool,
    ) {
        self.int_mode = is_int;
        if !self.addressed(ts, tc) {
            return;
        }
        if src != self.partner {
            io.critical(now, "mavlink", "WPM: REJ. CMD: partner id mismatch\t");
            return;
        }
        match self.state {
            State::SendList => {}
            State::Idle => return,
            State::GetList => {
                io.critical(now, "mavlink", "WPM: REJ. CMD: Busy\t");
                return;
            }
        }
        if type_index(mtype) != Some(self.ty) {
            return;
        }
        self.last_recv_us = Some(now);
        if seq == self.transfer_seq && self.transfer_seq < self.transfer_count {
            self.transfer_seq += 1;
        } else if seq.wrapping_add(1) != self.transfer_seq {
            self.state = State::Idle;
            self.ack(io, MavMissionResult::MAV_MISSION_ERROR, 0);
            io.critical(now, "mavlink", "WPM: REJ. CMD: Req. WP was unexpected\t");
            return;
        }
        match self.plans[self.ty].items.get(seq as usize) {
            Some(item) => self.send_item(now, io, seq, *item),
            None => {
                self.state = State::Idle;
                self.ack(io, MavMissionResult::MAV_MISSION_ERROR, 0);
                io.critical(now, "mavlink", "WPM: REJ. CMD: Req. WP was unexpected\t");
            }
        }
    }

    fn send_item(&mut self, now: u64, io: &mut Io, seq: u16, it: Item) {
        self.last_sent_us = Some(now);
        let current = (self.ty == 0 && self.progress.current == seq) as u8;
        let command = cmd_or_waypoint(it.command);
        let global = it.has_position();
        // PX4's `format_mavlink_mission_item` stores only "relative or not": a global item goes
        // back as GLOBAL(_RELATIVE_ALT)_INT (5/6) on the *_INT protocol, as GLOBAL(_RELATIVE_ALT)
        // (0/3) on the legacy one, whatever frame it was uploaded with (docs/px4-wire.md
        // §Mission upload: 3 -> 6).
        // A fence point is stored without "relative" (nor autocontinue): every global one goes
        // back as GLOBAL(_INT), autocontinue 0. Global items go back with param1..4 zero but for
        // the ones their command keeps (a fence's vertex count or radius; a rally point none).
        let relative = it.relative && self.ty != 1;
        let autocontinue = it.autocontinue && self.ty != 1;
        let mut params = it.params;
        if global && self.ty != 0 {
            let keep = if self.ty == 1 { params[0] } else { 0.0 };
            params = [keep, 0.0, 0.0, 0.0];
        }
        let it = Item {
            relative,
            autocontinue,
            params,
            ..it
        };
        let frame = match (global, self.int_mode, it.relative) {
            (false, _, _) => num_traits_frame(it.frame),
            (true, true, true) => MavFrame::MAV_FRAME_GLOBAL_RELATIVE_ALT_INT,
            (true, true, false) => MavFrame::MAV_FRAME_GLOBAL_INT,
            (true, false, true) => MavFrame::MAV_FRAME_GLOBAL_RELATIVE_ALT,
            (true, false, false) => MavFrame::MAV_FRAME_GLOBAL,
        };
        #[allow(deprecated)]
        if self.int_mode {
            let (x, y) = if global {
                ((it.x * 1e7).round() as i32, (it.y * 1e7).round() as i32)
            } else {
                (it.x.round() as i32, it.y.round() as i32)
            };
            io.out.push(&mav::MISSION_ITEM_INT_DATA {
                param1: it.params[0],
                param2: it.params[1],
                param3: it.params[2],
                param4: it.params[3],
                x,
                y,
                z: it.z,
                seq,
                command,
                target_system: self.partner.0,
                target_component: self.partner.1,
                frame,
                current,
                autocontinue: it.autocontinue as u8,
                mission_type: mission_type(self.ty),
            });
        } else {
            io.out.push(&mav::MISSION_ITEM_DATA {
                param1: it.params[0],
                param2: it.params[1],
                param3: it.params[2],
                param4: it.params[3],
                x: it.x as f32,
                y: it.y as f32,
                z: it.z,
                seq,
                command,
                target_system: self.partner.0,
                target_component: self.partner.1,
                frame,
                current,
                autocontinue: it.autocontinue as u8,
                mission_type: mission_type(self.ty),
            });
        }
    }

    /// MISSION_ACK from the partner (end of a download).
    pub fn on_ack(&mut self, now: u64, io: &mut Io, src: (u8, u8), m: &mav::MISSION_ACK_DATA) {
        if !self.addressed(m.target_system, m.target_component) {
            return;
        }
        if src != self.partner {
            io.critical(now, "mavlink", "REJ. WP CMD: partner id mismatch\t");
            return;
        }
        match self.state {
            State::SendList if type_index(m.mission_type as u8) == Some(self.ty) => {
                self.last_recv_us = Some(now);
                self.state = State::Idle;
            }
            State::GetList => {
                if m.mavtype == MavMissionResult::MAV_MISSION_UNSUPPORTED {
                    self.int_mode = !self.int_mode;
                    self.request(now, io, self.transfer_seq);
                } else if m.mavtype == MavMissionResult::MAV_MISSION_OPERATION_CANCELLED {
                    self.state = State::Idle;
                    self.in_progress = false;
                }
            }
            _ => {}
        }
    }

    /// MISSION_SET_CURRENT.
    pub fn on_set_current(&mut self, now: u64, io: &mut Io, m: &mav::MISSION_SET_CURRENT_DATA) {
        if !self.addressed(m.target_system, m.target_component) {
            return;
        }
        if self.state != State::Idle {
            io.critical(now, "mavlink", "WPM: IGN WP CURR CMD: Busy\t");
            return;
        }
        self.last_recv_us = Some(now);
        if (m.seq as usize) < self.plans[0].items.len() {
            self.set_current(m.seq);
        } else {
            io.critical(now, "mavlink", "WPM: WP CURR CMD: Not in list\t");
        }
    }

    /// Make `seq` the current item (navigator and MISSION_SET_CURRENT); clears "finished".
    pub fn set_current(&mut self, seq: u16) {
        self.progress.current = seq;
        self.progress.finished = false;
        if seq == 0 {
            // A restart from the top: nothing of this run reached yet (NOT_STARTED).
            self.progress.reached = -1;
            self.sent_reached = -1;
        }
        // A new start: force an on-change MISSION_CURRENT even for the same seq.
        self.sent_current = None;
    }

    /// MISSION_CLEAR_ALL.
    pub fn on_clear_all(
        &mut self,
        now: u64,
        io: &mut Io,
        src: (u8, u8),
        m: &mav::MISSION_CLEAR_ALL_DATA,
    ) -> bool {
        if !self.addressed(m.target_system, m.target_component) {
            return false;
        }
        if self.state != State::Idle {
            io.critical(now, "mavlink", "WPM: IGN CLEAR CMD: Busy\t");
            return false;
        }
        self.last_recv_us = Some(now);
        let t = m.mission_type as u8;
        let cleared_mission = match t {
            0..=2 => {
                self.ty = t as usize;
                self.replace(t as usize, Vec::new(), 0, 0);
                t == 0
            }
            255 => {
                for i in 0..3 {
                    self.replace(i, Vec::new(), 0, 0);
                }
                self.ty = 0;
                true
            }
            _ => false,
        };
        let _ = src;
        self.ack(io, MavMissionResult::MAV_MISSION_ACCEPTED, 0);
        cleared_mission
    }

    fn send_current(&self, io: &mut Io, view: VehicleView) {
        let count = self.plans[0].items.len() as u16;
        let state = if count == 0 {
            MissionState::MISSION_STATE_NO_MISSION
        } else if self.progress.finished {
            MissionState::MISSION_STATE_COMPLETE
        } else if view.in_mission_mode {
            MissionState::MISSION_STATE_ACTIVE
        } else if self.progress.reached >= 0 || self.progress.current > 0 {
            MissionState::MISSION_STATE_PAUSED
        } else {
            MissionState::MISSION_STATE_NOT_STARTED
        };
        io.out.push(&mav::MISSION_CURRENT_DATA {
            seq: self.progress.current,
            total: if count > 0 { count } else { u16::MAX },
            mission_state: state,
            mission_mode: view.in_mission_mode as u8,
            mission_id: self.plans[0].crc,
            fence_id: self.plans[1].crc,
            rally_points_id: self.plans[2].crc,
        });
    }

    /// Periodic work: MISSION_CURRENT and MISSION_ITEM_REACHED on change (call every tick);
    /// with `slow` (the ~10 ms mavlink-loop cadence) also retries, timeouts, the 1 Hz
    /// MISSION_CURRENT and the MISSION_ITEM_REACHED repeats.
    pub fn update(&mut self, now: u64, io: &mut Io, view: VehicleView, slow: bool) {
        {
            let mut sent_current_now = false;
            if self.sent_current != Some(self.progress.current) {
                self.sent_current = Some(self.progress.current);
                self.send_current(io, view);
                sent_current_now = true;
            }
            if self.progress.reached != self.sent_reached {
                self.sent_reached = self.progress.reached;
                self.reached_repeats = 0;
                if self.progress.reached >= 0 {
                    io.out.push(&mav::MISSION_ITEM_REACHED_DATA {
                        seq: self.progress.reached as u16,
                    });
                }
            } else if slow && now >= self.next_slow_us {
                self.next_slow_us = now + 1_000_000;
                if !sent_current_now {
                    self.send_current(io, view);
                }
                if !self.plans[0].items.is_empty()
                    && self.progress.reached >= 0
                    && self.reached_repeats < REACHED_REPEATS
                {
                    io.out.push(&mav::MISSION_ITEM_REACHED_DATA {
                        seq: self.progress.reached as u16,
                    });
                    self.reached_repeats += 1;
                }
            }
        }
        if !slow {
            return;
        }
        let since = |t: Option<u64>| t.map(|t| now.saturating_sub(t));
        if self.state == State::GetList && since(self.last_sent_us).is_some_and(|d| d > RETRY_US) {
            self.request(now, io, self.transfer_seq);
        } else if self.state != State::Idle
            && since(self.last_recv_us).is_some_and(|d| d > PROTOCOL_TIMEOUT_US)
        {
            io.critical(now, "mavlink", "Operation timeout\t");
            self.state = State::Idle;
            self.in_progress = false;
        } else if self.state == State::Idle {
            self.last_sent_us = None;
            self.last_recv_us = None;
        }
    }
}

fn num_traits_frame(f: u8) -> MavFrame {
    <MavFrame as num_traits::FromPrimitive>::from_u8(f).unwrap_or(MavFrame::MAV_FRAME_GLOBAL)
}

/// A command number as the enum an outgoing field needs: one the dialect lacks goes out as
/// NAV_WAYPOINT (the enum cannot carry it).
pub(crate) fn cmd_or_waypoint(c: u16) -> MavCmd {
    <MavCmd as num_traits::FromPrimitive>::from_u16(c).unwrap_or(MavCmd::MAV_CMD_NAV_WAYPOINT)
}
