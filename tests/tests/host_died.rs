//! `died`: a wait in progress ends `died`, with the cause in `snapshot.error`, when the vehicle
//! exits, prints PANIC, goes silent, or its clock stalls — in real time and in lockstep; and
//! every wait after that ends `died` at once.

mod host_support;

use nexus_host::groups::{ActionApi, InfoApi, TelemetryApi};
use std::thread;
use std::time::{Duration, Instant};

use host_support::*;
use nexus_core::engine::{Reason, Wait, WaitResult};
use nexus_host::error::RunError;
use nexus_host::launcher::DeathCause;
use nexus_host::run::RunOptions;
use nexus_host::session::Session;
use nexus_host::sim::Fault;

/// Start a long wait on another thread, inject `fault`, and return the wait's result.
fn wait_through(s: &Session, fault: Fault) -> WaitResult {
    let s2 = s.clone();
    let waiter = thread::spawn(move || {
        s2.wait(
            &Wait::altitude_m(100.0).timeout_s(3600.0),
            Some(Duration::from_secs(60)),
        )
    });
    thread::sleep(Duration::from_millis(150));
    s.sim().inject(fault).unwrap();
    waiter.join().unwrap().unwrap()
}

fn error_of(r: &WaitResult) -> String {
    assert_eq!(r.reason, Reason::Died, "{r:?}");
    assert!(!r.satisfied);
    r.snapshot
        .error
        .as_ref()
        .expect("snapshot.error")
        .to_string()
}

/// After death, any wait ends `died` at once with the same cause.
fn later_waits_die_too(s: &Session, cause: &str) {
    let r = s
        .wait(
            &Wait::armed().timeout_s(10.0),
            Some(Duration::from_secs(10)),
        )
        .unwrap();
    assert_eq!(error_of(&r), cause);
    match s.sim().until(|| false, 10.0) {
        Err(RunError::Died { cause: typed }) => {
            let reason = typed.to_string();
            assert!(reason.contains(&cause[..10]), "{reason}")
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn the_vehicle_exits_mid_wait() {
    let s = session(realtime(130));
    let r = wait_through(&s, Fault::Exit { code: 7 });
    let e = error_of(&r);
    assert_eq!(e, "PX4 exited with code 7");
    later_waits_die_too(&s, &e);
}

#[test]
fn the_vehicle_panics_mid_wait() {
    let s = session(realtime(131));
    let r = wait_through(
        &s,
        Fault::Panic {
            module: "commander".into(),
            message: "boom".into(),
        },
    );
    let e = error_of(&r);
    assert!(
        e.starts_with("PX4 panicked: ") && e.contains("PANIC") && e.contains("boom"),
        "{e}"
    );
    later_waits_die_too(&s, &e);
}

#[test]
fn the_clock_stalls_while_messages_flow() {
    let s = session(realtime(132).stall(Some(Duration::from_secs(1))));
    let t0 = Instant::now();
    let r = wait_through(&s, Fault::StallClock);
    let e = error_of(&r);
    assert!(e.starts_with("SYSTEM_TIME stopped"), "{e}");
    let took = t0.elapsed();
    assert!(
        took >= Duration::from_millis(1000) && took < Duration::from_secs(30),
        "{took:?}"
    );
    // Heartbeats still came: only the clock says the vehicle is wedged.
    assert!(s.client().connected());
}

#[test]
fn the_link_goes_silent() {
    let s = session(realtime(133).stall(Some(Duration::from_secs(1))));
    let r = wait_through(&s, Fault::Silence);
    let e = error_of(&r);
    assert!(e.starts_with("link silent for"), "{e}");
    later_waits_die_too(&s, &e);
}

#[test]
fn lockstep_exit_and_stall_end_waits_died() {
    // Exit: the step fails, the run reports the exit.
    let s = session(lockstep(134));
    s.sim().inject(Fault::Exit { code: 2 }).unwrap();
    let r = s
        .wait(
            &Wait::altitude_m(100.0).timeout_s(600.0),
            Some(Duration::from_secs(60)),
        )
        .unwrap();
    assert_eq!(error_of(&r), "PX4 exited with code 2");

    // Stall: stepping no longer moves the clock; after the stall limit of that the run is dead.
    let s = session(
        RunOptions::simulated(135)
            .lockstep()
            .stall(Some(Duration::from_millis(500))),
    );
    s.sim().inject(Fault::StallClock).unwrap();
    let t0 = Instant::now();
    let r = s
        .wait(
            &Wait::altitude_m(100.0).timeout_s(600.0),
            Some(Duration::from_secs(60)),
        )
        .unwrap();
    let e = error_of(&r);
    assert!(e.starts_with("SYSTEM_TIME stopped"), "{e}");
    assert!(t0.elapsed() < Duration::from_secs(30));
}

#[test]
fn a_predicate_wait_on_a_dead_run_fails_with_the_cause() {
    let (sim, op) = connect(realtime(136));
    op.takeoff(50.0).unwrap();
    let sim2 = &sim;
    thread::scope(|sc| {
        sc.spawn(move || {
            thread::sleep(Duration::from_millis(100));
            sim2.inject(Fault::Exit { code: 9 }).unwrap();
        });
        match sim.until(|| op.relative_altitude_m().unwrap_or(0.0) > 49.0, 600.0) {
            Err(RunError::Died { cause }) => {
                assert_eq!(cause, DeathCause::Exited { code: 9 });
                assert_eq!(cause.to_string(), "PX4 exited with code 9");
            }
            other => panic!("{other:?}"),
        }
    });
}
