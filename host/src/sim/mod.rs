//! A simulated PX4 vehicle (multicopter, SITL instance N) that speaks PX4's MAVLink faithfully.
//!
//! It is the default peer of every end-to-end test and of the `nexus` command when no PX4 build
//! is given, and it can be run alone (`nexus sim`) for QGroundControl or pymavlink. Fidelity is
//! the point: behaviour follows `PX4-WIRE.md` (measured PX4 SITL, SIH quadrotor) and, where that
//! is silent, PX4's sources (commander, navigator, `mavlink_mission.cpp`, the mavlink streams).
//!
//! Two layers:
//! * [`Vehicle`]: a pure, deterministic, in-memory model driven sans-IO
//!   (`handle_datagram` / `step` / `poll_transmit`), testable without sockets;
//! * [`SimHandle`]: a thin UDP server around it, one thread per instance, real-time (with a
//!   speed factor) or lockstep (the host steps sim time explicitly).
//!
//! Modules, one per concept: [`geo`], [`params`], [`dynamics`], [`commander`], [`navigator`],
//! [`mission`], [`statustext`], [`streams`], [`faults`], [`clock`], [`server`], [`cli`].

pub mod cli;
pub mod clock;
pub mod commander;
mod commands;
pub mod config;
pub mod dynamics;
pub mod faults;
pub mod geo;
mod handlers;
pub mod io;
pub mod mission;
pub mod navigator;
pub mod params;
pub mod server;
pub mod statustext;
pub mod streams;
mod vehicle;
pub mod wire;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod testutil;

pub use clock::ClockMode;
pub use config::{BootTimings, VehicleConfig};
pub use faults::{ExitStatus, Fault};
pub use geo::GeoPoint;
pub use server::{OffboardLink, Ports, SimConfig, SimError, SimHandle};
pub use vehicle::{Vehicle, VehicleSnapshot};
