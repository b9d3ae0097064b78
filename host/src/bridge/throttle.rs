//! A serial line's pace for the bytes written to a stream side.
//!
//! A UART at `baud` moves `baud / 10` bytes a second (8N1: start, 8 data, stop). The throttle
//! releases whole frames at that rate (a token bucket allowed to go into debt, so a frame
//! larger than the burst still goes out, and the next one waits longer) and holds at most
//! `backlog_bytes` waiting: beyond that, new frames are dropped whole. This keeps the latency
//! of a slow line bounded, where an unthrottled socket would queue seconds of stale telemetry
//! in kernel buffers.
//!
//! The line is also flow-controlled, as a UART with CTS is: when the reader at the far end is
//! slower than the baud rate (an emulated MCU on a busy host), the link's writer declines the
//! frame (`send` in `Throttle::release` returns false) and the frames wait here, in the
//! bounded backlog, not in a queue that grows with the reader's lag.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// Bits on the wire per byte at 8N1.
pub const BITS_PER_BYTE: u32 = 10;

/// Line time the bucket may save up while idle, s (a burst after a quiet spell).
const BURST_S: f64 = 0.02;

/// While the writer declines frames, how often the throttle asks again, besides the link's
/// own writable wake-ups.
const BLOCKED_RECHECK: Duration = Duration::from_millis(5);

#[derive(Debug)]
pub(crate) struct Throttle {
    bytes_per_s: f64,
    burst_bytes: f64,
    tokens: f64,
    last: Instant,
    queue: VecDeque<Vec<u8>>,
    queued_bytes: usize,
    backlog_bytes: usize,
    /// The writer declined the last frame offered (the reader is behind).
    blocked: bool,
}

impl Throttle {
    /// A line at `baud` (> 0) holding at most `backlog_bytes` waiting.
    pub(crate) fn new(baud: u32, backlog_bytes: usize, now: Instant) -> Throttle {
        let bytes_per_s = f64::from(baud.max(1)) / f64::from(BITS_PER_BYTE);
        let burst_bytes = (bytes_per_s * BURST_S).max(1.0);
        Throttle {
            bytes_per_s,
            burst_bytes,
            tokens: burst_bytes,
            last: now,
            queue: VecDeque::new(),
            queued_bytes: 0,
            backlog_bytes,
            blocked: false,
        }
    }

    fn refill(&mut self, now: Instant) {
        let dt = now.saturating_duration_since(self.last).as_secs_f64();
        self.last = now;
        self.tokens = (self.tokens + dt * self.bytes_per_s).min(self.burst_bytes);
    }

    /// Queue `frame`; false (and nothing queued) when the backlog would exceed its limit.
    pub(crate) fn offer(&mut self, frame: &[u8]) -> bool {
        if self.queued_bytes + frame.len() > self.backlog_bytes && !self.queue.is_empty() {
            return false;
        }
        self.queued_bytes += frame.len();
        self.queue.push_back(frame.to_vec());
        true
    }

    /// Hand every frame the line has time for now to `send`, oldest first. `send` returns
    /// false when the writer cannot take a frame yet (flow control): that frame stays first in
    /// line, unpaid, and the release stops.
    pub(crate) fn release(&mut self, now: Instant, mut send: impl FnMut(&[u8]) -> bool) {
        self.refill(now);
        self.blocked = false;
        while self.tokens > 0.0 {
            let Some(frame) = self.queue.front() else {
                return;
            };
            if !send(frame) {
                self.blocked = true;
                return;
            }
            let len = frame.len();
            self.queue.pop_front();
            self.queued_bytes -= len;
            self.tokens -= len as f64;
        }
    }

    /// How long until the next waiting frame may go; `None` when nothing waits.
    pub(crate) fn next_release(&self, now: Instant) -> Option<Duration> {
        if self.queue.is_empty() {
            return None;
        }
        if self.blocked {
            return Some(BLOCKED_RECHECK);
        }
        let dt = now.saturating_duration_since(self.last).as_secs_f64();
        let tokens = self.tokens + dt * self.bytes_per_s;
        if tokens > 0.0 {
            return Some(Duration::ZERO);
        }
        // Just past the moment the debt is paid, so the release finds tokens > 0.
        Some(Duration::from_secs_f64(-tokens / self.bytes_per_s) + Duration::from_micros(100))
    }

    /// Bytes waiting.
    pub(crate) fn queued_bytes(&self) -> usize {
        self.queued_bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn releases_at_the_line_rate_and_drops_beyond_the_backlog() {
        let t0 = Instant::now();
        // 10 000 baud: 1000 bytes/s, burst 20 bytes.
        let mut t = Throttle::new(10_000, 300, t0);
        for _ in 0..3 {
            assert!(t.offer(&[0u8; 100]));
        }
        assert!(!t.offer(&[0u8; 100]), "backlog of 300 bytes is full");
        let mut sent = Vec::new();
        t.release(t0, |f| {
            sent.push(f.len());
            true
        });
        assert_eq!(sent, [100], "the saved-up burst lets the first frame go");
        assert_eq!(t.queued_bytes(), 200);
        // 80 bytes of debt: the next frame waits 80 ms.
        let wait = t.next_release(t0).unwrap();
        assert!(
            (Duration::from_millis(79)..Duration::from_millis(82)).contains(&wait),
            "{wait:?}"
        );
        t.release(t0 + Duration::from_millis(50), |f| {
            sent.push(f.len());
            true
        });
        assert_eq!(sent.len(), 1, "not yet");
        t.release(t0 + wait, |f| {
            sent.push(f.len());
            true
        });
        assert_eq!(sent.len(), 2);
        t.release(t0 + Duration::from_secs(1), |f| {
            sent.push(f.len());
            true
        });
        assert_eq!(sent.len(), 3);
        assert_eq!(t.next_release(t0 + Duration::from_secs(1)), None);
    }

    #[test]
    fn a_frame_larger_than_the_backlog_still_goes_when_nothing_waits() {
        let t0 = Instant::now();
        let mut t = Throttle::new(9_600, 100, t0);
        assert!(t.offer(&[1u8; 280]));
        let mut n = 0;
        t.release(t0, |_| {
            n += 1;
            true
        });
        assert_eq!(n, 1);
    }

    #[test]
    fn a_declining_writer_keeps_frames_in_the_bounded_backlog() {
        let t0 = Instant::now();
        // 100 000 baud: 10 000 bytes/s, burst 200 bytes; a 250-byte backlog.
        let mut t = Throttle::new(100_000, 250, t0);
        assert!(t.offer(&[1u8; 100]));
        assert!(t.offer(&[2u8; 100]));
        let mut offered = 0;
        t.release(t0, |_| {
            offered += 1;
            false
        });
        assert_eq!(offered, 1, "the release stops at the first refusal");
        assert_eq!(t.queued_bytes(), 200, "the refused frame stays, unpaid");
        assert_eq!(t.next_release(t0), Some(BLOCKED_RECHECK));
        // The reader stays behind: new frames beyond the backlog are dropped whole, so what
        // waits (the latency) stays bounded however long the reader lags.
        assert!(!t.offer(&[3u8; 100]));
        // The reader catches up: the frames go in order, paid from the tokens not spent.
        let mut sent = Vec::new();
        t.release(t0 + Duration::from_millis(1), |f| {
            sent.push(f[0]);
            true
        });
        assert_eq!(sent, [1, 2]);
        assert_eq!(t.next_release(t0), None);
    }
}
