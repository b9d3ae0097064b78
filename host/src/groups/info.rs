//! Info: the link and what the vehicle said about our requests (MAVSDK's Info and its
//! connection state).

use nexus_core::offboard::{Pending, Refusal};

use super::Facade;

/// The link's state: whether the vehicle is there, its clock, what it refused, what is still
/// being asked of it.
pub trait InfoApi: Facade {
    /// Whether the vehicle's heartbeat has arrived: verbs have somewhere to go.
    fn connected(&self) -> bool {
        self.read_status(|s| s.connected)
    }

    /// The autopilot's clock (time_boot_ms), ms; `None` before the first timestamped message.
    fn autopilot_time_ms(&self) -> Option<u64> {
        self.read_status(|s| s.sim_ms)
    }

    /// The vehicle's last refusal, with the STATUSTEXT that explained it.
    fn last_refusal(&self) -> Option<Refusal> {
        self.read_status(|s| s.last_refusal.clone())
    }

    /// The requests the link's machine is still pursuing (a mode, an arm, a transfer, …).
    fn pending(&self) -> Pending {
        self.read_status(|s| s.pending)
    }
}
