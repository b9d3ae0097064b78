//! # nexus-tokio
//!
//! The tokio driver of [`nexus_core::Client`]: one task per vehicle link only moves bytes —
//! each read handed to the core as it came (a datagram, a chunk of a stream), what the core
//! gives sent, a sleep until the core's deadline — over a tokio UDP socket, TCP stream or
//! serial port, and [`AsyncClient`] offers the `OffboardClient` verbs and `wait(…).await`,
//! which ends with the same [`WaitResult`] as the threaded pump's waits. The framing, the
//! vehicle's frames, loss and the link's supervision (silence, a standing clock) are the
//! core's, as on every driver.
//!
//! * Many links on one runtime: each [`AsyncClient::open`] spawns its own task.
//! * Cancellation-safe: dropping a [`WaitFuture`] aborts its wait in the engine and frees the
//!   slot at once (no result is left behind).
//! * The same client the host runs ([`HostClient`], its capacities), the same connection
//!   strings and the same vehicle-address latch ([`PeerRule`]).
//!
//! It is a crate of its own so that nexus-host's synchronous users never build tokio.
//!
//! Its verbs and queries are nexus-host's [`nexus_host::groups`] (action, mission, param,
//! telemetry, offboard, geofence, info), the very functions `OffboardClient` offers; bring
//! them into scope with [`prelude`].
//!
//! ```no_run
//! # async fn f() -> Result<(), Box<dyn std::error::Error>> {
//! use nexus_tokio::prelude::*;
//! let op = AsyncClient::open("udpin:127.0.0.1:14540", Default::default()).await?;
//! op.takeoff(5.0)?;
//! let flight = std::time::Duration::from_secs(60);
//! op.until(|c| c.offboard().at_target(c.telemetry()), flight).await?;
//! assert!(op.at_target());
//! op.land()?;
//! let landed = op.wait(&Wait::landed().timeout_s(120.0)).await?;
//! assert!(landed.satisfied);
//! # Ok(()) }
//! ```

mod io;

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use nexus_core::client::Event;
use nexus_core::engine::{Wait, WaitId, WaitResult};
use nexus_core::frame::MAX_FRAME_LEN;
use nexus_core::link::Framing;
use nexus_core::{Client, Instant};
use nexus_host::error::OffboardClientError;
use nexus_host::groups::Facade;
use nexus_host::launcher::DeathCause;
use nexus_host::offboard_client::OffboardOptions;
use nexus_host::pump::{
    LinkEvent, LinkStatus, PauseDetector, PumpError, WaitError, NO_SPEED_CONTROL,
};
use nexus_host::run::Run;
use nexus_host::transport::{
    ConnString, ForeignTraffic, LinkError, OpenError, PeerRule, RECV_BUF_LEN,
};
use tokio::sync::{watch, Notify};

pub use nexus_host::pump::HostClient;

/// The async client, its errors and futures, and every group's verbs and queries (with
/// nexus-host's and nexus-core's preludes): `use nexus_tokio::prelude::*`.
pub mod prelude {
    pub use crate::{AsyncClient, AsyncConnectError, WaitFuture};
    pub use nexus_host::prelude::*;
}

/// Offboard events kept for [`AsyncClient::events`]; older ones are dropped.
pub const EVENTS_KEPT: usize = 256;

/// Why [`AsyncClient::connect`] failed: its own link could not open, or no heartbeat came
/// within a wall-clock timeout (the threaded client's [`nexus_host::error::ConnectError`]
/// waits sim time on the run's pump instead).
#[derive(Debug, thiserror::Error)]
pub enum AsyncConnectError {
    /// The run has no offboard link (not started, closed, no vehicle).
    #[error(transparent)]
    Run(#[from] nexus_host::error::RunError),
    /// The link could not be opened.
    #[error(transparent)]
    Open(Box<OpenError>),
    /// No heartbeat in time.
    #[error(
        "no heartbeat from the vehicle on UDP port {port} within {} s",
        .timeout.as_secs_f64()
    )]
    NoHeartbeat {
        /// The offboard port listened on.
        port: u16,
        /// The wall time waited.
        timeout: Duration,
    },
}

