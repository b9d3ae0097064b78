//! The host library's guarantee: a client connected to a run (`OffboardClient::connect`)
//! takes frames only from the vehicle the run launched. Forged frames with the vehicle's
//! system id, from another port and from the vehicle's own port on 127.0.0.2, are counted in
//! the link status and announced as events, never applied. Real UDP, the simulated vehicle.
//!
//! SITL instance used here: 218 (this test's share of 216–223).

mod host_support;

use host_support::{connect, realtime, WALL};
use nexus_core::frame::Encoder;
use nexus_core::mav;
use nexus_host::groups::TelemetryApi;
use nexus_host::pump::LinkEvent;
use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

fn encode<M: mavlink::MessageData>(sysid: u8, msg: &M) -> Vec<u8> {
    let mut buf = [0u8; 300];
    let n = Encoder::new(sysid, 1).encode(msg, &mut buf).unwrap();
    buf[..n].to_vec()
}

#[test]
fn a_connected_client_never_applies_frames_from_anyone_but_its_vehicle() {
    let instance = 218u8;
    let sysid = instance + 1;
    let (sim, op) = connect(realtime(instance));
    let link = op.link().unwrap();
    let vehicle: SocketAddr = sim.vehicle_addr().expect("the run knows its vehicle");
    assert_eq!(vehicle, SocketAddr::from(([127, 0, 0, 1], 14580 + 218)));
    assert_eq!(link.status().peer, Some(vehicle));
    assert_eq!(
        op.conn().to_string(),
        format!("udpin:127.0.0.1:{}", 14540 + 218),
        "a run's client listens on loopback by default"
    );
    assert!(!op.is_armed());

    // An armed heartbeat and a text, from another port and from the vehicle's port number
    // on another address.
    let armed = nexus_core::offboard::wire::heartbeat(
        mav::MavType::MAV_TYPE_QUADROTOR,
        mav::MavAutopilot::MAV_AUTOPILOT_PX4,
        mav::MavModeFlag::MAV_MODE_FLAG_SAFETY_ARMED
            | mav::MavModeFlag::MAV_MODE_FLAG_CUSTOM_MODE_ENABLED,
        0,
        mav::MavState::MAV_STATE_ACTIVE,
    );
    let mut field = [0u8; 50];
    field[..6].copy_from_slice(b"forged");
    let text = mav::STATUSTEXT_DATA {
        severity: mav::MavSeverity::MAV_SEVERITY_CRITICAL,
        text: field.into(),
        id: 0,
        chunk_seq: 0,
    };
    let mut datagram = encode(sysid, &armed);
    datagram.extend(encode(sysid, &text));
    let other_port = UdpSocket::bind("127.0.0.1:0").unwrap();
    let elsewhere = UdpSocket::bind(("127.0.0.2", vehicle.port())).unwrap();
    let to = SocketAddr::from(([127, 0, 0, 1], 14540 + 218));
    for _ in 0..10 {
        other_port.send_to(&datagram, to).unwrap();
        elsewhere.send_to(&datagram, to).unwrap();
        std::thread::sleep(Duration::from_millis(20));
    }
    let t0 = Instant::now();
    while link.with_status(|s| s.foreign.datagrams()) < 20 {
        assert!(t0.elapsed() < WALL, "{:?}", link.status().foreign);
        std::thread::sleep(Duration::from_millis(5));
    }
    // The vehicle keeps talking meanwhile; none of the forgery shows.
    std::thread::sleep(Duration::from_millis(300));
    assert!(!op.is_armed(), "a forged armed heartbeat was applied");
    let s = link.status();
    assert_eq!(s.peer, Some(vehicle), "the peer never moves");
    assert!(s.connected);
    let texts: Vec<String> = link
        .call(|ctx| {
            ctx.client()
                .telemetry()
                .texts()
                .after(0)
                .map(|t| t.text.as_str().to_string())
                .collect()
        })
        .unwrap();
    assert!(!texts.iter().any(|t| t == "forged"), "{texts:?}");
    let f = &s.foreign;
    assert_eq!(f.frames(), 40);
    let addrs: Vec<SocketAddr> = f.sources.iter().map(|s| s.addr).collect();
    assert_eq!(
        addrs,
        [
            other_port.local_addr().unwrap(),
            elsewhere.local_addr().unwrap()
        ]
    );
    assert!(f.sources.iter().all(|s| s.counts.systems.contains(sysid)));
    let announced: Vec<SocketAddr> = op
        .events_since(0)
        .into_iter()
        .filter_map(|(_, e)| match e {
            LinkEvent::Ignored(Some(src)) => Some(src.addr),
            _ => None,
        })
        .collect();
    assert_eq!(announced, addrs, "each source announced once");
    drop(op);
    drop(sim);
}
