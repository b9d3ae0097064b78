//! [`OffboardClient`]: the Python `OffboardClient` for PX4, in Rust.
//!
//! The client is a handle on one link of a [`Pump`]: every verb is applied by the pump thread
//! to the link's core offboard machine (which owns the ordering rules: Takeoff mode confirmed
//! before the arm, MISSION_SET_CURRENT 0 before a mission start, requests cleared the moment
//! telemetry confirms them), and every query reads the status the pump publishes after each
//! batch, so a query never waits on the pump.
//!
//! ```no_run
//! use nexus_host::offboard_client::OffboardClient;
//! use nexus_host::run::{Run, RunOptions};
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let sim = Run::new(RunOptions::simulated(0).speed(10.0));
//! sim.start()?;
//! // sim.ports()?.get("offboard"): UDP 14540, instance 0
//! let op = OffboardClient::connect(&sim, 10.0)?;
//! op.takeoff(2.0)?;
//! sim.until(|| op.at_target(), 60.0)?;
//! # Ok(())
//! # }
//! ```
//!
//! Differences from the Python client, where Rust has a better shape: `Drop` closes (no context
//! manager); verbs return `Result` (an unknown mode, a bad parameter name, a full queue are
//! typed errors); "not yet" is `None`, not a sentinel ([`OffboardClient::mission_reached`] is
//! `Option<u16>` where the Python client says `-1`, [`OffboardClient::mode`] `Option<Mode>`
//! where it says `""`); PX4's refusals and the requests the machine gave up on are in
//! [`OffboardClient::events_since`] and [`OffboardClient::last_refusal`].
//!
//! Every verb here is the core [`nexus_core::Client`]'s verb of the same name (its
//! [`nexus_core::client::verbs`]), run on the pump thread: the same checks and the same
//! bookkeeping as a flight program's step.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use nexus_core::client::ClientConfig;
pub use nexus_core::ground_truth::GroundTruth;
use nexus_core::mission::MissionItem;
use nexus_core::mode::Mode;
use nexus_core::offboard::{GeoKind, GeoStatus, OffboardConfig, Refusal, Setpoint, Yaw};
use nexus_core::plan::{line_col, read_plan};
use nexus_core::rc::RcSticks;
use nexus_core::telemetry::{
    Attitude, Battery, Gps, Home, LandedState, LinkIds, LocalNed, Position, Snapshot,
};

use crate::error::{ConnectError, OffboardClientError, RunError};
use crate::launcher::OFFBOARD_CLIENT_PORT_BASE;
use crate::pump::{
    HostPlan, LinkConfig, LinkEvent, LinkHandle, LinkStatus, MissionStatus, ParamValue, Pump,
    Supervision,
};
use crate::run::Run;
use crate::sync::lock;
use crate::transport::{ConnString, LinkOptions, PeerRule};

/// PX4's offboard and GCS API port of instance 0 (instance N: `OFFBOARD_PORT + N`).
pub const OFFBOARD_PORT: u16 = OFFBOARD_CLIENT_PORT_BASE;

/// Our MAVLink system id on the link (a GCS, as pymavlink's default).
pub const OWN_SYSTEM_ID: u8 = 255;
/// Our MAVLink component id on the link (pymavlink's default).
pub const OWN_COMPONENT_ID: u8 = 240;

/// How an [`OffboardClient`] connects and behaves: the one options type of a client (the run's
/// [`crate::run::RunOptions::client`] is one of these). Defaults ([`Default`]): system id 1,
/// the offboard machine's [`OffboardConfig::default`] (arrival 2 m, altitude tolerance 1 m,
/// heading 5°, 5 s failure-free before arming, …), supervised after 5 s of silence, the
/// process-wide pump, ground truth asked for when the vehicle identifies as PX4 SITL.
#[derive(Debug, Clone)]
pub struct OffboardOptions {
    /// PX4's system id, instance + 1: the heartbeat waited for, the system every verb
    /// addresses. Default 1.
    pub system_id: u8,
    /// The offboard machine: `at_target` tolerances (`arrive_m`, `alt_tol_m`,
    /// `yaw_tol_rad`), the arm settle window (`wait_clear_s`), retries, give-up limits,
    /// stream periods. Default [`OffboardConfig::default`].
    pub offboard: OffboardConfig,
    /// The link's supervision: wall time of silence or of a stopped autopilot clock after
    /// which every wait ends `died`. `None`: not supervised. Default
    /// `Some(`[`crate::run::DEFAULT_STALL`]`)` (5 s).
    pub stall: Option<Duration>,
    /// Transport options (UDP receive buffer). Default [`LinkOptions::default`].
    pub transport: LinkOptions,
    /// The pump to join; `None` (the default): the process-wide pump ([`Pump::shared`]).
    pub pump: Option<Pump>,
    /// Whether to ask the vehicle for a simulator's ground truth (the height above the pad):
    /// [`GroundTruth::Always`] for a simulator we started, [`GroundTruth::Auto`] (the
    /// default) otherwise.
    pub ground_truth: GroundTruth,
    /// The autopilot's component id ([`ClientConfig::target_compid`]): `None` (the default),
    /// the component of its first autopilot heartbeat, latched.
    pub component_id: Option<u8>,
}

