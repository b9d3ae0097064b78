//! `nexus check PROGRAM.toml --tlog FLIGHT.tlog`: a recorded flight as a test. The program's
//! conditions and guards are evaluated against the recording, in its recorded time, by the
//! same core client a live run uses ([`nexus_core::Client`]): the same reasons, the same
//! explanations, the same reports (`--json`, `--report`, `--junit`). No vehicle: each step's
//! action is shown, not performed (what the client would send is dropped).
//!
//! Several `--tlog`s are merged by their timestamps (the real-PX4 traces keep the two links of
//! a flight in separate files: the offboard link, and the GCS link with the simulator's ground
//! truth). The vehicle is the first autopilot that sent a HEARTBEAT, or `--system-id`.
//!
//! The recordings are streamed, never held whole: each file is read record by record
//! ([`nexus_host::tlog::TlogReader`]: a 64 KiB buffer each) and the files are merged as they are read (the
//! earliest next record of any file goes first; a file's own records in its order), so memory
//! does not grow with the recordings' size. At most [`crate::recording::MAX_TLOGS`] files of at most
//! [`crate::recording::MAX_TLOG_TOTAL_BYTES`] together are read; more is refused (exit 2) before anything is
//! replayed. A record whose frame fails its checksum is skipped whole, never searched for the
//! frames its bytes may hold; such records and the garbage between records are counted, said
//! on a `recording:` line and in the report's `recording`.
//!
//! `--ulog FILE.ulg` (PX4's own log of the same flight) is a second witness: the recording's
//! facts (arming, disarming, landing, maximum height, modes, the mission) are compared with the
//! log's ([`super::witness`]), in the report's `second_witness`; a disagreement fails the check
//! with both readings.
//!
//! `--ulog FILE.ulg` without a `--tlog` checks the program against PX4's log alone: the log is
//! read back as the MAVLink PX4 makes of its topics ([`nexus_host::ulog::replay`]) and
//! replayed like a recording. A step whose condition (or guard) the log has no topic for is
//! never judged on made-up data: when it starts it ends `aborted`, its explanation naming what
//! the log lacks ("PX4's log cannot answer `airspeed >= 5 m/s`: PX4's log has no
//! airspeed_validated"), and the steps after it are not run. The vehicle is `--system-id` (the
//! log names none; default 1).
//!
//! Where a check reads other data than the live run did, it says so. The differences:
//! * the program starts at the vehicle's first HEARTBEAT in the recording, not when a live
//!   client would have finished connecting (conditions on time since the start, `time_s`,
//!   see more of the flight);
//! * a `.plan` the program uploads is read but not uploaded: PX4's answers in the recording
//!   (MISSION_CURRENT, MISSION_ITEM_REACHED) are what `reached` and `mission_complete` see;
//! * commands are not sent, so an action waiting for PX4's acknowledgement sees only the
//!   acknowledgements in the recording (of the commands the recorded client sent);
//! * a recording that ends before a step settles ends that step `aborted` ("the recording
//!   ended").

use super::evidence::{EvidenceArgs, Sample};
use super::exec::{failure_text, StepMeta};
use super::output::Out;
use super::program::ProgramFile;
use super::recording::{mission_report, replay_client, Recordings, ReplayClient, Tracer};
use super::replay::Replay;
use super::report::{Report, StepReport, TextReport, VehicleReport};
use super::{exit, EXIT_FAILED, EXIT_OK, EXIT_SETUP};
use nexus_core::client::Event;
use nexus_core::engine::{ProgramEnd, ProgramState};
use nexus_core::msg::{Frame, Msg};
use nexus_core::Instant;
use nexus_host::offboard_client::OWN_SYSTEM_ID;
use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `nexus check`.
#[derive(Debug, Clone, clap::Args)]
pub struct CheckArgs {
    /// The flight program (TOML) whose conditions are checked.
    pub program: PathBuf,
    /// The recorded flight (.tlog; repeat to merge several links of one flight by time).
    #[arg(long, value_name = "FLIGHT.tlog", required_unless_present = "ulog")]
    pub tlog: Vec<PathBuf>,
    /// PX4's own log of the same flight (.ulg): the recording's facts (arming, landing,
    /// height, modes, mission) are checked against it, the report's `second_witness`; a
    /// disagreement beyond the tolerance fails the check with both readings. Without
    /// `--tlog`, the program is checked against this log alone.
    #[arg(long, value_name = "FILE.ulg")]
    pub ulog: Option<PathBuf>,
    /// The vehicle's system id (default: the first autopilot heartbeat's).
    #[arg(long, value_name = "ID")]
    pub system_id: Option<u8>,
    /// Write a JSON report to FILE, or to stdout with `--json` alone.
    #[arg(long, value_name = "FILE", num_args = 0..=1, default_missing_value = "-")]
    pub json: Option<PathBuf>,
    /// Draw the checked flight into FILE.html.
    #[arg(long = "report", value_name = "FILE.html")]
    pub html: Option<PathBuf>,
    /// Write a JUnit XML file.
    #[arg(long, value_name = "FILE.xml")]
    pub junit: Option<PathBuf>,
}

