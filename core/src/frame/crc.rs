//! MAVLink's CRC-16/MCRF4XX (X.25), table-driven.
//!
//! The bytewise, table-free form is a chain of ~8 dependent operations per byte and was most of
//! the decoder's cost on the host. On 64-bit hosts the checksum is sliced by 16 (sixteen
//! 256-entry tables, 8 KiB, sixteen bytes per step with independent loads), and the last
//! 1–16 bytes of a frame (the payload's tail and the `crc_extra` byte) are folded in one step
//! of the same kind, not byte by byte: a 28-byte ATTITUDE frame is three steps. On 32-bit
//! targets (the firmware, whose flash is budgeted and whose UART brings a byte every ~90 µs) it
//! stays table-free: a table would cost 512 B of flash for time the MCU does not lack.

/// The CRC's initial value.
pub const CRC_INIT: u16 = 0xFFFF;

/// The reflected polynomial of CRC-16/MCRF4XX (0x1021 reversed).
const POLY_REFLECTED: u16 = 0x8408;

/// Bytes per sliced step (and tables).
#[cfg(target_pointer_width = "64")]
const SLICE: usize = 16;

/// `TABLES[0][b]`: the CRC of byte `b` from zero; `TABLES[k][b]`: the same, followed by `k`
/// zero bytes (what slicing needs).
#[cfg_attr(not(target_pointer_width = "64"), allow(dead_code))]
const fn tables<const N: usize>() -> [[u16; 256]; N] {
    let mut t = [[0u16; 256]; N];
    let mut b = 0;
    while b < 256 {
        let mut crc = b as u16;
        let mut bit = 0;
        while bit < 8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ POLY_REFLECTED
            } else {
                crc >> 1
            };
            bit += 1;
        }
        t[0][b] = crc;
        b += 1;
    }
    let mut k = 1;
    while k < N {
        let mut b = 0;
        while b < 256 {
            let prev = t[k - 1][b];
            t[k][b] = (prev >> 8) ^ t[0][(prev & 0xFF) as usize];
            b += 1;
        }
        k += 1;
    }
    t
}

#[cfg(target_pointer_width = "64")]
static TABLES: [[u16; 256]; SLICE] = tables::<SLICE>();

/// Fold one byte into a running CRC.
#[cfg(target_pointer_width = "64")]
#[inline(always)]
pub fn accumulate(byte: u8, crc: u16) -> u16 {
    (crc >> 8) ^ TABLES[0][((crc as u8) ^ byte) as usize]
}

/// Fold one byte into a running CRC (table-free: a handful of instructions).
#[cfg(not(target_pointer_width = "64"))]
#[inline(always)]
pub fn accumulate(byte: u8, crc: u16) -> u16 {
    let mut tmp = byte ^ (crc & 0xFF) as u8;
    tmp ^= tmp << 4;
    let tmp = tmp as u16;
    (crc >> 8) ^ (tmp << 8) ^ (tmp << 3) ^ (tmp >> 4)
}

/// Fold `c` (2 to [`SLICE`] bytes) into `crc` in one step: the CRC is 16 bits, so after two
/// bytes nothing of it is left but what the tables carry; each byte's table is the one for the
/// number of bytes after it. The loads are independent of each other.
#[cfg(target_pointer_width = "64")]
#[inline(always)]
fn fold(crc: u16, c: &[u8]) -> u16 {
    let n = c.len();
    let t = &TABLES;
    let mut x =
        t[n - 1][((crc as u8) ^ c[0]) as usize] ^ t[n - 2][(((crc >> 8) as u8) ^ c[1]) as usize];
    let mut i = 2;
    while i < n {
        x ^= t[n - 1 - i][c[i] as usize];
        i += 1;
    }
    x
}

/// Fold whole [`SLICE`]-byte steps of `bytes`; returns the CRC and the unfolded rest.
#[cfg(target_pointer_width = "64")]
#[inline(always)]
fn fold_steps(bytes: &[u8], mut crc: u16) -> (u16, &[u8]) {
    let mut chunks = bytes.chunks_exact(SLICE);
    for c in &mut chunks {
        crc = fold(crc, c);
    }
    (crc, chunks.remainder())
}

