//! The firmware's main loop around a sans-IO node: bytes in, bytes out, sleep.
//!
//! nexus-core is driven the same way everywhere (docs/design.md §One path): hand it what the
//! transport read, ask it what to send, sleep until its deadline or the next byte. [`Node`] is
//! that contract as the firmware sees it: the bring-up check (`link_check`, over bare
//! telemetry) and the mission firmware (`mission::MissionFlight`, over
//! `nexus_core::client::Client`, whose `handle_stream_bytes`, `poll_transmit` and
//! `next_deadline` map one to one) implement it; the outcome comes from the node's events.
//!
//! [`Pump::run`] owns the loop and only moves bytes: it reads what the UART holds, hands it
//! over as a chunk of a byte stream (the core frames it, checks each frame, decodes its subset
//! and counts the rest: [`nexus_core::link`]), writes whatever the node wants sent, and sleeps
//! with WFI when there is nothing to do. A wall-clock cap ends any run that the node does not
//! end itself.

use embedded_io::{Read, ReadReady, Write};
use nexus_core::frame::{DecoderStats, MAX_FRAME_LEN};
use nexus_core::link::{RxStats, Tap};
use nexus_core::{Duration, Instant};

use crate::clock;

/// The link's signing (feature `signing`): a signer for what goes out, a verifier of what comes
/// in, and the frames refused.
#[cfg(feature = "signing")]
pub struct LinkSigning {
    signer: nexus_core::frame::signing::Signer,
    verifier: nexus_core::frame::signing::Verifier<2>,
    clock: nexus_core::frame::signing::SigningClock,
    /// Frames that failed the check (never handed to the node).
    pub rejected: u32,
}

/// The core's byte path asks it of every checked frame: only frames that pass reach the node.
#[cfg(feature = "signing")]
impl Tap for LinkSigning {
    fn admit(&mut self, now: Instant, raw: &nexus_core::frame::RawFrame<'_>) -> bool {
        let ok = self.verifier.check(raw, self.clock.at(now)).accepted();
        if !ok {
            self.rejected = self.rejected.saturating_add(1);
        }
        ok
    }
}

#[cfg(feature = "signing")]
impl LinkSigning {
    fn new() -> Self {
        use nexus_core::frame::signing::{
            Signer, SigningClock, SigningKey, Verifier, VerifyPolicy,
        };
        let key = SigningKey::new(BUILD_KEY);
        // No wall clock on the board: timestamps count from boot, and the verifier's window
        // follows the vehicle's first accepted timestamp.
        let clock = SigningClock::default();
        LinkSigning {
            signer: Signer::new(key.clone(), 0, clock),
            verifier: Verifier::new(key, VerifyPolicy::PX4_ALWAYS),
            clock,
            rejected: 0,
        }
    }

    /// Sign the frame `tx[..len]` in place: its new length, `None` if it cannot be signed
    /// (never a frame of the core's).
    pub(crate) fn seal(&mut self, now: Instant, tx: &mut [u8], len: usize) -> Option<usize> {
        self.signer.sign(now, tx, len).ok()
    }
}

/// Without the `signing` feature: every frame in, every frame out as it is (no code).
#[cfg(not(feature = "signing"))]
pub struct LinkSigning;

#[cfg(not(feature = "signing"))]
impl Tap for LinkSigning {}

#[cfg(not(feature = "signing"))]
impl LinkSigning {
    fn new() -> Self {
        LinkSigning
    }

    #[inline(always)]
    pub(crate) fn seal(&mut self, _now: Instant, _tx: &mut [u8], len: usize) -> Option<usize> {
        Some(len)
    }
}

