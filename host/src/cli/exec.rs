//! What `fly` and `run` share: connect to the vehicle, upload a plan, run a step program on the
//! core client while showing progress, and turn the outcome into lines, a verdict and a
//! report.

use super::driver::Driver;
use super::output::Out;
use super::program::{PlanFile, STEPS};
use super::progress::{ProgressView, Status};
use super::report::{
    ItemProgress, ItemReport, MissionReport, SnapshotReport, StepReport, TextReport,
};
use super::vehicle::Vehicle;
use nexus_core::client::Event;
use nexus_core::engine::{Program, ProgramEnd, ProgramState, Reason, StepRecord};
use nexus_core::offboard::OffboardEvent;
use nexus_core::telemetry::Snapshot;
use std::time::{Duration, Instant};

/// How long the vehicle may take to send its first heartbeat and clock, wall, at speed 1
/// (slower speeds add to it).
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// How long a mission upload may take, wall (the offboard machine gives up sooner on its own
/// sim-time retries when the clock runs).
pub const UPLOAD_TIMEOUT: Duration = Duration::from_secs(120);

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

impl StepMeta {
    /// "step 2/4 (take off)".
    pub fn label(&self, index: usize, total: usize) -> String {
        match &self.name {
            Some(n) => format!("step {}/{total} ({n})", index + 1),
            None => format!("step {}/{total}", index + 1),
        }
    }
}

/// Why [`connect`] failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConnectError {
    /// Our end of the link could not be opened (the port is taken, …): nothing flew.
    Open(String),
    /// The vehicle never spoke, or died first.
    Silent(String),
}

/// Open the vehicle's link and wait for its heartbeat and clock.
pub fn connect(vehicle: Vehicle, out: &Out, speed: f64) -> Result<Driver, ConnectError> {
    let conn = vehicle.conn();
    let ids = vehicle.ids();
    let what = vehicle.describe();
    let port = vehicle.offboard().port;
    let mut driver = Driver::open(&conn, ids, Some(vehicle)).map_err(|e| {
        let mut msg = e.to_string();
        if e.kind() == std::io::ErrorKind::AddrInUse {
            msg.push_str(&format!(
                " — UDP {port} is where this command listens for instance {}: stop the other \
                 program using it or pass another --instance",
                port - crate::launcher::OFFBOARD_CLIENT_PORT_BASE
            ));
        }
        ConnectError::Open(msg)
    })?;
    out.line(&format!(
        "nexus: {what}: waiting for its heartbeat on UDP {port}"
    ));
    let timeout = CONNECT_TIMEOUT + Duration::from_secs_f64((3.0 / speed).min(600.0));
    let ok = driver
        .wait_connected(timeout)
        .map_err(|e| ConnectError::Silent(e.to_string()))?;
    if !ok {
        return Err(ConnectError::Silent(match driver.died() {
            Some(why) => format!("{what} died before it spoke: {why}"),
            None => format!(
                "no heartbeat and clock from {what} on UDP port {port} within {:.0} s",
                timeout.as_secs_f64()
            ),
        }));
    }
    Ok(driver)
}

/// One flight on a connected vehicle.
pub struct Flight {
    /// The link.
    pub driver: Driver,
    /// The display.
    pub view: ProgressView,
    started: Instant,
    /// Offboard events and notes, as lines.
    pub events: Vec<String>,
    /// When PX4 moved on to each mission item.
    pub mission_progress: Vec<ItemProgress>,
    /// Why the flight was cut short by us (a request PX4 kept refusing, an upload rejected).
    pub abort_reason: Option<String>,
    abort_on_give_up: bool,
    texts_shown: usize,
    notes_shown: usize,
    announced: Option<usize>,
}

