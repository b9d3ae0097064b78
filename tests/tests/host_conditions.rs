//! The wait engine's waits through a [`Session`] ([`Session::wait`]), one condition after
//! another, on a lockstep run of the simulated PX4 (deterministic and fast): altitude,
//! airspeed, waypoint, sim_time (absolute and relative), time, mode, text, armed, disarmed,
//! landed — and the reasons timeout and guard, and the invalid spec refused.

mod host_support;

use host_support::*;
use nexus_core::engine::{Condition, Op, Reason, SnapshotAt, Wait};
use nexus_core::Mode;
use nexus_host::error::SessionError;
use nexus_host::groups::{ActionApi, MissionApi};
use nexus_host::pump::WaitError;

fn met(r: &nexus_core::engine::WaitResult) {
    assert_eq!(r.reason, Reason::Met, "{r:?}");
    assert!(r.satisfied);
}

#[test]
fn every_condition_of_the_wait_table() {
    let s = session(lockstep(110));
    let op = s.client();

    // Before the vehicle moves: already-true conditions return at once, snapshot_at Return.
    let r = s.wait(&Wait::disarmed().timeout_s(5.0), CAP).unwrap();
    met(&r);
    assert_eq!(r.snapshot_at, SnapshotAt::Return);
    assert_eq!(r.waited_sim_s, 0.0);
    let r = s.wait(&Wait::landed().timeout_s(5.0), CAP).unwrap();
    met(&r);
    let r = s.wait(&Wait::mode(Mode::Hold).timeout_s(5.0), CAP).unwrap();
    met(&r);

    // time: sim seconds from this call.
    let r = s.wait(&Wait::time_s(2.0).timeout_s(10.0), CAP).unwrap();
    met(&r);
    assert!((r.waited_sim_s - 2.0).abs() < 0.1, "{r:?}");
    assert_eq!(r.snapshot_at, SnapshotAt::Settle);

    // sim_time, absolute: a target read off the snapshot.
    let t = r.snapshot.t_sim_s() + 1.5;
    let r = s
        .wait(&Wait::sim_time_s(t as f32).timeout_s(10.0), CAP)
        .unwrap();
    met(&r);
    assert!(
        // The target travels as f32 sim seconds: allow its rounding (a millisecond).
        r.snapshot.t_sim_s() >= t - 0.002 && r.snapshot.t_sim_s() < t + 0.1,
        "{r:?}"
    );

    // sim_time, relative: from the tick the previous wait settled.
    let prev = r.snapshot.sim_ms.unwrap();
    let r = s
        .wait(&Wait::sim_time_s(1.0).relative().timeout_s(10.0), CAP)
        .unwrap();
    met(&r);
    let at = r.snapshot.sim_ms.unwrap();
    assert!(at >= prev + 1000 && at < prev + 1100, "{prev} → {at}");

    // armed, text, mode, altitude: the takeoff, watched by four waits in turn.
    let since = s.snapshot().unwrap().seq;
    op.takeoff(4.0).unwrap();
    let r = s.wait(&Wait::armed().timeout_s(30.0), CAP).unwrap();
    met(&r);
    assert!(r.snapshot.armed);
    let r = s
        .wait(
            &Wait::text("Takeoff detected")
                .since_seq(since)
                .timeout_s(30.0),
            CAP,
        )
        .unwrap();
    met(&r);
    assert!(r
        .snapshot
        .last_text
        .unwrap()
        .text
        .contains("Takeoff detected"));
    let r = s
        .wait(&Wait::altitude_m(3.5).op(Op::Ge).timeout_s(60.0), CAP)
        .unwrap();
    met(&r);
    assert!(r.snapshot.height_m.unwrap() >= 3.5);
    // PX4 hands Takeoff over to Hold by itself at the altitude.
    let r = s
        .wait(&Wait::mode_named("hold").timeout_s(60.0), CAP)
        .unwrap();
    met(&r);
    assert_eq!(r.snapshot.mode, Some(Mode::Hold));

    // airspeed: a long goto gets the vehicle moving.
    op.goto_flu(60.0, 0.0, 4.0, None).unwrap();
    let r = s
        .wait(&Wait::airspeed_m_s(3.0).timeout_s(60.0), CAP)
        .unwrap();
    met(&r);
    assert!(r.snapshot.airspeed_m_s.unwrap() >= 3.0);
    // altitude with <=: still below 10 m.
    let r = s
        .wait(&Wait::altitude_m(10.0).op(Op::Le).timeout_s(5.0), CAP)
        .unwrap();
    met(&r);

    // disarmed, landed after a landing.
    op.land().unwrap();
    let r = s.wait(&Wait::landed().timeout_s(120.0), CAP).unwrap();
    met(&r);
    let r = s.wait(&Wait::disarmed().timeout_s(30.0), CAP).unwrap();
    met(&r);
    assert!(!r.snapshot.armed);
}

#[test]
fn waypoint_during_a_mission() {
    let s = session(lockstep(111));
    let op = s.client();
    op.upload_mission(plan("MC_mission_box.plan").as_path())
        .unwrap();
    s.sim().until(|| op.mission_uploaded(), 30.0).unwrap();
    op.start_mission().unwrap();
    for seq in 1..=4u16 {
        let r = s.wait(&Wait::waypoint(seq).timeout_s(300.0), CAP).unwrap();
        met(&r);
        assert!(r.snapshot.waypoint.unwrap() >= seq, "{r:?}");
    }
    // waypoint ==: exactly item 5 (the landing) becomes current.
    let r = s
        .wait(&Wait::waypoint(5).op(Op::Eq).timeout_s(300.0), CAP)
        .unwrap();
    met(&r);
}

#[test]
fn timeout_guard_and_bad_specs() {
    let s = session(lockstep(112));
    // timeout: sim seconds.
    let r = s.wait(&Wait::altitude_m(50.0).timeout_s(2.0), CAP).unwrap();
    assert_eq!(r.reason, Reason::Timeout, "{r:?}");
    assert!(!r.satisfied);
    assert!((r.waited_sim_s - 2.0).abs() < 0.1, "{r:?}");
    // guard: fail early if a condition holds first.
    let r = s
        .wait(
            &Wait::altitude_m(50.0)
                .guard(Condition::disarmed())
                .timeout_s(20.0),
            CAP,
        )
        .unwrap();
    assert_eq!(r.reason, Reason::Guard);
    assert_eq!(r.guard, Some(0));
    // Refused before anything waits: no timeout, an op on armed, an unknown mode.
    for bad in [
        Wait::armed(),
        Wait::armed().op(Op::Le).timeout_s(1.0),
        Wait::mode_named("Hover").timeout_s(1.0),
    ] {
        match s.wait(&bad, CAP) {
            Err(SessionError::Wait(WaitError::Refused(e))) => {
                assert!(!e.to_string().is_empty())
            }
            other => panic!("{bad:?}: {other:?}"),
        }
    }
    // A relative sim_time before anything settled on a fresh session is refused.
    let fresh = session(lockstep(113));
    match fresh.wait(&Wait::sim_time_s(1.0).relative().timeout_s(5.0), CAP) {
        Err(SessionError::Wait(WaitError::Refused(e))) => {
            assert!(e.to_string().contains("relative"), "{e}")
        }
        other => panic!("{other:?}"),
    }
}
