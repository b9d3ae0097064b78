//! # nexus-host
//!
//! The std side of nexus-uav: it drives [`nexus_core`] over real links and real processes.
//!
//! * [`transport`]: pymavlink-style connection strings over mio (UDP, TCP, serial);
//! * [`sim`]: the nexus-sim crate, re-exported: the simulated PX4 vehicle that [`run::Sim`] starts
//!   by default (its faults, configuration and errors appear in [`run`]'s API);
//! * [`launcher`]: starts and supervises real PX4 SITL processes;
//! * [`pump`]: one background thread driving any number of vehicle links (the core client per
//!   link, reactions on the wire in the tick their condition is met);
//! * [`offboard_client`]: seed 002's `OffboardClient` for PX4; [`run`]: a run (`Sim`) that owns
//!   the vehicle; [`session`]: seed 000's wait service with wall-clock caps and an idle reaper;
//!   [`error`]: their errors.
//! * [`tlog`]: records a link's frames as a QGroundControl `.tlog` and reads one back.
//! * [`bridge`]: forwards MAVLink between a serial/TCP byte stream and UDP (`nexus bridge`).
//!
//! The `nexus` command is the nexus-cli package, so this library carries no command-line crates.

pub mod bridge;
pub mod error;
pub mod interrupt;
pub mod launcher;
pub mod limits;
pub mod offboard_client;
pub mod pump;
pub mod run;
pub mod session;
pub mod tlog;
pub mod transport;

/// The simulated PX4 vehicle (the nexus-sim crate): the built-in vehicle of [`run::Sim`], whose
/// API names its types ([`sim::Fault`], [`sim::VehicleConfig`], [`sim::SimError`]).
pub use nexus_sim as sim;