impl Flight {
    /// A flight on `driver`. With `abort_on_give_up`, a request PX4 keeps refusing or a failed
    /// upload ends the program at once (fly); without, the step's timeout decides (run).
    pub fn new(driver: Driver, out: &Out, mission_total: usize, abort_on_give_up: bool) -> Self {
        Flight {
            driver,
            view: ProgressView::new(out, mission_total),
            started: Instant::now(),
            events: Vec::new(),
            mission_progress: Vec::new(),
            abort_reason: None,
            abort_on_give_up,
            texts_shown: 0,
            notes_shown: 0,
            announced: None,
        }
    }

    /// Wall seconds since the flight began.
    pub fn wall_s(&self) -> f64 {
        self.started.elapsed().as_secs_f64()
    }

    /// Lodge `plan` with the offboard machine (an `upload` step sends it).
    pub fn lodge(&mut self, plan: &PlanFile) -> Result<(), String> {
        let (ob, _) = self.driver.client_mut().offboard_mut();
        ob.lodge_mission(&plan.plan.items)
            .map_err(|e| format!("{}: cannot hold this mission: {e}", plan.path.display()))
    }

    /// Upload `plan` and wait for PX4's answer.
    pub fn upload(&mut self, plan: &PlanFile) -> Result<(), String> {
        self.lodge(plan)?;
        {
            let (ob, _) = self.driver.client_mut().offboard_mut();
            ob.upload_mission()
                .map_err(|e| format!("{}: cannot upload: {e}", plan.path.display()))?;
        }
        let n = plan.plan.items.len();
        self.view.line(&format!(
            "uploading {n} mission items from {}",
            plan.path.display()
        ));
        let start = Instant::now();
        while start.elapsed() < UPLOAD_TIMEOUT {
            self.driver
                .step(Duration::from_millis(50))
                .map_err(|e| e.to_string())?;
            while let Some(ev) = self.driver.next_event() {
                if let Event::Offboard(e) = ev {
                    self.note_event(&e);
                    match e {
                        OffboardEvent::MissionUploaded { .. } => return Ok(()),
                        OffboardEvent::MissionUploadFailed(err) => {
                            return Err(format!("PX4 did not take the mission: {err}"))
                        }
                        _ => {}
                    }
                }
            }
            self.show_texts();
            if let Some(why) = self.driver.died() {
                return Err(format!("the vehicle died during the upload: {why}"));
            }
            let st = self.status("upload");
            self.view.update(&st);
        }
        Err(format!(
            "no answer to the mission upload within {} s",
            UPLOAD_TIMEOUT.as_secs()
        ))
    }

    /// Run `program` to its end, printing each step as it starts and settles.
    pub fn run(&mut self, program: Program<STEPS>, meta: &[StepMeta]) -> ProgramEnd {
        let total = meta.len();
        let now = self.driver.now();
        if let Err(e) = self.driver.client_mut().start_program(now, program) {
            self.abort_reason = Some(format!("the program was refused: {e}"));
            return ProgramEnd::Aborted { step: 0 };
        }
        loop {
            // Texts first: they arrived before (or in) the tick that settled a step.
            self.show_texts();
            while let Some(ev) = self.driver.next_event() {
                match ev {
                    Event::Step { step, .. } => {
                        let rec = self.driver.client().program().records().get(step).cloned();
                        if let (Some(rec), Some(m)) = (rec, meta.get(step)) {
                            self.view.line(&step_line(m, step, total, &rec));
                        }
                    }
                    Event::ProgramFinished(end) => {
                        self.show_texts();
                        return end;
                    }
                    Event::Offboard(e) => {
                        self.note_event(&e);
                        let fatal = matches!(
                            e,
                            OffboardEvent::GaveUp(_) | OffboardEvent::MissionUploadFailed(_)
                        );
                        if fatal && self.abort_on_give_up && self.abort_reason.is_none() {
                            self.abort_reason = Some(e.to_string());
                            let now = self.driver.now();
                            let _ = self.driver.client_mut().abort_program(now);
                        }
                    }
                    Event::Speedup(f) => self.view.line(&format!("speed-up ×{f}")),
                    Event::Settled { .. } => {}
                }
            }
            self.show_texts();
            self.announce(meta);
            let stage = match self.driver.client().program().state() {
                ProgramState::Running { step } => meta
                    .get(step)
                    .map(|m| m.label(step, total))
                    .unwrap_or_default(),
                _ => String::new(),
            };
            let st = self.status(&stage);
            self.view.update(&st);
            if let Err(e) = self.driver.step(Duration::from_millis(50)) {
                self.driver
                    .declare_died(format!("I/O error on the vehicle's link: {e}"));
            }
        }
    }

