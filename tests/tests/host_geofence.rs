//! Geofence and rally points over UDP against the simulated PX4 (lockstep, instance 252, one
//! test at a time): uploaded, downloaded and cleared through the mission protocol with
//! mission_type 1 and 2, each beside the mission and independent of it, and downloaded as PX4
//! sends them back; a goto outside the fence refused in PX4's words; and a breach answered with
//! GF_ACTION's action.

mod host_support;
#[path = "sim_support/mod.rs"]
mod sim_support;

use host_support::*;
use nexus_core::engine::{Condition, Reason, Wait};
use nexus_core::mav;
use nexus_core::mission::MissionItem;
use nexus_core::offboard::Yaw;
use nexus_core::offboard::{GeoKind, GeoStatus, MissionError};
use nexus_core::plan::{read_geo, GeoPlan};
use nexus_core::Mode;
use nexus_host::groups::{
    ActionApi, GeofenceApi, InfoApi, MissionApi, OffboardApi, ParamApi, TelemetryApi,
};
use nexus_host::nexus_core::action::ParamValue;
use nexus_host::offboard_client::OffboardClient;
use nexus_host::run::Run;
use nexus_host::session::Session;

/// The tests share instance 252: one at a time.
static ONE: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one() -> std::sync::MutexGuard<'static, ()> {
    ONE.lock().unwrap_or_else(|p| p.into_inner())
}

fn example() -> GeoPlan<64, 16> {
    let src = std::fs::read(root().join("examples/fenced.plan")).unwrap();
    read_geo(&src).unwrap()
}

fn settled(sim: &Run, op: &OffboardClient, kind: GeoKind) -> GeoStatus {
    sim.until(|| op.geo_status(kind).unwrap() != GeoStatus::Busy, 30.0)
        .unwrap_or_else(|e| panic!("{kind:?}: {e}\n{}", events(op)));
    op.geo_status(kind).unwrap()
}

fn download(sim: &Run, op: &OffboardClient, kind: GeoKind) -> Vec<MissionItem> {
    op.download_geo(kind).unwrap();
    let st = settled(sim, op, kind);
    let items = op.geo_items(kind).unwrap();
    assert_eq!(
        st,
        GeoStatus::Downloaded {
            count: items.len() as u16
        }
    );
    items
}

/// The download is the upload as PX4 sends it back: fence items in GLOBAL_INT (5) with
/// autocontinue off, rally points in GLOBAL_RELATIVE_ALT_INT (6), everything else as sent.
fn same(kind: GeoKind, uploaded: &[MissionItem], downloaded: &[MissionItem]) {
    assert!(
        kind.same_items(uploaded, downloaded),
        "{kind:?}: uploaded {uploaded:?}\ndownloaded {downloaded:?}"
    );
    let want = match kind {
        GeoKind::Fence => 5,
        GeoKind::Rally => 6,
    };
    for it in downloaded {
        assert_eq!(it.frame, want, "{kind:?} {it:?}");
    }
}

