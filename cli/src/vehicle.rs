//! Which vehicle a command flies: the built-in simulated PX4 (the default) or a real PX4 SITL
//! process, started as a host [`Run`] (the vehicle, its supervision and the pump its offboard
//! link runs on) — or, with `--connect`, a vehicle someone else runs (a SITL, a serial HIL rig,
//! a flight controller), attached over any connection string.
//!
//! An attached vehicle is not ours: no launcher, no speed factor (its `speedup` steps become
//! notes), the wall clock for supervision (silence still ends waits `died`), and no ground
//! truth unless it identifies as a simulator. A program that can arm, move or reconfigure the
//! vehicle ([`super::guard`] judges the compiled program) is refused on a vehicle that does
//! not identify as PX4 SITL (AUTOPILOT_VERSION, [`nexus_core::ground_truth::is_px4_sitl`])
//! unless `--real-vehicle` is given.

use super::report::VehicleReport;
use nexus_host::error::{ConnectError, RunError};
use nexus_host::launcher::{Airframe, LaunchError, LaunchOptions, PX4_BUILD_ENV};
use nexus_host::offboard_client::{GroundTruth, OffboardClient, OffboardOptions};
use nexus_host::pump::{LinkHandle, Supervision};
use nexus_host::run::{Run, RunOptions, DEFAULT_STALL};
use nexus_host::transport::{ConnString, Link, LinkOptions, PeerRule};
use nexus_sim::SimError;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// How long the vehicle may take to send its first heartbeat, sim seconds (the simulated
/// vehicle needs 1.5; PX4 a few).
pub const CONNECT_TIMEOUT_SIM_S: f64 = 60.0;

/// `--speed max`: sim seconds the vehicle runs between two looks at whether the client has
/// taken in what it sent.
pub const MAX_SPEED_CHUNK_S: f64 = 0.250;

/// Wall seconds an attached vehicle may take to send its first autopilot heartbeat.
pub const ATTACH_TIMEOUT_S: f64 = 30.0;
/// Wall seconds to wait for an attached vehicle to say whether it is a simulator (the core
/// asks for AUTOPILOT_VERSION up to ten times, a second apart: `VERSION_TRIES`).
pub const IDENTIFY_TIMEOUT_S: f64 = 13.0;
/// The component id of PX4's autopilot, the one the core's commands address.
pub const AUTOPILOT_COMPID: u8 = 1;

/// Where to fly: `--px4`, `--sim`, `--speed`, `--instance`, or `--connect` to a running vehicle.
#[derive(Debug, Clone, clap::Args)]
pub struct VehicleArgs {
    /// `--signing-key`, `--require-signed` (cli/src/sign.rs).
    #[command(flatten)]
    pub signing: super::signing::SigningArgs,
    /// PX4 SITL build directory (holding bin/px4 and etc/) to fly real PX4 (its SIH
    /// simulator, the airframe of --model) instead of the built-in simulated vehicle.
    /// Default: $NEXUS_PX4_BUILD if set.
    #[arg(long, value_name = "BUILD_DIR", conflicts_with_all = ["sim", "connect"])]
    pub px4: Option<PathBuf>,
    /// The airframe nexus starts: quad (default), hex, airplane, tailsitter, vtol or rover,
    /// PX4 SITL's SIH vehicles (PX4's names, such as sihsim_hex, work too). The built-in
    /// vehicle models the quad, the hex and the airplane: the others need --px4.
    #[arg(long, value_name = "MODEL", conflicts_with = "connect")]
    pub model: Option<Airframe>,
    /// Fly the built-in simulated vehicle even when NEXUS_PX4_BUILD is set.
    #[arg(long, conflicts_with = "connect")]
    pub sim: bool,
    /// Fly a vehicle that is already running, over this link: udpin:0.0.0.0:14540,
    /// udpout:HOST:PORT, tcp:HOST:PORT, tcpin:HOST:PORT, serial:/dev/ttyACM0:57600, or
    /// pymavlink's udp:HOST:PORT and MAVSDK's udp://:14540, serial:///dev/ttyACM0:57600.
    /// Nothing is launched.
    #[arg(long, value_name = "CONN")]
    pub connect: Option<String>,
    /// With --connect: the vehicle's system id (default: the first autopilot heard, latched).
    #[arg(long, value_name = "ID", requires = "connect")]
    pub sysid: Option<u8>,
    /// With --connect: the autopilot's component id, which every command, parameter and
    /// mission message addresses (default: the component of the first autopilot heard,
    /// latched; PX4's autopilot is 1).
    #[arg(long, value_name = "ID", requires = "connect")]
    pub compid: Option<u8>,
    /// With --connect: allow a program that can arm, move or reconfigure the vehicle (arm,
    /// takeoff, goto, sticks, Offboard, a mode other than Hold or Land, a mission, a
    /// parameter, a failure injection) on a vehicle that does not identify as a simulator — a
    /// real aircraft.
    #[arg(long, requires = "connect")]
    pub real_vehicle: bool,
    /// With --connect: the link's rate in baud when it is slower than it looks, e.g. a
    /// 57600-baud radio behind mavlink-router on a UDP port. Below PX4's streams (~25 KB/s)
    /// the engine's streams are asked for at reduced rates from the start, as on a slow serial
    /// line. (Loss that stays above 10 % asks for them on any link anyway.)
    #[arg(long, value_name = "BAUD", requires = "connect")]
    pub link_rate_baud: Option<u32>,
    /// Speed factor: sim time runs this many times faster than the wall clock; 0.1 to 500 on
    /// the built-in vehicle (what a flight keeps up with), 0.1 to 20 on PX4 SITL. `max`: the
    /// built-in vehicle in lockstep, as fast as nexus takes in what it sends (nothing
    /// dropped); the achieved factor is reported.
    #[arg(long, short = 's', default_value_t = Speed::Factor(1.0), value_name = "F|max")]
    pub speed: Speed,
    /// SITL instance N (0 to 253): UDP ports 14540+N (us) and 14580+N (vehicle), system id
    /// N+1 (255 is ours).
    #[arg(long, short = 'i', default_value_t = 0, value_name = "N")]
    pub instance: u8,
    /// Address to listen on for the vehicle (default 127.0.0.1: the vehicle is local, so
    /// nothing off this host reaches the port). Frames count only from the vehicle's own
    /// address whatever this is.
    #[arg(long, value_name = "ADDR", default_value_t = nexus_host::run::DEFAULT_LISTEN)]
    pub listen: std::net::IpAddr,
}

