//! Framing tests: golden frames from pymavlink, resynchronisation, and the three read forms.
extern crate std;

use super::*;
use crate::msg::{Frame, Msg};
use mavlink::dialects::common as mav;
use std::vec::Vec;

pub(crate) fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

pub(crate) fn vectors() -> Vec<serde_json::Value> {
    let all: serde_json::Value =
        serde_json::from_str(include_str!("../../../fixtures/vectors/all.json")).unwrap();
    all["vectors"].as_array().unwrap().clone()
}

pub(crate) fn vector(name: &str) -> serde_json::Value {
    vectors().into_iter().find(|v| v["name"] == name).unwrap()
}

fn feed_all(dec: &mut Decoder, mut input: &[u8]) -> Vec<(Header, Vec<u8>)> {
    let mut out = Vec::new();
    while !input.is_empty() {
        let (n, frame) = dec.feed(input);
        if let Some(f) = frame {
            out.push((f.header, f.payload.to_vec()));
        }
        input = &input[n..];
    }
    // A frame completed by the last byte was returned above; frames left in the buffer after
    // a resync come out on empty feeds.
    while let (_, Some(f)) = dec.feed(&[]) {
        out.push((f.header, f.payload.to_vec()));
    }
    out
}

#[test]
fn every_golden_frame_decodes_with_its_header() {
    for v in vectors() {
        let bytes = hex(v["frame_hex"].as_str().unwrap());
        let mut dec = Decoder::new();
        let frames = feed_all(&mut dec, &bytes);
        assert_eq!(frames.len(), 1, "{}", v["name"]);
        let (h, payload) = &frames[0];
        assert_eq!(h.version, Version::V2);
        assert_eq!(h.seq as u64, v["header"]["seq"].as_u64().unwrap());
        assert_eq!(h.sysid as u64, v["header"]["sysid"].as_u64().unwrap());
        assert_eq!(h.compid as u64, v["header"]["compid"].as_u64().unwrap());
        assert_eq!(h.msgid as u64, v["msgid"].as_u64().unwrap());
        assert_eq!(payload, &hex(v["payload_hex"].as_str().unwrap()));
        assert_eq!(dec.stats().crc_errors, 0);
    }
}

#[test]
fn golden_subset_messages_decode_to_their_fields() {
    let v = vector("heartbeat_px4_takeoff_armed");
    let bytes = hex(v["frame_hex"].as_str().unwrap());
    let mut dec = Decoder::new();
    let (_, raw) = dec.feed(&bytes);
    let frame = Frame::decode(&raw.unwrap()).unwrap().unwrap();
    let Msg::Heartbeat(hb) = frame.msg else {
        panic!()
    };
    assert_eq!(hb.custom_mode, 33816576);
    assert_eq!(hb.base_mode.bits(), 129);
    assert_eq!(hb.system_status as u8, 4);

    for name in ["statustext_info", "statustext_50_chars_chunked"] {
        let v = vector(name);
        let bytes = hex(v["frame_hex"].as_str().unwrap());
        let mut dec = Decoder::new();
        let (_, raw) = dec.feed(&bytes);
        let frame = Frame::decode(&raw.unwrap()).unwrap().unwrap();
        let Msg::Statustext(st) = frame.msg else {
            panic!()
        };
        let text = v["fields"]["text"].as_str().unwrap();
        assert_eq!(&st.text[..text.len()], text.as_bytes());
        assert_eq!(st.id as u64, v["fields"]["id"].as_u64().unwrap());
        assert_eq!(
            st.chunk_seq as u64,
            v["fields"]["chunk_seq"].as_u64().unwrap()
        );
    }
}

fn encode_with(v: &serde_json::Value, f: impl FnOnce(&mut Encoder, &mut [u8]) -> usize) {
    let h = &v["header"];
    let mut enc = Encoder::new(
        h["sysid"].as_u64().unwrap() as u8,
        h["compid"].as_u64().unwrap() as u8,
    );
    enc.set_next_seq(h["seq"].as_u64().unwrap() as u8);
    let mut buf = [0u8; MAX_FRAME_LEN];
    let n = f(&mut enc, &mut buf);
    assert_eq!(
        &buf[..n],
        &hex(v["frame_hex"].as_str().unwrap())[..],
        "{} encodes byte for byte as pymavlink",
        v["name"]
    );
}