    fn announce(&mut self, meta: &[StepMeta]) {
        if let ProgramState::Running { step } = self.driver.client().program().state() {
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
    }

    fn note_event(&mut self, e: &OffboardEvent) {
        let line = e.to_string();
        self.view.line(&format!("vehicle: {line}"));
        self.events.push(line);
    }

    /// Print texts and notes that arrived since the last call.
    pub fn show_texts(&mut self) {
        let texts = self.driver.texts();
        for t in &texts[self.texts_shown.min(texts.len())..] {
            let at = t
                .sim_ms
                .map_or(String::new(), |ms| format!("{:.1} s ", ms as f64 / 1000.0));
            self.view.line(&format!(
                "  PX4 [{at}{}] {}",
                severity_name(t.severity),
                t.text
            ));
        }
        self.texts_shown = texts.len();
        let notes = self.driver.notes().to_vec();
        for n in &notes[self.notes_shown.min(notes.len())..] {
            self.view.line(&format!("note: {n}"));
            self.events.push(n.clone());
        }
        self.notes_shown = notes.len();
    }

    /// The display's status now; records mission progress as a side effect.
    pub fn status(&mut self, stage: &str) -> Status {
        let client = self.driver.client();
        let tel = client.telemetry();
        let ob = client.offboard();
        let items = ob.mission_items();
        let current = ob.mission_current();
        let item = (!items.is_empty() && tel.mission_current().is_some())
            .then_some((current, items.len()));
        let sim_s = tel.sim_ms().map(|ms| ms as f64 / 1000.0);
        if let (Some((cur, _)), Some(t)) = (item, sim_s) {
            if self.mission_progress.last().is_none_or(|p| p.item != cur) {
                self.mission_progress.push(ItemProgress {
                    item: cur,
                    t_sim_s: t,
                });
            }
        }
        let dist_m = match (items.get(current as usize), tel.global_position()) {
            (Some(it), Some(pos))
                if item.is_some() && is_global(it.frame) && (it.x, it.y) != (0, 0) =>
            {
                Some(horizontal_m(
                    (pos.lat as f64 / 1e7, pos.lon as f64 / 1e7),
                    (it.x as f64 / 1e7, it.y as f64 / 1e7),
                ) as f32)
            }
            _ => None,
        };
        Status {
            stage: stage.to_string(),
            item,
            mode: tel.mode(),
            armed: tel.armed().unwrap_or(false),
            alt_m: tel.height_m(),
            dist_m,
            sim_s,
        }
    }

    /// The report of each step that ran.
    pub fn step_reports(&self, meta: &[StepMeta]) -> Vec<StepReport> {
        self.driver
            .client()
            .program()
            .records()
            .iter()
            .enumerate()
            .map(|(i, rec)| {
                let m = meta.get(i);
                StepReport::new(
                    i,
                    m.and_then(|m| m.name.clone()),
                    m.map_or("", |m| m.action.as_str()),
                    m.map_or("", |m| m.action_text.as_str()),
                    m.map_or("", |m| m.until.as_str()),
                    rec,
                )
            })
            .collect()
    }

    /// Every text so far.
    pub fn text_reports(&self) -> Vec<TextReport> {
        self.driver.texts().iter().map(TextReport::from).collect()
    }

    /// The vehicle now.
    pub fn final_snapshot(&self) -> SnapshotReport {
        let mut s: Snapshot = self.driver.client().snapshot();
        if let Some(why) = self.driver.died() {
            s.error = Some(nexus_core::telemetry::error_text(why));
        }
        SnapshotReport::from(&s)
    }

    /// The mission as flown.
    pub fn mission_report(&self, plan: &PlanFile) -> MissionReport {
        let ob = self.driver.client().offboard();
        MissionReport {
            plan: plan.path.display().to_string(),
            items: plan.plan.items.iter().map(ItemReport::from).collect(),
            uploaded: ob.mission_uploaded(),
            ack: ob.mission_ack(),
            current: ob.mission_current(),
            reached: ob.mission_reached(),
            complete: ob.mission_complete(),
            progress: self.mission_progress.clone(),
        }
    }

    /// Why the program did not pass, in one sentence naming the step and the reason.
    pub fn failure(&self, end: ProgramEnd, meta: &[StepMeta]) -> Option<String> {
        let runner = self.driver.client().program();
        if end == ProgramEnd::Completed && runner.passed() {
            return None;
        }
        let total = meta.len();
        let records = runner.records();
        // The step that failed: the one the program ended at, else the first that did not pass
        // (a timeout with on_timeout = "continue").
        let at = match end {
            ProgramEnd::Stopped { step }
            | ProgramEnd::Died { step }
            | ProgramEnd::Aborted { step } => step,
            ProgramEnd::Completed => records.iter().position(|r| !r.passed).unwrap_or(0),
        };
        let label = meta
            .get(at)
            .map_or(format!("step {}", at + 1), |m| m.label(at, total));
        let until = meta.get(at).map_or("", |m| m.until.as_str());
        let Some(rec) = records.get(at) else {
            let why = self
                .abort_reason
                .clone()
                .or_else(|| runner.error().map(str::to_string))
                .unwrap_or_else(|| "did not run".into());
            return Some(format!("{label} failed: {why}"));
        };
        Some(failure_text(
            &label,
            until,
            rec,
            self.abort_reason.as_deref(),
            runner.error(),
        ))
    }
}

/// One line per settled step.
pub fn step_line(m: &StepMeta, index: usize, total: usize, rec: &StepRecord) -> String {
    let r = &rec.result;
    let head = if rec.passed {
        "ok  ".to_string()
    } else {
        "FAIL".to_string()
    };
    let s = &r.snapshot;
    let mut state = vec![
        s.mode.map_or("mode ?".into(), |m| m.to_string()),
        if s.armed {
            "armed".into()
        } else {
            "disarmed".into()
        },
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
        r.waited_wall_s,
        state.join(", ")
    );
    if !rec.passed {
        line.push_str(&format!(" — waited for {}", m.until));
    }
    line
}

fn reason_words(reason: Reason, guard: Option<u8>) -> String {
    match reason {
        Reason::Guard => format!("guard {} fired", guard.map_or(0, |g| g + 1)),
        other => other.name().to_string(),
    }
}

fn failure_text(
    label: &str,
    until: &str,
    rec: &StepRecord,
    abort_reason: Option<&str>,
    runner_error: Option<&str>,
) -> String {
    let r = &rec.result;
    match r.reason {
        Reason::Timeout => format!(
            "{label} failed: timeout after {:.1} s sim — waited for {until}",
            r.waited_sim_s
        ),
        Reason::Guard => format!(
            "{label} failed: guard {} fired while waiting for {until}",
            r.guard.map_or(0, |g| g + 1)
        ),
        Reason::Died => format!(
            "{label} failed: the vehicle died: {}",
            r.snapshot.error.as_deref().unwrap_or("no reason given")
        ),
        Reason::Met => format!("{label}: met, yet the program did not complete"),
        _ => format!(
            "{label} failed: aborted: {}",
            abort_reason
                .or(runner_error)
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
    const M_PER_DEG: f64 = 111_319.49;
    let dn = (b.0 - a.0) * M_PER_DEG;
    let de = (b.1 - a.1) * M_PER_DEG * a.0.to_radians().cos();
    (dn * dn + de * de).sqrt()
}
