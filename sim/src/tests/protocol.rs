//! Parameters, command framing, MAVLink 1, STATUSTEXT gating.

use super::*;
use crate::ExitStatus;
use mav::MavCmd::*;
use mav::MavFrame;
use mav::MavParamType::*;

#[test]
fn params_answer_at_once_int32_bytewise() {
    let mut g = Gcs::booted();
    let from = g.log.len();
    g.param_set("COM_RC_IN_MODE", f32::from_bits(2), MAV_PARAM_TYPE_INT32);
    let mut id = [0u8; 16];
    id[..15].copy_from_slice(b"MIS_TAKEOFF_ALT");
    g.send(&mav::PARAM_REQUEST_READ_DATA {
        param_index: -1,
        target_system: 1,
        target_component: 1,
        param_id: id.into(),
    });
    // Answered without any time passing.
    assert_eq!(
        g.events(from),
        vec![
            Ev::Param {
                name: "COM_RC_IN_MODE".into(),
                bits: 2,
                ty: 6
            },
            Ev::Param {
                name: "MIS_TAKEOFF_ALT".into(),
                bits: 2.5f32.to_bits(),
                ty: 9
            },
        ]
    );
    // A float-typed set of an INT32 gets TYPE_MISMATCH (7) and an unknown name DOES_NOT_EXIST
    // (1), at once and without a text, as PX4 (docs/px4-wire.md §Parameters).
    let from = g.log.len();
    g.param_set("COM_RC_IN_MODE", 1.0, MAV_PARAM_TYPE_REAL32);
    g.param_set("NO_SUCH_PARAM", 1.0, MAV_PARAM_TYPE_REAL32);
    let mut id = [0u8; 16];
    id[..9].copy_from_slice(b"NOT_THERE");
    g.send(&mav::PARAM_REQUEST_READ_DATA {
        param_index: -1,
        target_system: 1,
        target_component: 1,
        param_id: id.into(),
    });
    assert_eq!(
        g.events(from),
        vec![
            Ev::ParamError {
                name: "COM_RC_IN_MODE".into(),
                error: 7
            },
            Ev::ParamError {
                name: "NO_SUCH_PARAM".into(),
                error: 1
            },
            Ev::ParamError {
                name: "NOT_THERE".into(),
                error: 1
            },
        ]
    );
    g.run(100);
    assert!(!g.texts().iter().any(|t| t.contains("unknown param")));
    assert_eq!(
        g.v.params.i(crate::params::P::COM_RC_IN_MODE),
        2,
        "the mismatched set left it"
    );
    // The whole list.
    let from = g.log.len();
    g.send(&mav::PARAM_REQUEST_LIST_DATA {
        target_system: 1,
        target_component: 1,
    });
    // PX4's ~900 parameters at PARAMS_PER_TICK a tick: well within a second.
    g.run(1000);
    let listed: Vec<(String, u32, u8)> = g
        .events(from)
        .into_iter()
        .filter_map(|e| match e {
            Ev::Param { name, bits, ty } => Some((name, bits, ty)),
            _ => None,
        })
        .collect();
    // PX4's checksum first (UINT32), then every parameter once, in index order.
    assert_eq!(listed[0].0, "_HASH_CHECK");
    assert_eq!(listed[0].2, MAV_PARAM_TYPE_UINT32 as u8);
    assert_eq!(listed[0].1, g.v.params.hash());
    assert_eq!(listed.len(), crate::params::TABLE.len() + 1);
    // What was set above is listed as set.
    let mode = listed.iter().find(|p| p.0 == "COM_RC_IN_MODE").unwrap();
    assert_eq!(mode.1, 2);
    // Setting the checksum is refused (read-only) and stops a list in flight, as on PX4.
    let from = g.log.len();
    g.send(&mav::PARAM_REQUEST_LIST_DATA {
        target_system: 1,
        target_component: 1,
    });
    g.run(3);
    let mut id = [0u8; 16];
    id[..11].copy_from_slice(b"_HASH_CHECK");
    g.send(&mav::PARAM_SET_DATA {
        param_value: 0.0,
        target_system: 1,
        target_component: 1,
        param_id: id.into(),
        param_type: MAV_PARAM_TYPE_UINT32,
    });
    g.run(1000);
    let ev = g.events(from);
    let n = ev.iter().filter(|e| matches!(e, Ev::Param { .. })).count();
    assert!(n < 100, "the list stopped: {n} sent");
    assert!(ev.contains(&Ev::ParamError {
        name: "_HASH_CHECK".into(),
        error: mav::MavParamError::MAV_PARAM_ERROR_READ_ONLY as u8
    }));
}