/// `--speed`: a factor, or `max`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Speed {
    /// Sim time runs this many times faster than the wall clock (checked by
    /// [`super::limits::speed`] before anything starts).
    Factor(f64),
    /// As fast as possible: lockstep, paced by the client ([`nexus_host::run::RunClock::Max`]).
    Max,
}

impl std::str::FromStr for Speed {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        if s.eq_ignore_ascii_case("max") {
            return Ok(Speed::Max);
        }
        // Any number parses here; its range is checked with the vehicle known (PX4 or not).
        s.trim()
            .parse::<f64>()
            .map(Speed::Factor)
            .map_err(|_| format!("expected a speed factor or `max`, got {s:?}"))
    }
}

impl std::fmt::Display for Speed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Speed::Factor(x) => write!(f, "{x}"),
            Speed::Max => f.write_str("max"),
        }
    }
}

impl serde::Serialize for Speed {
    /// A number, or the string `"max"`.
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Speed::Factor(x) => s.serialize_f64(*x),
            Speed::Max => s.serialize_str("max"),
        }
    }
}

impl VehicleArgs {
    /// Whether these arguments ask for PX4 SITL.
    pub fn wants_px4(&self) -> bool {
        if self.connect.is_some() {
            return false;
        }
        let env_set = std::env::var_os(PX4_BUILD_ENV).is_some_and(|v| !v.is_empty());
        self.px4.is_some() || (env_set && !self.sim)
    }

    /// The vehicle, for the report (before it starts).
    pub fn report(&self) -> VehicleReport {
        if let Some(conn) = &self.connect {
            return VehicleReport {
                kind: "attached",
                instance: self.instance,
                system_id: self.sysid.unwrap_or(0),
                speed: self.speed,
                connection: Some(conn.clone()),
                component_id: self.compid,
                simulator: None,
                model: None,
            };
        }
        VehicleReport {
            kind: if self.wants_px4() { "px4" } else { "sim" },
            instance: self.instance,
            system_id: self.instance.saturating_add(1),
            speed: self.speed,
            connection: None,
            component_id: None,
            simulator: Some(true),
            model: Some(self.model.unwrap_or_default().name()),
        }
    }

