//! The condition table's `extra-conditions` rows (docs/cli.md §Conditions), row by row:
//! every row × every op and `within`, met / timeout / cap, never met before the message it
//! reads, with `hold_s` and as a guard, and the registration errors.
#![cfg(feature = "extra-conditions")]

mod engine_support;

use engine_support::*;
use nexus_core::engine::{Condition, ConditionKind, Op, Place, Reason, SpecError, Wait};
use nexus_core::telemetry::GpsFix;
use nexus_core::{mav, LandedState, Msg, VtolState};

fn clock(r: &mut Rig) {
    r.sim_ms = 1000;
    r.feed(system_time(1000));
}

fn hud(groundspeed: f32, climb: f32) -> nexus_core::Frame {
    frame(Msg::VfrHud(mav::VFR_HUD_DATA {
        airspeed: 0.0,
        groundspeed,
        climb,
        ..Default::default()
    }))
}

fn yaw_deg(deg: f32) -> nexus_core::Frame {
    frame(Msg::Attitude(mav::ATTITUDE_DATA {
        time_boot_ms: 1000,
        yaw: deg.to_radians(),
        ..Default::default()
    }))
}

fn battery(mv: u16, pct: i8) -> nexus_core::Frame {
    frame(Msg::SysStatus(mav::SYS_STATUS_DATA {
        voltage_battery: mv,
        battery_remaining: pct,
        ..Default::default()
    }))
}

fn gps(fix: mav::GpsFixType, sats: u8) -> nexus_core::Frame {
    frame(Msg::GpsRawInt(mav::GPS_RAW_INT_DATA {
        fix_type: fix,
        satellites_visible: sats,
        ..Default::default()
    }))
}

const LAT: i32 = 473_977_420;
const LON: i32 = 85_455_940;

/// GLOBAL_POSITION_INT `north_m` north of (LAT, LON).
fn north_of_home(north_m: f64) -> nexus_core::Frame {
    let dlat = north_m / nexus_core::offboard::geo::M_PER_DEG;
    frame(Msg::GlobalPositionInt(mav::GLOBAL_POSITION_INT_DATA {
        time_boot_ms: 1000,
        lat: LAT + (dlat * 1e7).round() as i32,
        lon: LON,
        alt: 488_000,
        ..Default::default()
    }))
}

fn home() -> nexus_core::Frame {
    frame(Msg::HomePosition(mav::HOME_POSITION_DATA {
        latitude: LAT,
        longitude: LON,
        altitude: 488_000,
        ..Default::default()
    }))
}

fn local(x: f32, y: f32, z: f32) -> nexus_core::Frame {
    frame(Msg::LocalPositionNed(mav::LOCAL_POSITION_NED_DATA {
        time_boot_ms: 1000,
        x,
        y,
        z,
        ..Default::default()
    }))
}

struct Case {
    name: &'static str,
    wait: fn() -> Wait,
    setup: fn(&mut Rig),
    make_true: fn(&mut Rig),
}

macro_rules! case {
    ($name:expr, $wait:expr, $setup:expr, $make_true:expr) => {
        Case {
            name: $name,
            wait: $wait,
            setup: $setup,
            make_true: $make_true,
        }
    };
}

fn until(c: Condition) -> Wait {
    Wait::until(c)
}

const LATLON: Place = Place::LatLon {
    lat_deg: LAT as f64 / 1e7,
    lon_deg: LON as f64 / 1e7,
};
const WORLD: Place = Place::World {
    x_m: 10.0,
    y_m: -5.0,
    z_m: 3.0,
};

