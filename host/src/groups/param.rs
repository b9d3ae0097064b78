//! Param: set a vehicle parameter (MAVSDK's Param).

use super::Facade;
use crate::error::OffboardClientError;
use nexus_core::action::ParamValue;

/// The vehicle's parameters, set through the link's machine. A set that returns PX4's echo,
/// and a read, wait for the vehicle: `set_param_wait` and `param_get` have those names on both
/// clients, blocking on `OffboardClient`, futures on nexus-tokio's `AsyncClient` (one read
/// machine under both, [`crate::pump::ParamReads`]).
pub trait ParamApi: Facade {
    /// Set parameter `name` to `value` ([`ParamValue::Int`] goes as INT32, its bits in
    /// PARAM_SET's float field as PX4 reads them; [`ParamValue::Real`] as REAL32, in the
    /// parameter's own unit). Returns once the machine has it; the machine resends it until
    /// PX4 echoes it, and its end (stored, refused, given up) is an event of the link. A name
    /// longer than 16 bytes is refused here.
    fn set_param(&self, name: &str, value: ParamValue) -> Result<(), OffboardClientError> {
        let name = name.to_owned();
        self.apply(move |c, _| Ok(c.set_param(&name, value)?))
    }
}