#[test]
fn heartbeat_and_statustext_encode_like_pymavlink() {
    for name in [
        "heartbeat_px4_takeoff_armed",
        "heartbeat_px4_takeoff_disarmed_standby",
    ] {
        let v = vector(name);
        let f = &v["fields"];
        let msg = mav::HEARTBEAT_DATA {
            custom_mode: f["custom_mode"].as_u64().unwrap() as u32,
            mavtype: mav::MavType::MAV_TYPE_QUADROTOR,
            autopilot: mav::MavAutopilot::MAV_AUTOPILOT_PX4,
            base_mode: mav::MavModeFlag::from_bits_retain(f["base_mode"].as_u64().unwrap() as u8),
            system_status: if f["system_status"] == 4 {
                mav::MavState::MAV_STATE_ACTIVE
            } else {
                mav::MavState::MAV_STATE_STANDBY
            },
            mavlink_version: 3,
        };
        encode_with(&v, |e, b| e.encode(&msg, b).unwrap());
    }
    let v = vector("statustext_50_chars_chunked");
    let msg = mav::STATUSTEXT_DATA {
        severity: mav::MavSeverity::MAV_SEVERITY_WARNING,
        text: "0123456789ABCDEFGHIJabcdefghij0123456789KLMNOPQRST".into(),
        id: 7,
        chunk_seq: 1,
    };
    encode_with(&v, |e, b| e.encode(&msg, b).unwrap());
}

#[test]
fn encoder_numbers_frames_and_refuses_small_buffers() {
    let mut enc = Encoder::new(255, 240);
    let hb = mav::HEARTBEAT_DATA::default();
    let mut small = [0u8; 12];
    assert_eq!(
        enc.encode(&hb, &mut small),
        Err(BufferTooSmall { needed: 21 })
    );
    assert_eq!(enc.next_seq(), 0);
    let mut buf = [0u8; MAX_FRAME_LEN];
    enc.encode(&hb, &mut buf).unwrap();
    enc.encode(&hb, &mut buf).unwrap();
    assert_eq!(buf[4], 1);
    assert_eq!(enc.next_seq(), 2);
}

fn golden_stream() -> Vec<u8> {
    vectors()
        .iter()
        .flat_map(|v| hex(v["frame_hex"].as_str().unwrap()))
        .collect()
}

#[test]
fn garbage_between_frames_is_dropped_and_counted() {
    let frames = golden_stream();
    let mut noisy = std::vec![0x00, 0x55, 0xAA];
    noisy.extend_from_slice(&frames[..20]); // a truncated frame
    noisy.extend_from_slice(&frames);
    noisy.extend_from_slice(&[1, 2, 3]);
    let mut dec = Decoder::new();
    let got = feed_all(&mut dec, &noisy);
    assert_eq!(got.len(), vectors().len(), "every intact frame survives");
    let s = dec.stats();
    assert!(s.crc_errors >= 1, "{s:?}");
    assert!(s.dropped_bytes >= 3, "{s:?}");
}

#[test]
fn false_start_inside_garbage_does_not_hide_the_next_frame() {
    // 0xFD 0xFF …: a "header" claiming 255 payload bytes, swallowing real frames behind it.
    let mut stream = std::vec![0xFD, 0xFF, 0, 0, 0, 1, 1, 0, 0, 0];
    let real = golden_stream();
    stream.extend_from_slice(&real);
    let mut dec = Decoder::new();
    let got = feed_all(&mut dec, &stream);
    assert_eq!(got.len(), vectors().len());
}

#[test]
fn unknown_message_ids_are_skipped_cheaply() {
    // A well-formed frame with an id outside the common dialect (id 0x00_40_00).
    let mut f = std::vec![0xFD, 2, 0, 0, 0, 1, 1, 0x00, 0x40, 0x00, 7, 7];
    let crc = frame_crc(&f[1..], 0);
    f.extend_from_slice(&crc.to_le_bytes());
    f.extend_from_slice(&golden_stream());
    let mut dec = Decoder::new();
    let got = feed_all(&mut dec, &f);
    assert_eq!(got.len(), vectors().len());
    assert_eq!(dec.stats().unknown_ids, 1);
}

#[test]
fn v1_frames_decode() {
    // HEARTBEAT as MAVLink 1: FE len seq sys comp id payload crc
    let payload = [0u8, 0, 0, 0, 6, 8, 0, 0, 3];
    let mut f = std::vec![0xFE, 9, 5, 255, 190, 0];
    f.extend_from_slice(&payload);
    let crc = frame_crc(&f[1..], 50);
    f.extend_from_slice(&crc.to_le_bytes());
    let mut dec = Decoder::new();
    let (_, raw) = dec.feed(&f);
    let raw = raw.unwrap();
    assert_eq!(raw.header.version, Version::V1);
    assert_eq!(raw.header.sysid, 255);
    let frame = Frame::decode(&raw).unwrap().unwrap();
    assert!(matches!(frame.msg, Msg::Heartbeat(_)));
}

