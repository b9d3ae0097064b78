//! One link on the pump thread: the transport, the framer, the core [`Client`] and everything
//! that routes the client's news to the user threads waiting for it.
//!
//! Per readable datagram (or stream read): bytes → `Decoder::feed` → one `Client::handle` per
//! frame → `poll_transmit` until `None`, each frame sent at once (a reaction's command leaves
//! in the tick its condition was met) → after the batch, `poll_event` routed (settled waits to
//! their callers, speed factors to the vehicle, the rest to the event log) and the status
//! published *before* any waiting caller is woken, so what a caller reads after its wait
//! returns is at least as new as the settle.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use nexus_core::client::{ClientConfig, ClientError as CoreClientError, Event};
use nexus_core::engine::{Program, ProgramEnd, Reason, SnapshotAt, Wait, WaitId, WaitResult};
use nexus_core::frame::{Decoder, MAX_FRAME_LEN};
use nexus_core::mav;
use nexus_core::msg::{Frame, Msg};
use nexus_core::offboard::wire;
use nexus_core::telemetry::error_text;
use nexus_core::{Client, Instant};

use super::params::{
    param_error_name, param_name_of, Owed, ParamError, ParamRead, ParamValue, PARAM_RETRY_MS,
};
use super::slot::Slot;
use super::status::{EventLog, LinkEvent, LinkStatus, ProgramReport};
use super::supervise::{Supervision, VehicleProbe, Watchdog, PROBE_PERIOD_MS};
use super::{HostClient, STEPS};
use crate::transport::{ConnString, Link, SendOutcome};

/// What user threads read without asking the pump: the status and the event log.
#[derive(Debug)]
pub(crate) struct LinkShared {
    pub conn: ConnString,
    pub local_addr: Option<std::net::SocketAddr>,
    pub status: Mutex<LinkStatus>,
    pub events: Mutex<EventLog>,
}

impl LinkShared {
    pub fn status(&self) -> MutexGuard<'_, LinkStatus> {
        self.status.lock().unwrap_or_else(|p| p.into_inner())
    }
    pub fn events(&self) -> MutexGuard<'_, EventLog> {
        self.events.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A wait's one result.
pub(crate) type WaitSlot = Arc<Slot<WaitResult>>;
/// Why a wait ended without its condition, in words; written before its result is filled.
pub(crate) type WhySlot = Arc<Mutex<Option<String>>>;

/// A registered wait: where its result goes, what it waits for (to explain a failure), and
/// where the explanation goes.
struct WaitEntry {
    slot: WaitSlot,
    why: WhySlot,
    wait: Box<Wait>,
}
/// A program's one report.
pub(crate) type ProgramSlot = Arc<Slot<ProgramReport>>;
/// A parameter read's one answer.
pub(crate) type ParamSlot = Arc<Slot<Result<ParamValue, ParamError>>>;

/// The pump thread's side of one link.
pub(crate) struct LinkState {
    link: Link,
    decoder: Decoder,
    pub client: Box<HostClient>,
    pub shared: Arc<LinkShared>,
    probe: Option<Arc<dyn VehicleProbe>>,
    probe_polled: bool,
    next_probe: Instant,
    watchdog: Watchdog,
    waits: HashMap<WaitId, WaitEntry>,
    program: Option<ProgramSlot>,
    params: Vec<ParamRead>,
    owed: Owed,
    epoch: u64,
    counters: super::status::LinkCounters,
    died: Option<String>,
    /// A read error: the link is gone (a stream closed, a device hung up); never read again.
    broken: bool,
    generation: u64,
    last_rx_wall: Option<std::time::Instant>,
    tx: [u8; MAX_FRAME_LEN],
    foreign: ForeignSeen,
    /// Who asked for which message ids ([`super::LinkHandle::subscribe`]).
    pub(crate) subs: Subscribers,
    tlog: Option<crate::tlog::Tlog>,
    slow: super::slow_link::LossMonitor,
}