/// What the task and the handles share: the client and who waits for what.
struct State {
    client: Box<HostClient>,
    /// Waits a live [`WaitFuture`] owns: its waker, and its result once settled.
    waits: HashMap<WaitId, Slot>,
    events: std::collections::VecDeque<LinkEvent>,
    /// Why the link is gone (read error, silence, closed); every later wait ends `died`.
    died: Option<DeathCause>,
    closed: bool,
    peer: Option<std::net::SocketAddr>,
    foreign: ForeignTraffic,
    tx_frames: u64,
    /// Times the task woke with nothing read (a deadline, a verb's kick).
    wakes: u64,
    /// What the groups' queries read: brought up to date after every batch and verb.
    status: LinkStatus,
}

#[derive(Default)]
struct Slot {
    waker: Option<Waker>,
    result: Option<WaitResult>,
}

struct Shared {
    state: Mutex<State>,
    /// Wakes the task: a verb or registration queued frames, or the link closes.
    kick: Notify,
    /// Bumped after each batch the task handled: [`AsyncClient::until`] looks again.
    changed: watch::Sender<u64>,
    start: tokio::time::Instant,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // Poisoned or not: a panic while holding it leaves plain slots and queues behind.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The driver's clock: wall µs since the link opened (engine timeouts count the
    /// autopilot's own clock, read from telemetry).
    fn now(&self) -> Instant {
        Instant::from_micros(self.start.elapsed().as_micros() as u64)
    }

    fn at(&self, t: Instant) -> tokio::time::Instant {
        self.start + Duration::from_micros(t.total_micros())
    }
}

impl State {
    /// Route the client's events: results to their futures (waking them), the rest to the
    /// log. A result nobody owns any more (its future was dropped) is simply let go.
    fn route(&mut self, now: Instant) {
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
            if self.events.len() == EVENTS_KEPT {
                self.events.pop_front();
            }
            self.events.push_back(log);
        }
    }

    /// Bring the status the groups read up to date with the client and the link.
    fn publish(&mut self) {
        self.status.observe(&self.client);
        self.status.peer = self.peer;
        self.status.closed = self.closed;
        if self.status.died != self.died {
            self.status.died.clone_from(&self.died);
        }
    }

    fn die(&mut self, now: Instant, cause: DeathCause) {
        if self.died.is_none() {
            self.client.died(now, &cause.to_string());
            self.events.push_back(LinkEvent::Died(cause.clone()));
            self.died = Some(cause);
        }
    }

    /// Encode everything due into `out` (frame ends in `ends`).
    fn transmit(&mut self, now: Instant, out: &mut Vec<u8>, ends: &mut Vec<usize>) {
        let mut buf = [0u8; MAX_FRAME_LEN];
        while let Some(n) = self.client.poll_transmit(now, &mut buf) {
            out.extend_from_slice(&buf[..n]);
            ends.push(out.len());
        }
    }
}

/// One vehicle link on a tokio runtime: the `OffboardClient` verbs, queries, and waits.
///
/// Dropping it closes the link: pending waits end `closed` and the task stops.
pub struct AsyncClient {
    shared: Arc<Shared>,
    local_addr: Option<std::net::SocketAddr>,
}

impl AsyncClient {
    /// Open `conn` (a pymavlink-style connection string) for the vehicle of `options` and
    /// spawn its task on the current runtime. Fails as [`nexus_host::transport::Link::open_str`]
    /// does: the string does not parse, or the link does not open.
    pub async fn open(conn: &str, options: OffboardOptions) -> Result<AsyncClient, LinkError> {
        let conn: ConnString = conn.parse()?;
        Ok(AsyncClient::open_conn(&conn, options).await?)
    }

