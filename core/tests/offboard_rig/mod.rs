//! Test rig for the offboard machine: a scripted PX4 that behaves as docs/px4-wire.md says
//! (1 Hz heartbeat that lags acks, two acks for DO_SET_MODE, "Arming denied" in two chunks,
//! Takeoff→Hold hand-over, disarm 2 s after landing, the mission protocol with re-requests,
//! MISSION_ITEM_REACHED repeated ten times, MISSION_CURRENT stuck at the last item), and a
//! driver loop with a virtual wall clock and a sim clock running at `speed` × wall.
//!
//! Everything the machine sends is decoded from its bytes (Decoder + the mavlink crate's
//! parser) and logged with both clocks, so tests assert on the wire.
#![allow(dead_code, deprecated)] // legacy MISSION_REQUEST / MISSION_SET_CURRENT are PX4's

use mavlink::{MavlinkVersion, Message};
use nexus_core::frame::{Decoder, Encoder, MAX_FRAME_LEN};
use nexus_core::mav;
use nexus_core::mission::{MissionItem, NAV_LAND};
use nexus_core::msg::{Frame, Msg};
use nexus_core::offboard::{Offboard, OffboardConfig, OffboardEvent};
use nexus_core::telemetry::{LinkIds, Telemetry};
use nexus_core::{Instant, Mode};
use num_traits::FromPrimitive;

pub const M_PER_DEG: f64 = std::f64::consts::PI / 180.0 * 6_371_000.0;
pub const HOME_LAT: f64 = 47.397742;
pub const HOME_LON: f64 = 8.545594;
pub const HOME_AMSL_M: f64 = 488.0;
pub const ARMING_DENIED: &str = "Arming denied: Resolve system health failures first\t";

/// One frame the machine sent, decoded.
#[derive(Debug, Clone)]
pub struct Sent {
    pub wall_ms: u64,
    pub sim_ms: u64,
    pub msg: mav::MavMessage,
    pub bytes: Vec<u8>,
}

/// A scripted PX4 (system 1, autopilot component 1).
pub struct FakePx4 {
    pub mode: Mode,
    pub armed: bool,
    pub landed: mav::MavLandedState,
    /// North, east, up of the vehicle from home, m.
    pub pos: (f64, f64, f64),
    /// PX4's home-altitude re-estimation: added to `relative_alt` (not to `alt`), m.
    pub home_error_m: f64,
    pub yaw_rad: f32,
    /// First heartbeat (and any telemetry), sim ms.
    pub boot_ms: u64,
    /// GLOBAL_POSITION_INT starts here.
    pub pos_at_ms: u64,
    /// Prearm checks pass (SYS_STATUS bit, system_status standby) from here.
    pub ready_at_ms: u64,
    /// Arming is accepted from here (refused with the chunked text before).
    pub arm_ok_at_ms: u64,
    /// Emit SYS_STATUS at 5 Hz.
    pub sys_status: bool,
    /// Send the refusal text before the ack (else after).
    pub text_before_ack: bool,
    /// Send a first, always-ACCEPTED ack for DO_SET_MODE (the mavlink module's).
    pub two_mode_acks: bool,
    /// Modes DO_SET_MODE is refused for (TEMPORARILY_REJECTED and a text).
    pub refuse_modes: Vec<Mode>,
    /// Ask for items with legacy MISSION_REQUEST.
    pub legacy_requests: bool,
    /// Never answer MISSION_COUNT.
    pub ignore_mission_count: bool,
    /// Stop asking after this many item requests (upload stalls).
    pub stall_after_requests: Option<usize>,
    /// Answer a completed upload with this result instead of ACCEPTED.
    pub reject_mission: Option<mav::MavMissionResult>,
    pub takeoff_alt_m: f32,
    pub params: Vec<(String, u32, mav::MavParamType)>,
    pub mission: Vec<MissionItem>,
    pub mission_current: u16,
    pub mission_state: mav::MissionState,
    pub upload: Option<Upload>,
    pub reach_repeat: Option<(u16, u8, u64)>,
    pub item_since: Option<u64>,
    pub takeoff_detect_at: Option<u64>,
    pub ground_at: Option<u64>,
    pub gesture_since: Option<u64>,
    pub reposition: Option<(f64, f64, f64)>,
    pub text_id: u16,
    pub next_hb: u64,
    pub next_fast: u64,
    pub next_pos: u64,
    pub next_sys: u64,
    pub next_slow: u64,
    pub last_ms: u64,
    pub mode_acks: Vec<(Mode, u8)>,
    /// Modes PX4 accepts and leaves at once for another (e.g. Mission over a finished mission).
    pub bounce_modes: Vec<(Mode, Mode)>,
    /// PARAM_SETs lost on the way (unanswered) before the next is answered.
    pub lose_param_sets: u8,
    /// PARAM_SETs received (lost ones included).
    pub param_sets_seen: usize,
    /// Names PX4 answers with PARAM_ERROR and this error (unknown name, wrong type).
    pub param_errors: Vec<(String, mav::MavParamError)>,
    /// Echo these bits instead of the value set (a vehicle that stored something else).
    pub param_echo_bits: Option<u32>,
    /// HEARTBEAT.type: the airframe (PX4's SIH quadrotor by default).
    pub mavtype: mav::MavType,
}

