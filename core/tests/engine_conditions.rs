//! The wait engine's tables, row by row: every condition × every applicable op × every reason, plus
//! the "message not yet arrived" rule and the registration errors.

mod engine_support;

use engine_support::*;
use nexus_core::engine::{
    Condition, ConditionKind, EngineError, Op, Reason, SnapshotAt, SpecError, Wait, MAX_NEEDLE_LEN,
};
#[cfg(feature = "ground-truth")]
use nexus_core::HeightSource;
use nexus_core::{mav, Mode};

/// One row of the matrix: a wait whose condition `setup` leaves false and `make_true` makes
/// true. `timeout_setup` leaves it false for good while the clock runs (usually `setup`).
struct Case {
    name: &'static str,
    wait: fn() -> Wait,
    setup: fn(&mut Rig),
    make_true: fn(&mut Rig),
    timeout_setup: fn(&mut Rig),
}

fn clock(r: &mut Rig) {
    r.sim_ms = 1000;
    r.feed(system_time(1000));
}

fn alt(r: &mut Rig, mm: i32) {
    let ms = r.sim_ms;
    r.feed(position_mm(ms, mm));
}

/// The first position is the pad (the height is AMSL since arming, the first sample before
/// any arming): on the pad, then at `mm` above it.
fn from_pad(r: &mut Rig, mm: i32) {
    alt(r, 0);
    alt(r, mm);
}

macro_rules! case {
    ($name:expr, $wait:expr, $setup:expr, $make_true:expr) => {
        Case {
            name: $name,
            wait: $wait,
            setup: $setup,
            make_true: $make_true,
            timeout_setup: $setup,
        }
    };
    ($name:expr, $wait:expr, $setup:expr, $make_true:expr, $timeout_setup:expr) => {
        Case {
            name: $name,
            wait: $wait,
            setup: $setup,
            make_true: $make_true,
            timeout_setup: $timeout_setup,
        }
    };
}

