//! Step programs: a bounded list of steps, each an action and an `until` wait, run one after
//! another on an [`Engine`].
//!
//! The runner stores no callbacks. The driver passes its [`Actuator`] into the calls that may
//! start a step ([`ProgramRunner::start`], [`ProgramRunner::on_settled`]); the runner applies
//! the step's action through it, then registers the step's wait on the engine. The driver
//! feeds every `Settled` event it polls from the engine to [`ProgramRunner::on_settled`],
//! after applying the reactions that came before it; the runner records the step's
//! [`WaitResult`] and moves on, stops, or finishes.

use super::engine::Engine;
use super::error::{EngineError, SpecError};
use super::result::{Reason, SnapshotAt, WaitId, WaitResult};
use super::wait::Wait;
use crate::action::Action;
use crate::mission::MissionProgress;
use crate::telemetry::{Snapshot, Telemetry, MAX_ERROR_LEN};
use crate::time::Instant;
use core::fmt::{self, Write};
use heapless::{String, Vec};

/// What a step does when its wait times out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum OnTimeout {
    /// End the program ([`ProgramEnd::Stopped`]).
    #[default]
    Stop,
    /// Record the timeout and start the next step.
    Continue,
}

/// One step: do `action`, then wait `until` (its `timeout_s` is the step's timeout).
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Step {
    /// What to do when the step starts ([`Action::None`]: nothing).
    pub action: Action,
    /// What to wait for. A relative `sim_time` counts from the step's start tick.
    pub until: Wait,
    /// What a timeout does.
    pub on_timeout: OnTimeout,
}

impl Step {
    /// Do `action`, then wait `until`; stops the program on timeout.
    pub fn new(action: Action, until: Wait) -> Self {
        Step {
            action,
            until,
            on_timeout: OnTimeout::Stop,
        }
    }

    /// Do `action` and go on at once (the wait is `time_s(0)`, met as soon as the sim clock
    /// is known).
    pub fn action_only(action: Action) -> Self {
        Self::new(action, Wait::time_s(0.0).timeout_s(0.0))
    }

    /// Set the step's timeout, sim seconds (the `until` wait's `timeout_s`).
    pub fn timeout_s(mut self, s: f32) -> Self {
        self.until = self.until.timeout_s(s);
        self
    }

    /// Set what a timeout does.
    pub fn on_timeout(mut self, on_timeout: OnTimeout) -> Self {
        self.on_timeout = on_timeout;
        self
    }
}

/// Why a program was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive] // more causes will come; match with a `_` arm
pub enum ProgramError {
    /// More steps than the program's capacity.
    Full,
    /// A step's wait is invalid.
    Spec {
        /// Step index.
        step: usize,
        /// What is wrong.
        error: SpecError,
    },
    /// A program is already running on this runner.
    AlreadyRunning,
    /// No program is running.
    NotRunning,
}

impl fmt::Display for ProgramError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProgramError::Full => f.write_str("program full"),
            ProgramError::Spec { step, error } => write!(f, "step {step}: {error}"),
            ProgramError::AlreadyRunning => f.write_str("a program is already running"),
            ProgramError::NotRunning => f.write_str("no program is running"),
        }
    }
}

/// Up to `S` steps.
#[derive(Debug, Clone, PartialEq, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Program<const S: usize> {
    steps: Vec<Step, S>,
}

impl<const S: usize> Program<S> {
    /// No steps.
    pub const fn new() -> Self {
        Program { steps: Vec::new() }
    }

    /// Append a step; [`ProgramError::Full`] past `S`.
    pub fn push(&mut self, step: Step) -> Result<(), ProgramError> {
        self.steps.push(step).map_err(|_| ProgramError::Full)
    }

    /// Builder form of [`Program::push`].
    pub fn then(mut self, step: Step) -> Result<Self, ProgramError> {
        self.push(step)?;
        Ok(self)
    }

    /// The steps.
    pub fn steps(&self) -> &[Step] {
        &self.steps
    }

    /// Check every step's wait.
    pub fn validate(&self) -> Result<(), ProgramError> {
        for (step, s) in self.steps.iter().enumerate() {
            s.until
                .validate()
                .map_err(|error| ProgramError::Spec { step, error })?;
        }
        Ok(())
    }
}

/// Carries out step actions for the runner (the driver's offboard machine, plus the
/// simulator's speed for [`Action::Speedup`]).
pub trait Actuator {
    /// Why an action could not be applied; named in the program's error.
    type Error: fmt::Display;

    /// Apply `action` now.
    fn apply(&mut self, now: Instant, action: &Action) -> Result<(), Self::Error>;

    /// The mission progress the engine must read after the last action (a mission start or
    /// upload begins a new run), handed to the engine before the step's wait is registered;
    /// `None` (the default): the actuator keeps no mission, the engine's input stays as is.
    fn mission_progress(&self) -> Option<Option<MissionProgress>> {
        None
    }

    /// Whether the vehicle is at the target of the last action, handed to the engine with the
    /// mission progress (a goto moves the target, so a value from before it must not count);
    /// `None` (the default): the engine's input stays as is.
    #[cfg(feature = "extra-conditions")]
    fn at_target(&self) -> Option<bool> {
        None
    }
}

