//! MAVLink's CRC-16/MCRF4XX (X.25), bytewise and table-free: small on flash, a handful of
//! instructions per byte.

/// The CRC's initial value.
pub const CRC_INIT: u16 = 0xFFFF;

/// Fold one byte into a running CRC.
#[inline(always)]
pub fn accumulate(byte: u8, crc: u16) -> u16 {
    let mut tmp = byte ^ (crc & 0xFF) as u8;
    tmp ^= tmp << 4;
    let tmp = tmp as u16;
    (crc >> 8) ^ (tmp << 8) ^ (tmp << 3) ^ (tmp >> 4)
}

/// Fold a slice into a running CRC.
#[inline]
pub fn accumulate_slice(bytes: &[u8], mut crc: u16) -> u16 {
    for &b in bytes {
        crc = accumulate(b, crc);
    }
    crc
}

/// The checksum of a frame: header and payload bytes after the magic, then the message's
/// `crc_extra` seed byte.
pub fn frame_crc(header_and_payload: &[u8], crc_extra: u8) -> u16 {
    accumulate(crc_extra, accumulate_slice(header_and_payload, CRC_INIT))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agrees_with_the_mavlink_crate() {
        let data: [u8; 9] = *b"123456789";
        for extra in [0u8, 50, 152, 255] {
            assert_eq!(
                frame_crc(&data, extra),
                mavlink::calculate_crc(&data, extra)
            );
        }
    }
}
