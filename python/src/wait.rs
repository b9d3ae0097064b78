//! Driving a blocking wait with the GIL released: an engine wait (`Sim.wait`) and a step
//! program (`Sim.run_steps`) both end on the pump, so the caller's thread only looks for a
//! result, a signal (Ctrl-C cancels the wait on the pump, or aborts the program) and its wall
//! cap, and steps a lockstep vehicle. `fast_query` reads a bound OffboardClient query in Rust.

use std::sync::Arc;
use std::time::{Duration, Instant};

use nexus_core::engine::{Wait, WaitResult};
use nexus_host::error::RunError as HostRunError;
use nexus_host::groups::{MissionApi, TelemetryApi};
use nexus_host::offboard_client::OffboardClient as HostClient;
use nexus_host::pump::{HostProgram, ProgramReport};
use nexus_host::run::{Run as HostRun, RunClock};
use pyo3::exceptions::PyKeyboardInterrupt;
use pyo3::prelude::*;

use crate::client::OffboardClient;
use crate::errors::run_error;
use crate::signals::Signals;

/// A fast path for `sim.wait_until(op.at_target, …)`: a bound query of an OffboardClient is
/// read in Rust, without taking the GIL at every look.
/// A client and one of its boolean queries.
pub(crate) type FastQuery = (Arc<HostClient>, fn(&HostClient) -> bool);

pub(crate) fn fast_query(pred: &Bound<'_, PyAny>) -> Option<FastQuery> {
    let owner = pred.getattr("__self__").ok()?;
    let client = owner.downcast::<OffboardClient>().ok()?;
    let name: String = pred.getattr("__name__").ok()?.extract().ok()?;
    let f: fn(&HostClient) -> bool = match name.as_str() {
        "at_target" => HostClient::at_target,
        "is_armed" => HostClient::is_armed,
        "mission_uploaded" => HostClient::mission_uploaded,
        "mission_complete" => HostClient::mission_complete,
        _ => return None,
    };
    Some((Arc::clone(&client.borrow().inner), f))
}

/// Lockstep: whole sim milliseconds a step takes.
fn chunk_ms(sim: &HostRun) -> u64 {
    let chunk_s = sim.options().lockstep_chunk_s;
    if chunk_s.is_finite() && chunk_s > 0.0 {
        ((chunk_s * 1000.0).round() as u64).max(1)
    } else {
        20
    }
}

/// The wall bound of a real-time wait of `timeout_s` sim seconds (as every wait of the `nexus`
/// command), with the caller's cap.
fn bounded(sim: &HostRun, timeout_s: f64, cap: Option<Duration>) -> Option<Duration> {
    let bound = match sim.options().clock {
        RunClock::RealTime { speed } if !sim.is_lockstep() => {
            Some(nexus_host::run::wall_bound(timeout_s, speed))
        }
        RunClock::Max => Some(nexus_host::run::wall_bound(timeout_s, 1.0)),
        _ => None,
    };
    match (cap, bound) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// Wait for `w` on the run's offboard link, at most `cap` of wall time (then reason "cap"), with
/// the GIL released; the result and why it was not met.
pub(crate) fn drive(
    py: Python<'_>,
    sim: Arc<HostRun>,
    w: &Wait,
    cap: Option<Duration>,
    cancel: Option<&Bound<'_, PyAny>>,
) -> PyResult<(WaitResult, Option<String>)> {
    let link = sim
        .offboard_link()
        .ok_or_else(|| run_error(HostRunError::NoClient))?;
    let mut pending = link.register(w).map_err(|e| run_error(e.into()))?;
    let timeout_s = w.timeout().map_or(0.0, f64::from);
    let cap = bounded(&sim, timeout_s, cap);
    let lockstep = sim.is_lockstep();
    let chunk = chunk_ms(&sim);
    let mut signals = Signals::new(cancel);
    let out = py.allow_threads(move || {
        let deadline = cap.map(|c| Instant::now() + c);
        loop {
            if let Some(r) = pending.try_result() {
                let why = pending.explanation();
                return Ok((r, why));
            }
            if signals.interrupted() {
                drop(pending); // cancels the wait on the pump
                return Err(signals.err.take());
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return Ok((pending.cap(), None));
            }
            if lockstep {
                if sim.step(chunk).is_err() {
                    return Ok(pending.join_explained(Some(Duration::from_secs(2))));
                }
            } else if let Some(r) = pending.join_timeout(Duration::from_millis(5)) {
                let why = pending.explanation();
                return Ok((r, why));
            }
        }
    });
    out.map_err(|e| e.unwrap_or_else(|| PyKeyboardInterrupt::new_err("")))
}

/// Run `program` on the run's offboard link to its end, with the GIL released: at most `cap`
/// of wall time, then it is aborted (as `abort_steps`, and as Ctrl-C, which then raises).
pub(crate) fn drive_program(
    py: Python<'_>,
    sim: Arc<HostRun>,
    program: HostProgram,
    cap: Option<Duration>,
    cancel: Option<&Bound<'_, PyAny>>,
) -> PyResult<ProgramReport> {
    let link = sim
        .offboard_link()
        .ok_or_else(|| run_error(HostRunError::NoClient))?;
    let pending = link
        .start_program(program)
        .map_err(|e| run_error(e.into()))?;
    let lockstep = sim.is_lockstep();
    let chunk = chunk_ms(&sim);
    let mut signals = Signals::new(cancel);
    let out = py.allow_threads(move || {
        let deadline = cap.map(|c| Instant::now() + c);
        loop {
            if let Some(r) = pending.try_report() {
                return Ok(r);
            }
            if signals.interrupted() {
                let _ = link.abort_program();
                let _ = pending.join(Some(Duration::from_secs(2)));
                return Err(signals.err.take());
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return Ok(pending.join(Some(Duration::ZERO)));
            }
            if lockstep {
                if sim.step(chunk).is_err() {
                    return Ok(pending.join(Some(Duration::from_secs(2))));
                }
            } else if let Some(r) = pending.join_timeout(Duration::from_millis(5)) {
                return Ok(r);
            }
        }
    });
    out.map_err(|e| e.unwrap_or_else(|| PyKeyboardInterrupt::new_err("")))
}