#[test]
fn signed_frames_are_framed_with_their_signature() {
    let v = vector("statustext_info");
    let mut bytes = hex(v["frame_hex"].as_str().unwrap());
    bytes[2] = 0x01; // signed
    let len = bytes.len();
    let crc = frame_crc(&bytes[1..len - 2], 83);
    bytes[len - 2..].copy_from_slice(&crc.to_le_bytes());
    bytes.extend_from_slice(&[9u8; 13]);
    bytes.extend_from_slice(&golden_stream());
    let mut dec = Decoder::new();
    let got = feed_all(&mut dec, &bytes);
    assert_eq!(got.len(), vectors().len() + 1);
    assert!(got[0].0.signed);
}

/// An embedded-io reader that hands out its bytes a few at a time and then reports
/// not-ready (the UART's RX queue running dry).
struct Trickle {
    data: Vec<u8>,
    pos: usize,
    chunk: usize,
    ready_budget: usize,
}

impl embedded_io::ErrorType for Trickle {
    type Error = core::convert::Infallible;
}

impl embedded_io::Read for Trickle {
    fn read(&mut self, buf: &mut [u8]) -> Result<usize, Self::Error> {
        let n = buf.len().min(self.chunk).min(self.data.len() - self.pos);
        buf[..n].copy_from_slice(&self.data[self.pos..self.pos + n]);
        self.pos += n;
        self.ready_budget = self.ready_budget.saturating_sub(1);
        Ok(n)
    }
}

impl embedded_io::ReadReady for Trickle {
    fn read_ready(&mut self) -> Result<bool, Self::Error> {
        Ok(self.pos < self.data.len() && self.ready_budget > 0)
    }
}

#[test]
fn blocking_reader_stops_at_frame_boundaries() {
    let data = golden_stream();
    let mut r = Trickle {
        data,
        pos: 0,
        chunk: 7,
        ready_budget: usize::MAX,
    };
    let mut dec = Decoder::new();
    let mut n = 0;
    loop {
        match dec.read_frame(&mut r) {
            Ok(_) => n += 1,
            Err(ReadError::Eof) => break,
            Err(ReadError::Io(e)) => match e {},
        }
    }
    assert_eq!(n, vectors().len());
}

#[test]
fn nonblocking_reader_keeps_partial_frames_across_would_block() {
    let data = golden_stream();
    let mut r = Trickle {
        data,
        pos: 0,
        chunk: 3,
        ready_budget: 0,
    };
    let mut dec = Decoder::new();
    let mut n = 0;
    let mut would_blocks = 0;
    while r.pos < r.data.len() || dec.buffered() > 0 {
        match dec.poll_read(&mut r) {
            Ok(_) => n += 1,
            Err(nb::Error::WouldBlock) => {
                would_blocks += 1;
                if r.pos >= r.data.len() {
                    break;
                }
                r.ready_budget = 2; // an interrupt delivered a few more bytes
            }
            Err(nb::Error::Other(e)) => panic!("{e:?}"),
        }
    }
    assert_eq!(n, vectors().len());
    assert!(
        would_blocks > n,
        "frames really were split across WouldBlock"
    );
}

mod prop {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
            let mut dec = Decoder::new();
            let mut input = &bytes[..];
            while !input.is_empty() {
                let (n, frame) = dec.feed(input);
                if let Some(f) = frame {
                    let _ = Frame::decode(&f);
                }
                prop_assert!(n > 0 || dec.buffered() > 0);
                input = &input[n..];
            }
        }

        #[test]
        fn a_valid_frame_after_garbage_is_recovered(
            garbage in proptest::collection::vec(any::<u8>(), 0..600),
            which in 0usize..16,
            split in 1usize..40,
        ) {
            let vs = vectors();
            let v = &vs[which % vs.len()];
            let good = hex(v["frame_hex"].as_str().unwrap());
            // Garbage, then the good frame twice: no false start in the garbage may hide either.
            let mut stream = garbage.clone();
            stream.extend_from_slice(&good);
            stream.extend_from_slice(&good);
            // A false start may still be waiting for bytes it claims: a live link brings more.
            stream.extend_from_slice(&[0u8; MAX_FRAME_LEN]);
            let mut dec = Decoder::new();
            let mut seen = 0;
            for chunk in stream.chunks(split) {
                let mut input = chunk;
                while !input.is_empty() {
                    let (n, frame) = dec.feed(input);
                    if let Some(f) = frame {
                        if f.payload == &hex(v["payload_hex"].as_str().unwrap())[..] {
                            seen += 1;
                        }
                    }
                    input = &input[n..];
                }
            }
            while let (_, Some(f)) = dec.feed(&[]) {
                if f.payload == &hex(v["payload_hex"].as_str().unwrap())[..] { seen += 1; }
            }
            prop_assert!(seen >= 2, "both copies of the frame decode after {} garbage bytes (saw {})", garbage.len(), seen);
        }
    }
}

