//! The mission protocol and mission flight (docs/px4-wire.md §Mission upload, §Mission progress).

use super::*;
use crate::mission::crc32part;
use mav::MavCmd::*;
use mav::MavFrame;

const D2R: f64 = std::f64::consts::PI / 180.0;
use nexus_core::offboard::geo::M_PER_DEG;

pub fn item(
    seq: u16,
    cmd: mav::MavCmd,
    north_m: f64,
    east_m: f64,
    z: f32,
) -> mav::MISSION_ITEM_INT_DATA {
    let o = crate::GeoPoint::SIH_DEFAULT;
    let lat = o.lat_deg + north_m / M_PER_DEG;
    let lon = o.lon_deg + east_m / (M_PER_DEG * (o.lat_deg * D2R).cos());
    mav::MISSION_ITEM_INT_DATA {
        param1: 0.0,
        param2: 0.0,
        param3: 0.0,
        param4: f32::NAN,
        x: (lat * 1e7).round() as i32,
        y: (lon * 1e7).round() as i32,
        z,
        seq,
        command: cmd,
        target_system: 1,
        target_component: 1,
        frame: MavFrame::MAV_FRAME_GLOBAL_RELATIVE_ALT_INT,
        current: 0,
        autocontinue: 1,
        mission_type: mav::MavMissionType::MAV_MISSION_TYPE_MISSION,
    }
}

pub fn three_items() -> Vec<mav::MISSION_ITEM_INT_DATA> {
    vec![
        item(0, MAV_CMD_NAV_TAKEOFF, 0.0, 0.0, 10.0),
        item(1, MAV_CMD_NAV_WAYPOINT, 20.0, 0.0, 10.0),
        item(2, MAV_CMD_NAV_WAYPOINT, 20.0, 15.0, 10.0),
    ]
}

/// Bit-by-bit CRC of the items per PX4's `crc32_for_mission_item` (independent of the table).
fn expected_crc(items: &[mav::MISSION_ITEM_INT_DATA]) -> u32 {
    let mut crc = 0u32;
    for it in items {
        let mut b = vec![it.frame as u8];
        b.extend_from_slice(&(it.command as u16).to_le_bytes());
        b.push(it.autocontinue);
        for w in [
            it.param1.to_bits(),
            it.param2.to_bits(),
            it.param3.to_bits(),
            it.param4.to_bits(),
            it.x as u32,
            it.y as u32,
            it.z.to_bits(),
        ] {
            b.extend_from_slice(&w.to_le_bytes());
        }
        for byte in b {
            crc ^= byte as u32;
            for _ in 0..8 {
                crc = if crc & 1 != 0 {
                    (crc >> 1) ^ 0xEDB8_8320
                } else {
                    crc >> 1
                };
            }
        }
    }
    crc
}

fn count(g: &mut Gcs, n: u16) {
    g.send(&mav::MISSION_COUNT_DATA {
        count: n,
        target_system: 1,
        target_component: 1,
        mission_type: mav::MavMissionType::MAV_MISSION_TYPE_MISSION,
        opaque_id: 0,
    });
}

/// Upload answering every request with MISSION_ITEM_INT; returns the events of the exchange.
pub fn upload(g: &mut Gcs, items: &[mav::MISSION_ITEM_INT_DATA]) -> Vec<Ev> {
    let from = g.log.len();
    count(g, items.len() as u16);
    let mut answered = from;
    for _ in 0..items.len() * 4 {
        let req = g.log[answered..]
            .iter()
            .position(|(_, e)| matches!(e, Ev::Request { .. }));
        let Some(i) = req else { break };
        answered += i + 1;
        if let Ev::Request { seq, .. } = g.log[answered - 1].1 {
            let it = items[seq as usize].clone();
            g.send(&it);
        }
    }
    g.events(from)
}

#[test]
fn crc_is_the_nuttx_crc32() {
    // Standard CRC-32 is crc32part with inversions.
    assert_eq!(
        crc32part(b"123456789", 0xFFFF_FFFF) ^ 0xFFFF_FFFF,
        0xCBF4_3926
    );
}

