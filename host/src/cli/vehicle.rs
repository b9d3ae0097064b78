//! The vehicle a command flies: the built-in simulated PX4 (the default) or a real PX4 SITL
//! process, with what the driver needs from it: its link, its death, its ground truth, its
//! speed.

use crate::launcher::{
    DeathCause, LaunchError, LaunchOptions, OffboardPort, Px4Build, Px4Process, PX4_BUILD_ENV,
};
use crate::sim::{SimConfig, SimError, SimHandle};
use crate::transport::ConnString;
use nexus_core::telemetry::LinkIds;
use std::path::PathBuf;
use std::time::Duration;

/// How long PX4 SITL may take to say "Startup script returned successfully", wall.
pub const PX4_READY_TIMEOUT: Duration = Duration::from_secs(60);

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
    /// Speed factor: sim time runs this many times faster than the wall clock.
    #[arg(long, short = 's', default_value_t = 1.0, value_name = "F")]
    pub speed: f64,
    /// SITL instance N: UDP ports 14540+N (us) and 14580+N (vehicle), system id N+1.
    #[arg(long, short = 'i', default_value_t = 0, value_name = "N")]
    pub instance: u8,
}

/// Why the vehicle could not be started.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The simulated vehicle could not start (its port is taken, …).
    #[error("{source}{hint}")]
    Sim {
        /// The error.
        source: SimError,
        /// What to do about it.
        hint: String,
    },
    /// PX4 SITL could not start.
    #[error(transparent)]
    Px4(#[from] LaunchError),
    /// A bad argument.
    #[error("{0}")]
    Args(String),
}

/// A running vehicle. Dropping it stops the simulated vehicle or kills PX4.
#[derive(Debug)]
pub enum Vehicle {
    /// The built-in simulated PX4.
    Sim(SimHandle),
    /// A PX4 SITL process.
    Px4(Box<Px4Process>),
}

impl Vehicle {
    /// Start what `args` asks for: PX4 if `--px4` is given (or `NEXUS_PX4_BUILD` is set and
    /// `--sim` is not), else the simulated vehicle.
    pub fn start(args: &VehicleArgs) -> Result<Vehicle, StartError> {
        if !(args.speed.is_finite() && args.speed > 0.0) {
            return Err(StartError::Args(format!(
                "--speed must be a positive number, got {}",
                args.speed
            )));
        }
        if args.instance == u8::MAX {
            return Err(StartError::Args(
                "--instance must be 0 to 254 (the system id is instance + 1)".into(),
            ));
        }
        let env_set = std::env::var_os(PX4_BUILD_ENV).is_some_and(|v| !v.is_empty());
        if args.px4.is_some() || (env_set && !args.sim) {
            let build = Px4Build::locate(args.px4.as_deref())?;
            let opts = LaunchOptions::new(args.instance).speed_factor(args.speed as f32);
            let px4 = Px4Process::spawn(&build, &opts)?;
            px4.wait_ready(PX4_READY_TIMEOUT)?;
            return Ok(Vehicle::Px4(Box::new(px4)));
        }
        let cfg = SimConfig::realtime(args.instance, args.speed);
        let port = cfg.local_port();
        SimHandle::start(cfg).map(Vehicle::Sim).map_err(|source| {
            let hint = match &source {
                SimError::Bind { .. } => format!(
                    " — UDP port {port} is the vehicle's port of instance {}: is another \
                     simulated vehicle or PX4 with that instance running? Stop it or pass \
                     another --instance",
                    args.instance
                ),
                _ => String::new(),
            };
            StartError::Sim { source, hint }
        })
    }

    /// SITL instance N.
    pub fn instance(&self) -> u8 {
        match self {
            Vehicle::Sim(s) => s.instance(),
            Vehicle::Px4(p) => p.instance(),
        }
    }

    /// The offboard link: where we listen, and PX4's system id.
    pub fn offboard(&self) -> OffboardPort {
        OffboardPort::for_instance(self.instance())
    }

    /// The connection string to open for the offboard link.
    pub fn conn(&self) -> ConnString {
        self.offboard().conn()
    }

    /// Our link's ids for this vehicle.
    pub fn ids(&self) -> LinkIds {
        LinkIds {
            target_sysid: self.offboard().system_id,
            ..LinkIds::default()
        }
    }

    /// "simulated PX4 (instance 3)" or "PX4 SITL /path/to/build (instance 3)".
    pub fn describe(&self) -> String {
        match self {
            Vehicle::Sim(s) => format!("simulated PX4 (instance {})", s.instance()),
            Vehicle::Px4(p) => format!(
                "PX4 SITL {} (instance {})",
                p.command_line()
                    .first()
                    .map(String::as_str)
                    .unwrap_or("px4"),
                p.instance()
            ),
        }
    }

    /// `"sim"` or `"px4"`, for reports.
    pub fn kind(&self) -> &'static str {
        match self {
            Vehicle::Sim(_) => "sim",
            Vehicle::Px4(_) => "px4",
        }
    }

    /// Why the vehicle died, once it has.
    pub fn death(&self) -> Option<String> {
        match self {
            Vehicle::Sim(s) => {
                if let Some(st) = s.exit_status() {
                    Some(format!("the simulated vehicle exited ({st})"))
                } else if !s.is_running() {
                    Some("the simulated vehicle stopped".into())
                } else {
                    None
                }
            }
            Vehicle::Px4(p) => p.died().filter(|c| !c.is_closed()).map(|c| c.to_string()),
        }
    }

    /// The driver saw the link go silent or the clock stop: record it with the launcher (whose
    /// first recorded cause wins) and return the cause to report.
    pub fn declare_dead(&self, cause: DeathCause) -> String {
        match self {
            Vehicle::Sim(_) => cause.to_string(),
            Vehicle::Px4(p) => {
                p.declare_dead(cause.clone());
                p.died().unwrap_or(cause).to_string()
            }
        }
    }

    /// Ground-truth height above the pad, m (the simulated vehicle knows it).
    pub fn true_height_m(&self) -> Option<f32> {
        match self {
            Vehicle::Sim(s) => Some(s.true_height_m()),
            Vehicle::Px4(_) => None,
        }
    }

    /// Set the speed factor; PX4 SITL's is fixed at launch.
    pub fn set_speed(&self, factor: f64) -> Result<(), String> {
        match self {
            Vehicle::Sim(s) => s.set_speed(factor).map_err(|e| e.to_string()),
            Vehicle::Px4(_) => Err(
                "PX4 SITL's speed factor is fixed when it starts (PX4_SIM_SPEED_FACTOR); pass \
                 --speed instead"
                    .into(),
            ),
        }
    }

    /// The last lines the vehicle printed (for a failure report).
    pub fn console_tail(&self, n: usize) -> Vec<String> {
        let lines = match self {
            Vehicle::Sim(s) => s.output_log(),
            Vehicle::Px4(p) => p.output_tail(),
        };
        let skip = lines.len().saturating_sub(n);
        lines.into_iter().skip(skip).collect()
    }
}
