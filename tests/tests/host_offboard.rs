//! Offboard setpoints over UDP against the simulated PX4 (lockstep, instances 94–97): a square
//! flown by position setpoints and one by velocity setpoints, Offboard refused without a stream,
//! and the stream's loss answered by PX4's failsafe (RTL after COM_OF_LOSS_T).

mod host_support;

use host_support::*;
use nexus_core::engine::{Condition, Op, Place, Reason, Wait};
use nexus_core::offboard::Yaw;
use nexus_core::Mode;
use nexus_host::groups::{ActionApi, OffboardApi, TelemetryApi};
use nexus_host::session::Session;

fn met(what: &str, r: &nexus_core::engine::WaitResult) {
    assert_eq!(r.reason, Reason::Met, "{what}: {r:?}");
}

/// Take off to 5 m and wait until there.
fn airborne(instance: u8) -> Session {
    let s = session(lockstep(instance));
    s.client().takeoff(5.0).unwrap();
    let r = s
        .wait(&Wait::until(Condition::at_target()).timeout_s(60.0), CAP)
        .unwrap();
    met("takeoff", &r);
    s
}

/// Where the vehicle is, local NED, m.
fn ned(s: &Session) -> (f32, f32, f32) {
    let n = s.client().local_ned().unwrap();
    (n.north_m, n.east_m, n.down_m)
}

#[test]
fn a_square_by_position_setpoints() {
    let s = airborne(94);
    let op = s.client();
    let (n0, e0, d0) = ned(&s);
    op.set_position_ned(n0, e0, d0, None).unwrap();
    op.start_offboard().unwrap();
    let r = s
        .wait(&Wait::mode(Mode::Offboard).timeout_s(5.0), CAP)
        .unwrap();
    met("Offboard entered after the first setpoint", &r);
    assert!(r.waited_sim_s < 2.0, "{r:?}");
    for (dn, de) in [(10.0, 0.0), (10.0, 10.0), (0.0, 10.0), (0.0, 0.0)] {
        let (n, e) = (n0 + dn, e0 + de);
        op.set_position_ned(n, e, d0, None).unwrap();
        // World frame: x north, y west, z up.
        let corner = Place::World {
            x_m: n,
            y_m: -e,
            z_m: -d0,
        };
        let r = s
            .wait(
                &Wait::until(Condition::distance_m(0.5, corner).op(Op::Le))
                    .guard(Condition::mode(Mode::Rtl))
                    .timeout_s(60.0),
                CAP,
            )
            .unwrap();
        met(&format!("corner ({dn}, {de})"), &r);
        assert_eq!(op.mode(), Some(Mode::Offboard));
    }
    op.stop_offboard().unwrap();
    let r = s.wait(&Wait::mode(Mode::Hold).timeout_s(5.0), CAP).unwrap();
    met("stop → Hold", &r);
    // No failsafe follows a clean stop.
    let r = s
        .wait(
            &Wait::time_s(3.0)
                .guard(Condition::mode(Mode::Rtl))
                .timeout_s(5.0),
            CAP,
        )
        .unwrap();
    met("Hold stays", &r);
}

#[test]
fn a_square_by_velocity_setpoints() {
    let s = airborne(95);
    let op = s.client();
    let (n0, e0, _) = ned(&s);
    op.set_velocity_ned(0.0, 0.0, 0.0, Yaw::Free).unwrap();
    op.start_offboard().unwrap();
    met(
        "Offboard",
        &s.wait(&Wait::mode(Mode::Offboard).timeout_s(5.0), CAP)
            .unwrap(),
    );
    // 2 m/s for 5 s along each side: a 10 m square.
    for (vn, ve) in [(2.0, 0.0), (0.0, 2.0), (-2.0, 0.0), (0.0, -2.0)] {
        op.set_velocity_ned(vn, ve, 0.0, Yaw::Free).unwrap();
        let r = s.wait(&Wait::time_s(5.0).timeout_s(10.0), CAP).unwrap();
        met("side", &r);
        let r = s
            .wait(
                &Wait::until(Condition::groundspeed_m_s(1.5)).timeout_s(1.0),
                CAP,
            )
            .unwrap();
        met("moving along the side", &r);
    }
    op.set_velocity_ned(0.0, 0.0, 0.0, Yaw::Free).unwrap();
    let r = s
        .wait(
            &Wait::until(Condition::groundspeed_m_s(0.2).op(Op::Le)).timeout_s(10.0),
            CAP,
        )
        .unwrap();
    met("stopped", &r);
    // Back near the start: the sides cancel (within the speed-ups and slow-downs).
    let (n, e, _) = ned(&s);
    assert!(
        (n - n0).abs() < 3.0 && (e - e0).abs() < 3.0,
        "({n}, {e}) vs ({n0}, {e0})"
    );
    assert_eq!(op.mode(), Some(Mode::Offboard));
}

#[test]
fn offboard_is_refused_without_a_stream() {
    let s = airborne(96);
    let op = s.client();
    // The client refuses it before asking.
    assert!(op.start_offboard().is_err());
    // Asked anyway (a mode request with no stream), PX4 refuses: the mode stays Hold.
    op.set_mode(Mode::Offboard).unwrap();
    let r = s
        .wait(&Wait::mode(Mode::Offboard).timeout_s(3.0), CAP)
        .unwrap();
    assert_eq!(r.reason, Reason::Timeout, "{r:?}");
    assert_eq!(op.mode(), Some(Mode::Hold));
}

#[test]
fn the_loss_of_the_stream_is_a_failsafe() {
    let s = airborne(97);
    let op = s.client();
    let (n0, e0, d0) = ned(&s);
    op.set_position_ned(n0, e0, d0, None).unwrap();
    op.start_offboard().unwrap();
    met(
        "Offboard",
        &s.wait(&Wait::mode(Mode::Offboard).timeout_s(5.0), CAP)
            .unwrap(),
    );
    let since = s.snapshot().unwrap().seq;
    op.stop_setpoints().unwrap();
    let r = s
        .wait(
            &Wait::text("Failsafe activated")
                .since_seq(since)
                .timeout_s(5.0),
            CAP,
        )
        .unwrap();
    met("failsafe text", &r);
    // COM_OF_LOSS_T = 1 s: PX4 says it ~1.3 s after the last setpoint.
    assert!(
        (1.0..2.0).contains(&r.waited_sim_s),
        "failsafe after {} s",
        r.waited_sim_s
    );
    let r = s.wait(&Wait::mode(Mode::Rtl).timeout_s(5.0), CAP).unwrap();
    met("RTL", &r);
}
