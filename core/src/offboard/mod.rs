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
pub use queries::{News, Pending, FW_ALT_ACCEPT_M, FW_LOITER_REACH_M};
pub use requests::{ArmWait, ACK_WAIT_MS};
pub use rtt::{RttEstimator, MAX_BACKOFF_SHIFT, RTO_CEILING_MS};
#[cfg(feature = "setpoints")]
pub use setpoint::{Setpoint, Yaw};
pub use verbs::{check_action_for, TAKEOFF_ALT_PARAM};

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
    /// DO_VTOL_TRANSITION to fixed-wing (`fw`) or multicopter flight.
    #[cfg(feature = "vtol")]
    VtolTransition {
        fw: bool,
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
                #[cfg(feature = "vtol")]
                OneShot::VtolTransition { .. } => self.req.sent_transition(st, tel),
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

    /// Encode `tx` ([`wire::encode_tx`]) with what the machine knows: the vehicle's address,
    /// the item a MISSION_ITEM_INT carries (none held is no frame), the vehicle's clock.
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
        let item = match tx {
            Tx::MissionItem(seq) => Some(self.mission.items.get(*seq as usize)?),
            #[cfg(feature = "geofence")]
            Tx::Geo(kind, geofence::GeoTx::Item(seq)) => Some(self.geo.item(*kind, *seq)?),
            _ => None,
        };
        let time_boot_ms = tel.sim_ms().unwrap_or(0) as u32;
        wire::encode_tx(tx, to, item, time_boot_ms, enc, buf)
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
