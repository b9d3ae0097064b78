//! The pump: one background thread that drives any number of vehicle links.
//!
//! Each link is a transport [`crate::transport::Link`], a core
//! [`nexus_core::frame::Decoder`] and a core [`nexus_core::Client`] with the
//! host's capacities ([`HostClient`]). The thread owns one mio `Poll` for all of them; user
//! threads hold [`Pump`] and [`LinkHandle`]s (both `Send + Sync`, cheap to clone) and reach the
//! thread through a channel and a `mio::Waker`.
//!
//! ```text
//!   user threads                        pump thread
//!   LinkHandle::register(wait) ──Cmd──▶ client.wait(now, &wait)
//!                                       readable: recv → feed → client.handle (each frame)
//!                                                 → poll_transmit until None, sent at once
//!                                       after the batch: poll_event → Settled → the caller's
//!   PendingWait::join_timeout ◀──slot── slot; Speedup → the run's speed control; the rest to
//!                                       the link's event log; the status published first
//!                                       timers: client.next_deadline (its supervision
//!                                       included), probe, params
//! ```
//!
//! Reactions (`then_rc`, `then_mode`) are applied by the core in the `handle` call that meets
//! the condition; the pump sends the frames they cause before it reads the next datagram and
//! before it wakes the waiting caller, so the command is on the wire before the wait returns.
//!
//! Time: the pump's [`Instant`](nexus_core::Instant) is wall microseconds since the pump
//! started; every engine timeout counts the autopilot's own clock, which the core reads from
//! telemetry.
//!
//! Lifetime: the thread stops when the last [`Pump`] handle (links hold one) is dropped. A
//! link closes when [`LinkHandle::close`] is called or its last handle is dropped: its waits end
//! `closed`, its socket closes. Nothing outlives its handles.

mod driver;
mod handle;
mod link;
mod param_reads;
mod params;
mod slot;
pub mod slow_link;
mod status;
mod supervise;

use std::fmt;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Sender, SyncSender};
use std::sync::{Arc, Condvar, Mutex, Weak};
use std::thread::{JoinHandle, ThreadId};
use std::time::Duration;

use nexus_core::client::ClientConfig;
use nexus_core::engine::Program;
use nexus_core::plan::Plan;
use nexus_core::Client;

use crate::transport::{ConnString, Link, LinkOptions, OpenError, PeerRule};

pub use handle::{
    LinkCtx, LinkHandle, PendingProgram, PendingWait, SendError, WaitError, WeakLink,
};
pub use param_reads::{set_end, set_not_sent, set_outcome, ParamAnswer, ParamReads};
pub use params::{Param, ParamError, PARAM_RETRY_MS};
pub use status::{
    LinkCounters, LinkEvent, LinkRtt, LinkStatus, MissionStatus, ProgramReport, TxRequests, Vitals,
    EVENT_LOG_LEN, NO_SPEED_CONTROL,
};
pub use supervise::{PauseDetector, Supervision, VehicleProbe, MAX_SLEEP_MS, PROBE_PERIOD_MS};

use crate::sync::{self, lock};
use link::LinkShared;

/// Concurrent waits per link (waits in flight, program steps included).
pub const WAITS: usize = 32;
/// STATUSTEXTs kept per link (a capped text wait resumed with `since_seq` finds them).
pub const TEXTS: usize = 64;
/// Largest mission a link holds, items.
pub const MISSION_ITEMS: usize = 1000;
/// Longest step program, steps.
pub const STEPS: usize = 64;

/// The core client every host link runs.
pub type HostClient = Client<WAITS, TEXTS, MISSION_ITEMS, STEPS>;
/// A step program a host link can run.
pub type HostProgram = Program<STEPS>;
/// A `.plan` a host link can upload.
pub type HostPlan = Plan<MISSION_ITEMS>;

/// Names a link within its pump.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LinkId(u64);

/// How a link is opened and supervised.
#[derive(Debug, Clone, Default)]
pub struct LinkConfig {
    /// Vehicle and own ids, offboard tolerances and retry policy.
    pub client: ClientConfig,
    /// Transport options (UDP receive buffer, TCP connect timeout).
    pub transport: LinkOptions,
    /// Stall limit and the vehicle's probe.
    pub supervision: Supervision,
}