fn cases() -> Vec<Case> {
    use mav::GpsFixType as F;
    use mav::MavLandedState as L;
    use mav::MavVtolState as V;
    vec![
        // groundspeed: VFR_HUD.groundspeed
        case!(
            "groundspeed >=",
            || until(Condition::groundspeed_m_s(5.0)),
            |r| {
                clock(r);
                r.feed(hud(1.0, 0.0))
            },
            |r| r.feed(hud(5.5, 0.0))
        ),
        case!(
            "groundspeed <=",
            || until(Condition::groundspeed_m_s(0.5).op(Op::Le)),
            |r| {
                clock(r);
                r.feed(hud(3.0, 0.0))
            },
            |r| r.feed(hud(0.2, 0.0))
        ),
        case!(
            "groundspeed ==",
            || until(Condition::groundspeed_m_s(2.0).op(Op::Eq)),
            |r| {
                clock(r);
                r.feed(hud(2.5, 0.0))
            },
            |r| r.feed(hud(2.0, 0.0))
        ),
        case!(
            "groundspeed within",
            || until(Condition::groundspeed_m_s(4.0).within(0.5)),
            |r| {
                clock(r);
                r.feed(hud(5.0, 0.0))
            },
            |r| r.feed(hud(4.4, 0.0))
        ),
        // climb_rate: VFR_HUD.climb
        case!(
            "climb_rate >=",
            || until(Condition::climb_rate_m_s(1.0)),
            |r| {
                clock(r);
                r.feed(hud(0.0, 0.0))
            },
            |r| r.feed(hud(0.0, 1.5))
        ),
        case!(
            "climb_rate <=",
            || until(Condition::climb_rate_m_s(-0.5).op(Op::Le)),
            |r| {
                clock(r);
                r.feed(hud(0.0, 0.0))
            },
            |r| r.feed(hud(0.0, -1.0))
        ),
        case!(
            "climb_rate ==",
            || until(Condition::climb_rate_m_s(0.0).op(Op::Eq)),
            |r| {
                clock(r);
                r.feed(hud(0.0, 2.0))
            },
            |r| r.feed(hud(0.0, 0.0))
        ),
        case!(
            "climb_rate within",
            || until(Condition::climb_rate_m_s(0.0).within(0.1)),
            |r| {
                clock(r);
                r.feed(hud(0.0, 2.0))
            },
            |r| r.feed(hud(0.0, -0.05))
        ),
        // heading: ATTITUDE.yaw as a compass heading
        case!(
            "heading >=",
            || until(Condition::heading_deg(180.0)),
            |r| {
                clock(r);
                r.feed(yaw_deg(90.0))
            },
            |r| r.feed(yaw_deg(-90.0))
        ),
        case!(
            "heading <=",
            || until(Condition::heading_deg(10.0).op(Op::Le)),
            |r| {
                clock(r);
                r.feed(yaw_deg(-90.0))
            },
            |r| r.feed(yaw_deg(5.0))
        ),
        case!(
            "heading ==",
            || until(Condition::heading_deg(0.0).op(Op::Eq)),
            |r| {
                clock(r);
                r.feed(yaw_deg(45.0))
            },
            |r| r.feed(yaw_deg(0.0))
        ),
        case!(
            "heading within (across north)",
            || until(Condition::heading_deg(359.0).within(5.0)),
            |r| {
                clock(r);
                r.feed(yaw_deg(10.0))
            },
            |r| r.feed(yaw_deg(2.0))
        ),
        // battery_remaining: SYS_STATUS.battery_remaining
        case!(
            "battery_remaining >=",
            || until(Condition::battery_remaining_pct(90.0)),
            |r| {
                clock(r);
                r.feed(battery(16_000, 50))
            },
            |r| r.feed(battery(16_000, 95))
        ),
        case!(
            "battery_remaining <=",
            || until(Condition::battery_remaining_pct(30.0).op(Op::Le)),
            |r| {
                clock(r);
                r.feed(battery(16_000, 80))
            },
            |r| r.feed(battery(15_000, 29))
        ),
        case!(
            "battery_remaining ==",
            || until(Condition::battery_remaining_pct(50.0).op(Op::Eq)),
            |r| {
                clock(r);
                r.feed(battery(16_000, 51))
            },
            |r| r.feed(battery(16_000, 50))
        ),
        case!(
            "battery_remaining within",
            || until(Condition::battery_remaining_pct(50.0).within(2.0)),
            |r| {
                clock(r);
                r.feed(battery(16_000, 60))
            },
            |r| r.feed(battery(16_000, 48))
        ),
        // battery_voltage: SYS_STATUS.voltage_battery
        case!(
            "battery_voltage >=",
            || until(Condition::battery_voltage_v(16.0)),
            |r| {
                clock(r);
                r.feed(battery(15_000, 50))
            },
            |r| r.feed(battery(16_200, 50))
        ),
        case!(
            "battery_voltage <=",
            || until(Condition::battery_voltage_v(14.0).op(Op::Le)),
            |r| {
                clock(r);
                r.feed(battery(16_000, 50))
            },
            |r| r.feed(battery(13_900, 50))
        ),
        case!(
            "battery_voltage ==",
            || until(Condition::battery_voltage_v(15.0).op(Op::Eq)),
            |r| {
                clock(r);
                r.feed(battery(16_000, 50))
            },
            |r| r.feed(battery(15_000, 50))
        ),
        case!(
            "battery_voltage within",
            || until(Condition::battery_voltage_v(15.0).within(0.1)),
            |r| {
                clock(r);
                r.feed(battery(16_000, 50))
            },
            |r| r.feed(battery(15_050, 50))
        ),
        // gps_fix: GPS_RAW_INT.fix_type
        case!(
            "gps_fix >= (at least)",
            || until(Condition::gps_fix(GpsFix::Fix3d)),
            |r| {
                clock(r);
                r.feed(gps(F::GPS_FIX_TYPE_2D_FIX, 5))
            },
            |r| r.feed(gps(F::GPS_FIX_TYPE_RTK_FIXED, 5))
        ),
        case!(
            "gps_fix <=",
            || until(Condition::gps_fix(GpsFix::NoFix).op(Op::Le)),
            |r| {
                clock(r);
                r.feed(gps(F::GPS_FIX_TYPE_3D_FIX, 5))
            },
            |r| r.feed(gps(F::GPS_FIX_TYPE_NO_GPS, 0))
        ),
        case!(
            "gps_fix ==",
            || until(Condition::gps_fix(GpsFix::Fix3d).op(Op::Eq)),
            |r| {
                clock(r);
                r.feed(gps(F::GPS_FIX_TYPE_RTK_FIXED, 5))
            },
            |r| r.feed(gps(F::GPS_FIX_TYPE_3D_FIX, 5))
        ),
        case!(
            "gps_fix within",
            || until(Condition::gps_fix(GpsFix::Fix3d).within(1.0)),
            |r| {
                clock(r);
                r.feed(gps(F::GPS_FIX_TYPE_NO_FIX, 5))
            },
            |r| r.feed(gps(F::GPS_FIX_TYPE_DGPS, 5))
        ),
        // satellites: GPS_RAW_INT.satellites_visible
        case!(
            "satellites >=",
            || until(Condition::satellites(10)),
            |r| {
                clock(r);
                r.feed(gps(F::GPS_FIX_TYPE_3D_FIX, 6))
            },
            |r| r.feed(gps(F::GPS_FIX_TYPE_3D_FIX, 12))
        ),
        case!(
            "satellites <=",
            || until(Condition::satellites(4).op(Op::Le)),
            |r| {
                clock(r);
                r.feed(gps(F::GPS_FIX_TYPE_3D_FIX, 10))
            },
            |r| r.feed(gps(F::GPS_FIX_TYPE_3D_FIX, 3))
        ),
        case!(
            "satellites ==",
            || until(Condition::satellites(8).op(Op::Eq)),
            |r| {
                clock(r);
                r.feed(gps(F::GPS_FIX_TYPE_3D_FIX, 9))
            },
            |r| r.feed(gps(F::GPS_FIX_TYPE_3D_FIX, 8))
        ),
        case!(
            "satellites within",
            || until(Condition::satellites(8).within(1.0)),
            |r| {
                clock(r);
                r.feed(gps(F::GPS_FIX_TYPE_3D_FIX, 12))
            },
            |r| r.feed(gps(F::GPS_FIX_TYPE_3D_FIX, 7))
        ),
        // landed_state: EXTENDED_SYS_STATE.landed_state, any of
        case!(
            "landed_state any of",
            || until(Condition::landed_state(&[
                LandedState::TakingOff,
                LandedState::InAir
            ])),
            |r| {
                clock(r);
                r.feed(landed_state(L::MAV_LANDED_STATE_ON_GROUND))
            },
            |r| r.feed(landed_state(L::MAV_LANDED_STATE_IN_AIR))
        ),
        case!(
            "landed_state one",
            || until(Condition::landed_state(&[LandedState::Landing])),
            |r| {
                clock(r);
                r.feed(landed_state(L::MAV_LANDED_STATE_IN_AIR))
            },
            |r| r.feed(landed_state(L::MAV_LANDED_STATE_LANDING))
        ),
        // vtol_state: EXTENDED_SYS_STATE.vtol_state, any of
        case!(
            "vtol_state one",
            || until(Condition::vtol_state(&[VtolState::Fw])),
            |r| {
                clock(r);
                r.feed(vtol_state(V::MAV_VTOL_STATE_TRANSITION_TO_FW))
            },
            |r| r.feed(vtol_state(V::MAV_VTOL_STATE_FW))
        ),
        case!(
            "vtol_state any of",
            || until(Condition::vtol_state(&[
                VtolState::TransitionToMc,
                VtolState::Mc
            ])),
            |r| {
                clock(r);
                r.feed(vtol_state(V::MAV_VTOL_STATE_FW))
            },
            |r| r.feed(vtol_state(V::MAV_VTOL_STATE_TRANSITION_TO_MC))
        ),
        // distance to home: GLOBAL_POSITION_INT and HOME_POSITION, horizontal
        case!(
            "distance home >=",
            || until(Condition::distance_m(20.0, Place::Home)),
            |r| {
                clock(r);
                r.feed(home());
                r.feed(north_of_home(5.0))
            },
            |r| r.feed(north_of_home(20.5))
        ),
        case!(
            "distance home <=",
            || until(Condition::distance_m(2.0, Place::Home).op(Op::Le)),
            |r| {
                clock(r);
                r.feed(home());
                r.feed(north_of_home(30.0))
            },
            |r| r.feed(north_of_home(1.5))
        ),
        case!(
            "distance home ==",
            || until(Condition::distance_m(0.0, Place::Home).op(Op::Eq)),
            |r| {
                clock(r);
                r.feed(home());
                r.feed(north_of_home(30.0))
            },
            |r| r.feed(north_of_home(0.0))
        ),
        case!(
            "distance home within",
            || until(Condition::distance_m(10.0, Place::Home).within(0.5)),
            |r| {
                clock(r);
                r.feed(home());
                r.feed(north_of_home(30.0))
            },
            |r| r.feed(north_of_home(10.2))
        ),
        // distance to a lat/lon: GLOBAL_POSITION_INT
        case!(
            "distance lat/lon <=",
            || until(Condition::distance_m(3.0, LATLON).op(Op::Le)),
            |r| {
                clock(r);
                r.feed(north_of_home(50.0))
            },
            |r| r.feed(north_of_home(-2.0))
        ),
        case!(
            "distance lat/lon within",
            || until(Condition::distance_m(50.0, LATLON).within(1.0)),
            |r| {
                clock(r);
                r.feed(north_of_home(0.0))
            },
            |r| r.feed(north_of_home(-50.5))
        ),
        // distance to a world point (FLU): LOCAL_POSITION_NED, 3D
        case!(
            "distance world <=",
            || until(Condition::distance_m(1.0, WORLD).op(Op::Le)),
            |r| {
                clock(r);
                r.feed(local(0.0, 0.0, 0.0))
            },
            // world (10, -5, 3) is NED (10, 5, -3)
            |r| r.feed(local(10.0, 5.5, -3.0))
        ),
        case!(
            "distance world >=",
            || until(Condition::distance_m(5.0, WORLD)),
            |r| {
                clock(r);
                r.feed(local(10.0, 5.0, -3.0))
            },
            |r| r.feed(local(10.0, 5.0, 3.0))
        ),
        case!(
            "distance world ==",
            || until(Condition::distance_m(0.0, WORLD).op(Op::Eq)),
            |r| {
                clock(r);
                r.feed(local(0.0, 0.0, 0.0))
            },
            |r| r.feed(local(10.0, 5.0, -3.0))
        ),
        case!(
            "distance world within",
            || until(Condition::distance_m(6.0, WORLD).within(0.01)),
            |r| {
                clock(r);
                r.feed(local(10.0, 5.0, -3.0))
            },
            |r| r.feed(local(10.0, 5.0, 3.0))
        ),
        // at_target: the client's input
        case!(
            "at_target",
            || until(Condition::at_target()),
            |r| {
                clock(r);
                r.engine.set_at_target(Some(false))
            },
            |r| {
                r.engine.set_at_target(Some(true));
                r.feed(neutral())
            }
        ),
    ]
}

