//! The serial link (tokio-serial) on a pty: the autopilot's heartbeat arrives through the
//! driver, the client's own frames leave through it, and a hang-up ends a pending wait `died`.

use std::io::{Read, Write};
use std::time::Duration;

use nexus_core::engine::{Reason, Wait};
use nexus_core::frame::{Decoder, Encoder, MAX_FRAME_LEN};
use nexus_core::mav;
use nexus_core::msg::Frame;
use nexus_core::offboard::wire;
use nexus_host::launcher::DeathCause;
use nexus_host::offboard_client::OffboardOptions;
use nexus_tokio::AsyncClient;
use serialport::{SerialPort, TTYPort};

fn heartbeat() -> Vec<u8> {
    let hb = wire::heartbeat(
        mav::MavType::MAV_TYPE_QUADROTOR,
        mav::MavAutopilot::MAV_AUTOPILOT_PX4,
        mav::MavModeFlag::empty(),
        0,
        mav::MavState::MAV_STATE_STANDBY,
    );
    let mut buf = [0u8; MAX_FRAME_LEN];
    let n = Encoder::new(1, 1).encode(&hb, &mut buf).unwrap();
    buf[..n].to_vec()
}

#[tokio::test(flavor = "current_thread")]
async fn a_pty_carries_both_ways_then_hangs_up() {
    let (mut master, slave) = TTYPort::pair().expect("openpty");
    let name = slave.name().expect("pty has a name");
    drop(slave);
    let op = AsyncClient::open(&format!("serial:{name}:57600"), OffboardOptions::default())
        .await
        .expect("open the pty");
    master.write_all(&heartbeat()).unwrap();
    op.until(|c| c.telemetry().connected(), Duration::from_secs(10))
        .await
        .expect("the heartbeat arrives through the serial driver");
    assert_eq!(op.peer(), None);

    // The client speaks (its own heartbeat stream): a checked frame from system 255.
    let reader = std::thread::spawn(move || {
        master.set_timeout(Duration::from_secs(5)).unwrap();
        let mut decoder = Decoder::new();
        let mut buf = [0u8; 64];
        for _ in 0..200 {
            let n = master.read(&mut buf).unwrap_or(0);
            let mut input = &buf[..n];
            while !input.is_empty() {
                let (used, raw) = decoder.feed(input);
                input = &input[used..];
                if let Some(raw) = raw {
                    if let Ok(Some(f)) = Frame::decode(&raw) {
                        return (f.header.sysid, master);
                    }
                } else if used == 0 {
                    break;
                }
            }
        }
        (0, master)
    });
    let (sysid, master) = tokio::task::spawn_blocking(move || reader.join().unwrap())
        .await
        .unwrap();
    assert_eq!(sysid, 255, "the client's own system id");

    // The device goes away: the pending wait ends `died`, saying why.
    let w = op.wait(&Wait::altitude_m(50.0).timeout_s(600.0));
    drop(master);
    let r = tokio::time::timeout(Duration::from_secs(10), w)
        .await
        .expect("the wait ends")
        .unwrap();
    assert_eq!(r.reason, Reason::Died, "{r:?}");
    let cause = op.death().expect("a cause");
    assert!(
        matches!(cause, DeathCause::LinkLost { .. }) && cause.to_string().starts_with("link lost"),
        "{cause:?}"
    );
}