pub struct Upload {
    pub count: u16,
    pub items: Vec<Option<MissionItem>>,
    pub next: u16,
    pub last_req_ms: u64,
    pub requests: usize,
}

fn ms(sim: u64) -> u32 {
    sim as u32
}

impl Default for FakePx4 {
    fn default() -> Self {
        FakePx4 {
            mode: Mode::Hold,
            armed: false,
            landed: mav::MavLandedState::MAV_LANDED_STATE_ON_GROUND,
            pos: (0.0, 0.0, 0.0),
            home_error_m: 0.0,
            yaw_rad: 0.0,
            boot_ms: 1_500,
            pos_at_ms: 3_000,
            ready_at_ms: 4_500,
            arm_ok_at_ms: 4_500,
            sys_status: true,
            text_before_ack: true,
            two_mode_acks: true,
            refuse_modes: Vec::new(),
            legacy_requests: false,
            ignore_mission_count: false,
            stall_after_requests: None,
            reject_mission: None,
            takeoff_alt_m: 2.5,
            params: Vec::new(),
            mission: Vec::new(),
            mission_current: 0,
            mission_state: mav::MissionState::MISSION_STATE_NO_MISSION,
            upload: None,
            reach_repeat: None,
            item_since: None,
            takeoff_detect_at: None,
            ground_at: None,
            gesture_since: None,
            reposition: None,
            text_id: 0,
            next_hb: 0,
            next_fast: 0,
            next_pos: 0,
            next_sys: 0,
            next_slow: 0,
            last_ms: 0,
            mode_acks: Vec::new(),
            bounce_modes: Vec::new(),
            lose_param_sets: 0,
            param_sets_seen: 0,
            param_errors: Vec::new(),
            param_echo_bits: None,
            mavtype: mav::MavType::MAV_TYPE_QUADROTOR,
        }
    }
}

pub fn text_field(s: &str) -> mavlink::types::CharArray<50> {
    let mut f = [0u8; 50];
    f[..s.len()].copy_from_slice(s.as_bytes());
    mavlink::types::CharArray::new(f)
}

pub fn statustext(severity: mav::MavSeverity, chunk: &str, id: u16, chunk_seq: u8) -> Msg {
    Msg::Statustext(mav::STATUSTEXT_DATA {
        severity,
        text: text_field(chunk),
        id,
        chunk_seq,
    })
}

pub fn command_ack(command: mav::MavCmd, result: mav::MavResult) -> Msg {
    Msg::CommandAck(mav::COMMAND_ACK_DATA {
        command,
        result,
        progress: 0,
        result_param2: 0,
        target_system: 255,
        target_component: 240,
    })
}

impl FakePx4 {
    fn ready(&self, sim: u64) -> bool {
        sim >= self.ready_at_ms
    }

    fn base_mode(&self) -> mav::MavModeFlag {
        let bits =
            if self.mode.is_auto() { 0x1d } else { 0x51 } | if self.armed { 0x80 } else { 0 };
        mav::MavModeFlag::from_bits_retain(bits)
    }

    pub fn heartbeat(&self, sim: u64) -> Msg {
        let status = if self.armed {
            mav::MavState::MAV_STATE_ACTIVE
        } else if self.ready(sim) {
            mav::MavState::MAV_STATE_STANDBY
        } else {
            mav::MavState::MAV_STATE_UNINIT
        };
        Msg::Heartbeat(mav::HEARTBEAT_DATA {
            custom_mode: self.mode.custom_mode(),
            mavtype: self.mavtype,
            autopilot: mav::MavAutopilot::MAV_AUTOPILOT_PX4,
            base_mode: self.base_mode(),
            system_status: status,
            mavlink_version: 3,
        })
    }

    pub fn global_position(&self, sim: u64) -> Msg {
        let (n, e, u) = self.pos;
        let lat = HOME_LAT + n / M_PER_DEG;
        let lon = HOME_LON + e / (M_PER_DEG * HOME_LAT.to_radians().cos());
        Msg::GlobalPositionInt(mav::GLOBAL_POSITION_INT_DATA {
            time_boot_ms: ms(sim),
            lat: (lat * 1e7).round() as i32,
            lon: (lon * 1e7).round() as i32,
            alt: ((HOME_AMSL_M + u) * 1000.0).round() as i32,
            relative_alt: ((u + self.home_error_m) * 1000.0).round() as i32,
            vx: 0,
            vy: 0,
            vz: 0,
            hdg: 0,
        })
    }