/// The build's key: `NEXUS_FIRMWARE_SIGNING_KEY` (64 hex digits), else a fixed demonstration
/// key. Evaluated when compiling: a malformed key fails the build, never the board.
#[cfg(feature = "signing")]
const BUILD_KEY: [u8; 32] = {
    const fn nibble(c: u8) -> u8 {
        match c {
            b'0'..=b'9' => c - b'0',
            b'a'..=b'f' => c - b'a' + 10,
            b'A'..=b'F' => c - b'A' + 10,
            _ => panic!("NEXUS_FIRMWARE_SIGNING_KEY: not a hex digit"),
        }
    }
    match option_env!("NEXUS_FIRMWARE_SIGNING_KEY") {
        None => *b"nexus firmware demonstration key",
        Some(h) => {
            let hex = h.as_bytes();
            assert!(
                hex.len() == 64,
                "NEXUS_FIRMWARE_SIGNING_KEY: give 64 hex digits"
            );
            let mut key = [0u8; 32];
            let mut i = 0;
            while i < 32 {
                key[i] = nibble(hex[2 * i]) << 4 | nibble(hex[2 * i + 1]);
                i += 1;
            }
            key
        }
    }
};

/// Reads of the UART per loop turn before the node gets a chance to transmit.
const READS_PER_TURN: usize = 8;

/// Bytes taken from the UART per read (its receive queue holds more; the rest waits).
pub(crate) const READ_CHUNK: usize = 64;

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Outcome {
    /// The node reached its goal.
    Success,
    /// The node gave up, for the reason given.
    Failure(&'static str),
    /// The run hit [`Pump::run`]'s wall-clock cap before the node finished.
    WallCap,
}

impl Outcome {
    /// Whether the run succeeded.
    pub fn is_success(self) -> bool {
        self == Outcome::Success
    }
}

/// A sans-IO protocol machine the pump can drive.
pub trait Node {
    /// A chunk of the byte stream the UART read at `now`; `tap` admits each checked frame
    /// (the link's signature check) before the node takes it from any sender (the node
    /// filters, as `Telemetry::handle` does).
    fn handle_stream_bytes(&mut self, now: Instant, chunk: &[u8], tap: &mut LinkSigning);

    /// The next frame the node wants sent now, encoded into `buf` (at least
    /// [`MAX_FRAME_LEN`] bytes); its length, or `None` when nothing is due.
    fn poll_transmit(&mut self, now: Instant, buf: &mut [u8]) -> Option<usize>;

    /// The driver time at which the node wants to run again if nothing arrives (never one
    /// already due once `poll_transmit` found nothing).
    fn next_deadline(&self) -> Option<Instant>;

    /// `Some` once the node has finished.
    fn poll_outcome(&mut self, now: Instant) -> Option<Outcome>;

    /// What its byte path has seen.
    fn rx_stats(&self) -> RxStats;
}

/// Counters of the link, for the exit report.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct LinkStats {
    /// The framer's counters (frames, checksum errors, unknown ids, dropped bytes).
    pub decoder: DecoderStats,
    /// Frames decoded and handed to the node.
    pub handled: u32,
    /// Checked frames of messages outside the core's subset.
    pub skipped: u32,
    /// Checked frames whose payload did not decode (an out-of-range enum, say).
    pub malformed: u32,
    /// Reader errors or end of stream (never on the UART).
    pub read_errors: u32,
    /// Frames written.
    pub sent: u32,
}

/// The next frame `node` wants sent now, encoded into `tx`.
pub(crate) fn next_frame<'t, N: Node>(
    tx: &'t mut [u8; MAX_FRAME_LEN],
    node: &mut N,
    now: Instant,
) -> Option<&'t [u8]> {
    loop {
        let n = node.poll_transmit(now, tx)?;
        // A node that claims more than the buffer holds is a bug; send nothing of it.
        if n <= tx.len() {
            return Some(&tx[..n]);
        }
    }
}

/// The loop: a byte stream, a transmit buffer and the counters. [`Pump::run`] drives it over
/// a blocking (`embedded-io`) stream; [`crate::apump`] adds `run_async`, the same loop over an
/// `embedded-io-async` stream.
pub struct Pump<IO> {
    pub(crate) io: IO,
    pub(crate) tx: [u8; MAX_FRAME_LEN],
    pub(crate) read_errors: u32,
    pub(crate) sent: u32,
    /// MAVLink 2 signing of the link (nothing without the `signing` feature).
    pub(crate) signing: LinkSigning,
}

