//! Parameter reads as a machine any driver holds: the threaded pump and nexus-tokio each keep
//! one [`ParamReads`] beside their client and only move its bytes. It sends PARAM_REQUEST_READ
//! and resends it on the measured timer until the PARAM_VALUE comes (skipping those owed to
//! earlier sets and reads, see [`super::params`]), a PARAM_ERROR refuses, or the caller's
//! timeout passes; each read's one answer goes to where the caller waits for it
//! ([`ParamAnswer`]: a slot a thread blocks on, a oneshot a future awaits).

use std::time::Duration;

use nexus_core::frame::{MAGIC_V2, MAX_FRAME_LEN};
use nexus_core::mav;
use nexus_core::msg::{Frame, Msg};
use nexus_core::offboard::{
    param_error_name as mav_error_name, OffboardEvent, ParamSetEnd, ParamSetOutcome,
};
use nexus_core::offboard::{wire, RttEstimator};
use nexus_core::Instant;

use super::params::{param_error_name, param_name_of, Owed, Param, ParamError};
use super::status::LinkEvent;
use super::HostClient;
use crate::launcher::DeathCause;

/// Where one read's answer goes. Filled exactly once: the value, the vehicle's refusal, the
/// timeout, or the link's end.
pub trait ParamAnswer {
    /// Deliver the answer.
    fn fill(self, answer: Result<Param, ParamError>);

    /// Whether anyone still waits for it (a dropped future does not): a read nobody wants is
    /// not resent.
    fn wanted(&self) -> bool {
        true
    }
}

/// A read in flight.
#[derive(Debug)]
struct ParamRead<A> {
    name: String,
    /// PARAM_VALUEs for this name owed to earlier sets and reads: skipped before one is taken.
    skip: usize,
    answer: A,
    sends: u32,
    next_send: Instant,
    deadline: Instant,
    timeout: Duration,
}

impl<A> ParamRead<A> {
    /// When this read needs its driver next.
    fn due(&self) -> Instant {
        self.next_send.min(self.deadline)
    }
}

/// The parameter reads of one link and the answers owed on it. The driver's clock is wall
/// time (the vehicle answers in wall time whatever its speed).
#[derive(Debug)]
pub struct ParamReads<A> {
    reads: Vec<ParamRead<A>>,
    owed: Owed,
}

impl<A> Default for ParamReads<A> {
    fn default() -> Self {
        ParamReads {
            reads: Vec::new(),
            owed: Owed::default(),
        }
    }
}

impl<A: ParamAnswer> ParamReads<A> {
    /// Start reading `name`, its answer to `answer`; the first request goes at the next
    /// [`ParamReads::service`]. A name that cannot be a parameter id, or a link already
    /// dead (`died`), is answered at once.
    pub fn start(
        &mut self,
        now: Instant,
        name: String,
        timeout: Duration,
        answer: A,
        died: Option<&DeathCause>,
    ) {
        if wire::param_id(&name).is_err() {
            answer.fill(Err(ParamError::BadName(name)));
            return;
        }
        if let Some(cause) = died {
            answer.fill(Err(ParamError::Died {
                name,
                cause: cause.clone(),
            }));
            return;
        }
        let timeout_us = u64::try_from(timeout.as_micros()).unwrap_or(u64::MAX);
        let skip = self.owed.count(&name, now);
        self.reads.push(ParamRead {
            skip,
            name,
            answer,
            sends: 0,
            next_send: now,
            deadline: Instant::from_micros(now.total_micros().saturating_add(timeout_us)),
            timeout,
        });
    }

    /// A decoded frame: if it is from the vehicle (`target_sysid`), a PARAM_VALUE answers the
    /// reads of its name and pays what was owed, and a PARAM_ERROR refuses them.
    pub fn on_frame(&mut self, now: Instant, frame: &Frame, target_sysid: u8) {
        if frame.header.sysid != target_sysid {
            return;
        }
        match &frame.msg {
            Msg::ParamValue(pv) => {
                self.answer(pv);
                if let Some(name) = param_name_of(pv) {
                    self.owed.paid(name, now);
                }
            }
            Msg::ParamError(pe) => self.refuse(pe),
            _ => {}
        }
    }

    /// A frame the driver sent (`frame`, as encoded): a PARAM_SET among them owes a
    /// PARAM_VALUE, which a later read must not take for its own.
    pub fn on_sent(&mut self, now: Instant, frame: &[u8]) {
        if let Some(name) = param_set_name(frame) {
            self.owed.sent(&name, now);
        }
    }

    /// End the reads whose time is up and send the requests that are due: each one encoded
    /// by `client` as the link's next frame and handed to `send` (the driver signs and sends
    /// it). Requests wait for the vehicle to be connected.
    pub fn service(&mut self, now: Instant, client: &mut HostClient, mut send: impl FnMut(&[u8])) {
        let mut buf = [0u8; MAX_FRAME_LEN];
        let connected = client.telemetry().connected();
        let mut i = 0;
        while i < self.reads.len() {
            let r = &self.reads[i];
            if now >= r.deadline || !r.answer.wanted() {
                let r = self.reads.swap_remove(i);
                r.answer.fill(Err(ParamError::Timeout {
                    name: r.name,
                    timeout: r.timeout,
                    sends: r.sends,
                }));
                continue;
            }
            if connected && now >= r.next_send {
                let tel = client.telemetry();
                // The name was checked when the read started.
                if let Ok(param_id) = wire::param_id(&r.name) {
                    let msg = mav::PARAM_REQUEST_READ_DATA {
                        param_index: -1,
                        target_system: tel.ids().target_sysid,
                        target_component: tel.target_compid(),
                        param_id,
                    };
                    if let Ok(n) = client.encode(&msg, &mut buf) {
                        send(&buf[..n]);
                        self.owed.sent(&self.reads[i].name, now);
                    }
                }
                if self.reads[i].sends > 0 {
                    self.owed.timed_out();
                }
                let retry_us = self.owed.retry_ms() * 1000;
                let r = &mut self.reads[i];
                r.sends += 1;
                r.next_send = Instant::from_micros(now.total_micros() + retry_us);
            }
            i += 1;
        }
    }

