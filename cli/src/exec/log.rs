//! What a flight saw and did — events, texts, step records, parameter sets, mission progress,
//! the trace of the plots, the link's last status — and the report's parts built from it.

use super::StepMeta;
use crate::driver::TextRecord;
use crate::program::PlanFile;
use crate::report::{
    ItemProgress, ItemReport, MissionReport, SnapshotReport, StepReport, TextReport,
};
use nexus_core::engine::{ProgramEnd, Reason, StepRecord};
use nexus_core::escape::Escaped;
use nexus_host::pump::LinkStatus;
use std::collections::HashMap;
use std::time::Instant;

/// The record of one flight.
pub struct FlightRecord {
    /// When the flight began, wall.
    started: Instant,
    /// The vehicle's clock when the flight began, sim s.
    sim0_s: f64,
    /// Wall and sim seconds flown when the program ended (the clock runs on after it).
    pub(super) ended: Option<(f64, f64)>,
    /// Offboard events and notes, as lines.
    pub events: Vec<String>,
    /// How each parameter set ended, in order (a `param` step's report names its own).
    pub(super) param_sets: Vec<nexus_core::offboard::ParamSetOutcome>,
    /// When PX4 moved on to each mission item.
    pub mission_progress: Vec<ItemProgress>,
    /// Why the flight was cut short by us (a request PX4 kept refusing, an upload rejected).
    pub abort_reason: Option<String>,
    /// Every STATUSTEXT so far.
    pub(super) texts: Vec<TextRecord>,
    /// The record of each step that settled.
    pub(super) records: Vec<StepRecord>,
    /// Why the vehicle died, as the link said it.
    pub(super) died: Option<String>,
    /// Why each failed step failed, by step index (built by the core when it settled).
    pub(super) explanations: HashMap<usize, String>,
    /// The vehicle was seen in the air (landed state TAKEOFF or IN_AIR) during the program.
    pub(super) airborne: bool,
    /// The vehicle as seen at each look with a new autopilot clock (the `--report` plots).
    pub trace: Vec<crate::evidence::Sample>,
    /// The link's status at the last look.
    pub(super) status: LinkStatus,
}

impl FlightRecord {
    /// An empty record of a flight that begins now, on a link in `status`.
    pub(super) fn new(status: LinkStatus) -> Self {
        FlightRecord {
            started: Instant::now(),
            sim0_s: status.snapshot.t_sim_s(),
            ended: None,
            events: Vec::new(),
            param_sets: Vec::new(),
            mission_progress: Vec::new(),
            abort_reason: None,
            texts: Vec::new(),
            records: Vec::new(),
            died: None,
            explanations: HashMap::new(),
            airborne: false,
            trace: Vec::new(),
            status,
        }
    }

    /// PX4 is at mission item `item` at sim time `t_sim_s`: noted when it moved on to it.
    pub(super) fn note_item(&mut self, item: u16, t_sim_s: f64) {
        if self.mission_progress.last().is_none_or(|p| p.item != item) {
            self.mission_progress.push(ItemProgress { item, t_sim_s });
        }
    }

    /// Wall seconds since the flight began.
    pub fn wall_s(&self) -> f64 {
        self.started.elapsed().as_secs_f64()
    }

    /// Why the vehicle died, if it did.
    pub fn died(&self) -> Option<String> {
        self.died.clone().or_else(|| {
            self.status
                .died
                .as_ref()
                .map(|d| Escaped(&d.to_string()).to_string())
        })
    }

    /// Every STATUSTEXT so far.
    pub fn texts(&self) -> &[TextRecord] {
        &self.texts
    }

    /// Whether the vehicle was seen in the air (taking off or flying) during the flight.
    pub fn airborne(&self) -> bool {
        self.airborne
    }

    /// Why step `step` failed, in words, if it did.
    pub fn explanation(&self, step: usize) -> Option<&str> {
        self.explanations.get(&step).map(String::as_str)
    }

