//! PX4's events protocol (`src/modules/mavlink/mavlink_events.cpp`): EVENT (410) for what
//! commander and navigator report, CURRENT_EVENT_SEQUENCE (411) every 3 s, REQUEST_EVENT (412)
//! answered from a buffer of the last 20 events, RESPONSE_EVENT_ERROR (413) for a sequence no
//! longer (or never) held.
//!
//! As in the traces: sequences start at 65526 (`events::initial_event_sequence`) and wrap; the
//! first CURRENT_EVENT_SEQUENCE after the first event, and every one while the buffer is empty,
//! carries MAV_EVENT_CURRENT_SEQUENCE_FLAGS_RESET; an event's id is PX4's `events::ID(name)`
//! (24-bit FNV-1a of the name, component 1 in the top byte: "commander_armed_by" is
//! 0x0190caf3 in box-x4); `log_levels` is internal level << 4 | external level.

use mav::{MavEventCurrentSequenceFlags, MavEventErrorReason};
use mavlink::dialects::common as mav;
use std::collections::VecDeque;

/// Events PX4's mavlink module keeps for re-sending (`EventBuffer(int capacity = 20)`).
pub const BUFFER_CAPACITY: usize = 20;
/// CURRENT_EVENT_SEQUENCE period, µs (`current_sequence_interval{3_s}`; ~3 s in the traces).
pub const CURRENT_SEQUENCE_INTERVAL_US: u64 = 3_000_000;
/// The first event's sequence (`events::initial_event_sequence`, 65526 in every trace).
pub const INITIAL_SEQUENCE: u16 = 65_526;
/// EVENT.arguments capacity, bytes.
pub const MAX_ARGUMENTS: usize = 40;

/// PX4's `events::Log` levels, as a `log_levels` nibble.
pub mod level {
    /// `events::Log::Critical`.
    pub const CRITICAL: u8 = 2;
    /// `events::Log::Warning`.
    pub const WARNING: u8 = 4;
    /// `events::Log::Info`.
    pub const INFO: u8 = 6;
    /// Both nibbles of `log_levels`: internal << 4 | external.
    pub const fn both(external: u8, internal: u8) -> u8 {
        internal << 4 | external
    }
    /// Info for the GCS and the log (0x66: arming, takeoff, landing, mission in box-x4).
    pub const INFO_INFO: u8 = both(INFO, INFO);
}

/// PX4's `events::ID(name)`: FNV-1a (32 bit) of the name, low 24 bits, PX4's component (1)
/// in the top byte.
pub const fn id(name: &str) -> u32 {
    let bytes = name.as_bytes();
    let mut hash: u32 = 0x811c_9dc5;
    let mut i = 0;
    while i < bytes.len() {
        hash ^= bytes[i] as u32;
        hash = hash.wrapping_mul(0x0100_0193);
        i += 1;
    }
    (hash & 0x00ff_ffff) | 1 << 24
}

/// One buffered event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventRecord {
    /// `events::ID` of its name.
    pub id: u32,
    /// When it was reported, ms of the vehicle's clock.
    pub time_boot_ms: u32,
    /// Its sequence number.
    pub sequence: u16,
    /// Internal << 4 | external log level.
    pub log_levels: u8,
    /// Its arguments, packed little-endian as PX4 packs them.
    pub arguments: [u8; MAX_ARGUMENTS],
}

impl EventRecord {
    /// The EVENT message for it (to all components of all systems, as PX4 sends them).
    pub fn message(&self) -> mav::EVENT_DATA {
        mav::EVENT_DATA {
            id: self.id,
            event_time_boot_ms: self.time_boot_ms,
            sequence: self.sequence,
            destination_component: 0,
            destination_system: 0,
            log_levels: self.log_levels,
            arguments: self.arguments,
        }
    }
}

/// The event buffer and the send protocol's state for the one link.
#[derive(Debug, Clone)]
pub struct EventLog {
    buffer: VecDeque<EventRecord>,
    /// Sequence of the newest event (the one before [`INITIAL_SEQUENCE`] while none).
    latest: u16,
    /// Newest sequence already sent as EVENT.
    sent: u16,
    /// No event has been sent yet: the next CURRENT_EVENT_SEQUENCE says "reset".
    first: bool,
    last_current_us: Option<u64>,
}

impl Default for EventLog {
    fn default() -> Self {
        EventLog {
            buffer: VecDeque::with_capacity(BUFFER_CAPACITY),
            latest: INITIAL_SEQUENCE.wrapping_sub(1),
            sent: INITIAL_SEQUENCE.wrapping_sub(1),
            first: true,
            last_current_us: None,
        }
    }
}

