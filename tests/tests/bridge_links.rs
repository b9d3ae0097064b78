//! `nexus_host::bridge` on real loopback sockets: a TCP byte stream on one side (what QEMU's
//! UART or a serial port looks like), UDP datagrams on the other.

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::thread;
use std::time::{Duration, Instant};

use nexus_core::frame::{crc_extra, frame_crc, Encoder, MAX_FRAME_LEN};
use nexus_core::mav;
use nexus_host::bridge::{
    bridge, Bridge, BridgeError, BridgeOptions, BridgeStats, DirectionStats, MsgFilter,
};

fn heartbeat() -> mav::HEARTBEAT_DATA {
    mav::HEARTBEAT_DATA {
        custom_mode: 0x0400_0000,
        mavtype: mav::MavType::MAV_TYPE_QUADROTOR,
        autopilot: mav::MavAutopilot::MAV_AUTOPILOT_PX4,
        base_mode: mav::MavModeFlag::MAV_MODE_FLAG_CUSTOM_MODE_ENABLED,
        system_status: mav::MavState::MAV_STATE_STANDBY,
        mavlink_version: 3,
    }
}

fn encode<M: mavlink::MessageData>(enc: &mut Encoder, msg: &M) -> Vec<u8> {
    let mut buf = [0u8; MAX_FRAME_LEN];
    let n = enc.encode(msg, &mut buf).expect("fits");
    buf[..n].to_vec()
}

/// A MAVLink 2 frame with the signed flag and a 13-byte signature (not verified by anyone).
fn signed_heartbeat(enc: &mut Encoder) -> Vec<u8> {
    let mut f = encode(enc, &heartbeat());
    f[2] |= 0x01;
    let len = f[1] as usize;
    let crc = frame_crc(&f[1..10 + len], crc_extra(0).unwrap());
    f[10 + len..12 + len].copy_from_slice(&crc.to_le_bytes());
    f.extend_from_slice(&[0xA5; 13]);
    f
}

/// The same heartbeat as MAVLink 1.
fn v1_heartbeat() -> Vec<u8> {
    // HEARTBEAT payload: custom_mode u32, type, autopilot, base_mode, system_status, version.
    let payload = [0, 0, 0, 4, 2, 12, 1, 3, 3];
    let mut f = vec![0xFE, payload.len() as u8, 7, 1, 1, 0];
    f.extend_from_slice(&payload);
    let crc = frame_crc(&f[1..], crc_extra(0).unwrap());
    f.extend_from_slice(&crc.to_le_bytes());
    f
}

/// Line noise with false start bytes (deterministic).
fn noise(len: usize) -> Vec<u8> {
    let mut x = 0x1234_5678u32;
    (0..len)
        .map(|i| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            if i % 9 == 0 {
                0xFD
            } else {
                x as u8
            }
        })
        .collect()
}

/// A bridge between `tcpin:127.0.0.1:0` and `udpout` to a socket of the test's, plus the two
/// test-side ends.
struct Rig {
    bridge: Bridge,
    tcp: TcpStream,
    udp: UdpSocket,
    /// Where the bridge's UDP side sends from.
    bridge_udp: Option<SocketAddr>,
}

impl Rig {
    fn start(opts: BridgeOptions) -> Rig {
        let udp = UdpSocket::bind("127.0.0.1:0").unwrap();
        udp.set_read_timeout(Some(Duration::from_millis(200)))
            .unwrap();
        let to = format!("udpout:127.0.0.1:{}", udp.local_addr().unwrap().port());
        let bridge = bridge(
            &"tcpin:127.0.0.1:0".parse().unwrap(),
            &to.parse().unwrap(),
            opts,
        )
        .expect("start the bridge");
        let port = bridge.from_local_addr().unwrap().port();
        let tcp = TcpStream::connect(("127.0.0.1", port)).unwrap();
        tcp.set_nodelay(true).unwrap();
        tcp.set_read_timeout(Some(Duration::from_millis(200)))
            .unwrap();
        Rig {
            bridge,
            tcp,
            udp,
            bridge_udp: None,
        }
    }

