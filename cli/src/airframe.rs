//! Which airframe a flight flies: `--model`, a program's `model`, or a plan's `vehicleType` —
//! and what a program asks that the airframe cannot do.
//!
//! The airframe comes from, in order: `--model`; a program's top-level `model = "vtol"`; the
//! `mission.vehicleType` of the plan flown (`nexus fly`) or uploaded (`nexus run`); else the
//! quadrotor. What is named must agree: a program's `model` is the airframe (exactly), a
//! plan's `vehicleType` a class of them (QGroundControl writes 2 for every multirotor and 20
//! for every VTOL), so `--model hex` flies a plan of type 2 and `--model tailsitter` one of
//! type 20 or 22, while `--model rover` refuses it. A disagreement is an error before
//! anything starts (exit 2), naming both.
//!
//! With the airframe known before the vehicle starts, a program is checked against it: a
//! takeoff or land on a rover, a transition on a vehicle that is no VTOL, are refused as the
//! core refuses them on the vehicle's heartbeat ([`nexus_core::offboard::check_action_for`]);
//! a condition that reads something else on that airframe (`landed` on a rover, `airspeed`
//! on a multicopter) is a note ([`nexus_core::explain::unsuited`]).

use crate::program::ProgramFile;
use nexus_core::engine::{Condition, Program};
use nexus_core::plan::Plan;
use nexus_core::VehicleKind;
use nexus_host::launcher::Airframe;
use std::path::Path;

/// The MAV_TYPE PX4's SIH airframe of `a` reports in its HEARTBEAT (its airframe file's
/// `MAV_TYPE`).
pub fn mav_type(a: Airframe) -> u8 {
    match a {
        Airframe::Quad => 2,
        Airframe::Hex => 13,
        Airframe::Airplane => 1,
        Airframe::Tailsitter => 19,
        Airframe::Vtol => 22,
        Airframe::Rover => 10,
        // An airframe this build does not know flies as the default one.
        _ => 2,
    }
}

/// The class of `a`.
pub fn kind(a: Airframe) -> VehicleKind {
    VehicleKind::from_mav_type(mav_type(a))
}

/// The airframe a plan of `vehicleType` `t` is flown on when nothing else names one: the
/// quadrotor for a multirotor (QGroundControl's 2), the hexarotor for 13, the airplane for 1,
/// the tailsitter for 19 and 23, the standard VTOL for the other VTOL types (22, and 20, which
/// QGroundControl writes for every VTOL and PX4's own VTOL test plans carry), the rover for
/// a rover or boat; `None` for a type of no class.
pub fn for_vehicle_type(t: u8) -> Option<Airframe> {
    match (t, VehicleKind::from_mav_type(t)) {
        (13, _) => Some(Airframe::Hex),
        (19 | 23, _) => Some(Airframe::Tailsitter),
        (_, VehicleKind::Multicopter) => Some(Airframe::Quad),
        (_, VehicleKind::FixedWing) => Some(Airframe::Airplane),
        (_, VehicleKind::Vtol) => Some(Airframe::Vtol),
        (_, VehicleKind::Rover) => Some(Airframe::Rover),
        (_, VehicleKind::Other) => None,
    }
}

/// The airframes a plan of `vehicleType` `t` may be flown on, by name.
fn fits(t: u8) -> String {
    let class = VehicleKind::from_mav_type(t);
    let names: Vec<&str> = Airframe::ALL
        .into_iter()
        .filter(|a| kind(*a) == class)
        .map(|a| a.name())
        .collect();
    names.join(" or ")
}

/// Where a flight's airframe came from, for the report's lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// `--model`.
    Flag,
    /// The program's `model`.
    Program,
    /// The plan's `vehicleType`.
    Plan(u8),
    /// Nothing named one: the quadrotor.
    Default,
}

/// The airframe of a flight, and where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Choice {
    /// The airframe.
    pub model: Airframe,
    /// Who named it.
    pub source: Source,
}

impl Choice {
    /// How it was chosen, for a line: "vtol (the plan's vehicleType 22)".
    pub fn words(&self) -> String {
        match self.source {
            Source::Flag => format!("{} (--model)", self.model),
            Source::Program => format!("{} (the program's model)", self.model),
            Source::Plan(t) => format!("{} (the plan's vehicleType {t})", self.model),
            Source::Default => format!("{} (the default)", self.model),
        }
    }
}