#[test]
fn upload_requests_each_item_and_acks_with_the_crc() {
    let mut g = Gcs::booted();
    assert_eq!(
        g.log
            .iter()
            .rev()
            .find_map(|(_, e)| matches!(e, Ev::MissionCurrent { .. }).then_some(e.clone())),
        Some(Ev::MissionCurrent {
            seq: 0,
            total: 65535,
            state: 1
        })
    );
    let items = three_items();
    let crc = expected_crc(&items);
    assert_ne!(crc, 0);
    let ev = upload(&mut g, &items);
    let want = vec![
        Ev::Request { seq: 0, int: true },
        Ev::Request { seq: 1, int: true },
        Ev::Request { seq: 2, int: true },
        Ev::MissionAck {
            result: 0,
            opaque: crc,
        },
    ];
    assert_eq!(
        ev.into_iter()
            .filter(|e| !matches!(e, Ev::MissionCurrent { .. }))
            .collect::<Vec<_>>(),
        want
    );
    g.run(1_100);
    assert!(g.log.iter().any(|(_, e)| *e
        == Ev::MissionCurrent {
            seq: 0,
            total: 3,
            state: 2
        }));
    // Identical re-upload: every item requested again, same id.
    let ev = upload(&mut g, &items);
    assert_eq!(
        ev.into_iter()
            .filter(|e| !matches!(e, Ev::MissionCurrent { .. }))
            .collect::<Vec<_>>(),
        want
    );
    // Download gives it back.
    let from = g.log.len();
    g.send(&mav::MISSION_REQUEST_LIST_DATA {
        target_system: 1,
        target_component: 1,
        mission_type: mav::MavMissionType::MAV_MISSION_TYPE_MISSION,
    });
    g.send(&mav::MISSION_REQUEST_INT_DATA {
        seq: 0,
        target_system: 1,
        target_component: 1,
        mission_type: mav::MavMissionType::MAV_MISSION_TYPE_MISSION,
    });
    g.send(&mav::MISSION_REQUEST_INT_DATA {
        seq: 1,
        target_system: 1,
        target_component: 1,
        mission_type: mav::MavMissionType::MAV_MISSION_TYPE_MISSION,
    });
    let ev = g.events(from);
    assert_subsequence(
        &ev,
        &[
            Ev::MissionCount {
                count: 3,
                opaque: crc,
            },
            // Uploaded as frame 3, returned as 6 (GLOBAL_RELATIVE_ALT_INT), as PX4 does.
            Ev::ItemInt {
                seq: 0,
                cmd: 22,
                x: items[0].x,
                frame: 6,
            },
            Ev::ItemInt {
                seq: 1,
                cmd: 16,
                x: items[1].x,
                frame: 6,
            },
        ],
    );
}

#[test]
fn legacy_item_switches_requests_until_int_again() {
    let mut g = Gcs::booted();
    let items = three_items();
    let from = g.log.len();
    count(&mut g, 3);
    // Answer seq 0 with a legacy MISSION_ITEM.
    let i0 = &items[0];
    #[allow(deprecated)]
    g.send(&mav::MISSION_ITEM_DATA {
        param1: 0.0,
        param2: 0.0,
        param3: 0.0,
        param4: f32::NAN,
        x: i0.x as f32 * 1e-7,
        y: i0.y as f32 * 1e-7,
        z: 10.0,
        seq: 0,
        command: MAV_CMD_NAV_TAKEOFF,
        target_system: 1,
        target_component: 1,
        frame: MavFrame::MAV_FRAME_GLOBAL_RELATIVE_ALT,
        current: 0,
        autocontinue: 1,
        mission_type: mav::MavMissionType::MAV_MISSION_TYPE_MISSION,
    });
    g.send(&items[1]);
    g.send(&items[2]);
    let ev: Vec<_> = g
        .events(from)
        .into_iter()
        .filter(|e| !matches!(e, Ev::MissionCurrent { .. }))
        .collect();
    assert_eq!(
        &ev[..3],
        &[
            Ev::Request { seq: 0, int: true },
            Ev::Request { seq: 1, int: false },
            Ev::Request { seq: 2, int: true },
        ]
    );
    assert!(matches!(ev[3], Ev::MissionAck { result: 0, .. }));
}

