//! The `extra-conditions` rows and typed telemetry through a [`Session`] over UDP, on a lockstep
//! run of the simulated PX4 (instance 92): gps_fix, satellites, battery, landed_state, distance
//! (home, world point, lat/lon), climb_rate, groundspeed, heading, at_target — each met when the
//! vehicle does it, and one that cannot be met timing out; the client's typed telemetry agrees with
//! what the vehicle streams.

mod host_support;

use host_support::*;
use nexus_core::engine::{Condition, Op, Place, Reason, Wait};
use nexus_core::telemetry::GpsFix;
use nexus_core::LandedState;
use nexus_host::groups::{ActionApi, TelemetryApi};

fn met(what: &str, r: &nexus_core::engine::WaitResult) {
    assert_eq!(r.reason, Reason::Met, "{what}: {r:?}");
}

#[test]
fn the_extra_conditions_over_udp() {
    let s = session(lockstep(92));
    let op = s.client();
    let w = |c: Condition, t: f32| Wait::until(c).timeout_s(t);

    // On the pad: the GPS, battery and landed state the vehicle streams.
    let r = s
        .wait(&w(Condition::gps_fix(GpsFix::Fix3d), 30.0), CAP)
        .unwrap();
    met("gps_fix >= 3d", &r);
    let r = s.wait(&w(Condition::satellites(8), 30.0), CAP).unwrap();
    met("satellites >= 8", &r);
    let r = s
        .wait(&w(Condition::battery_voltage_v(15.0), 10.0), CAP)
        .unwrap();
    met("battery_voltage >= 15", &r);
    let r = s
        .wait(
            &w(Condition::landed_state(&[LandedState::OnGround]), 10.0),
            CAP,
        )
        .unwrap();
    met("landed_state ON_GROUND", &r);
    let r = s
        .wait(
            &w(Condition::distance_m(1.0, Place::Home).op(Op::Le), 30.0),
            CAP,
        )
        .unwrap();
    met("distance to home <= 1", &r);
    // A full battery never drops below 30 % on the pad: a timeout in sim time.
    let r = s
        .wait(
            &w(Condition::battery_remaining_pct(30.0).op(Op::Le), 2.0),
            CAP,
        )
        .unwrap();
    assert_eq!(r.reason, Reason::Timeout, "{r:?}");
    assert!((r.waited_sim_s - 2.0).abs() < 0.1, "{r:?}");

    // The typed telemetry says the same, in units.
    let gps = op.gps().expect("GPS_RAW_INT arrived");
    assert!(gps.fix >= Some(GpsFix::Fix3d), "{gps:?}");
    assert!(gps.satellites >= Some(8), "{gps:?}");
    let b = op.battery().expect("SYS_STATUS arrived");
    assert!(
        b.voltage_v.is_some_and(|v| (10.0..30.0).contains(&v)),
        "{b:?}"
    );
    assert!(b.remaining_pct.is_some_and(|p| p > 30.0), "{b:?}");
    let (pos, home) = (op.position().unwrap(), op.home().unwrap());
    assert!(
        (pos.lat_deg - home.lat_deg).abs() < 1e-5,
        "{pos:?} {home:?}"
    );
    assert!(
        (pos.lon_deg - home.lon_deg).abs() < 1e-5,
        "{pos:?} {home:?}"
    );
    assert!(pos.alt_above_home_m.abs() < 1.0, "{pos:?}");
    assert!(
        (pos.alt_amsl_m - home.alt_amsl_m).abs() < 1.0,
        "{pos:?} {home:?}"
    );
    assert!(op.local_ned().is_some() && op.attitude().is_some());

    // Takeoff: taking off or in the air, climbing, then at the target and no longer climbing.
    op.takeoff(5.0).unwrap();
    let r = s
        .wait(
            &w(
                Condition::landed_state(&[LandedState::TakingOff, LandedState::InAir]),
                30.0,
            ),
            CAP,
        )
        .unwrap();
    met("landed_state TAKING_OFF | IN_AIR", &r);
    let r = s
        .wait(&w(Condition::climb_rate_m_s(0.5), 30.0), CAP)
        .unwrap();
    met("climb_rate >= 0.5", &r);
    let r = s.wait(&w(Condition::at_target(), 60.0), CAP).unwrap();
    met("at_target (takeoff)", &r);
    let r = s
        .wait(
            &Wait::until(Condition::climb_rate_m_s(0.0).within(0.2))
                .hold_s(1.0)
                .timeout_s(30.0),
            CAP,
        )
        .unwrap();
    met("climb_rate within 0.2 of 0 for 1 s", &r);

    // A goto 30 m north facing east (world yaw −π/2): moving, then there, facing 90°.
    op.goto_flu(30.0, 0.0, 5.0, Some(-core::f32::consts::FRAC_PI_2))
        .unwrap();
    // The verb moved the target: at_target is not met by the takeoff's arrival.
    let r = s.wait(&w(Condition::at_target(), 0.5), CAP).unwrap();
    assert_eq!(
        r.reason,
        Reason::Timeout,
        "at_target right after the goto: {r:?}"
    );
    let r = s
        .wait(&w(Condition::groundspeed_m_s(2.0), 30.0), CAP)
        .unwrap();
    met("groundspeed >= 2", &r);
    let r = s.wait(&w(Condition::at_target(), 60.0), CAP).unwrap();
    met("at_target (goto)", &r);
    let there = Place::World {
        x_m: 30.0,
        y_m: 0.0,
        z_m: 5.0,
    };
    let r = s
        .wait(&w(Condition::distance_m(1.5, there).op(Op::Le), 30.0), CAP)
        .unwrap();
    met("distance to (30, 0, 5) <= 1.5", &r);
    let r = s
        .wait(&w(Condition::distance_m(28.0, Place::Home), 30.0), CAP)
        .unwrap();
    met("distance to home >= 28", &r);
    let r = s
        .wait(&w(Condition::heading_deg(90.0).within(5.0), 30.0), CAP)
        .unwrap();
    met("heading within 5 of 90", &r);
    let heading = op.heading_rad().unwrap().to_degrees();
    assert!((heading - 90.0).abs() <= 5.0, "{heading}");
    let r = s
        .wait(&w(Condition::groundspeed_m_s(0.3).op(Op::Le), 30.0), CAP)
        .unwrap();
    met("groundspeed <= 0.3", &r);
    let home = op.home().unwrap();
    let r = s
        .wait(
            &w(
                Condition::distance_m(
                    30.0,
                    Place::LatLon {
                        lat_deg: home.lat_deg,
                        lon_deg: home.lon_deg,
                    },
                )
                .within(1.5),
                30.0,
            ),
            CAP,
        )
        .unwrap();
    met("distance to home's lat/lon within 1.5 of 30", &r);
    // Down is off by PX4's home-altitude correction after takeoff (about 1 m here): the goto's
    // height is over the home PX4 reports, the local origin stays where it powered up.
    let ned = op.local_ned().unwrap();
    assert!(
        (ned.north_m - 30.0).abs() < 1.5 && (ned.down_m + 5.0).abs() < 1.5,
        "{ned:?}"
    );

    // Land: descending, then on the ground.
    op.land().unwrap();
    let r = s
        .wait(&w(Condition::climb_rate_m_s(-0.3).op(Op::Le), 30.0), CAP)
        .unwrap();
    met("climb_rate <= -0.3", &r);
    let r = s
        .wait(
            &w(Condition::landed_state(&[LandedState::OnGround]), 120.0),
            CAP,
        )
        .unwrap();
    met("landed_state ON_GROUND after landing", &r);
}