fn registered(case: &Case, timeout_s: f32) -> (Rig, nexus_core::engine::WaitId) {
    let mut r = Rig::new();
    (case.setup)(&mut r);
    let w = (case.wait)().timeout_s(timeout_s);
    let id = r
        .register(&w)
        .unwrap_or_else(|e| panic!("{}: {e}", case.name));
    assert!(
        r.result(id).is_none(),
        "{}: settled at registration",
        case.name
    );
    (r, id)
}

#[test]
fn every_new_row_is_met_when_its_condition_holds() {
    for case in cases() {
        let (mut r, id) = registered(&case, 60.0);
        r.feed(neutral());
        r.tick(100);
        assert!(r.result(id).is_none(), "{}: met while false", case.name);
        (case.make_true)(&mut r);
        let res = r
            .result(id)
            .unwrap_or_else(|| panic!("{}: not met", case.name));
        assert_eq!(res.reason, Reason::Met, "{}", case.name);
        r.tick(100);
        assert_eq!(r.results(id).len(), 1, "{}", case.name);
    }
}

#[test]
fn every_new_row_times_out_and_caps() {
    for case in cases() {
        let (mut r, id) = registered(&case, 5.0);
        r.run(4_900, 100);
        assert!(r.result(id).is_none(), "{}: early", case.name);
        r.tick(100);
        let res = r
            .result(id)
            .unwrap_or_else(|| panic!("{}: no timeout", case.name));
        assert_eq!(res.reason, Reason::Timeout, "{}", case.name);

        let (mut r, id) = registered(&case, 60.0);
        r.cap(id).unwrap();
        assert_eq!(
            r.result(id).map(|x| x.reason),
            Some(Reason::Cap),
            "{}",
            case.name
        );
    }
}

