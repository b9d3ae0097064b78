//! MAVLink's CRC-16/MCRF4XX (X.25), table-driven.
//!
//! The bytewise, table-free form is a chain of ~8 dependent operations per byte and was most of
//! the decoder's cost on the host. On 64-bit hosts the checksum is sliced by 8 (eight
//! 256-entry tables, 4 KiB, eight bytes per step with independent loads). On 32-bit targets
//! (the firmware, whose flash is budgeted and whose UART brings a byte every ~90 µs) it stays
//! table-free: a table would cost 512 B of flash for time the MCU does not lack.

/// The CRC's initial value.
pub const CRC_INIT: u16 = 0xFFFF;

/// The reflected polynomial of CRC-16/MCRF4XX (0x1021 reversed).
const POLY_REFLECTED: u16 = 0x8408;

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
static TABLES: [[u16; 256]; 8] = tables::<8>();

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

/// Fold a slice into a running CRC.
#[inline]
pub fn accumulate_slice(bytes: &[u8], crc: u16) -> u16 {
    #[cfg(target_pointer_width = "64")]
    let (crc, bytes) = {
        let mut crc = crc;
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let t = &TABLES;
            let lo = (crc as u8) ^ c[0];
            let hi = ((crc >> 8) as u8) ^ c[1];
            crc = t[7][lo as usize]
                ^ t[6][hi as usize]
                ^ t[5][c[2] as usize]
                ^ t[4][c[3] as usize]
                ^ t[3][c[4] as usize]
                ^ t[2][c[5] as usize]
                ^ t[1][c[6] as usize]
                ^ t[0][c[7] as usize];
        }
        (crc, chunks.remainder())
    };
    let mut crc = crc;
    for &b in bytes {
        crc = accumulate(b, crc);
    }
    crc
}

/// The checksum of a frame: header and payload bytes after the magic, then the message's
/// `crc_extra` byte.
#[inline]
pub fn frame_crc(header_and_payload: &[u8], crc_extra: u8) -> u16 {
    accumulate(crc_extra, accumulate_slice(header_and_payload, CRC_INIT))
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
    }
}