/// Why the pump could not do something.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive] // more variants may come; match with a `_` arm
pub enum PumpError {
    /// The pump thread or its poll could not be created.
    #[error("the pump could not start: {0}")]
    Start(io::Error),
    /// The link could not be opened.
    #[error(transparent)]
    Open(#[from] OpenError),
    /// The link could not be registered with the pump's poll.
    #[error("cannot register the link with the pump: {0}")]
    Register(io::Error),
    /// The pump thread has stopped.
    #[error("the pump has stopped")]
    Stopped,
    /// The link was closed.
    #[error("the link is closed")]
    LinkClosed,
    /// A blocking pump call made from the pump thread itself (it would wait on itself).
    #[error("a blocking pump call from the pump thread itself")]
    Reentrant,
}

/// A wall-time span as the core counts it (µs, saturating).
pub(crate) fn core_duration(d: Duration) -> nexus_core::Duration {
    nexus_core::Duration::from_micros(u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
}

/// A span of the core's driver time as a wall-time span.
pub(crate) fn std_duration(d: nexus_core::Duration) -> Duration {
    Duration::from_micros(d.total_micros())
}

/// The pump's clock: wall microseconds since it started.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Clock {
    origin: std::time::Instant,
}

impl Clock {
    fn new() -> Self {
        Clock {
            origin: std::time::Instant::now(),
        }
    }

    pub fn now(&self) -> nexus_core::Instant {
        nexus_core::Instant::from_micros(self.origin.elapsed().as_micros() as u64)
    }
}

/// "Something was published": lets a caller sleep until the pump has news.
#[derive(Debug, Default)]
pub(crate) struct Notify {
    generation: Mutex<u64>,
    cv: Condvar,
    waiters: AtomicUsize,
}

impl Notify {
    /// Wake whoever waits (cheap when nobody does).
    pub fn bump(&self) {
        if self.waiters.load(Ordering::SeqCst) == 0 {
            return;
        }
        let mut g = lock(&self.generation);
        *g += 1;
        drop(g);
        self.cv.notify_all();
    }

    pub fn generation(&self) -> u64 {
        *lock(&self.generation)
    }

    /// Sleep until the generation moves past `seen` or `timeout` passes; the generation now.
    pub fn wait(&self, seen: u64, timeout: Duration) -> u64 {
        self.waiters.fetch_add(1, Ordering::SeqCst);
        let g = lock(&self.generation);
        let g = if *g == seen {
            sync::wait_timeout(&self.cv, g, timeout)
        } else {
            g
        };
        let now = *g;
        drop(g);
        self.waiters.fetch_sub(1, Ordering::SeqCst);
        now
    }
}

/// What runs after a call's frames went out and its news was published (the caller's reply,
/// so a caller never reads a status older than its own call).
pub(crate) type Reply = Box<dyn FnOnce() + Send>;
type CallFn = Box<dyn FnOnce(Option<LinkCtx<'_>>) -> Reply + Send>;

pub(crate) enum Cmd {
    AddLink {
        id: LinkId,
        link: Box<Link>,
        config: ClientConfig,
        supervision: Supervision,
        shared: Arc<LinkShared>,
        reply: SyncSender<io::Result<()>>,
    },
    RemoveLink {
        id: LinkId,
        reply: Option<SyncSender<()>>,
    },
    Call {
        id: LinkId,
        f: CallFn,
    },
    Shutdown,
}

/// A handle on a pump thread. Cheap to clone, `Send + Sync`; the thread stops (closing every
/// link on it) when the last handle, including those inside [`LinkHandle`]s, is dropped.
#[derive(Clone)]
pub struct Pump {
    inner: Arc<PumpInner>,
}

struct PumpInner {
    tx: Sender<Cmd>,
    waker: Arc<mio::Waker>,
    thread: Mutex<Option<JoinHandle<()>>>,
    thread_id: ThreadId,
    clock: Clock,
    notify: Arc<Notify>,
    next_id: AtomicU64,
    alive: Arc<AtomicBool>,
}

impl fmt::Debug for Pump {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pump")
            .field("thread", &self.inner.thread_id)
            .field("alive", &self.is_alive())
            .finish()
    }
}

/// The process-wide pump [`Pump::shared`] hands out while anyone holds it.
static SHARED: Mutex<Weak<PumpInner>> = Mutex::new(Weak::new());

/// Stack of the pump thread: clients are boxed, but a debug build copies them through it.
const PUMP_STACK: usize = 8 << 20;

/// Clears the pump's liveness flag however the thread ends, panics included.
struct AliveGuard(Arc<AtomicBool>);

impl Drop for AliveGuard {
    fn drop(&mut self) {
        self.0.store(false, Ordering::SeqCst);
    }
}

impl Pump {
    /// Start a pump thread of its own.
    pub fn start() -> Result<Pump, PumpError> {
        let poll = mio::Poll::new().map_err(PumpError::Start)?;
        let waker =
            Arc::new(mio::Waker::new(poll.registry(), driver::WAKER).map_err(PumpError::Start)?);
        let (tx, rx) = mpsc::channel();
        let clock = Clock::new();
        let notify = Arc::new(Notify::default());
        let alive = Arc::new(AtomicBool::new(true));
        let driver = driver::Driver::new(poll, rx, clock, Arc::clone(&notify), Arc::clone(&waker));
        let guard = AliveGuard(Arc::clone(&alive));
        let thread = std::thread::Builder::new()
            .name("nexus-pump".into())
            .stack_size(PUMP_STACK)
            .spawn(move || {
                let _guard = guard;
                driver.run();
            })
            .map_err(PumpError::Start)?;
        Ok(Pump {
            inner: Arc::new(PumpInner {
                tx,
                waker,
                thread_id: thread.thread().id(),
                thread: Mutex::new(Some(thread)),
                clock,
                notify,
                next_id: AtomicU64::new(1),
                alive,
            }),
        })
    }

