//! Mission upload, the MAVLink mission protocol as PX4 runs it:
//!
//! ```text
//! us: MISSION_COUNT(n)          (resent every mission_retry_s until PX4 asks, mission_retries times)
//! PX4: MISSION_REQUEST_INT(seq) (or legacy MISSION_REQUEST; PX4 re-asks every ~0.26 s for 5 s)
//! us: MISSION_ITEM_INT(seq)     (always the _INT form, whichever request came)
//! …
//! PX4: MISSION_ACK(type, opaque_id)   type 0 = accepted, else a MAV_MISSION_RESULT
//! ```
//!
//! Each request is answered with the item it names, so duplicates and out-of-order requests
//! are served as asked. A request for a seq the mission does not have ends the upload with
//! [`MissionError::RequestOutOfRange`] and a MISSION_ACK INVALID_SEQUENCE to PX4. Silence for
//! `mission_timeout_s` once PX4 has started asking ends it with a timeout.

use super::clock::{earliest, Stamp};
use super::config::Timing;
use super::events::{MissionError, OffboardEvent, TransferStage};
use super::mission::{MissionState, Transfer};
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
    sends: u8,
    last_tx: Option<Stamp>,
    last_rx: Option<Stamp>,
    answers: Deque<u16, ANSWERS>,
}

impl Upload {
    pub fn new(count: u16) -> Self {
        Upload {
            count,
            asked: false,
            sends: 0,
            last_tx: None,
            last_rx: None,
            answers: Deque::new(),
        }
    }

    pub fn deadline(&self, t: &Timing) -> Option<Instant> {
        if !self.answers.is_empty() {
            return Some(Instant::ZERO);
        }
        if self.asked {
            self.last_rx
                .and_then(|s| s.timer_deadline(t.mission_timeout_ms))
        } else {
            let d = self
                .last_tx
                .and_then(|s| s.timer_deadline(t.mission_retry_ms));
            earliest(d, self.last_tx.is_none().then_some(Instant::ZERO))
        }
    }
}

impl<const N: usize> MissionState<N> {
    pub(super) fn on_request(&mut self, now: Stamp, seq: u16, ev: &mut EventQueue) {
        let Transfer::Upload(u) = &mut self.transfer else {
            return;
        };
        if u.sends == 0 {
            return; // not ours: our count has not gone out yet
        }
        if seq >= u.count {
            let count = u.count;
            self.ack_out = Some(mav::MavMissionResult::MAV_MISSION_INVALID_SEQUENCE);
            self.fail(MissionError::RequestOutOfRange { seq, count }, ev);
            return;
        }
        u.asked = true;
        u.last_rx = Some(now);
        if !u.answers.iter().any(|&s| s == seq) {
            if u.answers.is_full() {
                u.answers.pop_front();
            }
            let _ = u.answers.push_back(seq);
        }
    }

    pub(super) fn upload_ack(&mut self, m: &mav::MISSION_ACK_DATA, ev: &mut EventQueue) {
        let Transfer::Upload(u) = &self.transfer else {
            return;
        };
        if u.sends == 0 {
            return; // a stale ack from before our count went out
        }
        let count = u.count;
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
        t: &Timing,
        ev: &mut EventQueue,
    ) -> Option<Tx> {
        let Transfer::Upload(u) = &mut self.transfer else {
            return None;
        };
        if let Some(seq) = u.answers.pop_front() {
            return Some(Tx::MissionItem(seq));
        }
        if u.asked {
            if u.last_rx
                .is_some_and(|s| s.timer_done(now, t.mission_timeout_ms))
            {
                let sends = u.sends;
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
        if u.last_tx
            .is_none_or(|s| s.timer_done(now, t.mission_retry_ms))
        {
            if u.sends > t.mission_retries {
                let sends = u.sends;
                self.fail(
                    MissionError::Timeout {
                        stage: TransferStage::Count,
                        sends,
                    },
                    ev,
                );
                return None;
            }
            u.sends += 1;
            u.last_tx = Some(now);
            return Some(Tx::MissionCount(u.count));
        }
        None
    }
}
