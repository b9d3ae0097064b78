//! `Client::send_raw` (feature `raw-send`): any message goes out as queued, in order, framed by
//! the client's encoder; a full queue and an oversized payload are refused, nothing dropped.
#![cfg(feature = "raw-send")]

mod offboard_rig;

use mavlink::{MavlinkVersion, Message};
use nexus_core::client::{Client, ClientConfig, RAW_QUEUE_LEN};
use nexus_core::frame::MAX_FRAME_LEN;
use nexus_core::mav;
use nexus_core::offboard::OffboardError;
use nexus_core::Instant;
use offboard_rig::decode;

type TestClient = Client<4, 8, 8, 2>;

fn raw(msg: &mav::MavMessage) -> (u32, u8, Vec<u8>) {
    let mut buf = [0u8; 255];
    let n = msg.ser(MavlinkVersion::V2, &mut buf);
    let id = msg.message_id();
    (id, mav::MavMessage::extra_crc(id), buf[..n].to_vec())
}

#[test]
fn queued_messages_go_out_in_order_and_a_full_queue_is_refused() {
    let mut c = TestClient::new(ClientConfig::default());
    let now = Instant::from_millis(1000);
    let mut buf = [0u8; MAX_FRAME_LEN];
    // The GCS heartbeat is due first: drain it.
    while c.poll_transmit(now, &mut buf).is_some() {}
    let msgs: Vec<mav::MavMessage> = (0..RAW_QUEUE_LEN as u32)
        .map(|i| {
            mav::MavMessage::DEBUG(mav::DEBUG_DATA {
                time_boot_ms: i,
                value: i as f32 * 1.5,
                ind: i as u8,
            })
        })
        .collect();
    for m in &msgs {
        let (id, crc, p) = raw(m);
        c.send_raw(id, crc, &p).unwrap();
    }
    let (id, crc, p) = raw(&msgs[0]);
    assert_eq!(c.send_raw(id, crc, &p), Err(OffboardError::OutboxFull));
    assert_eq!(
        c.next_deadline(),
        Some(Instant::ZERO),
        "queued messages are due now"
    );
    let mut out = Vec::new();
    while let Some(n) = c.poll_transmit(now, &mut buf) {
        out.push(decode(&buf[..n]));
    }
    assert_eq!(out, msgs);
    // Room again once sent.
    c.send_raw(id, crc, &p).unwrap();
    assert!(matches!(
        c.send_raw(0, 0, &[0u8; 256]),
        Err(OffboardError::InvalidArgument(_))
    ));
}