    /// Datagrams until `n` arrived or `within` passed.
    fn datagrams(&mut self, n: usize, within: Duration) -> Vec<Vec<u8>> {
        let until = Instant::now() + within;
        let mut got = Vec::new();
        let mut buf = [0u8; 2048];
        while got.len() < n && Instant::now() < until {
            match self.udp.recv_from(&mut buf) {
                Ok((len, from)) => {
                    self.bridge_udp = Some(from);
                    got.push(buf[..len].to_vec());
                }
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
                Err(e) => panic!("udp recv: {e}"),
            }
        }
        got
    }

    /// Bytes from the TCP side until `n` arrived or `within` passed.
    fn stream_bytes(&mut self, n: usize, within: Duration) -> Vec<u8> {
        let until = Instant::now() + within;
        let mut got = Vec::new();
        let mut buf = [0u8; 4096];
        while got.len() < n && Instant::now() < until {
            match self.tcp.read(&mut buf) {
                Ok(0) => break,
                Ok(len) => got.extend_from_slice(&buf[..len]),
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
                Err(e) => panic!("tcp read: {e}"),
            }
        }
        got
    }

    /// The bridge's counters once `ready` holds (they are published after each turn, so
    /// just after the bytes they count), or as they are after 2 s.
    fn stats_when(&self, ready: impl Fn(&BridgeStats) -> bool) -> BridgeStats {
        let until = Instant::now() + Duration::from_secs(2);
        loop {
            let s = self.bridge.stats();
            if ready(&s) || Instant::now() >= until {
                return s;
            }
            thread::sleep(Duration::from_millis(5));
        }
    }

    /// Make the bridge's UDP side known (it sends from an ephemeral port): one frame in from
    /// the stream, one datagram out.
    fn learn_udp_peer(&mut self, enc: &mut Encoder) {
        let f = encode(enc, &heartbeat());
        self.tcp.write_all(&f).unwrap();
        let got = self.datagrams(1, Duration::from_secs(5));
        assert_eq!(got, vec![f]);
    }

    fn send_datagram(&self, d: &[u8]) {
        let to = self.bridge_udp.expect("learn_udp_peer first");
        self.udp.send_to(d, to).unwrap();
    }
}

#[test]
fn stream_frames_cross_one_per_datagram_whatever_the_reads_cut_and_noise_stays_behind() {
    let mut rig = Rig::start(BridgeOptions::default());
    let mut enc = Encoder::new(1, 1);
    let hb = encode(&mut enc, &heartbeat());
    let st = encode(
        &mut enc,
        &mav::STATUSTEXT_DATA {
            severity: mav::MavSeverity::MAV_SEVERITY_INFO,
            text: "Takeoff detected".into(),
            id: 0,
            chunk_seq: 0,
        },
    );
    let signed = signed_heartbeat(&mut enc);
    let v1 = v1_heartbeat();
    let mut corrupt = encode(&mut enc, &heartbeat());
    let last = corrupt.len() - 1;
    corrupt[last] ^= 0xFF;
    let hb2 = encode(&mut enc, &heartbeat());

    let mut stream = noise(300);
    stream.extend_from_slice(&hb);
    stream.extend_from_slice(&st[..st.len() / 2]); // cut short by the next frame
    stream.extend_from_slice(&st);
    stream.extend_from_slice(&corrupt);
    stream.extend_from_slice(&signed);
    stream.extend_from_slice(&noise(40));
    stream.extend_from_slice(&v1);
    stream.extend_from_slice(&hb2);
    // Dribbled out in uneven pieces, as a UART's interrupts would deliver them.
    let mut i = 0;
    let mut k = 0;
    while i < stream.len() {
        let n = [1, 3, 7, 2, 64, 5][k % 6].min(stream.len() - i);
        rig.tcp.write_all(&stream[i..i + n]).unwrap();
        i += n;
        k += 1;
        if k % 8 == 0 {
            thread::sleep(Duration::from_millis(2));
        }
    }
    let got = rig.datagrams(5, Duration::from_secs(5));
    assert_eq!(
        got,
        vec![hb, st, signed, v1, hb2],
        "exact frames, one per datagram"
    );
    assert!(
        rig.datagrams(1, Duration::from_millis(300)).is_empty(),
        "nothing else"
    );
    let s = rig.bridge.stats().forward;
    assert_eq!((s.units_in, s.units_out), (5, 5), "{s:?}");
    assert!(s.garbage_bytes >= 300, "{s:?}");
    assert!(s.bad_frames >= 2, "the cut and the corrupt frame: {s:?}");
}

