//! Bytes on the wire: the outgoing frame queue and the raw decoding of the few inbound messages
//! whose enum fields a client may legitimately fill with values the `mavlink` crate rejects.
//!
//! `MessageData::deser` fails on an enum value it does not know. PX4 does not: an unknown
//! command still gets a COMMAND_ACK (UNSUPPORTED), and a mission item's CRC is computed over its
//! raw fields. COMMAND_LONG, COMMAND_INT, MISSION_ITEM and MISSION_ITEM_INT are therefore read
//! field by field here (little endian, MAVLink 2 zero-truncation filled back in).

use mavlink::MessageData;
use nexus_core::frame::{encode_v2, MAX_FRAME_LEN};
use std::collections::VecDeque;

/// A payload, zero-extended to the message's full length on read.
pub struct Payload<'a>(pub &'a [u8]);

impl Payload<'_> {
    fn byte(&self, i: usize) -> u8 {
        self.0.get(i).copied().unwrap_or(0)
    }
    /// u8 at `i`.
    pub fn u8(&self, i: usize) -> u8 {
        self.byte(i)
    }
    /// Little-endian u16 at `i`.
    pub fn u16(&self, i: usize) -> u16 {
        u16::from_le_bytes([self.byte(i), self.byte(i + 1)])
    }
    /// Little-endian u32 at `i`.
    pub fn u32(&self, i: usize) -> u32 {
        u32::from_le_bytes([
            self.byte(i),
            self.byte(i + 1),
            self.byte(i + 2),
            self.byte(i + 3),
        ])
    }
    /// Little-endian f32 at `i`.
    pub fn f32(&self, i: usize) -> f32 {
        f32::from_bits(self.u32(i))
    }
}

/// COMMAND_LONG (76) or COMMAND_INT (75), with the command id as a plain number.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CommandIn {
    /// MAV_CMD id.
    pub command: u16,
    /// param1..param4.
    pub p: [f32; 4],
    /// COMMAND_LONG: param5/6 as floats. COMMAND_INT: `x`/`y` as floats of the integers.
    pub p5: f32,
    /// See `p5`.
    pub p6: f32,
    /// COMMAND_INT only: the raw integer x (lat·1e7).
    pub x: i32,
    /// COMMAND_INT only: the raw integer y (lon·1e7).
    pub y: i32,
    /// param7 / z.
    pub p7: f32,
    /// Addressed system.
    pub target_system: u8,
    /// Addressed component.
    pub target_component: u8,
    /// COMMAND_INT frame (`None` for COMMAND_LONG).
    pub frame: Option<u8>,
}

impl CommandIn {
    /// Decode a COMMAND_LONG payload.
    pub fn long(p: &[u8]) -> CommandIn {
        let p = Payload(p);
        CommandIn {
            command: p.u16(28),
            p: [p.f32(0), p.f32(4), p.f32(8), p.f32(12)],
            p5: p.f32(16),
            p6: p.f32(20),
            x: 0,
            y: 0,
            p7: p.f32(24),
            target_system: p.u8(30),
            target_component: p.u8(31),
            frame: None,
        }
    }

    /// Decode a COMMAND_INT payload.
    pub fn int(p: &[u8]) -> CommandIn {
        let p = Payload(p);
        let x = p.u32(16) as i32;
        let y = p.u32(20) as i32;
        CommandIn {
            command: p.u16(28),
            p: [p.f32(0), p.f32(4), p.f32(8), p.f32(12)],
            p5: x as f32,
            p6: y as f32,
            x,
            y,
            p7: p.f32(24),
            target_system: p.u8(30),
            target_component: p.u8(31),
            frame: Some(p.u8(32)),
        }
    }
}

/// MISSION_ITEM (39) or MISSION_ITEM_INT (73): identical layouts, x/y float vs int32.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RawMissionItem {
    /// param1..param4.
    pub params: [f32; 4],
    /// x field bits (float degrees for MISSION_ITEM, int lat·1e7 for _INT).
    pub x_bits: u32,
    /// y field bits.
    pub y_bits: u32,
    /// z.
    pub z: f32,
    /// Sequence number.
    pub seq: u16,
    /// MAV_CMD.
    pub command: u16,
    /// Addressed system.
    pub target_system: u8,
    /// Addressed component.
    pub target_component: u8,
    /// MAV_FRAME.
    pub frame: u8,
    /// Current flag.
    pub current: u8,
    /// Autocontinue flag.
    pub autocontinue: u8,
    /// MAV_MISSION_TYPE.
    pub mission_type: u8,
    /// Whether it came as MISSION_ITEM_INT.
    pub is_int: bool,
}

