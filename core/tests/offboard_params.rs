//! Confirmed parameter sets against the scripted PX4: the echo of the value confirms, a lost
//! PARAM_SET is resent on the retry timer, a PARAM_ERROR fails the set at once with PX4's code,
//! and an echo of another value is no confirmation.

#![cfg(feature = "confirmed-params")]

mod offboard_rig;

use nexus_core::action::ParamValue;
use nexus_core::mav;
use nexus_core::offboard::{
    OffboardError, OffboardEvent, ParamSetEnd, ParamSetOutcome, PARAM_SETS_LEN,
};
use offboard_rig::Rig;

fn param_sets(rig: &Rig) -> Vec<(u64, String, u32)> {
    rig.sent
        .iter()
        .filter_map(|s| match &s.msg {
            mav::MavMessage::PARAM_SET(p) => Some((
                s.sim_ms,
                p.param_id.to_str().unwrap_or("").to_string(),
                p.param_value.to_bits(),
            )),
            _ => None,
        })
        .collect()
}

fn outcomes(rig: &Rig) -> Vec<(u64, ParamSetOutcome)> {
    rig.events
        .iter()
        .filter_map(|(t, e)| match e {
            OffboardEvent::ParamSet(p) => Some((*t, p.clone())),
            _ => None,
        })
        .collect()
}

#[test]
fn the_echo_confirms_once_sent_and_is_a_round_trip_sample() {
    let mut rig = Rig::new();
    rig.boot();
    rig.ob
        .set_param("COM_RC_IN_MODE", ParamValue::Int(4))
        .unwrap();
    assert!(rig.ob.param_set_pending("COM_RC_IN_MODE"));
    assert!(rig.run_until(10_000, |r| r.ob.param_sets_pending() == 0));
    let sets = param_sets(&rig);
    assert_eq!(sets.len(), 1, "{sets:?}");
    assert_eq!(sets[0].2, 4, "the int's bits in the float field");
    let o = outcomes(&rig);
    assert_eq!(o.len(), 1, "{o:?}");
    assert_eq!(o[0].1.end, ParamSetEnd::Confirmed);
    assert_eq!(o[0].1.int_value(), Some(4));
    assert_eq!(o[0].1.to_string(), "PX4 stored COM_RC_IN_MODE = 4");
    assert!(rig.ob.link_rtt().samples() >= 1);
    // Nothing more goes out for it.
    rig.run_ms(10_000);
    assert_eq!(param_sets(&rig).len(), 1);
}

#[test]
fn a_lost_set_is_resent_on_the_retry_timer() {
    let mut rig = Rig::new();
    rig.boot();
    rig.px4.lose_param_sets = 2;
    let timer_ms = rig.ob.retry_timers_ms().0;
    rig.ob
        .set_param("MPC_XY_VEL_MAX", ParamValue::Real(7.5))
        .unwrap();
    assert!(rig.run_until(30_000, |r| r.ob.param_sets_pending() == 0));
    let sets = param_sets(&rig);
    assert_eq!(sets.len(), 3, "two lost, the third answered: {sets:?}");
    assert!(sets
        .iter()
        .all(|s| s.1 == "MPC_XY_VEL_MAX" && s.2 == 7.5f32.to_bits()));
    // Resent no sooner than the timer, and backing off (no sample yet: the floor, doubled).
    let gap1 = sets[1].0 - sets[0].0;
    let gap2 = sets[2].0 - sets[1].0;
    assert!(
        gap1 >= timer_ms && gap1 < timer_ms + 200,
        "{gap1} vs {timer_ms}"
    );
    assert!(
        gap2 >= 2 * timer_ms && gap2 < 2 * timer_ms + 200,
        "{gap2} vs {timer_ms}"
    );
    // Karn: the answer to a resent set is no sample.
    assert_eq!(rig.ob.link_rtt().samples(), 0);
    let o = outcomes(&rig);
    assert_eq!(o.len(), 1);
    assert!(o[0].1.confirmed());
    assert_eq!(o[0].1.real_value(), Some(7.5));
}

#[test]
fn a_set_never_answered_is_given_up_after_the_resend_limit() {
    let mut rig = Rig::new();
    rig.boot();
    rig.px4.lose_param_sets = u8::MAX;
    rig.ob.set_param("NAV_DLL_ACT", ParamValue::Int(2)).unwrap();
    assert!(rig.run_until(600_000, |r| r.ob.param_sets_pending() == 0));
    let sends = param_sets(&rig).len();
    assert_eq!(sends, rig.ob.config().max_sends as usize);
    let o = outcomes(&rig);
    assert_eq!(o.len(), 1);
    assert_eq!(o[0].1.end, ParamSetEnd::GaveUp { sends: sends as u8 });
}

