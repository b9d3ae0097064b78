//! What the link's task and the handles share: the client, who waits for what, the parameter
//! reads, the event log and the status the groups read.

use std::collections::{HashMap, VecDeque};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::task::Waker;
use std::time::Duration;

use nexus_core::client::Event;
use nexus_core::engine::{WaitId, WaitResult};
use nexus_core::frame::{RawFrame, MAX_FRAME_LEN};
use nexus_core::link::{Reads, Tap};
use nexus_core::msg::Frame;
use nexus_core::Instant;
use nexus_host::launcher::DeathCause;
use nexus_host::pump::{LinkEvent, LinkRtt, LinkStatus, ParamReads, NO_SPEED_CONTROL};
use nexus_host::signing::{LinkSigning, Signing};
use nexus_host::transport::ForeignTraffic;
use tokio::sync::{watch, Notify};

use crate::params::Answer;
use crate::{HostClient, EVENTS_KEPT};

/// The client and everything routed from it.
pub(crate) struct State {
    pub client: Box<HostClient>,
    /// Waits a live [`crate::WaitFuture`] owns: its waker, and its result once settled.
    pub waits: HashMap<WaitId, Slot>,
    /// Parameter reads in flight, each answer to the future that awaits it.
    pub params: ParamReads<Answer>,
    /// A signed link's signer and verifier: every frame sent is signed, every frame received
    /// checked before the client may take it.
    pub signing: Option<LinkSigning>,
    pub events: VecDeque<LinkEvent>,
    /// Events logged since the link opened (the log keeps the newest [`EVENTS_KEPT`]).
    pub event_seq: u64,
    pub foreign: ForeignTraffic,
    pub tx_frames: u64,
    /// Times the task woke with nothing read (a deadline, a verb's kick).
    pub wakes: u64,
    /// What the groups' queries read, and the link's own facts: its peer, its death (every
    /// later wait ends `died`), whether it is closed. Brought up to date after every batch
    /// and verb.
    pub status: LinkStatus,
}

/// Where one wait's result goes.
#[derive(Default)]
pub(crate) struct Slot {
    pub waker: Option<Waker>,
    pub result: Option<WaitResult>,
}

/// The state behind its lock, the task's kick, the batch counter and the clock's origin.
pub(crate) struct Shared {
    pub state: Mutex<State>,
    /// Wakes the task: a verb or registration queued frames, or the link closes.
    pub kick: Notify,
    /// Bumped after each batch the task handled: whoever waits for news looks again.
    pub changed: watch::Sender<u64>,
    pub start: tokio::time::Instant,
}

impl Shared {
    pub fn new(state: State) -> Shared {
        Shared {
            state: Mutex::new(state),
            kick: Notify::new(),
            changed: watch::channel(0).0,
            start: tokio::time::Instant::now(),
        }
    }

    pub fn lock(&self) -> MutexGuard<'_, State> {
        // Poisoned or not: a panic while holding it leaves plain slots and queues behind.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The driver's clock: wall µs since the link opened (engine timeouts count the
    /// autopilot's own clock, read from telemetry).
    pub fn now(&self) -> Instant {
        Instant::from_micros(self.start.elapsed().as_micros() as u64)
    }

    pub fn at(&self, t: Instant) -> tokio::time::Instant {
        self.start + Duration::from_micros(t.total_micros())
    }

    /// Close the link: pending waits end `closed`, reads fail, the task stops. Idempotent.
    pub fn close(&self) {
        let now = self.now();
        let mut st = self.lock();
        if !st.status.closed {
            st.status.closed = true;
            st.client.close(now);
            st.params.closed();
            st.route(now);
            st.publish();
        }
        drop(st);
        self.kick.notify_one();
    }
}

impl State {
    pub fn new(
        mut client: HostClient,
        peer: Option<std::net::SocketAddr>,
        signing: Option<&Signing>,
    ) -> State {
        let mut status = LinkStatus::default();
        status.peer = peer;
        if signing.is_some() {
            // Every frame reaches the tap, to be verified, as on the pump's signed links.
            client.set_reads(Reads::Verified);
        }
        State {
            client: Box::new(client),
            waits: HashMap::new(),
            params: ParamReads::default(),
            // The task's clock starts with the state.
            signing: signing.map(|s| LinkSigning::new(s, Instant::ZERO)),
            events: VecDeque::new(),
            event_seq: 0,
            foreign: ForeignTraffic::default(),
            tx_frames: 0,
            wakes: 0,
            status,
        }
    }