/// Fold a slice into a running CRC. (On 64-bit hosts [`frame_crc`] folds its own tail; this
/// serves the tests there.)
#[cfg(any(test, not(target_pointer_width = "64")))]
#[inline]
pub fn accumulate_slice(bytes: &[u8], crc: u16) -> u16 {
    #[cfg(target_pointer_width = "64")]
    {
        let (crc, rest) = fold_steps(bytes, crc);
        match rest.len() {
            0 => crc,
            1 => accumulate(rest[0], crc),
            _ => fold(crc, rest),
        }
    }
    #[cfg(not(target_pointer_width = "64"))]
    {
        let mut crc = crc;
        for &b in bytes {
            crc = accumulate(b, crc);
        }
        crc
    }
}

/// The checksum of a frame: header and payload bytes after the magic, then the message's
/// `crc_extra` byte.
#[inline]
pub fn frame_crc(header_and_payload: &[u8], crc_extra: u8) -> u16 {
    #[cfg(target_pointer_width = "64")]
    {
        // The tail and crc_extra together: one step of 1–16 bytes, as `fold` of the tail
        // followed by the extra byte (whose table is the last, 0).
        let (crc, rest) = fold_steps(header_and_payload, CRC_INIT);
        let t = &TABLES;
        let lo = crc as u8;
        let hi = (crc >> 8) as u8;
        match rest.len() {
            0 => accumulate(crc_extra, crc),
            1 => t[1][(lo ^ rest[0]) as usize] ^ t[0][(hi ^ crc_extra) as usize],
            n => {
                let mut x = t[n][(lo ^ rest[0]) as usize]
                    ^ t[n - 1][(hi ^ rest[1]) as usize]
                    ^ t[0][crc_extra as usize];
                let mut i = 2;
                while i < n {
                    x ^= t[n - i][rest[i] as usize];
                    i += 1;
                }
                x
            }
        }
    }
    #[cfg(not(target_pointer_width = "64"))]
    {
        accumulate(crc_extra, accumulate_slice(header_and_payload, CRC_INIT))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    extern crate std;
    use proptest::prelude::*;
    use std::vec::Vec;

    /// The bytewise, table-free definition the tables are checked against.
    fn reference(bytes: &[u8], mut crc: u16) -> u16 {
        for &byte in bytes {
            let mut tmp = byte ^ (crc & 0xFF) as u8;
            tmp ^= tmp << 4;
            let tmp = tmp as u16;
            crc = (crc >> 8) ^ (tmp << 8) ^ (tmp << 3) ^ (tmp >> 4);
        }
        crc
    }

    #[test]
    fn agrees_with_the_mavlink_crate() {
        let data: [u8; 9] = *b"123456789";
        // The catalogue check value of CRC-16/MCRF4XX.
        assert_eq!(accumulate_slice(&data, CRC_INIT), 0x6F91);
        for extra in [0u8, 50, 152, 255] {
            assert_eq!(
                frame_crc(&data, extra),
                mavlink::calculate_crc(&data, extra)
            );
        }
    }

    proptest! {
        #[test]
        fn sliced_equals_bytewise(bytes in prop::collection::vec(any::<u8>(), 0..300), init: u16) {
            let bytes: Vec<u8> = bytes;
            prop_assert_eq!(accumulate_slice(&bytes, init), reference(&bytes, init));
        }

        #[test]
        fn frame_crc_equals_bytewise(bytes in prop::collection::vec(any::<u8>(), 0..300), extra: u8) {
            let bytes: Vec<u8> = bytes;
            prop_assert_eq!(frame_crc(&bytes, extra), reference(&[extra], reference(&bytes, CRC_INIT)));
        }
    }

    #[test]
    fn every_length_and_tail_agrees_with_bytewise() {
        // Every step/tail split of the sliced form, on bytes that differ at every position.
        let bytes: Vec<u8> = (0..100u32).map(|i| (i * 37 + 11) as u8).collect();
        for n in 0..=bytes.len() {
            assert_eq!(
                accumulate_slice(&bytes[..n], 0x1D0F),
                reference(&bytes[..n], 0x1D0F),
                "{n}"
            );
            assert_eq!(
                frame_crc(&bytes[..n], 0xA5),
                reference(&[0xA5], reference(&bytes[..n], CRC_INIT)),
                "{n}"
            );
        }
    }
}
