//! Why a vehicle (a PX4 instance, the simulated vehicle) or its link is dead, and the one place
//! a PX4 instance's cause is recorded.
//!
//! The supervisor records what it sees itself (exit, signal, `PANIC`, "already running"); the
//! pump records what only telemetry shows (link silent, `SYSTEM_TIME` stalled) with
//! [`DeathWatch::declare_dead`]. The first cause wins, so a `PANIC` line is not hidden by the
//! `SIGABRT` that follows it, and `died()` answers every caller the same.

use crate::sync;
use std::collections::VecDeque;
use std::fmt;
use std::process::ExitStatus;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Why a vehicle or its link is no longer usable: what a died wait, a failed run wait
/// ([`crate::error::RunError::Died`]) and the link's status carry, typed so a program can match
/// it; `Display` gives the text every `snapshot.error` carries.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive] // more causes will come; match with a `_` arm
pub enum DeathCause {
    /// The process exited by itself.
    Exited {
        /// Its exit code.
        code: i32,
    },
    /// A signal the launcher did not send ended the process.
    Signaled {
        /// The signal number.
        signal: i32,
        /// Whether it dumped core.
        core_dumped: bool,
    },
    /// PX4 printed a line containing `PANIC` (the first such line).
    Panic {
        /// The line, without its end-of-line.
        line: String,
    },
    /// PX4 refused to start because another PX4 holds the same instance.
    AlreadyRunning {
        /// The instance number asked for.
        instance: u8,
        /// PX4's line saying so.
        line: String,
    },
    /// No MAVLink message from PX4 for `silent` wall time (recorded by the pump).
    LinkSilent {
        /// How long the link had been silent (wall time).
        silent: std::time::Duration,
    },
    /// PX4's `SYSTEM_TIME` stopped advancing for `stalled` wall time while messages still
    /// came (recorded by the pump): lockstep is wedged.
    ClockStalled {
        /// How long the clock had not moved (wall time).
        stalled: std::time::Duration,
    },
    /// The link itself failed: a read or send error (a stream closed, a device hung up).
    LinkLost {
        /// The OS error's kind.
        kind: std::io::ErrorKind,
        /// The error, in words.
        error: String,
    },
    /// The built-in simulated vehicle was stopped (its run closed) or stopped stepping.
    SimStopped,
    /// The vehicle's clock did not advance as it should: a real-time wait's wall bound
    /// ([`crate::run::wall_bound`]: `timeout / speed × 2 + margin`) passed first.
    NoClockProgress {
        /// Sim time waited, s.
        waited_sim_s: f64,
        /// The wait's sim timeout, s.
        timeout_s: f64,
        /// Wall time spent.
        wall: std::time::Duration,
        /// The run's speed factor, when known.
        speed: Option<f64>,
    },
    /// A cause given only as text (a [`crate::pump::VehicleProbe`] of the user's own, a
    /// `snapshot.error` without a recorded cause).
    Other(String),
    /// The owner closed the launcher (close, Drop); not a failure.
    Closed,
}

impl DeathCause {
    /// A link that failed with `e`.
    pub fn link_lost(e: &std::io::Error) -> Self {
        DeathCause::LinkLost {
            kind: e.kind(),
            error: e.to_string(),
        }
    }
}

impl DeathCause {
    /// Whether this is the owner's own doing ([`DeathCause::Closed`]) rather than a failure.
    pub fn is_closed(&self) -> bool {
        matches!(self, DeathCause::Closed)
    }
}

fn signal_name(signal: i32) -> &'static str {
    match signal {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGTERM => "SIGTERM",
        _ => "signal",
    }
}

impl fmt::Display for DeathCause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DeathCause::Exited { code } => write!(f, "PX4 exited with code {code}"),
            DeathCause::Signaled {
                signal,
                core_dumped,
            } => {
                write!(
                    f,
                    "PX4 was killed by signal {signal} ({})",
                    signal_name(*signal)
                )?;
                if *core_dumped {
                    f.write_str(", core dumped")?;
                }
                Ok(())
            }
            DeathCause::Panic { line } => write!(f, "PX4 panicked: {line}"),
            DeathCause::AlreadyRunning { instance, line } => write!(
                f,
                "PX4 server already running for instance {instance}: another PX4 started with \
                 -i {instance} is still alive; stop it or use another instance (PX4 said: {line})"
            ),
            DeathCause::LinkSilent { silent } => write!(
                f,
                "link silent for {:.1} s: no MAVLink message from PX4",
                silent.as_secs_f32()
            ),
            DeathCause::ClockStalled { stalled } => write!(
                f,
                "SYSTEM_TIME stopped: PX4's clock did not advance for {:.1} s",
                stalled.as_secs_f32()
            ),
            DeathCause::LinkLost { error, .. } => write!(f, "link lost: {error}"),
            DeathCause::SimStopped => f.write_str(crate::run::SIM_STOPPED),
            DeathCause::NoClockProgress {
                waited_sim_s,
                timeout_s,
                wall,
                speed,
            } => {
                write!(
                    f,
                    "no progress of the vehicle clock: {waited_sim_s:.1} s of its {timeout_s} s \
                     sim timeout passed in {:.0} s wall",
                    wall.as_secs_f64()
                )?;
                if let Some(speed) = speed {
                    write!(f, " at ×{speed}")?;
                }
                write!(
                    f,
                    " (bound: timeout / speed × 2 + {} s)",
                    crate::run::WALL_MARGIN_S
                )
            }
            DeathCause::Other(text) => f.write_str(text),
            DeathCause::Closed => f.write_str("PX4 was closed by its owner"),
        }
    }
}

