//! Ctrl-C during a blocking call: the GIL is released, so the call itself looks for pending
//! signals every [`SIGNAL_POLL`] of wall time and raises what the handler raised
//! (`KeyboardInterrupt`).

use std::time::{Duration, Instant};

use pyo3::prelude::*;

/// How often a blocking wait looks for a signal (Ctrl-C), wall time.
pub(crate) const SIGNAL_POLL: Duration = Duration::from_millis(50);

/// Looks for pending signals at most every [`SIGNAL_POLL`], taking the GIL only then.
pub(crate) struct Signals {
    last: Instant,
    pub(crate) err: Option<PyErr>,
}

impl Signals {
    pub(crate) fn new() -> Self {
        Signals {
            last: Instant::now(),
            err: None,
        }
    }

    /// Whether a signal handler raised (Ctrl-C: `KeyboardInterrupt`).
    pub(crate) fn interrupted(&mut self) -> bool {
        if self.err.is_none() && self.last.elapsed() >= SIGNAL_POLL {
            self.last = Instant::now();
            if let Err(e) = Python::with_gil(|py| py.check_signals()) {
                self.err = Some(e);
            }
        }
        self.err.is_some()
    }
}