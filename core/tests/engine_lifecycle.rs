//! The engine's life cycle: reactions, already-true waits, hold_s, guards, capacity, stale
//! ids, event order, and the driver's cap/died/close/abort calls.

mod engine_support;

use engine_support::*;
use nexus_core::engine::{
    Condition, EngineError, EngineEvent, Reaction, Reason, SnapshotAt, Wait, CLOSED_ERROR,
};
use nexus_core::{Mode, RcSticks};

fn alt(r: &mut Rig, mm: i32) {
    let ms = r.sim_ms;
    r.feed(position_mm(ms, mm));
}

fn takeoff_wait() -> Wait {
    Wait::altitude_m(5.0)
        .timeout_s(30.0)
        .then_rc(RcSticks::NEUTRAL)
        .then_mode(Mode::Hold)
        .then_speedup(4.0)
}

// --- reactions --------------------------------------------------------------------------------

#[test]
fn reactions_fire_in_the_tick_of_met_before_settled() {
    let mut r = Rig::booted();
    alt(&mut r, 0);
    let id = r.register(&takeoff_wait()).unwrap();
    alt(&mut r, 4_000);
    assert!(r.reactions(id).is_empty());
    let before = r.events.len();
    alt(&mut r, 5_500);
    // All four events came out of that one evaluation, reactions first, in rc/mode/speedup order.
    let evs = &r.events[before..];
    assert_eq!(evs.len(), 4);
    assert_eq!(
        evs[0],
        EngineEvent::Reaction {
            id,
            reaction: Reaction::Rc(RcSticks::NEUTRAL)
        }
    );
    assert_eq!(
        evs[1],
        EngineEvent::Reaction {
            id,
            reaction: Reaction::Mode(Mode::Hold)
        }
    );
    assert_eq!(
        evs[2],
        EngineEvent::Reaction {
            id,
            reaction: Reaction::Speedup(4.0)
        }
    );
    match &evs[3] {
        EngineEvent::Settled { id: i, result } => {
            assert_eq!(*i, id);
            assert_eq!(result.reason, Reason::Met);
            assert_eq!(result.snapshot.height_m, Some(5.5));
        }
        e => panic!("expected Settled, got {e:?}"),
    }
    assert_eq!(
        Reaction::Mode(Mode::Hold).to_action(),
        nexus_core::Action::SetMode(Mode::Hold)
    );
}

#[test]
fn no_reaction_on_timeout_guard_cap_died_closed_or_aborted() {
    type Ender = fn(&mut Rig, nexus_core::engine::WaitId);
    let enders: [(&str, Ender); 6] = [
        ("timeout", |r, _| r.run(30_000, 500)),
        ("guard", |r, _| r.feed(heartbeat(false, Mode::Land))),
        ("cap", |r, id| r.cap(id).unwrap()),
        ("died", |r, _| {
            r.died("link lost");
        }),
        ("closed", |r, _| {
            r.close();
        }),
        ("aborted", |r, id| r.abort(id).unwrap()),
    ];
    for (name, end) in enders {
        let mut r = Rig::booted();
        r.feed(heartbeat(true, Mode::Takeoff));
        alt(&mut r, 0);
        let id = r
            .register(&takeoff_wait().guard(Condition::disarmed()))
            .unwrap();
        end(&mut r, id);
        let res = r
            .result(id)
            .unwrap_or_else(|| panic!("{name}: not settled"));
        assert!(!res.satisfied, "{name}");
        assert!(r.reactions(id).is_empty(), "{name}: reaction fired");
        // Even if the condition becomes true later, nothing more is emitted.
        alt(&mut r, 9_000);
        assert!(r.reactions(id).is_empty(), "{name}");
        assert_eq!(r.results(id).len(), 1);
    }
}

#[test]
fn an_already_true_wait_is_met_at_once_with_its_reactions() {
    let mut r = Rig::booted();
    alt(&mut r, 6_000);
    r.tick(2_000);
    let id = r.register(&takeoff_wait()).unwrap();
    let res = r.result(id).expect("met at registration");
    assert_eq!(res.reason, Reason::Met);
    assert_eq!(res.waited_sim_s, 0.0);
    assert_eq!(res.waited_wall.total_micros(), 0);
    assert_eq!(res.snapshot_at, SnapshotAt::Return);
    assert_eq!(
        r.reactions(id),
        vec![
            Reaction::Rc(RcSticks::NEUTRAL),
            Reaction::Mode(Mode::Hold),
            Reaction::Speedup(4.0)
        ]
    );
    // Its events precede anything that happens afterwards.
    assert!(matches!(r.events.last(), Some(EngineEvent::Settled { .. })));
}

