//! Outstanding requests: a mode, an arm, a mission restart. Each is re-commanded at a bounded
//! rate until telemetry confirms it, and cleared the moment it does, so the machine never
//! re-commands a state PX4 left of its own accord (Takeoff hands over to Hold; PX4 disarms
//! itself after landing).
//!
//! * **Confirmation** comes from telemetry: the HEARTBEAT's mode and armed flag, a
//!   MISSION_CURRENT reporting item 0. A mode whose real ACCEPTED ack came (DO_SET_MODE as
//!   COMMAND_LONG is acked twice by PX4: first always ACCEPTED by the mavlink module, then the
//!   commander's real answer) but that two heartbeats later is still not shown is taken as
//!   done: PX4 switched and moved on by itself, so it is not commanded again.
//! * **Refusals**: any COMMAND_ACK other than ACCEPTED/IN_PROGRESS for a command we sent. Each
//!   is reported with the warning-or-worse STATUSTEXTs that arrived from the send until
//!   `refusal_text_ms` after the ack (PX4 sends "Arming denied: …" in two chunks, around the
//!   ack), and resets the arm settle window. After `max_refusals` (or at once for
//!   UNSUPPORTED) the request is given up and reported; after `max_sends` unconfirmed sends too.
//! * **Ordering**: the arm waits for any pending mode and restart; Mission mode waits for a
//!   pending restart (over a finished mission it would end at once). Giving up a mode or a
//!   restart drops the arm ordered after it: it would arm in the wrong mode.
//! * **Armable** (as the Python client): pending mode confirmed, a position estimate
//!   (GLOBAL_POSITION_INT) has arrived, and no failure for `wait_clear_s` since the request. A
//!   failure is a refusal, a STATUSTEXT of severity CRITICAL or worse (PX4's "Preflight Fail: …",
//!   "Arming denied: …"), a SYS_STATUS with PX4's prearm-check bit clear, or a HEARTBEAT
//!   system_status CRITICAL or EMERGENCY. Each failure restarts the window.

mod refusals;

use crate::mode::Mode;
use crate::msg::{Frame, Msg};
use crate::offboard::clock::{Soonest, Stamp};
use crate::offboard::config::Timing;
use crate::offboard::events::{Command, GaveUp, GiveUpReason, Refusal, Request};
use crate::offboard::retry::{Due, Resend};
use crate::offboard::{EventQueue, Tx};
use crate::rc::RcSticks;
use crate::telemetry::Telemetry;
use mavlink::dialects::common as mav;

/// MAV_SEVERITY at or below which a STATUSTEXT counts as a failure (CRITICAL).
const FAIL_SEVERITY: u8 = 2;
/// MAV_SEVERITY at or below which a STATUSTEXT explains a refusal (WARNING).
const EXPLAIN_SEVERITY: u8 = 4;
/// Acks to a one-shot command (disarm, goto) later than this are not attributed to it, and
/// its silence is reported, ms (sim ms once sim time is known).
pub const ACK_WAIT_MS: u64 = 5_000;
/// What PX4's navigator says when it will not fly a DO_REPOSITION its commander has acked
/// ACCEPTED (the target is outside the geofence): the goto is refused all the same (with the
/// `geofence` feature; without it such a goto just never arrives).
#[cfg(feature = "geofence")]
pub const REPOSITION_REFUSED: &str = "Reposition is outside geofence";
/// Accepted acks that make a DO_SET_MODE's acceptance real (PX4 acks it twice).
const REAL_MODE_ACCEPTS: u8 = 2;
/// Heartbeats after a real accept without the mode before it counts as done.
const HEARTBEATS_AFTER_ACCEPT: u8 = 2;

#[derive(Debug, Clone)]
pub(crate) struct ModeReq {
    pub mode: Mode,
    tx: Resend,
    refusals: u8,
    accepts: u8,
    heartbeats_after_accept: u8,
    text_seq: u32,
}

#[derive(Debug, Clone)]
pub(crate) struct ArmReq {
    pub gesture: bool,
    settle_from: Stamp,
    tx: Resend,
    refusals: u8,
    text_seq: u32,
    gesture_since: Option<Stamp>,
    order: u32,
}

#[derive(Debug, Clone)]
pub(crate) struct RestartReq {
    tx: Resend,
}

