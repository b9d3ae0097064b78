//! The flight loop: a step program on the link's core client followed to its end — events and
//! texts turned into lines and the log, each step said as it starts and settles, the display
//! refreshed — and what ends it early (a signal, a closed link, a step past its wall bound).

use super::bound::WallBound;
use super::log::{severity_name, step_line};
use super::{Flight, StepMeta, TICK};
use crate::driver::TextRecord;
use crate::program::STEPS;
use crate::progress::Status;
use nexus_core::engine::{Program, ProgramEnd, StepRecord};
use nexus_core::escape::Escaped;
use nexus_core::offboard::OffboardEvent;
use nexus_host::pump::{LinkEvent, PendingProgram};
use nexus_host::transport::{ForeignSource, FOREIGN_SOURCES};
use std::time::{Duration, Instant};

/// How long an interrupted program may take to report its end, wall.
const INTERRUPT_WAIT: Duration = Duration::from_millis(500);

/// How long a closed link's program may take to report its end, wall.
const CLOSED_WAIT: Duration = Duration::from_secs(2);

/// What one look at the pump thread brings back.
struct Look {
    texts: Vec<TextRecord>,
    records: Vec<StepRecord>,
    position_deg: Option<(f64, f64)>,
    running_step: Option<usize>,
}

impl Flight {
    /// Run `program` to its end, printing each step as it starts and settles.
    ///
    /// Every step is also bounded in wall time (see `exec::bound`: its timeout at the
    /// slowest speed factor of the run so far, twice, plus 10 s): a vehicle whose clock stops
    /// would otherwise leave the step waiting forever for its sim-time timeout. Past the bound
    /// the program is aborted with "no progress of the vehicle clock: …".
    pub fn run(&mut self, program: Program<STEPS>, meta: &[StepMeta]) -> ProgramEnd {
        let mut bound = WallBound::new(&program, self.vehicle.sim.options().clock);
        let Some(pending) = self.start(program) else {
            return ProgramEnd::Aborted { step: 0 };
        };
        let mut closed_since: Option<Instant> = None;
        let mut interrupted_at: Option<Instant> = None;
        loop {
            let report = pending.join_timeout(TICK);
            if interrupted_at.is_none() && self.interrupt() {
                interrupted_at = Some(Instant::now());
            }
            // The events first, then the records: every step a Step event names has its
            // record by then (the pump writes both in one turn), so its line is printed. A
            // program that ended took its records into the report: they are the ones to read.
            let events = self.new_events();
            self.look();
            if let Some(r) = &report {
                self.log.records.clone_from(&r.records);
            }
            for (_, ev) in events {
                self.on_run_event(ev, meta, &mut bound);
            }
            // A program's `upload` sends the plan's fence and rally points after the mission: a
            // fence PX4 refused ends the program, as it ends `fly`.
            if self.lodged.geo_pending() && self.log.abort_reason.is_none() && report.is_none() {
                if let Err(e) = self.follow_geo() {
                    self.view.line(&e);
                    self.abort_program(e);
                }
            }
            if let Some(report) = report {
                self.log.records = report.records;
                self.log.ended = Some((self.log.wall_s(), self.log.flown_sim_s()));
                return report.end;
            }
            // A closed link ends its program (`aborted`); should the report never come, do not
            // wait for it forever.
            if self.vehicle.link.is_closed() {
                closed_since.get_or_insert_with(Instant::now);
            }
            // Interrupted: the report of the aborted program comes within a tick or two.
            if interrupted_at.is_some_and(|t| t.elapsed() > INTERRUPT_WAIT) {
                let step = self.log.records.len();
                return ProgramEnd::Aborted { step };
            }
            if closed_since.is_some_and(|t| t.elapsed() > CLOSED_WAIT) {
                self.log
                    .abort_reason
                    .get_or_insert_with(|| "the link to the vehicle closed".into());
                let step = self.log.records.len();
                return ProgramEnd::Aborted { step };
            }
            self.announce(meta);
            if let Some(step) = self.pending_announce {
                bound.running(step, self.log.status.sim_ms);
            }
            if self.log.abort_reason.is_none() {
                if let Some(why) = bound.overrun(self.log.status.sim_ms) {
                    self.abort_program(why);
                    // Should the abort not settle the program, do not wait for it forever.
                    closed_since.get_or_insert_with(Instant::now);
                }
            }
            let stage = self
                .announced
                .and_then(|s| meta.get(s).map(|m| m.label(s, meta.len())))
                .unwrap_or_default();
            let st = self.display_status(&stage);
            self.view.update(&st);
        }
    }

