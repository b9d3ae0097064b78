//! A serial line's pace for the bytes written to a stream side.
//!
//! A UART at `baud` moves `baud / 10` bytes a second (8N1: start, 8 data, stop). The throttle
//! releases whole frames at that rate (a token bucket allowed to go into debt, so a frame
//! larger than the burst still goes out, and the next one waits longer) and holds at most
//! `backlog_bytes` waiting: beyond that, frames are dropped whole (telemetry first, below).
//! This keeps the latency of a slow line bounded, where an unthrottled socket would queue
//! seconds of stale telemetry in kernel buffers.
//!
//! The line is also flow-controlled, as a UART with CTS is: when the reader at the far end is
//! slower than the baud rate (an emulated MCU on a busy host), the link's writer declines the
//! frame (`send` in `Throttle::release` returns false) and the frames wait here, in the
//! bounded backlog, not in a queue that grows with the reader's lag.
//!
//! **What a full backlog drops.** PX4's telemetry streams repeat: the next ATTITUDE supersedes
//! a lost one. A reply or an event goes once (a MISSION_REQUEST_INT, a COMMAND_ACK, a
//! PARAM_VALUE, a STATUSTEXT), and losing it costs the reader a retry timer, or the reason a
//! command was refused. So a frame that is not telemetry (`sent_once` tells them apart)
//! arriving at a full backlog makes room by dropping the oldest telemetry waiting, and is
//! dropped itself only when what waits is all replies. Without this a reader that stays
//! slower than the line loses the frames at the end of each of the vehicle's bursts, which is
//! where its replies are: a mission upload through a slow emulated UART lost every re-ask for
//! five seconds.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use mavlink::MessageData;
use nexus_core::mav;

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
    /// Frames waiting, oldest first, each with whether it is [`sent_once`].
    queue: VecDeque<(Vec<u8>, bool)>,
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

    /// Queue `frame`; the number of frames dropped to keep the backlog within its limit: 0,
    /// or 1 for `frame` itself when it is telemetry and does not fit, or the telemetry frames
    /// evicted to make room for a frame [`sent_once`] (which is dropped itself, and nothing
    /// evicted, when even that would not make room).
    pub(crate) fn offer(&mut self, frame: &[u8]) -> usize {
        let fits = |queued: usize| queued + frame.len() <= self.backlog_bytes;
        let once = sent_once(frame);
        if self.queue.is_empty() || fits(self.queued_bytes) {
            self.push(frame, once);
            return 0;
        }
        if !once {
            return 1;
        }
        let telemetry: usize = self
            .queue
            .iter()
            .filter(|(_, once)| !once)
            .map(|(f, _)| f.len())
            .sum();
        let replies = self.queued_bytes - telemetry;
        if replies > 0 && !fits(replies) {
            return 1;
        }
        let mut evicted = 0;
        while !fits(self.queued_bytes) {
            let Some(i) = self.queue.iter().position(|(_, once)| !once) else {
                break;
            };
            if let Some((f, _)) = self.queue.remove(i) {
                self.queued_bytes -= f.len();
                evicted += 1;
            }
        }
        self.push(frame, once);
        evicted
    }

    fn push(&mut self, frame: &[u8], once: bool) {
        self.queued_bytes += frame.len();
        self.queue.push_back((frame.to_vec(), once));
    }

    /// Hand every frame the line has time for now to `send`, oldest first. `send` returns
    /// false when the writer cannot take a frame yet (flow control): that frame stays first in
    /// line, unpaid, and the release stops.
    pub(crate) fn release(&mut self, now: Instant, mut send: impl FnMut(&[u8]) -> bool) {
        self.refill(now);
        self.blocked = false;
        while self.tokens > 0.0 {
            let Some((frame, _)) = self.queue.front() else {
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

/// Whether `frame` carries a message PX4 sends once, as a reply or an event, rather than as
/// a telemetry stream whose next sample supersedes it: the mission, command, parameter and
/// log protocols, and the vehicle's text and events. A frame whose id cannot be read counts
/// as telemetry.
#[allow(deprecated)] // PX4 still answers with the legacy mission forms
pub(crate) fn sent_once(frame: &[u8]) -> bool {
    let Some(id) = nexus_core::frame::msgid(frame) else {
        return false;
    };
    matches!(
        id,
        mav::PARAM_VALUE_DATA::ID
            | mav::MISSION_ITEM_DATA::ID
            | mav::MISSION_REQUEST_DATA::ID
            | mav::MISSION_COUNT_DATA::ID
            | mav::MISSION_CLEAR_ALL_DATA::ID
            | mav::MISSION_ITEM_REACHED_DATA::ID
            | mav::MISSION_ACK_DATA::ID
            | mav::MISSION_REQUEST_INT_DATA::ID
            | mav::MISSION_ITEM_INT_DATA::ID
            | mav::COMMAND_INT_DATA::ID
            | mav::COMMAND_LONG_DATA::ID
            | mav::COMMAND_ACK_DATA::ID
            | mav::FILE_TRANSFER_PROTOCOL_DATA::ID
            | mav::LOG_ENTRY_DATA::ID
            | mav::LOG_DATA_DATA::ID
            | mav::AUTOPILOT_VERSION_DATA::ID
            | mav::STATUSTEXT_DATA::ID
            | mav::PROTOCOL_VERSION_DATA::ID
            | mav::EVENT_DATA::ID
            | mav::RESPONSE_EVENT_ERROR_DATA::ID
    )
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
            assert_eq!(t.offer(&[0u8; 100]), 0);
        }
        assert_eq!(t.offer(&[0u8; 100]), 1, "backlog of 300 bytes is full");
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
        assert_eq!(t.offer(&[1u8; 280]), 0);
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
        assert_eq!(t.offer(&[1u8; 100]), 0);
        assert_eq!(t.offer(&[2u8; 100]), 0);
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
        assert_eq!(t.offer(&[3u8; 100]), 1);
        // The reader catches up: the frames go in order, paid from the tokens not spent.
        let mut sent = Vec::new();
        t.release(t0 + Duration::from_millis(1), |f| {
            sent.push(f[0]);
            true
        });
        assert_eq!(sent, [1, 2]);
        assert_eq!(t.next_release(t0), None);
    }

    fn frame<M: MessageData>(msg: &M) -> Vec<u8> {
        let mut enc = nexus_core::frame::Encoder::new(1, 1);
        let mut buf = [0u8; nexus_core::frame::MAX_FRAME_LEN];
        let n = enc.encode(msg, &mut buf).expect("fits");
        buf[..n].to_vec()
    }

    fn attitude() -> Vec<u8> {
        frame(&mav::ATTITUDE_DATA {
            time_boot_ms: 1,
            ..Default::default()
        })
    }

    fn ack() -> Vec<u8> {
        frame(&mav::COMMAND_ACK_DATA::default())
    }

    #[test]
    fn replies_and_events_are_told_from_telemetry_in_either_mavlink_version() {
        assert!(sent_once(&ack()));
        assert!(sent_once(&frame(&mav::MISSION_REQUEST_INT_DATA::default())));
        assert!(sent_once(&frame(&mav::STATUSTEXT_DATA::default())));
        assert!(!sent_once(&attitude()));
        assert!(!sent_once(&frame(&mav::HEARTBEAT_DATA::default())));
        // MAVLink 1: the id is the header's sixth byte.
        assert!(sent_once(&[0xFE, 3, 0, 1, 1, 77, 0, 0, 0, 0, 0]));
        assert!(!sent_once(&[0xFE, 3, 0, 1, 1, 30, 0, 0, 0, 0, 0]));
        assert!(!sent_once(&[0xFD, 0, 0]), "too short to hold an id");
        assert!(!sent_once(b"garbage bytes"));
    }

    #[test]
    fn a_reply_at_a_full_backlog_takes_the_place_of_the_oldest_telemetry() {
        let t0 = Instant::now();
        let (att, ack) = (attitude(), ack());
        // Room for three attitudes.
        let mut t = Throttle::new(100_000, 3 * att.len(), t0);
        for _ in 0..3 {
            assert_eq!(t.offer(&att), 0);
        }
        assert_eq!(t.offer(&att), 1, "telemetry beyond the backlog is dropped");
        assert_eq!(t.offer(&ack), 1, "one attitude makes room for the reply");
        assert!(t.queued_bytes() <= 3 * att.len());
        let mut sent = Vec::new();
        t.release(t0 + Duration::from_secs(1), |f| {
            sent.push(sent_once(f));
            true
        });
        assert_eq!(
            sent,
            [false, false, true],
            "the reply goes after what was older"
        );
    }

    #[test]
    fn a_backlog_of_replies_is_not_cleared_for_another() {
        let t0 = Instant::now();
        let (att, ack) = (attitude(), ack());
        let mut t = Throttle::new(100_000, 2 * ack.len(), t0);
        assert_eq!(t.offer(&ack), 0);
        assert_eq!(t.offer(&ack), 0);
        assert_eq!(
            t.offer(&ack),
            1,
            "no telemetry to drop: the newest reply is"
        );
        assert_eq!(t.offer(&att), 1);
        let mut n = 0;
        t.release(t0 + Duration::from_secs(1), |_| {
            n += 1;
            true
        });
        assert_eq!(n, 2);
    }
}
