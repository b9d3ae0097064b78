//! The PX4 offboard state machine (the Python `OffboardClient`'s, in Rust), sans-IO.
//!
//! [`Offboard`] is what a companion computer runs to fly a PX4 over MAVLink. It never touches
//! a socket or a clock; a driver (the firmware main loop, the host pump, [`crate::Client`]) feeds
//! it and drains it, in the style of quinn-proto and smoltcp:
//!
//! ```text
//! if tel.handle(now, &frame) { ob.handle(now, &tel, &frame) }        // every frame received
//! while let Some(n) = ob.poll_transmit(now, &tel, &mut enc, &mut buf) { send(&buf[..n]) }
//! while let Some(e) = ob.poll_event() { … }                          // refusals, transfers
//! sleep until ob.next_deadline() or the next frame
//! ```
//!
//! Call `poll_transmit` until `None` after every `handle` and every verb: sim-time timers can
//! only run out when a frame advances sim time, so `next_deadline` covers wall-time timers and
//! the periodic streams only.
//!
//! What goes out:
//! * our HEARTBEAT at 1 Hz (a GCS: MAV_TYPE_GCS, MAV_AUTOPILOT_INVALID), from the first poll;
//! * MANUAL_CONTROL at 20 Hz while sticks are set (or a gesture arm is pending);
//! * one-shot frames the verbs queue: disarm, DO_REPOSITION (and PARAM_SET without
//!   `confirmed-params`);
//! * parameter sets (`confirmed-params`, default): PARAM_SET resent on the command retry timer
//!   until PX4 echoes the value, failed at once on its PARAM_ERROR, each end an
//!   `OffboardEvent::ParamSet` (up to `PARAM_SETS_LEN` outstanding);
//! * the outstanding requests ([`requests`](self) docs: mode, arm, mission restart), re-commanded
//!   on the retry timer until telemetry confirms them, given up after bounded refusals;
//! * the mission protocol (upload; download and clear with the `mission-download` feature).
//!
//! Retry timers follow the link's measured round trip ([`RttEstimator`], RFC 6298 with Karn's
//! rule and a capped back-off): `clamp(srtt + 4·rttvar, floor, ceiling)`, the floors being
//! `command_retry_s` and `mission_retry_s`; [`Offboard::link_rtt`] shows the estimate.
//!
//! Everything but the heartbeat waits for the vehicle's first HEARTBEAT. Streams are paced by
//! either clock (so PX4 is never starved at 10× and streams flow when sim time stalls), timers
//! by sim time once known (see [`OffboardConfig`]). Things the application must know come out of
//! [`Offboard::poll_event`].

mod clock;
mod config;
mod error;
mod events;
pub mod geo;
#[cfg(feature = "geofence")]
pub mod geofence;
mod mission;
#[cfg(feature = "mission-download")]
mod mission_download;
mod mission_upload;
#[cfg(feature = "confirmed-params")]
mod param_sets;
mod queries;
mod requests;
mod retry;
mod rtt;
#[cfg(feature = "setpoints")]
pub mod setpoint;
#[cfg(test)]
mod tests;
mod verbs;
pub mod wire;

pub use config::OffboardConfig;
pub use error::OffboardError;
pub use events::{
    mav_result_name, mission_result_name, Command, GaveUp, GiveUpReason, MissionError,
    MissionMismatch, OffboardEvent, Refusal, Request, TransferStage, REFUSAL_TEXT_LEN,
};
pub use geo::Anchor;
#[cfg(feature = "geofence")]
pub use geofence::{GeoKind, GeoStatus, FENCE_ITEMS, RALLY_ITEMS};
#[cfg(feature = "confirmed-params")]
pub use param_sets::{param_error_name, ParamSetEnd, ParamSetOutcome, PARAM_SETS_LEN};
pub use queries::{News, Pending};
pub use requests::{ArmWait, ACK_WAIT_MS};
pub use rtt::{RttEstimator, MAX_BACKOFF_SHIFT, RTO_CEILING_MS};
#[cfg(feature = "setpoints")]
pub use setpoint::{Setpoint, Yaw};
pub use verbs::TAKEOFF_ALT_PARAM;