fn cases() -> Vec<Case> {
    vec![
        // altitude: GLOBAL_POSITION_INT.alt since the pad (no ground truth streams)
        case!(
            "altitude >=",
            || Wait::altitude_m(5.0),
            |r| {
                clock(r);
                alt(r, 0)
            },
            |r| alt(r, 5_200)
        ),
        case!(
            "altitude >= (boundary)",
            || Wait::altitude_m(5.0).op(Op::Ge),
            |r| {
                clock(r);
                from_pad(r, 4_999)
            },
            |r| alt(r, 5_000)
        ),
        case!(
            "altitude <=",
            || Wait::altitude_m(1.0).op(Op::Le),
            |r| {
                clock(r);
                from_pad(r, 10_000)
            },
            |r| alt(r, 1_000)
        ),
        case!(
            "altitude ==",
            || Wait::altitude_m(5.0).op(Op::Eq),
            |r| {
                clock(r);
                from_pad(r, 4_900)
            },
            |r| alt(r, 5_000)
        ),
        case!(
            "altitude within",
            || Wait::altitude_m(5.0).within(0.5),
            |r| {
                clock(r);
                from_pad(r, 6_000)
            },
            |r| alt(r, 5_400)
        ),
        // airspeed: VFR_HUD.airspeed
        case!(
            "airspeed >=",
            || Wait::airspeed_m_s(12.0),
            |r| {
                clock(r);
                r.feed(vfr_hud(3.0))
            },
            |r| r.feed(vfr_hud(12.5))
        ),
        case!(
            "airspeed <=",
            || Wait::airspeed_m_s(1.0).op(Op::Le),
            |r| {
                clock(r);
                r.feed(vfr_hud(8.0))
            },
            |r| r.feed(vfr_hud(0.5))
        ),
        case!(
            "airspeed ==",
            || Wait::airspeed_m_s(7.5).op(Op::Eq),
            |r| {
                clock(r);
                r.feed(vfr_hud(7.0))
            },
            |r| r.feed(vfr_hud(7.5))
        ),
        case!(
            "airspeed within",
            || Wait::airspeed_m_s(10.0).within(1.0),
            |r| {
                clock(r);
                r.feed(vfr_hud(8.0))
            },
            |r| r.feed(vfr_hud(10.9))
        ),
        // waypoint: MISSION_CURRENT.seq
        case!(
            "waypoint >=",
            || Wait::waypoint(3),
            |r| {
                clock(r);
                r.feed(mission_current(1))
            },
            |r| r.feed(mission_current(4))
        ),
        case!(
            "waypoint <=",
            || Wait::waypoint(1).op(Op::Le),
            |r| {
                clock(r);
                r.feed(mission_current(5))
            },
            |r| r.feed(mission_current(0))
        ),
        case!(
            "waypoint ==",
            || Wait::waypoint(2).op(Op::Eq),
            |r| {
                clock(r);
                r.feed(mission_current(3))
            },
            |r| r.feed(mission_current(2))
        ),
        case!(
            "waypoint within",
            || Wait::waypoint(5).within(1.0),
            |r| {
                clock(r);
                r.feed(mission_current(2))
            },
            |r| r.feed(mission_current(6))
        ),
        // sim_time: the autopilot clock
        case!("sim_time >=", || Wait::sim_time_s(20.0), clock, |r| {
            r.sim_ms = 20_000;
            r.feed(system_time(20_000))
        }),
        case!(
            "sim_time <= (clock arrives)",
            || Wait::sim_time_s(5.0).op(Op::Le),
            |_| {},
            |r| {
                r.sim_ms = 500;
                r.feed(system_time(500))
            },
            |r| {
                r.sim_ms = 10_000;
                r.feed(system_time(10_000))
            }
        ),
        case!(
            "sim_time ==",
            || Wait::sim_time_s(20.0).op(Op::Eq),
            clock,
            |r| {
                r.sim_ms = 20_000;
                r.feed(system_time(20_000))
            }
        ),
        case!(
            "sim_time within",
            || Wait::sim_time_s(20.0).within(0.1),
            clock,
            |r| {
                r.sim_ms = 19_950;
                r.feed(system_time(19_950))
            }
        ),
        // time: sim seconds since registration
        case!("time", || Wait::time_s(10.0), clock, |r| r.tick(10_000)),
        // mode, case-insensitive names
        case!(
            "mode",
            || Wait::mode(Mode::Takeoff),
            |r| {
                clock(r);
                r.feed(heartbeat(false, Mode::Hold))
            },
            |r| r.feed(heartbeat(false, Mode::Takeoff))
        ),
        case!(
            "mode named",
            || Wait::mode_named("rTl"),
            |r| {
                clock(r);
                r.feed(heartbeat(true, Mode::Hold))
            },
            |r| r.feed(heartbeat(true, Mode::Rtl))
        ),
        // text: substring of a STATUSTEXT after the call
        case!(
            "text",
            || Wait::text("Takeoff"),
            |r| {
                clock(r);
                r.feed(statustext("Armed by external command"))
            },
            |r| r.feed(statustext("Takeoff detected"))
        ),
        // armed / disarmed: heartbeat flag
        case!(
            "armed",
            Wait::armed,
            |r| {
                clock(r);
                r.feed(heartbeat(false, Mode::Hold))
            },
            |r| r.feed(heartbeat(true, Mode::Hold))
        ),
        case!(
            "disarmed",
            Wait::disarmed,
            |r| {
                clock(r);
                r.feed(heartbeat(true, Mode::Hold))
            },
            |r| r.feed(heartbeat(false, Mode::Hold))
        ),
        // landed: EXTENDED_SYS_STATE, or disarmed within 0.3 m before it ever arrives
        case!(
            "landed (extended_sys_state)",
            Wait::landed,
            |r| {
                clock(r);
                r.feed(heartbeat(false, Mode::Hold));
                r.feed(landed_state(mav::MavLandedState::MAV_LANDED_STATE_IN_AIR))
            },
            |r| r.feed(landed_state(
                mav::MavLandedState::MAV_LANDED_STATE_ON_GROUND
            ))
        ),
        case!(
            "landed (pad fallback)",
            Wait::landed,
            |r| {
                clock(r);
                r.feed(heartbeat(true, Mode::Land));
                alt(r, 100)
            },
            |r| r.feed(heartbeat(false, Mode::Hold))
        ),
    ]
}

