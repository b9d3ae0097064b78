//! What `nexus serve` keeps of each session: what it knows of the vehicle (for the guard and
//! the listings), the waits and step programs it served, and the session's evidence as
//! `nexus run --tlog --report` writes a flight's — the tlog of its link (every frame both
//! ways, recorded from the first heartbeat on) and, once the session closed, the HTML report
//! drawn from that tlog (the flight, the timeline, PX4's texts, the waits and steps with their
//! explanations, a verdict).
//!
//! The files live in the server's records directory: `--records DIR` (kept when the server
//! ends), or a private directory made in the system's temporary directory and removed when the
//! server ends. No client chooses a path there. Each session writes `session-ID.tlog` and, when
//! it closes (`close_sitl`, `kill_instance`, the idle reaper, the end of the server: the close
//! hook of [`nexus_host::session::Session::on_close`]), `session-ID.html`; when the server
//! ends, every vehicle is stopped first and the reports are drawn after. The last
//! `--keep-closed N` closed sessions' files are kept (older ones are deleted), so a long-lived
//! server's directory stays bounded. A session started with `tlog: false` records nothing: its
//! report lists its waits, steps and verdict without the flight drawn.

use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use nexus_core::engine::{StepRecord, WaitResult};
use nexus_core::mission::MissionItem;
use nexus_host::pump::{LinkEvent, LinkHandle, PendingProgram, ProgramReport};
use nexus_host::session::Closed;
use nexus_host::tlog::Tlog;
use serde_json::Value;

use crate::evidence::{html, LinkReport};
use crate::exec::StepMeta;
use crate::report::{Report, SnapshotReport, StepReport, VehicleReport};

/// Lock `m`, poisoned or not: a thread that panicked holding it left plain lists behind,
/// still good to list and clean up.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Closed sessions whose files are kept, by default.
pub const KEEP_CLOSED_DEFAULT: usize = 16;
/// Most closed sessions whose files may be kept.
pub const KEEP_CLOSED_MAX: usize = 1000;
/// Most waits and program steps one session's report lists (later ones are counted only).
pub const STEPS_KEPT: usize = 1000;
/// Largest file served as a resource, bytes (a tlog is sent whole, base64 in one message);
/// a larger one is named by its path instead.
pub const RESOURCE_MAX_BYTES: u64 = 64 << 20;

/// How long a closing session's report waits for the calls under way on it to note their
/// end, wall.
const CALLS_END: Duration = Duration::from_secs(2);

/// A step program `run_steps` started.
#[derive(Debug)]
pub struct Running {
    /// The program, while it runs and no call waits for it.
    pub pending: Option<PendingProgram>,
    /// Its steps, for the report.
    pub steps: Vec<StepMeta>,
    /// The link's last event before it started: its steps' events come after.
    pub events_from: u64,
    /// Why each step that did not pass failed, from the link's step events.
    pub explanations: HashMap<usize, String>,
}

impl Running {
    /// Gather the explanations of the steps settled so far from `link`'s events.
    pub fn harvest(&mut self, link: &LinkHandle) {
        for (n, ev) in link.events_since(self.events_from) {
            self.events_from = n;
            if let LinkEvent::Step {
                step,
                explanation: Some(e),
                ..
            } = ev
            {
                self.explanations.insert(step, e);
            }
        }
    }
}

