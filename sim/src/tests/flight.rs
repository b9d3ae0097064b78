//! Boot, arming, takeoff, reposition, land, RTL, auto-disarm, offboard and manual control,
//! against the sequences docs/px4-wire.md records.

use super::*;
use mav::MavCmd::*;
use mav::MavFrame;

const ACCEPTED: u8 = 0;
const TEMP_REJECTED: u8 = 1;

#[test]
fn boot_timeline_matches_px4_sitl() {
    let mut g = Gcs::new();
    g.run(6_000);
    let hb = g.first_hb_ms.unwrap();
    // The px4-traces' time_boot_ms: 1.24-1.25 s (docs/px4-wire.md §Boot: 1.3-1.8 s from the exec).
    assert!((1_200..=1_300).contains(&hb), "first heartbeat at {hb} ms");
    let gp = g.first_gpos_ms.unwrap();
    assert!(
        (2_900..=3_200).contains(&gp),
        "first GLOBAL_POSITION_INT at {gp} ms"
    );
    // The px4-traces: SYS_STATUS's prearm bit at 4.07-4.08 s in Hold/Takeoff, STANDBY at the
    // next heartbeat (4.26-4.28 s); the sim's SYS_STATUS comes at 5 Hz.
    let prearm = g.prearm_since_ms.unwrap();
    assert!((4_050..=4_300).contains(&prearm), "armable at {prearm} ms");
    // system_status UNINIT until prearm passes, then STANDBY.
    let st = g.when(|e| *e == Ev::Status(3)).unwrap();
    assert!((4_050..=5_300).contains(&st), "STANDBY at {st} ms");
    assert_eq!(g.when(|e| *e == Ev::Status(0)), Some(hb));
    // Hold is the boot mode; base_mode 0x1d in auto, custom_mode 4/3.
    let b = g.hb.as_ref().unwrap();
    assert_eq!(b.base_mode.bits(), 0x1d);
    assert_eq!(b.custom_mode, 4 << 16 | 3 << 24);
    assert_eq!(b.mavtype as u8, 2);
    assert_eq!(b.autopilot as u8, 12);
    // The early-boot text came late, at or after the STATUSTEXT stream's start (2.7 s).
    let t = g
        .when(text("Preflight Fail: heading estimate not stable"))
        .unwrap();
    assert!(t >= 2_700, "{t}");
    // Stream rates: ~100 Hz ATTITUDE, ~50 Hz GLOBAL_POSITION_INT over the last 3 s.
    let up_s = crate::BootTimings::default().mavlink_start_ms as f32 / 1000.0;
    let att = g.counts[&30] as f32 / (6.0 - up_s);
    assert!((95.0..=105.0).contains(&att), "ATTITUDE {att} Hz");
    let gpi = g.counts[&33] as f32 / 3.0;
    assert!((48.0..=52.0).contains(&gpi), "GLOBAL_POSITION_INT {gpi} Hz");
    // PX4's own gimbal/camera commands, addressed to itself.
    assert!(g
        .self_addressed_cmds
        .iter()
        .any(|&(c, t)| c == 1001 && t == 1));
    assert!(g.self_addressed_cmds.iter().any(|&(c, _)| c == 2003));
}

#[test]
fn arming_before_ready_is_refused_in_two_chunks() {
    let mut g = Gcs::new();
    g.run(3_000);
    let from = g.log.len();
    g.arm();
    g.run(200);
    assert_subsequence(
        &g.events(from),
        &[
            Ev::Ack {
                cmd: 400,
                result: TEMP_REJECTED,
            },
            Ev::Text {
                sev: 2,
                text: "Arming denied: Resolve system health failures first".into(),
            },
        ],
    );
    let chunks: Vec<_> = g
        .raw_texts
        .iter()
        .filter(|t| t.severity as u8 == 2 && !t.text.starts_with(b"Preflight Fail"))
        .map(|t| (t.id, t.chunk_seq))
        .collect();
    assert_eq!(chunks.len(), 2);
    assert_eq!(chunks[0].0, chunks[1].0);
    assert_eq!((chunks[0].1, chunks[1].1), (0, 1));
    assert!(!g.armed());
}

