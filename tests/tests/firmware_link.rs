//! The bring-up firmware (`firmware-examples`, bin `link_check`) on QEMU's mps2-an386, with this
//! test playing a PX4-like autopilot on the other end of its UART.
//!
//! QEMU connects the emulated UART0 to a TCP socket this test listens on (the listener is up
//! before QEMU starts: bytes sent before the connection would be lost). The firmware's
//! semihosting output arrives on QEMU's stdout, and its exit status (0 success, 1 failure)
//! becomes QEMU's. QEMU is killed when a test fails, by [`Qemu`]'s `Drop`
//! (`firmware_support` has the QEMU plumbing and its requirements).

mod firmware_support;

use std::io::{ErrorKind, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::ExitStatus;
use std::thread;
use std::time::{Duration, Instant};

use firmware_support::{firmware, garbage, link_counter, require_qemu, Qemu};

use mavlink::MessageData;
use nexus_core::frame::{crc_extra, frame_crc, Decoder, Encoder};
use nexus_core::mav;

/// The firmware's own HEARTBEAT/COMMAND ids (see link_check.rs).
const FW_SYSID: u8 = 255;
const FW_COMPID: u8 = 240;
/// The autopilot this test plays.
const AP_SYSID: u8 = 1;
const AP_COMPID: u8 = 1;
/// The firmware gives up after 5 s of its own clock; QEMU boots in well under a second.
const FIRMWARE_TIMEOUT: Duration = Duration::from_secs(5);
/// Upper bound for any one QEMU run in these tests.
const RUN_CAP: Duration = Duration::from_secs(30);

/// Listen, start QEMU with firmware `bin`, accept its connection.
fn launch(bin: &str) -> (Qemu, TcpStream) {
    require_qemu();
    let elf = firmware(bin);
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind a local port");
    let port = listener.local_addr().unwrap().port();
    listener.set_nonblocking(true).unwrap();
    let mut qemu = Qemu::start(&elf, port);
    let deadline = Instant::now() + Duration::from_secs(10);
    let stream = loop {
        match listener.accept() {
            Ok((s, _)) => break s,
            Err(e) if e.kind() == ErrorKind::WouldBlock => {
                if let Some(status) = qemu.exited() {
                    panic!(
                        "QEMU exited ({status}) before connecting:\n{}",
                        qemu.output()
                    );
                }
                assert!(
                    Instant::now() < deadline,
                    "QEMU did not connect within 10 s:\n{}",
                    qemu.output()
                );
                thread::sleep(Duration::from_millis(5));
            }
            Err(e) => panic!("accept: {e}"),
        }
    };
    stream.set_nonblocking(false).unwrap();
    stream.set_nodelay(true).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_millis(20)))
        .unwrap();
    (qemu, stream)
}

/// Frames the firmware sent, as far as this test cares.
#[derive(Default, Debug)]
struct Seen {
    heartbeats: u32,
    requests: u32,
}

/// The autopilot side: frames out, frames in, answers to REQUEST_MESSAGE.
struct Peer {
    stream: TcpStream,
    enc: Encoder,
    decoder: Decoder,
    boot: Instant,
    seen: Seen,
    /// Whether REQUEST_MESSAGE gets its COMMAND_ACK (PX4 always answers).
    answer_requests: bool,
}

impl Peer {
    fn new(stream: TcpStream) -> Peer {
        Peer {
            stream,
            enc: Encoder::new(AP_SYSID, AP_COMPID),
            decoder: Decoder::new(),
            boot: Instant::now(),
            seen: Seen::default(),
            answer_requests: true,
        }
    }

    fn frame<M: MessageData>(&mut self, msg: &M) -> Vec<u8> {
        let mut buf = [0u8; 280];
        let n = self.enc.encode(msg, &mut buf).expect("frame fits");
        buf[..n].to_vec()
    }

    fn send(&mut self, bytes: &[u8]) {
        // The firmware may already have exited and QEMU closed the socket.
        let _ = self.stream.write_all(bytes);
    }

