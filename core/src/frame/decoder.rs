//! Bytes to frames: a resynchronising MAVLink 1/2 framer.
//!
//! The decoder only frames and checks: it finds a start byte, reads the header, buffers the
//! frame and verifies its checksum with the message's `crc_extra`. A frame that fails the
//! check is not skipped whole: the search restarts at the byte after its start marker, so a
//! real frame hiding behind a false start (garbage that looked like a header) is still found.
//! Interpreting the payload is [`crate::msg`]'s job.
//!
//! Three ways to drive it, all sharing one buffered partial frame:
//! * [`Decoder::feed`]: a slice of a byte stream at a time (TCP, serial, DMA buffers), and
//!   [`Decoder::feed_datagram`]: one UDP datagram at a time, never joined with the next;
//! * [`Decoder::read_frame`]: blocking, over [`embedded_io::Read`];
//! * [`Decoder::poll_read`]: non-blocking, over [`embedded_io::ReadReady`], returning
//!   [`nb::Error::WouldBlock`] with the partial frame kept for the next call.
//!
//! Signed MAVLink 2 frames are framed whole (signature included in [`RawFrame::bytes`]); the
//! decoder does not verify the signature: that is `frame::signing`'s `Verifier` (the `signing`
//! feature), which a driver asks before it applies a frame.
//!
//! **Speed.** [`Decoder::feed`] checks a frame that lies whole in its input where it lies and
//! returns a [`RawFrame`] borrowing the input: no copy into the decoder's buffer. Only a frame
//! split across calls is buffered.
//!
//! **Skipping what nobody reads** ([`Decoder::skipping`]). A PX4 stream is two thirds bytes of
//! messages the engine never reads (ODOMETRY, HIGHRES_IMU, ATTITUDE_QUATERNION, …); checking
//! their checksum only to throw them away is most of the decoding work. A skipping decoder
//! passes over such a frame *without* its checksum when, and only when, the byte right after it
//! (in the same input) is a start byte: the length field then landed on a frame boundary, which
//! a real frame always does and a false start in garbage does with probability ~2/256. Otherwise
//! (the frame ends its input, or the next byte is not a start byte) the frame is checked as
//! usual, so a false start is resynchronised on the byte after its marker as always.
//! [`Decoder::feed_datagram`] also counts the end of its input as a boundary: a UDP datagram
//! holds whole frames (PX4 sends one frame per datagram), so its end is where a real frame
//! ends, and a false start's length lands exactly there with probability ~1/256 — the same
//! kind of coincidence as landing on a start byte, at half its rate. Without it, every unread
//! frame of a one-frame datagram would be checked, and skipping would save nothing on UDP.
//! Only a MAVLink 2 header whose 3-byte message id is a known one is skipped so: a false start in
//! garbage almost never names a known id (~300 of 16 M), while a MAVLink 1 false start (a
//! one-byte id, nearly all known) could claim up to 263 bytes of real frames — MAVLink 1 frames
//! are always checked. The trade-off that remains: a false MAVLink 2 start of a known unread id
//! whose length happens to end on a start byte (or, through `feed_datagram`, on the datagram's
//! end) hides the real frames it covers, where the
//! checking decoder would find them; nothing false is ever *delivered*, since every returned
//! frame is checked. On a clean link nothing is lost.

use super::crc::frame_crc;
use super::crc_extra::crc_extra;

/// Start byte of a MAVLink 2 frame.
pub const MAGIC_V2: u8 = 0xFD;
/// Start byte of a MAVLink 1 frame.
pub const MAGIC_V1: u8 = 0xFE;
/// Longest possible frame: MAVLink 2 header (10), payload (255), checksum (2), signature (13).
pub const MAX_FRAME_LEN: usize = 10 + 255 + 2 + 13;

const V2_HEADER_LEN: usize = 10;
const V1_HEADER_LEN: usize = 6;
const SIGNATURE_LEN: usize = 13;
const INCOMPAT_SIGNED: u8 = 0x01;

/// MAVLink wire version of a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Version {
    /// MAVLink 1 (start byte 0xFE, 8-bit message id).
    V1,
    /// MAVLink 2 (start byte 0xFD, 24-bit message id, truncated payloads).
    V2,
}

/// The routing part of a frame's header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Header {
    /// Wire version the frame came in.
    pub version: Version,
    /// Sender's packet sequence number.
    pub seq: u8,
    /// Sending system id.
    pub sysid: u8,
    /// Sending component id.
    pub compid: u8,
    /// Message id.
    pub msgid: u32,
    /// Whether the frame carried a (not verified) signature.
    pub signed: bool,
}

