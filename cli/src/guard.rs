//! The `--real-vehicle` guard: what a compiled program can make a vehicle do.
//!
//! On a vehicle that does not identify as a simulator ([`super::vehicle`]), a program is
//! refused unless `--real-vehicle` is given when anything it can send could arm the vehicle,
//! move it, or change its configuration. The guard judges the compiled program — each step's
//! [`Action`] and the reactions of its wait ([`Reactions`]) — never the names of actions as
//! written: the stick gesture (`rc` with throttle down and yaw right) arms as surely as `arm`.
//!
//! What counts, and why (docs/px4.md, "A real vehicle is not a simulator", has the same table):
//!
//! * arm, arm by gesture, takeoff, goto, mission start and resume, Offboard setpoints, RTL:
//!   each arms or moves the vehicle;
//! * sticks (`rc`, `then_rc`): any stick stream arms by the gesture, and flies the vehicle in
//!   a manual mode;
//! * a mode (`mode`, `then_mode`) other than Hold and Land: a manual mode starts a stick
//!   stream (a throttle of 0.5 lifts an armed vehicle in Manual), an autonomous one (Mission,
//!   Takeoff, RTL, Offboard, …) flies an armed vehicle somewhere;
//! * a mission upload: PX4 flies a mission replaced under a vehicle flying one;
//! * a parameter set: configuration outlives the program (disarmed PWM outputs that spin
//!   motors, circuit breakers that skip the arming checks, failsafe actions);
//! * a failure injection (`inject_failure`): PX4's failsafe then flies the vehicle (Hold, Land,
//!   RTL), a motor failure brings it down.
//!
//! Allowed without it: waiting, Hold and Land (the modes and the actions, `pause`,
//! `stop_offboard`: they stop a flying vehicle or bring it down, and do nothing to one on the
//! ground), disarm (never forced: PX4 refuses it in the air), `stop_rc`, `verify_mission` (a
//! download), `speedup` / `then_speedup` (the simulator's clock; a note on an attached
//! vehicle). A program has no raw-message or raw-command action (that is the Rust API's
//! `send_message`, outside programs).

use nexus_core::action::Action;
use nexus_core::engine::{Program, Reactions};
use nexus_core::Mode;

/// The first thing in a program that can arm, move or reconfigure the vehicle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Moves {
    /// The step (0-based).
    pub step: usize,
    /// What in it.
    pub part: Part,
    /// What that does to the vehicle, in words ("arms it").
    pub why: &'static str,
}

/// Which part of a step can move the vehicle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// The step's action.
    Action,
    /// Its wait's `then_rc` reaction.
    ThenRc,
    /// Its wait's `then_mode` reaction.
    ThenMode,
}

impl Part {
    /// The part in words: "its action", "its then_rc reaction", "its then_mode reaction".
    pub fn words(self) -> &'static str {
        match self {
            Part::Action => "its action",
            Part::ThenRc => "its then_rc reaction",
            Part::ThenMode => "its then_mode reaction",
        }
    }
}

/// Whether requesting `mode` can move the vehicle: every mode but Hold and Land, which stop a
/// flying vehicle or bring it down and do nothing to one on the ground.
pub fn mode_moves(mode: Mode) -> bool {
    !matches!(mode, Mode::Hold | Mode::Land)
}

/// What `action` can do to the vehicle that needs `--real-vehicle`, in words; `None` when it
/// cannot arm, move or reconfigure it. Every action is named here; `Action` is
/// `#[non_exhaustive]`, so one this match does not name is treated as moving the vehicle.
pub fn action_moves(action: &Action) -> Option<&'static str> {
    match action {
        Action::Arm => Some("arms it"),
        Action::ArmGesture => Some("arms it by the stick gesture"),
        Action::Takeoff { .. } => Some("arms it and takes off"),
        Action::Goto { .. } => Some("flies it to a point"),
        Action::StartMission => Some("arms it and starts a mission"),
        Action::ResumeMission => Some("flies the mission again (Mission mode)"),
        Action::ReturnToLaunch => Some("flies it home (RTL)"),
        Action::Rc(_) => Some(STICKS),
        Action::Offboard(_) => Some("streams an Offboard setpoint and requests Offboard mode"),
        Action::SetMode(m) if mode_moves(*m) => Some(MODE),
        Action::UploadMission => {
            Some("replaces its mission (PX4 flies a mission replaced under it)")
        }
        Action::ParamReal { .. } | Action::ParamInt { .. } => {
            Some("changes a parameter (its configuration outlives the program)")
        }
        Action::InjectFailure { .. } => {
            Some("injects a failure (PX4's failsafe flies the vehicle: Hold, Land, RTL)")
        }
        Action::VtolTransition { .. } => {
            Some("changes how it flies (a VTOL transition: hover or wing-borne flight)")
        }
        Action::SetMode(_)
        | Action::None
        | Action::Disarm
        | Action::Land
        | Action::Hold
        | Action::StopRc
        | Action::VerifyMission
        | Action::PauseMission
        | Action::Speedup(_) => None,
        Action::StopOffboard => None,
        _ => Some("does something this build cannot judge harmless"),
    }
}

