//! The plan going up: lodged with the offboard machine, the mission uploaded, then its
//! geofence and rally points, each followed to PX4's answer.

use super::{Flight, TICK};
use crate::program::PlanFile;
use nexus_core::mission::MissionItem;
use nexus_core::offboard::{GeoKind, GeoStatus, OffboardEvent};
use nexus_host::pump::LinkEvent;
use std::time::{Duration, Instant};

/// How long a mission upload may take, wall (the offboard machine gives up sooner on its own
/// sim-time retries when the clock runs).
pub const UPLOAD_TIMEOUT: Duration = Duration::from_secs(120);

/// The plan lodged with the offboard machine, as the flight follows it.
#[derive(Default)]
pub(super) struct Lodged {
    /// Its mission items (the display's distance to the current one).
    pub items: Vec<MissionItem>,
    /// The geofence and rally uploads not yet seen accepted, in the order they go up.
    geo: Vec<GeoUpload>,
    /// The plan's path, for lines.
    path: String,
}

/// A geofence or rally upload that goes up after the mission.
struct GeoUpload {
    kind: GeoKind,
    count: usize,
    /// "geofence items", "rally points".
    what: &'static str,
    /// Its start was said.
    seen: bool,
}

impl Lodged {
    /// Whether fence or rally uploads are still to be seen accepted.
    pub fn geo_pending(&self) -> bool {
        !self.geo.is_empty()
    }
}

impl Flight {
    /// Lodge `plan` with the offboard machine (an `upload` step sends it), its geofence and
    /// rally points to go up after the mission ([`nexus_core::offboard::Offboard::lodge_geo`]).
    pub fn lodge(&mut self, plan: &PlanFile) -> Result<(), String> {
        self.lodged.items = plan.plan.items.to_vec();
        self.lodged.geo = [
            (GeoKind::Fence, plan.geo.fence.len(), "geofence items"),
            (GeoKind::Rally, plan.geo.rally.len(), "rally points"),
        ]
        .into_iter()
        .filter(|&(_, n, _)| n > 0)
        .map(|(kind, count, what)| GeoUpload {
            kind,
            count,
            what,
            seen: false,
        })
        .collect();
        self.lodged.path = plan.path.display().to_string();
        lodge_plan(&self.vehicle.link, plan)
    }

    /// Upload `plan`, then its geofence and rally points, and wait for PX4's answer to each
    /// (a fence refused must not pass for a flight that has one).
    pub fn upload(&mut self, plan: &PlanFile) -> Result<(), String> {
        self.lodge(plan)?;
        self.vehicle
            .link
            .call(|ctx| ctx.client().upload_mission())
            .map_err(|e| e.to_string())?
            .map_err(|e| format!("{}: cannot upload: {e}", plan.path.display()))?;
        let n = plan.plan.items.len();
        self.view.line(&format!(
            "uploading {n} mission items from {}",
            plan.path.display()
        ));
        let start = Instant::now();
        let pump = self.vehicle.link.pump().clone();
        let mut seen = pump.news();
        let mut mission_up = false;
        while start.elapsed() < UPLOAD_TIMEOUT {
            // Woken by the pump's news (the upload's end comes as an event), a tick at most:
            // under `--speed max` the whole flight is a fraction of a second.
            seen = pump.wait_news(seen, TICK);
            if self.interrupt() {
                return Err(self.log.abort_reason.clone().unwrap_or_default());
            }
            self.look();
            for (_, ev) in self.new_events() {
                mission_up |= self.on_upload_event(ev)?;
            }
            if mission_up && self.follow_geo()? {
                return Ok(());
            }
            let st = self.display_status("upload");
            self.view.update(&st);
        }
        let what = match self.lodged.geo.first() {
            Some(g) if mission_up => g.what,
            _ => "mission",
        };
        Err(format!(
            "no answer to the {what} upload within {} s",
            UPLOAD_TIMEOUT.as_secs()
        ))
    }

    /// One link event during the upload: whether it says the mission is up, or why the upload
    /// failed.
    fn on_upload_event(&mut self, ev: LinkEvent) -> Result<bool, String> {
        match ev {
            LinkEvent::Offboard(e) => {
                self.note_event(&e);
                match e {
                    OffboardEvent::MissionUploaded { .. } => return Ok(true),
                    OffboardEvent::MissionUploadFailed(err) => {
                        return Err(format!("PX4 did not take the mission: {err}"))
                    }
                    _ => {}
                }
            }
            LinkEvent::Died(why) => {
                self.log.died = Some(why.to_string());
                return Err(format!("the vehicle died during the upload: {why}"));
            }
            LinkEvent::Ignored(src) => self.note_ignored(src),
            LinkEvent::SlowLink(why) => self.note_slow_link(why),
            _ => {}
        }
        Ok(false)
    }

    /// Follow the geofence and rally uploads that go up after the mission: says each as it
    /// starts; whether all are up, or why PX4 did not take one.
    pub(super) fn follow_geo(&mut self) -> Result<bool, String> {
        while let Some(g) = self.lodged.geo.first_mut() {
            let kind = g.kind;
            let st = self
                .vehicle
                .link
                .call(move |ctx| ctx.client().offboard().geo_status(kind))
                .map_err(|e| e.to_string())?;
            if st == GeoStatus::Idle {
                // Not started: the mission is not accepted yet.
                return Ok(false);
            }
            if !g.seen {
                g.seen = true;
                let line = format!("uploading {} {} from {}", g.count, g.what, self.lodged.path);
                self.view.line(&line);
            }
            match st {
                GeoStatus::Busy => return Ok(false),
                GeoStatus::Uploaded { .. } => {
                    self.lodged.geo.remove(0);
                }
                GeoStatus::Failed(err) => {
                    return Err(format!("PX4 did not take the {}: {err}", g.what))
                }
                other => return Err(format!("the {} upload ended as {other:?}", g.what)),
            }
        }
        Ok(true)
    }
}

/// Lodge `plan` with the link's offboard machine: its mission (an `upload` step, or the
/// machine's `upload_mission`, sends it), its geofence and rally points to go up once PX4 has
/// accepted the mission ([`nexus_core::Client::lodge_geo`]).
pub fn lodge_plan(link: &nexus_host::pump::LinkHandle, plan: &PlanFile) -> Result<(), String> {
    let items: Vec<MissionItem> = plan.plan.items.to_vec();
    let fence = plan.geo.fence.to_vec();
    let rally = plan.geo.rally.to_vec();
    link.call(move |ctx| {
        let op = ctx.client();
        op.lodge_mission(&items)?;
        for (kind, geo) in [(GeoKind::Fence, fence), (GeoKind::Rally, rally)] {
            if !geo.is_empty() {
                op.lodge_geo(kind, &geo)?;
            }
        }
        Ok::<(), nexus_core::offboard::OffboardError>(())
    })
    .map_err(|e| e.to_string())?
    .map_err(|e| format!("{}: cannot hold this mission: {e}", plan.path.display()))
}