#[test]
fn every_new_row_already_true_settles_at_registration() {
    for case in cases() {
        let mut r = Rig::new();
        (case.setup)(&mut r);
        (case.make_true)(&mut r);
        let id = r.register(&(case.wait)().timeout_s(60.0)).unwrap();
        assert_eq!(
            r.result(id).map(|x| x.reason),
            Some(Reason::Met),
            "{}",
            case.name
        );
    }
}

#[test]
fn every_new_row_with_hold_s_needs_the_hold() {
    for case in cases() {
        let mut r = Rig::new();
        (case.setup)(&mut r);
        let id = r
            .register(&(case.wait)().hold_s(2.0).timeout_s(60.0))
            .unwrap();
        (case.make_true)(&mut r);
        r.run(1_900, 100);
        assert!(r.result(id).is_none(), "{}: met before the hold", case.name);
        r.run(200, 100);
        assert_eq!(
            r.result(id).map(|x| x.reason),
            Some(Reason::Met),
            "{}",
            case.name
        );
    }
}

#[test]
fn every_new_row_works_as_a_guard() {
    for case in cases() {
        let mut r = Rig::new();
        (case.setup)(&mut r);
        let guard = (case.wait)().condition().clone();
        let id = r
            .register(&Wait::time_s(50.0).guard(guard).timeout_s(60.0))
            .unwrap();
        r.tick(100);
        assert!(
            r.result(id).is_none(),
            "{}: guard fired while false",
            case.name
        );
        (case.make_true)(&mut r);
        let res = r
            .result(id)
            .unwrap_or_else(|| panic!("{}: guard did not fire", case.name));
        assert_eq!(
            (res.reason, res.guard),
            (Reason::Guard, Some(0)),
            "{}",
            case.name
        );
    }
}

