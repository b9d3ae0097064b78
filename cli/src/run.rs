//! `nexus run PROGRAM.toml`: run a flight program (see [`super::program`]) and report each
//! step's wait result as it settles.

use super::evidence::{EvidenceArgs, Sample};
use super::exec::{Flight, StepMeta};
use super::output::Out;
use super::program::ProgramFile;
use super::report::{IgnoredReport, Report};
use super::vehicle::{start_interruptible, StartError, VehicleArgs};
use super::{exit, EXIT_FAILED, EXIT_OK, EXIT_SETUP};
use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `nexus run`.
#[derive(Debug, Clone, clap::Args)]
pub struct RunArgs {
    /// The flight program (TOML; see README, "Flight programs").
    pub program: PathBuf,
    /// Which vehicle, how fast.
    #[command(flatten)]
    pub vehicle: VehicleArgs,
    /// Only read and check the program (and its plan), print its steps, and exit.
    #[arg(long)]
    pub check: bool,
    /// Write a JSON report to FILE, or to stdout with `--json` alone (human output then goes
    /// to stderr).
    #[arg(long, value_name = "FILE", num_args = 0..=1, default_missing_value = "-")]
    pub json: Option<PathBuf>,
    /// `--tlog`, `--report`, `--junit`.
    #[command(flatten)]
    pub evidence: EvidenceArgs,
    /// More programs: with them (or `--partition`), the set runs in parallel
    /// ([`super::multi`]), each on its own instance.
    #[arg(value_name = "MORE")]
    pub more: Vec<PathBuf>,
    /// Programs of the set flown at once (each on its own instance, from `--instance` up).
    #[arg(long, short = 'j', default_value_t = 1, value_name = "N")]
    pub jobs: usize,
    /// Run only part K of N of the set (1-based), split the way nextest partitions tests:
    /// the same on every machine, every program in exactly one part.
    #[arg(long, value_name = "K/N")]
    pub partition: Option<super::multi::Partition>,
}

/// Run `nexus run`.
pub fn main(args: &RunArgs) -> ExitCode {
    if !args.more.is_empty() || args.partition.is_some() || args.jobs != 1 {
        return super::multi::main(args);
    }
    let out = Out::new(args.json.as_deref());
    let prog = match ProgramFile::load(&args.program) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("nexus run: {e}");
            return exit(EXIT_SETUP);
        }
    };
    let total = prog.steps.len();
    let meta: Vec<StepMeta> = prog
        .steps
        .iter()
        .map(|s| StepMeta {
            name: s.name.clone(),
            action: s.action_name.clone(),
            action_text: s.action_text.clone(),
            until: s.until_text.clone(),
        })
        .collect();
    let title = prog.name.as_deref().unwrap_or("flight program");
    out.line(&format!(
        "nexus run: {} — {title}, {total} steps",
        args.program.display()
    ));
    if args.check {
        for (i, m) in meta.iter().enumerate() {
            out.line(&format!(
                "{} (line {}): {}; until {}",
                m.label(i, total),
                prog.steps[i].line,
                m.action_text,
                m.until
            ));
        }
        out.line("program OK");
        return exit(EXIT_OK);
    }
    if let Err(e) = super::vehicle::before_flight(&args.vehicle, args.json.as_deref())
        .and_then(|()| args.evidence.check())
    {
        eprintln!("nexus run: {e}");
        return exit(EXIT_SETUP);
    }
    let tlog = match args.evidence.open_tlog() {
        Ok(t) => t,
        Err(e) => {
            eprintln!("nexus run: {e}");
            return exit(EXIT_SETUP);
        }
    };
    let mut report = Report::new(
        "run",
        args.program.display().to_string(),
        prog.name.clone(),
        args.vehicle.report(),
        total,
    );
    // A program that can make the vehicle fly is refused on a real one without --real-vehicle.
    let actions: Vec<&str> = meta.iter().map(|m| m.action.as_str()).collect();
    let moves = super::vehicle::actions_move(&actions);
    // A signal from here on ends the command in order, with its report: while the vehicle
    // starts, that start is cut short (nothing flew); afterwards the flight ends `aborted`.
    let _interrupts = nexus_host::interrupt::handle();
    let vehicle = match start_interruptible(&args.vehicle, moves, tlog.clone()) {
        Ok(v) => v,
        Err(StartError::Setup(e)) => {
            eprintln!("nexus run: {e}");
            return exit(EXIT_SETUP);
        }
        Err(e) => {
            if let StartError::Died(why) = &e {
                report.died = Some(why.clone());
            }
            return finish(
                &out,
                report,
                Err(e.message().to_string()),
                &args.evidence,
                &[],
            );
        }
    };
    out.line(&vehicle.banner());
    report.vehicle = vehicle.report(&args.vehicle);
    let notes = vehicle.notes();
    let items = prog.plan.as_ref().map_or(0, |p| p.plan.items.len());
    let mut flight = Flight::new(vehicle, &out, items, false);
    flight.events.extend(notes);
    if let Some(plan) = &prog.plan {
        if let Err(e) = flight.lodge(plan) {
            return finish(&out, report, Err(e), &args.evidence, &flight.trace);
        }
    }
    let end = flight.run(prog.to_program(), &meta);
    flight.view.finish();
    let outcome = match flight.failure(end, &meta) {
        Some(why) => Err(why),
        None => Ok(format!(
            "all {total} steps met in {:.1} s sim ({})",
            flight.sim_s_at_end(),
            flight.wall_text()
        )),
    };
    report.steps = flight.step_reports(&meta);
    report.mission = prog.plan.as_ref().map(|p| flight.mission_report(p));
    report.texts = flight.text_reports();
    report.events = flight.events.clone();
    report.died = flight.died().map(str::to_string);
    report.final_state = Some(flight.final_snapshot());
    flight.fill_times(&mut report);
    report.ignored = IgnoredReport::from(&flight.summarize_ignored());
    let link_status = flight.vehicle.link.status();
    report.requests = super::report::RequestsReport::new(
        &link_status.counters.tx_requests,
        items as u64,
        &link_status.rtt,
    );
    match super::evidence::close_link(&mut flight, tlog.as_ref(), args.evidence.tlog.as_deref()) {
        Ok(l) => report.link = Some(l),
        Err(e) => report.events.push(e),
    }
    finish(&out, report, outcome, &args.evidence, &flight.trace)
}

fn finish(
    out: &Out,
    mut report: Report,
    outcome: Result<String, String>,
    evidence: &EvidenceArgs,
    trace: &[Sample],
) -> ExitCode {
    let (code, verdict) = match outcome {
        Ok(v) => (EXIT_OK, format!("PASS: {v}")),
        // Interrupted: the shell's 128 + signal number (130 SIGINT, 143 SIGTERM, 129 SIGHUP).
        Err(e) => (
            nexus_host::interrupt::caught().map_or(EXIT_FAILED, |c| c.exit_code()),
            format!("FAIL: {e}"),
        ),
    };
    out.line(&verdict);
    report.passed = code == EXIT_OK;
    report.verdict = verdict;
    report.exit_code = code;
    if let Err(e) = out
        .write_json(&report)
        .and_then(|()| evidence.write(&report, trace))
    {
        eprintln!("nexus run: {e}");
        return exit(EXIT_SETUP);
    }
    exit(code)
}
