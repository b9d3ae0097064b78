//! TCP links on loopback: the `tcp` client both ways and its "no reconnect" loss, the `tcpin`
//! server's latest-connection-wins policy, and back pressure through the outgoing queue.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

use nexus_host::transport::{mio, Framing, Link, SendOutcome};

/// Poll `link` until `want` bytes arrived (or an error, or 3 s).
fn read_bytes(poll: &mut mio::Poll, link: &mut Link, want: usize) -> std::io::Result<Vec<u8>> {
    let mut events = mio::Events::with_capacity(8);
    let mut buf = [0u8; 4096];
    let mut got = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(3);
    while got.len() < want && Instant::now() < deadline {
        while let Some(n) = link.recv(&mut buf)? {
            got.extend_from_slice(&buf[..n]);
        }
        link.flush()?;
        if got.len() < want {
            poll.poll(&mut events, Some(Duration::from_millis(50)))?;
        }
    }
    Ok(got)
}

/// Poll `link` until `cond` holds (3 s at most).
fn pump_until(poll: &mut mio::Poll, link: &mut Link, mut cond: impl FnMut(&Link) -> bool) {
    let mut events = mio::Events::with_capacity(8);
    let mut buf = [0u8; 4096];
    let deadline = Instant::now() + Duration::from_secs(3);
    while !cond(link) {
        assert!(Instant::now() < deadline, "condition not reached");
        while link.recv(&mut buf).unwrap().is_some() {}
        poll.poll(&mut events, Some(Duration::from_millis(20)))
            .unwrap();
    }
}

fn client(addr: std::net::SocketAddr) -> TcpStream {
    let s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    s
}

#[test]
fn tcp_client_both_directions_then_the_server_leaves() {
    let server = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = server.local_addr().unwrap();
    let mut poll = mio::Poll::new().unwrap();
    let mut link = Link::open_str(&format!("tcp:127.0.0.1:{}", addr.port())).unwrap();
    assert_eq!(link.framing(), Framing::Stream);
    assert_eq!(link.peer(), Some(addr));
    link.register(poll.registry(), mio::Token(0)).unwrap();
    let (mut theirs, _) = server.accept().unwrap();
    theirs
        .set_read_timeout(Some(Duration::from_secs(2)))
        .unwrap();

    theirs.write_all(b"hello from the server").unwrap();
    assert_eq!(
        read_bytes(&mut poll, &mut link, 21).unwrap(),
        b"hello from the server"
    );

    assert_eq!(link.send(b"hello back").unwrap(), SendOutcome::Sent);
    let mut buf = [0u8; 10];
    theirs.read_exact(&mut buf).unwrap();
    assert_eq!(&buf, b"hello back");

    drop(theirs);
    let err = read_bytes(&mut poll, &mut link, usize::MAX).unwrap_err();
    assert!(err.to_string().contains("closed the connection"), "{err}");
    // No reconnect: the link stays lost.
    let again = link.send(b"x").unwrap_err();
    assert!(again.to_string().contains("does not reconnect"), "{again}");
}

#[test]
fn tcp_connect_refused_names_the_address() {
    let port = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let err = Link::open_str(&format!("tcp:127.0.0.1:{port}"))
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with(&format!(
            "tcp:127.0.0.1:{port} — cannot connect to TCP 127.0.0.1:{port} (nothing listens there): "
        )),
        "{err}"
    );
}

