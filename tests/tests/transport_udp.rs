//! UDP links on loopback: `udpin` following the most recent sender (the bare transport's
//! default) or latching one peer by a `PeerRule` with foreign datagrams set aside, `udpout`
//! replies, port clashes, and a PX4-at-10× burst received whole thanks to the large receive
//! buffer.

use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use nexus_host::transport::{
    mio, ConnString, Framing, Link, LinkOptions, PeerRule, SendOutcome, DEFAULT_RECV_BUFFER_BYTES,
    RECV_BUF_LEN,
};

/// Wait (through the poll) for the next datagram on `link`; `None` after `timeout`.
fn next_datagram(poll: &mut mio::Poll, link: &mut Link, timeout: Duration) -> Option<Vec<u8>> {
    let mut events = mio::Events::with_capacity(8);
    let mut buf = vec![0u8; RECV_BUF_LEN];
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(n) = link.recv(&mut buf).expect("recv") {
            return Some(buf[..n].to_vec());
        }
        let left = deadline.checked_duration_since(Instant::now())?;
        poll.poll(&mut events, Some(left)).expect("poll");
    }
}

fn peer_socket() -> UdpSocket {
    let s = UdpSocket::bind("127.0.0.1:0").unwrap();
    s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    s
}

fn registered(conn: &str) -> (mio::Poll, Link) {
    let poll = mio::Poll::new().unwrap();
    let mut link = Link::open_str(conn).unwrap_or_else(|e| panic!("{e}"));
    link.register(poll.registry(), mio::Token(1)).unwrap();
    (poll, link)
}

#[test]
fn udpin_replies_from_its_own_port_to_the_most_recent_sender() {
    let (mut poll, mut link) = registered("udpin:127.0.0.1:0");
    assert_eq!(link.framing(), Framing::Datagram);
    let local = link.local_addr().unwrap();
    assert_ne!(local.port(), 0);

    // Nobody has spoken yet: nowhere to send.
    assert_eq!(link.send(b"early").unwrap(), SendOutcome::NoPeer);
    assert_eq!(link.peer(), None);

    let a = peer_socket();
    a.send_to(b"from-a", local).unwrap();
    assert_eq!(
        next_datagram(&mut poll, &mut link, Duration::from_secs(2)).unwrap(),
        b"from-a"
    );
    assert_eq!(link.peer(), Some(a.local_addr().unwrap()));
    assert_eq!(link.peer_epoch(), 1);

    assert_eq!(link.send(b"reply-1").unwrap(), SendOutcome::Sent);
    let mut buf = [0u8; 64];
    let (n, src) = a.recv_from(&mut buf).unwrap();
    assert_eq!(&buf[..n], b"reply-1");
    // What PX4 needs: the reply comes from the port the client listens on.
    assert_eq!(src, local);

    // A second sender takes over; the first hears nothing more.
    let b = peer_socket();
    b.send_to(b"from-b", local).unwrap();
    assert_eq!(
        next_datagram(&mut poll, &mut link, Duration::from_secs(2)).unwrap(),
        b"from-b"
    );
    assert_eq!(link.peer(), Some(b.local_addr().unwrap()));
    assert_eq!(link.peer_epoch(), 2);
    link.send(b"reply-2").unwrap();
    let (n, _) = b.recv_from(&mut buf).unwrap();
    assert_eq!(&buf[..n], b"reply-2");
    a.set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    assert!(
        a.recv_from(&mut buf).is_err(),
        "the old sender must not get the reply"
    );

    // The same sender again does not count as a new peer.
    b.send_to(b"again", local).unwrap();
    next_datagram(&mut poll, &mut link, Duration::from_secs(2)).unwrap();
    assert_eq!(link.peer_epoch(), 2);
}

#[test]
fn udpout_sends_to_its_destination_and_reads_replies() {
    let px4 = peer_socket();
    let px4_addr = px4.local_addr().unwrap();
    let (mut poll, mut link) = registered(&format!("udpout:127.0.0.1:{}", px4_addr.port()));
    assert_eq!(link.peer(), Some(px4_addr));

    assert_eq!(link.send(b"ping").unwrap(), SendOutcome::Sent);
    let mut buf = [0u8; 64];
    let (n, from) = px4.recv_from(&mut buf).unwrap();
    assert_eq!(&buf[..n], b"ping");
    assert_eq!(from.port(), link.local_addr().unwrap().port());

    px4.send_to(b"pong", from).unwrap();
    assert_eq!(
        next_datagram(&mut poll, &mut link, Duration::from_secs(2)).unwrap(),
        b"pong"
    );
    // Nothing else is pending.
    assert_eq!(link.recv(&mut buf).unwrap(), None);
}

#[test]
fn a_taken_port_is_an_error_that_names_it() {
    let holder = UdpSocket::bind("127.0.0.1:0").unwrap();
    let port = holder.local_addr().unwrap().port();
    let err = Link::open_str(&format!("udpin:127.0.0.1:{port}"))
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with(&format!(
            "udpin:127.0.0.1:{port} — cannot bind UDP 127.0.0.1:{port} (another program already listens on this port): "
        )),
        "{err}"
    );
}

