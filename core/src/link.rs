//! The link: what a transport receives, as the [`Client`](crate::Client) takes it, and the
//! link's supervision.
//!
//! A driver hands the client what its transport read, as it read it, and nothing else:
//!
//! * [`Client::handle_datagram`](crate::Client::handle_datagram) for one UDP datagram: whole
//!   frames, and a frame cut at its end is never joined with the next datagram (a datagram's
//!   end is a frame's end; a truncated frame is garbage);
//! * [`Client::handle_stream_bytes`](crate::Client::handle_stream_bytes) for a chunk of a byte
//!   stream (TCP, serial): frames span chunks, cut anywhere.
//!
//! The client frames the bytes ([`crate::frame::Decoder`]: checking every frame, or passing
//! over the messages it does not read, [`Reads`]), lets the driver's [`Tap`] see and refuse
//! each checked frame (a recorder, a signature check), counts sequence gaps (after the tap's
//! check when the tap verifies, [`Reads::Verified`]), decodes its subset and takes each frame
//! from the vehicle only (the peer rule is [`crate::Telemetry`]'s: the target system, the
//! component of its first autopilot HEARTBEAT, latched). Bad bytes are counted
//! ([`RxStats`]), never a panic.
//!
//! **Supervision.** With a stall limit ([`crate::ClientConfig::stall`]) the client watches the
//! link in driver time, as its own timers (in
//! [`Client::next_deadline`](crate::Client::next_deadline), serviced by
//! [`Client::poll_transmit`](crate::Client::poll_transmit)):
//!
//! * nothing taken from the vehicle for the stall limit: [`Event::Silent`](crate::Event::Silent);
//! * the autopilot clock (SYSTEM_TIME and the other `time_boot_ms` stamps) standing still for
//!   the stall limit while frames still flow (a wedged simulation, whose waits counting its
//!   clock would never end): [`Event::ClockStalled`](crate::Event::ClockStalled). A link that
//!   went quiet is silence, reported when its own window ends: the last frames of a dying link
//!   can carry no timestamp, so its clock seems to stop a little before it goes silent;
//! * frames (or the clock) again after either: [`Event::Resumed`](crate::Event::Resumed).
//!
//! Each is reported once. Nothing is watched before the vehicle's first frame. What a driver
//! does about it (end every wait with `died`, fail a flight, show it) is the driver's choice:
//! the vehicle's owner may know a better cause (a process that exited).

use crate::frame::{Decoder, RawFrame};
use crate::msg::Frame;
use crate::time::{Duration, Instant};

/// How one read of a transport is framed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive] // more transports may come; match with a `_` arm
pub enum Framing {
    /// One read is one datagram (UDP): whole frames, never joined with the next datagram.
    Datagram,
    /// One read is a slice of a byte stream (TCP, serial): a frame may span reads.
    Stream,
}

/// Which checked frames the client's framer hands on ([`crate::Client::set_reads`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Reads {
    /// Every frame is checked and goes to the [`Tap`] (the default; a recorder needs this).
    #[default]
    All,
    /// Only the messages the client decodes; the others are passed over with the least work
    /// ([`crate::frame::Decoder::skipping`]): the fast path of a link nobody records.
    Decoded,
    /// Every frame, and sequence gaps counted only for those the [`Tap`] admits: a link that
    /// verifies signatures (a forged frame with the vehicle's ids must neither open a gap nor
    /// close one).
    Verified,
}

/// What a driver does with each frame on its way in, besides handing it over: record it,
/// check its signature, read a message the client does not. `()` does nothing.
pub trait Tap {
    /// A checked frame arrived at `now`: whether the client may take it (a signature check
    /// says no; a refused frame is counted, never applied). Every frame the framer hands on
    /// comes here first.
    fn admit(&mut self, now: Instant, raw: &RawFrame<'_>) -> bool {
        let _ = (now, raw);
        true
    }

    /// `frame`, admitted and decoded, was handed to the client; `accepted`: it was the
    /// vehicle's and for us.
    fn decoded(&mut self, now: Instant, frame: &Frame, accepted: bool) {
        let _ = (now, frame, accepted);
    }
}

impl Tap for () {}

/// What the client's byte path has seen ([`crate::Client::rx_stats`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive] // more counters may come
pub struct RxStats {
    /// The framer's counters: frames, checksum errors, unknown ids, dropped bytes, frames
    /// passed over, sequence gaps.
    pub framer: crate::frame::DecoderStats,
    /// Checked frames the [`Tap`] refused.
    pub refused: u32,
    /// Checked frames of messages outside the decoded subset.
    pub unread: u32,
    /// Checked frames whose payload did not decode (an out-of-range enum, say).
    pub malformed: u32,
    /// Frames decoded and handed to the client (the vehicle's or not).
    pub decoded: u32,
}