/// What the pump has told about the link's foreign traffic (see [`LinkEvent::Ignored`]).
#[derive(Debug, Default)]
struct ForeignSeen {
    /// Foreign datagrams (and the peer's before its latch) at the last look, and whether
    /// the peer was known then.
    looked: (u64, bool),
    /// Sources announced; at most the first sources plus the one that became the peer.
    announced: Vec<std::net::SocketAddr>,
    others_announced: bool,
}

impl LinkState {
    pub fn new(
        link: Link,
        config: ClientConfig,
        supervision: Supervision,
        shared: Arc<LinkShared>,
        waker: &Arc<mio::Waker>,
    ) -> Self {
        let probe_polled = supervision
            .probe
            .as_ref()
            .is_some_and(|p| !p.add_waker(Arc::clone(waker)));
        let watchdog = Watchdog::new(
            supervision
                .stall_s
                .filter(|_| supervision.probe.as_ref().is_none_or(|p| p.free_running())),
        );
        // Loss detection, except on a vehicle we started (loopback: see slow_link.rs).
        let slow = super::slow_link::LossMonitor::new(supervision.probe.is_none());
        LinkState {
            slow,
            epoch: link.peer_epoch(),
            link,
            decoder: link_decoder(supervision.tlog.is_some()),
            client: Box::new(Client::new(config)),
            shared,
            probe: supervision.probe,
            probe_polled,
            next_probe: Instant::ZERO,
            watchdog,
            waits: HashMap::new(),
            program: None,
            params: Vec::new(),
            owed: Owed::default(),
            counters: Default::default(),
            died: None,
            broken: false,
            generation: 0,
            last_rx_wall: None,
            tx: [0; MAX_FRAME_LEN],
            foreign: ForeignSeen::default(),
            subs: Vec::new(),
            tlog: supervision.tlog,
        }
    }

    pub fn link_mut(&mut self) -> &mut Link {
        &mut self.link
    }

    /// Read up to `budget` datagrams (or stream reads); true if more may be waiting.
    pub fn on_readable(&mut self, now: Instant, buf: &mut [u8], budget: usize) -> bool {
        if self.broken {
            return false;
        }
        let mut got = false;
        let mut more = true;
        for _ in 0..budget {
            match self.link.recv(buf) {
                // 0: the link set foreign datagrams aside and may have more.
                Ok(Some(0)) => {}
                Ok(Some(n)) => {
                    got = true;
                    self.on_bytes(now, &buf[..n]);
                }
                Ok(None) => {
                    more = false;
                    break;
                }
                Err(e) => {
                    self.broken = true;
                    more = false;
                    self.die(now, format!("link lost: {e}"));
                    break;
                }
            }
        }
        let _ = self.link.flush();
        if self.note_foreign() || got {
            self.after_batch(now);
        }
        more
    }

    /// Foreign traffic since the last look: announce each new source once the vehicle's
    /// address is known (before, a source may yet turn out to be the vehicle). True if there
    /// is news to publish.
    fn note_foreign(&mut self) -> bool {
        let Some(f) = self.link.foreign() else {
            return false;
        };
        let look = (
            f.datagrams() + f.peer_before_latch,
            self.link.peer().is_some(),
        );
        if look == self.foreign.looked {
            return false;
        }
        self.foreign.looked = look;
        if look.1 {
            let seen = &mut self.foreign;
            let mut events = self.shared.events();
            for s in &f.sources {
                if !seen.announced.contains(&s.addr) {
                    seen.announced.push(s.addr);
                    events.push(LinkEvent::Ignored(Some(*s)));
                }
            }
            if f.others.datagrams > 0 && !seen.others_announced {
                seen.others_announced = true;
                events.push(LinkEvent::Ignored(None));
            }
        }
        true
    }

