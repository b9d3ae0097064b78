//! The mission firmware (`firmware-examples`, bin `mission`) flies the QGroundControl box
//! mission against the simulated PX4, a hardware-in-the-loop rig in miniature:
//!
//! ```text
//! QEMU mps2-an386 ── UART0 = TCP ──▶ nexus bridge (tcpin, paced like a 230 400 baud UART,
//!   (firmware)                        only the messages the core decodes) ── UDP ──▶ SimHandle
//! ```
//!
//! The firmware must exit 0 and the vehicle must confirm the flight from its own state: the
//! mission finished, on the ground, disarmed, and in Hold — the mode the firmware's `landed`
//! reaction commanded (without it PX4 stays in Mission mode after landing). A second run puts a
//! fault injector between the bridge and QEMU that adds line noise, cut frames, corrupt and
//! undecodable frames to the UART; the firmware must still fly and exit 0. A third run has a
//! vehicle whose prearm checks never pass; the firmware must exit 1 and say why.
//!
//! The simulated vehicle runs in real time at [`SPEED`], for a short test. QEMU's UART moves one
//! byte per main-loop turn, a rate that falls with the host's load (about 25 KB/s idle, 8 KB/s
//! with these four flights on two cores, where the vehicle sends 13 KB/s): the bridge's pacing
//! is flow-controlled, so what QEMU cannot take is dropped whole at the bridge, never queued,
//! and the firmware sees a lossy line, not a late one. The firmware's timeouts count the
//! vehicle's clock, so neither the speed factor nor the host's speed changes its behaviour.
//! Everything (QEMU, injector, bridge, vehicle) is stopped by `Drop` when a test fails.

mod firmware_support;