/// Sticks, in words.
const STICKS: &str = "streams sticks, which arm it by the gesture and fly it in a manual mode";
/// A mode that moves, in words.
const MODE: &str = "requests a mode other than Hold or Land (a manual mode streams sticks, an \
                    autonomous one flies an armed vehicle)";

/// What a wait's reactions can do to the vehicle that needs `--real-vehicle`: the reaction
/// and why; `None` when they cannot (`then_speedup` alone, `then_mode` Hold or Land).
pub fn reactions_move(r: &Reactions) -> Option<(Part, &'static str)> {
    if r.rc.is_some() {
        return Some((Part::ThenRc, STICKS));
    }
    match r.mode {
        Some(m) if mode_moves(m) => Some((Part::ThenMode, MODE)),
        _ => None,
    }
}

/// The first step of `program` whose action or reactions can arm, move or reconfigure the
/// vehicle; `None` when nothing in it can.
pub fn program_moves<const S: usize>(program: &Program<S>) -> Option<Moves> {
    program.steps().iter().enumerate().find_map(|(step, s)| {
        if let Some(why) = action_moves(&s.action) {
            return Some(Moves {
                step,
                part: Part::Action,
                why,
            });
        }
        reactions_move(s.until.reactions()).map(|(part, why)| Moves { step, part, why })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use nexus_core::engine::{Condition, Step, Wait};
    use nexus_core::rc::RcSticks;

    fn program(steps: &[Step]) -> Program<8> {
        let mut p = Program::new();
        for s in steps {
            p.push(s.clone()).unwrap();
        }
        p
    }

    fn wait() -> Wait {
        Wait::until(Condition::armed()).timeout_s(10.0)
    }

    #[test]
    fn waiting_holding_landing_and_disarming_need_nothing() {
        let p = program(&[
            Step::new(Action::None, wait()),
            Step::action_only(Action::SetMode(Mode::Hold)),
            Step::action_only(Action::SetMode(Mode::Land)),
            Step::action_only(Action::Land),
            Step::action_only(Action::Hold),
            Step::action_only(Action::Disarm),
            Step::action_only(Action::StopRc),
            Step::new(
                Action::VerifyMission,
                wait().then_speedup(4.0).then_mode(Mode::Hold),
            ),
        ]);
        assert_eq!(program_moves(&p), None);
    }

    #[test]
    fn the_gesture_sticks_and_a_moving_mode_count_whatever_they_are_called() {
        let gesture = RcSticks {
            throttle: 0.0,
            yaw: 1.0,
            ..RcSticks::default()
        };
        let p = program(&[
            Step::action_only(Action::SetMode(Mode::Hold)),
            Step::new(Action::Rc(gesture), wait()),
        ]);
        let m = program_moves(&p).unwrap();
        assert_eq!((m.step, m.part), (1, Part::Action));
        assert!(m.why.contains("gesture"), "{m:?}");
        // A reaction: the step's own action is harmless.
        let p = program(&[Step::new(Action::None, wait().then_rc(gesture))]);
        assert_eq!(program_moves(&p).unwrap().part, Part::ThenRc);
        let p = program(&[Step::new(Action::None, wait().then_mode(Mode::Mission))]);
        assert_eq!(program_moves(&p).unwrap().part, Part::ThenMode);
        for m in [
            Mode::Position,
            Mode::Manual,
            Mode::Offboard,
            Mode::Rtl,
            Mode::Takeoff,
        ] {
            let p = program(&[Step::action_only(Action::SetMode(m))]);
            assert!(program_moves(&p).is_some(), "{m}");
        }
        let setpoint = nexus_core::offboard::Setpoint::PositionNed {
            north_m: 0.0,
            east_m: 0.0,
            down_m: -5.0,
            yaw_rad: None,
        };
        for a in [
            Action::Arm,
            Action::ArmGesture,
            Action::Takeoff { alt_m: 5.0 },
            Action::StartMission,
            Action::ResumeMission,
            Action::ReturnToLaunch,
            Action::UploadMission,
            Action::Offboard(setpoint),
            Action::ParamInt {
                name: nexus_core::action::param_name("COM_ARM_WO_GPS").unwrap(),
                value: 1,
            },
            Action::InjectFailure {
                unit: 100,
                kind: 1,
                instance: 0,
            },
        ] {
            let p = program(&[Step::action_only(a.clone())]);
            assert!(program_moves(&p).is_some(), "{a:?}");
        }
    }
}