#[test]
fn takeoff_switches_to_hold_by_itself() {
    let mut g = Gcs::booted();
    let from = g.log.len();
    g.param_set(
        "MIS_TAKEOFF_ALT",
        5.0,
        mav::MavParamType::MAV_PARAM_TYPE_REAL32,
    );
    g.set_mode(Mode::Takeoff);
    g.run(1_500);
    g.arm();
    let armed_at = g.now_ms();
    assert!(g.run_until(30_000, |g| g.mode() == Some(Mode::Hold)));
    g.run(4_000);
    let ev = g.events(from);
    assert_subsequence(
        &ev,
        &[
            Ev::Param {
                name: "MIS_TAKEOFF_ALT".into(),
                bits: 5f32.to_bits(),
                ty: 9,
            },
            Ev::Ack {
                cmd: 176,
                result: ACCEPTED,
            },
            Ev::Ack {
                cmd: 176,
                result: ACCEPTED,
            },
            Ev::Mode(Mode::Takeoff),
            Ev::Ack {
                cmd: 400,
                result: ACCEPTED,
            },
            Ev::Text {
                sev: 6,
                text: "Armed by external command".into(),
            },
            // PX4's navigator, taking off without a NAV_TAKEOFF altitude.
            Ev::Text {
                sev: 6,
                text: "Using default takeoff altitude: 5.0 m".into(),
            },
            Ev::Armed(true),
            Ev::Text {
                sev: 6,
                text: "Takeoff detected".into(),
            },
            Ev::Landed(3),
            Ev::Landed(2),
        ],
    );
    // The heartbeat lags: Hold shows up within a second of IN_AIR.
    let in_air = g.when(|e| *e == Ev::Landed(2)).unwrap();
    let hold = g
        .log
        .iter()
        .find(|(t, e)| *t > armed_at && *e == Ev::Mode(Mode::Hold))
        .map(|(t, _)| *t)
        .unwrap();
    assert!(
        hold + 1_000 >= in_air && hold <= in_air + 1_100,
        "{in_air} {hold}"
    );
    let detected = g.when(text("Takeoff detected")).unwrap() - armed_at;
    assert!(
        (1_700..=2_200).contains(&detected),
        "takeoff detected {detected} ms after arming"
    );
    assert!(g.armed());
    assert!(
        (g.v.true_height_m() - 5.0).abs() < 0.3,
        "{}",
        g.v.true_height_m()
    );
    // The local position is smooth and exact; relative_alt is PX4's (may be stepped).
    assert!((g.lpos.unwrap().z + 5.0).abs() < 0.3);
}