#[test]
fn tcpin_serves_one_peer_and_the_latest_connection_wins() {
    let mut poll = mio::Poll::new().unwrap();
    let mut link = Link::open_str("tcpin:127.0.0.1:0").unwrap();
    link.register(poll.registry(), mio::Token(5)).unwrap();
    let addr = link.local_addr().unwrap();
    assert_eq!(link.send(b"nobody").unwrap(), SendOutcome::NoPeer);

    let mut a = client(addr);
    a.write_all(b"from-a").unwrap();
    assert_eq!(read_bytes(&mut poll, &mut link, 6).unwrap(), b"from-a");
    assert_eq!(link.peer(), Some(a.local_addr().unwrap()));
    assert_eq!(link.peer_epoch(), 1);
    assert_eq!(link.send(b"to-a").unwrap(), SendOutcome::Sent);
    let mut buf = [0u8; 4];
    a.read_exact(&mut buf).unwrap();
    assert_eq!(&buf, b"to-a");

    // B connects: it becomes the peer and A is closed.
    let mut b = client(addr);
    b.write_all(b"from-b").unwrap();
    assert_eq!(read_bytes(&mut poll, &mut link, 6).unwrap(), b"from-b");
    assert_eq!(link.peer(), Some(b.local_addr().unwrap()));
    assert_eq!(link.peer_epoch(), 2);
    assert_eq!(a.read(&mut buf).unwrap(), 0, "the replaced peer is closed");
    link.send(b"to-b").unwrap();
    b.read_exact(&mut buf).unwrap();
    assert_eq!(&buf, b"to-b");

    // B leaves: no error, the link waits for the next peer.
    drop(b);
    pump_until(&mut poll, &mut link, |l| l.peer().is_none());
    assert_eq!(link.send(b"gone").unwrap(), SendOutcome::NoPeer);

    let mut c = client(addr);
    c.write_all(b"from-c").unwrap();
    assert_eq!(read_bytes(&mut poll, &mut link, 6).unwrap(), b"from-c");
    assert_eq!(link.peer_epoch(), 3);
}

#[test]
fn a_peer_that_does_not_read_gets_whole_frames_in_order_once_it_does() {
    let server = TcpListener::bind("127.0.0.1:0").unwrap();
    let mut poll = mio::Poll::new().unwrap();
    let mut link = Link::open_str(&format!("tcp:{}", server.local_addr().unwrap())).unwrap();
    link.register(poll.registry(), mio::Token(0)).unwrap();
    let (mut theirs, _) = server.accept().unwrap();

    // Fill the kernel buffers and the link's queue; frames are numbered 280-byte blocks.
    let mut accepted = Vec::new();
    let mut outcomes = (0, 0, 0);
    for seq in 0u32..20_000 {
        let mut frame = [0xa5u8; 280];
        frame[..4].copy_from_slice(&seq.to_le_bytes());
        match link.send(&frame).unwrap() {
            SendOutcome::Sent => outcomes.0 += 1,
            SendOutcome::Queued => outcomes.1 += 1,
            SendOutcome::Dropped => {
                outcomes.2 += 1;
                continue;
            }
            SendOutcome::NoPeer => panic!("a connected client has a peer"),
            other => panic!("an outcome this test does not know: {other:?}"),
        }
        accepted.push(seq);
    }
    assert!(
        outcomes.1 > 0 && outcomes.2 > 0,
        "the queue never filled: {outcomes:?}"
    );
    assert!(link.pending_bytes() > 0);

    // Now the peer reads; the pump flushes on writable events until the queue is empty.
    let reader = std::thread::spawn(move || {
        let mut all = Vec::new();
        theirs
            .set_read_timeout(Some(Duration::from_millis(500)))
            .unwrap();
        let mut buf = [0u8; 65536];
        while let Ok(n) = theirs.read(&mut buf) {
            if n == 0 {
                break;
            }
            all.extend_from_slice(&buf[..n]);
        }
        all
    });
    let mut events = mio::Events::with_capacity(8);
    let deadline = Instant::now() + Duration::from_secs(5);
    while link.pending_bytes() > 0 {
        assert!(Instant::now() < deadline, "queue never drained");
        poll.poll(&mut events, Some(Duration::from_millis(50)))
            .unwrap();
        link.flush().unwrap();
    }
    let bytes = reader.join().unwrap();
    assert_eq!(
        bytes.len(),
        accepted.len() * 280,
        "every accepted frame arrives whole"
    );
    for (i, chunk) in bytes.chunks(280).enumerate() {
        assert_eq!(
            u32::from_le_bytes(chunk[..4].try_into().unwrap()),
            accepted[i]
        );
        assert!(chunk[4..].iter().all(|&b| b == 0xa5));
    }
}
