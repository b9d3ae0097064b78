//! The airplane (SIH's `sihsim_airplane`) and the hexarotor: what differs from the quadrotor.

use super::*;
use crate::params::{P, TABLE};
use crate::VehicleType;
use mav::MavCmd::*;
use mav::MavFrame;

fn booted(vehicle: VehicleType) -> Gcs {
    let mut g = Gcs::with(VehicleConfig::vehicle(0, vehicle));
    g.run(5_000);
    assert!(g.prearm_since_ms.is_some());
    g
}

fn circle_radius(g: &Gcs, center: [f32; 2]) -> f32 {
    let p = g.v.snapshot().position_ned_m;
    (p[0] - center[0]).hypot(p[1] - center[1])
}

#[test]
fn the_airplane_is_px4s_fixed_wing_on_the_wire() {
    let g = booted(VehicleType::FixedWing);
    let hb = g.hb.clone().unwrap();
    assert_eq!(hb.mavtype, mav::MavType::MAV_TYPE_FIXED_WING);
    // PX4's list for the airplane: the fixed-wing controllers', not the multicopter's.
    assert_eq!(g.v.params.count(), 964);
    assert_eq!(g.v.params.i(P::SYS_AUTOSTART), 10041);
    assert_eq!(g.v.params.f(P::MIS_TAKEOFF_ALT), 25.0);
    assert!(g.v.params.index_of("RWTO_TKOFF").is_some());
    assert!(g.v.params.index_of("MC_ROLL_P").is_none());
    // The hexarotor: the quadrotor's list with its airframe's rotors; HEARTBEAT type 2, as PX4
    // sends it (MAV_TYPE from rc.mc_defaults).
    let h = booted(VehicleType::Hexarotor);
    assert_eq!(
        h.hb.clone().unwrap().mavtype,
        mav::MavType::MAV_TYPE_QUADROTOR
    );
    assert_eq!(h.v.params.count() as usize, TABLE.len());
    assert_eq!(h.v.params.i(P::SYS_AUTOSTART), 10044);
    let rotors = h.v.params.index_of("CA_ROTOR_COUNT").unwrap();
    assert_eq!(h.v.params.entry(rotors).unwrap().2.as_f32(), 6.0);
}

#[test]
fn takeoff_rolls_climbs_out_and_holds_a_loiter_circle() {
    let mut g = booted(VehicleType::FixedWing);
    let from = g.log.len();
    g.set_mode(Mode::Takeoff);
    g.arm();
    let t_arm = g.now_ms();
    // The runway roll: on the ground, gaining speed along the heading.
    g.run(1_500);
    let s = g.v.snapshot();
    assert!(
        s.position_ned_m[2] == 0.0 && s.position_ned_m[0] > 1.0,
        "{s:?}"
    );
    assert!(g.run_until(60_000, |g| g.mode() == Some(Mode::Hold)));
    let climb_s = (g.now_ms() - t_arm) as f32 / 1000.0;
    // MIS_TAKEOFF_ALT 25 m at ~4.2 m/s after a ~2.5 s roll.
    assert!((7.0..12.0).contains(&climb_s), "{climb_s} s");
    assert!(g.v.true_height_m() >= 25.0);
    assert_subsequence(
        &g.events(from),
        &[
            Ev::Text {
                sev: 6,
                text: "Using default takeoff altitude: 25.0 m".into(),
            },
            Ev::Text {
                sev: 6,
                text: "Takeoff detected".into(),
            },
            Ev::Mode(Mode::Hold),
        ],
    );
    // Hold circles where it was at NAV_LOITER_RAD (80 m), at cruise speed.
    let p = g.v.snapshot().position_ned_m;
    let center = [p[0], p[1]];
    g.run(90_000);
    let r = circle_radius(&g, center);
    assert!((r - 80.0).abs() < 8.0, "loiter radius {r}");
    let speed = g.v.body.ground_speed_m_s();
    assert!((12.0..=15.0).contains(&speed), "{speed}");
    assert!(!g.v.body.on_ground && g.v.true_height_m() > 20.0);
}

#[test]
fn goto_is_a_loiter_point_and_land_lands_ahead_and_disarms() {
    let mut g = booted(VehicleType::FixedWing);
    g.set_mode(Mode::Takeoff);
    g.arm();
    assert!(g.run_until(5_000, |g| g.mode() == Some(Mode::Takeoff)));
    assert!(g.run_until(60_000, |g| g.mode() == Some(Mode::Hold)));
    let gp = g.gpos.clone().unwrap();
    let here = g.v.snapshot().position_ned_m;
    // 400 m north at 40 m AMSL above the pad's.
    let dlat = (400.0 / nexus_core::offboard::geo::M_PER_DEG * 1e7) as i32;
    let origin_alt = g.v.config().origin.alt_amsl_m;
    g.cmd_int(
        MAV_CMD_DO_REPOSITION,
        MavFrame::MAV_FRAME_GLOBAL_INT,
        [-1.0, 1.0, 0.0, f32::NAN],
        gp.lat + dlat,
        gp.lon,
        origin_alt + 40.0,
    );
    g.run(120_000);
    let r = circle_radius(&g, [here[0] + 400.0, here[1]]);
    assert!(
        (r - 80.0).abs() < 8.0,
        "circles the point at NAV_LOITER_RAD: {r}"
    );
    assert!((g.v.true_height_m() - 40.0).abs() < 1.5);
    let from = g.log.len();
    g.set_mode(Mode::Land);
    assert!(g.run_until(200_000, |g| !g.armed()));
    assert!(g.v.body.on_ground && g.v.body.ground_speed_m_s() == 0.0);
    assert_subsequence(
        &g.events(from),
        &[
            Ev::Text {
                sev: 6,
                text: "Landing detected".into(),
            },
            Ev::Armed(false),
        ],
    );
}

/// A NAV_DELAY before the takeoff (examples/plane-mission.plan's 170 s): the airplane waits
/// armed and still where it is, then rolls from there (it used to roll along its heading at
/// cruise speed for the whole delay and take off kilometres away).
#[test]
fn a_delay_before_the_takeoff_waits_still_on_the_ground() {
    let mut g = booted(VehicleType::FixedWing);
    let mut delay = super::mission::item(0, MAV_CMD_NAV_DELAY, 0.0, 0.0, 0.0);
    delay.frame = MavFrame::MAV_FRAME_MISSION;
    delay.param1 = 20.0;
    delay.x = 0;
    delay.y = 0;
    super::mission::upload(
        &mut g,
        &[
            delay,
            super::mission::item(1, MAV_CMD_NAV_TAKEOFF, 0.0, 200.0, 30.0),
        ],
    );
    g.run(10_000);
    g.set_mode(Mode::Mission);
    g.arm();
    assert!(g.run_until(5_000, |g| g.armed()), "{:?}", g.texts());
    let start = g.v.snapshot().position_ned_m;
    g.run(15_000);
    let s = g.v.snapshot();
    assert!(
        g.v.body.on_ground && g.v.body.ground_speed_m_s() == 0.0,
        "{s:?}"
    );
    let moved = (s.position_ned_m[0] - start[0]).hypot(s.position_ned_m[1] - start[1]);
    assert!(moved < 0.5, "moved {moved} m during the delay");
    // After the delay: the takeoff, from where it waited.
    assert!(g.run_until(30_000, |g| g.v.true_height_m() > 10.0));
    let p = g.v.snapshot().position_ned_m;
    let away = (p[0] - start[0]).hypot(p[1] - start[1]);
    assert!(away < 250.0, "{away} m from the pad");
}