/// One step's outcome.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct StepRecord {
    /// How the step's wait ended.
    pub result: WaitResult,
    /// Whether the step passed (its condition was met).
    pub passed: bool,
}

/// How a program ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum ProgramEnd {
    /// Every step ran (some may have timed out with [`OnTimeout::Continue`]).
    Completed,
    /// Step `step` timed out with [`OnTimeout::Stop`], or one of its guards fired.
    Stopped {
        /// Step index.
        step: usize,
    },
    /// The vehicle or link died during step `step`.
    Died {
        /// Step index.
        step: usize,
    },
    /// Aborted during step `step`: [`ProgramRunner::abort`], the session closing, or an
    /// internal error (an action that failed, a full engine); the program's error names it.
    Aborted {
        /// Step index.
        step: usize,
    },
}

/// Where a runner is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum ProgramState {
    /// Nothing started.
    Idle,
    /// Waiting on step `step`.
    Running {
        /// Step index.
        step: usize,
    },
    /// Ended.
    Finished(ProgramEnd),
}

/// What a runner call did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Progress {
    /// The settled wait was not this program's current step.
    NotOurs,
    /// Now waiting on step `step`.
    Running {
        /// Step index.
        step: usize,
    },
    /// The program ended.
    Finished(ProgramEnd),
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Run {
    Idle,
    Running {
        step: usize,
        wait: WaitId,
        abort_requested: bool,
    },
    Finished(ProgramEnd),
}

/// Runs one [`Program`] of up to `S` steps at a time on an [`Engine`].
#[derive(Debug, Clone)]
pub struct ProgramRunner<const S: usize> {
    program: Program<S>,
    run: Run,
    records: Vec<StepRecord, S>,
    error: Option<String<MAX_ERROR_LEN>>,
}

impl<const S: usize> Default for ProgramRunner<S> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const S: usize> ProgramRunner<S> {
    /// An idle runner.
    pub const fn new() -> Self {
        ProgramRunner {
            program: Program::new(),
            run: Run::Idle,
            records: Vec::new(),
            error: None,
        }
    }

    /// Validate and start `program`: apply step 0's action and register its wait. A relative
    /// `sim_time` in step 0 counts from now (or the first sim time, if not known yet).
    pub fn start<const N: usize, const T: usize, A: Actuator>(
        &mut self,
        now: Instant,
        tel: &Telemetry<T>,
        engine: &mut Engine<N>,
        act: &mut A,
        program: Program<S>,
    ) -> Result<Progress, ProgramError> {
        if matches!(self.run, Run::Running { .. }) {
            return Err(ProgramError::AlreadyRunning);
        }
        program.validate()?;
        self.program = program;
        self.records.clear();
        self.error = None;
        Ok(self.begin(0, now, tel, engine, act, tel.sim_ms()))
    }

    /// Feed a `Settled` event polled from the engine. If it is the current step's wait, the
    /// step is recorded and the program moves on (applying the next action), stops or ends.
    #[allow(clippy::too_many_arguments)]
    pub fn on_settled<const N: usize, const T: usize, A: Actuator>(
        &mut self,
        now: Instant,
        tel: &Telemetry<T>,
        engine: &mut Engine<N>,
        act: &mut A,
        id: WaitId,
        result: &WaitResult,
    ) -> Progress {
        let Run::Running {
            step,
            wait,
            abort_requested,
        } = self.run
        else {
            return Progress::NotOurs;
        };
        if wait != id {
            return Progress::NotOurs;
        }
        self.record(result.clone());
        if abort_requested {
            return self.finish(ProgramEnd::Aborted { step }, format_args!("aborted"));
        }
        let on_timeout = self.program.steps[step].on_timeout;
        match result.reason {
            Reason::Met => self.begin(step + 1, now, tel, engine, act, result.snapshot.sim_ms),
            Reason::Timeout if on_timeout == OnTimeout::Continue => {
                self.begin(step + 1, now, tel, engine, act, result.snapshot.sim_ms)
            }
            Reason::Timeout => self.finish(
                ProgramEnd::Stopped { step },
                format_args!("step {step}: timeout"),
            ),
            Reason::Guard => self.finish(
                ProgramEnd::Stopped { step },
                format_args!("step {step}: guard {} fired", result.guard.unwrap_or(0)),
            ),
            Reason::Died => self.finish(
                ProgramEnd::Died { step },
                format_args!("{}", error_of(&result.snapshot, "died")),
            ),
            Reason::Aborted | Reason::Closed | Reason::Cap => self.finish(
                ProgramEnd::Aborted { step },
                format_args!("{}", error_of(&result.snapshot, "aborted")),
            ),
        }
    }

