//! The client's byte path ([`crate::link`]): what a transport read, framed, checked and taken.

use super::Client;
use crate::link::{self, Framing, Reads, Rx, RxStats, Sink, Tap};
use crate::msg::Frame;
use crate::time::{Duration, Instant};

impl<const WAITS: usize, const TEXTS: usize, const ITEMS: usize, const STEPS: usize> Sink
    for Client<WAITS, TEXTS, ITEMS, STEPS>
{
    fn rx(&mut self) -> &mut Rx {
        &mut self.rx
    }

    // Out of line: inlined into the byte path's loop it cost the mission firmware 116 B of
    // flash (measured with firmware-examples/size-report.sh mission).
    #[inline(never)]
    fn take(&mut self, now: Instant, frame: &Frame) -> bool {
        self.handle(now, frame)
    }
}

impl<const WAITS: usize, const TEXTS: usize, const ITEMS: usize, const STEPS: usize>
    Client<WAITS, TEXTS, ITEMS, STEPS>
{
    /// Take in one UDP datagram: its frames, in order; a frame cut at its end is dropped
    /// (counted), never completed by the next datagram. Returns how many frames the client
    /// took from the vehicle.
    pub fn handle_datagram(&mut self, now: Instant, datagram: &[u8]) -> usize {
        link::feed(self, now, datagram, Framing::Datagram, &mut ())
    }

    /// Take in a chunk of a byte stream (TCP, serial): its frames, a frame cut at its end
    /// completed by the next chunk. Returns how many frames the client took from the vehicle.
    pub fn handle_stream_bytes(&mut self, now: Instant, chunk: &[u8]) -> usize {
        link::feed(self, now, chunk, Framing::Stream, &mut ())
    }

    /// [`Client::handle_datagram`] or [`Client::handle_stream_bytes`], by `framing`, with the
    /// driver's `tap` seeing (and admitting) every checked frame and every decoded one.
    #[inline]
    pub fn handle_bytes<T: Tap + ?Sized>(
        &mut self,
        now: Instant,
        input: &[u8],
        framing: Framing,
        tap: &mut T,
    ) -> usize {
        link::feed(self, now, input, framing, tap)
    }

    /// Which checked frames the framer hands on (default [`Reads::All`]); a partial frame
    /// held is kept.
    pub fn set_reads(&mut self, reads: Reads) {
        self.rx.set_reads(reads);
    }

    /// The transport's peer changed: a new byte stream begins (a half frame of the old one is
    /// garbage, the new sender's sequence numbers start anywhere). Counters stay.
    pub fn restart_framer(&mut self) {
        self.rx.restart();
    }

    /// What the byte path has seen.
    pub fn rx_stats(&self) -> RxStats {
        self.rx.stats()
    }

    /// Silence until `now` was expected (a lockstep vehicle about to be stepped): the
    /// supervision's windows start again from `now`.
    pub fn rearm_supervision(&mut self, now: Instant) {
        self.watch.rearm(now);
    }

    /// The driver came back `late` after the time it planned to (stopped by a debugger, not
    /// scheduled): if that is at least the pause limit ([`crate::link::PAUSE_LIMIT`], or a
    /// quarter of the stall limit if shorter) it was not listening, and the supervision's
    /// windows start again from `now`, so only silence heard while running counts. Returns
    /// whether they did.
    pub fn after_pause(&mut self, now: Instant, late: Duration) -> bool {
        self.watch.after_pause(now, late)
    }

    /// Whether the link was reported silent ([`crate::Event::Silent`]) and nothing came since.
    pub fn is_silent(&self) -> bool {
        self.watch.is_silent()
    }
}
