//! `nexus fly PLAN.plan`: upload a QGroundControl plan, fly it, land, and say how it went.
//!
//! The flight is a step program on the core engine, so its report reads like any program's:
//!
//! 1. start the mission (MISSION_SET_CURRENT 0, Mission mode, arm) until armed;
//! 2. until PX4 flies to the mission's last item, failing if the vehicle disarms first;
//! 3. until landed;
//! 4. until disarmed (PX4 disarms by itself after landing).
//!
//! It passes when every step is met and the mission's last NAV_WAYPOINT was reached.

use super::exec::{Flight, StepMeta};
use super::output::Out;
use super::program::{PlanFile, STEPS};
use super::report::{IgnoredReport, Report};
use super::vehicle::{start, StartError, VehicleArgs};
use super::{exit, EXIT_FAILED, EXIT_OK, EXIT_SETUP};
use nexus_core::engine::{Condition, Program, Step, Wait};
use nexus_core::mission::NAV_WAYPOINT;
use nexus_core::Action;
use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `nexus fly`.
#[derive(Debug, Clone, clap::Args)]
pub struct FlyArgs {
    /// The QGroundControl .plan to fly.
    pub plan: PathBuf,
    /// Which vehicle, how fast.
    #[command(flatten)]
    pub vehicle: VehicleArgs,
    /// Fail if PX4 has not flown to the mission's last item after this many sim seconds.
    #[arg(long, default_value_t = 1800.0, value_name = "SECONDS")]
    pub timeout_s: f32,
    /// Write a JSON report to FILE, or to stdout with `--json` alone (human output then goes
    /// to stderr).
    #[arg(long, value_name = "FILE", num_args = 0..=1, default_missing_value = "-")]
    pub json: Option<PathBuf>,
}

/// Sim seconds for the start (the arm settle window, PX4's preflight checks).
const START_TIMEOUT_S: f32 = 60.0;
/// Sim seconds from the last item to touchdown.
const LAND_TIMEOUT_S: f32 = 300.0;
/// Sim seconds from touchdown to PX4's own disarm (it waits ~2 s).
const DISARM_TIMEOUT_S: f32 = 60.0;

/// The flight as steps.
fn flight_program(last_item: u16, timeout_s: f32) -> (Program<STEPS>, Vec<StepMeta>) {
    let meta = |action: &str, action_text: &str, until: String| StepMeta {
        name: None,
        action: action.into(),
        action_text: action_text.into(),
        until,
    };
    let steps = [
        (
            Step::new(
                Action::StartMission,
                Wait::armed().timeout_s(START_TIMEOUT_S),
            ),
            meta(
                "start",
                "start the mission",
                format!("armed (timeout {START_TIMEOUT_S} s)"),
            ),
        ),
        (
            Step::new(
                Action::None,
                Wait::waypoint(last_item)
                    .guard(Condition::disarmed())
                    .timeout_s(timeout_s),
            ),
            meta(
                "none",
                "fly the mission",
                format!(
                    "PX4 flies to the last item ({last_item}), failing if it disarms first \
                     (timeout {timeout_s} s)"
                ),
            ),
        ),
        (
            Step::new(Action::None, Wait::landed().timeout_s(LAND_TIMEOUT_S)),
            meta(
                "none",
                "land",
                format!("landed (timeout {LAND_TIMEOUT_S} s)"),
            ),
        ),
        (
            Step::new(Action::None, Wait::disarmed().timeout_s(DISARM_TIMEOUT_S)),
            meta(
                "none",
                "wait for PX4 to disarm",
                format!("disarmed (timeout {DISARM_TIMEOUT_S} s)"),
            ),
        ),
    ];
    let mut program = Program::new();
    let mut metas = Vec::new();
    for (s, m) in steps {
        // Four steps always fit.
        let _ = program.push(s);
        metas.push(m);
    }
    (program, metas)
}

