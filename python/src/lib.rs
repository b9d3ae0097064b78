//! `nexus_uav._native`: the Python face of nexus-host. The Python package (`nexus_uav`,
//! `nexus_uav.px4`) re-exports these classes; `Plan`, `MissionItem` and `Session` are pure Python
//! on top of them.
//!
//! Every blocking call releases the GIL. A wait checks for signals every
//! [`SIGNAL_POLL`] of wall time, so Ctrl-C raises `KeyboardInterrupt` promptly; the pending wait is
//! cancelled on the pump, and the vehicle closes with its `Sim` (on `__exit__`, `close()` or when
//! the object is collected).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use nexus_core::engine::{Condition, Op, Reason, SnapshotAt, Wait, WaitResult};
use nexus_core::mission::MissionItem;
use nexus_core::mode::Mode;
use nexus_core::rc::RcSticks;
use nexus_core::telemetry::{LandedState, Snapshot};
use nexus_host::error::{ClientError, ConnectError, RunError as HostRunError};
use nexus_host::offboard_client::{read_plan_file, MissionSource, OffboardClient as HostClient};
use nexus_host::run::{RunClock, Sim as HostSim, SimOptions, VehicleKind};
use nexus_host::sim::Fault;
use pyo3::create_exception;
use pyo3::exceptions::{PyKeyError, PyRuntimeError, PyTimeoutError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

create_exception!(
    _native,
    RunError,
    PyRuntimeError,
    "The run lost its vehicle (it exited, panicked, went silent or its clock stopped), or could \
     not start or connect to it. The message names the cause and the port."
);

/// How often a blocking wait looks for a signal (Ctrl-C), wall time.
const SIGNAL_POLL: Duration = Duration::from_millis(50);

/// Looks for pending signals at most every [`SIGNAL_POLL`], taking the GIL only then.
struct Signals {
    last: Instant,
    err: Option<PyErr>,
}

impl Signals {
    fn new() -> Self {
        Signals {
            last: Instant::now(),
            err: None,
        }
    }

    /// Whether a signal handler raised (Ctrl-C: `KeyboardInterrupt`).
    fn interrupted(&mut self) -> bool {
        if self.err.is_none() && self.last.elapsed() >= SIGNAL_POLL {
            self.last = Instant::now();
            if let Err(e) = Python::with_gil(|py| py.check_signals()) {
                self.err = Some(e);
            }
        }
        self.err.is_some()
    }
}

fn run_error(e: HostRunError) -> PyErr {
    let msg = e.to_string();
    match e {
        HostRunError::Timeout { .. } => PyTimeoutError::new_err(msg),
        HostRunError::BadTimeout(_) => PyValueError::new_err(msg),
        HostRunError::NoOffboardLink { .. } | HostRunError::NoSuchLink { .. } => {
            PyKeyError::new_err(msg)
        }
        HostRunError::Wait(_) => PyValueError::new_err(msg),
        _ => RunError::new_err(msg),
    }
}

fn client_error(e: ClientError) -> PyErr {
    let msg = e.to_string();
    match e {
        ClientError::UnknownMode { .. } | ClientError::Plan { .. } | ClientError::Conn(_) => {
            PyValueError::new_err(msg)
        }
        _ => PyRuntimeError::new_err(msg),
    }
}

fn connect_error(e: ConnectError) -> PyErr {
    let msg = e.to_string();
    match e {
        ConnectError::NoOffboardLink { .. } => PyKeyError::new_err(msg),
        ConnectError::Client(c) => client_error(c),
        _ => RunError::new_err(msg),
    }
}

fn mode_name(m: Option<Mode>) -> Option<String> {
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

fn py_bool(b: bool) -> &'static str {
    if b {
        "True"
    } else {
        "False"
    }
}

fn py_opt_str(s: &Option<String>) -> String {
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

fn wait_result(
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
    waited_sim_s: f64,
    /// Wall seconds likewise.
    waited_wall_s: f64,
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

/// A run: the vehicle (the built-in simulated PX4 by default, PX4 SITL from a build directory,
/// or none), its clock, and the offboard link's address in `ports`.
#[pyclass(module = "nexus_uav")]
pub struct Sim {
    inner: Arc<HostSim>,
    model: Option<String>,
    scene: String,
    /// The client connect() opened on this run, for engine waits and queries.
    client: Option<Arc<HostClient>>,
}

fn parse_op(op: &str) -> PyResult<Op> {
    match op {
        ">=" => Ok(Op::Ge),
        "<=" => Ok(Op::Le),
        "==" => Ok(Op::Eq),
        other => Err(PyValueError::new_err(format!(
            "op must be \">=\", \"<=\" or \"==\", got {other:?}"
        ))),
    }
}

fn need_value<'py>(name: &str, value: Option<&Bound<'py, PyAny>>) -> PyResult<Bound<'py, PyAny>> {
    value
        .cloned()
        .ok_or_else(|| PyValueError::new_err(format!("condition {name:?} needs a value")))
}

fn no_value(name: &str, value: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
    match value {
        Some(v) if !v.is_none() => Err(PyValueError::new_err(format!(
            "condition {name:?} takes no value"
        ))),
        _ => Ok(()),
    }
}

fn f32_of(name: &str, v: &Bound<'_, PyAny>) -> PyResult<f32> {
    let x: f64 = v
        .extract()
        .map_err(|_| PyTypeError::new_err(format!("condition {name:?} needs a number")))?;
    Ok(x as f32)
}

/// One condition of the engine's closed table, from its name, value and op.
fn condition(
    name: &str,
    value: Option<&Bound<'_, PyAny>>,
    op: Option<&str>,
) -> PyResult<Condition> {
    let mut c = match name {
        "altitude" => Condition::altitude_m(f32_of(name, &need_value(name, value)?)?),
        "airspeed" => Condition::airspeed_m_s(f32_of(name, &need_value(name, value)?)?),
        "waypoint" => Condition::waypoint(need_value(name, value)?.extract()?),
        "sim_time" => Condition::sim_time_s(f32_of(name, &need_value(name, value)?)?),
        "time" => Condition::time_s(f32_of(name, &need_value(name, value)?)?),
        "groundspeed" => Condition::groundspeed_m_s(f32_of(name, &need_value(name, value)?)?),
        "climb_rate" => Condition::climb_rate_m_s(f32_of(name, &need_value(name, value)?)?),
        "mode" => {
            let m: String = need_value(name, value)?.extract()?;
            Condition::mode(Mode::from_name(&m).map_err(|e| PyValueError::new_err(e.to_string()))?)
        }
        "text" => Condition::text(&need_value(name, value)?.extract::<String>()?),
        "reached" => Condition::reached(need_value(name, value)?.extract()?),
        "armed" | "disarmed" | "landed" | "mission_complete" | "at_target" => {
            no_value(name, value)?;
            match name {
                "armed" => Condition::armed(),
                "disarmed" => Condition::disarmed(),
                "landed" => Condition::landed(),
                "mission_complete" => Condition::mission_complete(),
                _ => Condition::at_target(),
            }
        }
        other => {
            return Err(PyValueError::new_err(format!(
                "unknown condition {other:?}; known: altitude, airspeed, waypoint, sim_time, time, \
                 mode, text, armed, disarmed, landed, reached, mission_complete, at_target, \
                 groundspeed, climb_rate"
            )))
        }
    };
    if let Some(op) = op {
        let op = parse_op(op)?;
        if op != Op::Ge || c.kind().takes_op() {
            if !c.kind().takes_op() {
                return Err(PyValueError::new_err(format!(
                    "condition {name:?} takes no op (it is {})",
                    match name {
                        "time" => "always at least the value",
                        "mode" => "an equality",
                        "text" => "a substring match",
                        _ => "a flag",
                    }
                )));
            }
            c = c.op(op);
        }
    }
    Ok(c)
}

/// A guard: "disarmed", or (name, value) / (name, value, op).
fn guard_condition(g: &Bound<'_, PyAny>) -> PyResult<Condition> {
    if let Ok(name) = g.extract::<String>() {
        return condition(&name, None, None);
    }
    let t = g.downcast::<PyTuple>().map_err(|_| {
        PyTypeError::new_err(
            "a guard is a condition name (\"disarmed\") or a tuple (name, value[, op])",
        )
    })?;
    let name: String = t.get_item(0)?.extract()?;
    let value = if t.len() > 1 {
        Some(t.get_item(1)?)
    } else {
        None
    };
    let op: Option<String> = if t.len() > 2 {
        Some(t.get_item(2)?.extract()?)
    } else {
        None
    };
    condition(&name, value.as_ref(), op.as_deref())
}

fn sticks_of(v: &Bound<'_, PyAny>) -> PyResult<RcSticks> {
    if let Ok(d) = v.downcast::<PyDict>() {
        let get = |k: &str, dflt: f32| -> PyResult<f32> {
            Ok(match d.get_item(k)? {
                Some(x) => x.extract::<f64>()? as f32,
                None => dflt,
            })
        };
        return Ok(RcSticks {
            roll: get("roll", 0.0)?,
            pitch: get("pitch", 0.0)?,
            throttle: get("throttle", 0.5)?,
            yaw: get("yaw", 0.0)?,
        }
        .clamped());
    }
    let (roll, pitch, throttle, yaw): (f32, f32, f32, f32) = v.extract().map_err(|_| {
        PyTypeError::new_err(
            "then_rc is a dict with roll, pitch, throttle, yaw or a tuple (roll, pitch, throttle, yaw)",
        )
    })?;
    Ok(RcSticks {
        roll,
        pitch,
        throttle,
        yaw,
    }
    .clamped())
}

impl Sim {
    fn host(&self) -> Arc<HostSim> {
        Arc::clone(&self.inner)
    }

    /// Why a predicate wait timed out, as the engine would explain an `at_target` wait that
    /// timed out now (what was pending and why it did not happen, in PX4's words).
    fn explain_timeout(&self, timeout_s: f64) -> Option<String> {
        let link = self.inner.offboard_link()?;
        link.call(move |ctx| {
            let now = ctx.now();
            let c = ctx.client();
            let wait = Wait::until(Condition::at_target()).timeout_s(timeout_s as f32);
            let r = WaitResult::ended(Reason::Timeout, c.snapshot());
            c.explain(now, &wait, &r).map(|e| e.to_string())
        })
        .ok()
        .flatten()
    }
}

/// A fast path for `sim.wait_until(op.at_target, …)`: a bound query of an OffboardClient is
/// read in Rust, without taking the GIL at every look.
/// A client and one of its boolean queries.
type FastQuery = (Arc<HostClient>, fn(&HostClient) -> bool);

fn fast_query(pred: &Bound<'_, PyAny>) -> Option<FastQuery> {
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

#[pymethods]
impl Sim {
    /// Configure a run; nothing starts until `start()` (or entering it as a context manager).
    ///
    /// Args:
    ///     model: The airframe name. The built-in vehicle flies one quadrotor, whatever the name.
    ///     scene: The world; "empty" is the only one.
    ///     vehicle: "builtin" (the built-in simulated PX4, the default), "px4" (PX4 SITL from
    ///         `px4_build` or $NEXUS_PX4_BUILD) or "none" (a clock and nothing to fly).
    ///     instance: SITL instance N: the offboard link listens on UDP 14540 + N, system id N + 1.
    ///     speed: Sim seconds per wall second (1.0: real time), or "lockstep" (the built-in
    ///         vehicle advances only while someone waits), or "max" (as fast as the client takes in).
    ///     px4_build: PX4's build directory (vehicle="px4").
    ///     wait_clear_s: Sim seconds the vehicle must be failure-free before an arm goes out.
    ///     stall_s: Wall seconds of silence, or of a stopped clock, after which the run is dead.
    #[new]
    #[pyo3(signature = (model=None, *, scene="empty", vehicle="builtin", instance=0, speed=None, px4_build=None, wait_clear_s=None, stall_s=5.0))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        model: Option<String>,
        scene: &str,
        vehicle: &str,
        instance: u8,
        speed: Option<&Bound<'_, PyAny>>,
        px4_build: Option<PathBuf>,
        wait_clear_s: Option<f32>,
        stall_s: Option<f64>,
    ) -> PyResult<Self> {
        if scene != "empty" {
            return Err(PyValueError::new_err(format!(
                "unknown scene {scene:?}; the built-in vehicle flies in \"empty\""
            )));
        }
        let mut o = match vehicle {
            "builtin" | "simulated" => SimOptions::simulated(instance),
            "px4" => SimOptions::px4(instance, px4_build),
            "none" => SimOptions::no_vehicle(),
            other => {
                return Err(PyValueError::new_err(format!(
                    "unknown vehicle {other:?}; known: \"builtin\", \"px4\", \"none\""
                )))
            }
        };
        o.instance = instance;
        if let Some(s) = speed {
            if let Ok(name) = s.extract::<String>() {
                o = match name.as_str() {
                    "lockstep" => o.lockstep(),
                    "max" => o.max_speed(),
                    _ => {
                        return Err(PyValueError::new_err(format!(
                            "speed is a number or \"lockstep\" or \"max\", got {name:?}"
                        )))
                    }
                };
            } else {
                let x: f64 = s.extract()?;
                if !(x.is_finite() && x > 0.0) {
                    return Err(PyValueError::new_err(format!(
                        "speed must be a finite number above 0, got {x}"
                    )));
                }
                o = o.speed(x);
            }
        }
        if let Some(w) = wait_clear_s {
            if !(w.is_finite() && w >= 0.0) {
                return Err(PyValueError::new_err("wait_clear_s must be >= 0"));
            }
            o = o.wait_clear_s(w);
        }
        match stall_s {
            None => o = o.stall(None),
            Some(s) if s.is_finite() && s > 0.0 => o = o.stall(Some(Duration::from_secs_f64(s))),
            Some(s) => {
                return Err(PyValueError::new_err(format!(
                    "stall_s must be a number above 0 or None, got {s}"
                )))
            }
        }
        Ok(Sim {
            inner: Arc::new(HostSim::new(o)),
            model,
            scene: scene.to_owned(),
            client: None,
        })
    }

    /// Start the vehicle (PX4: spawn it and wait for its startup script). Returns self.
    ///
    /// Raises:
    ///     RunError: It could not start (PX4 not built, a port in use, …), or it has started.
    fn start(slf: PyRef<'_, Self>, py: Python<'_>) -> PyResult<Py<Sim>> {
        let sim = slf.host();
        py.allow_threads(|| sim.start()).map_err(run_error)?;
        Ok(slf.into())
    }

    /// Stop the vehicle (PX4: SIGTERM then SIGKILL) and close the run. Idempotent.
    fn close(&self, py: Python<'_>) {
        if let Some(c) = &self.client {
            c.close();
        }
        let sim = self.host();
        py.allow_threads(|| sim.close());
    }

    /// Enter the run: returns it; call `start()` inside (leaving it closes the run).
    fn __enter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    #[pyo3(signature = (*_exc))]
    fn __exit__(&self, py: Python<'_>, _exc: &Bound<'_, PyTuple>) -> bool {
        self.close(py);
        false
    }

    /// Whether the run was started and not closed.
    #[getter]
    fn running(&self) -> bool {
        self.inner.is_running()
    }

    /// SITL instance N.
    #[getter]
    fn instance(&self) -> u8 {
        self.inner.instance()
    }

    /// The airframe name given, or None.
    #[getter]
    fn model(&self) -> Option<String> {
        self.model.clone()
    }

    /// The scene.
    #[getter]
    fn scene(&self) -> String {
        self.scene.clone()
    }

    /// The run's port map: {"offboard": {"port": UDP port the client listens on,
    /// "system_id": PX4's system id, "px4_port": the port PX4 sends from}}.
    ///
    /// Raises:
    ///     KeyError: The run has no offboard link (no vehicle), and why.
    ///     RunError: The run has not started.
    #[getter]
    fn ports<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let ports = self.inner.ports().map_err(run_error)?;
        let d = PyDict::new(py);
        let o = PyDict::new(py);
        o.set_item("port", ports.offboard.port)?;
        o.set_item("system_id", ports.offboard.system_id)?;
        o.set_item("px4_port", ports.offboard.px4_port)?;
        d.set_item("offboard", o)?;
        Ok(d)
    }

    /// The run's clock now, sim seconds.
    #[getter]
    fn sim_time_s(&self) -> PyResult<f64> {
        self.inner.sim_time_s().map_err(run_error)
    }

    /// Why the run's vehicle is dead (exit, PANIC, link silent, clock stalled), or None.
    fn death(&self) -> Option<String> {
        self.inner.death().map(|d| d.to_string())
    }

    /// The vehicle's console so far (the built-in vehicle's log; PX4's last lines).
    fn console(&self) -> Vec<String> {
        self.inner.console()
    }

    /// Wait until `predicate()` is true, advancing the vehicle's clock, for at most
    /// `sim_timeout` sim seconds. The predicate is called on this thread (with the GIL) after
    /// every step of the clock; a bound query of an OffboardClient (`op.at_target`) is read
    /// without the GIL. The GIL is released meanwhile, and Ctrl-C raises KeyboardInterrupt.
    ///
    /// Args:
    ///     predicate: Any callable returning a truth value.
    ///     sim_timeout: Sim seconds to wait at most.
    ///
    /// Returns:
    ///     Waited, with waited_sim_s and waited_wall_s.
    ///
    /// Raises:
    ///     TimeoutError: The predicate stayed false for sim_timeout sim seconds (with PX4's last
    ///         refusal, if any).
    ///     RunError: The run lost its vehicle meanwhile (the message names the cause).
    ///     ValueError: sim_timeout is not a finite number >= 0.
    #[pyo3(signature = (predicate, *, sim_timeout))]
    fn wait_until(
        &self,
        py: Python<'_>,
        predicate: &Bound<'_, PyAny>,
        sim_timeout: f64,
    ) -> PyResult<Waited> {
        if !predicate.is_callable() {
            return Err(PyTypeError::new_err(
                "predicate must be callable (for a condition of the engine, use sim.wait(...))",
            ));
        }
        let sim = self.host();
        let fast = fast_query(predicate);
        let pred: Py<PyAny> = predicate.clone().unbind();
        let mut signals = Signals::new();
        let mut failed: Option<PyErr> = None;
        let r = py.allow_threads(|| {
            sim.wait_until(
                || {
                    if signals.interrupted() {
                        return true;
                    }
                    match &fast {
                        Some((c, f)) => f(c),
                        None => Python::with_gil(|py| {
                            match pred.call0(py).and_then(|v| v.is_truthy(py)) {
                                Ok(b) => b,
                                Err(e) => {
                                    failed = Some(e);
                                    true
                                }
                            }
                        }),
                    }
                },
                sim_timeout,
            )
        });
        if let Some(e) = signals.err.take().or(failed) {
            return Err(e);
        }
        match r {
            Ok(w) => Ok(Waited {
                waited_sim_s: w.waited_sim_s,
                waited_wall_s: w.waited_wall.as_secs_f64(),
            }),
            Err(HostRunError::Timeout {
                timeout_s,
                waited_wall,
            }) => {
                let mut msg = format!(
                    "not met within {timeout_s} s of sim time ({:.1} s of wall time)",
                    waited_wall.as_secs_f64()
                );
                let refusal = self
                    .client
                    .as_ref()
                    .and_then(|c| c.last_refusal())
                    .or_else(|| fast.as_ref().and_then(|(c, _)| c.last_refusal()));
                if let Some(why) = self.explain_timeout(timeout_s) {
                    msg.push_str(&format!(": {why}"));
                } else if let Some(r) = refusal {
                    msg.push_str(&format!("; PX4's last refusal: {r}"));
                }
                Err(PyTimeoutError::new_err(msg))
            }
            Err(e) => Err(run_error(e)),
        }
    }

    /// The wait engine's wait_until on the run's offboard link: a condition of the closed table,
    /// evaluated by the pump after every MAVLink message, never as Python code.
    ///
    /// Args:
    ///     condition: "altitude" (m), "airspeed" (m/s), "waypoint" (seq), "sim_time" (s, the
    ///         autopilot clock), "time" (s since the call), "mode" (name), "text" (substring of a
    ///         STATUSTEXT after since_seq), "armed", "disarmed", "landed"; also "reached" (seq),
    ///         "mission_complete", "at_target", "groundspeed" (m/s), "climb_rate" (m/s).
    ///     value: The condition's value, in its unit (None for the flags).
    ///     timeout_s: Sim seconds to wait at most (required).
    ///     op: ">=" (the default), "<=" or "==", for the numeric conditions.
    ///     since_seq: For "text": count texts whose seq is after this one.
    ///     relative: For "sim_time": count from the tick the previous wait settled.
    ///     hold_s: The condition must hold continuously this many sim seconds.
    ///     guard: End early with reason "guard" if this holds first: a name ("disarmed") or a
    ///         tuple (name, value[, op]), or a list of them.
    ///     then_rc: Sticks to stream in the tick the condition is met: dict or (roll, pitch,
    ///         throttle, yaw).
    ///     then_mode: A mode to request in the tick the condition is met.
    ///     then_speedup: A speed factor to set in the tick the condition is met.
    ///     wait_cap_s: Wall seconds at most; then reason "cap" (call again with
    ///         since_seq=result.snapshot.seq).
    ///
    /// Returns:
    ///     WaitResult, whatever the reason.
    ///
    /// Raises:
    ///     ValueError: An unknown condition, a missing or extra value, an op where none applies,
    ///         a bad timeout.
    ///     RunError: No client is connected to the run (OffboardClient.connect(sim, …) first).
    #[pyo3(signature = (condition, value=None, *, timeout_s, op=None, since_seq=None, relative=false, hold_s=0.0, guard=None, then_rc=None, then_mode=None, then_speedup=None, wait_cap_s=None))]
    #[allow(clippy::too_many_arguments)]
    fn wait(
        &self,
        py: Python<'_>,
        condition: &str,
        value: Option<&Bound<'_, PyAny>>,
        timeout_s: f64,
        op: Option<&str>,
        since_seq: Option<u32>,
        relative: bool,
        hold_s: f64,
        guard: Option<&Bound<'_, PyAny>>,
        then_rc: Option<&Bound<'_, PyAny>>,
        then_mode: Option<&str>,
        then_speedup: Option<f64>,
        wait_cap_s: Option<f64>,
    ) -> PyResult<WaitResult_> {
        let mut c = self::condition(condition, value, op)?;
        if let Some(s) = since_seq {
            if condition != "text" {
                return Err(PyValueError::new_err("since_seq applies to \"text\" only"));
            }
            c = c.since_seq(s);
        }
        if relative {
            if condition != "sim_time" {
                return Err(PyValueError::new_err(
                    "relative applies to \"sim_time\" only",
                ));
            }
            c = c.relative();
        }
        if !(timeout_s.is_finite() && timeout_s >= 0.0) {
            return Err(PyValueError::new_err(format!(
                "timeout_s must be a finite number of sim seconds >= 0, got {timeout_s}"
            )));
        }
        let mut w = Wait::until(c)
            .timeout_s(timeout_s as f32)
            .hold_s(hold_s as f32);
        if let Some(g) = guard {
            if let Ok(list) = g.downcast::<pyo3::types::PyList>() {
                for g in list.iter() {
                    w = w.guard(guard_condition(&g)?);
                }
            } else {
                w = w.guard(guard_condition(g)?);
            }
        }
        if let Some(rc) = then_rc {
            w = w.then_rc(sticks_of(rc)?);
        }
        if let Some(m) = then_mode {
            w = w.then_mode(Mode::from_name(m).map_err(|e| PyValueError::new_err(e.to_string()))?);
        }
        if let Some(f) = then_speedup {
            w = w.then_speedup(f as f32);
        }
        w.validate()
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
        let cap = match wait_cap_s {
            None => None,
            Some(s) if s.is_finite() && s >= 0.0 => Some(Duration::from_secs_f64(s)),
            Some(s) => {
                return Err(PyValueError::new_err(format!(
                    "wait_cap_s must be a finite number of wall seconds >= 0, got {s}"
                )))
            }
        };
        let sim = self.host();
        let link = sim
            .offboard_link()
            .ok_or_else(|| run_error(HostRunError::NoClient))?;
        let mut pending = link.register(&w).map_err(|e| run_error(e.into()))?;
        // Real time: bounded in wall time too, as every wait of the `nexus` command.
        let bound = match sim.options().clock {
            RunClock::RealTime { speed } if !sim.is_lockstep() => {
                Some(nexus_host::limits::wall_bound(timeout_s, speed))
            }
            RunClock::Max => Some(nexus_host::limits::wall_bound(timeout_s, 1.0)),
            _ => None,
        };
        let cap = match (cap, bound) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let lockstep = sim.is_lockstep();
        let chunk_s = sim.options().lockstep_chunk_s;
        let chunk = if chunk_s.is_finite() && chunk_s > 0.0 {
            ((chunk_s * 1000.0).round() as u64).max(1)
        } else {
            20
        };
        let mut signals = Signals::new();
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
                        return Ok(pending.wait_explained(Some(Duration::from_secs(2))));
                    }
                } else if let Some(r) = pending.wait_timeout(Duration::from_millis(5)) {
                    let why = pending.explanation();
                    return Ok((r, why));
                }
            }
        });
        match out {
            Ok((r, why)) => wait_result(py, &r, why),
            Err(e) => Err(e.unwrap_or_else(|| pyo3::exceptions::PyKeyboardInterrupt::new_err(""))),
        }
    }

    /// The vehicle now, as the wait engine sees it on the offboard link.
    ///
    /// Raises:
    ///     RunError: No client is connected to the run.
    fn snapshot(&self) -> PyResult<SnapshotPX4> {
        let link = self
            .inner
            .offboard_link()
            .ok_or_else(|| run_error(HostRunError::NoClient))?;
        Ok(link.with_status(|s| SnapshotPX4::from(&s.snapshot)))
    }

    /// The STATUSTEXTs PX4 sent with seq after `since_seq`, oldest first, as (seq, severity, text).
    fn texts_since(&self, since_seq: u32) -> PyResult<Vec<(u32, u8, String)>> {
        let link = self
            .inner
            .offboard_link()
            .ok_or_else(|| run_error(HostRunError::NoClient))?;
        let texts = link
            .call(move |ctx| {
                ctx.client()
                    .telemetry()
                    .texts()
                    .iter()
                    .filter(|t| t.seq > since_seq)
                    .map(|t| (t.seq, t.severity, t.text.as_str().to_owned()))
                    .collect::<Vec<_>>()
            })
            .map_err(|e| RunError::new_err(e.to_string()))?;
        Ok(texts)
    }

    /// Inject a fault into the built-in vehicle (for tests): "exit" (code=…), "panic"
    /// (module=…, message=…), "stall_clock", "silence", "garbage", "refuse_arming" (text=…).
    #[pyo3(signature = (fault, **kw))]
    fn inject(&self, fault: &str, kw: Option<&Bound<'_, PyDict>>) -> PyResult<()> {
        let get = |k: &str| -> PyResult<Option<Bound<'_, PyAny>>> {
            match kw {
                Some(d) => d.get_item(k),
                None => Ok(None),
            }
        };
        let f = match fault {
            "exit" => Fault::Exit {
                code: get("code")?.map(|v| v.extract()).transpose()?.unwrap_or(1),
            },
            "panic" => Fault::Panic {
                module: get("module")?
                    .map(|v| v.extract())
                    .transpose()?
                    .unwrap_or_else(|| "commander".to_owned()),
                message: get("message")?
                    .map(|v| v.extract())
                    .transpose()?
                    .unwrap_or_else(|| "injected".to_owned()),
            },
            "stall_clock" => Fault::StallClock,
            "silence" => Fault::Silence,
            "garbage" => Fault::Garbage,
            "refuse_arming" => Fault::RefuseArming {
                text: get("text")?
                    .map(|v| v.extract())
                    .transpose()?
                    .unwrap_or_else(|| {
                        "Arming denied: Resolve system health failures first".into()
                    }),
            },
            other => {
                return Err(PyValueError::new_err(format!(
                    "unknown fault {other:?}; known: exit, panic, stall_clock, silence, garbage, \
                     refuse_arming"
                )))
            }
        };
        self.inner.inject(f).map_err(run_error)
    }

    fn __repr__(&self) -> String {
        let kind = match self.inner.options().vehicle {
            VehicleKind::Simulated => "builtin",
            VehicleKind::Px4 { .. } => "px4",
            _ => "none",
        };
        format!(
            "Sim(vehicle={kind:?}, instance={}, running={})",
            self.inner.instance(),
            py_bool(self.inner.is_running())
        )
    }
}

