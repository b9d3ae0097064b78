//! Confirmed parameter sets, as MAVSDK's and QGroundControl's parameter managers do them: a
//! PARAM_SET is an outstanding request, resent on the command retry timer until PX4 echoes the
//! stored value (a PARAM_VALUE with that name and exactly the bits set), failed at once on a
//! PARAM_ERROR for the name (PX4: DOES_NOT_EXIST, TYPE_MISMATCH …), given up after
//! `max_sends`. The echo of a set sent once is a round-trip sample (Karn's rule).
//!
//! A PARAM_VALUE with the name but other bits is no confirmation: it may be the echo of an
//! earlier set or a read, and the set is resent until PX4 shows the value asked for.

use super::clock::Stamp;
use super::config::Timing;
use super::retry::{Due, Resend};
use super::{EventQueue, OffboardError, OffboardEvent, OneShot, Tx};
use crate::action::ParamName;
use crate::msg::{Frame, Msg};
use core::fmt;
use heapless::Vec;

/// Parameter sets outstanding at once; one more is [`OffboardError::ParamSetsFull`]. PX4 answers
/// a set within a round trip, so eight cover a burst of sets (a takeoff and a program's own).
pub const PARAM_SETS_LEN: usize = 8;

/// How an outstanding parameter set ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum ParamSetEnd {
    /// PX4 echoed the value set: it is stored.
    Confirmed,
    /// PX4 answered PARAM_ERROR with this MAV_PARAM_ERROR ([`param_error_name`]).
    Refused {
        /// MAV_PARAM_ERROR (1 DOES_NOT_EXIST, 7 TYPE_MISMATCH, …).
        error: u8,
    },
    /// No echo with the value after this many sends.
    GaveUp {
        /// PARAM_SETs sent.
        sends: u8,
    },
}

/// A parameter set's end, with the parameter and the value (its 32 wire bits) it set.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ParamSetOutcome {
    /// The parameter.
    pub name: ParamName,
    /// The value's bits in PARAM_SET's float field: the f32's bits for REAL32, the i32's for
    /// INT32 (and, once confirmed, the bits PX4 stored: the same).
    pub bits: u32,
    /// An INT32 set (else REAL32).
    pub int32: bool,
    /// How it ended.
    pub end: ParamSetEnd,
    /// The echo's PARAM_VALUE.param_index and param_count (0 when not confirmed).
    pub index_count: (u16, u16),
}

impl ParamSetOutcome {
    /// Whether PX4 confirmed it.
    pub fn confirmed(&self) -> bool {
        self.end == ParamSetEnd::Confirmed
    }

    /// The value as an INT32, if it was one.
    pub fn int_value(&self) -> Option<i32> {
        self.int32.then_some(self.bits as i32)
    }

    /// The value as a REAL32, if it was one.
    pub fn real_value(&self) -> Option<f32> {
        (!self.int32).then_some(f32::from_bits(self.bits))
    }
}

impl fmt::Display for ParamSetOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = self.name.as_str();
        let value = ParamShown(self.bits, self.int32);
        match self.end {
            ParamSetEnd::Confirmed => write!(f, "PX4 stored {name} = {value}"),
            ParamSetEnd::Refused { error } => write!(
                f,
                "PX4 refused {name} = {value}: {}",
                param_error_name(error)
            ),
            ParamSetEnd::GaveUp { sends } => write!(
                f,
                "gave up on {name} = {value}: not confirmed after {sends} PARAM_SETs"
            ),
        }
    }
}

/// A set's value as written in a program: an int, or a real.
struct ParamShown(u32, bool);

impl fmt::Display for ParamShown {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.1 {
            write!(f, "{}", self.0 as i32)
        } else {
            write!(f, "{}", f32::from_bits(self.0))
        }
    }
}

/// MAV_PARAM_ERROR's name, without the prefix (as PX4's code is said in refusals).
pub fn param_error_name(error: u8) -> &'static str {
    match error {
        0 => "NO_ERROR",
        1 => "DOES_NOT_EXIST",
        2 => "VALUE_OUT_OF_RANGE",
        3 => "PERMISSION_DENIED",
        4 => "COMPONENT_NOT_FOUND",
        5 => "READ_ONLY",
        6 => "TYPE_UNSUPPORTED",
        7 => "TYPE_MISMATCH",
        8 => "READ_FAIL",
        _ => "unknown error",
    }
}

#[derive(Debug, Clone)]
struct PendingSet {
    name: ParamName,
    bits: u32,
    int32: bool,
    tx: Resend,
}

