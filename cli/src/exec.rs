//! What `fly` and `run` share: a flight on a started vehicle's offboard link — upload a plan,
//! run a step program on the link's core client (on the host pump, which applies reactions in
//! the tick their condition is met), show progress, and turn the outcome into lines, a verdict
//! and a report.

use super::driver::TextRecord;
use super::output::Out;
use super::program::{PlanFile, STEPS};
use super::progress::{ProgressView, Status};
use super::report::{
    ItemProgress, ItemReport, MissionReport, SnapshotReport, StepReport, TextReport,
};
use super::vehicle::Connected;
use nexus_core::action::Action;
use nexus_core::engine::{Program, ProgramEnd, Reason, StepRecord};
use nexus_core::escape::Escaped;
use nexus_core::mission::MissionItem;
use nexus_core::offboard::{GeoKind, GeoStatus, OffboardEvent};
use nexus_host::pump::{LinkEvent, LinkStatus, PendingProgram};
use nexus_host::transport::{ForeignSource, ForeignTraffic, FOREIGN_SOURCES};
use std::time::{Duration, Instant};

/// How long a mission upload may take, wall (the offboard machine gives up sooner on its own
/// sim-time retries when the clock runs).
pub const UPLOAD_TIMEOUT: Duration = Duration::from_secs(120);

/// How often the display is refreshed, wall.
const TICK: Duration = Duration::from_millis(50);

/// How long an interrupted program may take to report its end, wall.
const INTERRUPT_WAIT: Duration = Duration::from_millis(500);

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

/// What one look at the pump thread brings back.
struct Look {
    texts: Vec<TextRecord>,
    records: Vec<StepRecord>,
    position_deg: Option<(f64, f64)>,
    running_step: Option<usize>,
}