/// The airframe of a flight: `flag` (`--model`), else the program's `model`, else the plan's
/// `vehicleType`, else the quadrotor; an error naming both sides when they disagree.
pub fn choose(
    flag: Option<Airframe>,
    program: Option<(&Path, Airframe)>,
    plan: Option<(&Path, &Plan<{ crate::ITEMS }>)>,
) -> Result<Choice, String> {
    let vehicle_type = plan.and_then(|(p, plan)| Some((p, plan.vehicle_type?)));
    if let (Some(f), Some((path, m))) = (flag, program) {
        if f != m {
            return Err(format!(
                "--model {f}, but {} names model \"{m}\": fly it with --model {m}, or change \
                 the program's model",
                path.display()
            ));
        }
    }
    let named = flag
        .map(|m| (m, Source::Flag))
        .or(program.map(|(_, m)| (m, Source::Program)));
    if let (Some((m, source)), Some((path, t))) = (&named, vehicle_type) {
        let class = VehicleKind::from_mav_type(t);
        if class != VehicleKind::Other && kind(*m) != class {
            let who = match source {
                Source::Program => format!("the program's model \"{m}\""),
                _ => format!("--model {m}"),
            };
            return Err(format!(
                "{} is a plan for {class} (vehicleType {t}), and {who} is {}: fly it with \
                 --model {}, or fly another plan",
                path.display(),
                kind(*m),
                fits(t)
            ));
        }
    }
    Ok(
        match (
            named,
            vehicle_type.and_then(|(_, t)| Some((t, for_vehicle_type(t)?))),
        ) {
            (Some((model, source)), _) => Choice { model, source },
            (None, Some((t, model))) => Choice {
                model,
                source: Source::Plan(t),
            },
            (None, None) => Choice {
                model: Airframe::default(),
                source: Source::Default,
            },
        },
    )
}

/// A program's steps checked against airframe `model` before anything flies: the first action
/// PX4 would not carry out there is an error (`Err`, with the step's label); the conditions
/// that read something else there are notes, one line each.
pub fn check_program(
    prog: &ProgramFile,
    program: &Program<{ crate::program::STEPS }>,
    model: Airframe,
) -> Result<Vec<String>, String> {
    let t = mav_type(model);
    let total = prog.steps.len();
    let mut notes = Vec::new();
    for (i, step) in program.steps().iter().enumerate() {
        let label = prog
            .steps
            .get(i)
            .map_or(format!("step {}", i + 1), |s| s.label(i));
        if let Err(e) = nexus_core::offboard::check_action_for(&step.action, t) {
            return Err(format!(
                "{label} of {total} cannot be flown on the {model}: {e}"
            ));
        }
        let mut note = |c: &Condition, role: &str| {
            if let Some(why) = nexus_core::explain::unsuited(c.kind(), kind(model)) {
                notes.push(format!("note: {label}: {role} `{c}` on the {model}: {why}"));
            }
        };
        note(step.until.condition(), "until");
        for g in step.until.guards() {
            note(g, "guard");
        }
    }
    Ok(notes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(t: Option<u8>) -> Plan<{ crate::ITEMS }> {
        Plan {
            home: Default::default(),
            items: Default::default(),
            vehicle_type: t,
        }
    }

    #[test]
    fn every_airframe_reports_its_own_class() {
        for a in Airframe::ALL {
            assert_eq!(for_vehicle_type(mav_type(a)), Some(a), "{a}");
        }
        // QGroundControl's classes.
        assert_eq!(for_vehicle_type(2), Some(Airframe::Quad));
        assert_eq!(for_vehicle_type(20), Some(Airframe::Vtol));
        assert_eq!(for_vehicle_type(23), Some(Airframe::Tailsitter));
        assert_eq!(for_vehicle_type(6), None);
    }

    #[test]
    fn the_flag_then_the_program_then_the_plan_names_the_airframe() {
        let p = Path::new("a.plan");
        let prog = Path::new("a.toml");
        let vtol = plan(Some(22));
        let c = choose(None, None, Some((p, &vtol))).unwrap();
        assert_eq!((c.model, c.source), (Airframe::Vtol, Source::Plan(22)));
        let c = choose(Some(Airframe::Tailsitter), None, Some((p, &vtol))).unwrap();
        assert_eq!((c.model, c.source), (Airframe::Tailsitter, Source::Flag));
        let c = choose(None, Some((prog, Airframe::Tailsitter)), Some((p, &vtol))).unwrap();
        assert_eq!(c.source, Source::Program);
        let c = choose(None, None, Some((p, &plan(None)))).unwrap();
        assert_eq!((c.model, c.source), (Airframe::Quad, Source::Default));
        // A multirotor plan flies on the hexarotor too.
        let c = choose(Some(Airframe::Hex), None, Some((p, &plan(Some(2))))).unwrap();
        assert_eq!(c.model, Airframe::Hex);
        // A type of no class has no say.
        let c = choose(Some(Airframe::Rover), None, Some((p, &plan(Some(0))))).unwrap();
        assert_eq!(c.model, Airframe::Rover);
    }

    #[test]
    fn a_disagreement_names_both_sides() {
        let p = Path::new("box.plan");
        let e = choose(Some(Airframe::Rover), None, Some((p, &plan(Some(2))))).unwrap_err();
        assert_eq!(
            e,
            "box.plan is a plan for a multicopter (vehicleType 2), and --model rover is a \
             rover: fly it with --model quad or hex, or fly another plan"
        );
        let prog = Path::new("t.toml");
        let e = choose(
            Some(Airframe::Vtol),
            Some((prog, Airframe::Tailsitter)),
            None,
        )
        .unwrap_err();
        assert_eq!(
            e,
            "--model vtol, but t.toml names model \"tailsitter\": fly it with --model \
             tailsitter, or change the program's model"
        );
        let e = choose(
            None,
            Some((prog, Airframe::Quad)),
            Some((p, &plan(Some(10)))),
        )
        .unwrap_err();
        assert!(
            e.contains("the program's model \"quad\" is a multicopter"),
            "{e}"
        );
        assert!(e.contains("--model rover"), "{e}");
    }
}