#[test]
fn fence_and_rally_round_trip_beside_the_mission() {
    let g = example();
    assert_eq!(
        g.fence.len(),
        5,
        "a 4-vertex inclusion polygon and an exclusion circle"
    );
    assert_eq!(g.rally.len(), 2);
    let _one = one();
    let (sim, op) = connect(lockstep(252));
    op.upload_mission(plan("MC_mission_box.plan").as_path())
        .unwrap();
    sim.until(|| op.mission_uploaded(), 30.0).unwrap();
    let mission = op.mission_items().unwrap();

    op.upload_geo(GeoKind::Fence, &g.fence).unwrap();
    op.upload_geo(GeoKind::Rally, &g.rally).unwrap();
    assert_eq!(
        settled(&sim, &op, GeoKind::Fence),
        GeoStatus::Uploaded { count: 5 }
    );
    assert_eq!(
        settled(&sim, &op, GeoKind::Rally),
        GeoStatus::Uploaded { count: 2 }
    );

    // Download into a new client's empty plans: what the vehicle holds, item for item.
    drop(op);
    let other = OffboardClient::connect(&sim, 10.0).unwrap();
    assert!(other.geo_items(GeoKind::Fence).unwrap().is_empty());
    same(
        GeoKind::Fence,
        &g.fence,
        &download(&sim, &other, GeoKind::Fence),
    );
    same(
        GeoKind::Rally,
        &g.rally,
        &download(&sim, &other, GeoKind::Rally),
    );
    // The mission is untouched by both.
    other.download_mission().unwrap();
    sim.until(
        || other.mission_items().unwrap().len() == mission.len(),
        30.0,
    )
    .unwrap();
    assert_eq!(other.mission_count(), mission.len());

    // Clearing the fence leaves the rally points and the mission.
    other.clear_geo(GeoKind::Fence).unwrap();
    assert_eq!(settled(&sim, &other, GeoKind::Fence), GeoStatus::Cleared);
    assert!(other.geo_items(GeoKind::Fence).unwrap().is_empty());
    assert!(download(&sim, &other, GeoKind::Fence).is_empty());
    same(
        GeoKind::Rally,
        &g.rally,
        &download(&sim, &other, GeoKind::Rally),
    );
    other.download_mission().unwrap();
    sim.until(
        || other.mission_items().unwrap().len() == mission.len(),
        30.0,
    )
    .unwrap();
    bad_fence_input_is_a_typed_error_or_a_rejection(&sim, &other);
}

/// Bad fence input on the link of `op`: a typed error, or PX4's refusal as a status.
fn bad_fence_input_is_a_typed_error_or_a_rejection(sim: &Run, op: &OffboardClient) {
    // Empty: an error, nothing started (clearing is clear_geo).
    let before = op.geo_status(GeoKind::Fence).unwrap();
    assert!(op.upload_geo(GeoKind::Fence, &[]).is_err());
    assert_eq!(op.geo_status(GeoKind::Fence).unwrap(), before);
    // More than the machine holds: an error before anything goes out.
    let mut many = example().rally.to_vec();
    while many.len() <= nexus_core::offboard::RALLY_ITEMS {
        let mut it = many[0];
        it.seq = many.len() as u16;
        many.push(it);
    }
    let before = op.geo_status(GeoKind::Rally).unwrap();
    assert!(op.upload_geo(GeoKind::Rally, &many).is_err());
    assert_eq!(op.geo_status(GeoKind::Rally).unwrap(), before);
    // A polygon of two vertices: PX4's feasibility check refuses it (MAV_MISSION_ERROR, "Fence:
    // too few vertices"), and the status says so.
    let mut wrong = example().fence.to_vec();
    wrong.truncate(2);
    for v in &mut wrong {
        v.params[0] = 2.0;
    }
    op.upload_geo(GeoKind::Fence, &wrong).unwrap();
    let st = settled(sim, op, GeoKind::Fence);
    assert_eq!(
        st,
        GeoStatus::Failed(MissionError::Rejected {
            result: mav::MavMissionResult::MAV_MISSION_ERROR as u8
        })
    );
    // The vehicle holds no fence after the refusal.
    op.download_geo(GeoKind::Fence).unwrap();
    assert_eq!(
        settled(sim, op, GeoKind::Fence),
        GeoStatus::Downloaded { count: 0 }
    );
}

/// An inclusion square of half-side `half_m` around the pad, as QGroundControl sends it
/// (GLOBAL, autocontinue off).
fn square_at_home(half_m: f64) -> Vec<MissionItem> {
    let (lat0, lon0) = (47.397742_f64, 8.545594_f64);
    let m_per_deg = 111_194.926_644_558_74_f64;
    [(-1.0, -1.0), (-1.0, 1.0), (1.0, 1.0), (1.0, -1.0)]
        .iter()
        .enumerate()
        .map(|(i, &(n, e)): (usize, &(f64, f64))| MissionItem {
            seq: i as u16,
            frame: 0,
            command: 5001,
            autocontinue: false,
            params: [4.0, 0.0, 0.0, 0.0],
            x: ((lat0 + n * half_m / m_per_deg) * 1e7).round() as i32,
            y: ((lon0 + e * half_m / (m_per_deg * lat0.to_radians().cos())) * 1e7).round() as i32,
            z: 0.0,
        })
        .collect()
}

