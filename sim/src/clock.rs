//! Sim time against wall time: the real-time pacer (sim advances `speed` × wall) used by the
//! server; in lockstep the host advances sim time itself and no pacer runs.

use std::time::{Duration, Instant};

/// How a simulated vehicle's time advances.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ClockMode {
    /// Sim time follows the wall clock times `speed` (1.0 = real time, 10.0 = ten times faster).
    RealTime {
        /// Speed factor, > 0.
        speed: f64,
    },
    /// Sim time advances only when the host steps it, as fast as the CPU allows.
    Lockstep,
}

/// Maps wall time to sim time at a speed factor, re-anchored on every speed change.
#[derive(Debug, Clone, Copy)]
pub struct Pacer {
    speed: f64,
    anchor_wall: Instant,
    anchor_sim_us: u64,
}

/// If the vehicle falls further behind than this (sim µs), the pacer forgets the debt beyond it
/// instead of racing to catch up (a stopped debugger, an overloaded machine).
pub const MAX_LAG_US: u64 = 500_000;

impl Pacer {
    /// A pacer at `speed` whose sim time is `sim_us` at wall time `wall`.
    pub fn new(speed: f64, wall: Instant, sim_us: u64) -> Self {
        Pacer {
            speed: speed.max(1e-6),
            anchor_wall: wall,
            anchor_sim_us: sim_us,
        }
    }

    /// The speed factor.
    pub fn speed(&self) -> f64 {
        self.speed
    }

    /// Change the speed from `wall`, where sim time is `sim_us`.
    pub fn set_speed(&mut self, speed: f64, wall: Instant, sim_us: u64) {
        *self = Pacer::new(speed, wall, sim_us);
    }

    /// Sim time the vehicle should have reached at `wall`, µs.
    pub fn target_sim_us(&self, wall: Instant) -> u64 {
        let dt = wall
            .saturating_duration_since(self.anchor_wall)
            .as_secs_f64();
        self.anchor_sim_us + (dt * self.speed * 1e6) as u64
    }

    /// Wall time at which sim time reaches `sim_us`.
    pub fn wall_at(&self, sim_us: u64) -> Instant {
        let dsim = sim_us.saturating_sub(self.anchor_sim_us) as f64 * 1e-6;
        self.anchor_wall + Duration::from_secs_f64(dsim / self.speed)
    }

    /// Forget the part of a backlog beyond [`MAX_LAG_US`]. [`MAX_LAG_US`] of it is kept: forgetting
    /// all of it froze the clock whenever one pass of the server's loop (at least a scheduler
    /// tick of socket timeout) was worth more than [`MAX_LAG_US`] of sim time — above ×65 the
    /// vehicle never advanced at all.
    pub fn rebase_if_behind(&mut self, wall: Instant, sim_us: u64) {
        if self.target_sim_us(wall) > sim_us + MAX_LAG_US {
            *self = Pacer::new(self.speed, wall, sim_us + MAX_LAG_US);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_wall_to_sim_at_speed() {
        let t0 = Instant::now();
        let p = Pacer::new(10.0, t0, 1_000);
        assert_eq!(p.target_sim_us(t0 + Duration::from_millis(100)), 1_001_000);
        let w = p.wall_at(1_001_000);
        assert!((w - t0).as_secs_f64() - 0.1 < 1e-6);
        let mut p = p;
        p.rebase_if_behind(t0 + Duration::from_secs(10), 2_000);
        // The debt beyond MAX_LAG_US is forgotten; MAX_LAG_US of it is still to run, so the
        // clock moves however long each pass of the loop takes.
        assert_eq!(
            p.target_sim_us(t0 + Duration::from_secs(10)),
            2_000 + MAX_LAG_US
        );
    }
}
