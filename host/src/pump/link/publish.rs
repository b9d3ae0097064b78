//! After each batch: the client's events routed (settled waits to their callers, speed
//! factors to the vehicle, the rest to the event log) and the status published before any
//! waiting caller is woken.

use crate::launcher::DeathCause;
use nexus_core::client::Event;
use nexus_core::engine::WaitResult;
use nexus_core::Instant;

use super::{LinkState, ProgramSlot, WaitSlot};
use crate::pump::status::{LinkEvent, ProgramReport, NO_SPEED_CONTROL};
use crate::sync::lock;

impl LinkState {
    /// Route the client's events and publish the status; wake waiting callers last.
    pub fn after_batch(&mut self, now: Instant) {
        let (st, wall) = (self.client.rx_stats().framer, std::time::Instant::now());
        let (frames, lost) = (st.seq_frames as u64, st.seq_lost as u64);
        let slow = self
            .slow
            .observe(wall, frames, lost, self.counters.rx_bytes);
        self.on_slow_link(slow);
        let mut settled: Vec<(WaitSlot, WaitResult)> = Vec::new();
        let mut program_done: Option<(ProgramSlot, ProgramReport)> = None;
        let mut log: Vec<LinkEvent> = Vec::new();
        while let Some(ev) = self.client.poll_event() {
            match ev {
                Event::Settled { id, result } => {
                    if let Some(e) = self.waits.remove(&id) {
                        // In the tick it settled, before more frames: what was outstanding then.
                        if let Some(why) = self.client.explain(now, &e.wait, &result) {
                            *lock(&e.why) = Some(why.to_string());
                        }
                        settled.push((e.slot, result));
                    }
                }
                Event::Speedup(factor) => {
                    let error = match &self.probe {
                        Some(p) => p.set_speed(factor).err(),
                        None => Some(NO_SPEED_CONTROL.into()),
                    };
                    log.push(LinkEvent::Speedup { factor, error });
                }
                Event::Step {
                    step,
                    passed,
                    reason,
                } => log.push(LinkEvent::step(&self.client, now, step, passed, reason)),
                Event::ProgramFinished(end) => {
                    log.push(LinkEvent::ProgramFinished(end));
                    if let Some(slot) = self.program.take() {
                        program_done = Some((slot, self.report(end)));
                    }
                }
                Event::Offboard(e) => log.push(LinkEvent::Offboard(e)),
                Event::Silent { silent } => {
                    let silent = crate::pump::std_duration(silent);
                    self.on_stall(now, DeathCause::LinkSilent { silent });
                }
                Event::ClockStalled { stalled } => {
                    let stalled = crate::pump::std_duration(stalled);
                    self.on_stall(now, DeathCause::ClockStalled { stalled });
                }
                // News of a newer core this link does not route yet.
                _ => {}
            }
        }
        if !log.is_empty() {
            let mut events = self.shared.events();
            for e in log {
                events.push(e);
            }
        }
        self.publish();
        for (slot, result) in settled {
            slot.fill(result);
        }
        if let Some((slot, report)) = program_done {
            slot.fill(report);
        }
    }

    pub(super) fn publish(&mut self) {
        self.generation += 1;
        let c = &self.client;
        let tel = c.telemetry();
        let ob = c.offboard();
        let (_, program_lost) = c.counters();
        self.counters.events_lost = ob.events_lost() as u64 + program_lost as u64;
        let rx = c.rx_stats();
        // Frames of messages the client does not read are passed over, not returned.
        self.counters.frames = u64::from(rx.framer.frames) + u64::from(rx.framer.skipped);
        self.counters.accepted = u64::from(tel.counts().0);
        self.counters.decode_errors = u64::from(rx.malformed);
        self.counters.crc_errors = u64::from(rx.framer.crc_errors);
        self.counters.dropped_bytes = u64::from(rx.framer.dropped_bytes);
        self.counters.signing = self.signing.as_ref().map(|s| s.stats());
        let mut s = self.shared.status();
        if s.died.is_none() {
            s.died.clone_from(&self.died);
        }
        s.observe(c);
        s.counters = self.counters;
        s.rtt = crate::pump::status::LinkRtt::of(ob, self.params.rtt(), self.params.retry());
        s.peer = self.link.peer();
        s.last_rx = self.last_rx_wall;
        s.generation = self.generation;
        if let Some(f) = self.link.foreign() {
            if s.foreign.datagrams() != f.datagrams()
                || s.foreign.peer_before_latch != f.peer_before_latch
            {
                s.foreign.clone_from(f);
            }
        }
    }
}
