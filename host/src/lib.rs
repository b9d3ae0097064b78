//! # nexus-host
//!
//! The std side of nexus-uav: it drives [`nexus_core`] over real links and real processes.
//!
//! * [`transport`]: pymavlink-style connection strings over mio (UDP, TCP, serial);
//! * [`sim`]: a simulated PX4 vehicle that speaks PX4's MAVLink faithfully;
//! * [`launcher`]: starts and supervises real PX4 SITL processes;
//! * [`pump`]: one background thread driving any number of vehicle links (the core client per
//!   link, reactions on the wire in the tick their condition is met);
//! * [`offboard_client`]: seed 002's `OffboardClient` for PX4; [`run`]: a run (`Sim`) that owns
//!   the vehicle; [`session`]: seed 000's wait service with wall-clock caps and an idle reaper;
//!   [`error`]: their errors.
//! * [`bridge`]: forwards MAVLink between a serial/TCP byte stream and UDP (`nexus bridge`).

pub mod bridge;
pub mod cli;
pub mod error;
pub mod interrupt;
pub mod launcher;
pub mod offboard_client;
pub mod pump;
pub mod run;
pub mod session;
pub mod sim;
pub mod transport;