fn registered(
    case: &Case,
    setup: fn(&mut Rig),
    timeout_s: f32,
) -> (Rig, nexus_core::engine::WaitId) {
    let mut r = Rig::new();
    setup(&mut r);
    let id = r
        .register(&(case.wait)().timeout_s(timeout_s))
        .unwrap_or_else(|e| panic!("{}: {e}", case.name));
    assert!(
        r.result(id).is_none(),
        "{}: settled at registration",
        case.name
    );
    (r, id)
}

#[test]
fn every_row_is_met_when_its_condition_holds() {
    for case in cases() {
        let (mut r, id) = registered(&case, case.setup, 60.0);
        r.feed(neutral());
        assert!(r.result(id).is_none(), "{}: met while false", case.name);
        (case.make_true)(&mut r);
        let res = r
            .result(id)
            .unwrap_or_else(|| panic!("{}: not met", case.name));
        assert_eq!(res.reason, Reason::Met, "{}", case.name);
        assert!(res.satisfied, "{}", case.name);
        assert_eq!(res.snapshot_at, SnapshotAt::Settle, "{}", case.name);
        assert_eq!(res.guard, None);
        // Settles once: later messages change nothing.
        r.tick(100);
        assert_eq!(r.results(id).len(), 1, "{}", case.name);
    }
}

#[test]
fn every_row_times_out_after_timeout_s_of_sim_time() {
    for case in cases() {
        let (mut r, id) = registered(&case, case.timeout_setup, 5.0);
        r.run(4_900, 100);
        assert!(r.result(id).is_none(), "{}: early", case.name);
        r.tick(99);
        assert!(r.result(id).is_none(), "{}: early by 1 ms", case.name);
        r.tick(1);
        let res = r
            .result(id)
            .unwrap_or_else(|| panic!("{}: no timeout", case.name));
        assert_eq!(res.reason, Reason::Timeout, "{}", case.name);
        assert!(!res.satisfied);
        assert_eq!(res.waited_sim_s, 5.0, "{}", case.name);
        assert_eq!(res.snapshot_at, SnapshotAt::Settle);
    }
}

#[test]
fn every_row_ends_by_cap_died_closed_and_aborted() {
    for case in cases() {
        let (mut r, id) = registered(&case, case.setup, 60.0);
        r.cap(id).unwrap();
        let res = r.result(id).unwrap();
        assert_eq!(
            (res.reason, res.snapshot_at),
            (Reason::Cap, SnapshotAt::Return),
            "{}",
            case.name
        );

        let (mut r, id) = registered(&case, case.setup, 60.0);
        assert_eq!(r.died("PX4 exited (PANIC)"), 1);
        let res = r.result(id).unwrap();
        assert_eq!(res.reason, Reason::Died, "{}", case.name);
        assert_eq!(res.snapshot.error.as_deref(), Some("PX4 exited (PANIC)"));
        assert_eq!(res.snapshot_at, SnapshotAt::Settle);

        let (mut r, id) = registered(&case, case.setup, 60.0);
        assert_eq!(r.close(), 1);
        let res = r.result(id).unwrap();
        assert_eq!(res.reason, Reason::Closed, "{}", case.name);
        assert_eq!(res.snapshot.error, None);

        let (mut r, id) = registered(&case, case.setup, 60.0);
        r.abort(id).unwrap();
        assert_eq!(
            r.result(id).unwrap().reason,
            Reason::Aborted,
            "{}",
            case.name
        );
        // After settling, nothing settles it again.
        assert_eq!(r.close(), 0);
        (case.make_true)(&mut r);
        assert_eq!(r.results(id).len(), 1);
    }
}

