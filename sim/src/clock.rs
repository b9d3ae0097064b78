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

/// If the vehicle falls further behind than this (sim µs) and [`MAX_LAG_WALL`] at its speed,
/// the pacer forgets the debt beyond it instead of racing to catch up (a stopped debugger, an
/// overloaded machine).
pub const MAX_LAG_US: u64 = 500_000;

/// The backlog kept, in wall time: at high speed factors [`MAX_LAG_US`] alone is less than one
/// scheduler preemption (0.5 s of sim is 1 ms of wall at ×500), so every preemption lost sim
/// time and the achieved factor fell short; 100 ms of wall at the speed is kept instead.
pub const MAX_LAG_WALL: Duration = Duration::from_millis(100);

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

    /// The backlog kept, sim µs: [`MAX_LAG_US`], or [`MAX_LAG_WALL`] at this speed if more.
    pub fn max_lag_us(&self) -> u64 {
        MAX_LAG_US.max((MAX_LAG_WALL.as_secs_f64() * self.speed * 1e6) as u64)
    }

    /// Forget the part of a backlog beyond [`Pacer::max_lag_us`]; that much of it is kept:
    /// forgetting all of it froze the clock whenever one pass of the server's loop was worth
    /// more than the limit — above ×65 the vehicle never advanced at all.
    pub fn rebase_if_behind(&mut self, wall: Instant, sim_us: u64) {
        let lag = self.max_lag_us();
        if self.target_sim_us(wall) > sim_us + lag {
            *self = Pacer::new(self.speed, wall, sim_us + lag);
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
        // The debt beyond the limit is forgotten; the limit's worth of it is still to run, so
        // the clock moves however long each pass of the loop takes. At ×10, 100 ms of wall is
        // 1 s of sim: more than MAX_LAG_US.
        assert_eq!(p.max_lag_us(), 1_000_000);
        assert_eq!(
            p.target_sim_us(t0 + Duration::from_secs(10)),
            2_000 + 1_000_000
        );
        // Slow: MAX_LAG_US.
        assert_eq!(Pacer::new(1.0, t0, 0).max_lag_us(), MAX_LAG_US);
        // ×500: a 20 ms preemption (10 s of sim) is kept whole, not cut to 0.5 s.
        let mut p = Pacer::new(500.0, t0, 0);
        let late = t0 + Duration::from_millis(20);
        p.rebase_if_behind(late, 0);
        assert_eq!(p.target_sim_us(late), 10_000_000);
    }
}
