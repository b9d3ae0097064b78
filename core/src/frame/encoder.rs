//! Messages to bytes: MAVLink 2 frames written into the caller's buffer.

use super::crc::frame_crc;
use super::decoder::{MAGIC_V2, MAX_FRAME_LEN};
use mavlink::{MavlinkVersion, MessageData};

/// The caller's buffer cannot hold the frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct BufferTooSmall {
    /// Bytes the frame may need.
    pub needed: usize,
}

impl core::fmt::Display for BufferTooSmall {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "buffer too small for the frame: {} bytes needed",
            self.needed
        )
    }
}

/// So `?` converts it into `Box<dyn Error>`.
impl core::error::Error for BufferTooSmall {}

/// Writes MAVLink 2 frames from one sender (system and component id), numbering them with its
/// own wrapping sequence counter.
#[derive(Debug, Clone)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Encoder {
    sysid: u8,
    compid: u8,
    seq: u8,
}

impl Encoder {
    /// An encoder that signs frames as `sysid`/`compid`, starting at sequence 0.
    pub const fn new(sysid: u8, compid: u8) -> Self {
        Encoder {
            sysid,
            compid,
            seq: 0,
        }
    }

    /// Sending system id.
    pub fn sysid(&self) -> u8 {
        self.sysid
    }

    /// Sending component id.
    pub fn compid(&self) -> u8 {
        self.compid
    }

    /// The sequence number the next frame will carry.
    pub fn next_seq(&self) -> u8 {
        self.seq
    }

    /// Set the sequence number of the next frame.
    pub fn set_next_seq(&mut self, seq: u8) {
        self.seq = seq;
    }

    /// Encode `msg` as the next frame into `out`; returns the frame's length in bytes.
    ///
    /// `out` must hold the untruncated frame (12 bytes plus the message's encoded length;
    /// [`MAX_FRAME_LEN`] always suffices). The sequence number advances only on success.
    pub fn encode<M: MessageData>(
        &mut self,
        msg: &M,
        out: &mut [u8],
    ) -> Result<usize, BufferTooSmall> {
        let n = encode_v2(self.seq, self.sysid, self.compid, msg, out)?;
        self.seq = self.seq.wrapping_add(1);
        Ok(n)
    }

    /// Encode a payload laid out by hand (MAVLink 2 wire order, extensions included) as the
    /// next frame of message `id` with its checksum's extra byte `crc_extra`; trailing zero bytes
    /// are truncated. Returns the frame's length; the sequence number advances only on success.
    pub fn encode_payload(
        &mut self,
        id: u32,
        crc_extra: u8,
        payload: &[u8],
        out: &mut [u8],
    ) -> Result<usize, BufferTooSmall> {
        // A MAVLink 2 payload keeps at least one byte, even a zero.
        let body_len = payload.len().max(1);
        let needed = 12 + body_len;
        if needed > MAX_FRAME_LEN || out.len() < needed {
            return Err(BufferTooSmall { needed });
        }
        out[10] = 0;
        out[10..10 + payload.len()].copy_from_slice(payload);
        let len = payload.iter().rposition(|&b| b != 0).map_or(1, |i| i + 1);
        let n = finish_v2(self.seq, self.sysid, self.compid, id, crc_extra, len, out);
        self.seq = self.seq.wrapping_add(1);
        Ok(n)
    }
}

/// Encode one MAVLink 2 frame with explicit header fields; returns its length.
///
/// The payload's trailing zero bytes are truncated as MAVLink 2 requires.
pub fn encode_v2<M: MessageData>(
    seq: u8,
    sysid: u8,
    compid: u8,
    msg: &M,
    out: &mut [u8],
) -> Result<usize, BufferTooSmall> {
    let needed = 10 + M::ENCODED_LEN + 2;
    debug_assert!(needed <= MAX_FRAME_LEN);
    if out.len() < needed {
        return Err(BufferTooSmall { needed });
    }
    let payload_len = msg.ser(MavlinkVersion::V2, &mut out[10..10 + M::ENCODED_LEN]);
    Ok(finish_v2(
        seq,
        sysid,
        compid,
        M::ID,
        M::EXTRA_CRC,
        payload_len,
        out,
    ))
}

/// Header and checksum around the payload already in `out[10..10 + payload_len]` (which
/// `out` holds, with 2 bytes more); returns the frame's length. One copy for every message
/// type, not one per type.
#[inline(never)]
fn finish_v2(
    seq: u8,
    sysid: u8,
    compid: u8,
    id: u32,
    crc_extra: u8,
    payload_len: usize,
    out: &mut [u8],
) -> usize {
    let id = id.to_le_bytes();
    out[0] = MAGIC_V2;
    out[1] = payload_len as u8;
    out[2] = 0; // incompat flags
    out[3] = 0; // compat flags
    out[4] = seq;
    out[5] = sysid;
    out[6] = compid;
    out[7] = id[0];
    out[8] = id[1];
    out[9] = id[2];
    let crc = frame_crc(&out[1..10 + payload_len], crc_extra);
    out[10 + payload_len..12 + payload_len].copy_from_slice(&crc.to_le_bytes());
    12 + payload_len
}