    fn on_bytes(&mut self, now: Instant, mut input: &[u8]) {
        let epoch = self.link.peer_epoch();
        if epoch != self.epoch {
            // A new peer starts a new byte stream: a half frame from the old one is garbage.
            self.epoch = epoch;
            self.decoder = link_decoder(self.tlog.is_some() || !self.subs.is_empty());
            self.counters.peer_changes += 1;
            let peer = self.link.peer();
            self.shared.events().push(LinkEvent::PeerChanged(peer));
        }
        self.counters.rx_reads += 1;
        self.counters.rx_bytes += input.len() as u64;
        let mut accepted = false;
        let skipped_before = self.decoder.stats().skipped;
        loop {
            let (used, raw) = self.decoder.feed(input);
            input = &input[used..];
            let Some(raw) = raw else { break };
            self.counters.frames += 1;
            if !self.subs.is_empty() {
                let sysid = self.client.telemetry().ids().target_sysid;
                deliver(&mut self.subs, sysid, &raw);
            }
            if let Some(t) = &self.tlog {
                t.record(crate::tlog::Direction::Received, raw.bytes);
            }
            match Frame::decode(&raw) {
                Ok(Some(frame)) => {
                    if let Msg::ParamValue(pv) = &frame.msg {
                        if frame.header.sysid == self.client.telemetry().ids().target_sysid {
                            answer_params(&mut self.params, pv);
                            if let Some(name) = param_name_of(pv) {
                                self.owed.paid(name);
                            }
                        }
                    }
                    if let Msg::ParamError(pe) = &frame.msg {
                        if frame.header.sysid == self.client.telemetry().ids().target_sysid {
                            refuse_params(&mut self.params, pe);
                        }
                    }
                    if self.client.handle(now, &frame) {
                        self.counters.accepted += 1;
                        accepted = true;
                    }
                }
                Ok(None) => {}
                Err(_) => self.counters.decode_errors += 1,
            }
        }
        let stats = self.decoder.stats();
        // Frames of messages the client does not read are passed over, not returned.
        self.counters.frames += stats.skipped.wrapping_sub(skipped_before) as u64;
        self.counters.crc_errors = stats.crc_errors as u64;
        self.counters.dropped_bytes = stats.dropped_bytes as u64;
        if accepted {
            self.watchdog.on_rx(now, self.client.telemetry().sim_ms());
            self.last_rx_wall = Some(std::time::Instant::now());
        }
        self.transmit(now);
    }

    /// Hand on every checked frame from now on, not only those the core reads (a subscriber
    /// may want any message).
    pub fn read_every_frame(&mut self) {
        self.decoder.set_reads(None);
    }

    /// Send everything the client has due now, each frame as it is encoded.
    pub fn transmit(&mut self, now: Instant) {
        while let Some(n) = self.client.poll_transmit(now, &mut self.tx) {
            self.note_param_set(now, n);
            self.send(n);
        }
    }

    /// A PARAM_SET the offboard machine sends is answered by a PARAM_VALUE: note it owed.
    fn note_param_set(&mut self, now: Instant, n: usize) {
        let frame = &self.tx[..n];
        let id = <mav::PARAM_SET_DATA as mavlink::MessageData>::ID;
        if n < 12 || frame[0] != nexus_core::frame::MAGIC_V2 {
            return;
        }
        let msgid = u32::from_le_bytes([frame[7], frame[8], frame[9], 0]);
        let len = frame[1] as usize;
        if msgid != id || n < 10 + len {
            return;
        }
        let payload = &frame[10..10 + len];
        if let Ok(m) = <mav::PARAM_SET_DATA as mavlink::MessageData>::deser(
            mavlink::MavlinkVersion::V2,
            payload,
        ) {
            if let Ok(name) = m.param_id.to_str() {
                self.owed.sent(name.trim_end_matches('\0'), now);
            }
        }
    }

    /// Encode `msg` as the link's next frame and send it (a message the core does not send
    /// itself); whether it was encoded.
    pub(crate) fn send_message<M: mavlink::MessageData>(&mut self, msg: &M) -> bool {
        match self.client.encode(msg, &mut self.tx) {
            Ok(n) => {
                self.send(n);
                true
            }
            Err(_) => false,
        }
    }

