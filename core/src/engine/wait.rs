//! A wait as written: one condition, its timeout, `hold_s`, guards and reactions.

use super::condition::{finite_nonneg, Cond, Condition, Op};
use super::error::SpecError;
use super::result::Reaction;
use super::MAX_GUARDS;
use crate::mode::Mode;
use crate::rc::RcSticks;
use crate::time::secs_to_ms;
use heapless::Vec;

/// What to do in the tick the condition is met (`then_rc`, `then_mode`,
/// `then_speedup`). Never done on timeout, guard, cap, died, closed or aborted.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Reactions {
    /// Stream these sticks.
    pub rc: Option<RcSticks>,
    /// Request this mode.
    pub mode: Option<Mode>,
    /// Set the simulator's speed factor.
    pub speedup: Option<f32>,
}

impl Reactions {
    /// No reaction.
    pub const NONE: Reactions = Reactions {
        rc: None,
        mode: None,
        speedup: None,
    };

    /// Take the next reaction to emit, in the order rc, mode, speedup (sticks first, so a
    /// manual mode finds its stick stream already flowing).
    #[inline(never)] // polled from several places: one copy
    pub(crate) fn take_next(&mut self) -> Option<Reaction> {
        if let Some(rc) = self.rc.take() {
            return Some(Reaction::Rc(rc));
        }
        if let Some(m) = self.mode.take() {
            return Some(Reaction::Mode(m));
        }
        self.speedup.take().map(Reaction::Speedup)
    }
}

/// A wait spec: `Wait::altitude_m(5.0).op(Op::Ge).timeout_s(60.0).hold_s(2.0).then_mode(Mode::Hold)`.
///
/// Builders never fail: the first mistake is kept and returned by [`Wait::validate`] and at
/// registration. `timeout_s` (sim seconds) is required: every wait must end.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[must_use = "a Wait does nothing until a wait API takes it"]
pub struct Wait {
    condition: Condition,
    timeout_s: Option<f32>,
    hold_s: f32,
    guards: Vec<Condition, MAX_GUARDS>,
    reactions: Reactions,
    defect: Option<SpecError>,
}

impl Wait {
    /// Wait until `condition` holds.
    pub fn until(condition: Condition) -> Self {
        Wait {
            condition,
            timeout_s: None,
            hold_s: 0.0,
            guards: Vec::new(),
            reactions: Reactions::NONE,
            defect: None,
        }
    }

    /// [`Condition::altitude_m`].
    pub fn altitude_m(m: f32) -> Self {
        Self::until(Condition::altitude_m(m))
    }
    /// [`Condition::airspeed_m_s`].
    pub fn airspeed_m_s(m_s: f32) -> Self {
        Self::until(Condition::airspeed_m_s(m_s))
    }
    /// [`Condition::waypoint`].
    pub fn waypoint(seq: u16) -> Self {
        Self::until(Condition::waypoint(seq))
    }
    /// [`Condition::sim_time_s`].
    pub fn sim_time_s(s: f32) -> Self {
        Self::until(Condition::sim_time_s(s))
    }
    /// [`Condition::time_s`].
    pub fn time_s(s: f32) -> Self {
        Self::until(Condition::time_s(s))
    }
    /// [`Condition::mode`].
    pub fn mode(mode: Mode) -> Self {
        Self::until(Condition::mode(mode))
    }
    /// [`Condition::mode_named`].
    pub fn mode_named(name: &str) -> Self {
        Self::until(Condition::mode_named(name))
    }
    /// [`Condition::text`].
    pub fn text(needle: &str) -> Self {
        Self::until(Condition::text(needle))
    }
    /// [`Condition::armed`].
    pub fn armed() -> Self {
        Self::until(Condition::armed())
    }
    /// [`Condition::disarmed`].
    pub fn disarmed() -> Self {
        Self::until(Condition::disarmed())
    }
    /// [`Condition::landed`].
    pub fn landed() -> Self {
        Self::until(Condition::landed())
    }

    /// Until PX4 reports item `seq` reached in this mission run ([`Condition::reached`]).
    pub fn reached(seq: u16) -> Self {
        Self::until(Condition::reached(seq))
    }

    /// Until PX4 reports the mission complete in this run ([`Condition::mission_complete`]).
    pub fn mission_complete() -> Self {
        Self::until(Condition::mission_complete())
    }

    /// [`Condition::op`] on the main condition.
    pub fn op(mut self, op: Op) -> Self {
        self.condition = self.condition.op(op);
        self
    }
    /// [`Condition::within`] on the main condition.
    pub fn within(mut self, tol: f32) -> Self {
        self.condition = self.condition.within(tol);
        self
    }
    /// [`Condition::since_seq`] on the main condition.
    pub fn since_seq(mut self, since_seq: u32) -> Self {
        self.condition = self.condition.since_seq(since_seq);
        self
    }
    /// [`Condition::relative`] on the main condition.
    pub fn relative(mut self) -> Self {
        self.condition = self.condition.relative();
        self
    }