/// A session on instance 252 holding a 25 m square fence (GF_ACTION `gf_action`, PX4's 2 when
/// `None`), hovering 5 m over the pad.
fn fenced_hover(gf_action: Option<i32>) -> Session {
    let s = session(lockstep(252));
    let op = s.client();
    if let Some(a) = gf_action {
        op.set_param("GF_ACTION", ParamValue::Int(a)).unwrap();
    }
    op.upload_geo(GeoKind::Fence, &square_at_home(25.0))
        .unwrap();
    s.sim()
        .until(
            || op.geo_status(GeoKind::Fence).unwrap() != GeoStatus::Busy,
            30.0,
        )
        .unwrap();
    assert_eq!(
        op.geo_status(GeoKind::Fence).unwrap(),
        GeoStatus::Uploaded { count: 4 }
    );
    op.takeoff(5.0).unwrap();
    s.sim().until(|| op.at_target(), 60.0).unwrap();
    s
}

/// As real PX4 does: a goto outside the fence is acked (commander switches to Hold), then the
/// navigator says "Reposition is outside geofence" and the vehicle stays where it was; the
/// client reports the goto refused in PX4's words; a goto inside flies, and Land lands.
#[test]
fn a_goto_outside_the_fence_is_refused_in_px4s_words_and_land_lands() {
    let _one = one();
    let s = fenced_hover(None);
    let op = s.client();
    let before = op.local_ned().unwrap();
    op.goto_flu(150.0, 0.0, 5.0, None).unwrap();
    s.sim()
        .until(|| op.last_refusal().is_some(), 10.0)
        .unwrap_or_else(|e| panic!("{e}\n{}", events(op)));
    let r = op.last_refusal().unwrap();
    assert_eq!(r.result, Some(0), "acked ACCEPTED: {r}");
    assert!(r.text.contains("Reposition is outside geofence"), "{r}");
    assert_eq!(
        r.to_string(),
        "reposition refused after an ACCEPTED ack: Reposition is outside geofence"
    );
    let r = s
        .wait(
            &Wait::time_s(5.0)
                .guard(Condition::mode(Mode::Mission))
                .timeout_s(10.0),
            CAP,
        )
        .unwrap();
    assert_eq!(r.reason, Reason::Met, "{r:?}");
    assert_eq!(op.mode(), Some(Mode::Hold));
    let after = op.local_ned().unwrap();
    assert!(
        (after.north_m - before.north_m).hypot(after.east_m - before.east_m) < 1.0,
        "held where it was: {before:?} -> {after:?}"
    );
    op.goto_flu(10.0, 0.0, 5.0, None).unwrap();
    s.sim().until(|| op.at_target(), 60.0).unwrap();
    op.land().unwrap();
    let r = s
        .wait(&Wait::until(Condition::disarmed()).timeout_s(90.0), CAP)
        .unwrap();
    assert_eq!(r.reason, Reason::Met, "Land lands: {r:?}\n{}", events(op));
}

/// Fly out of the fence north in Offboard at 3 m/s; the failsafe's words come.
fn breach(s: &Session, expected: Mode) {
    let op = s.client();
    op.set_velocity_ned(3.0, 0.0, 0.0, Yaw::Free).unwrap();
    op.start_offboard().unwrap();
    let r = s
        .wait(
            &Wait::until(Condition::text("Failsafe activated")).timeout_s(60.0),
            CAP,
        )
        .unwrap();
    assert_eq!(r.reason, Reason::Met, "{r:?}\n{}", events(op));
    let r = s
        .wait(
            &Wait::mode(expected)
                .guard(Condition::landed())
                .timeout_s(5.0),
            CAP,
        )
        .unwrap();
    assert_eq!(r.reason, Reason::Met, "the failsafe takes over: {r:?}");
}