    /// Route the client's events: results to their futures (waking them), the rest to the
    /// log. A result nobody owns any more (its future was dropped) is simply let go.
    pub fn route(&mut self, now: Instant) {
        while let Some(ev) = self.client.poll_event() {
            let log = match ev {
                Event::Settled { id, result } => {
                    if let Some(slot) = self.waits.get_mut(&id) {
                        slot.result = Some(result);
                        if let Some(w) = slot.waker.take() {
                            w.wake();
                        }
                    }
                    continue;
                }
                Event::Speedup(factor) => LinkEvent::Speedup {
                    factor,
                    error: Some(NO_SPEED_CONTROL.into()),
                },
                Event::Step {
                    step,
                    passed,
                    reason,
                } => LinkEvent::step(&self.client, now, step, passed, reason),
                Event::ProgramFinished(end) => LinkEvent::ProgramFinished(end),
                Event::Offboard(e) => LinkEvent::Offboard(e),
                Event::Silent { silent } => {
                    let silent = Duration::from_micros(silent.total_micros());
                    self.die(now, DeathCause::LinkSilent { silent });
                    continue;
                }
                Event::ClockStalled { stalled } => {
                    let stalled = Duration::from_micros(stalled.total_micros());
                    self.die(now, DeathCause::ClockStalled { stalled });
                    continue;
                }
                // News of a newer core this client does not route yet.
                _ => continue,
            };
            self.log(log);
        }
    }

    /// Append to the event log, dropping the oldest past [`EVENTS_KEPT`].
    fn log(&mut self, ev: LinkEvent) {
        if self.events.len() == EVENTS_KEPT {
            self.events.pop_front();
        }
        self.events.push_back(ev);
        self.event_seq += 1;
    }

    /// The events logged after the `seen`-th (those still kept), and the count now.
    pub fn events_after(&self, seen: u64) -> (impl Iterator<Item = &LinkEvent>, u64) {
        let newer = usize::try_from(self.event_seq.saturating_sub(seen)).unwrap_or(usize::MAX);
        let skip = self.events.len().saturating_sub(newer);
        (self.events.iter().skip(skip), self.event_seq)
    }

    /// Bring the status the groups read up to date with the client and the reads.
    pub fn publish(&mut self) {
        self.status.observe(&self.client);
        self.status.counters.signing = self.signing.as_ref().map(LinkSigning::stats);
        self.status.rtt = LinkRtt::of(
            self.client.offboard(),
            self.params.rtt(),
            self.params.retry(),
        );
    }

    pub fn die(&mut self, now: Instant, cause: DeathCause) {
        if self.status.died.is_none() {
            self.client.died(now, &cause.to_string());
            self.params.died(&cause);
            self.log(LinkEvent::Died(cause.clone()));
            self.status.died = Some(cause);
        }
    }

    /// When the task must wake if nothing arrives: the client's timers, the reads' resends.
    pub fn deadline(&self) -> Option<Instant> {
        let connected = self.client.telemetry().connected();
        match (self.client.next_deadline(), self.params.deadline(connected)) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Encode everything due into `out` (frame ends in `ends`), each signed on a signed link:
    /// the client's frames, then the parameter requests due.
    pub fn transmit(&mut self, now: Instant, out: &mut Vec<u8>, ends: &mut Vec<usize>) {
        let mut buf = [0u8; MAX_FRAME_LEN];
        while let Some(n) = self.client.poll_transmit(now, &mut buf) {
            self.params.on_sent(now, &buf[..n]);
            push_signed(&mut self.signing, now, &mut buf, n, out, ends);
        }
        let signing = &mut self.signing;
        self.params.service(now, &mut self.client, |frame| {
            let mut buf = [0u8; MAX_FRAME_LEN];
            buf[..frame.len()].copy_from_slice(frame);
            push_signed(signing, now, &mut buf, frame.len(), out, ends);
        });
    }

    /// What the task hands the client with each read: the tap that verifies and answers.
    pub fn handle_bytes(&mut self, now: Instant, bytes: &[u8], framing: nexus_core::link::Framing) {
        let mut tap = LinkTap {
            params: &mut self.params,
            signing: self.signing.as_mut(),
            target_sysid: self.client.telemetry().ids().target_sysid,
        };
        self.client.handle_bytes(now, bytes, framing, &mut tap);
    }
}

/// Sign `buf[..n]` (on a signed link) and append it to `out` as one frame.
fn push_signed(
    signing: &mut Option<LinkSigning>,
    now: Instant,
    buf: &mut [u8; MAX_FRAME_LEN],
    n: usize,
    out: &mut Vec<u8>,
    ends: &mut Vec<usize>,
) {
    let n = match signing {
        Some(s) => s.sign(now, buf, n),
        None => n,
    };
    out.extend_from_slice(&buf[..n]);
    ends.push(out.len());
}

/// What the task does with each frame on its way into the client: a signed link admits only
/// what its verifier accepts; the vehicle's PARAM_VALUEs and PARAM_ERRORs answer the reads.
struct LinkTap<'a> {
    params: &'a mut ParamReads<Answer>,
    signing: Option<&'a mut LinkSigning>,
    target_sysid: u8,
}

impl Tap for LinkTap<'_> {
    fn admit(&mut self, now: Instant, raw: &RawFrame<'_>) -> bool {
        match &mut self.signing {
            Some(s) => s.check(now, raw).accepted(),
            None => true,
        }
    }

    fn decoded(&mut self, now: Instant, frame: &Frame, _accepted: bool) {
        self.params.on_frame(now, frame, self.target_sysid);
    }
}