/// What a check replays: recorded frames, or PX4's log read back as its link.
enum Source {
    /// The `--tlog` files.
    Tlog(Recordings),
    /// `--ulog` alone: the messages its topics make, in time order.
    Ulog(std::vec::IntoIter<nexus_host::ulog::replay::Timed>),
}

impl Source {
    fn next_frame(&mut self) -> Result<Option<(u64, Frame)>, String> {
        match self {
            Source::Tlog(r) => r.next_frame(),
            Source::Ulog(f) => Ok(f.next()),
        }
    }
}

/// Why each step the log cannot answer cannot be checked: (step, the reason), from the step's
/// condition and guards.
fn unanswerable(log: &nexus_host::ulog::Ulog, prog: &ProgramFile) -> Vec<(usize, String)> {
    use nexus_host::ulog::replay::cannot_answer;
    prog.steps
        .iter()
        .enumerate()
        .filter_map(|(i, s)| {
            let w = &s.step.until;
            let mut why: Vec<String> = std::iter::once(w.condition())
                .chain(w.guards())
                .filter_map(|c| cannot_answer(log, c).map(|why| format!("`{c}`: {why}")))
                .collect();
            why.dedup();
            // An action-only step waits for nothing the log must hold.
            (!why.is_empty() && !s.until_text.is_empty())
                .then(|| (i, format!("PX4's log cannot answer {}", why.join("; "))))
        })
        .collect()
}

/// The `recording:` line: what was read, what was skipped.
fn recording_line(r: &super::report::RecordingReport) -> String {
    let mut line = format!("recording: {} records read", r.records);
    if r.damaged_records > 0 || r.garbage_bytes > 0 {
        line.push_str(&format!(
            "; skipped {} damaged records whole (checksum failed: never searched for frames) \
             and {} bytes that began no record",
            r.damaged_records, r.garbage_bytes
        ));
    }
    line
}