    fn mission_current_msg(&self) -> Msg {
        let total = if self.mission.is_empty() {
            u16::MAX
        } else {
            self.mission.len() as u16
        };
        Msg::MissionCurrent(mav::MISSION_CURRENT_DATA {
            seq: self.mission_current,
            total,
            mission_state: self.mission_state,
            ..mav::MISSION_CURRENT_DATA::DEFAULT
        })
    }

    fn text(&mut self, out: &mut Vec<Msg>, severity: mav::MavSeverity, text: &str) {
        // PX4 appends a tab to texts that are also events, and chunks texts over 50 chars.
        let full = format!("{text}\t");
        if full.len() <= 50 {
            out.push(statustext(severity, &full, 0, 0));
            return;
        }
        self.text_id += 1;
        for (i, chunk) in full.as_bytes().chunks(50).enumerate() {
            out.push(statustext(
                severity,
                std::str::from_utf8(chunk).unwrap(),
                self.text_id,
                i as u8,
            ));
        }
    }

    fn arm_now(&mut self, sim: u64, out: &mut Vec<Msg>, how: &str) {
        self.armed = true;
        self.text(out, mav::MavSeverity::MAV_SEVERITY_INFO, how);
        if self.mode == Mode::Takeoff || self.mode == Mode::Mission {
            self.takeoff_detect_at = Some(sim + 1_900);
        }
        if self.mode == Mode::Mission {
            self.mission_state = mav::MissionState::MISSION_STATE_ACTIVE;
            self.item_since = Some(sim);
        }
    }

    fn disarm_now(&mut self, out: &mut Vec<Msg>, why: &str) {
        self.armed = false;
        self.text(out, mav::MavSeverity::MAV_SEVERITY_INFO, why);
        self.takeoff_detect_at = None;
        self.item_since = None;
    }

    /// Advance to `sim` ms; returns what PX4 says meanwhile.
    pub fn step(&mut self, sim: u64) -> Vec<Msg> {
        let mut out = Vec::new();
        let dt = sim.saturating_sub(self.last_ms) as f64 / 1000.0;
        self.last_ms = sim;
        if sim < self.boot_ms {
            return out;
        }
        self.physics(sim, dt, &mut out);
        // ATTITUDE at 100 Hz and GLOBAL_POSITION_INT at 50 Hz, as PX4 streams them.
        if sim >= self.next_fast {
            self.next_fast = sim + 10;
            out.push(Msg::Attitude(mav::ATTITUDE_DATA {
                time_boot_ms: ms(sim),
                yaw: self.yaw_rad,
                ..mav::ATTITUDE_DATA::DEFAULT
            }));
            if sim >= self.pos_at_ms && sim >= self.next_pos {
                self.next_pos = sim + 20;
                out.push(self.global_position(sim));
            }
        }
        if sim >= self.next_sys {
            self.next_sys = sim + 200;
            if self.sys_status {
                let health = if self.ready(sim) { 0x1000_0000 } else { 0 };
                out.push(Msg::SysStatus(mav::SYS_STATUS_DATA {
                    onboard_control_sensors_health: mav::MavSysStatusSensor::from_bits_retain(
                        health,
                    ),
                    ..mav::SYS_STATUS_DATA::DEFAULT
                }));
            }
            out.push(Msg::ExtendedSysState(mav::EXTENDED_SYS_STATE_DATA {
                landed_state: self.landed,
                ..mav::EXTENDED_SYS_STATE_DATA::DEFAULT
            }));
        }
        if sim >= self.next_hb {
            self.next_hb = sim + 1_000;
            out.push(self.heartbeat(sim));
        }
        if sim >= self.next_slow {
            self.next_slow = sim + 1_000;
            out.push(Msg::SystemTime(mav::SYSTEM_TIME_DATA {
                time_unix_usec: 0,
                time_boot_ms: ms(sim),
            }));
            out.push(self.mission_current_msg());
            if let Some((seq, left, _)) = self.reach_repeat.as_mut() {
                if *left > 0 {
                    *left -= 1;
                    out.push(Msg::MissionItemReached(mav::MISSION_ITEM_REACHED_DATA {
                        seq: *seq,
                    }));
                }
            }
        }
        self.upload_retry(sim, &mut out);
        out
    }