/// The host end of PX4's offboard link: verbs return at once, the pump carries them out, queries
/// read what PX4 last reported.
#[pyclass(module = "nexus_uav.px4")]
pub struct OffboardClient {
    inner: Arc<HostClient>,
}

fn item_of(obj: &Bound<'_, PyAny>, index: usize) -> PyResult<MissionItem> {
    let bad = |what: &str| {
        PyTypeError::new_err(format!(
            "mission item {index}: {what} (a MissionItem has seq, frame, command, autocontinue, \
             params, x, y, z)"
        ))
    };
    let get = |k: &str| obj.getattr(k).map_err(|_| bad(&format!("no {k}")));
    let params: (f32, f32, f32, f32) = get("params")?
        .extract()
        .map_err(|_| bad("params is not four numbers"))?;
    Ok(MissionItem {
        seq: get("seq")?.extract().map_err(|_| bad("bad seq"))?,
        frame: get("frame")?.extract().map_err(|_| bad("bad frame"))?,
        command: get("command")?.extract().map_err(|_| bad("bad command"))?,
        autocontinue: get("autocontinue")?.is_truthy()?,
        params: [params.0, params.1, params.2, params.3],
        x: get("x")?.extract().map_err(|_| bad("bad x"))?,
        y: get("y")?.extract().map_err(|_| bad("bad y"))?,
        z: get("z")?.extract().map_err(|_| bad("bad z"))?,
    })
}