#[test]
fn leaving_the_fence_holds_as_px4s_default_gf_action_and_land_takes_over() {
    let _one = one();
    // GF_ACTION 2 (PX4's default): Hold where the breach was seen, at the fence line.
    let s = fenced_hover(None);
    breach(&s, Mode::Hold);
    let op = s.client();
    let r = s.wait(&Wait::time_s(5.0).timeout_s(10.0), CAP).unwrap();
    assert_eq!(r.reason, Reason::Met, "{r:?}");
    assert_eq!(op.mode(), Some(Mode::Hold));
    let p = op.local_ned().unwrap();
    assert!((24.0..29.0).contains(&p.north_m), "held at the line: {p:?}");
    assert!(op.is_armed());
    op.land().unwrap();
    let r = s
        .wait(&Wait::until(Condition::disarmed()).timeout_s(90.0), CAP)
        .unwrap();
    assert_eq!(r.reason, Reason::Met, "Land lands: {r:?}\n{}", events(op));
}

/// GF_ACTION 3: Hold for COM_FAIL_ACT_T (a user may take over), then Return, as measured on
/// PX4 SITL ("Failsafe activated: entering Hold for 5 seconds", then "Failsafe activated").
#[test]
fn leaving_the_fence_returns_with_gf_action_3() {
    let _one = one();
    let s = fenced_hover(Some(3));
    breach(&s, Mode::Hold);
    let r = s
        .wait(
            &Wait::mode(Mode::Rtl)
                .guard(Condition::landed())
                .timeout_s(7.0),
            CAP,
        )
        .unwrap();
    assert_eq!(r.reason, Reason::Met, "Return after the hold: {r:?}");
    assert!(r.waited_sim_s > 4.0, "{r:?}");
}

/// Rally points as nexus used to send them (GLOBAL_RELATIVE_ALT_INT) make PX4's RTL say
/// "RTL: unsupported MAV_FRAME" (critical) for each every 2 s: PX4 stays armable, but a client
/// that waits for a spell free of critical texts before it arms (this one: wait_clear_s) never
/// arms — what was measured on real PX4. In QGroundControl's frame the same points are quiet
/// and the vehicle arms.
#[test]
fn rally_points_in_an_int_frame_keep_a_careful_client_from_arming() {
    let _one = one();
    for (frame, arms) in [(6u8, false), (3, true)] {
        // The client's default quiet spell (5 s), the CLI's.
        let (sim, op) = connect(nexus_host::run::RunOptions::simulated(252).lockstep());
        let mut rally = example().rally.to_vec();
        for r in &mut rally {
            r.frame = frame;
        }
        op.upload_geo(GeoKind::Rally, &rally).unwrap();
        assert_eq!(
            settled(&sim, &op, GeoKind::Rally),
            GeoStatus::Uploaded { count: 2 }
        );
        let r = sim
            .wait(&Wait::until(Condition::text("RTL: unsupported MAV_FRAME")).timeout_s(5.0))
            .unwrap();
        assert_eq!(r.reason == Reason::Met, !arms, "frame {frame}: {r:?}");
        op.set_mode(Mode::Takeoff).unwrap();
        op.arm().unwrap();
        let r = sim
            .wait(&Wait::until(Condition::armed()).timeout_s(15.0))
            .unwrap();
        assert_eq!(
            r.reason == Reason::Met,
            arms,
            "frame {frame}: {r:?}\n{}",
            events(&op)
        );
        // Not armed for want of the quiet spell: the arm is still pending, never sent.
        assert_eq!(op.status().unwrap().pending.arm, !arms);
    }
}