use crate::action::ParamName;
use crate::frame::Encoder;
use crate::mode::Mode;
use crate::msg::Frame;
use crate::rc::RcSticks;
use crate::telemetry::Telemetry;
use crate::time::Instant;
use clock::{Soonest, Stamp};
use config::Timing;
use heapless::Deque;
use mavlink::dialects::common as mav;
use mavlink::MessageData;
use mission::MissionState;
use requests::Requests;
use wire::Addr;

/// One-shot frames queued by verbs and not yet sent.
pub const OUTBOX_LEN: usize = 8;
/// Events held for [`Offboard::poll_event`]; when full the oldest is dropped (and counted).
pub const EVENTS_LEN: usize = 8;
/// Smallest buffer `poll_transmit` writes into: the largest frame it sends (MISSION_ITEM_INT).
pub const MIN_TX_BUF: usize = 12 + mav::MISSION_ITEM_INT_DATA::ENCODED_LEN;

/// A frame the machine decided to send, before encoding.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Tx {
    Heartbeat,
    Rc(RcSticks),
    #[cfg(feature = "setpoints")]
    Setpoint(Setpoint),
    SetMode {
        mode: Mode,
        confirmation: u8,
    },
    Arm {
        confirmation: u8,
    },
    MissionSetCurrent(u16),
    MissionCount(u16),
    MissionItem(u16),
    #[cfg(feature = "mission-download")]
    MissionRequestList,
    #[cfg(feature = "mission-download")]
    MissionRequestInt(u16),
    MissionAck(mav::MavMissionResult),
    #[cfg(feature = "mission-download")]
    MissionClearAll,
    #[cfg(feature = "geofence")]
    Geo(geofence::GeoKind, geofence::GeoTx),
    OneShot(OneShot),
}

/// A frame a verb sends once (PARAM_SET too, without `confirmed-params`; with it, the frame an
/// outstanding set sends each time it is due).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum OneShot {
    Disarm,
    Reposition {
        lat_e7: i32,
        lon_e7: i32,
        alt_amsl_m: f32,
        yaw_ned_rad: f32,
    },
    Param {
        name: ParamName,
        bits: u32,
        int32: bool,
    },
    #[cfg(feature = "failure-injection")]
    InjectFailure {
        unit: u8,
        kind: u8,
        instance: u8,
    },
}

/// What `at_target` measures against: the last verb's target.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Target {
    /// After a takeoff: relative altitude, m.
    Climb { rel_alt_m: f32 },
    /// After a goto: what went on the wire (PX4's frame, so ATTITUDE compares directly).
    Goto {
        lat_deg: f64,
        lon_deg: f64,
        rel_alt_m: f32,
        yaw_ned_rad: Option<f32>,
    },
}

/// The longest payload the machine lays out by hand (MISSION_ITEM_INT, extensions included).
const MAX_PAYLOAD: usize = mav::MISSION_ITEM_INT_DATA::ENCODED_LEN;

/// Our HEARTBEAT's payload ([`wire::gcs_heartbeat`]): custom_mode 0, MAV_TYPE_GCS,
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

/// Message id, CRC extra and full payload length (extensions included) of `M`.
fn meta<M: MessageData>() -> (u32, u8, usize) {
    (M::ID, M::EXTRA_CRC, M::ENCODED_LEN)
}

/// An `f32` at byte `at` of a payload, little-endian.
fn put_f32(p: &mut [u8; MAX_PAYLOAD], at: usize, v: f32) {
    if let Some(d) = p.get_mut(at..at + 4) {
        d.copy_from_slice(&v.to_le_bytes());
    }
}

/// COMMAND_LONG of `command` with params 1..=3 (4..=7 zero), as [`wire::command_long`] lays
/// it out; returns the message's meta.
#[inline(never)] // three commands: one copy
fn command_long(
    p: &mut [u8; MAX_PAYLOAD],
    to: Addr,
    command: mav::MavCmd,
    params: [f32; 3],
    confirmation: u8,
) -> (u32, u8, usize) {
    for (i, v) in params.into_iter().enumerate() {
        put_f32(p, 4 * i, v);
    }
    p[28..30].copy_from_slice(&(command as u16).to_le_bytes());
    p[30] = to.system;
    p[31] = to.component;
    p[32] = confirmation;
    meta::<mav::COMMAND_LONG_DATA>()
}