    fn physics(&mut self, sim: u64, dt: f64, out: &mut Vec<Msg>) {
        if let Some(t) = self.takeoff_detect_at {
            if sim >= t {
                self.takeoff_detect_at = None;
                self.landed = mav::MavLandedState::MAV_LANDED_STATE_TAKEOFF;
                self.text(out, mav::MavSeverity::MAV_SEVERITY_INFO, "Takeoff detected");
            }
        }
        let flying = self.armed && self.landed != mav::MavLandedState::MAV_LANDED_STATE_ON_GROUND;
        if flying && self.mode == Mode::Takeoff {
            self.pos.2 = (self.pos.2 + 2.0 * dt).min(self.takeoff_alt_m as f64);
            if self.pos.2 > 0.5 {
                self.landed = mav::MavLandedState::MAV_LANDED_STATE_IN_AIR;
            }
            if self.pos.2 >= self.takeoff_alt_m as f64 {
                self.mode = Mode::Hold; // PX4 hands over to Hold by itself
            }
        }
        if self.armed && self.mode == Mode::Land {
            self.landed = mav::MavLandedState::MAV_LANDED_STATE_LANDING;
            self.pos.2 = (self.pos.2 - 1.0 * dt).max(0.0);
            if self.pos.2 <= 0.0 && self.ground_at.is_none() {
                self.ground_at = Some(sim);
                self.landed = mav::MavLandedState::MAV_LANDED_STATE_ON_GROUND;
            }
        }
        if let Some(g) = self.ground_at {
            self.landed = mav::MavLandedState::MAV_LANDED_STATE_ON_GROUND;
            if sim >= g + 2_000 {
                self.ground_at = None;
                self.disarm_now(out, "Disarmed by landing");
                self.mode = Mode::Hold;
            }
        }
        if let (true, Some(t)) = (self.armed && self.mode == Mode::Hold, self.reposition) {
            let step = 5.0 * dt;
            let (n, e, u) = self.pos;
            let (dn, de, du) = (t.0 - n, t.1 - e, t.2 - u);
            let d = (dn * dn + de * de + du * du).sqrt();
            if d <= step {
                self.pos = t;
                self.reposition = None;
            } else {
                self.pos = (n + dn / d * step, e + de / d * step, u + du / d * step);
            }
        }
        if self.armed && self.mode == Mode::Mission {
            if let Some(since) = self.item_since {
                if sim >= since + 1_000 && !self.mission.is_empty() {
                    self.landed = mav::MavLandedState::MAV_LANDED_STATE_IN_AIR;
                    self.pos.2 = 10.0;
                    let seq = self.mission_current;
                    out.push(Msg::MissionItemReached(mav::MISSION_ITEM_REACHED_DATA {
                        seq,
                    }));
                    self.reach_repeat = Some((seq, 10, 0));
                    let last = self.mission.len() as u16 - 1;
                    if seq < last {
                        self.mission_current = seq + 1;
                        self.item_since = Some(sim);
                        out.push(self.mission_current_msg());
                    } else {
                        self.item_since = None;
                        self.mission_state = mav::MissionState::MISSION_STATE_COMPLETE;
                        out.push(self.mission_current_msg());
                        self.text(
                            out,
                            mav::MavSeverity::MAV_SEVERITY_INFO,
                            "Mission finished, loitering",
                        );
                        if self.mission[seq as usize].command == NAV_LAND {
                            self.mode = Mode::Land;
                        } else {
                            self.mode = Mode::Hold;
                        }
                    }
                }
            }
        }
    }

    fn upload_retry(&mut self, sim: u64, out: &mut Vec<Msg>) {
        let legacy = self.legacy_requests;
        let stall = self.stall_after_requests;
        let Some(u) = self.upload.as_mut() else {
            return;
        };
        if stall.is_some_and(|n| u.requests >= n) {
            return;
        }
        if sim >= u.last_req_ms + 260 {
            u.last_req_ms = sim;
            u.requests += 1;
            out.push(request(u.next, legacy));
        }
    }

