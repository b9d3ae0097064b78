//! PX4's other two plans, the geofence (MAV_MISSION_TYPE 1) and the rally points (2): uploaded,
//! downloaded and cleared through the same mission protocol as the mission, one transfer per
//! plan at a time, each independent of the mission's (PX4 keeps the three apart). Their items
//! are [`MissionItem`]s: fence vertices (MAV_CMD 5001 inclusion / 5002 exclusion, param1 the
//! polygon's vertex count), circles (5003 inclusion / 5004 exclusion, param1 the radius in m)
//! and rally points (5100). Their transfers end in a [`GeoStatus`], not in the mission's events,
//! so a fence upload can never be taken for the mission's.

use super::clock::{earliest, Stamp};
use super::config::Timing;
use super::events::{MissionError, OffboardEvent};
use super::mission::{MissionState, Transfer};
use super::mission_download::{Clear, Download};
use super::mission_upload::Upload;
use super::{EventQueue, Offboard, OffboardError, Tx};
use crate::mission::{validate_mission, MissionItem};
use crate::msg::Frame;
use crate::time::Instant;
use mavlink::dialects::common as mav;

/// Geofence items the machine holds (vertices and circles).
pub const FENCE_ITEMS: usize = 64;
/// Rally points the machine holds.
pub const RALLY_ITEMS: usize = 16;

/// MAV_CMD_NAV_FENCE_POLYGON_VERTEX_INCLUSION: a vertex of a polygon the vehicle must stay in.
pub const FENCE_POLYGON_INCLUSION: u16 = 5001;
/// MAV_CMD_NAV_FENCE_POLYGON_VERTEX_EXCLUSION: a vertex of a polygon the vehicle must stay out of.
pub const FENCE_POLYGON_EXCLUSION: u16 = 5002;
/// MAV_CMD_NAV_FENCE_CIRCLE_INCLUSION: a circle (param1 radius, m) the vehicle must stay in.
pub const FENCE_CIRCLE_INCLUSION: u16 = 5003;
/// MAV_CMD_NAV_FENCE_CIRCLE_EXCLUSION: a circle (param1 radius, m) the vehicle must stay out of.
pub const FENCE_CIRCLE_EXCLUSION: u16 = 5004;
/// MAV_CMD_NAV_RALLY_POINT: a place to return to instead of home.
pub const RALLY_POINT: u16 = 5100;

/// Which of PX4's non-mission plans.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum GeoKind {
    /// The geofence (MAV_MISSION_TYPE_FENCE).
    Fence,
    /// The rally points (MAV_MISSION_TYPE_RALLY).
    Rally,
}

impl GeoKind {
    /// The MAV_MISSION_TYPE its transfers carry.
    pub fn mission_type(self) -> mav::MavMissionType {
        match self {
            GeoKind::Fence => mav::MavMissionType::MAV_MISSION_TYPE_FENCE,
            GeoKind::Rally => mav::MavMissionType::MAV_MISSION_TYPE_RALLY,
        }
    }
}

impl GeoKind {
    /// Whether `uploaded` (as it went up) and `downloaded` (as PX4 sends it back) are the same
    /// item of this plan. PX4 keeps the frame of a fence item only as "global" and sends every
    /// global one back in MAV_FRAME_GLOBAL_INT (5) (its fence altitude is unused); it keeps a
    /// rally point's "altitude relative to home" and sends it back in the `_INT` variant of the
    /// frame (GLOBAL 0 → GLOBAL_INT 5, GLOBAL_RELATIVE_ALT 3 → GLOBAL_RELATIVE_ALT_INT 6). It
    /// stores no autocontinue for fence items (they come back with it off). Those differences
    /// are the same item; any other field must match bit for bit.
    pub fn same_item(self, uploaded: &MissionItem, downloaded: &MissionItem) -> bool {
        let frame = |f: u8| match (self, f) {
            (GeoKind::Fence, 0 | 3 | 5 | 6) => 5,
            (GeoKind::Rally, 0) => 5,
            (GeoKind::Rally, 3) => 6,
            (_, f) => f,
        };
        let norm = |i: &MissionItem| MissionItem {
            frame: frame(i.frame),
            autocontinue: self == GeoKind::Rally && i.autocontinue,
            ..*i
        };
        norm(uploaded) == norm(downloaded)
    }

    /// Whether a download from PX4 (`downloaded`) holds the plan that was uploaded
    /// (`uploaded`): as many items, each [`GeoKind::same_item`].
    pub fn same_items(self, uploaded: &[MissionItem], downloaded: &[MissionItem]) -> bool {
        uploaded.len() == downloaded.len()
            && uploaded
                .iter()
                .zip(downloaded)
                .all(|(u, d)| self.same_item(u, d))
    }
}

