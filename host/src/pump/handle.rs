//! The user threads' side of a link: status reads, calls run on the pump thread, waits,
//! programs and parameter reads.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

use nexus_core::action::ParamValue;
use nexus_core::client::ClientError;
use nexus_core::engine::{Reason, Wait, WaitId, WaitResult};
use nexus_core::telemetry::Snapshot;
use nexus_core::Instant;

use super::link::{LinkShared, LinkState, ProgramSlot, WaitSlot, WhySlot};
use super::params::{Param, ParamError};
use super::slot::Slot;
use super::status::{LinkEvent, LinkStatus, ProgramReport};
use super::{Cmd, HostClient, HostProgram, LinkId, Pump, PumpError};
use crate::sync::lock;
use crate::transport::ConnString;

/// Why a message could not be sent.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive] // more variants may come; match with a `_` arm
pub enum SendError {
    /// The pump or the link is gone.
    #[error(transparent)]
    Pump(#[from] PumpError),
    /// The core refused it (its raw queue is full, or the payload is too long).
    #[error("refused: {0}")]
    Refused(nexus_core::offboard::OffboardError),
}

/// Why a wait or a program could not be started.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive] // more variants may come; match with a `_` arm
pub enum WaitError {
    /// The pump or the link is gone.
    #[error(transparent)]
    Pump(#[from] PumpError),
    /// The core refused it (an invalid spec, every wait slot in use, a program already
    /// running, a relative sim_time with no previous settle, …).
    #[error("refused: {0}")]
    Refused(ClientError),
}

/// The link as the pump thread sees it, inside [`LinkHandle::call`].
pub struct LinkCtx<'a> {
    pub(crate) now: Instant,
    pub(crate) state: &'a mut LinkState,
}

impl LinkCtx<'_> {
    /// The pump's clock now.
    pub fn now(&self) -> Instant {
        self.now
    }

    /// Send `msg`, a message the core does not send itself (a stream-rate request), as the
    /// link's next frame, with the link's ids and sequence counter; whether it went out.
    pub fn send_message<M: mavlink::MessageData>(&mut self, msg: &M) -> bool {
        self.state.send_message(msg)
    }

    /// The link's core client: verbs, queries, telemetry. Frames a verb queues are sent as
    /// soon as the call returns.
    pub fn client(&mut self) -> &mut HostClient {
        &mut self.state.client
    }
}

#[derive(Debug)]
struct LinkOwner {
    id: LinkId,
    shared: Arc<LinkShared>,
    pump: Pump,
    closed: AtomicBool,
}

impl Drop for LinkOwner {
    fn drop(&mut self) {
        if !self.closed.swap(true, Ordering::SeqCst) {
            let _ = self.pump.send(Cmd::RemoveLink {
                id: self.id,
                reply: None,
            });
        }
    }
}

/// A link handle that does not keep the link open ([`LinkHandle::downgrade`]).
#[derive(Debug, Clone)]
pub struct WeakLink {
    owner: std::sync::Weak<LinkOwner>,
}

impl WeakLink {
    /// The link, if some [`LinkHandle`] still holds it.
    pub fn upgrade(&self) -> Option<LinkHandle> {
        self.owner.upgrade().map(|owner| LinkHandle { owner })
    }
}

/// A link on a pump. Cheap to clone, `Send + Sync`. The link closes on [`LinkHandle::close`]
/// or when its last handle is dropped.
#[derive(Debug, Clone)]
pub struct LinkHandle {
    owner: Arc<LinkOwner>,
}

impl LinkHandle {
    pub(crate) fn new(id: LinkId, shared: Arc<LinkShared>, pump: Pump) -> Self {
        LinkHandle {
            owner: Arc::new(LinkOwner {
                id,
                shared,
                pump,
                closed: AtomicBool::new(false),
            }),
        }
    }

    /// A handle that does not keep the link open.
    pub fn downgrade(&self) -> WeakLink {
        WeakLink {
            owner: Arc::downgrade(&self.owner),
        }
    }

    /// The link's id on its pump.
    pub fn id(&self) -> LinkId {
        self.owner.id
    }

    /// The connection string it was opened from.
    pub fn conn(&self) -> &ConnString {
        &self.owner.shared.conn
    }

    /// The bound local address (UDP, TCP).
    pub fn local_addr(&self) -> Option<SocketAddr> {
        self.owner.shared.local_addr
    }

    /// The pump it runs on.
    pub fn pump(&self) -> &Pump {
        &self.owner.pump
    }

    /// A copy of the published status.
    pub fn status(&self) -> LinkStatus {
        self.owner.shared.status().clone()
    }

    /// Read the published status without copying it.
    pub fn with_status<R>(&self, f: impl FnOnce(&LinkStatus) -> R) -> R {
        f(&self.owner.shared.status())
    }

