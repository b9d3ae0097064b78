//! Supervision: how a link learns that its vehicle died.
//!
//! Two kinds of evidence, both ending every wait on the link with `died` and the cause in
//! `snapshot.error`:
//! * what only telemetry shows, watched by the pump itself ([`Watchdog`]): the link silent
//!   for `stall_s` wall seconds, or the autopilot clock (SYSTEM_TIME and the other
//!   `time_boot_ms` stamps) not advancing for `stall_s` while messages still flow (a wedged
//!   lockstep);
//! * what only the process shows, through a [`VehicleProbe`] the run supplies: a PX4 process
//!   exiting or printing `PANIC` (the launcher's `DeathWatch`), the simulated vehicle's exit
//!   status and console. A probe also carries the run's ground truth (true height) and speed
//!   control, the other two things a link needs from the vehicle's owner.

use std::fmt;
use std::sync::Arc;

use nexus_core::Instant;

use crate::launcher::DeathCause;

/// What a link may ask the vehicle's owner (the run): whether it died, and
/// its speed. Implemented by the run for the simulated vehicle and for PX4 SITL.
pub trait VehicleProbe: Send + Sync + fmt::Debug {
    /// Why the vehicle is dead (exit, signal, PANIC line), or `None` while it runs. Polled by
    /// the pump every [`PROBE_PERIOD_MS`] unless [`VehicleProbe::add_waker`] returns true.
    fn death(&self) -> Option<String>;

    /// The pump's watchdog saw `cause` (link silent, clock stalled): record it with the
    /// vehicle's owner and return the cause to report (the first recorded cause wins).
    fn declare_dead(&self, cause: DeathCause) -> String {
        cause.to_string()
    }

    /// Set the simulator's speed factor (a `then_speedup` reaction); why not, if it cannot.
    fn set_speed(&self, factor: f32) -> Result<(), String>;

    /// Wake `waker` when the vehicle dies; true if the probe does (no polling needed then).
    fn add_waker(&self, waker: Arc<mio::Waker>) -> bool {
        let _ = waker;
        false
    }

    /// Whether the vehicle sends on its own (false for a lockstep simulator, silent between
    /// steps: the watchdog then stays off and the stepping run watches the clock instead).
    fn free_running(&self) -> bool {
        true
    }
}

/// How often a probe without a waker is asked whether the vehicle died, ms (wall).
pub const PROBE_PERIOD_MS: u64 = 20;

/// How a link is supervised.
#[derive(Debug, Clone, Default)]
pub struct Supervision {
    /// Wall seconds of silence, or of a clock that does not advance while messages flow,
    /// after which the link is declared dead. `None`: never.
    pub stall_s: Option<f32>,
    /// The vehicle's owner.
    pub probe: Option<Arc<dyn VehicleProbe>>,
}

/// The pump's watch over what telemetry shows: silence and a stopped autopilot clock.
#[derive(Debug, Clone)]
pub(crate) struct Watchdog {
    stall_us: Option<u64>,
    last_rx: Option<Instant>,
    clock_ms: Option<u64>,
    clock_moved: Option<Instant>,
}

impl Watchdog {
    pub fn new(stall_s: Option<f32>) -> Self {
        let stall_us = stall_s
            .filter(|s| s.is_finite() && *s > 0.0)
            .map(|s| (s as f64 * 1e6) as u64);
        Watchdog {
            stall_us,
            last_rx: None,
            clock_ms: None,
            clock_moved: None,
        }
    }

    /// A frame from the vehicle arrived at `now`, its clock reading `sim_ms`.
    pub fn on_rx(&mut self, now: Instant, sim_ms: Option<u64>) {
        self.last_rx = Some(now);
        if let Some(ms) = sim_ms {
            if self.clock_ms != Some(ms) {
                self.clock_ms = Some(ms);
                self.clock_moved = Some(now);
            }
        }
    }

    /// Stop watching (a lockstep vehicle between steps), forgetting the last reading times.
    pub fn rearm(&mut self, now: Instant) {
        if self.last_rx.is_some() {
            self.last_rx = Some(now);
        }
        if self.clock_moved.is_some() {
            self.clock_moved = Some(now);
        }
    }

    /// What the watchdog sees at `now`: silence wins over a stalled clock.
    pub fn check(&self, now: Instant) -> Option<DeathCause> {
        let stall = self.stall_us?;
        let rx = self.last_rx?;
        let silent = now.saturating_since(rx).total_micros();
        if silent >= stall {
            return Some(DeathCause::LinkSilent {
                silent_s: silent as f32 / 1e6,
            });
        }
        let moved = self.clock_moved?;
        let stalled = now.saturating_since(moved).total_micros();
        if stalled >= stall {
            return Some(DeathCause::ClockStalled {
                stalled_s: stalled as f32 / 1e6,
            });
        }
        None
    }

    /// When [`Watchdog::check`] could next find something.
    pub fn deadline(&self) -> Option<Instant> {
        let stall = self.stall_us?;
        let rx = self
            .last_rx
            .map(|t| Instant::from_micros(t.total_micros() + stall));
        let clock = self
            .clock_moved
            .map(|t| Instant::from_micros(t.total_micros() + stall));
        match (rx, clock) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Instant {
        Instant::from_millis(v)
    }

    #[test]
    fn silence_after_traffic_is_death() {
        let mut w = Watchdog::new(Some(1.0));
        assert_eq!(w.check(ms(10_000)), None, "nothing heard yet: not watched");
        w.on_rx(ms(0), Some(100));
        assert_eq!(w.deadline(), Some(ms(1000)));
        assert_eq!(w.check(ms(999)), None);
        match w.check(ms(1500)) {
            Some(DeathCause::LinkSilent { silent_s }) => assert!((silent_s - 1.5).abs() < 1e-3),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_frozen_clock_while_messages_flow_is_a_stall() {
        let mut w = Watchdog::new(Some(1.0));
        for t in 0..30 {
            w.on_rx(ms(t * 50), Some(5000));
        }
        assert!(matches!(
            w.check(ms(1450)),
            Some(DeathCause::ClockStalled { .. })
        ));
        // A moving clock is fine.
        let mut w = Watchdog::new(Some(1.0));
        for t in 0..30 {
            w.on_rx(ms(t * 50), Some(5000 + t * 50));
        }
        assert_eq!(w.check(ms(1450)), None);
    }

    #[test]
    fn no_stall_limit_watches_nothing() {
        let mut w = Watchdog::new(None);
        w.on_rx(ms(0), Some(1));
        assert_eq!(w.check(ms(1_000_000)), None);
        assert_eq!(w.deadline(), None);
        assert_eq!(Watchdog::new(Some(f32::NAN)).deadline(), None);
    }
}