#[test]
fn datagrams_reach_the_stream_side_byte_for_byte() {
    let mut rig = Rig::start(BridgeOptions::default());
    let mut enc = Encoder::new(1, 1);
    rig.learn_udp_peer(&mut enc);
    // PX4 puts several frames in one datagram; all of it crosses, in order.
    let mut want = Vec::new();
    for _ in 0..20 {
        let mut d = encode(&mut enc, &heartbeat());
        d.extend(encode(&mut enc, &heartbeat()));
        rig.send_datagram(&d);
        want.extend(d);
    }
    let got = rig.stream_bytes(want.len(), Duration::from_secs(5));
    assert_eq!(got, want);
    // The counters are published after the bytes are written: give the bridge a moment.
    let s = rig.stats_when(|s| s.backward.units_in >= 20).backward;
    assert_eq!(s.units_in, 20, "{s:?}");
    assert_eq!(s.bytes_out, want.len() as u64, "{s:?}");
}

#[test]
fn the_core_filter_holds_back_what_the_core_skips() {
    let mut rig = Rig::start(BridgeOptions {
        stream_filter: MsgFilter::CoreSubset,
        ..BridgeOptions::default()
    });
    let mut enc = Encoder::new(1, 1);
    rig.learn_udp_peer(&mut enc);
    let hb = encode(&mut enc, &heartbeat());
    let odometry = encode(&mut enc, &mav::ODOMETRY_DATA::default());
    let mut d = odometry.clone();
    d.extend_from_slice(&hb);
    d.extend_from_slice(&odometry);
    rig.send_datagram(&d);
    let got = rig.stream_bytes(hb.len() + 1, Duration::from_millis(800));
    assert_eq!(got, hb);
    let s = rig.bridge.stats().backward;
    assert_eq!((s.filtered, s.units_out), (2, 1), "{s:?}");
}

#[test]
fn a_paced_stream_side_moves_at_the_line_rate_and_drops_beyond_its_backlog() {
    // 9600 baud: 960 bytes/s. 30 heartbeats of 21 bytes (630 B) with room for 400 B waiting.
    let mut rig = Rig::start(BridgeOptions {
        stream_baud: Some(9600),
        stream_backlog_bytes: 400,
        ..BridgeOptions::default()
    });
    let mut enc = Encoder::new(1, 1);
    rig.learn_udp_peer(&mut enc);
    let frames: Vec<Vec<u8>> = (0..30).map(|_| encode(&mut enc, &heartbeat())).collect();
    for f in &frames {
        rig.send_datagram(f);
    }
    // Read until a quiet spell, noting when the first and the last bytes came.
    let mut got = Vec::new();
    let (mut first, mut last) = (None, Instant::now());
    let mut buf = [0u8; 4096];
    let give_up = Instant::now() + Duration::from_secs(5);
    while Instant::now() < give_up && last.elapsed() < Duration::from_millis(300) {
        match rig.tcp.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                got.extend_from_slice(&buf[..n]);
                last = Instant::now();
                first.get_or_insert(last);
            }
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(e) => panic!("tcp read: {e}"),
        }
    }
    let s = rig
        .stats_when(|s| s.backward.units_out + s.backward.throttled >= 30)
        .backward;
    let len = frames[0].len();
    let passed = got.len() / len;
    assert_eq!(got.len() % len, 0, "whole frames only");
    assert_eq!(passed as u64, s.units_out, "{s:?}");
    assert_eq!(s.units_out + s.throttled, 30, "{s:?}");
    assert!(s.throttled >= 5, "the backlog overflowed: {s:?}");
    assert!(passed >= 15, "{s:?}");
    // Whole frames of the ones sent, in the order sent, the first at once. Which later ones
    // the backlog dropped depends on how the datagrams were spread over the bridge's reads
    // (a loaded machine delivers them in several batches), so only the order is fixed.
    let indices: Vec<usize> = got
        .chunks(len)
        .map(|c| {
            frames
                .iter()
                .position(|f| f[..] == *c)
                .expect("a frame that was sent")
        })
        .collect();
    assert_eq!(indices[0], 0, "{indices:?}");
    assert!(
        indices.windows(2).all(|w| w[0] < w[1]),
        "in order: {indices:?}"
    );
    // What passed took its line time (the first frame went at once): ~22 ms a frame.
    let took = last - first.expect("bytes came");
    let line_time = Duration::from_secs_f64(((passed - 1) * len) as f64 / 960.0);
    assert!(took >= line_time.mul_f64(0.9), "{took:?} < {line_time:?}");
    assert!(
        took <= line_time.mul_f64(1.5) + Duration::from_millis(50),
        "{took:?}"
    );
}

