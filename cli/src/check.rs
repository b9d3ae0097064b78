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
use super::report::{Report, StepReport, TextReport, VehicleReport};
use super::{exit, EXIT_FAILED, EXIT_OK, EXIT_SETUP};
use nexus_core::client::{ClientConfig, Event};
use nexus_core::engine::{ProgramEnd, ProgramState};
use nexus_core::frame::{Decoder, MAX_FRAME_LEN};
use nexus_core::ground_truth::GroundTruth;
use nexus_core::msg::{Frame, Msg};
use nexus_core::telemetry::LinkIds;
use nexus_core::{Client, Instant};
use nexus_host::offboard_client::{OffboardOptions, OWN_COMPONENT_ID, OWN_SYSTEM_ID};
use nexus_host::tlog::TlogFrame;
use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `nexus check`.
#[derive(Debug, Clone, clap::Args)]
pub struct CheckArgs {
    /// The flight program (TOML) whose conditions are checked.
    pub program: PathBuf,
    /// The recorded flight (.tlog; repeat to merge several links of one flight by time).
    #[arg(long, value_name = "FLIGHT.tlog", required = true)]
    pub tlog: Vec<PathBuf>,
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

/// The client a check runs: the host link's capacities.
type CheckClient = Client<
    { nexus_host::pump::WAITS },
    { nexus_host::pump::TEXTS },
    { nexus_host::pump::MISSION_ITEMS },
    { nexus_host::pump::STEPS },
>;

/// Decode every frame of the recording (records merged by time, stable).
fn frames(recs: Vec<TlogFrame>) -> Vec<(u64, Frame)> {
    let mut out = Vec::new();
    for r in recs {
        let mut dec = Decoder::new();
        let (_, raw) = dec.feed(&r.bytes);
        if let Some(raw) = raw {
            if let Ok(Some(f)) = Frame::decode(&raw) {
                out.push((r.epoch_us, f));
            }
        }
    }
    out
}

/// Run `nexus check`.
pub fn main(args: &CheckArgs) -> ExitCode {
    let out = Out::new(args.json.as_deref());
    let evidence = EvidenceArgs {
        tlog: None,
        html: args.html.clone(),
        junit: args.junit.clone(),
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
    files.extend(evidence.named());
    if let Err(e) = super::output::distinct(&files)
        .and_then(|()| super::vehicle::json_output(args.json.as_deref()))
        .and_then(|()| evidence.check())
    {
        eprintln!("nexus check: {e}");
        return exit(EXIT_SETUP);
    }
    let frames = match read_frames(&args.tlog) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("nexus check: {e}");
            return exit(EXIT_SETUP);
        }
    };
    let target = args.system_id.or_else(|| first_autopilot(&frames));
    let Some(target) = target else {
        eprintln!("nexus check: no autopilot HEARTBEAT in the recording (pass --system-id)");
        return exit(EXIT_SETUP);
    };
    let meta: Vec<StepMeta> = prog.steps.iter().map(StepMeta::from).collect();
    let total = meta.len();
    let title = prog.name.as_deref().unwrap_or("flight program");
    out.line(&format!(
        "nexus check: {} — {title}, {total} steps, against {} frames of system {target}",
        args.program.display(),
        frames.len()
    ));
    let config = ClientConfig {
        ids: LinkIds {
            target_sysid: target,
            own_sysid: OWN_SYSTEM_ID,
            own_compid: OWN_COMPONENT_ID,
        },
        // Nothing is sent: ground truth counts when the recording holds it.
        ground_truth: GroundTruth::Never,
        ..OffboardOptions::default().client_config()
    };
    let mut client: Box<CheckClient> = Box::new(Client::new(config));
    if let Some(plan) = &prog.plan {
        if let Err(e) = client.offboard_mut().0.lodge_mission(&plan.plan.items) {
            eprintln!(
                "nexus check: {}: cannot hold this mission: {e}",
                plan.path.display()
            );
            return exit(EXIT_SETUP);
        }
    }
    let r = match replay(&mut client, &frames, &prog, &meta, &out) {
        Ok(r) => r,
        Err(code) => return code,
    };
    let records = client.program().records().to_vec();
    let mut report = check_report(args, &prog, target, &meta, &client, &r);
    let (passed, verdict) = verdict(&r, &records, &meta, target, client.snapshot().t_sim_s());
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

/// Read and merge the recordings, then decode their frames.
fn read_frames(tlogs: &[PathBuf]) -> Result<Vec<(u64, Frame)>, String> {
    let mut recs = Vec::new();
    for p in tlogs {
        match nexus_host::tlog::read(p) {
            Ok(r) => recs.extend(r),
            Err(e) => {
                return Err(format!("{}: {e}", p.display()));
            }
        }
    }
    recs.sort_by_key(|r| r.epoch_us);
    Ok(frames(recs))
}

/// The system id of the first autopilot that sent a HEARTBEAT (not ours, not a GCS).
fn first_autopilot(frames: &[(u64, Frame)]) -> Option<u8> {
    frames.iter().find_map(|(_, f)| match &f.msg {
        Msg::Heartbeat(h) if f.header.sysid != OWN_SYSTEM_ID && h.autopilot as u8 != 8 => {
            Some(f.header.sysid)
        }
        _ => None,
    })
}

/// What a replay of the recording gathered.
struct Replayed {
    /// Whether the program started (the vehicle connected).
    started: bool,
    /// How the program ended.
    end: Option<ProgramEnd>,
    /// The step the end of the recording aborted, if it did.
    ended_early: Option<usize>,
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
/// not performed) and printing each step as it settles. `Err` is the exit code of a program
/// the client refused.
fn replay(
    client: &mut CheckClient,
    frames: &[(u64, Frame)],
    prog: &ProgramFile,
    meta: &[StepMeta],
    out: &Out,
) -> Result<Replayed, ExitCode> {
    let total = meta.len();
    let mut progress: Vec<super::report::ItemProgress> = Vec::new();
    let t0 = frames.first().map_or(0, |f| f.0);
    let mut started = false;
    let mut end: Option<ProgramEnd> = None;
    let mut explanations = std::collections::HashMap::new();
    let mut texts: Vec<TextReport> = Vec::new();
    let mut trace: Vec<Sample> = Vec::new();
    let mut shown = None;
    let mut tx = [0u8; MAX_FRAME_LEN];
    let mut now = Instant::ZERO;
    for (ts, f) in frames {
        now = Instant::from_micros(ts.saturating_sub(t0));
        client.handle(now, f);
        if !started && client.telemetry().connected() {
            if let Err(e) = client.start_program(now, prog.to_program()) {
                eprintln!("nexus check: the program was refused: {e}");
                return Err(exit(EXIT_SETUP));
            }
            started = true;
        }
        // Shown, not performed.
        while client.poll_transmit(now, &mut tx).is_some() {}
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
        let cur = client.offboard().mission_current();
        if started && progress.last().is_none_or(|p| p.item != cur) {
            if let Some(ms) = client.telemetry().sim_ms() {
                progress.push(super::report::ItemProgress {
                    item: cur,
                    t_sim_s: ms as f64 / 1000.0,
                });
            }
        }
        let tel = client.telemetry();
        let have = texts.last().map_or(0, |t| t.seq);
        for t in tel.texts().after(have) {
            texts.push(TextReport {
                seq: t.seq,
                severity: t.severity,
                t_sim_s: t.sim_ms.map(|ms| ms as f64 / 1000.0),
                text: t.text.as_str().to_string(),
            });
        }
        let s = client.snapshot();
        if s.sim_ms.is_some() && trace.last().is_none_or(|l| Some(l.sim_ms) != s.sim_ms) {
            let pos = tel
                .global_position()
                .map(|p| (p.lat as f64 / 1e7, p.lon as f64 / 1e7));
            trace.push(Sample::new(&s, pos));
        }
        if end.is_some() {
            break;
        }
    }
    let mut ended_early = None;
    if end.is_none() && started {
        // The recording ended first: the step running is aborted with that reason.
        let step = client.program().records().len();
        ended_early = Some(step);
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
        texts,
        trace,
        progress,
        now,
    })
}

/// The report of a check: its steps, texts, mission and final state (the verdict is set later).
fn check_report(
    args: &CheckArgs,
    prog: &ProgramFile,
    target: u8,
    meta: &[StepMeta],
    client: &CheckClient,
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
        let ob = client.offboard();
        report.mission = Some(super::report::MissionReport {
            plan: plan.path.display().to_string(),
            items: plan
                .plan
                .items
                .iter()
                .map(super::report::ItemReport::from)
                .collect(),
            uploaded: ob.mission_uploaded(),
            ack: ob.mission_ack(),
            current: ob.mission_current(),
            reached: ob.mission_reached(),
            complete: ob.mission_complete(),
            progress: r.progress.clone(),
            last_reachable: nexus_core::mission::last_reachable(&plan.plan.items),
            items_flown: ob.mission_reached().map_or(0, |r| r as usize + 1),
        });
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
                let early = (r.ended_early == Some(at)).then_some("the recording ended");
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