/// The vehicle's parameters, as PARAM_REQUEST_LIST lists them, are real PX4's for the SIH
/// quadrotor (`data/sih-quadx.tsv`, PX4 SITL's own list): every name, its type and its value;
/// nothing more. MAV_SYS_ID and UXRCE_DDS_KEY are the instance + 1 on PX4 as here.
#[test]
fn the_parameter_list_is_real_px4s() {
    let mut g = Gcs::booted();
    let from = g.log.len();
    g.send(&mav::PARAM_REQUEST_LIST_DATA {
        target_system: 1,
        target_component: 1,
    });
    g.run(1000);
    let listed: std::collections::BTreeMap<String, (u32, u8)> = g
        .events(from)
        .into_iter()
        .filter_map(|e| match e {
            Ev::Param { name, bits, ty } if name != "_HASH_CHECK" => Some((name, (bits, ty))),
            _ => None,
        })
        .collect();
    let tsv = include_str!("../../data/sih-quadx.tsv");
    let mut want = std::collections::BTreeMap::new();
    for line in tsv.lines().filter(|l| !l.starts_with('#') && !l.is_empty()) {
        let cols: Vec<&str> = line.split('\t').collect();
        let (name, ty, value) = (cols[0], cols[1], cols[2]);
        if name == "_HASH_CHECK" {
            continue;
        }
        let (bits, ty) = match ty {
            "INT32" => (value.parse::<i32>().unwrap() as u32, 6u8),
            "REAL32" => ((value.parse::<f64>().unwrap() as f32).to_bits(), 9u8),
            other => panic!("{name}: type {other}"),
        };
        let bits = match name {
            // Per instance: this vehicle is instance 0, PX4's listing instance 8.
            "MAV_SYS_ID" | "UXRCE_DDS_KEY" => 1,
            _ => bits,
        };
        want.insert(name.to_owned(), (bits, ty));
    }
    let extra: Vec<&String> = listed.keys().filter(|n| !want.contains_key(*n)).collect();
    let missing: Vec<&String> = want.keys().filter(|n| !listed.contains_key(*n)).collect();
    assert!(extra.is_empty(), "not on PX4: {extra:?}");
    assert!(missing.is_empty(), "PX4 has them: {missing:?}");
    let differ: Vec<_> = want
        .iter()
        .filter(|(n, w)| listed[*n] != **w)
        .map(|(n, w)| (n, *w, listed[n]))
        .collect();
    assert!(differ.is_empty(), "(name, PX4, here): {differ:?}");
    assert_eq!(listed.len(), 897);
}