    /// The report of each step that ran.
    pub fn step_reports(&self, meta: &[StepMeta]) -> Vec<StepReport> {
        // Each `param` step waited for its set to end: the next outcome of its name is its own.
        let mut next_set = 0;
        self.records
            .iter()
            .enumerate()
            .map(|(i, rec)| {
                let m = meta.get(i);
                let mut r = StepReport::new(
                    i,
                    m.and_then(|m| m.name.clone()),
                    m.map_or("", |m| m.action.as_str()),
                    m.map_or("", |m| m.action_text.as_str()),
                    m.map_or("", |m| m.until.as_str()),
                    rec,
                );
                r.explanation = self.explanation(i).map(str::to_string);
                let set_name = m
                    .filter(|m| m.action == "param")
                    .and_then(|m| m.action_text.strip_prefix("set "))
                    .and_then(|t| t.split(' ').next());
                if let Some(name) = set_name {
                    let found = self.param_sets[next_set.min(self.param_sets.len())..]
                        .iter()
                        .position(|p| p.name == name);
                    if let Some(k) = found {
                        r.param = Some(self.param_sets[next_set + k].to_string());
                        next_set += k + 1;
                    }
                }
                r
            })
            .collect()
    }

    /// Every text so far.
    pub fn text_reports(&self) -> Vec<TextReport> {
        self.texts.iter().map(TextReport::from).collect()
    }

    /// The vehicle at the last look.
    pub fn snapshot(&self) -> SnapshotReport {
        let mut s = self.status.snapshot.clone();
        if let Some(why) = self.died() {
            s.error = Some(nexus_core::telemetry::error_text(&why));
        }
        SnapshotReport::from(&s)
    }

    /// Sim seconds on the vehicle's clock at the last look.
    pub fn sim_s(&self) -> f64 {
        self.status.snapshot.t_sim_s()
    }

    /// Sim seconds flown since the flight began.
    pub fn flown_sim_s(&self) -> f64 {
        (self.sim_s() - self.sim0_s).max(0.0)
    }

    /// The vehicle's clock when the program ended (or now), sim s: the time its last line
    /// gives (under `--speed max` the clock runs on after the program).
    pub fn sim_s_at_end(&self) -> f64 {
        self.sim0_s + self.flown().1
    }

    /// Wall and sim seconds flown: until the program ended, or until now.
    fn flown(&self) -> (f64, f64) {
        self.ended
            .unwrap_or_else(|| (self.wall_s(), self.flown_sim_s()))
    }

    /// The speed factor achieved (sim s per wall s), until the program ended or until now.
    pub fn achieved_speed(&self) -> Option<f64> {
        let (wall, sim) = self.flown();
        (wall > 0.0).then(|| sim / wall)
    }

    /// The flight's sim and wall seconds and the factor achieved, for the report.
    pub fn fill_times(&self, report: &mut crate::report::Report) {
        let (wall, sim) = self.flown();
        report.wall_s = wall;
        report.sim_s = sim;
        report.achieved_speed = (wall > 0.0).then(|| sim / wall);
    }

    /// ` (12.3 s wall, ×3.9)`: wall seconds and the factor achieved, for a last line.
    pub fn wall_text(&self) -> String {
        match (self.flown().0, self.achieved_speed()) {
            (wall, Some(x)) => format!("{wall:.2} s wall, ×{x:.0}"),
            (wall, None) => format!("{wall:.1} s wall"),
        }
    }

    /// Whether PX4 reported the mission's last reachable item reached in this run.
    pub fn mission_complete(&self) -> bool {
        self.status.mission.complete
    }

    /// Items PX4 reported reached in this run (the highest reached seq + 1: PX4 reaches items
    /// in order), never the plan's length.
    pub fn items_flown(&self) -> usize {
        self.status.mission.reached.map_or(0, |r| r as usize + 1)
    }

    /// The mission as flown.
    pub fn mission_report(&self, plan: &PlanFile) -> MissionReport {
        let m = &self.status.mission;
        MissionReport {
            plan: plan.path.display().to_string(),
            items: plan.plan.items.iter().map(ItemReport::from).collect(),
            uploaded: m.uploaded,
            ack: m.ack,
            current: m.current,
            reached: m.reached,
            complete: m.complete,
            progress: self.mission_progress.clone(),
            last_reachable: nexus_core::mission::last_reachable(&plan.plan.items),
            items_flown: self.items_flown(),
        }
    }

