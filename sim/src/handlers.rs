//! Inbound messages other than commands: heartbeats, manual control, offboard setpoints,
//! parameters, the mission protocol and the log protocol.
#![allow(deprecated)] // PX4 still speaks SET_MODE, MISSION_SET_CURRENT and the *_INT frames.

use super::navigator::OffboardSp;
use super::params::SetError;
use super::vehicle::{Vehicle, COMPID, STALLED_CMD_CAP};
use super::wire::{CommandIn, Payload, RawMissionItem};
use mavlink::dialects::common as mav;
use mavlink::{MavlinkVersion, MessageData};
use nexus_core::frame::{Header, Version};
use nexus_core::RcSticks;

fn name16(id: &[u8]) -> String {
    let end = id.iter().position(|&b| b == 0).unwrap_or(id.len());
    String::from_utf8_lossy(&id[..end]).into_owned()
}

impl Vehicle {
    /// Handle one checked frame from `h.sysid`/`h.compid`.
    pub(super) fn handle_frame(&mut self, h: &Header, payload: &[u8]) {
        if h.sysid == self.sysid {
            return;
        }
        let v = match h.version {
            Version::V1 => MavlinkVersion::V1,
            Version::V2 => MavlinkVersion::V2,
        };
        let src = (h.sysid, h.compid);
        let now = self.now_us;
        match h.msgid {
            mav::HEARTBEAT_DATA::ID => {
                // A GCS or an onboard controller keeps STATUSTEXT flowing.
                let ty = Payload(payload).u8(4);
                if ty == mav::MavType::MAV_TYPE_GCS as u8
                    || ty == mav::MavType::MAV_TYPE_ONBOARD_CONTROLLER as u8
                {
                    self.gcs_heartbeat_us = Some(now);
                }
                // Commander's data link: a ground station's heartbeats only.
                if ty == mav::MavType::MAV_TYPE_GCS as u8 {
                    self.datalink.last_gcs_us = Some(now);
                }
            }
            mav::COMMAND_LONG_DATA::ID | mav::COMMAND_INT_DATA::ID => {
                let cmd = if h.msgid == mav::COMMAND_LONG_DATA::ID {
                    CommandIn::long(payload)
                } else {
                    CommandIn::int(payload)
                };
                if self.stalled {
                    if self.stalled_cmds.len() < STALLED_CMD_CAP {
                        self.stalled_cmds.push_back((cmd, src));
                    }
                } else {
                    self.on_command(cmd, src);
                }
            }
            mav::SET_MODE_DATA::ID => {
                if let Ok(m) = mav::SET_MODE_DATA::deser(v, payload) {
                    if m.target_system == self.sysid && !self.stalled {
                        let main = ((m.custom_mode >> 16) & 0xff) as f32;
                        let sub = ((m.custom_mode >> 24) & 0xff) as f32;
                        self.set_mode_from(m.base_mode.bits() as f32, main, sub, src);
                    }
                }
            }
            mav::MANUAL_CONTROL_DATA::ID => {
                if let Ok(m) = mav::MANUAL_CONTROL_DATA::deser(v, payload) {
                    if m.target == self.sysid {
                        self.manual.last_us = Some(now);
                        self.manual.sticks = RcSticks {
                            pitch: m.x as f32 / 1000.0,
                            roll: m.y as f32 / 1000.0,
                            throttle: m.z as f32 / 1000.0,
                            yaw: m.r as f32 / 1000.0,
                        }
                        .clamped();
                    }
                }
            }
            mav::SET_POSITION_TARGET_LOCAL_NED_DATA::ID => self.on_position_target(payload),
            mav::TIMESYNC_DATA::ID => {
                // A request (tc1 0) is answered with our clock in tc1 and its ts1, as
                // PX4's mavlink_timesync does.
                if let Ok(m) = mav::TIMESYNC_DATA::deser(v, payload) {
                    if m.tc1 == 0 && (m.target_system == 0 || m.target_system == self.sysid) {
                        self.io.out.push(&mav::TIMESYNC_DATA {
                            tc1: now as i64 * 1000,
                            ts1: m.ts1,
                            target_system: src.0,
                            target_component: src.1,
                        });
                    }
                }
            }
            mav::PARAM_REQUEST_READ_DATA::ID => self.on_param_read(v, payload, src),
            mav::PARAM_REQUEST_LIST_DATA::ID => {
                if let Ok(m) = mav::PARAM_REQUEST_LIST_DATA::deser(v, payload) {
                    if m.target_system == self.sysid {
                        // PX4: the checksum first, unless a list is already going out (a
                        // restart skips it).
                        self.streams.param_hash_due = self.streams.param_list.is_none();
                        self.streams.param_list = Some(0);
                    }
                }
            }
            mav::PARAM_SET_DATA::ID => self.on_param_set(v, payload, src),
            mav::MISSION_COUNT_DATA::ID
            | mav::MISSION_ITEM_DATA::ID
            | mav::MISSION_ITEM_INT_DATA::ID
            | mav::MISSION_REQUEST_DATA::ID
            | mav::MISSION_REQUEST_INT_DATA::ID
            | mav::MISSION_REQUEST_LIST_DATA::ID
            | mav::MISSION_ACK_DATA::ID
            | mav::MISSION_SET_CURRENT_DATA::ID
            | mav::MISSION_CLEAR_ALL_DATA::ID => self.on_mission_frame(h, v, payload, src),
            // PX4's log handler reads these whatever their target.
            mav::LOG_REQUEST_LIST_DATA::ID => {
                if let Ok(m) = mav::LOG_REQUEST_LIST_DATA::deser(v, payload) {
                    self.logger.on_request_list(&m);
                }
            }
            mav::LOG_REQUEST_DATA_DATA::ID => {
                if let Ok(m) = mav::LOG_REQUEST_DATA_DATA::deser(v, payload) {
                    self.logger.on_request_data(&m);
                }
            }
            mav::LOG_REQUEST_END_DATA::ID => self.logger.on_request_end(),
            mav::REQUEST_EVENT_DATA::ID => {
                if let Ok(m) = mav::REQUEST_EVENT_DATA::deser(v, payload) {
                    if m.target_system == self.sysid
                        && (m.target_component == COMPID || m.target_component == 0)
                    {
                        self.io
                            .request_events(m.first_sequence, m.last_sequence, src);
                    }
                }
            }
            _ => {}
        }
    }