    /// Events numbered after `seq` (0: all kept), oldest first.
    pub fn events_since(&self, seq: u64) -> Vec<(u64, LinkEvent)> {
        self.owner.shared.events().since(seq)
    }

    /// Number of the newest event (0 before any).
    pub fn last_event_seq(&self) -> u64 {
        self.owner.shared.events().last_seq()
    }

    /// Whether the link was closed.
    pub fn is_closed(&self) -> bool {
        self.owner.closed.load(Ordering::SeqCst) || self.owner.shared.status().closed
    }

    /// Run `f` on the pump thread with the link's client and return what it returns. Frames
    /// it queues are sent, and its news published, before this returns.
    pub fn call<R: Send + 'static>(
        &self,
        f: impl FnOnce(&mut LinkCtx<'_>) -> R + Send + 'static,
    ) -> Result<R, PumpError> {
        if self.owner.pump.is_pump_thread() {
            return Err(PumpError::Reentrant);
        }
        let (tx, rx) = mpsc::sync_channel(1);
        self.post(move |ctx| {
            let r = ctx.map(|mut c| f(&mut c));
            Box::new(move || {
                let _ = tx.send(r);
            })
        })?;
        match rx.recv() {
            Ok(Some(r)) => Ok(r),
            Ok(None) => Err(PumpError::LinkClosed),
            Err(_) => Err(PumpError::Stopped),
        }
    }

    /// Send any common-dialect message to the vehicle on this link, now (with the link's own
    /// system/component ids and sequence). The core queues it raw
    /// ([`nexus_core::Client::send_raw`]): a full queue or a payload too long is refused.
    pub fn send(&self, msg: &nexus_core::mav::MavMessage) -> Result<(), SendError> {
        use mavlink::Message as _;
        let mut payload = [0u8; 255];
        let n = msg.ser(mavlink::MavlinkVersion::V2, &mut payload);
        let id = msg.message_id();
        let crc = nexus_core::mav::MavMessage::extra_crc(id);
        let payload = payload[..n].to_vec();
        self.call(move |ctx| ctx.client().send_raw(id, crc, &payload))?
            .map_err(SendError::Refused)
    }

    /// Every message with id `msg_id` the vehicle sends on this link from now on, decoded by
    /// mavlink's full parse (so any common-dialect message, not only those the core reads).
    /// Dropping the receiver ends the subscription.
    pub fn subscribe(
        &self,
        msg_id: u32,
    ) -> Result<mpsc::Receiver<nexus_core::mav::MavMessage>, PumpError> {
        self.subscribe_many(&[msg_id])
    }

    /// [`LinkHandle::subscribe`] to several message ids on one receiver, in the order the
    /// vehicle sent them.
    pub fn subscribe_many(
        &self,
        msg_ids: &[u32],
    ) -> Result<mpsc::Receiver<nexus_core::mav::MavMessage>, PumpError> {
        let (tx, rx) = mpsc::channel();
        let ids = msg_ids.to_vec();
        self.call(move |ctx| {
            for id in ids {
                ctx.state.subs.push((id, tx.clone()));
            }
            // A subscriber may want any message: the link's framer stops skipping unread ones.
            ctx.state.read_every_frame();
        })?;
        Ok(rx)
    }