    fn send(&mut self, n: usize) {
        // MAVLink 2: the message id is bytes 7–9, little-endian (v1: byte 5).
        let msgid = match self.tx[..n] {
            [0xFD, _, _, _, _, _, _, a, b, c, ..] => u32::from_le_bytes([a, b, c, 0]),
            [0xFE, _, _, _, _, m, ..] => u32::from(m),
            _ => u32::MAX,
        };
        self.counters.tx_requests.count(msgid);
        match self.link.send(&self.tx[..n]) {
            Ok(SendOutcome::Sent) | Ok(SendOutcome::Queued) => {
                self.counters.tx_frames += 1;
                if let Some(t) = &self.tlog {
                    t.record(crate::tlog::Direction::Sent, &self.tx[..n]);
                }
            }
            Ok(SendOutcome::NoPeer) => self.counters.tx_no_peer += 1,
            Ok(SendOutcome::Dropped) => self.counters.tx_dropped += 1,
            // UDP: an ICMP error from an earlier datagram (the vehicle's port closed). The
            // watchdog and the probe tell whether the vehicle is gone.
            Err(_) => self.counters.tx_dropped += 1,
        }
    }

    /// When this link needs the pump if nothing arrives.
    pub fn deadline(&self) -> Option<Instant> {
        let mut d = self.client.next_deadline();
        let mut take = |x: Option<Instant>| {
            if let Some(x) = x {
                d = Some(d.map_or(x, |d| d.min(x)));
            }
        };
        if self.died.is_none() {
            take(self.watchdog.deadline());
            if self.probe_polled {
                take(Some(self.next_probe));
            }
        }
        for p in &self.params {
            take(Some(p.due()));
        }
        d
    }

    /// Timers: streams and retries, the watchdog, the probe, parameter reads.
    pub fn on_timer(&mut self, now: Instant) {
        self.transmit(now);
        if self.died.is_none() {
            if let Some(cause) = self.watchdog.check(now) {
                let reason = match &self.probe {
                    Some(p) => p.declare_dead(cause),
                    None => cause.to_string(),
                };
                self.die(now, reason);
            }
        }
        if self.probe_polled && self.died.is_none() && now >= self.next_probe {
            self.next_probe = Instant::from_micros(now.total_micros() + PROBE_PERIOD_MS * 1000);
            self.check_probe(now);
        }
        self.service_params(now);
        self.after_batch(now);
    }

    /// The pump was woken: a probe that wakes it (rather than being polled) may have news.
    pub fn on_wake(&mut self, now: Instant) {
        if self.probe.is_some() && !self.probe_polled {
            self.check_probe(now);
        }
    }

    /// Ask the probe whether the vehicle died (on its waker, or every probe period).
    fn check_probe(&mut self, now: Instant) {
        if self.died.is_some() {
            return;
        }
        if let Some(reason) = self.probe.as_ref().and_then(|p| p.death()) {
            self.die(now, reason);
            self.after_batch(now);
        }
    }

    /// The vehicle or link is dead: every wait ends `died` with `reason`, now and from now on.
    pub fn die(&mut self, now: Instant, reason: String) {
        if self.died.is_some() {
            return;
        }
        self.client.died(now, &reason);
        for p in self.params.drain(..) {
            p.slot.fill(Err(ParamError::Died {
                name: p.name,
                reason: reason.clone(),
            }));
        }
        self.shared.events().push(LinkEvent::Died(reason.clone()));
        self.died = Some(reason);
    }

    /// The pump came back `late_us` after its sleep should have ended: see
    /// [`Watchdog::on_late`].
    pub fn on_late(&mut self, now: Instant, late_us: u64) {
        self.watchdog.on_late(now, late_us);
    }

    /// A lockstep vehicle is about to be stepped: silence until now was expected.
    pub fn rearm_watchdog(&mut self, now: Instant) {
        self.watchdog.rearm(now);
    }

