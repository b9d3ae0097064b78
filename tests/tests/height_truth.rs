//! The height above the pad on the simulated vehicle, measured over the wire as on PX4: the
//! vehicle streams its ground truth when asked, re-estimates home's altitude PX4-style (so
//! `relative_alt` jumps by a metre and more in a steady hover), and `nexus run
//! examples/takeoff-hover-land.toml` passes anyway, reading the ground truth. Instances 210–215.

mod cli_support;

use cli_support::{json, nexus, reasons, SPEED};
use nexus_core::HeightSource;
use nexus_host::groups::{ActionApi, TelemetryApi};
use nexus_host::offboard_client::{GroundTruth, OffboardClient};
use nexus_host::run::{Run, RunOptions};

#[test]
fn takeoff_hover_land_passes_reading_ground_truth_with_relative_alt_jumping() {
    let out = nexus(&[
        "run",
        "examples/takeoff-hover-land.toml",
        "--speed",
        SPEED,
        "--instance",
        "210",
        "--json",
    ])
    .assert()
    .success()
    .get_output()
    .clone();
    let r = json(&out.stdout);
    assert_eq!(r["passed"], true, "{r}");
    assert_eq!(reasons(&r), ["met", "met", "met", "met"]);
    for step in r["steps"].as_array().unwrap() {
        assert_eq!(step["snapshot"]["height_source"], "ground_truth", "{step}");
    }
    assert_eq!(r["final"]["height_source"], "ground_truth", "{r}");
    let hover = &r["steps"][1];
    let h = hover["snapshot"]["height_m"].as_f64().unwrap();
    assert!(
        (4.5..5.5).contains(&h),
        "true height after the hover: {hover}"
    );
}

/// Samples of (relative_alt, height, source) every 0.2 s of sim time for `secs`.
fn hover_samples(sim: &Run, op: &OffboardClient, secs: u32) -> Vec<(f32, f32, HeightSource)> {
    let mut out = Vec::new();
    for _ in 0..secs * 5 {
        let t0 = sim.sim_time_ms().unwrap();
        sim.until(|| sim.sim_time_ms().unwrap() >= t0 + 200, 5.0)
            .unwrap();
        let s = op.snapshot().unwrap();
        out.push((
            op.relative_altitude_m().unwrap(),
            s.height_m.unwrap(),
            s.height_source.unwrap(),
        ));
    }
    out
}

#[test]
fn relative_alt_jumps_in_a_steady_hover_while_the_height_does_not() {
    let sim = Run::started(RunOptions::simulated(211).speed(10.0).wait_clear_s(1.0))
        .expect("start the run");
    let op = OffboardClient::connect(&sim, 10.0).expect("connect");
    op.takeoff(5.0).unwrap();
    let truth_up = || sim.true_height_m().is_some_and(|h| h > 4.8);
    sim.until(truth_up, 60.0).unwrap();
    sim.until(|| false, 3.0).ok(); // settle into the hover
    let samples = hover_samples(&sim, &op, 40);
    let steps = samples
        .windows(2)
        .filter(|w| (w[1].0 - w[0].0).abs() >= 1.0)
        .count();
    let (rel_lo, rel_hi) = samples.iter().fold((f32::MAX, f32::MIN), |(lo, hi), s| {
        (lo.min(s.0), hi.max(s.0))
    });
    let (h_lo, h_hi) = samples.iter().fold((f32::MAX, f32::MIN), |(lo, hi), s| {
        (lo.min(s.1), hi.max(s.1))
    });
    println!(
        "40 s hover: relative_alt {rel_lo:.2}..{rel_hi:.2} m with {steps} jumps of >= 1 m; \
         height {h_lo:.2}..{h_hi:.2} m"
    );
    assert!(
        steps >= 3,
        "relative_alt jumped {steps} times by 1 m or more"
    );
    assert!(rel_hi - rel_lo >= 1.2, "relative_alt {rel_lo}..{rel_hi}");
    assert!(
        samples.iter().all(|s| s.2 == HeightSource::GroundTruth),
        "the height was not the ground truth throughout"
    );
    assert!(h_hi - h_lo < 0.3, "height {h_lo}..{h_hi} in a hover");
    assert!((4.7..5.3).contains(&h_lo), "hover height {h_lo}");
}

#[test]
fn without_ground_truth_the_height_is_the_amsl_estimate_since_arming() {
    let mut options = RunOptions::simulated(212).speed(10.0).wait_clear_s(1.0);
    options.client.ground_truth = GroundTruth::Never;
    let sim = Run::started(options).expect("start the run");
    let op = OffboardClient::connect(&sim, 10.0).expect("connect");
    op.takeoff(5.0).unwrap();
    let truth_up = || sim.true_height_m().is_some_and(|h| h > 4.8);
    sim.until(truth_up, 60.0).unwrap();
    sim.until(|| false, 3.0).ok();
    for (rel, h, src) in hover_samples(&sim, &op, 10) {
        assert_eq!(src, HeightSource::AmslSinceArm);
        let truth = sim.true_height_m().unwrap();
        assert!(
            (h - truth).abs() < 0.75,
            "AMSL {h} vs truth {truth} (rel {rel})"
        );
    }
}