/// A one-shot command whose ack is awaited (disarm, goto).
#[derive(Debug, Clone, Copy)]
struct Awaiting {
    sent: Stamp,
    text_seq: u32,
    order: u32,
}

/// A refusal whose explanation is still being collected.
#[derive(Debug, Clone)]
struct OpenRefusal {
    command: Command,
    result: Option<u8>,
    text_seq: u32,
    opened: Stamp,
    gave_up: Option<GaveUp>,
}

/// Why an arm request is not going out yet (see `Offboard::arm_wait`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum ArmWait {
    /// No HEARTBEAT from the vehicle yet.
    NotConnected,
    /// A MISSION_SET_CURRENT 0 is not confirmed yet.
    Restart,
    /// This mode is not confirmed yet.
    Mode(Mode),
    /// No GLOBAL_POSITION_INT yet: the estimator has no position.
    NoPosition,
    /// Failure-free time still needed, ms (sim ms once sim time is known).
    Settling {
        /// Remaining, ms.
        remaining_ms: u64,
    },
}

/// The outstanding requests and the refusal bookkeeping.
#[derive(Debug, Clone, Default)]
pub(crate) struct Requests {
    pub mode: Option<ModeReq>,
    pub arm: Option<ArmReq>,
    pub restart: Option<RestartReq>,
    disarm: Option<Awaiting>,
    reposition: Option<Awaiting>,
    #[cfg(feature = "failure-injection")]
    inject: Option<Awaiting>,
    #[cfg(feature = "vtol")]
    transition: Option<Awaiting>,
    /// A goto PX4's commander accepted, watched for the navigator's refusal text (see
    /// [`REPOSITION_REFUSED`]) until [`ACK_WAIT_MS`] after it was sent.
    #[cfg(feature = "geofence")]
    reposition_accepted: Option<Awaiting>,
    open: Option<OpenRefusal>,
    pub last_refusal: Option<Refusal>,
    texts_seen: u32,
    order: u32,
}

/// What holds requests back this poll: a mission start waits for its upload (`start`), a
/// takeoff's Takeoff mode and arm wait for its altitude to be stored (`takeoff`).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Holds {
    pub start: bool,
    pub takeoff: bool,
}

/// A one-shot command unanswered for [`ACK_WAIT_MS`]: no longer awaited, and its silence
/// reported.
#[inline(never)] // disarm and goto: one copy
fn expire(slot: &mut Option<Awaiting>, now: Stamp, command: Command, ev: &mut EventQueue) {
    if slot.is_some_and(|a| a.sent.timer_done(now, ACK_WAIT_MS)) {
        *slot = None;
        ev.push(crate::offboard::OffboardEvent::NoAck(command));
    }
}

/// Whether the heartbeat's mode, `shown`, is `mode`.
#[inline(never)] // a derived comparison of an enum with a data variant, asked twice: one copy
fn shows(shown: Option<Mode>, mode: Mode) -> bool {
    shown == Some(mode)
}

impl Requests {
    fn next_order(&mut self) -> u32 {
        self.order = self.order.wrapping_add(1);
        self.order
    }

    pub fn request_mode(&mut self, mode: Mode) {
        self.mode = Some(ModeReq {
            mode,
            tx: Resend::new(),
            refusals: 0,
            accepts: 0,
            heartbeats_after_accept: 0,
            text_seq: 0,
        });
    }

    pub fn request_arm(&mut self, now: Stamp, gesture: bool) {
        self.arm = Some(ArmReq {
            gesture,
            settle_from: now,
            tx: Resend::new(),
            refusals: 0,
            text_seq: 0,
            gesture_since: None,
            order: 0,
        });
    }

    pub fn request_restart(&mut self) {
        self.restart = Some(RestartReq { tx: Resend::new() });
    }

    /// A disarm (or goto) went out: attribute the next ack for it.
    pub fn sent_disarm<const T: usize>(&mut self, now: Stamp, tel: &Telemetry<T>) {
        let order = self.next_order();
        self.disarm = Some(Awaiting {
            sent: now,
            text_seq: tel.texts().last_seq(),
            order,
        });
    }

