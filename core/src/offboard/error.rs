//! Why a verb could not be accepted. (What PX4 later refuses arrives as an event instead.)

use crate::mission::ItemError;
use core::fmt;

/// A verb the machine could not take on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive] // more causes will come; match with a `_` arm
pub enum OffboardError {
    /// The mode name is not in PX4's table (see [`crate::mode::UnknownMode`] for the list).
    UnknownMode,
    /// goto needs a position from PX4 (GLOBAL_POSITION_INT) and none has arrived yet.
    NoPosition,
    /// A parameter name is empty or longer than 16 bytes.
    BadParamName,
    /// An argument is out of range or not finite; names which.
    InvalidArgument(&'static str),
    /// The queue of one-shot frames (disarm, goto, PARAM_SET) is full: poll_transmit has not
    /// drained it.
    OutboxFull,
    /// `PARAM_SETS_LEN` parameter sets are outstanding (`confirmed-params`): wait for one to
    /// end (its `OffboardEvent::ParamSet`).
    #[cfg(feature = "confirmed-params")]
    ParamSetsFull,
    /// More mission items than the machine's capacity.
    TooManyItems {
        /// Items offered.
        count: usize,
        /// The capacity (`ITEMS`).
        capacity: usize,
    },
    /// A mission item cannot be encoded.
    Item(ItemError),
    /// UploadMission with no mission lodged.
    NoMission,
    /// This action belongs to the driver, not the vehicle (Speedup: only a simulator's clock
    /// can be sped up).
    DriverAction,
    /// The vehicle's HEARTBEAT.type says the verb does not apply to it (a takeoff or land on a
    /// rover, a VTOL transition on a vehicle that is no VTOL): refused before anything is sent.
    NotForVehicle {
        /// The verb, as a program names it (`"takeoff"`, `"vtol_transition"`).
        verb: &'static str,
        /// HEARTBEAT.type (MAV_TYPE).
        mav_type: u8,
        /// What PX4 does with it there, and what to do instead.
        why: &'static str,
    },
}

impl fmt::Display for OffboardError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OffboardError::UnknownMode => crate::mode::UnknownMode.fmt(f),
            OffboardError::NoPosition => {
                f.write_str("no position has arrived from the vehicle yet")
            }
            OffboardError::BadParamName => f.write_str("parameter name must be 1 to 16 bytes"),
            OffboardError::InvalidArgument(what) => write!(f, "invalid argument: {what}"),
            OffboardError::OutboxFull => f.write_str("outbox full: call poll_transmit to drain it"),
            #[cfg(feature = "confirmed-params")]
            OffboardError::ParamSetsFull => {
                f.write_str("too many parameter sets outstanding: wait for PX4's answers")
            }
            OffboardError::TooManyItems { count, capacity } => write!(
                f,
                "{count} mission items, more than the {capacity} this machine holds"
            ),
            OffboardError::Item(e) => e.fmt(f),
            OffboardError::NoMission => f.write_str("no mission lodged to upload"),
            OffboardError::DriverAction => {
                f.write_str("speedup is the driver's action, not the vehicle's")
            }
            OffboardError::NotForVehicle {
                verb,
                mav_type,
                why,
            } => write!(
                f,
                "{verb}: the vehicle is {} (HEARTBEAT type {mav_type}): {why}",
                crate::vehicle::VehicleKind::from_mav_type(*mav_type)
            ),
        }
    }
}

impl From<ItemError> for OffboardError {
    fn from(e: ItemError) -> Self {
        OffboardError::Item(e)
    }
}
/// So `?` converts it into `Box<dyn Error>` and other error types.
impl core::error::Error for OffboardError {}