#[test]
fn an_unresolvable_host_is_an_error_that_names_it() {
    let err = Link::open_str("udpout:nexus-no-such-host.invalid:14550")
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("udpout:nexus-no-such-host.invalid:14550 — cannot resolve host 'nexus-no-such-host.invalid'"),
        "{err}"
    );
}

/// One second of PX4 at 10× (~5000 messages) sent while the pump is not reading.
const BURST: u32 = 5000;

/// Send `BURST` numbered ~60-byte datagrams to `to` as fast as possible.
fn burst(to: SocketAddr) {
    let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
    let mut msg = [0x55u8; 60];
    for seq in 0..BURST {
        msg[..4].copy_from_slice(&seq.to_le_bytes());
        tx.send_to(&msg, to).unwrap();
    }
}

/// Read every datagram already queued on `link`, returning their sequence numbers.
fn drain(link: &mut Link) -> Vec<u32> {
    let mut buf = vec![0u8; RECV_BUF_LEN];
    let mut seqs = Vec::new();
    while let Some(n) = link.recv(&mut buf).unwrap() {
        assert_eq!(n, 60);
        seqs.push(u32::from_le_bytes(buf[..4].try_into().unwrap()));
    }
    seqs
}

#[test]
fn a_ten_x_burst_fits_in_the_requested_receive_buffer() {
    let conn: ConnString = "udpin:127.0.0.1:0".parse().unwrap();
    let mut link = Link::open(&conn).unwrap();
    let rb = link.recv_buffer().unwrap();
    assert_eq!(rb.requested_bytes, DEFAULT_RECV_BUFFER_BYTES);
    assert!(
        rb.granted_bytes >= rb.requested_bytes,
        "the OS granted only {} of {} bytes of SO_RCVBUF: raise net.core.rmem_max",
        rb.granted_bytes,
        rb.requested_bytes
    );
    burst(link.local_addr().unwrap());
    let seqs = drain(&mut link);
    assert_eq!(
        seqs.len(),
        BURST as usize,
        "datagrams lost with a {rb:?} buffer"
    );
    assert!(seqs.iter().copied().eq(0..BURST), "datagrams out of order");

    // Control: the same burst overflows a small buffer, so the test above can fail.
    let small = LinkOptions {
        recv_buffer_bytes: 64 * 1024,
        ..LinkOptions::default()
    };
    let mut link = Link::open_with(&conn, &small).unwrap();
    assert_eq!(link.recv_buffer().unwrap().granted_bytes, 64 * 1024);
    burst(link.local_addr().unwrap());
    let got = drain(&mut link).len();
    assert!(
        got < BURST as usize / 2,
        "a 64 KiB buffer held {got} of {BURST} datagrams"
    );
}

fn heartbeat_frame(sysid: u8, mavtype: nexus_core::mav::MavType) -> Vec<u8> {
    use nexus_core::mav;
    let autopilot = if mavtype == mav::MavType::MAV_TYPE_GCS {
        mav::MavAutopilot::MAV_AUTOPILOT_INVALID
    } else {
        mav::MavAutopilot::MAV_AUTOPILOT_PX4
    };
    let hb = nexus_core::offboard::wire::heartbeat(
        mavtype,
        autopilot,
        mav::MavModeFlag::empty(),
        0,
        mav::MavState::MAV_STATE_STANDBY,
    );
    let mut buf = [0u8; 300];
    let n = nexus_core::frame::Encoder::new(sysid, 1)
        .encode(&hb, &mut buf)
        .unwrap();
    buf[..n].to_vec()
}

fn latching(conn: &str, peer: PeerRule) -> (mio::Poll, Link) {
    let poll = mio::Poll::new().unwrap();
    let options = LinkOptions {
        peer,
        ..LinkOptions::default()
    };
    let mut link = Link::open_with(&conn.parse().unwrap(), &options).unwrap();
    link.register(poll.registry(), mio::Token(1)).unwrap();
    (poll, link)
}

/// Wait until `link` has set aside `n` foreign datagrams, delivering none.
fn until_foreign(poll: &mut mio::Poll, link: &mut Link, n: u64) {
    let deadline = Instant::now() + Duration::from_secs(2);
    while link.foreign().unwrap().datagrams() < n {
        assert!(Instant::now() < deadline, "{:?}", link.foreign());
        if let Some(got) = next_datagram(poll, link, Duration::from_millis(50)) {
            assert!(got.is_empty(), "a foreign datagram was delivered");
        }
    }
}

