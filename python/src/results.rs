//! What waits and programs return: `SnapshotPX4` (the vehicle as the engine saw it),
//! `WaitResult` (how an engine wait ended), `Waited` (a predicate wait that held) and
//! `ProgramReport` (a step program's steps). Units: seconds of sim time for `t_sim_s` and
//! `waited_sim_s`, wall seconds for `waited_wall_s`, metres and metres per second.

use nexus_core::engine::{ProgramEnd, Reason, SnapshotAt, WaitResult};
use nexus_core::mode::Mode;
use nexus_core::telemetry::Snapshot;
use nexus_host::pump::ProgramReport as HostReport;
use pyo3::prelude::*;
use pyo3::types::PyList;

pub(crate) fn mode_name(m: Option<Mode>) -> Option<String> {
    m.map(|m| m.name().map_or_else(|| format!("{m:?}"), str::to_owned))
}

/// The vehicle as the wait engine saw it (PX4's telemetry on the offboard link).
#[pyclass(frozen, get_all, module = "nexus_uav")]
#[derive(Clone)]
pub struct SnapshotPX4 {
    /// The autopilot's clock, SYSTEM_TIME.time_boot_ms, in seconds (0.0 before the first).
    t_sim_s: f64,
    /// The same clock in milliseconds, or None before the first report.
    sim_ms: Option<u64>,
    /// Sequence number of the newest STATUSTEXT (pass it as `since_seq`).
    seq: u32,
    /// The armed flag of the last heartbeat.
    armed: bool,
    /// The flight mode of the last heartbeat ("Takeoff", "Hold", …), None before one.
    mode: Option<String>,
    /// Height above the pad (or GLOBAL_POSITION_INT.relative_alt), m.
    height_m: Option<f32>,
    /// VFR_HUD.airspeed, m/s.
    airspeed_m_s: Option<f32>,
    /// MISSION_CURRENT.seq.
    waypoint: Option<u16>,
    /// EXTENDED_SYS_STATE.landed_state: "ON_GROUND", "IN_AIR", "TAKING_OFF", "LANDING", "UNKNOWN".
    landed: String,
    /// The newest STATUSTEXT, or None.
    last_text: Option<String>,
    /// Why the run died (with reason "died"), else None.
    error: Option<String>,
}

impl From<&Snapshot> for SnapshotPX4 {
    fn from(s: &Snapshot) -> Self {
        SnapshotPX4 {
            t_sim_s: s.t_sim_s(),
            sim_ms: s.sim_ms,
            seq: s.seq,
            armed: s.armed,
            mode: mode_name(s.mode),
            height_m: s.height_m,
            airspeed_m_s: s.airspeed_m_s,
            waypoint: s.waypoint,
            landed: s.landed.name().to_owned(),
            last_text: s.last_text.as_ref().map(|t| t.text.as_str().to_owned()),
            error: s.error.as_ref().map(|e| e.as_str().to_owned()),
        }
    }
}

#[pymethods]
impl SnapshotPX4 {
    fn __repr__(&self) -> String {
        format!(
            "SnapshotPX4(t_sim_s={:.3}, seq={}, armed={}, mode={}, height_m={}, landed={:?}, \
             waypoint={}, last_text={}, error={})",
            self.t_sim_s,
            self.seq,
            py_bool(self.armed),
            py_opt_str(&self.mode),
            self.height_m
                .map_or_else(|| "None".into(), |h| format!("{h:.2}")),
            self.landed,
            self.waypoint
                .map_or_else(|| "None".into(), |w| w.to_string()),
            py_opt_str(&self.last_text),
            py_opt_str(&self.error),
        )
    }
}

pub(crate) fn py_bool(b: bool) -> &'static str {
    if b {
        "True"
    } else {
        "False"
    }
}

pub(crate) fn py_opt_str(s: &Option<String>) -> String {
    s.as_ref()
        .map_or_else(|| "None".to_owned(), |s| format!("{s:?}"))
}

/// How an engine wait ended.
#[pyclass(frozen, get_all, name = "WaitResult", module = "nexus_uav")]
pub struct WaitResult_ {
    /// reason == "met".
    satisfied: bool,
    /// "met", "timeout" (timeout_s of sim time passed), "guard" (a guard held first: see
    /// `guard`), "died" (the vehicle died: see snapshot.error), "cap" (the wall-clock limit
    /// wait_cap_s came first: call again with since_seq=snapshot.seq), "closed".
    reason: String,
    /// Sim seconds from the call to the end.
    waited_sim_s: f64,
    /// Wall seconds from the call to the end.
    waited_wall_s: f64,
    /// "settle": taken in the tick the wait settled; "return": as the call returned (cap, or
    /// already true).
    snapshot_at: String,
    /// The vehicle at the end.
    snapshot: Py<SnapshotPX4>,
    /// Index of the guard that fired (reason "guard"), else None.
    guard: Option<u8>,
    /// Why the wait ended without its condition, in PX4's words where it gave any (what the
    /// `nexus` command prints); None when met, capped or closed.
    explanation: Option<String>,
}

