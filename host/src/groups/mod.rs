//! The verbs and queries of a vehicle client, written once and grouped as MAVSDK groups its
//! plugins: [`ActionApi`], [`MissionApi`], [`ParamApi`], [`TelemetryApi`], [`OffboardApi`],
//! [`GeofenceApi`], [`InfoApi`].
//!
//! A client gives two primitives ([`Facade`]): a read of the vehicle's status as its driver
//! last saw it, and a verb applied to the core [`nexus_core::Client`] with the driver's clock.
//! Every group is built on those two alone, so the threaded [`crate::offboard_client::OffboardClient`]
//! and nexus-tokio's `AsyncClient` offer the same verbs, with the same names, checks and
//! bookkeeping (each verb is the core client's verb of that name), and a program written
//! against the groups runs on either:
//!
//! ```
//! use nexus_host::prelude::*;
//!
//! /// Take off on any client, then land.
//! fn hop(op: &impl ActionApi, sim: &Run) -> Result<(), Box<dyn std::error::Error>> {
//!     op.takeoff(2.0)?;
//!     sim.until(|| op.at_target(), 60.0)?;
//!     op.land()?;
//!     sim.until(|| op.landed() == Some(true), 60.0)?;
//!     Ok(())
//! }
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let sim = Run::started(RunOptions::simulated(168).lockstep())?;
//! hop(&OffboardClient::connect(&sim, 10.0)?, &sim)
//! # }
//! ```
//!
//! Bring them into scope with `use nexus_host::prelude::*` (or nexus-tokio's prelude).
//! What waits for the vehicle (a parameter read, a set that waits for PX4's echo, a wait)
//! keeps one name on both clients and blocks on one, is a future on the other.

mod action;
mod geofence;
mod info;
mod mission;
mod offboard;
mod param;
mod telemetry;

pub use action::ActionApi;
pub use geofence::GeofenceApi;
pub use info::InfoApi;
pub use mission::MissionApi;
pub use offboard::OffboardApi;
pub use param::ParamApi;
pub use telemetry::TelemetryApi;

use nexus_core::Instant;

use crate::error::OffboardClientError;
use crate::pump::{HostClient, LinkStatus};

/// The two primitives every group is built on. A client implements these; the groups come
/// with them.
pub trait Facade {
    /// Read the vehicle's status as the driver last published it (the empty status, not
    /// connected, when the client is not open). Never a round trip to the vehicle.
    fn read_status<R>(&self, f: impl FnOnce(&LinkStatus) -> R) -> R;

    /// Apply `verb` to the link's core client with the driver's clock, then wake the driver to
    /// send what it queued. Fails with [`OffboardClientError::NotOpen`] on a closed client.
    fn apply<R: Send + 'static>(
        &self,
        verb: impl FnOnce(&mut HostClient, Instant) -> Result<R, OffboardClientError> + Send + 'static,
    ) -> Result<R, OffboardClientError>;
}

/// A verb that yields nothing of its own: `apply` it and answer `()`.
fn run<F: Facade + ?Sized>(
    client: &F,
    verb: impl FnOnce(&mut HostClient, Instant) + Send + 'static,
) -> Result<(), OffboardClientError> {
    client.apply(move |c, now| {
        verb(c, now);
        Ok(())
    })
}

impl<T: Facade + ?Sized> ActionApi for T {}
impl<T: Facade + ?Sized> MissionApi for T {}
impl<T: Facade + ?Sized> ParamApi for T {}
impl<T: Facade + ?Sized> TelemetryApi for T {}
impl<T: Facade + ?Sized> OffboardApi for T {}
impl<T: Facade + ?Sized> GeofenceApi for T {}
impl<T: Facade + ?Sized> InfoApi for T {}
