//! Parameter reads on the pump's links: the link's [`ParamReads`] machine, its answers in
//! slots a user thread blocks on, its requests signed and sent as every other frame.

use std::time::Duration;

use nexus_core::Instant;

use super::{LinkState, ParamSlot};
use crate::pump::param_reads::ParamAnswer;
use crate::pump::params::{Param, ParamError};

impl ParamAnswer for ParamSlot {
    fn fill(self, answer: Result<Param, ParamError>) {
        crate::pump::slot::Slot::fill(&self, answer);
    }
}

impl LinkState {
    /// Start reading parameter `name`; the answer (or the give-up) goes to `slot`.
    pub fn read_param(&mut self, now: Instant, name: String, timeout: Duration, slot: ParamSlot) {
        self.params
            .start(now, name, timeout, slot, self.died.as_ref());
        self.service_params(now);
    }

    /// Time out the reads that are over and send the requests that are due.
    pub(super) fn service_params(&mut self, now: Instant) {
        let mut due: Vec<Vec<u8>> = Vec::new();
        self.params
            .service(now, &mut self.client, |frame| due.push(frame.to_vec()));
        for frame in due {
            self.tx[..frame.len()].copy_from_slice(&frame);
            // Signed like every other frame: a vehicle enforcing signing drops an unsigned read.
            let n = self.sign(now, frame.len());
            self.send(n);
        }
    }
}
