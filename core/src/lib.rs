//! # nexus-core
//!
//! A `no_std`, allocation-free core that commands a PX4 autopilot over MAVLink and waits,
//! exactly and cheaply, for what the vehicle does. It is a pure state machine in the style of
//! smoltcp and quinn-proto: it never touches a socket, a clock or a thread. A driver (a
//! firmware main loop or the `nexus-host` pump) feeds it bytes and the time, and asks it what
//! to send and when to wake up.
//!
//! Modules, bottom up:
//! * [`frame`]: MAVLink 1/2 framing, checksums, encoding ([`frame::Decoder`],
//!   [`frame::Encoder`]);
//! * [`msg`]: the subset of messages the engine decodes;
//! * [`telemetry`]: the latest of each message from the target autopilot, STATUSTEXT
//!   reassembly and log, the autopilot clock, the height above the pad (ground truth or AMSL
//!   since arm, never `relative_alt`), [`telemetry::Snapshot`];
//! * [`ground_truth`]: recognising PX4 SITL and asking it for its true state;
//! * [`mode`]: PX4's flight-mode table;
//! * [`engine`]: wait conditions, reactions, reasons and step programs (seed 000);
//! * [`offboard`]: the PX4 offboard state machine (seed 002);
//! * [`explain`]: why a wait ended without its condition, in the vehicle's own words;
//! * [`mission`] and [`plan`]: mission items and the QGroundControl `.plan` reader;
//! * [`client`]: all of the above behind one `handle` / `poll_transmit` / `next_deadline` /
//!   `poll_event` interface, the thing a driver runs per vehicle link.
//!
//! Every capacity is a const generic or a documented constant; running out is an error the
//! caller sees, never a panic.
#![no_std]
#![forbid(unsafe_code)]

pub mod action;
pub mod client;
mod decimal;
pub mod engine;
pub mod explain;
pub mod frame;
pub mod ground_truth;
pub mod mission;
pub mod mode;
pub mod msg;
pub mod offboard;
pub mod plan;
pub mod rc;
pub mod telemetry;
pub mod time;

pub use action::Action;
pub use client::{Client, ClientConfig, ClientError, Event};
pub use ground_truth::GroundTruth;
pub use mode::Mode;
pub use msg::{Frame, Msg};
pub use rc::RcSticks;
pub use telemetry::{HeightSource, LandedState, Snapshot, Telemetry};
pub use time::{Duration, Instant};

/// What a driver of the core imports: `use nexus_core::prelude::*;`.
pub mod prelude {
    pub use crate::client::{Client, ClientConfig, Event};
    pub use crate::engine::{Condition, Op, Reason, Wait, WaitResult};
    pub use crate::mission::{MissionAck, MissionItem};
    pub use crate::mode::Mode;
    pub use crate::rc::RcSticks;
    pub use crate::telemetry::{LandedState, Severity, Snapshot};
}

/// Re-export of the `mavlink` crate's common dialect, the message types this crate speaks.
pub use mavlink::dialects::common as mav;
