//! Mission download and clear.
//!
//! Download: MISSION_REQUEST_LIST (resent until PX4 answers) → MISSION_COUNT(n) →
//! MISSION_REQUEST_INT(0..n) one at a time, each resent until its MISSION_ITEM_INT comes →
//! MISSION_ACK accepted to PX4. A vehicle mission larger than the machine's capacity is
//! refused with MISSION_ACK NO_SPACE and [`MissionError::TooLarge`].
//!
//! The download replaces the held mission in place (one buffer, no second copy). When it turns
//! out identical to the held one, progress (`mission_reached`, the upload ack) is kept, and a
//! failed download leaves it intact; otherwise progress resets, and a failed download leaves
//! no mission held rather than a mix of two.
//!
//! Clear: MISSION_CLEAR_ALL resent until PX4's MISSION_ACK; accepted empties the held mission.
//!
//! Every request is a [`Resend`] on the measured retry timer; each answer (the count, the item
//! asked for, the clear's ack) is a round-trip sample when its request went out once. An item
//! request unanswered through all its sends starts the download again from
//! MISSION_REQUEST_LIST, at most `mission_retries` times: PX4 abandons a download 5 s after it
//! last heard us and ignores item requests from then on.

use super::clock::{Soonest, Stamp};
use super::config::Timing;
use super::events::{MissionError, MissionMismatch, OffboardEvent, TransferStage};
use super::mission::{MissionState, Transfer};
use super::retry::{Due, Resend};
use super::rtt::RttEstimator;
use super::{EventQueue, Tx};
use crate::mission::MissionItem;
use mavlink::dialects::common as mav;

#[derive(Debug, Clone)]
pub(crate) struct Download {
    /// `None` while waiting for MISSION_COUNT.
    count: Option<u16>,
    next: u16,
    /// The request in flight: the list, then each item's.
    pub(super) tx: Resend,
    /// Every item so far equals the held one at its seq (and the counts match).
    identical: bool,
    /// Compare only: the held mission is kept, and the first difference ends the download.
    verify: bool,
    /// Times the download started again from MISSION_REQUEST_LIST after an item request went
    /// unanswered for all its sends (PX4 drops a download 5 s after it last heard us).
    restarts: u8,
}

impl Download {
    pub fn new() -> Self {
        Download {
            count: None,
            next: 0,
            tx: Resend::new(),
            identical: true,
            verify: false,
            restarts: 0,
        }
    }

    /// A download that only compares with the held mission (see `Offboard::verify_mission`).
    #[cfg(feature = "mission-verify")]
    pub fn verifying() -> Self {
        Download {
            verify: true,
            ..Download::new()
        }
    }

    /// Whether the held mission is still whole (nothing different was written into it).
    pub fn keeps_old_mission(&self) -> bool {
        self.identical
    }

    pub fn deadline(&self, t: &Timing, d: &mut Soonest) {
        self.tx.deadline(t.mission_timer_ms(), d);
    }
}

#[derive(Debug, Clone)]
pub(crate) struct Clear {
    pub(super) tx: Resend,
}

impl Clear {
    pub fn new() -> Self {
        Clear { tx: Resend::new() }
    }

    pub fn deadline(&self, t: &Timing, d: &mut Soonest) {
        self.tx.deadline(t.mission_timer_ms(), d);
    }
}

/// Whether `held` (as uploaded) and `got` (as the vehicle sends it back) are the same item.
/// PX4 answers a MISSION_REQUEST_INT in the `_INT` variant of a global frame (an item
/// uploaded in GLOBAL_RELATIVE_ALT, 3, comes back in GLOBAL_RELATIVE_ALT_INT, 6): the same
/// place, so those frames compare equal; every other field must match bit for bit.
fn same_on_the_vehicle(held: &MissionItem, got: &MissionItem) -> bool {
    let int_frame = |f: u8| match f {
        0 => 5,   // GLOBAL → GLOBAL_INT
        3 => 6,   // GLOBAL_RELATIVE_ALT → _INT
        10 => 11, // GLOBAL_TERRAIN_ALT → _INT
        f => f,
    };
    let norm = |i: &MissionItem| MissionItem {
        frame: int_frame(i.frame),
        ..*i
    };
    norm(held) == norm(got)
}

