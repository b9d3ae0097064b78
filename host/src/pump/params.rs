//! Parameter reads: PARAM_REQUEST_READ, answered by a PARAM_VALUE with the same name.
//!
//! PX4 answers within a millisecond on loopback and also sends PARAM_VALUEs nobody asked for,
//! so a read is matched by name, not by timing. MAVLink's parameter protocol carries no request
//! id, and every PARAM_SET and PARAM_REQUEST_READ is answered by one PARAM_VALUE: so the pump
//! keeps, per name, the answers still owed for what it sent ([`Owed`]), and a read skips that
//! many PARAM_VALUEs before it takes one. Otherwise `param_set` then `param_get` could read the
//! echo of an earlier set, or the late answer to an earlier read. The request is re-sent on a
//! timer (UDP loses datagrams) until the caller's timeout, which ends the read with
//! [`ParamError::Timeout`]. The timer is [`PARAM_RETRY_MS`] or, on a slower link, the measured
//! round trip's (`clamp(srtt + 4·rttvar)`, the core's RFC 6298 estimator on the wall clock):
//! a PARAM_VALUE for a name with exactly one answer owed is a clean sample (Karn's rule: with
//! two owed, which send it answers is unknown): an autopilot that never answers is a typed give-up, not a hang.
//! A PARAM_ERROR for the name (PX4: unknown name, wrong type) ends the read at once with
//! [`ParamError::Refused`].

use nexus_core::action::ParamValue;
use nexus_core::mav;
use nexus_core::offboard::RttEstimator;
use nexus_core::Instant;

/// Re-send interval of an unanswered PARAM_REQUEST_READ, ms (wall): the floor of the measured
/// timer (the measured round trip of parameter reads, `LinkStatus::rtt`).
pub const PARAM_RETRY_MS: u64 = 1000;

/// How long a PARAM_VALUE stays owed for a PARAM_SET or PARAM_REQUEST_READ sent, ms (wall):
/// after that it counts as lost.
pub const PARAM_OWED_MS: u64 = 3000;

/// A parameter as the autopilot reported it (PARAM_VALUE): its value in its type, and where
/// it sits in the vehicle's list.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive] // more fields may come
pub struct Param {
    /// The value, read by the message's type (PX4 sends integers bytewise).
    pub value: ParamValue,
    /// MAV_PARAM_TYPE as sent (PX4: INT32 or REAL32).
    pub param_type: mav::MavParamType,
    /// The parameter's index on the vehicle.
    pub index: u16,
    /// How many parameters the vehicle has.
    pub count: u16,
}

impl Param {
    /// Whether the parameter is an integer type (INT8..INT32, UINT8..UINT32).
    pub fn is_int(&self) -> bool {
        self.value.is_int()
    }

    /// The value of an integer parameter; `None` for a float.
    pub fn as_int(&self) -> Option<i32> {
        self.value.as_int()
    }

    /// The value of a REAL32 parameter; `None` for an integer (whose bits are no float).
    pub fn as_real(&self) -> Option<f32> {
        self.value.as_real()
    }
}

/// Whether a MAV_PARAM_TYPE is an integer type (its value rides bytewise in the float field).
pub(crate) fn int_type(t: mav::MavParamType) -> bool {
    use mav::MavParamType as T;
    matches!(
        t,
        T::MAV_PARAM_TYPE_INT8
            | T::MAV_PARAM_TYPE_UINT8
            | T::MAV_PARAM_TYPE_INT16
            | T::MAV_PARAM_TYPE_UINT16
            | T::MAV_PARAM_TYPE_INT32
            | T::MAV_PARAM_TYPE_UINT32
    )
}

/// Why a parameter read or set failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive] // more variants may come; match with a `_` arm
pub enum ParamError {
    /// The name cannot be a MAVLink parameter id.
    #[error("parameter name '{0}' must be 1 to 16 bytes")]
    BadName(String),
    /// No PARAM_VALUE for it came within the timeout.
    #[error(
        "no PARAM_VALUE for {name} within {} s ({sends} PARAM_REQUEST_READ sent)",
        timeout.as_secs_f64()
    )]
    Timeout {
        /// The parameter.
        name: String,
        /// The wall-time limit.
        timeout: std::time::Duration,
        /// Requests sent.
        sends: u32,
    },
    /// The vehicle or link died first.
    #[error("the link died before {name} was read: {cause}")]
    Died {
        /// The parameter.
        name: String,
        /// Why the link died.
        cause: crate::launcher::DeathCause,
    },
    /// The link was closed first.
    #[error("the link was closed before {0} was read")]
    Closed(String),
    /// The vehicle answered PARAM_ERROR (PX4: DOES_NOT_EXIST for an unknown name,
    /// TYPE_MISMATCH for a set of the wrong type), at once.
    #[error("the vehicle refused {name}: {error}")]
    Refused {
        /// The parameter.
        name: String,
        /// PX4's MAV_PARAM_ERROR, as its name (e.g. "MAV_PARAM_ERROR_DOES_NOT_EXIST").
        error: String,
    },
    /// A set the machine could not take (a value not finite, too many sets outstanding).
    #[error("the set of {name} was not sent: {why}")]
    NotSent {
        /// The parameter.
        name: String,
        /// The machine's reason.
        why: nexus_core::offboard::OffboardError,
    },
    /// A set never echoed with its value: the machine gave up after this many PARAM_SETs.
    #[error("PX4 never confirmed {name}: no PARAM_VALUE with the value after {sends} PARAM_SETs")]
    GaveUp {
        /// The parameter.
        name: String,
        /// PARAM_SETs sent.
        sends: u8,
    },
    /// A set not confirmed within the caller's timeout (wall); the machine keeps resending it
    /// until its resend limit.
    #[error("PX4 did not confirm {name} within {} s", timeout.as_secs_f64())]
    SetTimeout {
        /// The parameter.
        name: String,
        /// The wall-time limit.
        timeout: std::time::Duration,
    },
}