/// A paced stream side whose reader is slower than the line (QEMU's UART on a busy host: one
/// byte per main-loop turn) is flow-controlled: what the reader cannot take is dropped whole at
/// the bridge, and what arrives is fresh. Without it the frames queue in the link and the
/// kernel, and each one read is older than the last (seconds within a few seconds).
/// A frame as a slow reader got it: when (µs since the flood began), its id and payload.
struct ReadFrame {
    at_us: u32,
    msgid: u32,
    payload: Vec<u8>,
}

/// A paced stream side (230 400 baud: 23 KB/s) read by a reader at 10 KB/s, while the UDP
/// side is flooded with `frames(enc, i, t_us)` for each of 2000 turns a second (the datagrams
/// of turn `i`, `t_us` µs after the flood began) for 3 s. Every frame the reader got, the
/// datagrams sent, and the bridge's figures toward the reader.
fn through_a_slow_reader(
    frames: impl Fn(&mut Encoder, u64, u32) -> Vec<Vec<u8>> + Send + 'static,
) -> (Vec<ReadFrame>, u64, DirectionStats) {
    let udp = UdpSocket::bind("127.0.0.1:0").unwrap();
    let to = format!("udpout:127.0.0.1:{}", udp.local_addr().unwrap().port());
    let b = bridge(
        &"tcpin:127.0.0.1:0".parse().unwrap(),
        &to.parse().unwrap(),
        BridgeOptions {
            stream_baud: Some(230_400),
            ..BridgeOptions::default()
        },
    )
    .expect("start the bridge");
    // The reader's receive buffer is as small as the kernel allows (as the firmware tests
    // give QEMU): the TCP window cannot hide the lag either.
    let mut reader = {
        use socket2::{Domain, Protocol, Socket, Type};
        let s = Socket::new(Domain::IPV4, Type::STREAM, Some(Protocol::TCP)).unwrap();
        s.set_recv_buffer_size(1024).unwrap();
        s.connect(&b.from_local_addr().unwrap().into()).unwrap();
        TcpStream::from(s)
    };
    reader
        .set_read_timeout(Some(Duration::from_millis(50)))
        .unwrap();
    let t0 = Instant::now();
    let bridge_udp = b.to_local_addr().unwrap();
    let bridge_udp = SocketAddr::from(([127, 0, 0, 1], bridge_udp.port()));
    let sender = thread::spawn(move || {
        let mut enc = Encoder::new(1, 1);
        let (mut turns, mut sent) = (0u64, 0u64);
        while t0.elapsed() < Duration::from_secs(3) {
            let due = (t0.elapsed().as_secs_f64() * 2000.0) as u64;
            while turns < due {
                let t_us = t0.elapsed().as_micros() as u32;
                for d in frames(&mut enc, turns, t_us) {
                    udp.send_to(&d, bridge_udp).unwrap();
                    sent += 1;
                }
                turns += 1;
            }
            thread::sleep(Duration::from_millis(1));
        }
        sent
    });
    // The slow reader: 10 KB/s on average (its budget follows the clock, so a late turn reads
    // more), at most 256 bytes a read.
    let mut decoder = nexus_core::frame::Decoder::new();
    let mut got = Vec::new();
    let mut buf = [0u8; 256];
    let mut read = 0usize;
    while t0.elapsed() < Duration::from_millis(3500) {
        thread::sleep(Duration::from_millis(10));
        let budget = (t0.elapsed().as_secs_f64() * 10_000.0) as usize;
        let want = budget.saturating_sub(read).min(buf.len());
        if want == 0 {
            continue;
        }
        let n = match reader.read(&mut buf[..want]) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => 0,
            Err(e) => panic!("tcp read: {e}"),
        };
        read += n;
        let at_us = t0.elapsed().as_micros() as u32;
        let mut input = &buf[..n];
        while !input.is_empty() {
            let (used, frame) = decoder.feed(input);
            if let Some(f) = frame {
                got.push(ReadFrame {
                    at_us,
                    msgid: f.header.msgid,
                    payload: f.payload.to_vec(),
                });
            }
            input = &input[used..];
        }
    }
    let sent = sender.join().unwrap();
    let s = b.stats().backward;
    assert_eq!(decoder.stats().crc_errors, 0, "whole frames only: {s:?}");
    (got, sent, s)
}