#[test]
fn unanswered_requests_are_retried_then_time_out_without_ack() {
    let mut g = Gcs::booted();
    let from = g.log.len();
    count(&mut g, 3);
    g.run(6_000);
    let ev = g.events(from);
    let reqs: Vec<_> = g.log[from..]
        .iter()
        .filter(|(_, e)| *e == Ev::Request { seq: 0, int: true })
        .map(|(t, _)| *t)
        .collect();
    assert!((18..=21).contains(&reqs.len()), "{} requests", reqs.len());
    let gaps: Vec<_> = reqs.windows(2).map(|w| w[1] - w[0]).collect();
    assert!(gaps.iter().all(|&d| (250..=280).contains(&d)), "{gaps:?}");
    assert!(ev
        .iter()
        .any(|e| matches!(e, Ev::Text { text, sev: 2 } if text == "Operation timeout")));
    assert!(!ev.iter().any(|e| matches!(e, Ev::MissionAck { .. })));
    // The manager is idle again: a new upload works.
    assert!(upload(&mut g, &three_items())
        .iter()
        .any(|e| matches!(e, Ev::MissionAck { result: 0, .. })));
}

#[test]
fn unsupported_items_are_refused() {
    let mut g = Gcs::booted();
    let mut items = three_items();
    items[1].frame = MavFrame::MAV_FRAME_LOCAL_NED;
    let ev = upload(&mut g, &items);
    assert!(
        ev.contains(&Ev::MissionAck {
            result: 2,
            opaque: 0
        }),
        "{ev:?}"
    );
    let mut items = three_items();
    items[1].command = MAV_CMD_DO_SET_SERVO; // not a mission item PX4 accepts in a global frame
    let ev = upload(&mut g, &items);
    assert!(
        ev.contains(&Ev::MissionAck {
            result: 3,
            opaque: 0
        }),
        "{ev:?}"
    );
}

#[test]
fn mission_flight_with_px4s_sequence_and_current_states() {
    let mut g = Gcs::booted();
    upload(&mut g, &three_items());
    g.run(1_100);
    let from = g.log.len();
    g.set_mode(Mode::Mission);
    g.run(1_200);
    g.arm();
    assert!(g.run_until(90_000, |g| g.mode() == Some(Mode::Hold) && g.armed()));
    g.run(3_000);
    let ev = g.events(from);
    assert_subsequence(
        &ev,
        &[
            Ev::Mode(Mode::Mission),
            Ev::MissionCurrent {
                seq: 0,
                total: 3,
                state: 3,
            },
            Ev::Ack {
                cmd: 400,
                result: 0,
            },
            Ev::Text {
                sev: 6,
                text: "Armed by external command".into(),
            },
            // box-x4's order: armed, "Executing Mission", the climb.
            Ev::Text {
                sev: 6,
                text: "Executing Mission".into(),
            },
            Ev::Text {
                sev: 6,
                text: "Climb to 10.0 meters above home".into(),
            },
            Ev::Text {
                sev: 6,
                text: "Takeoff detected".into(),
            },
            Ev::Landed(3),
            // PX4 sends the new MISSION_CURRENT before the MISSION_ITEM_REACHED.
            Ev::MissionCurrent {
                seq: 1,
                total: 3,
                state: 3,
            },
            Ev::Reached(0),
            Ev::MissionCurrent {
                seq: 2,
                total: 3,
                state: 3,
            },
            Ev::Reached(1),
            Ev::Reached(2),
            Ev::Text {
                sev: 6,
                text: "Mission finished, loitering".into(),
            },
            Ev::MissionCurrent {
                seq: 2,
                total: 3,
                state: 5,
            },
        ],
    );
    assert_subsequence(
        &ev,
        &[
            Ev::Text {
                sev: 6,
                text: "Mission finished, loitering".into(),
            },
            Ev::Mode(Mode::Hold),
        ],
    );
    assert_subsequence(&ev, &[Ev::Landed(3), Ev::Landed(2)]);
    // MISSION_ITEM_REACHED repeated at 1 Hz, ten more times.
    g.run(12_000);
    let reached2: Vec<_> = g
        .log
        .iter()
        .filter(|(_, e)| *e == Ev::Reached(2))
        .map(|(t, _)| *t)
        .collect();
    assert_eq!(reached2.len(), 11, "{reached2:?}");
    // The last item stays current through RTL and disarm.
    g.cmd_long(MAV_CMD_NAV_RETURN_TO_LAUNCH, [0.0; 7]);
    assert!(g.run_until(120_000, |g| !g.armed()));
    g.run(2_000);
    let last = g
        .log
        .iter()
        .rev()
        .find_map(|(_, e)| matches!(e, Ev::MissionCurrent { .. }).then_some(e.clone()));
    assert_eq!(
        last,
        Some(Ev::MissionCurrent {
            seq: 2,
            total: 3,
            state: 5
        })
    );
    // An identical re-upload does not reset it; MISSION_SET_CURRENT 0 does.
    upload(&mut g, &three_items());
    g.run(1_100);
    let last = g
        .log
        .iter()
        .rev()
        .find_map(|(_, e)| matches!(e, Ev::MissionCurrent { .. }).then_some(e.clone()));
    assert_eq!(
        last,
        Some(Ev::MissionCurrent {
            seq: 2,
            total: 3,
            state: 5
        })
    );
    #[allow(deprecated)]
    g.send(&mav::MISSION_SET_CURRENT_DATA {
        seq: 0,
        target_system: 1,
        target_component: 1,
    });
    g.run(100);
    let last = g
        .log
        .iter()
        .rev()
        .find_map(|(_, e)| matches!(e, Ev::MissionCurrent { .. }).then_some(e.clone()));
    assert_eq!(
        last,
        Some(Ev::MissionCurrent {
            seq: 0,
            total: 3,
            state: 2
        })
    );
    // Clear all.
    g.send(&mav::MISSION_CLEAR_ALL_DATA {
        target_system: 1,
        target_component: 1,
        mission_type: mav::MavMissionType::MAV_MISSION_TYPE_MISSION,
    });
    g.run(1_100);
    let last = g
        .log
        .iter()
        .rev()
        .find_map(|(_, e)| matches!(e, Ev::MissionCurrent { .. }).then_some(e.clone()));
    assert_eq!(
        last,
        Some(Ev::MissionCurrent {
            seq: 0,
            total: 65535,
            state: 1
        })
    );
}

