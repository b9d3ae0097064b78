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
//! [`read`] parses a tlog back into frames, so a recorded flight can be replayed.

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

/// Parse tlog bytes: each record is a timestamp and a frame. Bytes that do not continue as a
/// record (a truncated end, garbage) are skipped a byte at a time, as pymavlink does, so a
/// cut file still yields its whole frames.
pub fn parse(data: &[u8]) -> Vec<TlogFrame> {
    let mut frames = Vec::new();
    let mut i = 0;
    while i + 8 < data.len() {
        let rest = &data[i + 8..];
        match frame_len(rest) {
            Some(n) if n <= rest.len() => {
                let mut ts = [0u8; 8];
                ts.copy_from_slice(&data[i..i + 8]);
                frames.push(TlogFrame {
                    epoch_us: u64::from_be_bytes(ts),
                    bytes: rest[..n].to_vec(),
                });
                i += 8 + n;
            }
            _ => i += 1,
        }
    }
    frames
}

/// Read the tlog at `path` (an input file: [`crate::limits::read_input`]'s checks, with a
/// larger bound) into frames.
pub fn read(path: &Path) -> Result<Vec<TlogFrame>, TlogError> {
    let data = crate::limits::read_input_max(path, MAX_TLOG_BYTES)?;
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

    #[test]
    fn writes_and_reads_back() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.tlog");
        let t = Tlog::create(&p).unwrap();
        // A v2 HEARTBEAT-sized frame (9 payload bytes) and a v1 one.
        let mut v2 = vec![0xFD, 9, 0, 0, 1, 1, 1, 0, 0, 0];
        v2.extend([0u8; 9 + 2]);
        let mut v1 = vec![0xFE, 2, 0, 255, 190, 0];
        v1.extend([7u8; 2 + 2]);
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
    }
}