/// What the server knows of an open session besides the session service's own state.
#[derive(Debug)]
pub struct Meta {
    /// "simulated", "px4" or "attached".
    pub vehicle: &'static str,
    /// Whether verbs that can arm, move or reconfigure the vehicle are allowed
    /// ([`crate::guard`]): a vehicle this server started, one attached that identified as a
    /// simulator, or `--real-vehicle`.
    pub may_move: bool,
    /// Attached: whether it identified as a simulator (`None`: it never said).
    pub simulator: Option<bool>,
    /// Attached: the connection string.
    pub connection: Option<String>,
    /// The SITL instance (`None`: attached, no instance of ours).
    pub instance: Option<u8>,
    /// The vehicle's MAVLink system id.
    pub system_id: u8,
    /// Attached: the autopilot's component id.
    pub component_id: Option<u8>,
    /// Speed factor asked for.
    pub speed: f64,
    /// The program `run_steps` started, while it is followed or pending.
    pub program: Option<Running>,
    /// The last program's answer (JSON), once it ended.
    pub last_program: Option<Value>,
    /// The session's tlog, being written.
    pub tlog: Option<(Tlog, PathBuf)>,
    /// Why no tlog is written, if none is.
    pub tlog_error: Option<String>,
    /// The waits and program steps served, settled, for the report.
    pub steps: Vec<StepReport>,
    /// Settled waits and steps past [`STEPS_KEPT`], counted only.
    pub steps_dropped: usize,
    /// Programs that ended, for their steps' names.
    pub programs: usize,
    /// The last mission lodged (upload_plan, a program's upload): its file and items.
    pub plan: Option<(String, Vec<MissionItem>)>,
    /// When the session started, wall.
    pub started: Instant,
    /// Calls under way whose end the report waits for: waits, and a program being followed.
    pub busy: usize,
}

impl Meta {
    /// A session's entry: nothing served yet; its tlog (`None`: not recorded).
    pub fn new(
        vehicle: &'static str,
        system_id: u8,
        tlog: Option<Result<(Tlog, PathBuf), String>>,
    ) -> Meta {
        let (tlog, tlog_error) = match tlog {
            None => (None, None),
            Some(Ok(t)) => (Some(t), None),
            Some(Err(e)) => (None, Some(e)),
        };
        Meta {
            vehicle,
            may_move: true,
            simulator: Some(true),
            connection: None,
            instance: None,
            system_id,
            component_id: None,
            speed: 1.0,
            program: None,
            last_program: None,
            tlog,
            tlog_error,
            steps: Vec::new(),
            steps_dropped: 0,
            programs: 0,
            plan: None,
            started: Instant::now(),
            busy: 0,
        }
    }

    fn push_step(&mut self, r: StepReport) {
        if self.steps.len() < STEPS_KEPT {
            self.steps.push(r);
        } else {
            self.steps_dropped += 1;
        }
    }

    /// A `wait_until` that settled (not `cap`): `until` in words, why it did not pass.
    pub fn note_wait(&mut self, until: &str, r: &WaitResult, explanation: Option<String>) {
        let rec = StepRecord {
            result: r.clone(),
            passed: r.satisfied,
        };
        let mut s = StepReport::new(self.steps.len(), None, "wait_until", "wait", until, &rec);
        s.explanation = explanation;
        self.push_step(s);
    }

    /// The steps of a program that ended, with their explanations.
    pub fn note_program(&mut self, program: &Running, report: &ProgramReport) {
        self.programs += 1;
        let total = program.steps.len();
        for (i, rec) in report.records.iter().enumerate() {
            let m = program.steps.get(i);
            let label = m.map_or(format!("step {}/{total}", i + 1), |m| m.label(i, total));
            let mut s = StepReport::new(
                self.steps.len(),
                Some(format!("program {}, {label}", self.programs)),
                m.map_or("", |m| m.action.as_str()),
                m.map_or("", |m| m.action_text.as_str()),
                m.map_or("", |m| m.until.as_str()),
                rec,
            );
            s.explanation = program.explanations.get(&i).cloned();
            self.push_step(s);
        }
    }
}

/// Which file of a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordKind {
    /// `nexus://session/ID/tlog`.
    Tlog,
    /// `nexus://session/ID/report.html`.
    Html,
}

impl RecordKind {
    /// The resource's URI.
    pub fn uri(self, id: u64) -> String {
        match self {
            RecordKind::Tlog => format!("nexus://session/{id}/tlog"),
            RecordKind::Html => format!("nexus://session/{id}/report.html"),
        }
    }