    /// React to one frame from the machine; returns what PX4 answers at once.
    pub fn receive(&mut self, sim: u64, msg: &mav::MavMessage) -> Vec<Msg> {
        let mut out = Vec::new();
        match msg {
            mav::MavMessage::COMMAND_LONG(c) => self.command_long(sim, c, &mut out),
            mav::MavMessage::COMMAND_INT(c) => {
                let result = if c.frame as u8 != 5 {
                    mav::MavResult::MAV_RESULT_COMMAND_UNSUPPORTED_MAV_FRAME
                } else if c.param2 != 1.0 {
                    mav::MavResult::MAV_RESULT_UNSUPPORTED
                } else {
                    self.mode = Mode::Hold;
                    if self.armed {
                        let lat = c.x as f64 / 1e7;
                        let lon = c.y as f64 / 1e7;
                        let n = (lat - HOME_LAT) * M_PER_DEG;
                        let e = (lon - HOME_LON) * M_PER_DEG * HOME_LAT.to_radians().cos();
                        self.reposition = Some((n, e, c.z as f64 - HOME_AMSL_M));
                        if c.param4.is_finite() {
                            self.yaw_rad = c.param4;
                        }
                    }
                    mav::MavResult::MAV_RESULT_ACCEPTED
                };
                out.push(command_ack(c.command, result));
            }
            mav::MavMessage::PARAM_SET(p) => {
                let name = p.param_id.to_str().unwrap_or("").to_string();
                self.param_sets_seen += 1;
                if self.lose_param_sets > 0 {
                    self.lose_param_sets -= 1;
                    return out;
                }
                if let Some((_, e)) = self.param_errors.iter().find(|(n, _)| *n == name) {
                    let mut id = [0u8; 16];
                    id[..name.len()].copy_from_slice(name.as_bytes());
                    out.push(Msg::ParamError(mav::PARAM_ERROR_DATA {
                        param_index: -1,
                        target_system: 255,
                        target_component: 190,
                        param_id: id.into(),
                        error: *e,
                    }));
                    return out;
                }
                let echoed = self.param_echo_bits.map_or(p.param_value, f32::from_bits);
                if name == "MIS_TAKEOFF_ALT" {
                    self.takeoff_alt_m = p.param_value;
                }
                self.params.retain(|(n, _, _)| *n != name);
                self.params
                    .push((name, p.param_value.to_bits(), p.param_type));
                out.push(Msg::ParamValue(mav::PARAM_VALUE_DATA {
                    param_value: echoed,
                    param_count: 1,
                    param_index: 0,
                    param_id: p.param_id,
                    param_type: p.param_type,
                }));
            }
            mav::MavMessage::MANUAL_CONTROL(m) => {
                let gesture = m.z < 100 && m.r > 900;
                match (gesture, self.gesture_since) {
                    (false, _) => self.gesture_since = None,
                    (true, None) => self.gesture_since = Some(sim),
                    (true, Some(t))
                        if sim >= t + 1_000
                            && !self.armed
                            && self.ready(sim)
                            && sim >= self.arm_ok_at_ms =>
                    {
                        self.arm_now(sim, &mut out, "Armed by RC");
                    }
                    _ => {}
                }
            }
            mav::MavMessage::MISSION_COUNT(c) if !self.ignore_mission_count => {
                self.upload = Some(Upload {
                    count: c.count,
                    items: vec![None; c.count as usize],
                    next: 0,
                    last_req_ms: sim,
                    requests: 1,
                });
                if c.count == 0 {
                    self.finish_upload(&mut out);
                } else {
                    out.push(request(0, self.legacy_requests));
                }
            }
            mav::MavMessage::MISSION_ITEM_INT(it) => {
                let legacy = self.legacy_requests;
                let stall = self.stall_after_requests;
                let Some(u) = self.upload.as_mut() else {
                    return out;
                };
                if it.seq != u.next {
                    return out;
                }
                u.items[it.seq as usize] = Some(MissionItem::from_mav(it));
                u.next += 1;
                u.last_req_ms = sim;
                if u.next == u.count {
                    self.finish_upload(&mut out);
                } else if stall.is_none_or(|n| u.requests < n) {
                    u.requests += 1;
                    out.push(request(u.next, legacy));
                }
            }
            mav::MavMessage::MISSION_REQUEST_LIST(_) => {
                out.push(Msg::MissionCount(mav::MISSION_COUNT_DATA {
                    count: self.mission.len() as u16,
                    target_system: 255,
                    target_component: 240,
                    ..mav::MISSION_COUNT_DATA::DEFAULT
                }));
            }
            mav::MavMessage::MISSION_REQUEST_INT(r) => {
                if let Some(it) = self.mission.get(r.seq as usize) {
                    out.push(Msg::MissionItemInt(mav::MISSION_ITEM_INT_DATA {
                        target_system: 255,
                        target_component: 240,
                        ..nexus_core::offboard::wire::mission_item_int(
                            nexus_core::offboard::wire::Addr {
                                system: 255,
                                component: 240,
                            },
                            it,
                            false,
                            mav::MavMissionType::MAV_MISSION_TYPE_MISSION,
                        )
                        .unwrap()
                    }));
                }
            }
            mav::MavMessage::MISSION_CLEAR_ALL(_) => {
                self.mission.clear();
                self.mission_current = 0;
                self.mission_state = mav::MissionState::MISSION_STATE_NO_MISSION;
                out.push(mission_ack(mav::MavMissionResult::MAV_MISSION_ACCEPTED, 0));
            }
            mav::MavMessage::MISSION_SET_CURRENT(s) if (s.seq as usize) < self.mission.len() => {
                self.mission_current = s.seq;
                if self.mission_state == mav::MissionState::MISSION_STATE_COMPLETE {
                    self.mission_state = mav::MissionState::MISSION_STATE_NOT_STARTED;
                }
                out.push(self.mission_current_msg());
            }
            _ => {}
        }
        out
    }

