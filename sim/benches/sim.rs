//! How fast the simulated PX4 runs in lockstep while serving one client at PX4's full stream
//! rates over real loopback UDP: simulated seconds per wall second.
//!
//! `cargo bench -p nexus-sim --bench sim`. The client is an in-process UDP socket on another
//! thread that receives every datagram and frames it with nexus-core's decoder. Besides
//! criterion's timing of one simulated second, the run prints the headline figure
//! ("… simulated seconds per wall second") over a 120 s flight: boot, takeoff, hover.

#![allow(missing_docs)] // criterion's macros generate undocumented items

mod common;

use common::Client;
use criterion::{criterion_group, criterion_main, Criterion};
use nexus_sim::{SimConfig, SimHandle};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// A lockstep vehicle on `instance` with its client, booted, armed and taking off.
fn taking_off(instance: u8) -> (Client, SimHandle) {
    let cfg = SimConfig::lockstep(instance);
    let mut client = Client::start(cfg.remote_port(), cfg.local_port(), cfg.vehicle.sysid());
    let sim = SimHandle::start(cfg).unwrap();
    sim.step(1_500).unwrap();
    client.latch(&sim);
    sim.step(4_000).unwrap();
    client.arm_takeoff(&sim);
    (client, sim)
}

fn headline() {
    let (client, sim) = taking_off(90);
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
    let (_client, sim) = taking_off(91);
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