    /// A failure injection went out: attribute the next ack for it.
    #[cfg(feature = "failure-injection")]
    pub fn sent_inject<const T: usize>(&mut self, now: Stamp, tel: &Telemetry<T>) {
        let order = self.next_order();
        self.inject = Some(Awaiting {
            sent: now,
            text_seq: tel.texts().last_seq(),
            order,
        });
    }

    /// A VTOL transition went out: attribute the next ack for it.
    #[cfg(feature = "vtol")]
    pub fn sent_transition<const T: usize>(&mut self, now: Stamp, tel: &Telemetry<T>) {
        let order = self.next_order();
        self.transition = Some(Awaiting {
            sent: now,
            text_seq: tel.texts().last_seq(),
            order,
        });
    }

    /// An accepted goto whose refusal PX4's navigator has said since it went out: refused
    /// (with ACCEPTED as its ack's result, and the words that came).
    #[cfg(feature = "geofence")]
    pub(super) fn reposition_said<const T: usize>(
        &mut self,
        now: Stamp,
        tel: &Telemetry<T>,
        ev: &mut EventQueue,
    ) {
        let Some(a) = self.reposition_accepted else {
            return;
        };
        if tel
            .texts()
            .after(a.text_seq)
            .any(|x| x.text.starts_with(REPOSITION_REFUSED))
        {
            self.reposition_accepted = None;
            let accepted = mav::MavResult::MAV_RESULT_ACCEPTED as u8;
            self.open_refusal(
                now,
                tel,
                ev,
                Command::Reposition,
                Some(accepted),
                a.text_seq,
                None,
            );
        }
    }

    pub fn sent_reposition<const T: usize>(&mut self, now: Stamp, tel: &Telemetry<T>) {
        #[cfg(feature = "geofence")]
        {
            self.reposition_accepted = None;
        }
        let order = self.next_order();
        self.reposition = Some(Awaiting {
            sent: now,
            text_seq: tel.texts().last_seq(),
            order,
        });
    }

    /// Whether the arm is a gesture that is being presented right now.
    pub fn gesture_sticks(&self) -> Option<RcSticks> {
        match &self.arm {
            Some(a) if a.gesture => Some(if a.gesture_since.is_some() {
                RcSticks::ARM_GESTURE
            } else {
                RcSticks::NEUTRAL
            }),
            _ => None,
        }
    }

    fn armable<const T: usize>(
        &self,
        now: Stamp,
        tel: &Telemetry<T>,
        t: &Timing,
    ) -> Option<ArmWait> {
        let arm = self.arm.as_ref()?;
        if !tel.connected() {
            return Some(ArmWait::NotConnected);
        }
        if self.restart.is_some() {
            return Some(ArmWait::Restart);
        }
        if let Some(m) = &self.mode {
            return Some(ArmWait::Mode(m.mode));
        }
        if tel.global_position().is_none() {
            return Some(ArmWait::NoPosition);
        }
        let waited = arm.settle_from.timer_ms(now);
        if waited < t.wait_clear_ms {
            return Some(ArmWait::Settling {
                remaining_ms: t.wait_clear_ms - waited,
            });
        }
        None
    }

    /// Why a pending arm is not going out; `None` when none is pending or it is armable.
    pub fn arm_wait<const T: usize>(
        &self,
        now: Stamp,
        tel: &Telemetry<T>,
        t: &Timing,
    ) -> Option<ArmWait> {
        self.armable(now, tel, t)
    }