#[test]
fn reposition_flies_there_in_hold() {
    let mut g = Gcs::airborne(5.0);
    let gp = g.gpos.clone().unwrap();
    let from = g.log.len();
    // 15 m north: lat + 15 / 111 195 deg.
    let dlat = (15.0 / nexus_core::offboard::geo::M_PER_DEG * 1e7) as i32;
    let alt = gp.alt as f32 / 1000.0;
    g.cmd_int(
        MAV_CMD_DO_REPOSITION,
        MavFrame::MAV_FRAME_GLOBAL_INT,
        [-1.0, 1.0, 0.0, f32::NAN],
        gp.lat + dlat,
        gp.lon,
        alt,
    );
    let t0 = g.now_ms();
    assert!(
        g.run_until(12_000, |g| (g.v.snapshot().position_ned_m[0] - 15.0).abs()
            < 0.2)
    );
    let took = g.now_ms() - t0;
    assert!((5_000..=8_500).contains(&took), "15 m in {took} ms");
    assert_subsequence(
        &g.events(from),
        &[Ev::Ack {
            cmd: 192,
            result: ACCEPTED,
        }],
    );
    assert_eq!(g.mode(), Some(Mode::Hold));
    // PX4's error results.
    let from = g.log.len();
    g.cmd_int(
        MAV_CMD_DO_REPOSITION,
        MavFrame::MAV_FRAME_GLOBAL_INT,
        [-1.0, 0.0, 0.0, f32::NAN],
        gp.lat,
        gp.lon,
        alt,
    );
    g.cmd_int(
        MAV_CMD_DO_REPOSITION,
        MavFrame::MAV_FRAME_GLOBAL_INT,
        [-1.0, 3.0, 0.0, f32::NAN],
        gp.lat,
        gp.lon,
        alt,
    );
    g.cmd_int(
        MAV_CMD_DO_REPOSITION,
        MavFrame::MAV_FRAME_GLOBAL_RELATIVE_ALT_INT,
        [-1.0, 1.0, 0.0, f32::NAN],
        gp.lat,
        gp.lon,
        alt,
    );
    g.cmd_long(
        MAV_CMD_DO_REPOSITION,
        [-1.0, 1.0, 0.0, f32::NAN, 47.0, 8.0, alt],
    );
    assert_eq!(
        g.events(from),
        vec![
            Ev::Ack {
                cmd: 192,
                result: 3
            },
            Ev::Ack {
                cmd: 192,
                result: 3
            },
            Ev::Ack {
                cmd: 192,
                result: 9
            },
            Ev::Ack {
                cmd: 192,
                result: 8
            },
        ]
    );
    // INT32_MAX keeps the horizontal position: a pure altitude change.
    g.cmd_int(
        MAV_CMD_DO_REPOSITION,
        MavFrame::MAV_FRAME_GLOBAL_INT,
        [-1.0, 1.0, 0.0, f32::NAN],
        i32::MAX,
        i32::MAX,
        alt + 3.0,
    );
    g.run(8_000);
    let p = g.v.snapshot().position_ned_m;
    assert!(
        (p[0] - 15.0).abs() < 0.3 && (p[2] + 8.0).abs() < 0.3,
        "{p:?}"
    );
}

#[test]
fn reposition_disarmed_only_changes_mode() {
    let mut g = Gcs::booted();
    g.set_mode(Mode::Takeoff);
    g.run(1_500);
    let gp = g.gpos.clone().unwrap();
    let from = g.log.len();
    g.cmd_int(
        MAV_CMD_DO_REPOSITION,
        MavFrame::MAV_FRAME_GLOBAL_INT,
        [-1.0, 1.0, 0.0, f32::NAN],
        gp.lat + 1000,
        gp.lon,
        500.0,
    );
    g.run(1_500);
    assert_subsequence(
        &g.events(from),
        &[
            Ev::Ack {
                cmd: 192,
                result: ACCEPTED,
            },
            Ev::Mode(Mode::Hold),
        ],
    );
    g.arm();
    g.run(3_000);
    assert_eq!(g.v.true_height_m(), 0.0, "position ignored while disarmed");
}

#[test]
fn land_then_disarm_by_landing_then_hold() {
    let mut g = Gcs::airborne(5.0);
    let from = g.log.len();
    g.set_mode(Mode::Land);
    let t0 = g.now_ms();
    assert!(g.run_until(30_000, |g| !g.armed()));
    g.run(1_500);
    let ev = g.events(from);
    assert_subsequence(
        &ev,
        &[
            Ev::Ack {
                cmd: 176,
                result: ACCEPTED,
            },
            Ev::Ack {
                cmd: 176,
                result: ACCEPTED,
            },
            Ev::Landed(4),
            Ev::Text {
                sev: 6,
                text: "Landing detected".into(),
            },
            Ev::Landed(1),
            Ev::Text {
                sev: 6,
                text: "Disarmed by landing".into(),
            },
            Ev::Armed(false),
        ],
    );
    assert_subsequence(
        &ev,
        &[
            Ev::Text {
                sev: 6,
                text: "Disarmed by landing".into(),
            },
            Ev::Mode(Mode::Hold),
        ],
    );
    // The heartbeat's 1 Hz phase decides whether Land shows before or after LANDING.
    assert_subsequence(
        &ev,
        &[
            Ev::Mode(Mode::Land),
            Ev::Text {
                sev: 6,
                text: "Landing detected".into(),
            },
        ],
    );
    let landing = g.when(|e| *e == Ev::Landed(4)).unwrap();
    assert!(landing - t0 <= 250, "LANDING at once: {} ms", landing - t0);
    // docs/px4-wire.md §Timings: land from 5-6 m to ON_GROUND 13.5 s (12-22 in MAVSDK's runs).
    let on_ground_s = g
        .log
        .iter()
        .find(|(t, e)| *t >= t0 && *e == Ev::Landed(1))
        .map(|(t, _)| (*t - t0) as f32 / 1000.0)
        .unwrap();
    assert!(
        (11.5..=15.5).contains(&on_ground_s),
        "ON_GROUND after {on_ground_s} s"
    );
    let on_ground = g
        .log
        .iter()
        .filter(|(t, e)| *t >= t0 && *e == Ev::Landed(1))
        .map(|(t, _)| *t)
        .next()
        .unwrap();
    let disarmed = g.when(text("Disarmed by landing")).unwrap();
    assert!(
        (2_000..=2_500).contains(&(disarmed - on_ground)),
        "{} ms",
        disarmed - on_ground
    );
}