    fn heartbeat() -> mav::HEARTBEAT_DATA {
        mav::HEARTBEAT_DATA {
            custom_mode: 0x0400_0000, // PX4 AUTO.LOITER (main 4, sub 3)
            mavtype: mav::MavType::MAV_TYPE_QUADROTOR,
            autopilot: mav::MavAutopilot::MAV_AUTOPILOT_PX4,
            base_mode: mav::MavModeFlag::MAV_MODE_FLAG_CUSTOM_MODE_ENABLED,
            system_status: mav::MavState::MAV_STATE_STANDBY,
            mavlink_version: 3,
        }
    }

    fn system_time(&self) -> mav::SYSTEM_TIME_DATA {
        mav::SYSTEM_TIME_DATA {
            time_unix_usec: 0,
            time_boot_ms: self.boot.elapsed().as_millis() as u32,
        }
    }

    fn statustext(text: &str) -> mav::STATUSTEXT_DATA {
        mav::STATUSTEXT_DATA {
            severity: mav::MavSeverity::MAV_SEVERITY_INFO,
            text: text.into(),
            id: 0,
            chunk_seq: 0,
        }
    }

    /// Read what the firmware sent; answer its requests as PX4 would.
    fn pump_rx(&mut self) {
        let mut buf = [0u8; 512];
        let n = match self.stream.read(&mut buf) {
            Ok(n) => n,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => return,
            Err(_) => return, // QEMU went away; the exit status tells why
        };
        let mut input = &buf[..n];
        let mut replies = Vec::new();
        while !input.is_empty() {
            let (used, frame) = self.decoder.feed(input);
            input = &input[used..];
            let Some(raw) = frame else { continue };
            let h = raw.header;
            if h.sysid != FW_SYSID || h.compid != FW_COMPID {
                continue;
            }
            if h.msgid == mav::HEARTBEAT_DATA::ID {
                self.seen.heartbeats += 1;
            } else if h.msgid == mav::COMMAND_LONG_DATA::ID {
                let cmd = mav::COMMAND_LONG_DATA::deser(mavlink::MavlinkVersion::V2, raw.payload)
                    .expect("firmware's COMMAND_LONG decodes");
                assert_eq!(cmd.command, mav::MavCmd::MAV_CMD_REQUEST_MESSAGE);
                assert_eq!(cmd.param1 as u32, mav::SYSTEM_TIME_DATA::ID);
                assert_eq!(
                    (cmd.target_system, cmd.target_component),
                    (AP_SYSID, AP_COMPID)
                );
                self.seen.requests += 1;
                if !self.answer_requests {
                    continue;
                }
                replies.push(mav::COMMAND_ACK_DATA {
                    command: cmd.command,
                    result: mav::MavResult::MAV_RESULT_ACCEPTED,
                    progress: 0,
                    result_param2: 0,
                    target_system: h.sysid,
                    target_component: h.compid,
                });
            }
        }
        for ack in replies {
            let bytes = self.frame(&ack);
            self.send(&bytes);
            let st = self.system_time();
            let bytes = self.frame(&st);
            self.send(&bytes);
        }
    }
}

/// A HEARTBEAT whose `type` byte is out of range, with a valid checksum: it frames, but does
/// not decode.
fn undecodable_heartbeat(peer: &mut Peer) -> Vec<u8> {
    let mut f = peer.frame(&Peer::heartbeat());
    let payload_len = f[1] as usize;
    f[10 + 4] = 250; // HEARTBEAT payload: custom_mode u32, then type
    let crc = frame_crc(&f[1..10 + payload_len], crc_extra(0).unwrap());
    f[10 + payload_len..12 + payload_len].copy_from_slice(&crc.to_le_bytes());
    f
}