impl Default for OffboardOptions {
    fn default() -> Self {
        OffboardOptions {
            system_id: 1,
            offboard: OffboardConfig::default(),
            stall: Some(crate::run::DEFAULT_STALL),
            transport: LinkOptions::default(),
            pump: None,
            ground_truth: GroundTruth::Auto,
            component_id: None,
        }
    }
}

impl OffboardOptions {
    /// Seconds (sim) the vehicle must be failure-free, and the initial settle period, before
    /// an arm command goes out ([`OffboardConfig::wait_clear_s`]).
    pub fn wait_clear_s(mut self, s: f32) -> Self {
        self.offboard.wait_clear_s = s;
        self
    }

    /// The core client's configuration these options make.
    pub fn client_config(&self) -> ClientConfig {
        ClientConfig {
            ids: LinkIds {
                target_sysid: self.system_id,
                own_sysid: OWN_SYSTEM_ID,
                own_compid: OWN_COMPONENT_ID,
            },
            offboard: self.offboard,
            ground_truth: self.ground_truth,
            target_compid: self.component_id,
            stall: self
                .stall
                .filter(|s| !s.is_zero())
                .map(crate::pump::core_duration),
        }
    }
}

/// What [`OffboardClient::upload_mission`] takes: a plan, bare items, or a `.plan` file.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive] // more variants may come; match with a `_` arm
pub enum MissionSource<'a> {
    /// A parsed plan.
    Plan(&'a HostPlan),
    /// Items, `seq` equal to their index.
    Items(&'a [MissionItem]),
    /// A QGroundControl `.plan` file, read with [`read_plan_file`].
    File(&'a Path),
}

impl<'a> From<&'a HostPlan> for MissionSource<'a> {
    fn from(p: &'a HostPlan) -> Self {
        MissionSource::Plan(p)
    }
}
impl<'a> From<&'a [MissionItem]> for MissionSource<'a> {
    fn from(i: &'a [MissionItem]) -> Self {
        MissionSource::Items(i)
    }
}
impl<'a> From<&'a Vec<MissionItem>> for MissionSource<'a> {
    fn from(i: &'a Vec<MissionItem>) -> Self {
        MissionSource::Items(i)
    }
}
impl<'a> From<&'a Path> for MissionSource<'a> {
    fn from(p: &'a Path) -> Self {
        MissionSource::File(p)
    }
}
impl<'a> From<&'a PathBuf> for MissionSource<'a> {
    fn from(p: &'a PathBuf) -> Self {
        MissionSource::File(p)
    }
}
impl<'a> From<&'a str> for MissionSource<'a> {
    fn from(p: &'a str) -> Self {
        MissionSource::File(Path::new(p))
    }
}

/// Read a QGroundControl `.plan` file (the Python client's `read_plan`): items in file order, `seq`
/// = index, no implicit home item. Errors name the file, line and column.
pub fn read_plan_file(path: impl AsRef<Path>) -> Result<Box<HostPlan>, OffboardClientError> {
    let path = path.as_ref();
    let bytes = std::fs::read(path).map_err(|e| OffboardClientError::Plan {
        path: path.to_path_buf(),
        message: format!("cannot read it: {e}"),
    })?;
    match read_plan::<{ crate::pump::MISSION_ITEMS }>(&bytes) {
        Ok(plan) => Ok(Box::new(plan)),
        Err(e) => {
            let (line, col) = line_col(&bytes, e.offset());
            Err(OffboardClientError::Plan {
                path: path.to_path_buf(),
                message: format!("line {line}, column {col}: {e}"),
            })
        }
    }
}

/// The mode called `name` (case-insensitive; PX4's table, e.g. "Takeoff", "Hold", "Mission",
/// "RTL", "Land", "Position", or `"main=4,sub=3"`), for [`OffboardClient::set_mode`]. An
/// unknown name is [`OffboardClientError::UnknownMode`], which lists the known ones.
pub fn parse_mode(name: &str) -> Result<Mode, OffboardClientError> {
    Mode::from_name(name).map_err(|_| OffboardClientError::UnknownMode {
        name: name.to_owned(),
        known: known_modes(),
    })
}