    /// PARAM_REQUEST_READ: one parameter by index or name, else PARAM_ERROR.
    fn on_param_read(&mut self, v: MavlinkVersion, payload: &[u8], src: (u8, u8)) {
        if let Ok(m) = mav::PARAM_REQUEST_READ_DATA::deser(v, payload) {
            if m.target_system != self.sysid {
                return;
            }
            if m.param_index >= 0 {
                if (m.param_index as u16) < self.params.count() {
                    self.send_param(m.param_index as usize);
                }
            } else if name16(&m.param_id[..]) == super::streams::HASH_PARAM {
                self.send_param_hash();
            } else {
                let name = name16(&m.param_id[..]);
                match self.params.index_of(&name) {
                    Some(i) => self.send_param(i),
                    None => self.param_error(
                        &m.param_id[..],
                        src,
                        mav::MavParamError::MAV_PARAM_ERROR_DOES_NOT_EXIST,
                    ),
                }
            }
        }
    }

    /// PARAM_SET: the new value echoed, or PX4's text and PARAM_ERROR for a bad one.
    fn on_param_set(&mut self, v: MavlinkVersion, payload: &[u8], src: (u8, u8)) {
        if let Ok(m) = mav::PARAM_SET_DATA::deser(v, payload) {
            if m.target_system != self.sysid {
                return;
            }
            let name = name16(&m.param_id[..]);
            if name == super::streams::HASH_PARAM {
                // PX4: setting the checksum stops the list (a ground station that has the list
                // cached), and it is read-only.
                if self.params.i(super::params::P::MAV_HASH_CHK_EN) != 0 {
                    self.streams.param_list = None;
                    self.streams.param_hash_due = false;
                }
                self.param_error(
                    &m.param_id[..],
                    src,
                    mav::MavParamError::MAV_PARAM_ERROR_READ_ONLY,
                );
                return;
            }
            match self
                .params
                .set_from_wire(&name, m.param_value, m.param_type)
            {
                Ok(i) => self.send_param(i),
                Err(SetError::Unknown) => self.param_error(
                    &m.param_id[..],
                    src,
                    mav::MavParamError::MAV_PARAM_ERROR_DOES_NOT_EXIST,
                ),
                Err(SetError::NotFinite) => {
                    self.io
                        .print(format!("ERROR [mavlink] param value not finite: {name}"));
                }
                Err(SetError::TypeMismatch) => {
                    self.io.print(format!(
                        "ERROR [mavlink] param types mismatch param: {name}"
                    ));
                    self.param_error(
                        &m.param_id[..],
                        src,
                        mav::MavParamError::MAV_PARAM_ERROR_TYPE_MISMATCH,
                    );
                }
            }
        }
    }