#[test]
fn a_paced_stream_side_with_a_slow_reader_drops_frames_rather_than_delaying_them() {
    // Heartbeats carrying their send time (µs since the flood began) in custom_mode, 2000 a
    // second: 42 KB/s, nearly twice the line.
    let (got, sent, s) = through_a_slow_reader(|enc, _, t_us| {
        let mut hb = heartbeat();
        hb.custom_mode = t_us;
        vec![encode(enc, &hb)]
    });
    assert!(
        s.throttled > sent / 4,
        "the bridge dropped what the reader could not take: {s:?}"
    );
    assert!(
        got.len() > 500,
        "{} frames read of {sent}: {s:?}",
        got.len()
    );
    // Past the first second (the buffers filled), every frame read is under a second old
    // (measured: 0.23 s with the flow control; 2.5 s and growing without it).
    let worst_ms = got
        .iter()
        .filter(|f| f.at_us > 1_000_000)
        .map(|f| {
            let sent_us = u32::from_le_bytes(f.payload[..4].try_into().unwrap());
            f.at_us.saturating_sub(sent_us) / 1000
        })
        .max()
        .unwrap();
    println!(
        "{} of {sent} frames read, the oldest {worst_ms} ms old; {s:?}",
        got.len()
    );
    assert!(
        worst_ms < 600,
        "a frame {worst_ms} ms old: the lag grew: {s:?}"
    );
}

/// The vehicle's bursts end with its replies (PX4 and the simulated vehicle send a turn's
/// telemetry, then what answers the client): a reader that stays slower than the line must
/// still get every reply, with telemetry dropped in their place.
#[test]
fn a_slow_reader_of_a_paced_stream_side_loses_telemetry_not_replies() {
    // Each turn: a burst of ten heartbeats (210 B); every 20th turn a COMMAND_ACK after them,
    // numbered in result_param2: 300 replies in the 3 s
    // (measured: all 300 read; 2 when a full backlog dropped whatever came last).
    let (got, sent, s) = through_a_slow_reader(|enc, i, _| {
        let mut burst: Vec<Vec<u8>> = (0..10).map(|_| encode(enc, &heartbeat())).collect();
        if i % 20 == 0 {
            let ack = mav::COMMAND_ACK_DATA {
                command: mav::MavCmd::MAV_CMD_COMPONENT_ARM_DISARM,
                result: mav::MavResult::MAV_RESULT_ACCEPTED,
                result_param2: (i / 20) as i32,
                ..Default::default()
            };
            burst.push(encode(enc, &ack));
        }
        burst
    });
    let acks: Vec<i32> = got
        .iter()
        .filter(|f| f.msgid == 77)
        .map(|f| {
            // result_param2 at bytes 4..8 (MAVLink 2 trims the payload's trailing zeros).
            let mut p = f.payload.clone();
            p.resize(10, 0);
            i32::from_le_bytes(p[4..8].try_into().unwrap())
        })
        .collect();
    let heartbeats = got.iter().filter(|f| f.msgid == 0).count();
    println!(
        "{} replies and {heartbeats} heartbeats read of {sent} frames; {s:?}",
        acks.len()
    );
    assert!(
        s.throttled > sent / 2,
        "most of the flood could not be carried: {s:?}"
    );
    assert!(heartbeats > 300, "{heartbeats} heartbeats: {s:?}");
    // The flood ends at 3 s and the reader stops at 3.5 s: the last replies may still wait.
    let expected: Vec<i32> = (0..acks.len() as i32).collect();
    assert_eq!(acks, expected, "replies lost or out of order: {s:?}");
    assert!(
        acks.len() >= 290,
        "{} of 300 replies read: {s:?}",
        acks.len()
    );
}

