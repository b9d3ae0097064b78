//! Real PX4's side of `examples/takeoff-hover-land.toml` (PX4 SITL, SIH, 4×: the flight that
//! FAILED on PX4 because its hover guard read `relative_alt`), replayed through the core: the
//! decoder, the telemetry and the wait engine.
//!
//! The offboard link's frames and the GCS link's HIL_STATE_QUATERNION (ground truth, 25 Hz),
//! both from PX4 (system 6), are merged by their capture timestamps. The program's two first
//! steps run as waits: take off until `altitude >= 4.5 m for 2 s`, then hover for 10 s with the
//! guard `altitude <= 3 m`. The height from ground truth does not trip the guard; the same waits
//! reading `relative_alt` do (0.12 s into the hover, as on PX4); the AMSL fallback does not.
//! The test also measures how far the AMSL fallback and `relative_alt` stray from the truth.
//!
//! Fixtures: `fixtures/px4-traces/` (see its README: only the message ids read here are kept).
#![cfg(feature = "ground-truth")]

mod tlog_support;

use nexus_core::engine::{Condition, Engine, EngineEvent, Op, Reason, Wait, WaitId, WaitResult};
use nexus_core::telemetry::LinkIds;
use nexus_core::{Frame, HeightSource, Instant, Msg, Telemetry};
use tlog_support::read_tlog;

const OFFBOARD: &[u8] =
    include_bytes!("../../fixtures/px4-traces/takeoff-hover-land-x4.px4-to-nexus.tlog");
const GCS: &[u8] =
    include_bytes!("../../fixtures/px4-traces/takeoff-hover-land-x4.px4-to-gcs.tlog");

/// PX4 instance 5: system 6; nexus was 255/240 (as the recorded client).
const IDS: LinkIds = LinkIds {
    target_sysid: 6,
    own_sysid: 255,
    own_compid: 240,
};

/// Both links, merged by capture time (the offboard link first on a tie).
fn merged(with_truth: bool) -> Vec<(u64, Frame)> {
    let mut all = read_tlog(OFFBOARD);
    if with_truth {
        all.extend(read_tlog(GCS));
    }
    all.sort_by_key(|(ts, _)| *ts); // stable
    all
}

/// How the steps "take off" and "hover" of the program ended.
#[derive(Debug)]
struct Flown {
    takeoff: WaitResult,
    hover: Option<WaitResult>,
}

/// Run the two steps over `frames`, each frame passed through `edit` first.
fn fly(frames: Vec<(u64, Frame)>, mut edit: impl FnMut(&mut Frame)) -> Flown {
    let mut tel: Telemetry<16> = Telemetry::new(IDS);
    let mut engine: Engine<4> = Engine::new();
    let t0 = frames[0].0;
    let mut takeoff: Option<WaitId> = None;
    let mut hover: Option<WaitId> = None;
    let mut flown_takeoff = None;
    let mut flown_hover = None;
    for (ts, mut f) in frames {
        let now = Instant::from_micros(ts - t0);
        edit(&mut f);
        if !tel.handle(now, &f) {
            continue;
        }
        if takeoff.is_none() && tel.connected() {
            let w = Wait::altitude_m(4.5).hold_s(2.0).timeout_s(60.0);
            takeoff = Some(engine.register(now, &tel, &w).unwrap());
        }
        engine.evaluate(now, &tel);
        while let Some(e) = engine.poll_event() {
            let EngineEvent::Settled { id, result } = e else {
                continue;
            };
            if Some(id) == takeoff {
                assert_eq!(result.reason, Reason::Met, "take off: {result:?}");
                let w = Wait::time_s(10.0)
                    .guard(Condition::altitude_m(3.0).op(Op::Le))
                    .timeout_s(20.0);
                hover = Some(engine.register(now, &tel, &w).unwrap());
                flown_takeoff = Some(result);
            } else if Some(id) == hover {
                flown_hover = Some(result);
            }
        }
        if flown_hover.is_some() {
            break;
        }
    }
    Flown {
        takeoff: flown_takeoff.expect("the take-off step never ended"),
        hover: flown_hover,
    }
}

