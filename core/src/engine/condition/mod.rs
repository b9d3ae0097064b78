//! Conditions: the wait engine's table as a spec ([`Condition`]), and compiled for evaluation.
//!
//! A spec holds what the caller wrote; compiling it (at registration) checks it and turns
//! every threshold into the form the hot path compares: `f32` for the numeric readings the
//! telemetry reports as `f32`, integer milliseconds for everything on the sim clock.
//!
//! - [`kind`]: the rows of the table ([`ConditionKind`]), their names, units and ops;
//! - [`spec`]: a condition as written ([`Condition`]), its constructors and modifiers;
//! - [`compile`]: the checks and the compiled form's thresholds;
//! - [`readings`]: the telemetry a condition reads, taken once per evaluation, and what changed;
//! - [`eval`]: the compiled condition ([`Cond`]) and whether it holds;
//! - [`display`]: the condition as a person would write it.

mod compile;
mod display;
mod eval;
mod kind;
mod readings;
mod spec;

pub(crate) use eval::Cond;
#[cfg(test)]
pub(crate) use eval::{contains, Cmp, CmpMs};
pub use kind::{ConditionKind, Op, ValueKind};
#[cfg(feature = "extra-conditions")]
pub(crate) use readings::Extra;
pub(crate) use readings::{dep, Readings};
pub(crate) use spec::finite_nonneg;
#[cfg(feature = "extra-conditions")]
pub use spec::Place;
pub use spec::{Condition, Needle};
