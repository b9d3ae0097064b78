//! Who a UDP link listens to: the [`PeerRule`] that picks the one peer whose frames count, and
//! the bounded record ([`ForeignTraffic`]) of every other source that sent something.
//!
//! The verdict is a security boundary: anyone who can reach a UDP port can send frames that
//! carry the vehicle's system id, so a `udpin` link that followed the most recent sender would
//! let them steer a wait (a forged MISSION_ITEM_REACHED, a forged disarmed HEARTBEAT). Under a
//! latching rule the link takes one source for its life, as PX4 latches its first client, and
//! what anyone else sends is counted here, never handed to the caller.

use std::fmt;
use std::net::SocketAddr;

use std::ops::ControlFlow;

use nexus_core::frame::{Decoder, Header, RawFrame};
use nexus_core::mav;
use nexus_core::msg::{Frame, Msg};

/// How a UDP link chooses the one source it takes datagrams from and replies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive] // more variants may come; match with a `_` arm
pub enum PeerRule {
    /// No latch: every datagram is delivered and a `udpin` link replies to whoever sent last.
    /// The bare transport's default, for byte-level tools; a vehicle link never uses it (the
    /// pump, `nexus watch` and `nexus bridge` choose one of the latching rules).
    #[default]
    MostRecent,
    /// Only this address: the vehicle we launched, whose port we know (14580 + N). It is the
    /// peer from the start, so we may speak first.
    Address(SocketAddr),
    /// The first source whose datagram holds an autopilot's HEARTBEAT (`autopilot` not
    /// `MAV_AUTOPILOT_INVALID`, type not GCS), of system `sysid` when given; latched for the
    /// life of the link.
    FirstAutopilot {
        /// The vehicle's system id; `None`: any autopilot.
        sysid: Option<u8>,
    },
    /// The first source whose datagram holds any HEARTBEAT (a ground station's too): a bridge
    /// side that may face QGroundControl rather than the vehicle. Latched for the life of the
    /// link.
    FirstHeartbeat,
}

impl PeerRule {
    /// Whether this rule latches one source (everything but [`PeerRule::MostRecent`]).
    pub fn latches(&self) -> bool {
        !matches!(self, PeerRule::MostRecent)
    }

    /// Whether a datagram from `from` makes it the peer (before anyone has been latched).
    /// Public so that other drivers of a UDP socket (nexus-tokio's) latch by the same rule.
    pub fn takes(&self, from: SocketAddr, datagram: &[u8]) -> bool {
        match *self {
            PeerRule::MostRecent => true,
            PeerRule::Address(a) => from == a,
            PeerRule::FirstAutopilot { sysid } => any_heartbeat(datagram, |h, hb| {
                is_autopilot(hb) && sysid.is_none_or(|s| s == h.sysid)
            }),
            PeerRule::FirstHeartbeat => any_heartbeat(datagram, |_, _| true),
        }
    }
}

impl fmt::Display for PeerRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PeerRule::MostRecent => f.write_str("the most recent sender"),
            PeerRule::Address(a) => write!(f, "the vehicle at {a}"),
            PeerRule::FirstAutopilot { sysid: Some(s) } => {
                write!(f, "the first source of system {s}'s autopilot heartbeat")
            }
            PeerRule::FirstAutopilot { sysid: None } => {
                f.write_str("the first source of an autopilot heartbeat")
            }
            PeerRule::FirstHeartbeat => f.write_str("the first source of a heartbeat"),
        }
    }
}

/// Whether a HEARTBEAT is an autopilot's (autopilot not `MAV_AUTOPILOT_INVALID`, type not
/// GCS): what [`PeerRule::FirstAutopilot`] latches and what `nexus watch` waits for.
pub fn is_autopilot(hb: &mav::HEARTBEAT_DATA) -> bool {
    hb.autopilot != mav::MavAutopilot::MAV_AUTOPILOT_INVALID
        && hb.mavtype != mav::MavType::MAV_TYPE_GCS
}