#[test]
fn ground_truth_does_not_trip_the_hover_guard_where_relative_alt_does() {
    // Ground truth: the hover is flown, 10 s, no guard.
    let truth = fly(merged(true), |_| {});
    let hover = truth.hover.expect("hover did not end within the recording");
    assert_eq!(hover.reason, Reason::Met, "{hover:?}");
    assert_eq!(hover.guard, None);
    assert_eq!(
        hover.snapshot.height_source,
        Some(HeightSource::GroundTruth)
    );
    assert_eq!(
        truth.takeoff.snapshot.height_source,
        Some(HeightSource::GroundTruth)
    );
    let h = hover.snapshot.height_m.unwrap();
    assert!(
        (4.0..6.0).contains(&h),
        "height at the end of the hover {h}"
    );
    println!(
        "ground truth: take-off met at {:.2} s sim, hover flown to {:.2} s at {h:.2} m",
        truth.takeoff.snapshot.t_sim_s(),
        hover.snapshot.t_sim_s()
    );

    // The AMSL fallback (no ground truth on the link) flies it too.
    let amsl = fly(merged(false), |_| {});
    let hover = amsl
        .hover
        .expect("AMSL: hover did not end within the recording");
    assert_eq!(hover.reason, Reason::Met, "AMSL: {hover:?}");
    assert_eq!(
        hover.snapshot.height_source,
        Some(HeightSource::AmslSinceArm)
    );

    // What nexus read before: relative_alt as the height. The same frames, the estimate's
    // alt replaced by a constant + relative_alt from arming on (so the AMSL-since-arm height
    // is exactly relative_alt): the take-off hold keeps restarting on relative_alt's jumps and
    // the guard fires at once in the hover, as it did on PX4.
    let mut armed = false;
    let rel = fly(merged(false), |f| match &mut f.msg {
        // (The other GCS's heartbeats, forwarded by PX4, are not the vehicle's.)
        Msg::Heartbeat(hb) if f.header.sysid == IDS.target_sysid => {
            armed = hb.base_mode.bits() & 0x80 != 0;
        }
        Msg::GlobalPositionInt(g) => {
            g.alt = 400_000 + if armed { g.relative_alt } else { 0 };
        }
        _ => {}
    });
    let hover = rel
        .hover
        .expect("relative_alt: hover did not end within the recording");
    assert_eq!(hover.reason, Reason::Guard, "relative_alt: {hover:?}");
    assert_eq!(hover.guard, Some(0));
    let h = hover.snapshot.height_m.unwrap();
    assert!(h <= 3.0);
    println!(
        "relative_alt: take-off met at {:.2} s sim, guard fired {:.2} s into the hover at {h:.3} m",
        rel.takeoff.snapshot.t_sim_s(),
        hover.waited_sim_s
    );
    assert!(hover.waited_sim_s < 1.0);
}

#[test]
fn amsl_fallback_and_relative_alt_against_the_truth() {
    // Two telemetries over the same flight: one with ground truth, one without.
    let mut with: Telemetry<16> = Telemetry::new(IDS);
    let mut without: Telemetry<16> = Telemetry::new(IDS);
    let frames = merged(true);
    let t0 = frames[0].0;
    let (mut amsl_err, mut rel_err, mut n) = (0.0f32, 0.0f32, 0);
    for (ts, f) in frames {
        let now = Instant::from_micros(ts - t0);
        with.handle(now, &f);
        if matches!(f.msg, Msg::HilStateQuaternion(_)) {
            continue;
        }
        without.handle(now, &f);
        let Msg::GlobalPositionInt(g) = &f.msg else {
            continue;
        };
        if f.header.sysid != IDS.target_sysid || without.armed() != Some(true) {
            continue;
        }
        let Some((truth, HeightSource::GroundTruth)) = with.height() else {
            continue;
        };
        let (amsl, src) = without.height().unwrap();
        assert_eq!(src, HeightSource::AmslSinceArm);
        amsl_err = amsl_err.max((amsl - truth).abs());
        rel_err = rel_err.max((g.relative_alt as f32 / 1000.0 - truth).abs());
        n += 1;
    }
    println!(
        "over {n} armed GLOBAL_POSITION_INT: max |height - truth| AMSL since arm {amsl_err:.3} m, \
         relative_alt {rel_err:.3} m"
    );
    assert!(n > 1000, "only {n} samples compared");
    // docs/px4-wire.md §Height: 0.73 m for the AMSL difference and up to 1.45 m for relative_alt.
    assert!(amsl_err < 0.8, "AMSL since arm strays {amsl_err} m");
    assert!(rel_err > 1.2, "relative_alt strays only {rel_err} m");
}

#[test]
fn ground_truth_that_stops_hands_over_to_amsl_mid_flight() {
    // The recorded flight with its ground truth cut 25 s into the recording (armed, hovering).
    let frames = merged(true);
    let t0 = frames[0].0;
    let mut tel: Telemetry<16> = Telemetry::new(IDS);
    let mut last_truth: Option<f32> = None;
    let mut switched = None;
    for (ts, f) in frames {
        let now = Instant::from_micros(ts - t0);
        let cut = tel.sim_ms().is_some_and(|ms| ms > 25_000);
        if cut && matches!(f.msg, Msg::HilStateQuaternion(_)) {
            continue;
        }
        tel.handle(now, &f);
        match tel.height() {
            Some((h, HeightSource::GroundTruth)) => last_truth = Some(h),
            Some((h, HeightSource::AmslSinceArm)) if last_truth.is_some() && switched.is_none() => {
                switched = Some((tel.sim_ms().unwrap(), h));
            }
            _ => {}
        }
    }
    let (at_ms, h) = switched.expect("never switched to AMSL");
    assert!(
        (25_000..=25_000 + 600).contains(&at_ms),
        "switched at {at_ms} ms"
    );
    let t = last_truth.unwrap();
    assert!((h - t).abs() < 0.8, "AMSL {h} vs last truth {t}");
}