#[test]
fn no_new_row_is_met_before_its_message_arrives() {
    use mav::GpsFixType as F;
    // Each wait would hold for a zeroed reading; the frame is the message it reads.
    let waits: Vec<(Condition, Vec<nexus_core::Frame>)> = vec![
        (
            Condition::groundspeed_m_s(1.0).op(Op::Le),
            vec![hud(0.0, 0.0)],
        ),
        (
            Condition::climb_rate_m_s(1.0).op(Op::Le),
            vec![hud(0.0, 0.0)],
        ),
        (Condition::heading_deg(10.0).op(Op::Le), vec![yaw_deg(0.0)]),
        (
            Condition::battery_remaining_pct(100.0).op(Op::Le),
            vec![battery(16_000, 50)],
        ),
        (
            Condition::battery_voltage_v(100.0).op(Op::Le),
            vec![battery(16_000, 50)],
        ),
        (
            Condition::gps_fix(GpsFix::Ppp).op(Op::Le),
            vec![gps(F::GPS_FIX_TYPE_3D_FIX, 5)],
        ),
        (
            Condition::satellites(50).op(Op::Le),
            vec![gps(F::GPS_FIX_TYPE_3D_FIX, 5)],
        ),
        (
            Condition::landed_state(&[LandedState::Unknown]),
            vec![landed_state(
                mav::MavLandedState::MAV_LANDED_STATE_UNDEFINED,
            )],
        ),
        (
            Condition::vtol_state(&[VtolState::Undefined]),
            vec![vtol_state(mav::MavVtolState::MAV_VTOL_STATE_UNDEFINED)],
        ),
        (
            Condition::distance_m(100.0, Place::Home).op(Op::Le),
            vec![north_of_home(0.0), home()],
        ),
        (
            Condition::distance_m(100.0, LATLON).op(Op::Le),
            vec![north_of_home(0.0)],
        ),
        (
            Condition::distance_m(100.0, WORLD).op(Op::Le),
            vec![local(0.0, 0.0, 0.0)],
        ),
    ];
    for (c, arrive) in waits {
        let mut r = Rig::new();
        clock(&mut r);
        let id = r.register(&Wait::until(c.clone()).timeout_s(10.0)).unwrap();
        r.run(2_000, 100);
        let (last, first) = arrive.split_last().unwrap();
        for f in first {
            r.feed(f.clone());
            assert!(
                r.result(id).is_none(),
                "{c} met with only part of what it reads"
            );
        }
        assert!(r.result(id).is_none(), "{c} met before its message");
        r.feed(last.clone());
        assert_eq!(r.result(id).map(|x| x.reason), Some(Reason::Met), "{c}");
    }
    // at_target: never met while the client has said nothing.
    let mut r = Rig::new();
    clock(&mut r);
    let id = r
        .register(&Wait::until(Condition::at_target()).timeout_s(10.0))
        .unwrap();
    r.run(2_000, 100);
    assert!(r.result(id).is_none());
}

