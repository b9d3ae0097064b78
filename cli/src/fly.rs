//! `nexus fly PLAN.plan`: upload a QGroundControl plan, fly it, land, and say how it went.
//!
//! The flight is a step program on the core engine, so its report reads like any program's:
//!
//! 1. start the mission (MISSION_SET_CURRENT 0, Mission mode, arm) until armed;
//! 2. until PX4 reports the mission complete (`mission_complete`: its last reachable item
//!    reached in this run), failing if the vehicle disarms first;
//! 3. until landed;
//! 4. until disarmed (PX4 disarms by itself after landing).
//!
//! It passes when every step is met, the vehicle was in the air, and every item of the plan is
//! one PX4 flies: nothing after the first LAND (PX4 ends the mission on touchdown) and nothing
//! after an RTL but the RTL itself ([`nexus_core::mission::last_reachable`]). "Items flown"
//! counts the items PX4 reported reached, never the plan's length.

use super::evidence::EvidenceArgs;
use super::exec::{Flight, StepMeta};
use super::outcome::Invocation;
use super::output::{Named, Out};
use super::program::{PlanFile, STEPS};
use super::report::Report;
use super::vehicle::VehicleArgs;
use super::{exit, EXIT_SETUP};
use nexus_core::engine::{Condition, Program, ProgramEnd, Step, Wait};
use nexus_core::mission::{last_reachable, unreachable_items, NAV_RETURN_TO_LAUNCH};
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
    /// `--tlog`, `--report`, `--junit`.
    #[command(flatten)]
    pub evidence: EvidenceArgs,
}

/// Sim seconds for the start (the arm settle window, PX4's preflight checks).
const START_TIMEOUT_S: f32 = 60.0;
/// Sim seconds from the last item to touchdown.
const LAND_TIMEOUT_S: f32 = 300.0;
/// Sim seconds from touchdown to PX4's own disarm (it waits ~2 s).
const DISARM_TIMEOUT_S: f32 = 60.0;