#[test]
fn already_true_rows_settle_at_registration() {
    for case in cases() {
        let mut r = Rig::new();
        (case.setup)(&mut r);
        (case.make_true)(&mut r);
        if matches!(case.name, "text" | "time") {
            continue; // a text must arrive after the call; time counts from the call
        }
        let id = r.register(&(case.wait)().timeout_s(60.0)).unwrap();
        let res = r
            .result(id)
            .unwrap_or_else(|| panic!("{}: not met at once", case.name));
        assert_eq!(res.reason, Reason::Met, "{}", case.name);
        assert_eq!(res.waited_sim_s, 0.0);
        assert_eq!(res.snapshot_at, SnapshotAt::Return, "{}", case.name);
    }
}

// --- a condition whose message has not arrived is never met ---------------------------------

#[test]
fn nothing_is_met_before_its_message_arrives() {
    // Each of these would hold for a zeroed/defaulted reading.
    let waits = [
        (Wait::altitude_m(1.0).op(Op::Le), position_mm(1000, 0)),
        (Wait::airspeed_m_s(100.0).op(Op::Le), vfr_hud(0.0)),
        (Wait::waypoint(5).op(Op::Le), mission_current(0)),
        (Wait::disarmed(), heartbeat(false, Mode::Hold)),
        (Wait::mode(Mode::Manual), heartbeat(false, Mode::Manual)),
        (
            Wait::landed(),
            landed_state(mav::MavLandedState::MAV_LANDED_STATE_ON_GROUND),
        ),
    ];
    for (w, arrives) in waits {
        let mut r = Rig::new();
        clock(&mut r);
        let id = r.register(&w.clone().timeout_s(10.0)).unwrap();
        r.run(2_000, 100);
        assert!(r.result(id).is_none(), "{w:?} met before its message");
        r.feed(arrives);
        assert_eq!(r.result(id).map(|x| x.reason), Some(Reason::Met), "{w:?}");
    }
}

#[test]
fn armed_needs_a_heartbeat_and_airspeed_waits_for_vfr_hud() {
    let mut r = Rig::new();
    clock(&mut r);
    let armed = r.register(&Wait::armed().timeout_s(10.0)).unwrap();
    let disarmed = r.register(&Wait::disarmed().timeout_s(10.0)).unwrap();
    r.tick(500);
    assert!(r.result(armed).is_none() && r.result(disarmed).is_none());
    r.feed(heartbeat(true, Mode::Takeoff));
    assert!(r.result(armed).unwrap().satisfied);
    assert!(r.result(disarmed).is_none());
}

#[test]
fn sim_time_and_time_wait_for_the_clock_and_count_from_the_first_sim_time() {
    let mut r = Rig::new();
    r.feed(heartbeat(false, Mode::Hold));
    let t = r.register(&Wait::time_s(2.0).timeout_s(10.0)).unwrap();
    let abs = r.register(&Wait::sim_time_s(0.0)).map(|_| ()).unwrap_err();
    assert_eq!(abs, EngineError::Spec(SpecError::MissingTimeout));
    let abs = r.register(&Wait::sim_time_s(0.0).timeout_s(1.0)).unwrap();
    assert!(r.result(abs).is_none(), "sim_time >= 0 before any clock");
    // Wall time passes, sim clock unknown: no timeout either.
    r.now = r.now + nexus_core::Duration::from_millis(60_000);
    r.feed(heartbeat(false, Mode::Hold));
    assert!(r.result(t).is_none() && r.result(abs).is_none());
    r.sim_ms = 50_000;
    r.feed(system_time(50_000));
    assert!(r.result(abs).unwrap().satisfied);
    // `time` starts at 50 s, the first sim time seen.
    r.tick(1_999);
    assert!(r.result(t).is_none());
    r.tick(1);
    let res = r.result(t).unwrap();
    assert_eq!((res.reason, res.waited_sim_s), (Reason::Met, 2.0));
    assert!(
        res.waited_wall.as_secs_f32() > 60.0,
        "wall time counts from registration"
    );
}