    /// Its MIME type.
    pub fn mime(self) -> &'static str {
        match self {
            RecordKind::Tlog => "application/octet-stream",
            RecordKind::Html => "text/html",
        }
    }
}

/// A closed session's files and verdict.
#[derive(Debug, Clone)]
pub struct Kept {
    /// The session id.
    pub id: u64,
    /// Why it closed.
    pub why: String,
    /// Its tlog, if one was written.
    pub tlog: Option<PathBuf>,
    /// The frames the tlog holds: from the vehicle, to it.
    pub tlog_frames: (u64, u64),
    /// Its HTML report, if it was written.
    pub html: Option<PathBuf>,
    /// The report's verdict line.
    pub verdict: String,
    /// Why a file is missing, if one is.
    pub error: Option<String>,
}

impl Kept {
    /// Where the session's files are, as JSON.
    pub fn json(&self) -> Value {
        serde_json::json!({
            "session": self.id,
            "closed": self.why,
            "verdict": self.verdict,
            "tlog": self.tlog.as_ref().map(|p| p.display().to_string()),
            "tlog_resource": self.tlog.as_ref().map(|_| RecordKind::Tlog.uri(self.id)),
            "tlog_received": self.tlog_frames.0,
            "tlog_sent": self.tlog_frames.1,
            "report_html": self.html.as_ref().map(|p| p.display().to_string()),
            "report_html_resource": self.html.as_ref().map(|_| RecordKind::Html.uri(self.id)),
            "error": self.error,
        })
    }
}

/// The sessions' entries and files (see the module docs).
#[derive(Debug)]
pub struct Records {
    dir: PathBuf,
    /// The directory is ours alone (made in the temp dir): removed when the server ends.
    temporary: bool,
    keep: usize,
    /// Open sessions, by id.
    pub meta: Mutex<HashMap<u64, Meta>>,
    /// Closed sessions, oldest first.
    closed: Mutex<VecDeque<Kept>>,
    next_tlog: AtomicU64,
    /// The server is ending: reports wait until every vehicle has stopped ([`Records::defer`]).
    deferred: Mutex<Option<Vec<(u64, Closed)>>>,
}

impl Records {
    /// Records in `dir` (made if missing), or in a new private directory in the temp dir.
    pub fn new(dir: Option<&Path>, keep: usize) -> Result<Records, String> {
        let (dir, temporary) = match dir {
            Some(d) => {
                std::fs::create_dir_all(d)
                    .map_err(|e| format!("--records {}: {e}", d.display()))?;
                let d = d
                    .canonicalize()
                    .map_err(|e| format!("--records {}: {e}", d.display()))?;
                if !d.is_dir() {
                    return Err(format!("--records {}: not a directory", d.display()));
                }
                (d, false)
            }
            None => {
                let d = tempfile::Builder::new()
                    .prefix("nexus-serve-")
                    .tempdir()
                    .map_err(|e| format!("cannot make a records directory: {e}"))?;
                (d.keep(), true)
            }
        };
        // Writable, before anything flies.
        let probe = dir.join(".nexus-serve-probe");
        std::fs::write(&probe, b"")
            .and_then(|()| std::fs::remove_file(&probe))
            .map_err(|e| format!("records directory {}: cannot write: {e}", dir.display()))?;
        Ok(Records {
            dir,
            temporary,
            keep,
            meta: Mutex::new(HashMap::new()),
            closed: Mutex::new(VecDeque::new()),
            next_tlog: AtomicU64::new(1),
            deferred: Mutex::new(None),
        })
    }

    /// The records directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Whether it is removed when the server ends.
    pub fn temporary(&self) -> bool {
        self.temporary
    }

    /// A tlog for a session about to start (named for its session once it has an id).
    pub fn new_tlog(&self) -> Result<(Tlog, PathBuf), String> {
        let n = self.next_tlog.fetch_add(1, Ordering::Relaxed);
        let p = self.dir.join(format!("starting-{n}.tlog"));
        Tlog::create(&p)
            .map(|t| (t, p.clone()))
            .map_err(|e| format!("cannot record the tlog at {}: {e}", p.display()))
    }