#[test]
fn unknown_battery_and_satellites_are_never_met() {
    let mut r = Rig::new();
    clock(&mut r);
    let b = r
        .register(&Wait::until(Condition::battery_remaining_pct(100.0).op(Op::Le)).timeout_s(10.0))
        .unwrap();
    let v = r
        .register(&Wait::until(Condition::battery_voltage_v(100.0).op(Op::Le)).timeout_s(10.0))
        .unwrap();
    let s = r
        .register(&Wait::until(Condition::satellites(100).op(Op::Le)).timeout_s(10.0))
        .unwrap();
    r.feed(battery(u16::MAX, -1));
    r.feed(gps(mav::GpsFixType::GPS_FIX_TYPE_3D_FIX, u8::MAX));
    r.run(1_000, 100);
    assert!(r.result(b).is_none() && r.result(v).is_none() && r.result(s).is_none());
    r.feed(battery(16_000, -1));
    assert!(r.result(b).is_none());
    assert_eq!(r.result(v).map(|x| x.reason), Some(Reason::Met));
}

#[test]
fn bad_specs_are_refused() {
    let bad_place = Place::LatLon {
        lat_deg: 91.0,
        lon_deg: 0.0,
    };
    let nan_world = Place::World {
        x_m: f32::NAN,
        y_m: 0.0,
        z_m: 0.0,
    };
    for (c, e) in [
        (
            Condition::distance_m(1.0, bad_place),
            SpecError::BadValue { field: "to" },
        ),
        (
            Condition::distance_m(1.0, nan_world),
            SpecError::BadValue { field: "to" },
        ),
        (
            Condition::distance_m(-1.0, Place::Home),
            SpecError::BadValue { field: "value" },
        ),
        (
            Condition::heading_deg(361.0),
            SpecError::BadValue { field: "value" },
        ),
        (
            Condition::heading_deg(-1.0),
            SpecError::BadValue { field: "value" },
        ),
        (
            Condition::landed_state(&[]),
            SpecError::BadValue { field: "value" },
        ),
        (
            Condition::vtol_state(&[]),
            SpecError::BadValue { field: "value" },
        ),
        (
            Condition::vtol_state(&[VtolState::Fw]).op(Op::Eq),
            SpecError::OpNotApplicable(ConditionKind::VtolState),
        ),
        (
            Condition::at_target().op(Op::Le),
            SpecError::OpNotApplicable(ConditionKind::AtTarget),
        ),
        (
            Condition::landed_state(&[LandedState::InAir]).within(1.0),
            SpecError::WithinNotApplicable(ConditionKind::LandedState),
        ),
        (
            Condition::groundspeed_m_s(f32::INFINITY),
            SpecError::BadValue { field: "value" },
        ),
    ] {
        assert_eq!(c.validate(), Err(e), "{c}");
    }
}

#[test]
fn new_rows_say_what_they_wait_for() {
    assert_eq!(
        Condition::distance_m(2.0, Place::Home)
            .op(Op::Le)
            .to_string(),
        "distance to home <= 2 m"
    );
    assert_eq!(
        Condition::heading_deg(90.0).within(5.0).to_string(),
        "heading within 5° of 90°"
    );
    assert_eq!(
        Condition::landed_state(&[LandedState::InAir, LandedState::TakingOff]).to_string(),
        "landed_state IN_AIR | TAKING_OFF"
    );
    assert_eq!(
        Condition::vtol_state(&[VtolState::TransitionToFw, VtolState::Fw]).to_string(),
        "vtol_state transition_to_fw | fw"
    );
    assert_eq!(
        Condition::battery_remaining_pct(30.0)
            .op(Op::Le)
            .to_string(),
        "battery_remaining <= 30 %"
    );
    assert_eq!(Condition::at_target().to_string(), "at_target");
}
