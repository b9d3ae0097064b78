//! End-to-end flights through the host: the Python client's takeoff snippet, takeoff → goto → land,
//! the box mission from a `.plan`, parameters, the gesture arm, and the connect errors — against
//! the built-in simulated PX4 over real loopback UDP.

mod host_support;

use nexus_host::groups::{ActionApi, InfoApi, MissionApi, ParamApi, TelemetryApi};
use std::time::{Duration, Instant};

use host_support::*;
use nexus_core::engine::Condition;
use nexus_core::mav::MavParamType;
use nexus_core::telemetry::LandedState;
use nexus_core::Mode;
use nexus_host::error::{ConnectError, OffboardClientError, RunError};
use nexus_host::nexus_core::action::ParamValue;
use nexus_host::offboard_client::OffboardClient;
use nexus_host::pump::{LinkEvent, ParamError};
use nexus_host::run::{Run, RunOptions};
use nexus_host::sim::Fault;

/// The Python OffboardClient's snippet, in Rust: start a run, connect, take off, wait for the
/// target.
#[test]
fn the_python_clients_takeoff_snippet() {
    let sim = Run::new(RunOptions::simulated(100).speed(speed()));
    sim.start().unwrap();
    let op = OffboardClient::connect(&sim, 10.0).unwrap(); // ports["offboard"]: UDP 14640
    assert_eq!(sim.offboard_port().unwrap().port, 14640);
    assert_eq!(sim.offboard_port().unwrap().system_id, 101);
    op.takeoff(2.0).unwrap();
    let w = sim.until(|| op.at_target(), 60.0).unwrap();
    assert!(op.at_target());
    assert!(op.is_armed(), "{}", events(&op));
    // at_target reads the height above the pad (relative_alt jumps with PX4's home).
    let alt = op.snapshot().unwrap().height_m.unwrap();
    assert!(
        (alt - 2.0).abs() <= 1.0,
        "at_target within alt_tol_m: {alt}"
    );
    // PX4 must first be armable (boot ~4.5 s) and settle 5 s before the arm.
    assert!(w.waited_sim_s > 5.0 && w.waited_sim_s < 60.0, "{w:?}");
    // Ground truth reaches the altitude condition: true height, not relative_alt.
    let truth = sim.true_height_m().unwrap();
    let h = op.snapshot().unwrap().height_m.unwrap();
    assert!(
        (h - truth).abs() < 0.5,
        "snapshot height {h} vs truth {truth}"
    );
}

#[test]
fn takeoff_goto_land() {
    let (sim, op) = connect(lockstep(101));
    op.takeoff(5.0).unwrap();
    sim.until(|| op.at_target(), 60.0).unwrap();
    // 12 m forward (north), 6 m left (west), 8 m up, facing west.
    let yaw = std::f32::consts::FRAC_PI_2;
    op.goto_flu(12.0, 6.0, 8.0, Some(yaw)).unwrap();
    assert!(
        !op.at_target(),
        "a new target is not reached at once: {:?}",
        op.status()
    );
    sim.until(|| op.at_target(), 60.0)
        .unwrap_or_else(|e| panic!("goto: {e}\n{}", events(&op)));
    let s = sim.console();
    assert!(!s.is_empty());
    let truth = sim.true_height_m().unwrap();
    assert!((truth - 8.0).abs() < 1.5, "true height {truth}");
    op.land().unwrap();
    assert!(!op.at_target(), "land clears the target");
    sim.until(Condition::landed(), 120.0).unwrap();
    sim.until(Condition::disarmed(), 30.0).unwrap();
    assert_eq!(op.landed_state(), LandedState::OnGround);
    assert!(!op.is_armed());
    // Back on the ground, the pump still knows the vehicle flew (a caller that never looked
    // while it was in the air — `nexus fly --speed max` — relies on it).
    assert!(op.link().unwrap().status().airborne_seen);
}