    /// A session that did not start: its tlog goes.
    pub fn discard(&self, tlog: Option<Result<(Tlog, PathBuf), String>>) {
        if let Some(Ok((t, p))) = tlog {
            drop(t);
            let _ = std::fs::remove_file(p);
        }
    }

    /// Hold the entry of session `id`, its tlog renamed `session-ID.tlog`.
    pub fn adopt(&self, id: u64, mut meta: Meta) {
        if let Some((t, p)) = meta.tlog.take() {
            let named = self.dir.join(format!("session-{id}.tlog"));
            match std::fs::rename(&p, &named) {
                Ok(()) => meta.tlog = Some((t, named)),
                Err(e) => {
                    meta.tlog = Some((t, p.clone()));
                    meta.tlog_error = Some(format!("cannot name the tlog {}: {e}", p.display()));
                }
            }
        }
        lock(&self.meta).insert(id, meta);
    }

    /// A session's file for a resource: an open session's tlog (flushed first: the flight so
    /// far), a closed one's tlog and HTML report.
    pub fn file(&self, id: u64, kind: RecordKind) -> Option<PathBuf> {
        if kind == RecordKind::Tlog {
            if let Some((t, p)) = lock(&self.meta).get(&id).and_then(|m| m.tlog.as_ref()) {
                let _ = t.flush();
                return Some(p.clone());
            }
        }
        let closed = lock(&self.closed);
        let k = closed.iter().find(|k| k.id == id)?;
        match kind {
            RecordKind::Tlog => k.tlog.clone(),
            RecordKind::Html => k.html.clone(),
        }
    }

    /// The resources of files: open sessions' tlogs, then closed sessions' tlogs and reports.
    pub fn resources(&self) -> Vec<(u64, RecordKind, PathBuf)> {
        let mut out: Vec<(u64, RecordKind, PathBuf)> = lock(&self.meta)
            .iter()
            .filter_map(|(id, m)| {
                m.tlog
                    .as_ref()
                    .map(|(_, p)| (*id, RecordKind::Tlog, p.clone()))
            })
            .collect();
        out.sort_by_key(|r| r.0);
        for k in lock(&self.closed).iter() {
            if let Some(p) = &k.tlog {
                out.push((k.id, RecordKind::Tlog, p.clone()));
            }
            if let Some(p) = &k.html {
                out.push((k.id, RecordKind::Html, p.clone()));
            }
        }
        out
    }

    /// A closed session's files and verdict, if it is among those kept.
    pub fn kept(&self, id: u64) -> Option<Kept> {
        lock(&self.closed).iter().find(|k| k.id == id).cloned()
    }

    /// The closed sessions kept, oldest first.
    pub fn all_kept(&self) -> Vec<Kept> {
        lock(&self.closed).iter().cloned().collect()
    }

    /// From now on, a session's report is written by [`Records::write_deferred`], not as it
    /// closes: when the server ends, every vehicle stops first, then the reports are drawn.
    pub fn defer(&self) {
        lock(&self.deferred).get_or_insert_with(Vec::new);
    }

    /// Write the reports of the sessions that closed since [`Records::defer`].
    pub fn write_deferred(&self) {
        let closed = lock(&self.deferred).take().unwrap_or_default();
        for (id, c) in closed {
            self.write(id, &c);
        }
    }

    /// Session `id` closed (its close hook): finish its tlog, write its HTML report, keep
    /// both (and let the oldest kept go); later, when the server is ending.
    pub fn close(&self, id: u64, closed: &Closed) {
        if let Some(later) = lock(&self.deferred).as_mut() {
            later.push((id, closed.clone()));
            return;
        }
        self.write(id, closed);
    }