/// A frame of an id the skipping tests' decoder does not read (ATTITUDE_QUATERNION, 31), with
/// a valid checksum.
fn unread_frame(enc: &mut Encoder) -> Vec<u8> {
    let mut buf = [0u8; MAX_FRAME_LEN];
    let n = enc
        .encode(
            &mav::ATTITUDE_QUATERNION_DATA {
                time_boot_ms: 1234,
                q1: 1.0,
                q2: 0.5,
                ..Default::default()
            },
            &mut buf,
        )
        .unwrap();
    buf[..n].to_vec()
}

fn heartbeat_frame(enc: &mut Encoder) -> Vec<u8> {
    let mut buf = [0u8; MAX_FRAME_LEN];
    let n = enc
        .encode(
            &mav::HEARTBEAT_DATA {
                mavlink_version: 3,
                ..Default::default()
            },
            &mut buf,
        )
        .unwrap();
    buf[..n].to_vec()
}

#[test]
fn skipping_decoder_returns_only_read_frames_and_counts_the_rest() {
    let mut enc = Encoder::new(1, 1);
    let mut stream = Vec::new();
    for _ in 0..5 {
        stream.extend(unread_frame(&mut enc));
        stream.extend(heartbeat_frame(&mut enc));
    }
    // An unread frame ending the input is checked (nothing after it to vouch for its length).
    stream.extend(unread_frame(&mut enc));
    let mut dec = Decoder::skipping(crate::msg::is_decoded);
    let got = feed_all(&mut dec, &stream);
    assert_eq!(got.len(), 5);
    assert!(got.iter().all(|(h, _)| h.msgid == 0));
    let s = dec.stats();
    assert_eq!((s.frames, s.skipped, s.crc_errors), (5, 6, 0), "{s:?}");
    // The checking decoder returns all eleven.
    assert_eq!(feed_all(&mut Decoder::new(), &stream).len(), 11);
}

#[test]
fn skipping_decoder_checks_a_false_start_not_followed_by_a_start_byte() {
    // A false MAVLink 1 start claiming an unread id (31) with a length that covers the real
    // heartbeat behind it; the byte where its length ends is not a start byte, so it is
    // checked, fails, and the search resumes after its marker.
    let mut enc = Encoder::new(1, 1);
    let hb = heartbeat_frame(&mut enc);
    let len = 10u8;
    let mut stream = std::vec![0xFE, len, 0, 1, 1, 31];
    stream.extend_from_slice(&hb);
    stream.extend_from_slice(&[0x11; 8]);
    assert!(!is_magic_byte(stream[6 + len as usize + 2]));
    let mut dec = Decoder::skipping(crate::msg::is_decoded);
    let got = feed_all(&mut dec, &stream);
    assert_eq!(
        got.len(),
        1,
        "the heartbeat behind the false start is found"
    );
    assert_eq!(dec.stats().skipped, 0);
    assert_eq!(dec.stats().crc_errors, 1);
}

#[test]
fn skipping_decoder_trade_off_a_false_start_ending_on_a_start_byte_hides_what_it_covers() {
    // The documented cost: the false start's length ends exactly on the start byte of a real
    // frame, so it is taken as a frame boundary and the heartbeat it covers is lost; the frame
    // where it ends is still found. The checking decoder finds both.
    let mut enc = Encoder::new(1, 1);
    let hb1 = heartbeat_frame(&mut enc);
    let hb2 = heartbeat_frame(&mut enc);
    let len = (hb1.len() - 2) as u8;
    // A MAVLink 2 header claiming ATTITUDE_QUATERNION (31), a known id nobody reads.
    let mut stream = std::vec![0xFD, len, 0, 0, 0, 1, 1, 31, 0, 0];
    stream.extend_from_slice(&hb1);
    stream.extend_from_slice(&hb2);
    let mut dec = Decoder::skipping(crate::msg::is_decoded);
    let got = feed_all(&mut dec, &stream);
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].0.seq, hb2[4]);
    assert_eq!(dec.stats().skipped, 1);
    assert_eq!(feed_all(&mut Decoder::new(), &stream).len(), 2);

    // The same as a MAVLink 1 false start (a one-byte id, nearly always a known one): always
    // checked, so nothing it covers is lost.
    let mut stream = std::vec![0xFE, len, 0, 1, 1, 31];
    stream.extend_from_slice(&hb1);
    stream.extend_from_slice(&hb2);
    let mut dec = Decoder::skipping(crate::msg::is_decoded);
    assert_eq!(feed_all(&mut dec, &stream).len(), 2);
    assert_eq!(dec.stats().skipped, 0);

    // Nor is a MAVLink 2 false start whose 3-byte id names no known message.
    let mut stream = std::vec![0xFD, len, 0, 0, 0, 1, 1, 31, 0x77, 0x01];
    stream.extend_from_slice(&hb1);
    stream.extend_from_slice(&hb2);
    let mut dec = Decoder::skipping(crate::msg::is_decoded);
    assert_eq!(feed_all(&mut dec, &stream).len(), 2);
}