/// Feed `input` through `decoder` and hand each checked frame to `f` until it breaks; what it
/// broke with. A frame cut at the end of `input` stays in `decoder` for the next call.
pub fn scan_frames<B>(
    decoder: &mut Decoder,
    mut input: &[u8],
    mut f: impl FnMut(&RawFrame<'_>) -> ControlFlow<B>,
) -> Option<B> {
    while !input.is_empty() {
        let (used, raw) = decoder.feed(input);
        input = &input[used..];
        match raw {
            Some(raw) => {
                if let ControlFlow::Break(b) = f(&raw) {
                    return Some(b);
                }
            }
            None if used == 0 => break,
            None => {}
        }
    }
    None
}

/// The first HEARTBEAT in `input` (through `decoder`) that `accept` likes, with its header.
pub fn find_heartbeat(
    decoder: &mut Decoder,
    input: &[u8],
    accept: impl Fn(&Header, &mav::HEARTBEAT_DATA) -> bool,
) -> Option<(Header, mav::HEARTBEAT_DATA)> {
    scan_frames(decoder, input, |raw| match Frame::decode(raw) {
        Ok(Some(Frame {
            header,
            msg: Msg::Heartbeat(hb),
        })) if accept(&header, &hb) => ControlFlow::Break((header, hb)),
        _ => ControlFlow::Continue(()),
    })
}

/// Whether a datagram holds a HEARTBEAT `accept` likes. A UDP datagram holds whole frames, so
/// a fresh decoder per datagram is exact (and a datagram can never splice into another's
/// frame).
fn any_heartbeat(datagram: &[u8], accept: impl Fn(&Header, &mav::HEARTBEAT_DATA) -> bool) -> bool {
    find_heartbeat(&mut Decoder::new(), datagram, accept).is_some()
}

/// Sources of foreign traffic recorded one by one; later ones are added to
/// [`ForeignTraffic::others`]. Bounds the memory a flood from many ports can take.
pub const FOREIGN_SOURCES: usize = 8;

/// A set of MAVLink system ids (0–255), 32 bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct SystemIds([u64; 4]);

impl SystemIds {
    /// Add `id`.
    pub fn insert(&mut self, id: u8) {
        self.0[usize::from(id / 64)] |= 1 << (id % 64);
    }

    /// Whether `id` is in the set.
    pub fn contains(&self, id: u8) -> bool {
        self.0[usize::from(id / 64)] & (1 << (id % 64)) != 0
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.0 == [0; 4]
    }

    /// The ids, ascending.
    pub fn iter(&self) -> impl Iterator<Item = u8> + '_ {
        (0..=255u8).filter(|&id| self.contains(id))
    }

    fn union(&mut self, other: &SystemIds) {
        for (a, b) in self.0.iter_mut().zip(other.0) {
            *a |= b;
        }
    }
}

impl fmt::Display for SystemIds {
    /// `system 1`, `systems 1, 7`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ids: Vec<String> = self.iter().map(|i| i.to_string()).collect();
        match ids.len() {
            0 => f.write_str("no system"),
            1 => write!(f, "system {}", ids[0]),
            _ => write!(f, "systems {}", ids.join(", ")),
        }
    }
}

/// What arrived from one source (or from all the sources past the first
/// [`FOREIGN_SOURCES`]) and was not delivered.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive] // more fields may come
pub struct ForeignCounts {
    /// Datagrams.
    pub datagrams: u64,
    /// Checked MAVLink frames in them.
    pub frames: u64,
    /// Bytes.
    pub bytes: u64,
    /// The system ids those frames claimed.
    pub systems: SystemIds,
}

impl ForeignCounts {
    fn add(&mut self, other: &ForeignCounts) {
        self.datagrams += other.datagrams;
        self.frames += other.frames;
        self.bytes += other.bytes;
        self.systems.union(&other.systems);
    }

    /// What one datagram holds.
    fn of(datagram: &[u8]) -> ForeignCounts {
        let mut c = ForeignCounts {
            datagrams: 1,
            bytes: datagram.len() as u64,
            ..ForeignCounts::default()
        };
        scan_frames::<()>(&mut Decoder::new(), datagram, |raw| {
            c.frames += 1;
            c.systems.insert(raw.header.sysid);
            ControlFlow::Continue(())
        });
        c
    }

    /// "4 frames claiming system 1", or "3 datagrams holding no MAVLink frame".
    pub fn describe(&self) -> String {
        if self.frames == 0 {
            let s = if self.datagrams == 1 { "" } else { "s" };
            format!("{} datagram{s} holding no MAVLink frame", self.datagrams)
        } else {
            let s = if self.frames == 1 { "" } else { "s" };
            format!("{} frame{s} claiming {}", self.frames, self.systems)
        }
    }
}

