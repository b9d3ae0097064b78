//! Supervision: how a link learns that its vehicle died.
//!
//! Two kinds of evidence, both ending every wait on the link with `died` and the cause in
//! `snapshot.error`:
//! * what only telemetry shows, watched by the pump itself ([`Watchdog`]): the link silent
//!   for the stall limit (wall time), or the autopilot clock (SYSTEM_TIME and the other
//!   `time_boot_ms` stamps) not advancing for as long while messages still flow (a wedged
//!   lockstep);
//! * what only the process shows, through a [`VehicleProbe`] the run supplies: a PX4 process
//!   exiting or printing `PANIC` (the launcher's `DeathWatch`), the simulated vehicle's exit
//!   status and console. A probe also carries the run's ground truth (true height) and speed
//!   control, the other two things a link needs from the vehicle's owner.
//!
//! **Silence counts only while we could listen.** The watchdog measures wall time, yet a
//! client that was itself not running (the whole process stopped by SIGSTOP or a debugger, or
//! its pump thread not scheduled) heard nothing for reasons of its own, and the built-in
//! vehicle, which runs in the same process, was paused with it. The rule:
//! * the pump never sleeps longer than [`MAX_SLEEP_MS`] while it has a deadline, and it notes
//!   when each sleep should end ([`PauseDetector`]);
//! * before it judges its timers, it reads whatever is queued on its links (a vehicle that
//!   kept sending while we were stopped is heard first), then compares the monotonic clock
//!   with the end it planned: a pump that comes back later than planned by at least the
//!   pause limit (`min(`[`PAUSE_LIMIT_MS`]`, stall / 4)`) was not running for that long,
//!   and every watchdog window (silence and the autopilot clock) restarts from now;
//! * so a vehicle is declared dead only after the stall limit of silence during which the client
//!   ran; a vehicle that really died is still found, one stall limit after the client came back.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use nexus_core::Instant;

use crate::launcher::DeathCause;

/// What a link may ask the vehicle's owner (the run): whether it died, and
/// its speed. Implemented by the run for the simulated vehicle and for PX4 SITL.
pub trait VehicleProbe: Send + Sync + fmt::Debug {
    /// Why the vehicle is dead (exit, signal, PANIC line), or `None` while it runs. Polled by
    /// the pump every [`PROBE_PERIOD_MS`] unless [`VehicleProbe::add_waker`] returns true.
    fn death(&self) -> Option<DeathCause>;

