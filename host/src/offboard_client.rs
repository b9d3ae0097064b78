//! [`OffboardClient`]: the Python `OffboardClient` for PX4, in Rust.
//!
//! The client is a handle on one link of a [`Pump`]: every verb is applied by the pump thread
//! to the link's core offboard machine (which owns the ordering rules: Takeoff mode confirmed
//! before the arm, MISSION_SET_CURRENT 0 before a mission start, requests cleared the moment
//! telemetry confirms them), and every query reads the status the pump publishes after each
//! batch, so a query never waits on the pump.
//!
//! ```no_run
//! use nexus_host::prelude::*;
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
//! typed errors); "not yet" is `None`, not a sentinel ([`crate::groups::MissionApi::mission_reached`] is
//! `Option<u16>` where the Python client says `-1`, [`crate::groups::TelemetryApi::mode`] `Option<Mode>`
//! where it says `""`); PX4's refusals and the requests the machine gave up on are in
//! [`OffboardClient::events_since`] and [`crate::groups::InfoApi::last_refusal`].
//!
//! Every verb here is the core [`nexus_core::Client`]'s verb of the same name (its
//! [`nexus_core::client::verbs`]), run on the pump thread: the same checks and the same
//! bookkeeping as a flight program's step.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use nexus_core::action::ParamValue;
use nexus_core::client::ClientConfig;
pub use nexus_core::ground_truth::GroundTruth;
use nexus_core::mission::MissionItem;
use nexus_core::mode::Mode;
use nexus_core::offboard::OffboardConfig;
use nexus_core::plan::{line_col, read_plan};
use nexus_core::telemetry::{LinkIds, Snapshot};

use crate::error::{ConnectError, OffboardClientError, RunError};
use crate::groups::Facade;
#[cfg(doc)]
use crate::groups::ParamApi;
use crate::launcher::OFFBOARD_CLIENT_PORT_BASE;
use crate::pump::{
    HostClient, HostPlan, LinkConfig, LinkEvent, LinkHandle, LinkStatus, Param, Pump, Supervision,
};
use crate::run::Run;
use crate::sync::lock;
use crate::transport::{ConnString, LinkOptions};

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
#[must_use = "options do nothing until a client takes them"]
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

/// What [`OffboardClient::upload_mission`](crate::groups::MissionApi::upload_mission) takes: a plan, bare items, or a `.plan` file.
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
/// "RTL", "Land", "Position", or `"main=4,sub=3"`), for [`OffboardClient::set_mode`](crate::groups::ActionApi::set_mode). An
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
    /// seconds. The client returned is open and [`OffboardClient::connected`](crate::groups::InfoApi::connected).
    pub fn connect(sim: &Run, timeout_sim_s: f64) -> Result<OffboardClient, ConnectError> {
        let port = sim.offboard_port()?;
        let (conn, options) = sim.client_link()?;
        let client = OffboardClient {
            conn,
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
    /// one); returns at once, with no wait for PX4: poll [`OffboardClient::connected`](crate::groups::InfoApi::connected).
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

    /// The published status (everything the groups read and more); `None` when not open.
    pub fn status(&self) -> Option<LinkStatus> {
        lock(&self.link).as_ref().map(LinkHandle::status)
    }

    /// The wait engine's snapshot of the vehicle now; `None` when not open.
    pub fn snapshot(&self) -> Option<Snapshot> {
        lock(&self.link)
            .as_ref()
            .map(|l| l.with_status(|s| s.snapshot.clone()))
    }

    /// Events after `seq` (refusals, give-ups, mission transfers, program steps, death).
    pub fn events_since(&self, seq: u64) -> Vec<(u64, LinkEvent)> {
        match lock(&self.link).as_ref() {
            Some(l) => l.events_since(seq),
            None => Vec::new(),
        }
    }

    /// Set parameter `name` to `value` as [`ParamApi::set_param`] does, then block until PX4
    /// echoes it: the echo is what PX4 stored, with its index and count. Fails at once when
    /// PX4 refuses it ([`crate::pump::ParamError::Refused`] with PX4's MAV_PARAM_ERROR), or
    /// when `timeout` (wall) passes; see [`LinkHandle::set_param`].
    pub fn set_param_wait(
        &self,
        name: &str,
        value: ParamValue,
        timeout: Duration,
    ) -> Result<Param, OffboardClientError> {
        Ok(self.link()?.set_param(name, value, timeout)?)
    }

    /// Read a parameter (PARAM_REQUEST_READ → PARAM_VALUE), blocking until it comes or
    /// `timeout` (wall) passes ([`crate::pump::ParamError::Timeout`]); at once
    /// [`crate::pump::ParamError::Refused`] when the vehicle answers PARAM_ERROR.
    pub fn param_get(&self, name: &str, timeout: Duration) -> Result<Param, OffboardClientError> {
        Ok(self.link()?.read_param(name, timeout)?)
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
}

/// The groups' two primitives on the pump: a query reads the status the pump published after
/// its last batch; a verb runs on the pump thread against the link's client.
impl Facade for OffboardClient {
    fn read_status<R>(&self, f: impl FnOnce(&LinkStatus) -> R) -> R {
        match lock(&self.link).as_ref() {
            Some(l) => l.with_status(f),
            None => f(&LinkStatus::default()),
        }
    }

    fn apply<R: Send + 'static>(
        &self,
        verb: impl FnOnce(&mut HostClient, nexus_core::Instant) -> Result<R, OffboardClientError>
            + Send
            + 'static,
    ) -> Result<R, OffboardClientError> {
        self.link()?.call(move |ctx| {
            let now = ctx.now();
            verb(ctx.client(), now)
        })?
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
    use crate::groups::{ActionApi, InfoApi, MissionApi, TelemetryApi};

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