    fn finish_upload(&mut self, out: &mut Vec<Msg>) {
        let u = self.upload.take().unwrap();
        if let Some(r) = self.reject_mission {
            out.push(mission_ack(r, 0));
            return;
        }
        self.mission = u.items.into_iter().map(|i| i.unwrap()).collect();
        self.mission_current = 0;
        self.mission_state = mav::MissionState::MISSION_STATE_NOT_STARTED;
        out.push(mission_ack(
            mav::MavMissionResult::MAV_MISSION_ACCEPTED,
            0xC0FFEE,
        ));
        out.push(self.mission_current_msg());
    }

    fn command_long(&mut self, sim: u64, c: &mav::COMMAND_LONG_DATA, out: &mut Vec<Msg>) {
        match c.command {
            mav::MavCmd::MAV_CMD_DO_SET_MODE => {
                if self.two_mode_acks {
                    out.push(command_ack(c.command, mav::MavResult::MAV_RESULT_ACCEPTED));
                }
                let mode = Mode::from_main_sub(c.param2 as u8, c.param3 as u8);
                if self.refuse_modes.contains(&mode) {
                    self.text(
                        out,
                        mav::MavSeverity::MAV_SEVERITY_CRITICAL,
                        &format!("Switching to {mode} is currently not possible"),
                    );
                    self.mode_acks.push((mode, 1));
                    out.push(command_ack(
                        c.command,
                        mav::MavResult::MAV_RESULT_TEMPORARILY_REJECTED,
                    ));
                } else {
                    self.mode = mode;
                    if let Some((_, to)) = self.bounce_modes.iter().find(|(a, _)| *a == mode) {
                        self.mode = *to;
                    }
                    self.mode_acks.push((mode, 0));
                    out.push(command_ack(c.command, mav::MavResult::MAV_RESULT_ACCEPTED));
                    if mode == Mode::Mission && self.armed {
                        self.item_since = Some(sim);
                        self.mission_state = mav::MissionState::MISSION_STATE_ACTIVE;
                    }
                }
            }
            mav::MavCmd::MAV_CMD_COMPONENT_ARM_DISARM if c.param1 == 1.0 => {
                if self.armed {
                    out.push(command_ack(c.command, mav::MavResult::MAV_RESULT_ACCEPTED));
                } else if sim >= self.arm_ok_at_ms && self.ready(sim) {
                    self.arm_now(sim, out, "Armed by external command");
                    out.push(command_ack(c.command, mav::MavResult::MAV_RESULT_ACCEPTED));
                } else {
                    let ack =
                        command_ack(c.command, mav::MavResult::MAV_RESULT_TEMPORARILY_REJECTED);
                    if !self.text_before_ack {
                        out.push(ack.clone());
                    }
                    self.text(
                        out,
                        mav::MavSeverity::MAV_SEVERITY_CRITICAL,
                        ARMING_DENIED.trim_end(),
                    );
                    if self.text_before_ack {
                        out.push(ack);
                    }
                }
            }
            mav::MavCmd::MAV_CMD_COMPONENT_ARM_DISARM => {
                if self.landed == mav::MavLandedState::MAV_LANDED_STATE_ON_GROUND {
                    if self.armed {
                        self.disarm_now(out, "Disarmed by external command");
                    }
                    out.push(command_ack(c.command, mav::MavResult::MAV_RESULT_ACCEPTED));
                } else {
                    self.text(
                        out,
                        mav::MavSeverity::MAV_SEVERITY_CRITICAL,
                        "Disarming denied: not landed",
                    );
                    out.push(command_ack(c.command, mav::MavResult::MAV_RESULT_DENIED));
                }
            }
            _ => {}
        }
    }
}

pub fn request(seq: u16, legacy: bool) -> Msg {
    #[allow(deprecated)]
    if legacy {
        Msg::MissionRequest(mav::MISSION_REQUEST_DATA {
            seq,
            target_system: 255,
            target_component: 240,
            mission_type: mav::MavMissionType::MAV_MISSION_TYPE_MISSION,
        })
    } else {
        Msg::MissionRequestInt(mav::MISSION_REQUEST_INT_DATA {
            seq,
            target_system: 255,
            target_component: 240,
            mission_type: mav::MavMissionType::MAV_MISSION_TYPE_MISSION,
        })
    }
}

