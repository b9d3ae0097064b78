//! Why a wait spec, a registration or a program was refused.

use super::condition::ConditionKind;
use super::MAX_NEEDLE_LEN;
use core::fmt;

/// A wait or condition spec that cannot be evaluated as written.
///
/// Builders never fail; the first mistake is remembered and reported here, by
/// [`super::Wait::validate`] or at registration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive] // more causes will come; match with a `_` arm
pub enum SpecError {
    /// No `timeout_s` was given: every wait must end.
    MissingTimeout,
    /// A number is NaN, infinite, or negative where that means nothing.
    BadValue {
        /// Which number (`"value"`, `"within"`, `"timeout_s"`, `"hold_s"`, `"then_speedup"`).
        field: &'static str,
    },
    /// `op` was given to a condition it does not apply to (the condition table).
    OpNotApplicable(ConditionKind),
    /// `within` was given to a non-numeric condition.
    WithinNotApplicable(ConditionKind),
    /// Both `op` and `within` were given: `within` is its own comparison.
    OpWithWithin,
    /// `since_seq` was given to a condition other than `text`.
    SinceSeqNotApplicable(ConditionKind),
    /// `relative` was given to a condition other than `sim_time`.
    RelativeNotApplicable(ConditionKind),
    /// `hold_s` was given to a condition that is an event, not a state (`text`).
    HoldNotApplicable(ConditionKind),
    /// `hold_s` is not shorter than `timeout_s`: the wait could never be met.
    HoldNotShorterThanTimeout,
    /// The text needle is longer than [`MAX_NEEDLE_LEN`] bytes (never silently cut).
    NeedleTooLong {
        /// Length of the needle given, bytes.
        len: usize,
    },
    /// A mode name that [`crate::mode::Mode::from_name`] does not know.
    UnknownMode,
    /// More guards than [`super::MAX_GUARDS`].
    TooManyGuards,
}

impl fmt::Display for SpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SpecError::MissingTimeout => f.write_str("timeout_s is required"),
            SpecError::BadValue { field } => {
                write!(f, "{field} must be a finite number (and not negative)")
            }
            SpecError::OpNotApplicable(k) => write!(f, "op does not apply to {}", k.name()),
            SpecError::WithinNotApplicable(k) => {
                write!(f, "within does not apply to {}", k.name())
            }
            SpecError::OpWithWithin => f.write_str("give either op or within, not both"),
            SpecError::SinceSeqNotApplicable(k) => {
                write!(f, "since_seq does not apply to {}", k.name())
            }
            SpecError::RelativeNotApplicable(k) => {
                write!(f, "relative does not apply to {}", k.name())
            }
            SpecError::HoldNotApplicable(k) => write!(f, "hold_s does not apply to {}", k.name()),
            SpecError::HoldNotShorterThanTimeout => f.write_str("hold_s must be below timeout_s"),
            SpecError::NeedleTooLong { len } => {
                write!(f, "text needle is {len} bytes; at most {MAX_NEEDLE_LEN}")
            }
            SpecError::UnknownMode => write!(f, "{}", crate::mode::UnknownMode),
            SpecError::TooManyGuards => {
                write!(f, "more than {} guards", super::MAX_GUARDS)
            }
        }
    }
}

/// Why the engine refused a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive] // more causes will come; match with a `_` arm
pub enum EngineError {
    /// The wait spec is invalid.
    Spec(SpecError),
    /// Every slot holds a pending wait or an unpolled result.
    Full,
    /// The id is not (or no longer) a wait of this engine: its result was already polled.
    StaleId,
    /// The wait has already settled; its result waits in [`super::Engine::poll_event`].
    NotPending,
    /// A program step's wait cannot be capped (`cap` is for `wait_until` only).
    NotCappable,
    /// A relative `sim_time` wait, but no wait or step on this engine has settled yet.
    NoPreviousSettle,
}

impl From<SpecError> for EngineError {
    fn from(e: SpecError) -> Self {
        EngineError::Spec(e)
    }
}

impl fmt::Display for EngineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EngineError::Spec(e) => write!(f, "invalid wait: {e}"),
            EngineError::Full => f.write_str("wait engine full"),
            EngineError::StaleId => f.write_str("stale wait id"),
            EngineError::NotPending => f.write_str("wait already settled"),
            EngineError::NotCappable => f.write_str("a program step cannot be capped"),
            EngineError::NoPreviousSettle => {
                f.write_str("relative sim_time: no previous wait or step has settled")
            }
        }
    }
}
/// So `?` converts it into `Box<dyn Error>` and other error types.
impl core::error::Error for SpecError {}

/// So `?` converts it into `Box<dyn Error>` and other error types.
impl core::error::Error for EngineError {}
