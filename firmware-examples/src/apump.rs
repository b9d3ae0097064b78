//! The async driver: [`crate::pump`]'s loop as one task on embassy-executor, over any
//! `embedded-io-async` byte stream.
//!
//! The task reads whatever bytes the UART has (its receive interrupt wakes the task), frames
//! them with the core's [`Decoder::feed`], hands each decoded frame to the [`Node`], writes what
//! the node wants sent, and otherwise sleeps until the node's next deadline
//! ([`clock::sleep_until`], woken by SysTick). With nothing to do the executor sleeps the core
//! (WFE), as the blocking loop does with WFI.

use embassy_futures::select::{select, Either};
use embedded_io_async::{Read, Write};
use nexus_core::frame::{Decoder, MAX_FRAME_LEN};
use nexus_core::{Duration, Frame, Instant};

use crate::clock;
use crate::pump::{LinkStats, Node, Outcome};

/// Bytes taken from the stream per read (the UART queue holds more; the rest waits).
const READ_CHUNK: usize = 256;

/// The async loop: a byte stream, a decoder, a transmit buffer and the counters.
pub struct AsyncPump<IO> {
    io: IO,
    decoder: Decoder,
    tx: [u8; MAX_FRAME_LEN],
    stats: LinkStats,
}

impl<IO: Read + Write> AsyncPump<IO> {
    /// A pump over `io`.
    pub fn new(io: IO) -> Self {
        AsyncPump {
            io,
            decoder: Decoder::new(),
            tx: [0; MAX_FRAME_LEN],
            stats: LinkStats::default(),
        }
    }

    /// The byte stream (for its own counters).
    pub fn io(&self) -> &IO {
        &self.io
    }

    /// Link counters so far.
    pub fn stats(&self) -> LinkStats {
        LinkStats {
            decoder: self.decoder.stats(),
            ..self.stats
        }
    }

    /// Drive `node` until it finishes or `wall_cap` of driver time has passed.
    pub async fn run<N: Node>(&mut self, node: &mut N, wall_cap: Duration) -> Outcome {
        let give_up = clock::now() + wall_cap;
        let mut chunk = [0u8; READ_CHUNK];
        loop {
            let now = clock::now();
            self.transmit(node, now).await;
            if let Some(outcome) = node.poll_outcome(now) {
                let _ = self.io.flush().await;
                return outcome;
            }
            if now >= give_up {
                let _ = self.io.flush().await;
                return Outcome::WallCap;
            }
            let wake = node.next_deadline().map_or(give_up, |d| d.min(give_up));
            match select(self.io.read(&mut chunk), clock::sleep_until(wake)).await {
                Either::First(Ok(n)) => self.receive(node, &chunk[..n]),
                Either::First(Err(_)) => {
                    self.stats.read_errors = self.stats.read_errors.saturating_add(1)
                }
                Either::Second(()) => {}
            }
        }
    }

    fn receive<N: Node>(&mut self, node: &mut N, mut input: &[u8]) {
        let now = clock::now();
        while !input.is_empty() {
            let (used, raw) = self.decoder.feed(input);
            input = &input[used..];
            let Some(raw) = raw else {
                if used == 0 {
                    break;
                }
                continue;
            };
            match Frame::decode(&raw) {
                Ok(Some(frame)) => {
                    self.stats.handled = self.stats.handled.wrapping_add(1);
                    node.handle(now, &frame);
                }
                Ok(None) => self.stats.skipped = self.stats.skipped.wrapping_add(1),
                Err(_) => self.stats.malformed = self.stats.malformed.saturating_add(1),
            }
        }
    }

    async fn transmit<N: Node>(&mut self, node: &mut N, now: Instant) {
        while let Some(n) = node.poll_transmit(now, &mut self.tx) {
            let Some(frame) = self.tx.get(..n) else {
                continue;
            };
            if self.io.write_all(frame).await.is_err() {
                return;
            }
            self.stats.sent = self.stats.sent.wrapping_add(1);
        }
    }
}