    /// Abort the running program: its step's wait ends with [`Reason::Aborted`] and the
    /// program with [`ProgramEnd::Aborted`]. If the step's wait has already settled but its
    /// event has not been fed back yet, the program ends when it is.
    pub fn abort<const N: usize, const T: usize>(
        &mut self,
        now: Instant,
        tel: &Telemetry<T>,
        engine: &mut Engine<N>,
    ) -> Result<Progress, ProgramError> {
        let Run::Running { step, wait, .. } = self.run else {
            return Err(ProgramError::NotRunning);
        };
        let taken = match engine.abort(now, tel, wait) {
            Ok(()) => engine.take_settled(wait),
            Err(e) => Err(e),
        };
        match taken {
            Ok(result) => {
                self.record(result);
                Ok(self.finish(ProgramEnd::Aborted { step }, format_args!("aborted")))
            }
            Err(EngineError::NotPending) => {
                self.run = Run::Running {
                    step,
                    wait,
                    abort_requested: true,
                };
                Ok(Progress::Running { step })
            }
            Err(_) => Ok(self.fail_now(step, now, tel, format_args!("aborted"))),
        }
    }

    /// Where the runner is.
    pub fn state(&self) -> ProgramState {
        match self.run {
            Run::Idle => ProgramState::Idle,
            Run::Running { step, .. } => ProgramState::Running { step },
            Run::Finished(end) => ProgramState::Finished(end),
        }
    }

    /// The current step's wait, while running.
    pub fn current_wait(&self) -> Option<WaitId> {
        match self.run {
            Run::Running { wait, .. } => Some(wait),
            _ => None,
        }
    }

    /// Each step's outcome so far, in order (steps never reached are absent).
    pub fn records(&self) -> &[StepRecord] {
        &self.records
    }

    /// Why the program did not complete: the failed action, `"aborted"`, the died error, …
    pub fn error(&self) -> Option<&str> {
        self.error.as_deref()
    }

    /// Whether the program completed with every step passed.
    pub fn passed(&self) -> bool {
        self.run == Run::Finished(ProgramEnd::Completed) && self.records.iter().all(|r| r.passed)
    }

    /// The program loaded by the last [`ProgramRunner::start`].
    pub fn program(&self) -> &Program<S> {
        &self.program
    }

    fn begin<const N: usize, const T: usize, A: Actuator>(
        &mut self,
        step: usize,
        now: Instant,
        tel: &Telemetry<T>,
        engine: &mut Engine<N>,
        act: &mut A,
        base_ms: Option<u64>,
    ) -> Progress {
        let Some(s) = self.program.steps.get(step) else {
            self.run = Run::Finished(ProgramEnd::Completed);
            return Progress::Finished(ProgramEnd::Completed);
        };
        // Check for room first, so a full engine never leaves an action applied without its wait
        // (the wait itself was validated at start and cannot be refused otherwise).
        if engine.free_slots() == 0 {
            return self.fail_now(
                step,
                now,
                tel,
                format_args!("step {step}: {}", EngineError::Full),
            );
        }
        if s.action != Action::None {
            if let Err(e) = act.apply(now, &s.action) {
                return self.fail_now(
                    step,
                    now,
                    tel,
                    format_args!("step {step}: action failed: {e}"),
                );
            }
            if let Some(progress) = act.mission_progress() {
                engine.set_mission_progress(progress);
            }
            #[cfg(feature = "extra-conditions")]
            if let Some(at) = act.at_target() {
                engine.set_at_target(Some(at));
            }
        }
        match engine.register_step(now, tel, &s.until, base_ms) {
            Ok(wait) => {
                self.run = Run::Running {
                    step,
                    wait,
                    abort_requested: false,
                };
                Progress::Running { step }
            }
            Err(e) => self.fail_now(step, now, tel, format_args!("step {step}: {e}")),
        }
    }

    /// End at `step` without a wait result from the engine: record an aborted result whose
    /// snapshot carries the error.
    fn fail_now<const T: usize>(
        &mut self,
        step: usize,
        _now: Instant,
        tel: &Telemetry<T>,
        why: fmt::Arguments<'_>,
    ) -> Progress {
        let mut msg: String<MAX_ERROR_LEN> = String::new();
        let _ = msg.write_fmt(why);
        self.record(WaitResult {
            satisfied: false,
            reason: Reason::Aborted,
            waited_sim_s: 0.0,
            waited_wall: crate::time::Duration::from_micros(0),
            snapshot_at: SnapshotAt::Settle,
            snapshot: tel.snapshot(Some(&msg)),
            guard: None,
        });
        self.finish(ProgramEnd::Aborted { step }, format_args!("{msg}"))
    }

    fn record(&mut self, result: WaitResult) {
        let passed = result.satisfied;
        // One record per step and at most S steps: cannot overflow.
        let _ = self.records.push(StepRecord { result, passed });
    }

    fn finish(&mut self, end: ProgramEnd, why: fmt::Arguments<'_>) -> Progress {
        if end != ProgramEnd::Completed {
            let mut msg = String::new();
            let _ = msg.write_fmt(why);
            self.error = Some(msg);
        }
        self.run = Run::Finished(end);
        Progress::Finished(end)
    }
}

fn error_of<'a>(snapshot: &'a Snapshot, default: &'a str) -> &'a str {
    snapshot.error.as_deref().unwrap_or(default)
}
/// So `?` converts it into `Box<dyn Error>` and other error types.
impl core::error::Error for ProgramError {}