/// The names PX4's mode table knows, for error messages.
fn known_modes() -> String {
    Mode::all()
        .filter_map(Mode::name)
        .collect::<Vec<_>>()
        .join(", ")
}

/// The PX4 offboard link's client (the Python OffboardClient's API). `Send + Sync`: verbs and
/// queries from any thread. Closes on `Drop`.
#[derive(Debug)]
pub struct OffboardClient {
    conn: ConnString,
    options: OffboardOptions,
    supervision: Mutex<Supervision>,
    link: Mutex<Option<LinkHandle>>,
}

impl OffboardClient {
    /// Configure the offboard link (a pymavlink connection string, e.g.
    /// `udpin:0.0.0.0:14540`); nothing opens until [`OffboardClient::open`].
    pub fn new(
        conn: &str,
        options: OffboardOptions,
    ) -> Result<OffboardClient, OffboardClientError> {
        Ok(OffboardClient {
            conn: conn.parse()?,
            options,
            supervision: Mutex::new(Supervision::default()),
            link: Mutex::new(None),
        })
    }

    /// The Python client's default: listen on [`OFFBOARD_PORT`] for instance 0.
    pub fn instance_0() -> OffboardClient {
        OffboardClient {
            conn: ConnString::udp_in_any(OFFBOARD_PORT),
            options: OffboardOptions::default(),
            supervision: Mutex::new(Supervision::default()),
            link: Mutex::new(None),
        }
    }

    /// Open a client on the run's offboard link (`sim.ports()`'s "offboard") and wait for
    /// PX4's heartbeat, advancing the run's clock as needed: `timeout_sim_s` counts sim
    /// seconds. The client returned is open and [`OffboardClient::connected`].
    pub fn connect(sim: &Run, timeout_sim_s: f64) -> Result<OffboardClient, ConnectError> {
        let port = sim.offboard_port()?;
        let mut options = sim.offboard_options();
        options.system_id = port.system_id;
        // The run knows where its vehicle sends from: only that address counts.
        if let Some(vehicle) = sim.vehicle_addr() {
            options.transport.peer = PeerRule::Address(vehicle);
        }
        let client = OffboardClient {
            conn: ConnString::UdpIn {
                host: sim.options().listen.to_string(),
                port: port.port,
            },
            options,
            supervision: Mutex::new(sim.supervision()?),
            link: Mutex::new(None),
        };
        client.open_on(&sim.pump()?)?;
        let link = client.link()?;
        sim.attach(&link);
        let connected = sim.until(|| link.with_status(|s| s.connected), timeout_sim_s);
        match connected {
            Ok(_) => Ok(client),
            Err(RunError::Timeout { .. }) => {
                client.close();
                Err(ConnectError::NoHeartbeat {
                    port: port.port,
                    timeout_s: timeout_sim_s,
                })
            }
            Err(RunError::Died { cause }) => {
                client.close();
                Err(ConnectError::LostPeer {
                    port: port.port,
                    cause,
                })
            }
            Err(e) => {
                client.close();
                Err(e.into())
            }
        }
    }

    /// A client on a link already open on a pump (an attached vehicle's: `nexus serve`'s
    /// `connect`), with the options it was opened with. Closing the client closes the link.
    pub fn on_link(link: LinkHandle, options: OffboardOptions) -> OffboardClient {
        OffboardClient {
            conn: link.conn().clone(),
            options,
            supervision: Mutex::new(Supervision::default()),
            link: Mutex::new(Some(link)),
        }
    }

    /// Set the supervision a later `open` gives the link (the run's probe and stall limit).
    pub fn set_supervision(&self, supervision: Supervision) {
        *lock(&self.supervision) = supervision;
    }

    /// Open the link and join the pump ([`OffboardOptions::pump`], else the process-wide
    /// one); returns at once, with no wait for PX4: poll [`OffboardClient::connected`].
    /// Opening an open client does nothing.
    pub fn open(&self) -> Result<&Self, OffboardClientError> {
        let pump = match &self.options.pump {
            Some(p) => p.clone(),
            None => Pump::shared()?,
        };
        self.open_on(&pump)
    }

    /// [`OffboardClient::open`] on this pump.
    pub fn open_on(&self, pump: &Pump) -> Result<&Self, OffboardClientError> {
        let mut link = lock(&self.link);
        if link.as_ref().is_some_and(|l| !l.is_closed()) {
            return Ok(self);
        }
        let mut supervision = lock(&self.supervision).clone();
        if supervision.stall.is_none() {
            supervision.stall = self.options.stall;
        }
        let config = LinkConfig {
            client: self.options.client_config(),
            transport: self.options.transport.clone(),
            supervision,
        };
        *link = Some(pump.open_link(&self.conn, config)?);
        Ok(self)
    }

