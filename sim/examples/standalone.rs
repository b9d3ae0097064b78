//! The simulated PX4 on its own, in memory: no socket, no thread. A nexus-core [`Client`]
//! plays the ground station; the loop carries datagrams both ways and steps the vehicle's
//! clock 10 ms at a time. It takes off to 3 m and waits (30 s of sim time at most) to be
//! there.
//!
//! ```text
//! cargo run -p nexus-sim --example standalone
//! ```
//!
//! (`nexus sim` runs the same vehicle on SITL's UDP ports, for QGroundControl or pymavlink.)

use nexus_core::frame::Decoder;
use nexus_core::prelude::*;
use nexus_core::{Action, GroundTruth, Instant};
use nexus_sim::{Vehicle, VehicleConfig};

fn main() {
    let mut vehicle = Vehicle::new(VehicleConfig::instance(0));
    let config = ClientConfig {
        ids: Default::default(),
        offboard: Default::default(),
        ground_truth: GroundTruth::Always, // a simulator: ask for its true state
        target_compid: None,
        stall: None,
    };
    let mut client: Client<4, 16, 8, 4> = Client::new(config);
    let mut decoder = Decoder::new();
    let mut buf = [0u8; 2048];
    let mut takeoff_sent = false;
    let mut wait_set = false;
    loop {
        vehicle.step(10_000);
        let now = Instant::from_micros(vehicle.now_us());
        // Vehicle → client.
        while let Some(n) = vehicle.poll_transmit(&mut buf) {
            let mut rest = &buf[..n];
            while !rest.is_empty() {
                let (used, raw) = decoder.feed(rest);
                if let Some(raw) = raw {
                    let _ = client.handle_raw(now, &raw);
                }
                rest = &rest[used..];
            }
        }
        // A heartbeat seen (its mode known): ask for the takeoff and wait for 3 m.
        if !takeoff_sent && client.snapshot().mode.is_some() {
            client
                .apply(now, &Action::Takeoff { alt_m: 3.0 })
                .expect("takeoff accepted");
            takeoff_sent = true;
        }
        if takeoff_sent && !wait_set {
            client
                .wait(now, &Wait::altitude_m(2.9).op(Op::Ge).timeout_s(30.0))
                .expect("a valid wait");
            wait_set = true;
        }
        // Client → vehicle.
        let mut out = [0u8; 280];
        while let Some(n) = client.poll_transmit(now, &mut out) {
            vehicle.handle_datagram(&out[..n]);
        }
        while let Some(event) = client.poll_event() {
            if let Event::Settled { result, .. } = event {
                println!(
                    "{} after {:.1} s of sim time ({:.1} m true height)",
                    result.reason,
                    result.waited_sim_s,
                    vehicle.true_height_m()
                );
                assert_eq!(result.reason, Reason::Met);
                return;
            }
        }
        assert!(
            vehicle.now_us() < 120_000_000,
            "no result in 120 s of sim time"
        );
    }
}
