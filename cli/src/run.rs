//! `nexus run PROGRAM.toml`: run a flight program (see [`super::program`]) and report each
//! step's wait result as it settles.

use super::exec::{Flight, StepMeta};
use super::output::Out;
use super::program::ProgramFile;
use super::report::{IgnoredReport, Report};
use super::vehicle::{start, StartError, VehicleArgs};
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
}

/// Run `nexus run`.
pub fn main(args: &RunArgs) -> ExitCode {
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
    if let Err(e) = super::vehicle::before_flight(&args.vehicle, args.json.as_deref()) {
        eprintln!("nexus run: {e}");
        return exit(EXIT_SETUP);
    }
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
    let vehicle = match start(&args.vehicle, moves) {
        Ok(v) => v,
        Err(StartError::Setup(e)) => {
            eprintln!("nexus run: {e}");
            return exit(EXIT_SETUP);
        }
        Err(e) => {
            if let StartError::Died(why) = &e {
                report.died = Some(why.clone());
            }
            return finish(&out, report, Err(e.message().to_string()));
        }
    };
    out.line(&vehicle.banner());
    report.vehicle = vehicle.report(&args.vehicle);
    let notes = vehicle.notes();
    // From here a signal ends the flight in order, with its report (before, while the vehicle
    // starts, the process ends at once: nexus_host::interrupt).
    let _interrupts = nexus_host::interrupt::handle();
    let items = prog.plan.as_ref().map_or(0, |p| p.plan.items.len());
    let mut flight = Flight::new(vehicle, &out, items, false);
    flight.events.extend(notes);
    if let Some(plan) = &prog.plan {
        if let Err(e) = flight.lodge(plan) {
            return finish(&out, report, Err(e));
        }
    }
    let end = flight.run(prog.to_program(), &meta);
    flight.view.finish();
    let outcome = match flight.failure(end, &meta) {
        Some(why) => Err(why),
        None => Ok(format!(
            "all {total} steps met in {:.1} s sim ({:.1} s wall)",
            flight.sim_s(),
            flight.wall_s()
        )),
    };
    report.steps = flight.step_reports(&meta);
    report.mission = prog.plan.as_ref().map(|p| flight.mission_report(p));
    report.texts = flight.text_reports();
    report.events = flight.events.clone();
    report.died = flight.died().map(str::to_string);
    report.final_state = Some(flight.final_snapshot());
    report.wall_s = flight.wall_s();
    report.ignored = IgnoredReport::from(&flight.summarize_ignored());
    report.requests = super::report::RequestsReport::new(
        &flight.vehicle.link.status().counters.tx_requests,
        items as u64,
    );
    finish(&out, report, outcome)
}

fn finish(out: &Out, mut report: Report, outcome: Result<String, String>) -> ExitCode {
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
    if let Err(e) = out.write_json(&report) {
        eprintln!("nexus run: {e}");
        return exit(EXIT_SETUP);
    }
    exit(code)
}