impl<IO> Pump<IO> {
    /// A pump over `io`.
    pub fn new(io: IO) -> Self {
        Pump {
            io,
            tx: [0; MAX_FRAME_LEN],
            read_errors: 0,
            sent: 0,
            signing: LinkSigning::new(),
        }
    }

    /// The byte stream (for its own counters).
    pub fn io(&self) -> &IO {
        &self.io
    }

    /// Link counters so far: the node's byte path and the pump's own.
    pub fn stats<N: Node>(&self, node: &N) -> LinkStats {
        let rx = node.rx_stats();
        LinkStats {
            decoder: rx.framer,
            handled: rx.decoded,
            skipped: rx.unread,
            malformed: rx.malformed,
            read_errors: self.read_errors,
            sent: self.sent,
        }
    }
}

impl<IO: Read + ReadReady + Write> Pump<IO> {
    /// Drive `node` until it finishes or `wall_cap` of driver time has passed.
    pub fn run<N: Node>(&mut self, node: &mut N, wall_cap: Duration) -> Outcome {
        let give_up = clock::now() + wall_cap;
        loop {
            let now = clock::now();
            self.receive(node, now);
            self.transmit(node, now);
            if let Some(outcome) = node.poll_outcome(now) {
                let _ = self.io.flush();
                return outcome;
            }
            if now >= give_up {
                let _ = self.io.flush();
                return Outcome::WallCap;
            }
            let due = node.next_deadline().is_some_and(|d| d <= clock::now());
            if !due {
                let io = &mut self.io;
                // Wakes on the next byte or the next millisecond tick.
                clock::sleep_unless(|| io.read_ready().unwrap_or(true));
            }
        }
    }

    fn receive<N: Node>(&mut self, node: &mut N, now: Instant) {
        let mut chunk = [0u8; READ_CHUNK];
        for _ in 0..READS_PER_TURN {
            let n = match self.io.read_ready() {
                Ok(false) => return,
                Ok(true) => self.io.read(&mut chunk),
                Err(e) => Err(e),
            };
            match n {
                Ok(n) if n > 0 => node.handle_stream_bytes(
                    now,
                    chunk.get(..n).unwrap_or_default(),
                    &mut self.signing,
                ),
                _ => {
                    self.read_errors = self.read_errors.saturating_add(1);
                    return;
                }
            }
        }
    }

    fn transmit<N: Node>(&mut self, node: &mut N, now: Instant) {
        while let Some(n) = next_frame(&mut self.tx, node, now).map(<[u8]>::len) {
            let Some(m) = self.signing.seal(now, &mut self.tx, n) else {
                continue;
            };
            if self.io.write_all(&self.tx[..m]).is_err() {
                return;
            }
            self.sent = self.sent.wrapping_add(1);
        }
    }
}

/// Log the run's outcome, link counters and stack high-water mark, then exit: status 0 on
/// [`Outcome::Success`], 1 otherwise.
pub fn finish<N: Node>(outcome: Outcome, pump: &Pump<crate::uart::Uart0>, node: &N) -> ! {
    let (s, u) = (pump.stats(node), pump.io().stats());
    crate::info!(
        "link: frames {} handled {} skipped {} malformed {} crc_errors {} unknown_ids {} dropped_bytes {} sent {}",
        s.decoder.frames,
        s.handled,
        s.skipped,
        s.malformed,
        s.decoder.crc_errors,
        s.decoder.unknown_ids,
        s.decoder.dropped_bytes,
        s.sent
    );
    crate::info!(
        "uart: rx_overruns {} rx_throttles {}",
        u.rx_overruns,
        u.rx_throttles
    );
    let stack = crate::stack::usage();
    crate::info!(
        "stack: high-water mark {} of {} bytes",
        stack.used_bytes,
        stack.size_bytes
    );
    let why = match outcome {
        Outcome::Success => {
            crate::info!("result: success");
            crate::exit::success()
        }
        Outcome::Failure(why) => why,
        Outcome::WallCap => "wall-clock cap reached",
    };
    crate::error!("result: failure: {}", why);
    crate::exit::failure()
}
