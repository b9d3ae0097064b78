//! The benches' client: an in-process UDP socket on another thread that receives every
//! datagram and frames it with nexus-core's decoder.

use nexus_core::frame::{Decoder, Encoder};
use nexus_core::mav;
use nexus_sim::SimHandle;
use std::net::UdpSocket;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

pub struct Client {
    tx: UdpSocket,
    enc: Encoder,
    #[allow(dead_code)] // read by the lockstep bench only
    pub frames: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Client {
    /// Bind the offboard port, speak first so the vehicle latches on, then drain forever.
    pub fn start(port: u16, vehicle_port: u16, sysid: u8) -> Client {
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

    /// Wait (in real time, by sleeping) until a real-time vehicle has latched onto this client.
    #[allow(dead_code)] // the pacing bench's
    pub fn latch_realtime(&self, sim: &SimHandle) {
        let me = self.tx.local_addr().unwrap();
        let t0 = Instant::now();
        while sim.client() != Some(me) {
            assert!(
                t0.elapsed() < Duration::from_secs(20),
                "the vehicle never latched"
            );
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    /// Wait (stepping) until the vehicle has latched onto this client.
    #[allow(dead_code)] // the lockstep bench's
    pub fn latch(&self, sim: &SimHandle) {
        let me = self.tx.local_addr().unwrap();
        while sim.client() != Some(me) {
            sim.step(10).unwrap();
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Takeoff mode, then arm, from this client.
    #[allow(dead_code)] // the lockstep bench's
    pub fn arm_takeoff(&mut self, sim: &SimHandle) {
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
