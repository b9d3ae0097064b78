//! How fast the simulated PX4 runs in lockstep while serving one client at PX4's full stream
//! rates over real loopback UDP: simulated seconds per wall second.
//!
//! `cargo bench -p nexus-sim --bench sim`. The client is an in-process UDP socket on another
//! thread that receives every datagram and frames it with nexus-core's decoder. Besides
//! criterion's timing of one simulated second, the run prints the headline figure
//! ("… simulated seconds per wall second") over a 120 s flight: boot, takeoff, hover.

#![allow(missing_docs)] // criterion's macros generate undocumented items

use criterion::{criterion_group, criterion_main, Criterion};
use nexus_core::frame::{Decoder, Encoder};
use nexus_core::mav;
use nexus_sim::{SimConfig, SimHandle};
use std::net::UdpSocket;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

struct Client {
    tx: UdpSocket,
    enc: Encoder,
    frames: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Client {
    /// Bind the offboard port, speak first so the vehicle latches on, then drain forever.
    fn start(port: u16, vehicle_port: u16, sysid: u8) -> Client {
        let sock = UdpSocket::bind(("127.0.0.1", port)).expect("bind client");
        sock.set_read_timeout(Some(Duration::from_millis(50)))
            .unwrap();
        let mut enc = Encoder::new(255, 190);
        let mut b = [0u8; 280];
        let n = enc
            .encode(
                &mav::HEARTBEAT_DATA {
                    mavtype: mav::MavType::MAV_TYPE_GCS,
                    autopilot: mav::MavAutopilot::MAV_AUTOPILOT_INVALID,
                    ..Default::default()
                },
                &mut b,
            )
            .unwrap();
        let tx = sock.try_clone().unwrap();
        let frames = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (f, s) = (frames.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            let mut dec = Decoder::new();
            let mut buf = [0u8; 65536];
            let mut last_hb = Instant::now() - Duration::from_secs(1);
            while !s.load(Ordering::Relaxed) {
                if last_hb.elapsed() > Duration::from_millis(200) {
                    // A GCS heartbeat, sim-second paced at any speed worth measuring.
                    let _ = sock.send_to(&b[..n], ("127.0.0.1", vehicle_port));
                    last_hb = Instant::now();
                }
                if let Ok((len, _)) = sock.recv_from(&mut buf) {
                    let mut rest = &buf[..len];
                    loop {
                        let (used, got) = {
                            let (used, frame) = dec.feed(rest);
                            (used, frame.is_some())
                        };
                        rest = &rest[used..];
                        if got {
                            f.fetch_add(1, Ordering::Relaxed);
                        } else if rest.is_empty() {
                            break;
                        }
                    }
                }
            }
        });
        let _ = sysid;
        Client {
            tx,
            enc: Encoder::new(255, 190),
            frames,
            stop,
            thread: Some(thread),
        }
    }

    /// Wait (stepping) until the vehicle has latched onto this client.
    fn latch(&self, sim: &SimHandle) {
        let me = self.tx.local_addr().unwrap();
        while sim.client() != Some(me) {
            sim.step(10).unwrap();
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Takeoff mode, then arm, from this client.
    fn arm_takeoff(&mut self, sim: &SimHandle) {
        let mut b = [0u8; 280];
        for (cmd, p) in [
            (mav::MavCmd::MAV_CMD_DO_SET_MODE, [1.0, 4.0, 2.0]),
            (mav::MavCmd::MAV_CMD_COMPONENT_ARM_DISARM, [1.0, 0.0, 0.0]),
        ] {
            let n = self
                .enc
                .encode(
                    &mav::COMMAND_LONG_DATA {
                        param1: p[0],
                        param2: p[1],
                        param3: p[2],
                        command: cmd,
                        target_system: sim.ports().offboard.system_id,
                        target_component: 1,
                        ..Default::default()
                    },
                    &mut b,
                )
                .unwrap();
            self.tx
                .send_to(&b[..n], ("127.0.0.1", sim.ports().vehicle_port))
                .unwrap();
            sim.step(100).unwrap();
        }
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn headline() {
    let cfg = SimConfig::lockstep(90);
    let mut client = Client::start(cfg.remote_port(), cfg.local_port(), cfg.vehicle.sysid());
    let sim = SimHandle::start(cfg).unwrap();
    sim.step(1_500).unwrap();
    client.latch(&sim);
    sim.step(4_000).unwrap();
    client.arm_takeoff(&sim);
    let frames0 = client.frames.load(Ordering::Relaxed);
    let sent0 = sim.frames_sent();
    let t0 = Instant::now();
    let sim0 = sim.sim_time_ms();
    while sim.sim_time_ms() - sim0 < 120_000 {
        sim.step(1_000).unwrap();
    }
    let wall = t0.elapsed().as_secs_f64();
    let simulated = (sim.sim_time_ms() - sim0) as f64 / 1000.0;
    std::thread::sleep(Duration::from_millis(200));
    let sent = sim.frames_sent() - sent0;
    let got = client.frames.load(Ordering::Relaxed) - frames0;
    eprintln!(
        "sim lockstep: {simulated:.0} simulated s in {wall:.3} wall s = {:.0} simulated seconds per wall second \
         ({:.0} frames per simulated second; client received {got} of {sent} frames)",
        simulated / wall,
        sent as f64 / simulated
    );
    assert!(
        sim.snapshot().armed && sim.true_height_m() > 2.0,
        "the vehicle flew"
    );
}

fn bench(c: &mut Criterion) {
    headline();
    let cfg = SimConfig::lockstep(91);
    let mut client = Client::start(cfg.remote_port(), cfg.local_port(), cfg.vehicle.sysid());
    let sim = SimHandle::start(cfg).unwrap();
    sim.step(1_500).unwrap();
    client.latch(&sim);
    sim.step(4_000).unwrap();
    client.arm_takeoff(&sim);
    sim.step(10_000).unwrap();
    c.bench_function(
        "sim lockstep: one simulated second, one client at full stream rates",
        |b| b.iter(|| sim.step(1_000).unwrap()),
    );
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(30).measurement_time(Duration::from_secs(10));
    targets = bench
}
criterion_main!(benches);