/// Run `nexus check`.
pub fn main(args: &CheckArgs) -> ExitCode {
    let out = Out::new(args.json.as_deref());
    let evidence = EvidenceArgs {
        tlog: None,
        html: args.html.clone(),
        junit: args.junit.clone(),
        ulog: None,
    };
    let prog = match ProgramFile::load(&args.program) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("nexus check: {e}");
            return exit(EXIT_SETUP);
        }
    };
    // No output may replace a recording, the program, or another output.
    let mut files = vec![super::output::Named::input("the program", &args.program)];
    files.extend(
        args.tlog
            .iter()
            .map(|t| super::output::Named::input("--tlog", t)),
    );
    files.extend(
        args.json
            .iter()
            .map(|j| super::output::Named::output("--json", j)),
    );
    files.extend(
        args.ulog
            .iter()
            .map(|u| super::output::Named::input("--ulog", u)),
    );
    files.extend(evidence.named());
    if let Err(e) = super::output::distinct(&files)
        .and_then(|()| super::vehicle::json_output(args.json.as_deref()))
        .and_then(|()| evidence.check())
    {
        eprintln!("nexus check: {e}");
        return exit(EXIT_SETUP);
    }
    let meta: Vec<StepMeta> = prog.steps.iter().map(StepMeta::from).collect();
    let total = meta.len();
    let title = prog.name.as_deref().unwrap_or("flight program");
    let ulog_alone = match (args.tlog.is_empty(), &args.ulog) {
        (true, Some(path)) => match nexus_host::ulog::Ulog::open(path) {
            Ok(log) => Some((path, log)),
            Err(e) => {
                eprintln!("nexus check: {}: {e}", path.display());
                return exit(EXIT_SETUP);
            }
        },
        _ => None,
    };
    let (target, mut source, skip) = if let Some((path, log)) = &ulog_alone {
        let target = args.system_id.unwrap_or(1);
        out.line(&format!(
            "nexus check: {} — {title}, {total} steps, against PX4's log {} ({} bytes), \
             system {target}",
            args.program.display(),
            path.display(),
            log.len()
        ));
        let skip = unanswerable(log, &prog);
        let frames = nexus_host::ulog::replay::frames(log, target, 1);
        (target, Source::Ulog(frames.into_iter()), skip)
    } else {
        // Every file is opened and checked (count, sizes, one record at least) before
        // anything is replayed; the vehicle is found by a first look at the recording.
        let target = match Recordings::open(&args.tlog).and_then(|mut r| match args.system_id {
            Some(id) => Ok(Some(id)),
            None => first_autopilot(&mut r),
        }) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("nexus check: {e}");
                return exit(EXIT_SETUP);
            }
        };
        let Some(target) = target else {
            eprintln!("nexus check: no autopilot HEARTBEAT in the recording (pass --system-id)");
            return exit(EXIT_SETUP);
        };
        let bytes: u64 = args
            .tlog
            .iter()
            .filter_map(|p| std::fs::metadata(p).ok())
            .map(|m| m.len())
            .sum();
        out.line(&format!(
            "nexus check: {} — {title}, {total} steps, against {} ({bytes} bytes), system {target}",
            args.program.display(),
            match args.tlog.len() {
                1 => "1 tlog".to_string(),
                n => format!("{n} tlogs"),
            }
        ));
        match Recordings::open(&args.tlog) {
            Ok(r) => (target, Source::Tlog(r), Vec::new()),
            Err(e) => {
                eprintln!("nexus check: {e}");
                return exit(EXIT_SETUP);
            }
        }
    };
    let mut client = replay_client(target);
    if let Some(plan) = &prog.plan {
        if let Err(e) = client.lodge_mission(&plan.plan.items) {
            eprintln!(
                "nexus check: {}: cannot hold this mission: {e}",
                plan.path.display()
            );
            return exit(EXIT_SETUP);
        }
    }
    let r = match replay(&mut client, &mut source, &prog, &meta, &skip, &out) {
        Ok(r) => r,
        Err(code) => return code,
    };
    let recording = match source {
        Source::Tlog(recordings) => match recordings.finish() {
            Ok(rec) => {
                out.line(&recording_line(&rec));
                Some(rec)
            }
            Err(e) => {
                eprintln!("nexus check: {e}");
                return exit(EXIT_SETUP);
            }
        },
        Source::Ulog(_) => None,
    };
    let records = client.program().records().to_vec();
    let mut report = check_report(args, &prog, target, &meta, &client, &r);
    report.recording = recording;
    if let Some((path, log)) = &ulog_alone {
        report.vehicle.kind = "ulog";
        report.events = vec![format!("checked against PX4's log {}", path.display())];
        let f = nexus_host::ulog::facts::Facts::of(log);
        if !f.missing_topics.is_empty() {
            report
                .events
                .push(format!("PX4's log lacks {}", f.missing_topics.join(", ")));
        }
        report
            .events
            .extend(skip.iter().map(|(i, why)| format!("step {}: {why}", i + 1)));
    }
    let (mut passed, mut verdict) =
        verdict(&r, &records, &meta, target, client.snapshot().t_sim_s());
    if let (Some(path), None) = (&args.ulog, &ulog_alone) {
        let link =
            super::witness::LinkFacts::of(&r.trace, report.mission.as_ref().map(|m| m.complete));
        let w = super::witness::witness(path, &link);
        out.line(&super::witness::summary(&w));
        if let (true, Some(why)) = (passed, super::witness::failure(&w)) {
            passed = false;
            verdict = format!("FAIL: {why}");
        }
        report.second_witness = Some(w);
    }
    // The verdict line is nexus's alone: vehicle words it quotes are escaped, here and in the
    // report.
    let verdict = nexus_core::escape::Escaped(&verdict).to_string();
    out.line(&verdict);
    report.passed = passed;
    report.verdict = verdict;
    report.exit_code = if passed { EXIT_OK } else { EXIT_FAILED };
    if let Err(e) = out
        .write_json(&report)
        .and_then(|()| evidence.write(&report, &r.trace))
    {
        eprintln!("nexus check: {e}");
        return exit(EXIT_SETUP);
    }
    exit(report.exit_code)
}

