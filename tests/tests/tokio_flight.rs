//! The tokio driver (nexus-tokio) against the built-in simulated PX4 over loopback UDP:
//! takeoff / at_target / land, the box mission with a guard, cancellation, two vehicles on one
//! single-threaded runtime, the address latch against a forged heartbeat, and a takeoff over
//! TCP through `nexus bridge`, a silent vehicle. Instances 168–175.
//!
//! The runs are real time at the host tests' speed factor; every wait is bounded in sim time
//! by its own `timeout_s`, and each test has a wall bound with margin on top.

mod host_support;

use nexus_host::groups::{ActionApi, InfoApi, MissionApi, TelemetryApi};
use std::time::Duration;

use host_support::*;
use nexus_core::engine::{Condition, Reason, Wait};
use nexus_host::launcher::DeathCause;
use nexus_host::offboard_client::read_plan_file;
use nexus_host::pump::WAITS;
use nexus_host::run::Run;
use nexus_tokio::AsyncClient;

/// Wall bound of a whole flight (its sim bounds are the waits' own).
const FLIGHT: Duration = Duration::from_secs(120);

async fn connect(instance: u8) -> (Run, AsyncClient) {
    let sim = Run::started(realtime(instance)).expect("start the run");
    let op = AsyncClient::connect(&sim, Duration::from_secs(30))
        .await
        .expect("heartbeat");
    assert!(op.connected());
    (sim, op)
}

async fn at_target(op: &AsyncClient) -> Result<(), tokio::time::error::Elapsed> {
    op.until(|c| c.offboard().at_target(c.telemetry()), FLIGHT)
        .await
}

fn log(op: &AsyncClient) -> String {
    format!("{:#?}", op.events())
}

#[tokio::test(flavor = "current_thread")]
async fn takeoff_at_target_land() {
    let (sim, op) = connect(168).await;
    assert_eq!(op.peer(), sim.vehicle_addr(), "latched to the vehicle");
    op.takeoff(5.0).unwrap();
    op.until(|c| c.offboard().at_target(c.telemetry()), FLIGHT)
        .await
        .unwrap_or_else(|_| panic!("at_target: {}", log(&op)));
    assert!(op.is_armed());
    let truth = sim.true_height_m().unwrap();
    assert!((truth - 5.0).abs() < 1.5, "true height {truth}");
    // A condition wait on the same link: the vehicle is there (within the takeoff's
    // tolerance), so it is met within a few telemetry ticks.
    let r = op
        .wait(&Wait::altitude_m(4.0).timeout_s(5.0))
        .await
        .unwrap();
    assert!(r.satisfied, "{r:?}");
    assert!(r.waited_sim_s < 1.0, "{r:?}");
    op.land().unwrap();
    let r = op.wait(&Wait::landed().timeout_s(120.0)).await.unwrap();
    assert!(r.satisfied, "{r:?}\n{}", log(&op));
    assert!(r.waited_sim_s > 1.0, "a 5 m descent takes time: {r:?}");
    let r = op.wait(&Wait::disarmed().timeout_s(30.0)).await.unwrap();
    assert_eq!(r.reason, Reason::Met, "{r:?}");
    assert!(!op.is_armed());
    assert_eq!(
        op.wait_slots(),
        (0, WAITS),
        "every slot free after the flight"
    );
}

#[tokio::test(flavor = "current_thread")]
async fn box_mission_with_a_guard() {
    let (_sim, op) = connect(169).await;
    let plan = read_plan_file(plan("MC_mission_box.plan")).unwrap();
    op.upload_mission(&*plan).unwrap();
    op.until(|c| c.offboard().mission_uploaded(), Duration::from_secs(60))
        .await
        .unwrap_or_else(|_| panic!("upload: {}", log(&op)));
    op.start_mission().unwrap();
    let r = op.wait(&Wait::armed().timeout_s(60.0)).await.unwrap();
    assert!(r.satisfied, "{r:?}\n{}", log(&op));
    // The last waypoint (item 4), but give up at once should the vehicle disarm first.
    let r = op
        .wait(
            &Wait::waypoint(4)
                .guard(Condition::disarmed())
                .timeout_s(600.0),
        )
        .await
        .unwrap();
    assert!(r.satisfied, "{r:?}\n{}", log(&op));
    assert!(r.waited_sim_s > 10.0, "the box takes time to fly: {r:?}");
    // The plan ends with NAV_LAND: the vehicle lands and disarms by itself.
    let r = op.wait(&Wait::disarmed().timeout_s(300.0)).await.unwrap();
    assert!(r.satisfied, "{r:?}\n{}", log(&op));
    // Now the guard fires first: climbing to 50 m cannot happen while disarmed.
    let r = op
        .wait(
            &Wait::altitude_m(50.0)
                .guard(Condition::disarmed())
                .timeout_s(20.0),
        )
        .await
        .unwrap();
    assert_eq!(r.reason, Reason::Guard, "{r:?}");
    assert_eq!(r.guard, Some(0));
    assert!(op.with(|c| c.offboard().mission_complete()));
}

