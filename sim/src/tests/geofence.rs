//! Rally points, RTL's destination and the geofence as real PX4 SITL does them (measured on PX4
//! main of 2026-03, SIH quadrotor): RTL reads rally points only in GLOBAL or
//! GLOBAL_RELATIVE_ALT and says "RTL: unsupported MAV_FRAME" for others every 2 s, armable all
//! along; RTL returns to the closest of home and the rally points; a reposition the fence does
//! not allow is acked, said so and not flown; a breach raises GF_ACTION's failsafe once with
//! PX4's texts, and Land takes over.

use super::*;
use mav::MavCmd::*;
use mav::MavFrame;
use nexus_core::offboard::geo::M_PER_DEG;

const ACCEPTED: u8 = 0;

/// Latitude/longitude ×1e7 of the point `north_m`, `east_m` from the pad.
fn ll(north_m: f64, east_m: f64) -> (i32, i32) {
    let o = crate::GeoPoint::SIH_DEFAULT;
    let lat = o.lat_deg + north_m / M_PER_DEG;
    let lon = o.lon_deg + east_m / (M_PER_DEG * o.lat_deg.to_radians().cos());
    ((lat * 1e7).round() as i32, (lon * 1e7).round() as i32)
}

fn geo_item(
    ty: mav::MavMissionType,
    seq: u16,
    cmd: mav::MavCmd,
    frame: MavFrame,
    param1: f32,
    (x, y): (i32, i32),
    z: f32,
) -> mav::MISSION_ITEM_INT_DATA {
    mav::MISSION_ITEM_INT_DATA {
        param1,
        x,
        y,
        z,
        seq,
        command: cmd,
        target_system: 1,
        target_component: 1,
        frame,
        mission_type: ty,
        ..Default::default()
    }
}

/// Rally points at `points` (north, east, m; 15 m over home) in `frame`.
fn rally(points: &[(f64, f64)], frame: MavFrame) -> Vec<mav::MISSION_ITEM_INT_DATA> {
    points
        .iter()
        .enumerate()
        .map(|(i, &(n, e))| {
            geo_item(
                mav::MavMissionType::MAV_MISSION_TYPE_RALLY,
                i as u16,
                MAV_CMD_NAV_RALLY_POINT,
                frame,
                0.0,
                ll(n, e),
                15.0,
            )
        })
        .collect()
}

/// A square inclusion polygon of half-side `half_m` around the pad, as QGroundControl sends it
/// (GLOBAL).
fn square(half_m: f64) -> Vec<mav::MISSION_ITEM_INT_DATA> {
    [(-1.0, -1.0), (-1.0, 1.0), (1.0, 1.0), (1.0, -1.0)]
        .iter()
        .enumerate()
        .map(|(i, &(n, e))| {
            geo_item(
                mav::MavMissionType::MAV_MISSION_TYPE_FENCE,
                i as u16,
                MAV_CMD_NAV_FENCE_POLYGON_VERTEX_INCLUSION,
                MavFrame::MAV_FRAME_GLOBAL,
                4.0,
                ll(n * half_m, e * half_m),
                0.0,
            )
        })
        .collect()
}

/// Upload `items` (all of one mission_type) answering each request; the MISSION_ACK's result.
fn upload_plan(g: &mut Gcs, items: &[mav::MISSION_ITEM_INT_DATA]) -> Option<u8> {
    let from = g.log.len();
    g.send(&mav::MISSION_COUNT_DATA {
        count: items.len() as u16,
        target_system: 1,
        target_component: 1,
        mission_type: items[0].mission_type,
        opaque_id: 0,
    });
    let mut answered = from;
    for _ in 0..items.len() * 4 {
        let Some(i) = g.log[answered..]
            .iter()
            .position(|(_, e)| matches!(e, Ev::Request { .. }))
        else {
            break;
        };
        answered += i + 1;
        if let Ev::Request { seq, .. } = g.log[answered - 1].1 {
            let it = items[seq as usize].clone();
            g.send(&it);
        }
    }
    g.run(50);
    g.events(from).into_iter().find_map(|e| match e {
        Ev::MissionAck { result, .. } => Some(result),
        _ => None,
    })
}

/// Times (ms) of every text `s` seen from `from`.
fn times_of(g: &Gcs, from: usize, s: &str) -> Vec<u64> {
    g.log[from..]
        .iter()
        .filter(|(_, e)| matches!(e, Ev::Text { text, .. } if text == s))
        .map(|(t, _)| *t)
        .collect()
}