impl<const N: usize> MissionState<N> {
    pub(super) fn on_count(
        &mut self,
        now: Stamp,
        count: u16,
        rtt: &mut RttEstimator,
        ev: &mut EventQueue,
    ) {
        let Transfer::Download(d) = &mut self.transfer else {
            return;
        };
        if d.count.is_some() || d.tx.sends == 0 {
            return; // a repeat, or not an answer to us
        }
        d.tx.answered(now, rtt);
        if count as usize > N {
            self.ack_out = Some(mav::MavMissionResult::MAV_MISSION_NO_SPACE);
            self.fail(MissionError::TooLarge { count, capacity: N }, ev);
            return;
        }
        d.count = Some(count);
        d.next = 0;
        d.tx = Resend::new();
        if cfg!(feature = "mission-verify") && d.verify && count as usize != self.items.len() {
            let uploaded = self.items.len() as u16;
            self.stop_verify(
                MissionMismatch::Count {
                    vehicle: count,
                    uploaded,
                },
                ev,
            );
            return;
        }
        if count as usize != self.items.len() {
            d.identical = false;
            self.items.clear();
            // Cannot fail: count <= N was checked above.
            let _ = self.items.resize(count as usize, MissionItem::default());
        }
        if count == 0 {
            self.finish_download(ev);
        }
    }

    pub(super) fn on_item(
        &mut self,
        now: Stamp,
        m: &mav::MISSION_ITEM_INT_DATA,
        rtt: &mut RttEstimator,
        ev: &mut EventQueue,
    ) {
        let Transfer::Download(d) = &mut self.transfer else {
            return;
        };
        let Some(count) = d.count else { return };
        if m.seq != d.next || m.seq >= count {
            return; // a late repeat; the expected one is re-requested on the timer
        }
        d.tx.answered(now, rtt);
        let item = MissionItem::from_mav(m);
        if let Some(slot) = self.items.get_mut(m.seq as usize) {
            if cfg!(feature = "mission-verify") && d.verify && !same_on_the_vehicle(slot, &item) {
                let uploaded = *slot;
                self.stop_verify(
                    MissionMismatch::Item {
                        uploaded,
                        vehicle: item,
                    },
                    ev,
                );
                return;
            }
            if *slot != item {
                d.identical = false;
                *slot = item;
            }
        }
        d.next += 1;
        d.tx = Resend::new();
        if d.next == count {
            self.finish_download(ev);
        }
    }

    /// A verifying download met a difference: stop (PX4 is told the transfer is cancelled),
    /// keep the held mission, report the difference.
    fn stop_verify(&mut self, m: MissionMismatch, ev: &mut EventQueue) {
        self.transfer = Transfer::Idle;
        self.ack_out = Some(mav::MavMissionResult::MAV_MISSION_OPERATION_CANCELLED);
        ev.push(OffboardEvent::MissionMismatch(m));
    }

    fn finish_download(&mut self, ev: &mut EventQueue) {
        let Transfer::Download(d) = &self.transfer else {
            return;
        };
        if cfg!(feature = "mission-verify") && d.verify {
            // Every item compared equal (a difference stops the download at once).
            let count = self.items.len() as u16;
            self.verified = true;
            self.transfer = Transfer::Idle;
            self.ack_out = Some(mav::MavMissionResult::MAV_MISSION_ACCEPTED);
            ev.push(OffboardEvent::MissionVerified { count });
            return;
        }
        if !d.identical {
            self.ack = None;
            self.opaque_id = None;
            self.reset_progress();
        }
        let count = self.items.len() as u16;
        self.transfer = Transfer::Idle;
        self.ack_out = Some(mav::MavMissionResult::MAV_MISSION_ACCEPTED);
        ev.push(OffboardEvent::MissionDownloaded { count });
    }