/// The system id of the first autopilot that sent a HEARTBEAT (not ours, not a GCS), read
/// from the start of the recordings.
fn first_autopilot(r: &mut Recordings) -> Result<Option<u8>, String> {
    while let Some((_, f)) = r.next_frame()? {
        if let Msg::Heartbeat(h) = &f.msg {
            if f.header.sysid != OWN_SYSTEM_ID && h.autopilot as u8 != 8 {
                return Ok(Some(f.header.sysid));
            }
        }
    }
    Ok(None)
}

/// What a replay of the recording gathered.
struct Replayed {
    /// Whether the program started (the vehicle connected).
    started: bool,
    /// How the program ended.
    end: Option<ProgramEnd>,
    /// The step the check aborted (the recording ended, or PX4's log cannot answer it), and
    /// why.
    ended_early: Option<(usize, String)>,
    /// Why each failed step failed, in the vehicle's words.
    explanations: std::collections::HashMap<usize, String>,
    /// The vehicle's texts.
    texts: Vec<TextReport>,
    /// The flight drawn in the HTML report.
    trace: Vec<Sample>,
    /// The mission items as they became current.
    progress: Vec<super::report::ItemProgress>,
    /// The recording's time at the last frame handled.
    now: Instant,
}

/// Hand `frames` to the client in their recorded time, running the program (its actions shown,
/// not performed) and printing each step as it settles. A step of `skip` is aborted as it
/// starts, with its reason (its wait replaced by one that cannot end first, so it is never
/// met on data the recording lacks). `Err` is the exit code of a program the client refused.
fn replay(
    client: &mut ReplayClient,
    recordings: &mut Source,
    prog: &ProgramFile,
    meta: &[StepMeta],
    skip: &[(usize, String)],
    out: &Out,
) -> Result<Replayed, ExitCode> {
    let total = meta.len();
    let mut tracer = Tracer::default();
    let mut replay = Replay::default();
    let mut started = false;
    let mut end: Option<ProgramEnd> = None;
    let mut explanations = std::collections::HashMap::new();
    let mut shown = None;
    let mut ended_early = None;
    loop {
        let (ts, f) = match recordings.next_frame() {
            Ok(Some(next)) => next,
            Ok(None) => break,
            Err(e) => {
                eprintln!("nexus check: {e}");
                return Err(exit(EXIT_SETUP));
            }
        };
        replay.frame(client, ts, &f);
        let now = replay.now();
        if !started && client.telemetry().connected() {
            let mut program = nexus_core::engine::Program::new();
            for (i, spec) in prog.steps.iter().enumerate() {
                let mut step = spec.step.clone();
                if skip.iter().any(|(k, _)| *k == i) {
                    let timeout = step.until.timeout().unwrap_or(0.0);
                    step.until = nexus_core::engine::Wait::time_s(1.0e9).timeout_s(timeout);
                }
                // Cannot fail: the step count was checked against STEPS when reading.
                let _ = program.push(step);
            }
            if let Err(e) = client.start_program(now, program) {
                eprintln!("nexus check: the program was refused: {e}");
                return Err(exit(EXIT_SETUP));
            }
            started = true;
        }
        // Shown, not performed: the replay drops what the client would send.
        replay.pass(client, now);
        while let Some(ev) = client.poll_event() {
            match ev {
                Event::Step { step, passed, .. } => {
                    if !passed {
                        if let Some(e) = client.explain_step(now, step) {
                            explanations.insert(step, e.to_string());
                        }
                    }
                    if let (Some(rec), Some(m)) =
                        (client.program().records().get(step), meta.get(step))
                    {
                        let why = explanations.get(&step).map(String::as_str);
                        out.line(&super::exec::step_line(m, step, total, rec, why));
                    }
                }
                Event::ProgramFinished(e) => end = Some(e),
                _ => {}
            }
        }
        if let ProgramState::Running { step } = client.program().state() {
            if let Some((_, why)) = skip.iter().find(|(i, _)| *i == step) {
                let _ = client.abort_program(now);
                explanations.insert(step, why.clone());
                ended_early = Some((step, why.clone()));
                while let Some(ev) = client.poll_event() {
                    if let Event::ProgramFinished(e) = ev {
                        end = Some(e);
                    }
                }
                if let (Some(rec), Some(m)) = (client.program().records().get(step), meta.get(step))
                {
                    out.line(&super::exec::step_line(m, step, total, rec, Some(why)));
                }
                break;
            }
            if shown != Some(step) {
                shown = Some(step);
                if let Some(m) = meta.get(step) {
                    out.line(&format!(
                        "{}: {} (shown, not performed); until {}",
                        m.label(step, total),
                        m.action_text,
                        m.until
                    ));
                }
            }
        }
        tracer.look(client, started);
        if end.is_some() {
            break;
        }
    }
    let now = replay.now();
    if end.is_none() && started {
        // The recording ended first: the step running is aborted with that reason.
        let step = client.program().records().len();
        ended_early = Some((step, "the recording ended".to_string()));
        let _ = client.abort_program(now);
        while let Some(ev) = client.poll_event() {
            if let Event::ProgramFinished(e) = ev {
                end = Some(e);
            }
        }
    }
    Ok(Replayed {
        started,
        end,
        ended_early,
        explanations,
        texts: tracer.texts,
        trace: tracer.trace,
        progress: tracer.progress,
        now,
    })
}

