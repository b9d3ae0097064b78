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
//! * [`vehicle`]: the vehicle's class (HEARTBEAT.type) and PX4's VTOL state;
//! * [`engine`]: wait conditions, reactions, reasons and step programs;
//! * [`offboard`]: the PX4 offboard state machine (the Python `OffboardClient`'s, in Rust);
//! * [`explain`]: why a wait ended without its condition, in the vehicle's own words;
//! * [`escape`]: vehicle text shown safely (controls, line breaks, bidi controls escaped);
//! * [`mission`] and [`plan`]: mission items and the QGroundControl `.plan` reader;
//! * [`log_transfer`]: listing and downloading the vehicle's own logs (the `log-transfer`
//!   feature);
//! * [`link`]: what a transport received (a datagram, a chunk of a byte stream) as the client
//!   takes it, and the link's supervision (silence, a standing autopilot clock);
//! * [`client`]: all of the above behind one `handle` / `poll_transmit` / `next_deadline` /
//!   `poll_event` interface, the thing a driver runs per vehicle link.
//!
//! Every capacity is a const generic or a documented constant; running out is an error the
//! caller sees, never a panic.
//!
//! **Time.** The driver's clock is an [`Instant`] (µs since any origin) and spans of it are a
//! [`Duration`]; sim seconds a caller writes or reads (a [`engine::Wait`]'s `timeout_s`, a
//! result's `waited_sim_s`) are `f32` named `_s`, the precision an MCU's single-precision FPU
//! computes in. nexus-host takes sim seconds as `f64` where it sums long flights. A span of the
//! driver's clock (a result's `waited_wall`) is a [`Duration`].
//!
//! A driver in a few lines: hand the [`Client`] each frame with the time, then ask it for
//! events (here, a vehicle scripted in memory arms at 3 s; `core/examples/` has more).
//!
//! ```
//! use nexus_core::prelude::*;
//! use nexus_core::{mav, Frame, Instant, Msg};
//!
//! let mut client: Client<4, 16, 8, 4> = Client::new(ClientConfig::default());
//! let beat = |armed: bool| {
//!     let mut base_mode = mav::MavModeFlag::MAV_MODE_FLAG_CUSTOM_MODE_ENABLED;
//!     if armed {
//!         base_mode |= mav::MavModeFlag::MAV_MODE_FLAG_SAFETY_ARMED;
//!     }
//!     let hb = mav::HEARTBEAT_DATA { base_mode, custom_mode: Mode::Hold.custom_mode(),
//!         autopilot: mav::MavAutopilot::MAV_AUTOPILOT_PX4,
//!         mavtype: mav::MavType::MAV_TYPE_QUADROTOR, ..Default::default() };
//!     Frame::from_msg(1, 1, Msg::Heartbeat(hb))
//! };
//! let clock = |ms: u32| Frame::from_msg(1, 1, Msg::SystemTime(mav::SYSTEM_TIME_DATA {
//!     time_unix_usec: 0, time_boot_ms: ms }));
//! client.handle(Instant::from_millis(0), &clock(0));
//! client.wait(Instant::from_millis(0), &Wait::armed().timeout_s(5.0)).unwrap();
//! let mut reason = None;
//! for s in 1..=4u32 {
//!     let now = Instant::from_millis(u64::from(s) * 1000);
//!     client.handle(now, &clock(s * 1000));
//!     client.handle(now, &beat(s >= 3));
//!     while let Some(ev) = client.poll_event() {
//!         if let Event::Settled { result, .. } = ev {
//!             reason = Some(result.reason);
//!         }
//!     }
//! }
//! assert_eq!(reason, Some(Reason::Met));
//! ```
#![no_std]
#![forbid(unsafe_code)]

pub mod action;
pub mod client;
mod decimal;
pub mod engine;
pub mod escape;
pub mod explain;
pub mod frame;
pub mod ground_truth;
pub mod link;
#[cfg(feature = "log-transfer")]
pub mod log_transfer;
pub mod mission;
pub mod mode;
pub mod msg;
pub mod offboard;
pub mod plan;
pub mod rc;
pub mod telemetry;
pub mod time;
pub mod vehicle;

pub use action::Action;
pub use client::{Client, ClientConfig, ClientError, Event};
pub use ground_truth::GroundTruth;
pub use mode::Mode;
pub use msg::{Frame, Msg};
pub use rc::RcSticks;
pub use telemetry::{HeightSource, LandedState, Snapshot, Telemetry};
pub use time::{Duration, Instant};
pub use vehicle::{VehicleKind, VtolState};

/// What a driver of the core imports: `use nexus_core::prelude::*;`.
pub mod prelude {
    pub use crate::action::ParamValue;
    pub use crate::client::{Client, ClientConfig, ClientError, Event};
    pub use crate::engine::{Condition, Op, Reason, Wait, WaitResult};
    pub use crate::mission::{MissionAck, MissionItem};
    pub use crate::mode::Mode;
    pub use crate::rc::RcSticks;
    pub use crate::telemetry::{LandedState, Severity, Snapshot};
}

/// Re-export of the `mavlink` crate's common dialect, the message types this crate speaks.
pub use mavlink::dialects::common as mav;