    pub(super) fn download_ack(&mut self, m: &mav::MISSION_ACK_DATA, ev: &mut EventQueue) {
        let Transfer::Download(d) = &self.transfer else {
            return;
        };
        // A verification follows an upload: on a lossy, slow link the upload's late repeats
        // reach PX4 after it accepted the upload, and it answers each with an error ack ("IGN
        // MISSION_ITEM: No transfer" / "Busy") while it serves our download. Those end
        // nothing: a download PX4 really dropped stops answering and times out.
        if cfg!(feature = "mission-verify") && d.verify {
            return;
        }
        // PX4 ends a download it cannot serve with an error ack.
        if d.tx.sends > 0 && m.mavtype != mav::MavMissionResult::MAV_MISSION_ACCEPTED {
            self.fail(
                MissionError::Rejected {
                    result: m.mavtype as u8,
                },
                ev,
            );
        }
    }

    pub(super) fn download_poll(
        &mut self,
        now: Stamp,
        t: &mut Timing,
        ev: &mut EventQueue,
    ) -> Option<Tx> {
        let Transfer::Download(d) = &mut self.transfer else {
            return None;
        };
        let (timer, sends) = (t.mission_timer_ms(), t.mission_sends());
        match d.tx.poll(now, timer, sends, &mut t.rtt) {
            Due::Wait => None,
            Due::Send => Some(match d.count {
                None => Tx::MissionRequestList,
                Some(_) => Tx::MissionRequestInt(d.next),
            }),
            Due::GiveUp { .. } if d.count.is_some() && d.restarts < t.mission_retries => {
                // PX4 has likely dropped the download while our requests or its items were
                // lost: ask for the list again (PX4 restarts a download on it, idle or not).
                d.restarts += 1;
                d.count = None;
                d.next = 0;
                d.tx = Resend::sent_at(now);
                Some(Tx::MissionRequestList)
            }
            Due::GiveUp { sends } => {
                let stage = if d.count.is_some() {
                    TransferStage::Items
                } else {
                    TransferStage::List
                };
                self.fail(MissionError::Timeout { stage, sends }, ev);
                None
            }
        }
    }

    pub(super) fn clear_ack(
        &mut self,
        now: Stamp,
        m: &mav::MISSION_ACK_DATA,
        rtt: &mut RttEstimator,
        ev: &mut EventQueue,
    ) {
        let Transfer::Clear(c) = &mut self.transfer else {
            return;
        };
        if c.tx.sends == 0 {
            return;
        }
        c.tx.answered(now, rtt);
        if m.mavtype == mav::MavMissionResult::MAV_MISSION_ACCEPTED {
            self.items.clear();
            self.ack = None;
            self.opaque_id = None;
            self.reset_progress();
            self.transfer = Transfer::Idle;
            ev.push(OffboardEvent::MissionCleared);
        } else {
            self.fail(
                MissionError::Rejected {
                    result: m.mavtype as u8,
                },
                ev,
            );
        }
    }

    pub(super) fn clear_poll(
        &mut self,
        now: Stamp,
        t: &mut Timing,
        ev: &mut EventQueue,
    ) -> Option<Tx> {
        let Transfer::Clear(c) = &mut self.transfer else {
            return None;
        };
        let (timer, sends) = (t.mission_timer_ms(), t.mission_sends());
        match c.tx.poll(now, timer, sends, &mut t.rtt) {
            Due::Wait => None,
            Due::Send => Some(Tx::MissionClearAll),
            Due::GiveUp { sends } => {
                self.fail(
                    MissionError::Timeout {
                        stage: TransferStage::Clear,
                        sends,
                    },
                    ev,
                );
                None
            }
        }
    }
}
