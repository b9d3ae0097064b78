//! The simulated vehicle's handle: lockstep stepping, ground truth, speed factor, port map,
//! and that nothing outlives stop/Drop. A raw UDP client with nexus-core's framing plays GCS.

use nexus_core::frame::{Decoder, Encoder};
use nexus_core::mav;
use nexus_core::{Frame, Mode, Msg};
use nexus_host::sim::{SimConfig, SimError, SimHandle};
use std::net::UdpSocket;
use std::time::{Duration, Instant};

struct RawGcs {
    sock: UdpSocket,
    /// The vehicle's own port (14580 + N): spoken to until it answers, as PX4 above instance
    /// 9 sends elsewhere until a client speaks first.
    vehicle_port: u16,
    enc: Encoder,
    dec: Decoder,
    vehicle: Option<std::net::SocketAddr>,
    last_hb: Option<mav::HEARTBEAT_DATA>,
    acks: Vec<(u16, u8)>,
}

impl RawGcs {
    fn bind(port: u16, vehicle_port: u16) -> RawGcs {
        let sock = UdpSocket::bind(("127.0.0.1", port)).expect("bind GCS port");
        sock.set_nonblocking(true).unwrap();
        RawGcs {
            sock,
            vehicle_port,
            enc: Encoder::new(255, 190),
            dec: Decoder::new(),
            vehicle: None,
            last_hb: None,
            acks: Vec::new(),
        }
    }

    fn drain(&mut self) {
        if self.vehicle.is_none() {
            // Not heard yet: a GCS heartbeat to the vehicle's port, so it latches us.
            let mut b = [0u8; 280];
            let n = self
                .enc
                .encode(&nexus_core::offboard::wire::gcs_heartbeat(), &mut b)
                .unwrap();
            let _ = self.sock.send_to(&b[..n], ("127.0.0.1", self.vehicle_port));
        }
        let mut buf = [0u8; 65536];
        while let Ok((n, from)) = self.sock.recv_from(&mut buf) {
            self.vehicle = Some(from);
            let mut rest = &buf[..n];
            loop {
                let (used, msg) = {
                    let (used, raw) = self.dec.feed(rest);
                    (used, raw.and_then(|r| Frame::decode(&r).ok().flatten()))
                };
                rest = &rest[used..];
                match msg.map(|f| f.msg) {
                    Some(Msg::Heartbeat(h)) => self.last_hb = Some(h),
                    Some(Msg::CommandAck(a)) => self.acks.push((a.command as u16, a.result as u8)),
                    Some(_) => {}
                    None if rest.is_empty() => break,
                    None => {}
                }
            }
        }
    }

    fn send<M: mavlink::MessageData>(&mut self, m: &M) {
        let mut b = [0u8; 280];
        let n = self.enc.encode(m, &mut b).unwrap();
        self.sock
            .send_to(&b[..n], self.vehicle.expect("vehicle address"))
            .unwrap();
    }

    fn command(&mut self, cmd: mav::MavCmd, p: [f32; 3], sysid: u8) {
        self.send(&mav::COMMAND_LONG_DATA {
            param1: p[0],
            param2: p[1],
            param3: p[2],
            command: cmd,
            target_system: sysid,
            target_component: 1,
            ..Default::default()
        });
    }
}

#[test]
fn lockstep_flight_with_ground_truth() {
    let cfg = SimConfig::lockstep(85);
    let mut gcs = RawGcs::bind(cfg.remote_port(), cfg.local_port());
    let sim = SimHandle::start(cfg).expect("start");
    assert_eq!(sim.ports().offboard.port, 14625);
    assert_eq!(sim.ports().offboard.system_id, 86);
    assert!(matches!(sim.set_speed(2.0), Err(SimError::NotRealTime)));
    // Nothing moves until stepped.
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(sim.sim_time_ms(), 0);
    assert_eq!(sim.step(1_000).unwrap(), 1_000);
    gcs.drain();
    assert!(gcs.last_hb.is_none(), "no heartbeat before 1.24 s");
    // Stepping is fast: 9 s of sim time well under 9 s of wall time. (Drain as we go: a
    // lockstep vehicle outruns a default-sized socket buffer.)
    let t0 = Instant::now();
    for _ in 0..18 {
        sim.step(500).unwrap();
        gcs.drain();
    }
    assert!(t0.elapsed() < Duration::from_secs(3), "{:?}", t0.elapsed());
    let hb = gcs.last_hb.clone().expect("heartbeat");
    assert_eq!(Mode::from_custom_mode(hb.custom_mode), Mode::Hold);
    assert_eq!(hb.system_status as u8, 3);
    gcs.command(mav::MavCmd::MAV_CMD_DO_SET_MODE, [1.0, 4.0, 2.0], 86);
    sim.step(100).unwrap();
    gcs.command(
        mav::MavCmd::MAV_CMD_COMPONENT_ARM_DISARM,
        [1.0, 0.0, 0.0],
        86,
    );
    let up = sim
        .step_until(30_000, 50, |s| {
            s.mode == Mode::Hold && s.true_height_m > 2.3
        })
        .unwrap();
    assert!(up, "{:?}", sim.snapshot());
    gcs.drain();
    assert_eq!(&gcs.acks[..3], &[(176, 0), (176, 0), (400, 0)]);
    assert!((sim.true_height_m() - 2.5).abs() < 0.3);
    assert!(sim.snapshot().armed);
    assert!(sim
        .output_log()
        .iter()
        .any(|l| l.contains("Armed by external command")));
    assert_eq!(sim.client().map(|a| a.port()), Some(14625));
}

#[test]
fn realtime_speed_factor_and_stop_releases_the_port() {
    let cfg = SimConfig::realtime(86, 10.0);
    let port = cfg.local_port();
    let sim = SimHandle::start(cfg).expect("start");
    assert!(matches!(sim.step(10), Err(SimError::NotLockstep)));
    assert!(matches!(sim.set_speed(0.0), Err(SimError::InvalidSpeed(_))));
    std::thread::sleep(Duration::from_millis(1_000));
    let t = sim.sim_time_ms() as f64;
    assert!((8_500.0..=11_000.0).contains(&t), "10x for 1 s gave {t} ms");
    sim.set_speed(1.0).unwrap();
    std::thread::sleep(Duration::from_millis(500));
    let t2 = sim.sim_time_ms() as f64;
    assert!(
        (t2 - t - 500.0).abs() < 150.0,
        "1x for 0.5 s gave {} ms",
        t2 - t
    );
    // A second vehicle on the same instance cannot start.
    assert!(matches!(
        SimHandle::start(SimConfig::realtime(86, 1.0)),
        Err(SimError::Bind { .. })
    ));
    sim.stop();
    UdpSocket::bind(("127.0.0.1", port)).expect("port released by stop");
    let sim = SimHandle::start(SimConfig::lockstep(86)).expect("restart");
    drop(sim);
    UdpSocket::bind(("127.0.0.1", port)).expect("port released by drop");
}
