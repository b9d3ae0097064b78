//! MAVLink framing: the resynchronising [`Decoder`], the [`Encoder`], and the checksum tables.
//!
//! The engine decodes only the messages it uses (see [`crate::msg`]): the streamed ones read
//! straight from their payload bytes, the rare ones with their own deserialiser from the
//! `mavlink` crate, instead of the whole-dialect parser: on thumbv7em that is a few KB of flash
//! against ~60 KB.

mod crc;
mod crc_extra;
mod decoder;
mod encoder;
#[cfg(feature = "signing")]
pub mod signing;

pub use crc::{accumulate as crc_accumulate, frame_crc, CRC_INIT};
pub use crc_extra::crc_extra;
pub use decoder::{
    Decoder, DecoderStats, Header, RawFrame, ReadError, Version, MAGIC_V1, MAGIC_V2, MAX_FRAME_LEN,
    SEQ_SOURCES,
};
pub use encoder::{encode_v2, BufferTooSmall, Encoder};

/// The message id in the header of `frame`, a frame's bytes from its magic byte (MAVLink 2:
/// bytes 7–9, little-endian; MAVLink 1: byte 5); `None` when `frame` is too short to hold one
/// or does not start with a magic byte. The frame is not checked: this reads what a sender
/// or a bridge already framed.
///
/// ```
/// use nexus_core::frame::msgid;
/// assert_eq!(msgid(&[0xFD, 0, 0, 0, 0, 1, 1, 0x4D, 0, 0]), Some(77));
/// assert_eq!(msgid(&[0xFE, 0, 0, 1, 1, 30]), Some(30));
/// assert_eq!(msgid(b"noise"), None);
/// ```
pub fn msgid(frame: &[u8]) -> Option<u32> {
    match *frame {
        [MAGIC_V2, _, _, _, _, _, _, a, b, c, ..] => Some(u32::from_le_bytes([a, b, c, 0])),
        [MAGIC_V1, _, _, _, _, id, ..] => Some(u32::from(id)),
        _ => None,
    }
}

#[cfg(test)]
mod tests;
