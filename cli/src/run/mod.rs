//! `nexus run PROGRAM.toml`: run a flight program (see [`super::program`]) and report each
//! step's wait result as it settles.

pub mod multi;

use super::evidence::EvidenceArgs;
use super::exec::StepMeta;
use super::outcome::Invocation;
use super::output::{Named, Out};
use super::program::ProgramFile;
use super::report::Report;
use super::vehicle::VehicleArgs;
use super::{exit, EXIT_OK, EXIT_SETUP};
use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `nexus run`.
#[derive(Debug, Clone, clap::Args)]
pub struct RunArgs {
    /// The flight program (TOML; see docs/cli.md, "Flight programs").
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
    /// ([`multi`]), each on its own instance.
    #[arg(value_name = "MORE")]
    pub more: Vec<PathBuf>,
    /// Programs of the set flown at once (each on its own instance, from `--instance` up).
    #[arg(long, short = 'j', default_value_t = 1, value_name = "N")]
    pub jobs: usize,
    /// Run only part K of N of the set (1-based), split the way nextest partitions tests:
    /// the same on every machine, every program in exactly one part.
    #[arg(long, value_name = "K/N")]
    pub partition: Option<multi::Partition>,
}

/// Run `nexus run`.
pub fn main(args: &RunArgs) -> ExitCode {
    if !args.more.is_empty() || args.partition.is_some() || args.jobs != 1 {
        return multi::main(args);
    }
    let out = Out::new(args.json.as_deref());
    let prog = match ProgramFile::load(&args.program) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("nexus run: {e}");
            return exit(EXIT_SETUP);
        }
    };
    // The airframe: --model, the program's model, its plan's vehicleType; the program checked
    // against it before anything flies. An attached vehicle (--connect) is what it is.
    let mut vehicle = args.vehicle.clone();
    let mut notes = Vec::new();
    let mut airframe_line = None;
    if vehicle.connect.is_none() {
        let chosen = super::airframe::choose(
            vehicle.model,
            prog.model.map(|m| (args.program.as_path(), m)),
            prog.plan.as_ref().map(|p| (p.path.as_path(), &*p.plan)),
        )
        .and_then(|c| {
            notes = super::airframe::check_program(&prog, &prog.to_program(), c.model)?;
            Ok(c)
        });
        match chosen {
            Ok(c) => {
                if c.source != super::airframe::Source::Default {
                    airframe_line = Some(format!("airframe: {}", c.words()));
                }
                vehicle.model = Some(c.model);
            }
            Err(e) => {
                eprintln!("nexus run: {}: {e}", args.program.display());
                return exit(EXIT_SETUP);
            }
        }
    }
    let total = prog.steps.len();
    let meta: Vec<StepMeta> = prog.steps.iter().map(StepMeta::from).collect();
    let title = prog.name.as_deref().unwrap_or("flight program");
    out.line(&format!(
        "nexus run: {} — {title}, {total} steps",
        args.program.display()
    ));
    for line in airframe_line.iter().chain(&notes) {
        out.line(line);
    }
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
    let mut files = vec![Named::input("the program", &args.program)];
    if let Some(plan) = &prog.plan {
        files.push(Named::input("its plan", &plan.path));
    }
    if let Err(e) = super::vehicle::before_recorded_flight(
        files,
        &vehicle,
        args.json.as_deref(),
        &args.evidence,
    ) {
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
        vehicle.report(),
        total,
    );
    // A program that can arm, move or reconfigure the vehicle is refused on a real one
    // without --real-vehicle: judged on the compiled steps and their reactions.
    let program = prog.to_program();
    let moves = super::guard::program_moves(&program).map(|m| {
        let label = meta[m.step].label(m.step, total);
        let what = match m.part {
            super::guard::Part::Action => format!("{label}, `{}`,", meta[m.step].action_text),
            super::guard::Part::ThenRc => format!("the then_rc reaction of {label}"),
            super::guard::Part::ThenMode => format!("the then_mode reaction of {label}"),
        };
        format!("{what} {}", m.why)
    });
    let cmd = Invocation {
        name: "nexus run",
        out: &out,
        evidence: &args.evidence,
    };
    let items = prog.plan.as_ref().map_or(0, |p| p.plan.items.len());
    let (mut flight, _interrupts) =
        match cmd.start(&vehicle, moves, tlog.clone(), &mut report, items, false) {
            Ok(f) => f,
            Err(code) => return code,
        };
    flight.log.events.extend(notes);
    if let Some(plan) = &prog.plan {
        if let Err(e) = flight.lodge(plan) {
            return cmd.finish(report, Err(e), Some(&flight));
        }
    }
    let end = flight.run(program, &meta);
    flight.view.finish();
    let outcome = match flight.log.failure(end, &meta) {
        Some(why) => Err(why),
        None => Ok(format!(
            "all {total} steps met in {:.1} s sim ({})",
            flight.log.sim_s_at_end(),
            flight.log.wall_text()
        )),
    };
    cmd.fill(
        &mut report,
        &mut flight,
        &meta,
        prog.plan.as_ref(),
        tlog.as_ref(),
    );
    cmd.finish(report, outcome, Some(&flight))
}
