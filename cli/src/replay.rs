//! The replay of a recording, as a driver of the core client (`nexus check`).
//!
//! A replay is a driver like any other, in the recording's time: each record is handed to the
//! client at its timestamp, and between two records time jumps from one client deadline to the
//! next (its timers run at their own times: retries, give-ups, the link's supervision), where a
//! live driver would sleep. Nothing is sent: what the client would send is dropped.
//!
//! A record is one frame ([`nexus_host::tlog::TlogReader`] checked it whole): it is handed
//! over as that frame, never searched for others inside it.

use nexus_core::frame::{Decoder, MAX_FRAME_LEN};
use nexus_core::{Client, Frame, Instant};
use nexus_host::tlog::TlogFrame;

/// The frame of one record: the record's own, from its first byte to its last, never one
/// found inside it (the tlog reader checked the frame's checksum; a message the core does not
/// decode is `None`).
pub fn frame_of(rec: &TlogFrame) -> Option<Frame> {
    let mut dec = Decoder::new();
    let (used, raw) = dec.feed(&rec.bytes);
    let raw = raw?;
    if used != rec.bytes.len() || raw.bytes.len() != rec.bytes.len() {
        return None;
    }
    Frame::decode(&raw).ok().flatten()
}

/// A replay's clock and its one transmit buffer.
#[derive(Debug, Clone)]
pub struct Replay {
    now: Instant,
    /// The first record's timestamp, µs since the Unix epoch: the replay's zero.
    t0: Option<u64>,
    tx: [u8; MAX_FRAME_LEN],
    wakes: u64,
}

impl Default for Replay {
    fn default() -> Self {
        Replay {
            now: Instant::ZERO,
            t0: None,
            tx: [0; MAX_FRAME_LEN],
            wakes: 0,
        }
    }
}

impl Replay {
    /// The recording's time now, from its first record.
    pub fn now(&self) -> Instant {
        self.now
    }

    /// Client deadlines the replay jumped to between records.
    pub fn wakes(&self) -> u64 {
        self.wakes
    }

    /// Time passes to `at` (later than now; an earlier `at` changes nothing): the client's
    /// timers due before then run, each at its own deadline.
    pub fn pass<const W: usize, const T: usize, const I: usize, const S: usize>(
        &mut self,
        client: &mut Client<W, T, I, S>,
        at: Instant,
    ) {
        self.drain(client);
        while let Some(d) = client.next_deadline().filter(|&d| d < at) {
            // The client never reports a deadline still due after a poll; were it to, the
            // replay stops jumping here rather than loop.
            if d <= self.now {
                break;
            }
            self.now = d;
            self.wakes += 1;
            self.drain(client);
        }
        self.now = self.now.max(at);
    }

    /// One record: time passes to its timestamp (one stamped earlier than a record already
    /// replayed, a clock stepped back, counts as at that time), then the client takes its frame
    /// ([`frame_of`]). `None` for a record of a message the client does not read; else whether
    /// the frame was the vehicle's.
    pub fn record<const W: usize, const T: usize, const I: usize, const S: usize>(
        &mut self,
        client: &mut Client<W, T, I, S>,
        rec: &TlogFrame,
    ) -> Option<bool> {
        self.at(client, rec.epoch_us);
        let frame = frame_of(rec)?;
        Some(self.take(client, &frame))
    }

    /// One decoded frame stamped `epoch_us` (a tlog record's, or a message made from PX4's
    /// log): time passes to its stamp as for [`Replay::record`], then the client takes it.
    /// Whether the frame was the vehicle's.
    pub fn frame<const W: usize, const T: usize, const I: usize, const S: usize>(
        &mut self,
        client: &mut Client<W, T, I, S>,
        epoch_us: u64,
        frame: &Frame,
    ) -> bool {
        self.at(client, epoch_us);
        self.take(client, frame)
    }

    fn at<const W: usize, const T: usize, const I: usize, const S: usize>(
        &mut self,
        client: &mut Client<W, T, I, S>,
        epoch_us: u64,
    ) {
        let t0 = *self.t0.get_or_insert(epoch_us);
        self.pass(client, Instant::from_micros(epoch_us.saturating_sub(t0)));
    }

    fn take<const W: usize, const T: usize, const I: usize, const S: usize>(
        &mut self,
        client: &mut Client<W, T, I, S>,
        frame: &Frame,
    ) -> bool {
        let taken = client.handle(self.now, frame);
        self.drain(client);
        taken
    }

    /// What the client would send now, dropped.
    fn drain<const W: usize, const T: usize, const I: usize, const S: usize>(
        &mut self,
        client: &mut Client<W, T, I, S>,
    ) {
        while client.poll_transmit(self.now, &mut self.tx).is_some() {}
    }
}