#[test]
fn command_int_needs_frame_5_and_mavlink1_is_accepted() {
    let mut g = Gcs::booted();
    let from = g.log.len();
    g.cmd_int(
        MAV_CMD_DO_SET_MODE,
        MavFrame::MAV_FRAME_GLOBAL,
        [1.0, 4.0, 2.0, 0.0],
        0,
        0,
        0.0,
    );
    g.cmd_int(
        MAV_CMD_DO_SET_MODE,
        MavFrame::MAV_FRAME_GLOBAL_INT,
        [1.0, 4.0, 2.0, 0.0],
        0,
        0,
        0.0,
    );
    g.cmd_long(MAV_CMD_DO_SET_SERVO, [0.0; 7]);
    assert_eq!(
        g.events(from),
        vec![
            Ev::Ack {
                cmd: 176,
                result: 9
            },
            Ev::Ack {
                cmd: 176,
                result: 0
            },
            Ev::Ack {
                cmd: 183,
                result: 3
            },
        ]
    );
    // A MAVLink 1 COMMAND_LONG (magic 0xFE).
    let msg = mav::COMMAND_LONG_DATA {
        param1: 1.0,
        param2: 4.0,
        param3: 3.0,
        command: MAV_CMD_DO_SET_MODE,
        target_system: 1,
        target_component: 1,
        ..Default::default()
    };
    let mut payload = [0u8; 33];
    let n = msg.ser(MavlinkVersion::V1, &mut payload);
    let mut f = vec![0xFE, n as u8, 7, 255, 190, 76];
    f.extend_from_slice(&payload[..n]);
    let crc = nexus_core::frame::frame_crc(&f[1..], nexus_core::frame::crc_extra(76).unwrap());
    f.extend_from_slice(&crc.to_le_bytes());
    let from = g.log.len();
    g.v.handle_datagram(&f);
    g.drain();
    assert_eq!(
        g.events(from),
        vec![
            Ev::Ack {
                cmd: 176,
                result: 0
            },
            Ev::Ack {
                cmd: 176,
                result: 0
            }
        ]
    );
    // A command for another system is not ours.
    let from = g.log.len();
    g.send(&mav::COMMAND_LONG_DATA {
        command: MAV_CMD_COMPONENT_ARM_DISARM,
        param1: 1.0,
        target_system: 7,
        target_component: 1,
        ..Default::default()
    });
    assert!(g.events(from).is_empty());
}

#[test]
fn statustext_needs_a_gcs_heartbeat() {
    let mut g = Gcs::new();
    g.send_heartbeats = false;
    g.run(5_000);
    g.arm();
    g.run(500);
    assert!(g.texts().is_empty(), "no GCS: no STATUSTEXT");
    assert!(g.armed());
    g.send_heartbeats = true;
    g.run(500);
    assert!(
        g.texts().iter().any(|t| t == "Armed by external command"),
        "queued text sent once a GCS appears"
    );
}

#[test]
fn set_message_interval_changes_a_stream() {
    let mut g = Gcs::booted();
    g.cmd_long(
        MAV_CMD_SET_MESSAGE_INTERVAL,
        [30.0, 50_000.0, 0.0, 0.0, 0.0, 0.0, 0.0],
    );
    let before = g.counts[&30];
    g.run(2_000);
    let hz = (g.counts[&30] - before) as f32 / 2.0;
    assert!((19.0..=21.0).contains(&hz), "{hz}");
}

#[test]
fn ground_truth_streams_only_when_asked_at_the_asked_rate() {
    let mut g = Gcs::booted();
    g.run(2_000);
    assert!(!g.counts.contains_key(&115), "HIL_STATE_QUATERNION unasked");
    let from = g.log.len();
    g.cmd_long(
        MAV_CMD_SET_MESSAGE_INTERVAL,
        [115.0, 40_000.0, 0.0, 0.0, 0.0, 0.0, 0.0],
    );
    g.run(20);
    assert!(g.events(from).contains(&Ev::Ack {
        cmd: 511,
        result: mav::MavResult::MAV_RESULT_ACCEPTED as u8
    }));
    let before = g.counts[&115];
    g.run(2_000);
    let hz = (g.counts[&115] - before) as f32 / 2.0;
    assert!((24.0..=26.0).contains(&hz), "{hz} Hz");
    // On the pad: the true altitude is the pad's, unlike the estimate's lag or home's steps.
    let t = g.truth.clone().unwrap();
    let origin_mm = (crate::geo::GeoPoint::SIH_DEFAULT.alt_amsl_m * 1000.0).round() as i32;
    assert!((t.alt - origin_mm).abs() <= 20, "{} vs {origin_mm}", t.alt);
    assert!(t.time_usec > 0 && (t.attitude_quaternion[0] - 1.0).abs() < 0.01);
    // −1 disables it again.
    g.cmd_long(
        MAV_CMD_SET_MESSAGE_INTERVAL,
        [115.0, -1.0, 0.0, 0.0, 0.0, 0.0, 0.0],
    );
    g.run(100);
    let n = g.counts[&115];
    g.run(1_000);
    assert_eq!(g.counts[&115], n);
}

