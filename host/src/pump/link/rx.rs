//! Receiving: datagrams (or stream reads) → the framer → the core client, with the link's
//! counters, the tlog, the subscribers and the notes on foreign traffic.

use nexus_core::frame::RawFrame;
use nexus_core::link::{Reads, Tap};
use nexus_core::mav;
use nexus_core::msg::Frame;
use nexus_core::Instant;

use super::LinkState;
use crate::launcher::DeathCause;
use crate::pump::status::LinkEvent;

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

    pub(super) fn on_bytes(&mut self, now: Instant, input: &[u8]) {
        let epoch = self.link.peer_epoch();
        if epoch != self.epoch {
            self.epoch = epoch;
            self.client.restart_framer();
            self.counters.peer_changes += 1;
            let peer = self.link.peer();
            self.shared.events().push(LinkEvent::PeerChanged(peer));
        }
        self.counters.rx_reads += 1;
        self.counters.rx_bytes += input.len() as u64;
        let mut tap = PumpTap {
            tlog: self.tlog.as_ref(),
            subs: &mut self.subs,
            signing: self.signing.as_mut(),
            params: &mut self.params,
            target_sysid: self.client.telemetry().ids().target_sysid,
        };
        let framing = self.link.framing();
        if self.client.handle_bytes(now, input, framing, &mut tap) > 0 {
            self.last_rx_wall = Some(std::time::Instant::now());
        }
        self.transmit(now);
    }

    /// Which frames the client's framer hands on: every frame, verified, on a signed link;
    /// every frame while a tlog records the link (it holds every frame the vehicle sent) or a
    /// subscriber may want any message; else only the client's (the cheap path).
    pub(super) fn reads(&self) -> Reads {
        if self.signing.is_some() {
            Reads::Verified
        } else if self.tlog.is_some() || !self.subs.is_empty() {
            Reads::All
        } else {
            Reads::Decoded
        }
    }

    /// Hand on every checked frame from now on, not only those the core reads (a subscriber
    /// may want any message).
    pub fn read_every_frame(&mut self) {
        let reads = match self.reads() {
            Reads::Decoded => Reads::All,
            other => other,
        };
        self.client.set_reads(reads);
    }
}

/// What the pump does with each frame on its way into the client: the tlog records every
/// checked frame, the signature check admits it or not, subscribers get the vehicle's
/// admitted frames, and parameter reads take their answers.
struct PumpTap<'a> {
    tlog: Option<&'a crate::tlog::Tlog>,
    subs: &'a mut Subscribers,
    signing: Option<&'a mut crate::signing::LinkSigning>,
    params: &'a mut crate::pump::param_reads::ParamReads<super::ParamSlot>,
    target_sysid: u8,
}

impl Tap for PumpTap<'_> {
    fn admit(&mut self, now: Instant, raw: &RawFrame<'_>) -> bool {
        if let Some(t) = self.tlog {
            t.record(crate::tlog::Direction::Received, raw.bytes);
        }
        let admitted = match &mut self.signing {
            Some(s) => s.check(now, raw).accepted(),
            None => true,
        };
        if admitted && !self.subs.is_empty() {
            deliver(self.subs, self.target_sysid, raw);
        }
        admitted
    }

    fn decoded(&mut self, now: Instant, frame: &Frame, _accepted: bool) {
        self.params.on_frame(now, frame, self.target_sysid);
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