#[pymethods]
impl OffboardClient {
    /// Configure the offboard link; nothing opens a connection until entered (or `open()`).
    ///
    /// Args:
    ///     conn: Connection string for PX4's offboard link (pymavlink's syntax); the default
    ///         listens on OFFBOARD_PORT, instance 0's.
    ///     system_id: PX4's MAVLink system id, instance + 1.
    ///     arrive_m: 3D arrival radius for at_target after a goto, m.
    ///     yaw_tol_rad: Heading tolerance for at_target when a yaw was commanded, rad.
    ///     alt_tol_m: Altitude tolerance for at_target after a takeoff, m.
    ///     wait_clear_s: Sim seconds the vehicle must be failure-free, and the initial settle
    ///         period, before an arm command goes out.
    ///
    /// Raises:
    ///     ValueError: conn does not parse.
    #[new]
    #[pyo3(signature = (conn="udpin:0.0.0.0:14540", *, system_id=1, arrive_m=2.0, yaw_tol_rad=std::f64::consts::PI / 36.0, alt_tol_m=1.0, wait_clear_s=5.0))]
    fn new(
        conn: &str,
        system_id: u8,
        arrive_m: f64,
        yaw_tol_rad: f64,
        alt_tol_m: f64,
        wait_clear_s: f64,
    ) -> PyResult<Self> {
        for (name, v) in [
            ("arrive_m", arrive_m),
            ("yaw_tol_rad", yaw_tol_rad),
            ("alt_tol_m", alt_tol_m),
            ("wait_clear_s", wait_clear_s),
        ] {
            if !(v.is_finite() && v >= 0.0) {
                return Err(PyValueError::new_err(format!(
                    "{name} must be a finite number >= 0, got {v}"
                )));
            }
        }
        let mut o = nexus_host::offboard_client::OffboardOptions {
            system_id,
            ..Default::default()
        };
        o.offboard.arrive_m = arrive_m as f32;
        o.offboard.yaw_tol_rad = yaw_tol_rad as f32;
        o.offboard.alt_tol_m = alt_tol_m as f32;
        o.offboard.wait_clear_s = wait_clear_s as f32;
        Ok(OffboardClient {
            inner: Arc::new(HostClient::new(conn, o).map_err(client_error)?),
        })
    }

