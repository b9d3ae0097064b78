//! Mission: upload, fly, pause, resume, clear, download, and PX4's progress (MAVSDK's Mission).

use nexus_core::mission::{MissionAck, MissionItem};

use super::{run, Facade};
use crate::error::OffboardClientError;
use crate::offboard_client::{read_plan_file, MissionSource};
use crate::pump::MissionStatus;

/// The vehicle's mission. Transfers run on the link's machine (PX4's protocol, retries,
/// acks); progress is what PX4 reported.
pub trait MissionApi: Facade {
    /// Upload a mission (a plan, items, or a `.plan` path) verbatim; done when
    /// [`MissionApi::mission_uploaded`]. Resets the progress counters. The geofence and rally
    /// points lodged with [`super::GeofenceApi::lodge_geo`] follow it up.
    fn upload_mission<'a>(
        &self,
        mission: impl Into<MissionSource<'a>>,
    ) -> Result<(), OffboardClientError> {
        let items: Vec<MissionItem> = match mission.into() {
            MissionSource::Plan(p) => p.items.to_vec(),
            MissionSource::Items(i) => i.to_vec(),
            MissionSource::File(path) => read_plan_file(path)?.items.to_vec(),
        };
        self.apply(move |c, _| Ok(c.upload_mission_items(&items)?))
    }

    /// Fly the uploaded mission from its first item: MISSION_SET_CURRENT 0 confirmed, Mission
    /// mode confirmed, then arm.
    fn start_mission(&self) -> Result<(), OffboardClientError> {
        run(self, |c, now| c.start_mission(now))
    }

    /// Pause the mission (Hold).
    fn pause_mission(&self) -> Result<(), OffboardClientError> {
        run(self, |c, _| c.pause_mission())
    }

    /// Resume the mission from the item PX4 holds current (Mission mode).
    fn resume_mission(&self) -> Result<(), OffboardClientError> {
        run(self, |c, _| c.resume_mission())
    }

    /// Clear PX4's mission (MISSION_CLEAR_ALL); the held mission empties on PX4's ack.
    fn clear_mission(&self) -> Result<(), OffboardClientError> {
        run(self, |c, _| c.clear_mission())
    }

    /// Download PX4's mission into the held mission ([`MissionApi::mission_items`]).
    fn download_mission(&self) -> Result<(), OffboardClientError> {
        run(self, |c, _| c.download_mission())
    }

    /// The held mission (lodged, uploaded or downloaded).
    fn mission_items(&self) -> Result<Vec<MissionItem>, OffboardClientError> {
        self.apply(|c, _| Ok(c.offboard().mission_items().to_vec()))
    }

    /// Whether PX4 accepted the uploaded mission (false while in flight and when refused:
    /// [`MissionApi::mission_ack`] says why).
    fn mission_uploaded(&self) -> bool {
        self.read_status(|s| s.mission.uploaded)
    }

    /// PX4's MISSION_ACK result ([`MissionAck::MAV_MISSION_ACCEPTED`], or why it refused);
    /// `None` before one. A number outside MAV_MISSION_RESULT reads as `MAV_MISSION_ERROR`
    /// (PX4 sends only defined values).
    fn mission_ack(&self) -> Option<MissionAck> {
        self.read_status(|s| s.mission.ack).map(|code| {
            num_traits::FromPrimitive::from_u8(code).unwrap_or(MissionAck::MAV_MISSION_ERROR)
        })
    }

    /// Items in the uploaded mission (0 before any upload).
    fn mission_count(&self) -> usize {
        self.read_status(|s| s.mission.count)
    }

    /// Highest item (seq) PX4 said it reached, `None` before any (never decreases within a
    /// start).
    fn mission_reached(&self) -> Option<u16> {
        self.read_status(|s| s.mission.reached)
    }

    /// The item PX4 is flying to (MISSION_CURRENT.seq), 0 before the first report.
    fn mission_current(&self) -> u16 {
        self.read_status(|s| s.mission.current)
    }

    /// Whether PX4 reported the mission's last reachable item reached in this start (the
    /// first LAND, or the item before an RTL: [`nexus_core::mission::last_reachable`]); a
    /// COMPLETE state left over from an earlier flight does not count.
    fn mission_complete(&self) -> bool {
        self.read_status(|s| s.mission.complete)
    }

    /// All mission progress at once.
    fn mission_progress(&self) -> MissionStatus {
        self.read_status(|s| s.mission)
    }
}