    /// Close the link: waits on it end `closed`, the socket closes, the pump thread stops if
    /// nothing else uses it. Idempotent.
    pub fn close(&self) {
        let link = lock(&self.link).take();
        if let Some(l) = link {
            l.close();
        }
    }

    /// The link, while open (for waits and programs on it: [`LinkHandle::register`]).
    pub fn link(&self) -> Result<LinkHandle, OffboardClientError> {
        lock(&self.link).clone().ok_or(OffboardClientError::NotOpen)
    }

    /// Whether the client is open.
    pub fn is_open(&self) -> bool {
        lock(&self.link).as_ref().is_some_and(|l| !l.is_closed())
    }

    /// The connection string.
    pub fn conn(&self) -> &ConnString {
        &self.conn
    }

    /// The options.
    pub fn options(&self) -> &OffboardOptions {
        &self.options
    }

    /// Read the published status; a client that is not open reads the empty status (not
    /// connected, nothing reached, …).
    fn read<R>(&self, f: impl FnOnce(&LinkStatus) -> R) -> R {
        match lock(&self.link).as_ref() {
            Some(l) => l.with_status(f),
            None => f(&LinkStatus::default()),
        }
    }

    /// Run a verb on the pump thread against the link's offboard machine.
    fn verb<R: Send + 'static>(
        &self,
        f: impl FnOnce(&mut crate::pump::LinkCtx<'_>) -> Result<R, OffboardClientError> + Send + 'static,
    ) -> Result<R, OffboardClientError> {
        self.link()?.call(f)?
    }

    // ---- queries (published status; never a round trip) ----

    /// Whether PX4's heartbeat has arrived: verbs have somewhere to go.
    pub fn connected(&self) -> bool {
        self.read(|s| s.connected)
    }

    /// Whether the vehicle reached what the last verb commanded (takeoff altitude within
    /// `alt_tol_m`; goto position within `arrive_m` and yaw within `yaw_tol_rad`), measured
    /// on what PX4 reports. False with no target, after land, before a position.
    pub fn at_target(&self) -> bool {
        self.read(|s| s.at_target)
    }

    /// Armed flag of the last heartbeat.
    pub fn is_armed(&self) -> bool {
        self.read(|s| s.armed)
    }

    /// The mode of the last heartbeat; `None` before one. Its `Display` is the friendly name
    /// (`"main=…,sub=…"` for a mode the table does not name).
    pub fn mode(&self) -> Option<Mode> {
        self.read(|s| s.mode)
    }

    /// EXTENDED_SYS_STATE's landed state (`name()`: `ON_GROUND`, `IN_AIR`, `TAKING_OFF`,
    /// `LANDING`, `UNKNOWN`).
    pub fn landed_state(&self) -> LandedState {
        self.read(|s| s.landed_state)
    }

    /// On the ground by the wait engine's rule (landed state; before that, disarmed near the pad).
    pub fn landed(&self) -> bool {
        self.read(|s| s.landed.unwrap_or(false))
    }

    /// Altitude over the launch point from GLOBAL_POSITION_INT, m; `None` before one.
    pub fn relative_altitude(&self) -> Option<f32> {
        self.read(|s| s.relative_alt_m)
    }

    /// Position: latitude/longitude in degrees, altitude AMSL and above home in m
    /// (GLOBAL_POSITION_INT); `None` before one.
    pub fn position(&self) -> Option<Position> {
        self.read(|s| s.vitals.position)
    }

    /// Local position and velocity, NED, m and m/s (LOCAL_POSITION_NED); `None` before one.
    pub fn local_ned(&self) -> Option<LocalNed> {
        self.read(|s| s.vitals.local_ned)
    }

    /// Roll, pitch and NED yaw, rad (ATTITUDE); `None` before one.
    pub fn attitude(&self) -> Option<Attitude> {
        self.read(|s| s.vitals.attitude)
    }

    /// Compass heading, rad in [0, 2π) (ATTITUDE.yaw); `None` before one.
    pub fn heading_rad(&self) -> Option<f32> {
        self.read(|s| s.vitals.heading_rad)
    }

    /// Ground speed, m/s (VFR_HUD); `None` before one.
    pub fn groundspeed_m_s(&self) -> Option<f32> {
        self.read(|s| s.vitals.groundspeed_m_s)
    }

