//! STATUSTEXT as whole texts: chunk reassembly, PX4's trailing tab, and a numbered log.
//!
//! A MAVLink 2 STATUSTEXT carries at most 50 characters. A longer text comes as chunks with one
//! non-zero `id` and increasing `chunk_seq`; a chunk holding a NUL (fewer than 50 characters) is
//! the last. A final chunk of exactly 50 characters has no terminator, so a partial text is also
//! completed by the next text that is not its continuation, or [`TEXT_FLUSH_MS`] of sim time
//! after its last chunk. PX4 appends a tab to texts that also exist as events; it is stripped.
//!
//! Every completed text gets the next `seq` (1, 2, …): waits count texts after a `since_seq`.

use heapless::{Deque, String};

/// Longest reassembled text kept, in bytes; longer texts are cut at a character boundary.
pub const MAX_TEXT_LEN: usize = 150;

/// Sim milliseconds after which a partial chunked text is completed as it stands.
pub const TEXT_FLUSH_MS: u64 = 1000;

const CHUNK_LEN: usize = 50;

/// One complete STATUSTEXT.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Text {
    /// Position in the session's text sequence, from 1.
    pub seq: u32,
    /// MAV_SEVERITY (0 emergency … 7 debug).
    pub severity: u8,
    /// Sim time of its last chunk, ms, if the clock was known.
    pub sim_ms: Option<u64>,
    /// The text, tab and NULs stripped.
    pub text: String<MAX_TEXT_LEN>,
}

impl Text {
    /// [`Text::severity`] by name (`Severity::MAV_SEVERITY_WARNING`, …); `None` for a number
    /// MAV_SEVERITY does not define (above 7).
    pub fn level(&self) -> Option<super::Severity> {
        num_traits::FromPrimitive::from_u8(self.severity)
    }
}

#[derive(Debug, Clone)]
struct Partial {
    id: u16,
    next_chunk: u8,
    severity: u8,
    last_ms: Option<u64>,
    text: String<MAX_TEXT_LEN>,
}

/// The last `N` complete texts, numbered, plus the one being reassembled.
#[derive(Debug, Clone)]
pub struct TextLog<const N: usize> {
    ring: Deque<Text, N>,
    last_seq: u32,
    partial: Option<Partial>,
}

impl<const N: usize> Default for TextLog<N> {
    fn default() -> Self {
        Self::new()
    }
}

/// Bytes of a 50-byte text field up to the first NUL, as UTF-8 (invalid bytes become `?`).
fn chunk_text(raw: &[u8]) -> (&[u8], bool) {
    match raw.iter().position(|&b| b == 0) {
        Some(n) => (&raw[..n], true),
        None => (raw, raw.len() < CHUNK_LEN),
    }
}

fn push_lossy<const L: usize>(out: &mut String<L>, bytes: &[u8]) {
    let mut rest = bytes;
    while !rest.is_empty() {
        match core::str::from_utf8(rest) {
            Ok(s) => {
                push_truncated(out, s);
                return;
            }
            Err(e) => {
                let good = e.valid_up_to();
                // `get`, not indexing (always in range): no panic path linked in.
                let valid = rest.get(..good).unwrap_or_default();
                push_truncated(out, core::str::from_utf8(valid).unwrap_or(""));
                push_truncated(out, "?");
                let bad = e.error_len().unwrap_or(rest.len() - good);
                rest = rest.get(good + bad..).unwrap_or_default();
            }
        }
    }
}

fn push_truncated<const L: usize>(out: &mut String<L>, s: &str) {
    // Always fits: cut to the room left. One copy, not a push per character.
    let _ = out.push_str(fit(s, L - out.len()));
}

/// The longest prefix of `s` of at most `room` bytes that ends at a character boundary.
pub(crate) fn fit(s: &str, room: usize) -> &str {
    if s.len() <= room {
        return s;
    }
    let mut n = room;
    while !s.is_char_boundary(n) {
        n -= 1; // reaches 0 at worst, a boundary
    }
    &s[..n]
}