#[test]
fn mission_ending_in_rtl_hands_over_and_lands() {
    let mut g = Gcs::booted();
    let mut items = three_items();
    let mut rtl = item(3, MAV_CMD_NAV_RETURN_TO_LAUNCH, 0.0, 0.0, 0.0);
    rtl.frame = MavFrame::MAV_FRAME_MISSION;
    rtl.x = 0;
    rtl.y = 0;
    items.push(rtl);
    let ev = upload(&mut g, &items);
    assert!(ev
        .iter()
        .any(|e| matches!(e, Ev::MissionAck { result: 0, .. })));
    g.set_mode(Mode::Mission);
    g.run(1_200);
    g.arm();
    assert!(g.run_until(150_000, |g| !g.armed() && g.now_ms() > 20_000));
    let t = g.texts();
    assert!(t.iter().any(|t| t == "Returning to launch"), "{t:?}");
    assert!(
        !g.log.iter().any(|(_, e)| *e == Ev::Reached(3)),
        "no arrival reported for the RTL item"
    );
    let last = g
        .log
        .iter()
        .rev()
        .find_map(|(_, e)| matches!(e, Ev::MissionCurrent { .. }).then_some(e.clone()));
    assert_eq!(
        last,
        Some(Ev::MissionCurrent {
            seq: 3,
            total: 4,
            state: 5
        })
    );
}

#[test]
fn mission_ending_in_land_lands_and_disarms() {
    let mut g = Gcs::booted();
    let mut items = three_items();
    items.truncate(2);
    items.push(item(2, MAV_CMD_NAV_LAND, 20.0, 15.0, 0.0));
    let ev = upload(&mut g, &items);
    assert!(ev
        .iter()
        .any(|e| matches!(e, Ev::MissionAck { result: 0, .. })));
    g.set_mode(Mode::Mission);
    g.run(1_200);
    g.arm();
    let from = g.log.len();
    assert!(g.run_until(2_000, |g| g.armed()));
    assert!(g.run_until(120_000, |g| !g.armed()));
    g.run(1_500);
    assert_subsequence(
        &g.events(from),
        &[
            Ev::Reached(1),
            Ev::Landed(4),
            Ev::Reached(2),
            Ev::Text {
                sev: 6,
                text: "Mission finished, landed".into(),
            },
            Ev::Text {
                sev: 6,
                text: "Disarmed by landing".into(),
            },
        ],
    );
    let p = g.v.snapshot().position_ned_m;
    assert!(
        (p[0] - 20.0).abs() < 1.0 && (p[1] - 15.0).abs() < 1.0,
        "landed at the item: {p:?}"
    );
    // PX4 does not leave Mission after a landing on the ground.
    assert_eq!(g.mode(), Some(Mode::Mission));
}