#[test]
fn fly_the_box_mission_from_a_plan_file() {
    let (sim, op) = connect(lockstep(102));
    op.upload_mission(plan("MC_mission_box.plan").as_path())
        .unwrap();
    sim.until(|| op.mission_uploaded(), 30.0)
        .unwrap_or_else(|e| panic!("upload: {e}\n{}", events(&op)));
    assert_eq!(op.mission_count(), 6);
    assert_eq!(
        op.mission_ack(),
        Some(nexus_core::mission::MissionAck::MAV_MISSION_ACCEPTED)
    );
    assert_eq!(op.mission_reached(), None);
    op.start_mission().unwrap();
    let mut seen = Vec::new();
    sim.until(
        || {
            let p = op.mission_progress();
            if seen.last() != Some(&p.current) {
                seen.push(p.current);
            }
            p.complete
        },
        600.0,
    )
    .unwrap_or_else(|e| panic!("mission: {e}\n{}", events(&op)));
    assert!(op.mission_complete());
    assert!(
        op.mission_reached().is_some_and(|r| r >= 4),
        "last waypoint is item 4"
    );
    assert!(
        seen.windows(2).all(|w| w[0] <= w[1]) && seen.contains(&3),
        "current item advances through the box: {seen:?}"
    );
    // The plan ends with NAV_LAND: the vehicle lands and disarms by itself.
    sim.until(|| op.landed() == Some(true) && !op.is_armed(), 300.0)
        .unwrap_or_else(|e| panic!("landing: {e}\n{}", events(&op)));
    assert_eq!(op.landed_state(), LandedState::OnGround);
    let uploaded = op.events_since(0).into_iter().any(
        |(_, e)| matches!(e, LinkEvent::Offboard(ref o) if o.to_string().contains("uploaded")),
    );
    assert!(uploaded, "{}", events(&op));
}

#[test]
fn parameters_round_trip() {
    let (_sim, op) = connect(realtime(103));
    let t = Duration::from_secs(10);
    // INT32: the int's bits ride in the float field; read back bytewise.
    op.set_param("COM_OBL_RC_ACT", ParamValue::Int(3)).unwrap();
    let v = op.param_get("COM_OBL_RC_ACT", t).unwrap();
    assert_eq!(v.param_type, MavParamType::MAV_PARAM_TYPE_INT32);
    assert_eq!(v.as_int(), Some(3));
    op.set_param("COM_OBL_RC_ACT", ParamValue::Int(-1)).unwrap();
    assert_eq!(
        op.param_get("COM_OBL_RC_ACT", t).unwrap().as_int(),
        Some(-1)
    );
    // Back to back: each read gets the value its own set left, never an earlier set's echo
    // or an earlier read's late answer (the protocol has no request ids).
    for v in 0..20 {
        op.set_param("COM_OBL_RC_ACT", ParamValue::Int(v)).unwrap();
        let got = op.param_get("COM_OBL_RC_ACT", t).unwrap().as_int();
        assert_eq!(got, Some(v));
    }
    // REAL32.
    op.set_param("MPC_XY_CRUISE", ParamValue::Real(7.25))
        .unwrap();
    let v = op.param_get("MPC_XY_CRUISE", t).unwrap();
    assert_eq!(v.as_real(), Some(7.25));
    // A name PX4 does not have gets PARAM_ERROR DOES_NOT_EXIST: the read fails at once with
    // PX4's error, not at its timeout (docs/px4-wire.md §Parameters).
    let t0 = Instant::now();
    match op.param_get("NO_SUCH_PARAM", Duration::from_millis(5000)) {
        Err(OffboardClientError::Param(ParamError::Refused { name, error })) => {
            assert_eq!(name, "NO_SUCH_PARAM");
            assert_eq!(error, "MAV_PARAM_ERROR_DOES_NOT_EXIST");
        }
        other => panic!("{other:?}"),
    }
    assert!(t0.elapsed() < Duration::from_secs(1), "{:?}", t0.elapsed());
    // A set of an unknown name, read back: the same error at once.
    op.set_param("NO_SUCH_PARAM2", ParamValue::Real(1.0))
        .unwrap();
    let t0 = Instant::now();
    assert!(matches!(
        op.param_get("NO_SUCH_PARAM2", Duration::from_millis(5000)),
        Err(OffboardClientError::Param(ParamError::Refused { .. }))
    ));
    assert!(t0.elapsed() < Duration::from_secs(1), "{:?}", t0.elapsed());
    // Names that cannot be parameter ids are refused before anything is sent.
    assert!(matches!(
        op.set_param("", ParamValue::Real(1.0)),
        Err(OffboardClientError::Verb(_))
    ));
    assert!(matches!(
        op.param_get("A_NAME_LONGER_THAN_16", t),
        Err(OffboardClientError::Param(ParamError::BadName(_)))
    ));
}

#[test]
fn gesture_arm_in_a_manual_mode() {
    let (sim, op) = connect(lockstep(104));
    op.set_mode(Mode::Position).unwrap();
    sim.until(|| op.mode() == Some(Mode::Position), 30.0)
        .unwrap();
    op.arm_gesture().unwrap();
    sim.until(|| op.is_armed(), 60.0)
        .unwrap_or_else(|e| panic!("gesture arm: {e}\n{}", events(&op)));
    let armed_by = sim
        .console()
        .into_iter()
        .any(|l| l.contains("Armed by") && l.contains("gesture"));
    assert!(armed_by, "{:?}", sim.console());
    assert!(op.last_refusal().is_none(), "{}", events(&op));
}

