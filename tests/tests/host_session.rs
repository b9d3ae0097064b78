//! The Session service (the wait engine on a run): cap and resume with `since_seq` without losing a
//! text, `closed` when the session closes during a wait (close_sitl, kill_instance, the idle
//! reaper), concurrent waits from several threads, step programs and `abort_steps`; the close
//! hook (once, after the vehicle stopped, told why and the link's last status).

mod host_support;

use nexus_host::groups::ActionApi;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use host_support::*;
use nexus_core::action::Action;
use nexus_core::engine::{OnTimeout, Program, ProgramEnd, Reason, SnapshotAt, Step, Wait};
use nexus_core::Mode;
use nexus_host::error::SessionError;
use nexus_host::session::Sessions;

#[test]
fn cap_then_resume_with_since_seq_loses_no_text() {
    let s = session(realtime(114));
    let op = s.client();
    let mut since = s.snapshot().unwrap().seq;
    let before_takeoff = since;
    op.takeoff(3.0).unwrap();
    let wait = |since: u32| {
        Wait::text("Takeoff detected")
            .since_seq(since)
            .timeout_s(120.0)
    };

    // Short caps, with gaps between the calls in which nobody waits.
    let mut caps = 0;
    loop {
        let r = s
            .wait(&wait(since), Some(Duration::from_millis(20)))
            .unwrap();
        match r.reason {
            Reason::Cap => {
                assert_eq!(r.snapshot_at, SnapshotAt::Return);
                assert!(!r.satisfied);
                since = r.snapshot.seq;
                caps += 1;
            }
            Reason::Met => break,
            other => panic!("{other:?}: {r:?}"),
        }
        // The text is bound to arrive in one of these gaps sooner or later; make sure of it
        // once: wait, unwatched, until it is there.
        if caps == 3 {
            let t0 = Instant::now();
            while !s
                .texts_since(since)
                .unwrap()
                .iter()
                .any(|t| t.text.contains("Takeoff detected"))
            {
                assert!(t0.elapsed() < WALL, "no Takeoff detected text");
                thread::sleep(Duration::from_millis(5));
            }
        } else {
            thread::sleep(Duration::from_millis(10));
        }
        assert!(caps < 10_000);
    }
    assert!(caps >= 3, "the wait was capped and resumed: {caps}");
    // The resumed call found the text that arrived while nobody waited: met at once.
    // A call without since_seq counts only texts after it, so it misses it: the control.
    let r = s
        .wait(&Wait::text("Takeoff detected").timeout_s(1.0), CAP)
        .unwrap();
    assert_eq!(r.reason, Reason::Timeout, "{r:?}");
    // And since_seq from before the takeoff finds it again, at once.
    let r = s.wait(&wait(before_takeoff), CAP).unwrap();
    assert_eq!(r.reason, Reason::Met);
    assert_eq!(r.snapshot_at, SnapshotAt::Return);
    assert_eq!(r.waited_sim_s, 0.0);
}

