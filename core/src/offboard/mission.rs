//! The mission the machine holds, its progress, and the transfer in flight.
//!
//! One transfer at a time (upload, download or clear, the MAVLink mission protocol's
//! transactions); starting one abandons the one in flight. Progress comes from PX4:
//! MISSION_CURRENT (the item being flown) and MISSION_ITEM_REACHED, which PX4 sends on
//! reaching an item and then ten more times at 1 Hz. `reached` keeps the highest seq and only
//! counts a report once PX4 has shown this run (a MISSION_CURRENT of a state other than
//! COMPLETE since the start, upload or download) and for an item PX4 has already made current
//! (`seq <= current`): a repeat of a previous run's last item, still arriving after a restart or
//! a re-upload, cannot mark the new run complete.
//!
//! "Complete" means PX4 reported reaching the mission's last reachable item
//! ([`crate::mission::last_reachable`]: the first landing item, or the item before an RTL) in
//! this run: by MISSION_ITEM_REACHED of that seq, or by MISSION_CURRENT with mission_state
//! COMPLETE at or past it. PX4 keeps reporting COMPLETE after a finished mission (and after RTL
//! and disarm), so that state only counts once this run has seen PX4 report a state other than
//! COMPLETE (MISSION_SET_CURRENT 0 makes it NOT_STARTED): a stale COMPLETE from an earlier
//! flight never finishes a new one.

use super::clock::{Soonest, Stamp};
use super::config::Timing;
use super::events::{MissionError, OffboardEvent};
#[cfg(feature = "mission-download")]
use super::mission_download::{Clear, Download};
use super::mission_upload::Upload;
use super::{EventQueue, Tx};
use crate::mission::{last_reachable, MissionItem};
use crate::msg::{Frame, Msg};
use crate::time::Instant;
use heapless::Vec;
use mavlink::dialects::common as mav;

#[derive(Debug, Clone)]
pub(crate) enum Transfer {
    Idle,
    Upload(Upload),
    #[cfg(feature = "mission-download")]
    Download(Download),
    #[cfg(feature = "mission-download")]
    Clear(Clear),
}

#[derive(Debug, Clone)]
pub(crate) struct MissionState<const N: usize> {
    /// Which of PX4's plans this state transfers: the mission, the geofence or the rally points
    /// (MAV_MISSION_TYPE); frames of another type are not this state's.
    pub kind: mav::MavMissionType,
    pub items: Vec<MissionItem, N>,
    pub transfer: Transfer,
    /// A MISSION_ACK we owe PX4 (end of a download, or an abort).
    pub ack_out: Option<mav::MavMissionResult>,
    /// PX4's MISSION_ACK result for our last upload; `None` until one came.
    pub ack: Option<u8>,
    pub opaque_id: Option<u32>,
    pub reached: Option<u16>,
    pub current: u16,
    /// PX4 has shown this run: a MISSION_CURRENT with a state other than COMPLETE (or, from a
    /// PX4 that sends no state, at item 0). Until then reports are the previous run's.
    pub fresh: bool,
    /// PX4 reported mission_state COMPLETE at or past the last reachable item, in this run.
    pub complete_reported: bool,
    /// A MISSION_CURRENT or MISSION_ITEM_REACHED arrived in this run.
    pub progress_known: bool,
    /// An upload failed (rejected or timed out) since the machine last looked: a mission start
    /// waiting on it must not fly whatever PX4 still holds.
    pub upload_failed: bool,
    /// The last verifying download found the vehicle's mission identical to this one.
    pub verified: bool,
    /// A verification asked for while an upload was in flight: it starts when the upload
    /// ends, accepted or not.
    pub verify_pending: bool,
    /// Armed as the last heartbeat said (`None` before one).
    armed: Option<bool>,
    /// Since when completion is settling ([`crate::mission::MissionProgress::settling`]).
    settle_since: Option<Stamp>,
}

/// How long completion may settle after a disarm on the last reachable item, beyond the retry
/// timer, ms: PX4 sends MISSION_CURRENT (and repeats MISSION_ITEM_REACHED) once a second.
const SETTLE_PERIOD_MS: u64 = 1_000;