/// MISSION_COUNT of `count` items of plan `ty`, no opaque id ([`wire::mission_count_of`]).
fn mission_count(p: &mut [u8; MAX_PAYLOAD], to: Addr, count: u16, ty: mav::MavMissionType) {
    p[..2].copy_from_slice(&count.to_le_bytes());
    p[2] = to.system;
    p[3] = to.component;
    p[4] = ty as u8;
}

/// MISSION_ACK of plan `ty` with `result`, no opaque id ([`wire::mission_ack_of`]).
fn mission_ack(
    p: &mut [u8; MAX_PAYLOAD],
    to: Addr,
    result: mav::MavMissionResult,
    ty: mav::MavMissionType,
) {
    p[0] = to.system;
    p[1] = to.component;
    p[2] = result as u8;
    p[3] = ty as u8;
}

/// A bounded event queue that drops the oldest when full. It also keeps the newest news of
/// each failing kind with the sim time it came at, so a failure can be explained after the
/// application drained (or never drained) the queue.
#[derive(Debug, Clone, Default)]
pub(crate) struct EventQueue {
    q: Deque<OffboardEvent, EVENTS_LEN>,
    lost: u32,
    /// Sim ms of the frame or poll being handled (set by the machine before it runs).
    pub now_sim_ms: Option<u64>,
    /// The newest refusal's sim time.
    pub refused_at: Option<Option<u64>>,
    /// The newest give-up and its sim time.
    pub gave_up: Option<(Option<u64>, GaveUp)>,
    /// The newest failed upload and its sim time.
    pub upload_failed: Option<(Option<u64>, MissionError)>,
}

impl EventQueue {
    pub fn push(&mut self, e: OffboardEvent) {
        let at = self.now_sim_ms;
        match &e {
            OffboardEvent::Refused(_) => self.refused_at = Some(at),
            OffboardEvent::GaveUp(g) => self.gave_up = Some((at, *g)),
            OffboardEvent::MissionUploadFailed(m) => self.upload_failed = Some((at, *m)),
            _ => {}
        }
        if self.q.is_full() {
            self.q.pop_front();
            self.lost = self.lost.wrapping_add(1);
        }
        let _ = self.q.push_back(e);
    }
}

/// The PX4 offboard state machine, holding a mission of up to `ITEMS` items.
#[derive(Debug, Clone)]
pub struct Offboard<const ITEMS: usize> {
    cfg: OffboardConfig,
    t: Timing,
    hb_last: Option<Stamp>,
    rc: Option<RcSticks>,
    rc_last: Option<Stamp>,
    #[cfg(feature = "setpoints")]
    sp: Option<Setpoint>,
    #[cfg(feature = "setpoints")]
    sp_last: Option<Stamp>,
    outbox: Deque<OneShot, OUTBOX_LEN>,
    #[cfg(feature = "confirmed-params")]
    params: param_sets::ParamSets,
    req: Requests,
    anchor: Option<Anchor>,
    target: Option<Target>,
    mission: MissionState<ITEMS>,
    #[cfg(feature = "geofence")]
    geo: geofence::Geo,
    events: EventQueue,
    connected: bool,
    last_poll: Option<Instant>,
}

impl<const ITEMS: usize> Offboard<ITEMS> {
    /// A machine with these settings; nothing is requested yet.
    pub fn new(config: OffboardConfig) -> Self {
        Offboard {
            cfg: config,
            t: Timing::from(&config),
            hb_last: None,
            rc: None,
            rc_last: None,
            #[cfg(feature = "setpoints")]
            sp: None,
            #[cfg(feature = "setpoints")]
            sp_last: None,
            outbox: Deque::new(),
            #[cfg(feature = "confirmed-params")]
            params: param_sets::ParamSets::default(),
            req: Requests::default(),
            anchor: None,
            target: None,
            mission: MissionState::new(),
            #[cfg(feature = "geofence")]
            geo: geofence::Geo::new(),
            events: EventQueue::default(),
            connected: false,
            last_poll: None,
        }
    }

    /// The settings.
    pub fn config(&self) -> &OffboardConfig {
        &self.cfg
    }