#[test]
#[cfg(feature = "ground-truth")] // the truth is read only with the feature
fn altitude_reads_ground_truth_not_relative_alt() {
    let mut r = Rig::booted();
    r.feed(ground_truth_mm(r.sim_ms, 488_000)); // on the pad
    alt(&mut r, 9_000); // relative_alt (and the estimate) jump
    r.feed(ground_truth_mm(r.sim_ms, 492_000)); // truly 4.0 m up
    let id = r.register(&Wait::altitude_m(5.0).timeout_s(10.0)).unwrap();
    assert!(
        r.result(id).is_none(),
        "relative_alt or the estimate was used over ground truth"
    );
    r.tick(10);
    r.feed(ground_truth_mm(r.sim_ms, 493_100));
    let res = r.result(id).unwrap();
    assert!(res.satisfied);
    assert_eq!(res.snapshot.height_source, Some(HeightSource::GroundTruth));
    assert!((res.snapshot.height_m.unwrap() - 5.1).abs() < 1e-3);
}

// --- text and since_seq -----------------------------------------------------------------------

#[test]
fn text_ignores_older_texts_by_default_and_since_seq_catches_them() {
    let mut r = Rig::booted();
    r.feed(statustext("Takeoff detected"));
    let snap = r.tel.snapshot(None);
    assert_eq!(snap.seq, 1);
    let default = r.register(&Wait::text("Takeoff").timeout_s(5.0)).unwrap();
    let caught = r
        .register(&Wait::text("Takeoff").since_seq(0).timeout_s(5.0))
        .unwrap();
    assert!(r.result(default).is_none(), "an older text counted");
    let res = r.result(caught).unwrap();
    assert_eq!(
        (res.reason, res.snapshot_at, res.waited_sim_s),
        (Reason::Met, SnapshotAt::Return, 0.0)
    );
    r.feed(statustext("Landing detected"));
    assert!(
        r.result(default).is_none(),
        "needle is a substring match, not any text"
    );
    r.feed(statustext("Takeoff detected"));
    assert!(r.result(default).unwrap().satisfied);
}

#[test]
fn since_seq_from_a_snapshot_catches_a_text_that_arrived_before_the_call() {
    let mut r = Rig::booted();
    r.feed(statustext("Armed by external command"));
    let id = r
        .register(&Wait::text("Takeoff detected").timeout_s(60.0))
        .unwrap();
    r.tick(100);
    r.cap(id).unwrap(); // the driver's wall limit: call again
    let seq = r.result(id).unwrap().snapshot.seq;
    assert_eq!(seq, 1);
    // Between the reply and the next call, the text arrives.
    r.feed(statustext("Takeoff detected"));
    let again = r
        .register(
            &Wait::text("Takeoff detected")
                .since_seq(seq)
                .timeout_s(60.0),
        )
        .unwrap();
    let res = r.result(again).unwrap();
    assert_eq!(
        (res.reason, res.snapshot_at),
        (Reason::Met, SnapshotAt::Return)
    );
    assert_eq!(res.snapshot.last_text.as_ref().unwrap().seq, 2);
}

#[test]
fn a_capped_text_wait_reports_the_seq_it_checked_so_nothing_is_missed() {
    let mut r = Rig::booted();
    let id = r.register(&Wait::text("Failsafe").timeout_s(60.0)).unwrap();
    // A text is accepted by telemetry but the cap comes before the next evaluation.
    assert!(r.tel.handle(r.now, &statustext("Failsafe activated")));
    r.cap(id).unwrap();
    let res = r.result(id).unwrap();
    assert_eq!(res.reason, Reason::Cap);
    assert_eq!(
        res.snapshot.seq, 0,
        "seq must be the last text the wait looked at"
    );
    let again = r
        .register(
            &Wait::text("Failsafe")
                .since_seq(res.snapshot.seq)
                .timeout_s(60.0),
        )
        .unwrap();
    assert!(r.result(again).unwrap().satisfied);
}