#[test]
fn nav_land_and_nav_takeoff_commands() {
    let mut g = Gcs::booted();
    let from = g.log.len();
    g.cmd_long(
        MAV_CMD_NAV_TAKEOFF,
        [0.0, 0.0, 0.0, f32::NAN, f32::NAN, f32::NAN, f32::NAN],
    );
    g.run(1_200);
    assert_subsequence(
        &g.events(from),
        &[
            Ev::Ack {
                cmd: 22,
                result: ACCEPTED,
            },
            Ev::Mode(Mode::Takeoff),
        ],
    );
    g.arm();
    assert!(g.run_until(20_000, |g| g.mode() == Some(Mode::Hold)));
    let from = g.log.len();
    g.cmd_long(MAV_CMD_NAV_LAND, [0.0; 7]);
    g.run(1_200);
    assert_subsequence(
        &g.events(from),
        &[
            Ev::Ack {
                cmd: 21,
                result: ACCEPTED,
            },
            Ev::Text {
                sev: 6,
                text: "Landing at current position".into(),
            },
            Ev::Mode(Mode::Land),
        ],
    );
}

#[test]
fn auto_preflight_disarm_after_ten_seconds() {
    let mut g = Gcs::booted();
    g.arm();
    let t0 = g.now_ms();
    assert!(g.run_until(15_000, |g| !g.armed()
        && g.hb.is_some()
        && g.when(text("Disarmed by auto preflight disarming"))
            .is_some()));
    let t = g
        .when(text("Disarmed by auto preflight disarming"))
        .unwrap();
    assert!((9_900..=10_300).contains(&(t - t0)), "{}", t - t0);
    assert_eq!(g.mode(), Some(Mode::Hold));
    // The flight counter moved: an unsolicited PARAM_VALUE.
    assert!(g
        .log
        .iter()
        .any(|(_, e)| matches!(e, Ev::Param { name, .. } if name == "COM_FLIGHT_UUID")));
}

#[test]
fn in_air_mode_changes_need_their_inputs_land_always_allowed() {
    let mut g = Gcs::airborne(5.0);
    let from = g.log.len();
    for m in [
        Mode::Position,
        Mode::Altitude,
        Mode::Manual,
        Mode::Stabilized,
        Mode::Acro,
        Mode::Mission,
        Mode::Offboard,
    ] {
        g.set_mode(m);
    }
    g.run(1_500);
    let acks: Vec<_> = g
        .events(from)
        .into_iter()
        .filter(|e| matches!(e, Ev::Ack { .. }))
        .collect();
    assert_eq!(acks.len(), 14);
    for pair in acks.chunks(2) {
        assert_eq!(
            pair,
            [
                Ev::Ack {
                    cmd: 176,
                    result: ACCEPTED
                },
                Ev::Ack {
                    cmd: 176,
                    result: TEMP_REJECTED
                }
            ]
        );
    }
    assert_eq!(g.mode(), Some(Mode::Hold));
    // A mission planner (compid 190) is told why.
    assert!(g
        .texts()
        .iter()
        .any(|t| t == "Switching to Position is currently not available"));
    // With a live stick stream, Position is allowed.
    let sticks = |g: &mut Gcs| {
        g.send(&mav::MANUAL_CONTROL_DATA {
            x: 0,
            y: 0,
            z: 500,
            r: 0,
            target: 1,
            ..Default::default()
        });
    };
    g.run_with(500, sticks);
    g.set_mode(Mode::Position);
    g.run_with(1_500, sticks);
    assert_eq!(g.mode(), Some(Mode::Position));
    assert_eq!(g.hb.as_ref().unwrap().base_mode.bits(), 0x80 | 0x51);
    g.set_mode(Mode::Land);
    g.run_with(1_200, sticks);
    assert_eq!(g.mode(), Some(Mode::Land));
}