    /// Take in one frame that `tel.handle` accepted, after telemetry was updated with it.
    pub fn handle<const T: usize>(&mut self, now: Instant, tel: &Telemetry<T>, frame: &Frame) {
        let st = Stamp::at(now, tel);
        self.connected = tel.connected();
        self.events.now_sim_ms = tel.sim_ms();
        self.req
            .on_frame(st, tel, frame, &mut self.t, &mut self.rc, &mut self.events);
        self.mission
            .on_frame(st, frame, &mut self.t, &mut self.events);
        self.mission.watch_arming(st, tel.armed(), &self.t);
        #[cfg(feature = "confirmed-params")]
        self.params
            .on_frame(st, frame, &mut self.t, &mut self.events);
        #[cfg(feature = "geofence")]
        self.geo.on_frame(st, frame, &mut self.t);
        self.after_transfer();
        self.req.tick(st, tel, &self.t, &mut self.events);
    }

    /// Encode the next frame due into `buf` and return its length; `None` when nothing is due.
    /// Call until `None`. `buf` must hold [`MIN_TX_BUF`] bytes ([`crate::frame::MAX_FRAME_LEN`]
    /// always does); a smaller one gets nothing and loses nothing.
    #[must_use = "the frame written must be sent"]
    pub fn poll_transmit<const T: usize>(
        &mut self,
        now: Instant,
        tel: &Telemetry<T>,
        enc: &mut Encoder,
        buf: &mut [u8],
    ) -> Option<usize> {
        if buf.len() < MIN_TX_BUF {
            return None;
        }
        self.last_poll = Some(now);
        self.events.now_sim_ms = tel.sim_ms();
        let st = Stamp::at(now, tel);
        self.connected = tel.connected();
        self.req.tick(st, tel, &self.t, &mut self.events);
        let tx = self.next_tx(st, tel)?;
        self.encode(&tx, tel, enc, buf)
    }

    fn next_tx<const T: usize>(&mut self, st: Stamp, tel: &Telemetry<T>) -> Option<Tx> {
        if self
            .hb_last
            .is_none_or(|s| s.either_done(st, self.t.heartbeat_ms))
        {
            self.hb_last = Some(st);
            return Some(Tx::Heartbeat);
        }
        if !self.connected {
            return None;
        }
        if let Some(one) = self.outbox.pop_front() {
            match &one {
                OneShot::Disarm => self.req.sent_disarm(st, tel),
                OneShot::Reposition { .. } => self.req.sent_reposition(st, tel),
                OneShot::Param { .. } => {}
                #[cfg(feature = "failure-injection")]
                OneShot::InjectFailure { .. } => self.req.sent_inject(st, tel),
            }
            return Some(Tx::OneShot(one));
        }
        #[cfg(feature = "confirmed-params")]
        if let Some(tx) = self.params.poll(st, &mut self.t, &mut self.events) {
            return Some(tx);
        }
        let tx = self.mission.poll(st, &mut self.t, &mut self.events);
        self.after_transfer();
        if tx.is_some() {
            return tx;
        }
        #[cfg(feature = "geofence")]
        {
            let mission_uploaded = self.mission_uploaded();
            if let Some((kind, g)) = self.geo.poll(st, &mut self.t, mission_uploaded) {
                return Some(Tx::Geo(kind, g));
            }
        }
        if let Some(sticks) = self.stream_sticks() {
            if self.rc_last.is_none_or(|s| s.either_done(st, self.t.rc_ms)) {
                self.rc_last = Some(st);
                return Some(Tx::Rc(sticks));
            }
        }
        #[cfg(feature = "setpoints")]
        if let Some(sp) = self.sp {
            if self.sp_last.is_none_or(|s| s.either_done(st, self.t.rc_ms)) {
                self.sp_last = Some(st);
                return Some(Tx::Setpoint(sp));
            }
        }
        let hold_start = self.mission.uploading();
        // A takeoff's altitude (MIS_TAKEOFF_ALT) must be stored before Takeoff mode and the arm
        // go out: PX4 takes the altitude when the takeoff starts, so a set lost on a lossy link
        // and resent later would leave the vehicle at PX4's default height.
        #[cfg(feature = "confirmed-params")]
        let hold_takeoff = self.params.pending(TAKEOFF_ALT_PARAM);
        #[cfg(not(feature = "confirmed-params"))]
        let hold_takeoff = false;
        self.req.poll(
            st,
            tel,
            &mut self.t,
            &mut self.rc,
            &mut self.events,
            requests::Holds {
                start: hold_start,
                takeoff: hold_takeoff,
            },
        )
    }

