//! Ctrl-C during a blocking call: the GIL is released, so the call itself looks for pending
//! signals every [`SIGNAL_POLL`] of wall time and raises what the handler raised
//! (`KeyboardInterrupt`). A call run in a worker thread (the asyncio face) cannot see signals,
//! which Python delivers to the main thread: it is given a cancel event instead (anything with
//! `is_set()`, a `threading.Event`), set when its coroutine is cancelled.

use std::time::{Duration, Instant};

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;

/// How often a blocking wait looks for a signal (Ctrl-C) or its cancel event, wall time.
pub(crate) const SIGNAL_POLL: Duration = Duration::from_millis(50);

/// Looks for pending signals, and the cancel event, at most every [`SIGNAL_POLL`], taking the
/// GIL only then.
pub(crate) struct Signals {
    last: Instant,
    cancel: Option<Py<PyAny>>,
    pub(crate) err: Option<PyErr>,
}

impl Signals {
    pub(crate) fn new(cancel: Option<&Bound<'_, PyAny>>) -> Self {
        Signals {
            last: Instant::now(),
            cancel: cancel.filter(|c| !c.is_none()).map(|c| c.clone().unbind()),
            err: None,
        }
    }

    /// Whether a signal handler raised (Ctrl-C: `KeyboardInterrupt`) or the cancel event is
    /// set (then a RuntimeError nobody awaits any more).
    pub(crate) fn interrupted(&mut self) -> bool {
        if self.err.is_none() && self.last.elapsed() >= SIGNAL_POLL {
            self.last = Instant::now();
            self.err = Python::with_gil(|py| {
                if let Err(e) = py.check_signals() {
                    return Some(e);
                }
                let c = self.cancel.as_ref()?;
                match c.call_method0(py, "is_set").and_then(|v| v.is_truthy(py)) {
                    Ok(true) => Some(PyRuntimeError::new_err("the wait was cancelled")),
                    Ok(false) => None,
                    Err(e) => Some(e),
                }
            });
        }
        self.err.is_some()
    }
}
