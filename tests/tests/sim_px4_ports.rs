//! Twelve simulated vehicles at once (instances 0–11) under PX4's port rule: instances above 9
//! send their offboard link to the shared port (PX4: 14549) until a client speaks to their
//! 14580+N, so each client speaks first from its own 14540+N — as the launcher's link does —
//! and every vehicle latches its own client. Each flies a take-off and a landing and has its
//! own verdict.
//!
//! Instances 0–11 are PX4's own numbers, so this test does not use PX4's ports: it finds a
//! block of free UDP ports and offsets both bases into it (the vehicles' 14580+N and the
//! clients' 14540+N keep their shape, base + N), so it passes while a real SITL or QGC holds
//! 14540–14560 and 14550.

use nexus_host::groups::{ActionApi, InfoApi, TelemetryApi};
use nexus_host::offboard_client::{OffboardClient, OffboardOptions};
use nexus_host::sim::{SimConfig, SimHandle};
use nexus_host::transport::PeerRule;
use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

const COUNT: u8 = 12;
const SPEED: f64 = 10.0;

/// Whether every port of `ports` can be bound on loopback now.
fn all_free(ports: impl Iterator<Item = u16>) -> bool {
    let held: Vec<_> = ports.map(|p| UdpSocket::bind(("127.0.0.1", p))).collect();
    held.iter().all(Result::is_ok)
}

/// Start the twelve vehicles on a free block of ports: (client base, the vehicles, the shared
/// port's socket). A block another program takes meanwhile is given up and the next tried.
fn start_fleet() -> (u16, Vec<SimHandle>, UdpSocket) {
    // Far from PX4's ports and from the other tests' instance ranges (14540 + 0…253).
    for block in 0..200u16 {
        let client_base = 20_000 + block * 97 + (std::process::id() % 50) as u16;
        let vehicle_base = client_base + 40;
        let ports = (0..u16::from(COUNT)).flat_map(|n| [client_base + n, vehicle_base + n]);
        if !all_free(ports) {
            continue;
        }
        // The shared port instances above 9 send to first (PX4: 14549): we hold it, to see
        // who sends there.
        let Ok(shared) = UdpSocket::bind(("127.0.0.1", client_base + 9)) else {
            continue;
        };
        let mut sims = Vec::new();
        for n in 0..COUNT {
            let mut cfg = SimConfig::realtime(n, SPEED);
            cfg.remote_port_base = client_base;
            cfg.local_port_base = vehicle_base;
            match SimHandle::start(cfg) {
                Ok(h) => sims.push(h),
                Err(_) => break,
            }
        }
        if sims.len() == usize::from(COUNT) {
            return (client_base, sims, shared);
        }
    }
    panic!("no free block of UDP ports for twelve vehicles");
}

/// Take off to 3 m and land instance `n`'s vehicle; why not, if it did not.
fn fly(n: u8, client_base: u16, vehicle_port: u16) -> Result<(), String> {
    let vehicle = SocketAddr::from(([127, 0, 0, 1], vehicle_port));
    let mut options = OffboardOptions {
        system_id: n + 1,
        ..OffboardOptions::default()
    };
    // The vehicle's address is known: the link speaks first, and the vehicle latches it.
    options.transport.peer = PeerRule::Address(vehicle);
    let conn = format!("udpin:127.0.0.1:{}", client_base + u16::from(n));
    let op = OffboardClient::new(&conn, options).map_err(|e| e.to_string())?;
    op.open().map_err(|e| e.to_string())?;
    let wait = |what: &str, limit_s: u64, done: &dyn Fn() -> bool| {
        let t0 = Instant::now();
        while !done() {
            if t0.elapsed() > Duration::from_secs(limit_s) {
                return Err(format!("instance {n}: no {what} within {limit_s} s wall"));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(())
    };
    wait("heartbeat", 30, &|| op.connected())?;
    op.takeoff(3.0).map_err(|e| e.to_string())?;
    // Take-off to 3 m is ~6 s sim after the arm checks: under 10 s wall at ×10, with margin.
    wait("take-off to 3 m", 60, &|| op.at_target() && op.is_armed())?;
    op.land().map_err(|e| e.to_string())?;
    wait("landing", 60, &|| op.landed() == Some(true))?;
    Ok(())
}

#[test]
fn twelve_vehicles_fly_at_once_under_px4s_port_rule() {
    let (client_base, sims, shared) = start_fleet();
    let ports: Vec<u16> = sims.iter().map(|s| s.ports().vehicle_port).collect();
    // Before anyone speaks: the vehicles above 9 send to the shared port, and (it being
    // instance 9's own client port, as 14549 is on PX4) instance 9; no other.
    shared
        .set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let mut senders = std::collections::BTreeSet::new();
    let t0 = Instant::now();
    let mut buf = [0u8; 2048];
    while t0.elapsed() < Duration::from_secs(3) {
        if let Ok((_, from)) = shared.recv_from(&mut buf) {
            senders.insert(from.port());
        }
    }
    let expected: std::collections::BTreeSet<u16> = ports[9..].iter().copied().collect();
    assert_eq!(
        senders, expected,
        "instances 9, 10 and 11 send to the shared port"
    );
    drop(shared);
    let flights: Vec<_> = (0..COUNT)
        .map(|n| {
            let port = ports[usize::from(n)];
            std::thread::spawn(move || fly(n, client_base, port))
        })
        .collect();
    let verdicts: Vec<Result<(), String>> = flights
        .into_iter()
        .map(|t| t.join().unwrap_or_else(|_| Err("panicked".into())))
        .collect();
    for (n, v) in verdicts.iter().enumerate() {
        assert_eq!(v, &Ok(()), "instance {n}");
    }
    // Each vehicle latched its own client, speaking first from 14540+N (here base + N).
    for (n, s) in sims.iter().enumerate() {
        let client = s.client().map(|a| a.port());
        assert_eq!(client, Some(client_base + n as u16), "instance {n}");
    }
}