/// One source that is not the link's peer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive] // more fields may come
pub struct ForeignSource {
    /// Its address.
    pub addr: SocketAddr,
    /// What it sent.
    pub counts: ForeignCounts,
}

impl fmt::Display for ForeignSource {
    /// "ignored 4 frames from 127.0.0.1:53211 claiming system 1".
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let c = &self.counts;
        if c.frames == 0 {
            let s = if c.datagrams == 1 { "" } else { "s" };
            write!(
                f,
                "ignored {} datagram{s} from {} holding no MAVLink frame",
                c.datagrams, self.addr
            )
        } else {
            let s = if c.frames == 1 { "" } else { "s" };
            write!(
                f,
                "ignored {} frame{s} from {} claiming {}",
                c.frames, self.addr, c.systems
            )
        }
    }
}

/// Everything a latching UDP link received from sources other than its peer: never decoded
/// into the client, never made the peer, only counted here.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive] // more fields may come
pub struct ForeignTraffic {
    /// The first [`FOREIGN_SOURCES`] sources, in the order they first sent.
    pub sources: Vec<ForeignSource>,
    /// Sources after those, added together.
    pub others: ForeignCounts,
    /// Datagrams the peer sent before it was latched (before its first autopilot heartbeat):
    /// not applied, and not counted as foreign since it turned out to be the vehicle.
    pub peer_before_latch: u64,
}

impl ForeignTraffic {
    /// Foreign datagrams in all (the first sources' and the others').
    pub fn datagrams(&self) -> u64 {
        self.others.datagrams + self.sources.iter().map(|s| s.counts.datagrams).sum::<u64>()
    }

    /// Foreign frames in all.
    pub fn frames(&self) -> u64 {
        self.others.frames + self.sources.iter().map(|s| s.counts.frames).sum::<u64>()
    }

    /// Whether nothing foreign arrived.
    pub fn is_empty(&self) -> bool {
        self.sources.is_empty() && self.others.datagrams == 0
    }

    /// One line per source, and one for the others: "ignored 4 frames from 127.0.0.1:53211
    /// claiming system 1".
    pub fn lines(&self) -> Vec<String> {
        let mut v: Vec<String> = self.sources.iter().map(ToString::to_string).collect();
        if self.others.datagrams > 0 {
            v.push(format!(
                "ignored {} from further sources (only the first {FOREIGN_SOURCES} are listed)",
                self.others.describe()
            ));
        }
        v
    }

    /// Count `datagram` from `from`, a source that is not the peer.
    pub fn record(&mut self, from: SocketAddr, datagram: &[u8]) {
        let c = ForeignCounts::of(datagram);
        if let Some(s) = self.sources.iter_mut().find(|s| s.addr == from) {
            s.counts.add(&c);
        } else if self.sources.len() < FOREIGN_SOURCES {
            self.sources.push(ForeignSource {
                addr: from,
                counts: c,
            });
        } else {
            self.others.add(&c);
        }
    }