    /// Take in one frame the telemetry accepted (after telemetry was updated).
    pub fn on_frame<const T: usize>(
        &mut self,
        now: Stamp,
        tel: &Telemetry<T>,
        frame: &Frame,
        t: &mut Timing,
        rc: &mut Option<RcSticks>,
        ev: &mut EventQueue,
    ) {
        // Texts may complete on any frame (chunk reassembly, expiry): look at every new one.
        let last = tel.texts().last_seq();
        if last != self.texts_seen {
            let seen = self.texts_seen;
            self.texts_seen = last;
            if tel.texts().after(seen).any(|x| x.severity <= FAIL_SEVERITY) {
                self.fail(now, tel, t, ev);
            }
            #[cfg(feature = "geofence")]
            self.reposition_said(now, tel, ev);
        }
        match &frame.msg {
            Msg::Heartbeat(hb) => {
                if matches!(
                    hb.system_status,
                    mav::MavState::MAV_STATE_CRITICAL | mav::MavState::MAV_STATE_EMERGENCY
                ) {
                    self.fail(now, tel, t, ev);
                }
                if let Some(m) = self.mode.as_mut() {
                    if !shows(tel.mode(), m.mode) && m.accepts >= REAL_MODE_ACCEPTS {
                        m.heartbeats_after_accept = m.heartbeats_after_accept.saturating_add(1);
                        if m.heartbeats_after_accept >= HEARTBEATS_AFTER_ACCEPT {
                            // Accepted, and PX4 has left it of its own accord: done.
                            self.mode = None;
                        }
                    }
                }
            }
            Msg::SysStatus(_) if tel.prearm_ok() == Some(false) => self.fail(now, tel, t, ev),
            Msg::CommandAck(ack) => self.on_ack(now, tel, ack, t, ev),
            Msg::MissionCurrent(mc) if mc.seq == 0 => self.restart = None,
            _ => {}
        }
        self.confirm(tel, rc);
    }

    /// Clear what telemetry shows done.
    pub fn confirm<const T: usize>(&mut self, tel: &Telemetry<T>, rc: &mut Option<RcSticks>) {
        if matches!(&self.mode, Some(m) if shows(tel.mode(), m.mode)) {
            self.mode = None;
        }
        if tel.armed() == Some(true) && self.arm.take().is_some_and(|a| a.gesture) {
            // Gesture done: back to neutral sticks.
            *rc = Some(RcSticks::NEUTRAL);
        }
    }

    /// Timers: the refusal text window and the gesture hold.
    pub fn tick<const T: usize>(
        &mut self,
        now: Stamp,
        tel: &Telemetry<T>,
        t: &Timing,
        ev: &mut EventQueue,
    ) {
        if matches!(&self.open, Some(o) if o.opened.either_done(now, t.text_ms)) {
            self.finalize(tel, ev);
        }
        expire(&mut self.disarm, now, Command::Disarm, ev);
        expire(&mut self.reposition, now, Command::Reposition, ev);
        #[cfg(feature = "failure-injection")]
        expire(&mut self.inject, now, Command::InjectFailure, ev);
        #[cfg(feature = "vtol")]
        expire(&mut self.transition, now, Command::VtolTransition, ev);
        #[cfg(feature = "geofence")]
        if self
            .reposition_accepted
            .is_some_and(|a| a.sent.timer_done(now, ACK_WAIT_MS))
        {
            self.reposition_accepted = None;
        }
        if tel.armed() == Some(true) {
            return;
        }
        let gesture = matches!(&self.arm, Some(a) if a.gesture);
        if !gesture {
            return;
        }
        let armable = self.armable(now, tel, t).is_none();
        let last_seq = tel.texts().last_seq();
        let Some(arm) = self.arm.as_mut() else { return };
        match (armable, arm.gesture_since) {
            (true, None) => {
                arm.gesture_since = Some(now);
                arm.text_seq = last_seq;
            }
            (true, Some(since)) if since.timer_done(now, t.gesture_ms) => {
                self.gesture_refused(now, tel, t, ev);
            }
            (false, Some(_)) => arm.gesture_since = None,
            _ => {}
        }
    }