impl RawMissionItem {
    /// Decode either message's payload.
    pub fn decode(p: &[u8], is_int: bool) -> RawMissionItem {
        let p = Payload(p);
        RawMissionItem {
            params: [p.f32(0), p.f32(4), p.f32(8), p.f32(12)],
            x_bits: p.u32(16),
            y_bits: p.u32(20),
            z: p.f32(24),
            seq: p.u16(28),
            command: p.u16(30),
            target_system: p.u8(32),
            target_component: p.u8(33),
            frame: p.u8(34),
            current: p.u8(35),
            autocontinue: p.u8(36),
            mission_type: p.u8(37),
            is_int,
        }
    }
}

/// Frames kept for a driver that does not poll; beyond this new frames are dropped, like a
/// full transmit buffer on PX4.
pub const MAX_PENDING_FRAMES: usize = 65_536;

/// Byte-level fault applied to what leaves the vehicle.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TxFault {
    /// Frames go out as encoded.
    #[default]
    None,
    /// Nothing goes out.
    Silent,
    /// Random bytes are interleaved between valid frames.
    Garbage,
}

/// Outgoing MAVLink 2 frames, queued until the driver takes them as datagrams.
///
/// Like PX4's UDP transport, several frames share one datagram (up to the caller's buffer).
#[derive(Debug)]
pub struct Outbox {
    sysid: u8,
    compid: u8,
    seq: u8,
    bytes: Vec<u8>,
    lens: VecDeque<usize>,
    read: usize,
    /// Frames queued since creation.
    pub frames_total: u64,
    /// Frames dropped (queue full, or a datagram buffer too small for one frame).
    pub frames_dropped: u64,
    fault: TxFault,
    rng: XorShift64Star,
    /// Signing, when the vehicle has it: every frame queued is signed once a key is set.
    pub signing: Option<crate::signing::SimSigning>,
}

/// xorshift64*: the vehicle's deterministic pseudo-random numbers (garbage bytes, home-altitude
/// steps), the same sequence for the same starting state.
#[derive(Debug, Clone)]
pub struct XorShift64Star {
    state: u64,
}

impl XorShift64Star {
    /// A generator starting from `state` (made odd: zero would stay zero).
    pub fn new(state: u64) -> Self {
        XorShift64Star { state: state | 1 }
    }

    /// The next number.
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.state;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.state = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

impl Outbox {
    /// An empty queue sending as `sysid`/`compid`; `random_start` starts the garbage generator.
    pub fn new(sysid: u8, compid: u8, random_start: u64) -> Self {
        Outbox {
            sysid,
            compid,
            seq: 0,
            bytes: Vec::with_capacity(4096),
            lens: VecDeque::with_capacity(64),
            read: 0,
            frames_total: 0,
            frames_dropped: 0,
            fault: TxFault::None,
            rng: XorShift64Star::new(random_start),
            signing: None,
        }
    }

    /// Select the byte-level fault.
    pub fn set_fault(&mut self, f: TxFault) {
        self.fault = f;
    }

    /// The byte-level fault in force.
    pub fn fault(&self) -> TxFault {
        self.fault
    }

    /// Queue `msg` as the next frame.
    pub fn push<M: MessageData>(&mut self, msg: &M) {
        if self.lens.len() >= MAX_PENDING_FRAMES {
            self.frames_dropped += 1;
            return;
        }
        let mut buf = [0u8; MAX_FRAME_LEN];
        // The buffer always fits one frame; a failure would be a bug in the encoder's bound.
        if let Ok(n) = encode_v2(self.seq, self.sysid, self.compid, msg, &mut buf) {
            let n = match &mut self.signing {
                Some(s) => s.sign(&mut buf, n),
                None => n,
            };
            self.seq = self.seq.wrapping_add(1);
            self.bytes.extend_from_slice(&buf[..n]);
            self.lens.push_back(n);
            self.frames_total += 1;
        }
    }