    /// Start `program` on the link; `None`, with the reason logged, when it is refused.
    ///
    /// The `--real-vehicle` guard once more, on the very program about to start (steps and
    /// reactions): the command checked it before attaching; this keeps any caller honest.
    fn start(&mut self, program: Program<STEPS>) -> Option<PendingProgram> {
        if !self.vehicle.may_move {
            if let Some(m) = crate::guard::program_moves(&program) {
                self.log.abort_reason = Some(format!(
                    "the program was refused: step {}, {}, can arm, move or reconfigure a \
                     vehicle that is not a simulator ({}), and --real-vehicle was not given",
                    m.step + 1,
                    m.part.words(),
                    m.why
                ));
                return None;
            }
        }
        match self.vehicle.link.start_program(program) {
            Ok(p) => Some(p),
            Err(e) => {
                self.log.abort_reason = Some(format!("the program was refused: {e}"));
                None
            }
        }
    }

    /// Abort the running program for `why`, the flight's abort reason.
    fn abort_program(&mut self, why: String) {
        self.log.abort_reason = Some(why);
        let _ = self.vehicle.link.abort_program();
    }

    /// One link event while the program runs: a settled step's line, the vehicle's events
    /// (one that ends the program aborts it), a speed-up (which lengthens the wall bound),
    /// a death.
    fn on_run_event(&mut self, ev: LinkEvent, meta: &[StepMeta], bound: &mut WallBound) {
        match ev {
            LinkEvent::Step {
                step, explanation, ..
            } => {
                if let Some(e) = explanation {
                    self.log.explanations.insert(step, e);
                }
                if let (Some(rec), Some(m)) = (self.log.records.get(step), meta.get(step)) {
                    let line = step_line(m, step, meta.len(), rec, self.log.explanation(step));
                    self.view.line(&line);
                }
            }
            LinkEvent::Offboard(e) => {
                self.note_event(&e);
                let fatal = matches!(
                    e,
                    OffboardEvent::GaveUp(_) | OffboardEvent::MissionUploadFailed(_)
                );
                // A `verify_mission` step fails with the first differing item (or the
                // download's failure): the run stops there.
                let unverified = matches!(
                    e,
                    OffboardEvent::MissionMismatch(_) | OffboardEvent::MissionDownloadFailed(_)
                );
                if (fatal && self.abort_on_give_up || unverified) && self.log.abort_reason.is_none()
                {
                    self.abort_program(Escaped(&e.to_string()).to_string());
                }
            }
            LinkEvent::Speedup { factor, error } => {
                if error.is_none() {
                    bound.speedup(factor);
                }
                let line = match error {
                    None => format!("speed-up ×{factor}"),
                    Some(e) => format!("speed-up ×{factor} not applied: {e}"),
                };
                self.view.line(&line);
                self.log.events.push(line);
            }
            LinkEvent::Died(why) => {
                // A cause may quote the vehicle's console.
                let why = Escaped(&why.to_string()).to_string();
                self.view.line(&format!("vehicle died: {why}"));
                self.log.died = Some(why);
            }
            LinkEvent::Ignored(src) => self.note_ignored(src),
            LinkEvent::SlowLink(why) => self.note_slow_link(why),
            _ => {}
        }
    }

