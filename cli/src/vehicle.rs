//! Which vehicle a command flies: the built-in simulated PX4 (the default) or a real PX4 SITL
//! process, started as a [`Sim`] run (the host's run: the vehicle, its supervision and the
//! pump its offboard link runs on).

use super::report::VehicleReport;
use nexus_host::error::{ConnectError, RunError};
use nexus_host::launcher::{LaunchError, PX4_BUILD_ENV};
use nexus_host::offboard_client::OffboardClient;
use nexus_host::pump::LinkHandle;
use nexus_host::run::{Sim, SimOptions};
use nexus_sim::SimError;
use std::path::PathBuf;

/// How long the vehicle may take to send its first heartbeat, sim seconds (the simulated
/// vehicle needs 1.5; PX4 a few).
pub const CONNECT_TIMEOUT_SIM_S: f64 = 60.0;

/// `--speed max`: sim ms the vehicle runs between two looks at whether the client has taken
/// in what it sent.
pub const MAX_SPEED_CHUNK_MS: u64 = 250;

/// Where to fly: `--px4`, `--sim`, `--speed`, `--instance`.
#[derive(Debug, Clone, clap::Args)]
pub struct VehicleArgs {
    /// PX4 SITL build directory (holding bin/px4 and etc/) to fly real PX4 (SIH quadrotor)
    /// instead of the built-in simulated vehicle. Default: $NEXUS_PX4_BUILD if set.
    #[arg(long, value_name = "BUILD_DIR", conflicts_with = "sim")]
    pub px4: Option<PathBuf>,
    /// Fly the built-in simulated vehicle even when NEXUS_PX4_BUILD is set.
    #[arg(long)]
    pub sim: bool,
    /// Speed factor: sim time runs this many times faster than the wall clock; 0.1 to 200 on
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
        let env_set = std::env::var_os(PX4_BUILD_ENV).is_some_and(|v| !v.is_empty());
        self.px4.is_some() || (env_set && !self.sim)
    }

    /// The vehicle, for the report (before it starts).
    pub fn report(&self) -> VehicleReport {
        VehicleReport {
            kind: if self.wants_px4() { "px4" } else { "sim" },
            instance: self.instance,
            system_id: self.instance.saturating_add(1),
            speed: self.speed,
        }
    }

    /// The run these arguments ask for.
    pub fn options(&self) -> Result<SimOptions, String> {
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
        let opts = if self.wants_px4() {
            SimOptions::px4(self.instance, self.px4.clone())
        } else {
            SimOptions::simulated(self.instance)
        };
        let opts = match self.speed {
            Speed::Factor(f) => opts.speed(f),
            // Steps of 250 ms of sim: fewer hand-offs between threads (what a loaded machine
            // makes slow), and still a barrier every 250 ms of flight.
            Speed::Max => {
                let mut o = opts.max_speed();
                o.lockstep_chunk_ms = MAX_SPEED_CHUNK_MS;
                o
            }
        };
        Ok(opts.listen(self.listen))
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
    /// The run (owns the vehicle; dropping it stops the vehicle or kills PX4).
    pub sim: Sim,
    /// The client holding the link open (dropping it closes the link).
    pub client: OffboardClient,
    /// The link, for programs, calls and status.
    pub link: LinkHandle,
    /// `"sim"` or `"px4"`.
    pub kind: &'static str,
    /// "simulated PX4 (instance 3)".
    pub what: String,
    /// PX4's system id.
    pub system_id: u8,
    /// Our UDP port.
    pub port: u16,
}

/// Start the vehicle `args` asks for and connect to its offboard link.
pub fn start(args: &VehicleArgs) -> Result<Connected, StartError> {
    start_recorded(args, None)
}

/// [`start`], the offboard link recorded in `tlog` (`--tlog`).
pub fn start_recorded(
    args: &VehicleArgs,
    tlog: Option<nexus_host::tlog::Tlog>,
) -> Result<Connected, StartError> {
    let mut opts = args.options().map_err(StartError::Setup)?;
    if let Some(t) = tlog {
        opts = opts.tlog(t);
    }
    let px4 = args.wants_px4();
    let what = if px4 {
        format!("PX4 SITL (instance {})", args.instance)
    } else {
        format!("simulated PX4 (instance {})", args.instance)
    };
    let sim = Sim::started(opts).map_err(|e| match e {
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
        client,
        link,
        kind: if px4 { "px4" } else { "sim" },
        what,
        system_id: port.system_id,
        port: port.port,
    })
}

/// The run's start error, with what to do about a port in use.
/// [`start_recorded`], but a signal (SIGINT, SIGTERM, SIGHUP) while the vehicle starts (PX4 booting,
/// the first heartbeat awaited) ends it at once with [`StartError::Interrupted`], so the
/// command still writes its verdict and report. The caller holds an
/// [`nexus_host::interrupt::Handling`] from before this call; a PX4 being launched is ended
/// ([`nexus_host::launcher::end_all_now`]).
pub fn start_interruptible(
    args: &VehicleArgs,
    tlog: Option<nexus_host::tlog::Tlog>,
) -> Result<Connected, StartError> {
    let args = args.clone();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name("nexus-start".into())
        .spawn(move || {
            let _ = tx.send(start_recorded(&args, tlog));
        })
        .map_err(|e| StartError::Setup(format!("cannot start the vehicle: {e}")))?;
    loop {
        match rx.recv_timeout(std::time::Duration::from_millis(50)) {
            Ok(started) => return started,
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                if let Some(c) = nexus_host::interrupt::caught() {
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

/// Everything `fly` and `run` check before a vehicle starts: the vehicle's arguments (speed,
/// instance) and the `--json` destination.
pub fn before_flight(vehicle: &VehicleArgs, json: Option<&std::path::Path>) -> Result<(), String> {
    vehicle.options()?;
    json_output(json)
}

/// Check the `--json` destination writable (`-`, stdout, always is).
pub fn json_output(json: Option<&std::path::Path>) -> Result<(), String> {
    match json {
        // `-` is stdout: always writable.
        Some(p) if p == std::path::Path::new(super::output::STDOUT) => Ok(()),
        Some(p) => nexus_host::limits::check_output("--json", p),
        None => Ok(()),
    }
}