    /// Open a client on the run's offboard link (sim.ports["offboard"]) and wait for PX4's
    /// heartbeat, stepping the sim: `timeout` counts sim seconds. The client returned is open;
    /// entering it as a context manager closes it on the way out.
    ///
    /// Raises:
    ///     KeyError: The run has no offboard link; the message says why.
    ///     RunError: No heartbeat within timeout, naming the port, or the run lost PX4.
    #[classmethod]
    fn connect(
        _cls: &Bound<'_, pyo3::types::PyType>,
        py: Python<'_>,
        mut sim: PyRefMut<'_, Sim>,
        timeout: f64,
    ) -> PyResult<Self> {
        if !(timeout.is_finite() && timeout >= 0.0) {
            return Err(PyValueError::new_err(format!(
                "timeout must be a finite number of sim seconds >= 0, got {timeout}"
            )));
        }
        let host = sim.host();
        let c = py
            .allow_threads(|| HostClient::connect(&host, timeout))
            .map_err(connect_error)?;
        let c = Arc::new(c);
        sim.client = Some(Arc::clone(&c));
        Ok(OffboardClient { inner: c })
    }

    /// Open the link and start the pump, returning at once with no wait for PX4: wait with
    /// `sim.wait_until(lambda: op.connected, sim_timeout=…)`. Returns self.
    fn open(slf: PyRef<'_, Self>) -> PyResult<PyRef<'_, Self>> {
        slf.inner.open().map_err(client_error)?;
        Ok(slf)
    }

    /// Stop using the link and close it. Idempotent.
    fn close(&self, py: Python<'_>) {
        let c = Arc::clone(&self.inner);
        py.allow_threads(|| c.close());
    }

    fn __enter__(slf: PyRef<'_, Self>) -> PyResult<PyRef<'_, Self>> {
        if !slf.inner.is_open() {
            slf.inner.open().map_err(client_error)?;
        }
        Ok(slf)
    }

    #[pyo3(signature = (*_exc))]
    fn __exit__(&self, py: Python<'_>, _exc: &Bound<'_, PyTuple>) -> bool {
        self.close(py);
        false
    }

    /// Whether PX4's heartbeat has arrived: every verb has somewhere to go.
    #[getter]
    fn connected(&self) -> bool {
        self.inner.connected()
    }

    /// Request a flight mode by name ("Manual", "Altitude", "Position", "Offboard", "Hold",
    /// "Takeoff", "Mission", "RTL", "Land", …). Returns at once; commanded until telemetry confirms.
    ///
    /// Raises:
    ///     ValueError: An unknown mode name.
    fn set_mode(&self, mode: &str) -> PyResult<()> {
        self.inner.set_mode(mode).map_err(client_error)
    }

    /// Request arming. Returns at once; the arm goes out once the vehicle is armable (mode
    /// confirmed, a position estimate, failure-free for wait_clear_s). `gesture=True` arms with
    /// the throttle-down, yaw-right stick gesture instead of the command.
    #[pyo3(signature = (*, gesture=false))]
    fn arm(&self, gesture: bool) -> PyResult<()> {
        if gesture {
            self.inner.arm_gesture()
        } else {
            self.inner.arm()
        }
        .map_err(client_error)
    }

    /// Send one disarm command (not verified) and drop any pending arm. Returns True once sent.
    fn disarm(&self) -> PyResult<bool> {
        self.inner.disarm().map_err(client_error)?;
        Ok(true)
    }

    /// Stream MANUAL_CONTROL at ~20 Hz: roll/pitch/yaw in [-1, 1], throttle in [0, 1] (clamped).
    #[pyo3(signature = (*, roll=0.0, pitch=0.0, throttle=0.5, yaw=0.0))]
    fn set_rc(&self, roll: f32, pitch: f32, throttle: f32, yaw: f32) -> PyResult<()> {
        self.inner
            .set_rc(
                RcSticks {
                    roll,
                    pitch,
                    throttle,
                    yaw,
                }
                .clamped(),
            )
            .map_err(client_error)
    }

    /// Stop streaming MANUAL_CONTROL.
    fn stop_rc(&self) -> PyResult<()> {
        self.inner.stop_rc().map_err(client_error)
    }

    /// Set a REAL32 PX4 parameter (resent until PX4 echoes it; returns at once).
    fn param_set(&self, name: &str, value: f32) -> PyResult<()> {
        self.inner.param_set(name, value).map_err(client_error)
    }

    /// Set an INT32 PX4 parameter: the int's bits ride in PARAM_SET's float field.
    fn param_set_int(&self, name: &str, value: i32) -> PyResult<()> {
        self.inner.param_set_int(name, value).map_err(client_error)
    }

    /// Take off to alt_m metres over home: MIS_TAKEOFF_ALT, Takeoff mode confirmed, then arm.
    /// Returns at once; wait for the climb with at_target.
    fn takeoff(&self, alt_m: f32) -> PyResult<()> {
        if !(alt_m.is_finite() && alt_m > 0.0) {
            return Err(PyValueError::new_err(format!(
                "alt_m must be a finite number of metres above 0, got {alt_m}"
            )));
        }
        self.inner.takeoff(alt_m).map_err(client_error)
    }

    /// Request Land mode (land in place). Returns at once; clears the target.
    fn land(&self) -> PyResult<()> {
        self.inner.land().map_err(client_error)
    }

    /// Upload a mission: a Plan, a sequence of MissionItem, or a path to a .plan file. Returns
    /// at once; wait for it with mission_uploaded (or mission_ack for a refusal).
    ///
    /// Raises:
    ///     ValueError: The file is not a plan (see read_plan).
    ///     TypeError: Not a Plan, items or a path.
    fn upload_mission(&self, plan: &Bound<'_, PyAny>) -> PyResult<()> {
        let py = plan.py();
        let os = py.import("os")?;
        let is_path = plan.is_instance_of::<pyo3::types::PyString>()
            || plan.is_instance(&os.getattr("PathLike")?)?;
        if is_path {
            let p: PathBuf = os.call_method1("fspath", (plan,))?.extract()?;
            return self
                .inner
                .upload_mission(MissionSource::File(&p))
                .map_err(client_error);
        }
        let items_obj = if plan.hasattr("items")? && !plan.is_instance_of::<PyDict>() {
            plan.getattr("items")?
        } else {
            plan.clone()
        };
        let mut items = Vec::new();
        for (i, it) in items_obj
            .try_iter()
            .map_err(|_| {
                PyTypeError::new_err(
                    "upload_mission takes a Plan, a sequence of MissionItem or a path",
                )
            })?
            .enumerate()
        {
            items.push(item_of(&it?, i)?);
        }
        self.inner
            .upload_mission(MissionSource::Items(&items))
            .map_err(client_error)
    }

    /// Whether PX4 accepted the uploaded mission (False while in flight and when refused).
    fn mission_uploaded(&self) -> bool {
        self.inner.mission_uploaded()
    }

    /// PX4's MISSION_ACK result (MAV_MISSION_RESULT: 0 accepted), or None before one.
    fn mission_ack(&self) -> Option<u32> {
        self.inner.mission_ack().map(|a| a as u32)
    }

    /// Items in the uploaded mission (0 before any upload).
    fn mission_count(&self) -> usize {
        self.inner.mission_count()
    }

    /// Highest item PX4 said it reached (MISSION_ITEM_REACHED), or -1 before any.
    fn mission_reached(&self) -> i32 {
        self.inner.mission_reached()
    }

    /// The item PX4 is flying to (MISSION_CURRENT.seq), 0 before the first report.
    fn mission_current(&self) -> u16 {
        self.inner.mission_current()
    }

    /// Whether PX4 reported the mission's last reachable item (the last waypoint before an
    /// RTL, or the first LAND) reached in this start.
    fn mission_complete(&self) -> bool {
        self.inner.mission_complete()
    }

    /// Request the mission's first item, Mission mode, then arming. Returns at once.
    fn start_mission(&self) -> PyResult<()> {
        self.inner.start_mission().map_err(client_error)
    }

    /// Fly to a world-frame position (x, y, z) in metres (FLU: x forward/north, y left/west, z up
    /// over the launch point), with an optional world yaw in radians (right-handed about +z, so
    /// +pi/2 faces +y = west). One DO_REPOSITION; wait with at_target. Returns at once.
    ///
    /// Raises:
    ///     RuntimeError: No position has arrived on the offboard link yet.
    ///     TypeError: setpoint is not an (x, y, z) position or an object with .pos (and .yaw).
    #[pyo3(signature = (setpoint, *, yaw=None))]
    fn goto(&self, setpoint: &Bound<'_, PyAny>, yaw: Option<f64>) -> PyResult<()> {
        let type_err = || {
            PyTypeError::new_err(
                "setpoint must be a PositionGoal or an (x, y, z) position in metres",
            )
        };
        let (pos, own_yaw) = if setpoint.hasattr("pos")? {
            let y: Option<f64> = setpoint
                .getattr("yaw")
                .ok()
                .map(|v| v.extract())
                .transpose()
                .map_err(|_| type_err())?;
            (setpoint.getattr("pos")?, y)
        } else {
            (setpoint.clone(), None)
        };
        let (x, y, z): (f64, f64, f64) = pos.extract().map_err(|_| type_err())?;
        let yaw = yaw.or(own_yaw);
        if ![x, y, z].iter().all(|v| v.is_finite()) || yaw.is_some_and(|v| !v.is_finite()) {
            return Err(PyValueError::new_err(
                "goto: the position and yaw must be finite",
            ));
        }
        self.inner
            .goto(x as f32, y as f32, z as f32, yaw.map(|v| v as f32))
            .map_err(client_error)
    }

    /// Whether the vehicle reached what the last verb commanded, measured on what PX4 reports:
    /// False with no target, after land, before a position.
    fn at_target(&self) -> bool {
        self.inner.at_target()
    }

    /// The armed flag of the last heartbeat.
    fn is_armed(&self) -> bool {
        self.inner.is_armed()
    }

    /// The friendly mode name of the last heartbeat ("Takeoff", …; "main=…,sub=…" for an
    /// unnamed one), "" before one.
    fn mode(&self) -> String {
        self.inner.mode()
    }

    /// EXTENDED_SYS_STATE's landed state: "ON_GROUND", "IN_AIR", "TAKING_OFF", "LANDING" or
    /// "UNKNOWN".
    fn landed_state(&self) -> &'static str {
        let s: LandedState = self.inner.landed_state();
        s.name()
    }

    /// Altitude over the launch point from GLOBAL_POSITION_INT, m; None before one.
    fn relative_altitude(&self) -> Option<f32> {
        self.inner.relative_altitude()
    }

    /// PX4's last refusal with the STATUSTEXT that explained it, or None.
    fn last_refusal(&self) -> Option<String> {
        self.inner.last_refusal().map(|r| r.to_string())
    }

    fn __repr__(&self) -> String {
        format!(
            "OffboardClient(conn={:?}, system_id={}, connected={})",
            self.inner.conn().to_string(),
            self.inner.options().system_id,
            py_bool(self.inner.connected())
        )
    }
}

type ItemTuple = (u16, u8, u16, bool, (f32, f32, f32, f32), i32, i32, f32);

/// Read a QGroundControl .plan: (home (lat, lon, alt AMSL), items as tuples).
#[pyfunction]
fn _read_plan(py: Python<'_>, path: PathBuf) -> PyResult<((f64, f64, f64), Vec<ItemTuple>)> {
    let plan = py
        .allow_threads(|| read_plan_file(&path))
        .map_err(|e| match e {
            ClientError::Plan { message, .. } if message.starts_with("cannot read it") => {
                match std::fs::metadata(&path) {
                    Err(io) => {
                        pyo3::exceptions::PyOSError::new_err(format!("{}: {io}", path.display()))
                    }
                    Ok(_) => client_error(ClientError::Plan {
                        path: path.clone(),
                        message,
                    }),
                }
            }
            other => client_error(other),
        })?;
    let h = plan.home;
    let items = plan
        .items
        .iter()
        .map(|i| {
            (
                i.seq,
                i.frame,
                i.command,
                i.autocontinue,
                (i.params[0], i.params[1], i.params[2], i.params[3]),
                i.x,
                i.y,
                i.z,
            )
        })
        .collect();
    Ok(((h.lat_deg, h.lon_deg, h.alt_amsl_m), items))
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("RunError", m.py().get_type::<RunError>())?;
    m.add_class::<Sim>()?;
    m.add_class::<OffboardClient>()?;
    m.add_class::<WaitResult_>()?;
    m.add_class::<SnapshotPX4>()?;
    m.add_class::<Waited>()?;
    m.add_function(wrap_pyfunction!(_read_plan, m)?)?;
    m.add("OFFBOARD_PORT", nexus_host::offboard_client::OFFBOARD_PORT)?;
    Ok(())
}
