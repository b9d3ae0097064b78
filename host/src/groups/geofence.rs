//! Geofence: the fence and the rally points (MAVSDK's Geofence and its rally points).

use nexus_core::mission::MissionItem;
use nexus_core::offboard::{GeoKind, GeoStatus};

use super::{run, Facade};
use crate::error::OffboardClientError;

/// The vehicle's geofence and rally points, as [`MissionItem`]s
/// ([`nexus_core::plan::read_geo`] reads them from a `.plan`). Independent of the mission and
/// its progress; PX4 takes one transfer at a time.
pub trait GeofenceApi: Facade {
    /// Upload the geofence or the rally points; done when [`GeofenceApi::geo_status`] says so.
    fn upload_geo(&self, kind: GeoKind, items: &[MissionItem]) -> Result<(), OffboardClientError> {
        let items = items.to_vec();
        self.apply(move |c, _| Ok(c.upload_geo(kind, &items)?))
    }

    /// Lodge the geofence or the rally points to go up after the mission: every mission
    /// upload from now on sends them once PX4 has accepted the mission, the fence first, then
    /// the rally points (a fence refused sends no rally points). [`GeofenceApi::geo_status`]
    /// is `Idle` until then.
    fn lodge_geo(&self, kind: GeoKind, items: &[MissionItem]) -> Result<(), OffboardClientError> {
        let items = items.to_vec();
        self.apply(move |c, _| Ok(c.lodge_geo(kind, &items)?))
    }

    /// Download the vehicle's geofence or rally points ([`GeofenceApi::geo_items`]).
    fn download_geo(&self, kind: GeoKind) -> Result<(), OffboardClientError> {
        run(self, move |c, _| c.download_geo(kind))
    }

    /// Clear the vehicle's geofence or rally points (that type only; the mission stays).
    fn clear_geo(&self, kind: GeoKind) -> Result<(), OffboardClientError> {
        run(self, move |c, _| c.clear_geo(kind))
    }

    /// The held geofence or rally points (uploaded or downloaded).
    fn geo_items(&self, kind: GeoKind) -> Result<Vec<MissionItem>, OffboardClientError> {
        self.apply(move |c, _| Ok(c.offboard().geo_items(kind).to_vec()))
    }

    /// How the last fence or rally transfer ended, or `Busy` while one runs.
    fn geo_status(&self, kind: GeoKind) -> Result<GeoStatus, OffboardClientError> {
        self.apply(move |c, _| Ok(c.offboard().geo_status(kind)))
    }
}