    /// [`AsyncClient::open`] with a parsed connection string. A UDP link latches by
    /// `options.transport.peer` as the pump's links do: "the most recent sender" becomes the
    /// first autopilot heartbeat of `options.system_id`.
    pub async fn open_conn(
        conn: &ConnString,
        options: OffboardOptions,
    ) -> Result<AsyncClient, OpenError> {
        let rule = match options.transport.peer {
            PeerRule::MostRecent | PeerRule::FirstAutopilot { sysid: None } => {
                PeerRule::FirstAutopilot {
                    sysid: Some(options.system_id),
                }
            }
            rule => rule,
        };
        let io = io::Io::open(conn, rule).await?;
        let state = State {
            client: Box::new(Client::new(options.client_config())),
            waits: HashMap::new(),
            events: Default::default(),
            died: None,
            closed: false,
            peer: io.peer(),
            foreign: ForeignTraffic::default(),
            tx_frames: 0,
            wakes: 0,
            status: LinkStatus::default(),
        };
        let shared = Arc::new(Shared {
            state: Mutex::new(state),
            kick: Notify::new(),
            changed: watch::channel(0).0,
            start: tokio::time::Instant::now(),
        });
        let local_addr = io.local_addr();
        tokio::spawn(drive(Arc::clone(&shared), io));
        Ok(AsyncClient { shared, local_addr })
    }

    /// Open a client on a real-time run's offboard link, taking frames only from the vehicle
    /// the run launched, and wait up to `timeout` (wall time) for its heartbeat. (A lockstep run
    /// advances only through its own waits, `Run::wait` and `Run::until`: give this driver a
    /// real-time run.)
    pub async fn connect(sim: &Run, timeout: Duration) -> Result<AsyncClient, AsyncConnectError> {
        let port = sim.offboard_port()?;
        let mut options = sim.offboard_options();
        options.system_id = port.system_id;
        if let Some(vehicle) = sim.vehicle_addr() {
            options.transport.peer = PeerRule::Address(vehicle);
        }
        let conn = ConnString::UdpIn {
            host: sim.options().listen.to_string(),
            port: port.port,
        };
        let client = AsyncClient::open_conn(&conn, options)
            .await
            .map_err(|e| AsyncConnectError::Open(Box::new(e)))?;
        match client.until(|c| c.telemetry().connected(), timeout).await {
            Ok(()) => Ok(client),
            Err(_) => Err(AsyncConnectError::NoHeartbeat {
                port: port.port,
                timeout,
            }),
        }
    }

    /// The local address of a UDP link (port 0 resolved).
    pub fn local_addr(&self) -> Option<std::net::SocketAddr> {
        self.local_addr
    }

    /// Register `wait` now; its future ends with the result. Dropping the future before then
    /// aborts the wait and frees its engine slot.
    pub fn wait(&self, wait: &Wait) -> WaitFuture {
        let now = self.shared.now();
        let mut st = self.shared.lock();
        let id = match (st.closed, st.client.wait(now, wait)) {
            (true, _) => Err(WaitError::Pump(PumpError::LinkClosed)),
            (false, Ok(id)) => Ok(id),
            (false, Err(e)) => Err(WaitError::Refused(e)),
        };
        if let Ok(id) = id {
            st.waits.insert(id, Slot::default());
            if let Some(cause) = &st.died {
                let text = cause.to_string();
                st.client.died(now, &text);
            }
            st.route(now);
        }
        drop(st);
        self.shared.kick.notify_one();
        WaitFuture {
            shared: Arc::clone(&self.shared),
            id: Some(id),
        }
    }

    /// [`AsyncClient::wait`] with a wall-clock cap: if `cap` passes first the wait ends with
    /// `cap` (its snapshot as of now), as the pump's capped waits do.
    pub async fn wait_capped(&self, wait: &Wait, cap: Duration) -> Result<WaitResult, WaitError> {
        let mut fut = self.wait(wait);
        tokio::select! {
            r = &mut fut => r,
            _ = tokio::time::sleep(cap) => fut.cap(),
        }
    }

    /// Until `f` holds on the client (checked now and after every batch the task handles),
    /// or `timeout` (wall time) passes (`Err` with the elapsed time).
    pub async fn until(
        &self,
        mut f: impl FnMut(&HostClient) -> bool,
        timeout: Duration,
    ) -> Result<(), tokio::time::error::Elapsed> {
        let mut rx = self.shared.changed.subscribe();
        tokio::time::timeout(timeout, async {
            loop {
                if f(&self.shared.lock().client) {
                    return;
                }
                if rx.changed().await.is_err() {
                    return; // the task ended: the caller's condition can no longer change
                }
            }
        })
        .await
    }

    /// Read the client (telemetry, offboard machine, engine) under the lock.
    pub fn with<R>(&self, f: impl FnOnce(&HostClient) -> R) -> R {
        f(&self.shared.lock().client)
    }