    /// A failed upload drops the mission start that waited for it.
    fn after_transfer(&mut self) {
        if core::mem::take(&mut self.mission.upload_failed) {
            self.req.upload_failed(&mut self.events);
        }
    }

    /// The sticks streamed now: a pending gesture arm's (neutral, then the gesture), else the
    /// application's.
    #[inline(never)] // asked on every poll and deadline: one copy
    fn stream_sticks(&self) -> Option<RcSticks> {
        self.req.gesture_sticks().or(self.rc)
    }

    /// Lay out the frame's payload by hand (MAVLink 2 wire order, extensions zero) and encode
    /// it through one `encode_payload` call: one copy of the framing for every message the
    /// machine sends, instead of mavlink's serialiser instantiated per message type (~1 KB of
    /// thumbv7em flash). `tests::hand_laid_payloads_match_the_dialect` holds every layout to
    /// the [`wire`] builder's bytes (the builders are the ones golden-tested against pymavlink).
    fn encode<const T: usize>(
        &self,
        tx: &Tx,
        tel: &Telemetry<T>,
        enc: &mut Encoder,
        buf: &mut [u8],
    ) -> Option<usize> {
        let to = Addr {
            system: tel.ids().target_sysid,
            component: tel.target_compid(),
        };
        let mut p = [0u8; MAX_PAYLOAD];
        let (id, extra, len) = match tx {
            Tx::Heartbeat => {
                p[..GCS_HEARTBEAT.len()].copy_from_slice(&GCS_HEARTBEAT);
                meta::<mav::HEARTBEAT_DATA>()
            }
            Tx::Rc(s) => {
                let (x, y, z, r) = s.to_manual_control();
                for (i, v) in [x, y, z, r].into_iter().enumerate() {
                    p[2 * i..2 * i + 2].copy_from_slice(&v.to_le_bytes());
                }
                // buttons (8..10) none; the extensions zero.
                p[10] = to.system;
                meta::<mav::MANUAL_CONTROL_DATA>()
            }
            #[cfg(feature = "setpoints")]
            Tx::Setpoint(sp) => {
                let ms = tel.sim_ms().unwrap_or(0) as u32;
                let r = match setpoint::setpoint_msg(sp, to.system, to.component, ms) {
                    setpoint::SetpointMsg::Local(m) => enc.encode(&m, buf),
                    setpoint::SetpointMsg::Global(m) => enc.encode(&m, buf),
                    setpoint::SetpointMsg::Attitude(m) => enc.encode(&m, buf),
                };
                return r.ok();
            }
            Tx::SetMode { mode, confirmation } => {
                let (main, sub) = mode.main_sub();
                // MAV_MODE_FLAG_CUSTOM_MODE_ENABLED, PX4's main and sub mode (wire::do_set_mode).
                let params = [1.0, main as f32, sub as f32];
                command_long(
                    &mut p,
                    to,
                    mav::MavCmd::MAV_CMD_DO_SET_MODE,
                    params,
                    *confirmation,
                )
            }
            Tx::Arm { confirmation } => command_long(
                &mut p,
                to,
                mav::MavCmd::MAV_CMD_COMPONENT_ARM_DISARM,
                [1.0, 0.0, 0.0],
                *confirmation,
            ),
            // param1 0: disarm, never forced (wire::arm_disarm).
            Tx::OneShot(OneShot::Disarm) => command_long(
                &mut p,
                to,
                mav::MavCmd::MAV_CMD_COMPONENT_ARM_DISARM,
                [0.0; 3],
                0,
            ),
            #[cfg(feature = "failure-injection")]
            Tx::OneShot(OneShot::InjectFailure {
                unit,
                kind,
                instance,
            }) => command_long(
                &mut p,
                to,
                mav::MavCmd::MAV_CMD_INJECT_FAILURE,
                [*unit as f32, *kind as f32, *instance as f32],
                0,
            ),
            Tx::MissionSetCurrent(seq) => {
                p[..2].copy_from_slice(&seq.to_le_bytes());
                p[2] = to.system;
                p[3] = to.component;
                #[allow(deprecated)]
                // PX4 still takes MISSION_SET_CURRENT (wire::mission_set_current)
                meta::<mav::MISSION_SET_CURRENT_DATA>()
            }
            Tx::MissionCount(n) => {
                mission_count(
                    &mut p,
                    to,
                    *n,
                    mav::MavMissionType::MAV_MISSION_TYPE_MISSION,
                );
                meta::<mav::MISSION_COUNT_DATA>()
            }
            Tx::MissionItem(seq) => {
                let item = self.mission.items.get(*seq as usize)?;
                // By hand: no MAV_CMD enum conversion (items were validated when lodged).
                let m = wire::mission_item_int_payload(
                    to,
                    item,
                    false,
                    mav::MavMissionType::MAV_MISSION_TYPE_MISSION,
                );
                p[..m.len()].copy_from_slice(&m);
                meta::<mav::MISSION_ITEM_INT_DATA>()
            }
            #[cfg(feature = "mission-download")]
            Tx::MissionRequestList => return enc.encode(&wire::mission_request_list(to), buf).ok(),
            #[cfg(feature = "mission-download")]
            Tx::MissionRequestInt(seq) => {
                return enc.encode(&wire::mission_request_int(to, *seq), buf).ok()
            }
            Tx::MissionAck(r) => {
                mission_ack(
                    &mut p,
                    to,
                    *r,
                    mav::MavMissionType::MAV_MISSION_TYPE_MISSION,
                );
                meta::<mav::MISSION_ACK_DATA>()
            }
            #[cfg(feature = "mission-download")]
            Tx::MissionClearAll => return enc.encode(&wire::mission_clear_all(to), buf).ok(),
            #[cfg(feature = "geofence")]
            Tx::Geo(kind, g) => {
                use geofence::GeoTx;
                let ty = kind.mission_type();
                match g {
                    GeoTx::Count(n) => {
                        mission_count(&mut p, to, *n, ty);
                        meta::<mav::MISSION_COUNT_DATA>()
                    }
                    GeoTx::Item(seq) => {
                        let item = self.geo.item(*kind, *seq)?;
                        let m = wire::mission_item_int_payload(to, item, false, ty);
                        p[..m.len()].copy_from_slice(&m);
                        meta::<mav::MISSION_ITEM_INT_DATA>()
                    }
                    GeoTx::RequestList => {
                        return enc.encode(&wire::mission_request_list_of(to, ty), buf).ok()
                    }
                    GeoTx::RequestInt(seq) => {
                        return enc
                            .encode(&wire::mission_request_int_of(to, *seq, ty), buf)
                            .ok()
                    }
                    GeoTx::Ack(r) => {
                        mission_ack(&mut p, to, *r, ty);
                        meta::<mav::MISSION_ACK_DATA>()
                    }
                    GeoTx::ClearAll => {
                        return enc.encode(&wire::mission_clear_all_of(to, ty), buf).ok()
                    }
                }
            }
            Tx::OneShot(OneShot::Reposition {
                lat_e7,
                lon_e7,
                alt_amsl_m,
                yaw_ned_rad,
            }) => {
                // COMMAND_INT DO_REPOSITION as wire::reposition: param1 -1 (default speed),
                // param2 1, param4 the yaw; frame GLOBAL_INT; current and autocontinue 0.
                put_f32(&mut p, 0, -1.0);
                put_f32(&mut p, 4, 1.0);
                put_f32(&mut p, 12, *yaw_ned_rad);
                p[16..20].copy_from_slice(&lat_e7.to_le_bytes());
                p[20..24].copy_from_slice(&lon_e7.to_le_bytes());
                put_f32(&mut p, 24, *alt_amsl_m);
                p[28..30]
                    .copy_from_slice(&(mav::MavCmd::MAV_CMD_DO_REPOSITION as u16).to_le_bytes());
                p[30] = to.system;
                p[31] = to.component;
                // PX4's DO_REPOSITION takes GLOBAL_INT (docs/px4-wire.md §Reposition).
                #[allow(deprecated)]
                let frame = mav::MavFrame::MAV_FRAME_GLOBAL_INT as u8;
                p[32] = frame;
                meta::<mav::COMMAND_INT_DATA>()
            }
            Tx::OneShot(OneShot::Param { name, bits, int32 }) => {
                // The name was checked when queued (1..=16 bytes); an empty one is no frame,
                // as wire::param_set_bits refuses it.
                if name.is_empty() {
                    return None;
                }
                p[..4].copy_from_slice(&bits.to_le_bytes());
                p[4] = to.system;
                p[5] = to.component;
                p[6..6 + name.len()].copy_from_slice(name.as_bytes());
                p[22] = if *int32 {
                    mav::MavParamType::MAV_PARAM_TYPE_INT32
                } else {
                    mav::MavParamType::MAV_PARAM_TYPE_REAL32
                } as u8;
                meta::<mav::PARAM_SET_DATA>()
            }
        };
        enc.encode_payload(id, extra, &p[..len], buf).ok()
    }