/// Stream telemetry with noise between frames (HEARTBEAT and SYSTEM_TIME at 10 Hz, a
/// STATUSTEXT every half second) and answer the firmware, until QEMU exits.
fn play_autopilot(qemu: &mut Qemu, peer: &mut Peer, deadline: Instant) -> ExitStatus {
    let mut tick = 0u32;
    let mut next_tick = Instant::now();
    let status = loop {
        if let Some(status) = qemu.exited() {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "firmware still running after {RUN_CAP:?}:\n{}",
            qemu.output()
        );
        if Instant::now() >= next_tick {
            next_tick += Duration::from_millis(100);
            tick += 1;
            let hb = peer.frame(&Peer::heartbeat());
            let st = peer.system_time();
            let st = peer.frame(&st);
            peer.send(&hb);
            peer.send(&garbage(40, tick));
            peer.send(&st);
            if tick % 5 == 1 {
                let t = peer.frame(&Peer::statustext("nexus peer: link test"));
                peer.send(&t);
            }
        }
        peer.pump_rx();
    };
    qemu.wait_until(deadline).unwrap_or(status)
}

#[test]
fn firmware_link_check_passes_against_a_px4_like_peer_on_a_noisy_line() {
    let (mut qemu, stream) = launch("link_check");
    let mut peer = Peer::new(stream);
    let started = Instant::now();
    let deadline = started + RUN_CAP;

    // Noise before anything real, then a frame cut short by the next real one.
    peer.send(&garbage(300, 7));
    let hb = peer.frame(&Peer::heartbeat());
    peer.send(&hb[..hb.len() / 2]);
    let bad = undecodable_heartbeat(&mut peer);
    peer.send(&bad);
    // A frame with a broken checksum and one from another system must not count either.
    let mut corrupt = peer.frame(&Peer::heartbeat());
    let last = corrupt.len() - 1;
    corrupt[last] ^= 0x55;
    peer.send(&corrupt);
    let mut other = Encoder::new(42, 1);
    let mut buf = [0u8; 280];
    let n = other.encode(&Peer::heartbeat(), &mut buf).unwrap();
    peer.send(&buf[..n]);

    let status = play_autopilot(&mut qemu, &mut peer, deadline);
    let out = qemu.output();
    println!("{out}");

    assert_eq!(status.code(), Some(0), "firmware failed:\n{out}");
    assert!(out.contains("result: success"), "{out}");
    assert!(
        peer.seen.heartbeats >= 1,
        "no HEARTBEAT from the firmware: {:?}",
        peer.seen
    );
    assert!(
        peer.seen.requests >= 1,
        "no REQUEST_MESSAGE: {:?}",
        peer.seen
    );
    // The line noise was seen and survived: checksum failures and undecodable frames counted.
    assert!(link_counter(&out, "crc_errors") >= 1, "{out}");
    assert!(link_counter(&out, "malformed") >= 1, "{out}");
    assert!(link_counter(&out, "dropped_bytes") >= 300, "{out}");
    assert!(out.contains("stack: high-water mark"), "{out}");
    assert!(
        started.elapsed() < FIRMWARE_TIMEOUT,
        "link check took {:?}",
        started.elapsed()
    );
}

#[test]
fn firmware_link_check_fails_when_the_peer_stays_silent() {
    let (mut qemu, stream) = launch("link_check");
    let mut peer = Peer::new(stream);
    let started = Instant::now();
    let bound = started + FIRMWARE_TIMEOUT + Duration::from_secs(5);
    while qemu.exited().is_none() && Instant::now() < bound {
        peer.pump_rx(); // listen only
    }
    let status = qemu.wait_until(bound);
    let out = qemu.output();
    println!("{out}");
    let status = status.unwrap_or_else(|| panic!("firmware did not give up in time:\n{out}"));
    assert_eq!(status.code(), Some(1), "{out}");
    assert!(
        out.contains("result: failure: no heartbeat from the autopilot"),
        "{out}"
    );
    assert!(
        started.elapsed() >= FIRMWARE_TIMEOUT - Duration::from_millis(500),
        "gave up too early: {:?}",
        started.elapsed()
    );
    assert!(
        peer.seen.heartbeats >= 3,
        "the firmware should keep sending HEARTBEAT while it waits: {:?}",
        peer.seen
    );
    assert_eq!(peer.seen.requests, 0, "no request before a peer is heard");
}

