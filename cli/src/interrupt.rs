//! Interrupts: what SIGINT, SIGTERM and SIGHUP do to a `nexus` command.
//!
//! Without this, the default action kills the process at once: no verdict, no report, a PX4
//! left to `PR_SET_PDEATHSIG` and its helpers left running. With [`install`] (the `nexus`
//! binary does it first thing), a thread of ours receives them (signal-hook's self-pipe, so
//! nothing runs in the handler itself) and:
//!
//! * the **first** signal is recorded ([`caught`]); a command that handles interrupts (it
//!   holds a [`Handling`]: `fly` and `run` once their vehicle has started, `sim`, `bridge`)
//!   sees it on its next tick (50 ms) and ends its work in order: the pending wait or step program ends `aborted` with "interrupted by
//!   SIGINT", the lines and the report are written with that reason, the vehicle is stopped
//!   (PX4 closed, with everything it started), and the command exits 128 + the signal's
//!   number (130 / 143 / 129);
//! * when no command handles it, or the one that does has not exited within
//!   [`HANDLING_LIMIT`], or a **second** signal comes, the process ends from this thread: every
//!   running PX4 launch is SIGKILLed with what it started ([`nexus_host::launcher::end_all_now`]),
//!   one line goes to stderr, and the exit code is the first signal's 128 + n. So a `fly`
//!   whose PX4 is still starting, or a `watch`, ends at once (no report: nothing flew yet).

use std::io;
use std::sync::atomic::{AtomicI32, AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::time::Duration;

use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

/// How long a command that handles interrupts may take to end after the first signal before
/// the process is ended without it (wall).
pub const HANDLING_LIMIT: Duration = Duration::from_secs(5);

/// The first signal received (0: none yet).
static CAUGHT: AtomicI32 = AtomicI32::new(0);

/// How many [`Handling`] guards are alive.
static HANDLERS: AtomicUsize = AtomicUsize::new(0);

/// Whether [`install`] has run, and how it went.
static INSTALLED: OnceLock<Result<(), String>> = OnceLock::new();

/// A signal that was received.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Caught {
    /// The signal's number (SIGINT 2, SIGTERM 15, SIGHUP 1).
    pub signal: i32,
}

impl Caught {
    /// "SIGINT", "SIGTERM", "SIGHUP".
    pub fn name(&self) -> &'static str {
        match self.signal {
            SIGINT => "SIGINT",
            SIGTERM => "SIGTERM",
            SIGHUP => "SIGHUP",
            _ => "a signal",
        }
    }

    /// The shell's convention for a command ended by a signal: 128 + its number.
    pub fn exit_code(&self) -> u8 {
        (128 + self.signal.clamp(0, 127)) as u8
    }

    /// "interrupted by SIGINT": the reason a wait, a program or a command ends with.
    pub fn reason(&self) -> String {
        format!("interrupted by {}", self.name())
    }
}

/// Receive SIGINT, SIGTERM and SIGHUP on a thread of ours from now on (module docs).
/// Idempotent; an error says why the signals could not be taken (they then keep their default
/// action).
pub fn install() -> io::Result<()> {
    INSTALLED
        .get_or_init(|| {
            let mut signals = Signals::new([SIGINT, SIGTERM, SIGHUP]).map_err(|e| e.to_string())?;
            std::thread::Builder::new()
                .name("nexus-signals".into())
                .spawn(move || {
                    for signal in signals.forever() {
                        on_signal(signal);
                    }
                })
                .map(|_| ())
                .map_err(|e| e.to_string())
        })
        .clone()
        .map_err(io::Error::other)
}

/// The first signal received, if any.
pub fn caught() -> Option<Caught> {
    match CAUGHT.load(Ordering::SeqCst) {
        0 => None,
        signal => Some(Caught { signal }),
    }
}

/// While alive, the first signal is left to its holder to act on ([`caught`]); without one the
/// process ends at once.
#[derive(Debug)]
#[must_use = "the first signal is handled only while the guard lives"]
pub struct Handling(());

/// Say that this command acts on [`caught`] itself (module docs).
pub fn handle() -> Handling {
    HANDLERS.fetch_add(1, Ordering::SeqCst);
    Handling(())
}

impl Drop for Handling {
    fn drop(&mut self) {
        HANDLERS.fetch_sub(1, Ordering::SeqCst);
    }
}

fn on_signal(signal: i32) {
    let first = CAUGHT
        .compare_exchange(0, signal, Ordering::SeqCst, Ordering::SeqCst)
        .is_ok();
    let caught = caught().unwrap_or(Caught { signal });
    if !first {
        end_now(
            caught,
            &format!("{} again: ending at once", Caught { signal }.name()),
        );
    }
    if HANDLERS.load(Ordering::SeqCst) == 0 {
        end_now(caught, "");
    }
    // The command ends by itself; should it not, within the limit, end it from here.
    let _ = std::thread::Builder::new()
        .name("nexus-signals-limit".into())
        .spawn(move || {
            std::thread::sleep(HANDLING_LIMIT);
            end_now(
                caught,
                &format!(
                    "not ended within {} s: ending at once",
                    HANDLING_LIMIT.as_secs()
                ),
            );
        });
}

/// End every running PX4 launch and the process, with the signal's exit code.
fn end_now(caught: Caught, why: &str) -> ! {
    // Said first: a command that was closing PX4 may see it die and exit on its own meanwhile.
    if why.is_empty() {
        eprintln!("nexus: {}", caught.reason());
    } else {
        eprintln!("nexus: {} ({why})", caught.reason());
    }
    nexus_host::launcher::end_all_now();
    std::process::exit(i32::from(caught.exit_code()));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signals_name_their_reason_and_exit_code() {
        let c = |signal| Caught { signal };
        assert_eq!(c(SIGINT).reason(), "interrupted by SIGINT");
        assert_eq!(c(SIGINT).exit_code(), 130);
        assert_eq!(c(SIGTERM).name(), "SIGTERM");
        assert_eq!(c(SIGTERM).exit_code(), 143);
        assert_eq!(c(SIGHUP).exit_code(), 129);
        assert_eq!(c(1000).exit_code(), 255, "never past a u8");
    }
}