/// One link's framer and the counts of what became of its frames: the state of [`feed`].
#[derive(Debug, Clone)]
pub struct Rx {
    decoder: Decoder,
    reads: Reads,
    refused: u32,
    unread: u32,
    malformed: u32,
    decoded: u32,
}

impl Default for Rx {
    fn default() -> Self {
        Self::new()
    }
}

impl Rx {
    /// A framer that checks every frame ([`Reads::All`]).
    pub const fn new() -> Self {
        Rx {
            decoder: Decoder::new(),
            reads: Reads::All,
            refused: 0,
            unread: 0,
            malformed: 0,
            decoded: 0,
        }
    }

    /// Which checked frames are handed on; a partial frame held is kept.
    pub fn set_reads(&mut self, reads: Reads) {
        self.reads = reads;
        self.decoder.set_reads(match reads {
            Reads::Decoded => Some(crate::msg::is_decoded),
            Reads::All | Reads::Verified => None,
        });
        self.decoder
            .set_sequences_deferred(reads == Reads::Verified);
    }

    /// The transport's peer changed: a new byte stream begins (a half frame of the old one is
    /// garbage, the new sender's sequence numbers start anywhere). Counters stay.
    pub fn restart(&mut self) {
        self.decoder.restart();
    }

    /// A frame whose payload did not decode, met outside [`feed`] (counted with the rest).
    pub fn count_malformed(&mut self) {
        self.malformed = self.malformed.wrapping_add(1);
    }

    /// What the byte path has seen.
    pub fn stats(&self) -> RxStats {
        RxStats {
            framer: self.decoder.stats(),
            refused: self.refused,
            unread: self.unread,
            malformed: self.malformed,
            decoded: self.decoded,
        }
    }
}

/// What takes the frames of a byte path ([`feed`]): the [`crate::Client`], or a lighter
/// machine (a bring-up check over bare [`crate::Telemetry`]).
pub trait Sink {
    /// The path's framer and counters.
    fn rx(&mut self) -> &mut Rx;

    /// Take one decoded frame received at `now`; whether it was the vehicle's and for us.
    fn take(&mut self, now: Instant, frame: &Frame) -> bool;
}

/// The byte path: frame `input` (one datagram, or a chunk of a byte stream, by `framing`),
/// let `tap` admit each checked frame, count sequence gaps (after the tap, with
/// [`Reads::Verified`]), decode the client's subset and hand each frame to `sink`. Returns
/// how many frames the sink took from the vehicle. Bad bytes are counted, never a panic.
// Inlined: a driver hands over one kind of read, and the other kind's path then drops out.
#[inline]
pub fn feed<S: Sink + ?Sized, T: Tap + ?Sized>(
    sink: &mut S,
    now: Instant,
    mut input: &[u8],
    framing: Framing,
    tap: &mut T,
) -> usize {
    let datagram = framing == Framing::Datagram;
    let mut taken = 0;
    loop {
        let rx = sink.rx();
        let (used, raw) = if datagram {
            rx.decoder.feed_datagram(input)
        } else {
            rx.decoder.feed(input)
        };
        input = input.get(used..).unwrap_or_default();
        // Nothing comes back only once the input is used up.
        let Some(raw) = raw else {
            return taken;
        };
        if !tap.admit(now, &raw) {
            rx.refused = rx.refused.wrapping_add(1);
            continue;
        }
        let header = raw.header;
        let decoded = Frame::decode(&raw);
        let rx = sink.rx();
        if rx.reads == Reads::Verified {
            rx.decoder.count_sequence(&header);
        }
        match decoded {
            Ok(Some(frame)) => {
                rx.decoded = rx.decoded.wrapping_add(1);
                let accepted = sink.take(now, &frame);
                taken += usize::from(accepted);
                tap.decoded(now, &frame, accepted);
            }
            Ok(None) => rx.unread = rx.unread.wrapping_add(1),
            Err(_) => rx.malformed = rx.malformed.wrapping_add(1),
        }
    }
}

/// A client back later than it planned by this much (driver time) was not running, unless a
/// quarter of the stall limit is shorter ([`crate::Client::after_pause`]).
pub const PAUSE_LIMIT: Duration = Duration::from_millis(1000);