    /// `peer` was latched: what it sent before is not foreign.
    pub fn latched(&mut self, peer: SocketAddr) {
        if let Some(i) = self.sources.iter().position(|s| s.addr == peer) {
            let s = self.sources.remove(i);
            self.peer_before_latch += s.counts.datagrams;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nexus_core::frame::Encoder;
    use nexus_core::offboard::wire;

    fn heartbeat(sysid: u8, mavtype: mav::MavType, autopilot: mav::MavAutopilot) -> Vec<u8> {
        let hb = wire::heartbeat(
            mavtype,
            autopilot,
            mav::MavModeFlag::empty(),
            0,
            mav::MavState::MAV_STATE_STANDBY,
        );
        let mut buf = [0u8; 300];
        let n = Encoder::new(sysid, 1).encode(&hb, &mut buf).unwrap();
        buf[..n].to_vec()
    }

    fn addr(port: u16) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], port))
    }

    #[test]
    fn rules_take_only_what_they_name() {
        let px4 = heartbeat(
            3,
            mav::MavType::MAV_TYPE_QUADROTOR,
            mav::MavAutopilot::MAV_AUTOPILOT_PX4,
        );
        let gcs = heartbeat(
            255,
            mav::MavType::MAV_TYPE_GCS,
            mav::MavAutopilot::MAV_AUTOPILOT_INVALID,
        );
        let ap3 = PeerRule::FirstAutopilot { sysid: Some(3) };
        assert!(ap3.takes(addr(1), &px4));
        assert!(!ap3.takes(addr(1), &gcs));
        assert!(!PeerRule::FirstAutopilot { sysid: Some(1) }.takes(addr(1), &px4));
        assert!(PeerRule::FirstAutopilot { sysid: None }.takes(addr(1), &px4));
        assert!(!ap3.takes(addr(1), b"not mavlink"));
        // Half a heartbeat is no heartbeat.
        assert!(!ap3.takes(addr(1), &px4[..px4.len() - 1]));
        assert!(PeerRule::FirstHeartbeat.takes(addr(1), &gcs));
        assert!(PeerRule::Address(addr(7)).takes(addr(7), b"x"));
        assert!(!PeerRule::Address(addr(7)).takes(addr(8), &px4));
    }

    #[test]
    fn foreign_sources_are_bounded_and_name_their_systems() {
        let mut t = ForeignTraffic::default();
        let forged = heartbeat(
            1,
            mav::MavType::MAV_TYPE_QUADROTOR,
            mav::MavAutopilot::MAV_AUTOPILOT_PX4,
        );
        let mut two = forged.clone();
        two.extend(heartbeat(
            7,
            mav::MavType::MAV_TYPE_GCS,
            mav::MavAutopilot::MAV_AUTOPILOT_INVALID,
        ));
        for _ in 0..4 {
            t.record(addr(53211), &forged);
        }
        t.record(addr(53212), &two);
        t.record(addr(53213), b"junk");
        assert_eq!(t.sources.len(), 3);
        assert_eq!(
            t.sources[0].to_string(),
            "ignored 4 frames from 127.0.0.1:53211 claiming system 1"
        );
        assert_eq!(
            t.sources[1].to_string(),
            "ignored 2 frames from 127.0.0.1:53212 claiming systems 1, 7"
        );
        assert_eq!(
            t.sources[2].to_string(),
            "ignored 1 datagram from 127.0.0.1:53213 holding no MAVLink frame"
        );
        for port in 0..1000u16 {
            t.record(addr(20000 + port), &forged);
        }
        assert_eq!(t.sources.len(), FOREIGN_SOURCES);
        assert_eq!(t.others.datagrams, 1000 - (FOREIGN_SOURCES as u64 - 3));
        assert_eq!(t.datagrams(), 6 + 1000);
        assert_eq!(t.frames(), 4 + 2 + 1000);
        assert_eq!(t.lines().len(), FOREIGN_SOURCES + 1);
        // The latched peer's early datagrams are not foreign.
        t.latched(addr(53211));
        assert_eq!(t.peer_before_latch, 4);
        assert_eq!(t.sources.len(), FOREIGN_SOURCES - 1);
    }

    #[test]
    fn a_heartbeat_split_across_reads_is_found_in_the_second_and_others_are_passed_over() {
        let gcs = heartbeat(
            255,
            mav::MavType::MAV_TYPE_GCS,
            mav::MavAutopilot::MAV_AUTOPILOT_INVALID,
        );
        let px4 = heartbeat(
            7,
            mav::MavType::MAV_TYPE_QUADROTOR,
            mav::MavAutopilot::MAV_AUTOPILOT_PX4,
        );
        // A stream: the GCS's heartbeat, then the autopilot's cut in two reads.
        let bytes = [gcs.as_slice(), px4.as_slice()].concat();
        let cut = gcs.len() + px4.len() / 2;
        let mut decoder = Decoder::new();
        let accept = |h: &Header, hb: &mav::HEARTBEAT_DATA| is_autopilot(hb) && h.sysid == 7;
        assert!(find_heartbeat(&mut decoder, &bytes[..cut], accept).is_none());
        let (header, hb) = find_heartbeat(&mut decoder, &bytes[cut..], accept).expect("found");
        assert_eq!((header.sysid, header.compid), (7, 1));
        assert_eq!(hb.autopilot, mav::MavAutopilot::MAV_AUTOPILOT_PX4);
        // The frame scan stops where it was told to and counts every frame otherwise.
        let mut seen = 0;
        let stopped = scan_frames(&mut Decoder::new(), &bytes, |raw| {
            seen += 1;
            if raw.header.sysid == 7 {
                ControlFlow::Break(seen)
            } else {
                ControlFlow::Continue(())
            }
        });
        assert_eq!(stopped, Some(2));
    }
}