/// How the last fence or rally transfer ended (or that one is in flight).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum GeoStatus {
    /// Nothing asked yet.
    Idle,
    /// A transfer is in flight.
    Busy,
    /// PX4 accepted the upload of `count` items.
    Uploaded {
        /// Items uploaded.
        count: u16,
    },
    /// The download ended with `count` items held.
    Downloaded {
        /// Items downloaded.
        count: u16,
    },
    /// PX4 acknowledged the clear.
    Cleared,
    /// The transfer failed: rejected, timed out or too large.
    Failed(MissionError),
}

/// A frame of a fence or rally transfer due out.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum GeoTx {
    Count(u16),
    Item(u16),
    RequestList,
    RequestInt(u16),
    Ack(mav::MavMissionResult),
    ClearAll,
}

/// One plan's transfer state and how its last transfer ended.
#[derive(Debug, Clone)]
struct Plan<const N: usize> {
    state: MissionState<N>,
    status: GeoStatus,
    ev: EventQueue,
}

impl<const N: usize> Plan<N> {
    fn new(kind: GeoKind) -> Self {
        Plan {
            state: MissionState::of(kind.mission_type()),
            status: GeoStatus::Idle,
            ev: EventQueue::default(),
        }
    }

    /// Turn the transfer's events into the status (the mission's queue never sees them).
    fn settle(&mut self) {
        while let Some(e) = self.ev.q.pop_front() {
            self.status = match e {
                OffboardEvent::MissionUploaded { count, .. } => GeoStatus::Uploaded { count },
                OffboardEvent::MissionDownloaded { count } => GeoStatus::Downloaded { count },
                OffboardEvent::MissionCleared => GeoStatus::Cleared,
                OffboardEvent::MissionUploadFailed(e)
                | OffboardEvent::MissionDownloadFailed(e)
                | OffboardEvent::MissionClearFailed(e) => GeoStatus::Failed(e),
                _ => self.status,
            };
        }
        self.state.upload_failed = false;
    }

    fn on_frame(&mut self, now: Stamp, frame: &Frame, t: &mut Timing) {
        self.state.on_frame(now, frame, t, &mut self.ev);
        self.settle();
    }

    fn poll(&mut self, now: Stamp, t: &mut Timing) -> Option<GeoTx> {
        let tx = self.state.poll(now, t, &mut self.ev);
        self.settle();
        match tx? {
            Tx::MissionCount(n) => Some(GeoTx::Count(n)),
            Tx::MissionItem(s) => Some(GeoTx::Item(s)),
            Tx::MissionRequestList => Some(GeoTx::RequestList),
            Tx::MissionRequestInt(s) => Some(GeoTx::RequestInt(s)),
            Tx::MissionAck(r) => Some(GeoTx::Ack(r)),
            Tx::MissionClearAll => Some(GeoTx::ClearAll),
            _ => None,
        }
    }

    fn start(&mut self, transfer: Transfer) {
        self.state.transfer = transfer;
        self.status = GeoStatus::Busy;
    }
}

/// An upload of `items` (at most the plan's capacity: checked before).
fn upload(items: &[MissionItem]) -> Transfer {
    Transfer::Upload(Upload::new(items.len() as u16))
}

/// The fence and rally plans of an [`Offboard`] machine.
#[derive(Debug, Clone)]
pub(crate) struct Geo {
    fence: Plan<FENCE_ITEMS>,
    rally: Plan<RALLY_ITEMS>,
    /// Fence, rally: lodged to go up after each accepted mission upload
    /// ([`Offboard::lodge_geo`]).
    follows: [bool; 2],
    /// Fence, rally: due out once the mission upload in flight is accepted.
    due: [bool; 2],
}

impl Geo {
    pub fn new() -> Self {
        Geo {
            fence: Plan::new(GeoKind::Fence),
            rally: Plan::new(GeoKind::Rally),
            follows: [false; 2],
            due: [false; 2],
        }
    }

    /// A mission upload starts: the plans lodged to follow it are due after it.
    pub fn mission_upload_started(&mut self) {
        self.due = self.follows;
    }

    /// Start the plans due once the mission is accepted: the fence first, the rally points
    /// when the fence is up (PX4 runs one transfer at a time; a refused fence sends no rally).
    fn follow_mission(&mut self, mission_uploaded: bool) {
        if !mission_uploaded {
            return;
        }
        if self.due[0] {
            self.due[0] = false;
            self.fence.start(upload(&self.fence.state.items));
        } else if self.due[1]
            && !matches!(self.fence.status, GeoStatus::Busy | GeoStatus::Failed(_))
        {
            self.due[1] = false;
            self.rally.start(upload(&self.rally.state.items));
        }
    }

    pub fn on_frame(&mut self, now: Stamp, frame: &Frame, t: &mut Timing) {
        self.fence.on_frame(now, frame, t);
        self.rally.on_frame(now, frame, t);
    }

