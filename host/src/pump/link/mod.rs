//! One link on the pump thread: the transport, the framer, the core [`Client`] and everything
//! that routes the client's news to the user threads waiting for it.
//!
//! Per readable datagram (or stream read): the bytes to the client as the transport read them
//! (`Client::handle_bytes`: it frames them, keeps the vehicle's frames, counts loss; the pump's
//! tap records, verifies and answers parameter reads on the way) → `poll_transmit` until
//! `None`, each frame sent at once (a reaction's command leaves before the next read) → after
//! the batch, `poll_event` routed (settled waits to their callers, speed factors to the
//! vehicle, silence to a death, the rest to the event log) and the status published *before*
//! any waiting caller is woken, so what a caller reads after its wait returns is at least as
//! new as the settle.
//!
//! By concept: [`rx`] (receiving), [`tx`] (sending), [`waits`] (waits and programs),
//! [`param_reads`] (parameter reads and their retries), [`supervision`] (timers, death, close),
//! [`publish`] (routing the client's events and publishing the status).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use nexus_core::client::ClientConfig;
use nexus_core::engine::{ProgramEnd, Reason, Wait, WaitId, WaitResult};
use nexus_core::frame::MAX_FRAME_LEN;
use nexus_core::{Client, Instant};

use super::param_reads::ParamReads;
use super::params::{Param, ParamError};
use super::slot::Slot;
use super::status::{EventLog, LinkStatus, ProgramReport};
use super::supervise::{Supervision, VehicleProbe};
use super::HostClient;
use crate::launcher::DeathCause;
use crate::transport::{ConnString, Link};

mod param_reads;
mod publish;
mod rx;
mod supervision;
mod tx;
mod waits;

use crate::sync::lock;
use rx::ForeignSeen;
pub(crate) use rx::Subscribers;

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
        lock(&self.status)
    }
    pub fn events(&self) -> MutexGuard<'_, EventLog> {
        lock(&self.events)
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
pub(crate) type ParamSlot = Arc<Slot<Result<Param, ParamError>>>;

/// The pump thread's side of one link.
pub(crate) struct LinkState {
    link: Link,
    pub client: Box<HostClient>,
    pub shared: Arc<LinkShared>,
    probe: Option<Arc<dyn VehicleProbe>>,
    probe_polled: bool,
    next_probe: Instant,
    waits: HashMap<WaitId, WaitEntry>,
    program: Option<ProgramSlot>,
    params: ParamReads<ParamSlot>,
    epoch: u64,
    counters: super::status::LinkCounters,
    died: Option<DeathCause>,
    /// A read error: the link is gone (a stream closed, a device hung up); never read again.
    broken: bool,
    generation: u64,
    last_rx_wall: Option<std::time::Instant>,
    tx: [u8; MAX_FRAME_LEN],
    foreign: ForeignSeen,
    /// Who asked for which message ids ([`super::LinkHandle::subscribe`]).
    pub(crate) subs: Subscribers,
    tlog: Option<crate::tlog::Tlog>,
    slow: crate::pump::slow_link::LossMonitor,
    signing: Option<crate::signing::LinkSigning>,
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
        // The core supervises the link, unless the vehicle is silent between steps (lockstep):
        // the stepping run watches its clock then.
        let config = ClientConfig {
            stall: supervision
                .stall
                .filter(|s| !s.is_zero())
                .filter(|_| supervision.probe.as_ref().is_none_or(|p| p.free_running()))
                .map(crate::pump::core_duration),
            ..config
        };
        // Loss detection, except on a vehicle we started (loopback: see slow_link.rs).
        let slow = crate::pump::slow_link::LossMonitor::new(supervision.probe.is_none());
        let mut state = LinkState {
            slow,
            epoch: link.peer_epoch(),
            link,
            client: Box::new(Client::new(config)),
            shared,
            probe: supervision.probe,
            probe_polled,
            next_probe: Instant::ZERO,
            waits: HashMap::new(),
            program: None,
            params: ParamReads::default(),
            counters: Default::default(),
            died: None,
            broken: false,
            generation: 0,
            last_rx_wall: None,
            tx: [0; MAX_FRAME_LEN],
            foreign: ForeignSeen::default(),
            subs: Vec::new(),
            tlog: supervision.tlog,
            signing: supervision
                .signing
                .as_ref()
                .map(|s| crate::signing::LinkSigning::new(s, Instant::ZERO)),
        };
        state.client.set_reads(state.reads());
        state
    }

    pub fn link_mut(&mut self) -> &mut Link {
        &mut self.link
    }
}

impl Drop for LinkState {
    /// Never leave a caller hanging: if the link goes without [`LinkState::close`] (the pump
    /// thread unwinding), whatever is still pending ends `closed`.
    fn drop(&mut self) {
        let snapshot = self.client.snapshot();
        for (_, WaitEntry { slot, .. }) in self.waits.drain() {
            slot.fill(WaitResult::ended(Reason::Closed, snapshot.clone()));
        }
        if let Some(slot) = self.program.take() {
            slot.fill(ProgramReport {
                end: ProgramEnd::Aborted { step: 0 },
                records: self.client.program().records().to_vec(),
                error: Some("the pump stopped".into()),
            });
        }
        self.params.closed();
        self.shared.status().closed = true;
    }
}
