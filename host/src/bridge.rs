//! A MAVLink bridge between a byte stream (serial port, TCP) and datagrams (UDP), or any two
//! links: what a bench rig needs to put a flight controller's UART, or QEMU's emulated one, on
//! the network next to a (simulated) vehicle.
//!
//! ```no_run
//! use nexus_host::bridge::{bridge, BridgeOptions};
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // A flight controller on a USB serial adapter, reachable by QGroundControl on UDP 14550.
//! let b = bridge(
//!     &"serial:/dev/ttyUSB0:921600".parse()?,
//!     &"udpin:0.0.0.0:14550".parse()?,
//!     BridgeOptions::default(),
//! )?;
//! println!("{:?}", b.stats());
//! b.stop()?; // or drop it
//! # Ok(())
//! # }
//! ```
//!
//! # What crosses
//! * **Stream → anything**: the bytes are cut into MAVLink frames by the core's resynchronising
//!   [`Decoder`](nexus_core::frame::Decoder), and each checked frame is forwarded alone, byte
//!   for byte (a signed frame keeps its signature): every datagram carries exactly one whole
//!   frame. Line noise, truncated and corrupt frames are dropped and counted. Frames of another
//!   dialect cannot be checked (no CRC_EXTRA for their id) and are dropped too, counted as bad
//!   frames: only the common dialect crosses from a stream.
//! * **Datagram → datagram**: each datagram as it came.
//! * **Datagram → stream**: each datagram's bytes as they came; with a message filter
//!   ([`BridgeOptions::stream_filter`]) the datagram is cut into checked frames and only the
//!   allowed ones are written; on a paced or impaired stream side it is cut into frames too,
//!   so the line drops frames, not whole datagrams.
//!
//! A serial port paces itself; a TCP stream standing in for one (QEMU's UART) does not, so
//! [`BridgeOptions::stream_baud`] paces the bytes written to a stream side like a UART of that
//! rate, with a bounded backlog (see [`throttle`]).
//!
//! # Impairment
//! [`BridgeOptions::impair`] ([`impair`]) drops, delays, duplicates and reorders what crosses,
//! and limits every side's byte rate, deterministically: a radio on the bench.
//!
//! # Threads
//! [`bridge`] opens both links at once (every OS error surfaces there) and runs them on one
//! thread around one mio `Poll`. [`Bridge::stop`] or dropping the handle stops and joins it;
//! a lost link (a `tcp:` server gone, a serial adapter unplugged) ends it with an error
//! ([`Bridge::stop`] returns it). Nothing outlives the handle.

mod framer;
pub mod impair;
pub mod throttle;

use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Instant;

use crate::sync::lock;
use crate::transport::mio::{Events, Poll, Token, Waker};
use crate::transport::{ConnString, Framing, Link, LinkOptions, OpenError, PeerRule, SendOutcome};
use framer::Framer;
use impair::{Impairer, Impairment};
use throttle::Throttle;

/// Default most bytes a paced stream side holds back before it drops frames: about a tenth of
/// a second at 230 400 baud, about the buffers between a UART and its driver.
pub const DEFAULT_BACKLOG_BYTES: usize = 2048;

/// `SO_SNDBUF` asked for on a paced TCP side (unless [`LinkOptions::send_buffer_bytes`] says
/// otherwise; Linux doubles it and keeps a floor of about 4.6 KB): a reader slower than the
/// line then pushes back within a few frames, and the frames wait in the bounded backlog
/// instead of in kernel buffers that grow to megabytes on loopback.
pub const PACED_SEND_BUFFER_BYTES: usize = 2048;

const FROM: Token = Token(0);
const TO: Token = Token(1);
const WAKE: Token = Token(2);
/// Read buffer: holds any datagram whole.
const RECV_LEN: usize = 65_536;

/// Which messages may be written to a stream side.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive] // more variants may come; match with a `_` arm
pub enum MsgFilter {
    /// Everything (datagrams are written as they came).
    #[default]
    All,
    /// Only the messages nexus-core decodes ([`nexus_core::msg::is_decoded`]): the telemetry,
    /// mission and command traffic a core on an MCU reads, without the bulk it skips.
    CoreSubset,
    /// Only these message ids.
    Ids(Vec<u32>),
}