    fn write(&self, id: u64, closed: &Closed) {
        // Waits and a followed program end `closed` / `aborted` with the session: their
        // calls note how, then the entry is taken (never waiting long: they end at once).
        let t0 = Instant::now();
        let mut meta = loop {
            let mut all = lock(&self.meta);
            let busy = all.get(&id).is_some_and(|m| m.busy > 0);
            if !busy || t0.elapsed() >= CALLS_END {
                match all.remove(&id) {
                    Some(m) => break m,
                    None => return,
                }
            }
            drop(all);
            std::thread::sleep(Duration::from_millis(5));
        };
        // A program nobody followed: its report, if the close ended it in time.
        if let Some(mut p) = meta.program.take() {
            if let Some(report) = p
                .pending
                .take()
                .and_then(|pp| pp.join_timeout(Duration::from_millis(200)))
            {
                meta.note_program(&p, &report);
            }
        }
        let mut errors: Vec<String> = meta.tlog_error.take().into_iter().collect();
        let tlog = meta.tlog.take().map(|(t, p)| {
            if let Err(e) = t.flush() {
                errors.push(format!("the tlog stopped recording: {e}"));
            }
            (t.counts(), p)
        });
        let report = session_report(id, &meta, closed, tlog.as_ref(), &mut errors);
        let html_path = self.dir.join(format!("session-{id}.html"));
        let html =
            match crate::evidence::write_file(&html_path, &html::render(&report.0, &report.1)) {
                Ok(()) => Some(html_path),
                Err(e) => {
                    errors.push(e);
                    None
                }
            };
        let kept = Kept {
            id,
            why: closed.why.clone(),
            tlog_frames: tlog.as_ref().map_or((0, 0), |(n, _)| (n.received, n.sent)),
            tlog: tlog.map(|(_, p)| p),
            html,
            verdict: report.0.verdict.clone(),
            error: (!errors.is_empty()).then(|| errors.join("; ")),
        };
        let gone: Vec<Kept> = {
            let mut c = lock(&self.closed);
            c.push_back(kept);
            let over = c.len().saturating_sub(self.keep);
            c.drain(..over).collect()
        };
        for k in gone {
            for p in [k.tlog, k.html].into_iter().flatten() {
                let _ = std::fs::remove_file(p);
            }
        }
    }