    /// Why the program did not pass, in one sentence naming the step and the reason.
    pub fn failure(&self, end: ProgramEnd, meta: &[StepMeta]) -> Option<String> {
        let passed = self.records.len() == meta.len() && self.records.iter().all(|r| r.passed);
        if end == ProgramEnd::Completed && passed {
            return None;
        }
        let total = meta.len();
        // The step that failed: the one the program ended at, else the first that did not pass
        // (a timeout with on_timeout = "continue").
        let at = match end {
            ProgramEnd::Stopped { step }
            | ProgramEnd::Died { step }
            | ProgramEnd::Aborted { step } => step,
            ProgramEnd::Completed => self.records.iter().position(|r| !r.passed).unwrap_or(0),
        };
        let label = meta
            .get(at)
            .map_or(format!("step {}", at + 1), |m| m.label(at, total));
        let until = meta.get(at).map_or("", |m| m.until.as_str());
        let Some(rec) = self.records.get(at) else {
            let why = self
                .abort_reason
                .clone()
                .or_else(|| self.died())
                .unwrap_or_else(|| "did not run".into());
            return Some(format!("{label} failed: {why}"));
        };
        Some(match (rec.result.reason, self.explanation(at)) {
            // The explanation of a death starts with its cause: say it once.
            (Reason::Died, Some(why)) => format!("{label} failed: {why}"),
            (_, Some(why)) => format!(
                "{}; {why}",
                failure_text(&label, until, rec, self.abort_reason.as_deref())
            ),
            (_, None) => failure_text(&label, until, rec, self.abort_reason.as_deref()),
        })
    }
}

/// One line per settled step; a failed one ends with why (`explanation`, from the core).
pub fn step_line(
    m: &StepMeta,
    index: usize,
    total: usize,
    rec: &StepRecord,
    explanation: Option<&str>,
) -> String {
    let r = &rec.result;
    let head = if rec.passed { "ok  " } else { "FAIL" };
    let s = &r.snapshot;
    let mut state = vec![
        s.mode.map_or("mode ?".into(), |m| m.to_string()),
        if s.armed { "armed" } else { "disarmed" }.to_string(),
    ];
    if let Some(h) = s.height_m {
        state.push(format!("alt {} m", crate::progress::one_decimal(h)));
    }
    state.push(s.landed.name().to_string());
    if let Some(e) = &s.error {
        state.push(format!("error: {e}"));
    }
    let mut line = format!(
        "{head} {}: {} after {:.1} s sim ({:.1} s wall) [{}]",
        m.label(index, total),
        reason_words(r.reason, r.guard),
        r.waited_sim_s,
        r.waited_wall.as_secs_f32(),
        state.join(", ")
    );
    if !rec.passed {
        line.push_str(&format!(" — waited for {}", m.until));
        if let Some(why) = explanation {
            line.push_str(&format!("; {why}"));
        }
    }
    line
}

/// The reason in words; a guard is named by its condition in the explanation that follows.
fn reason_words(reason: Reason, guard: Option<u8>) -> String {
    match reason {
        Reason::Guard => format!("guard {} of the step fired", guard.map_or(0, |g| g + 1)),
        other => other.name().to_string(),
    }
}

/// The one sentence of a failed step (shared by `run` and `check`).
pub fn failure_text(
    label: &str,
    until: &str,
    rec: &StepRecord,
    abort_reason: Option<&str>,
) -> String {
    let r = &rec.result;
    match r.reason {
        Reason::Timeout => format!(
            "{label} failed: timeout after {:.1} s sim — waited for {until}",
            r.waited_sim_s
        ),
        Reason::Guard => format!("{label} failed: a guard fired while waiting for {until}"),
        Reason::Died => format!(
            "{label} failed: the vehicle died: {}",
            r.snapshot.error.as_deref().unwrap_or("no reason given")
        ),
        Reason::Met => format!("{label}: met, yet the program did not complete"),
        _ => format!(
            "{label} failed: aborted: {}",
            abort_reason
                .or(r.snapshot.error.as_deref())
                .unwrap_or("no reason given")
        ),
    }
}

/// MAV_SEVERITY in words.
pub fn severity_name(s: u8) -> &'static str {
    match s {
        0 => "emergency",
        1 => "alert",
        2 => "critical",
        3 => "error",
        4 => "warning",
        5 => "notice",
        6 => "info",
        _ => "debug",
    }
}