/// A checked frame: its header and the payload bytes, still encoded.
///
/// A MAVLink 2 payload may be shorter than the message (trailing zeros truncated);
/// deserialisation zero-fills it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawFrame<'a> {
    /// Header fields.
    pub header: Header,
    /// Payload bytes as sent.
    pub payload: &'a [u8],
    /// The whole frame as it was on the wire (header, payload, checksum, signature): what a
    /// link recorder writes.
    pub bytes: &'a [u8],
}

/// What the decoder has seen, for link-health reporting.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct DecoderStats {
    /// Frames delivered with a valid checksum.
    pub frames: u32,
    /// Frames whose checksum did not match (also counts false starts in garbage).
    pub crc_errors: u32,
    /// Frames with a message id outside the common dialect (checksum unverifiable), skipped.
    pub unknown_ids: u32,
    /// Bytes discarded while searching for a start byte.
    pub dropped_bytes: u32,
    /// Frames of messages the caller does not read, passed over unchecked by a
    /// [`Decoder::skipping`] decoder.
    pub skipped: u32,
    /// Frames whose sender's sequence number was followed (delivered and skipped alike, of up
    /// to [`SEQ_SOURCES`] senders): the denominator of a loss rate. 0 without the `seq-loss`
    /// feature.
    pub seq_frames: u32,
    /// Frames missing between consecutive sequence numbers of one sender: what the link (or
    /// the sender's own full buffer) lost. A duplicate or a frame older than the last is not
    /// counted (a reordered frame counts once as lost).
    pub seq_lost: u32,
}

/// Senders (system, component) whose sequence numbers a decoder follows; a further one takes
/// the place of the oldest.
pub const SEQ_SOURCES: usize = 4;

/// The last sequence number of each followed sender.
#[derive(Debug, Clone, Copy)]
struct Sequences {
    /// ((system << 8) | component, last sequence number).
    last: [Option<(u16, u8)>; SEQ_SOURCES],
    /// The slot a new sender takes when all are in use.
    next: u8,
}

impl Sequences {
    const fn new() -> Self {
        Sequences {
            last: [None; SEQ_SOURCES],
            next: 0,
        }
    }

    /// A frame of `sysid`/`compid` numbered `seq`: count it, and the gap before it.
    fn see(&mut self, sysid: u8, compid: u8, seq: u8, stats: &mut DecoderStats) {
        let key = (u16::from(sysid) << 8) | u16::from(compid);
        stats.seq_frames = stats.seq_frames.wrapping_add(1);
        for (k, last) in self.last.iter_mut().flatten() {
            if *k == key {
                let gap = seq.wrapping_sub(*last).wrapping_sub(1);
                // Half the sequence space or more: a duplicate or an older frame, not a gap.
                if gap < 128 {
                    stats.seq_lost = stats.seq_lost.wrapping_add(u32::from(gap));
                    *last = seq;
                }
                return;
            }
        }
        let slot = match self.last.iter().position(Option::is_none) {
            Some(i) => i,
            None => {
                let i = usize::from(self.next) % SEQ_SOURCES;
                self.next = ((i + 1) % SEQ_SOURCES) as u8;
                i
            }
        };
        self.last[slot] = Some((key, seq));
    }
}

/// An error from the reading forms of the decoder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum ReadError<E> {
    /// The underlying reader failed.
    Io(E),
    /// The reader reported end of stream (a read of zero bytes).
    Eof,
}

impl<E: core::fmt::Debug> core::fmt::Display for ReadError<E> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            ReadError::Io(e) => write!(f, "the reader failed: {e:?}"),
            ReadError::Eof => f.write_str("end of stream"),
        }
    }
}

/// So `?` converts it into `Box<dyn Error>`; the reader's error shows through its `Debug`
/// (embedded-io errors need not implement `Display`).
impl<E: core::fmt::Debug> core::error::Error for ReadError<E> {}

/// The framer. 280 bytes of buffer plus counters; no allocation.
#[derive(Debug, Clone)]
pub struct Decoder {
    buf: [u8; MAX_FRAME_LEN],
    len: usize,
    /// Length of the complete frame at the front of `buf` last returned, to discard next call.
    ready: usize,
    stats: DecoderStats,
    /// Which message ids the caller reads; `None`: all (every frame is checked and returned).
    reads: Option<fn(u32) -> bool>,
    seqs: Sequences,
    /// Sequence numbers are followed by the caller ([`Decoder::count_sequence`]), not here.
    seqs_deferred: bool,
}

