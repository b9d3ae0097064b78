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

#[cfg(test)]
mod tests;