/// Feed `datagram` as one UDP read: `feed_datagram` on it and on its unconsumed rest.
fn feed_datagram_all(dec: &mut Decoder, mut input: &[u8]) -> Vec<(Header, Vec<u8>)> {
    let mut out = Vec::new();
    while !input.is_empty() {
        let (n, frame) = dec.feed_datagram(input);
        if let Some(f) = frame {
            out.push((f.header, f.payload.to_vec()));
        }
        input = &input[n..];
    }
    while let (_, Some(f)) = dec.feed_datagram(&[]) {
        out.push((f.header, f.payload.to_vec()));
    }
    out
}

#[test]
fn a_datagram_end_is_a_boundary_for_the_skipping_decoder_only_through_feed_datagram() {
    // One frame per datagram, as PX4 sends: an unread frame ending its datagram is passed over
    // unchecked by feed_datagram (even with a broken checksum, which proves it was not
    // checked), and checked by feed (which then counts the broken one).
    let mut enc = Encoder::new(1, 1);
    let mut bad = unread_frame(&mut enc);
    let n = bad.len();
    bad[n - 1] ^= 0x5A;
    let good = unread_frame(&mut enc);
    let hb = heartbeat_frame(&mut enc);
    let mut dec = Decoder::skipping(crate::msg::is_decoded);
    assert!(feed_datagram_all(&mut dec, &bad).is_empty());
    assert!(feed_datagram_all(&mut dec, &good).is_empty());
    let got = feed_datagram_all(&mut dec, &hb);
    assert_eq!(got.len(), 1);
    let s = dec.stats();
    assert_eq!((s.frames, s.skipped, s.crc_errors), (1, 2, 0), "{s:?}");

    let mut dec = Decoder::skipping(crate::msg::is_decoded);
    for d in [&bad, &good, &hb] {
        feed_all(&mut dec, d);
    }
    let s = dec.stats();
    assert_eq!((s.frames, s.skipped), (1, 1), "{s:?}");
    assert!(s.crc_errors >= 1, "{s:?}");

    // A read frame is always checked: a broken heartbeat is not delivered, whatever the feed.
    let mut hb_bad = heartbeat_frame(&mut enc);
    let n = hb_bad.len();
    hb_bad[n - 1] ^= 0x5A;
    let mut dec = Decoder::skipping(crate::msg::is_decoded);
    assert!(feed_datagram_all(&mut dec, &hb_bad).is_empty());
    assert_eq!(dec.stats().frames, 0);
}

#[test]
fn feed_datagram_trade_off_a_false_start_ending_on_the_datagram_end_hides_what_it_covers() {
    // The documented cost of trusting a datagram's end: a false MAVLink 2 start of a known
    // unread id whose length ends exactly at the datagram's end covers the real heartbeat
    // behind it. `feed` checks it (it ends its input), fails it and finds the heartbeat.
    let mut enc = Encoder::new(1, 1);
    let hb = heartbeat_frame(&mut enc);
    let len = (hb.len() - 2) as u8;
    let mut datagram = std::vec![0xFD, len, 0, 0, 0, 1, 1, 31, 0, 0];
    datagram.extend_from_slice(&hb);
    let mut dec = Decoder::skipping(crate::msg::is_decoded);
    assert!(feed_datagram_all(&mut dec, &datagram).is_empty());
    assert_eq!(dec.stats().skipped, 1);
    let mut dec = Decoder::skipping(crate::msg::is_decoded);
    assert_eq!(feed_all(&mut dec, &datagram).len(), 1);

    // A length one byte short of the end is checked (the byte after it is not a start
    // byte), so the heartbeat is found.
    datagram[1] = len - 1;
    let mut dec = Decoder::skipping(crate::msg::is_decoded);
    assert_eq!(feed_datagram_all(&mut dec, &datagram).len(), 1);
    assert_eq!(dec.stats().skipped, 0);

    // A MAVLink 1 false start ending on the datagram's end is checked as always.
    let mut datagram = std::vec![0xFE, (hb.len() + 2) as u8, 0, 1, 1, 31];
    datagram.extend_from_slice(&hb);
    datagram.extend_from_slice(&[0x11; 4]);
    assert_eq!(datagram.len(), 6 + datagram[1] as usize + 2);
    let mut dec = Decoder::skipping(crate::msg::is_decoded);
    assert_eq!(feed_datagram_all(&mut dec, &datagram).len(), 1);
}

