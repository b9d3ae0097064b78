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
//! * Signed links as the pump's: [`AsyncClient::open_signed`], or a signed run's key through
//!   [`AsyncClient::connect`].
//!
//! It is a crate of its own so that nexus-host's synchronous users never build tokio.
//!
//! Its verbs and queries are nexus-host's [`nexus_host::groups`] (action, mission, param,
//! telemetry, offboard, geofence, info), the very functions `OffboardClient` offers; bring
//! them into scope with [`prelude`]. What waits for the vehicle has the threaded client's
//! names, as futures: [`AsyncClient::wait`], [`AsyncClient::param_get`],
//! [`AsyncClient::set_param_wait`] (the host's parameter-read machine,
//! [`nexus_host::pump::ParamReads`], beside the client).
//!
//! ```no_run
//! # async fn f() -> Result<(), Box<dyn std::error::Error>> {
//! use nexus_tokio::prelude::*;
//! let op = AsyncClient::open("udpin:127.0.0.1:14540", Default::default()).await?;
//! let cruise = op.param_get("MPC_XY_CRUISE", std::time::Duration::from_secs(5)).await?;
//! assert!(cruise.as_real().is_some());
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
mod params;
mod state;
mod wait;

use std::sync::Arc;
use std::time::Duration;

use nexus_core::engine::{Wait, WaitResult};
use nexus_core::frame::MAX_FRAME_LEN;
use nexus_core::link::Framing;
use nexus_core::{Client, Instant};
use nexus_host::error::OffboardClientError;
use nexus_host::groups::Facade;
use nexus_host::launcher::DeathCause;
use nexus_host::offboard_client::OffboardOptions;
use nexus_host::pump::{LinkEvent, LinkStatus, PauseDetector, PumpError, WaitError};
use nexus_host::run::Run;
use nexus_host::signing::Signing;
use nexus_host::transport::{
    ConnString, ForeignTraffic, LinkError, OpenError, PeerRule, RECV_BUF_LEN,
};
use state::{Shared, Slot, State};

pub use nexus_host::pump::HostClient;
pub use wait::WaitFuture;

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
        AsyncClient::open_signed(conn, options, None).await
    }

    /// [`AsyncClient::open_conn`] on a signed link when `signing` is given (MAVLink 2
    /// signing, as the threaded pump's `Supervision::signing`): every frame sent is signed
    /// with its key, and what arrives is checked first (with `require_signed`, an unsigned
    /// or wrongly signed frame is never applied; counted in the status's
    /// `counters.signing`).
    pub async fn open_signed(
        conn: &ConnString,
        options: OffboardOptions,
        signing: Option<&Signing>,
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
        let state = State::new(Client::new(options.client_config()), io.peer(), signing);
        let shared = Arc::new(Shared::new(state));
        let local_addr = io.local_addr();
        tokio::spawn(drive(Arc::clone(&shared), io));
        Ok(AsyncClient { shared, local_addr })
    }

    /// Open a client on a real-time run's offboard link, taking frames only from the vehicle
    /// the run launched (signed with the run's key, if it has one), and wait up to `timeout` (wall time) for its heartbeat. (A lockstep run
    /// advances only through its own waits, `Run::wait` and `Run::until`: give this driver a
    /// real-time run.)
    pub async fn connect(sim: &Run, timeout: Duration) -> Result<AsyncClient, AsyncConnectError> {
        let port = sim.offboard_port()?;
        let (conn, options) = sim.client_link()?;
        // A signed run's links sign with its key, as the threaded client's do.
        let client = AsyncClient::open_signed(&conn, options, sim.options().signing.as_ref())
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
        let id = match (st.status.closed, st.client.wait(now, wait)) {
            (true, _) => Err(WaitError::Pump(PumpError::LinkClosed)),
            (false, Ok(id)) => Ok(id),
            (false, Err(e)) => Err(WaitError::Refused(e)),
        };
        if let Ok(id) = id {
            st.waits.insert(id, Slot::default());
            if let Some(cause) = &st.status.died {
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
        self.shared.lock().status.peer
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
        self.shared.lock().status.died.clone()
    }

    /// Close the link: pending waits end `closed`, the task stops. Idempotent.
    pub fn close(&self) {
        self.shared.close();
    }
}

impl Facade for AsyncClient {
    fn read_status<R>(&self, f: impl FnOnce(&LinkStatus) -> R) -> R {
        let st = self.shared.lock();
        if st.status.closed {
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
        if st.status.closed {
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
            (st.deadline(), st.status.closed)
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
                Some(Ok(n)) => st.handle_bytes(now, &buf[..n], framing),
                Some(Err(e)) => st.die(now, DeathCause::link_lost(&e)),
                None => st.wakes += 1,
            }
            st.transmit(now, &mut out, &mut ends);
            st.route(now);
            if let io::Io::Udp(u) = &io {
                st.status.peer = io.peer();
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
        let dead_stream =
            matches!(io, io::Io::Stream { .. }) && shared.lock().status.died.is_some();
        if dead_stream {
            // A stream that failed never reads again; wait for the close.
            loop {
                shared.kick.notified().await;
                if shared.lock().status.closed {
                    return;
                }
            }
        }
    }
}
