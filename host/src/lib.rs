//! # nexus-host
//!
//! The std side of nexus-uav: it drives [`nexus_core`] over real links and real processes.
//!
//! * [`transport`]: pymavlink-style connection strings over mio (UDP, TCP, serial);
//! * [`sim`]: the nexus-sim crate, re-exported: the simulated PX4 vehicle that [`run::Run`] starts
//!   by default (its faults, configuration and errors appear in [`run`]'s API);
//! * [`launcher`]: starts and supervises real PX4 SITL processes;
//! * [`pump`]: one background thread driving any number of vehicle links (the core client per
//!   link, reactions on the wire in the tick their condition is met);
//! * [`groups`]: a client's verbs and queries, once, grouped as MAVSDK groups them (action,
//!   mission, param, telemetry, offboard, geofence, info), on every client;
//! * [`offboard_client`]: the Python `OffboardClient` for PX4, in Rust; [`run`]: a
//!   [`run::Run`] that owns the vehicle; [`session`]: the wait engine as a service with
//!   wall-clock caps and an idle reaper; [`error`]: their errors.
//! * [`tlog`]: records a link's frames as a QGroundControl `.tlog` and reads one back;
//!   [`input_file`]: how a file a user names is read (regular, bounded in bytes).
//! * [`bridge`]: forwards MAVLink between a serial/TCP byte stream and UDP (`nexus bridge`).
//!
//! The `nexus` command is the nexus-cli package, so this library carries no command-line crates
//! and no command-line policy: the limits on the command's inputs and what a signal does to it
//! are the command's; a wait's wall-time bound ([`run::wall_bound`]) and the speed factors the
//! built-in vehicle keeps up with ([`run::SIM_SPEED_MAX`]) are the library's.
//!
//! Start with [`prelude`]: one import for a program like the Python client's.
//!
//! ```
//! use nexus_host::prelude::*;
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // The built-in simulated PX4, lockstep: sim time runs as fast as the CPU allows.
//! let sim = Run::started(RunOptions::simulated(167).lockstep())?;
//! let op = OffboardClient::connect(&sim, 10.0)?;
//! op.takeoff(2.0)?;
//! let r = sim.wait(&Wait::altitude_m(1.5).op(Op::Ge).timeout_s(60.0))?; // 60 s of sim time
//! assert_eq!(r.reason, Reason::Met, "{r:?}");
//! // Up and armed: now "land, but fail at once if it disarms before touching down".
//! op.land()?;
//! let r = sim.wait(&Wait::landed().timeout_s(60.0).guard(Condition::disarmed()))?;
//! assert_eq!(r.reason, Reason::Met, "{r:?}");
//! # Ok(())
//! # }
//! ```
//!
//! **Time.** One rule. Sim time (the vehicle's clock, which a lockstep run advances only while
//! someone waits) is seconds named `_s`: `f32` where it crosses into nexus-core (a
//! [`prelude::Wait`]'s `timeout_s`, a [`nexus_core::engine::WaitResult`]'s `waited_sim_s`: the
//! core runs on an MCU with a single-precision FPU), `f64` in this crate's own API, which sums
//! long flights (`sim_timeout_s`, [`run::Waited::waited_sim_s`], `lockstep_chunk_s`). Wall time
//! (caps, idle limits, parameter reads, the stall limit, how long a wait or a dead link took:
//! [`launcher::DeathCause`], [`error::RunError::Timeout`], [`run::Waited::waited_wall`]) is
//! [`std::time::Duration`]. A [`prelude::Wait`] carries its own sim timeout, and every wait
//! honours it.

pub mod bridge;
pub mod error;
pub mod groups;
pub mod input_file;
pub mod launcher;
pub mod offboard_client;
pub mod pump;
pub mod run;
pub mod session;
pub mod signing;
mod sync;
pub mod tlog;
pub mod transport;
pub mod ulog;

/// The no_std core this library drives, re-exported so a user needs one dependency.
pub use nexus_core;

/// What a program that flies a vehicle imports: `use nexus_host::prelude::*;`.
pub mod prelude {
    pub use crate::error::{ConnectError, OffboardClientError, RunError, SessionError};
    pub use crate::groups::{
        ActionApi, Facade, GeofenceApi, InfoApi, MissionApi, OffboardApi, ParamApi, TelemetryApi,
    };
    pub use crate::launcher::DeathCause;
    pub use crate::offboard_client::{read_plan_file, OffboardClient, OffboardOptions};
    pub use crate::run::{Run, RunOptions};
    pub use crate::session::Session;
    pub use nexus_core::prelude::*;
}

/// The simulated PX4 vehicle (the nexus-sim crate): the built-in vehicle of [`run::Run`], whose
/// API names its types ([`sim::Fault`], [`sim::VehicleConfig`], [`sim::SimError`]).
pub use nexus_sim as sim;