fn is_magic_byte(b: u8) -> bool {
    b == MAGIC_V1 || b == MAGIC_V2
}

mod skip_prop {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// Real frames (read and unread) with random garbage between them, fed in random
        /// splits: the skipping decoder never returns a frame the checking decoder does not,
        /// nor an unread one, and loses a read frame only to the documented coincidence.
        #[test]
        fn skipping_decoder_against_garbage(
            pieces in proptest::collection::vec(
                (proptest::collection::vec(any::<u8>(), 0..40), any::<bool>()), 1..30),
            split in 1usize..400,
        ) {
            let mut enc = Encoder::new(1, 1);
            let mut stream = Vec::new();
            // Each piece (garbage, then a frame) whole, as a datagram holds whole frames.
            let mut wholes: Vec<Vec<u8>> = Vec::new();
            let mut read_frames = 0;
            for (garbage, read) in &pieces {
                let mut piece = garbage.clone();
                if *read {
                    piece.extend(heartbeat_frame(&mut enc));
                    read_frames += 1;
                } else {
                    piece.extend(unread_frame(&mut enc));
                }
                stream.extend_from_slice(&piece);
                wholes.push(piece);
            }
            stream.extend_from_slice(&[0u8; MAX_FRAME_LEN]);
            let checking: Vec<_> = feed_all(&mut Decoder::new(), &stream)
                .into_iter()
                .filter(|(h, _)| crate::msg::is_decoded(h.msgid))
                .collect();
            let mut dec = Decoder::skipping(crate::msg::is_decoded);
            let mut skipping = Vec::new();
            for chunk in stream.chunks(split) {
                skipping.extend(feed_all(&mut dec, chunk));
            }
            // The pieces as datagrams of a few whole pieces each (their ends trusted as frame
            // boundaries; garbage anywhere inside them).
            let mut dec = Decoder::skipping(crate::msg::is_decoded);
            let mut datagrams = Vec::new();
            for group in wholes.chunks(1 + split % 4) {
                datagrams.extend(feed_datagram_all(&mut dec, &group.concat()));
            }
            prop_assert!(checking.len() >= read_frames);
            for skipping in [&skipping, &datagrams] {
                // Every frame returned is one the checking decoder returned, in order.
                let mut it = checking.iter();
                for f in skipping {
                    prop_assert!(crate::msg::is_decoded(f.0.msgid));
                    prop_assert!(it.any(|c| c == f), "a frame the checking decoder did not return");
                }
                // A loss needs a false start whose length lands on a start byte (or a
                // datagram's end): rare.
                let lost = checking.len() - skipping.len();
                prop_assert!(lost <= 1 + checking.len() / 8, "lost {} of {}", lost, checking.len());
            }
        }
    }

    #[test]
    fn skipping_decoder_loses_almost_nothing_in_heavy_garbage() {
        // Deterministic, large: 20 000 frames, half unread, each behind 0–63 bytes of
        // pseudo-random garbage rich in start bytes.
        let mut x: u32 = 0x1234_5678;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x
        };
        let mut enc = Encoder::new(1, 1);
        let mut stream = Vec::new();
        // Datagrams of whole pieces (garbage, then a frame), up to 1400 bytes each.
        let mut datagrams: Vec<Vec<u8>> = std::vec![Vec::new()];
        for i in 0..20_000 {
            let mut piece = Vec::new();
            for _ in 0..next() % 64 {
                let r = next();
                piece.push(if r % 8 == 0 { 0xFE } else { r as u8 });
            }
            if i % 2 == 0 {
                piece.extend(heartbeat_frame(&mut enc));
            } else {
                piece.extend(unread_frame(&mut enc));
            }
            stream.extend_from_slice(&piece);
            if datagrams
                .last()
                .is_some_and(|d| d.len() + piece.len() > 1400)
            {
                datagrams.push(Vec::new());
            }
            if let Some(d) = datagrams.last_mut() {
                d.extend(piece);
            }
        }
        let checking = feed_all(&mut Decoder::new(), &stream)
            .into_iter()
            .filter(|(h, _)| crate::msg::is_decoded(h.msgid))
            .count();
        // The checking decoder itself loses a few to false starts whose checksum matches by chance.
        assert!(checking >= 9_900, "{checking}");
        for datagram in [false, true] {
            let mut dec = Decoder::skipping(crate::msg::is_decoded);
            let mut skipping = 0;
            if datagram {
                for d in &datagrams {
                    skipping += feed_datagram_all(&mut dec, d).len();
                }
            } else {
                for chunk in stream.chunks(1400) {
                    skipping += feed_all(&mut dec, chunk).len();
                }
            }
            // Datagram ends also end a false start's reach: the checking decoder fed the same
            // datagrams is the measure there.
            let checking = if datagram {
                let mut dec = Decoder::new();
                datagrams
                    .iter()
                    .flat_map(|d| feed_datagram_all(&mut dec, d))
                    .filter(|(h, _)| crate::msg::is_decoded(h.msgid))
                    .count()
            } else {
                checking
            };
            let lost = checking.saturating_sub(skipping);
            assert!(
                lost * 100 <= checking,
                "lost {lost} of {checking} read frames (> 1 %), datagram: {datagram}"
            );
            std::println!(
                "skipping decoder (datagram ends trusted: {datagram}): lost {lost} of {checking} read frames in garbage"
            );
        }
    }
}