    /// Climb rate, m/s, up positive (VFR_HUD); `None` before one.
    pub fn climb_rate_m_s(&self) -> Option<f32> {
        self.read(|s| s.vitals.climb_rate_m_s)
    }

    /// Battery voltage (V) and charge (%) (SYS_STATUS); `None` before one.
    pub fn battery(&self) -> Option<Battery> {
        self.read(|s| s.vitals.battery)
    }

    /// GPS fix type and satellites (GPS_RAW_INT); `None` before one.
    pub fn gps(&self) -> Option<Gps> {
        self.read(|s| s.vitals.gps)
    }

    /// Home: latitude/longitude in degrees, altitude AMSL in m (HOME_POSITION); `None` before
    /// PX4 reports it.
    pub fn home(&self) -> Option<Home> {
        self.read(|s| s.vitals.home)
    }

    /// Whether PX4 accepted the uploaded mission (false while in flight and when refused:
    /// see [`OffboardClient::mission_ack`]).
    pub fn mission_uploaded(&self) -> bool {
        self.read(|s| s.mission.uploaded)
    }

    /// PX4's MISSION_ACK result (`MissionAck::MAV_MISSION_ACCEPTED`, or why it refused),
    /// `None` before one. A number outside MAV_MISSION_RESULT reads as
    /// `MAV_MISSION_ERROR` (PX4 sends only defined values).
    pub fn mission_ack(&self) -> Option<nexus_core::mission::MissionAck> {
        self.read(|s| s.mission.ack).map(|code| {
            num_traits::FromPrimitive::from_u8(code)
                .unwrap_or(nexus_core::mission::MissionAck::MAV_MISSION_ERROR)
        })
    }

    /// Items in the uploaded mission (0 before any upload).
    pub fn mission_count(&self) -> usize {
        self.read(|s| s.mission.count)
    }

    /// Highest item (seq) PX4 said it reached, `None` before any (never decreases within a
    /// run).
    pub fn mission_reached(&self) -> Option<u16> {
        self.read(|s| s.mission.reached)
    }

    /// The item PX4 is flying to (MISSION_CURRENT.seq), 0 before the first report.
    pub fn mission_current(&self) -> u16 {
        self.read(|s| s.mission.current)
    }

    /// Whether PX4 reported the mission's last reachable item reached in this start (the first
    /// LAND, or the item before an RTL: [`nexus_core::mission::last_reachable`]); a COMPLETE
    /// state left over from an earlier flight does not count.
    pub fn mission_complete(&self) -> bool {
        self.read(|s| s.mission.complete)
    }

    /// All mission progress at once.
    pub fn mission_progress(&self) -> MissionStatus {
        self.read(|s| s.mission)
    }

    /// The published status (everything above and more); `None` when not open.
    pub fn status(&self) -> Option<LinkStatus> {
        lock(&self.link).as_ref().map(LinkHandle::status)
    }

    /// The wait engine's snapshot of the vehicle now.
    pub fn snapshot(&self) -> Option<Snapshot> {
        lock(&self.link)
            .as_ref()
            .map(|l| l.with_status(|s| s.snapshot.clone()))
    }

    /// PX4's last refusal, with the STATUSTEXT that explained it.
    pub fn last_refusal(&self) -> Option<Refusal> {
        self.read(|s| s.last_refusal.clone())
    }

    /// Events after `seq` (refusals, give-ups, mission transfers, program steps, death).
    pub fn events_since(&self, seq: u64) -> Vec<(u64, LinkEvent)> {
        match lock(&self.link).as_ref() {
            Some(l) => l.events_since(seq),
            None => Vec::new(),
        }
    }

    // ---- verbs (applied by the pump; they return once the machine has them) ----

    /// Request flight mode `mode`; commanded until telemetry confirms it. A manual mode starts
    /// the neutral MANUAL_CONTROL stream first. A mode by name: [`parse_mode`].
    pub fn set_mode(&self, mode: Mode) -> Result<(), OffboardClientError> {
        self.verb(move |ctx| {
            ctx.client().set_mode(mode);
            Ok(())
        })
    }

    /// Request arming by command, sent once armable (pending mode confirmed, a position,
    /// failure-free for `wait_clear_s`). Observe with [`OffboardClient::is_armed`].
    pub fn arm(&self) -> Result<(), OffboardClientError> {
        self.verb(|ctx| {
            let now = ctx.now();
            ctx.client().arm(now);
            Ok(())
        })
    }

    /// Request arming with the pilot's throttle-down, yaw-right stick gesture (starts the
    /// MANUAL_CONTROL stream; neutral sticks until armable, then the gesture).
    pub fn arm_gesture(&self) -> Result<(), OffboardClientError> {
        self.verb(|ctx| {
            let now = ctx.now();
            ctx.client().arm_gesture(now);
            Ok(())
        })
    }

