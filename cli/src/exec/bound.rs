//! The wall-time bound on each step: a vehicle whose clock stops would otherwise leave the
//! step waiting forever for its sim-time timeout.
//!
//! A step may take its timeout at the slowest speed factor of the run so far, twice, plus
//! [`nexus_host::run::WALL_MARGIN_S`] (a wait's bound, [`nexus_host::run::wall_bound`]); past
//! that the program is aborted with "no progress of the vehicle clock: …".

use crate::program::STEPS;
use nexus_core::action::Action;
use nexus_core::engine::Program;
use nexus_host::run::{wall_bound, RunClock, WALL_MARGIN_S};
use std::time::Instant;

/// The bound of the steps of one program.
pub(super) struct WallBound {
    /// Each step's sim-time timeout, s (a `param` step's at least its set's own bound).
    timeouts_s: Vec<f64>,
    /// The slowest speed factor of the run so far.
    slowest: f64,
    /// The step running, when it started (wall) and the vehicle clock then (ms).
    current: Option<(usize, Instant, Option<u64>)>,
}

impl WallBound {
    /// The bound of `program`'s steps on a vehicle run on `clock`.
    pub fn new(program: &Program<STEPS>, clock: RunClock) -> Self {
        let timeouts_s = program
            .steps()
            .iter()
            .map(|s| {
                let t = s.until.timeout().map_or(0.0, f64::from);
                match s.action {
                    // A `param` step also waits for PX4's answer to its set, which the machine
                    // resends on the retry timer (sim time) until its resend limit.
                    Action::ParamReal { .. } | Action::ParamInt { .. } => {
                        t.max(param_set_bound_s())
                    }
                    _ => t,
                }
            })
            .collect();
        let slowest = match clock {
            RunClock::RealTime { speed } => speed,
            // Lockstep and as fast as possible: never slower than real time.
            // (and any clock a newer host adds).
            _ => 1.0,
        };
        WallBound {
            timeouts_s,
            slowest,
            current: None,
        }
    }

    /// A speed-up was applied: a slower one lengthens the bound of the steps from now on.
    pub fn speedup(&mut self, factor: f32) {
        if factor > 0.0 {
            self.slowest = self.slowest.min(factor as f64);
        }
    }

    /// `step` runs, seen with the vehicle clock at `sim_ms`: its bound starts now, the first
    /// time it is seen.
    pub fn running(&mut self, step: usize, sim_ms: Option<u64>) {
        if self.current.is_none_or(|(s, _, _)| s != step) {
            self.current = Some((step, Instant::now(), sim_ms));
        }
    }

    /// Why the running step is past its bound, with the vehicle clock now at `sim_ms`; `None`
    /// while it is within.
    pub fn overrun(&self, sim_ms: Option<u64>) -> Option<String> {
        let (step, since, sim0) = self.current?;
        let timeout_s = self.timeouts_s.get(step).copied().unwrap_or(0.0);
        let slowest = self.slowest;
        let bound = wall_bound(timeout_s, slowest);
        let waited = since.elapsed();
        if waited <= bound {
            return None;
        }
        let moved_s = match (sim0, sim_ms) {
            (Some(a), Some(b)) => format!("{:.1} s", b.saturating_sub(a) as f64 / 1e3),
            _ => "no clock at all".into(),
        };
        Some(format!(
            "no progress of the vehicle clock: the step waited {:.0} s wall, while \
             its {timeout_s} s sim timeout at ×{slowest} allows {:.0} s \
             (timeout / speed × 2 + {WALL_MARGIN_S} s); the vehicle clock moved {moved_s}",
            waited.as_secs_f64(),
            bound.as_secs_f64(),
        ))
    }
}

/// The longest a parameter set stays outstanding, sim s: every send's timer at the retry
/// ceiling (an upper bound on the backed-off timers).
fn param_set_bound_s() -> f64 {
    let sends = nexus_core::offboard::OffboardConfig::default().max_sends as f64;
    sends * nexus_core::offboard::RTO_CEILING_MS as f64 / 1000.0
}