    /// When to call `poll_transmit` next if no frame arrives first (wall clock). Covers the
    /// periodic streams and the wall-time timers; sim-time timers run out on frames.
    #[must_use = "the driver must call back by then"]
    pub fn next_deadline(&self) -> Option<Instant> {
        let mut d = Soonest::default();
        self.streams(&mut d, true);
        if self.connected {
            if !self.outbox.is_empty() {
                d.at(Instant::ZERO);
            }
            for x in self.timers().into_iter().flatten() {
                d.at(x);
            }
        }
        // A deadline at or before the last poll was due then and did not fire: something other
        // than time holds it (a mode to confirm, a position to arrive), and a frame or a verb,
        // each followed by a poll, will release it. Reporting it would make the driver spin.
        match (d.0, self.last_poll) {
            (Some(x), Some(p)) if x <= p => self.next_periodic(p),
            _ => d.0,
        }
    }

    /// The periodic streams' next wall deadline (always in the future after a poll), and the
    /// wall timers still ahead of the last poll, `p`.
    fn next_periodic(&self, p: Instant) -> Option<Instant> {
        let mut d = Soonest::default();
        self.streams(&mut d, false);
        for x in self.timers().into_iter().flatten() {
            if x > p {
                d.at(x);
            }
        }
        d.0
    }