#[tokio::test(flavor = "current_thread")]
async fn a_dropped_wait_leaves_nothing_behind() {
    let (_sim, op) = connect(170).await;
    let never = || Wait::altitude_m(50.0).timeout_s(600.0);
    // Registered, then dropped unpolled.
    let w = op.wait(&never());
    assert!(w.id().is_some());
    assert_eq!(op.wait_slots(), (1, WAITS - 1));
    assert_eq!(op.waits_owned(), 1);
    drop(w);
    assert_eq!(op.wait_slots(), (0, WAITS), "the engine slot is free");
    assert_eq!(op.waits_owned(), 0, "nothing left to route");
    // Dropped mid-poll by a timeout, many more times than there are slots: a leak would
    // fill the engine and the next registration would be refused.
    for _ in 0..(3 * WAITS) {
        let r = tokio::time::timeout(Duration::from_millis(2), op.wait(&never())).await;
        assert!(r.is_err(), "{r:?}");
    }
    assert_eq!(op.wait_slots(), (0, WAITS));
    assert_eq!(op.waits_owned(), 0);
    // Several in flight, one dropped: the others still settle.
    let a = op.wait(&never());
    let b = op.wait(&Wait::time_s(0.5).timeout_s(10.0));
    drop(a);
    let r = tokio::time::timeout(Duration::from_secs(30), b)
        .await
        .unwrap()
        .unwrap();
    assert!(r.satisfied, "{r:?}");
    // A wall cap ends a wait with `cap` and frees it.
    let r = op
        .wait_capped(&never(), Duration::from_millis(50))
        .await
        .unwrap();
    assert_eq!(r.reason, Reason::Cap, "{r:?}");
    assert_eq!(op.wait_slots(), (0, WAITS));
    // Closing ends a pending wait `closed`; later waits are refused, never left hanging.
    let pending = op.wait(&never());
    op.close();
    let r = pending.await.unwrap();
    assert_eq!(r.reason, Reason::Closed, "{r:?}");
    assert!(op.wait(&never()).await.is_err());
    assert!(op.takeoff(2.0).is_err());
}

#[tokio::test(flavor = "current_thread")]
async fn two_vehicles_on_one_runtime() {
    let ((sim_a, a), (sim_b, b)) = tokio::join!(connect(171), connect(172));
    assert_ne!(a.peer(), b.peer());
    a.takeoff(3.0).unwrap();
    b.takeoff(6.0).unwrap();
    let (ra, rb) = tokio::join!(at_target(&a), at_target(&b));
    ra.unwrap_or_else(|_| panic!("a: {}", log(&a)));
    rb.unwrap_or_else(|_| panic!("b: {}", log(&b)));
    let (ha, hb) = (
        sim_a.true_height_m().unwrap(),
        sim_b.true_height_m().unwrap(),
    );
    assert!(
        (ha - 3.0).abs() < 1.0 && (hb - 6.0).abs() < 1.0,
        "{ha} {hb}"
    );
    a.land().unwrap();
    b.land().unwrap();
    let (la, lb) = tokio::join!(
        a.wait(&Wait::landed().timeout_s(120.0)),
        b.wait(&Wait::landed().timeout_s(120.0))
    );
    assert!(la.unwrap().satisfied && lb.unwrap().satisfied);
}