/// Run `nexus fly`.
pub fn main(args: &FlyArgs) -> ExitCode {
    let out = Out::new(args.json.as_deref());
    let plan = match PlanFile::load(&args.plan) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("nexus fly: {e}");
            return exit(EXIT_SETUP);
        }
    };
    let timeout_ok = super::limits::duration_s("--timeout-s", args.timeout_s as f64);
    if !(timeout_ok.is_ok() && args.timeout_s > 0.0) {
        eprintln!(
            "nexus fly: --timeout-s must be a positive number of sim seconds, at most {:e}",
            super::limits::MAX_DURATION_S
        );
        return exit(EXIT_SETUP);
    }
    if let Err(e) = super::vehicle::before_flight(&args.vehicle, args.json.as_deref()) {
        eprintln!("nexus fly: {e}");
        return exit(EXIT_SETUP);
    }
    let items = &plan.plan.items;
    let last_item = (items.len() - 1) as u16;
    let has_waypoint = items.iter().any(|i| i.command == NAV_WAYPOINT);
    out.line(&format!(
        "nexus fly: {} ({} items) at ×{}",
        args.plan.display(),
        items.len(),
        args.vehicle.speed
    ));
    let mut report = Report::new(
        "fly",
        args.plan.display().to_string(),
        None,
        args.vehicle.report(),
        4,
    );
    let vehicle = match start(&args.vehicle, true) {
        Ok(v) => v,
        Err(StartError::Setup(e)) => {
            eprintln!("nexus fly: {e}");
            return exit(EXIT_SETUP);
        }
        Err(e) => {
            if let StartError::Died(why) = &e {
                report.died = Some(why.clone());
            }
            return finish(&out, report, Err(e.message().to_string()), None);
        }
    };
    out.line(&vehicle.banner());
    report.vehicle = vehicle.report(&args.vehicle);
    let notes = vehicle.notes();
    // From here a signal ends the flight in order, with its report (before, while the vehicle
    // starts, the process ends at once: nexus_host::interrupt).
    let _interrupts = nexus_host::interrupt::handle();
    let mut flight = Flight::new(vehicle, &out, items.len(), true);
    flight.events.extend(notes);
    let (program, meta) = flight_program(last_item, args.timeout_s);
    let outcome = match flight.upload(&plan) {
        Err(e) => Err(format!("mission upload failed: {e}")),
        Ok(()) => {
            let end = flight.run(program, &meta);
            let complete = flight.mission_complete();
            match flight.failure(end, &meta) {
                Some(why) => Err(why),
                None if has_waypoint && !complete => Err(
                    "the vehicle landed, but PX4 never reported the mission's last waypoint reached"
                        .into(),
                ),
                None => Ok(end),
            }
        }
    };
    flight.view.finish();
    report.steps = flight.step_reports(&meta);
    report.mission = Some(flight.mission_report(&plan));
    report.texts = flight.text_reports();
    report.events = flight.events.clone();
    report.died = flight.died().map(str::to_string);
    report.final_state = Some(flight.final_snapshot());
    report.wall_s = flight.wall_s();
    report.ignored = IgnoredReport::from(&flight.summarize_ignored());
    report.requests = super::report::RequestsReport::new(
        &flight.vehicle.link.status().counters.tx_requests,
        items.len() as u64,
    );
    let outcome = outcome.map(|_| {
        format!(
            "mission complete: {} items flown, landed and disarmed after {:.1} s sim ({:.1} s wall)",
            items.len(),
            flight.sim_s(),
            flight.wall_s()
        )
    });
    finish(&out, report, outcome, Some(&flight))
}

fn finish(
    out: &Out,
    mut report: Report,
    outcome: Result<String, String>,
    flight: Option<&Flight>,
) -> ExitCode {
    let (code, verdict) = match outcome {
        Ok(v) => (EXIT_OK, format!("PASS: {v}")),
        // Interrupted: the shell's 128 + signal number (130 SIGINT, 143 SIGTERM, 129 SIGHUP).
        Err(e) => (
            nexus_host::interrupt::caught().map_or(EXIT_FAILED, |c| c.exit_code()),
            format!("FAIL: {e}"),
        ),
    };
    if code != EXIT_OK {
        if let Some(f) = flight {
            let tail = f.console_tail(8);
            if !tail.is_empty() && report.died.is_some() {
                out.line("vehicle console (last lines):");
                for l in tail {
                    out.line(&format!("  {l}"));
                }
            }
        }
    }
    out.line(&verdict);
    report.passed = code == EXIT_OK;
    report.verdict = verdict;
    report.exit_code = code;
    if let Err(e) = out.write_json(&report) {
        eprintln!("nexus fly: {e}");
        return exit(EXIT_SETUP);
    }
    exit(code)
}
