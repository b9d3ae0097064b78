//! What recording a `.tlog` costs ([`nexus_host::tlog`]).
//!
//! `cargo bench -p nexus-host --bench tlog` (add `-- --quick` for a short run). Two figures:
//!
//! * **per frame**: criterion's time for [`Tlog::record`] of a 44-byte frame (GLOBAL_POSITION_INT
//!   v2) into a file — one clock read and one buffered copy;
//! * **of a fast flight**: the built-in vehicle at its fastest (×50, `SIM_SPEED_MAX`) takes off
//!   to 5 m and lands, flown with and without a tlog, alternately; the frames the tlog holds
//!   times the per-frame cost, as a share of the flight's wall time (target: under 5 %), and
//!   the measured wall times side by side (noisy on a shared machine: the estimate is the
//!   figure to read).
//!
//! Instances 188–189.

#![allow(missing_docs)] // criterion's macros generate undocumented items

use nexus_host::groups::{ActionApi, TelemetryApi};
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use nexus_host::offboard_client::OffboardClient;
use nexus_host::run::{Run, RunOptions};
use nexus_host::tlog::{Direction, Tlog};

fn full_run() -> bool {
    std::env::args().any(|a| a == "--bench")
}

/// Wait until `f` holds, polling; false after `limit`.
fn until(limit: Duration, f: impl Fn() -> bool) -> bool {
    let t = Instant::now();
    while !f() {
        if t.elapsed() > limit {
            return false;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    true
}

/// One take-off to 5 m and landing at ×50; its wall seconds (from the take-off command) and
/// the frames recorded.
fn flight(instance: u8, tlog: Option<Tlog>) -> (f64, u64) {
    let mut opts = RunOptions::simulated(instance).speed(50.0);
    if let Some(t) = &tlog {
        opts = opts.tlog(t.clone());
    }
    let sim = Run::started(opts).expect("the simulated vehicle");
    let op = OffboardClient::connect(&sim, 30.0).expect("connect");
    let limit = Duration::from_secs(60);
    // The vehicle arms once its preflight checks pass (a few sim seconds after boot).
    assert!(
        until(limit, || {
            let _ = op.arm();
            until(Duration::from_millis(100), || op.is_armed())
        }),
        "arm"
    );
    let t0 = Instant::now();
    op.takeoff(5.0).expect("takeoff");
    assert!(
        until(limit, || op.relative_altitude_m().is_some_and(|a| a > 4.5)),
        "take off"
    );
    op.land().expect("land");
    assert!(
        until(limit, || op.landed() == Some(true) && !op.is_armed()),
        "land"
    );
    let wall = t0.elapsed().as_secs_f64();
    op.close();
    drop(sim);
    let n = tlog.map_or(0, |t| {
        let c = t.counts();
        c.received + c.sent
    });
    (wall, n)
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let t = Tlog::create(&dir.path().join("bench.tlog")).unwrap();
    let mut frame = vec![0xFDu8, 28, 0, 0, 7, 1, 1, 33, 0, 0];
    frame.extend([0x55u8; 28 + 2]);
    let mut g = c.benchmark_group("tlog");
    g.bench_function("record one 40-byte frame", |b| {
        b.iter(|| t.record(Direction::Received, std::hint::black_box(&frame)))
    });
    g.finish();
    // Per-frame cost measured plainly too, for the estimate below.
    let n = 200_000;
    let t1 = Instant::now();
    for _ in 0..n {
        t.record(Direction::Received, &frame);
    }
    let per_frame_s = t1.elapsed().as_secs_f64() / n as f64;
    drop(t);

    let rounds = if full_run() { 3 } else { 1 };
    let (mut with, mut without) = (Vec::new(), Vec::new());
    let mut frames = 0;
    for i in 0..rounds {
        let t = Tlog::create(&dir.path().join(format!("flight{i}.tlog"))).unwrap();
        let (w, n) = flight(188, Some(t));
        with.push(w);
        frames = frames.max(n);
        without.push(flight(189, None).0);
    }
    let (w, wo) = (median(&mut with), median(&mut without));
    let share = frames as f64 * per_frame_s / w * 100.0;
    println!(
        "tlog: {:.0} ns a frame; a ×50 take-off and landing: {frames} frames in {w:.2} s wall \
         → recording costs {share:.2} % of the flight (target < 5 %); measured wall with \
         {w:.2} s, without {wo:.2} s (median of {rounds})",
        per_frame_s * 1e9
    );
    assert!(
        share < 5.0,
        "recording a tlog costs {share:.2} % of a fast flight"
    );
}

criterion_group!(benches, bench);
criterion_main!(benches);
