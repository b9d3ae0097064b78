//! The wait-condition engine: conditions, reactions, reasons, and step programs.
//!
//! # Model
//!
//! A *wait* ([`Wait`]) names one [`Condition`] from the condition table (altitude, airspeed,
//! waypoint, sim_time, time, mode, text, armed, disarmed, landed, and the mission progress rows
//! reached and mission_complete, which read the mission progress the client feeds the engine
//! from the offboard machine ([`Engine::set_mission_progress`]); with the `extra-conditions`
//! feature also at_target (fed the same way), distance, groundspeed, climb_rate, heading,
//! battery_remaining, battery_voltage, gps_fix, satellites and landed_state), a `timeout_s` in autopilot
//! (sim) seconds, and optionally `hold_s`, `within`, up to [`MAX_GUARDS`] guard conditions
//! and reactions (`then_rc`, `then_mode`, `then_speedup`). The [`Engine`] keeps up to `N` of
//! them and is evaluated after every message the telemetry accepted:
//!
//! ```text
//! if tel.handle(now, &frame) { engine.evaluate(now, &tel); }
//! while let Some(ev) = engine.poll_event() { /* Reaction: apply now; Settled: report */ }
//! ```
//!
//! # Semantics
//!
//! * A condition whose message has not arrived is never met (an airspeed wait before the
//!   first VFR_HUD waits).
//! * Ops `>=` (default), `<=`, `==` apply to the numeric rows only ([`ConditionKind::takes_op`]:
//!   altitude, airspeed, waypoint, sim_time, reached, and the extra distance, groundspeed,
//!   climb_rate, heading, battery and GPS rows); `within` (|reading − target| ≤ tol, around
//!   the circle for heading) likewise. Anything else is a [`SpecError`].
//! * `time` counts sim seconds from registration (always `>=`). `sim_time` is the autopilot
//!   clock; *relative*, it counts from the tick the previous wait or step on this engine
//!   settled (an error if none has) — in a program step, from the step's start tick.
//! * `mode` compares [`crate::Mode`]s (names parse case-insensitively).
//! * `text` is met by a STATUSTEXT containing the needle with `seq > since_seq` (default: the
//!   newest seq at registration). Each text is checked once per wait: the wait remembers the
//!   last seq it looked at, so the text ring is only read when a new text arrived. The
//!   telemetry's text ring must hold the texts that can arrive between two evaluations (two
//!   per message at most); a `since_seq` older than the ring finds only what is still in it.
//! * Timing is on the sim clock ([`crate::telemetry::Telemetry::sim_ms`]): the timeout is
//!   reached when sim elapsed ≥ `timeout_s`; `hold_s` needs the condition to hold without a
//!   break for that long (any violation restarts it). A wait registered before the clock is
//!   known starts counting at the first sim time seen; until then it cannot time out (the
//!   driver's `cap` covers that). Every threshold is converted to integer ms at registration.
//! * In one evaluation, met wins over a guard, and a guard over the timeout.
//! * Reactions are emitted as [`EngineEvent::Reaction`] from the evaluation that found the
//!   condition met, before that wait's [`EngineEvent::Settled`], and never for another reason.
//!   If the wait is decided at registration (already true), it settles then with
//!   `waited_sim_s` 0, `snapshot_at` [`SnapshotAt::Return`], reactions queued at once.
//! * Each wait settles exactly once with a [`WaitResult`]. Reasons: met, timeout, guard (from
//!   evaluation); cap, died, closed, aborted (from the driver's calls).
//!
//! # Cost
//!
//! Evaluation is change-driven. Each pending wait records which readings its conditions read
//! (height, airspeed, waypoint, armed, mode, landed, texts, mission progress) and the next sim
//! time at which time alone could end it (its timeout, the end of a hold, a `time`/`sim_time`
//! target). After a message, the engine takes the readings once (one `f32` division, a cached
//! mode lookup), compares them with the previous ones, and looks only at the waits whose
//! readings changed or whose wake time has come; the outcome is the same as looking at every wait every time (the
//! property test checks exactly that against a naive reference). All thresholds are integer ms
//! or `f32` compared without division; texts are scanned only when a new one arrived.
//!
//! # Memory
//!
//! No allocation. A settled result keeps its slot until its `Settled` event is polled, so
//! results are never lost; a full engine refuses new waits with [`EngineError::Full`].
//! [`WaitId`]s carry the slot's generation: an id whose result was polled is refused
//! ([`EngineError::StaleId`]) rather than naming a newer wait.
//!
//! # Programs
//!
//! [`Program`] is a bounded list of [`Step`]s; [`ProgramRunner`] applies each step's action
//! through the driver's [`Actuator`], registers the step's wait on the engine, and records
//! each [`WaitResult`] (see [`program`]).

mod condition;
#[allow(clippy::module_inception)]
mod engine;
mod error;
pub mod program;
mod result;
mod wait;

#[cfg(test)]
mod tests;

#[cfg(feature = "extra-conditions")]
pub use condition::Place;
pub use condition::{Condition, ConditionKind, Needle, Op, ValueKind};

/// The distance from the vehicle to `to`, m, as the `distance` condition measures it; `None`
/// before the messages it reads have arrived.
#[cfg(feature = "extra-conditions")]
pub fn condition_distance_m<const T: usize>(
    tel: &crate::telemetry::Telemetry<T>,
    to: &Place,
) -> Option<f32> {
    condition::Extra::read(tel, None, condition::dep::POSITION).distance_m(to)
}
pub use engine::{Engine, CLOSED_ERROR};
pub use error::{EngineError, SpecError};
pub use program::{
    Actuator, OnTimeout, Program, ProgramEnd, ProgramError, ProgramRunner, ProgramState, Progress,
    Step, StepRecord,
};
pub use result::{EngineEvent, Reaction, Reason, SnapshotAt, WaitId, WaitResult};
pub use wait::{Reactions, Wait};

/// Most waits one [`Engine`] can hold (`N` ≤ this): the pending set is one `u64` bitmask,
/// so evaluation visits only pending slots.
pub const MAX_WAITS: usize = 64;

/// Most guard conditions per wait.
pub const MAX_GUARDS: usize = 4;

/// Longest `text` needle, bytes. A STATUSTEXT chunk is 50 bytes and a reassembled text up to
/// [`crate::telemetry::MAX_TEXT_LEN`]; a longer needle is refused, never cut.
pub const MAX_NEEDLE_LEN: usize = 64;
