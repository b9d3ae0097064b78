//! Refusals: reading COMMAND_ACK, collecting the STATUSTEXTs that explain a refusal, and
//! giving a request up (with what was ordered after it).

use super::{Awaiting, OpenRefusal, Requests};
use super::{ACK_WAIT_MS, EXPLAIN_SEVERITY};
use crate::mode::Mode;
use crate::offboard::clock::Stamp;
use crate::offboard::config::Timing;
use crate::offboard::events::{Command, GaveUp, GiveUpReason, Refusal, Request, REFUSAL_TEXT_LEN};
use crate::offboard::{EventQueue, OffboardEvent};
use crate::telemetry::{fit, Telemetry};
use heapless::String;
use mavlink::dialects::common as mav;

/// One refusal of an outstanding request, as [`Requests::refused`] takes it.
struct Refused {
    request: Request,
    command: Command,
    /// The COMMAND_ACK's MAV_RESULT; `None` for a gesture that did not arm.
    result: Option<u8>,
    /// The request's refusals so far, this one included.
    refusals: u8,
    /// The last text seen when the request went out: later ones explain the refusal.
    text_seq: u32,
    /// MAV_RESULT_UNSUPPORTED: given up at once.
    unsupported: bool,
}

impl Requests {
    /// A failure was seen: the arm's settle window restarts, a gesture being held is over.
    pub(super) fn fail<const T: usize>(
        &mut self,
        now: Stamp,
        tel: &Telemetry<T>,
        t: &Timing,
        ev: &mut EventQueue,
    ) {
        let Some(arm) = self.arm.as_mut() else {
            return;
        };
        arm.settle_from = now;
        if arm.gesture_since.take().is_some() {
            self.gesture_refused(now, tel, t, ev);
        }
    }

    pub(super) fn gesture_refused<const T: usize>(
        &mut self,
        now: Stamp,
        tel: &Telemetry<T>,
        t: &Timing,
        ev: &mut EventQueue,
    ) {
        let Some(arm) = self.arm.as_mut() else {
            return;
        };
        arm.gesture_since = None;
        arm.settle_from = now;
        arm.refusals = arm.refusals.saturating_add(1);
        let (refusals, text_seq) = (arm.refusals, arm.text_seq);
        let refusal = Refused {
            request: Request::Arm,
            command: Command::ArmGesture,
            result: None,
            refusals,
            text_seq,
            unsupported: false,
        };
        self.refused(now, tel, t, ev, refusal);
    }

    /// A request was refused (its `refusals`-th time): give it up at once when unsupported,
    /// after `max_refusals`; restart the arm's settle window; collect the refusal's texts.
    #[inline(never)] // the mode, arm and gesture refusals: one copy
    fn refused<const T: usize>(
        &mut self,
        now: Stamp,
        tel: &Telemetry<T>,
        t: &Timing,
        ev: &mut EventQueue,
        r: Refused,
    ) {
        let gave_up = if r.unsupported {
            Some(self.give_up(r.request, GiveUpReason::Unsupported))
        } else if r.refusals >= t.max_refusals {
            let refusals = r.refusals;
            Some(self.give_up(r.request, GiveUpReason::Refused { refusals }))
        } else {
            None
        };
        // (After a gesture the window already restarted at `now` and nothing is held: no-op.)
        self.fail(now, tel, t, ev);
        self.open_refusal(now, tel, ev, r.command, r.result, r.text_seq, gave_up);
    }

