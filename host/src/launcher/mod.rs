//! Start and supervise real PX4 SITL processes (SIH quadrotor), one per instance.
//!
//! ```no_run
//! use std::time::Duration;
//! use nexus_host::launcher::{LaunchOptions, Px4Build, Px4Process};
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let build = Px4Build::locate(None)?; // NEXUS_PX4_BUILD
//! let mut px4 = Px4Process::spawn(&build, &LaunchOptions::new(0).speed_factor(4.0))?;
//! px4.wait_ready(Duration::from_secs(30))?;
//! let offboard = px4.ports().offboard; // udpin:0.0.0.0:14540, system id 1
//! # let _ = offboard;
//! // … fly; the pump reports what only telemetry sees:
//! // px4.watch().declare_dead(DeathCause::LinkSilent { silent: Duration::from_secs(5) });
//! px4.close()?; // also on Drop
//! # Ok(())
//! # }
//! ```
//!
//! What the launcher guarantees:
//! * **exactly PX4's command line** (docs/px4-wire.md §Launch): `PX4_SIMULATOR=sihsim
//!   PX4_SIM_MODEL=sihsim_quadx [PX4_SIM_SPEED_FACTOR=F] [PX4_PARAM_<NAME>=v] <build>/bin/px4 -i N
//!   -d -w <workdir> <build>/etc`, with a fresh working directory per run (removed on close
//!   unless kept), PX4's output in `<workdir>/console.log`;
//! * **one death channel**: [`Px4Process::died`] / [`DeathWatch`] carry every cause (exit code,
//!   signal, the first `PANIC` line, "already running", and the pump's link-silent and
//!   clock-stalled declarations); the first cause wins;
//! * **no orphans**: PX4 runs in its own process group; close and `Drop` SIGTERM the group, then
//!   SIGKILL it after a grace period; when PX4 exits by itself its leftovers are SIGKILLed; what
//!   PX4 started that left its group (setsid, a double fork) is found by the launch's tag in its
//!   environment and SIGKILLed too (`sweep`); if our process dies without unwinding, the kernel
//!   kills PX4 (`PR_SET_PDEATHSIG`); [`end_all_now`] ends every running launch at once (an exit
//!   that cannot wait).

mod airframe;
mod build;
mod death;
mod error;
mod options;
mod ports;
mod process;
mod supervise;
mod sweep;

pub use airframe::{Airframe, UnknownAirframe};
pub use build::{Px4Build, PX4_BUILD_ENV};
pub use death::{DeathCause, DeathWatch, OUTPUT_TAIL_LINES};
pub use error::LaunchError;
pub use options::{LaunchOptions, DEFAULT_KILL_GRACE};
pub use ports::{OffboardPort, PortMap, OFFBOARD_CLIENT_PORT_BASE, OFFBOARD_PX4_PORT_BASE};
pub use process::{Px4Process, CONSOLE_LOG};
pub use sweep::{end_all_now, TAG_ENV};

#[cfg(test)]
mod tests {
    /// A run owns its PX4 from any thread; the pump shares the death watch.
    #[test]
    fn handles_cross_threads() {
        fn send<T: Send>() {}
        fn send_sync<T: Send + Sync>() {}
        send::<super::Px4Process>();
        send_sync::<super::DeathWatch>();
        send_sync::<super::LaunchError>();
    }
}
