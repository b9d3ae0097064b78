//! One program over the facade groups (`ActionApi`, `MissionApi`, `TelemetryApi`, `InfoApi`),
//! flown unchanged on the threaded `OffboardClient` and on nexus-tokio's `AsyncClient`
//! against the built-in simulated PX4: what it reads before, during and after a hop must be
//! the vehicle's on both, and a closed client refuses every verb the same way.
//! Instances 230 and 231, in real time at the host tests' speed factor.

mod host_support;

use std::time::{Duration, Instant};

use host_support::*;
use nexus_host::error::OffboardClientError;
use nexus_host::offboard_client::read_plan_file;
use nexus_host::prelude::*;
use nexus_tokio::AsyncClient;

/// Wall bound of one phase of the hop (the sim runs at [`speed`] × real time).
const PHASE: Duration = Duration::from_secs(90);

/// Poll a query of the groups until it holds, from a plain thread (the groups' queries read
/// what the driver last published, so they need no runtime).
fn poll(what: &str, cond: impl Fn() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(start.elapsed() < PHASE, "{what}: not within {PHASE:?}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// What the hop saw, to compare across clients.
#[derive(Debug)]
struct Seen {
    mission_items: usize,
    hover_alt_m: f32,
    autopilot_ms_grew: bool,
}

/// The program under test: upload a mission, take off, hover, land, written once against the
/// groups alone. `truth_m` is the simulator's true height above ground.
fn hop<C>(op: &C, truth_m: impl Fn() -> f32) -> Seen
where
    C: ActionApi + MissionApi + TelemetryApi + InfoApi,
{
    assert!(op.connected());
    poll("a first telemetry", || {
        op.mode().is_some() && op.position().is_some() && op.landed().is_some()
    });
    assert!(
        op.height_m().is_some_and(|h| h.abs() < 0.3),
        "on the pad: {:?} m",
        op.height_m()
    );
    assert_eq!(op.landed(), Some(true), "on the ground at start");
    assert!(!op.is_armed());
    let t0 = op.autopilot_time_ms().expect("PX4's clock read");

    let plan = read_plan_file(plan("MC_mission_box.plan")).expect("the box plan");
    op.upload_mission(&*plan).unwrap();
    poll("mission accepted", || op.mission_uploaded());
    assert_eq!(op.mission_ack(), Some(MissionAck::MAV_MISSION_ACCEPTED));
    assert_eq!(op.mission_count(), plan.items.len());
    assert_eq!(op.mission_reached(), None, "nothing reached before a start");
    assert!(!op.mission_complete());

    op.takeoff(3.0).unwrap();
    poll("at the takeoff altitude", || op.at_target());
    assert!(op.is_armed());
    assert_eq!(op.landed(), Some(false));
    // at_target holds within its 1 m tolerance, still climbing: let the hover settle.
    poll("a settled hover", || {
        op.climb_rate_m_s().is_some_and(|v| v.abs() < 0.2)
            && op
                .relative_altitude_m()
                .is_some_and(|h| (h - 3.0).abs() < 0.5)
    });
    let alt = op.relative_altitude_m().expect("a height read");
    let truth = truth_m();
    assert!(
        (truth - alt).abs() < 0.5,
        "true height {truth} m, read {alt} m"
    );
    let judged = op.height_m().expect("the height the waits judge");
    assert!(
        (truth - judged).abs() < 0.5,
        "true height {truth} m, judged {judged} m"
    );
    assert!(op.heading_rad().is_some_and(f32::is_finite));
    assert!(op.groundspeed_m_s().is_some_and(|v| v < 2.0), "hovering");

    op.land().unwrap();
    poll("landed", || op.landed() == Some(true));
    poll("disarmed", || !op.is_armed());
    assert!(op.last_refusal().is_none(), "{:?}", op.last_refusal());
    Seen {
        mission_items: op.mission_count(),
        hover_alt_m: alt,
        autopilot_ms_grew: op.autopilot_time_ms().is_some_and(|t| t > t0),
    }
}

/// Every verb of the groups on a closed client is `NotOpen`, on either client.
fn refuses_when_closed<C: ActionApi + MissionApi + OffboardApi>(op: &C) {
    assert!(matches!(op.takeoff(2.0), Err(OffboardClientError::NotOpen)));
    assert!(matches!(op.land(), Err(OffboardClientError::NotOpen)));
    assert!(matches!(
        op.start_mission(),
        Err(OffboardClientError::NotOpen)
    ));
    assert!(matches!(
        op.start_offboard(),
        Err(OffboardClientError::NotOpen)
    ));
}

fn check(seen: &Seen, plan_len: usize) {
    assert_eq!(seen.mission_items, plan_len, "{seen:?}");
    assert!(seen.autopilot_ms_grew, "{seen:?}");
    assert!((seen.hover_alt_m - 3.0).abs() < 0.5, "{seen:?}");
}

fn box_len() -> usize {
    read_plan_file(plan("MC_mission_box.plan"))
        .unwrap()
        .items
        .len()
}

#[test]
fn the_threaded_client_flies_the_program() {
    let (sim, op) = connect(realtime(230));
    let seen = hop(&op, || sim.true_height_m().expect("true height"));
    check(&seen, box_len());
    op.close();
    assert!(!op.connected());
    refuses_when_closed(&op);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tokio_client_flies_the_same_program() {
    let sim = Run::started(realtime(231)).expect("start the run");
    let op = AsyncClient::connect(&sim, Duration::from_secs(30))
        .await
        .expect("heartbeat");
    // The program is synchronous: it polls from a blocking section while the runtime's
    // other worker drives the link.
    let seen =
        tokio::task::block_in_place(|| hop(&op, || sim.true_height_m().expect("true height")));
    check(&seen, box_len());
    op.close();
    assert!(!op.connected());
    refuses_when_closed(&op);
}
