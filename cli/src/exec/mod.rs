//! What `fly` and `run` share: a flight on a started vehicle's offboard link — upload a plan,
//! run a step program on the link's core client (on the host pump, which applies reactions in
//! the tick their condition is met), show progress, and turn the outcome into lines, a verdict
//! and a report.
//!
//! - `upload`: the plan lodged with the offboard machine and sent up, fence and rally after;
//! - `flight`: the loop that follows the program on the link and shows it;
//! - `bound`: the wall-time bound on each step (a vehicle whose clock stops);
//! - `log`: what the flight saw and did ([`FlightRecord`]), and the report's parts built from it.

mod bound;
mod flight;
mod log;
mod upload;

pub use flight::horizontal_m;
pub use log::{failure_text, severity_name, step_line, FlightRecord};
pub use upload::{lodge_plan, UPLOAD_TIMEOUT};

use super::output::Out;
use super::progress::ProgressView;
use super::report::SnapshotReport;
use super::vehicle::Connected;
use nexus_core::escape::Escaped;
use nexus_host::pump::LinkEvent;
use nexus_host::transport::ForeignTraffic;
use std::time::Duration;

/// How often the display is refreshed, wall.
const TICK: Duration = Duration::from_millis(50);

/// What a step is, for lines and the report.
#[derive(Debug, Clone)]
pub struct StepMeta {
    /// Its name, if any.
    pub name: Option<String>,
    /// The action as written.
    pub action: String,
    /// The action in words.
    pub action_text: String,
    /// The wait in words.
    pub until: String,
}

impl From<&super::program::StepSpec> for StepMeta {
    fn from(s: &super::program::StepSpec) -> Self {
        StepMeta {
            name: s.name.clone(),
            action: s.action_name.clone(),
            action_text: s.action_text.clone(),
            until: s.until_text.clone(),
        }
    }
}

impl StepMeta {
    /// "step 2/4 (take off)".
    pub fn label(&self, index: usize, total: usize) -> String {
        match &self.name {
            Some(n) => format!("step {}/{total} ({n})", index + 1),
            None => format!("step {}/{total}", index + 1),
        }
    }
}

/// One flight on a connected vehicle.
pub struct Flight {
    /// The vehicle and its link.
    pub vehicle: Connected,
    /// The display.
    pub view: ProgressView,
    /// What the flight saw and did: the report is built from it.
    pub log: FlightRecord,
    /// With it, a request PX4 keeps refusing or a failed upload ends the program at once.
    abort_on_give_up: bool,
    /// The link's newest event already handled.
    event_seq: u64,
    /// The step whose start was said.
    announced: Option<usize>,
    /// The step the program runs, as last seen.
    pending_announce: Option<usize>,
    /// The vehicle's last reported position, degrees.
    position_deg: Option<(f64, f64)>,
    /// The plan lodged with the offboard machine.
    lodged: upload::Lodged,
}

impl Flight {
    /// A flight on `vehicle`. With `abort_on_give_up`, a request PX4 keeps refusing or a failed
    /// upload ends the program at once (fly); without, the step's timeout decides (run).
    pub fn new(
        vehicle: Connected,
        out: &Out,
        mission_total: usize,
        abort_on_give_up: bool,
    ) -> Self {
        let event_seq = vehicle.link.last_event_seq();
        let status = vehicle.link.status();
        // A lossy link is often found while the vehicle is still being attached (the loss
        // monitor needs two windows of 2 s): that finding belongs to the flight's report too.
        let early: Vec<String> = vehicle
            .link
            .events_since(0)
            .into_iter()
            .filter_map(|(n, e)| match e {
                LinkEvent::SlowLink(why) if n <= event_seq => Some(why),
                _ => None,
            })
            .collect();
        let mut flight = Flight {
            vehicle,
            view: ProgressView::new(out, mission_total),
            log: FlightRecord::new(status),
            abort_on_give_up,
            event_seq,
            announced: None,
            pending_announce: None,
            position_deg: None,
            lodged: upload::Lodged::default(),
        };
        for why in early {
            flight.note_slow_link(why);
        }
        flight
    }

    /// The vehicle now.
    pub fn final_snapshot(&mut self) -> SnapshotReport {
        self.look();
        self.log.snapshot()
    }

    /// What sources other than the vehicle sent (counted, never applied), for the summary
    /// and the report.
    pub fn foreign(&mut self) -> ForeignTraffic {
        self.log.status = self.vehicle.link.status();
        self.log.status.foreign.clone()
    }

    /// Print the summary of ignored traffic ("ignored 4 frames from 127.0.0.1:53211 claiming
    /// system 1", and on a signed link "ignored 3 frames failing the signing check: 1
    /// unsigned, 2 bad signature") and return the foreign part for the report.
    pub fn summarize_ignored(&mut self) -> ForeignTraffic {
        let f = self.foreign();
        for l in f.lines() {
            self.view.line(&l);
        }
        let signing = self.log.status.counters.signing.as_ref();
        if let Some(l) = signing.and_then(nexus_host::signing::rejected_line) {
            self.view.line(&l);
        }
        f
    }

    /// The vehicle's last console lines (for a failure report).
    pub fn console_tail(&self, n: usize) -> Vec<String> {
        let lines = self.vehicle.sim.console();
        let skip = lines.len().saturating_sub(n);
        lines
            .into_iter()
            .skip(skip)
            .map(|l| Escaped(&l).to_string())
            .collect()
    }
}