pub fn mission_ack(result: mav::MavMissionResult, opaque_id: u32) -> Msg {
    Msg::MissionAck(mav::MISSION_ACK_DATA {
        target_system: 255,
        target_component: 240,
        mavtype: result,
        mission_type: mav::MavMissionType::MAV_MISSION_TYPE_MISSION,
        opaque_id,
    })
}

/// The driver: machine + telemetry + fake PX4 + clocks.
pub struct Rig {
    pub tel: Telemetry<16>,
    pub ob: Offboard<32>,
    pub enc: Encoder,
    pub px4: FakePx4,
    pub wall_us: u64,
    pub sim_ms_f: f64,
    /// Sim ms per wall ms (10.0 = 10× faster than real time, 0.0 = stalled).
    pub speed: f64,
    pub step_ms: u64,
    pub sent: Vec<Sent>,
    pub events: Vec<(u64, OffboardEvent)>,
    /// Frames from PX4 the rig delivered, with the sim time.
    pub received: Vec<(u64, Msg)>,
    /// When false, the fake PX4 does not answer what the machine sends (scripted tests).
    pub auto_reply: bool,
    /// One-way link latency, wall ms, each way (0: PX4 hears and answers within the poll).
    pub latency_ms: u64,
    /// Frames on their way to PX4 (due wall µs) and from it.
    up: std::collections::VecDeque<(u64, mav::MavMessage)>,
    down: std::collections::VecDeque<(u64, Msg)>,
}

impl Rig {
    pub fn new() -> Rig {
        Rig::with_config(OffboardConfig::default())
    }

    pub fn with_config(cfg: OffboardConfig) -> Rig {
        Rig {
            tel: Telemetry::new(LinkIds::default()),
            ob: Offboard::new(cfg),
            enc: Encoder::new(255, 240),
            px4: FakePx4::default(),
            wall_us: 0,
            sim_ms_f: 0.0,
            speed: 1.0,
            step_ms: 10,
            sent: Vec::new(),
            events: Vec::new(),
            received: Vec::new(),
            auto_reply: true,
            latency_ms: 0,
            up: Default::default(),
            down: Default::default(),
        }
    }

    pub fn now(&self) -> Instant {
        Instant::from_micros(self.wall_us)
    }

    pub fn sim_ms(&self) -> u64 {
        self.sim_ms_f as u64
    }

    pub fn wall_ms(&self) -> u64 {
        self.wall_us / 1000
    }

    /// Deliver one message from PX4 (system 1, component 1) to telemetry and the machine.
    pub fn deliver(&mut self, msg: Msg) {
        self.received.push((self.sim_ms(), msg.clone()));
        let f = Frame::from_msg(1, 1, msg);
        let now = self.now();
        if self.tel.handle(now, &f) {
            self.ob.handle(now, &self.tel, &f);
        }
        self.drain_events();
    }

    fn drain_events(&mut self) {
        while let Some(e) = self.ob.poll_event() {
            self.events.push((self.sim_ms(), e));
        }
    }

    /// Poll the machine until it has nothing to send; the fake PX4 answers each frame.
    pub fn pump(&mut self) {
        let mut buf = [0u8; MAX_FRAME_LEN];
        for _ in 0..10_000 {
            let now = self.now();
            let Some(n) = self
                .ob
                .poll_transmit(now, &self.tel, &mut self.enc, &mut buf)
            else {
                self.drain_events();
                // Nothing is due: the next deadline must be in the future, or a driver would spin.
                if let Some(d) = self.ob.next_deadline() {
                    assert!(d > now, "deadline {d:?} not after {now:?}");
                }
                return;
            };
            let msg = decode(&buf[..n]);
            self.sent.push(Sent {
                wall_ms: self.wall_ms(),
                sim_ms: self.sim_ms(),
                msg: msg.clone(),
                bytes: buf[..n].to_vec(),
            });
            if self.auto_reply && self.latency_ms > 0 {
                self.up
                    .push_back((self.wall_us + self.latency_ms * 1000, msg));
            } else if self.auto_reply {
                let replies = self.px4.receive(self.sim_ms(), &msg);
                for r in replies {
                    self.deliver(r);
                }
            }
        }
        panic!("poll_transmit never returned None");
    }

