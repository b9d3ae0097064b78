//! # nexus-host
//!
//! The std side of nexus-uav: it drives [`nexus_core`] over real links and real processes.
//!
//! * [`transport`]: pymavlink-style connection strings over mio (UDP, TCP, serial);
//! * [`sim`]: a simulated PX4 vehicle that speaks PX4's MAVLink faithfully;
//! * [`launcher`]: starts and supervises real PX4 SITL processes.

pub mod launcher;
pub mod sim;
pub mod transport;
