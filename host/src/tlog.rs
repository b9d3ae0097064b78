//! Recording a link as a `.tlog`, the way QGroundControl and MAVProxy write one: for every
//! frame, 8 bytes of big-endian microseconds since the Unix epoch, then the frame as it was on
//! the wire. pymavlink (`mavutil.mavlink_connection("f.tlog")`) and QGroundControl read it back.
//!
//! A [`Tlog`] is a cheap handle (clone it freely) to one buffered file. The pump records every
//! frame a link decodes and every frame it hands to the kernel ([`crate::pump::Supervision`]'s
//! `tlog`); the bridge and `watch` record through the same handle. Recording costs one clock
//! read and one buffered copy per frame; the file is flushed when the last handle is dropped
//! (or on [`Tlog::flush`]).
//!
//! [`TlogReader`] reads a tlog back record by record in bounded memory, checking each record's
//! frame (a damaged record is skipped whole, garbage stepped over), so a recorded flight can be
//! replayed; [`read`] and [`parse`] collect its records.

use crate::sync::lock;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

/// Which way a frame went, as counted by a [`Tlog`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// From the vehicle (or the link's far end) to us.
    Received,
    /// From us to the vehicle.
    Sent,
}

#[derive(Debug)]
struct Inner {
    out: Mutex<Option<BufWriter<File>>>,
    received: AtomicU64,
    sent: AtomicU64,
    error: Mutex<Option<String>>,
}

/// A tlog being written (see the module docs).
#[derive(Debug, Clone)]
pub struct Tlog {
    inner: Arc<Inner>,
}

/// Two handles are equal when they write the same file.
impl PartialEq for Tlog {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }
}
impl Eq for Tlog {}

/// Recorded frames by direction.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive] // more fields may come
pub struct TlogCounts {
    /// Frames received from the vehicle.
    pub received: u64,
    /// Frames sent to the vehicle.
    pub sent: u64,
}

impl Tlog {
    /// Create (or truncate) the file at `path`.
    pub fn create(path: &Path) -> io::Result<Tlog> {
        let f = File::create(path)?;
        Ok(Tlog {
            inner: Arc::new(Inner {
                out: Mutex::new(Some(BufWriter::with_capacity(64 * 1024, f))),
                received: AtomicU64::new(0),
                sent: AtomicU64::new(0),
                error: Mutex::new(None),
            }),
        })
    }