impl Default for Decoder {
    fn default() -> Self {
        Self::new()
    }
}

/// Move `buf[from..]` to the front of `buf`: `copy_within`, done as non-overlapping
/// `copy_from_slice` chunks of at most `from` bytes. `copy_within` is a memmove, whose routine
/// is 1.5 KiB of flash on thumbv7em and would be here for this one call; memcpy is linked
/// anyway. The chunks are as long as the bytes dropped, so the usual case (a whole frame
/// dropped) is one or two copies.
fn move_to_front(buf: &mut [u8], from: usize) {
    if from == 0 {
        return;
    }
    let mut to = 0;
    while to + from < buf.len() {
        let n = from.min(buf.len() - (to + from));
        let (front, back) = buf.split_at_mut(to + from);
        front[to..to + n].copy_from_slice(&back[..n]);
        to += n;
    }
}

/// What [`Decoder::scan`] found in its input.
enum Scan<'a> {
    /// A checked frame ending at this offset of the input.
    Frame(usize, RawFrame<'a>),
    /// No whole frame: the input from this offset (a partial frame, or nothing) is the
    /// buffered path's.
    Partial(usize),
}

#[inline(always)]
fn is_magic(b: u8) -> bool {
    b == MAGIC_V2 || b == MAGIC_V1
}

impl Decoder {
    /// An empty decoder.
    pub const fn new() -> Self {
        Decoder {
            buf: [0; MAX_FRAME_LEN],
            len: 0,
            ready: 0,
            stats: DecoderStats {
                frames: 0,
                crc_errors: 0,
                unknown_ids: 0,
                dropped_bytes: 0,
                skipped: 0,
                seq_frames: 0,
                seq_lost: 0,
            },
            reads: None,
            seqs: Sequences::new(),
            seqs_deferred: false,
        }
    }

    /// A decoder that returns only frames whose message id `reads` accepts, and passes over
    /// the others with the least work that keeps resynchronisation honest (see the module
    /// docs): the pump's and the firmware's use, with [`crate::msg::is_decoded`].
    pub const fn skipping(reads: fn(u32) -> bool) -> Self {
        let mut d = Self::new();
        d.reads = Some(reads);
        d
    }

    /// From now on return every checked frame (`None`) or only those `reads` accepts: a
    /// driver that starts recording or forwarding every frame switches without losing a
    /// partial frame it holds.
    pub fn set_reads(&mut self, reads: Option<fn(u32) -> bool>) {
        self.reads = reads;
    }

    /// Follow sequence numbers only for the frames the caller hands back with
    /// [`Decoder::count_sequence`] (`true`), not for every checked frame (`false`, the
    /// default). A link that verifies signatures defers: a forged frame with the vehicle's
    /// ids must neither open a gap nor close one, so only frames that passed the check
    /// count. A deferring decoder should return every frame (no `reads` filter): a frame
    /// passed over unchecked is never handed back, and would then look lost.
    pub fn set_sequences_deferred(&mut self, deferred: bool) {
        self.seqs_deferred = deferred;
    }

    /// Count the frame of `header` in the sequence counters ([`DecoderStats::seq_frames`],
    /// `seq_lost`): for a decoder whose sequences are deferred
    /// ([`Decoder::set_sequences_deferred`]), once the frame passed the caller's check.
    /// Nothing without the `seq-loss` feature.
    pub fn count_sequence(&mut self, header: &Header) {
        if cfg!(feature = "seq-loss") {
            self.seqs
                .see(header.sysid, header.compid, header.seq, &mut self.stats);
        }
    }

    /// Counters since creation.
    pub fn stats(&self) -> DecoderStats {
        self.stats
    }

    /// Bytes of a partial frame currently buffered (0 when idle).
    pub fn buffered(&self) -> usize {
        self.len - self.ready
    }