#[test]
fn a_frame_carries_its_whole_wire_bytes() {
    // Golden frames split across feeds and behind garbage: `bytes` is the frame exactly as
    // sent (what a tlog recorder writes), never the garbage or the next frame.
    let mut stream = std::vec![0x00, 0x13, 0xFD];
    let mut want = Vec::new();
    for v in vectors() {
        let b = hex(v["frame_hex"].as_str().unwrap());
        stream.extend_from_slice(&b);
        want.push(b);
    }
    let mut dec = Decoder::new();
    let mut got = Vec::new();
    for chunk in stream.chunks(7) {
        let mut input = chunk;
        loop {
            let (n, frame) = dec.feed(input);
            if let Some(f) = frame {
                got.push(f.bytes.to_vec());
            }
            input = &input[n..];
            if input.is_empty() && n == 0 {
                break;
            }
        }
    }
    while let (_, Some(f)) = dec.feed(&[]) {
        got.push(f.bytes.to_vec());
    }
    assert_eq!(got, want);
}

/// Sequence gaps per sender: frames dropped from one sender's stream count as lost, in both
/// the contiguous and the byte-at-a-time paths, whether the frame is read or skipped; another
/// sender's interleaved numbering, a duplicate and an older frame are not losses.
#[test]
#[cfg(feature = "seq-loss")]
fn sequence_gaps_per_sender_count_the_frames_lost() {
    let hb = mav::HEARTBEAT_DATA::default();
    let att = mav::ATTITUDE_DATA::default();
    let mut vehicle = Encoder::new(1, 1);
    let mut camera = Encoder::new(1, 100);
    let mut stream = Vec::new();
    let mut buf = [0u8; MAX_FRAME_LEN];
    let mut kept = Vec::new();
    for i in 0..20u32 {
        // The vehicle's frames 3, 4 and 11 are lost; ATTITUDE (skipped by a skipping decoder)
        // and HEARTBEAT alternate; the camera's own numbering interleaves.
        let n = if i % 2 == 0 {
            vehicle.encode(&hb, &mut buf).unwrap()
        } else {
            vehicle.encode(&att, &mut buf).unwrap()
        };
        if ![3, 4, 11].contains(&i) {
            kept.push(buf[..n].to_vec());
        }
        let n = camera.encode(&hb, &mut buf).unwrap();
        kept.push(buf[..n].to_vec());
    }
    // A duplicate of the last frame, and an old one again.
    kept.push(kept[kept.len() - 1].clone());
    kept.push(kept[0].clone());
    for f in &kept {
        stream.extend_from_slice(f);
    }
    let skipping = Decoder::skipping(|id| id == 0);
    for mut d in [Decoder::new(), skipping] {
        let mut rest = &stream[..];
        while !rest.is_empty() {
            let (used, _) = d.feed(rest);
            rest = &rest[used..];
        }
        assert_eq!(d.stats().seq_lost, 3, "{:?}", d.stats());
        assert_eq!(d.stats().seq_frames, kept.len() as u32);
        // A byte at a time (the buffered path).
        let mut d = Decoder::new();
        for b in &stream {
            let mut one = core::slice::from_ref(b);
            while !one.is_empty() {
                let (used, _) = d.feed(one);
                one = &one[used..];
            }
        }
        assert_eq!(d.stats().seq_lost, 3, "{:?}", d.stats());
    }
}