impl<const N: usize> MissionState<N> {
    pub fn new() -> Self {
        Self::of(mav::MavMissionType::MAV_MISSION_TYPE_MISSION)
    }

    /// An empty state for the plan of this MAV_MISSION_TYPE.
    pub fn of(kind: mav::MavMissionType) -> Self {
        MissionState {
            kind,
            items: Vec::new(),
            transfer: Transfer::Idle,
            ack_out: None,
            ack: None,
            opaque_id: None,
            reached: None,
            current: 0,
            fresh: false,
            complete_reported: false,
            progress_known: false,
            upload_failed: false,
            verified: false,
            verify_pending: false,
            armed: None,
            settle_since: None,
        }
    }

    /// Whether completion is settling: the vehicle disarmed while flying the last reachable
    /// item without its arrival reported, and no progress report came since.
    pub fn settling(&self) -> bool {
        self.settle_since.is_some()
    }

    /// Follow the vehicle's arming (after every frame): a disarm while the last reachable item
    /// is current and unreported starts completion settling; the next progress report (see
    /// `on_frame`) or the settle timer ends it.
    pub fn watch_arming(&mut self, now: Stamp, armed: Option<bool>, t: &Timing) {
        if let Some(since) = self.settle_since {
            if since.timer_done(now, SETTLE_PERIOD_MS + t.mission_timer_ms()) {
                self.settle_since = None;
            }
        }
        let disarmed = self.armed == Some(true) && armed == Some(false);
        if armed.is_some() {
            self.armed = armed;
        }
        if disarmed
            && is_mission(self.kind)
            && self.fresh
            && !self.complete()
            && last_reachable(&self.items) == Some(self.current)
        {
            self.settle_since = Some(now);
        }
    }

    /// Whether an upload is in flight.
    pub fn uploading(&self) -> bool {
        matches!(self.transfer, Transfer::Upload(_))
    }

    /// Forget the progress of the previous mission (or run).
    pub fn reset_progress(&mut self) {
        self.settle_since = None;
        self.reached = None;
        self.current = 0;
        self.fresh = false;
        self.complete_reported = false;
        self.progress_known = false;
    }

    /// Whether PX4 reported the last reachable item reached in this run (module docs).
    pub fn complete(&self) -> bool {
        match last_reachable(&self.items) {
            Some(last) => self.complete_reported || self.reached.is_some_and(|r| r >= last),
            None => false,
        }
    }

    fn on_current(&mut self, m: &mav::MISSION_CURRENT_DATA) {
        self.current = m.seq;
        self.progress_known = true;
        let complete = m.mission_state == mav::MissionState::MISSION_STATE_COMPLETE;
        let unknown = m.mission_state == mav::MissionState::MISSION_STATE_UNKNOWN;
        if !complete && (!unknown || m.seq == 0) {
            self.fresh = true;
        }
        if complete && self.fresh && last_reachable(&self.items).is_some_and(|l| m.seq >= l) {
            self.complete_reported = true;
        }
    }

    /// Take in one frame; answers to our requests are round-trip samples into `rtt`.
    pub fn on_frame(&mut self, now: Stamp, frame: &Frame, t: &mut Timing, ev: &mut EventQueue) {
        let mine = |t: mav::MavMissionType| t == self.kind;
        let is_mission = is_mission(self.kind);
        #[allow(deprecated)] // legacy MISSION_REQUEST: answered like MISSION_REQUEST_INT
        match &frame.msg {
            Msg::MissionCurrent(m) if is_mission => {
                self.on_current(m);
                self.settle_since = None;
            }
            Msg::MissionItemReached(m) if is_mission => {
                if self.fresh && m.seq <= self.current && self.reached.is_none_or(|r| m.seq > r) {
                    self.reached = Some(m.seq);
                    self.progress_known = true;
                }
                self.settle_since = None;
            }
            Msg::MissionRequestInt(m) if mine(m.mission_type) => self.on_request(now, m.seq, t, ev),
            Msg::MissionRequest(m) if mine(m.mission_type) => self.on_request(now, m.seq, t, ev),
            Msg::MissionAck(m) if mine(m.mission_type) => self.on_ack(now, m, t, ev),
            #[cfg(feature = "mission-download")]
            Msg::MissionCount(m) if mine(m.mission_type) => {
                self.on_count(now, m.count, &mut t.rtt, ev)
            }
            #[cfg(feature = "mission-download")]
            Msg::MissionItemInt(m) if mine(m.mission_type) => self.on_item(now, m, &mut t.rtt, ev),
            _ => {}
        }
    }