/// The TCP driver: the vehicle behind `nexus bridge` (TCP ↔ UDP), as a serial or TCP rig
/// would put it; the client speaks first and takes off.
#[tokio::test(flavor = "current_thread")]
async fn takeoff_over_tcp_through_the_bridge() {
    use nexus_host::bridge::{bridge, BridgeOptions};
    let sim = Run::started(realtime(173)).expect("start the run");
    let port = sim.offboard_port().unwrap();
    let to = format!("udpout:127.0.0.1:{}", port.px4_port);
    let b = bridge(
        &"tcpin:127.0.0.1:0".parse().unwrap(),
        &to.parse().unwrap(),
        BridgeOptions::default(),
    )
    .expect("start the bridge");
    let tcp = b.from_local_addr().expect("tcpin address").port();
    let mut options = sim.offboard_options();
    options.system_id = port.system_id;
    let op = AsyncClient::open(&format!("tcp:127.0.0.1:{tcp}"), options)
        .await
        .expect("connect over TCP");
    assert_eq!(op.peer(), None, "a stream has no address latch");
    op.until(|c| c.telemetry().connected(), Duration::from_secs(30))
        .await
        .unwrap_or_else(|_| panic!("heartbeat over TCP: {}", log(&op)));
    op.takeoff(3.0).unwrap();
    at_target(&op)
        .await
        .unwrap_or_else(|_| panic!("at_target over TCP: {}", log(&op)));
    assert!(op.tx_frames() > 0);
    let h = sim.true_height_m().unwrap();
    assert!((h - 3.0).abs() < 1.0, "true height {h}");
}

/// The vehicle-address latch: a stranger on the client's UDP port that claims the vehicle's
/// system id (a forged "landed, disarmed" heartbeat) is counted as foreign, never applied.
#[tokio::test(flavor = "current_thread")]
async fn a_forged_heartbeat_from_another_address_is_ignored() {
    use nexus_core::frame::{Encoder, MAX_FRAME_LEN};
    use nexus_core::mav;
    use nexus_core::offboard::wire;
    let (sim, op) = connect(174).await;
    op.takeoff(3.0).unwrap();
    at_target(&op).await.unwrap();
    let sysid = sim.offboard_port().unwrap().system_id;
    let mut enc = Encoder::new(sysid, 1);
    let hb = wire::heartbeat(
        mav::MavType::MAV_TYPE_QUADROTOR,
        mav::MavAutopilot::MAV_AUTOPILOT_PX4,
        mav::MavModeFlag::empty(),
        0,
        mav::MavState::MAV_STATE_STANDBY,
    );
    let mut buf = [0u8; MAX_FRAME_LEN];
    let n = enc.encode(&hb, &mut buf).unwrap();
    let stranger = tokio::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
    let to = op.local_addr().unwrap();
    // Disarmed by the forgery, the wait would settle at once; it must time out instead.
    let w = op.wait(&Wait::disarmed().timeout_s(2.0));
    for _ in 0..20 {
        stranger.send_to(&buf[..n], to).await.unwrap();
    }
    let r = w.await.unwrap();
    assert_eq!(r.reason, Reason::Timeout, "{r:?}");
    assert!(op.is_armed());
    let f = op.foreign();
    assert_eq!(f.datagrams(), 20, "{f:?}");
    assert_eq!(f.sources[0].addr, stranger.local_addr().unwrap());
    assert_eq!(op.peer(), sim.vehicle_addr());
}

/// A vehicle that goes silent ends every pending wait `died` after the stall limit (wall),
/// instead of leaving it to a sim-time timeout whose clock has stopped.
#[tokio::test(flavor = "current_thread")]
async fn a_silent_vehicle_ends_the_waits_died() {
    let sim =
        Run::started(realtime(175).stall(Some(Duration::from_secs(1)))).expect("start the run");
    let op = AsyncClient::connect(&sim, Duration::from_secs(30))
        .await
        .expect("heartbeat");
    let w = op.wait(&Wait::altitude_m(50.0).timeout_s(600.0));
    sim.close();
    let t0 = std::time::Instant::now();
    let r = tokio::time::timeout(Duration::from_secs(30), w)
        .await
        .expect("the wait ends")
        .unwrap();
    assert_eq!(r.reason, Reason::Died, "{r:?}");
    assert!(
        t0.elapsed() >= Duration::from_millis(900),
        "{:?}",
        t0.elapsed()
    );
    assert!(
        matches!(op.death(), Some(DeathCause::LinkSilent { .. })),
        "{:?}",
        op.death()
    );
    // As on the pump: a new wait on a dead link that is not decided at once ends `died`.
    let later = op
        .wait(&Wait::altitude_m(50.0).timeout_s(5.0))
        .await
        .unwrap();
    assert_eq!(later.reason, Reason::Died, "{later:?}");
}