    /// The run these arguments ask for.
    pub fn options(&self) -> Result<RunOptions, String> {
        if let Some(conn) = &self.connect {
            conn.parse::<ConnString>()
                .map_err(|e| format!("--connect {e}"))?;
            if self.speed != Speed::Factor(1.0) {
                return Err(format!(
                    "--speed {} paces a vehicle nexus starts; one attached with --connect runs \
                     at its own pace (start a SITL with its own speed factor)",
                    self.speed
                ));
            }
            return self
                .signing
                .apply(RunOptions::no_vehicle().stall(Some(DEFAULT_STALL)));
        }
        if let Speed::Factor(f) = self.speed {
            super::limits::speed("--speed", f, self.wants_px4())?;
        } else if self.wants_px4() {
            return Err(
                "--speed max needs the built-in vehicle: PX4 SITL keeps its own \
                        lockstep with its simulator; give it a factor from 0.1 to 20"
                    .into(),
            );
        }
        super::limits::instance(self.instance)?;
        let model = self.model.unwrap_or_default();
        let opts = if self.wants_px4() {
            let mut o = RunOptions::px4(self.instance, self.px4.clone());
            o.launch = Some(LaunchOptions::new(self.instance).airframe(model));
            o
        } else {
            let Some(vehicle) = model.simulated() else {
                return Err(format!(
                    "--model {model}: the built-in vehicle models the quad, the hex and the \
                     airplane, not the {model}; fly it on PX4 SITL with --px4 BUILD_DIR (or \
                     $NEXUS_PX4_BUILD)"
                ));
            };
            let mut o = RunOptions::simulated(self.instance);
            if vehicle != nexus_sim::VehicleType::Quadrotor {
                o.vehicle_config = Some(nexus_sim::VehicleConfig::vehicle(self.instance, vehicle));
            }
            o
        };
        let opts = match self.speed {
            Speed::Factor(f) => opts.speed(f),
            // Steps of 250 ms of sim: fewer hand-offs between threads (what a loaded machine
            // makes slow), and still a barrier every 250 ms of flight.
            Speed::Max => {
                let mut o = opts.max_speed();
                o.lockstep_chunk_s = MAX_SPEED_CHUNK_S;
                o
            }
        };
        self.signing.apply(opts.listen(self.listen))
    }
}

/// Why the vehicle could not be flown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StartError {
    /// It could not start, or our end of its link could not open (a bad argument, no PX4
    /// build, a port in use): nothing flew (exit 2).
    Setup(String),
    /// It started but never spoke (exit 1).
    Silent(String),
    /// It died before it spoke, or while it started (exit 1).
    Died(String),
    /// A signal came while it started ([`start_interruptible`]): the command writes its
    /// report and exits 128 + the signal's number.
    Interrupted(String),
}

impl StartError {
    /// The message.
    pub fn message(&self) -> &str {
        match self {
            StartError::Setup(m)
            | StartError::Silent(m)
            | StartError::Died(m)
            | StartError::Interrupted(m) => m,
        }
    }
}

/// A started vehicle and the open offboard link to it.
pub struct Connected {
    /// The run (owns the vehicle; dropping it stops the vehicle or kills PX4). An attached
    /// vehicle's run has none: only the clock (the vehicle's) and the pump.
    pub sim: Run,
    /// The client holding the link open (dropping it closes the link); `None` when attached
    /// (the link handle holds it).
    pub client: Option<OffboardClient>,
    /// The link, for programs, calls and status.
    pub link: LinkHandle,
    /// `"sim"` or `"px4"`.
    pub kind: &'static str,
    /// "simulated PX4 (instance 3)".
    pub what: String,
    /// PX4's system id.
    pub system_id: u8,
    /// Our UDP port (0 when attached: the link is `what`'s connection string).
    pub port: u16,
    /// Whether a program may arm, move or reconfigure the vehicle ([`super::guard`]): it is
    /// a simulator (one nexus started, or an attached one that identified as one), or
    /// `--real-vehicle` was given. [`super::exec::Flight::run`] checks it again on the very
    /// program it starts.
    pub may_move: bool,
    /// `--connect`: what attaching found; `None` for a vehicle nexus started.
    pub attached: Option<Attached>,
}

/// What attaching to a vehicle found, for the report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attached {
    /// The connection string, canonical.
    pub connection: String,
    /// The autopilot's component id.
    pub component_id: u8,
    /// Whether it identified as a simulator (`None`: it never said).
    pub simulator: Option<bool>,
    /// What the connection did that the report should say (a slow link's stream requests).
    pub notes: Vec<String>,
    /// `--ulog`: the vehicle's log fetched over MAVLink after the flight, or why it was not.
    pub fetched_ulog: Option<Result<nexus_host::ulog::fetch::Fetched, String>>,
}