    /// Waits registered and not yet settled, and engine slots free.
    pub fn wait_slots(&self) -> (usize, usize) {
        self.with(|c| (c.engine().pending_count(), c.engine().free_slots()))
    }

    /// Waits whose futures are alive (their results not taken).
    pub fn waits_owned(&self) -> usize {
        self.shared.lock().waits.len()
    }

    /// The latched vehicle address of a UDP link.
    pub fn peer(&self) -> Option<std::net::SocketAddr> {
        self.shared.lock().peer
    }

    /// What sources other than the vehicle sent to a UDP link (never applied).
    pub fn foreign(&self) -> ForeignTraffic {
        self.shared.lock().foreign.clone()
    }

    /// Frames sent so far.
    pub fn tx_frames(&self) -> u64 {
        self.shared.lock().tx_frames
    }

    /// Times the link's task woke with nothing read (its deadline came, or a verb's kick): a
    /// few a second on a healthy link; a driver that spun on a deadline would show it here.
    pub fn wakes(&self) -> u64 {
        self.shared.lock().wakes
    }

    /// The link's log: offboard events, program steps, death (the newest [`EVENTS_KEPT`]).
    pub fn events(&self) -> Vec<LinkEvent> {
        self.shared.lock().events.iter().cloned().collect()
    }

    /// Why the link is dead, if it is.
    pub fn death(&self) -> Option<DeathCause> {
        self.shared.lock().died.clone()
    }

    /// Close the link: pending waits end `closed`, the task stops. Idempotent.
    pub fn close(&self) {
        close(&self.shared);
    }
}

impl Facade for AsyncClient {
    fn read_status<R>(&self, f: impl FnOnce(&LinkStatus) -> R) -> R {
        let st = self.shared.lock();
        if st.closed {
            // As a closed `OffboardClient` reads: the empty status, not connected.
            return f(&LinkStatus::default());
        }
        f(&st.status)
    }

    fn apply<R: Send + 'static>(
        &self,
        verb: impl FnOnce(&mut HostClient, Instant) -> Result<R, OffboardClientError> + Send + 'static,
    ) -> Result<R, OffboardClientError> {
        let now = self.shared.now();
        let mut st = self.shared.lock();
        if st.closed {
            return Err(OffboardClientError::NotOpen);
        }
        let r = verb(&mut st.client, now);
        st.route(now);
        st.publish();
        drop(st);
        self.shared.kick.notify_one();
        r
    }
}

impl Drop for AsyncClient {
    fn drop(&mut self) {
        self.close();
    }
}

fn close(shared: &Shared) {
    let now = shared.now();
    let mut st = shared.lock();
    if !st.closed {
        st.closed = true;
        st.client.close(now);
        st.route(now);
        st.publish();
    }
    drop(st);
    shared.kick.notify_one();
}

/// A registered wait; resolves to its [`WaitResult`]. Dropping it aborts the wait.
#[must_use = "a wait is aborted when its future is dropped"]
pub struct WaitFuture {
    shared: Arc<Shared>,
    /// `None` once the result (or the refusal) was handed out.
    id: Option<Result<WaitId, WaitError>>,
}

impl WaitFuture {
    /// The engine's id of this wait (`None` if it was refused or has ended).
    pub fn id(&self) -> Option<WaitId> {
        match &self.id {
            Some(Ok(id)) => Some(*id),
            _ => None,
        }
    }

    /// End the wait with `cap` now, unless it already settled (then its own result).
    fn cap(&mut self) -> Result<WaitResult, WaitError> {
        let id = match self.id.take() {
            Some(Ok(id)) => id,
            Some(Err(e)) => return Err(e),
            None => return Err(WaitError::Pump(PumpError::LinkClosed)),
        };
        let now = self.shared.now();
        let mut st = self.shared.lock();
        let slot = st.waits.remove(&id);
        let r = match slot.and_then(|s| s.result) {
            Some(r) => Ok(r),
            None => st
                .client
                .cap(now, id)
                // Settled in the engine but not routed yet: take it directly.
                .or_else(|_| st.client.take_result(id))
                .map_err(WaitError::Refused),
        };
        st.route(now);
        r
    }
}