    /// Send one disarm command (not verified) and drop any pending arm.
    pub fn disarm(&self) -> Result<(), OffboardClientError> {
        self.verb(|ctx| Ok(ctx.client().disarm()?))
    }

    /// Stream these sticks (MANUAL_CONTROL at 20 Hz) until changed or [`OffboardClient::stop_rc`].
    pub fn set_rc(&self, sticks: RcSticks) -> Result<(), OffboardClientError> {
        self.verb(move |ctx| {
            ctx.client().set_rc(sticks);
            Ok(())
        })
    }

    /// Stop the MANUAL_CONTROL stream.
    pub fn stop_rc(&self) -> Result<(), OffboardClientError> {
        self.verb(|ctx| {
            ctx.client().stop_rc();
            Ok(())
        })
    }

    /// Set parameter `name` to `value` ([`ParamValue::int`] goes as INT32, its bits in
    /// PARAM_SET's float field as PX4 reads them; [`ParamValue::real`] as REAL32, in the
    /// parameter's own unit). The machine resends it until PX4 echoes it.
    ///
    /// With `wait` = `Some(timeout)` (wall) this returns PX4's echo (`Some`: what it stored,
    /// with its index and count) once it comes, or fails when PX4 refuses it (at once,
    /// [`crate::pump::ParamError::Refused`] with PX4's MAV_PARAM_ERROR) or `timeout` passes;
    /// see [`LinkHandle::set_param`]. With `None` it returns `Ok(None)` as soon as the machine
    /// has the set: its end is an event ([`OffboardClient::events_since`]).
    pub fn set_param(
        &self,
        name: &str,
        value: ParamValue,
        wait: Option<Duration>,
    ) -> Result<Option<ParamValue>, OffboardClientError> {
        if let Some(timeout) = wait {
            return Ok(Some(self.link()?.set_param(name, value, timeout)?));
        }
        let name = name.to_owned();
        self.verb(move |ctx| {
            value.set_on(ctx.client(), &name)?;
            Ok(None)
        })
    }

    /// Read a parameter (PARAM_REQUEST_READ → PARAM_VALUE), giving up after `timeout` (wall)
    /// with [`crate::pump::ParamError::Timeout`], or at once with
    /// [`crate::pump::ParamError::Refused`] when the vehicle answers PARAM_ERROR.
    pub fn param_get(
        &self,
        name: &str,
        timeout: Duration,
    ) -> Result<ParamValue, OffboardClientError> {
        Ok(self.link()?.read_param(name, timeout)?)
    }

    /// Take off to `alt_m` over home: MIS_TAKEOFF_ALT, Takeoff mode confirmed, then arm.
    /// Wait for the climb with [`OffboardClient::at_target`].
    pub fn takeoff(&self, alt_m: f32) -> Result<(), OffboardClientError> {
        self.verb(move |ctx| {
            let now = ctx.now();
            Ok(ctx.client().takeoff(now, alt_m)?)
        })
    }

    /// Land in place (Land mode); clears the target.
    pub fn land(&self) -> Result<(), OffboardClientError> {
        self.verb(|ctx| {
            ctx.client().land();
            Ok(())
        })
    }

    /// Return to launch (RTL mode); clears the target.
    pub fn return_to_launch(&self) -> Result<(), OffboardClientError> {
        self.verb(|ctx| {
            ctx.client().return_to_launch();
            Ok(())
        })
    }

    /// Hold position (Hold mode).
    pub fn hold(&self) -> Result<(), OffboardClientError> {
        self.verb(|ctx| {
            ctx.client().hold();
            Ok(())
        })
    }

    /// Fly to a world-frame position (FLU, z up over the launch point), m, with an optional
    /// world yaw (rad, right-handed about +z: +π/2 faces west). One DO_REPOSITION; wait with
    /// [`OffboardClient::at_target`]. Fails before the first position report.
    pub fn goto(
        &self,
        x_m: f32,
        y_m: f32,
        z_m: f32,
        yaw_rad: Option<f32>,
    ) -> Result<(), OffboardClientError> {
        self.verb(move |ctx| Ok(ctx.client().goto(x_m, y_m, z_m, yaw_rad)?))
    }

    /// Send any common-dialect message to the vehicle now ([`LinkHandle::send`]): for what
    /// has no verb here.
    pub fn send_message(
        &self,
        msg: &nexus_core::mav::MavMessage,
    ) -> Result<(), OffboardClientError> {
        self.link()?.send(msg).map_err(|e| match e {
            crate::pump::SendError::Pump(p) => OffboardClientError::from(p),
            crate::pump::SendError::Refused(e) => OffboardClientError::Verb(e),
        })
    }