impl Connected {
    /// The vehicle for the report, as connected: `args`'s, with what connecting found.
    pub fn report(&self, args: &VehicleArgs) -> VehicleReport {
        let mut r = args.report();
        r.system_id = self.system_id;
        if let Some(a) = &self.attached {
            r.connection = Some(a.connection.clone());
            r.component_id = Some(a.component_id);
            r.simulator = a.simulator;
        }
        r
    }

    /// Notes for the report's events (a slow link's stream requests).
    pub fn notes(&self) -> Vec<String> {
        self.attached
            .as_ref()
            .map(|a| a.notes.clone())
            .unwrap_or_default()
    }

    /// The line that says what flies and where.
    pub fn banner(&self) -> String {
        if self.kind == "attached" {
            format!("nexus: {}, system id {}", self.what, self.system_id)
        } else {
            format!(
                "nexus: {} on UDP {}, system id {}",
                self.what, self.port, self.system_id
            )
        }
    }
}

/// Start the vehicle `args` asks for and connect to its offboard link (or attach to the one
/// `--connect` names), the link recorded in `tlog` (`--tlog`) when one is given. `moves`:
/// what in the program can arm, move or reconfigure the vehicle ([`super::guard`]), in words
/// (`None`: nothing can), for the `--real-vehicle` guard on an attached vehicle that is not a
/// simulator.
pub fn start(
    args: &VehicleArgs,
    moves: Option<&str>,
    tlog: Option<nexus_host::tlog::Tlog>,
    ulog: Option<std::path::PathBuf>,
) -> Result<Connected, StartError> {
    let mut opts = args.options().map_err(StartError::Setup)?;
    if let Some(t) = tlog {
        opts = opts.tlog(t);
    }
    if let Some(conn) = &args.connect {
        // `--ulog`: the vehicle's log is fetched over MAVLink after the flight
        // ([`super::outcome::Invocation::fill`]).
        return attach(args, conn, opts, moves);
    }
    let px4 = args.wants_px4();
    let what = if px4 {
        format!("PX4 SITL (instance {})", args.instance)
    } else {
        format!("simulated PX4 (instance {})", args.instance)
    };
    if let Some(u) = ulog {
        opts = opts.ulog(u);
    }
    let sim = Run::started(opts).map_err(|e| match e {
        RunError::Launch(
            LaunchError::Died { .. }
            | LaunchError::StartupFailed { .. }
            | LaunchError::NotReady { .. },
        ) => StartError::Died(format!("{what}: {e}")),
        e => StartError::Setup(start_hint(e, args.instance)),
    })?;
    let port = sim
        .offboard_port()
        .map_err(|e| StartError::Setup(e.to_string()))?;
    let client = OffboardClient::connect(&sim, CONNECT_TIMEOUT_SIM_S).map_err(|e| match e {
        ConnectError::NoHeartbeat { .. } => StartError::Silent(format!("{what}: {e}")),
        ConnectError::LostPeer { .. } => StartError::Died(format!("{what}: {e}")),
        other => {
            let mut msg = other.to_string();
            if msg.contains("already listens on this port") {
                msg.push_str(&format!(
                    " — UDP {} is where this command listens for instance {}: stop the other \
                     program using it or pass another --instance",
                    port.port, args.instance
                ));
            }
            StartError::Setup(msg)
        }
    })?;
    let link = client
        .link()
        .map_err(|e| StartError::Setup(e.to_string()))?;
    Ok(Connected {
        sim,
        client: Some(client),
        link,
        kind: if px4 { "px4" } else { "sim" },
        what,
        system_id: port.system_id,
        port: port.port,
        may_move: true,
        attached: None,
    })
}