/// A decoder whose sequences are deferred counts only the frames handed back: frames with the
/// vehicle's ids but numbered by someone else (a forger's) neither open a gap nor close one.
#[test]
#[cfg(feature = "seq-loss")]
fn deferred_sequences_count_only_the_frames_handed_back() {
    let hb = mav::HEARTBEAT_DATA::default();
    let mut vehicle = Encoder::new(1, 1);
    let mut forger = Encoder::new(1, 1);
    let mut buf = [0u8; MAX_FRAME_LEN];
    let mut stream = Vec::new();
    let mut genuine = Vec::new();
    for i in 0..10u8 {
        // The forger's numbers run from 60, ahead of the vehicle's by less than half the
        // sequence space: a jump in the vehicle's stream (a gap), after which the vehicle's
        // own frames look old. The vehicle's frame 5 is really lost.
        let n = vehicle.encode(&hb, &mut buf).unwrap();
        if i != 5 {
            stream.extend_from_slice(&buf[..n]);
            genuine.push(buf[..n].to_vec());
        }
        if i == 0 {
            for _ in 0..60 {
                forger.encode(&hb, &mut buf).unwrap();
            }
        }
        let n = forger.encode(&hb, &mut buf).unwrap();
        stream.extend_from_slice(&buf[..n]);
    }
    // Without deferring, the forgeries make a gap of 59 and hide the real loss.
    let mut plain = Decoder::new();
    let mut rest = &stream[..];
    while !rest.is_empty() {
        let (used, _) = plain.feed(rest);
        rest = &rest[used..];
    }
    assert!(plain.stats().seq_lost >= 59, "{:?}", plain.stats());
    let mut d = Decoder::new();
    d.set_sequences_deferred(true);
    let mut rest = &stream[..];
    while !rest.is_empty() {
        let (used, raw) = d.feed(rest);
        rest = &rest[used..];
        let Some(raw) = raw else { continue };
        // The caller's check: only the vehicle's own frames pass.
        let header = raw.header;
        let genuine_frame = genuine.iter().any(|g| g[..] == *raw.bytes);
        if genuine_frame {
            d.count_sequence(&header);
        }
    }
    assert_eq!(d.stats().seq_lost, 1, "{:?}", d.stats());
    assert_eq!(d.stats().seq_frames, genuine.len() as u32);
}

#[test]
fn a_frame_cut_across_two_datagrams_is_not_joined_but_across_two_stream_reads_it_is() {
    let mut enc = Encoder::new(1, 1);
    let hb = heartbeat_frame(&mut enc);
    let (head, tail) = hb.split_at(10);
    let mut dec = Decoder::new();
    assert!(feed_datagram_all(&mut dec, head).is_empty());
    assert!(feed_datagram_all(&mut dec, tail).is_empty());
    assert_eq!(dec.buffered(), 0, "nothing carried into the next datagram");
    assert_eq!(
        dec.stats().dropped_bytes as usize,
        hb.len(),
        "every byte counted"
    );
    // The next whole datagram is read as it is.
    let next = heartbeat_frame(&mut enc);
    assert_eq!(feed_datagram_all(&mut dec, &next).len(), 1);

    let mut dec = Decoder::new();
    assert!(feed_all(&mut dec, head).is_empty());
    assert_eq!(
        feed_all(&mut dec, tail).len(),
        1,
        "a stream's frame spans reads"
    );
}

#[test]
fn a_false_start_at_a_datagrams_end_does_not_hide_the_frame_behind_it() {
    // A start byte claiming more than the datagram holds, then a real frame: at the
    // datagram's end the claim is dropped and the frame behind it found.
    let mut enc = Encoder::new(1, 1);
    let mut datagram = std::vec![0xFD, 200, 0, 0, 0, 1, 1, 0, 0, 0];
    datagram.extend(heartbeat_frame(&mut enc));
    for mut dec in [Decoder::new(), Decoder::skipping(crate::msg::is_decoded)] {
        assert_eq!(feed_datagram_all(&mut dec, &datagram).len(), 1);
        assert_eq!(dec.buffered(), 0);
    }
}

#[test]
fn restart_drops_a_partial_frame_and_forgets_sequences_but_keeps_counters() {
    let mut enc = Encoder::new(1, 1);
    let hb = heartbeat_frame(&mut enc);
    let mut dec = Decoder::new();
    assert_eq!(feed_all(&mut dec, &hb).len(), 1);
    assert!(feed_all(&mut dec, &hb[..7]).is_empty());
    dec.restart();
    assert_eq!(dec.buffered(), 0);
    let s = dec.stats();
    assert_eq!((s.frames, s.dropped_bytes), (1, 7));
    // A new sender numbered anywhere: no gap.
    let mut other = Encoder::new(1, 1);
    for _ in 0..100 {
        heartbeat_frame(&mut other);
    }
    assert_eq!(feed_all(&mut dec, &heartbeat_frame(&mut other)).len(), 1);
    assert_eq!(dec.stats().seq_lost, 0);
}
