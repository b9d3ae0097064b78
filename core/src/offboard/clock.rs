//! The two clocks the machine paces itself by.
//!
//! PX4 under SITL lockstep runs on sim time, possibly 10× faster or 20× slower than the wall.
//! Two rules follow:
//! * periodic streams (our HEARTBEAT, MANUAL_CONTROL) are due when *either* clock has run a
//!   period since the last send, so PX4 is never starved at 10× and the streams keep flowing
//!   when sim time stalls;
//! * timers (re-commands, settle windows, mission retries and timeouts) count sim time when it
//!   is known at both ends, wall time before the first sim timestamp.

use crate::telemetry::Telemetry;
use crate::time::{Duration, Instant};

/// A moment on both clocks: the driver's wall instant and the autopilot's sim ms, if known.
///
/// The comparisons below are `u64` arithmetic (a division by 1000 among it), a few dozen
/// instructions on a 32-bit MCU, and the machine checks timers in many places: they are kept
/// out of line (`inline(never)`), one copy each (~2 KiB less flash on thumbv7em).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub(crate) struct Stamp {
    pub wall: Instant,
    pub sim_ms: Option<u64>,
}

impl Stamp {
    /// Now, on both clocks.
    pub fn at<const T: usize>(now: Instant, tel: &Telemetry<T>) -> Stamp {
        Stamp {
            wall: now,
            sim_ms: tel.sim_ms(),
        }
    }

    /// Whether this timer runs on sim time (it was started once sim time was known).
    pub fn is_sim(self) -> bool {
        self.sim_ms.is_some()
    }

    /// Timer time from `self` to `now`, ms: sim when both ends know it, else wall.
    #[inline(never)]
    pub fn timer_ms(self, now: Stamp) -> u64 {
        match (self.sim_ms, now.sim_ms) {
            (Some(a), Some(b)) => b.saturating_sub(a),
            _ => now.wall.saturating_since(self.wall).total_millis(),
        }
    }

    /// Whether a timer of `period_ms` started at `self` has run out at `now`.
    pub fn timer_done(self, now: Stamp, period_ms: u64) -> bool {
        self.timer_ms(now) >= period_ms
    }

    /// Whether either clock has run `period_ms` since `self` (periodic streams). A send made
    /// before sim time was known is due again as soon as it is, so the stream re-anchors on
    /// sim time at once (at 10× a wall-paced second would be ten seconds of PX4's time).
    #[inline(never)]
    pub fn either_done(self, now: Stamp, period_ms: u64) -> bool {
        let wall = now.wall.saturating_since(self.wall) >= Duration::from_millis(period_ms);
        let sim = match (self.sim_ms, now.sim_ms) {
            (Some(a), Some(b)) => b.saturating_sub(a) >= period_ms,
            (None, Some(_)) => true,
            _ => false,
        };
        wall || sim
    }

    /// The wall instant `period_ms` after `self`.
    #[inline(never)]
    pub fn wall_after(self, period_ms: u64) -> Instant {
        self.wall + Duration::from_millis(period_ms)
    }
}

/// The earliest of several wall deadlines, taken in one at a time. Each merge is a `u64`
/// comparison and a copy of an optional 64-bit instant: out of line, one copy for the many
/// timers of every layer, with the accumulator behind a pointer instead of an `Option<Instant>`
/// returned and merged at each call site.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Soonest(pub Option<Instant>);

impl Soonest {
    /// Take in a deadline at `at`.
    #[inline(never)]
    pub fn at(&mut self, at: Instant) {
        self.0 = earliest(self.0, Some(at));
    }

    /// Take in the timer of `period_ms` started at `start`, if it was started and runs on wall
    /// time (a sim-time timer can only run out when a frame advances sim time, so it has no
    /// wall deadline).
    #[inline(never)]
    pub fn timer(&mut self, start: Option<&Stamp>, period_ms: u64) {
        if let Some(s) = start {
            if !s.is_sim() {
                self.at(s.wall_after(period_ms));
            }
        }
    }
}

/// The earlier of two optional deadlines.
#[inline(never)] // merged in many places: one copy
pub(crate) fn earliest(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, None) => x,
        (None, y) => y,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn st(wall_ms: u64, sim: Option<u64>) -> Stamp {
        Stamp {
            wall: Instant::from_millis(wall_ms),
            sim_ms: sim,
        }
    }

    #[test]
    fn timers_prefer_sim_and_streams_take_either() {
        // 10x: 100 ms wall is 1000 ms sim.
        assert!(st(0, Some(0)).timer_done(st(100, Some(1000)), 1000));
        assert!(st(0, Some(0)).either_done(st(100, Some(1000)), 1000));
        // Stalled sim: timers wait, streams still flow on wall time.
        assert!(!st(0, Some(5)).timer_done(st(5000, Some(5)), 1000));
        assert!(st(0, Some(5)).either_done(st(1000, Some(5)), 1000));
        // Sim time just became known: due at once.
        assert!(st(0, None).either_done(st(1, Some(5)), 1000));
        assert!(!st(0, None).either_done(st(1, None), 1000));
        // Before sim time is known, timers count wall time.
        assert!(st(0, None).timer_done(st(1000, Some(7)), 1000));
        let deadline = |s: Option<Stamp>| {
            let mut d = Soonest::default();
            d.timer(s.as_ref(), 5);
            d.0
        };
        assert_eq!(deadline(Some(st(0, None))), Some(Instant::from_millis(5)));
        assert_eq!(deadline(Some(st(0, Some(1)))), None);
        assert_eq!(deadline(None), None);
        // The earliest wins, whatever the order.
        let mut d = Soonest::default();
        d.at(Instant::from_millis(9));
        d.timer(Some(&st(1, None)), 5);
        d.at(Instant::from_millis(7));
        assert_eq!(d.0, Some(Instant::from_millis(6)));
    }
}
