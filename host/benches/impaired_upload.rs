//! How long a 100-item mission upload takes over an impaired link, per setting: clean, 20 %
//! loss, 200 ms latency, a 57 600 baud byte rate, and all three at once. The link is `nexus
//! bridge`'s impairment ([`nexus_host::bridge::impair`]) between the client and the simulated
//! vehicle, on loopback UDP.
//!
//! `cargo bench -p nexus-host --bench impaired_upload`. Under `cargo test --all-targets` (no
//! `--bench`) it runs once, clean only, as a smoke test. Besides criterion's timings the run
//! prints each setting's time and how many MISSION_ITEM_INT it took (retries = sent − 100).
//!
//! UDP: simulated instance 207 (14747 / 14787), clear of the default PX4 ports.

#![allow(missing_docs)] // criterion's macros generate undocumented items

use nexus_host::groups::{InfoApi, MissionApi};
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use nexus_core::mission::MissionItem;
use nexus_host::bridge::impair::Impairment;
use nexus_host::bridge::{bridge, BridgeOptions};
use nexus_host::offboard_client::{OffboardClient, OffboardOptions};
use nexus_host::sim::{SimConfig, SimHandle};

const INSTANCE: u8 = 207;
const ITEMS: u16 = 100;
/// Most wall time one upload may take before the run counts it failed.
const UPLOAD_LIMIT: Duration = Duration::from_secs(120);

fn full_run() -> bool {
    std::env::args().any(|a| a == "--bench")
}

/// 100 waypoints in a line north of SIH's default pad (47.397742, 8.545594), 10 m up.
fn mission() -> Vec<MissionItem> {
    (0..ITEMS)
        .map(|i| MissionItem {
            seq: i,
            frame: 6,    // MAV_FRAME_GLOBAL_RELATIVE_ALT_INT
            command: 16, // NAV_WAYPOINT
            autocontinue: true,
            params: [0.0; 4],
            x: 473_977_420 + i32::from(i) * 100,
            y: 85_455_940,
            z: 10.0,
        })
        .collect()
}

/// One upload through a fresh vehicle and bridge under `impair`: wall time and the
/// MISSION_ITEM_INT frames sent.
fn upload_once(impair: Impairment, items: &[MissionItem]) -> (Duration, u64) {
    let sim = SimHandle::start(SimConfig::realtime(INSTANCE, 1.0)).expect("start the vehicle");
    let ports = sim.ports();
    // The client speaks to the bridge's listening side, which latches it; the bridge speaks on
    // to the vehicle's own port (14580+N), which latches the bridge (PX4's rule above 9).
    let b = bridge(
        &format!("udpout:127.0.0.1:{}", ports.vehicle_port)
            .parse()
            .unwrap(),
        &"udpin:127.0.0.1:0".parse().unwrap(),
        BridgeOptions {
            impair,
            ..BridgeOptions::default()
        },
    )
    .expect("start the bridge");
    let to = b.to_local_addr().expect("the bridge's client side");
    let op = OffboardClient::new(
        &format!("udpout:127.0.0.1:{}", to.port()),
        OffboardOptions {
            system_id: ports.offboard.system_id,
            // An impaired link: resend more before giving up, as on a slow serial line.
            offboard: nexus_host::pump::slow_link::slow_link_offboard(Default::default()),
            ..OffboardOptions::default()
        },
    )
    .unwrap();
    op.open().unwrap();
    let t0 = Instant::now();
    while !op.connected() {
        assert!(t0.elapsed() < Duration::from_secs(60), "no heartbeat");
        std::thread::sleep(Duration::from_millis(10));
    }
    let t0 = Instant::now();
    op.upload_mission(items).unwrap();
    while !op.mission_uploaded() {
        assert!(
            t0.elapsed() < UPLOAD_LIMIT,
            "upload under {impair:?} did not finish"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    let took = t0.elapsed();
    let sent = op
        .status()
        .map_or(0, |s| s.counters.tx_requests.mission_items);
    assert_eq!(op.mission_count(), usize::from(ITEMS));
    (took, sent)
}

fn settings() -> Vec<(&'static str, Impairment)> {
    let base = Impairment {
        sequence: 14,
        ..Impairment::default()
    };
    let all = vec![
        ("clean", base),
        (
            "loss 20 %",
            Impairment {
                loss_pct: 20.0,
                ..base
            },
        ),
        (
            "latency 200 ms",
            Impairment {
                latency: Duration::from_millis(200),
                ..base
            },
        ),
        (
            "57600 baud",
            Impairment {
                rate_baud: Some(57_600),
                ..base
            },
        ),
        (
            "20 % + 200 ms + 57600",
            Impairment {
                loss_pct: 20.0,
                latency: Duration::from_millis(200),
                rate_baud: Some(57_600),
                ..base
            },
        ),
    ];
    if full_run() {
        all
    } else {
        all.into_iter().take(1).collect()
    }
}

fn bench(c: &mut Criterion) {
    let items = mission();
    let mut g = c.benchmark_group("upload_100_items");
    g.sample_size(10);
    g.warm_up_time(Duration::from_millis(1));
    g.measurement_time(Duration::from_secs(1));
    for (name, impair) in settings() {
        let (took, sent) = upload_once(impair, &items);
        println!(
            "{name}: 100-item upload in {:.2} s wall, {sent} MISSION_ITEM_INT sent ({} retries)",
            took.as_secs_f64(),
            sent.saturating_sub(u64::from(ITEMS))
        );
        if !full_run() {
            continue;
        }
        g.bench_function(name, |b| {
            b.iter_custom(|iters| (0..iters).map(|_| upload_once(impair, &items).0).sum());
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
