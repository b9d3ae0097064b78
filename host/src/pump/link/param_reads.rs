//! Parameter reads on the link: PARAM_REQUEST_READ sent and resent until the PARAM_VALUE
//! comes (skipping those owed to earlier requests), a PARAM_ERROR refuses, or the timeout.

use std::time::Duration;

use nexus_core::mav;
use nexus_core::msg::{Frame, Msg};
use nexus_core::offboard::wire;
use nexus_core::Instant;

use super::{LinkState, ParamSlot};
use crate::pump::params::{param_error_name, param_name_of, Owed, Param, ParamError, ParamRead};

/// A frame from the vehicle: a PARAM_VALUE or PARAM_ERROR answers the reads of its name.
pub(super) fn on_param_answer(
    params: &mut Vec<ParamRead>,
    owed: &mut Owed,
    now: Instant,
    frame: &Frame,
) {
    match &frame.msg {
        Msg::ParamValue(pv) => {
            answer_params(params, pv);
            if let Some(name) = param_name_of(pv) {
                owed.paid(name, now);
            }
        }
        Msg::ParamError(pe) => refuse_params(params, pe),
        _ => {}
    }
}

impl LinkState {
    /// Start reading parameter `name`; the answer (or the give-up) goes to `slot`.
    pub fn read_param(&mut self, now: Instant, name: String, timeout: Duration, slot: ParamSlot) {
        if wire::param_id(&name).is_err() {
            slot.fill(Err(ParamError::BadName(name)));
            return;
        }
        if let Some(cause) = &self.died {
            slot.fill(Err(ParamError::Died {
                name,
                cause: cause.clone(),
            }));
            return;
        }
        let timeout_us = u64::try_from(timeout.as_micros()).unwrap_or(u64::MAX);
        let skip = self.owed.count(&name, now);
        self.params.push(ParamRead {
            skip,
            name,
            slot,
            sends: 0,
            next_send: now,
            deadline: Instant::from_micros(now.total_micros().saturating_add(timeout_us)),
            timeout,
        });
        self.service_params(now);
    }

    pub(super) fn service_params(&mut self, now: Instant) {
        let connected = self.client.telemetry().connected();
        let mut i = 0;
        while i < self.params.len() {
            if now >= self.params[i].deadline {
                let p = self.params.swap_remove(i);
                p.slot.fill(Err(ParamError::Timeout {
                    name: p.name,
                    timeout: p.timeout,
                    sends: p.sends,
                }));
                continue;
            }
            if connected && now >= self.params[i].next_send {
                let tel = self.client.telemetry();
                // The name was checked when the read was lodged.
                if let Ok(param_id) = wire::param_id(&self.params[i].name) {
                    let msg = mav::PARAM_REQUEST_READ_DATA {
                        param_index: -1,
                        target_system: tel.ids().target_sysid,
                        target_component: tel.target_compid(),
                        param_id,
                    };
                    if let Ok(n) = self.client.encode(&msg, &mut self.tx) {
                        // Signed like every other frame: a vehicle enforcing signing drops
                        // an unsigned read.
                        let n = self.sign(now, n);
                        self.send(n);
                        self.owed.sent(&self.params[i].name, now);
                    }
                }
                if self.params[i].sends > 0 {
                    self.owed.timed_out();
                }
                let p = &mut self.params[i];
                p.sends += 1;
                p.next_send =
                    Instant::from_micros(now.total_micros() + self.owed.retry_ms() * 1000);
            }
            i += 1;
        }
    }
}

/// A PARAM_VALUE arrived: each read of that name skips it if it is owed to earlier traffic,
/// else takes it.
fn answer_params(params: &mut Vec<ParamRead>, pv: &mav::PARAM_VALUE_DATA) {
    let mut i = 0;
    while i < params.len() {
        if !params[i].matches(pv) {
            i += 1;
        } else if params[i].skip > 0 {
            params[i].skip -= 1;
            i += 1;
        } else {
            let p = params.swap_remove(i);
            p.slot.fill(Ok(Param::from(pv)));
        }
    }
}

/// A PARAM_ERROR arrived: every read of that name fails at once with the vehicle's error
/// (PX4 answers an unknown name or a wrong type so, and nothing else will come).
fn refuse_params(params: &mut Vec<ParamRead>, pe: &mav::PARAM_ERROR_DATA) {
    let Some(name) = param_error_name(pe) else {
        return;
    };
    let mut i = 0;
    while i < params.len() {
        if params[i].name == name {
            let p = params.swap_remove(i);
            p.slot.fill(Err(ParamError::Refused {
                name: p.name.clone(),
                error: format!("{:?}", pe.error),
            }));
        } else {
            i += 1;
        }
    }
}