    /// Record one whole frame that went `dir`, stamped now.
    pub fn record(&self, dir: Direction, frame: &[u8]) {
        let us = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_micros() as u64);
        self.record_at(dir, us, frame);
    }

    /// Record one frame with its own timestamp, µs since the Unix epoch.
    pub fn record_at(&self, dir: Direction, epoch_us: u64, frame: &[u8]) {
        let mut out = lock(&self.inner.out);
        let Some(w) = out.as_mut() else { return };
        let r = w
            .write_all(&epoch_us.to_be_bytes())
            .and_then(|()| w.write_all(frame));
        match r {
            Ok(()) => {
                let c = match dir {
                    Direction::Received => &self.inner.received,
                    Direction::Sent => &self.inner.sent,
                };
                c.fetch_add(1, Ordering::Relaxed);
            }
            Err(e) => {
                // A full disk stops the recording, never the flight; the error is kept.
                *out = None;
                *lock(&self.inner.error) = Some(e.to_string());
            }
        }
    }

    /// Frames recorded so far, by direction.
    pub fn counts(&self) -> TlogCounts {
        TlogCounts {
            received: self.inner.received.load(Ordering::Relaxed),
            sent: self.inner.sent.load(Ordering::Relaxed),
        }
    }

    /// Write what is buffered to the file; the first write error, if recording stopped.
    pub fn flush(&self) -> Result<(), String> {
        let mut out = lock(&self.inner.out);
        if let Some(w) = out.as_mut() {
            if let Err(e) = w.flush() {
                *out = None;
                return Err(e.to_string());
            }
        }
        match lock(&self.inner.error).clone() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

/// Record each frame of `datagram` (one or more whole frames, as UDP carries them), split by
/// the lengths in their headers; a cut tail is recorded as it is, so nothing is lost.
pub fn record_datagram(tlog: &Tlog, dir: Direction, datagram: &[u8]) {
    let mut rest = datagram;
    while !rest.is_empty() {
        let n = frame_len(rest).map_or(rest.len(), |n| n.min(rest.len()));
        tlog.record(dir, &rest[..n]);
        rest = &rest[n..];
    }
}

/// One frame of a tlog read back.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive] // more fields may come
pub struct TlogFrame {
    /// Its timestamp, µs since the Unix epoch.
    pub epoch_us: u64,
    /// The frame's bytes (MAVLink v1 or v2, checksum and signature included).
    pub bytes: Vec<u8>,
}

/// Why a tlog could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive] // more variants may come; match with a `_` arm
pub enum TlogError {
    /// The file could not be read.
    #[error("cannot read the tlog: {0}")]
    Io(#[from] io::Error),
    /// No frame at all.
    #[error("no MAVLink frame in the tlog")]
    Empty,
}

/// Frame length from its first bytes (v1 0xFE, v2 0xFD with the signed flag), or `None` when
/// `b` does not start a frame.
fn frame_len(b: &[u8]) -> Option<usize> {
    match b.first()? {
        0xFE => Some(6 + *b.get(1)? as usize + 2),
        0xFD => {
            let signed = *b.get(2)? & 0x01 != 0;
            Some(10 + *b.get(1)? as usize + 2 + if signed { 13 } else { 0 })
        }
        _ => None,
    }
}

/// What reading a tlog met besides its records ([`TlogReader::stats`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive] // more fields may come
pub struct ReadStats {
    /// Records read: their frame's checksum checked (or of a message outside the common
    /// dialect, whose checksum cannot be checked), returned.
    pub records: u64,
    /// Records whose frame failed its checksum: skipped whole, never searched for frames.
    pub damaged: u64,
    /// Bytes that began no record (garbage between records, a cut end), skipped.
    pub garbage_bytes: u64,
}

impl ReadStats {
    /// The sum of two counts (the inputs of one check).
    pub fn add(&mut self, other: &ReadStats) {
        self.records += other.records;
        self.damaged += other.damaged;
        self.garbage_bytes += other.garbage_bytes;
    }
}

/// How far a record's timestamp may go back from the one before it and still be the next
/// record of the same recording, µs (a clock stepped back).
pub const TIME_BACK_US: u64 = 60_000_000;
/// How far it may go forward, µs (a recording paused an hour). A larger jump is followed only
/// where two whole records in a row agree on it ([`TlogReader`]).
pub const TIME_FORWARD_US: u64 = 3_600_000_000;

/// Bytes of one record at most: the timestamp and the longest frame.
const MAX_RECORD_LEN: usize = 8 + nexus_core::frame::MAX_FRAME_LEN;
/// The reader's buffer: a few hundred records' worth, refilled as it drains.
const READ_BUF_LEN: usize = 64 * 1024;

/// What the frame of a record is worth.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Check {
    /// Its checksum holds.
    Good,
    /// Of a message outside the common dialect: its checksum cannot be checked.
    Unverifiable,
    /// Its checksum (or its header) is wrong.
    Bad,
}

/// The checksum of the whole frame `f` (a v1 or v2 frame, as long as its header says).
fn check_frame(f: &[u8]) -> Check {
    let v2 = f.first() == Some(&0xFD);
    let hl = if v2 { 10 } else { 6 };
    let (Some(&len), Some(&flags)) = (f.get(1), f.get(2)) else {
        return Check::Bad;
    };
    if v2 && flags & !0x01 != 0 {
        return Check::Bad;
    }
    let msgid = if v2 {
        match f.get(7..10) {
            Some(id) => u32::from_le_bytes([id[0], id[1], id[2], 0]),
            None => return Check::Bad,
        }
    } else {
        match f.get(5) {
            Some(&id) => id as u32,
            None => return Check::Bad,
        }
    };
    let end = hl + len as usize;
    let (Some(body), Some(crc)) = (f.get(1..end), f.get(end..end + 2)) else {
        return Check::Bad;
    };
    match nexus_core::frame::crc_extra(msgid) {
        None => Check::Unverifiable,
        Some(extra) => {
            if nexus_core::frame::frame_crc(body, extra) == u16::from_le_bytes([crc[0], crc[1]]) {
                Check::Good
            } else {
                Check::Bad
            }
        }
    }
}

/// Whether `ts` can follow `last` in one recording ([`TIME_BACK_US`], [`TIME_FORWARD_US`]).
fn follows(last: u64, ts: u64) -> bool {
    ts.saturating_add(TIME_BACK_US) >= last && ts <= last.saturating_add(TIME_FORWARD_US)
}

/// A tlog read record by record, in bounded memory (a 64 KiB buffer, whatever the file's
/// size), checking every record:
///
/// * a record is its 8-byte timestamp and the one frame its header's length says; its frame's
///   checksum is checked (a message outside the common dialect cannot be, and is taken as it
///   is);
/// * a record whose checksum fails is a damaged record when its timestamp follows the last
///   record's (within [`TIME_BACK_US`] back, [`TIME_FORWARD_US`] forward; at the start, when
///   a record that follows it comes right after): it is skipped **whole** and counted
///   ([`ReadStats::damaged`]), never searched for the frames its bytes may hold — a frame
///   inside a damaged record would be replayed at the damaged record's time, where it never
///   was;
/// * anything else begins no record: it is garbage, and the reader looks for the next record
///   one byte on ([`ReadStats::garbage_bytes`]). A record found there counts only with a
///   checked frame and a timestamp that follows the last record's — or, after a jump in time,
///   when the record right after it checks too and follows it: two records in a row, which
///   garbage does not forge. Eight bytes of garbage pass for a timestamp that follows about
///   once in 2³² tries.
///
/// Records come in file order (a recording's are in time order; `nexus check` merges several).
pub struct TlogReader<R> {
    src: R,
    buf: Vec<u8>,
    /// Start of the unread bytes in `buf`.
    at: usize,
    eof: bool,
    /// The timestamp of the last record read.
    last_ts: Option<u64>,
    /// `at` is where a record must start: the input's start, or right after a record.
    boundary: bool,
    stats: ReadStats,
}

impl<R: io::Read> TlogReader<R> {
    /// A reader of the tlog bytes `src` yields.
    pub fn new(src: R) -> Self {
        TlogReader {
            src,
            buf: Vec::with_capacity(READ_BUF_LEN),
            at: 0,
            eof: false,
            last_ts: None,
            boundary: true,
            stats: ReadStats::default(),
        }
    }

    /// What reading met so far.
    pub fn stats(&self) -> ReadStats {
        self.stats
    }

    /// Keep at least two records' worth of bytes ahead of `at` (unless the input ended).
    fn fill(&mut self) -> io::Result<()> {
        if self.eof || self.buf.len() - self.at >= 2 * MAX_RECORD_LEN {
            return Ok(());
        }
        self.buf.drain(..self.at);
        self.at = 0;
        while !self.eof && self.buf.len() < READ_BUF_LEN {
            let have = self.buf.len();
            self.buf.resize(READ_BUF_LEN, 0);
            match self.src.read(&mut self.buf[have..]) {
                Ok(0) => {
                    self.buf.truncate(have);
                    self.eof = true;
                }
                Ok(n) => self.buf.truncate(have + n),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => self.buf.truncate(have),
                Err(e) => {
                    self.buf.truncate(have);
                    return Err(e);
                }
            }
        }
        Ok(())
    }

    /// The record that would start at `i` of the buffer: its timestamp, its length and its
    /// frame's check; `None` when no whole record starts there.
    fn candidate(&self, i: usize) -> Option<(u64, usize, Check)> {
        let rest = self.buf.get(i..)?;
        let ts = u64::from_be_bytes(rest.get(..8)?.try_into().ok()?);
        let frame = rest.get(8..)?;
        let n = frame_len(frame)?;
        let frame = frame.get(..n)?;
        Some((ts, 8 + n, check_frame(frame)))
    }

    /// Whether a record checks at `i` and can follow a record stamped `ts` (or the input ends
    /// exactly there).
    fn record_follows(&self, i: usize, ts: u64) -> bool {
        if i == self.buf.len() && self.eof {
            return true;
        }
        matches!(self.candidate(i), Some((t, _, c)) if c != Check::Bad && follows(ts, t))
    }

    /// The next record; `None` at the end of the input.
    pub fn next_record(&mut self) -> io::Result<Option<TlogFrame>> {
        loop {
            self.fill()?;
            let i = self.at;
            if i >= self.buf.len() {
                return Ok(None);
            }
            let follows_last = |ts: u64| self.last_ts.is_some_and(|l| follows(l, ts));
            let taken = match self.candidate(i) {
                // In step with the recording: a checked record is the next one, a damaged one
                // is skipped whole.
                Some((ts, n, check)) if follows_last(ts) => match check {
                    Check::Good | Check::Unverifiable => Some((ts, n)),
                    Check::Bad => {
                        self.stats.damaged += 1;
                        self.at += n;
                        self.boundary = true;
                        continue;
                    }
                },
                // Where a record must start (the file's start, right after a record): a checked
                // one is the next, whatever its time (a jump); a damaged one is skipped whole
                // when a record that follows it comes right after.
                Some((ts, n, Check::Good)) if self.boundary => Some((ts, n)),
                Some((ts, n, Check::Bad)) if self.boundary && self.record_follows(i + n, ts) => {
                    self.stats.damaged += 1;
                    self.at += n;
                    continue;
                }
                // Found by searching, at another time: two checked records in a row.
                Some((ts, n, Check::Good)) if self.record_follows(i + n, ts) => Some((ts, n)),
                _ => None,
            };
            match taken {
                Some((ts, n)) => {
                    let bytes = self.buf[i + 8..i + n].to_vec();
                    self.at += n;
                    self.boundary = true;
                    self.last_ts = Some(ts);
                    self.stats.records += 1;
                    return Ok(Some(TlogFrame {
                        epoch_us: ts,
                        bytes,
                    }));
                }
                None => {
                    self.stats.garbage_bytes += 1;
                    self.at += 1;
                    self.boundary = false;
                }
            }
        }
    }
}

impl<R: io::Read> Iterator for TlogReader<R> {
    type Item = io::Result<TlogFrame>;
    fn next(&mut self) -> Option<Self::Item> {
        self.next_record().transpose()
    }
}

impl TlogReader<io::Take<File>> {
    /// Open the tlog at `path` to read it record by record: a regular file of at most
    /// [`MAX_TLOG_BYTES`] ([`crate::input_file::open`]), read as long as it was when
    /// opened. Its length is returned too.
    pub fn open(path: &Path) -> io::Result<(Self, u64)> {
        let (file, len) = crate::input_file::open(path, MAX_TLOG_BYTES)?;
        Ok((TlogReader::new(io::Read::take(file, len)), len))
    }
}

/// Parse tlog bytes into their records, as [`TlogReader`] reads them (damaged records skipped
/// whole, garbage skipped a byte at a time), so a cut or damaged file still yields its whole
/// records.
pub fn parse(data: &[u8]) -> Vec<TlogFrame> {
    TlogReader::new(data).map_while(Result::ok).collect()
}

/// Read the tlog at `path` (an input file: [`crate::input_file::read`]'s checks, at most
/// [`MAX_TLOG_BYTES`]) into frames. It is held whole in memory: [`TlogReader`] reads a large one in
/// bounded memory.
pub fn read(path: &Path) -> Result<Vec<TlogFrame>, TlogError> {
    let data = crate::input_file::read(path, MAX_TLOG_BYTES)?;
    let frames = parse(&data);
    if frames.is_empty() {
        return Err(TlogError::Empty);
    }
    Ok(frames)
}

/// Largest tlog read, bytes (256 MiB: hours of PX4 telemetry).
pub const MAX_TLOG_BYTES: u64 = 256 << 20;

#[cfg(test)]
mod tests {
    use super::*;
    use nexus_core::mav;

    /// A checked MAVLink 2 frame of `msg` from system 1.
    fn frame<M: mavlink::MessageData>(seq: u8, msg: &M) -> Vec<u8> {
        let mut buf = [0u8; nexus_core::frame::MAX_FRAME_LEN];
        let n = nexus_core::frame::encode_v2(seq, 1, 1, msg, &mut buf).unwrap();
        buf[..n].to_vec()
    }

    fn heartbeat(seq: u8, custom_mode: u32) -> Vec<u8> {
        frame(
            seq,
            &mav::HEARTBEAT_DATA {
                custom_mode,
                autopilot: mav::MavAutopilot::MAV_AUTOPILOT_PX4,
                mavtype: mav::MavType::MAV_TYPE_QUADROTOR,
                ..Default::default()
            },
        )
    }

    fn record(ts: u64, frame: &[u8]) -> Vec<u8> {
        let mut r = ts.to_be_bytes().to_vec();
        r.extend_from_slice(frame);
        r
    }

    /// A record of a frame whose checksum is broken, holding a whole record of a checked frame
    /// (`inner`, at `inner_ts`) in its payload: what must never be replayed.
    fn damaged(ts: u64, inner_ts: u64, inner: &[u8]) -> Vec<u8> {
        let mut payload = record(inner_ts, inner);
        payload.push(0x55);
        // A STATUSTEXT-sized v2 header (id 253) around it, with a wrong checksum.
        let mut f = vec![0xFD, payload.len() as u8, 0, 0, 9, 1, 1, 253, 0, 0];
        f.extend_from_slice(&payload);
        f.extend([0xDE, 0xAD]);
        assert_eq!(check_frame(&f), Check::Bad);
        record(ts, &f)
    }

    #[test]
    fn writes_and_reads_back() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.tlog");
        let t = Tlog::create(&p).unwrap();
        // A v2 HEARTBEAT and a v1 one.
        let v2 = heartbeat(0, 0);
        let mut v1 = Vec::new();
        mavlink::write_v1_msg(
            &mut v1,
            mavlink::MavHeader {
                system_id: 255,
                component_id: 190,
                sequence: 0,
            },
            &mav::MavMessage::HEARTBEAT(mav::HEARTBEAT_DATA::default()),
        )
        .unwrap();
        t.record_at(Direction::Received, 10, &v2);
        t.record_at(Direction::Sent, 20, &v1);
        assert_eq!(
            t.counts(),
            TlogCounts {
                received: 1,
                sent: 1
            }
        );
        t.flush().unwrap();
        let mut data = std::fs::read(&p).unwrap();
        assert_eq!(data.len(), 8 + v2.len() + 8 + v1.len());
        data.extend([1, 2, 3]); // a cut record at the end
        let frames = parse(&data);
        assert_eq!(frames.len(), 2);
        assert_eq!(
            frames[0],
            TlogFrame {
                epoch_us: 10,
                bytes: v2
            }
        );
        assert_eq!(
            frames[1],
            TlogFrame {
                epoch_us: 20,
                bytes: v1
            }
        );
        let (mut r, len) = TlogReader::open(&p).unwrap();
        assert_eq!(len, data.len() as u64 - 3);
        assert_eq!(r.by_ref().count(), 2);
        assert_eq!(r.stats().records, 2);
    }

    #[test]
    fn a_damaged_record_is_skipped_whole_never_mined_for_the_frame_inside() {
        let t0 = 1_700_000_000_000_000u64;
        let mut data = Vec::new();
        for k in 0..3u64 {
            data.extend(record(t0 + k * 1000, &heartbeat(k as u8, 0)));
        }
        // Inside: a heartbeat of another mode, stamped far from where the damaged record is.
        data.extend(damaged(t0 + 3000, t0 + 500, &heartbeat(99, 0x0404_0000)));
        data.extend(record(t0 + 4000, &heartbeat(4, 0)));
        // Damaged again, at the very end.
        data.extend(damaged(t0 + 5000, t0 + 5000, &heartbeat(98, 0x0404_0000)));
        let mut r = TlogReader::new(&data[..]);
        let got: Vec<TlogFrame> = r.by_ref().map(Result::unwrap).collect();
        let stamps: Vec<u64> = got.iter().map(|f| f.epoch_us - t0).collect();
        assert_eq!(stamps, [0, 1000, 2000, 4000]);
        assert!(
            got.iter().all(|f| f.bytes[4] < 10),
            "a frame from inside was read"
        );
        assert_eq!(
            r.stats(),
            ReadStats {
                records: 4,
                damaged: 2,
                garbage_bytes: 0
            }
        );
    }

    #[test]
    fn garbage_between_records_is_skipped_and_no_record_is_lost_or_invented() {
        // Seeded noise between one record in five, full of start bytes; damaged records too.
        let t0 = 1_700_000_000_000_000u64;
        for seed in 1..=20u64 {
            let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15);
            let mut next = move || {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x
            };
            let mut data = Vec::new();
            let mut want = Vec::new();
            let mut damaged_n = 0;
            for k in 0..2000u64 {
                let ts = t0 + k * 4000;
                match next() % 20 {
                    0..=3 => {
                        let n = next() % 40 + 1;
                        for _ in 0..n {
                            let b = next() as u8;
                            data.push(if b % 4 == 0 { 0xFD } else { b });
                        }
                    }
                    4 => {
                        data.extend(damaged(ts, ts + 1, &heartbeat(200, 0x0404_0000)));
                        damaged_n += 1;
                        continue;
                    }
                    _ => {}
                }
                data.extend(record(ts, &heartbeat(k as u8, 0)));
                want.push(ts);
            }
            let mut r = TlogReader::new(&data[..]);
            let got: Vec<u64> = r.by_ref().map(|f| f.unwrap().epoch_us).collect();
            let first_difference = got.iter().zip(&want).position(|(a, b)| a != b);
            assert!(
                got.len() == want.len() && first_difference.is_none(),
                "seed {seed}: {} records read of {}, first difference at {first_difference:?}",
                got.len(),
                want.len()
            );
            let st = r.stats();
            assert_eq!(st.damaged, damaged_n, "seed {seed}: {st:?}");
            assert_eq!(st.records, want.len() as u64, "seed {seed}: {st:?}");
            assert!(st.garbage_bytes > 0, "seed {seed}");
        }
    }

    #[test]
    fn a_jump_in_time_is_followed_right_after_a_record_or_where_two_records_agree() {
        let t0 = 1_700_000_000_000_000u64;
        let later = t0 + 10 * TIME_FORWARD_US;
        let mut data = Vec::new();
        data.extend(record(t0, &heartbeat(0, 0)));
        data.extend(record(later, &heartbeat(1, 0)));
        data.extend(record(later + 1000, &heartbeat(2, 0)));
        let got: Vec<u64> = parse(&data).iter().map(|f| f.epoch_us).collect();
        assert_eq!(got, [t0, later, later + 1000]);
        // After garbage: the jump counts where the next record checks and follows it.
        let mut data = Vec::new();
        data.extend(record(t0, &heartbeat(0, 0)));
        data.extend([0xFD, 0x07, 0x00, 0xFE]);
        data.extend(record(later, &heartbeat(1, 0)));
        data.extend(record(later + 1000, &heartbeat(2, 0)));
        data.extend([0x01, 0xFD]);
        data.extend(record(later + 2000, &heartbeat(3, 0)));
        let mut r = TlogReader::new(&data[..]);
        let got: Vec<u64> = r.by_ref().map(|f| f.unwrap().epoch_us).collect();
        assert_eq!(got, [t0, later, later + 1000, later + 2000]);
        assert_eq!(r.stats().garbage_bytes, 6);
    }
}