#[test]
fn a_lost_tcp_server_ends_the_bridge_with_an_error() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let from = format!("tcp:127.0.0.1:{port}");
    let b = bridge(
        &from.parse().unwrap(),
        &"udpin:127.0.0.1:0".parse().unwrap(),
        BridgeOptions::default(),
    )
    .expect("start");
    let (conn, _) = listener.accept().unwrap();
    drop(conn);
    let until = Instant::now() + Duration::from_secs(5);
    while b.is_running() && Instant::now() < until {
        thread::sleep(Duration::from_millis(10));
    }
    assert!(!b.is_running(), "the bridge noticed the server leaving");
    match b.stop() {
        Err(BridgeError::Lost { conn, .. }) => assert_eq!(conn.to_string(), from),
        other => panic!("{other:?}"),
    }
}

#[test]
fn options_out_of_range_and_unopenable_links_are_errors_at_start() {
    let r = bridge(
        &"tcpin:127.0.0.1:0".parse().unwrap(),
        &"udpin:127.0.0.1:0".parse().unwrap(),
        BridgeOptions {
            stream_baud: Some(0),
            ..BridgeOptions::default()
        },
    );
    assert!(matches!(r, Err(BridgeError::InvalidOption(_))), "{r:?}");
    let taken = UdpSocket::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let r = bridge(
        &"tcpin:127.0.0.1:0".parse().unwrap(),
        &format!("udpin:127.0.0.1:{port}").parse().unwrap(),
        BridgeOptions::default(),
    );
    match r {
        Err(e @ BridgeError::Open(_)) => assert!(e.to_string().contains("in use"), "{e}"),
        other => panic!("{other:?}"),
    }
}

/// A `udpin` side latches the first source of a heartbeat (here a ground station's) for the
/// life of the bridge: a later sender's datagrams are counted, never forwarded, and what the
/// stream side sends goes to the latched peer only.
#[test]
fn a_udpin_side_latches_its_first_heartbeat_and_ignores_everyone_else() {
    let b = bridge(
        &"tcpin:127.0.0.1:0".parse().unwrap(),
        &"udpin:127.0.0.1:0".parse().unwrap(),
        BridgeOptions::default(),
    )
    .expect("start");
    let mut tcp = TcpStream::connect(b.from_local_addr().unwrap()).unwrap();
    tcp.set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    let udp_side = b.to_local_addr().unwrap();
    let udp_side = SocketAddr::from(([127, 0, 0, 1], udp_side.port()));
    let gcs = UdpSocket::bind("127.0.0.1:0").unwrap();
    let intruder = UdpSocket::bind("127.0.0.1:0").unwrap();
    for s in [&gcs, &intruder] {
        s.set_read_timeout(Some(Duration::from_millis(300)))
            .unwrap();
    }
    let mut enc = Encoder::new(255, 190);
    let gcs_hb = encode(
        &mut enc,
        &mav::HEARTBEAT_DATA {
            mavtype: mav::MavType::MAV_TYPE_GCS,
            autopilot: mav::MavAutopilot::MAV_AUTOPILOT_INVALID,
            ..heartbeat()
        },
    );
    // Noise before any heartbeat latches nothing and crosses nowhere.
    intruder.send_to(b"no heartbeat here", udp_side).unwrap();
    gcs.send_to(&gcs_hb, udp_side).unwrap();
    let mut got = vec![0u8; gcs_hb.len()];
    tcp.read_exact(&mut got).unwrap();
    assert_eq!(got, gcs_hb, "the first heartbeat crossed");
    // The intruder, even with a heartbeat, is ignored from now on.
    let mut other = Encoder::new(1, 1);
    intruder
        .send_to(&encode(&mut other, &heartbeat()), udp_side)
        .unwrap();
    let until = Instant::now() + Duration::from_secs(5);
    while b.stats().backward.ignored < 2 {
        assert!(Instant::now() < until, "{:?}", b.stats());
        thread::sleep(Duration::from_millis(5));
    }
    let mut buf = [0u8; 64];
    assert!(
        tcp.read(&mut buf).is_err(),
        "nothing of the intruder's crossed"
    );
    // The stream side's frames go to the ground station only.
    let vehicle_hb = encode(&mut other, &heartbeat());
    tcp.write_all(&vehicle_hb).unwrap();
    let mut dgram = [0u8; 300];
    let (n, _) = gcs
        .recv_from(&mut dgram)
        .expect("the peer hears the stream side");
    assert_eq!(&dgram[..n], &vehicle_hb[..]);
    assert!(intruder.recv_from(&mut dgram).is_err());
    let s = b.stop().unwrap();
    assert_eq!(s.backward.ignored, 2, "{s:?}");
}
