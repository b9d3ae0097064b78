//! Cutting a byte stream into checked MAVLink frames, keeping each frame's exact bytes.

use nexus_core::frame::{Decoder, DecoderStats, Header, Version, MAX_FRAME_LEN};

/// Splits a byte stream into checked frames and hands out each frame's exact bytes.
///
/// The decoder reports a frame's header and payload, not its bytes (the compat flags and a
/// signature would be lost by re-encoding), so the framer keeps a window of the bytes it fed
/// and finds the frame's bytes there: the frame ends where the decoder's leftover begins.
#[derive(Debug, Default)]
pub(crate) struct Framer {
    decoder: Decoder,
    window: Vec<u8>,
    /// Counters of decoders replaced by a reset.
    earlier: DecoderStats,
}

fn frame_len(h: &Header, payload_len: usize) -> usize {
    match h.version {
        Version::V2 => 10 + payload_len + 2 + if h.signed { 13 } else { 0 },
        Version::V1 => 6 + payload_len + 2,
    }
}

impl Framer {
    /// Feed `input`; `f(msgid, frame_bytes)` for each checked frame completed.
    pub(crate) fn push(&mut self, mut input: &[u8], mut f: impl FnMut(u32, &[u8])) {
        loop {
            let (used, frame) = self.decoder.feed(input);
            let got = frame.map(|raw| (raw.header, raw.payload.len()));
            self.window.extend_from_slice(&input[..used]);
            input = &input[used..];
            let Some((header, payload_len)) = got else {
                if input.is_empty() {
                    break;
                }
                continue;
            };
            let end = self.window.len() - self.decoder.buffered();
            let len = frame_len(&header, payload_len);
            if let Some(bytes) = end
                .checked_sub(len)
                .and_then(|start| self.window.get(start..end))
            {
                f(header.msgid, bytes);
            }
        }
        // The decoder never holds more than one frame's worth: keep that much history.
        if self.window.len() > 16 * MAX_FRAME_LEN {
            let cut = self.window.len() - MAX_FRAME_LEN;
            self.window.drain(..cut);
        }
    }

    /// A new byte stream starts (a new TCP peer): forget the partial frame.
    pub(crate) fn reset(&mut self) {
        self.earlier = self.stats();
        self.decoder = Decoder::new();
        self.window.clear();
    }

    pub(crate) fn stats(&self) -> DecoderStats {
        let (e, d) = (self.earlier, self.decoder.stats());
        DecoderStats {
            frames: e.frames.wrapping_add(d.frames),
            crc_errors: e.crc_errors.saturating_add(d.crc_errors),
            unknown_ids: e.unknown_ids.saturating_add(d.unknown_ids),
            dropped_bytes: e.dropped_bytes.saturating_add(d.dropped_bytes),
            skipped: e.skipped.wrapping_add(d.skipped),
            seq_frames: e.seq_frames.wrapping_add(d.seq_frames),
            seq_lost: e.seq_lost.wrapping_add(d.seq_lost),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nexus_core::frame::Encoder;
    use nexus_core::mav;

    fn heartbeat_frame(enc: &mut Encoder) -> Vec<u8> {
        let hb = mav::HEARTBEAT_DATA {
            custom_mode: 0,
            mavtype: mav::MavType::MAV_TYPE_QUADROTOR,
            autopilot: mav::MavAutopilot::MAV_AUTOPILOT_PX4,
            base_mode: mav::MavModeFlag::empty(),
            system_status: mav::MavState::MAV_STATE_STANDBY,
            mavlink_version: 3,
        };
        let mut buf = [0u8; MAX_FRAME_LEN];
        let n = enc.encode(&hb, &mut buf).unwrap();
        buf[..n].to_vec()
    }

    #[test]
    fn the_framer_hands_out_exact_frames_across_partial_reads_and_false_starts() {
        let mut enc = Encoder::new(1, 1);
        let frames: Vec<Vec<u8>> = (0..5).map(|_| heartbeat_frame(&mut enc)).collect();
        // A false start whose claimed length swallows the next real frame, noise, a frame cut
        // short, then the real frames.
        let mut stream = vec![0xFD, 30, 0, 0, 0, 1, 1, 0, 0, 0];
        stream.extend_from_slice(&frames[0]);
        stream.extend_from_slice(&[0x11, 0xFE, 0x22, 0x33]);
        stream.extend_from_slice(&frames[1][..7]);
        for f in &frames[2..] {
            stream.extend_from_slice(f);
        }
        for chunk_len in [1, 3, 7, 64, stream.len()] {
            let mut framer = Framer::default();
            let mut got = Vec::new();
            for chunk in stream.chunks(chunk_len) {
                framer.push(chunk, |id, f| got.push((id, f.to_vec())));
            }
            let want: Vec<(u32, Vec<u8>)> = [&frames[0], &frames[2], &frames[3], &frames[4]]
                .iter()
                .map(|f| (0, f.to_vec()))
                .collect();
            assert_eq!(got, want, "chunks of {chunk_len}");
            assert!(framer.stats().crc_errors >= 1);
        }
    }
}
