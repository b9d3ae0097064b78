//! Sending: every frame the client has due leaves at once, counted and recorded; the
//! PARAM_SETs among them are noted as owing a PARAM_VALUE (the link's parameter reads).

use nexus_core::Instant;

use super::LinkState;
use crate::transport::SendOutcome;

impl LinkState {
    /// Send everything the client has due now, each frame as it is encoded.
    pub fn transmit(&mut self, now: Instant) {
        while let Some(n) = self.client.poll_transmit(now, &mut self.tx) {
            self.params.on_sent(now, &self.tx[..n]);
            let n = self.sign(now, n);
            self.send(n);
        }
    }

    /// Encode `msg` as the link's next frame and send it (a message the core does not send
    /// itself); whether it was encoded.
    pub(crate) fn send_message<M: mavlink::MessageData>(&mut self, msg: &M) -> bool {
        match self.client.encode(msg, &mut self.tx) {
            Ok(n) => {
                // No clock here: the signer uses the latest it has seen (its timestamps only rise).
                let n = self.sign(Instant::ZERO, n);
                self.send(n);
                true
            }
            Err(_) => false,
        }
    }

    /// Sign `self.tx[..n]` on a signed link; its new length. Every frame the link sends goes
    /// through here.
    pub(super) fn sign(&mut self, now: Instant, n: usize) -> usize {
        match &mut self.signing {
            Some(s) => s.sign(now, &mut self.tx, n),
            None => n,
        }
    }

    pub(super) fn send(&mut self, n: usize) {
        let msgid = nexus_core::frame::msgid(&self.tx[..n]).unwrap_or(u32::MAX);
        self.counters.tx_requests.count(msgid);
        match self.link.send(&self.tx[..n]) {
            Ok(SendOutcome::Sent) | Ok(SendOutcome::Queued) => {
                self.counters.tx_frames += 1;
                if let Some(t) = &self.tlog {
                    t.record(crate::tlog::Direction::Sent, &self.tx[..n]);
                }
            }
            Ok(SendOutcome::NoPeer) => self.counters.tx_no_peer += 1,
            Ok(SendOutcome::Dropped) => self.counters.tx_dropped += 1,
            // UDP: an ICMP error from an earlier datagram (the vehicle's port closed). The
            // watchdog and the probe tell whether the vehicle is gone.
            Err(_) => self.counters.tx_dropped += 1,
        }
    }
}