/// Lines of PX4 output kept in memory for error messages.
pub const OUTPUT_TAIL_LINES: usize = 40;

#[derive(Debug, Default)]
pub(crate) struct State {
    pub(crate) cause: Option<DeathCause>,
    pub(crate) exit: Option<ExitStatus>,
    /// The process has been (or is being) reaped: its pid and group may be reused, send nothing.
    pub(crate) reaped: bool,
    /// The supervisor is done: the process is reaped and its exit recorded.
    pub(crate) finished: bool,
    pub(crate) ready: bool,
    pub(crate) startup_failed: Option<String>,
    pub(crate) close_requested: bool,
    pub(crate) tail: VecDeque<String>,
    wakers: Vec<Arc<mio::Waker>>,
}

impl State {
    /// Record `cause` unless one is already recorded; true if this one is now the cause.
    pub(crate) fn record(&mut self, cause: DeathCause) -> bool {
        if self.cause.is_some() {
            return false;
        }
        self.cause = Some(cause);
        for w in &self.wakers {
            let _ = w.wake();
        }
        true
    }
}

#[derive(Debug, Default)]
pub(crate) struct Shared {
    state: Mutex<State>,
    changed: Condvar,
}

impl Shared {
    pub(crate) fn lock(&self) -> MutexGuard<'_, State> {
        sync::lock(&self.state)
    }

    pub(crate) fn notify(&self) {
        self.changed.notify_all();
    }

    /// Wait until `done(state)` returns `Some`, or `timeout` passes.
    pub(crate) fn wait_for<T>(
        &self,
        timeout: Duration,
        mut done: impl FnMut(&State) -> Option<T>,
    ) -> Option<T> {
        let deadline = Instant::now() + timeout;
        let mut state = self.lock();
        loop {
            if let Some(t) = done(&state) {
                return Some(t);
            }
            let left = deadline.checked_duration_since(Instant::now())?;
            state = sync::wait_timeout(&self.changed, state, left);
        }
    }
}

/// A handle on one PX4 instance's death, for the pump and any other thread: cheap to clone,
/// `Send + Sync`, valid after the process is gone.
#[derive(Debug, Clone)]
pub struct DeathWatch {
    pub(crate) shared: Arc<Shared>,
}

impl DeathWatch {
    /// The cause, once PX4 is dead (or has been declared dead).
    pub fn died(&self) -> Option<DeathCause> {
        self.shared.lock().cause.clone()
    }

    /// Block until PX4 dies or `timeout` (wall time) passes.
    pub fn wait(&self, timeout: Duration) -> Option<DeathCause> {
        self.shared.wait_for(timeout, |s| s.cause.clone())
    }

    /// Record a cause only telemetry can see ([`DeathCause::LinkSilent`],
    /// [`DeathCause::ClockStalled`]). Returns false if a cause was already recorded, which
    /// stays. The process keeps running until the owner closes it.
    pub fn declare_dead(&self, cause: DeathCause) -> bool {
        let recorded = self.shared.lock().record(cause);
        self.shared.notify();
        recorded
    }

    /// Wake `waker` when a cause is recorded (at once if one already is), so a pump blocked in
    /// `Poll::poll` learns of the death without polling for it.
    pub fn add_waker(&self, waker: Arc<mio::Waker>) {
        let mut state = self.shared.lock();
        if state.cause.is_some() {
            let _ = waker.wake();
        }
        state.wakers.push(waker);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_causes_a_link_or_a_run_finds_say_what_happened() {
        let e = std::io::Error::new(std::io::ErrorKind::BrokenPipe, "the device hung up");
        let lost = DeathCause::link_lost(&e);
        assert!(matches!(
            &lost,
            DeathCause::LinkLost {
                kind: std::io::ErrorKind::BrokenPipe,
                ..
            }
        ));
        assert_eq!(lost.to_string(), "link lost: the device hung up");
        assert_eq!(DeathCause::SimStopped.to_string(), crate::run::SIM_STOPPED);
        let slow = DeathCause::NoClockProgress {
            waited_sim_s: 0.25,
            timeout_s: 1.0,
            wall: std::time::Duration::from_millis(12_400),
            speed: Some(10.0),
        };
        assert_eq!(
            slow.to_string(),
            "no progress of the vehicle clock: 0.2 s of its 1 s sim timeout passed in 12 s wall \
             at ×10 (bound: timeout / speed × 2 + 10 s)"
        );
        let unknown_speed = DeathCause::NoClockProgress {
            waited_sim_s: 0.25,
            timeout_s: 1.0,
            wall: std::time::Duration::from_millis(12_400),
            speed: None,
        };
        assert!(
            !unknown_speed.to_string().contains(" at ×"),
            "{unknown_speed}"
        );
        assert_eq!(DeathCause::Other("gone".into()).to_string(), "gone");
    }
}