impl Future for WaitFuture {
    type Output = Result<WaitResult, WaitError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let id = match self.id.take() {
            None => return Poll::Ready(Err(WaitError::Pump(PumpError::LinkClosed))),
            Some(Err(e)) => return Poll::Ready(Err(e)),
            Some(Ok(id)) => id,
        };
        let mut st = self.shared.lock();
        let done = match st.waits.get_mut(&id) {
            Some(slot) => match slot.result.take() {
                Some(r) => Some(r),
                None => {
                    slot.waker = Some(cx.waker().clone());
                    None
                }
            },
            None => return Poll::Ready(Err(WaitError::Pump(PumpError::LinkClosed))),
        };
        match done {
            Some(r) => {
                st.waits.remove(&id);
                Poll::Ready(Ok(r))
            }
            None => {
                drop(st);
                self.id = Some(Ok(id));
                Poll::Pending
            }
        }
    }
}

impl Drop for WaitFuture {
    /// Cancellation: abort a wait still pending and free its slot, so nothing is left in the
    /// engine or in the routing table.
    fn drop(&mut self) {
        let Some(Ok(id)) = self.id.take() else {
            return;
        };
        let now = self.shared.now();
        let mut st = self.shared.lock();
        st.waits.remove(&id);
        let _ = st.client.abort_wait(now, id);
        // Its result (aborted, or settled but not routed yet) is nobody's: free the slot now.
        let _ = st.client.take_result(id);
        st.route(now);
    }
}

/// The link's task: read, hand the bytes to the client, send what it gives, route its
/// events, sleep until its next deadline or the next bytes or a kick.
async fn drive(shared: Arc<Shared>, mut io: io::Io) {
    let mut buf = vec![0u8; RECV_BUF_LEN];
    let mut out = Vec::with_capacity(4 * MAX_FRAME_LEN);
    let mut ends = Vec::new();
    let framing = match io {
        io::Io::Udp(_) => Framing::Datagram,
        io::Io::Stream { .. } => Framing::Stream,
    };
    let mut generation = 0u64;
    let mut pause = PauseDetector::default();
    loop {
        let now = shared.now();
        let (deadline, closed) = {
            let st = shared.lock();
            (st.client.next_deadline(), st.closed)
        };
        if closed {
            return;
        }
        let timeout =
            deadline.map(|t| Duration::from_micros(t.saturating_since(now).total_micros()));
        let wake = match pause.sleep(now, timeout) {
            Some(sleep) => shared.at(now) + sleep,
            None => shared.start + Duration::from_secs(86_400 * 365),
        };
        let got = tokio::select! {
            r = io.recv(&mut buf) => Some(r),
            _ = tokio::time::sleep_until(wake) => None,
            _ = shared.kick.notified() => None,
        };
        let now = shared.now();
        {
            let mut st = shared.lock();
            // A task back much later than it planned was not running (the process was
            // stopped): the supervision's windows start over rather than report silence.
            if let Some(late_us) = pause.late_us(now) {
                st.client
                    .after_pause(now, nexus_core::Duration::from_micros(late_us));
            }
            match got {
                Some(Ok(n)) => {
                    st.client.handle_bytes(now, &buf[..n], framing, &mut ());
                }
                Some(Err(e)) => st.die(now, DeathCause::link_lost(&e)),
                None => st.wakes += 1,
            }
            st.transmit(now, &mut out, &mut ends);
            st.route(now);
            if let io::Io::Udp(u) = &io {
                st.peer = io.peer();
                if st.foreign != u.foreign {
                    st.foreign.clone_from(&u.foreign);
                }
            }
            st.publish();
        }
        if !ends.is_empty() {
            match io.send(&out, &ends).await {
                Ok(n) => shared.lock().tx_frames += n as u64,
                Err(e) => {
                    let mut st = shared.lock();
                    st.die(now, DeathCause::link_lost(&e));
                    st.route(now);
                }
            }
            out.clear();
            ends.clear();
        }
        generation += 1;
        shared.changed.send_replace(generation);
        let dead_stream = matches!(io, io::Io::Stream { .. }) && shared.lock().died.is_some();
        if dead_stream {
            // A stream that failed never reads again; wait for the close.
            loop {
                shared.kick.notified().await;
                if shared.lock().closed {
                    return;
                }
            }
        }
    }
}
