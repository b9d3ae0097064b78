//! One wait model on `Run`: a Wait's own timeout is honoured by every entry point, and
//! `Run::wait` returns each outcome (met, timeout, guard) as a `WaitResult`, erring only when
//! it cannot wait. Instances 164–165 (the API tests' range, 160–167).

use nexus_host::error::RunError;
use nexus_host::prelude::*;

fn lockstep(instance: u8) -> (Run, OffboardClient) {
    let sim = Run::started(RunOptions::simulated(instance).lockstep()).expect("sim starts");
    let op = OffboardClient::connect(&sim, 10.0).expect("client connects");
    (sim, op)
}

#[test]
fn a_waits_own_timeout_wins_over_the_default() {
    let (sim, _op) = lockstep(164);
    // The case: this waited 30 s of sim time, its own 1 s silently replaced.
    let t0 = sim.sim_time_s().unwrap();
    match sim.until(&Wait::armed().timeout_s(1.0), 30.0) {
        Err(RunError::Timeout { timeout_s, .. }) => assert_eq!(timeout_s, 1.0),
        other => panic!("expected a 1 s timeout, got {other:?}"),
    }
    let waited = sim.sim_time_s().unwrap() - t0;
    assert!(
        (0.99..3.0).contains(&waited),
        "waited {waited} s of sim time"
    );
    // A Wait without a timeout takes the argument.
    let t0 = sim.sim_time_s().unwrap();
    assert!(sim.until(&Wait::until(Condition::armed()), 2.0).is_err());
    let waited = sim.sim_time_s().unwrap() - t0;
    assert!(
        (1.99..4.0).contains(&waited),
        "waited {waited} s of sim time"
    );
}

#[test]
fn every_outcome_is_a_result_and_a_guard_ends_a_mission_wait() {
    let (sim, op) = lockstep(165);
    // Timeout: data, not an error.
    let r = sim.wait(&Wait::armed().timeout_s(1.0)).unwrap();
    assert_eq!(r.reason, Reason::Timeout);
    assert!(!r.satisfied);
    // Invalid (no timeout): an error, before any waiting.
    assert!(sim.wait(&Wait::until(Condition::armed())).is_err());
    // Met.
    op.takeoff(3.0).unwrap();
    let r = sim
        .wait(&Wait::altitude_m(2.5).op(Op::Ge).timeout_s(60.0))
        .unwrap();
    assert_eq!(r.reason, Reason::Met, "{r:?}");
    // "Mission complete, fail if disarmed" as one wait: no mission flies, so landing and
    // disarming end it by its guard, long before its timeout; progress is reported meanwhile.
    op.land().unwrap();
    let mut calls = 0u32;
    let r = sim
        .wait_reporting(
            &Wait::mission_complete()
                .timeout_s(300.0)
                .guard(Condition::disarmed()),
            || calls += 1,
        )
        .unwrap();
    assert_eq!(r.reason, Reason::Guard, "{r:?}");
    assert_eq!(r.guard, Some(0));
    assert!(r.waited_sim_s < 60.0, "guard after {} s", r.waited_sim_s);
    assert!(!op.is_armed());
    assert!(calls > 10, "progress reported {calls} times");
}