#[test]
fn met_wins_over_timeout_in_the_same_tick() {
    let mut r = Rig::booted();
    let id = r.register(&Wait::altitude_m(5.0).timeout_s(2.0)).unwrap();
    r.tick(1_000);
    // One message both completes the timeout and carries the altitude.
    r.sim_ms += 1_000;
    let ms = r.sim_ms;
    r.feed(position_mm(ms, 5_000));
    let res = r.result(id).unwrap();
    assert_eq!((res.reason, res.waited_sim_s), (Reason::Met, 2.0));
}

#[test]
fn waited_times_are_sim_and_wall_separately() {
    let mut r = Rig::booted();
    let id = r.register(&Wait::time_s(3.0).timeout_s(10.0)).unwrap();
    // Sim runs at 10x wall: 3 s of sim in 0.3 s of wall.
    for _ in 0..30 {
        r.sim_ms += 100;
        r.now = r.now + nexus_core::Duration::from_millis(10);
        let ms = r.sim_ms;
        r.feed(system_time(ms));
    }
    let res = r.result(id).unwrap();
    assert_eq!(res.waited_sim_s, 3.0);
    assert_eq!(res.waited_wall.total_millis(), 300, "{:?}", res.waited_wall);
}

// --- hold_s ---------------------------------------------------------------------------------

#[test]
fn hold_restarts_on_any_violation() {
    let mut r = Rig::booted();
    let id = r
        .register(
            &Wait::altitude_m(5.0)
                .hold_s(2.0)
                .timeout_s(10.0)
                .then_mode(Mode::Hold),
        )
        .unwrap();
    alt(&mut r, 6_000); // t=1.0: holding since 1.0
    r.tick(1_500); // 2.5
    alt(&mut r, 4_000); // violation at 2.5
    r.tick(100); // 2.6
    alt(&mut r, 6_000); // holding again since 2.6
    r.tick(1_900); // 4.5: 1.9 s held
    assert!(r.result(id).is_none(), "violation did not restart the hold");
    assert!(r.reactions(id).is_empty());
    r.tick(100); // 4.6: 2.0 s held
    let res = r.result(id).unwrap();
    assert_eq!(res.reason, Reason::Met);
    assert_eq!(res.waited_sim_s, 3.6);
    assert_eq!(r.reactions(id), vec![Reaction::Mode(Mode::Hold)]);
}

#[test]
fn hold_that_never_completes_times_out() {
    let mut r = Rig::booted();
    let id = r
        .register(&Wait::armed().hold_s(1.0).timeout_s(3.0))
        .unwrap();
    for _ in 0..6 {
        r.feed(heartbeat(true, Mode::Hold));
        r.tick(400);
        r.feed(heartbeat(false, Mode::Hold));
        r.tick(100);
    }
    assert_eq!(r.result(id).unwrap().reason, Reason::Timeout);
}

#[test]
fn a_hold_already_true_at_registration_counts_from_registration() {
    let mut r = Rig::booted();
    r.feed(heartbeat(true, Mode::Hold));
    let id = r
        .register(&Wait::armed().hold_s(1.0).timeout_s(3.0))
        .unwrap();
    assert!(r.result(id).is_none(), "hold_s > 0 is not met at once");
    r.tick(999);
    assert!(r.result(id).is_none());
    r.tick(1);
    let res = r.result(id).unwrap();
    assert_eq!(
        (res.reason, res.snapshot_at, res.waited_sim_s),
        (Reason::Met, SnapshotAt::Settle, 1.0)
    );
}

// --- within -----------------------------------------------------------------------------------

#[test]
fn within_is_a_two_sided_tolerance() {
    let mut r = Rig::booted();
    alt(&mut r, 0);
    let id = r
        .register(&Wait::altitude_m(10.0).within(0.5).timeout_s(60.0))
        .unwrap();
    alt(&mut r, 9_400);
    alt(&mut r, 10_600);
    assert!(r.result(id).is_none(), "outside ±0.5 m");
    alt(&mut r, 10_500);
    assert!(r.result(id).unwrap().satisfied, "|10.5 - 10| <= 0.5");
    let id = r
        .register(&Wait::altitude_m(8.0).within(0.5).timeout_s(60.0))
        .unwrap();
    assert!(
        r.result(id).is_none(),
        "overshoot beyond the tolerance is not within"
    );
}