#[test]
fn text_matches_reassembled_chunks_and_a_text_wait_sees_each_text_once() {
    let full = "Arming denied: Resolve system health failures first\t";
    let mut r = Rig::booted();
    let id = r
        .register(&Wait::text("health failures").timeout_s(5.0))
        .unwrap();
    r.feed(statustext_chunk(&full[..50], 7, 0));
    assert!(r.result(id).is_none(), "half a text is not a text yet");
    r.feed(statustext_chunk(&full[50..], 7, 1));
    assert!(r.result(id).unwrap().satisfied);
}

#[test]
fn needle_length_is_checked_not_truncated() {
    let ok = "n".repeat(MAX_NEEDLE_LEN);
    assert_eq!(Wait::text(&ok).timeout_s(1.0).validate(), Ok(()));
    let long = "n".repeat(MAX_NEEDLE_LEN + 1);
    assert_eq!(
        Wait::text(&long).timeout_s(1.0).validate(),
        Err(SpecError::NeedleTooLong {
            len: MAX_NEEDLE_LEN + 1
        })
    );
    let mut r = Rig::booted();
    assert_eq!(
        r.register(&Wait::text(&long).timeout_s(1.0)),
        Err(EngineError::Spec(SpecError::NeedleTooLong {
            len: MAX_NEEDLE_LEN + 1
        }))
    );
}

// --- relative sim_time ---------------------------------------------------------------------

#[test]
fn relative_sim_time_needs_a_previous_settle() {
    let mut r = Rig::booted();
    assert_eq!(
        r.register(&Wait::sim_time_s(1.0).relative().timeout_s(5.0)),
        Err(EngineError::NoPreviousSettle)
    );
    assert_eq!(r.engine.last_settle_sim_ms(), None);
}

#[test]
fn relative_sim_time_counts_from_the_tick_the_previous_wait_settled() {
    let mut r = Rig::booted();
    let first = r.register(&Wait::time_s(2.0).timeout_s(5.0)).unwrap();
    r.run(2_000, 100); // settles at sim 3000
    assert!(r.result(first).unwrap().satisfied);
    assert_eq!(r.engine.last_settle_sim_ms(), Some(Some(3_000)));
    r.run(1_500, 100); // the call comes later, at 4500
    let rel = r
        .register(&Wait::sim_time_s(3.0).relative().timeout_s(10.0))
        .unwrap();
    r.run(1_400, 100); // 5900: 2.9 s after the settle
    assert!(r.result(rel).is_none());
    r.tick(100); // 6000
    let res = r.result(rel).unwrap();
    assert!(res.satisfied);
    assert_eq!(res.snapshot.sim_ms, Some(6_000));
    assert_eq!(
        res.waited_sim_s, 1.5,
        "counted from the settle, not from the call"
    );
    // A relative target already passed is met at once; <= and within apply too.
    let late = r
        .register(&Wait::sim_time_s(0.0).relative().timeout_s(1.0))
        .unwrap();
    assert_eq!(r.result(late).unwrap().snapshot_at, SnapshotAt::Return);
    r.tick(300);
    let le = r
        .register(&Wait::sim_time_s(0.2).relative().op(Op::Le).timeout_s(1.0))
        .unwrap();
    assert!(
        r.result(le).is_none(),
        "0.3 s since the settle: <= 0.2 does not hold"
    );
    r.run(1_000, 100);
    assert_eq!(r.result(le).unwrap().reason, Reason::Timeout);
}

// --- registration errors ------------------------------------------------------------------