    /// The pump's watchdog saw `cause` (link silent, clock stalled): record it with the
    /// vehicle's owner and return the cause to report (the first recorded cause wins).
    fn declare_dead(&self, cause: DeathCause) -> DeathCause {
        cause
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

/// Longest the pump sleeps while some link has a deadline, ms (wall): bounds how long a pause
/// of the client can go unnoticed.
pub const MAX_SLEEP_MS: u64 = 250;

/// A pump back later than planned by this much, ms (wall), was not running (stopped, not
/// scheduled), unless a quarter of the stall limit is shorter.
pub const PAUSE_LIMIT_MS: u64 = 1000;

/// Notices when the pump itself was not running: each sleep's planned end against the
/// monotonic clock when the pump looks at its timers again.
#[derive(Debug, Clone, Default)]
pub(crate) struct PauseDetector {
    due: Option<Instant>,
}

impl PauseDetector {
    /// The pump goes to sleep at `now` for `timeout` (`None`: until woken). Returns the sleep
    /// to take, capped at [`MAX_SLEEP_MS`], and notes when it should end.
    pub fn sleep(&mut self, now: Instant, timeout: Option<Duration>) -> Option<Duration> {
        let capped = timeout.map(|t| t.min(Duration::from_millis(MAX_SLEEP_MS)));
        self.due = capped.map(|t| Instant::from_micros(now.total_micros() + t.as_micros() as u64));
        capped
    }

    /// The pump is about to judge its timers at `now`: how far past the planned end of its
    /// sleep it is, µs (`None` after an unbounded sleep, which plans no end).
    pub fn late_us(&mut self, now: Instant) -> Option<u64> {
        let due = self.due.take()?;
        Some(now.saturating_since(due).total_micros())
    }
}

/// How a link is supervised.
#[derive(Debug, Clone, Default)]
#[non_exhaustive] // more fields may come
pub struct Supervision {
    /// Wall time of silence, or of a clock that does not advance while messages flow, after
    /// which the link is declared dead. `None` (or zero): never.
    pub stall: Option<Duration>,
    /// The vehicle's owner.
    pub probe: Option<Arc<dyn VehicleProbe>>,
    /// Where the link records every frame it decodes and sends (`None`: not recorded).
    pub tlog: Option<crate::tlog::Tlog>,
    /// Sign what the link sends and verify what it receives ([`crate::signing`]); `None`:
    /// neither.
    pub signing: Option<crate::signing::Signing>,
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
    pub fn new(stall: Option<Duration>) -> Self {
        let stall_us = stall
            .filter(|s| !s.is_zero())
            .map(|s| u64::try_from(s.as_micros()).unwrap_or(u64::MAX));
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

    /// The pump came back `late_us` after the planned end of its sleep: if that is at least
    /// the pause limit (module docs), the client was not listening, and the windows restart
    /// from `now`. Returns whether they did.
    pub fn on_late(&mut self, now: Instant, late_us: u64) -> bool {
        let Some(stall) = self.stall_us else {
            return false;
        };
        let limit = (PAUSE_LIMIT_MS * 1000).min(stall / 4);
        if late_us < limit {
            return false;
        }
        self.rearm(now);
        true
    }

    /// What the watchdog sees at `now`: silence wins over a stalled clock.
    pub fn check(&self, now: Instant) -> Option<DeathCause> {
        let stall = self.stall_us?;
        let rx = self.last_rx?;
        let silent = now.saturating_since(rx).total_micros();
        if silent >= stall {
            return Some(DeathCause::LinkSilent {
                silent: std::time::Duration::from_micros(silent),
            });
        }
        let moved = self.clock_moved?;
        let stalled = now.saturating_since(moved).total_micros();
        // A stopped clock is news only while messages still flow; a link that went quiet is
        // silence, reported when its own window ends (the last frames of a dying link can
        // carry no timestamp, so its clock seems to stop a little before it goes silent).
        if stalled >= stall && silent < stall / 4 {
            return Some(DeathCause::ClockStalled {
                stalled: std::time::Duration::from_micros(stalled),
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
        // The clock's window counts only if messages are still flowing when it ends (see
        // `check`); else the silence window decides.
        let clock = self
            .clock_moved
            .map(|t| t.total_micros() + stall)
            .filter(|&end| {
                self.last_rx
                    .is_none_or(|rx| end < rx.total_micros() + stall / 4)
            })
            .map(Instant::from_micros);
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

    fn secs(s: u64) -> Duration {
        Duration::from_secs(s)
    }

    #[test]
    fn silence_after_traffic_is_death() {
        let mut w = Watchdog::new(Some(secs(1)));
        assert_eq!(w.check(ms(10_000)), None, "nothing heard yet: not watched");
        w.on_rx(ms(0), Some(100));
        assert_eq!(w.deadline(), Some(ms(1000)));
        assert_eq!(w.check(ms(999)), None);
        match w.check(ms(1500)) {
            Some(DeathCause::LinkSilent { silent }) => {
                assert_eq!(silent, std::time::Duration::from_millis(1500))
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_link_that_goes_quiet_is_silence_even_if_its_clock_stopped_first() {
        // The last time-stamped frame came at 0 ms, untimed frames (a HEARTBEAT) until 150 ms,
        // then nothing: at 1000 ms the clock has not moved for its whole window, but the link
        // has been quiet for most of it, so the verdict waits for the silence window.
        let mut w = Watchdog::new(Some(secs(1)));
        w.on_rx(ms(0), Some(5000));
        w.on_rx(ms(150), Some(5000));
        assert_eq!(w.check(ms(1000)), None);
        assert_eq!(
            w.deadline(),
            Some(ms(1150)),
            "no wake-up at the clock's stale window"
        );
        assert!(matches!(
            w.check(ms(1150)),
            Some(DeathCause::LinkSilent { .. })
        ));
    }

    #[test]
    fn a_frozen_clock_while_messages_flow_is_a_stall() {
        let mut w = Watchdog::new(Some(secs(1)));
        for t in 0..30 {
            w.on_rx(ms(t * 50), Some(5000));
        }
        assert!(matches!(
            w.check(ms(1450)),
            Some(DeathCause::ClockStalled { .. })
        ));
        // A moving clock is fine.
        let mut w = Watchdog::new(Some(secs(1)));
        for t in 0..30 {
            w.on_rx(ms(t * 50), Some(5000 + t * 50));
        }
        assert_eq!(w.check(ms(1450)), None);
    }

    #[test]
    fn a_pump_that_was_not_running_restarts_the_silence_window() {
        let mut w = Watchdog::new(Some(secs(5)));
        w.on_rx(ms(0), Some(100));
        // Stopped for 8 s: back 8 s after a sleep planned to end at 0.25 s.
        assert!(w.on_late(ms(8_250), 8_000_000));
        assert_eq!(w.check(ms(8_250)), None, "no false death");
        assert_eq!(
            w.deadline(),
            Some(ms(13_250)),
            "a full stall limit to speak again"
        );
        // A vehicle that stays silent after we are back is still found.
        assert!(matches!(
            w.check(ms(13_300)),
            Some(DeathCause::LinkSilent { .. })
        ));
        // Ordinary lateness (scheduling jitter) changes nothing.
        let mut w = Watchdog::new(Some(secs(5)));
        w.on_rx(ms(0), Some(100));
        assert!(!w.on_late(ms(300), 50_000));
        assert_eq!(w.deadline(), Some(ms(5_000)));
        // The limit shrinks with a short stall limit: a quarter of it.
        let mut w = Watchdog::new(Some(secs(1)));
        w.on_rx(ms(0), Some(100));
        assert!(!w.on_late(ms(500), 200_000));
        assert!(w.on_late(ms(900), 250_000));
        assert_eq!(w.deadline(), Some(ms(1_900)));
        // Nothing to restart without a stall limit.
        assert!(!Watchdog::new(None).on_late(ms(1), u64::MAX));
    }

    #[test]
    fn the_pause_detector_caps_sleeps_and_measures_lateness() {
        let mut p = PauseDetector::default();
        assert_eq!(p.late_us(ms(5)), None, "no sleep planned yet");
        assert_eq!(
            p.sleep(ms(1_000), Some(Duration::from_secs(30))),
            Some(Duration::from_millis(MAX_SLEEP_MS))
        );
        assert_eq!(p.late_us(ms(1_100)), Some(0), "woken early");
        assert_eq!(
            p.sleep(ms(2_000), Some(Duration::from_millis(10))),
            Some(Duration::from_millis(10))
        );
        assert_eq!(p.late_us(ms(10_010)), Some(8_000_000));
        assert_eq!(p.late_us(ms(10_020)), None, "each sleep is judged once");
        assert_eq!(p.sleep(ms(0), None), None);
        assert_eq!(
            p.late_us(ms(99_999)),
            None,
            "an unbounded sleep plans no end"
        );
    }

    #[test]
    fn no_stall_limit_watches_nothing() {
        let mut w = Watchdog::new(None);
        w.on_rx(ms(0), Some(1));
        assert_eq!(w.check(ms(1_000_000)), None);
        assert_eq!(w.deadline(), None);
        assert_eq!(Watchdog::new(Some(Duration::ZERO)).deadline(), None);
    }
}
