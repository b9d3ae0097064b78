//! Waits and programs: registering them with the core client, a caller's cap or cancel.

use nexus_core::client::ClientError;
use nexus_core::engine::{Program, ProgramEnd, Wait, WaitId};
use nexus_core::Instant;

use super::{LinkState, ProgramSlot, WaitEntry, WaitSlot, WhySlot};
use crate::pump::status::ProgramReport;
use crate::pump::STEPS;

impl LinkState {
    /// Register a wait; one that is decided now (or on a dead link) settles at once.
    pub fn register(
        &mut self,
        now: Instant,
        wait: &Wait,
        slot: WaitSlot,
        why: WhySlot,
    ) -> Result<WaitId, ClientError> {
        let id = self.client.wait(now, wait)?;
        self.waits.insert(
            id,
            WaitEntry {
                slot,
                why,
                wait: Box::new(wait.clone()),
            },
        );
        if let Some(cause) = &self.died {
            self.client.died(now, &cause.to_string());
        }
        self.transmit(now);
        self.after_batch(now);
        Ok(id)
    }

    /// The caller's wall-clock cap came first: end the wait with `cap` unless it settled.
    pub fn cap(&mut self, now: Instant, id: WaitId) {
        if let Ok(result) = self.client.cap(now, id) {
            if let Some(e) = self.waits.remove(&id) {
                e.slot.fill(result);
            }
        }
        self.after_batch(now);
    }

    /// The caller gave up on the wait (dropped it): free its slot in the engine.
    pub fn cancel(&mut self, now: Instant, id: WaitId) {
        self.waits.remove(&id);
        let _ = self.client.abort_wait(now, id);
        self.after_batch(now);
    }

    /// Start a step program.
    pub fn start_program(
        &mut self,
        now: Instant,
        program: Program<STEPS>,
        slot: ProgramSlot,
    ) -> Result<(), ClientError> {
        self.client.start_program(now, program)?;
        if let Some(old) = self.program.replace(slot) {
            // Cannot happen (the runner refuses a second program); never leave a caller hanging.
            old.fill(self.report(ProgramEnd::Aborted { step: 0 }));
        }
        if let Some(cause) = &self.died {
            self.client.died(now, &cause.to_string());
        }
        self.transmit(now);
        self.after_batch(now);
        Ok(())
    }

    pub(super) fn report(&self, end: ProgramEnd) -> ProgramReport {
        let runner = self.client.program();
        ProgramReport {
            end,
            records: runner.records().to_vec(),
            error: runner.error().map(str::to_owned),
        }
    }
}