fn status(g: &Gcs) -> u8 {
    g.hb.as_ref().map(|h| h.system_status as u8).unwrap_or(0)
}

fn reposition(g: &mut Gcs, north_m: f64, east_m: f64, alt_amsl: f32) {
    let (x, y) = ll(north_m, east_m);
    g.cmd_int(
        MAV_CMD_DO_REPOSITION,
        MavFrame::MAV_FRAME_GLOBAL_INT,
        [-1.0, 1.0, 0.0, f32::NAN],
        x,
        y,
        alt_amsl,
    );
}

fn alt_amsl(g: &Gcs) -> f32 {
    g.gpos.as_ref().unwrap().alt as f32 / 1000.0
}

#[test]
fn rally_points_px4s_rtl_cannot_read_say_so_every_2_s_and_the_vehicle_still_arms() {
    // As nexus used to send them: GLOBAL_RELATIVE_ALT_INT (6). Two of them, 27 m and 98 m away.
    let mut g = Gcs::booted();
    let pts = [(-16.0, -22.0), (70.0, 68.0)];
    assert_eq!(
        upload_plan(
            &mut g,
            &rally(&pts, MavFrame::MAV_FRAME_GLOBAL_RELATIVE_ALT_INT)
        ),
        Some(ACCEPTED)
    );
    let from = g.log.len();
    g.run(10_000);
    let t = times_of(&g, from, "RTL: unsupported MAV_FRAME");
    // Two (one per point) every ~2 s: 10 s give 4 or 5 pairs.
    assert!((8..=10).contains(&t.len()), "{t:?}");
    assert!(t.len() % 2 == 0, "in pairs: {t:?}");
    for w in t.windows(2).skip(1).step_by(2) {
        let gap = w[1] - w[0];
        assert!((1_900..=2_200).contains(&gap), "every ~2 s: {t:?}");
    }
    let sev: Vec<u8> = g.log[from..]
        .iter()
        .filter_map(|(_, e)| match e {
            Ev::Text { sev, text } if text.starts_with("RTL: unsupported") => Some(*sev),
            _ => None,
        })
        .collect();
    assert!(sev.iter().all(|&s| s == 2), "critical: {sev:?}");
    // PX4 stays armable (STANDBY, the prearm bit) and arms on command: only a client that
    // waits for a spell without critical texts never sends the arm.
    assert_eq!(status(&g), 3, "STANDBY");
    assert!(g.prearm_since_ms.is_some());
    g.set_mode(Mode::Takeoff);
    g.arm();
    g.run(1_000);
    assert!(g.armed());

    // In GLOBAL_RELATIVE_ALT (3), as QGroundControl sends them: nothing to say.
    let mut g = Gcs::booted();
    assert_eq!(
        upload_plan(
            &mut g,
            &rally(&pts, MavFrame::MAV_FRAME_GLOBAL_RELATIVE_ALT)
        ),
        Some(ACCEPTED)
    );
    let from = g.log.len();
    g.run(10_000);
    assert!(times_of(&g, from, "RTL: unsupported MAV_FRAME").is_empty());
    assert!(!g.texts().iter().any(|t| t.contains("unsupported")));
}

/// Fly to `north`, `east` at the takeoff height (a reposition), then RTL; where it lands.
fn rtl_from(g: &mut Gcs, north: f64, east: f64) -> [f32; 3] {
    let alt = alt_amsl(g);
    reposition(g, north, east, alt);
    assert!(g.run_until(60_000, |g| {
        let p = g.v.snapshot().position_ned_m;
        (p[0] as f64 - north).hypot(p[1] as f64 - east) < 1.0
    }));
    g.run(2_000);
    g.cmd_long(MAV_CMD_NAV_RETURN_TO_LAUNCH, [0.0; 7]);
    assert!(g.run_until(240_000, |g| !g.armed()), "landed and disarmed");
    g.v.snapshot().position_ned_m
}

