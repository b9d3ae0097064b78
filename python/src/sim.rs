//! `Sim`: a run — the vehicle (the built-in simulated PX4, PX4 SITL from a build directory, a
//! vehicle someone else runs attached over a connection string, or none), its clock, and the
//! offboard link's address in `ports` — with the waits on it: a predicate (`wait_until`), the
//! engine's conditions (`wait`) and step programs (`run_steps`).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use nexus_core::engine::{Condition, Reason, Wait, WaitResult};
use nexus_host::error::RunError as HostRunError;
use nexus_host::groups::InfoApi;
use nexus_host::offboard_client::OffboardClient as HostClient;
use nexus_host::run::{Run as HostRun, RunOptions, RunVehicle, DEFAULT_STALL};
use nexus_host::sim::Fault;
use pyo3::exceptions::{PyKeyError, PyTimeoutError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

use crate::attach::Attach;
use crate::conditions::{condition, wait_of, Extras};
use crate::errors::{run_error, RunError};
use crate::results::{
    program_report, py_bool, wait_result, ProgramReport, SnapshotPX4, WaitResult_, Waited,
};
use crate::signals::Signals;
use crate::steps::program_of;
use crate::wait::{drive, drive_program, fast_query};

/// Sim(model=None, *, scene="empty", vehicle="builtin", instance=0, speed=None, px4_build=None,
/// wait_clear_s=None, stall_s=5.0, connect=None, system_id=None, component_id=None,
/// real_vehicle=False)
///
/// A run: the vehicle (the built-in simulated PX4 by default, PX4 SITL from a build directory,
/// a vehicle someone else runs attached with connect=, or none), its clock, and the offboard
/// link's address in `ports`. Nothing starts until start(); leaving `with` closes the run.
///
/// Args:
///     model: The airframe name. The built-in vehicle flies one quadrotor, whatever the name.
///     scene: The world; "empty" is the only one.
///     vehicle: "builtin", "px4" (PX4 SITL from px4_build or $NEXUS_PX4_BUILD) or "none".
///     instance: SITL instance N: the offboard link is UDP 14540 + N, the vehicle's 14580 + N,
///         system id N + 1.
///     speed: Sim seconds per wall second (default 1.0, real time), "lockstep" or "max" (the
///         built-in vehicle only).
///     px4_build: PX4's build directory, holding bin/px4 (vehicle="px4").
///     wait_clear_s: Sim seconds the vehicle must be failure-free before an arm goes out.
///     stall_s: Wall seconds of silence, or of a stopped clock, after which the run is dead
///         (None: never).
///     connect: Attach a running vehicle over this connection string instead of starting one,
///         as `nexus --connect`: "udpin:0.0.0.0:14540", "udpout:HOST:PORT", "tcp:HOST:PORT",
///         "tcpin:HOST:PORT", "serial:/dev/ttyACM0:57600".
///     system_id: With connect: the vehicle's system id (default: the first autopilot heard).
///     component_id: With connect: the autopilot's component id (default: the first heard).
///     real_vehicle: With connect: allow a vehicle that does not identify as PX4 SITL.
///
/// Raises:
///     ValueError: An unknown scene or vehicle, a bad speed, a connection string that does not
///         parse, an option that does not go with connect.
#[pyclass(module = "nexus_uav")]
pub struct Sim {
    pub(crate) inner: Arc<HostRun>,
    model: Option<String>,
    scene: String,
    /// The client connect() opened on this run, for engine waits and queries.
    pub(crate) client: Option<Arc<HostClient>>,
    /// `connect=`: the vehicle is someone else's, attached over this link.
    pub(crate) attach: Option<Attach>,
}

/// The KeyError of a run with no vehicle: `sim.ports["offboard"]`, `OffboardClient.connect`.
pub(crate) fn no_link() -> PyErr {
    PyKeyError::new_err(
        "'offboard': this run has no vehicle (vehicle=\"none\"): nothing on it speaks MAVLink, \
         so it lists no offboard link",
    )
}

impl Sim {
    /// Whether the run has no vehicle at all (vehicle="none", not attached).
    pub(crate) fn vehicleless(&self) -> bool {
        self.attach.is_none() && self.inner.options().vehicle == RunVehicle::None
    }

    pub(crate) fn host(&self) -> Arc<HostRun> {
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

#[pymethods]
impl Sim {
    /// Configure a run; nothing starts until `start()` (or entering it as a context manager).
    ///
    /// Args:
    ///     model: The airframe name. The built-in vehicle flies one quadrotor, whatever the name.
    ///     scene: The world; "empty" is the only one.
    ///     vehicle: "builtin" (the built-in simulated PX4, the default), "px4" (PX4 SITL from
    ///         `px4_build` or $NEXUS_PX4_BUILD) or "none" (a clock and nothing to fly).
    ///     connect: Attach a vehicle someone else runs instead of starting one, over this
    ///         connection string (as `nexus --connect`): "udpin:0.0.0.0:14540",
    ///         "udpout:HOST:PORT", "tcp:HOST:PORT", "tcpin:HOST:PORT", "serial:/dev/ttyACM0:57600".
    ///         The run's clock is then the vehicle's, and it takes no speed.
    ///     system_id: With connect: the vehicle's system id (default: the first autopilot heard).
    ///     component_id: With connect: the autopilot's component id (default: the first heard).
    ///     real_vehicle: With connect: fly a vehicle that does not identify as PX4 SITL (a real
    ///         aircraft). Without it, OffboardClient.connect refuses one.
    ///     instance: SITL instance N: the offboard link listens on UDP 14540 + N, system id N + 1.
    ///     speed: Sim seconds per wall second (1.0: real time), or "lockstep" (the built-in
    ///         vehicle advances only while someone waits), or "max" (as fast as the client takes in).
    ///     px4_build: PX4's build directory (vehicle="px4").
    ///     wait_clear_s: Sim seconds the vehicle must be failure-free before an arm goes out.
    ///     stall_s: Wall seconds of silence, or of a stopped clock, after which the run is dead.
    ///
    /// Raises:
    ///     ValueError: An unknown scene or vehicle, a speed out of range, a connection string
    ///         that does not parse, an option that does not go with connect.
    #[new]
    #[pyo3(signature = (model=None, *, scene="empty", vehicle="builtin", instance=0, speed=None, px4_build=None, wait_clear_s=None, stall_s=5.0, connect=None, system_id=None, component_id=None, real_vehicle=false))]
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
        connect: Option<&str>,
        system_id: Option<u8>,
        component_id: Option<u8>,
        real_vehicle: bool,
    ) -> PyResult<Self> {
        if scene != "empty" {
            return Err(PyValueError::new_err(format!(
                "unknown scene {scene:?}; the built-in vehicle flies in \"empty\""
            )));
        }
        let attach = match connect {
            Some(conn) => {
                if vehicle != "builtin" || px4_build.is_some() {
                    return Err(PyValueError::new_err(
                        "connect attaches a vehicle someone else runs: it takes no vehicle= or \
                         px4_build=",
                    ));
                }
                if speed.is_some() || instance != 0 {
                    return Err(PyValueError::new_err(
                        "connect attaches a vehicle that runs at its own pace, on its own ports: \
                         it takes no speed= or instance= (start a SITL with its own speed factor)",
                    ));
                }
                Some(Attach::new(conn, system_id, component_id, real_vehicle)?)
            }
            None => {
                if system_id.is_some() || component_id.is_some() || real_vehicle {
                    return Err(PyValueError::new_err(
                        "system_id, component_id and real_vehicle go with connect= (a vehicle \
                         this run starts has system id instance + 1)",
                    ));
                }
                None
            }
        };
        let mut o = match vehicle {
            _ if attach.is_some() => RunOptions::no_vehicle().stall(Some(DEFAULT_STALL)),
            "builtin" | "simulated" => RunOptions::simulated(instance),
            "px4" => RunOptions::px4(instance, px4_build),
            "none" => RunOptions::no_vehicle(),
            other => {
                return Err(PyValueError::new_err(format!(
                    "unknown vehicle {other:?}; known: \"builtin\", \"px4\", \"none\""
                )))
            }
        };
        if attach.is_none() {
            o.instance = instance;
        }
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
            inner: Arc::new(HostRun::new(o)),
            model,
            scene: scene.to_owned(),
            client: None,
            attach,
        })
    }

    /// Start the vehicle (PX4: spawn it and wait for its startup script). Returns self.
    ///
    /// Raises:
    ///     RunError: It could not start (PX4 not built, a port in use, …), or it has started.
    fn start(slf: PyRef<'_, Self>, py: Python<'_>) -> PyResult<Py<Sim>> {
        let sim = slf.host();
        py.allow_threads(|| sim.start()).map_err(run_error)?;
        if let Some(a) = &slf.attach {
            if let Err(e) = a.open() {
                sim.close();
                return Err(e);
            }
        }
        Ok(slf.into())
    }

    /// Stop the vehicle (PX4: SIGTERM then SIGKILL) and close the run. Idempotent.
    fn close(&self, py: Python<'_>) {
        if let Some(c) = &self.client {
            c.close();
        }
        if let Some(a) = &self.attach {
            a.close();
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
    /// "system_id": PX4's system id, "px4_port": the port PX4 sends from}}. An attached vehicle
    /// (connect=): {"offboard": {"conn": the connection string, "port": its port (None for a
    /// serial line), "system_id" and "component_id": the vehicle's (None until connected,
    /// unless given), "simulator": whether it identified as PX4 SITL (None: not yet)}}.
    ///
    /// Raises:
    ///     KeyError: The run has no offboard link (no vehicle), and why.
    ///     RunError: The run has not started.
    #[getter]
    fn ports<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        let o = PyDict::new(py);
        if let Some(a) = &self.attach {
            if !self.inner.is_running() {
                return Err(run_error(HostRunError::NotStarted));
            }
            o.set_item("conn", a.conn.to_string())?;
            o.set_item("port", a.port())?;
            o.set_item("system_id", a.system_id())?;
            o.set_item("component_id", a.component_id())?;
            o.set_item("simulator", a.simulator())?;
            d.set_item("offboard", o)?;
            return Ok(d);
        }
        let ports = self.inner.ports().map_err(|e| match e {
            HostRunError::NoOffboardLink { .. } => no_link(),
            e => run_error(e),
        })?;
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
    #[pyo3(signature = (predicate, *, sim_timeout, _cancel=None), text_signature = "(self, predicate, *, sim_timeout)")]
    fn wait_until(
        &self,
        py: Python<'_>,
        predicate: &Bound<'_, PyAny>,
        sim_timeout: f64,
        _cancel: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Waited> {
        if !predicate.is_callable() {
            return Err(PyTypeError::new_err(
                "predicate must be callable (for a condition of the engine, use sim.wait(...))",
            ));
        }
        let sim = self.host();
        let fast = fast_query(predicate);
        let pred: Py<PyAny> = predicate.clone().unbind();
        let mut signals = Signals::new(_cancel);
        let mut failed: Option<PyErr> = None;
        let r = py.allow_threads(|| {
            sim.until(
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
    #[pyo3(signature = (condition, value=None, *, timeout_s, op=None, since_seq=None, relative=false, hold_s=0.0, guard=None, then_rc=None, then_mode=None, then_speedup=None, wait_cap_s=None, _cancel=None), text_signature = "(self, condition, value=None, *, timeout_s, op=None, since_seq=None, relative=False, hold_s=0.0, guard=None, then_rc=None, then_mode=None, then_speedup=None, wait_cap_s=None)")]
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
        _cancel: Option<&Bound<'_, PyAny>>,
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
        let w = wait_of(
            c,
            timeout_s,
            Extras {
                hold_s,
                guard,
                then_rc,
                then_mode,
                then_speedup,
            },
        )?;
        let cap = match wait_cap_s {
            None => None,
            Some(s) if s.is_finite() && s >= 0.0 => Some(Duration::from_secs_f64(s)),
            Some(s) => {
                return Err(PyValueError::new_err(format!(
                    "wait_cap_s must be a finite number of wall seconds >= 0, got {s}"
                )))
            }
        };
        let (r, why) = drive(py, self.host(), &w, cap, _cancel)?;
        wait_result(py, &r, why)
    }

    /// Run a step program (the wait engine's steps) to its end and report every step.
    ///
    /// Each step does its action, then waits `until` a condition of the engine's table holds,
    /// at most `timeout_s` sim seconds; on a timeout it stops the program ("on_timeout":
    /// "stop", the default) or goes on ("continue"). A relative "sim_time" counts from the tick
    /// the step started. The GIL is released meanwhile; Ctrl-C aborts the program and raises
    /// KeyboardInterrupt.
    ///
    /// Args:
    ///     steps: A list of step dicts, each shaped like a `[[step]]` table of a `nexus run`
    ///         program: {"name": ..., "action": "takeoff", "alt_m": 5.0, "until": {"altitude":
    ///         4.5, "op": ">=", "hold_s": 2.0, "guards": ["disarmed"]}, "timeout_s": 60.0,
    ///         "on_timeout": "stop"}; `until` may be a name ("landed", "armed", "disarmed",
    ///         "at_target", "mission_complete", "mission_verified"). Or the whole parsed program
    ///         (a dict with "step"), e.g. from tomllib. Actions: none, mode (mode), arm
    ///         (gesture), disarm, takeoff (alt_m), goto (x_m, y_m, z_m, yaw_deg), land, rtl,
    ///         hold, rc (sticks), stop_rc, param (param, real or int), verify_mission, start,
    ///         pause, resume, speedup (factor), stop_offboard, inject_failure (unit, failure,
    ///         instance). Upload a mission with OffboardClient.upload_mission first.
    ///     wait_cap_s: Wall seconds at most; then the program is aborted (end "aborted").
    ///
    /// Returns:
    ///     ProgramReport: passed, end ("completed", "stopped", "died", "aborted"), ended_at,
    ///     error, and steps (each step's WaitResult).
    ///
    /// Raises:
    ///     ValueError: A step that does not read (its number, the key and what would be right).
    ///     TypeError: steps is not a list of dicts.
    ///     RunError: No client is connected, or a program is already running on the link.
    #[pyo3(signature = (steps, *, wait_cap_s=None, _cancel=None), text_signature = "(self, steps, *, wait_cap_s=None)")]
    fn run_steps(
        &self,
        py: Python<'_>,
        steps: &Bound<'_, PyAny>,
        wait_cap_s: Option<f64>,
        _cancel: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<ProgramReport> {
        let program = program_of(steps)?;
        let cap = match wait_cap_s {
            None => None,
            Some(s) if s.is_finite() && s >= 0.0 => Some(Duration::from_secs_f64(s)),
            Some(s) => {
                return Err(PyValueError::new_err(format!(
                    "wait_cap_s must be a finite number of wall seconds >= 0, got {s}"
                )))
            }
        };
        let untils: Vec<Wait> = program.steps().iter().map(|s| s.until.clone()).collect();
        let report = drive_program(py, self.host(), program, cap, _cancel)?;
        // Why each step that did not meet its condition did not, as `nexus run` prints it.
        let why: Vec<Option<String>> = report
            .records
            .iter()
            .zip(untils)
            .map(|(rec, wait)| {
                if rec.result.reason == Reason::Met {
                    return None;
                }
                let r = rec.result.clone();
                self.inner.offboard_link().and_then(|link| {
                    link.call(move |ctx| {
                        let now = ctx.now();
                        ctx.client().explain(now, &wait, &r).map(|e| e.to_string())
                    })
                    .ok()
                    .flatten()
                })
            })
            .collect();
        program_report(py, &report, &why)
    }

    /// Abort the step program running on this run (from another thread, or a coroutine): its
    /// current step ends "aborted", and so does the program.
    ///
    /// Raises:
    ///     RunError: No client is connected, or no program is running.
    fn abort_steps(&self) -> PyResult<()> {
        let link = self
            .inner
            .offboard_link()
            .ok_or_else(|| run_error(HostRunError::NoClient))?;
        link.abort_program()
            .map_err(|e| RunError::new_err(format!("abort_steps: {e}")))
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
            RunVehicle::Simulated => "builtin",
            RunVehicle::Px4 { .. } => "px4",
            _ => "none",
        };
        format!(
            "Sim(vehicle={kind:?}, instance={}, running={})",
            self.inner.instance(),
            py_bool(self.inner.is_running())
        )
    }
}