impl<const N: usize> TextLog<N> {
    /// An empty log.
    pub const fn new() -> Self {
        TextLog {
            ring: Deque::new(),
            last_seq: 0,
            partial: None,
        }
    }

    /// The `seq` of the newest complete text; 0 before any.
    pub fn last_seq(&self) -> u32 {
        self.last_seq
    }

    /// The newest complete text.
    pub fn last(&self) -> Option<&Text> {
        self.ring.back()
    }

    /// Texts still held, oldest first.
    pub fn iter(&self) -> impl Iterator<Item = &Text> {
        self.ring.iter()
    }

    /// Held texts with `seq > after`, oldest first.
    pub fn after(&self, after: u32) -> impl Iterator<Item = &Text> {
        self.ring.iter().filter(move |t| t.seq > after)
    }

    /// Take in one STATUSTEXT message; returns the `seq` of a text it completed, if any.
    ///
    /// A chunk that does not continue the partial text completes that partial first, so one
    /// call may log two texts; the newest seq is returned.
    pub fn push_chunk(
        &mut self,
        severity: u8,
        raw: &[u8],
        id: u16,
        chunk_seq: u8,
        sim_ms: Option<u64>,
    ) -> Option<u32> {
        let (bytes, last) = chunk_text(raw);
        if id == 0 {
            self.flush();
            let mut text = String::new();
            push_lossy(&mut text, bytes);
            return Some(self.complete(severity, sim_ms, text));
        }
        let continues = matches!(&self.partial, Some(p) if p.id == id && p.next_chunk == chunk_seq);
        if !continues {
            self.flush();
            self.partial = Some(Partial {
                id,
                next_chunk: chunk_seq,
                severity,
                last_ms: sim_ms,
                text: String::new(),
            });
        }
        let p = self.partial.as_mut()?;
        push_lossy(&mut p.text, bytes);
        p.next_chunk = chunk_seq.wrapping_add(1);
        p.last_ms = sim_ms;
        if last {
            let p = self.partial.take()?;
            return Some(self.complete(p.severity, sim_ms, p.text));
        }
        None
    }

    /// Complete a partial text whose last chunk is older than [`TEXT_FLUSH_MS`] at `sim_ms`.
    pub fn expire(&mut self, sim_ms: u64) -> Option<u32> {
        let stale = matches!(&self.partial, Some(p) if p.last_ms.is_some_and(|t| sim_ms.saturating_sub(t) >= TEXT_FLUSH_MS));
        if stale {
            self.flush()
        } else {
            None
        }
    }

    /// Complete any partial text as it stands.
    pub fn flush(&mut self) -> Option<u32> {
        let p = self.partial.take()?;
        Some(self.complete(p.severity, p.last_ms, p.text))
    }