    /// The server ends (every session closed): a temporary directory goes.
    pub fn end(&self) {
        if self.temporary {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// The report of a closed session (in `nexus run --json`'s shape, `command` "serve") and the
/// samples of its flight, both read back from its tlog.
fn session_report(
    id: u64,
    meta: &Meta,
    closed: &Closed,
    tlog: Option<&(nexus_host::tlog::TlogCounts, PathBuf)>,
    errors: &mut Vec<String>,
) -> (Report, Vec<crate::evidence::Sample>) {
    let vehicle = VehicleReport {
        kind: match meta.vehicle {
            "simulated" => "sim",
            other => other,
        },
        instance: meta.instance.unwrap_or(0),
        system_id: meta.system_id,
        speed: crate::vehicle::Speed::Factor(meta.speed),
        connection: meta.connection.clone(),
        component_id: meta.component_id,
        simulator: meta.simulator,
        model: None,
    };
    let mut report = Report::new(
        "serve",
        format!("session {id}"),
        Some(format!("session {id}")),
        vehicle,
        meta.steps.len() + meta.steps_dropped,
    );
    let mut tracer = crate::recording::Tracer::default();
    let mut client = crate::recording::replay_client(meta.system_id);
    if let Some((_, items)) = &meta.plan {
        let _ = client.lodge_mission(items);
    }
    if let Some((_, path)) = tlog {
        if let Err(e) = replay(&mut client, &mut tracer, path) {
            errors.push(format!("reading the tlog back: {e}"));
        }
    }
    report.steps = meta.steps.clone();
    report.texts = std::mem::take(&mut tracer.texts);
    report.mission = meta.plan.as_ref().map(|(name, items)| {
        crate::recording::mission_report(name.clone(), items, &client, tracer.progress.clone())
    });
    let last = closed.last_status.as_ref();
    report.final_state = Some(match last {
        Some(st) => SnapshotReport::from(&st.snapshot),
        None => SnapshotReport::from(&client.snapshot()),
    });
    report.died = last.and_then(|st| st.died.as_ref()).map(|d| d.to_string());
    report.wall_s = meta.started.elapsed().as_secs_f64();
    if let (Some(a), Some(b)) = (tracer.trace.first(), tracer.trace.last()) {
        report.sim_s = b.sim_ms.saturating_sub(a.sim_ms) as f64 / 1000.0;
    }
    report.achieved_speed = (report.wall_s > 0.0).then(|| report.sim_s / report.wall_s);
    report.link = Some(LinkReport {
        rx_frames: last.map_or(0, |s| s.counters.frames),
        tx_frames: last.map_or(0, |s| s.counters.tx_frames),
        tlog: tlog.map(|(_, p)| p.display().to_string()),
        tlog_received: tlog.map_or(0, |(n, _)| n.received),
        tlog_sent: tlog.map_or(0, |(n, _)| n.sent),
    });
    report
        .events
        .push(format!("the session closed: {}", closed.why));
    if meta.steps_dropped > 0 {
        report.events.push(format!(
            "{} later waits and steps are not listed (a report lists {STEPS_KEPT})",
            meta.steps_dropped
        ));
    }
    report.events.extend(errors.iter().cloned());
    let (passed, verdict) = verdict(id, &report, &closed.why);
    report.passed = passed;
    report.verdict = nexus_core::escape::Escaped(&verdict).to_string();
    report.exit_code = if passed {
        crate::EXIT_OK
    } else {
        crate::EXIT_FAILED
    };
    (report, tracer.trace)
}

/// Hand the tlog at `path` to `client` in its recorded time, `tracer` taking what it shows.
fn replay(
    client: &mut crate::recording::ReplayClient,
    tracer: &mut crate::recording::Tracer,
    path: &Path,
) -> Result<(), String> {
    let mut rec = crate::recording::Recordings::open(&[path.to_path_buf()])?;
    let mut t0 = None;
    let mut now = nexus_core::Instant::ZERO;
    let mut tx = [0u8; nexus_core::frame::MAX_FRAME_LEN];
    while let Some((ts, f)) = rec.next_frame()? {
        let t0 = *t0.get_or_insert(ts);
        now = now.max(nexus_core::Instant::from_micros(ts.saturating_sub(t0)));
        client.handle(now, &f);
        // Nothing is sent, no event is wanted.
        while client.poll_transmit(now, &mut tx).is_some() {}
        while client.poll_event().is_some() {}
        tracer.look(client, client.telemetry().connected());
    }
    Ok(())
}

/// Whether every wait and step served met its condition, and the verdict line.
fn verdict(id: u64, report: &Report, why: &str) -> (bool, String) {
    let n = report.steps_total;
    let listed = report.steps.len();
    let met = report.steps.iter().filter(|s| s.passed).count();
    let failed = report.steps.iter().find(|s| !s.passed);
    match (failed, &report.died) {
        (None, None) => (
            true,
            format!(
                "PASS: session {id} closed ({why}): {}",
                match n {
                    0 => "no wait or step served".to_string(),
                    1 => "its 1 wait met".to_string(),
                    n if n == listed => format!("all {n} waits and steps met"),
                    n => format!("{n} waits and steps, the {listed} listed met"),
                }
            ),
        ),
        (_, Some(died)) => (
            false,
            format!("FAIL: session {id} closed ({why}): the vehicle died: {died}"),
        ),
        (Some(s), None) => {
            let what = match &s.name {
                Some(n) => n.clone(),
                None => format!("wait {}", s.index),
            };
            let mut line = format!(
                "FAIL: session {id} closed ({why}): {met} of {listed} waits and steps met; \
                 {what} ({}) ended {} after {:.1} s sim",
                s.until, s.reason, s.waited_sim_s
            );
            if let Some(e) = &s.explanation {
                line.push_str(&format!(": {e}"));
            }
            (false, line)
        }
    }
}