// --- guards -----------------------------------------------------------------------------------

#[test]
fn a_guard_ends_the_wait_early_and_names_itself() {
    let mut r = Rig::booted();
    r.feed(heartbeat(true, Mode::Mission));
    r.feed(mission_current(0));
    let id = r
        .register(
            &Wait::waypoint(4)
                .timeout_s(120.0)
                .then_mode(Mode::Rtl)
                .guard(Condition::text("Failsafe"))
                .guard(Condition::disarmed()),
        )
        .unwrap();
    r.feed(mission_current(2));
    r.tick(500);
    r.feed(heartbeat(false, Mode::Hold));
    let res = r.result(id).unwrap();
    assert_eq!(res.reason, Reason::Guard);
    assert_eq!(res.guard, Some(1));
    assert!(!res.satisfied);
    assert_eq!(res.snapshot_at, SnapshotAt::Settle);
    assert!(r.reactions(id).is_empty());

    // The first guard, a text after the call.
    r.feed(heartbeat(true, Mode::Mission));
    let id = r
        .register(
            &Wait::waypoint(4)
                .timeout_s(120.0)
                .guard(Condition::text("Failsafe"))
                .guard(Condition::disarmed()),
        )
        .unwrap();
    r.feed(statustext("Failsafe activated"));
    assert_eq!(r.result(id).unwrap().guard, Some(0));
}

#[test]
fn met_wins_over_a_guard_and_a_guard_over_the_timeout() {
    let mut r = Rig::booted();
    r.feed(heartbeat(true, Mode::Land));
    let id = r
        .register(
            &Wait::mode(Mode::Hold)
                .timeout_s(5.0)
                .guard(Condition::disarmed()),
        )
        .unwrap();
    r.feed(heartbeat(false, Mode::Hold)); // both at once
    assert_eq!(r.result(id).unwrap().reason, Reason::Met);

    let id = r
        .register(
            &Wait::altitude_m(50.0)
                .timeout_s(1.0)
                .guard(Condition::time_s(1.0)),
        )
        .unwrap();
    r.tick(1_000); // timeout and guard in the same tick
    let res = r.result(id).unwrap();
    assert_eq!((res.reason, res.guard), (Reason::Guard, Some(0)));
}

#[test]
fn a_guard_already_true_settles_at_registration() {
    let mut r = Rig::booted(); // disarmed
    let id = r
        .register(
            &Wait::waypoint(3)
                .timeout_s(60.0)
                .guard(Condition::disarmed()),
        )
        .unwrap();
    let res = r.result(id).unwrap();
    assert_eq!(
        (res.reason, res.guard, res.snapshot_at),
        (Reason::Guard, Some(0), SnapshotAt::Return)
    );
}

#[test]
fn too_many_guards_is_an_error() {
    let mut w = Wait::armed().timeout_s(1.0);
    for _ in 0..nexus_core::engine::MAX_GUARDS {
        w = w.guard(Condition::disarmed());
    }
    assert_eq!(w.validate(), Ok(()));
    let w = w.guard(Condition::landed());
    assert_eq!(
        w.validate(),
        Err(nexus_core::engine::SpecError::TooManyGuards)
    );
    let w = Wait::armed()
        .timeout_s(1.0)
        .guard(Condition::armed().op(nexus_core::engine::Op::Le));
    assert!(w.validate().is_err(), "a guard's own spec is checked too");
}

// --- capacity, ids, events ----------------------------------------------------------------------

#[test]
fn a_full_engine_refuses_and_an_unpolled_result_keeps_its_slot() {
    let mut r = RigN::<2>::booted();
    r.auto_poll = false;
    let a = r.register(&Wait::armed().timeout_s(5.0)).unwrap();
    let b = r.register(&Wait::armed().timeout_s(5.0)).unwrap();
    assert_eq!(
        r.register(&Wait::armed().timeout_s(5.0)),
        Err(EngineError::Full)
    );
    r.feed(heartbeat(true, Mode::Hold)); // both settle, nobody polls
    assert!(!r.engine.is_pending(a) && r.engine.has_events());
    assert_eq!(r.engine.pending_count(), 0);
    assert_eq!(
        r.register(&Wait::armed().timeout_s(5.0)),
        Err(EngineError::Full),
        "settled results must not be dropped to make room"
    );
    assert_eq!(r.engine.cap(r.now, &r.tel, a), Err(EngineError::NotPending));
    r.poll();
    assert_eq!(r.result(a).unwrap().reason, Reason::Met);
    assert_eq!(r.result(b).unwrap().reason, Reason::Met);
    let c = r.register(&Wait::disarmed().timeout_s(5.0)).unwrap();
    assert_eq!(c.slot(), a.slot(), "slot reused");
    assert_ne!(c, a);
}