/// MAVSDK's C++ core as an autopilot (MissionRawServer, `tests/py/mavsdk_autopilot.py`) takes
/// the fence and rally transfers item for item, with their mission_type. On UDP 14792, instance
/// 252's client port (free while this test holds the instance).
#[test]
fn mavsdk_as_an_autopilot_accepts_the_fence_and_rally_transfers() {
    use nexus_host::offboard_client::OffboardOptions;
    use std::time::{Duration, Instant};
    let _one = one();
    let port = 14792u16;
    let mut sc =
        sim_support::Scenario::spawn("mavsdk_autopilot.py", &[port.to_string(), "120".into()]);
    sc.wait_event("ready", Duration::from_secs(30));
    let op = OffboardClient::new(
        &format!("udpin:127.0.0.1:{port}"),
        OffboardOptions {
            system_id: 1,
            ..OffboardOptions::default()
        },
    )
    .unwrap();
    op.open().unwrap();
    let t0 = Instant::now();
    while !op.connected() {
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "no heartbeat from MAVSDK"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let g = example();
    for (kind, items, ty) in [
        (GeoKind::Fence, &g.fence[..], 1),
        (GeoKind::Rally, &g.rally[..], 2),
    ] {
        op.upload_geo(kind, items).unwrap();
        let t0 = Instant::now();
        while op.geo_status(kind).unwrap() == GeoStatus::Busy {
            assert!(
                t0.elapsed() < Duration::from_secs(20),
                "{kind:?}: no answer\n{}",
                events(&op)
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(
            op.geo_status(kind).unwrap(),
            GeoStatus::Uploaded {
                count: items.len() as u16
            }
        );
        let e = sc.wait_event("mission", Duration::from_secs(20));
        assert_eq!(e["result"], "SUCCESS", "{e}");
        let got = e["items"].as_array().unwrap();
        assert_eq!(got.len(), items.len(), "{e}");
        for (got, want) in got.iter().zip(items) {
            assert_eq!(got["mission_type"], ty, "{got}");
            assert_eq!(got["command"], want.command, "{got}");
            assert_eq!(got["x"], want.x, "{got}");
            assert_eq!(got["y"], want.y, "{got}");
        }
    }
}

/// A fence and rally points lodged to follow the mission go up once PX4 has accepted it, the
/// fence before the rally points, and the vehicle then holds both (instance 171, its own).
#[test]
fn lodged_fence_and_rally_go_up_after_the_mission() {
    let g = example();
    let (sim, op) = connect(lockstep(171));
    op.lodge_geo(GeoKind::Fence, &g.fence).unwrap();
    op.lodge_geo(GeoKind::Rally, &g.rally).unwrap();
    // Lodged, not sent: 2 s sim on, nothing went up.
    let r = sim.wait(&Wait::time_s(2.0).timeout_s(5.0)).unwrap();
    assert_eq!(r.reason, Reason::Met, "{r:?}");
    assert_eq!(op.geo_status(GeoKind::Fence).unwrap(), GeoStatus::Idle);
    assert_eq!(op.geo_status(GeoKind::Rally).unwrap(), GeoStatus::Idle);

    op.upload_mission(plan("MC_mission_box.plan").as_path())
        .unwrap();
    // Looked at every lockstep step: the rally points never start before the fence is up,
    // and neither before the mission is accepted.
    let order = std::cell::Cell::new(Ok(()));
    sim.until(
        || {
            // Each read before what it is checked against: a later state only moves on.
            let rally = op.geo_status(GeoKind::Rally).unwrap();
            let fence = op.geo_status(GeoKind::Fence).unwrap();
            let fence_up = matches!(fence, GeoStatus::Uploaded { .. });
            if rally != GeoStatus::Idle && !fence_up {
                order.set(Err(format!("rally {rally:?} while the fence is {fence:?}")));
            }
            if fence != GeoStatus::Idle && !op.mission_uploaded() {
                order.set(Err(format!(
                    "fence {fence:?} before the mission was accepted"
                )));
            }
            matches!(rally, GeoStatus::Uploaded { .. } | GeoStatus::Failed(_))
        },
        30.0,
    )
    .unwrap_or_else(|e| panic!("{e}\n{}", events(&op)));
    order.into_inner().unwrap();
    assert_eq!(
        op.geo_status(GeoKind::Fence).unwrap(),
        GeoStatus::Uploaded { count: 5 }
    );
    assert_eq!(
        op.geo_status(GeoKind::Rally).unwrap(),
        GeoStatus::Uploaded { count: 2 }
    );
    // What the vehicle holds, item for item.
    drop(op);
    let other = OffboardClient::connect(&sim, 10.0).unwrap();
    same(
        GeoKind::Fence,
        &g.fence,
        &download(&sim, &other, GeoKind::Fence),
    );
    same(
        GeoKind::Rally,
        &g.rally,
        &download(&sim, &other, GeoKind::Rally),
    );
}
