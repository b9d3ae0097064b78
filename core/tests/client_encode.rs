//! `Client::encode`: a driver's own message shares the link's sender ids and sequence counter
//! with the frames the offboard machine sends.

use nexus_core::client::{Client, ClientConfig};
use nexus_core::frame::{Decoder, MAX_FRAME_LEN};
use nexus_core::mav;
use nexus_core::offboard::wire;
use nexus_core::Instant;

type C = Client<2, 4, 4, 2>;

/// Decode one frame's header fields: (seq, sysid, compid, msgid).
fn header(bytes: &[u8]) -> (u8, u8, u8, u32) {
    let mut d = Decoder::new();
    let (_, f) = d.feed(bytes);
    let h = f.expect("a whole frame").header;
    (h.seq, h.sysid, h.compid, h.msgid)
}

#[test]
fn driver_frames_continue_the_links_sequence() {
    let mut c = C::new(ClientConfig::default());
    let mut buf = [0u8; MAX_FRAME_LEN];
    // The first poll sends our HEARTBEAT (seq 0).
    let n = c.poll_transmit(Instant::ZERO, &mut buf).expect("heartbeat");
    assert_eq!(header(&buf[..n]), (0, 255, 240, 0));
    let read = mav::PARAM_REQUEST_READ_DATA {
        param_index: -1,
        target_system: 1,
        target_component: 1,
        param_id: wire::param_id("MIS_TAKEOFF_ALT").unwrap(),
    };
    let n = c.encode(&read, &mut buf).expect("fits");
    assert_eq!(header(&buf[..n]), (1, 255, 240, 20));
    // A buffer too small is refused and does not consume a sequence number.
    assert!(c.encode(&read, &mut buf[..10]).is_err());
    let n = c.encode(&read, &mut buf).expect("fits");
    assert_eq!(header(&buf[..n]).0, 2);
}