    /// The mission protocol's messages, handed to the mission transfer.
    fn on_mission_frame(&mut self, h: &Header, v: MavlinkVersion, payload: &[u8], src: (u8, u8)) {
        let now = self.now_us;
        match h.msgid {
            mav::MISSION_COUNT_DATA::ID => {
                if let Ok(m) = mav::MISSION_COUNT_DATA::deser(v, payload) {
                    self.mission.on_count(now, &mut self.io, src, &m);
                }
            }
            mav::MISSION_ITEM_DATA::ID | mav::MISSION_ITEM_INT_DATA::ID => {
                let it = RawMissionItem::decode(payload, h.msgid == mav::MISSION_ITEM_INT_DATA::ID);
                self.mission.on_item(now, &mut self.io, &it);
            }
            mav::MISSION_REQUEST_DATA::ID | mav::MISSION_REQUEST_INT_DATA::ID => {
                let p = Payload(payload);
                // MISSION_REQUEST and _INT share a layout: seq, target sys/comp, mission_type.
                let req = (p.u16(0), p.u8(2), p.u8(3), p.u8(4));
                self.mission.on_request(
                    now,
                    &mut self.io,
                    src,
                    req,
                    h.msgid == mav::MISSION_REQUEST_INT_DATA::ID,
                );
            }
            mav::MISSION_REQUEST_LIST_DATA::ID => {
                if let Ok(m) = mav::MISSION_REQUEST_LIST_DATA::deser(v, payload) {
                    self.mission.on_request_list(now, &mut self.io, src, &m);
                }
            }
            mav::MISSION_ACK_DATA::ID => {
                if let Ok(m) = mav::MISSION_ACK_DATA::deser(v, payload) {
                    self.mission.on_ack(now, &mut self.io, src, &m);
                }
            }
            mav::MISSION_SET_CURRENT_DATA::ID => {
                if let Ok(m) = mav::MISSION_SET_CURRENT_DATA::deser(v, payload) {
                    self.mission.on_set_current(now, &mut self.io, &m);
                }
            }
            mav::MISSION_CLEAR_ALL_DATA::ID => {
                if let Ok(m) = mav::MISSION_CLEAR_ALL_DATA::deser(v, payload) {
                    self.mission.on_clear_all(now, &mut self.io, src, &m);
                }
            }
            _ => {}
        }
    }

    /// PARAM_ERROR as PX4 answers a read or set it cannot serve (at once, no text).
    fn param_error(&mut self, id: &[u8], to: (u8, u8), error: mav::MavParamError) {
        let mut param_id = [0u8; 16];
        let n = id.len().min(16);
        param_id[..n].copy_from_slice(&id[..n]);
        self.io.out.push(&mav::PARAM_ERROR_DATA {
            param_index: -1,
            target_system: to.0,
            target_component: to.1,
            param_id: param_id.into(),
            error,
        });
    }

    fn on_position_target(&mut self, payload: &[u8]) {
        let p = Payload(payload);
        // SET_POSITION_TARGET_LOCAL_NED layout: time_boot_ms u32, x y z vx vy vz afx afy afz
        // yaw yaw_rate (f32), type_mask u16 @48, target sys @50, comp @51, frame @52.
        if p.u8(50) != self.sysid {
            return;
        }
        let frame = p.u8(52);
        let mask = p.u16(48);
        let f = |i: usize| p.f32(4 + 4 * i);
        let now = self.now_us;
        let pos_ok = mask & 0b111 == 0;
        let vel_ok = mask & 0b111000 == 0;
        let yaw_ok = mask & 0x400 == 0;
        let rate_ok = mask & 0x800 == 0;
        let (sy, cy) = self.body.yaw_rad.sin_cos();
        let rotate = |v: [f32; 3]| [v[0] * cy - v[1] * sy, v[0] * sy + v[1] * cy, v[2]];
        let (pos, vel) = match frame {
            1 => (
                pos_ok.then(|| [f(0), f(1), f(2)]),
                vel_ok.then(|| [f(3), f(4), f(5)]),
            ),
            7 => (
                pos_ok.then(|| {
                    let b = self.body.pos_ned_m;
                    [b[0] + f(0), b[1] + f(1), b[2] + f(2)]
                }),
                vel_ok.then(|| [f(3), f(4), f(5)]),
            ),
            8 | 9 => (
                pos_ok.then(|| {
                    let d = rotate([f(0), f(1), f(2)]);
                    let b = self.body.pos_ned_m;
                    [b[0] + d[0], b[1] + d[1], b[2] + d[2]]
                }),
                vel_ok.then(|| rotate([f(3), f(4), f(5)])),
            ),
            _ => return,
        };
        if pos.is_none() && vel.is_none() {
            return;
        }
        let gap_ok = self
            .offboard
            .last_us
            .is_some_and(|t| now.saturating_sub(t) <= super::vehicle::OFFBOARD_MAX_GAP_US);
        if !gap_ok {
            self.offboard.since_us = Some(now);
        }
        self.offboard.last_us = Some(now);
        self.offboard.sp = OffboardSp {
            pos: pos.filter(|v| v.iter().all(|x| x.is_finite())),
            vel: vel.filter(|v| v.iter().all(|x| x.is_finite())),
            yaw: (yaw_ok && f(9).is_finite()).then(|| f(9)),
            yaw_rate: (rate_ok && f(10).is_finite()).then(|| f(10)),
        };
    }
}