#[test]
fn autopilot_version_identifies_the_vehicle_as_px4_sitl() {
    for instance in [0u8, 5, 41] {
        let mut g = Gcs::with(crate::VehicleConfig::instance(instance));
        g.run(3_000);
        g.cmd_long(
            MAV_CMD_REQUEST_MESSAGE,
            [148.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
        );
        g.run(20);
        let v = g.version.clone().expect("AUTOPILOT_VERSION");
        let sysid = instance + 1;
        assert!(nexus_core::ground_truth::is_px4_sitl(&v, sysid));
        assert_eq!((v.vendor_id, v.product_id, v.board_version), (0, 0, 1));
    }
}

#[test]
fn hostile_input_never_panics_or_corrupts_the_model() {
    let mut g = Gcs::airborne(3.0);
    // Random bytes, truncated frames, out-of-range fields.
    let mut x: u64 = 0x1234_5678;
    for _ in 0..2_000 {
        let mut d = [0u8; 300];
        for b in d.iter_mut() {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            *b = if x % 7 == 0 { 0xFD } else { x as u8 };
        }
        g.v.handle_datagram(&d[..(x % 300) as usize]);
    }
    g.param_set("MPC_XY_CRUISE", f32::NAN, MAV_PARAM_TYPE_REAL32);
    g.cmd_long(
        MAV_CMD_DO_SET_MODE,
        [f32::NAN, f32::INFINITY, -1.0, 0.0, 0.0, 0.0, 0.0],
    );
    g.send(&mav::SET_POSITION_TARGET_LOCAL_NED_DATA {
        x: f32::NAN,
        y: 1e38,
        z: -1e38,
        type_mask: mav::PositionTargetTypemask::empty(),
        target_system: 1,
        target_component: 1,
        coordinate_frame: MavFrame::MAV_FRAME_LOCAL_NED,
        ..Default::default()
    });
    g.send(&mav::MANUAL_CONTROL_DATA {
        x: i16::MIN,
        y: i16::MAX,
        z: i16::MIN,
        r: i16::MAX,
        target: 1,
        ..Default::default()
    });
    g.run(3_000);
    let s = g.v.snapshot();
    assert!(s.position_ned_m.iter().all(|v| v.is_finite()), "{s:?}");
    assert!(s.armed && s.mode == Mode::Hold, "{s:?}");
    // A driver that never polls does not grow memory without bound.
    let mut v = crate::Vehicle::new(crate::VehicleConfig::default());
    v.step(400_000_000);
    assert_eq!(v.io.out.pending(), crate::wire::MAX_PENDING_FRAMES);
    assert!(v.io.out.frames_dropped > 0);
}

#[test]
fn timesync_message_interval_flight_information_like_px4() {
    let mut g = Gcs::booted();
    // TIMESYNC request: answered at once with our clock (ns) and the request's ts1.
    let from = g.log.len();
    g.send(&mav::TIMESYNC_DATA {
        tc1: 0,
        ts1: 123_456_789,
        target_system: 1,
        target_component: 1,
    });
    let now_ns = g.v.now_us() as i64 * 1000;
    assert_eq!(
        g.events(from),
        vec![Ev::Timesync {
            tc1: now_ns,
            ts1: 123_456_789
        }]
    );
    // PX4 streams its own TIMESYNC requests at 10 Hz.
    g.counts.clear();
    g.run(2_000);
    assert!(
        (18..=22).contains(g.counts.get(&111).unwrap_or(&0)),
        "{:?}",
        g.counts.get(&111)
    );
    // GET_MESSAGE_INTERVAL: MESSAGE_INTERVAL then ACK 0; a stream that is off says -1, one this
    // vehicle lacks 0.
    let from = g.log.len();
    g.cmd_long(
        MAV_CMD_GET_MESSAGE_INTERVAL,
        [33.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
    );
    g.cmd_long(
        MAV_CMD_GET_MESSAGE_INTERVAL,
        [115.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
    );
    g.cmd_long(
        MAV_CMD_GET_MESSAGE_INTERVAL,
        [9000.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
    );
    assert_eq!(
        g.events(from),
        vec![
            Ev::MessageInterval {
                id: 33,
                interval_us: 20_000
            },
            Ev::Ack {
                cmd: 510,
                result: 0
            },
            Ev::MessageInterval {
                id: 115,
                interval_us: -1
            },
            Ev::Ack {
                cmd: 510,
                result: 0
            },
            Ev::MessageInterval {
                id: 9000,
                interval_us: 0
            },
            Ev::Ack {
                cmd: 510,
                result: 0
            },
        ]
    );
    // SET_MESSAGE_INTERVAL starts a stream that is off (ground truth at 25 Hz).
    let from = g.log.len();
    g.cmd_long(
        MAV_CMD_SET_MESSAGE_INTERVAL,
        [115.0, 40_000.0, 0.0, 0.0, 0.0, 0.0, 0.0],
    );
    g.cmd_long(
        MAV_CMD_GET_MESSAGE_INTERVAL,
        [115.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
    );
    assert_subsequence(
        &g.events(from),
        &[
            Ev::Ack {
                cmd: 511,
                result: 0,
            },
            Ev::MessageInterval {
                id: 115,
                interval_us: 40_000,
            },
        ],
    );
    // REQUEST_MESSAGE FLIGHT_INFORMATION: answered; arming and takeoff times once they happen.
    let from = g.log.len();
    g.cmd_long(
        MAV_CMD_REQUEST_MESSAGE,
        [264.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
    );
    assert_eq!(
        g.events(from),
        vec![
            Ev::FlightInformation {
                arming_us: 0,
                takeoff_us: 0
            },
            Ev::Ack {
                cmd: 512,
                result: 0
            },
        ]
    );
    g.set_mode(Mode::Takeoff);
    g.arm();
    assert!(g.run_until(5_000, |g| g.texts().iter().any(|t| t == "Takeoff detected")));
    let from = g.log.len();
    g.cmd_long(
        MAV_CMD_REQUEST_MESSAGE,
        [264.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
    );
    match &g.events(from)[0] {
        Ev::FlightInformation {
            arming_us,
            takeoff_us,
        } => assert!(
            *arming_us > 0 && takeoff_us > arming_us,
            "{arming_us} {takeoff_us}"
        ),
        e => panic!("{e:?}"),
    }
}

#[test]
fn reboot_refused_shutdown_exits_cleanly_autopilot_version_as_px4() {
    let mut g = Gcs::booted();
    let from = g.log.len();
    g.cmd_long(
        MAV_CMD_REQUEST_MESSAGE,
        [148.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
    );
    let v = g.version.clone().expect("AUTOPILOT_VERSION");
    assert_eq!(v.flight_sw_version, 0x0112_0000, "1.18.0 dev");
    assert_eq!(v.capabilities.bits(), 0xe8ff);
    // Reboot: DENIED, still running.
    g.cmd_long(
        MAV_CMD_PREFLIGHT_REBOOT_SHUTDOWN,
        [1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
    );
    g.run(1_000);
    assert!(g.v.exit_status().is_none());
    // Shutdown: ACCEPTED, the process exits 0 about 0.5 s later.
    g.cmd_long(
        MAV_CMD_PREFLIGHT_REBOOT_SHUTDOWN,
        [2.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
    );
    assert_subsequence(
        &g.events(from),
        &[
            Ev::Ack {
                cmd: 512,
                result: 0,
            },
            Ev::Ack {
                cmd: 246,
                result: 2,
            },
            Ev::Ack {
                cmd: 246,
                result: 0,
            },
        ],
    );
    g.run(400);
    assert!(g.v.exit_status().is_none());
    g.run(200);
    assert_eq!(g.v.exit_status(), Some(ExitStatus::Code(0)));
}
