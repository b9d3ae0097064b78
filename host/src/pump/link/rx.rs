//! Receiving: datagrams (or stream reads) → the framer → the core client, with the link's
//! counters, the tlog, the subscribers and the notes on foreign traffic.

use nexus_core::frame::Decoder;
use nexus_core::mav;
use nexus_core::msg::Frame;
use nexus_core::Instant;

use super::LinkState;
use crate::launcher::DeathCause;
use crate::pump::status::LinkEvent;
use crate::transport::Framing;

/// What the pump has told about the link's foreign traffic (see [`LinkEvent::Ignored`]).
#[derive(Debug, Default)]
pub(super) struct ForeignSeen {
    /// Foreign datagrams (and the peer's before its latch) at the last look, and whether
    /// the peer was known then.
    looked: (u64, bool),
    /// Sources announced; at most the first sources plus the one that became the peer.
    announced: Vec<std::net::SocketAddr>,
    others_announced: bool,
}

impl LinkState {
    /// Read up to `budget` datagrams (or stream reads); true if more may be waiting.
    pub fn on_readable(&mut self, now: Instant, buf: &mut [u8], budget: usize) -> bool {
        if self.broken {
            return false;
        }
        let mut got = false;
        let mut more = true;
        for _ in 0..budget {
            match self.link.recv(buf) {
                // 0: the link set foreign datagrams aside and may have more.
                Ok(Some(0)) => {}
                Ok(Some(n)) => {
                    got = true;
                    self.on_bytes(now, &buf[..n]);
                }
                Ok(None) => {
                    more = false;
                    break;
                }
                Err(e) => {
                    self.broken = true;
                    more = false;
                    self.die(now, DeathCause::link_lost(&e));
                    break;
                }
            }
        }
        let _ = self.link.flush();
        if self.note_foreign() || got {
            self.after_batch(now);
        }
        more
    }

    /// Foreign traffic since the last look: announce each new source once the vehicle's
    /// address is known (before, a source may yet turn out to be the vehicle). True if there
    /// is news to publish.
    pub(super) fn note_foreign(&mut self) -> bool {
        let Some(f) = self.link.foreign() else {
            return false;
        };
        let look = (
            f.datagrams() + f.peer_before_latch,
            self.link.peer().is_some(),
        );
        if look == self.foreign.looked {
            return false;
        }
        self.foreign.looked = look;
        if look.1 {
            let seen = &mut self.foreign;
            let mut events = self.shared.events();
            for s in &f.sources {
                if !seen.announced.contains(&s.addr) {
                    seen.announced.push(s.addr);
                    events.push(LinkEvent::Ignored(Some(*s)));
                }
            }
            if f.others.datagrams > 0 && !seen.others_announced {
                seen.others_announced = true;
                events.push(LinkEvent::Ignored(None));
            }
        }
        true
    }

    pub(super) fn on_bytes(&mut self, now: Instant, mut input: &[u8]) {
        let epoch = self.link.peer_epoch();
        if epoch != self.epoch {
            // A new peer starts a new byte stream: a half frame from the old one is garbage.
            self.epoch = epoch;
            self.decoder = link_decoder(
                self.tlog.is_some() || !self.subs.is_empty(),
                self.signing.is_some(),
            );
            self.counters.peer_changes += 1;
            let peer = self.link.peer();
            self.shared.events().push(LinkEvent::PeerChanged(peer));
        }
        self.counters.rx_reads += 1;
        self.counters.rx_bytes += input.len() as u64;
        let mut accepted = false;
        let skipped_before = self.decoder.stats().skipped;
        // A UDP read is one datagram of whole frames: its end is a frame boundary the skipping
        // decoder may trust (`Decoder::feed_datagram`); a stream read ends anywhere.
        let datagram = self.link.framing() == Framing::Datagram;
        loop {
            let (used, raw) = if datagram {
                self.decoder.feed_datagram(input)
            } else {
                self.decoder.feed(input)
            };
            input = &input[used..];
            let Some(raw) = raw else { break };
            self.counters.frames += 1;
            if !self.subs.is_empty() {
                let sysid = self.client.telemetry().ids().target_sysid;
                deliver(&mut self.subs, sysid, &raw);
            }
            if let Some(t) = &self.tlog {
                t.record(crate::tlog::Direction::Received, raw.bytes);
            }
            let header = raw.header;
            if let Some(s) = &mut self.signing {
                if !s.check(now, &raw).accepted() {
                    continue;
                }
            }
            let decoded = Frame::decode(&raw);
            if self.signing.is_some() {
                // Sequence gaps only from frames that passed the signature check.
                self.decoder.count_sequence(&header);
            }
            match decoded {
                Ok(Some(frame)) => {
                    self.on_param_answer(now, &frame);
                    if self.client.handle(now, &frame) {
                        self.counters.accepted += 1;
                        accepted = true;
                    }
                }
                Ok(None) => {}
                Err(_) => self.counters.decode_errors += 1,
            }
        }
        let stats = self.decoder.stats();
        // Frames of messages the client does not read are passed over, not returned.
        self.counters.frames += stats.skipped.wrapping_sub(skipped_before) as u64;
        self.counters.crc_errors = stats.crc_errors as u64;
        self.counters.dropped_bytes = stats.dropped_bytes as u64;
        self.counters.signing = self.signing.as_ref().map(|s| s.stats());
        if accepted {
            self.watchdog.on_rx(now, self.client.telemetry().sim_ms());
            self.last_rx_wall = Some(std::time::Instant::now());
        }
        self.transmit(now);
    }

    /// Hand on every checked frame from now on, not only those the core reads (a subscriber
    /// may want any message).
    pub fn read_every_frame(&mut self) {
        self.decoder.set_reads(None);
    }
}

/// The link's framer: one that skips frames the core does not read (the cheap path), unless a
/// tlog records the link — a tlog holds every frame the vehicle sent, so then every frame is
/// checked and handed on — or the link verifies signatures: then every frame is checked and
/// verified, and only those that pass count in the sequence-gap loss figures (a forged frame
/// with the vehicle's ids must neither open a gap nor close one).
pub(super) fn link_decoder(recording: bool, signing: bool) -> Decoder {
    if signing {
        let mut d = Decoder::new();
        d.set_sequences_deferred(true);
        d
    } else if recording {
        Decoder::new()
    } else {
        Decoder::skipping(nexus_core::msg::is_decoded)
    }
}

/// Hand a frame from the vehicle to the subscribers of its id, decoded by mavlink's full
/// parse (any common-dialect message, not only the core's subset); a subscriber that went
/// away is dropped.
fn deliver(subs: &mut Subscribers, target_sysid: u8, raw: &nexus_core::frame::RawFrame<'_>) {
    use mavlink::Message as _;
    let h = &raw.header;
    if h.sysid != target_sysid || !subs.iter().any(|(id, _)| *id == h.msgid) {
        return;
    }
    let version = match h.version {
        nexus_core::frame::Version::V1 => mavlink::MavlinkVersion::V1,
        nexus_core::frame::Version::V2 => mavlink::MavlinkVersion::V2,
    };
    let Ok(msg) = mav::MavMessage::parse(version, h.msgid, raw.payload) else {
        return;
    };
    subs.retain(|(id, tx)| *id != h.msgid || tx.send(msg.clone()).is_ok());
}

/// Subscribers to message ids: (id, where to send it).
pub(crate) type Subscribers = Vec<(u32, std::sync::mpsc::Sender<mav::MavMessage>)>;