    /// Every message with id `msg_id` the vehicle sends from now on, decoded in full
    /// ([`LinkHandle::subscribe`]); drop the receiver to stop.
    pub fn subscribe(
        &self,
        msg_id: u32,
    ) -> Result<std::sync::mpsc::Receiver<nexus_core::mav::MavMessage>, OffboardClientError> {
        Ok(self.link()?.subscribe(msg_id)?)
    }

    /// Stream an offboard setpoint from now on at the stick period (20 Hz by default),
    /// replacing the one streamed before; a non-finite one is refused. Set one before
    /// [`OffboardClient::start_offboard`] and keep updating it while in Offboard.
    pub fn set_setpoint(&self, sp: Setpoint) -> Result<(), OffboardClientError> {
        self.verb(move |ctx| Ok(ctx.client().set_setpoint(sp)?))
    }

    /// Stream a local NED position setpoint (m; yaw NED rad, or `None` to leave it).
    pub fn set_position_ned(
        &self,
        north_m: f32,
        east_m: f32,
        down_m: f32,
        yaw_rad: Option<f32>,
    ) -> Result<(), OffboardClientError> {
        self.set_setpoint(Setpoint::PositionNed {
            north_m,
            east_m,
            down_m,
            yaw_rad,
        })
    }

    /// Stream a local NED velocity setpoint (m/s) with a yaw or yaw rate.
    pub fn set_velocity_ned(
        &self,
        v_north_m_s: f32,
        v_east_m_s: f32,
        v_down_m_s: f32,
        yaw: Yaw,
    ) -> Result<(), OffboardClientError> {
        self.set_setpoint(Setpoint::VelocityNed {
            v_north_m_s,
            v_east_m_s,
            v_down_m_s,
            yaw,
        })
    }

    /// Request Offboard mode, PX4's way: a setpoint must be streaming already
    /// ([`OffboardClient::set_setpoint`]); without one this is refused here with
    /// `InvalidArgument`, as PX4 would refuse the mode.
    pub fn start_offboard(&self) -> Result<(), OffboardClientError> {
        self.verb(move |ctx| Ok(ctx.client().start_offboard()?))
    }

    /// Leave Offboard for Hold and stop the setpoint stream (Hold is requested first, so the
    /// stream does not just stop under PX4: that is a stream loss and its failsafe).
    pub fn stop_offboard(&self) -> Result<(), OffboardClientError> {
        self.verb(move |ctx| {
            ctx.client().stop_offboard();
            Ok(())
        })
    }

    /// Stop the setpoint stream without changing mode: in Offboard, PX4 fails safe after
    /// COM_OF_LOSS_T (what a stream-loss test wants).
    pub fn stop_setpoints(&self) -> Result<(), OffboardClientError> {
        self.verb(move |ctx| {
            ctx.client().stop_setpoints();
            Ok(())
        })
    }

