//! Reading the PX4 recordings of `fixtures/px4-traces/` (QGroundControl tlogs: an 8-byte
//! big-endian capture time in µs, then one MAVLink frame) for the replay tests.

use nexus_core::frame::Decoder;
use nexus_core::Frame;

/// (capture µs, decoded frame) of every frame of a tlog that decodes into the core's subset.
pub fn read_tlog(bytes: &[u8]) -> Vec<(u64, Frame)> {
    let mut out = Vec::new();
    let mut dec = Decoder::new();
    let mut i = 0;
    while i + 8 <= bytes.len() {
        let ts = u64::from_be_bytes(bytes[i..i + 8].try_into().unwrap());
        i += 8;
        let mut input = &bytes[i..];
        loop {
            let (used, raw) = dec.feed(input);
            input = &input[used..];
            i += used;
            if let Some(raw) = raw {
                if let Some(f) = Frame::decode(&raw).expect("a recorded frame does not decode") {
                    out.push((ts, f));
                }
                break;
            }
            assert!(used > 0 || input.is_empty(), "decoder stuck at byte {i}");
            if input.is_empty() {
                break;
            }
        }
    }
    assert_eq!(dec.stats().crc_errors, 0, "a fixture frame failed its CRC");
    out
}