    /// The process-wide pump: joined if one runs, started otherwise. It stops when the last
    /// handle on it goes.
    pub fn shared() -> Result<Pump, PumpError> {
        let mut g = lock(&SHARED);
        if let Some(inner) = g.upgrade() {
            if inner.alive.load(Ordering::SeqCst) {
                return Ok(Pump { inner });
            }
        }
        let p = Pump::start()?;
        *g = Arc::downgrade(&p.inner);
        Ok(p)
    }

    /// Whether the pump thread still runs.
    pub fn is_alive(&self) -> bool {
        self.inner.alive.load(Ordering::SeqCst)
    }

    /// Whether the calling thread is this pump's thread.
    pub fn is_pump_thread(&self) -> bool {
        std::thread::current().id() == self.inner.thread_id
    }

    /// Open `conn` (errors surface here, on the caller's thread) and hand it to the pump.
    pub fn open_link(
        &self,
        conn: &ConnString,
        config: LinkConfig,
    ) -> Result<LinkHandle, PumpError> {
        let link = Link::open_with(conn, &config.transport)?;
        self.add_link(link, config.client, config.supervision)
    }

    /// Hand an open link to the pump.
    ///
    /// A vehicle link never follows the most recent sender: a UDP link under
    /// [`PeerRule::MostRecent`], or waiting for any autopilot, is made to latch the first
    /// source of the target system's autopilot heartbeat (the vehicle's address, when the
    /// caller knows it, is [`PeerRule::Address`] in [`LinkOptions::peer`]).
    pub fn add_link(
        &self,
        mut link: Link,
        client: ClientConfig,
        supervision: Supervision,
    ) -> Result<LinkHandle, PumpError> {
        if self.is_pump_thread() {
            return Err(PumpError::Reentrant);
        }
        if matches!(
            link.peer_rule(),
            PeerRule::MostRecent | PeerRule::FirstAutopilot { sysid: None }
        ) {
            link.set_peer_rule(PeerRule::FirstAutopilot {
                sysid: Some(client.ids.target_sysid),
            });
        }
        let id = LinkId(self.inner.next_id.fetch_add(1, Ordering::Relaxed));
        let shared = Arc::new(LinkShared {
            conn: link.conn().clone(),
            local_addr: link.local_addr(),
            status: Mutex::new(LinkStatus::default()),
            events: Mutex::new(status::EventLog::default()),
        });
        let (reply, answer) = mpsc::sync_channel(1);
        self.send(Cmd::AddLink {
            id,
            link: Box::new(link),
            config: client,
            supervision,
            shared: Arc::clone(&shared),
            reply,
        })?;
        match answer.recv() {
            Ok(Ok(())) => Ok(LinkHandle::new(id, shared, self.clone())),
            Ok(Err(e)) => Err(PumpError::Register(e)),
            Err(_) => Err(PumpError::Stopped),
        }
    }

    pub(crate) fn send(&self, cmd: Cmd) -> Result<(), PumpError> {
        self.inner.tx.send(cmd).map_err(|_| PumpError::Stopped)?;
        self.inner.waker.wake().map_err(|_| PumpError::Stopped)
    }