    /// The next command this layer wants on the wire, if any is due. With `hold_start` (a
    /// mission upload is in flight) a mission start waits: neither its restart nor Mission mode
    /// is sent, and the arm ordered after them waits with them.
    #[inline(never)] // inlined, it grew its one caller more than it weighs (thumbv7em flash)
    pub fn poll<const T: usize>(
        &mut self,
        now: Stamp,
        tel: &Telemetry<T>,
        t: &mut Timing,
        rc: &mut Option<RcSticks>,
        ev: &mut EventQueue,
        holds: Holds,
    ) -> Option<Tx> {
        let hold_start = holds.start;
        self.confirm(tel, rc);
        let timer = t.command_timer_ms();
        if let Some(r) = self.restart.as_mut().filter(|_| !hold_start) {
            match r.tx.poll(now, timer, t.max_sends, &mut t.rtt) {
                Due::Wait => {}
                Due::Send => return Some(Tx::MissionSetCurrent(0)),
                Due::GiveUp { sends } => self.unconfirmed(tel, ev, Request::MissionRestart, sends),
            }
        }
        let restarting = self.restart.is_some();
        if let Some(m) = self.mode.as_mut() {
            // Mission mode waits for the restart (over a finished mission it would end at once)
            // and for an upload in flight (PX4 has no valid mission until it is accepted).
            let blocked = ((restarting || hold_start) && m.mode == Mode::Mission)
                || (holds.takeoff && m.mode == Mode::Takeoff);
            let waiting_accept = m.accepts >= REAL_MODE_ACCEPTS;
            if !blocked && !waiting_accept {
                match m.tx.poll(now, timer, t.max_sends, &mut t.rtt) {
                    Due::Wait => {}
                    Due::Send => {
                        m.accepts = 0;
                        m.heartbeats_after_accept = 0;
                        m.text_seq = tel.texts().last_seq();
                        return Some(Tx::SetMode {
                            mode: m.mode,
                            confirmation: m.tx.sends - 1,
                        });
                    }
                    Due::GiveUp { sends } => {
                        let mode = m.mode;
                        self.unconfirmed(tel, ev, Request::Mode(mode), sends);
                    }
                }
            }
        }
        let arm_due = !holds.takeoff
            && matches!(&self.arm, Some(a) if !a.gesture
            && a.tx.due(now, timer));
        if arm_due && self.armable(now, tel, t).is_none() {
            let order = self.next_order();
            let last_seq = tel.texts().last_seq();
            let a = self.arm.as_mut()?;
            if let Due::GiveUp { sends } = a.tx.poll(now, timer, t.max_sends, &mut t.rtt) {
                self.unconfirmed(tel, ev, Request::Arm, sends);
                return None;
            }
            // Due (checked above): sent.
            let confirmation = a.tx.sends - 1;
            a.text_seq = last_seq;
            a.order = order;
            return Some(Tx::Arm { confirmation });
        }
        None
    }

    /// `request` went out `sends` times, the last allowed, without being confirmed: report any
    /// open refusal first, then give it up.
    #[inline(never)] // the restart, mode and arm: one copy
    fn unconfirmed<const T: usize>(
        &mut self,
        tel: &Telemetry<T>,
        ev: &mut EventQueue,
        request: Request,
        sends: u8,
    ) {
        self.finalize(tel, ev);
        let g = self.give_up(request, GiveUpReason::Unconfirmed { sends });
        ev.push(crate::offboard::OffboardEvent::GaveUp(g));
    }

    /// The upload a pending mission start waited for failed: drop the start (restart, Mission
    /// mode, the arm after them) and say so.
    pub fn upload_failed(&mut self, ev: &mut EventQueue) {
        if self.restart.is_some() {
            let g = self.give_up(Request::MissionRestart, GiveUpReason::UploadFailed);
            ev.push(crate::offboard::OffboardEvent::GaveUp(g));
        }
    }

    /// Wall deadlines of this layer's wall-time timers (sim-time timers wait for frames).
    pub fn deadline(&self, t: &Timing) -> Option<crate::time::Instant> {
        let timer = t.command_timer_ms();
        let mut d = Soonest::default();
        if let Some(o) = &self.open {
            d.at(o.opened.wall_after(t.text_ms));
        }
        if let Some(r) = &self.restart {
            d.timer(r.tx.last_tx.as_ref(), timer);
        }
        for a in [&self.disarm, &self.reposition].into_iter().flatten() {
            d.timer(Some(&a.sent), ACK_WAIT_MS);
        }
        #[cfg(feature = "failure-injection")]
        if let Some(a) = &self.inject {
            d.timer(Some(&a.sent), ACK_WAIT_MS);
        }
        #[cfg(feature = "vtol")]
        if let Some(a) = &self.transition {
            d.timer(Some(&a.sent), ACK_WAIT_MS);
        }
        if let Some(m) = &self.mode {
            d.timer(m.tx.last_tx.as_ref(), timer);
        }
        if let Some(a) = &self.arm {
            d.timer(Some(&a.settle_from), t.wait_clear_ms);
            d.timer(a.tx.last_tx.as_ref(), timer);
            d.timer(a.gesture_since.as_ref(), t.gesture_ms);
        }
        d.0
    }
}