impl MsgFilter {
    fn allows(&self, msgid: u32) -> bool {
        match self {
            MsgFilter::All => true,
            MsgFilter::CoreSubset => nexus_core::msg::is_decoded(msgid),
            MsgFilter::Ids(ids) => ids.contains(&msgid),
        }
    }
}

/// Which link of a bridge: `A` the first (`from`), `B` the second (`to`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BridgeSide {
    /// The first link.
    A,
    /// The second link.
    B,
}

/// One side of a bridge is a signed link (a signed radio behind an unsigned local link):
/// frames the bridge writes to it are signed (those already signed pass intact), frames
/// received from it are verified; those failing the check ([`Signing::require_signed`]:
/// unsigned ones too) are dropped and counted, never forwarded. Frames crossing to the other
/// side keep their signatures.
///
/// [`Signing::require_signed`]: crate::signing::Signing::require_signed
#[derive(Debug, Clone, PartialEq)]
pub struct BridgeSigning {
    /// The signed side.
    pub side: BridgeSide,
    /// Its key and policy.
    pub signing: crate::signing::Signing,
}

/// How the bridge treats the stream side(s), the narrow link.
#[derive(Debug, Clone, PartialEq)]
pub struct BridgeOptions {
    /// Pace bytes written to a stream side like a UART at this many bits/s (8N1: ten bits a
    /// byte). `None`: as fast as the link takes them (right for a real serial port).
    pub stream_baud: Option<u32>,
    /// With `stream_baud`: most bytes held back before frames are dropped whole, telemetry
    /// first (a reply or an event takes the place of the oldest telemetry waiting). The line
    /// is flow-controlled: while the reader has not taken the last frame, frames wait here, so
    /// a reader slower than the baud rate loses frames rather than falling ever further behind.
    pub stream_backlog_bytes: usize,
    /// Which messages are written to a stream side.
    pub stream_filter: MsgFilter,
    /// How the links are opened (UDP receive buffer, TCP connect timeout).
    pub link: LinkOptions,
    /// Where every frame the bridge receives is recorded (`--tlog`), before any filter: from
    /// the first link as [`crate::tlog::Direction::Received`], from the second as `Sent`.
    pub tlog: Option<crate::tlog::Tlog>,
    /// Loss, latency, jitter, duplication, reordering and a byte-rate limit applied to both
    /// directions (default: none).
    pub impair: Impairment,
    /// Sign and verify at one side (`None`: every frame crosses as it came, signed or not).
    pub signing: Option<BridgeSigning>,
}

impl Default for BridgeOptions {
    fn default() -> Self {
        BridgeOptions {
            stream_baud: None,
            stream_backlog_bytes: DEFAULT_BACKLOG_BYTES,
            stream_filter: MsgFilter::All,
            link: LinkOptions::default(),
            tlog: None,
            impair: Impairment::default(),
            signing: None,
        }
    }
}

/// Counters of one direction.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive] // more fields may come
pub struct DirectionStats {
    /// Bytes received on the source side.
    pub bytes_in: u64,
    /// Datagrams (datagram source) or checked frames (stream source) received.
    pub units_in: u64,
    /// Frames or datagrams written to the destination.
    pub units_out: u64,
    /// Bytes written to the destination.
    pub bytes_out: u64,
    /// Frames the message filter held back.
    pub filtered: u64,
    /// Frames dropped because the paced backlog was full.
    pub throttled: u64,
    /// Frames dropped by the destination link (congested: UDP buffer or stream queue full).
    pub congested: u64,
    /// Frames dropped because the destination had no peer yet (`udpin` before anyone spoke,
    /// `tcpin` with nobody connected).
    pub no_peer: u64,
    /// Source bytes that belonged to no checked frame (line noise, cut frames), when the
    /// source is framed.
    pub garbage_bytes: u64,
    /// Frame candidates that failed their checksum or had an id outside the common dialect.
    pub bad_frames: u64,
    /// Bytes waiting in the paced backlog now.
    pub backlog_bytes: u64,
    /// Datagrams a UDP source side received from senders other than its latched peer:
    /// counted, never forwarded.
    pub ignored: u64,
    /// Frames the impairment dropped ([`BridgeOptions::impair`] loss).
    pub impair_lost: u64,
    /// Frames the impairment sent twice.
    pub impair_duplicated: u64,
    /// Frames the impairment held back so that later ones overtook them.
    pub impair_reordered: u64,
    /// Frames signed on their way to the signed side ([`BridgeOptions::signing`]).
    pub signed_out: u64,
    /// Frames from the signed side that failed the signing check: dropped.
    pub signing_rejected: u64,
}

