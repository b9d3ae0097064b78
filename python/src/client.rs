//! `OffboardClient` (nexus_uav.px4): the host end of PX4's offboard link. Verbs return at once
//! and the pump carries them out in PX4's order (Takeoff mode confirmed before the arm, …);
//! queries read what PX4 last reported. Units: metres, radians, sim seconds.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use nexus_core::mission::MissionItem;
use nexus_core::rc::RcSticks;
use nexus_core::telemetry::LandedState;
use nexus_host::offboard_client::{MissionSource, OffboardClient as HostClient};
use nexus_host::pump::ParamValue;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

use crate::errors::{client_error, connect_error, RunError};
use crate::results::py_bool;
use crate::sim::Sim;

/// The host end of PX4's offboard link: verbs return at once, the pump carries them out, queries
/// read what PX4 last reported.
#[pyclass(module = "nexus_uav.px4")]
pub struct OffboardClient {
    pub(crate) inner: Arc<HostClient>,
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
        let c = match &sim.attach {
            Some(a) => py
                .allow_threads(|| a.connect(&host, timeout))
                .map_err(RunError::new_err)?,
            None => py
                .allow_threads(|| HostClient::connect(&host, timeout))
                .map_err(connect_error)?,
        };
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

    /// Read a PX4 parameter back (PARAM_REQUEST_READ until PX4 answers): a float for a REAL32
    /// parameter, an int for an integer one. Blocks, with the GIL released, at most `timeout`
    /// wall seconds. Not in PX4's own client: how a script checks what param_set stored.
    ///
    /// Raises:
    ///     TimeoutError: No PARAM_VALUE came within timeout.
    ///     ValueError: The name is not 1 to 16 bytes, or PX4 refused it (PARAM_ERROR).
    ///     RunError: The link died or closed first.
    #[pyo3(signature = (name, *, timeout=5.0))]
    fn param_get(&self, py: Python<'_>, name: &str, timeout: f64) -> PyResult<PyObject> {
        if !(timeout.is_finite() && timeout > 0.0) {
            return Err(PyValueError::new_err(format!(
                "timeout must be a finite number of wall seconds above 0, got {timeout}"
            )));
        }
        let c = Arc::clone(&self.inner);
        let got = py.allow_threads(|| c.param_get(name, Duration::from_secs_f64(timeout)));
        let v: ParamValue = got.map_err(|e| {
            let msg = e.to_string();
            match e {
                nexus_host::error::ClientError::Param(
                    nexus_host::pump::ParamError::Timeout { .. },
                ) => pyo3::exceptions::PyTimeoutError::new_err(msg),
                nexus_host::error::ClientError::Param(
                    nexus_host::pump::ParamError::Died { .. }
                    | nexus_host::pump::ParamError::Closed(_),
                ) => RunError::new_err(msg),
                nexus_host::error::ClientError::Param(_) => PyValueError::new_err(msg),
                other => client_error(other),
            }
        })?;
        Ok(if v.is_int() {
            (v.bits as i32).into_pyobject(py)?.into_any().unbind()
        } else {
            f64::from(f32::from_bits(v.bits))
                .into_pyobject(py)?
                .into_any()
                .unbind()
        })
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