/// Attach to a running vehicle over `conn`: find (and latch) its autopilot heartbeat, put the
/// link on a run without a vehicle (its clock becomes the vehicle's), supervise it on the wall
/// clock, learn whether it is a simulator, and apply the `--real-vehicle` guard.
pub fn attach(
    args: &VehicleArgs,
    conn_text: &str,
    opts: RunOptions,
    moves: Option<&str>,
) -> Result<Connected, StartError> {
    let conn: ConnString = conn_text
        .parse()
        .map_err(|e| StartError::Setup(format!("--connect {e}")))?;
    let link = Link::open_with(
        &conn,
        &LinkOptions {
            peer: PeerRule::FirstAutopilot { sysid: args.sysid },
            ..LinkOptions::default()
        },
    )
    .map_err(|e| StartError::Setup(e.to_string()))?;
    let deadline = Instant::now() + Duration::from_secs_f64(ATTACH_TIMEOUT_S);
    // On a signed link the vehicle is the sender of the first heartbeat passing the check.
    let mut judge = opts
        .signing
        .as_ref()
        .map(|s| nexus_host::signing::LinkSigning::new(s, nexus_core::Instant::ZERO));
    let origin = Instant::now();
    let (link, sysid, compid) = match nexus_host::transport::discover(
        link,
        Some(deadline),
        args.sysid,
        args.compid,
        judge.as_mut().map(|s| (s, origin)),
    ) {
        Ok(Some(found)) => found,
        Ok(None) => {
            let whose = args.sysid.map_or("an autopilot".to_string(), |s| {
                format!("system {s}'s autopilot")
            });
            let hint = nexus_host::transport::port_rule_hint(&conn)
                .map_or(String::new(), |h| format!("; {h}"));
            return Err(StartError::Silent(format!(
                "no heartbeat of {whose} on {conn} within {ATTACH_TIMEOUT_S} s{hint}"
            )));
        }
        Err(e) => return Err(StartError::Setup(format!("{conn}: {e}"))),
    };
    let sim = Run::started(opts).map_err(|e| StartError::Setup(e.to_string()))?;
    let pump = sim.pump().map_err(|e| StartError::Setup(e.to_string()))?;
    // Not ours, so not known to be a simulator: the core asks (AUTOPILOT_VERSION).
    // The component found (or given by --compid) is the one every command, parameter and
    // mission message addresses, latched.
    let mut options = OffboardOptions {
        system_id: sysid,
        component_id: Some(compid),
        ground_truth: GroundTruth::Auto,
        ..sim.offboard_options()
    };
    let declared = args.link_rate_baud;
    let slow = nexus_host::pump::slow_link::slow_line_bytes_per_s(&conn)
        .or_else(|| declared.and_then(nexus_host::pump::slow_link::slow_baud_bytes_per_s));
    if slow.is_some() {
        // A radio loses what does not fit: resend more before giving up.
        options.offboard = nexus_host::pump::slow_link::slow_link_offboard(options.offboard);
    }
    let mut supervision = Supervision::default();
    supervision.stall = sim.options().client.stall;
    supervision.tlog = sim.options().tlog.clone();
    supervision.signing = sim.options().signing.clone();
    let link = pump
        .add_link(link, options.client_config(), supervision)
        .map_err(|e| StartError::Setup(e.to_string()))?;
    sim.attach(&link);
    let what = format!("attached vehicle on {conn}");
    let wall0 = Instant::now();
    while !link.with_status(|s| s.connected) {
        if let Some(why) = link.with_status(|s| s.died.clone()) {
            return Err(StartError::Died(format!("{what}: {why}")));
        }
        if wall0.elapsed().as_secs_f64() > ATTACH_TIMEOUT_S {
            return Err(StartError::Silent(format!(
                "{what}: system {sysid} sent no heartbeat after the first within {ATTACH_TIMEOUT_S} s"
            )));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut notes = Vec::new();
    if let Some(bytes_per_s) = slow {
        let how = if declared.is_some() && !matches!(conn, ConnString::Serial { .. }) {
            " declared by --link-rate-baud"
        } else {
            ""
        };
        notes.push(format!(
            "slow link ({bytes_per_s} B/s{how}, PX4 streams ~{} B/s): asked the vehicle for the \
             streams the engine reads at rates the link carries (SET_MESSAGE_INTERVAL)",
            nexus_host::pump::slow_link::PX4_STREAM_BYTES_PER_S
        ));
    }
    let simulator = identify(&link, slow.is_some());
    let may_move = simulator == Some(true) || args.real_vehicle;
    if let (Some(what), false) = (moves, may_move) {
        let why = match simulator {
            Some(_) => "AUTOPILOT_VERSION did not identify PX4 SITL",
            None => "no AUTOPILOT_VERSION decided it in time",
        };
        return Err(StartError::Setup(format!(
            "refusing to fly system {sysid} on {conn}: it does not identify as a simulator \
             ({why}), and this program can arm, move or reconfigure it ({what}); pass \
             --real-vehicle to fly a real vehicle"
        )));
    }
    Ok(Connected {
        sim,
        client: None,
        link,
        kind: "attached",
        what: match simulator {
            Some(true) => format!("{what} (a simulator)"),
            _ => format!("{what} (not a simulator)"),
        },
        system_id: sysid,
        port: 0,
        may_move,
        attached: Some(Attached {
            connection: conn.to_string(),
            component_id: compid,
            simulator,
            notes,
            fetched_ulog: None,
        }),
    })
}

/// Whether the vehicle on `link` identifies as a simulator, as the core decides it (within
/// [`IDENTIFY_TIMEOUT_S`]); `None`: undecided then, or the link died. On a slow link the
/// slow-link stream requests go out meanwhile, once a second (some may be lost).
fn identify(link: &LinkHandle, slow: bool) -> Option<bool> {
    let wall0 = Instant::now();
    let mut next_ask = wall0;
    let mut asks = 0;
    loop {
        if slow && asks < 3 && Instant::now() >= next_ask {
            let _ = link.ask_slow_link_streams();
            asks += 1;
            next_ask += Duration::from_secs(1);
        }
        let known = link
            .call(|ctx| ctx.client().ground_truth().simulator())
            .ok()
            .flatten();
        if known.is_some() && (!slow || asks >= 3) {
            return known;
        }
        if wall0.elapsed().as_secs_f64() > IDENTIFY_TIMEOUT_S
            || link.with_status(|s| s.died.is_some())
        {
            return None;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// [`start`], but a signal (SIGINT, SIGTERM, SIGHUP) while the vehicle starts (PX4 booting,
/// the first heartbeat awaited) ends it at once with [`StartError::Interrupted`], so the
/// command still writes its verdict and report. The caller holds an
/// [`crate::interrupt::Handling`] from before this call; a PX4 being launched is ended
/// ([`nexus_host::launcher::end_all_now`]).
pub fn start_interruptible(
    args: &VehicleArgs,
    moves: Option<String>,
    tlog: Option<nexus_host::tlog::Tlog>,
    ulog: Option<std::path::PathBuf>,
) -> Result<Connected, StartError> {
    let args = args.clone();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name("nexus-start".into())
        .spawn(move || {
            let _ = tx.send(start(&args, moves.as_deref(), tlog, ulog));
        })
        .map_err(|e| StartError::Setup(format!("cannot start the vehicle: {e}")))?;
    loop {
        match rx.recv_timeout(std::time::Duration::from_millis(50)) {
            Ok(started) => return started,
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                if let Some(c) = crate::interrupt::caught() {
                    nexus_host::launcher::end_all_now();
                    return Err(StartError::Interrupted(format!(
                        "{} while the vehicle was starting: nothing flew",
                        c.reason()
                    )));
                }
            }
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                return Err(StartError::Setup(
                    "the vehicle's start ended without a word".into(),
                ))
            }
        }
    }
}

/// The run's start error, with what to do about a port in use.
fn start_hint(e: RunError, instance: u8) -> String {
    match &e {
        RunError::Sim(SimError::Bind { addr, .. }) => format!(
            "{e} — UDP {} is the vehicle's port of instance {instance}: is another simulated \
             vehicle or PX4 with that instance running? Stop it or pass another --instance",
            addr.port()
        ),
        _ => e.to_string(),
    }
}

/// What every flying command checks before a vehicle starts: the vehicle's arguments (speed,
/// instance) and the `--json` destination.
pub fn before_flight(vehicle: &VehicleArgs, json: Option<&std::path::Path>) -> Result<(), String> {
    let _checked = vehicle.options()?; // the run itself is built later
    json_output(json)
}

/// Everything `fly` and `run` check before a vehicle starts: no two of the command's files are
/// one (its `inputs`, `--json`, the evidence's outputs and the signing key), then
/// [`before_flight`], then that the evidence can be written.
pub fn before_recorded_flight<'a>(
    mut files: Vec<crate::output::Named<'a>>,
    vehicle: &'a VehicleArgs,
    json: Option<&'a std::path::Path>,
    evidence: &'a crate::evidence::EvidenceArgs,
) -> Result<(), String> {
    if let Some(j) = json {
        files.push(crate::output::Named::output("--json", j));
    }
    files.extend(evidence.named());
    files.extend(vehicle.signing.named());
    crate::output::distinct(&files)?;
    before_flight(vehicle, json)?;
    evidence.check()
}

/// Check the `--json` destination writable (`-`, stdout, always is).
pub fn json_output(json: Option<&std::path::Path>) -> Result<(), String> {
    match json {
        // `-` is stdout: always writable.
        Some(p) if p == std::path::Path::new(super::output::STDOUT) => Ok(()),
        Some(p) => crate::limits::check_output("--json", p),
        None => Ok(()),
    }
}