    fn complete(
        &mut self,
        severity: u8,
        sim_ms: Option<u64>,
        mut text: String<MAX_TEXT_LEN>,
    ) -> u32 {
        while text.ends_with('\t') || text.ends_with('\0') {
            text.pop();
        }
        self.last_seq = self.last_seq.wrapping_add(1);
        if self.ring.is_full() {
            self.ring.pop_front();
        }
        let _ = self.ring.push_back(Text {
            seq: self.last_seq,
            severity,
            sim_ms,
            text,
        });
        self.last_seq
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(s: &str) -> [u8; 50] {
        let mut f = [0u8; 50];
        f[..s.len()].copy_from_slice(s.as_bytes());
        f
    }

    #[test]
    fn single_text_strips_px4_tab() {
        let mut log = TextLog::<4>::new();
        assert_eq!(
            log.push_chunk(6, &field("Armed by external command\t"), 0, 0, Some(5)),
            Some(1)
        );
        assert_eq!(
            log.last().unwrap().text.as_str(),
            "Armed by external command"
        );
    }

    #[test]
    fn chunks_reassemble() {
        // docs/px4-wire.md §Arming: "Arming denied: Resolve system health failures first" in
        // two chunks.
        let full = "Arming denied: Resolve system health failures first\t";
        let mut log = TextLog::<4>::new();
        assert_eq!(log.push_chunk(2, &field(&full[..50]), 7, 0, Some(1)), None);
        assert_eq!(
            log.push_chunk(2, &field(&full[50..]), 7, 1, Some(1)),
            Some(1)
        );
        assert_eq!(
            log.last().unwrap().text.as_str(),
            "Arming denied: Resolve system health failures first"
        );
        assert_eq!(log.last().unwrap().severity, 2);
    }

    #[test]
    fn exact_fifty_final_chunk_completes_on_next_text_or_time() {
        let a = "0123456789ABCDEFGHIJabcdefghij0123456789KLMNOPQRST";
        let mut log = TextLog::<4>::new();
        assert_eq!(log.push_chunk(4, a.as_bytes(), 9, 0, Some(100)), None);
        assert_eq!(log.expire(500), None);
        assert_eq!(log.expire(1100), Some(1));
        assert_eq!(log.last().unwrap().text.as_str(), a);
        assert_eq!(log.push_chunk(4, a.as_bytes(), 10, 0, Some(2000)), None);
        assert_eq!(log.push_chunk(6, &field("next"), 0, 0, Some(2001)), Some(3));
        let texts: heapless::Vec<&str, 4> = log.iter().map(|t| t.text.as_str()).collect();
        assert_eq!(&texts[..], &[a, a, "next"]);
    }

    #[test]
    fn ring_keeps_the_newest_and_seq_keeps_counting() {
        let mut log = TextLog::<2>::new();
        for i in 0..5u8 {
            log.push_chunk(
                6,
                &field(if i % 2 == 0 { "even" } else { "odd" }),
                0,
                0,
                None,
            );
        }
        assert_eq!(log.last_seq(), 5);
        let seqs: heapless::Vec<u32, 2> = log.iter().map(|t| t.seq).collect();
        assert_eq!(&seqs[..], &[4, 5]);
        assert_eq!(log.after(4).count(), 1);
    }

    #[test]
    fn fit_cuts_at_a_character_boundary_as_char_pushes_did() {
        // The reference: push characters one by one until one does not fit.
        fn by_chars<const L: usize>(s: &str) -> String<L> {
            let mut out = String::new();
            for c in s.chars() {
                if out.push(c).is_err() {
                    break;
                }
            }
            out
        }
        let samples = [
            "",
            "abc",
            "é",
            "aé",
            "aaé",
            "€€€",
            "a€b€c",
            "🚁x🚁",
            "ééééé",
        ];
        for s in samples {
            for room in 0..=s.len() + 2 {
                let cut = fit(s, room);
                assert!(cut.len() <= room && s.starts_with(cut), "{s:?} {room}");
            }
            assert_eq!(
                error_text_like::<3>(s).as_str(),
                by_chars::<3>(s).as_str(),
                "{s:?}"
            );
            assert_eq!(
                error_text_like::<5>(s).as_str(),
                by_chars::<5>(s).as_str(),
                "{s:?}"
            );
            let mut out: String<6> = String::try_from("ab").unwrap();
            push_truncated(&mut out, s);
            let mut want: String<6> = String::try_from("ab").unwrap();
            for c in s.chars() {
                if want.push(c).is_err() {
                    break;
                }
            }
            assert_eq!(out, want, "{s:?}");
        }
        let long = "é".repeat(100);
        let e = crate::telemetry::error_text(&long);
        assert_eq!(e.len(), crate::telemetry::MAX_ERROR_LEN);
        assert!(long.starts_with(e.as_str()));
    }

    fn error_text_like<const L: usize>(s: &str) -> String<L> {
        let mut out = String::new();
        push_truncated(&mut out, s);
        out
    }

    #[test]
    fn invalid_utf8_is_replaced_not_fatal() {
        let mut log = TextLog::<2>::new();
        let mut raw = field("ab");
        raw[1] = 0xFF;
        log.push_chunk(6, &raw, 0, 0, None);
        assert_eq!(log.last().unwrap().text.as_str(), "a?");
    }
}