use std::io::{ErrorKind, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::ExitStatus;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use firmware_support::{
    firmware, garbage, link_counter, require_qemu, small_window_connect, stack_high_water, Qemu,
    UART_RECV_BUFFER_BYTES,
};
use nexus_core::frame::{crc_extra, frame_crc, Decoder, Encoder, MAX_FRAME_LEN};
use nexus_core::{mav, Mode};
use nexus_host::bridge::{bridge, Bridge, BridgeOptions, BridgeStats, MsgFilter};
use nexus_host::sim::{Fault, SimConfig, SimHandle};

/// Simulator speed factor.
const SPEED: f64 = 3.0;
/// The emulated UART's pace at the bridge, bits/s (QEMU's own limit is about 250 000).
const UART_BAUD: u32 = 230_400;
/// Upper bound for one QEMU run, wall clock.
const RUN_CAP: Duration = Duration::from_secs(150);

/// QEMU, the optional fault injector, the bridge and the vehicle, stopped in that order.
struct Rig {
    qemu: Qemu,
    injector: Option<Injector>,
    bridge: Bridge,
    sim: SimHandle,
    started: Instant,
}

impl Rig {
    /// Start the vehicle (UDP ports 14701+slot / 14711+slot), the bridge listening on TCP, the
    /// injector if asked, then QEMU.
    fn start(slot: u16, noisy: bool, setup: impl FnOnce(&SimHandle)) -> Rig {
        Rig::start_bin("mission", (14701 + slot, 14711 + slot), noisy, setup)
    }

    /// [`Rig::start`] for firmware `bin`, the vehicle on UDP ports `ports`.
    fn start_bin(bin: &str, ports: (u16, u16), noisy: bool, setup: impl FnOnce(&SimHandle)) -> Rig {
        require_qemu();
        let elf = firmware(bin);
        // Instance 0 (system id 1, PX4's default, which the firmware flies), on its own ports.
        let mut cfg = SimConfig::realtime(0, SPEED);
        cfg.local_port_base = ports.0;
        cfg.remote_port_base = ports.1;
        let sim = SimHandle::start(cfg).expect("start the simulated vehicle");
        setup(&sim);
        let opts = BridgeOptions {
            stream_baud: Some(UART_BAUD),
            stream_filter: MsgFilter::CoreSubset,
            ..BridgeOptions::default()
        };
        let to = format!("udpout:127.0.0.1:{}", sim.ports().vehicle_port);
        let bridge = bridge(
            &"tcpin:127.0.0.1:0".parse().unwrap(),
            &to.parse().unwrap(),
            opts,
        )
        .expect("start the bridge");
        let mut port = bridge.from_local_addr().expect("tcpin address").port();
        let injector = noisy.then(|| Injector::start(port));
        if let Some(inj) = &injector {
            port = inj.port;
        }
        // The listener is up before QEMU starts: its first bytes are not lost.
        let qemu = Qemu::start(&elf, port);
        Rig {
            qemu,
            injector,
            bridge,
            sim,
            started: Instant::now(),
        }
    }

    /// Wait for the firmware to exit; its status and output.
    fn finish(&mut self) -> (ExitStatus, String) {
        let status = self.qemu.wait_until(self.started + RUN_CAP);
        let out = self.qemu.output();
        println!(
            "--- firmware ({:.1} s wall)",
            self.started.elapsed().as_secs_f64()
        );
        println!("{out}");
        println!("--- vehicle");
        for line in self.sim.output_log() {
            println!("{line}");
        }
        println!("--- bridge {:?}", self.bridge.stats());
        let status = status.unwrap_or_else(|| panic!("firmware still running after {RUN_CAP:?}"));
        (status, out)
    }

    fn sim_log_has(&self, text: &str) -> bool {
        self.sim.output_log().iter().any(|l| l.contains(text))
    }
}

/// What the vehicle says about the flight, from its own state and console.
fn assert_vehicle_confirms_the_flight(rig: &Rig) {
    let v = rig.sim.snapshot();
    assert!(v.mission_finished, "mission not finished: {v:?}");
    assert_eq!(v.landed_state, 1, "not on the ground: {v:?}");
    assert!(!v.armed, "still armed: {v:?}");
    assert_eq!(
        v.mode,
        Mode::Hold,
        "the landed reaction's Hold did not take: {v:?}"
    );
    assert!(v.true_height_m < 0.5, "{v:?}");
    for text in [
        "Armed by external command",
        "Takeoff detected",
        "Mission finished, landed",
        "Disarmed by landing",
    ] {
        assert!(rig.sim_log_has(text), "vehicle never said {text:?}");
    }
}

fn assert_firmware_flew(status: ExitStatus, out: &str, stats: &BridgeStats) {
    assert_eq!(status.code(), Some(0), "firmware failed:\n{out}");
    for line in [
        "mission: 6 items",
        "mission uploaded: 6 items",
        "airborne:",
        "reaction: Hold requested",
        "flight confirmed: mission complete",
        "result: success",
    ] {
        assert!(out.contains(line), "no {line:?} in:\n{out}");
    }
    assert!(
        !out.contains("panic") && !out.contains("HardFault"),
        "{out}"
    );
    let stack = stack_high_water(out).expect("stack report");
    assert!(stack < 16 * 1024, "stack high-water mark {stack}");
    // Both directions carried traffic; nothing from the firmware was garbage.
    assert!(stats.forward.units_out > 20, "{stats:?}");
    assert!(stats.backward.units_out > 1000, "{stats:?}");
    assert_eq!(stats.forward.garbage_bytes, 0, "{stats:?}");
    assert!(
        stats.backward.filtered > 0,
        "the bulk the core skips is held back: {stats:?}"
    );
}

#[test]
fn firmware_mission_flies_the_box_mission_through_the_bridge() {
    let mut rig = Rig::start(0, false, |_| {});
    let (status, out) = rig.finish();
    assert_firmware_flew(status, &out, &rig.bridge.stats());
    assert_vehicle_confirms_the_flight(&rig);
    // A clean line: every frame checked, none malformed.
    assert_eq!(link_counter(&out, "crc_errors"), 0, "{out}");
    assert_eq!(link_counter(&out, "malformed"), 0, "{out}");
}

/// The same flight by the embassy firmware (one embassy-executor task over the async UART),
/// its vehicle on ports 14708 / 14748 (instances 168 of the tokio tests' range).
#[test]
fn firmware_mission_embassy_flies_the_box_mission_through_the_bridge() {
    let mut rig = Rig::start_bin("mission_embassy", (14708, 14748), false, |_| {});
    let (status, out) = rig.finish();
    assert!(out.contains("embassy task"), "{out}");
    assert_firmware_flew(status, &out, &rig.bridge.stats());
    assert_vehicle_confirms_the_flight(&rig);
    assert_eq!(link_counter(&out, "crc_errors"), 0, "{out}");
    assert_eq!(link_counter(&out, "malformed"), 0, "{out}");
}

#[test]
fn firmware_mission_survives_a_malformed_frame_stream_on_its_uart() {
    let mut rig = Rig::start(1, true, |_| {});
    let (status, out) = rig.finish();
    let injected = rig.injector.as_ref().expect("injector").report();
    println!("--- injected {injected:?}");
    assert_firmware_flew(status, &out, &rig.bridge.stats());
    assert_vehicle_confirms_the_flight(&rig);
    assert!(injected.noise_bytes >= 1000, "{injected:?}");
    assert!(
        injected.cut + injected.corrupt + injected.undecodable >= 30,
        "{injected:?}"
    );
    // The firmware saw the faults and skipped them.
    assert!(
        link_counter(&out, "crc_errors") as u64 >= injected.corrupt,
        "{out}"
    );
    assert!(link_counter(&out, "malformed") as u64 >= 1, "{out}");
    assert!(
        link_counter(&out, "dropped_bytes") as u64 >= injected.noise_bytes / 2,
        "{out}"
    );
}

#[test]
fn firmware_mission_fails_with_a_reason_when_the_vehicle_never_becomes_armable() {
    // PX4's prearm checks fail for good: the core never sends the arm (it waits for a
    // failure-free vehicle), so the climb wait times out on the vehicle's clock.
    let mut rig = Rig::start(2, false, |sim| {
        sim.inject(Fault::RefuseArming {
            text: "Arming denied: Resolve system health failures first".into(),
        })
        .expect("inject the arming refusal");
    });
    let (status, out) = rig.finish();
    assert_eq!(status.code(), Some(1), "{out}");
    assert!(
        out.contains("result: failure: the vehicle did not take off"),
        "{out}"
    );
    // Sixty vehicle seconds, judged on the first frame at or past them: on a busy host the
    // paced line drops frames, so that frame may come some tens of ms late.
    let waited_ms: u32 = out
        .split("climb wait ended: timeout after ")
        .nth(1)
        .and_then(|rest| rest.split(" ms").next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no climb timeout in:\n{out}"));
    assert!((60_000..61_000).contains(&waited_ms), "{out}");
    assert!(
        out.contains("arm not sent: the vehicle is not failure-free yet")
            && out.contains("prearm checks failing"),
        "the log says why:\n{out}"
    );
    assert!(
        !out.contains("panic") && !out.contains("HardFault"),
        "{out}"
    );
    let v = rig.sim.snapshot();
    assert!(
        !v.armed && !v.mission_finished && v.true_height_m < 0.1,
        "{v:?}"
    );
    // Sixty vehicle seconds at the speed factor, not sixty wall seconds.
    let wall = rig.started.elapsed();
    assert!(
        wall < Duration::from_secs_f64(60.0 / SPEED + 20.0),
        "{wall:?}"
    );
}

/// What the injector added to the UART.
#[derive(Debug, Default, Clone, Copy)]
struct Injected {
    frames: u64,
    noise_bytes: u64,
    cut: u64,
    corrupt: u64,
    undecodable: u64,
}

/// A TCP proxy between the bridge and QEMU that spoils the bridge→QEMU byte stream: between
/// whole frames (so no real frame is lost) it adds noise full of false start bytes, frames cut
/// short, frames with a broken checksum and frames whose payload does not decode.
struct Injector {
    port: u16,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    injected: Arc<Mutex<Injected>>,
}

impl Injector {
    fn start(bridge_port: u16) -> Injector {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the injector");
        let port = listener.local_addr().unwrap().port();
        listener.set_nonblocking(true).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let injected = Arc::new(Mutex::new(Injected::default()));
        let (stop2, injected2) = (stop.clone(), injected.clone());
        let thread = thread::spawn(move || {
            let Some(qemu) = accept(&listener, &stop2) else {
                return;
            };
            // Small buffers on both hops, as on UART0's own socket (firmware_support): a QEMU
            // that falls behind pushes back to the bridge's flow control, through the proxy.
            let _ = socket2::SockRef::from(&qemu).set_send_buffer_size(UART_RECV_BUFFER_BYTES);
            let bridge = small_window_connect(bridge_port).into();
            proxy(qemu, bridge, &stop2, &injected2);
        });
        Injector {
            port,
            stop,
            thread: Some(thread),
            injected,
        }
    }

    fn report(&self) -> Injected {
        *self.injected.lock().unwrap()
    }
}

impl Drop for Injector {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn accept(listener: &TcpListener, stop: &AtomicBool) -> Option<TcpStream> {
    while !stop.load(Ordering::SeqCst) {
        match listener.accept() {
            Ok((s, _)) => return Some(s),
            Err(e) if e.kind() == ErrorKind::WouldBlock => thread::sleep(Duration::from_millis(2)),
            Err(e) => panic!("injector accept: {e}"),
        }
    }
    None
}

/// Bytes the proxy holds for QEMU before it stops reading the bridge (QEMU is behind).
const PROXY_HOLD_BYTES: usize = 512;

/// Non-blocking copy both ways until either side closes or `stop` is set.
fn proxy(qemu: TcpStream, bridge: TcpStream, stop: &AtomicBool, injected: &Mutex<Injected>) {
    for s in [&qemu, &bridge] {
        s.set_nonblocking(true).unwrap();
        s.set_nodelay(true).unwrap();
    }
    let (mut qemu, mut bridge) = (qemu, bridge);
    let mut spoiler = Spoiler::new();
    let mut to_qemu: Vec<u8> = garbage(300, 11); // noise before the first frame
    spoiler.stats.noise_bytes += 300;
    let mut to_bridge: Vec<u8> = Vec::new();
    let mut buf = [0u8; 4096];
    while !stop.load(Ordering::SeqCst) {
        let mut idle = true;
        // While QEMU is behind, the bridge is not read: its flow control holds the frames.
        if to_qemu.len() < PROXY_HOLD_BYTES {
            match bridge.read(&mut buf) {
                Ok(0) => return,
                Ok(n) => {
                    idle = false;
                    spoiler.push(&buf[..n], &mut to_qemu);
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => {}
                Err(_) => return,
            }
        }
        match qemu.read(&mut buf) {
            Ok(0) => return,
            Ok(n) => {
                idle = false;
                to_bridge.extend_from_slice(&buf[..n]);
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => {}
            Err(_) => return,
        }
        for (out, sock) in [(&mut to_qemu, &mut qemu), (&mut to_bridge, &mut bridge)] {
            if out.is_empty() {
                continue;
            }
            match sock.write(out) {
                Ok(n) => {
                    idle = false;
                    out.drain(..n);
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => {}
                Err(_) => return,
            }
        }
        *injected.lock().unwrap() = spoiler.stats;
        if idle {
            thread::sleep(Duration::from_millis(1));
        }
    }
}

/// Finds the frame boundaries of the bridge's (clean) stream and adds the faults there.
struct Spoiler {
    decoder: Decoder,
    window: Vec<u8>,
    enc: Encoder,
    stats: Injected,
}

impl Spoiler {
    fn new() -> Spoiler {
        Spoiler {
            decoder: Decoder::new(),
            window: Vec::new(),
            // Posing as the autopilot: its faults must not pass for someone else's frames.
            enc: Encoder::new(1, 1),
            stats: Injected::default(),
        }
    }

    fn push(&mut self, mut input: &[u8], out: &mut Vec<u8>) {
        loop {
            let (used, frame) = self.decoder.feed(input);
            let done = frame.is_some();
            self.window.extend_from_slice(&input[..used]);
            input = &input[used..];
            if done {
                // The bridge writes whole checked frames only: the window is exactly one.
                self.stats.frames += 1;
                self.spoil(out);
                out.append(&mut self.window);
            } else if input.is_empty() {
                return;
            }
        }
    }

    /// Faults before frame number `self.stats.frames`.
    fn spoil(&mut self, out: &mut Vec<u8>) {
        let n = self.stats.frames;
        if n % 10 == 0 {
            let noise = garbage(16 + (n % 25) as usize, n as u32);
            self.stats.noise_bytes += noise.len() as u64;
            out.extend_from_slice(&noise);
        }
        if n % 25 == 0 {
            // The start of this very frame, cut short: the real copy follows at once.
            let cut = &self.window[..self.window.len() / 2];
            out.extend_from_slice(cut);
            self.stats.cut += 1;
        }
        if n % 40 == 0 {
            let mut bad = self.window.clone();
            let last = bad.len() - 1;
            bad[last] ^= 0x5A;
            out.extend_from_slice(&bad);
            self.stats.corrupt += 1;
        }
        if n % 50 == 0 {
            out.extend_from_slice(&self.undecodable_heartbeat());
            self.stats.undecodable += 1;
        }
    }

    /// A HEARTBEAT with a valid checksum whose `type` is out of range: it frames, does not
    /// decode.
    fn undecodable_heartbeat(&mut self) -> Vec<u8> {
        let hb = mav::HEARTBEAT_DATA {
            custom_mode: 0,
            mavtype: mav::MavType::MAV_TYPE_QUADROTOR,
            autopilot: mav::MavAutopilot::MAV_AUTOPILOT_PX4,
            base_mode: mav::MavModeFlag::empty(),
            system_status: mav::MavState::MAV_STATE_STANDBY,
            mavlink_version: 3,
        };
        let mut f = [0u8; MAX_FRAME_LEN];
        let n = self.enc.encode(&hb, &mut f).expect("frame fits");
        let payload_len = f[1] as usize;
        f[10 + 4] = 250; // payload: custom_mode u32, then type
        let crc = frame_crc(&f[1..10 + payload_len], crc_extra(0).unwrap());
        f[10 + payload_len..12 + payload_len].copy_from_slice(&crc.to_le_bytes());
        f[..n].to_vec()
    }
}