    fn on_ack(
        &mut self,
        now: Stamp,
        m: &mav::MISSION_ACK_DATA,
        t: &mut Timing,
        ev: &mut EventQueue,
    ) {
        match &self.transfer {
            Transfer::Upload(_) => self.upload_ack(now, m, t, ev),
            #[cfg(feature = "mission-download")]
            Transfer::Download(_) => self.download_ack(m, ev),
            #[cfg(feature = "mission-download")]
            Transfer::Clear(_) => self.clear_ack(now, m, &mut t.rtt, ev),
            Transfer::Idle => {}
        }
    }

    /// The next mission-protocol frame due, if any; also runs the transfer's timers.
    pub fn poll(&mut self, now: Stamp, t: &mut Timing, ev: &mut EventQueue) -> Option<Tx> {
        if let Some(r) = self.ack_out.take() {
            return Some(Tx::MissionAck(r));
        }
        #[cfg(feature = "mission-verify")]
        if self.verify_pending && matches!(self.transfer, Transfer::Idle) {
            // The upload ended, accepted or not: compare what the vehicle holds with it either
            // way (a verification that waited on a failed upload must still end, and PX4 may
            // hold the mission after all when only its ack was lost).
            self.verify_pending = false;
            self.transfer = Transfer::Download(super::mission_download::Download::verifying());
        }
        match &self.transfer {
            Transfer::Idle => None,
            Transfer::Upload(_) => self.upload_poll(now, t, ev),
            #[cfg(feature = "mission-download")]
            Transfer::Download(_) => self.download_poll(now, t, ev),
            #[cfg(feature = "mission-download")]
            Transfer::Clear(_) => self.clear_poll(now, t, ev),
        }
    }

    /// Wall deadline of the transfer's wall-time timer, if any.
    pub fn deadline(&self, t: &Timing) -> Option<Instant> {
        let mut d = Soonest::default();
        if self.ack_out.is_some()
            || (self.verify_pending && matches!(self.transfer, Transfer::Idle))
        {
            d.at(Instant::ZERO);
        }
        match &self.transfer {
            Transfer::Idle => {}
            Transfer::Upload(u) => u.deadline(t, &mut d),
            #[cfg(feature = "mission-download")]
            Transfer::Download(x) => x.deadline(t, &mut d),
            #[cfg(feature = "mission-download")]
            Transfer::Clear(c) => c.deadline(t, &mut d),
        }
        d.0
    }

    /// End the transfer with a failure event.
    pub fn fail(&mut self, e: MissionError, ev: &mut EventQueue) {
        let event = match &self.transfer {
            Transfer::Upload(_) => {
                self.upload_failed = true;
                OffboardEvent::MissionUploadFailed(e)
            }
            #[cfg(feature = "mission-download")]
            Transfer::Download(_) => OffboardEvent::MissionDownloadFailed(e),
            #[cfg(feature = "mission-download")]
            Transfer::Clear(_) => OffboardEvent::MissionClearFailed(e),
            Transfer::Idle => return,
        };
        #[cfg(feature = "mission-download")]
        if let Transfer::Download(d) = &self.transfer {
            let keep = d.keeps_old_mission();
            if !keep {
                // The held mission is part old, part new: nothing anyone should fly.
                self.items.clear();
                self.ack = None;
                self.reset_progress();
            }
        }
        self.transfer = Transfer::Idle;
        ev.push(event);
    }
}

pub(crate) fn is_mission(t: mav::MavMissionType) -> bool {
    t == mav::MavMissionType::MAV_MISSION_TYPE_MISSION
}
