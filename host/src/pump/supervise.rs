//! Supervision: how a link learns that its vehicle died.
//!
//! Two kinds of evidence, both ending every wait on the link with `died` and the cause in
//! `snapshot.error`:
//! * what only telemetry shows, watched by the core client itself ([`nexus_core::link`]): the
//!   link silent for the stall limit (wall time), or the autopilot clock (SYSTEM_TIME and the
//!   other `time_boot_ms` stamps) not advancing for as long while messages still flow (a
//!   wedged lockstep);
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
//! * the moment it wakes, before anything that could service a timer (a caller's command,
//!   whose queued frames are sent at once, or a read), it compares the monotonic clock with
//!   the end it planned: a pump that comes back later than planned by at least the pause
//!   limit (`min(`[`nexus_core::link::PAUSE_LIMIT`]`, stall / 4)`) was not running for that
//!   long, and every supervision window (silence and the autopilot clock) restarts from now
//!   ([`nexus_core::Client::after_pause`]); the turn's own work (a caller's command that held
//!   the pump, a stop in the middle of it) is measured the same way before the pump reads
//!   whatever is queued on its links (a vehicle that kept sending while we were stopped is
//!   heard) and its timers judge;
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

    /// The link's supervision saw `cause` (link silent, clock stalled): record it with the
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
    /// steps: the supervision then stays off and the stepping run watches the clock instead).
    fn free_running(&self) -> bool {
        true
    }
}

/// How often a probe without a waker is asked whether the vehicle died, ms (wall).
pub const PROBE_PERIOD_MS: u64 = 20;

/// Longest the pump sleeps while some link has a deadline, ms (wall): bounds how long a pause
/// of the client can go unnoticed.
pub const MAX_SLEEP_MS: u64 = 250;

/// Notices when a driver itself was not running (a stopped process, a suspended laptop):
/// each sleep's planned end against the monotonic clock when the driver looks at its timers
/// again, so the core's supervision restarts its windows ([`nexus_core::Client::after_pause`])
/// instead of reporting the vehicle silent. The threaded pump and nexus-tokio's task share it.
#[derive(Debug, Clone, Default)]
pub struct PauseDetector {
    due: Option<Instant>,
}

impl PauseDetector {
    /// The driver goes to sleep at `now` (its clock) for `timeout` (wall; `None`: until
    /// woken). Returns the sleep to take, capped at [`MAX_SLEEP_MS`], and notes when it
    /// should end.
    pub fn sleep(&mut self, now: Instant, timeout: Option<Duration>) -> Option<Duration> {
        let capped = timeout.map(|t| t.min(Duration::from_millis(MAX_SLEEP_MS)));
        self.due = capped.map(|t| Instant::from_micros(now.total_micros() + t.as_micros() as u64));
        capped
    }

    /// The driver means to be back at its timers at `at` (a turn's work — commands, reads —
    /// comes first): time spent past it counts as a pause, as a late sleep does.
    pub fn expect(&mut self, at: Instant) {
        self.due = Some(at);
    }

    /// The driver is about to judge its timers at `now`: how far past the planned end of its
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

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Instant {
        Instant::from_millis(v)
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
}
