//! Shared plumbing of the `host_*` end-to-end tests: runs of the built-in simulated PX4 over
//! real loopback UDP, driven through the host's pump, `OffboardClient`, `Run` and `Session`.
//!
//! SITL instance numbers used by these tests (ports 14540+N / 14580+N): 100–139, each test its
//! own (the `sim_*` tests use 40–61, the sim bench 90–91, the launcher tests 200+).
//!
//! Real-time runs go at [`SPEED`] × (override with `NEXUS_HOST_TEST_SPEED`); lockstep runs as
//! fast as the CPU allows. Timeouts are generous (CI machines are shared) but bounded.

#![allow(dead_code)]

use nexus_host::groups::InfoApi;
use std::path::PathBuf;
use std::time::Duration;

use nexus_host::offboard_client::OffboardClient;
use nexus_host::run::{Run, RunOptions};
use nexus_host::session::Session;

/// Default speed factor of real-time runs.
pub const SPEED: f64 = 10.0;

/// Speed factor for real-time runs (`NEXUS_HOST_TEST_SPEED`, default [`SPEED`]).
pub fn speed() -> f64 {
    std::env::var("NEXUS_HOST_TEST_SPEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .filter(|s: &f64| s.is_finite() && *s > 0.0)
        .unwrap_or(SPEED)
}

/// The workspace root.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// A fixture plan.
pub fn plan(name: &str) -> PathBuf {
    root().join("fixtures/plans").join(name)
}

/// Options for the simulated vehicle as `instance`, in real time at [`speed`], with a short
/// arm settle window (the Python client's 5 s is PX4's; the tests need not wait it out).
pub fn realtime(instance: u8) -> RunOptions {
    RunOptions::simulated(instance)
        .speed(speed())
        .wait_clear_s(1.0)
}

/// Options for the simulated vehicle as `instance` in lockstep.
pub fn lockstep(instance: u8) -> RunOptions {
    RunOptions::simulated(instance).lockstep().wait_clear_s(1.0)
}

/// Start a run and connect a client (10 s of sim time for the heartbeat).
pub fn connect(options: RunOptions) -> (Run, OffboardClient) {
    let sim = Run::started(options).expect("start the run");
    let op = OffboardClient::connect(&sim, 10.0).expect("connect to the simulated PX4");
    assert!(op.connected());
    (sim, op)
}

/// Start a session.
pub fn session(options: RunOptions) -> Session {
    Session::start(options, 10.0).expect("start a session")
}

/// A generous wall cap for waits that must not hang a test.
pub const CAP: Option<Duration> = Some(Duration::from_secs(60));

/// Wall time limit for things that should take well under it.
pub const WALL: Duration = Duration::from_secs(60);

/// Everything the client logged, for failure messages.
pub fn events(op: &OffboardClient) -> String {
    op.events_since(0)
        .iter()
        .map(|(n, e)| format!("  {n}: {e:?}"))
        .collect::<Vec<_>>()
        .join("\n")
}