    /// Queue `f` for the pump thread without waiting for it.
    fn post(
        &self,
        f: impl FnOnce(Option<LinkCtx<'_>>) -> super::Reply + Send + 'static,
    ) -> Result<(), PumpError> {
        self.owner.pump.send(Cmd::Call {
            id: self.owner.id,
            f: Box::new(f),
        })
    }

    /// Register a wait on this link and return at once.
    pub fn register(&self, wait: &Wait) -> Result<PendingWait, WaitError> {
        let slot: WaitSlot = Arc::new(Slot::new());
        let why: WhySlot = Arc::default();
        let (s, w) = (Arc::clone(&slot), Arc::clone(&why));
        let wait = wait.clone();
        let id = self
            .call(move |ctx| ctx.state.register(ctx.now, &wait, s, w))?
            .map_err(WaitError::Refused)?;
        Ok(PendingWait {
            id,
            slot,
            why,
            link: self.clone(),
            done: false,
        })
    }

    /// Register a wait and block until it ends, or until `cap` (wall time) passes and it is
    /// capped. Every wait ends with a result.
    pub fn wait(&self, wait: &Wait, cap: Option<Duration>) -> Result<WaitResult, WaitError> {
        Ok(self.register(wait)?.join(cap))
    }

    /// Start a step program; its report comes through the returned handle.
    pub fn start_program(&self, program: HostProgram) -> Result<PendingProgram, WaitError> {
        let slot: ProgramSlot = Arc::new(Slot::new());
        let s = Arc::clone(&slot);
        let program = Box::new(program);
        self.call(move |ctx| ctx.state.start_program(ctx.now, *program, s))?
            .map_err(WaitError::Refused)?;
        Ok(PendingProgram {
            slot,
            link: self.clone(),
        })
    }

    /// Abort the running program (`abort_steps`): its step ends `aborted`, the program too.
    pub fn abort_program(&self) -> Result<(), WaitError> {
        self.call(|ctx| ctx.state.client.abort_program(ctx.now).map(|_| ()))?
            .map_err(WaitError::Refused)
    }

    /// Read a parameter: PARAM_REQUEST_READ until PARAM_VALUE answers or `timeout` (wall)
    /// passes ([`ParamError::Timeout`]); a PARAM_ERROR ends it at once ([`ParamError::Refused`]).
    pub fn read_param(&self, name: &str, timeout: Duration) -> Result<Param, ParamError> {
        let slot: Arc<Slot<Result<Param, ParamError>>> = Arc::new(Slot::new());
        let s = Arc::clone(&slot);
        let n = name.to_owned();
        self.call(move |ctx| ctx.state.read_param(ctx.now, n, timeout, s))
            .map_err(|_| ParamError::Closed(name.to_owned()))?;
        // The pump ends the read at `timeout`; the margin only covers a stopped pump.
        slot.take_timeout(Some(timeout + Duration::from_secs(5)))
            .unwrap_or_else(|| Err(ParamError::Closed(name.to_owned())))
    }

    /// Set a parameter and wait for PX4's answer, as MAVSDK's and QGroundControl's parameter
    /// managers do: PARAM_SET (INT32 for an integer `value`, else REAL32), resent on the retry
    /// timer until the PARAM_VALUE with the value comes (returned: what PX4 stored, with its
    /// index and count). A PARAM_ERROR ends it at once ([`ParamError::Refused`], PX4's
    /// MAV_PARAM_ERROR); no echo after the resend limit is [`ParamError::GaveUp`], none within
    /// `timeout` (wall) [`ParamError::SetTimeout`].
    pub fn set_param(
        &self,
        name: &str,
        value: ParamValue,
        timeout: Duration,
    ) -> Result<Param, ParamError> {
        let start = std::time::Instant::now();
        let mut seen = self.last_event_seq();
        let mut news = self.pump().news();
        let n = name.to_owned();
        self.call(move |ctx| ctx.state.client.set_param(&n, value))
            .map_err(|_| ParamError::Closed(name.to_owned()))?
            .map_err(|why| super::param_reads::set_not_sent(name, why))?;
        loop {
            for (seq, ev) in self.events_since(seen) {
                seen = seq;
                if let Some(end) = super::param_reads::set_end(&ev, name) {
                    return end;
                }
            }
            if self.is_closed() {
                return Err(ParamError::Closed(name.to_owned()));
            }
            let left = timeout.saturating_sub(start.elapsed());
            if left.is_zero() {
                return Err(ParamError::SetTimeout {
                    name: name.to_owned(),
                    timeout,
                });
            }
            // Woken by the pump's news (the event), a short tick at most.
            news = self
                .pump()
                .wait_news(news, left.min(Duration::from_millis(50)));
        }
    }

    /// Declare the vehicle dead (a cause the pump cannot see itself): every wait ends `died`
    /// with `cause`, now and from now on.
    pub fn declare_died(&self, cause: crate::launcher::DeathCause) -> Result<(), PumpError> {
        self.call(move |ctx| ctx.state.die(ctx.now, cause))
    }

    /// A lockstep vehicle is about to be stepped: silence until now was expected, so the
    /// watchdog starts counting again from now.
    pub fn rearm_watchdog(&self) -> Result<(), PumpError> {
        self.call(|ctx| ctx.state.rearm_watchdog(ctx.now))
    }

    /// Close the link: its waits end `closed`, a program `aborted`, its socket closes.
    /// Idempotent; returns once the pump has done it.
    pub fn close(&self) {
        if self.owner.closed.swap(true, Ordering::SeqCst) {
            return;
        }
        if self.owner.pump.is_pump_thread() {
            let _ = self.owner.pump.send(Cmd::RemoveLink {
                id: self.owner.id,
                reply: None,
            });
            return;
        }
        let (tx, rx) = mpsc::sync_channel(1);
        if self
            .owner
            .pump
            .send(Cmd::RemoveLink {
                id: self.owner.id,
                reply: Some(tx),
            })
            .is_ok()
        {
            let _ = rx.recv();
        }
    }
}

/// Take a slot's value; if the pump died without filling it (a bug), `fallback`.
fn take_or<T>(slot: &Slot<T>, pump: &Pump, fallback: impl FnOnce() -> T) -> T {
    loop {
        if let Some(v) = slot.take_timeout(Some(Duration::from_millis(200))) {
            return v;
        }
        if slot.is_filled() || !pump.is_alive() {
            return slot.try_take().unwrap_or_else(fallback);
        }
    }
}

/// A registered wait. Exactly one [`WaitResult`] comes out of it: the settle, or the cap.
/// Dropping it before that aborts the wait on the pump (its slot is freed).
#[derive(Debug)]
pub struct PendingWait {
    id: WaitId,
    slot: WaitSlot,
    why: WhySlot,
    link: LinkHandle,
    done: bool,
}

impl PendingWait {
    /// The wait's id in the link's engine.
    pub fn id(&self) -> WaitId {
        self.id
    }

