//! nexus-tokio on a signed link: `AsyncClient::connect` to a signed run signs with the run's
//! key, as the threaded client does, so a vehicle that accepts only signed frames (the
//! built-in vehicle in PX4's "always" mode) takes its commands and parameter reads, and the
//! verifier's counters reach the status; a client with the wrong key never applies a frame
//! of the vehicle's. Instances 219 and 249, in real time at the host tests' speed factor.

mod host_support;

use std::time::Duration;

use host_support::*;
use nexus_host::prelude::*;
use nexus_host::signing::{parse_key, Signing};
use nexus_tokio::AsyncClient;

fn signed(instance: u8, passphrase: &[u8]) -> RunOptions {
    let key = parse_key(passphrase).expect("a passphrase is a key");
    realtime(instance).signing(Signing::new(key).require_signed(true))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signed_run_takes_the_tokio_clients_commands() {
    let sim = Run::started(signed(219, b"the key of this test run")).expect("start the run");
    let op = AsyncClient::connect(&sim, Duration::from_secs(30))
        .await
        .expect("a signed heartbeat, verified");
    // A parameter read: the vehicle answers only a signed request.
    let alt = op
        .param_get("MIS_TAKEOFF_ALT", Duration::from_secs(10))
        .await
        .expect("the vehicle took the signed read");
    assert_eq!(alt.as_real(), Some(2.5));
    // A command: the takeoff is flown.
    op.takeoff(2.0).unwrap();
    op.until(
        |c| c.offboard().at_target(c.telemetry()),
        Duration::from_secs(90),
    )
    .await
    .expect("at 2 m");
    let truth = sim.true_height_m().expect("true height");
    assert!((truth - 2.0).abs() < 1.0, "{truth} m");
    let stats = op
        .read_status(|s| s.counters.signing)
        .expect("a signed link counts what it verified");
    assert!(stats.signed > 10, "{stats:?}");
    assert_eq!(stats.rejected(), 0, "{stats:?}");
    op.land().unwrap();
    let landed = op.wait(&Wait::landed().timeout_s(120.0)).await.unwrap();
    assert!(landed.satisfied, "{landed:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_with_the_wrong_key_applies_nothing_of_the_vehicles() {
    let sim = Run::started(signed(249, b"the vehicle's key")).expect("start the run");
    let (conn, options) = sim.client_link().unwrap();
    let wrong = Signing::new(parse_key(b"another key").unwrap()).require_signed(true);
    let op = AsyncClient::open_signed(&conn, options, Some(&wrong))
        .await
        .unwrap();
    let met = op
        .until(|c| c.telemetry().connected(), Duration::from_secs(3))
        .await;
    assert!(
        met.is_err(),
        "a heartbeat signed with another key was applied"
    );
    let stats = op.read_status(|s| s.counters.signing).expect("counted");
    assert_eq!(stats.signed + stats.unsigned_accepted, 0, "{stats:?}");
    assert!(stats.bad_signature > 0, "{stats:?}");
    assert!(
        stats.rejected() > 0,
        "the vehicle's frames were refused: {stats:?}"
    );
    assert!(!op.connected());
}