#[test]
fn disarmed_every_mode_is_accepted_but_may_not_arm() {
    let mut g = Gcs::booted();
    g.set_mode(Mode::Mission);
    g.run(1_200);
    assert_eq!(g.mode(), Some(Mode::Mission));
    assert_eq!(
        g.hb.as_ref().unwrap().system_status as u8,
        0,
        "Mission without a mission cannot arm"
    );
    let from = g.log.len();
    g.arm();
    g.run(100);
    assert_subsequence(
        &g.events(from),
        &[Ev::Ack {
            cmd: 400,
            result: TEMP_REJECTED,
        }],
    );
    g.set_mode(Mode::Hold);
    g.run(1_200);
    assert_eq!(g.hb.as_ref().unwrap().system_status as u8, 3);
}

#[test]
fn offboard_needs_a_stream_and_fails_safe_to_rtl() {
    let mut g = Gcs::airborne(5.0);
    g.set_mode(Mode::Offboard);
    g.run(1_200);
    assert_eq!(g.mode(), Some(Mode::Hold), "no setpoints: refused");
    let sp = |g: &mut Gcs| {
        if g.v.now_us() % 50_000 < 10_000 {
            g.send(&mav::SET_POSITION_TARGET_LOCAL_NED_DATA {
                x: 3.0,
                y: 0.0,
                z: -5.0,
                type_mask: mav::PositionTargetTypemask::from_bits_retain(0b1111_1111_1000),
                target_system: 1,
                target_component: 1,
                coordinate_frame: MavFrame::MAV_FRAME_LOCAL_NED,
                ..Default::default()
            });
        }
    };
    g.run_with(1_200, sp);
    g.set_mode(Mode::Offboard);
    g.run_with(6_000, sp);
    assert_eq!(g.mode(), Some(Mode::Offboard));
    assert!((g.v.snapshot().position_ned_m[0] - 3.0).abs() < 0.2);
    let stop = g.now_ms();
    assert!(g.run_until(5_000, |g| g.mode() == Some(Mode::Rtl)));
    let fs = g.when(text("Failsafe activated")).unwrap() - stop;
    assert!(
        (1_200..=1_500).contains(&fs),
        "failsafe {fs} ms after the stream stopped"
    );
    g.run(1_000);
    assert_eq!(
        g.hb.as_ref().unwrap().system_status as u8,
        5,
        "CRITICAL while in failsafe"
    );
    assert!(g
        .texts()
        .iter()
        .any(|t| t.starts_with("RTL: start return at")));
    assert!(g.run_until(60_000, |g| !g.armed()));
    assert!(g.texts().iter().any(|t| t == "RTL: land at destination"));
}

#[test]
fn offboard_is_entered_after_a_single_setpoint() {
    // docs/px4-wire.md §Offboard: one setpoint, then the mode switch at once, is accepted.
    let mut g = Gcs::airborne(5.0);
    let sp = |g: &mut Gcs| {
        g.send(&mav::SET_POSITION_TARGET_LOCAL_NED_DATA {
            x: 3.0,
            y: 0.0,
            z: -5.0,
            type_mask: mav::PositionTargetTypemask::from_bits_retain(0b1111_1111_1000),
            target_system: 1,
            target_component: 1,
            coordinate_frame: MavFrame::MAV_FRAME_LOCAL_NED,
            ..Default::default()
        });
    };
    let from = g.log.len();
    sp(&mut g);
    g.set_mode(Mode::Offboard);
    g.run_with(1_200, |g| {
        if g.v.now_us() % 50_000 < 10_000 {
            sp(g)
        }
    });
    assert_eq!(g.mode(), Some(Mode::Offboard));
    let acks: Vec<_> = g
        .events(from)
        .into_iter()
        .filter(|e| matches!(e, Ev::Ack { cmd: 176, .. }))
        .collect();
    let accepted = Ev::Ack {
        cmd: 176,
        result: ACCEPTED,
    };
    assert_eq!(acks, [accepted.clone(), accepted]);
}