/// Counters of both directions.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive] // more fields may come
pub struct BridgeStats {
    /// From the first link (FROM) to the second (TO).
    pub forward: DirectionStats,
    /// From TO back to FROM.
    pub backward: DirectionStats,
}

/// Why a bridge could not start or stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive] // more variants may come; match with a `_` arm
pub enum BridgeError {
    /// A link could not be opened.
    #[error(transparent)]
    Open(#[from] OpenError),
    /// An option is out of range.
    #[error("bridge: {0}")]
    InvalidOption(&'static str),
    /// The poll (or its waker) could not be set up, or failed.
    #[error("bridge: poll failed: {0}")]
    Poll(#[source] io::Error),
    /// A link failed while running (server closed, device gone).
    #[error("bridge: {conn} lost: {source}")]
    Lost {
        /// The link.
        conn: ConnString,
        /// The OS error.
        source: io::Error,
    },
    /// The bridge thread could not start, or panicked.
    #[error("bridge: thread failed: {0}")]
    Thread(String),
}

/// A running bridge. Dropping it stops and joins its thread.
#[derive(Debug)]
pub struct Bridge {
    stop: Arc<AtomicBool>,
    waker: Arc<Waker>,
    thread: Option<JoinHandle<Result<(), BridgeError>>>,
    stats: Arc<Mutex<BridgeStats>>,
    from_addr: Option<SocketAddr>,
    to_addr: Option<SocketAddr>,
}

/// Open `from` and `to` and forward MAVLink between them on a new thread until stopped.
pub fn bridge(
    from: &ConnString,
    to: &ConnString,
    opts: BridgeOptions,
) -> Result<Bridge, BridgeError> {
    if opts.stream_baud == Some(0) {
        return Err(BridgeError::InvalidOption("stream baud must be above 0"));
    }
    opts.impair.check().map_err(BridgeError::InvalidOption)?;
    let poll = Poll::new().map_err(BridgeError::Poll)?;
    let waker = Arc::new(Waker::new(poll.registry(), WAKE).map_err(BridgeError::Poll)?);
    // Frames written to `a` travel backward (direction 1), to `b` forward (0).
    let mut a = Side::open(from, &opts, 1, BridgeSide::A)?;
    let mut b = Side::open(to, &opts, 0, BridgeSide::B)?;
    a.link
        .register(poll.registry(), FROM)
        .map_err(BridgeError::Poll)?;
    b.link
        .register(poll.registry(), TO)
        .map_err(BridgeError::Poll)?;
    let (from_addr, to_addr) = (a.link.local_addr(), b.link.local_addr());
    let stop = Arc::new(AtomicBool::new(false));
    let stats = Arc::new(Mutex::new(BridgeStats::default()));
    let (stop2, stats2) = (stop.clone(), stats.clone());
    let thread = std::thread::Builder::new()
        .name("nexus-bridge".into())
        .spawn(move || {
            let mut r = Runner {
                poll,
                a,
                b,
                opts,
                stop: stop2,
                shared: stats2,
                stats: BridgeStats::default(),
            };
            r.run()
        })
        .map_err(|e| BridgeError::Thread(e.to_string()))?;
    Ok(Bridge {
        stop,
        waker,
        thread: Some(thread),
        stats,
        from_addr,
        to_addr,
    })
}

impl Bridge {
    /// Counters so far.
    pub fn stats(&self) -> BridgeStats {
        *lock(&self.stats)
    }

    /// Local address of the FROM link (with the OS-chosen port when 0 was asked); `None` for
    /// serial.
    pub fn from_local_addr(&self) -> Option<SocketAddr> {
        self.from_addr
    }

    /// Local address of the TO link; `None` for serial.
    pub fn to_local_addr(&self) -> Option<SocketAddr> {
        self.to_addr
    }

    /// Whether the bridge thread still runs (false once a link was lost).
    pub fn is_running(&self) -> bool {
        self.thread.as_ref().is_some_and(|t| !t.is_finished())
    }

    /// Stop the bridge, close both links, join the thread. The final counters, or why the
    /// bridge had already stopped.
    pub fn stop(mut self) -> Result<BridgeStats, BridgeError> {
        self.shutdown()?;
        Ok(self.stats())
    }

    fn shutdown(&mut self) -> Result<(), BridgeError> {
        let Some(t) = self.thread.take() else {
            return Ok(());
        };
        self.stop.store(true, Ordering::SeqCst);
        // If the wake fails the thread is already gone (its poll closed): join returns at once.
        let _ = self.waker.wake();
        match t.join() {
            Ok(r) => r,
            Err(_) => Err(BridgeError::Thread("the bridge thread panicked".into())),
        }
    }
}

impl Drop for Bridge {
    fn drop(&mut self) {
        let _ = self.shutdown();
    }
}

/// One link and what the bridge keeps for it.
#[derive(Debug)]
struct Side {
    link: Link,
    framing: Framing,
    /// Frames arriving from this side (stream input, or filtered datagrams).
    framer: Framer,
    epoch: u64,
    /// Pacing of bytes written to this side (stream sides with a baud; any side under an
    /// impairment's rate limit).
    throttle: Option<Throttle>,
    /// Impairment of the frames written to this side.
    impairer: Option<Impairer>,
    /// The signed side's signer and verifier.
    signing: Option<SideSigning>,
}

/// A signed side's signer and verifier.
#[derive(Debug)]
struct SideSigning {
    link: crate::signing::LinkSigning,
    /// Cuts a checked frame again for the verifier.
    check: nexus_core::frame::Decoder,
    /// When the bridge started (the signing clock's zero).
    origin: Instant,
}

impl SideSigning {
    fn now(&self) -> nexus_core::Instant {
        nexus_core::Instant::from_micros(self.origin.elapsed().as_micros() as u64)
    }
}

/// Whether a frame received from a side passes its signing check (always, on an unsigned
/// side).
fn verified(signing: &mut Option<SideSigning>, frame: &[u8]) -> bool {
    let Some(s) = signing.as_mut() else {
        return true;
    };
    let now = s.now();
    s.check = nexus_core::frame::Decoder::new();
    match s.check.feed(frame).1 {
        Some(raw) => s.link.check(now, &raw).accepted(),
        None => false,
    }
}

impl Side {
    fn open(
        conn: &ConnString,
        opts: &BridgeOptions,
        direction: u64,
        side: BridgeSide,
    ) -> Result<Side, BridgeError> {
        let mut link_opts = opts.link.clone();
        if (opts.stream_baud.is_some() || opts.impair.rate_baud.is_some())
            && link_opts.send_buffer_bytes.is_none()
        {
            link_opts.send_buffer_bytes = Some(PACED_SEND_BUFFER_BYTES);
        }
        let mut link = Link::open_with(conn, &link_opts)?;
        // A UDP side takes one peer, the first source of a heartbeat (the vehicle or the
        // ground station), for the life of the bridge, as PX4 latches its client; others are
        // counted in `ignored`, never forwarded.
        if !link.peer_rule().latches() {
            link.set_peer_rule(PeerRule::FirstHeartbeat);
        }
        let framing = link.framing();
        let baud = match (framing, opts.stream_baud, opts.impair.rate_baud) {
            // The slower line wins.
            (Framing::Stream, Some(b), Some(r)) => Some(b.min(r)),
            (Framing::Stream, Some(b), None) => Some(b),
            (_, _, r) => r,
        };
        let throttle =
            baud.map(|baud| Throttle::new(baud, opts.stream_backlog_bytes, Instant::now()));
        let impairer = opts
            .impair
            .is_active()
            .then(|| Impairer::new(opts.impair, direction));
        Ok(Side {
            epoch: link.peer_epoch(),
            link,
            framing,
            framer: Framer::default(),
            throttle,
            impairer,
            signing: opts
                .signing
                .as_ref()
                .filter(|s| s.side == side)
                .map(|s| SideSigning {
                    link: crate::signing::LinkSigning::new(&s.signing, nexus_core::Instant::ZERO),
                    check: nexus_core::frame::Decoder::new(),
                    origin: Instant::now(),
                }),
        })
    }

    fn lost(&self, source: io::Error) -> BridgeError {
        BridgeError::Lost {
            conn: self.link.conn().clone(),
            source,
        }
    }

    /// Write one frame or datagram now.
    fn send(&mut self, unit: &[u8], st: &mut DirectionStats) -> Result<(), BridgeError> {
        match self.link.send(unit).map_err(|e| self.lost(e))? {
            SendOutcome::Sent | SendOutcome::Queued => {
                st.units_out += 1;
                st.bytes_out += unit.len() as u64;
            }
            SendOutcome::Dropped => st.congested += 1,
            SendOutcome::NoPeer => st.no_peer += 1,
        }
        Ok(())
    }

    /// Write a unit, through the impairment and the pacing if this side has them; signed
    /// first when this is the signed side (a frame that is signed already, or cannot be,
    /// as it came).
    fn deliver(&mut self, unit: &[u8], st: &mut DirectionStats) -> Result<(), BridgeError> {
        if let Some(s) = self.signing.as_mut() {
            let now = s.now();
            let mut buf = [0u8; nexus_core::frame::MAX_FRAME_LEN];
            if unit.len() <= buf.len() && unit.first() == Some(&0xFD) && unit.get(2) == Some(&0) {
                buf[..unit.len()].copy_from_slice(unit);
                let n = s.link.sign(now, &mut buf, unit.len());
                if n != unit.len() {
                    st.signed_out += 1;
                }
                return self.deliver_as_is(&buf[..n], st);
            }
        }
        self.deliver_as_is(unit, st)
    }

    fn deliver_as_is(&mut self, unit: &[u8], st: &mut DirectionStats) -> Result<(), BridgeError> {
        if let Some(imp) = self.impairer.as_mut() {
            imp.offer(unit, Instant::now(), st);
            return Ok(());
        }
        self.pace(unit, st)
    }

    /// Write a unit through the pacing if this side has one.
    fn pace(&mut self, unit: &[u8], st: &mut DirectionStats) -> Result<(), BridgeError> {
        match self.throttle.as_mut() {
            Some(t) => {
                st.throttled += t.offer(unit) as u64;
                Ok(())
            }
            None => self.send(unit, st),
        }
    }

    /// Write what the impairment's delays and the pacing allow now.
    fn release(&mut self, now: Instant, st: &mut DirectionStats) -> Result<(), BridgeError> {
        if let Some(mut imp) = self.impairer.take() {
            let mut result = Ok(());
            imp.release(now, |frame| {
                if result.is_ok() {
                    result = self.pace(frame, st);
                }
            });
            self.impairer = Some(imp);
            result?;
        }
        let Some(mut t) = self.throttle.take() else {
            return Ok(());
        };
        let mut result = Ok(());
        t.release(now, |frame| {
            if result.is_err() {
                return false;
            }
            // Flow control: while the reader has not taken the last frame (it waits in the
            // link's queue), the next one waits in the bounded backlog.
            if self.link.pending_bytes() > 0 {
                if let Err(e) = self.link.flush() {
                    result = Err(self.lost(e));
                    return false;
                }
                if self.link.pending_bytes() > 0 {
                    return false;
                }
            }
            result = self.send(frame, st);
            true
        });
        st.backlog_bytes = t.queued_bytes() as u64;
        self.throttle = Some(t);
        result
    }
}

/// The bridge thread's state.
struct Runner {
    poll: Poll,
    a: Side,
    b: Side,
    opts: BridgeOptions,
    stop: Arc<AtomicBool>,
    shared: Arc<Mutex<BridgeStats>>,
    stats: BridgeStats,
}

impl Runner {
    fn run(&mut self) -> Result<(), BridgeError> {
        let mut events = Events::with_capacity(16);
        let mut buf = vec![0u8; RECV_LEN];
        let result = loop {
            let now = Instant::now();
            let timeout = [&self.a, &self.b]
                .iter()
                .flat_map(|s| {
                    [
                        s.throttle.as_ref().and_then(|t| t.next_release(now)),
                        s.impairer.as_ref().and_then(|i| i.next_release(now)),
                    ]
                })
                .flatten()
                .min();
            if let Err(e) = self.poll.poll(&mut events, timeout) {
                if e.kind() != io::ErrorKind::Interrupted {
                    break Err(BridgeError::Poll(e));
                }
            }
            if self.stop.load(Ordering::SeqCst) {
                break Ok(());
            }
            // Edge-triggered: drain both sides whatever woke us, then flush and pace.
            if let Err(e) = self.turn(&mut buf) {
                break Err(e);
            }
            *lock(&self.shared) = self.stats;
        };
        *lock(&self.shared) = self.stats;
        result
    }

    fn turn(&mut self, buf: &mut [u8]) -> Result<(), BridgeError> {
        let filter = &self.opts.stream_filter;
        let tlog = self.opts.tlog.as_ref();
        forward(
            &mut self.a,
            &mut self.b,
            filter,
            &mut self.stats.forward,
            buf,
            tlog.map(|t| (t, crate::tlog::Direction::Received)),
        )?;
        forward(
            &mut self.b,
            &mut self.a,
            filter,
            &mut self.stats.backward,
            buf,
            tlog.map(|t| (t, crate::tlog::Direction::Sent)),
        )?;
        let now = Instant::now();
        self.b.release(now, &mut self.stats.forward)?;
        self.a.release(now, &mut self.stats.backward)?;
        for side in [&mut self.a, &mut self.b] {
            side.link.flush().map_err(|e| side.lost(e))?;
        }
        Ok(())
    }
}

/// Move everything `src` has received to `dst`.
fn forward(
    src: &mut Side,
    dst: &mut Side,
    filter: &MsgFilter,
    st: &mut DirectionStats,
    buf: &mut [u8],
    tlog: Option<(&crate::tlog::Tlog, crate::tlog::Direction)>,
) -> Result<(), BridgeError> {
    let framed_src = src.framing == Framing::Stream;
    // Into a stream, a datagram is cut into frames when a filter picks them, and when the
    // line is paced or impaired: a slow line (a radio) then drops frames, not whole
    // datagrams of many.
    let filtered = dst.framing == Framing::Stream
        && (*filter != MsgFilter::All || dst.throttle.is_some() || dst.impairer.is_some());
    // Signing and verifying work on whole frames: a datagram is cut into them.
    let cut = filtered || src.signing.is_some() || dst.signing.is_some();
    while let Some(n) = src.link.recv(buf).map_err(|e| src.lost(e))? {
        if n == 0 {
            // Foreign datagrams set aside; more may be waiting.
            continue;
        }
        st.bytes_in += n as u64;
        let epoch = src.link.peer_epoch();
        if epoch != src.epoch {
            src.epoch = epoch;
            if framed_src {
                src.framer.reset();
            }
        }
        let input = &buf[..n];
        if let (Some((t, dir)), false) = (tlog, framed_src) {
            crate::tlog::record_datagram(t, dir, input);
        }
        if !framed_src && !cut {
            st.units_in += 1;
            dst.deliver(input, st)?;
            continue;
        }
        if !framed_src {
            st.units_in += 1;
        }
        let mut result = Ok(());
        src.framer.push(input, |msgid, frame| {
            if framed_src {
                st.units_in += 1;
                if let Some((t, dir)) = tlog {
                    t.record(dir, frame);
                }
            }
            if result.is_err() {
                return;
            }
            if filtered && !filter.allows(msgid) {
                st.filtered += 1;
                return;
            }
            if !verified(&mut src.signing, frame) {
                st.signing_rejected += 1;
                return;
            }
            result = dst.deliver(frame, st);
        });
        result?;
        let d = src.framer.stats();
        st.garbage_bytes = u64::from(d.dropped_bytes);
        st.bad_frames = u64::from(d.crc_errors) + u64::from(d.unknown_ids);
    }
    st.ignored = src.link.foreign().map_or(0, |f| f.datagrams());
    Ok(())
}