    /// Upload a mission (a plan, items, or a `.plan` path) verbatim; wait with
    /// [`OffboardClient::mission_uploaded`]. Resets the progress counters.
    pub fn upload_mission<'a>(
        &self,
        mission: impl Into<MissionSource<'a>>,
    ) -> Result<(), OffboardClientError> {
        let items: Vec<MissionItem> = match mission.into() {
            MissionSource::Plan(p) => p.items.to_vec(),
            MissionSource::Items(i) => i.to_vec(),
            MissionSource::File(path) => read_plan_file(path)?.items.to_vec(),
        };
        self.verb(move |ctx| Ok(ctx.client().upload_mission_items(&items)?))
    }

    /// Fly the uploaded mission from its first item: MISSION_SET_CURRENT 0 confirmed, Mission
    /// mode confirmed, then arm.
    pub fn start_mission(&self) -> Result<(), OffboardClientError> {
        self.verb(|ctx| {
            let now = ctx.now();
            ctx.client().start_mission(now);
            Ok(())
        })
    }

    /// Pause the mission (Hold).
    pub fn pause_mission(&self) -> Result<(), OffboardClientError> {
        self.verb(|ctx| {
            ctx.client().pause_mission();
            Ok(())
        })
    }

    /// Resume the mission from the item PX4 holds current (Mission mode).
    pub fn resume_mission(&self) -> Result<(), OffboardClientError> {
        self.verb(|ctx| {
            ctx.client().resume_mission();
            Ok(())
        })
    }

    /// Clear PX4's mission (MISSION_CLEAR_ALL); the held mission empties on PX4's ack.
    pub fn clear_mission(&self) -> Result<(), OffboardClientError> {
        self.verb(|ctx| {
            ctx.client().clear_mission();
            Ok(())
        })
    }

    /// Download PX4's mission into the held mission (see [`OffboardClient::mission_items`]).
    pub fn download_mission(&self) -> Result<(), OffboardClientError> {
        self.verb(|ctx| {
            ctx.client().download_mission();
            Ok(())
        })
    }

    /// The held mission (lodged, uploaded or downloaded).
    pub fn mission_items(&self) -> Result<Vec<MissionItem>, OffboardClientError> {
        self.verb(|ctx| Ok(ctx.client().offboard().mission_items().to_vec()))
    }

    /// Upload the geofence or the rally points (fence vertices and circles, or rally points, as
    /// [`MissionItem`]s: [`nexus_core::plan::read_geo`] reads them from a `.plan`);
    /// wait with [`OffboardClient::geo_status`]. Independent of the mission and its progress.
    pub fn upload_geo(
        &self,
        kind: GeoKind,
        items: &[MissionItem],
    ) -> Result<(), OffboardClientError> {
        let items = items.to_vec();
        self.verb(move |ctx| Ok(ctx.client().upload_geo(kind, &items)?))
    }

    /// Lodge the geofence or the rally points to go up after the mission: every
    /// [`OffboardClient::upload_mission`] from now on sends them once PX4 has accepted the
    /// mission, the fence first, then the rally points (PX4 takes one transfer at a time; a
    /// fence refused sends no rally points). [`OffboardClient::geo_status`] is `Idle` until then.
    pub fn lodge_geo(
        &self,
        kind: GeoKind,
        items: &[MissionItem],
    ) -> Result<(), OffboardClientError> {
        let items = items.to_vec();
        self.verb(move |ctx| Ok(ctx.client().lodge_geo(kind, &items)?))
    }

    /// Download the vehicle's geofence or rally points (see [`OffboardClient::geo_items`]).
    pub fn download_geo(&self, kind: GeoKind) -> Result<(), OffboardClientError> {
        self.verb(move |ctx| {
            ctx.client().download_geo(kind);
            Ok(())
        })
    }

    /// Clear the vehicle's geofence or rally points (that type only; the mission stays).
    pub fn clear_geo(&self, kind: GeoKind) -> Result<(), OffboardClientError> {
        self.verb(move |ctx| {
            ctx.client().clear_geo(kind);
            Ok(())
        })
    }

    /// The held geofence or rally points (uploaded or downloaded).
    pub fn geo_items(&self, kind: GeoKind) -> Result<Vec<MissionItem>, OffboardClientError> {
        self.verb(move |ctx| Ok(ctx.client().offboard().geo_items(kind).to_vec()))
    }

    /// How the last fence or rally transfer ended, or `Busy` while one runs.
    pub fn geo_status(&self, kind: GeoKind) -> Result<GeoStatus, OffboardClientError> {
        self.verb(move |ctx| Ok(ctx.client().offboard().geo_status(kind)))
    }
}

impl Drop for OffboardClient {
    fn drop(&mut self) {
        self.close();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bad_connection_string_is_refused_at_new() {
        let e = OffboardClient::new("udpin:nowhere", OffboardOptions::default()).unwrap_err();
        assert!(matches!(e, OffboardClientError::Conn(_)), "{e}");
    }

    #[test]
    fn verbs_before_open_say_so() {
        let c = OffboardClient::new("udpin:127.0.0.1:0", OffboardOptions::default()).unwrap();
        assert!(!c.connected());
        assert_eq!(c.mission_reached(), None);
        assert_eq!(c.mode(), None);
        assert!(matches!(c.takeoff(2.0), Err(OffboardClientError::NotOpen)));
        c.close();
        c.close();
    }

    #[test]
    fn an_unknown_mode_lists_the_known_ones() {
        assert_eq!(parse_mode("rtl").unwrap(), Mode::Rtl);
        let e = parse_mode("Hover").unwrap_err().to_string();
        assert!(
            e.starts_with("unknown mode \"Hover\"; known: Manual, Altitude"),
            "{e}"
        );
        assert!(e.contains("RTL") && e.contains("Mission"), "{e}");
    }

    #[test]
    fn options_override_the_machine_config() {
        let o = OffboardOptions {
            system_id: 3,
            ..OffboardOptions::default()
        }
        .wait_clear_s(1.5);
        let c = o.client_config();
        assert_eq!(c.ids.target_sysid, 3);
        assert_eq!(c.offboard.wait_clear_s, 1.5);
        assert_eq!(c.ids.own_sysid, 255);
    }
}
