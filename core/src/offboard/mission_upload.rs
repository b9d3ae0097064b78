//! Mission upload, the MAVLink mission protocol as PX4 runs it:
//!
//! ```text
//! us: MISSION_COUNT(n)          (resent on the retry timer until PX4 asks, mission_retries times)
//! PX4: MISSION_REQUEST_INT(seq) (or legacy MISSION_REQUEST; PX4 re-asks every ~0.26 s for 5 s)
//! us: MISSION_ITEM_INT(seq)     (always the _INT form, whichever request came)
//! …
//! PX4: MISSION_ACK(type, opaque_id)   type 0 = accepted, else a MAV_MISSION_RESULT
//! ```
//!
//! Each request is answered with the item it names, so duplicates and out-of-order requests
//! are served as asked, except a re-ask that arrives less than a measured round trip after we
//! sent that item (it crossed the item on the wire). A request for a seq the mission does not have ends the upload with
//! [`MissionError::RequestOutOfRange`] and a MISSION_ACK INVALID_SEQUENCE to PX4.
//!
//! **Lossy links.** PX4 re-asks for an item it lacks, but sends its final MISSION_ACK once: on
//! a radio that loses it, PX4 is done and silent while we wait. So when nothing of the transfer
//! comes for a retry timer after an item went out, that item is sent again (a *nudge*): PX4
//! still in the transfer takes it as a sign of life and re-asks; PX4 that already has every
//! item answers a repeat of the last one with its ACK again. PX4 that gave the transfer up
//! (5 s without hearing us) answers a nudge with an ACK that shows it is idle — an error
//! ("No transfer"), or ACCEPTED for a transfer whose last item it was never asked for — and
//! the upload starts again from MISSION_COUNT (at most `mission_retries` times). An upload
//! fails only when `mission_sends` nudges in a row went unanswered and PX4 has been silent in
//! the transfer for `mission_timeout_s`, or the restarts ran out.
//!
//! Round-trip samples ([`super::rtt`]): the first request answers the count; each request for
//! the next item (and the final ack) answers the item sent before it, when that item went out
//! once.

use super::clock::{Soonest, Stamp};
use super::config::Timing;
use super::events::{MissionError, OffboardEvent, TransferStage};
use super::mission::{MissionState, Transfer};
use super::retry::{Due, Resend};
use super::rtt::RttEstimator;
use super::{EventQueue, Tx};
use crate::time::Instant;
use heapless::Deque;
use mavlink::dialects::common as mav;

/// Item requests queued for answering (PX4 asks one at a time; a few cover re-asks).
const ANSWERS: usize = 4;

#[derive(Debug, Clone)]
pub(crate) struct Upload {
    count: u16,
    /// PX4 has asked for an item in this attempt: the count got through.
    asked: bool,
    /// PX4 has asked for the last item in this attempt: only then can its ACCEPTED end it.
    asked_last: bool,
    /// The count's sends.
    pub(super) tx: Resend,
    last_rx: Option<Stamp>,
    /// The last item answered: its seq, when it went out, and whether it went out only once.
    item: Option<(u16, Stamp, bool)>,
    answers: Deque<u16, ANSWERS>,
    /// The last item sent and its nudges since the vehicle last spoke in the transfer.
    nudge: Option<(u16, Resend)>,
    /// The last item that went out was a nudge, not an answer to a request.
    nudged: bool,
    /// Attempts started again from MISSION_COUNT after PX4 showed it had dropped the transfer.
    restarts: u8,
}

impl Upload {
    pub fn new(count: u16) -> Self {
        Upload {
            count,
            asked: false,
            asked_last: false,
            tx: Resend::new(),
            last_rx: None,
            item: None,
            answers: Deque::new(),
            nudge: None,
            nudged: false,
            restarts: 0,
        }
    }

    /// Start again from MISSION_COUNT, keeping the restart count.
    fn restart(&mut self) {
        let restarts = self.restarts.saturating_add(1);
        *self = Upload::new(self.count);
        self.restarts = restarts;
    }

    pub fn deadline(&self, t: &Timing, d: &mut Soonest) {
        if !self.answers.is_empty() {
            d.at(Instant::ZERO);
        } else if self.asked {
            match &self.nudge {
                Some((_, n)) if n.sends < t.mission_sends() => n.deadline(t.mission_timer_ms(), d),
                _ => d.timer(self.last_rx.as_ref(), t.mission_timeout_ms),
            }
        } else {
            self.tx.deadline(t.mission_timer_ms(), d);
        }
    }

    /// Whether a request for `seq` is a re-ask that crossed our answer on the wire: we sent
    /// that item less than a round trip ago ([`RttEstimator::in_flight_ms`]), so PX4 asked
    /// before it could have it
    /// (PX4 re-asks every ~0.26 s; over a radio's round trip each item would go out several
    /// times). A lost item is still answered, by the first re-ask a round trip after it.
    fn crossed(&self, now: Stamp, seq: u16, t: &Timing) -> bool {
        match (self.item, t.rtt.in_flight_ms(t.mission_retry_ms)) {
            (Some((s, at, _)), Some(window)) if s == seq => at.timer_ms(now) < window,
            _ => false,
        }
    }