    pub(super) fn on_ack<const T: usize>(
        &mut self,
        now: Stamp,
        tel: &Telemetry<T>,
        ack: &mav::COMMAND_ACK_DATA,
        t: &mut Timing,
        ev: &mut EventQueue,
    ) {
        let result = ack.result as u8;
        let accepted = ack.result == mav::MavResult::MAV_RESULT_ACCEPTED;
        if ack.result == mav::MavResult::MAV_RESULT_IN_PROGRESS {
            return;
        }
        let unsupported = ack.result == mav::MavResult::MAV_RESULT_UNSUPPORTED;
        match ack.command {
            mav::MavCmd::MAV_CMD_DO_SET_MODE => {
                let Some(m) = self.mode.as_mut().filter(|m| m.tx.sends > 0) else {
                    return;
                };
                m.tx.answered(now, &mut t.rtt);
                if accepted {
                    m.accepts = m.accepts.saturating_add(1);
                    return;
                }
                m.refusals = m.refusals.saturating_add(1);
                let refusal = Refused {
                    request: Request::Mode(m.mode),
                    command: Command::SetMode(m.mode),
                    result: Some(result),
                    refusals: m.refusals,
                    text_seq: m.text_seq,
                    unsupported,
                };
                self.refused(now, tel, t, ev, refusal);
            }
            mav::MavCmd::MAV_CMD_COMPONENT_ARM_DISARM => {
                let arm_order = self
                    .arm
                    .as_ref()
                    .filter(|a| !a.gesture && a.tx.sends > 0)
                    .map(|a| a.order);
                let disarm = self.disarm.filter(|d| !d.sent.timer_done(now, ACK_WAIT_MS));
                let for_arm = match (arm_order, disarm) {
                    (Some(a), Some(d)) => a.wrapping_sub(d.order) as i32 > 0,
                    (Some(_), None) => true,
                    _ => false,
                };
                if for_arm {
                    let Some(a) = self.arm.as_mut() else { return };
                    a.tx.answered(now, &mut t.rtt);
                    if accepted {
                        return; // the heartbeat confirms it
                    }
                    a.refusals = a.refusals.saturating_add(1);
                    let refusal = Refused {
                        request: Request::Arm,
                        command: Command::Arm,
                        result: Some(result),
                        refusals: a.refusals,
                        text_seq: a.text_seq,
                        unsupported,
                    };
                    self.refused(now, tel, t, ev, refusal);
                } else if let Some(d) = disarm {
                    self.disarm = None;
                    if !accepted {
                        self.open_refusal(
                            now,
                            tel,
                            ev,
                            Command::Disarm,
                            Some(result),
                            d.text_seq,
                            None,
                        );
                    }
                }
            }
            #[cfg(feature = "failure-injection")]
            mav::MavCmd::MAV_CMD_INJECT_FAILURE => {
                let awaited = self.inject.take();
                let ack = (accepted, result);
                self.one_shot_ack(now, tel, ev, awaited, Command::InjectFailure, ack);
            }
            #[cfg(feature = "vtol")]
            mav::MavCmd::MAV_CMD_DO_VTOL_TRANSITION => {
                let awaited = self.transition.take();
                let ack = (accepted, result);
                self.one_shot_ack(now, tel, ev, awaited, Command::VtolTransition, ack);
            }
            mav::MavCmd::MAV_CMD_DO_REPOSITION => {
                let awaited = self.reposition.take();
                let ack = (accepted, result);
                let _r = self.one_shot_ack(now, tel, ev, awaited, Command::Reposition, ack);
                // Commander acks it; PX4's navigator may still refuse it in words (the text
                // can come before or after the ack).
                #[cfg(feature = "geofence")]
                if let Some(r) = _r {
                    self.reposition_accepted = Some(r);
                    self.reposition_said(now, tel, ev);
                }
            }
            _ => {}
        }
    }

    /// The ack `(accepted, result)` of the one-shot command awaited in `awaited` (a goto, a
    /// failure injection): a refusal opened when not accepted; the awaited send when accepted
    /// (for what follows an acceptance). An ack later than [`ACK_WAIT_MS`] is nobody's.
    fn one_shot_ack<const T: usize>(
        &mut self,
        now: Stamp,
        tel: &Telemetry<T>,
        ev: &mut EventQueue,
        awaited: Option<Awaiting>,
        command: Command,
        (accepted, result): (bool, u8),
    ) -> Option<Awaiting> {
        let a = awaited.filter(|a| !a.sent.timer_done(now, ACK_WAIT_MS))?;
        if accepted {
            return Some(a);
        }
        self.open_refusal(now, tel, ev, command, Some(result), a.text_seq, None);
        None
    }

    /// Drop `request` and what was ordered after it.
    pub(super) fn give_up(&mut self, request: Request, reason: GiveUpReason) -> GaveUp {
        let mut dropped_arm = false;
        let mut dropped_start = false;
        match request {
            Request::Mode(_) => {
                self.mode = None;
                dropped_arm = self.arm.take().is_some();
                dropped_start = self.restart.take().is_some();
            }
            Request::Arm => self.arm = None,
            Request::MissionRestart => {
                self.restart = None;
                if matches!(&self.mode, Some(m) if m.mode == Mode::Mission) {
                    self.mode = None;
                    dropped_start = true;
                }
                dropped_arm = self.arm.take().is_some();
            }
        }
        GaveUp {
            request,
            reason,
            dropped_arm,
            dropped_start,
        }
    }

    #[allow(clippy::too_many_arguments)]
    #[inline(never)] // reached from every refusal path: one copy
    pub(super) fn open_refusal<const T: usize>(
        &mut self,
        now: Stamp,
        tel: &Telemetry<T>,
        ev: &mut EventQueue,
        command: Command,
        result: Option<u8>,
        text_seq: u32,
        gave_up: Option<GaveUp>,
    ) {
        self.finalize(tel, ev);
        self.open = Some(OpenRefusal {
            command,
            result,
            text_seq,
            opened: now,
            gave_up,
        });
    }

    /// Report the open refusal with the texts that came with it.
    pub(super) fn finalize<const T: usize>(&mut self, tel: &Telemetry<T>, ev: &mut EventQueue) {
        let Some(open) = self.open.take() else {
            return;
        };
        let mut text: String<REFUSAL_TEXT_LEN> = String::new();
        for t in tel
            .texts()
            .after(open.text_seq)
            .filter(|t| t.severity <= EXPLAIN_SEVERITY)
        {
            if !text.is_empty() && text.push_str("; ").is_err() {
                break;
            }
            // The longest prefix that fits, cut at a character boundary.
            let _ = text.push_str(fit(t.text.as_str(), REFUSAL_TEXT_LEN - text.len()));
        }
        let refusal = Refusal {
            command: open.command,
            result: open.result,
            text,
        };
        ev.push(OffboardEvent::Refused(refusal.clone()));
        self.last_refusal = Some(refusal);
        if let Some(g) = open.gave_up {
            ev.push(OffboardEvent::GaveUp(g));
        }
    }
}