    pub fn poll(
        &mut self,
        now: Stamp,
        t: &mut Timing,
        mission_uploaded: bool,
    ) -> Option<(GeoKind, GeoTx)> {
        self.follow_mission(mission_uploaded);
        if let Some(tx) = self.fence.poll(now, t) {
            return Some((GeoKind::Fence, tx));
        }
        self.rally.poll(now, t).map(|tx| (GeoKind::Rally, tx))
    }

    pub fn deadline(&self, t: &Timing) -> Option<Instant> {
        earliest(self.fence.state.deadline(t), self.rally.state.deadline(t))
    }

    pub fn item(&self, kind: GeoKind, seq: u16) -> Option<&MissionItem> {
        self.items(kind).get(seq as usize)
    }

    pub fn items(&self, kind: GeoKind) -> &[MissionItem] {
        match kind {
            GeoKind::Fence => &self.fence.state.items,
            GeoKind::Rally => &self.rally.state.items,
        }
    }
}

impl<const ITEMS: usize> Offboard<ITEMS> {
    /// Upload `items` as the vehicle's geofence or rally points (seq = index, encodable
    /// commands and frames); watch [`Offboard::geo_status`]. The held plan is replaced at once.
    /// An empty plan is an error (use [`Offboard::clear_geo`]); more than the capacity
    /// ([`FENCE_ITEMS`], [`RALLY_ITEMS`]) is [`MissionError::TooLarge`].
    pub fn upload_geo(
        &mut self,
        kind: GeoKind,
        items: &[MissionItem],
    ) -> Result<(), OffboardError> {
        self.hold_geo(kind, items)?;
        match kind {
            GeoKind::Fence => self.geo.fence.start(upload(items)),
            GeoKind::Rally => self.geo.rally.start(upload(items)),
        }
        Ok(())
    }

    /// Lodge `items` as the geofence or rally points that go up after the mission: each
    /// [`Offboard::upload_mission`] from now on uploads them once PX4 has accepted the
    /// mission, the fence first, then the rally points (PX4 takes one transfer at a time).
    /// Watch [`Offboard::geo_status`]: `Idle` (or the last transfer's end) until the mission
    /// is accepted. Errors as [`Offboard::upload_geo`].
    pub fn lodge_geo(&mut self, kind: GeoKind, items: &[MissionItem]) -> Result<(), OffboardError> {
        self.hold_geo(kind, items)?;
        self.geo.follows[kind as usize] = true;
        Ok(())
    }

    /// Check `items` and hold them as the plan of `kind`, abandoning a transfer in flight.
    fn hold_geo(&mut self, kind: GeoKind, items: &[MissionItem]) -> Result<(), OffboardError> {
        if items.is_empty() {
            return Err(OffboardError::NoMission);
        }
        validate_mission(items)?;
        fn hold<const N: usize>(
            p: &mut Plan<N>,
            items: &[MissionItem],
        ) -> Result<(), OffboardError> {
            if items.len() > N {
                return Err(OffboardError::TooManyItems {
                    count: items.len(),
                    capacity: N,
                });
            }
            p.state.items.clear();
            // Cannot fail: the length was checked above.
            let _ = p.state.items.extend_from_slice(items);
            p.state.transfer = Transfer::Idle;
            Ok(())
        }
        match kind {
            GeoKind::Fence => hold(&mut self.geo.fence, items),
            GeoKind::Rally => hold(&mut self.geo.rally, items),
        }
    }

    /// Download the vehicle's geofence or rally points into the held plan
    /// ([`Offboard::geo_items`]); watch [`Offboard::geo_status`].
    pub fn download_geo(&mut self, kind: GeoKind) {
        match kind {
            GeoKind::Fence => self.geo.fence.start(Transfer::Download(Download::new())),
            GeoKind::Rally => self.geo.rally.start(Transfer::Download(Download::new())),
        }
    }

    /// Clear the vehicle's geofence or rally points (MISSION_CLEAR_ALL of that type only); the
    /// held plan empties on PX4's ack.
    pub fn clear_geo(&mut self, kind: GeoKind) {
        match kind {
            GeoKind::Fence => self.geo.fence.start(Transfer::Clear(Clear::new())),
            GeoKind::Rally => self.geo.rally.start(Transfer::Clear(Clear::new())),
        }
    }

    /// The held geofence or rally points: uploaded or downloaded.
    pub fn geo_items(&self, kind: GeoKind) -> &[MissionItem] {
        self.geo.items(kind)
    }

    /// How the last transfer of this plan ended, or [`GeoStatus::Busy`] while one runs.
    pub fn geo_status(&self, kind: GeoKind) -> GeoStatus {
        match kind {
            GeoKind::Fence => self.geo.fence.status,
            GeoKind::Rally => self.geo.rally.status,
        }
    }
}