#[pymethods]
impl WaitResult_ {
    fn __repr__(&self, py: Python<'_>) -> String {
        let snap = self.snapshot.get().__repr__();
        let _ = py;
        format!(
            "WaitResult(satisfied={}, reason={:?}, waited_sim_s={:.3}, waited_wall_s={:.3}, \
             snapshot_at={:?}, guard={}, explanation={}, snapshot={})",
            py_bool(self.satisfied),
            self.reason,
            self.waited_sim_s,
            self.waited_wall_s,
            self.snapshot_at,
            self.guard.map_or_else(|| "None".into(), |g| g.to_string()),
            py_opt_str(&self.explanation),
            snap
        )
    }

    fn __bool__(&self) -> bool {
        self.satisfied
    }
}

pub(crate) fn wait_result(
    py: Python<'_>,
    r: &WaitResult,
    explanation: Option<String>,
) -> PyResult<WaitResult_> {
    Ok(WaitResult_ {
        satisfied: r.satisfied,
        reason: r.reason.name().to_owned(),
        waited_sim_s: f64::from(r.waited_sim_s),
        waited_wall_s: r.waited_wall.total_micros() as f64 / 1e6,
        snapshot_at: match r.snapshot_at {
            SnapshotAt::Settle => "settle",
            SnapshotAt::Return => "return",
        }
        .to_owned(),
        snapshot: Py::new(py, SnapshotPX4::from(&r.snapshot))?,
        guard: r.guard,
        explanation: if r.reason == Reason::Met {
            None
        } else {
            explanation
        },
    })
}

/// How a `Sim.wait_until` on a predicate went.
#[pyclass(frozen, get_all, module = "nexus_uav")]
pub struct Waited {
    /// Sim seconds from the call to the predicate holding.
    pub(crate) waited_sim_s: f64,
    /// Wall seconds likewise.
    pub(crate) waited_wall_s: f64,
}

#[pymethods]
impl Waited {
    fn __repr__(&self) -> String {
        format!(
            "Waited(waited_sim_s={:.3}, waited_wall_s={:.3})",
            self.waited_sim_s, self.waited_wall_s
        )
    }
}
/// How a step program (`Sim.run_steps`) ended, with every step's WaitResult.
#[pyclass(frozen, get_all, module = "nexus_uav")]
pub struct ProgramReport {
    /// Every step ran and each one's condition was met.
    passed: bool,
    /// "completed" (every step ran; some may have timed out with on_timeout "continue"),
    /// "stopped" (a step timed out with on_timeout "stop", or a guard fired), "died" (the
    /// vehicle died), "aborted" (abort_steps, wait_cap_s, Ctrl-C, the run closing, or an
    /// action that failed: see error).
    end: String,
    /// Index of the step the program ended in (None when it completed).
    ended_at: Option<usize>,
    /// Why it did not complete, in words, else None.
    error: Option<String>,
    /// Each step's WaitResult in order (steps never reached are absent).
    steps: Py<PyList>,
}

#[pymethods]
impl ProgramReport {
    fn __repr__(&self, py: Python<'_>) -> String {
        format!(
            "ProgramReport(passed={}, end={:?}, ended_at={}, error={}, steps={})",
            py_bool(self.passed),
            self.end,
            self.ended_at
                .map_or_else(|| "None".into(), |i| i.to_string()),
            py_opt_str(&self.error),
            self.steps.bind(py).len()
        )
    }

    fn __bool__(&self) -> bool {
        self.passed
    }
}

pub(crate) fn program_report(
    py: Python<'_>,
    r: &HostReport,
    why: &[Option<String>],
) -> PyResult<ProgramReport> {
    let (end, at) = match r.end {
        ProgramEnd::Completed => ("completed", None),
        ProgramEnd::Stopped { step } => ("stopped", Some(step)),
        ProgramEnd::Died { step } => ("died", Some(step)),
        ProgramEnd::Aborted { step } => ("aborted", Some(step)),
    };
    let steps = PyList::empty(py);
    for (i, rec) in r.records.iter().enumerate() {
        let why = why.get(i).cloned().flatten();
        steps.append(Py::new(py, wait_result(py, &rec.result, why)?)?)?;
    }
    Ok(ProgramReport {
        passed: r.passed(),
        end: end.to_owned(),
        ended_at: at,
        error: r.error.clone(),
        steps: steps.unbind(),
    })
}