#[test]
fn op_within_since_seq_and_relative_only_where_they_apply() {
    use ConditionKind as K;
    let no_op: [(Wait, ConditionKind); 6] = [
        (Wait::time_s(1.0), K::Time),
        (Wait::mode(Mode::Hold), K::Mode),
        (Wait::text("x"), K::Text),
        (Wait::armed(), K::Armed),
        (Wait::disarmed(), K::Disarmed),
        (Wait::landed(), K::Landed),
    ];
    for (w, k) in no_op {
        for op in [Op::Ge, Op::Le, Op::Eq] {
            assert_eq!(
                w.clone().op(op).timeout_s(1.0).validate(),
                Err(SpecError::OpNotApplicable(k))
            );
        }
        assert_eq!(
            w.clone().within(1.0).timeout_s(1.0).validate(),
            Err(SpecError::WithinNotApplicable(k))
        );
    }
    assert_eq!(
        Wait::altitude_m(1.0)
            .op(Op::Le)
            .within(0.1)
            .timeout_s(1.0)
            .validate(),
        Err(SpecError::OpWithWithin)
    );
    assert_eq!(
        Wait::armed().since_seq(3).timeout_s(1.0).validate(),
        Err(SpecError::SinceSeqNotApplicable(K::Armed))
    );
    assert_eq!(
        Wait::time_s(1.0).relative().timeout_s(1.0).validate(),
        Err(SpecError::RelativeNotApplicable(K::Time))
    );
    assert_eq!(
        Wait::mode_named("Hover").timeout_s(1.0).validate(),
        Err(SpecError::UnknownMode)
    );
    assert_eq!(
        Condition::mode_named("LOITER"),
        Condition::mode(Mode::Hold),
        "names are case-insensitive, aliases included"
    );
}

#[test]
fn bad_numbers_are_refused() {
    let cases = [
        (Wait::altitude_m(f32::NAN).timeout_s(1.0), "value"),
        (Wait::airspeed_m_s(f32::INFINITY).timeout_s(1.0), "value"),
        (Wait::sim_time_s(-1.0).timeout_s(1.0), "value"),
        (Wait::time_s(-0.5).timeout_s(1.0), "value"),
        (Wait::altitude_m(1.0).within(-0.1).timeout_s(1.0), "within"),
        (Wait::armed().timeout_s(f32::NAN), "timeout_s"),
        (Wait::armed().timeout_s(-1.0), "timeout_s"),
        (Wait::armed().timeout_s(5.0).hold_s(-1.0), "hold_s"),
        (
            Wait::armed().timeout_s(5.0).then_speedup(0.0),
            "then_speedup",
        ),
        (
            Wait::armed().timeout_s(5.0).then_speedup(f32::NAN),
            "then_speedup",
        ),
    ];
    for (w, field) in cases {
        assert_eq!(w.validate(), Err(SpecError::BadValue { field }), "{w:?}");
    }
    assert_eq!(Wait::altitude_m(-2.0).timeout_s(1.0).validate(), Ok(()));
}

#[test]
fn hold_must_be_shorter_than_timeout_and_not_on_text() {
    assert_eq!(
        Wait::armed().timeout_s(2.0).hold_s(2.0).validate(),
        Err(SpecError::HoldNotShorterThanTimeout)
    );
    assert_eq!(
        Wait::armed().timeout_s(2.0).hold_s(3.0).validate(),
        Err(SpecError::HoldNotShorterThanTimeout)
    );
    assert_eq!(
        Wait::armed().timeout_s(2.0).hold_s(1.999).validate(),
        Ok(())
    );
    assert_eq!(
        Wait::text("x").timeout_s(2.0).hold_s(1.0).validate(),
        Err(SpecError::HoldNotApplicable(ConditionKind::Text))
    );
    let mut r = Rig::booted();
    assert_eq!(
        r.register(&Wait::armed().timeout_s(2.0).hold_s(2.0)),
        Err(EngineError::Spec(SpecError::HoldNotShorterThanTimeout))
    );
    assert_eq!(r.engine.pending_count(), 0, "a refused wait takes no slot");
}
