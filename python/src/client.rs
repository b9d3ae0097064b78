//! `OffboardClient` (nexus_uav.px4): the host end of PX4's offboard link. Verbs return at once
//! and the pump carries them out in PX4's order (Takeoff mode confirmed before the arm, …);
//! queries read what PX4 last reported. Units: metres, radians, sim seconds.

use nexus_host::groups::{ActionApi, InfoApi, MissionApi, ParamApi, TelemetryApi};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use nexus_core::action::ParamValue;
use nexus_core::mission::MissionItem;
use nexus_core::rc::RcSticks;
use nexus_core::telemetry::LandedState;
use nexus_host::offboard_client::{parse_mode, MissionSource, OffboardClient as HostClient};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

use crate::errors::{client_error, connect_error, RunError};
use crate::results::py_bool;
use crate::sim::Sim;

/// OffboardClient(conn="udpin:0.0.0.0:14540", *, system_id=1, arrive_m=2.0,
/// yaw_tol_rad=radians(5.0), alt_tol_m=1.0, wait_clear_s=5.0)
///
/// The host end of PX4's offboard link: verbs return at once and the pump carries them out in
/// PX4's order; queries read what PX4 last reported. Configuring it opens nothing: enter it (or
/// call open()), or get an open one from OffboardClient.connect(sim, timeout).
///
/// Args:
///     conn: pymavlink connection string for the PX4 offboard link. The default listens on
///         OFFBOARD_PORT, the PX4 offboard and GCS API port of instance 0; instance N is
///         OFFBOARD_PORT + N.
///     system_id: PX4's MAVLink system id, instance + 1: the heartbeat this client waits for
///         and the system every verb addresses.
///     arrive_m: 3D arrival radius for at_target after a goto, in meters.
///     yaw_tol_rad: Heading tolerance for at_target when the caller commanded a yaw, in radians.
///     alt_tol_m: Altitude tolerance for at_target after a takeoff, in meters.
///     wait_clear_s: Seconds the vehicle must be failure-free, and the initial settle period,
///         before the pump sends an arm command.
///
/// Raises:
///     ValueError: conn does not parse, or a tolerance is not a finite number >= 0.
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

    /// Open a client on the run's offboard link and wait for PX4's heartbeat, stepping the sim.
    ///
    /// The client listens on the address the run's port map names, ``sim.ports["offboard"]``, and
    /// addresses the system it names (an attached run, ``Sim(connect=...)``: the first autopilot
    /// heard on its link). PX4 runs on the sim's clock, so the wait steps the sim, and ``timeout``
    /// counts sim seconds. Call it once the sim has started; the client returned is open, and
    /// entering it as a context manager closes it on the way out::
    ///
    ///     sim.start()
    ///     with OffboardClient.connect(sim, 10.0) as op:
    ///         op.takeoff(2.0)
    ///         sim.wait_until(op.at_target, sim_timeout=60.0)
    ///
    /// Args:
    ///     sim: The started run.
    ///     timeout: Sim seconds to wait for PX4's first heartbeat.
    ///
    /// Returns:
    ///     The open client, with PX4's heartbeat: :attr:`connected` is ``True``.
    ///
    /// Raises:
    ///     KeyError: The run has no offboard link; the message says why (a run with no vehicle).
    ///     RunError: No heartbeat came within ``timeout``, naming the port, or the run lost a peer
    ///         meanwhile; the client closes first.
    ///     ValueError: ``timeout`` is not a finite number >= 0.
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
        if sim.vehicleless() && sim.inner.is_running() {
            return Err(crate::sim::no_link());
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

    /// Open the MAVLink link and start the pump, returning at once, with no wait for PX4.
    ///
    /// The caller owns the waiting, because PX4's clock is the sim's under lockstep: the sim has to
    /// keep stepping or no heartbeat ever arrives, so the wait has to be a stepping loop rather than
    /// a sleep, ``sim.wait_until(lambda: op.connected, sim_timeout=...)``. Poll :attr:`connected` to
    /// know when PX4 has answered. Entering the client as a context manager calls this, and leaving it
    /// calls :meth:`close`.
    ///
    /// Returns:
    ///     ``self``, so it chains.
    fn open(slf: PyRef<'_, Self>) -> PyResult<PyRef<'_, Self>> {
        slf.inner.open().map_err(client_error)?;
        Ok(slf)
    }

    /// Stop the pump's work on this link and close the MAVLink connection.
    ///
    /// Idempotent and safe to call after a partial start: waits on the link end ``closed``.
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

    /// Whether PX4 has answered on the offboard link: a heartbeat has arrived and the
    /// pump has learned the peer's system id, so every verb has somewhere to send.
    ///
    /// Returns:
    ///     ``True`` once the first PX4 heartbeat has arrived.
    #[getter]
    fn connected(&self) -> bool {
        self.inner.connected()
    }

    /// Request a flight mode. Returns at once; the pump commands it until telemetry confirms.
    ///
    /// Entering a manual mode requires a live manual-control source, so a neutral MANUAL_CONTROL
    /// stream is auto-started first. Observe the result with :meth:`mode`.
    ///
    /// Args:
    ///     mode: Friendly mode name; one of the mode table's, for example ``"Manual"``,
    ///         ``"Altitude"``, ``"Position"``, ``"Offboard"``, ``"Hold"``, ``"Takeoff"``,
    ///         ``"Mission"``, ``"RTL"`` or ``"Land"``.
    ///
    /// Raises:
    ///     ValueError: If ``mode`` isn't a known mode name.
    fn set_mode(&self, mode: &str) -> PyResult<()> {
        let mode = parse_mode(mode).map_err(client_error)?;
        self.inner.set_mode(mode).map_err(client_error)
    }

    /// Request arming. Returns at once; the pump arms once the vehicle is armable.
    ///
    /// Armable means telemetry has confirmed any pending mode change, PX4 is publishing a position
    /// estimate, so the EKF has converged, and it has been failure-free for the configured settle
    /// period (``wait_clear_s``). Observe the result with :meth:`is_armed`.
    ///
    /// Args:
    ///     gesture: Arm with the pilot's throttle-down plus yaw-right **stick gesture** rather than
    ///         ``MAV_CMD_COMPONENT_ARM_DISARM``: the manual path a real pilot flies. The pump holds
    ///         neutral sticks until the vehicle is armable, then presents the gesture, so PX4 only
    ///         ever gets an edge it can act on. Needs a live manual-control source, which this starts
    ///         if none is running. The default, ``False``, is the command arm, which is what
    ///         :meth:`takeoff` and every autonomous script use.
    #[pyo3(signature = (*, gesture=false))]
    fn arm(&self, gesture: bool) -> PyResult<()> {
        if gesture {
            self.inner.arm_gesture()
        } else {
            self.inner.arm()
        }
        .map_err(client_error)
    }

    /// Send a single disarm command, fire-and-forget and not verified.
    ///
    /// Drops any outstanding arm request first, so the pump does not undo it.
    ///
    /// Returns:
    ///     ``True`` once ``MAV_CMD_COMPONENT_ARM_DISARM`` has gone out.
    fn disarm(&self) -> PyResult<bool> {
        self.inner.disarm().map_err(client_error)?;
        Ok(true)
    }

    /// Set the streamed MANUAL_CONTROL setpoint. roll/pitch/yaw in [-1,1]; throttle in [0,1].
    ///
    /// Stores the setpoint; the background pump streams it at ~20 Hz until changed or cleared with
    /// ``stop_rc``. This clamps the values to range, then scales them to the MANUAL_CONTROL integer
    /// fields.
    ///
    /// Args:
    ///     roll: Roll stick, clamped to [-1, 1].
    ///     pitch: Pitch stick, clamped to [-1, 1].
    ///     throttle: Throttle stick, clamped to [0, 1]; 0.5 is mid-stick.
    ///     yaw: Yaw stick, clamped to [-1, 1].
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

    /// Stop streaming the MANUAL_CONTROL setpoint; the pump goes quiet until ``set_rc``.
    fn stop_rc(&self) -> PyResult<()> {
        self.inner.stop_rc().map_err(client_error)
    }

    /// Set a REAL32 PX4 parameter with PARAM_SET. Returns at once; awaits no acknowledgement
    /// (the pump resends until PX4 echoes the value; read it back with :meth:`param_get`).
    ///
    /// Float-only on purpose: an integer parameter doesn't ride the wire as a float, so it gets its
    /// own verb rather than a type argument this one can't honour; see :meth:`param_set_int`.
    ///
    /// Args:
    ///     name: Parameter name, for example ``"MIS_TAKEOFF_ALT"``.
    ///     value: New value, sent as a float.
    fn param_set(&self, name: &str, value: f32) -> PyResult<()> {
        self.inner
            .set_param(name, ParamValue::Real(value))
            .map(|_| ())
            .map_err(client_error)
    }

    /// Set an INT32 PX4 parameter with PARAM_SET. Returns at once; awaits no acknowledgement.
    ///
    /// PARAM_SET carries every value in one float field, and PX4 reads an integer parameter out of
    /// that field's **bits** rather than its numeric value. So this reinterprets the int rather than
    /// casting it: sending ``float(1)`` would have PX4 read 1065353216.
    ///
    /// Args:
    ///     name: Parameter name, for example ``"COM_RC_IN_MODE"``.
    ///     value: New value, sent as the INT32 bit pattern of the float field.
    fn param_set_int(&self, name: &str, value: i32) -> PyResult<()> {
        self.inner
            .set_param(name, ParamValue::Int(value))
            .map(|_| ())
            .map_err(client_error)
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
        let v: nexus_host::pump::Param = got.map_err(|e| {
            let msg = e.to_string();
            match e {
                nexus_host::error::OffboardClientError::Param(
                    nexus_host::pump::ParamError::Timeout { .. },
                ) => pyo3::exceptions::PyTimeoutError::new_err(msg),
                nexus_host::error::OffboardClientError::Param(
                    nexus_host::pump::ParamError::Died { .. }
                    | nexus_host::pump::ParamError::Closed(_),
                ) => RunError::new_err(msg),
                nexus_host::error::OffboardClientError::Param(_) => PyValueError::new_err(msg),
                other => client_error(other),
            }
        })?;
        Ok(match v.value {
            ParamValue::Int(i) => i.into_pyobject(py)?.into_any().unbind(),
            ParamValue::Real(f) => f64::from(f).into_pyobject(py)?.into_any().unbind(),
        })
    }

    /// Set the takeoff altitude, request Takeoff mode, then request arming. Returns at once.
    ///
    /// The ordering is load-bearing and this method owns it: telemetry confirms the ``DO_SET_MODE``
    /// for Takeoff mode **before** the arm command, which is why an autonomous script never calls
    /// :meth:`arm` itself. PX4 climbs on arming; wait for the climb with :meth:`at_target`.
    ///
    /// Args:
    ///     alt_m: Target takeoff altitude in meters, written to ``MIS_TAKEOFF_ALT``.
    ///
    /// Raises:
    ///     ValueError: ``alt_m`` is not a finite number of meters above 0.
    fn takeoff(&self, alt_m: f32) -> PyResult<()> {
        if !(alt_m.is_finite() && alt_m > 0.0) {
            return Err(PyValueError::new_err(format!(
                "alt_m must be a finite number of metres above 0, got {alt_m}"
            )));
        }
        self.inner.takeoff(alt_m).map_err(client_error)
    }

    /// Request Land mode to land the vehicle in place. Returns at once.
    ///
    /// Clears the target: :meth:`at_target` goes ``False``.
    fn land(&self) -> PyResult<()> {
        self.inner.land().map_err(client_error)
    }

    /// Upload a mission to PX4. Returns at once; wait for it with :meth:`mission_uploaded`.
    ///
    /// The items go on the wire **verbatim**, in the geodetic frame the ``.plan`` authored them in;
    /// nothing converts through the sim's world frame, so a plan flies where QGroundControl drew it.
    ///
    /// Upload is a handshake rather than a send: this lodges the items, the pump puts
    /// ``MISSION_COUNT`` on the wire, PX4 then asks for each item by ``seq``, and it ends with PX4's
    /// ``MISSION_ACK``. Re-uploading replaces the mission and resets the progress counters, so a
    /// second mission never reports the first one's arrivals.
    ///
    /// Args:
    ///     plan: A :class:`~nexus_uav.px4.Plan`, a bare sequence of
    ///         :class:`~nexus_uav.px4.MissionItem`, or a path to a ``.plan`` file, read with
    ///         :func:`~nexus_uav.px4.read_plan`.
    ///
    /// Raises:
    ///     ValueError: The file is not a plan (see :func:`~nexus_uav.px4.read_plan`).
    ///     TypeError: ``plan`` is not a Plan, a sequence of MissionItem or a path.
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

    /// Report whether PX4 has accepted the uploaded mission.
    ///
    /// Returns:
    ///     ``True`` once ``MISSION_ACK`` reported acceptance. Stays ``False`` while the handshake is
    ///     in flight, and also when PX4 **rejected** the mission; check :meth:`mission_ack` to tell a
    ///     "not yet" from a "refused" answer.
    fn mission_uploaded(&self) -> bool {
        self.inner.mission_uploaded()
    }

    /// Report PX4's ``MISSION_ACK`` result code.
    ///
    /// Returns:
    ///     The MAV_MISSION_RESULT value, where ``0`` = accepted, or ``None`` if PX4 hasn't
    ///     acknowledged an upload yet.
    fn mission_ack(&self) -> Option<u32> {
        self.inner.mission_ack().map(|a| a as u32)
    }

    /// Report how many items are in the uploaded mission.
    ///
    /// Returns:
    ///     The item count, or ``0`` before any upload.
    fn mission_count(&self) -> usize {
        self.inner.mission_count()
    }

    /// Report the highest mission item PX4 says it has reached.
    ///
    /// Returns:
    ///     The sequence number from the most recent ``MISSION_ITEM_REACHED``, or ``-1`` if none has
    ///     arrived yet. Never decreases within one mission.
    fn mission_reached(&self) -> i32 {
        self.inner.mission_reached().map_or(-1, i32::from)
    }

    /// Report the item PX4 is flying to.
    ///
    /// Returns:
    ///     The sequence number from the most recent ``MISSION_CURRENT``, or ``0`` before the first.
    fn mission_current(&self) -> u16 {
        self.inner.mission_current()
    }

    /// Report whether the vehicle has reached the mission's last **waypoint**.
    ///
    /// Measured on the last ``NAV_WAYPOINT``, not the last item. A mission that ends in
    /// ``NAV_RETURN_TO_LAUNCH`` hands the flight to Return To Launch (RTL) instead of reporting an
    /// arrival there, so waiting on the final item could never return. Wait out the RTL tail with
    /// :meth:`landed_state` instead.
    ///
    /// Returns:
    ///     ``True`` once the vehicle has reached the final waypoint; ``False`` with no uploaded
    ///     mission, or one that carries no waypoint at all.
    fn mission_complete(&self) -> bool {
        self.inner.mission_complete()
    }

    /// Request the mission's first item, Mission mode, then arming. Returns at once.
    ///
    /// The ordering is load-bearing and this method owns it, exactly as :meth:`takeoff` does:
    /// telemetry confirms the ``DO_SET_MODE`` for Mission mode **before** the arm command. PX4 flies
    /// the mission on arming, from the item it holds as current, so the arm also waits until PX4
    /// reports item 0 current after ``MISSION_SET_CURRENT``: PX4 skips an upload that matches the
    /// mission it already holds, which after a finished flight sits at its last item.
    ///
    /// Upload the mission first and wait for :meth:`mission_uploaded`: PX4 refuses Mission mode while
    /// it has no valid mission, so engaging early just burns retries.
    fn start_mission(&self) -> PyResult<()> {
        self.inner.start_mission().map_err(client_error)
    }

    /// Fly to a world-frame position. Returns at once; wait for it with :meth:`at_target`.
    ///
    /// Commanded as ``DO_REPOSITION``: the same guidance PX4 runs for a GCS "fly here" request, and
    /// what it latches until the next command, so this goes out once rather than streamed. The
    /// position is in **world axes**, Newton FLU and Z-up (x forward/north, y left/west, z up),
    /// resolved against an anchor captured on the first call.
    ///
    /// Yaw is in world axes too, and is reflected on the way out: a right-handed yaw about world +z
    /// turns +x toward +y, north toward **west**, while PX4's North-East-Down (NED) heading is
    /// positive north toward **east**.
    ///
    /// Args:
    ///     setpoint: The target: a ``PositionGoal`` (an object with ``pos`` and ``yaw``) or a bare
    ///         ``(x, y, z)`` world-frame position in meters, with ``z`` over the launch point.
    ///     yaw: Optional world heading in radians, right-handed about +z, so +90 degrees faces
    ///         +y = west; overrides a ``PositionGoal``'s own ``yaw``. ``None`` leaves the heading to
    ///         PX4.
    ///
    /// Raises:
    ///     RuntimeError: No position has arrived on the offboard link yet.
    ///     TypeError: ``setpoint`` isn't a ``PositionGoal`` or an ``(x, y, z)`` position.
    ///     ValueError: The position or yaw is not finite.
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
        // A tuple, or any sequence of three numbers (a list, a numpy array).
        let (x, y, z): (f64, f64, f64) = match pos.extract() {
            Ok(t) => t,
            Err(_) if !pos.is_instance_of::<pyo3::types::PyString>() => {
                match pos
                    .extract::<Vec<f64>>()
                    .map_err(|_| type_err())?
                    .as_slice()
                {
                    [x, y, z] => (*x, *y, *z),
                    _ => return Err(type_err()),
                }
            }
            Err(_) => return Err(type_err()),
        };
        let yaw = yaw.or(own_yaw);
        if ![x, y, z].iter().all(|v| v.is_finite()) || yaw.is_some_and(|v| !v.is_finite()) {
            return Err(PyValueError::new_err(
                "goto: the position and yaw must be finite",
            ));
        }
        self.inner
            .goto_flu(x as f32, y as f32, z as f32, yaw.map(|v| v as f32))
            .map_err(client_error)
    }

    /// Report whether the vehicle has reached what the last verb commanded.
    ///
    /// Measured against **what PX4 reports**, never the sim's ground truth: within ``alt_tol_m`` of
    /// the takeoff altitude, or within ``arrive_m`` (3D) of a :meth:`goto` target and, when a yaw was
    /// commanded, within ``yaw_tol_rad`` of it.
    ///
    /// Returns:
    ///     ``True`` once inside the arrival tolerances; ``False`` while still en route, with no
    ///     target, because no verb commanded one or the last verb was :meth:`land`, or before the
    ///     first position report.
    fn at_target(&self) -> bool {
        self.inner.at_target()
    }

    /// Report the cached arming state from the most recent heartbeat.
    ///
    /// Returns:
    ///     ``True`` if the vehicle's last heartbeat reported the safety-armed flag.
    fn is_armed(&self) -> bool {
        self.inner.is_armed()
    }

    /// Report the cached flight mode decoded from the most recent heartbeat.
    ///
    /// Returns:
    ///     The friendly mode name, for example ``"Takeoff"``, or a ``"main=...,sub=..."`` string if
    ///     the mode isn't in the known table; ``""`` before the first heartbeat.
    fn mode(&self) -> String {
        self.inner.mode().map(|m| m.to_string()).unwrap_or_default()
    }

    /// Report the cached landed state from EXTENDED_SYS_STATE.
    ///
    /// Returns:
    ///     ``"ON_GROUND"``, ``"IN_AIR"``, ``"TAKING_OFF"``, ``"LANDING"``, or ``"UNKNOWN"`` if not
    ///     yet reported.
    fn landed_state(&self) -> &'static str {
        let s: LandedState = self.inner.landed_state();
        s.name()
    }

    /// Report the cached altitude over the launch point, in meters.
    ///
    /// Returns:
    ///     Relative altitude in meters from GLOBAL_POSITION_INT, or ``None`` if no position has
    ///     arrived yet.
    fn relative_altitude(&self) -> Option<f32> {
        self.inner.relative_altitude_m()
    }

    /// Report PX4's last refusal of a request, with the STATUSTEXT that explained it.
    ///
    /// Returns:
    ///     The refusal in words ("arm refused: Arming denied: ..."), or ``None``.
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