    /// Feed bytes; returns how many were consumed and, if one completed, a checked frame.
    ///
    /// Call again with the unconsumed rest of `input` until it is empty: a frame is returned
    /// as soon as it completes, and bytes after it stay with the caller.
    pub fn feed<'a>(&'a mut self, input: &'a [u8]) -> (usize, Option<RawFrame<'a>>) {
        self.feed_with(input, false)
    }

    /// [`Decoder::feed`] for an input that is one whole datagram (UDP: one `recv`), or the
    /// unconsumed rest of one: the end of the input is then a frame boundary, as a start byte
    /// after a frame is, so a skipping decoder passes over an unread frame that ends the
    /// datagram without its checksum (see the module docs). A datagram is never joined with
    /// the next: a partial frame at its end is searched for frames behind a false start, then
    /// dropped (counted in [`DecoderStats::dropped_bytes`]); call again with the rest (empty at
    /// the end) until `None`. On a byte stream (TCP, serial), whose reads end anywhere, use
    /// `feed`.
    #[inline]
    pub fn feed_datagram<'a>(&'a mut self, input: &'a [u8]) -> (usize, Option<RawFrame<'a>>) {
        self.feed_with(input, true)
    }

    fn feed_with<'a>(
        &'a mut self,
        input: &'a [u8],
        end_is_boundary: bool,
    ) -> (usize, Option<RawFrame<'a>>) {
        self.discard_ready();
        let mut used = 0;
        // On a host, a frame lying whole in the input is checked where it lies. An MCU's reads
        // are short and its flash dear: there every byte takes the buffered path.
        if cfg!(not(target_os = "none")) && self.len == 0 {
            match self.scan(input, end_is_boundary) {
                Scan::Frame(end, frame) => return (end, Some(frame)),
                Scan::Partial(at) => used = at,
            }
        }
        loop {
            if self.settle() {
                return (used, Some(self.frame()));
            }
            match input.get(used..).filter(|rest| !rest.is_empty()) {
                Some(rest) => {
                    // Hunting (nothing buffered) takes one byte at a time, as `read_some` does.
                    let n = self.needed().min(rest.len());
                    self.buf[self.len..self.len + n].copy_from_slice(&rest[..n]);
                    used += n;
                    if self.len == 0 && !is_magic(self.buf[0]) {
                        self.drop_count(n);
                    } else {
                        self.len += n;
                    }
                }
                // A datagram holds whole frames: what is left of one at its end is never
                // completed by the next datagram. It is searched as a false start is, so a
                // real frame behind a false start still comes out; the rest is dropped and
                // counted.
                None if end_is_boundary && self.len > 0 => self.resync(),
                None => return (used, None),
            }
        }
    }

    /// Start over on a new byte stream (a new peer): a partial frame is dropped (its rest will
    /// never come) and the senders' sequence numbers are forgotten (a new sender's first
    /// frame is no gap); the counters stay.
    pub fn restart(&mut self) {
        self.drop_count(self.len - self.ready);
        self.len = 0;
        self.ready = 0;
        self.seqs = Sequences::new();
    }

    /// Read until one checked frame is complete, blocking as the reader does.
    ///
    /// Reads only the bytes the current frame needs, so nothing after it is taken from `r`.
    pub fn read_frame<R: embedded_io::Read>(
        &mut self,
        r: &mut R,
    ) -> Result<RawFrame<'_>, ReadError<R::Error>> {
        self.discard_ready();
        while !self.settle() {
            self.read_some(r)?;
        }
        Ok(self.frame())
    }

    /// Read what is available without blocking; a frame when one completes, else `WouldBlock`.
    ///
    /// The partial frame is kept across `WouldBlock`, so a frame split over many UART
    /// interrupts completes on the call that delivers its last byte.
    pub fn poll_read<R: embedded_io::Read + embedded_io::ReadReady>(
        &mut self,
        r: &mut R,
    ) -> nb::Result<RawFrame<'_>, ReadError<R::Error>> {
        self.discard_ready();
        loop {
            if self.settle() {
                return Ok(self.frame());
            }
            match r.read_ready() {
                Ok(true) => {}
                Ok(false) => return Err(nb::Error::WouldBlock),
                Err(e) => return Err(nb::Error::Other(ReadError::Io(e))),
            }
            self.read_some(r).map_err(nb::Error::Other)?;
        }
    }

    /// Look for a frame lying whole in `input` (nothing buffered): check it in place.
    /// `end_is_boundary`: the input ends where a datagram does.
    fn scan<'a>(&mut self, input: &'a [u8], end_is_boundary: bool) -> Scan<'a> {
        let mut at = 0;
        loop {
            let Some(p) = input[at..].iter().position(|&b| is_magic(b)) else {
                self.drop_count(input.len() - at);
                return Scan::Partial(input.len());
            };
            self.drop_count(p);
            at += p;
            let f = &input[at..];
            let v2 = f[0] == MAGIC_V2;
            let hl = if v2 { V2_HEADER_LEN } else { V1_HEADER_LEN };
            if f.len() < hl {
                return Scan::Partial(at);
            }
            if v2 && f[2] & !INCOMPAT_SIGNED != 0 {
                self.stats.crc_errors = self.stats.crc_errors.saturating_add(1);
                self.drop_count(1);
                at += 1;
                continue;
            }
            let payload_len = f[1] as usize;
            let sig = if v2 && f[2] & INCOMPAT_SIGNED != 0 {
                SIGNATURE_LEN
            } else {
                0
            };
            let total = hl + payload_len + 2 + sig;
            if f.len() < total {
                return Scan::Partial(at);
            }
            let msgid = if v2 {
                u32::from_le_bytes([f[7], f[8], f[9], 0])
            } else {
                f[5] as u32
            };
            let unread = self.reads.is_some_and(|reads| !reads(msgid));
            let (seq, sysid, compid) = if v2 {
                (f[4], f[5], f[6])
            } else {
                (f[2], f[3], f[4])
            };
            // Unchecked skips only for a MAVLink 2 header of a known message: a false start's
            // 3-byte id is almost never one, while a MAVLink 1 false start (one-byte id, most of
            // them known; PX4 sends no MAVLink 1) could claim 255 bytes of real frames.
            if unread
                && v2
                && crc_extra(msgid).is_some()
                && f.get(total).map_or(end_is_boundary, |&b| is_magic(b))
            {
                self.stats.skipped = self.stats.skipped.wrapping_add(1);
                if cfg!(feature = "seq-loss") && !self.seqs_deferred {
                    self.seqs.see(sysid, compid, seq, &mut self.stats);
                }
                at += total;
                continue;
            }
            let Some(extra) = crc_extra(msgid) else {
                self.stats.unknown_ids = self.stats.unknown_ids.saturating_add(1);
                self.drop_count(1);
                at += 1;
                continue;
            };
            let crc = frame_crc(&f[1..hl + payload_len], extra);
            let sent = u16::from_le_bytes([f[hl + payload_len], f[hl + payload_len + 1]]);
            if crc != sent {
                self.stats.crc_errors = self.stats.crc_errors.saturating_add(1);
                self.drop_count(1);
                at += 1;
                continue;
            }
            if cfg!(feature = "seq-loss") && !self.seqs_deferred {
                self.seqs.see(sysid, compid, seq, &mut self.stats);
            }
            if unread {
                // Checked (it ended its input), but still not the caller's.
                self.stats.skipped = self.stats.skipped.wrapping_add(1);
                at += total;
                continue;
            }
            self.stats.frames = self.stats.frames.wrapping_add(1);
            let header = if v2 {
                Header {
                    version: Version::V2,
                    seq: f[4],
                    sysid: f[5],
                    compid: f[6],
                    msgid,
                    signed: sig != 0,
                }
            } else {
                Header {
                    version: Version::V1,
                    seq: f[2],
                    sysid: f[3],
                    compid: f[4],
                    msgid,
                    signed: false,
                }
            };
            let frame = RawFrame {
                header,
                payload: &f[hl..hl + payload_len],
                bytes: &f[..total],
            };
            return Scan::Frame(at + total, frame);
        }
    }

    fn read_some<R: embedded_io::Read>(&mut self, r: &mut R) -> Result<(), ReadError<R::Error>> {
        let need = self.needed();
        let n = r
            .read(&mut self.buf[self.len..self.len + need])
            .map_err(ReadError::Io)?;
        if n == 0 {
            return Err(ReadError::Eof);
        }
        if self.len == 0 {
            // Hunting: only a start byte may begin the buffer (need is 1 here).
            if !is_magic(self.buf[0]) {
                self.drop_count(n);
                return Ok(());
            }
        }
        self.len += n;
        Ok(())
    }

    fn drop_count(&mut self, n: usize) {
        self.stats.dropped_bytes = self.stats.dropped_bytes.saturating_add(n as u32);
    }

    fn header_len(&self) -> usize {
        if self.buf[0] == MAGIC_V2 {
            V2_HEADER_LEN
        } else {
            V1_HEADER_LEN
        }
    }

    /// Total length of the frame at the front; the header must be complete.
    fn total_len(&self) -> usize {
        let payload = self.buf[1] as usize;
        if self.buf[0] == MAGIC_V2 {
            let sig = if self.buf[2] & INCOMPAT_SIGNED != 0 {
                SIGNATURE_LEN
            } else {
                0
            };
            V2_HEADER_LEN + payload + 2 + sig
        } else {
            V1_HEADER_LEN + payload + 2
        }
    }

    /// Bytes to read before the next decision; at least 1 unless a frame is complete.
    fn needed(&self) -> usize {
        if self.len == 0 {
            return 1;
        }
        let hl = self.header_len();
        if self.len < hl {
            hl - self.len
        } else {
            self.total_len().saturating_sub(self.len).max(1)
        }
    }

    fn header(&self) -> Header {
        let b = &self.buf;
        if b[0] == MAGIC_V2 {
            Header {
                version: Version::V2,
                seq: b[4],
                sysid: b[5],
                compid: b[6],
                msgid: u32::from_le_bytes([b[7], b[8], b[9], 0]),
                signed: b[2] & INCOMPAT_SIGNED != 0,
            }
        } else {
            Header {
                version: Version::V1,
                seq: b[2],
                sysid: b[3],
                compid: b[4],
                msgid: b[5] as u32,
                signed: false,
            }
        }
    }

    /// Examine the buffer: true when a checked frame sits at its front (recorded in `ready`).
    fn settle(&mut self) -> bool {
        loop {
            if self.len == 0 || self.len < self.header_len() {
                return false;
            }
            if self.buf[0] == MAGIC_V2 && self.buf[2] & !INCOMPAT_SIGNED != 0 {
                // An incompatibility flag we do not understand: per the spec, not our frame.
                self.stats.crc_errors = self.stats.crc_errors.saturating_add(1);
                self.resync();
                continue;
            }
            let total = self.total_len();
            if self.len < total {
                return false;
            }
            let header = self.header();
            let hl = self.header_len();
            let payload_len = self.buf[1] as usize;
            let Some(extra) = crc_extra(header.msgid) else {
                // Unverifiable: it may be a real frame of another dialect, or a false start in
                // garbage. Rescanning its bytes costs little and never loses a frame behind it.
                self.stats.unknown_ids = self.stats.unknown_ids.saturating_add(1);
                self.resync();
                continue;
            };
            let crc = frame_crc(&self.buf[1..hl + payload_len], extra);
            let sent =
                u16::from_le_bytes([self.buf[hl + payload_len], self.buf[hl + payload_len + 1]]);
            if crc == sent {
                if cfg!(feature = "seq-loss") && !self.seqs_deferred {
                    self.seqs
                        .see(header.sysid, header.compid, header.seq, &mut self.stats);
                }
                if self.reads.is_some_and(|reads| !reads(header.msgid)) {
                    self.stats.skipped = self.stats.skipped.wrapping_add(1);
                    self.discard_front(total);
                    continue;
                }
                self.stats.frames = self.stats.frames.wrapping_add(1);
                self.ready = total;
                return true;
            }
            self.stats.crc_errors = self.stats.crc_errors.saturating_add(1);
            self.resync();
        }
    }

    /// The front start byte was false: restart the search at the byte after it.
    fn resync(&mut self) {
        self.drop_count(1);
        self.discard_front(1);
    }

    /// Drop `n` bytes from the front, then any bytes before the next start byte.
    fn discard_front(&mut self, n: usize) {
        let n = n.min(self.len);
        let skip = self.buf[n..self.len]
            .iter()
            .position(|&b| is_magic(b))
            .unwrap_or(self.len - n);
        self.drop_count(skip);
        let from = n + skip;
        move_to_front(&mut self.buf[..self.len], from);
        self.len -= from;
    }

    // Inlined on hosts: on the per-frame path of `feed_with` the call costs more than the
    // check (the engine bench, callgrind); on the MCU the shared copy is the smaller code.
    #[cfg_attr(target_pointer_width = "64", inline)]
    fn discard_ready(&mut self) {
        if self.ready > 0 {
            let n = self.ready;
            self.ready = 0;
            self.discard_front(n);
        }
    }

    fn frame(&self) -> RawFrame<'_> {
        let hl = self.header_len();
        RawFrame {
            header: self.header(),
            payload: &self.buf[hl..hl + self.buf[1] as usize],
            bytes: &self.buf[..self.ready],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::move_to_front;
    use proptest::prelude::*;
    extern crate std;
    use std::vec::Vec;

    proptest! {
        #[test]
        fn move_to_front_is_copy_within(buf in prop::collection::vec(any::<u8>(), 0..300), from in 0usize..310) {
            let from = from.min(buf.len());
            let mut want = buf.clone();
            want.copy_within(from.., 0);
            let mut got: Vec<u8> = buf.clone();
            move_to_front(&mut got, from);
            let moved = buf.len() - from;
            prop_assert_eq!(&got[..moved], &want[..moved]);
        }
    }
}