    /// Give up after `s` sim seconds (required; 0 times out at once unless already met).
    pub fn timeout_s(mut self, s: f32) -> Self {
        self.timeout_s = Some(s);
        self
    }

    /// The condition must hold continuously for `s` sim seconds; any violation restarts the
    /// clock. Must be below `timeout_s`; not for `text`.
    pub fn hold_s(mut self, s: f32) -> Self {
        self.hold_s = s;
        self
    }

    /// End the wait early, with [`super::Reason::Guard`] and this guard's index, if `condition`
    /// holds first (e.g. "fail if disarmed" while waiting for a waypoint). At most
    /// [`MAX_GUARDS`]; guards are checked in the order given, after the main condition
    /// (met wins in the same tick) and before the timeout.
    pub fn guard(mut self, condition: Condition) -> Self {
        if self.guards.push(condition).is_err() {
            self.defect.get_or_insert(SpecError::TooManyGuards);
        }
        self
    }

    /// Stream `sticks` in the tick the condition is met.
    pub fn then_rc(mut self, sticks: RcSticks) -> Self {
        self.reactions.rc = Some(sticks);
        self
    }
    /// Request `mode` in the tick the condition is met.
    pub fn then_mode(mut self, mode: Mode) -> Self {
        self.reactions.mode = Some(mode);
        self
    }
    /// Set the simulator's speed factor (finite, > 0) in the tick the condition is met.
    pub fn then_speedup(mut self, factor: f32) -> Self {
        self.reactions.speedup = Some(factor);
        self
    }

    /// The main condition.
    pub fn condition(&self) -> &Condition {
        &self.condition
    }
    /// The guards, in order.
    pub fn guards(&self) -> &[Condition] {
        &self.guards
    }
    /// The timeout, sim seconds, if set.
    pub fn timeout(&self) -> Option<f32> {
        self.timeout_s
    }
    /// The reactions.
    pub fn reactions(&self) -> &Reactions {
        &self.reactions
    }

    /// Check the spec without registering it.
    pub fn validate(&self) -> Result<(), SpecError> {
        self.compile(0).map(|_| ())
    }

    pub(crate) fn compile(&self, last_seq: u32) -> Result<Compiled, SpecError> {
        if let Some(e) = self.defect {
            return Err(e);
        }
        // The main condition first, then the guards: one compile site serves them all.
        let mut cond = None;
        let mut guards: Vec<Cond, MAX_GUARDS> = Vec::new();
        for i in 0..=self.guards.len() {
            // Index 0 the main condition, i the guard i - 1 (a chained iterator costs more).
            let c = match i.checked_sub(1) {
                None => Some(&self.condition),
                Some(g) => self.guards.get(g),
            };
            if let Some(c) = c {
                let c = c.compile(last_seq)?;
                if i == 0 {
                    cond = Some(c);
                } else {
                    // Cannot overflow: same capacity.
                    let _ = guards.push(c);
                }
            }
        }
        // Always compiled above (index 0); the error only keeps this panic-free.
        let cond = cond.ok_or(SpecError::MissingTimeout)?;
        let timeout_s = self.timeout_s.ok_or(SpecError::MissingTimeout)?;
        if !finite_nonneg(timeout_s) {
            return Err(SpecError::BadValue { field: "timeout_s" });
        }
        if !finite_nonneg(self.hold_s) {
            return Err(SpecError::BadValue { field: "hold_s" });
        }
        let timeout_ms = secs_to_ms(timeout_s);
        let hold_ms = secs_to_ms(self.hold_s);
        if self.hold_s > 0.0 {
            if cond.text_cursor().is_some() {
                return Err(SpecError::HoldNotApplicable(self.condition.kind()));
            }
            if self.hold_s >= timeout_s || hold_ms >= timeout_ms {
                return Err(SpecError::HoldNotShorterThanTimeout);
            }
        }
        if let Some(f) = self.reactions.speedup {
            if !f.is_finite() || f <= 0.0 {
                return Err(SpecError::BadValue {
                    field: "then_speedup",
                });
            }
        }
        let relative = cond.is_relative() || guards.iter().any(Cond::is_relative);
        let deps = guards.iter().fold(cond.deps(), |d, g| d | g.deps());
        Ok(Compiled {
            deps,
            cond,
            guards,
            hold_ms,
            timeout_ms,
            reactions: self.reactions,
            relative,
        })
    }
}

/// A checked wait, thresholds in ms.
#[derive(Debug, Clone)]
pub(crate) struct Compiled {
    pub cond: Cond,
    pub guards: Vec<Cond, MAX_GUARDS>,
    pub hold_ms: u64,
    pub timeout_ms: u64,
    pub reactions: Reactions,
    /// Some condition is a relative sim_time (it needs a reference tick).
    pub relative: bool,
    /// Union of the conditions' [`Cond::deps`].
    pub deps: super::condition::dep::Deps,
}