/// One flight on a connected vehicle.
pub struct Flight {
    /// The vehicle and its link.
    pub vehicle: Connected,
    /// The display.
    pub view: ProgressView,
    started: Instant,
    /// The vehicle's clock when the flight began, sim s.
    sim0_s: f64,
    /// Wall and sim seconds flown when the program ended (the clock runs on after it).
    ended: Option<(f64, f64)>,
    /// Offboard events and notes, as lines.
    pub events: Vec<String>,
    /// How each parameter set ended, in order (a `param` step's report names its own).
    param_sets: Vec<nexus_core::offboard::ParamSetOutcome>,
    /// When PX4 moved on to each mission item.
    pub mission_progress: Vec<ItemProgress>,
    /// Why the flight was cut short by us (a request PX4 kept refusing, an upload rejected).
    pub abort_reason: Option<String>,
    abort_on_give_up: bool,
    texts: Vec<TextRecord>,
    records: Vec<StepRecord>,
    event_seq: u64,
    announced: Option<usize>,
    pending_announce: Option<usize>,
    status: LinkStatus,
    position_deg: Option<(f64, f64)>,
    items: Vec<MissionItem>,
    died: Option<String>,
    /// Why each failed step failed, by step index (built by the core when it settled).
    explanations: std::collections::HashMap<usize, String>,
    /// The vehicle was seen in the air (landed state TAKEOFF or IN_AIR) during the program.
    airborne: bool,
    /// The vehicle as seen at each look with a new autopilot clock (the `--report` plots).
    pub trace: Vec<super::evidence::Sample>,
    /// The geofence and rally uploads not yet seen accepted, in the order they go up.
    geo: Vec<GeoUpload>,
    /// The plan they come from, for lines.
    geo_path: String,
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
            started: Instant::now(),
            sim0_s: status.snapshot.t_sim_s(),
            ended: None,
            events: Vec::new(),
            param_sets: Vec::new(),
            mission_progress: Vec::new(),
            abort_reason: None,
            abort_on_give_up,
            texts: Vec::new(),
            records: Vec::new(),
            event_seq,
            announced: None,
            pending_announce: None,
            status,
            position_deg: None,
            items: Vec::new(),
            died: None,
            explanations: std::collections::HashMap::new(),
            airborne: false,
            trace: Vec::new(),
            geo: Vec::new(),
            geo_path: String::new(),
        };
        for why in early {
            flight.note_slow_link(why);
        }
        flight
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

    /// Lodge `plan` with the offboard machine (an `upload` step sends it), its geofence and
    /// rally points to go up after the mission ([`nexus_core::offboard::Offboard::lodge_geo`]).
    pub fn lodge(&mut self, plan: &PlanFile) -> Result<(), String> {
        self.items = plan.plan.items.to_vec();
        self.geo = [
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
        self.geo_path = plan.path.display().to_string();
        lodge_plan(&self.vehicle.link, plan)
    }

    /// Upload `plan`, then its geofence and rally points, and wait for PX4's answer to each
    /// (a fence refused must not pass for a flight that has one).
    pub fn upload(&mut self, plan: &PlanFile) -> Result<(), String> {
        self.lodge(plan)?;
        self.vehicle
            .link
            .call(|ctx| ctx.client().offboard_mut().0.upload_mission())
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
                return Err(self.abort_reason.clone().unwrap_or_default());
            }
            self.look();
            for (_, ev) in self.new_events() {
                match ev {
                    LinkEvent::Offboard(e) => {
                        self.note_event(&e);
                        match e {
                            OffboardEvent::MissionUploaded { .. } => mission_up = true,
                            OffboardEvent::MissionUploadFailed(err) => {
                                return Err(format!("PX4 did not take the mission: {err}"))
                            }
                            _ => {}
                        }
                    }
                    LinkEvent::Died(why) => {
                        self.died = Some(why.to_string());
                        return Err(format!("the vehicle died during the upload: {why}"));
                    }
                    LinkEvent::Ignored(src) => self.note_ignored(src),
                    LinkEvent::SlowLink(why) => self.note_slow_link(why),
                    _ => {}
                }
            }
            if mission_up && self.follow_geo()? {
                return Ok(());
            }
            let st = self.display_status("upload");
            self.view.update(&st);
        }
        let what = match self.geo.first() {
            Some(g) if mission_up => g.what,
            _ => "mission",
        };
        Err(format!(
            "no answer to the {what} upload within {} s",
            UPLOAD_TIMEOUT.as_secs()
        ))
    }

    /// Follow the geofence and rally uploads that go up after the mission: says each as it
    /// starts; whether all are up, or why PX4 did not take one.
    fn follow_geo(&mut self) -> Result<bool, String> {
        while let Some(g) = self.geo.first_mut() {
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
                let line = format!("uploading {} {} from {}", g.count, g.what, self.geo_path);
                self.view.line(&line);
            }
            match st {
                GeoStatus::Busy => return Ok(false),
                GeoStatus::Uploaded { .. } => {
                    self.geo.remove(0);
                }
                GeoStatus::Failed(err) => {
                    return Err(format!("PX4 did not take the {}: {err}", g.what))
                }
                other => return Err(format!("the {} upload ended as {other:?}", g.what)),
            }
        }
        Ok(true)
    }

    /// Run `program` to its end, printing each step as it starts and settles.
    ///
    /// Every step is also bounded in wall time ([`super::limits::wall_bound`]: its timeout at
    /// the slowest speed factor of the run so far, twice, plus 10 s): a vehicle whose clock
    /// stops would otherwise leave the step waiting forever for its sim-time timeout. Past the
    /// bound the program is aborted with "no progress of the vehicle clock: …".
    pub fn run(&mut self, program: Program<STEPS>, meta: &[StepMeta]) -> ProgramEnd {
        let total = meta.len();
        let timeouts: Vec<f64> = program
            .steps()
            .iter()
            .map(|s| {
                let t = s.until.timeout().map_or(0.0, f64::from);
                match s.action {
                    // A `param` step also waits for PX4's answer to its set, which the machine
                    // resends on the retry timer (sim time) until its resend limit.
                    Action::ParamReal { .. } | Action::ParamInt { .. } => {
                        t.max(param_set_bound_s())
                    }
                    _ => t,
                }
            })
            .collect();
        let mut slowest = match self.vehicle.sim.options().clock {
            nexus_host::run::RunClock::RealTime { speed } => speed,
            // Lockstep and as fast as possible: never slower than real time.
            // (and any clock a newer host adds).
            _ => 1.0,
        };
        // The step running, when it started (wall) and the vehicle clock then (ms).
        let mut current: Option<(usize, Instant, Option<u64>)> = None;
        // The `--real-vehicle` guard once more, on the very program about to start (steps and
        // reactions): the command checked it before attaching; this keeps any caller honest.
        if !self.vehicle.may_move {
            if let Some(m) = super::guard::program_moves(&program) {
                self.abort_reason = Some(format!(
                    "the program was refused: step {}, {}, can arm, move or reconfigure a \
                     vehicle that is not a simulator ({}), and --real-vehicle was not given",
                    m.step + 1,
                    m.part.words(),
                    m.why
                ));
                return ProgramEnd::Aborted { step: 0 };
            }
        }
        let pending: PendingProgram = match self.vehicle.link.start_program(program) {
            Ok(p) => p,
            Err(e) => {
                self.abort_reason = Some(format!("the program was refused: {e}"));
                return ProgramEnd::Aborted { step: 0 };
            }
        };
        let mut closed_since: Option<Instant> = None;
        let mut interrupted_at: Option<Instant> = None;
        loop {
            let report = pending.wait_timeout(TICK);
            if interrupted_at.is_none() && self.interrupt() {
                interrupted_at = Some(Instant::now());
            }
            self.look();
            for (_, ev) in self.new_events() {
                match ev {
                    LinkEvent::Step {
                        step, explanation, ..
                    } => {
                        if let Some(e) = explanation {
                            self.explanations.insert(step, e);
                        }
                        if let (Some(rec), Some(m)) = (self.records.get(step), meta.get(step)) {
                            let why = self.explanations.get(&step).map(String::as_str);
                            let line = step_line(m, step, total, rec, why);
                            self.view.line(&line);
                        }
                    }
                    LinkEvent::Offboard(e) => {
                        self.note_event(&e);
                        let fatal = matches!(
                            e,
                            OffboardEvent::GaveUp(_) | OffboardEvent::MissionUploadFailed(_)
                        );
                        // A `verify_mission` step fails with the first differing item (or
                        // the download's failure): the run stops there.
                        let unverified = matches!(
                            e,
                            OffboardEvent::MissionMismatch(_)
                                | OffboardEvent::MissionDownloadFailed(_)
                        );
                        if (fatal && self.abort_on_give_up || unverified)
                            && self.abort_reason.is_none()
                        {
                            self.abort_reason = Some(Escaped(&e.to_string()).to_string());
                            let _ = self.vehicle.link.abort_program();
                        }
                    }
                    LinkEvent::Speedup { factor, error } => {
                        if error.is_none() && factor > 0.0 {
                            slowest = slowest.min(factor as f64);
                        }
                        let line = match error {
                            None => format!("speed-up ×{factor}"),
                            Some(e) => format!("speed-up ×{factor} not applied: {e}"),
                        };
                        self.view.line(&line);
                        self.events.push(line);
                    }
                    LinkEvent::Died(why) => {
                        // A cause may quote the vehicle's console.
                        let why = Escaped(&why.to_string()).to_string();
                        self.view.line(&format!("vehicle died: {why}"));
                        self.died = Some(why);
                    }
                    LinkEvent::Ignored(src) => self.note_ignored(src),
                    LinkEvent::SlowLink(why) => self.note_slow_link(why),
                    _ => {}
                }
            }
            // A program's `upload` sends the plan's fence and rally points after the mission: a
            // fence PX4 refused ends the program, as it ends `fly`.
            if !self.geo.is_empty() && self.abort_reason.is_none() && report.is_none() {
                if let Err(e) = self.follow_geo() {
                    self.view.line(&e);
                    self.abort_reason = Some(e);
                    let _ = self.vehicle.link.abort_program();
                }
            }
            if let Some(report) = report {
                self.records = report.records;
                self.ended = Some((self.wall_s(), self.flown_sim_s()));
                return report.end;
            }
            // A closed link ends its program (`aborted`); should the report never come, do not
            // wait for it forever.
            if self.vehicle.link.is_closed() {
                closed_since.get_or_insert_with(Instant::now);
            }
            // Interrupted: the report of the aborted program comes within a tick or two.
            if interrupted_at.is_some_and(|t| t.elapsed() > INTERRUPT_WAIT) {
                let step = self.records.len();
                return ProgramEnd::Aborted { step };
            }
            if closed_since.is_some_and(|t| t.elapsed() > Duration::from_secs(2)) {
                self.abort_reason
                    .get_or_insert_with(|| "the link to the vehicle closed".into());
                let step = self.records.len();
                return ProgramEnd::Aborted { step };
            }
            self.announce(meta);
            if let Some(step) = self.pending_announce {
                if current.is_none_or(|(s, _, _)| s != step) {
                    current = Some((step, Instant::now(), self.status.sim_ms));
                }
            }
            if let Some((step, since, sim0)) = current {
                let timeout_s = timeouts.get(step).copied().unwrap_or(0.0);
                let bound = super::limits::wall_bound(timeout_s, slowest);
                if since.elapsed() > bound && self.abort_reason.is_none() {
                    let moved_s = match (sim0, self.status.sim_ms) {
                        (Some(a), Some(b)) => format!("{:.1} s", b.saturating_sub(a) as f64 / 1e3),
                        _ => "no clock at all".into(),
                    };
                    self.abort_reason = Some(format!(
                        "no progress of the vehicle clock: the step waited {:.0} s wall, while \
                         its {timeout_s} s sim timeout at ×{slowest} allows {:.0} s \
                         (timeout / speed × 2 + {} s); the vehicle clock moved {moved_s}",
                        since.elapsed().as_secs_f64(),
                        bound.as_secs_f64(),
                        super::limits::WALL_MARGIN_S
                    ));
                    let _ = self.vehicle.link.abort_program();
                    // Should the abort not settle the program, do not wait for it forever.
                    closed_since.get_or_insert_with(Instant::now);
                }
            }
            let stage = self
                .announced
                .and_then(|s| meta.get(s).map(|m| m.label(s, total)))
                .unwrap_or_default();
            let st = self.display_status(&stage);
            self.view.update(&st);
        }
    }

    /// A signal came (SIGINT, SIGTERM, SIGHUP: [`nexus_host::interrupt`]): the first time, the
    /// running program is aborted with "interrupted by SIGINT" as its reason, and that is
    /// said on a line and among the events. Whether the flight was interrupted.
    fn interrupt(&mut self) -> bool {
        let Some(caught) = nexus_host::interrupt::caught() else {
            return false;
        };
        let reason = caught.reason();
        if self.abort_reason.as_deref() != Some(reason.as_str()) {
            self.view
                .line(&format!("nexus: {reason}: ending the flight"));
            self.events.push(reason.clone());
            self.abort_reason = Some(reason);
            let _ = self.vehicle.link.abort_program();
        }
        true
    }

    /// Events since the last call.
    fn new_events(&mut self) -> Vec<(u64, LinkEvent)> {
        let evs = self.vehicle.link.events_since(self.event_seq);
        if let Some((n, _)) = evs.last() {
            self.event_seq = *n;
        }
        evs
    }

    /// Bring back the texts, step records and position from the pump thread, print the new
    /// texts, and refresh the published status.
    fn look(&mut self) {
        let have_texts = self.texts.last().map_or(0, |t| t.seq);
        let have_records = self.records.len();
        let got = self.vehicle.link.call(move |ctx| {
            let c = ctx.client();
            let tel = c.telemetry();
            Look {
                texts: tel
                    .texts()
                    .after(have_texts)
                    .map(|t| TextRecord {
                        seq: t.seq,
                        severity: t.severity,
                        sim_ms: t.sim_ms,
                        text: t.text.as_str().to_string(),
                    })
                    .collect(),
                records: c.program().records()[have_records.min(c.program().records().len())..]
                    .to_vec(),
                position_deg: tel
                    .global_position()
                    .map(|p| (p.lat as f64 / 1e7, p.lon as f64 / 1e7)),
                running_step: match c.program().state() {
                    nexus_core::engine::ProgramState::Running { step } => Some(step),
                    _ => None,
                },
            }
        });
        if let Ok(look) = got {
            for t in &look.texts {
                let at = t
                    .sim_ms
                    .map_or(String::new(), |ms| format!("{:.1} s ", ms as f64 / 1000.0));
                // The vehicle's words, escaped: its text cannot start a line of its own.
                self.view.line(&format!(
                    "  PX4 [{at}{}] {}",
                    severity_name(t.severity),
                    Escaped(&t.text)
                ));
            }
            self.texts.extend(look.texts);
            self.records.extend(look.records);
            self.position_deg = look.position_deg.or(self.position_deg);
            if let Some(s) = look.running_step {
                self.pending_announce = Some(s);
            }
        }
        self.status = self.vehicle.link.status();
        let s = &self.status.snapshot;
        if s.sim_ms.is_some() && self.trace.last().is_none_or(|l| Some(l.sim_ms) != s.sim_ms) {
            self.trace
                .push(super::evidence::Sample::new(s, self.position_deg));
        }
        if self.status.airborne_seen {
            self.airborne = true;
        }
    }

    /// Whether the vehicle was seen in the air (taking off or flying) during the flight.
    pub fn airborne(&self) -> bool {
        self.airborne
    }

    /// Why step `step` failed, in words, if it did.
    pub fn explanation(&self, step: usize) -> Option<&str> {
        self.explanations.get(&step).map(String::as_str)
    }

    fn announce(&mut self, meta: &[StepMeta]) {
        let Some(step) = self.pending_announce else {
            return;
        };
        if self.announced.is_none_or(|a| a < step) {
            self.announced = Some(step);
            if let Some(m) = meta.get(step) {
                self.view.line(&format!(
                    "{}: {}; until {}",
                    m.label(step, meta.len()),
                    m.action_text,
                    m.until
                ));
            }
        }
    }

    /// A source that is not the vehicle sent something: say so once, when it first happens.
    fn note_ignored(&mut self, src: Option<ForeignSource>) {
        let vehicle = self
            .status
            .peer
            .or_else(|| self.vehicle.link.status().peer)
            .map_or("unknown".into(), |p| p.to_string());
        let line = match src {
            Some(s) => format!(
                "ignoring UDP from {}: not the vehicle ({vehicle}); {} so far",
                s.addr,
                s.counts.describe()
            ),
            None => format!(
                "ignoring UDP from more sources than the first {FOREIGN_SOURCES}: not the \
                 vehicle ({vehicle})"
            ),
        };
        self.view.line(&line);
    }

    /// What sources other than the vehicle sent (counted, never applied), for the summary
    /// and the report.
    pub fn foreign(&mut self) -> ForeignTraffic {
        self.status = self.vehicle.link.status();
        self.status.foreign.clone()
    }

    /// Print the summary of ignored traffic ("ignored 4 frames from 127.0.0.1:53211 claiming
    /// system 1", and on a signed link "ignored 3 frames failing the signing check: 1
    /// unsigned, 2 bad signature") and return the foreign part for the report.
    pub fn summarize_ignored(&mut self) -> ForeignTraffic {
        let f = self.foreign();
        for l in f.lines() {
            self.view.line(&l);
        }
        let signing = self.status.counters.signing.as_ref();
        if let Some(l) = signing.and_then(nexus_host::signing::rejected_line) {
            self.view.line(&l);
        }
        f
    }

    /// The link found itself lossy and asked for reduced stream rates: the report says why.
    fn note_slow_link(&mut self, why: String) {
        self.view.line(&format!("link: {why}"));
        self.events.push(why);
    }

    fn note_event(&mut self, e: &OffboardEvent) {
        if let OffboardEvent::ParamSet(p) = e {
            self.param_sets.push(p.clone());
        }
        // PX4's words (a refusal's text) escaped, on the line and in the report's events.
        let line = Escaped(&e.to_string()).to_string();
        self.view.line(&format!("vehicle: {line}"));
        self.events.push(line);
    }

    /// The display's status now; records mission progress as a side effect.
    fn display_status(&mut self, stage: &str) -> Status {
        let s = &self.status;
        let m = &s.mission;
        let total = m.count.max(self.items.len());
        // Only an item the mission has (PX4 reports seq 65535 for a moment after a fence or
        // rally upload).
        let item = (total > 0 && s.snapshot.waypoint.is_some() && (m.current as usize) < total)
            .then_some((m.current, total));
        let sim_s = s.sim_ms.map(|ms| ms as f64 / 1000.0);
        if let (Some((cur, _)), Some(t)) = (item, sim_s) {
            if self.mission_progress.last().is_none_or(|p| p.item != cur) {
                self.mission_progress.push(ItemProgress {
                    item: cur,
                    t_sim_s: t,
                });
            }
        }
        let dist_m = match (self.items.get(m.current as usize), self.position_deg) {
            (Some(it), Some(here))
                if item.is_some() && is_global(it.frame) && (it.x, it.y) != (0, 0) =>
            {
                Some(horizontal_m(here, (it.x as f64 / 1e7, it.y as f64 / 1e7)) as f32)
            }
            _ => None,
        };
        Status {
            stage: stage.to_string(),
            item,
            mode: s.mode,
            armed: s.armed,
            alt_m: s.snapshot.height_m,
            dist_m,
            sim_s,
        }
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

    /// The vehicle now.
    pub fn final_snapshot(&mut self) -> SnapshotReport {
        self.look();
        let mut s = self.status.snapshot.clone();
        if let Some(why) = self.died() {
            s.error = Some(nexus_core::telemetry::error_text(&why));
        }
        SnapshotReport::from(&s)
    }

    /// Sim seconds on the vehicle's clock now.
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
    pub fn fill_times(&self, report: &mut super::report::Report) {
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

/// Lodge `plan` with the link's offboard machine: its mission (an `upload` step, or the
/// machine's `upload_mission`, sends it), its geofence and rally points to go up once PX4 has
/// accepted the mission ([`nexus_core::offboard::Offboard::lodge_geo`]).
pub fn lodge_plan(link: &nexus_host::pump::LinkHandle, plan: &PlanFile) -> Result<(), String> {
    let items: Vec<MissionItem> = plan.plan.items.to_vec();
    let fence = plan.geo.fence.to_vec();
    let rally = plan.geo.rally.to_vec();
    link.call(move |ctx| {
        let op = ctx.client().offboard_mut().0;
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
        state.push(format!("alt {} m", super::progress::one_decimal(h)));
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

/// MAV_FRAMEs whose x/y are latitude/longitude.
fn is_global(frame: u8) -> bool {
    matches!(frame, 0 | 3 | 5 | 6 | 10 | 11)
}

/// Horizontal distance between two lat/lon points (degrees), m, on a local flat Earth (the
/// distances of a mission, not of a flight across a continent).
pub fn horizontal_m(a: (f64, f64), b: (f64, f64)) -> f64 {
    let (dn, de) = nexus_core::offboard::geo::ne_offset_m(a.0, a, b);
    dn.hypot(de)
}

/// The longest a parameter set stays outstanding, sim s: every send's timer at the retry
/// ceiling (an upper bound on the backed-off timers).
fn param_set_bound_s() -> f64 {
    let sends = nexus_core::offboard::OffboardConfig::default().max_sends as f64;
    sends * nexus_core::offboard::RTO_CEILING_MS as f64 / 1000.0
}