/// A health report queued for [`crate::Client::poll_event`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Note {
    Silent(Duration),
    ClockStalled(Duration),
    Resumed,
}

/// The link's supervision: silence and a standing autopilot clock, in driver time.
#[derive(Debug, Clone)]
pub(crate) struct Watch {
    /// The stall limit, µs; 0: not watched.
    stall_us: u64,
    last_rx: Option<Instant>,
    /// The autopilot clock last read (ms) and when it last moved.
    clock: Option<(u64, Instant)>,
    /// Silence reported (until a frame comes).
    silent: bool,
    /// A standing clock reported (until it moves).
    stalled: bool,
    /// The report not yet polled (a newer one replaces it: every driver polls its events after
    /// each batch, so two never meet).
    news: Option<Note>,
}

impl Watch {
    pub(crate) fn new(stall: Option<Duration>) -> Self {
        Watch {
            stall_us: stall.map_or(0, Duration::total_micros),
            last_rx: None,
            clock: None,
            silent: false,
            stalled: false,
            news: None,
        }
    }

    pub(crate) fn pop(&mut self) -> Option<Note> {
        self.news.take()
    }

    /// A frame from the vehicle arrived at `now`, its clock reading `sim_ms`.
    pub(crate) fn on_rx(&mut self, now: Instant, sim_ms: Option<u64>) {
        if self.stall_us == 0 {
            return;
        }
        let mut resumed = core::mem::take(&mut self.silent);
        self.last_rx = Some(now);
        if let Some(ms) = sim_ms {
            if self.clock.is_none_or(|(last, _)| last != ms) {
                resumed |= core::mem::take(&mut self.stalled);
                self.clock = Some((ms, now));
            }
        }
        if resumed {
            self.news = Some(Note::Resumed);
        }
    }

    /// Judge the windows at `now`: silence wins over a standing clock. (Nothing is heard
    /// without a stall limit: `on_rx` keeps no time then.)
    pub(crate) fn poll(&mut self, now: Instant) {
        let Some(rx) = self.last_rx.filter(|_| !self.silent) else {
            return;
        };
        let stall = self.stall_us;
        let silent = now.saturating_since(rx);
        let note = if silent.total_micros() >= stall {
            self.silent = true;
            Note::Silent(silent)
        } else {
            let Some((_, moved)) = self.clock.filter(|_| !self.stalled) else {
                return;
            };
            let stalled = now.saturating_since(moved);
            if stalled.total_micros() < stall || silent.total_micros() >= stall / 4 {
                return;
            }
            self.stalled = true;
            Note::ClockStalled(stalled)
        };
        self.news = Some(note);
    }

    /// When [`Watch::poll`] could next find something.
    pub(crate) fn deadline(&self) -> Option<Instant> {
        let rx = self.last_rx.filter(|_| !self.silent)?.total_micros();
        let mut end = rx.saturating_add(self.stall_us);
        // The clock's window counts only if frames still flow when it ends (see `poll`).
        if let Some((_, moved)) = self.clock.filter(|_| !self.stalled) {
            let clock = moved.total_micros().saturating_add(self.stall_us);
            if clock < rx.saturating_add(self.stall_us / 4) {
                end = end.min(clock);
            }
        }
        Some(Instant::from_micros(end))
    }

    /// Silence until `now` was expected (a lockstep vehicle between steps, a driver that was
    /// not running): both windows start again from `now`.
    pub(crate) fn rearm(&mut self, now: Instant) {
        if self.last_rx.is_some() {
            self.last_rx = Some(now);
        }
        if let Some((_, moved)) = &mut self.clock {
            *moved = now;
        }
    }

    /// The driver came back `late` after it planned to: if that is at least the pause limit
    /// (the smaller of [`PAUSE_LIMIT`] and a quarter of the stall limit), it was not
    /// listening, and the windows restart from `now`. Returns whether they did.
    pub(crate) fn after_pause(&mut self, now: Instant, late: Duration) -> bool {
        if self.stall_us == 0 {
            return false;
        }
        let limit = PAUSE_LIMIT.total_micros().min(self.stall_us / 4);
        if late.total_micros() < limit {
            return false;
        }
        self.rearm(now);
        true
    }