#[test]
fn rtl_goes_to_the_closest_of_home_and_the_rally_points() {
    // A rally point 60 m north, 15 m over home (GLOBAL_RELATIVE_ALT).
    let mut g = Gcs::airborne(5.0);
    let home_alt = alt_amsl(&g) - 5.0;
    assert_eq!(
        upload_plan(
            &mut g,
            &rally(&[(60.0, 0.0)], MavFrame::MAV_FRAME_GLOBAL_RELATIVE_ALT)
        ),
        Some(ACCEPTED)
    );
    // From 50 m north: the rally point is closer; the return altitude is over it.
    let from = g.log.len();
    let end = rtl_from(&mut g, 50.0, 0.0);
    assert!(
        (end[0] - 60.0).abs() < 1.5 && end[1].abs() < 1.5,
        "landed at the rally point: {end:?}"
    );
    let start = g.log[from..]
        .iter()
        .find_map(|(_, e)| match e {
            Ev::Text { text, .. } if text.starts_with("RTL: start return at") => Some(text.clone()),
            _ => None,
        })
        .unwrap();
    // RTL_RETURN_ALT 30 over the destination (15 m over home), the cone capping it at 10 m
    // from it: ceil(home + 15 + 10) .. and "(N m above destination)".
    let want_alt = (home_alt + 15.0 + 10.0).ceil() as i32;
    assert!(
        start.contains(&format!("at {want_alt} m"))
            || start.contains(&format!("at {} m", want_alt + 1)),
        "{start} (home {home_alt})"
    );
    assert!(g.texts().iter().any(|t| t == "RTL: land at destination"));

    // From 20 m north: home is closer.
    let mut g = Gcs::airborne(5.0);
    upload_plan(
        &mut g,
        &rally(&[(60.0, 0.0)], MavFrame::MAV_FRAME_GLOBAL_RELATIVE_ALT),
    );
    let end = rtl_from(&mut g, 20.0, 0.0);
    assert!(end[0].abs() < 1.5 && end[1].abs() < 1.5, "home: {end:?}");
}

#[test]
fn a_reposition_outside_the_fence_is_acked_said_and_not_flown_then_land_lands() {
    let mut g = Gcs::booted();
    assert_eq!(upload_plan(&mut g, &square(25.0)), Some(ACCEPTED));
    g.param_set(
        "MIS_TAKEOFF_ALT",
        5.0,
        mav::MavParamType::MAV_PARAM_TYPE_REAL32,
    );
    g.set_mode(Mode::Takeoff);
    g.arm();
    assert!(g.run_until(30_000, |g| g.mode() == Some(Mode::Hold)
        && g.v.true_height_m() > 4.8));
    g.run(2_000);
    let before = g.v.snapshot().position_ned_m;
    let from = g.log.len();
    // 150 m north: outside.
    let alt = alt_amsl(&g);
    reposition(&mut g, 150.0, 0.0, alt);
    g.run(10_000);
    let ev = g.events(from);
    assert_eq!(
        ev.iter()
            .filter(|e| matches!(e, Ev::Ack { cmd: 192, .. }))
            .collect::<Vec<_>>(),
        [&Ev::Ack {
            cmd: 192,
            result: ACCEPTED
        }],
        "commander acks it"
    );
    assert!(ev.contains(&Ev::Text {
        sev: 2,
        text: "Reposition is outside geofence".into()
    }));
    let after = g.v.snapshot().position_ned_m;
    assert!(
        (after[0] - before[0]).hypot(after[1] - before[1]) < 0.5,
        "held where it was: {before:?} -> {after:?}"
    );
    assert_eq!(g.mode(), Some(Mode::Hold));
    assert_eq!(status(&g), 4, "ACTIVE: no failsafe");
    assert!(!g.texts().iter().any(|t| t.contains("Failsafe")));
    // Inside: flown.
    let alt = alt_amsl(&g);
    reposition(&mut g, 15.0, 0.0, alt);
    assert!(
        g.run_until(20_000, |g| (g.v.snapshot().position_ned_m[0] - 15.0).abs()
            < 1.0)
    );
    // Land is accepted and lands.
    g.cmd_long(MAV_CMD_NAV_LAND, [0.0; 7]);
    assert!(g.run_until(60_000, |g| !g.armed()), "landed and disarmed");
    assert!(g.texts().iter().any(|t| t == "Disarmed by landing"));
    assert!(!g.texts().iter().any(|t| t.contains("Failsafe")));
}