    /// The pump's clock now (wall µs since it started).
    pub fn now(&self) -> nexus_core::Instant {
        self.inner.clock.now()
    }

    /// Sleep until the pump publishes something new (any link) or `timeout` passes; returns
    /// the publication generation to pass next time.
    pub fn wait_news(&self, seen: u64, timeout: Duration) -> u64 {
        self.inner.notify.wait(seen, timeout)
    }

    /// The publication generation now (see [`Pump::wait_news`]).
    pub fn news(&self) -> u64 {
        self.inner.notify.generation()
    }
}

impl Drop for PumpInner {
    fn drop(&mut self) {
        let _ = self.tx.send(Cmd::Shutdown);
        let _ = self.waker.wake();
        let t = lock(&self.thread).take();
        if let Some(t) = t {
            // Never join ourselves (a last handle dropped on the pump thread): it exits anyway.
            if t.thread().id() != std::thread::current().id() {
                let _ = t.join();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handles_cross_threads() {
        fn send_sync<T: Send + Sync>() {}
        send_sync::<Pump>();
        send_sync::<LinkHandle>();
        send_sync::<PendingWait>();
        send_sync::<LinkStatus>();
    }

    fn frame<M: mavlink::MessageData>(sysid: u8, msg: &M) -> Vec<u8> {
        let mut buf = [0u8; 300];
        let n = nexus_core::frame::Encoder::new(sysid, 1)
            .encode(msg, &mut buf)
            .unwrap();
        buf[..n].to_vec()
    }

    fn px4_heartbeat(armed: bool) -> nexus_core::mav::HEARTBEAT_DATA {
        use nexus_core::mav;
        let flags = if armed {
            mav::MavModeFlag::MAV_MODE_FLAG_SAFETY_ARMED
        } else {
            mav::MavModeFlag::empty()
        };
        nexus_core::offboard::wire::heartbeat(
            mav::MavType::MAV_TYPE_QUADROTOR,
            mav::MavAutopilot::MAV_AUTOPILOT_PX4,
            flags,
            0,
            mav::MavState::MAV_STATE_STANDBY,
        )
    }

    fn text(s: &str) -> nexus_core::mav::STATUSTEXT_DATA {
        let mut field = [0u8; 50];
        field[..s.len()].copy_from_slice(s.as_bytes());
        nexus_core::mav::STATUSTEXT_DATA {
            severity: nexus_core::mav::MavSeverity::MAV_SEVERITY_INFO,
            text: field.into(),
            id: 0,
            chunk_seq: 0,
        }
    }

    fn until(what: &str, f: impl Fn() -> bool) {
        let t0 = std::time::Instant::now();
        while !f() {
            assert!(t0.elapsed() < Duration::from_secs(5), "never: {what}");
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    /// The latch: before any autopilot heartbeat nothing is applied; the first source of
    /// system 1's autopilot heartbeat becomes the peer for good; a later impostor with the
    /// same system id is counted, reported and never applied, and never hears our replies.
    #[test]
    fn the_first_autopilot_heartbeat_latches_and_impostors_are_counted_not_applied() {
        use nexus_core::mav;
        use std::net::UdpSocket;

        let pump = Pump::start().unwrap();
        let link = pump
            .open_link(&"udpin:127.0.0.1:0".parse().unwrap(), LinkConfig::default())
            .unwrap();
        let to = link.local_addr().unwrap();
        let early = UdpSocket::bind("127.0.0.1:0").unwrap();
        let gcs = UdpSocket::bind("127.0.0.1:0").unwrap();
        let px4 = UdpSocket::bind("127.0.0.1:0").unwrap();
        let impostor = UdpSocket::bind("127.0.0.1:0").unwrap();
        for s in [&early, &gcs, &px4, &impostor] {
            s.set_read_timeout(Some(Duration::from_millis(1500)))
                .unwrap();
        }

        // Before the vehicle: a text of system 1 and a ground station's heartbeat of
        // system 1. Neither latches, neither is applied.
        early.send_to(&frame(1, &text("forged early")), to).unwrap();
        let gcs_hb = nexus_core::offboard::wire::heartbeat(
            mav::MavType::MAV_TYPE_GCS,
            mav::MavAutopilot::MAV_AUTOPILOT_INVALID,
            mav::MavModeFlag::empty(),
            0,
            mav::MavState::MAV_STATE_ACTIVE,
        );
        gcs.send_to(&frame(1, &gcs_hb), to).unwrap();
        until("two foreign datagrams counted", || {
            link.with_status(|s| s.foreign.datagrams() == 2)
        });
        let s = link.status();
        assert!(!s.connected);
        assert_eq!(s.peer, None);
        assert_eq!(s.counters.frames, 0, "nothing reached the decoder");

        // The vehicle: its autopilot heartbeat latches it.
        px4.send_to(&frame(1, &px4_heartbeat(false)), to).unwrap();
        until("connected", || link.with_status(|s| s.connected));
        assert_eq!(link.status().peer, Some(px4.local_addr().unwrap()));

        // The impostor: an armed heartbeat and a text, system 1, from another port.
        let mut forged = frame(1, &px4_heartbeat(true));
        forged.extend(frame(1, &text("forged text")));
        impostor.send_to(&forged, to).unwrap();
        // A text of the vehicle's cut across two datagrams, the impostor's between: a datagram
        // is never joined with the next, so neither half is applied (nor are the impostor's
        // bytes); the vehicle's next whole datagram is.
        let cut = frame(1, &text("cut in two"));
        px4.send_to(&cut[..10], to).unwrap();
        std::thread::sleep(Duration::from_millis(20));
        impostor.send_to(&forged, to).unwrap();
        std::thread::sleep(Duration::from_millis(20));
        px4.send_to(&cut[10..], to).unwrap();
        px4.send_to(&frame(1, &text("from the vehicle")), to)
            .unwrap();
        until("the vehicle's text", || {
            link.call(|ctx| ctx.client().telemetry().texts().after(0).count())
                .unwrap()
                == 1
        });
        let texts: Vec<String> = link
            .call(|ctx| {
                ctx.client()
                    .telemetry()
                    .texts()
                    .after(0)
                    .map(|t| t.text.as_str().to_string())
                    .collect()
            })
            .unwrap();
        assert_eq!(texts, ["from the vehicle"]);
        until("the impostor counted", || {
            link.with_status(|s| s.foreign.datagrams() == 4)
        });
        let s = link.status();
        assert!(!s.armed, "the forged armed heartbeat was applied");
        assert_eq!(
            s.peer,
            Some(px4.local_addr().unwrap()),
            "the peer never moves"
        );
        assert_eq!(s.counters.peer_changes, 1);
        assert_eq!(s.counters.crc_errors, 0);
        assert!(
            s.counters.dropped_bytes >= cut.len() as u64,
            "the halves are dropped and counted"
        );
        let bad = s
            .foreign
            .sources
            .iter()
            .find(|f| f.addr == impostor.local_addr().unwrap())
            .expect("the impostor is listed");
        assert_eq!((bad.counts.datagrams, bad.counts.frames), (2, 4));
        assert!(bad.counts.systems.contains(1));
        assert_eq!(
            bad.to_string(),
            format!(
                "ignored 4 frames from {} claiming system 1",
                impostor.local_addr().unwrap()
            )
        );
        assert_eq!(s.foreign.sources.len(), 3, "early, gcs, impostor");
        let announced: Vec<_> = link
            .events_since(0)
            .into_iter()
            .filter_map(|(_, e)| match e {
                LinkEvent::Ignored(Some(f)) => Some(f.addr),
                _ => None,
            })
            .collect();
        assert_eq!(announced.len(), 3, "each source once: {announced:?}");
        assert!(announced.contains(&impostor.local_addr().unwrap()));

        // Replies (our GCS heartbeat, once a second) go to the vehicle only.
        let mut buf = [0u8; 300];
        let (n, from) = px4.recv_from(&mut buf).expect("the vehicle hears us");
        assert!(n > 0);
        assert_eq!(from, to);
        for s in [&early, &gcs, &impostor] {
            assert!(s.recv_from(&mut buf).is_err(), "a foreign source heard us");
        }
    }

    #[test]
    fn the_shared_pump_is_one_while_held_and_stops_after() {
        let a = Pump::shared().unwrap();
        let b = Pump::shared().unwrap();
        assert!(Arc::ptr_eq(&a.inner, &b.inner));
        let alive = Arc::clone(&a.inner.alive);
        drop(a);
        assert!(alive.load(Ordering::SeqCst));
        drop(b);
        assert!(!alive.load(Ordering::SeqCst), "the thread was joined");
    }
}