#[test]
fn stick_gesture_arms_after_a_second_in_a_manual_mode() {
    let mut g = Gcs::booted();
    let neutral = |g: &mut Gcs| {
        g.send(&mav::MANUAL_CONTROL_DATA {
            x: 0,
            y: 0,
            z: 500,
            r: 0,
            target: 1,
            ..Default::default()
        });
    };
    g.run_with(500, neutral);
    g.set_mode(Mode::Position);
    g.run_with(1_200, neutral);
    assert_eq!(g.hb.as_ref().unwrap().system_status as u8, 3);
    let gesture = |g: &mut Gcs| {
        g.send(&mav::MANUAL_CONTROL_DATA {
            x: 0,
            y: 0,
            z: 0,
            r: 1000,
            target: 1,
            ..Default::default()
        });
    };
    let t0 = g.now_ms();
    g.run_with(900, gesture);
    assert!(
        g.when(text("Armed by Stick gesture")).is_none(),
        "not before the hold time"
    );
    g.run_with(1_500, gesture);
    let t = g.when(text("Armed by Stick gesture")).unwrap();
    assert!((1_000..=1_100).contains(&(t - t0)), "{}", t - t0);
}

#[test]
fn rtl_climbs_returns_and_lands() {
    let mut g = Gcs::airborne(5.0);
    let gp = g.gpos.clone().unwrap();
    let dlat = (40.0 / nexus_core::offboard::geo::M_PER_DEG * 1e7) as i32;
    g.cmd_int(
        MAV_CMD_DO_REPOSITION,
        MavFrame::MAV_FRAME_GLOBAL_INT,
        [-1.0, 1.0, 0.0, f32::NAN],
        gp.lat + dlat,
        gp.lon,
        gp.alt as f32 / 1000.0,
    );
    g.run(15_000);
    let from = g.log.len();
    g.cmd_long(MAV_CMD_NAV_RETURN_TO_LAUNCH, [0.0; 7]);
    let mut max_h: f32 = 0.0;
    assert!(g.run_until(120_000, |g| {
        max_h = max_h.max(g.v.true_height_m());
        !g.armed()
    }));
    // PX4 multicopter default RTL_RETURN_ALT is 30 (docs/px4-wire.md §Flight).
    assert!(max_h > 29.0, "climbed to RTL_RETURN_ALT: {max_h}");
    let ev = g.events(from);
    // LANDING comes with the land phase: the text and the 5 Hz EXTENDED_SYS_STATE that says so
    // are two streams, in either order.
    assert_subsequence(&ev, &[Ev::Mode(Mode::Rtl), Ev::Landed(4), Ev::Landed(1)]);
    assert_subsequence(
        &ev,
        &[
            Ev::Ack {
                cmd: 20,
                result: ACCEPTED,
            },
            Ev::Text {
                sev: 6,
                text: "Returning to launch".into(),
            },
            Ev::Mode(Mode::Rtl),
            Ev::Text {
                sev: 6,
                text: "RTL: land at destination".into(),
            },
            Ev::Landed(1),
            Ev::Text {
                sev: 6,
                text: "Disarmed by landing".into(),
            },
        ],
    );
    let p = g.v.snapshot().position_ned_m;
    assert!(p[0].hypot(p[1]) < 1.0, "landed home: {p:?}");
}