    /// A request for `seq` (or, with `seq == count`, the final ack) arrived at `now`: the
    /// round trip of the item before it, when that went out once.
    fn sample_item(&mut self, now: Stamp, seq: u16, rtt: &mut RttEstimator) {
        if let Some((s, at, true)) = self.item {
            if seq == s.wrapping_add(1) {
                rtt.sample(at.timer_ms(now));
                self.item = None;
            }
        }
    }
}

impl<const N: usize> MissionState<N> {
    pub(super) fn on_request(&mut self, now: Stamp, seq: u16, t: &mut Timing, ev: &mut EventQueue) {
        let Transfer::Upload(u) = &mut self.transfer else {
            return;
        };
        let rtt = &mut t.rtt;
        if u.tx.sends == 0 {
            return; // not ours: our count has not gone out yet
        }
        if seq >= u.count {
            let count = u.count;
            self.ack_out = Some(mav::MavMissionResult::MAV_MISSION_INVALID_SEQUENCE);
            self.fail(MissionError::RequestOutOfRange { seq, count }, ev);
            return;
        }
        if u.asked {
            u.sample_item(now, seq, rtt);
        } else {
            u.tx.answered(now, rtt);
        }
        u.asked = true;
        u.asked_last |= seq + 1 == u.count;
        u.last_rx = Some(now);
        // The vehicle is in the transfer: the nudges start over from here.
        if let Some((_, n)) = &mut u.nudge {
            *n = Resend::sent_at(now);
        }
        if u.crossed(now, seq, t) {
            return;
        }
        if !u.answers.iter().any(|&s| s == seq) {
            if u.answers.is_full() {
                u.answers.pop_front();
            }
            let _ = u.answers.push_back(seq);
        }
    }

    pub(super) fn upload_ack(
        &mut self,
        now: Stamp,
        m: &mav::MISSION_ACK_DATA,
        t: &mut Timing,
        ev: &mut EventQueue,
    ) {
        let Transfer::Upload(u) = &mut self.transfer else {
            return;
        };
        if u.tx.sends == 0 {
            return; // a stale ack from before our count went out
        }
        let accepted = m.mavtype == mav::MavMissionResult::MAV_MISSION_ACCEPTED;
        if u.asked && !(accepted && u.asked_last) {
            if u.nudged {
                // The answer to a nudge from PX4 that dropped the transfer: an error ("No
                // transfer"), or ACCEPTED for a transfer whose last item it never asked for
                // (its repeat-ack of the last item it took). PX4 is idle: start again.
                if u.restarts < t.mission_retries {
                    u.restart();
                    return;
                }
                if accepted {
                    return; // out of restarts, and PX4 does not hold this mission: the timer ends it
                }
            } else if accepted {
                return; // a late ack of an earlier upload: PX4 has not taken this one yet
            }
            // Else an error in answer to an item: PX4 rejected it.
        }
        let count = u.count;
        if u.asked {
            u.sample_item(now, count, &mut t.rtt);
        } else {
            // Rejected at the count: the ack answers it.
            u.tx.answered(now, &mut t.rtt);
        }
        let result = m.mavtype as u8;
        self.ack = Some(result);
        if accepted {
            self.opaque_id = Some(m.opaque_id);
            self.transfer = Transfer::Idle;
            ev.push(OffboardEvent::MissionUploaded {
                count,
                opaque_id: m.opaque_id,
            });
        } else {
            self.fail(MissionError::Rejected { result }, ev);
        }
    }

    pub(super) fn upload_poll(
        &mut self,
        now: Stamp,
        t: &mut Timing,
        ev: &mut EventQueue,
    ) -> Option<Tx> {
        let Transfer::Upload(u) = &mut self.transfer else {
            return None;
        };
        if let Some(seq) = u.answers.pop_front() {
            u.item = match u.item {
                Some((s, at, _)) if s == seq => Some((s, at, false)),
                _ => Some((seq, now, true)),
            };
            u.nudge = Some((seq, Resend::sent_at(now)));
            u.nudged = false;
            return Some(Tx::MissionItem(seq));
        }
        if u.asked {
            let (timer, sends) = (t.mission_timer_ms(), t.mission_sends());
            if let Some((seq, n)) = &mut u.nudge {
                if n.sends < sends {
                    if n.due(now, timer) {
                        n.sent(now, &mut t.rtt);
                        u.nudged = true;
                        // Karn: an answer to a repeat is no round-trip sample.
                        if let Some((s, _, once)) = &mut u.item {
                            if s == seq {
                                *once = false;
                            }
                        }
                        return Some(Tx::MissionItem(*seq));
                    }
                    return None;
                }
            }
            if u.last_rx
                .is_some_and(|s| s.timer_done(now, t.mission_timeout_ms))
            {
                let sends = u.nudge.map_or(u.tx.sends, |(_, n)| n.sends);
                self.fail(
                    MissionError::Timeout {
                        stage: TransferStage::Items,
                        sends,
                    },
                    ev,
                );
            }
            return None;
        }
        let (timer, sends) = (t.mission_timer_ms(), t.mission_sends());
        match u.tx.poll(now, timer, sends, &mut t.rtt) {
            Due::Wait => None,
            Due::Send => Some(Tx::MissionCount(u.count)),
            Due::GiveUp { sends } => {
                self.fail(
                    MissionError::Timeout {
                        stage: TransferStage::Count,
                        sends,
                    },
                    ev,
                );
                None
            }
        }
    }
}