    /// Take in the periodic streams' next sends: our heartbeat, and while connected the sticks
    /// and setpoints being streamed. A stream never sent is due at once with `unsent_now`, else
    /// it has no deadline.
    #[inline(never)] // both deadline paths: one copy
    fn streams(&self, d: &mut Soonest, unsent_now: bool) {
        let mut one = |last: &Option<Stamp>, period_ms: u64| match last {
            Some(s) => d.at(s.wall_after(period_ms)),
            None if unsent_now => d.at(Instant::ZERO),
            None => {}
        };
        one(&self.hb_last, self.t.heartbeat_ms);
        if !self.connected {
            return;
        }
        if self.stream_sticks().is_some() {
            one(&self.rc_last, self.t.rc_ms);
        }
        #[cfg(feature = "setpoints")]
        if self.sp.is_some() {
            one(&self.sp_last, self.t.rc_ms);
        }
    }

    /// The wall deadlines of each layer's timers: parameter sets, requests, the mission
    /// transfer, the geofence and rally transfers.
    fn timers(&self) -> [Option<Instant>; 4] {
        #[cfg(feature = "geofence")]
        let geo = self.geo.deadline(&self.t);
        #[cfg(not(feature = "geofence"))]
        let geo = None;
        #[cfg(feature = "confirmed-params")]
        let params = self.params.deadline(&self.t);
        #[cfg(not(feature = "confirmed-params"))]
        let params = None;
        [
            params,
            self.req.deadline(&self.t),
            self.mission.deadline(&self.t),
            geo,
        ]
    }

    /// The link's measured round trip (RFC 6298 SRTT/RTTVAR, in the timer clock: sim ms once
    /// the vehicle's clock is known) that the retry timers follow.
    pub fn link_rtt(&self) -> &RttEstimator {
        &self.t.rtt
    }

    /// The retry timers now, ms of the timer clock: (commands, mission-protocol requests).
    pub fn retry_timers_ms(&self) -> (u64, u64) {
        (self.t.command_timer_ms(), self.t.mission_timer_ms())
    }

    /// The next thing the application must know, oldest first.
    #[must_use = "a polled event is gone from the queue"]
    pub fn poll_event(&mut self) -> Option<OffboardEvent> {
        self.events.q.pop_front()
    }

    /// Events dropped because the queue was full (the application did not drain it).
    pub fn events_lost(&self) -> u32 {
        self.events.lost
    }
}