/// Takeoff inside a 25 m square (GF_ACTION `gf_action`), then Offboard at 3 m/s north until
/// the mode changes or 20 s pass; the events from the Offboard switch on.
fn breach(gf_action: i32) -> (Gcs, usize) {
    let mut g = Gcs::booted();
    g.param_set(
        "GF_ACTION",
        f32::from_bits(gf_action as u32),
        mav::MavParamType::MAV_PARAM_TYPE_INT32,
    );
    assert_eq!(upload_plan(&mut g, &square(25.0)), Some(ACCEPTED));
    g.param_set(
        "MIS_TAKEOFF_ALT",
        5.0,
        mav::MavParamType::MAV_PARAM_TYPE_REAL32,
    );
    g.set_mode(Mode::Takeoff);
    g.arm();
    assert!(g.run_until(30_000, |g| g.mode() == Some(Mode::Hold)
        && g.v.true_height_m() > 4.8));
    let from = g.log.len();
    let sp = |g: &mut Gcs| {
        if g.v.now_us() % 50_000 < 10_000 {
            g.send(&mav::SET_POSITION_TARGET_LOCAL_NED_DATA {
                vx: 3.0,
                type_mask: mav::PositionTargetTypemask::from_bits_retain(0b1111_1100_0111),
                target_system: 1,
                target_component: 1,
                coordinate_frame: MavFrame::MAV_FRAME_LOCAL_NED,
                ..Default::default()
            });
        }
    };
    sp(&mut g);
    g.set_mode(Mode::Offboard);
    g.run_with(1_200, sp);
    assert_eq!(g.mode(), Some(Mode::Offboard));
    for _ in 0..200 {
        g.run_with(100, sp);
        if g.mode() != Some(Mode::Offboard) {
            break;
        }
    }
    (g, from)
}