#[test]
fn param_error_fails_the_set_at_once_with_px4s_code() {
    let mut rig = Rig::new();
    rig.boot();
    rig.px4.param_errors = vec![
        (
            "COM_FOO".into(),
            mav::MavParamError::MAV_PARAM_ERROR_DOES_NOT_EXIST,
        ),
        (
            "MPC_XY_CRUISE".into(),
            mav::MavParamError::MAV_PARAM_ERROR_TYPE_MISMATCH,
        ),
    ];
    rig.ob.set_param("COM_FOO", ParamValue::Int(3)).unwrap();
    rig.ob
        .set_param("MPC_XY_CRUISE", ParamValue::Int(5))
        .unwrap();
    let t0 = rig.sim_ms();
    assert!(rig.run_until(10_000, |r| r.ob.param_sets_pending() == 0));
    assert_eq!(param_sets(&rig).len(), 2, "each sent once, never resent");
    let o = outcomes(&rig);
    assert_eq!(o.len(), 2, "{o:?}");
    let foo = o.iter().find(|(_, p)| p.name == "COM_FOO").unwrap();
    assert_eq!(foo.1.end, ParamSetEnd::Refused { error: 1 });
    assert_eq!(foo.1.to_string(), "PX4 refused COM_FOO = 3: DOES_NOT_EXIST");
    assert!(
        foo.0 - t0 < 500,
        "at once, not after a timer: {} ms",
        foo.0 - t0
    );
    let cruise = o.iter().find(|(_, p)| p.name == "MPC_XY_CRUISE").unwrap();
    assert_eq!(cruise.1.end, ParamSetEnd::Refused { error: 7 });
    assert!(cruise.1.to_string().ends_with("TYPE_MISMATCH"));
    rig.run_ms(10_000);
    assert_eq!(param_sets(&rig).len(), 2);
}

#[test]
fn an_echo_of_another_value_is_no_confirmation() {
    let mut rig = Rig::new();
    rig.boot();
    rig.px4.param_echo_bits = Some(1.0f32.to_bits());
    rig.ob
        .set_param("MPC_Z_VEL_MAX_UP", ParamValue::Real(3.0))
        .unwrap();
    rig.run_ms(rig.ob.retry_timers_ms().0 + 100);
    assert!(rig.ob.param_set_pending("MPC_Z_VEL_MAX_UP"));
    assert!(outcomes(&rig).is_empty());
    assert!(
        param_sets(&rig).len() >= 2,
        "resent: {:?}",
        param_sets(&rig)
    );
    // PX4 now stores it: the next echo confirms.
    rig.px4.param_echo_bits = None;
    assert!(rig.run_until(30_000, |r| r.ob.param_sets_pending() == 0));
    let o = outcomes(&rig);
    assert_eq!(o.len(), 1);
    assert!(o[0].1.confirmed());
    assert_eq!(o[0].1.real_value(), Some(3.0));
}

#[test]
fn running_out_of_outstanding_sets_is_an_error_the_caller_sees() {
    let mut rig = Rig::new();
    // Not connected: nothing goes out, so every set stays outstanding.
    for i in 0..PARAM_SETS_LEN {
        rig.ob
            .set_param(&format!("P{i}"), ParamValue::Int(i as i32))
            .unwrap();
    }
    // A set of a name already outstanding replaces its value and takes no room.
    rig.ob.set_param("P0", ParamValue::Int(9)).unwrap();
    assert_eq!(
        rig.ob.set_param("ONE_MORE", ParamValue::Int(1)),
        Err(OffboardError::ParamSetsFull)
    );
    rig.boot();
    assert!(rig.run_until(10_000, |r| r.ob.param_sets_pending() == 0));
    let sets = param_sets(&rig);
    assert_eq!(sets.len(), PARAM_SETS_LEN, "{sets:?}");
    assert!(sets.iter().any(|s| s.1 == "P0" && s.2 == 9));
    assert!(outcomes(&rig).iter().all(|(_, p)| p.confirmed()));
}

/// A takeoff's altitude is stored before Takeoff mode and the arm go out: with the PARAM_SET
/// lost twice, neither is sent until PX4 echoed MIS_TAKEOFF_ALT, and the climb ends at the
/// height asked for, not PX4's default.
#[test]
fn a_takeoff_waits_for_its_altitude_to_be_stored() {
    let mut rig = Rig::new();
    rig.px4.ready_at_ms = 0;
    rig.px4.arm_ok_at_ms = 0;
    rig.boot();
    rig.px4.lose_param_sets = 2;
    rig.ob.takeoff(rig.now(), &rig.tel, 7.0).unwrap();
    assert!(rig.run_until(60_000, |r| r.ob.at_target(&r.tel)));
    let sets = param_sets(&rig);
    assert_eq!(sets.len(), 3, "two lost, the third echoed: {sets:?}");
    let stored_at = sets[2].0;
    let modes = rig.mode_commands();
    assert!(!modes.is_empty());
    assert!(
        modes.iter().all(|(t, _)| *t >= stored_at),
        "Takeoff mode before the altitude was stored at {stored_at}: {modes:?}"
    );
    let arms = rig.arm_commands();
    assert!(!arms.is_empty());
    assert!(
        arms.iter().all(|(t, _)| *t >= stored_at),
        "armed before the altitude was stored at {stored_at}: {arms:?}"
    );
    assert_eq!(rig.px4.takeoff_alt_m, 7.0);
    rig.run_ms(5_000);
    assert!((rig.px4.pos.2 - 7.0).abs() < 0.1, "{:?}", rig.px4.pos);
}