    /// Advance both clocks by one step, let PX4 speak, pump.
    pub fn step(&mut self) {
        self.wall_us += self.step_ms * 1000;
        self.sim_ms_f += self.step_ms as f64 * self.speed;
        let out = self.px4.step(self.sim_ms());
        if self.latency_ms == 0 {
            for m in out {
                self.deliver(m);
            }
        } else {
            let due = self.wall_us + self.latency_ms * 1000;
            while self.up.front().is_some_and(|(t, _)| *t <= self.wall_us) {
                let (_, msg) = self.up.pop_front().unwrap();
                for r in self.px4.receive(self.sim_ms(), &msg) {
                    self.down.push_back((due, r));
                }
            }
            self.down.extend(out.into_iter().map(|m| (due, m)));
            while self.down.front().is_some_and(|(t, _)| *t <= self.wall_us) {
                let (_, m) = self.down.pop_front().unwrap();
                self.deliver(m);
            }
        }
        self.pump();
    }

    /// Run for `wall_ms` of wall time.
    pub fn run_ms(&mut self, wall_ms: u64) {
        let end = self.wall_us + wall_ms * 1000;
        while self.wall_us < end {
            self.step();
        }
    }

    /// Run until `cond` holds (checked after every step) or `max_wall_ms` passes.
    pub fn run_until(&mut self, max_wall_ms: u64, mut cond: impl FnMut(&Rig) -> bool) -> bool {
        let end = self.wall_us + max_wall_ms * 1000;
        while self.wall_us < end {
            self.step();
            if cond(self) {
                return true;
            }
        }
        false
    }

    /// Run until the vehicle's heartbeat has arrived and a position is known.
    pub fn boot(&mut self) {
        assert!(self.run_until(10_000, |r| r.tel.connected()
            && r.tel.global_position().is_some()));
    }

    /// Frames sent, as (sim ms, message), matching `f`.
    pub fn sent_where(&self, f: impl Fn(&mav::MavMessage) -> bool) -> Vec<&Sent> {
        self.sent.iter().filter(|s| f(&s.msg)).collect()
    }

    /// DO_SET_MODE frames sent, with the mode they asked for.
    pub fn mode_commands(&self) -> Vec<(u64, Mode)> {
        self.sent
            .iter()
            .filter_map(|s| match &s.msg {
                mav::MavMessage::COMMAND_LONG(c)
                    if c.command == mav::MavCmd::MAV_CMD_DO_SET_MODE =>
                {
                    Some((
                        s.sim_ms,
                        Mode::from_main_sub(c.param2 as u8, c.param3 as u8),
                    ))
                }
                _ => None,
            })
            .collect()
    }

    /// COMPONENT_ARM_DISARM frames sent: (sim ms, arm?).
    pub fn arm_commands(&self) -> Vec<(u64, bool)> {
        self.sent
            .iter()
            .filter_map(|s| match &s.msg {
                mav::MavMessage::COMMAND_LONG(c)
                    if c.command == mav::MavCmd::MAV_CMD_COMPONENT_ARM_DISARM =>
                {
                    Some((s.sim_ms, c.param1 == 1.0))
                }
                _ => None,
            })
            .collect()
    }

    /// Sim time of the first heartbeat PX4 sent showing `mode`.
    pub fn first_heartbeat_in(&self, mode: Mode) -> Option<u64> {
        self.received.iter().find_map(|(t, m)| match m {
            Msg::Heartbeat(hb) if Mode::from_custom_mode(hb.custom_mode) == mode => Some(*t),
            _ => None,
        })
    }

    pub fn events_only(&self) -> Vec<OffboardEvent> {
        self.events.iter().map(|(_, e)| e.clone()).collect()
    }
}

/// Decode one frame the machine wrote: it must be exactly one valid MAVLink 2 frame.
pub fn decode(bytes: &[u8]) -> mav::MavMessage {
    let mut dec = Decoder::new();
    let (used, raw) = dec.feed(bytes);
    let raw = raw.expect("a complete frame");
    assert_eq!(used, bytes.len(), "one frame, nothing after it");
    assert_eq!(raw.header.sysid, 255);
    mav::MavMessage::parse(MavlinkVersion::V2, raw.header.msgid, raw.payload).expect("parses")
}

/// A mission item in the shape QGC writes (frame 3, global relative altitude).
pub fn item(seq: u16, command: u16, lat: f64, lon: f64, z: f32) -> MissionItem {
    MissionItem {
        seq,
        frame: 3,
        command,
        autocontinue: true,
        params: [0.0, 0.0, 0.0, f32::NAN],
        x: (lat * 1e7).round() as i32,
        y: (lon * 1e7).round() as i32,
        z,
    }
}

/// The box mission of fixtures/plans/MC_mission_box.plan, read through the plan reader.
pub fn box_mission() -> Vec<MissionItem> {
    let plan = nexus_core::plan::read_plan::<16>(include_bytes!(
        "../../../fixtures/plans/MC_mission_box.plan"
    ))
    .unwrap();
    plan.items.to_vec()
}

pub fn mav_cmd(v: u16) -> mav::MavCmd {
    mav::MavCmd::from_u16(v).unwrap()
}