/// The flight as steps.
fn flight_program(last_item: Option<u16>, timeout_s: f32) -> (Program<STEPS>, Vec<StepMeta>) {
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
                Wait::mission_complete()
                    .guard(Condition::disarmed())
                    .timeout_s(timeout_s),
            ),
            meta(
                "none",
                "fly the mission",
                format!(
                    "mission_complete (PX4 reports item {} reached), failing if it disarms \
                     first (timeout {timeout_s} s)",
                    last_item.map_or("none".into(), |l| l.to_string())
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

/// The flight's verdict: the program's failure, else every reason the plan was not flown (not
/// just the first), with how many of its `n` items were.
fn judge(
    flight: &Flight,
    end: ProgramEnd,
    meta: &[StepMeta],
    last_item: Option<u16>,
    unreachable: usize,
    n: usize,
) -> Result<ProgramEnd, String> {
    let flown = flight.log.items_flown();
    match flight.log.failure(end, meta) {
        Some(why) => Err(format!("{why} ({flown} of {n} items flown)")),
        None => {
            let mut not_flown = Vec::new();
            if !flight.log.mission_complete() {
                not_flown.push(
                    "PX4 never reported the mission's last reachable item reached".to_string(),
                );
            }
            if !flight.log.airborne() {
                not_flown.push(
                    "PX4 reported the mission complete, but the vehicle never left the \
                     ground"
                        .to_string(),
                );
            }
            if unreachable > 0 {
                not_flown.push(format!(
                    "{unreachable} of the plan's {n} items come after {} and are never \
                     flown",
                    match last_item {
                        Some(l) => format!("item {l}, the last one PX4 flies,"),
                        None => "the first RTL".to_string(),
                    }
                ));
            }
            if not_flown.is_empty() {
                Ok(end)
            } else {
                Err(format!(
                    "{} ({flown} of {n} items flown)",
                    not_flown.join("; ")
                ))
            }
        }
    }
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
    // The airframe: --model, else the plan's vehicleType (an attached vehicle is what it is).
    let mut vehicle = args.vehicle.clone();
    let mut airframe_line = None;
    if vehicle.connect.is_none() {
        match super::airframe::choose(vehicle.model, None, Some((&args.plan, &*plan.plan))) {
            Ok(c) => {
                if c.source != super::airframe::Source::Default {
                    airframe_line = Some(format!("airframe: {}", c.words()));
                }
                vehicle.model = Some(c.model);
            }
            Err(e) => {
                eprintln!("nexus fly: {e}");
                return exit(EXIT_SETUP);
            }
        }
    }
    let timeout_ok = super::limits::duration_s("--timeout-s", args.timeout_s as f64);
    if !(timeout_ok.is_ok() && args.timeout_s > 0.0) {
        eprintln!(
            "nexus fly: --timeout-s must be a positive number of sim seconds, at most {:e}",
            super::limits::MAX_DURATION_S
        );
        return exit(EXIT_SETUP);
    }
    let files = vec![Named::input("the plan", &args.plan)];
    if let Err(e) = super::vehicle::before_recorded_flight(
        files,
        &vehicle,
        args.json.as_deref(),
        &args.evidence,
    ) {
        eprintln!("nexus fly: {e}");
        return exit(EXIT_SETUP);
    }
    let items = &plan.plan.items;
    let last_item = last_reachable(items);
    let unreachable = unreachable_items(items);
    let ends_in_rtl = items
        .last()
        .is_some_and(|i| i.command == NAV_RETURN_TO_LAUNCH);
    if last_item.is_none() {
        // PX4 never reports an RTL item reached: such a mission could never be seen complete.
        eprintln!(
            "nexus fly: {}: the plan starts with an RTL, so PX4 reports no item of it reached: \
             nothing to fly",
            args.plan.display()
        );
        return exit(EXIT_SETUP);
    }
    out.line(&format!(
        "nexus fly: {} ({} items) at ×{}",
        args.plan.display(),
        items.len(),
        args.vehicle.speed
    ));
    if let Some(line) = &airframe_line {
        out.line(line);
    }
    let mut report = Report::new(
        "fly",
        args.plan.display().to_string(),
        None,
        vehicle.report(),
        4,
    );
    let tlog = match args.evidence.open_tlog() {
        Ok(t) => t,
        Err(e) => {
            eprintln!("nexus fly: {e}");
            return exit(EXIT_SETUP);
        }
    };
    let cmd = Invocation {
        name: "nexus fly",
        out: &out,
        evidence: &args.evidence,
    };
    // Every `fly` uploads a mission, arms and starts it.
    let (mut flight, _interrupts) = match cmd.start(
        &vehicle,
        Some("it uploads a mission, arms the vehicle and starts it".into()),
        tlog.clone(),
        &mut report,
        items.len(),
        true,
    ) {
        Ok(f) => f,
        Err(code) => return code,
    };
    let (program, meta) = flight_program(last_item, args.timeout_s);
    let outcome = match flight.upload(&plan) {
        Err(e) => Err(format!("mission upload failed: {e}")),
        Ok(()) => {
            let end = flight.run(program, &meta);
            judge(&flight, end, &meta, last_item, unreachable, items.len())
        }
    };
    flight.view.finish();
    let outcome = outcome.map(|_| {
        let rtl = if ends_in_rtl {
            ", then the final RTL"
        } else {
            ""
        };
        format!(
            "mission complete: {} items flown of {}{rtl}, landed and disarmed after {:.1} s sim \
             ({})",
            flight.log.items_flown(),
            items.len(),
            flight.log.sim_s_at_end(),
            flight.log.wall_text()
        )
    });
    cmd.fill(&mut report, &mut flight, &meta, Some(&plan), tlog.as_ref());
    cmd.finish(report, outcome, Some(&flight))
}