#[test]
fn a_stale_id_is_an_error_not_another_wait() {
    let mut r = RigN::<1>::booted();
    let old = r.register(&Wait::armed().timeout_s(5.0)).unwrap();
    r.abort(old).unwrap();
    // Armed again: booted() is disarmed on the pad, where `landed` would settle at once.
    let new = r.register(&Wait::armed().timeout_s(5.0)).unwrap();
    assert_eq!(new.slot(), old.slot());
    assert_ne!(new.generation(), old.generation());
    assert_eq!(r.cap(old), Err(EngineError::StaleId));
    assert_eq!(r.abort(old), Err(EngineError::StaleId));
    assert!(!r.engine.is_pending(old));
    assert!(r.engine.is_pending(new), "the new wait was not touched");
}

#[test]
fn events_come_out_in_settle_order() {
    let mut r = Rig::booted();
    r.auto_poll = false;
    let late = r.register(&Wait::time_s(2.0).timeout_s(5.0)).unwrap();
    let early = r.register(&Wait::time_s(1.0).timeout_s(5.0)).unwrap();
    r.tick(1_000);
    r.tick(1_000);
    r.poll();
    let order: Vec<_> = r
        .events
        .iter()
        .map(|e| match e {
            EngineEvent::Settled { id, .. } | EngineEvent::Reaction { id, .. } => *id,
        })
        .collect();
    assert_eq!(order, vec![early, late]);
    assert!(r.engine.poll_event().is_none());
}

// --- the driver's calls -------------------------------------------------------------------------

#[test]
fn died_settles_everything_once_with_the_error() {
    let mut r = Rig::booted();
    let a = r.register(&Wait::armed().timeout_s(5.0)).unwrap();
    let b = r.register(&Wait::text("x").timeout_s(5.0)).unwrap();
    r.tick(700);
    assert_eq!(r.died("clock stalled for 5 s"), 2);
    for id in [a, b] {
        let res = r.result(id).unwrap();
        assert_eq!(res.reason, Reason::Died);
        assert_eq!(res.snapshot.error.as_deref(), Some("clock stalled for 5 s"));
        assert_eq!(res.waited_sim_s, 0.7);
    }
    assert_eq!(r.died("again"), 0);
    assert_eq!(r.close(), 0);
    r.feed(heartbeat(true, Mode::Hold));
    assert_eq!(r.results(a).len(), 1);
}

#[test]
fn cap_is_a_return_snapshot_and_the_wait_can_be_registered_again() {
    let mut r = Rig::booted();
    let w = Wait::armed().timeout_s(60.0);
    let id = r.register(&w).unwrap();
    r.tick(300);
    r.cap(id).unwrap();
    let res = r.result(id).unwrap();
    assert_eq!(
        (res.reason, res.snapshot_at, res.satisfied),
        (Reason::Cap, SnapshotAt::Return, false)
    );
    assert_eq!(r.cap(id), Err(EngineError::StaleId));
    let again = r.register(&w).unwrap();
    r.feed(heartbeat(true, Mode::Hold));
    assert!(r.result(again).unwrap().satisfied);
}

#[test]
fn close_reports_closed_without_an_error() {
    let mut r = Rig::booted();
    let id = r.register(&Wait::armed().timeout_s(60.0)).unwrap();
    assert_eq!(r.close(), 1);
    let res = r.result(id).unwrap();
    assert_eq!(res.reason, Reason::Closed);
    assert_eq!(res.snapshot.error, None);
    assert_ne!(CLOSED_ERROR, "", "steps aborted by close carry this error");
}

#[test]
fn the_first_settle_sets_the_reference_for_relative_sim_time_whatever_its_reason() {
    let mut r = Rig::booted();
    let id = r.register(&Wait::armed().timeout_s(60.0)).unwrap();
    r.tick(400);
    r.cap(id).unwrap();
    assert_eq!(r.engine.last_settle_sim_ms(), Some(Some(1_400)));
    let rel = r
        .register(&Wait::sim_time_s(1.0).relative().timeout_s(5.0))
        .unwrap();
    r.tick(999); // 2399
    assert!(r.result(rel).is_none());
    r.tick(1); // 2400: 1 s after the cap
    assert!(r.result(rel).unwrap().satisfied);
}
