//! goto: world FLU → geodetic DO_REPOSITION and the yaw reflection, against hand-computed
//! geodesy (R = 6 371 000 m, equirectangular around the anchor latitude), both ways; and
//! at_target measured on what PX4 reports.

mod offboard_rig;

use nexus_core::mav;
use nexus_core::offboard::geo::{self, Anchor};
use nexus_core::offboard::{OffboardConfig, OffboardError};
use offboard_rig::{Rig, HOME_LAT, HOME_LON};
use std::f64::consts::PI;

/// m per degree of latitude: π/180 · 6 371 000.
const M_PER_DEG: f64 = 111_194.926_644_558_74;

fn reposition(rig: &Rig) -> Vec<mav::COMMAND_INT_DATA> {
    rig.sent
        .iter()
        .filter_map(|s| match &s.msg {
            mav::MavMessage::COMMAND_INT(c) => Some(c.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn goto_before_a_position_is_an_error() {
    let mut rig = Rig::new();
    rig.px4.pos_at_ms = 60_000;
    assert!(rig.run_until(5_000, |r| r.tel.connected()));
    assert_eq!(
        rig.ob.goto_flu(&rig.tel, 1.0, 0.0, 2.0, None),
        Err(OffboardError::NoPosition)
    );
    assert_eq!(rig.ob.anchor(), None);
    assert_eq!(
        rig.ob.goto_flu(&rig.tel, f32::NAN, 0.0, 2.0, None),
        Err(OffboardError::InvalidArgument("goto x must be finite"))
    );
}

#[test]
fn goto_on_the_wire_matches_hand_computed_geodesy() {
    let mut rig = Rig::new();
    rig.auto_reply = false;
    rig.boot();
    // The vehicle sits at home: lat 47.397742, lon 8.545594, 488 m AMSL, relative 0.
    rig.ob
        .goto_flu(&rig.tel, 10.0, 5.0, 3.0, Some((PI / 2.0) as f32))
        .unwrap();
    rig.pump();
    // 10 m north, 5 m west (world y is left):
    //   lat = 47.397742 + 10 / 111194.9266 = 47.39783193216 → 473978319
    //   lon = 8.545594 − 5 / (111194.9266 · cos 47.397742°) = 8.54552757106 → 85455276
    // altitude 488 + 3 = 491 m AMSL; world yaw +90° (facing west) is NED −90°.
    let c = &reposition(&rig)[0];
    assert_eq!(c.command, mav::MavCmd::MAV_CMD_DO_REPOSITION);
    assert_eq!(c.frame as u8, 5, "MAV_FRAME_GLOBAL_INT");
    assert_eq!((c.target_system, c.target_component), (1, 1));
    assert_eq!((c.param1, c.param2, c.param3), (-1.0, 1.0, 0.0));
    assert_eq!(c.param4, (-PI / 2.0) as f32);
    assert_eq!((c.x, c.y), (473_978_319, 85_455_276));
    assert_eq!(c.z, 491.0);
    assert_eq!((c.current, c.autocontinue), (0, 0));
    let anchor = rig.ob.anchor().unwrap();
    assert_eq!(
        (anchor.lat0_deg, anchor.lon0_deg, anchor.home_amsl_m),
        (HOME_LAT, HOME_LON, 488.0)
    );

    // The anchor stays where the first goto captured it, wherever the vehicle is now.
    rig.px4.pos = (50.0, 20.0, 7.0);
    rig.run_ms(100);
    rig.ob.goto_flu(&rig.tel, -120.0, -35.5, 0.0, None).unwrap();
    rig.pump();
    let c = &reposition(&rig)[1];
    // lat = 47.397742 − 120 / 111194.9266 = 47.39666281407 → 473966628
    // lon = 8.545594 + 35.5 / (111194.9266 · cos 47.397742°) = 8.54606564547 → 85460656
    assert_eq!((c.x, c.y), (473_966_628, 85_460_656));
    assert_eq!(c.z, 488.0);
    assert!(c.param4.is_nan(), "no yaw: NaN keeps the heading");
    assert_eq!(rig.ob.anchor(), Some(anchor));
}

#[test]
fn the_tangent_plane_both_ways() {
    let a = Anchor {
        lat0_deg: HOME_LAT,
        lon0_deg: HOME_LON,
        home_amsl_m: 488.0,
    };
    let (lat, lon) = a.to_global(10.0, 5.0);
    assert!((lat - 47.397_831_932_160_59).abs() < 1e-12, "{lat}");
    assert!((lon - 8.545_527_571_059_852).abs() < 1e-12, "{lon}");
    // Back: 1 µdeg of latitude is 0.111 m; the round trip is exact to far below a millimetre.
    let (x, y) = a.to_world(lat, lon);
    assert!((x - 10.0).abs() < 1e-6 && (y - 5.0).abs() < 1e-6, "{x} {y}");
    // A point PX4 reports 0.0001° north and 0.0001° east of the anchor.
    let (x, y) = a.to_world(HOME_LAT + 1e-4, HOME_LON + 1e-4);
    let east = 1e-4 * M_PER_DEG * HOME_LAT.to_radians().cos();
    assert!((x - 11.119_492_664_455_874).abs() < 1e-6, "{x}");
    assert!(
        (y + east).abs() < 1e-6 && (y + 7.526_84).abs() < 1e-5,
        "{y}"
    );
    assert_eq!(a.amsl_m(3.0), 491.0);
    assert_eq!(geo::deg_to_e7(47.39783193216059), Some(473_978_319));
    assert_eq!(geo::deg_to_e7(-33.8688), Some(-338_688_000));
    assert_eq!(geo::deg_to_e7(400.0), None);
    assert_eq!(geo::deg_to_e7(f64::NAN), None);
}

#[test]
fn yaw_is_reflected_both_ways() {
    let close = |a: f64, b: f64| (a - b).abs() < 1e-12;
    // World +90° (toward +y = west) is NED −90° (west of north).
    assert!(close(geo::yaw_world_to_ned(PI / 2.0), -PI / 2.0));
    assert!(close(
        geo::yaw_world_to_ned(-3.0 * PI / 4.0),
        3.0 * PI / 4.0
    ));
    assert!(close(geo::yaw_world_to_ned(0.1), -0.1));
    // Wrapped into [−π, π), as Python's (a + π) % 2π − π.
    assert!(close(geo::yaw_world_to_ned(PI), -PI));
    assert!(close(geo::yaw_world_to_ned(-PI), -PI));
    assert!(close(geo::yaw_world_to_ned(5.0 * PI / 2.0), -PI / 2.0));
    for y in [-3.0, -1.0, 0.0, 0.5, 2.9] {
        assert!(close(geo::yaw_ned_to_world(geo::yaw_world_to_ned(y)), y));
    }
}

#[test]
fn at_target_and_goto_altitude_ignore_px4s_home_re_estimation() {
    let mut rig = Rig::with_config(OffboardConfig::default());
    rig.px4.ready_at_ms = 0;
    rig.boot();
    rig.ob.takeoff(rig.now(), &rig.tel, 2.5).unwrap();
    assert!(rig.run_until(30_000, |r| r.ob.at_target(&r.tel)));
    rig.run_ms(5_000);
    assert!(rig.ob.at_target(&rig.tel));
    // PX4 moves its home 1.5 m down: relative_alt jumps to ~4 m, the vehicle has not moved.
    rig.px4.home_error_m = 1.5;
    rig.run_ms(200);
    assert!(rig.tel.relative_alt_m().unwrap() > 3.9);
    assert!(
        rig.ob.at_target(&rig.tel),
        "the height above the pad did not change"
    );

    // A goto to z = 3 m asks for the pad's AMSL + 3 m, not PX4's moved home + 3 m.
    rig.auto_reply = false;
    rig.ob.goto_flu(&rig.tel, 0.0, 0.0, 3.0, None).unwrap();
    rig.pump();
    let c = reposition(&rig).pop().expect("a DO_REPOSITION");
    let pad_amsl_m = offboard_rig::HOME_AMSL_M;
    assert!((c.z as f64 - (pad_amsl_m + 3.0)).abs() < 0.01, "z {}", c.z);
}

#[test]
fn at_target_measures_what_px4_reports() {
    let mut rig = Rig::with_config(OffboardConfig::default());
    rig.px4.ready_at_ms = 0;
    rig.boot();
    assert!(!rig.ob.at_target(&rig.tel), "no target yet");
    rig.ob.takeoff(rig.now(), &rig.tel, 2.5).unwrap();
    assert!(!rig.ob.at_target(&rig.tel));
    assert!(rig.run_until(30_000, |r| r.ob.at_target(&r.tel)));
    // Within alt_tol_m of the takeoff altitude: 1.6 m of 2.5 already counts.
    assert!(rig.tel.relative_alt_m().unwrap() >= 1.5);

    rig.ob
        .goto_flu(&rig.tel, 10.0, 5.0, 2.5, Some((PI / 2.0) as f32))
        .unwrap();
    assert!(!rig.ob.at_target(&rig.tel));
    assert!(rig.run_until(20_000, |r| r.ob.at_target(&r.tel)));
    rig.run_ms(3_000);
    // PX4 flew 10 m north and 5 m west, and faces west.
    let (n, e, _) = rig.px4.pos;
    assert!((n - 10.0).abs() < 0.05 && (e + 5.0).abs() < 0.05, "{n} {e}");
    assert!((rig.px4.yaw_rad as f64 + PI / 2.0).abs() < 1e-6);
    assert!(rig.ob.at_target(&rig.tel));

    // PX4's heading drifts 10° off the commanded one: not there (tolerance 5°).
    rig.px4.yaw_rad = (-PI / 2.0 + 10f64.to_radians()) as f32;
    rig.run_ms(100);
    assert!(!rig.ob.at_target(&rig.tel));
    rig.px4.yaw_rad = (-PI / 2.0 + 4f64.to_radians()) as f32;
    rig.run_ms(100);
    assert!(rig.ob.at_target(&rig.tel));

    // 2.1 m away horizontally is outside arrive_m = 2 m; 1.9 m is inside.
    rig.px4.pos = (10.0 + 2.1, -5.0, 2.5);
    rig.run_ms(100);
    assert!(!rig.ob.at_target(&rig.tel));
    rig.px4.pos = (10.0, -5.0 + 1.9, 2.5);
    rig.run_ms(100);
    assert!(rig.ob.at_target(&rig.tel));

    rig.ob.land();
    assert!(!rig.ob.at_target(&rig.tel), "land clears the target");
}

#[test]
fn a_goto_nobody_acks_is_reported_once_and_an_acked_one_is_not() {
    use nexus_core::offboard::{Command, OffboardEvent};
    let no_ack = |rig: &Rig| {
        rig.events_only()
            .into_iter()
            .filter(|e| *e == OffboardEvent::NoAck(Command::Reposition))
            .count()
    };
    // A vehicle that never acks DO_REPOSITION (MAVSDK's autopilot side does not).
    let mut rig = Rig::new();
    rig.boot();
    rig.auto_reply = false;
    rig.ob.goto_flu(&rig.tel, 5.0, 0.0, 2.0, None).unwrap();
    rig.pump();
    rig.run_ms(4_500);
    assert_eq!(no_ack(&rig), 0, "not before ACK_WAIT_MS");
    rig.run_ms(10_000);
    assert_eq!(no_ack(&rig), 1, "{:?}", rig.events_only());
    assert_eq!(reposition(&rig).len(), 1, "a one-shot is never re-sent");
    assert_eq!(
        OffboardEvent::NoAck(Command::Reposition).to_string(),
        "no COMMAND_ACK for reposition within 5 s"
    );

    let mut rig = Rig::new();
    rig.boot();
    rig.ob.goto_flu(&rig.tel, 5.0, 0.0, 2.0, None).unwrap();
    rig.pump();
    rig.run_ms(10_000);
    assert_eq!(no_ack(&rig), 0, "{:?}", rig.events_only());
}

/// PX4 acks a DO_REPOSITION to a point outside its geofence ACCEPTED (commander switches to
/// Hold) and its navigator then says "Reposition is outside geofence" (critical) and stays: a
/// refusal all the same, with PX4's words; a goto acked without those words is not refused,
/// nor is one whose words came for another goto long before.
#[test]
#[cfg(feature = "geofence")] // the words are recognised under the geofence feature
fn a_goto_px4_acks_then_refuses_in_words_is_refused() {
    use nexus_core::offboard::{Command, OffboardEvent};
    let refusals = |rig: &Rig| -> Vec<String> {
        rig.events_only()
            .into_iter()
            .filter_map(|e| match e {
                OffboardEvent::Refused(r) if r.command == Command::Reposition => {
                    Some(r.to_string())
                }
                _ => None,
            })
            .collect()
    };
    let sev = mav::MavSeverity::MAV_SEVERITY_CRITICAL;
    for text_first in [false, true] {
        let mut rig = Rig::new();
        rig.boot();
        rig.auto_reply = false;
        rig.ob.goto_flu(&rig.tel, 150.0, 0.0, 5.0, None).unwrap();
        rig.pump();
        let ack = offboard_rig::command_ack(
            mav::MavCmd::MAV_CMD_DO_REPOSITION,
            mav::MavResult::MAV_RESULT_ACCEPTED,
        );
        let text = offboard_rig::statustext(sev, "Reposition is outside geofence\t", 7, 0);
        if text_first {
            rig.deliver(text);
            rig.deliver(ack);
        } else {
            rig.deliver(ack);
            rig.run_ms(50);
            rig.deliver(text);
        }
        rig.run_ms(1_000);
        assert_eq!(
            refusals(&rig),
            ["reposition refused after an ACCEPTED ack: Reposition is outside geofence"],
            "text first: {text_first}"
        );
        let last = rig.ob.last_refusal().unwrap();
        assert_eq!(last.result, Some(0));
    }
    // Accepted, no words: flown, not refused; the words long after are not its.
    let mut rig = Rig::new();
    rig.boot();
    rig.auto_reply = false;
    rig.ob.goto_flu(&rig.tel, 5.0, 0.0, 2.0, None).unwrap();
    rig.pump();
    rig.deliver(offboard_rig::command_ack(
        mav::MavCmd::MAV_CMD_DO_REPOSITION,
        mav::MavResult::MAV_RESULT_ACCEPTED,
    ));
    rig.run_ms(6_000);
    rig.deliver(offboard_rig::statustext(
        sev,
        "Reposition is outside geofence\t",
        8,
        0,
    ));
    rig.run_ms(1_000);
    assert!(refusals(&rig).is_empty(), "{:?}", rig.events_only());
}