#[test]
fn relative_alt_steps_after_takeoff_and_the_switch_smooths_it() {
    for steps in [true, false] {
        let mut cfg = crate::VehicleConfig::instance(0);
        cfg.relative_alt_steps = steps;
        let mut g = Gcs::with(cfg);
        g.run(5_000);
        g.param_set(
            "MIS_TAKEOFF_ALT",
            5.0,
            mav::MavParamType::MAV_PARAM_TYPE_REAL32,
        );
        g.set_mode(Mode::Takeoff);
        g.run(1_200);
        g.arm();
        g.run(15_000);
        let (mut rel, mut local, mut amsl) = (Vec::new(), Vec::new(), Vec::new());
        let homes_before = g.home_alts.len();
        for _ in 0..600 {
            g.run(100);
            rel.push(g.gpos.as_ref().unwrap().relative_alt as f32 / 1000.0);
            amsl.push(g.gpos.as_ref().unwrap().alt as f32 / 1000.0);
            local.push(-g.lpos.as_ref().unwrap().z);
        }
        let amsl_jump = amsl
            .windows(2)
            .map(|w| (w[1] - w[0]).abs())
            .fold(0.0, f32::max);
        assert!(
            amsl_jump < 0.05,
            "GLOBAL_POSITION_INT.alt is smooth: {amsl_jump}"
        );
        // Home's altitude as received, each value once (PX4 re-sends an unchanged home too).
        let mut homes = g.home_alts[homes_before..].to_vec();
        homes.dedup_by_key(|h| h.1);
        let jump = rel
            .windows(2)
            .map(|w| (w[1] - w[0]).abs())
            .fold(0.0, f32::max);
        let local_jump = local
            .windows(2)
            .map(|w| (w[1] - w[0]).abs())
            .fold(0.0, f32::max);
        let lo = rel.iter().copied().fold(f32::MAX, f32::min);
        assert!(local_jump < 0.05, "LOCAL_POSITION_NED.z is smooth");
        if steps {
            assert!(jump >= 1.0, "steps of at least 1 m: {jump}");
            // As PX4: home re-sent every ~2 s, several times by 1 m or more in a minute.
            assert!(
                (25..=31).contains(&homes.len()),
                "{} home altitudes",
                homes.len()
            );
            let big = homes
                .windows(2)
                .filter(|w| (w[1].1 - w[0].1).abs() >= 1_000)
                .count();
            assert!(big >= 5, "{big} home steps of 1 m or more in 60 s");
            assert!(
                (3.7..=4.1).contains(&lo),
                "reads down to ~3.8 m at a 5 m target: {lo}"
            );
        } else {
            assert!(jump < 0.05 && (lo - 5.0).abs() < 0.1, "smooth: {jump} {lo}");
        }
    }
}

#[test]
fn com_disarm_land_and_com_disarm_prflt_are_honoured() {
    // COM_DISARM_LAND 4: "Disarmed by landing" 4 s after ON_GROUND (docs/px4-wire.md §Flight:
    // 4.0 s).
    let mut g = Gcs::airborne(3.0);
    g.param_set(
        "COM_DISARM_LAND",
        4.0,
        mav::MavParamType::MAV_PARAM_TYPE_REAL32,
    );
    let t0 = g.now_ms();
    g.set_mode(Mode::Land);
    assert!(g.run_until(40_000, |g| !g.armed()));
    let on_ground = g
        .log
        .iter()
        .find(|(t, e)| *t >= t0 && *e == Ev::Landed(1))
        .map(|(t, _)| *t)
        .unwrap();
    let disarmed = g.when(text("Disarmed by landing")).unwrap();
    assert!(
        (4_000..=4_500).contains(&(disarmed - on_ground)),
        "{} ms",
        disarmed - on_ground
    );
    // COM_DISARM_PRFLT 3: armed on the ground without a takeoff, disarmed after 3 s.
    let mut g = Gcs::booted();
    g.param_set(
        "COM_DISARM_PRFLT",
        3.0,
        mav::MavParamType::MAV_PARAM_TYPE_REAL32,
    );
    g.arm();
    let armed = g.now_ms();
    assert!(g.run_until(20_000, |g| g
        .texts()
        .iter()
        .any(|t| t == "Disarmed by auto preflight disarming")));
    let took = g
        .when(text("Disarmed by auto preflight disarming"))
        .unwrap()
        - armed;
    assert!((3_000..=3_600).contains(&took), "{took} ms");
}

