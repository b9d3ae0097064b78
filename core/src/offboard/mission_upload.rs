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
//! [`MissionError::RequestOutOfRange`] and a MISSION_ACK INVALID_SEQUENCE to PX4. Silence for
//! `mission_timeout_s` once PX4 has started asking ends it with a timeout.
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
    /// PX4 has asked for an item: the count got through.
    asked: bool,
    /// The count's sends.
    pub(super) tx: Resend,
    last_rx: Option<Stamp>,
    /// The last item answered: its seq, when it went out, and whether it went out only once.
    item: Option<(u16, Stamp, bool)>,
    answers: Deque<u16, ANSWERS>,
}

impl Upload {
    pub fn new(count: u16) -> Self {
        Upload {
            count,
            asked: false,
            tx: Resend::new(),
            last_rx: None,
            item: None,
            answers: Deque::new(),
        }
    }

    pub fn deadline(&self, t: &Timing, d: &mut Soonest) {
        if !self.answers.is_empty() {
            d.at(Instant::ZERO);
        } else if self.asked {
            d.timer(self.last_rx.as_ref(), t.mission_timeout_ms);
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
        u.last_rx = Some(now);
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
        rtt: &mut RttEstimator,
        ev: &mut EventQueue,
    ) {
        let Transfer::Upload(u) = &mut self.transfer else {
            return;
        };
        if u.tx.sends == 0 {
            return; // a stale ack from before our count went out
        }
        let count = u.count;
        if u.asked {
            u.sample_item(now, count, rtt);
        } else {
            // Rejected at the count: the ack answers it.
            u.tx.answered(now, rtt);
        }
        let result = m.mavtype as u8;
        self.ack = Some(result);
        if m.mavtype == mav::MavMissionResult::MAV_MISSION_ACCEPTED {
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
            return Some(Tx::MissionItem(seq));
        }
        if u.asked {
            if u.last_rx
                .is_some_and(|s| s.timer_done(now, t.mission_timeout_ms))
            {
                let sends = u.tx.sends;
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
