//! The link's timers and its end: the watchdog, the probe, a death (every wait ends `died`)
//! and a close (every wait ends `closed`).

use nexus_core::Instant;

use super::LinkState;
use crate::launcher::DeathCause;
use crate::pump::status::LinkEvent;
use crate::pump::supervise::PROBE_PERIOD_MS;

impl LinkState {
    /// When this link needs the pump if nothing arrives: the client's timers (streams,
    /// retries, the link's supervision), the probe, parameter reads. None is ever already due
    /// once [`LinkState::on_timer`] ran at it (a read waits for the vehicle to connect before
    /// it sends).
    pub fn deadline(&self) -> Option<Instant> {
        let mut d = self.client.next_deadline();
        let mut take = |x: Instant| d = Some(d.map_or(x, |d| d.min(x)));
        if self.died.is_none() && self.probe_polled {
            take(self.next_probe);
        }
        let connected = self.client.telemetry().connected();
        if let Some(p) = self.params.deadline(connected) {
            take(p);
        }
        d
    }

    /// Timers: streams, retries and the link's supervision (the client's), the probe,
    /// parameter reads.
    pub fn on_timer(&mut self, now: Instant) {
        self.counters.timer_wakes += 1;
        self.transmit(now);
        if self.probe_polled && self.died.is_none() && now >= self.next_probe {
            self.next_probe = Instant::from_micros(now.total_micros() + PROBE_PERIOD_MS * 1000);
            self.check_probe(now);
        }
        self.service_params(now);
        self.after_batch(now);
    }

    /// The client reported silence or a standing clock: the vehicle is dead (the probe may
    /// know a better cause, a process that exited).
    pub(super) fn on_stall(&mut self, now: Instant, cause: DeathCause) {
        if self.died.is_some() {
            return;
        }
        let cause = match &self.probe {
            Some(p) => p.declare_dead(cause),
            None => cause,
        };
        self.die(now, cause);
    }

    /// The pump was woken: a probe that wakes it (rather than being polled) may have news.
    pub fn on_wake(&mut self, now: Instant) {
        if self.probe.is_some() && !self.probe_polled {
            self.check_probe(now);
        }
    }

    /// Ask the probe whether the vehicle died (on its waker, or every probe period).
    pub(super) fn check_probe(&mut self, now: Instant) {
        if self.died.is_some() {
            return;
        }
        if let Some(cause) = self.probe.as_ref().and_then(|p| p.death()) {
            self.die(now, cause);
            self.after_batch(now);
        }
    }

    /// The vehicle or link is dead: every wait ends `died` with `reason`, now and from now on.
    pub fn die(&mut self, now: Instant, cause: DeathCause) {
        if self.died.is_some() {
            return;
        }
        self.client.died(now, &cause.to_string());
        self.params.died(&cause);
        self.shared.events().push(LinkEvent::Died(cause.clone()));
        self.died = Some(cause);
    }

    /// The pump came back `late_us` after its sleep should have ended: see
    /// [`nexus_core::Client::after_pause`].
    pub fn on_late(&mut self, now: Instant, late_us: u64) {
        self.client
            .after_pause(now, nexus_core::Duration::from_micros(late_us));
    }

    /// A lockstep vehicle is about to be stepped: silence until now was expected.
    pub fn rearm_watchdog(&mut self, now: Instant) {
        self.client.rearm_supervision(now);
    }

    /// The link is closing: waits end `closed`, a program `aborted`, reads fail.
    pub fn close(&mut self, now: Instant) {
        self.client.close(now);
        self.params.closed();
        self.after_batch(now);
        self.shared.status().closed = true;
    }
}