    /// Register a wait; one that is decided now (or on a dead link) settles at once.
    pub fn register(
        &mut self,
        now: Instant,
        wait: &Wait,
        slot: WaitSlot,
        why: WhySlot,
    ) -> Result<WaitId, CoreClientError> {
        let id = self.client.wait(now, wait)?;
        self.waits.insert(
            id,
            WaitEntry {
                slot,
                why,
                wait: Box::new(wait.clone()),
            },
        );
        if let Some(reason) = self.died.clone() {
            self.client.died(now, &reason);
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
    ) -> Result<(), CoreClientError> {
        self.client.start_program(now, program)?;
        if let Some(old) = self.program.replace(slot) {
            // Cannot happen (the runner refuses a second program); never leave a caller hanging.
            old.fill(self.report(ProgramEnd::Aborted { step: 0 }));
        }
        if let Some(reason) = self.died.clone() {
            self.client.died(now, &reason);
        }
        self.transmit(now);
        self.after_batch(now);
        Ok(())
    }

    /// Start reading parameter `name`; the answer (or the give-up) goes to `slot`.
    pub fn read_param(&mut self, now: Instant, name: String, timeout_s: f32, slot: ParamSlot) {
        if wire::param_id(&name).is_err() {
            slot.fill(Err(ParamError::BadName(name)));
            return;
        }
        if let Some(reason) = &self.died {
            slot.fill(Err(ParamError::Died {
                name,
                reason: reason.clone(),
            }));
            return;
        }
        let timeout_us = (timeout_s.max(0.0) as f64 * 1e6) as u64;
        let skip = self.owed.count(&name, now);
        self.params.push(ParamRead {
            skip,
            name,
            slot,
            sends: 0,
            next_send: now,
            deadline: Instant::from_micros(now.total_micros() + timeout_us),
            timeout_s,
        });
        self.service_params(now);
    }

    fn service_params(&mut self, now: Instant) {
        let connected = self.client.telemetry().connected();
        let mut i = 0;
        while i < self.params.len() {
            if now >= self.params[i].deadline {
                let p = self.params.swap_remove(i);
                p.slot.fill(Err(ParamError::Timeout {
                    name: p.name,
                    timeout_s: p.timeout_s,
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
                        self.send(n);
                        self.owed.sent(&self.params[i].name, now);
                    }
                }
                let p = &mut self.params[i];
                p.sends += 1;
                p.next_send = Instant::from_micros(now.total_micros() + PARAM_RETRY_MS * 1000);
            }
            i += 1;
        }
    }

    fn report(&self, end: ProgramEnd) -> ProgramReport {
        let runner = self.client.program();
        ProgramReport {
            end,
            records: runner.records().to_vec(),
            error: runner.error().map(str::to_owned),
        }
    }

    /// Route the client's events and publish the status; wake waiting callers last.
    pub fn after_batch(&mut self, now: Instant) {
        let (st, wall) = (self.decoder.stats(), std::time::Instant::now());
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
                            *e.why.lock().unwrap_or_else(|p| p.into_inner()) =
                                Some(why.to_string());
                        }
                        settled.push((e.slot, result));
                    }
                }
                Event::Speedup(factor) => {
                    let error = match &self.probe {
                        Some(p) => p.set_speed(factor).err(),
                        None => Some("this link has no vehicle whose speed can change".into()),
                    };
                    log.push(LinkEvent::Speedup { factor, error });
                }
                Event::Step {
                    step,
                    passed,
                    reason,
                } => log.push(LinkEvent::Step {
                    step,
                    passed,
                    reason,
                    explanation: (!passed)
                        .then(|| self.client.explain_step(now, step))
                        .flatten()
                        .map(|e| e.to_string()),
                }),
                Event::ProgramFinished(end) => {
                    log.push(LinkEvent::ProgramFinished(end));
                    if let Some(slot) = self.program.take() {
                        program_done = Some((slot, self.report(end)));
                    }
                }
                Event::Offboard(e) => log.push(LinkEvent::Offboard(e)),
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