    /// Frames waiting.
    pub fn pending(&self) -> usize {
        self.lens.len()
    }

    /// Drop everything queued.
    pub fn clear(&mut self) {
        self.bytes.clear();
        self.lens.clear();
        self.read = 0;
    }

    /// The next datagram: as many whole frames as fit in `out` (at least one frame needs
    /// [`MAX_FRAME_LEN`] bytes). `None` when nothing is queued or the link is silenced.
    pub fn poll_transmit(&mut self, out: &mut [u8]) -> Option<usize> {
        if self.fault == TxFault::Silent {
            self.clear();
            return None;
        }
        let mut n = 0;
        while let Some(&len) = self.lens.front() {
            // About one frame in eight is preceded by a burst of 1..16 random bytes.
            let garbage = if self.fault == TxFault::Garbage && self.rng.next_u64() % 8 == 0 {
                1 + (self.rng.next_u64() % 16) as usize
            } else {
                0
            };
            if n + len + garbage > out.len() {
                if n == 0 && len > out.len() {
                    // This frame can never fit the caller's datagram: drop it, don't stall.
                    self.read += len;
                    self.lens.pop_front();
                    self.frames_dropped += 1;
                    continue;
                }
                break;
            }
            for _ in 0..garbage {
                // Bias toward start bytes so a decoder meets false frame starts.
                let r = self.rng.next_u64();
                out[n] = match r % 8 {
                    0 => 0xFD,
                    1 => 0xFE,
                    _ => (r >> 8) as u8,
                };
                n += 1;
            }
            out[n..n + len].copy_from_slice(&self.bytes[self.read..self.read + len]);
            n += len;
            self.read += len;
            self.lens.pop_front();
        }
        if self.lens.is_empty() {
            self.bytes.clear();
            self.read = 0;
        }
        (n > 0).then_some(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mavlink::dialects::common as mav;
    use nexus_core::frame::Decoder;

    #[test]
    fn batches_whole_frames_and_garbage_keeps_them_decodable() {
        for fault in [TxFault::None, TxFault::Garbage] {
            let mut o = Outbox::new(1, 1, 42);
            o.set_fault(fault);
            for i in 0..50u16 {
                o.push(&mav::MISSION_ITEM_REACHED_DATA { seq: i });
            }
            let mut dec = Decoder::new();
            let mut seen = Vec::new();
            let mut buf = [0u8; 1400];
            while let Some(n) = o.poll_transmit(&mut buf) {
                crate::testutil::for_each_frame(&mut dec, &buf[..n], |h, payload| {
                    assert_eq!(h.msgid, 46);
                    let m =
                        mav::MISSION_ITEM_REACHED_DATA::deser(mavlink::MavlinkVersion::V2, payload)
                            .unwrap();
                    seen.push(m.seq);
                });
            }
            // A false start swallowed the tail: the next bytes on the link complete it.
            crate::testutil::for_each_frame(&mut dec, &[0u8; 300], |_, payload| {
                let m = mav::MISSION_ITEM_REACHED_DATA::deser(mavlink::MavlinkVersion::V2, payload)
                    .unwrap();
                seen.push(m.seq);
            });
            assert_eq!(seen, (0..50).collect::<Vec<_>>(), "{fault:?}");
        }
    }

    #[test]
    fn silent_sends_nothing() {
        let mut o = Outbox::new(1, 1, 1);
        o.push(&mav::MISSION_ITEM_REACHED_DATA { seq: 1 });
        o.set_fault(TxFault::Silent);
        assert_eq!(o.poll_transmit(&mut [0u8; 1400]), None);
    }

    #[test]
    fn unknown_command_ids_survive_raw_decoding() {
        let mut p = [0u8; 33];
        p[28..30].copy_from_slice(&31999u16.to_le_bytes());
        p[30] = 1;
        let c = CommandIn::long(&p[..31]);
        assert_eq!(c.command, 31999);
        assert_eq!(c.target_system, 1);
        assert_eq!(c.target_component, 0);
    }
}