    /// Whether silence was reported and no frame came since.
    pub(crate) fn is_silent(&self) -> bool {
        self.silent
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Instant {
        Instant::from_millis(v)
    }

    fn watch(stall_ms: u64) -> Watch {
        Watch::new(Some(Duration::from_millis(stall_ms)))
    }

    #[test]
    fn silence_after_traffic_is_reported_once_and_a_frame_resumes() {
        let mut w = watch(1000);
        w.poll(ms(10_000));
        assert_eq!(w.pop(), None, "nothing heard yet: not watched");
        assert_eq!(w.deadline(), None);
        w.on_rx(ms(0), Some(100));
        assert_eq!(w.deadline(), Some(ms(1000)));
        w.poll(ms(999));
        assert_eq!(w.pop(), None);
        w.poll(ms(1500));
        assert_eq!(w.pop(), Some(Note::Silent(Duration::from_millis(1500))));
        assert_eq!(w.deadline(), None, "reported: no deadline that stays due");
        w.poll(ms(5000));
        assert_eq!(w.pop(), None, "once");
        w.on_rx(ms(6000), Some(200));
        assert_eq!(w.pop(), Some(Note::Resumed));
        assert_eq!(w.deadline(), Some(ms(7000)));
    }

    #[test]
    fn a_link_that_goes_quiet_is_silence_even_if_its_clock_stopped_first() {
        // The last time-stamped frame came at 0 ms, untimed frames (a HEARTBEAT) until 150 ms,
        // then nothing: at 1000 ms the clock has not moved for its whole window, but the link
        // has been quiet for most of it, so the verdict waits for the silence window.
        let mut w = watch(1000);
        w.on_rx(ms(0), Some(5000));
        w.on_rx(ms(150), Some(5000));
        w.poll(ms(1000));
        assert_eq!(w.pop(), None);
        assert_eq!(
            w.deadline(),
            Some(ms(1150)),
            "no wake-up at the clock's window"
        );
        w.poll(ms(1150));
        assert!(matches!(w.pop(), Some(Note::Silent(_))));
    }

    #[test]
    fn a_frozen_clock_while_frames_flow_is_a_stall_and_a_moving_clock_resumes() {
        let mut w = watch(1000);
        for t in 0..30 {
            w.on_rx(ms(t * 50), Some(5000));
        }
        w.poll(ms(1450));
        assert_eq!(
            w.pop(),
            Some(Note::ClockStalled(Duration::from_millis(1450)))
        );
        w.on_rx(ms(1500), Some(5000));
        assert_eq!(w.pop(), None, "still standing");
        w.on_rx(ms(1550), Some(5050));
        assert_eq!(w.pop(), Some(Note::Resumed));
        // A moving clock is fine.
        let mut w = watch(1000);
        for t in 0..30 {
            w.on_rx(ms(t * 50), Some(5000 + t * 50));
        }
        w.poll(ms(1450));
        assert_eq!(w.pop(), None);
    }

    #[test]
    fn a_driver_that_was_not_running_restarts_the_windows() {
        let mut w = watch(5000);
        w.on_rx(ms(0), Some(100));
        // Stopped for 8 s: back 8 s after a sleep planned to end at 0.25 s.
        assert!(w.after_pause(ms(8_250), Duration::from_millis(8_000)));
        w.poll(ms(8_250));
        assert_eq!(w.pop(), None, "no false silence");
        assert_eq!(
            w.deadline(),
            Some(ms(13_250)),
            "a full stall limit to speak again"
        );
        w.poll(ms(13_300));
        assert!(
            matches!(w.pop(), Some(Note::Silent(_))),
            "a silent vehicle is still found"
        );
        // Ordinary lateness (scheduling jitter) changes nothing.
        let mut w = watch(5000);
        w.on_rx(ms(0), Some(100));
        assert!(!w.after_pause(ms(300), Duration::from_millis(50)));
        assert_eq!(w.deadline(), Some(ms(5_000)));
        // The limit shrinks with a short stall limit: a quarter of it.
        let mut w = watch(1000);
        w.on_rx(ms(0), Some(100));
        assert!(!w.after_pause(ms(500), Duration::from_millis(200)));
        assert!(w.after_pause(ms(900), Duration::from_millis(250)));
        assert_eq!(w.deadline(), Some(ms(1_900)));
        // Nothing to restart without a stall limit.
        assert!(!Watch::new(None).after_pause(ms(1), Duration::from_micros(u64::MAX)));
    }

    #[test]
    fn no_stall_limit_watches_nothing() {
        let mut w = Watch::new(None);
        w.on_rx(ms(0), Some(1));
        w.poll(ms(1_000_000));
        assert_eq!(w.pop(), None);
        assert_eq!(w.deadline(), None);
        assert_eq!(Watch::new(Some(Duration::ZERO)).deadline(), None);
    }
}