#[test]
fn firmware_link_check_fails_when_the_autopilot_never_acknowledges() {
    let (mut qemu, stream) = launch("link_check");
    let mut peer = Peer::new(stream);
    peer.answer_requests = false;
    let status = play_autopilot(&mut qemu, &mut peer, Instant::now() + RUN_CAP);
    let out = qemu.output();
    println!("{out}");
    assert_eq!(status.code(), Some(1), "{out}");
    assert!(out.contains("result: failure: link incomplete"), "{out}");
    // Asked again every second until the end.
    assert!(peer.seen.requests >= 4, "{:?}", peer.seen);
}

#[test]
fn firmware_survives_a_flood_of_line_noise() {
    let (mut qemu, mut stream) = launch("link_check");
    let started = Instant::now();
    let bound = started + FIRMWARE_TIMEOUT + Duration::from_secs(5);
    // More noise than the receive queue holds many times over, full of false start bytes.
    let noise = garbage(16 * 1024, 99);
    stream
        .set_write_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    for chunk in noise.chunks(4096) {
        if stream.write_all(chunk).is_err() || qemu.exited().is_some() {
            break;
        }
    }
    let status = qemu.wait_until(bound);
    let out = qemu.output();
    println!("{out}");
    let status = status.unwrap_or_else(|| panic!("firmware did not finish in time:\n{out}"));
    assert_eq!(status.code(), Some(1), "{out}");
    assert!(
        out.contains("result: failure: no heartbeat from the autopilot"),
        "noise must end in the ordinary timeout, not a crash:\n{out}"
    );
    assert!(
        !out.contains("panic") && !out.contains("HardFault"),
        "{out}"
    );
    // Every byte reached the decoder (at most one partial frame still buffered): the UART
    // path loses nothing under a flood.
    assert!(
        link_counter(&out, "dropped_bytes") as usize >= noise.len() - 280,
        "{out}"
    );
}

/// Byte `i` of the stream `uart_selftest` expects (same function as in the firmware).
fn selftest_pattern(i: usize) -> u8 {
    (i.wrapping_mul(7).wrapping_add(i >> 8)) as u8
}

#[test]
fn firmware_uart_pauses_reception_when_its_queue_is_full_and_loses_nothing() {
    const LEN: usize = 8 * 512; // uart_selftest's LEN (8 × RX_QUEUE_LEN)
    let (mut qemu, mut stream) = launch("uart_selftest");
    let deadline = Instant::now() + RUN_CAP;
    let mut text = Vec::new();
    let mut buf = [0u8; 256];
    let mut sent = false;
    let status = loop {
        if let Some(status) = qemu.exited() {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "uart_selftest still running:\n{}",
            qemu.output()
        );
        match stream.read(&mut buf) {
            Ok(0) => {}
            Ok(n) => text.extend_from_slice(&buf[..n]),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(e) => panic!("read: {e}"),
        }
        if !sent && text.starts_with(b"READY\n") {
            sent = true;
            let data: Vec<u8> = (0..LEN).map(selftest_pattern).collect();
            stream.write_all(&data).expect("send the pattern");
        }
    };
    let status = qemu.wait_until(deadline).unwrap_or(status);
    // Collect whatever the firmware wrote last.
    while let Ok(n) = stream.read(&mut buf) {
        if n == 0 {
            break;
        }
        text.extend_from_slice(&buf[..n]);
    }
    let out = qemu.output();
    println!("{out}");
    let text = String::from_utf8_lossy(&text);
    assert_eq!(status.code(), Some(0), "UART said {text:?}:\n{out}");
    assert!(text.contains(&format!("OK {LEN}\n")), "UART said {text:?}");
}