/// The outstanding parameter sets, and the newest that ended (so a program step can tell how
/// its set ended after the event went to the application).
#[derive(Debug, Clone, Default)]
pub(crate) struct ParamSets {
    q: Vec<PendingSet, PARAM_SETS_LEN>,
    ended: heapless::Deque<ParamSetOutcome, PARAM_SETS_LEN>,
}

/// The name in a PARAM_VALUE or PARAM_ERROR id (NUL-padded, 16 bytes).
fn id_is(id: &[u8], name: &str) -> bool {
    let end = id.iter().position(|&b| b == 0).unwrap_or(id.len());
    &id[..end] == name.as_bytes()
}

impl ParamSets {
    /// Set `name` to `bits`; a set of the same name still outstanding is replaced (the newest
    /// value is the one wanted, and its echo the one that confirms).
    pub fn request(
        &mut self,
        name: ParamName,
        bits: u32,
        int32: bool,
    ) -> Result<(), OffboardError> {
        let set = PendingSet {
            name,
            bits,
            int32,
            tx: Resend::new(),
        };
        if let Some(p) = self.q.iter_mut().find(|p| p.name == set.name) {
            *p = set;
            return Ok(());
        }
        self.q.push(set).map_err(|_| OffboardError::ParamSetsFull)
    }

    /// Sets still outstanding.
    pub fn len(&self) -> usize {
        self.q.len()
    }

    /// Whether a set of `name` is outstanding.
    pub fn pending(&self, name: &str) -> bool {
        self.q.iter().any(|p| p.name == name)
    }

    /// The newest ended set of `name`, among the last [`PARAM_SETS_LEN`] that ended.
    pub fn outcome(&self, name: &str) -> Option<&ParamSetOutcome> {
        self.ended.iter().rev().find(|o| o.name == name)
    }

    fn end(&mut self, i: usize, end: ParamSetEnd, index_count: (u16, u16), ev: &mut EventQueue) {
        let p = self.q.swap_remove(i);
        let o = ParamSetOutcome {
            name: p.name,
            bits: p.bits,
            int32: p.int32,
            end,
            index_count,
        };
        if self.ended.is_full() {
            self.ended.pop_front();
        }
        let _ = self.ended.push_back(o.clone());
        ev.push(OffboardEvent::ParamSet(o));
    }

    /// A PARAM_VALUE with the name and the bits confirms; a PARAM_ERROR for the name refuses.
    pub fn on_frame(&mut self, now: Stamp, frame: &Frame, t: &mut Timing, ev: &mut EventQueue) {
        match &frame.msg {
            Msg::ParamValue(pv) => {
                let bits = pv.param_value.to_bits();
                let id: &[u8] = &pv.param_id[..];
                if let Some(i) = self
                    .q
                    .iter()
                    .position(|p| p.bits == bits && id_is(id, &p.name))
                {
                    self.q[i].tx.answered(now, &mut t.rtt);
                    self.end(
                        i,
                        ParamSetEnd::Confirmed,
                        (pv.param_index, pv.param_count),
                        ev,
                    );
                }
            }
            Msg::ParamError(pe) => {
                if let Some(i) = self.q.iter().position(|p| id_is(&pe.param_id[..], &p.name)) {
                    self.q[i].tx.answered(now, &mut t.rtt);
                    let error = pe.error as u8;
                    self.end(i, ParamSetEnd::Refused { error }, (0, 0), ev);
                }
            }
            _ => {}
        }
    }

    /// The next PARAM_SET due (first sends and resends), or a give-up reported.
    pub fn poll(&mut self, now: Stamp, t: &mut Timing, ev: &mut EventQueue) -> Option<Tx> {
        let timer = t.command_timer_ms();
        let mut i = 0;
        while i < self.q.len() {
            let p = &mut self.q[i];
            match p.tx.poll(now, timer, t.max_sends, &mut t.rtt) {
                Due::Wait => i += 1,
                Due::Send => {
                    return Some(Tx::OneShot(OneShot::Param {
                        name: p.name.clone(),
                        bits: p.bits,
                        int32: p.int32,
                    }))
                }
                Due::GiveUp { sends } => self.end(i, ParamSetEnd::GaveUp { sends }, (0, 0), ev),
            }
        }
        None
    }

    /// The earliest wall deadline of the sets' timers (due at once when one was never sent).
    pub fn deadline(&self, t: &Timing) -> Option<crate::time::Instant> {
        let timer = t.command_timer_ms();
        let mut d = crate::offboard::clock::Soonest::default();
        for p in &self.q {
            p.tx.deadline(timer, &mut d);
        }
        d.0
    }
}
