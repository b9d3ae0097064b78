//! Real-time pacing: does the simulated PX4 meet the speed factor asked of it? A sweep of
//! ×10…×500, each a real-time vehicle serving one client at PX4's full stream rates over
//! loopback UDP (instance 90), printing achieved / requested.
//!
//! `cargo bench -p nexus-sim --bench pacing` (add `-- --quick` for a short run). Criterion
//! times how long the vehicle takes to advance 50 ms × F of sim time (ideal: 50 ms of wall at
//! any F); the line `pacing ×F: achieved ×A = A/F` is the figure, over every window measured
//! at that F (warm-up included). Run it on an idle machine: the vehicle competes for the CPU.

#![allow(missing_docs)] // criterion's macros generate undocumented items

mod common;

use common::Client;
use criterion::{criterion_group, criterion_main, Criterion};
use nexus_sim::{SimConfig, SimHandle};
use std::time::{Duration, Instant};

/// The speed factors swept.
const SPEEDS: [f64; 8] = [10.0, 20.0, 50.0, 100.0, 200.0, 300.0, 400.0, 500.0];
/// Wall time one window should take at any speed factor.
const WINDOW: Duration = Duration::from_millis(50);
/// How often the vehicle's clock is looked at while waiting (bounds the measuring error).
const LOOK: Duration = Duration::from_micros(200);

fn sweep(c: &mut Criterion) {
    let mut g = c.benchmark_group("pacing");
    g.sample_size(10);
    let mut lines = Vec::new();
    for speed in SPEEDS {
        let cfg = SimConfig::realtime(90, speed);
        let client = Client::start(cfg.remote_port(), cfg.local_port(), cfg.vehicle.sysid());
        let sim = SimHandle::start(cfg).unwrap();
        client.latch_realtime(&sim);
        let span_ms = (WINDOW.as_secs_f64() * speed * 1000.0) as u64;
        let (mut sim_ms, mut wall) = (0u64, Duration::ZERO);
        g.bench_function(format!("x{speed}"), |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let t0 = Instant::now();
                    let s0 = sim.sim_time_ms();
                    loop {
                        let s = sim.sim_time_ms();
                        if s >= s0 + span_ms {
                            let dt = t0.elapsed();
                            sim_ms += s - s0;
                            wall += dt;
                            total += dt;
                            break;
                        }
                        assert!(t0.elapsed() < Duration::from_secs(30), "the clock stopped");
                        std::thread::sleep(LOOK);
                    }
                }
                total
            })
        });
        let achieved = sim_ms as f64 / 1000.0 / wall.as_secs_f64();
        let line = format!(
            "pacing ×{speed}: achieved ×{achieved:.1} = {:.3} of requested ({:.1} s sim in {:.2} s wall)",
            achieved / speed,
            sim_ms as f64 / 1000.0,
            wall.as_secs_f64()
        );
        eprintln!("{line}");
        lines.push(line);
        drop(client);
        sim.stop();
    }
    g.finish();
    eprintln!("\nreal-time pacing, achieved / requested:");
    for l in lines {
        eprintln!("  {l}");
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1));
    targets = sweep
}
criterion_main!(benches);