#[test]
fn connect_errors_name_the_cause() {
    // A run without a vehicle has no offboard link, and says why.
    let none = Run::started(RunOptions::no_vehicle()).unwrap();
    match OffboardClient::connect(&none, 1.0) {
        Err(e @ ConnectError::NoOffboardLink { .. }) => {
            assert!(e.to_string().contains("no PX4"), "{e}")
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(none.ports(), Err(RunError::NoOffboardLink { .. })));
    // Before start, nothing.
    let idle = Run::new(RunOptions::simulated(105));
    assert!(matches!(idle.ports(), Err(RunError::NotStarted)));

    // A vehicle that never speaks: no heartbeat within the timeout, naming the port.
    let quiet = Run::started(lockstep(105)).unwrap();
    quiet.inject(Fault::Silence).unwrap();
    match OffboardClient::connect(&quiet, 3.0) {
        Err(e @ ConnectError::NoHeartbeat { port: 14645, .. }) => assert_eq!(
            e.to_string(),
            "no PX4 heartbeat on the offboard link, UDP port 14645, within 3s of sim time"
        ),
        other => panic!("{other:?}"),
    }
    assert!(
        quiet.sim_time_s().unwrap() >= 3.0,
        "the wait stepped the clock"
    );

    // A vehicle that dies while we wait: the run lost its peer.
    let dying = Run::started(realtime(106)).unwrap();
    dying.inject(Fault::Exit { code: 3 }).unwrap();
    match OffboardClient::connect(&dying, 10.0) {
        Err(e @ ConnectError::LostPeer { .. }) => {
            assert!(e.to_string().contains("PX4 exited with code 3"), "{e}")
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn speed_control_where_the_vehicle_allows_it() {
    let (sim, op) = connect(realtime(107));
    let t0 = sim.sim_time_ms().unwrap();
    let w0 = Instant::now();
    std::thread::sleep(Duration::from_millis(300));
    let rate1 = (sim.sim_time_ms().unwrap() - t0) as f64 / w0.elapsed().as_millis() as f64;
    sim.set_speed(speed() * 3.0).unwrap();
    let t1 = sim.sim_time_ms().unwrap();
    let w1 = Instant::now();
    std::thread::sleep(Duration::from_millis(300));
    let rate2 = (sim.sim_time_ms().unwrap() - t1) as f64 / w1.elapsed().as_millis() as f64;
    assert!(rate2 > rate1 * 1.5, "speed ×3: {rate1:.1} → {rate2:.1}");
    drop(op);

    let (lock, _op) = connect(lockstep(108));
    match lock.set_speed(2.0) {
        Err(RunError::Speed(m)) => assert!(m.contains("lockstep"), "{m}"),
        other => panic!("{other:?}"),
    }
}

/// A PX4 run (the fake PX4 binary the launcher tests use: it boots but speaks no MAVLink).
#[test]
fn a_px4_run_without_mavlink_reports_no_heartbeat_and_fixed_speed() {
    let build = root().join("tests/fixtures/fake-px4");
    let sim = Run::new(RunOptions::px4(120, Some(build)).speed(2.0));
    sim.start().unwrap();
    assert_eq!(sim.offboard_port().unwrap().port, 14660);
    let t0 = Instant::now();
    match OffboardClient::connect(&sim, 1.0) {
        Err(ConnectError::NoHeartbeat { port: 14660, .. }) => {}
        other => panic!("{other:?}"),
    }
    // Sim time is wall × speed before PX4 reports its own.
    assert!(t0.elapsed() < Duration::from_secs(3));
    match sim.set_speed(4.0) {
        Err(RunError::Speed(m)) => assert!(m.contains("fixed at launch"), "{m}"),
        other => panic!("{other:?}"),
    }
    sim.close();
    assert!(matches!(sim.ports(), Err(RunError::Closed)));
}

#[test]
fn a_px4_that_panics_ends_the_run_with_the_panic_line() {
    let build = root().join("tests/fixtures/fake-px4");
    let mut o = RunOptions::px4(121, Some(build));
    o.launch = Some(nexus_host::launcher::LaunchOptions::new(121).env("FAKE_PX4_MODE", "panic"));
    // The fake panics right after its startup script: the launcher may see the PANIC before it
    // calls PX4 ready (start fails), or after (the connect fails). Either names the line.
    match Run::started(o) {
        Err(e @ RunError::Launch(_)) => assert!(e.to_string().contains("PANIC"), "{e}"),
        Err(other) => panic!("{other:?}"),
        Ok(sim) => match OffboardClient::connect(&sim, 30.0) {
            Err(e @ ConnectError::LostPeer { .. }) => {
                assert!(e.to_string().contains("PANIC"), "{e}")
            }
            other => panic!("{other:?}"),
        },
    }
}