/// PARAM_VALUEs still owed per parameter name, oldest first (the send times), and the round
/// trip they measure.
#[derive(Debug, Default)]
pub(crate) struct Owed {
    by_name: std::collections::HashMap<String, std::collections::VecDeque<Instant>>,
    rtt: RttEstimator,
}

impl Owed {
    /// A PARAM_SET or PARAM_REQUEST_READ for `name` went out at `now`.
    pub fn sent(&mut self, name: &str, now: Instant) {
        self.by_name
            .entry(name.to_owned())
            .or_default()
            .push_back(now);
    }

    /// A PARAM_VALUE for `name` arrived at `now`: it pays the oldest debt, and is a round-trip
    /// sample when it was the only one.
    pub fn paid(&mut self, name: &str, now: Instant) {
        if let Some(q) = self.by_name.get_mut(name) {
            if let (1, Some(sent)) = (q.len(), q.front()) {
                self.rtt.sample(now.saturating_since(*sent).total_millis());
            }
            q.pop_front();
            if q.is_empty() {
                self.by_name.remove(name);
            }
        }
    }

    /// The re-send timer of a read now, wall ms: [`PARAM_RETRY_MS`] or the measured one.
    pub fn retry_ms(&self) -> u64 {
        self.rtt.timer_ms(PARAM_RETRY_MS)
    }

    /// The parameter round trip measured so far (wall ms).
    pub fn rtt(&self) -> &RttEstimator {
        &self.rtt
    }

    /// A read went unanswered for a whole timer and is re-sent: the timer backs off.
    pub fn timed_out(&mut self) {
        self.rtt.timed_out();
    }

    /// Answers owed for `name` at `now`, forgetting those older than [`PARAM_OWED_MS`] (or
    /// three retry timers, on a link slow enough that those are longer).
    pub fn count(&mut self, name: &str, now: Instant) -> usize {
        let owed_ms = PARAM_OWED_MS.max(3 * self.rtt.timer_ms(PARAM_RETRY_MS));
        let Some(q) = self.by_name.get_mut(name) else {
            return 0;
        };
        while q
            .front()
            .is_some_and(|t| now.saturating_since(*t).total_micros() > owed_ms * 1000)
        {
            q.pop_front();
        }
        q.len()
    }
}

/// The name a PARAM_ERROR is about.
pub(crate) fn param_error_name(m: &mav::PARAM_ERROR_DATA) -> Option<&str> {
    let end = m.param_id.iter().position(|&b| b == 0).unwrap_or(16);
    core::str::from_utf8(&m.param_id[..end]).ok()
}

/// The parameter a PARAM_VALUE is about.
pub(crate) fn param_name_of(m: &mav::PARAM_VALUE_DATA) -> Option<&str> {
    m.param_id.to_str().ok().map(|id| id.trim_end_matches('\0'))
}

impl From<&mav::PARAM_VALUE_DATA> for Param {
    fn from(m: &mav::PARAM_VALUE_DATA) -> Self {
        Param {
            value: ParamValue::from_wire(m.param_value.to_bits(), int_type(m.param_type)),
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
    fn answers_are_owed_in_order_and_expire() {
        let mut o = Owed::default();
        let t = |ms| Instant::from_millis(ms);
        o.sent("A", t(0));
        o.sent("A", t(10));
        o.sent("B", t(10));
        assert_eq!(o.count("A", t(20)), 2);
        o.paid("A", t(20));
        assert_eq!(o.rtt().samples(), 0, "two owed: no sample (Karn)");
        assert_eq!(o.count("A", t(20)), 1);
        assert_eq!(o.count("B", t(20)), 1);
        assert_eq!(
            o.count("A", t(10 + PARAM_OWED_MS + 1)),
            0,
            "lost answers expire"
        );
        o.paid("C", t(0)); // nothing owed: nothing happens
        assert_eq!(o.count("C", t(0)), 0);
    }

    #[test]
    fn one_owed_answer_is_a_sample_and_the_timer_follows() {
        let mut o = Owed::default();
        let t = |ms| Instant::from_millis(ms);
        assert_eq!(o.retry_ms(), PARAM_RETRY_MS);
        o.sent("A", t(0));
        o.paid("A", t(2_000));
        assert_eq!(o.rtt().srtt_ms(), Some(2_000.0));
        // 2 s + 4 × 1 s: a 2 s radio round trip is not resent to every second.
        assert_eq!(o.retry_ms(), 6_000);
        o.timed_out();
        assert_eq!(o.retry_ms(), 10_000, "backed off, up to the ceiling");
    }

    #[test]
    fn integers_come_bytewise() {
        let mut m = mav::PARAM_VALUE_DATA {
            param_value: f32::from_bits(1),
            param_type: mav::MavParamType::MAV_PARAM_TYPE_INT32,
            param_count: 1,
            ..Default::default()
        };
        let v = Param::from(&m);
        assert_eq!(v.as_int(), Some(1));
        assert_eq!(v.as_real(), None);
        m.param_value = 2.5;
        m.param_type = mav::MavParamType::MAV_PARAM_TYPE_REAL32;
        let r = Param::from(&m);
        assert_eq!(r.as_real(), Some(2.5));
        assert_eq!(r.as_int(), None);
        m.param_value = f32::from_bits(7);
        m.param_type = mav::MavParamType::MAV_PARAM_TYPE_UINT8;
        assert_eq!(
            Param::from(&m).as_int(),
            Some(7),
            "any integer type is bytewise"
        );
    }
}