/// The report of a check: its steps, texts, mission and final state (the verdict is set later).
fn check_report(
    args: &CheckArgs,
    prog: &ProgramFile,
    target: u8,
    meta: &[StepMeta],
    client: &ReplayClient,
    r: &Replayed,
) -> Report {
    let total = meta.len();
    let mut report = Report::new(
        "check",
        args.program.display().to_string(),
        prog.name.clone(),
        VehicleReport {
            kind: "tlog",
            instance: 0,
            system_id: target,
            speed: super::vehicle::Speed::Factor(1.0),
            connection: None,
            component_id: None,
            simulator: None,
            model: None,
        },
        total,
    );
    report.steps = client
        .program()
        .records()
        .iter()
        .enumerate()
        .map(|(i, rec)| {
            let m = &meta[i];
            let mut step =
                StepReport::new(i, m.name.clone(), &m.action, &m.action_text, &m.until, rec);
            step.explanation = r.explanations.get(&i).cloned();
            step
        })
        .collect();
    report.texts = r.texts.clone();
    report.wall_s = r.now.total_micros() as f64 / 1e6;
    if let Some(plan) = &prog.plan {
        report.mission = Some(mission_report(
            plan.path.display().to_string(),
            &plan.plan.items,
            client,
            r.progress.clone(),
        ));
    }
    report.final_state = Some((&client.snapshot()).into());
    report.events = args
        .tlog
        .iter()
        .map(|p| format!("checked against {}", p.display()))
        .collect();
    report
}

/// Whether the check passed, and its verdict line.
fn verdict(
    r: &Replayed,
    records: &[nexus_core::engine::StepRecord],
    meta: &[StepMeta],
    target: u8,
    sim_s: f64,
) -> (bool, String) {
    let total = meta.len();
    let passed = r.end == Some(ProgramEnd::Completed)
        && records.len() == total
        && records.iter().all(|r| r.passed);
    let verdict = if !r.started {
        format!("FAIL: system {target} never connected in the recording")
    } else if passed {
        format!("PASS: all {total} steps met in the recording ({sim_s:.1} s sim)")
    } else {
        let at = records
            .iter()
            .position(|r| !r.passed)
            .unwrap_or(records.len().saturating_sub(1));
        match (records.get(at), meta.get(at)) {
            (Some(rec), Some(m)) => {
                let early = r
                    .ended_early
                    .as_ref()
                    .filter(|(s, _)| *s == at)
                    .map(|(_, why)| why.as_str());
                format!(
                    "FAIL: {}",
                    failure_text(&m.label(at, total), &m.until, rec, early)
                )
            }
            _ => "FAIL: the program did not complete".to_string(),
        }
    };
    (passed, verdict)
}