impl EventLog {
    /// Report an event (`events::send`): `args` beyond [`MAX_ARGUMENTS`] bytes are cut.
    pub fn report(&mut self, now_us: u64, name: &str, log_levels: u8, args: &[u8]) {
        let mut arguments = [0u8; MAX_ARGUMENTS];
        let n = args.len().min(MAX_ARGUMENTS);
        arguments[..n].copy_from_slice(&args[..n]);
        self.latest = self.latest.wrapping_add(1);
        if self.buffer.len() == BUFFER_CAPACITY {
            self.buffer.pop_front();
        }
        self.buffer.push_back(EventRecord {
            id: id(name),
            time_boot_ms: (now_us / 1000) as u32,
            sequence: self.latest,
            log_levels,
            arguments,
        });
    }

    /// Sequence of the newest event reported.
    pub fn latest_sequence(&self) -> u16 {
        self.latest
    }

    /// The buffered event with `sequence`, if still held.
    pub fn get(&self, sequence: u16) -> Option<&EventRecord> {
        self.buffer.iter().rev().find(|e| e.sequence == sequence)
    }

    /// `get_oldest_sequence_after`: the held sequence nearest after `sequence` (wrapping), or
    /// the newest when none is.
    fn oldest_after(&self, sequence: u16) -> u16 {
        self.buffer
            .iter()
            .filter(|e| e.sequence != sequence)
            .min_by_key(|e| e.sequence.wrapping_sub(sequence))
            .map_or(self.latest, |e| e.sequence)
    }

    /// What the mavlink module's `update()` sends now: new EVENTs, then CURRENT_EVENT_SEQUENCE
    /// when it is due (or forced with the reset flag before the first event).
    pub fn update(&mut self, now_us: u64, out: &mut impl FnMut(Outgoing)) {
        if self.first && self.latest != self.sent {
            self.first = false;
            self.send_current(now_us, true, out);
        }
        while self.sent != self.latest {
            self.sent = self.sent.wrapping_add(1);
            if let Some(e) = self.get(self.sent) {
                out(Outgoing::Event(e.message()));
            }
        }
        if self
            .last_current_us
            .is_none_or(|t| now_us.saturating_sub(t) > CURRENT_SEQUENCE_INTERVAL_US)
        {
            self.send_current(now_us, false, out);
        }
    }

    fn send_current(&mut self, now_us: u64, reset: bool, out: &mut impl FnMut(Outgoing)) {
        self.last_current_us = Some(now_us);
        let flags = if reset || self.buffer.is_empty() {
            MavEventCurrentSequenceFlags::MAV_EVENT_CURRENT_SEQUENCE_FLAGS_RESET
        } else {
            MavEventCurrentSequenceFlags::empty()
        };
        out(Outgoing::CurrentSequence(
            mav::CURRENT_EVENT_SEQUENCE_DATA {
                sequence: self.latest,
                flags,
            },
        ));
    }

    /// REQUEST_EVENT from `to` for `first..=last` (wrapping): each held event again, each
    /// missing one as RESPONSE_EVENT_ERROR naming the oldest still held; a range longer than
    /// the buffer is answered with one error for its older part (`handle_request_event`).
    pub fn request(&self, first: u16, last: u16, to: (u8, u8), out: &mut impl FnMut(Outgoing)) {
        let end = last.wrapping_add(1);
        let mut seq = first;
        let unavailable = |seq: u16| {
            Outgoing::Error(mav::RESPONSE_EVENT_ERROR_DATA {
                sequence: seq,
                sequence_oldest_available: self.oldest_after(seq),
                target_system: to.0,
                target_component: to.1,
                reason: MavEventErrorReason::MAV_EVENT_ERROR_REASON_UNAVAILABLE,
            })
        };
        let capacity = BUFFER_CAPACITY as u16;
        if end.wrapping_sub(seq) > capacity {
            out(unavailable(seq));
            seq = end.wrapping_sub(capacity);
        }
        while seq != end {
            match self.get(seq) {
                Some(e) => out(Outgoing::Event(e.message())),
                None => out(unavailable(seq)),
            }
            seq = seq.wrapping_add(1);
        }
    }
}

/// A frame the events protocol sends.
#[derive(Debug, Clone)]
pub enum Outgoing {
    /// EVENT (410).
    Event(mav::EVENT_DATA),
    /// CURRENT_EVENT_SEQUENCE (411).
    CurrentSequence(mav::CURRENT_EVENT_SEQUENCE_DATA),
    /// RESPONSE_EVENT_ERROR (413).
    Error(mav::RESPONSE_EVENT_ERROR_DATA),
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collect(f: impl FnOnce(&mut dyn FnMut(Outgoing))) -> Vec<Outgoing> {
        let mut v = Vec::new();
        f(&mut |o| v.push(o));
        v
    }