    fn publish(&mut self) {
        self.generation += 1;
        let c = &self.client;
        let tel = c.telemetry();
        let ob = c.offboard();
        let (_, program_lost) = c.counters();
        self.counters.events_lost = ob.events_lost() as u64 + program_lost as u64;
        let mut snapshot = c.snapshot();
        if let Some(r) = &self.died {
            snapshot.error = Some(error_text(r));
        }
        let mut s = self.shared.status();
        s.connected = tel.connected();
        s.armed = ob.is_armed(tel);
        s.mode = tel.mode();
        s.at_target = ob.at_target(tel);
        s.landed_state = tel.landed_state();
        s.airborne_seen |= matches!(
            s.landed_state,
            nexus_core::LandedState::InAir | nexus_core::LandedState::TakingOff
        );
        s.landed = tel.landed();
        s.relative_alt_m = tel.relative_alt_m();
        s.vitals = super::status::Vitals::from_telemetry(tel);
        s.sim_ms = tel.sim_ms();
        s.mission = super::status::MissionStatus {
            count: ob.mission_count(),
            uploaded: ob.mission_uploaded(),
            ack: ob.mission_ack(),
            opaque_id: ob.mission_opaque_id(),
            reached: ob.mission_reached(),
            current: ob.mission_current(),
            complete: ob.mission_complete(),
            transfer_in_flight: ob.pending().transfer,
        };
        s.pending = ob.pending();
        s.snapshot = snapshot;
        if s.last_refusal.as_ref() != ob.last_refusal() {
            s.last_refusal = ob.last_refusal().cloned();
        }
        s.counters = self.counters;
        s.peer = self.link.peer();
        if s.died.is_none() {
            s.died.clone_from(&self.died);
        }
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

    /// The link is closing: waits end `closed`, a program `aborted`, reads fail.
    pub fn close(&mut self, now: Instant) {
        self.client.close(now);
        for p in self.params.drain(..) {
            p.slot.fill(Err(ParamError::Closed(p.name)));
        }
        self.after_batch(now);
        self.shared.status().closed = true;
    }
}

/// The link's framer: one that skips frames the core does not read (the cheap path), unless a
/// tlog records the link — a tlog holds every frame the vehicle sent, so then every frame is
/// checked and handed on.
fn link_decoder(recording: bool) -> Decoder {
    if recording {
        Decoder::new()
    } else {
        Decoder::skipping(nexus_core::msg::is_decoded)
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
            p.slot.fill(Ok(ParamValue::from(pv)));
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

impl Drop for LinkState {
    /// Never leave a caller hanging: if the link goes without [`LinkState::close`] (the pump
    /// thread unwinding), whatever is still pending ends `closed`.
    fn drop(&mut self) {
        let snapshot = self.client.snapshot();
        for (_, WaitEntry { slot, .. }) in self.waits.drain() {
            slot.fill(WaitResult {
                satisfied: false,
                reason: Reason::Closed,
                waited_sim_s: 0.0,
                waited_wall_s: 0.0,
                snapshot_at: SnapshotAt::Return,
                snapshot: snapshot.clone(),
                guard: None,
            });
        }
        if let Some(slot) = self.program.take() {
            slot.fill(ProgramReport {
                end: ProgramEnd::Aborted { step: 0 },
                records: self.client.program().records().to_vec(),
                error: Some("the pump stopped".into()),
            });
        }
        for p in self.params.drain(..) {
            p.slot.fill(Err(ParamError::Closed(p.name)));
        }
        self.shared.status().closed = true;
    }
}

/// Hand a frame from the vehicle to the subscribers of its id, decoded by mavlink's full
/// parse (any common-dialect message, not only the core's subset); a subscriber that went
/// away is dropped.
fn deliver(subs: &mut Subscribers, target_sysid: u8, raw: &nexus_core::frame::RawFrame<'_>) {
    use mavlink::Message as _;
    let h = &raw.header;
    if h.sysid != target_sysid || !subs.iter().any(|(id, _)| *id == h.msgid) {
        return;
    }
    let version = match h.version {
        nexus_core::frame::Version::V1 => mavlink::MavlinkVersion::V1,
        nexus_core::frame::Version::V2 => mavlink::MavlinkVersion::V2,
    };
    let Ok(msg) = mav::MavMessage::parse(version, h.msgid, raw.payload) else {
        return;
    };
    subs.retain(|(id, tx)| *id != h.msgid || tx.send(msg.clone()).is_ok());
}

/// Subscribers to message ids: (id, where to send it).
pub(crate) type Subscribers = Vec<(u32, std::sync::mpsc::Sender<mav::MavMessage>)>;