    /// A signal came (SIGINT, SIGTERM, SIGHUP: [`crate::interrupt`]): the first time, the
    /// running program is aborted with "interrupted by SIGINT" as its reason, and that is
    /// said on a line and among the events. Whether the flight was interrupted.
    pub(super) fn interrupt(&mut self) -> bool {
        let Some(caught) = crate::interrupt::caught() else {
            return false;
        };
        let reason = caught.reason();
        if self.log.abort_reason.as_deref() != Some(reason.as_str()) {
            self.view
                .line(&format!("nexus: {reason}: ending the flight"));
            self.log.events.push(reason.clone());
            self.abort_program(reason);
        }
        true
    }

    /// Events since the last call.
    pub(super) fn new_events(&mut self) -> Vec<(u64, LinkEvent)> {
        let evs = self.vehicle.link.events_since(self.event_seq);
        if let Some((n, _)) = evs.last() {
            self.event_seq = *n;
        }
        evs
    }

    /// Bring back the texts, step records and position from the pump thread, print the new
    /// texts, and refresh the published status.
    pub(super) fn look(&mut self) {
        let have_texts = self.log.texts.last().map_or(0, |t| t.seq);
        let have_records = self.log.records.len();
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
            self.log.texts.extend(look.texts);
            self.log.records.extend(look.records);
            self.position_deg = look.position_deg.or(self.position_deg);
            if let Some(s) = look.running_step {
                self.pending_announce = Some(s);
            }
        }
        let log = &mut self.log;
        log.status = self.vehicle.link.status();
        let s = &log.status.snapshot;
        if s.sim_ms.is_some() {
            let now = crate::evidence::Sample::new(s, self.position_deg);
            match log.trace.last_mut() {
                // A change of state with no newer sim time (the frames that carry the clock
                // lost on a lossy link) replaces the sample of that time: the last disarm
                // must not be lost from the trace the second witness reads.
                Some(l) if l.sim_ms == now.sim_ms => {
                    if (l.armed, l.landed, &l.mode) != (now.armed, now.landed, &now.mode) {
                        *l = now;
                    }
                }
                _ => log.trace.push(now),
            }
        }
        if log.status.airborne_seen {
            log.airborne = true;
        }
    }

    /// Say the step the program runs, once, when it starts.
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
    pub(super) fn note_ignored(&mut self, src: Option<ForeignSource>) {
        let vehicle = self
            .log
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

    /// The link found itself lossy and asked for reduced stream rates: the report says why.
    pub(super) fn note_slow_link(&mut self, why: String) {
        self.view.line(&format!("link: {why}"));
        self.log.events.push(why);
    }

    /// An event of the offboard machine: on a line and among the log's events.
    pub(super) fn note_event(&mut self, e: &OffboardEvent) {
        if let OffboardEvent::ParamSet(p) = e {
            self.log.param_sets.push(p.clone());
        }
        // PX4's words (a refusal's text) escaped, on the line and in the report's events.
        let line = Escaped(&e.to_string()).to_string();
        self.view.line(&format!("vehicle: {line}"));
        self.log.events.push(line);
    }

    /// The display's status now; records mission progress in the log as a side effect.
    pub(super) fn display_status(&mut self, stage: &str) -> Status {
        let s = &self.log.status;
        let m = &s.mission;
        let items = &self.lodged.items;
        let total = m.count.max(items.len());
        // Only an item the mission has (PX4 reports seq 65535 for a moment after a fence or
        // rally upload).
        let item = (total > 0 && s.snapshot.waypoint.is_some() && (m.current as usize) < total)
            .then_some((m.current, total));
        let sim_s = s.sim_ms.map(|ms| ms as f64 / 1000.0);
        let dist_m = match (items.get(m.current as usize), self.position_deg) {
            (Some(it), Some(here))
                if item.is_some() && is_global(it.frame) && (it.x, it.y) != (0, 0) =>
            {
                Some(horizontal_m(here, (it.x as f64 / 1e7, it.y as f64 / 1e7)) as f32)
            }
            _ => None,
        };
        let st = Status {
            stage: stage.to_string(),
            item,
            mode: s.mode,
            armed: s.armed,
            alt_m: s.snapshot.height_m,
            dist_m,
            sim_s,
        };
        if let (Some((cur, _)), Some(t)) = (item, sim_s) {
            self.log.note_item(cur, t);
        }
        st
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
