//! Parameter reads: PARAM_REQUEST_READ, answered by a PARAM_VALUE with the same name.
//!
//! PX4 answers within a millisecond on loopback and also sends PARAM_VALUEs nobody asked for,
//! so a read is matched by name, not by timing. The request is re-sent every
//! [`PARAM_RETRY_MS`] (UDP loses datagrams) until the caller's timeout, which ends the read
//! with [`ParamError::Timeout`]: an autopilot that never answers is a typed give-up, not a hang.

use std::sync::Arc;

use nexus_core::mav;
use nexus_core::Instant;

use super::slot::Slot;

/// Re-send interval of an unanswered PARAM_REQUEST_READ, ms (wall).
pub const PARAM_RETRY_MS: u64 = 1000;

/// A parameter as the autopilot reported it (PARAM_VALUE).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ParamValue {
    /// The raw 32 bits of `param_value`: a REAL32's float bits, or an integer's own bits
    /// (PX4 sends integers bytewise).
    pub bits: u32,
    /// MAV_PARAM_TYPE.
    pub param_type: mav::MavParamType,
    /// The parameter's index on the vehicle.
    pub index: u16,
    /// How many parameters the vehicle has.
    pub count: u16,
}

impl ParamValue {
    /// Whether the parameter is an integer type (INT8..INT32, UINT8..UINT32).
    pub fn is_int(&self) -> bool {
        use mav::MavParamType as T;
        matches!(
            self.param_type,
            T::MAV_PARAM_TYPE_INT8
                | T::MAV_PARAM_TYPE_UINT8
                | T::MAV_PARAM_TYPE_INT16
                | T::MAV_PARAM_TYPE_UINT16
                | T::MAV_PARAM_TYPE_INT32
                | T::MAV_PARAM_TYPE_UINT32
        )
    }

    /// The value of an integer parameter (its bits, as PX4 sends them); `None` for a float.
    pub fn as_int(&self) -> Option<i32> {
        self.is_int().then_some(self.bits as i32)
    }

    /// The value of a REAL32 parameter; `None` for an integer (whose bits are no float).
    pub fn as_real(&self) -> Option<f32> {
        (self.param_type == mav::MavParamType::MAV_PARAM_TYPE_REAL32)
            .then_some(f32::from_bits(self.bits))
    }
}

/// Why a parameter read failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ParamError {
    /// The name cannot be a MAVLink parameter id.
    #[error("parameter name '{0}' must be 1 to 16 bytes")]
    BadName(String),
    /// No PARAM_VALUE for it came within the timeout.
    #[error("no PARAM_VALUE for {name} within {timeout_s} s ({sends} PARAM_REQUEST_READ sent)")]
    Timeout {
        /// The parameter.
        name: String,
        /// The wall-time limit, s.
        timeout_s: f32,
        /// Requests sent.
        sends: u32,
    },
    /// The vehicle or link died first.
    #[error("the link died before {name} was read: {reason}")]
    Died {
        /// The parameter.
        name: String,
        /// Why the link died.
        reason: String,
    },
    /// The link was closed first.
    #[error("the link was closed before {0} was read")]
    Closed(String),
}

/// A read in flight on the pump thread.
#[derive(Debug)]
pub(crate) struct ParamRead {
    pub name: String,
    pub slot: Arc<Slot<Result<ParamValue, ParamError>>>,
    pub sends: u32,
    pub next_send: Instant,
    pub deadline: Instant,
    pub timeout_s: f32,
}

impl ParamRead {
    /// When this read needs the pump next.
    pub fn due(&self) -> Instant {
        self.next_send.min(self.deadline)
    }

    /// Whether `m` answers this read.
    pub fn matches(&self, m: &mav::PARAM_VALUE_DATA) -> bool {
        m.param_id
            .to_str()
            .is_ok_and(|id| id.trim_end_matches('\0') == self.name)
    }
}

impl From<&mav::PARAM_VALUE_DATA> for ParamValue {
    fn from(m: &mav::PARAM_VALUE_DATA) -> Self {
        ParamValue {
            bits: m.param_value.to_bits(),
            param_type: m.param_type,
            index: m.param_index,
            count: m.param_count,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_come_bytewise() {
        let v = ParamValue {
            bits: 1,
            param_type: mav::MavParamType::MAV_PARAM_TYPE_INT32,
            index: 0,
            count: 1,
        };
        assert_eq!(v.as_int(), Some(1));
        assert_eq!(v.as_real(), None);
        let r = ParamValue {
            bits: 2.5f32.to_bits(),
            param_type: mav::MavParamType::MAV_PARAM_TYPE_REAL32,
            ..v
        };
        assert_eq!(r.as_real(), Some(2.5));
        assert_eq!(r.as_int(), None);
    }
}