#[test]
fn position_mode_pitch_half_for_four_seconds_flies_px4s_distance() {
    // PX4 (MAVSDK ManualControl, v1.18 dev): pitch stick 0.5 for 4 s in Position mode flies
    // 3.2-3.5 m at ~1.5 m/s (docs/px4-wire.md §Flight).
    let mut g = Gcs::airborne(5.0);
    let sticks = |x: i16| {
        move |g: &mut Gcs| {
            g.send(&mav::MANUAL_CONTROL_DATA {
                x,
                y: 0,
                z: 500,
                r: 0,
                target: 1,
                ..Default::default()
            });
        }
    };
    g.run_with(500, sticks(0));
    g.set_mode(Mode::Position);
    g.run_with(1_500, sticks(0));
    assert_eq!(g.mode(), Some(Mode::Position));
    let n0 = g.v.snapshot().position_ned_m[0];
    g.run_with(4_000, sticks(500));
    let moved = g.v.snapshot().position_ned_m[0] - n0;
    assert!((2.9..=3.9).contains(&moved), "moved {moved} m in 4 s");
}

/// PX4's boot-to-armable times of `flight` in `fixtures/calibration/px4-boot.tsv`, s.
fn px4_boot(flight: &str, key: &str) -> f64 {
    const BOOT: &str = include_str!("../../../fixtures/calibration/px4-boot.tsv");
    BOOT.lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| l.split('\t').collect::<Vec<_>>())
        .find(|f| f[0] == flight && f[1] == key)
        .unwrap_or_else(|| panic!("{flight} {key} in px4-boot.tsv"))[2]
        .parse()
        .unwrap()
}

/// Boot in `mode` (selected after the first heartbeat, a mission uploaded first for Mission,
/// as nexus did in the traces): (first heartbeat, prearm bit, STANDBY), s.
fn boot_in(mode: Mode) -> (f64, f64, f64) {
    let mut g = Gcs::new();
    assert!(g.run_until(3_000, |g| g.first_hb_ms.is_some()));
    if mode == Mode::Mission {
        super::mission::upload(&mut g, &super::mission::three_items());
    }
    g.set_mode(mode);
    assert!(g.run_until(10_000, |g| g.prearm_since_ms.is_some()
        && g.when(|e| *e == Ev::Status(3)).is_some()));
    let s = |ms: u64| ms as f64 / 1000.0;
    (
        s(g.first_hb_ms.unwrap()),
        s(g.prearm_since_ms.unwrap()),
        s(g.when(|e| *e == Ev::Status(3)).unwrap()),
    )
}

#[test]
fn boot_to_armable_as_the_traces() {
    for (flight, mode) in [
        ("takeoff-hover-land-x4", Mode::Takeoff),
        ("wait-for-text-with-reaction-x4", Mode::Takeoff),
        ("box-x4", Mode::Mission),
    ] {
        let (hb, prearm, standby) = boot_in(mode);
        let want = [
            ("first_heartbeat_s", hb, 0.05),
            // SYS_STATUS at 5 Hz, HEARTBEAT at 1 Hz: a sample's worth of slack each.
            ("prearm_ok_s", prearm, 0.25),
            ("standby_s", standby, 1.0),
        ];
        for (key, sim, tol) in want {
            let px4 = px4_boot(flight, key);
            eprintln!("{flight} {key}: sim {sim:.3} s, PX4 {px4:.3} s");
            assert!(
                (sim - px4).abs() <= tol,
                "{flight} {key}: sim {sim} s, PX4 {px4} s"
            );
        }
        // HEARTBEAT→prearm, what a client that starts at the first heartbeat waits.
        let px4 = px4_boot(flight, "prearm_ok_s") - px4_boot(flight, "first_heartbeat_s");
        assert!(
            (prearm - hb - px4).abs() <= 0.25,
            "{flight}: {} vs {px4}",
            prearm - hb
        );
    }
}