#[test]
fn a_cap_racing_a_settle_gives_exactly_one_result() {
    let s = session(realtime(115));
    // Waits that settle right around their cap: each call returns exactly one result, met or
    // cap, never both and never none.
    let mut met = 0;
    let mut capped = 0;
    for i in 0..40 {
        let cap = Duration::from_micros(500 * (i % 8));
        let r = s
            .wait(&Wait::time_s(0.05).timeout_s(5.0), Some(cap))
            .unwrap();
        match r.reason {
            Reason::Met => met += 1,
            Reason::Cap => capped += 1,
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(met + capped, 40);
    assert!(capped > 0, "some were capped");
    // The engine's slots were all freed (a leak would fill the 32 of them).
    for _ in 0..40 {
        let r = s.wait(&Wait::disarmed().timeout_s(1.0), CAP).unwrap();
        assert_eq!(r.reason, Reason::Met);
    }
}

#[test]
fn close_sitl_during_a_wait_ends_it_closed() {
    let s = session(realtime(116));
    let s2 = s.clone();
    let waiter = thread::spawn(move || s2.wait(&Wait::altitude_m(100.0).timeout_s(600.0), None));
    thread::sleep(Duration::from_millis(200));
    s.close_sitl();
    let r = waiter.join().unwrap().unwrap();
    assert_eq!(r.reason, Reason::Closed, "{r:?}");
    assert!(!r.satisfied);
    assert!(matches!(
        s.wait(&Wait::armed().timeout_s(1.0), CAP),
        Err(SessionError::Closed(_))
    ));
    assert!(!s.sim().is_running());
    s.close_sitl(); // idempotent
}

#[test]
fn kill_instance_during_a_wait_ends_it_closed() {
    let sessions = Sessions::new(None);
    let s = sessions.open(realtime(117), 10.0).unwrap();
    let s2 = s.clone();
    let waiter = thread::spawn(move || s2.wait(&Wait::armed().timeout_s(600.0), None));
    thread::sleep(Duration::from_millis(200));
    sessions.kill_instance(117).unwrap();
    let r = waiter.join().unwrap().unwrap();
    assert_eq!(r.reason, Reason::Closed, "{r:?}");
    assert!(s.closed().unwrap().contains("kill_instance"));
    assert!(matches!(
        sessions.kill_instance(117),
        Err(SessionError::NoSuchInstance(117))
    ));
    assert!(sessions.list().is_empty());
}

#[test]
fn the_idle_reaper_closes_unused_sessions() {
    let sessions = Sessions::new(Some(Duration::from_millis(500)));
    let busy = sessions.open(realtime(118), 10.0).unwrap();
    let idle = sessions.open(realtime(119), 10.0).unwrap();
    let b = busy.clone();
    let t0 = Instant::now();
    // A wait longer than the idle limit: the session counts as unused from the call's start.
    let waiter = thread::spawn(move || b.wait(&Wait::armed().timeout_s(600.0), None));
    let r = waiter.join().unwrap().unwrap();
    assert_eq!(r.reason, Reason::Closed, "{r:?}");
    let took = t0.elapsed();
    assert!(
        took >= Duration::from_millis(400) && took < Duration::from_secs(20),
        "{took:?}"
    );
    let t1 = Instant::now();
    while !idle.is_closed() {
        assert!(t1.elapsed() < WALL, "the idle session was not reaped");
        thread::sleep(Duration::from_millis(20));
    }
    assert!(idle.closed().unwrap().contains("idle"));
    assert!(sessions.list().is_empty());
}

#[test]
fn concurrent_waits_from_several_threads() {
    let s = session(realtime(122));
    let waits = [
        Wait::armed().timeout_s(120.0),
        Wait::altitude_m(2.0).timeout_s(120.0),
        Wait::text("Takeoff detected").timeout_s(120.0),
        Wait::mode(Mode::Takeoff).timeout_s(120.0),
        Wait::time_s(3.0).timeout_s(120.0),
        Wait::landed().timeout_s(1.0), // already true
    ];
    let barrier = Arc::new(std::sync::Barrier::new(waits.len() + 1));
    let threads: Vec<_> = waits
        .into_iter()
        .map(|w| {
            let s = s.clone();
            let b = Arc::clone(&barrier);
            thread::spawn(move || {
                b.wait();
                s.wait(&w, CAP)
            })
        })
        .collect();
    barrier.wait();
    // Take off once every wait is registered (five pending; "landed" settled at once), so
    // none of them can miss a passing state (Takeoff mode, the text).
    let link = s.client().link().unwrap();
    let t0 = Instant::now();
    while link
        .call(|ctx| ctx.client().engine().pending_count())
        .unwrap()
        < 5
    {
        assert!(t0.elapsed() < WALL, "the waits were not registered");
        thread::sleep(Duration::from_millis(1));
    }
    s.client().takeoff(3.0).unwrap();
    for t in threads {
        let r = t.join().unwrap().unwrap();
        assert_eq!(r.reason, Reason::Met, "{r:?}");
    }
}

#[test]
fn step_programs_run_and_abort() {
    let s = session(lockstep(123));
    let p = Program::new()
        .then(Step::new(
            Action::Takeoff { alt_m: 3.0 },
            Wait::altitude_m(2.5).timeout_s(60.0),
        ))
        .unwrap()
        .then(Step::new(Action::None, Wait::time_s(1.0).timeout_s(5.0)))
        .unwrap()
        .then(
            Step::new(
                Action::None,
                Wait::sim_time_s(0.5).relative().timeout_s(5.0),
            )
            .on_timeout(OnTimeout::Continue),
        )
        .unwrap()
        .then(Step::new(Action::Land, Wait::landed().timeout_s(120.0)))
        .unwrap();
    let report = s.run_steps(p, Some(WALL)).unwrap();
    assert!(report.passed(), "{report:?}");
    assert_eq!(report.records.len(), 4);
    assert!(report
        .records
        .iter()
        .all(|r| r.result.reason == Reason::Met));

    // abort_steps from another thread ends a long step, and the program, aborted.
    let long = Program::new()
        .then(Step::new(
            Action::None,
            Wait::altitude_m(100.0).timeout_s(3600.0),
        ))
        .unwrap();
    let s2 = s.clone();
    let aborter = thread::spawn(move || {
        thread::sleep(Duration::from_millis(200));
        s2.abort_steps()
    });
    let report = s.run_steps(long, Some(WALL)).unwrap();
    aborter.join().unwrap().unwrap();
    assert!(
        matches!(report.end, ProgramEnd::Aborted { step: 0 }),
        "{report:?}"
    );
    assert_eq!(report.records[0].result.reason, Reason::Aborted);
    // A program with a step time-out that stops it.
    let stops = Program::new()
        .then(Step::new(
            Action::None,
            Wait::altitude_m(100.0).timeout_s(1.0),
        ))
        .unwrap()
        .then(Step::new(Action::None, Wait::time_s(0.1).timeout_s(1.0)))
        .unwrap();
    let report = s.run_steps(stops, Some(WALL)).unwrap();
    assert_eq!(report.end, ProgramEnd::Stopped { step: 0 });
    assert_eq!(report.records.len(), 1);
    assert_eq!(report.records[0].result.reason, Reason::Timeout);
}

#[test]
fn reactions_are_applied_in_the_tick_the_condition_is_met() {
    let s = session(lockstep(126));
    let op = s.client();
    let link = op.link().unwrap();
    // then_rc: the stick stream is set before the wait returns.
    let sticks = nexus_core::RcSticks {
        roll: 0.25,
        pitch: -0.5,
        throttle: 0.5,
        yaw: 0.0,
    };
    let r = s
        .wait(&Wait::time_s(0.1).then_rc(sticks).timeout_s(5.0), CAP)
        .unwrap();
    assert_eq!(r.reason, Reason::Met);
    let rc = link.call(|ctx| ctx.client().offboard().rc()).unwrap();
    assert_eq!(rc, Some(sticks));
    op.stop_rc().unwrap();

    // then_mode: climbing through 3 m switches to Land in that tick; the request is already
    // out when the wait returns (the vehicle cannot have answered: nothing stepped since).
    op.takeoff(6.0).unwrap();
    let r = s
        .wait(
            &Wait::altitude_m(3.0).then_mode(Mode::Land).timeout_s(60.0),
            CAP,
        )
        .unwrap();
    assert_eq!(r.reason, Reason::Met, "{r:?}");
    assert_eq!(r.snapshot_at, SnapshotAt::Settle);
    let st = op.status().unwrap();
    assert!(
        st.pending.mode == Some(Mode::Land) || st.mode == Some(Mode::Land),
        "{st:?}"
    );
    let r = s
        .wait(&Wait::mode(Mode::Land).timeout_s(10.0), CAP)
        .unwrap();
    assert_eq!(r.reason, Reason::Met);
    // It never got near 6 m: the reaction, not the takeoff, ended the climb.
    assert!(r.snapshot.height_m.unwrap() < 5.0, "{r:?}");
    let r = s.wait(&Wait::landed().timeout_s(120.0), CAP).unwrap();
    assert_eq!(r.reason, Reason::Met);

    // then_speedup on a lockstep run: logged with the reason it cannot apply.
    let r = s
        .wait(&Wait::time_s(0.1).then_speedup(5.0).timeout_s(5.0), CAP)
        .unwrap();
    assert_eq!(r.reason, Reason::Met);
    let speedup = op
        .events_since(0)
        .into_iter()
        .find_map(|(_, e)| match e {
            nexus_host::pump::LinkEvent::Speedup { factor, error } => Some((factor, error)),
            _ => None,
        })
        .expect("a speedup event");
    assert_eq!(speedup.0, 5.0);
    assert!(speedup.1.unwrap().contains("lockstep"));
}

#[test]
fn then_speedup_changes_a_real_time_runs_speed() {
    let s = session(realtime(127));
    let rate = |s: &nexus_host::session::Session| {
        let t0 = s.sim().sim_time_ms().unwrap();
        let w0 = Instant::now();
        thread::sleep(Duration::from_millis(300));
        (s.sim().sim_time_ms().unwrap() - t0) as f64 / w0.elapsed().as_millis() as f64
    };
    let before = rate(&s);
    let factor = (speed() * 3.0) as f32;
    let r = s
        .wait(&Wait::time_s(0.2).then_speedup(factor).timeout_s(5.0), CAP)
        .unwrap();
    assert_eq!(r.reason, Reason::Met);
    let after = rate(&s);
    assert!(
        after > before * 1.5,
        "then_speedup ×3: {before:.1} → {after:.1}"
    );
    let logged = s.client().events_since(0).into_iter().any(|(_, e)| {
        matches!(e, nexus_host::pump::LinkEvent::Speedup { error: None, factor: f } if f == factor)
    });
    assert!(logged);
}

#[test]
fn concurrent_waits_on_a_lockstep_run_step_it_together() {
    let s = session(lockstep(128));
    // Texts after this one count, whichever thread steps the clock past "Takeoff detected".
    let since = s.snapshot().unwrap().seq;
    let s2 = s.clone();
    let clock = thread::spawn(move || s2.wait(&Wait::time_s(30.0).timeout_s(60.0), CAP));
    let s3 = s.clone();
    let climb = thread::spawn(move || {
        s3.client().takeoff(3.0).unwrap();
        s3.wait(&Wait::altitude_m(2.5).timeout_s(60.0), CAP)
    });
    let texts = s.wait(
        &Wait::text("Takeoff detected")
            .since_seq(since)
            .timeout_s(60.0),
        CAP,
    );
    for r in [
        texts.unwrap(),
        climb.join().unwrap().unwrap(),
        clock.join().unwrap().unwrap(),
    ] {
        assert_eq!(r.reason, Reason::Met, "{r:?}");
    }
}

#[test]
fn the_close_hook_runs_once_after_the_vehicle_stopped() {
    use std::sync::Mutex;
    // SITL instance 247 (of serve_mcp's range 240–247: the hook is what nexus serve keeps its
    // records by).
    let sessions = Sessions::new(None);
    let s = sessions.open(realtime(247), 10.0).unwrap();
    let r = s.wait(&Wait::sim_time_s(1.0).timeout_s(10.0), CAP).unwrap();
    assert_eq!(r.reason, Reason::Met, "{r:?}");
    // Why, the last status's sim time, whether the ports were free: each time it ran.
    type Told = Vec<(String, Option<u64>, bool)>;
    let told: Arc<Mutex<Told>> = Arc::default();
    let t = Arc::clone(&told);
    s.on_close(move |c| {
        let sim_ms = c.last_status.as_ref().and_then(|st| st.snapshot.sim_ms);
        // The link and the vehicle let go of their ports before the hook runs.
        let free = [14540 + 247, 14580 + 247]
            .iter()
            .all(|p| std::net::UdpSocket::bind(("127.0.0.1", *p)).is_ok());
        t.lock().unwrap().push((c.why.clone(), sim_ms, free));
    });
    assert!(
        told.lock().unwrap().is_empty(),
        "the hook ran before the close"
    );
    assert!(sessions.close_sitl(&s));
    assert!(
        sessions.list().is_empty(),
        "close_sitl left it in the registry"
    );
    assert!(!sessions.close_sitl(&s), "held twice");
    let told = told.lock().unwrap().clone();
    assert_eq!(told.len(), 1, "{told:?}");
    let (why, sim_ms, free) = &told[0];
    assert_eq!(why, "close_sitl");
    assert!(
        sim_ms.is_some_and(|ms| ms >= 1000),
        "last status: {sim_ms:?}"
    );
    assert!(free, "the hook ran before the vehicle stopped");
    assert!(!s.sim().is_running());
    // Set after the close: it runs at once, told the same.
    let again: Arc<Mutex<Option<String>>> = Arc::default();
    let a = Arc::clone(&again);
    s.on_close(move |c| *a.lock().unwrap() = Some(c.why.clone()));
    assert_eq!(again.lock().unwrap().as_deref(), Some("close_sitl"));
}