#[test]
fn udpin_latches_the_first_autopilot_heartbeat_of_its_system_for_good() {
    use nexus_core::mav::MavType;
    let (mut poll, mut link) = latching(
        "udpin:127.0.0.1:0",
        PeerRule::FirstAutopilot { sysid: Some(1) },
    );
    let local = link.local_addr().unwrap();
    let junk = peer_socket();
    let gcs = peer_socket();
    let other_system = peer_socket();
    let vehicle = peer_socket();
    junk.send_to(b"not mavlink", local).unwrap();
    gcs.send_to(&heartbeat_frame(1, MavType::MAV_TYPE_GCS), local)
        .unwrap();
    other_system
        .send_to(&heartbeat_frame(2, MavType::MAV_TYPE_QUADROTOR), local)
        .unwrap();
    until_foreign(&mut poll, &mut link, 3);
    assert_eq!(link.peer(), None, "nothing latched yet");
    assert_eq!(link.send(b"early").unwrap(), SendOutcome::NoPeer);

    let hb = heartbeat_frame(1, MavType::MAV_TYPE_QUADROTOR);
    vehicle.send_to(&hb, local).unwrap();
    assert_eq!(
        next_datagram(&mut poll, &mut link, Duration::from_secs(2)).unwrap(),
        hb
    );
    assert_eq!(link.peer(), Some(vehicle.local_addr().unwrap()));
    assert_eq!(link.peer_epoch(), 1);

    // A later impostor with the same heartbeat is set aside; the peer never moves.
    let impostor = peer_socket();
    impostor.send_to(&hb, local).unwrap();
    until_foreign(&mut poll, &mut link, 4);
    assert_eq!(link.peer(), Some(vehicle.local_addr().unwrap()));
    assert_eq!(link.peer_epoch(), 1);
    let f = link.foreign().unwrap();
    let addrs: Vec<SocketAddr> = f.sources.iter().map(|s| s.addr).collect();
    assert_eq!(
        addrs,
        [
            junk.local_addr().unwrap(),
            gcs.local_addr().unwrap(),
            other_system.local_addr().unwrap(),
            impostor.local_addr().unwrap()
        ]
    );
    assert!(f.sources[3].counts.systems.contains(1));

    // Replies go to the vehicle only.
    assert_eq!(link.send(b"reply").unwrap(), SendOutcome::Sent);
    let mut buf = [0u8; 64];
    let (n, _) = vehicle.recv_from(&mut buf).unwrap();
    assert_eq!(&buf[..n], b"reply");
    impostor
        .set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    assert!(impostor.recv_from(&mut buf).is_err());
    // The vehicle keeps being heard.
    vehicle.send_to(b"more", local).unwrap();
    assert_eq!(
        next_datagram(&mut poll, &mut link, Duration::from_secs(2)).unwrap(),
        b"more"
    );
}

#[test]
fn a_known_vehicle_address_is_the_only_peer_and_a_flood_returns_between_bursts() {
    let vehicle = peer_socket();
    let (mut poll, mut link) = latching(
        "udpin:127.0.0.1:0",
        PeerRule::Address(vehicle.local_addr().unwrap()),
    );
    let local = link.local_addr().unwrap();
    let flood = peer_socket();
    const N: u32 = 2000;
    for i in 0..N {
        flood.send_to(&i.to_le_bytes(), local).unwrap();
    }
    vehicle.send_to(b"vehicle", local).unwrap();
    // Drain: the vehicle's datagram comes through; the flood never does, and `recv` hands
    // control back (Ok(Some(0))) between bursts rather than reading it all in one call.
    let mut buf = vec![0u8; RECV_BUF_LEN];
    let mut got = Vec::new();
    let mut empty_returns = 0;
    let deadline = Instant::now() + Duration::from_secs(2);
    while got.is_empty() || link.foreign().unwrap().datagrams() < u64::from(N) {
        assert!(Instant::now() < deadline, "{:?}", link.foreign());
        match link.recv(&mut buf).unwrap() {
            Some(0) => empty_returns += 1,
            Some(n) => got.push(buf[..n].to_vec()),
            None => {
                let mut events = mio::Events::with_capacity(8);
                poll.poll(&mut events, Some(Duration::from_millis(50)))
                    .unwrap();
            }
        }
    }
    assert_eq!(got, [b"vehicle".to_vec()]);
    assert!(empty_returns >= 2, "{empty_returns}");
    assert_eq!(link.peer(), Some(vehicle.local_addr().unwrap()));
    let f = link.foreign().unwrap();
    assert_eq!(f.sources.len(), 1);
    assert_eq!(f.sources[0].counts.frames, 0);
}

#[test]
fn udpout_under_a_latching_rule_takes_only_its_destination() {
    let px4 = peer_socket();
    let (mut poll, mut link) = latching(
        &format!("udpout:127.0.0.1:{}", px4.local_addr().unwrap().port()),
        PeerRule::FirstAutopilot { sysid: None },
    );
    let local = link.local_addr().unwrap();
    let local = SocketAddr::from(([127, 0, 0, 1], local.port()));
    let other = peer_socket();
    other.send_to(b"not from px4", local).unwrap();
    until_foreign(&mut poll, &mut link, 1);
    px4.send_to(b"pong", local).unwrap();
    assert_eq!(
        next_datagram(&mut poll, &mut link, Duration::from_secs(2)).unwrap(),
        b"pong"
    );
    assert_eq!(link.peer(), Some(px4.local_addr().unwrap()));
}
