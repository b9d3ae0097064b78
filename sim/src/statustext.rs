//! STATUSTEXT as PX4 sends it, and the console (stdout) log a supervisor reads.
//!
//! PX4's modules publish `mavlink_log` messages into a uORB queue of 8; the mavlink STATUSTEXT
//! stream (`streams/STATUSTEXT.hpp`) drains it only while a GCS or onboard controller is
//! connected (a HEARTBEAT of that type seen recently), drops entries older than 5 s, and splits a
//! text longer than 50 characters into chunks that share one `id` (a counter starting at 0) with
//! `chunk_seq` 0, 1, …; the last chunk is zero-padded, a chunk of exactly 50 has no terminator.
//! Texts that also exist as events end in a tab. The same text is printed on the console.

use super::wire::Outbox;
use mavlink::dialects::common::{MavSeverity, STATUSTEXT_DATA};
use std::collections::VecDeque;

/// uORB queue length of `mavlink_log`.
pub const QUEUE_LEN: usize = 8;
/// Entries older than this are not sent (STATUSTEXT.hpp), µs.
pub const STALE_US: u64 = 5_000_000;
/// Characters per STATUSTEXT chunk.
pub const CHUNK: usize = 50;

#[derive(Debug, Clone)]
struct Entry {
    created_us: u64,
    severity: MavSeverity,
    text: String,
}

/// The queue of texts waiting for the STATUSTEXT stream.
#[derive(Debug, Default)]
pub struct TextQueue {
    queue: VecDeque<Entry>,
    next_id: u16,
    /// Texts lost to queue overflow or staleness.
    pub dropped: u32,
}

/// Console level prefix for a severity, as PX4's logger prints it.
pub fn console_level(sev: MavSeverity) -> &'static str {
    match sev {
        MavSeverity::MAV_SEVERITY_EMERGENCY
        | MavSeverity::MAV_SEVERITY_ALERT
        | MavSeverity::MAV_SEVERITY_CRITICAL
        | MavSeverity::MAV_SEVERITY_ERROR => "ERROR",
        MavSeverity::MAV_SEVERITY_WARNING => "WARN",
        _ => "INFO",
    }
}

impl TextQueue {
    /// Publish a text at sim time `now_us`; the oldest is lost when the queue is full.
    pub fn push(&mut self, now_us: u64, severity: MavSeverity, text: &str) {
        if self.queue.len() == QUEUE_LEN {
            self.queue.pop_front();
            self.dropped += 1;
        }
        self.queue.push_back(Entry {
            created_us: now_us,
            severity,
            text: text.to_owned(),
        });
    }

    /// Texts waiting.
    pub fn len(&self) -> usize {
        self.queue.len()
    }

    /// Whether nothing waits.
    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    /// Send what may be sent now: nothing unless `connected`; stale entries are dropped.
    pub fn flush(&mut self, now_us: u64, connected: bool, out: &mut Outbox) {
        if !connected {
            return;
        }
        while let Some(e) = self.queue.pop_front() {
            if now_us.saturating_sub(e.created_us) >= STALE_US {
                self.dropped += 1;
                continue;
            }
            let id = self.next_id;
            self.next_id = self.next_id.wrapping_add(1);
            send_chunks(id, e.severity, &e.text, out);
        }
    }
}

/// Split `text` into STATUSTEXT chunks exactly as PX4 does and queue them.
pub fn send_chunks(id: u16, severity: MavSeverity, text: &str, out: &mut Outbox) {
    let bytes = text.as_bytes();
    let mut rest = bytes;
    let mut chunk_seq = 0u8;
    while !rest.is_empty() {
        let n = rest.len().min(CHUNK);
        let mut field = [0u8; CHUNK];
        field[..n].copy_from_slice(&rest[..n]);
        out.push(&STATUSTEXT_DATA {
            severity,
            text: field.into(),
            id,
            chunk_seq,
        });
        if rest.len() <= CHUNK {
            break;
        }
        rest = &rest[CHUNK..];
        chunk_seq = chunk_seq.wrapping_add(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mavlink::MessageData;
    use nexus_core::frame::Decoder;

    fn sent(out: &mut Outbox) -> Vec<STATUSTEXT_DATA> {
        let mut dec = Decoder::new();
        let mut v = Vec::new();
        let mut buf = [0u8; 1400];
        while let Some(n) = out.poll_transmit(&mut buf) {
            crate::testutil::for_each_frame(&mut dec, &buf[..n], |_, p| {
                v.push(STATUSTEXT_DATA::deser(mavlink::MavlinkVersion::V2, p).unwrap());
            });
        }
        v
    }

    #[test]
    fn chunks_like_px4() {
        let mut q = TextQueue::default();
        let mut out = Outbox::new(1, 1, 1);
        q.push(
            0,
            MavSeverity::MAV_SEVERITY_CRITICAL,
            "Arming denied: Resolve system health failures first\t",
        );
        q.push(
            0,
            MavSeverity::MAV_SEVERITY_INFO,
            "Armed by external command\t",
        );
        q.flush(1000, false, &mut out);
        assert_eq!(out.pending(), 0, "not connected: held");
        q.flush(1000, true, &mut out);
        let v = sent(&mut out);
        assert_eq!(v.len(), 3);
        assert_eq!((v[0].id, v[0].chunk_seq), (0, 0));
        assert_eq!(
            &v[0].text[..],
            b"Arming denied: Resolve system health failures firs"
        );
        assert_eq!((v[1].id, v[1].chunk_seq), (0, 1));
        assert_eq!(&v[1].text[..3], b"t\t\0");
        assert_eq!((v[2].id, v[2].chunk_seq), (1, 0));
    }

    #[test]
    fn overflow_and_staleness_drop_texts() {
        let mut q = TextQueue::default();
        let mut out = Outbox::new(1, 1, 1);
        for i in 0..10 {
            q.push(0, MavSeverity::MAV_SEVERITY_INFO, &format!("t{i}"));
        }
        assert_eq!(q.len(), QUEUE_LEN);
        q.flush(STALE_US, true, &mut out);
        assert_eq!(out.pending(), 0);
        assert_eq!(q.dropped, 10);
    }
}