#[test]
fn a_breach_holds_at_the_fence_with_px4s_texts_and_land_takes_over() {
    let (mut g, from) = breach(2);
    assert_eq!(g.mode(), Some(Mode::Hold), "GF_ACTION 2: Hold");
    let n = g.v.snapshot().position_ned_m[0];
    assert!((25.0..29.0).contains(&n), "seen at the fence line: {n}");
    let fence_text = times_of(&g, from, "Geofence: approaching or outside geofence");
    let failsafe = times_of(&g, from, "Failsafe activated");
    assert_eq!((fence_text.len(), failsafe.len()), (1, 1));
    assert!(fence_text[0] <= failsafe[0] && failsafe[0] - fence_text[0] < 100);
    let order: Vec<&String> = g.log[from..]
        .iter()
        .filter_map(|(_, e)| match e {
            Ev::Text { text, .. } if text.contains("eofence") || text.contains("Failsafe") => {
                Some(text)
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        order,
        [
            "Geofence: approaching or outside geofence",
            "Failsafe activated"
        ],
        "the health report first, as on PX4"
    );
    assert_eq!(status(&g), 5, "CRITICAL in failsafe");
    // It holds where the breach was seen: back at the line after braking.
    g.run(8_000);
    let p = g.v.snapshot().position_ned_m;
    assert!((p[0] - 25.0).abs() < 1.0, "held at the breach: {p:?}");
    assert_eq!(g.mode(), Some(Mode::Hold));
    assert!(
        g.prearm_since_ms.is_none(),
        "the prearm bit is off while breached"
    );
    // Land takes over and lands; no second failsafe while the breach stands.
    g.cmd_long(MAV_CMD_NAV_LAND, [0.0; 7]);
    assert!(g.run_until(60_000, |g| !g.armed()), "landed and disarmed");
    assert_eq!(times_of(&g, from, "Failsafe activated").len(), 1);
    assert!(g.texts().iter().any(|t| t == "Disarmed by landing"));
}

#[test]
fn gf_action_return_land_warn_none_and_terminate() {
    // 3: Return, after a Hold of COM_FAIL_ACT_T (5 s) in which a mode change would take over
    // (measured on PX4 SITL: "… entering Hold for 5 seconds", then 5.2 s later "Failsafe
    // activated" and "RTL: start return at …").
    let (mut g, from) = breach(3);
    assert_eq!(g.mode(), Some(Mode::Hold));
    let hold = times_of(&g, from, "Failsafe activated: entering Hold for 5 seconds");
    assert_eq!(hold.len(), 1);
    assert!(g.run_until(7_000, |g| g.mode() == Some(Mode::Rtl)));
    let fs = times_of(&g, from, "Failsafe activated");
    assert_eq!(fs.len(), 1);
    assert!(
        (5_000..5_300).contains(&(fs[0] - hold[0])),
        "{hold:?} {fs:?}"
    );
    assert!(g
        .texts()
        .iter()
        .any(|t| t.starts_with("RTL: start return at")));
    // 5: Land, the same way.
    let (mut g, from) = breach(5);
    assert!(g.run_until(7_000, |g| g.mode() == Some(Mode::Land)));
    assert_eq!(times_of(&g, from, "Failsafe activated").len(), 1);
    // A mode change in the Hold takes over: no Return.
    let (mut g, from) = breach(3);
    g.cmd_long(MAV_CMD_NAV_LAND, [0.0; 7]);
    g.run(8_000);
    assert_eq!(g.mode(), Some(Mode::Land));
    assert!(times_of(&g, from, "Failsafe activated").is_empty());
    // 1: the health report's text only; Offboard flies on.
    let (g, from) = breach(1);
    assert_eq!(g.mode(), Some(Mode::Offboard));
    assert!(!times_of(&g, from, "Geofence: approaching or outside geofence").is_empty());
    assert!(times_of(&g, from, "Failsafe activated").is_empty());
    assert!(g.v.snapshot().position_ned_m[0] > 40.0);
    // 0: no check at all.
    let (g, from) = breach(0);
    assert_eq!(g.mode(), Some(Mode::Offboard));
    assert!(times_of(&g, from, "Geofence: approaching or outside geofence").is_empty());
    // 4: flight termination: motors off, it falls; no mode change takes over.
    let (mut g, from) = breach(4);
    assert_eq!(times_of(&g, from, "Failsafe activated").len(), 1);
    assert_eq!(status(&g), 8, "FLIGHT_TERMINATION");
    g.cmd_long(MAV_CMD_NAV_LAND, [0.0; 7]);
    g.run(3_000);
    assert!(g.v.true_height_m() < 0.5, "fell");
    assert_ne!(g.mode(), Some(Mode::Land));
}

#[test]
fn flight_information_times_reset_at_disarm() {
    let mut g = Gcs::booted();
    g.set_mode(Mode::Takeoff);
    g.arm();
    assert!(g.run_until(30_000, |g| g.v.true_height_m() > 2.0));
    let info = |g: &mut Gcs| {
        let from = g.log.len();
        g.cmd_long(
            MAV_CMD_REQUEST_MESSAGE,
            [264.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
        );
        g.events(from)
            .into_iter()
            .find_map(|e| match e {
                Ev::FlightInformation {
                    arming_us,
                    takeoff_us,
                } => Some((arming_us, takeoff_us)),
                _ => None,
            })
            .unwrap()
    };
    let (arm, tko) = info(&mut g);
    assert!(arm > 0 && tko > arm, "{arm} {tko}");
    g.cmd_long(MAV_CMD_NAV_LAND, [0.0; 7]);
    assert!(g.run_until(60_000, |g| !g.armed()));
    assert_eq!(info(&mut g), (0, 0), "commander zeroes them at disarm");
}

#[test]
fn a_mission_with_a_waypoint_outside_the_fence_is_not_valid() {
    let mut g = Gcs::booted();
    let mission = |north: f64| -> Vec<mav::MISSION_ITEM_INT_DATA> {
        [(0.0, MAV_CMD_NAV_TAKEOFF), (north, MAV_CMD_NAV_WAYPOINT)]
            .iter()
            .enumerate()
            .map(|(i, &(n, cmd))| mav::MISSION_ITEM_INT_DATA {
                autocontinue: 1,
                ..geo_item(
                    mav::MavMissionType::MAV_MISSION_TYPE_MISSION,
                    i as u16,
                    cmd,
                    MavFrame::MAV_FRAME_GLOBAL_RELATIVE_ALT_INT,
                    0.0,
                    ll(n, 0.0),
                    10.0,
                )
            })
            .collect()
    };
    let from = g.log.len();
    assert_eq!(upload_plan(&mut g, &mission(40.0)), Some(ACCEPTED));
    // No fence yet: valid.
    assert!(times_of(&g, from, "Geofence violation for waypoint 2").is_empty());
    // The fence makes it invalid (checked again when the fence changes), with PX4's text.
    assert_eq!(upload_plan(&mut g, &square(25.0)), Some(ACCEPTED));
    g.run(500);
    assert_eq!(
        times_of(&g, from, "Geofence violation for waypoint 2").len(),
        1
    );
    let from = g.log.len();
    g.cmd_long(MAV_CMD_MISSION_START, [0.0; 7]);
    g.run(1_000);
    let acks: Vec<Ev> = g
        .events(from)
        .into_iter()
        .filter(|e| matches!(e, Ev::Ack { .. }))
        .collect();
    assert_eq!(
        acks,
        [Ev::Ack {
            cmd: 300,
            result: 2
        }],
        "DENIED"
    );
    assert!(g
        .texts()
        .iter()
        .any(|t| t == "Mission start denied! No valid mission"));
    assert!(!g.armed());
    // A mission inside flies.
    assert_eq!(upload_plan(&mut g, &mission(20.0)), Some(ACCEPTED));
    g.run(500);
    g.cmd_long(MAV_CMD_MISSION_START, [0.0; 7]);
    g.run(1_000);
    assert!(g.armed());
}