    #[test]
    fn ids_are_px4s_as_recorded() {
        // box-x4: "Armed by external command", "Takeoff detected", "Landing detected",
        // "Disarmed by landing", "Executing Mission", "Mission finished, landed".
        assert_eq!(id("commander_armed_by"), 0x0190_caf3);
        assert_eq!(id("commander_takeoff_detected"), 0x0141_4569);
        assert_eq!(id("commander_landing_detected"), 0x0196_38ac);
        assert_eq!(id("commander_disarmed_by"), 0x01f4_6777);
        assert_eq!(id("mission_execute"), 0x01ee_01b1);
        assert_eq!(id("mission_finished"), 0x0177_1204);
    }

    #[test]
    fn sequence_reset_then_events_then_periodic() {
        let mut log = EventLog::default();
        let out = collect(|o| log.update(0, &mut |x| o(x)));
        match &out[..] {
            [Outgoing::CurrentSequence(c)] => {
                assert_eq!(c.sequence, INITIAL_SEQUENCE.wrapping_sub(1));
                assert!(c.flags.contains(
                    MavEventCurrentSequenceFlags::MAV_EVENT_CURRENT_SEQUENCE_FLAGS_RESET
                ));
            }
            other => panic!("{other:?}"),
        }
        log.report(1_000_000, "commander_armed_by", level::both(6, 6), &[4]);
        let out = collect(|o| log.update(1_000_000, &mut |x| o(x)));
        assert_eq!(out.len(), 2, "{out:?}");
        let Outgoing::CurrentSequence(c) = &out[0] else {
            panic!("{out:?}")
        };
        assert_eq!(c.sequence, INITIAL_SEQUENCE);
        let Outgoing::Event(e) = &out[1] else {
            panic!("{out:?}")
        };
        assert_eq!(
            (e.sequence, e.id, e.log_levels),
            (INITIAL_SEQUENCE, 0x0190_caf3, 0x66)
        );
        assert_eq!((e.arguments[0], e.event_time_boot_ms), (4, 1000));
        // Nothing new, not due: silence; due after 3 s, without the reset flag now.
        assert!(collect(|o| log.update(3_900_000, &mut |x| o(x))).is_empty());
        let out = collect(|o| log.update(4_100_000, &mut |x| o(x)));
        let [Outgoing::CurrentSequence(c)] = &out[..] else {
            panic!("{out:?}")
        };
        assert!(c.flags.is_empty());
    }

    #[test]
    fn requests_resend_held_events_and_refuse_others() {
        let mut log = EventLog::default();
        for i in 0..25u64 {
            log.report(i * 1000, "commander_takeoff_detected", 0x66, &[]);
        }
        // Sequences 65526 .. 65526+24 (wrapped): the oldest 5 fell out of the buffer.
        let first = INITIAL_SEQUENCE;
        let oldest_held = INITIAL_SEQUENCE.wrapping_add(5);
        let out = collect(|o| log.request(first, first.wrapping_add(6), (255, 190), &mut |x| o(x)));
        assert_eq!(out.len(), 7);
        for (k, o) in out.iter().enumerate() {
            let seq = first.wrapping_add(k as u16);
            match o {
                Outgoing::Error(e) if k < 5 => {
                    assert_eq!(
                        (e.sequence, e.sequence_oldest_available),
                        (seq, oldest_held)
                    );
                    assert_eq!((e.target_system, e.target_component), (255, 190));
                }
                Outgoing::Event(e) if k >= 5 => assert_eq!(e.sequence, seq),
                other => panic!("{k}: {other:?}"),
            }
        }
        // A wrapped range of 65535 sequences: one error, then the 20 the buffer can hold.
        let latest = log.latest_sequence();
        let out =
            collect(|o| log.request(latest.wrapping_add(2), latest, (255, 190), &mut |x| o(x)));
        assert_eq!(out.len(), 1 + BUFFER_CAPACITY);
        assert!(matches!(out[0], Outgoing::Error(_)));
        assert!(out[1..].iter().all(|o| matches!(o, Outgoing::Event(_))));
        // A sequence never reported.
        let out = collect(|o| {
            log.request(
                latest.wrapping_add(1),
                latest.wrapping_add(1),
                (1, 1),
                &mut |x| o(x),
            )
        });
        assert!(
            matches!(&out[..], [Outgoing::Error(e)] if e.sequence_oldest_available == oldest_held)
        );
    }
}