    /// When a read needs its driver next (a resend, or its timeout while the vehicle is not
    /// connected); `None` with no read in flight. Never already due once
    /// [`ParamReads::service`] ran at it.
    pub fn deadline(&self, connected: bool) -> Option<Instant> {
        self.reads
            .iter()
            .map(|r| if connected { r.due() } else { r.deadline })
            .min()
    }

    /// The link died: every read fails with `cause`.
    pub fn died(&mut self, cause: &DeathCause) {
        for r in self.reads.drain(..) {
            r.answer.fill(Err(ParamError::Died {
                name: r.name,
                cause: cause.clone(),
            }));
        }
    }

    /// The link closed: every read fails [`ParamError::Closed`].
    pub fn closed(&mut self) {
        for r in self.reads.drain(..) {
            r.answer.fill(Err(ParamError::Closed(r.name)));
        }
    }

    /// The parameter round trip measured so far (wall ms).
    pub fn rtt(&self) -> &RttEstimator {
        self.owed.rtt()
    }

    /// The resend timer of a read now (wall).
    pub fn retry(&self) -> Duration {
        Duration::from_millis(self.owed.retry_ms())
    }

    /// A PARAM_VALUE arrived: each read of that name skips it if it is owed to earlier
    /// traffic, else takes it.
    fn answer(&mut self, pv: &mav::PARAM_VALUE_DATA) {
        let Some(name) = param_name_of(pv) else {
            return;
        };
        let mut i = 0;
        while i < self.reads.len() {
            if self.reads[i].name != name {
                i += 1;
            } else if self.reads[i].skip > 0 {
                self.reads[i].skip -= 1;
                i += 1;
            } else {
                let r = self.reads.swap_remove(i);
                r.answer.fill(Ok(Param::from(pv)));
            }
        }
    }

    /// A PARAM_ERROR arrived: every read of that name fails at once with the vehicle's error
    /// (PX4 answers an unknown name or a wrong type so, and nothing else will come).
    fn refuse(&mut self, pe: &mav::PARAM_ERROR_DATA) {
        let Some(name) = param_error_name(pe) else {
            return;
        };
        let mut i = 0;
        while i < self.reads.len() {
            if self.reads[i].name == name {
                let r = self.reads.swap_remove(i);
                r.answer.fill(Err(ParamError::Refused {
                    name: r.name.clone(),
                    error: format!("{:?}", pe.error),
                }));
            } else {
                i += 1;
            }
        }
    }
}

/// The parameter a MAVLink 2 PARAM_SET frame sets; `None` for any other frame.
fn param_set_name(frame: &[u8]) -> Option<String> {
    use mavlink::MessageData;
    let id = <mav::PARAM_SET_DATA as MessageData>::ID;
    if frame.len() < 12 || frame[0] != MAGIC_V2 {
        return None;
    }
    let msgid = u32::from_le_bytes([frame[7], frame[8], frame[9], 0]);
    let len = frame[1] as usize;
    if msgid != id || frame.len() < 10 + len {
        return None;
    }
    let m = mav::PARAM_SET_DATA::deser(mavlink::MavlinkVersion::V2, &frame[10..10 + len]).ok()?;
    let name = m.param_id.to_str().ok()?;
    Some(name.trim_end_matches('\0').to_owned())
}

/// What a confirmed set's end means to its caller: what PX4 stored (with its index and
/// count), or why it was not stored. Both drivers' set-and-wait end so.
pub fn set_outcome(p: &ParamSetOutcome) -> Result<Param, ParamError> {
    let name = p.name.as_str().to_owned();
    match p.end {
        ParamSetEnd::Confirmed => {
            let (index, count) = p.index_count;
            Ok(Param {
                value: nexus_core::action::ParamValue::from_wire(p.bits, p.int32),
                param_type: if p.int32 {
                    mav::MavParamType::MAV_PARAM_TYPE_INT32
                } else {
                    mav::MavParamType::MAV_PARAM_TYPE_REAL32
                },
                index,
                count,
            })
        }
        ParamSetEnd::Refused { error } => Err(ParamError::Refused {
            name,
            error: format!("MAV_PARAM_ERROR_{}", mav_error_name(error)),
        }),
        ParamSetEnd::GaveUp { sends } => Err(ParamError::GaveUp { name, sends }),
    }
}

/// What a logged event means to a set of `name` that waits for its end: its outcome (the
/// machine's end for that name, or the link's death), or `None` for any other event. Both
/// drivers' set-and-wait read their logs through this.
pub fn set_end(ev: &LinkEvent, name: &str) -> Option<Result<Param, ParamError>> {
    match ev {
        LinkEvent::Offboard(OffboardEvent::ParamSet(p)) if p.name == name => Some(set_outcome(p)),
        LinkEvent::Died(cause) => Some(Err(ParamError::Died {
            name: name.to_owned(),
            cause: cause.clone(),
        })),
        _ => None,
    }
}

/// A set refused before it was sent: a bad name, or the machine's own reason.
pub fn set_not_sent(name: &str, why: nexus_core::offboard::OffboardError) -> ParamError {
    match why {
        nexus_core::offboard::OffboardError::BadParamName => ParamError::BadName(name.to_owned()),
        why => ParamError::NotSent {
            name: name.to_owned(),
            why,
        },
    }
}