    /// The link it waits on.
    pub fn link(&self) -> &LinkHandle {
        &self.link
    }

    /// Why the wait ended without its condition (what was pending and why it did not happen,
    /// in PX4's words where it gave any), once it has: built by the core in the tick it
    /// settled ([`nexus_core::explain::Explanation`]). `None` while pending, when met, capped
    /// or closed.
    pub fn explanation(&self) -> Option<String> {
        lock(&self.why).clone()
    }

    /// Where the explanation will be, for a caller that consumes the wait to get its result.
    pub(crate) fn why_handle(&self) -> WhySlot {
        Arc::clone(&self.why)
    }

    /// [`PendingWait::join`], with [`PendingWait::explanation`].
    pub fn join_explained(self, cap: Option<Duration>) -> (WaitResult, Option<String>) {
        let why = Arc::clone(&self.why);
        let r = self.join(cap);
        let e = lock(&why).clone();
        (r, e)
    }

    /// The result, if the wait has ended.
    pub fn try_result(&mut self) -> Option<WaitResult> {
        let r = self.slot.try_take();
        self.done |= r.is_some();
        r
    }

    /// Block up to `timeout` (wall) for the result; `None` if the wait still runs.
    pub fn join_timeout(&mut self, timeout: Duration) -> Option<WaitResult> {
        let r = self.slot.take_timeout(Some(timeout));
        self.done |= r.is_some();
        r
    }

    /// End the wait with `cap` now, unless it settled first: either way, its one result
    /// (the wait engine: `snapshot_at` Return for a cap; continue with `since_seq = snapshot.seq`).
    pub fn cap(mut self) -> WaitResult {
        if let Some(r) = self.try_result() {
            return r;
        }
        let id = self.id;
        let _ = self.link.post(move |ctx| {
            if let Some(ctx) = ctx {
                ctx.state.cap(ctx.now, id);
            }
            Box::new(|| {})
        });
        let r = take_or(&self.slot, self.link.pump(), closed_result);
        self.done = true;
        r
    }

    /// Block until the wait ends, or until `cap` (wall) passes and it is capped (as a
    /// thread's `join`: the pending wait is used up).
    pub fn join(mut self, cap: Option<Duration>) -> WaitResult {
        match cap {
            None => {
                let r = take_or(&self.slot, self.link.pump(), closed_result);
                self.done = true;
                r
            }
            Some(c) => match self.join_timeout(c) {
                Some(r) => r,
                None => self.cap(),
            },
        }
    }
}

impl Drop for PendingWait {
    fn drop(&mut self) {
        if !self.done && !self.slot.is_filled() {
            let id = self.id;
            let _ = self.link.post(move |ctx| {
                if let Some(ctx) = ctx {
                    ctx.state.cancel(ctx.now, id);
                }
                Box::new(|| {})
            });
        }
    }
}

fn closed_result() -> WaitResult {
    WaitResult::ended(Reason::Closed, Snapshot::default())
}

/// A running step program; its [`ProgramReport`] comes out once it ends.
#[derive(Debug)]
pub struct PendingProgram {
    slot: ProgramSlot,
    link: LinkHandle,
}

impl PendingProgram {
    /// The report, if the program has ended.
    pub fn try_report(&self) -> Option<ProgramReport> {
        self.slot.try_take()
    }

    /// Block up to `timeout` (wall) for the report; `None` if the program still runs.
    pub fn join_timeout(&self, timeout: Duration) -> Option<ProgramReport> {
        self.slot.take_timeout(Some(timeout))
    }

    /// Block until the program ends; with a wall `limit`, abort it when the limit passes
    /// (it then ends `aborted`).
    pub fn join(self, limit: Option<Duration>) -> ProgramReport {
        if let Some(l) = limit {
            if let Some(r) = self.join_timeout(l) {
                return r;
            }
            let _ = self.link.abort_program();
        }
        take_or(&self.slot, self.link.pump(), || ProgramReport {
            end: nexus_core::engine::ProgramEnd::Aborted { step: 0 },
            records: Vec::new(),
            error: Some("the pump stopped".into()),
        })
    }
}
