//! The async driver: [`crate::pump`]'s loop as one task on embassy-executor, over any
//! `embedded-io-async` byte stream ([`Pump::run_async`]).
//!
//! The task reads whatever bytes the UART has (its receive interrupt wakes the task), hands
//! them to the [`Node`] as a chunk of a byte stream (the core frames them: the same path as
//! the blocking loop's), writes what the node wants sent, and otherwise sleeps until the
//! node's next deadline ([`clock::sleep_until`], woken by SysTick). With nothing to do the
//! executor sleeps the core (WFE), as the blocking loop does with WFI.

use embassy_futures::select::{select, Either};
use embedded_io_async::{Read, Write};
use nexus_core::{Duration, Instant};

use crate::clock;
use crate::pump::{next_frame, Node, Outcome, Pump, READ_CHUNK};

impl<IO: Read + Write> Pump<IO> {
    /// Drive `node` until it finishes or `wall_cap` of driver time has passed, awaiting the
    /// stream and the node's deadlines.
    pub async fn run_async<N: Node>(&mut self, node: &mut N, wall_cap: Duration) -> Outcome {
        let give_up = clock::now() + wall_cap;
        let mut chunk = [0u8; READ_CHUNK];
        loop {
            let now = clock::now();
            self.transmit_async(node, now).await;
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
                Either::First(Ok(n)) => {
                    let bytes = chunk.get(..n).unwrap_or_default();
                    node.handle_stream_bytes(clock::now(), bytes, &mut self.signing)
                }
                Either::First(Err(_)) => self.read_errors = self.read_errors.saturating_add(1),
                Either::Second(()) => {}
            }
        }
    }

    async fn transmit_async<N: Node>(&mut self, node: &mut N, now: Instant) {
        while let Some(n) = next_frame(&mut self.tx, node, now).map(<[u8]>::len) {
            let Some(m) = self.signing.seal(now, &mut self.tx, n) else {
                continue;
            };
            if self.io.write_all(&self.tx[..m]).await.is_err() {
                return;
            }
            self.sent = self.sent.wrapping_add(1);
        }
    }
}
