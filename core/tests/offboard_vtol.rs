//! The airframe in the HEARTBEAT: `Action::VtolTransition` is one MAV_CMD_DO_VTOL_TRANSITION
//! (param1 4 to fixed-wing, 3 to multicopter, param2 0), PX4's refusal (TEMPORARILY_REJECTED
//! in Takeoff, Land, RTL, Orbit) and silence reported; on a vehicle that is no VTOL it is
//! refused before anything is sent, and so are a takeoff and a land on a rover.
#![cfg(feature = "vtol")]

mod offboard_rig;

use nexus_core::mav;
use nexus_core::offboard::{check_action_for, Command, OffboardError, OffboardEvent};
use nexus_core::{Action, VtolState};
use offboard_rig::{command_ack, Rig};

fn transitions(rig: &Rig) -> Vec<mav::COMMAND_LONG_DATA> {
    rig.sent
        .iter()
        .filter_map(|s| match &s.msg {
            mav::MavMessage::COMMAND_LONG(c)
                if c.command == mav::MavCmd::MAV_CMD_DO_VTOL_TRANSITION =>
            {
                Some(c.clone())
            }
            _ => None,
        })
        .collect()
}

/// A booted vehicle of `mavtype` that answers nothing by itself.
fn scripted(mavtype: mav::MavType) -> Rig {
    let mut rig = Rig::new();
    rig.auto_reply = false;
    rig.px4.mavtype = mavtype;
    rig.boot();
    rig
}

fn transition(rig: &mut Rig, to: VtolState) -> Result<(), OffboardError> {
    let now = rig.now();
    let r = rig.ob.apply(now, &rig.tel, &Action::VtolTransition { to });
    rig.pump();
    r
}

#[test]
fn one_command_each_way_and_an_accepted_one_is_done() {
    let mut rig = scripted(mav::MavType::MAV_TYPE_VTOL_FIXEDROTOR);
    transition(&mut rig, VtolState::Fw).unwrap();
    rig.deliver(command_ack(
        mav::MavCmd::MAV_CMD_DO_VTOL_TRANSITION,
        mav::MavResult::MAV_RESULT_ACCEPTED,
    ));
    transition(&mut rig, VtolState::Mc).unwrap();
    rig.deliver(command_ack(
        mav::MavCmd::MAV_CMD_DO_VTOL_TRANSITION,
        mav::MavResult::MAV_RESULT_ACCEPTED,
    ));
    rig.run_ms(10_000);
    let sent = transitions(&rig);
    let params: Vec<(f32, f32)> = sent.iter().map(|c| (c.param1, c.param2)).collect();
    assert_eq!(params, [(4.0, 0.0), (3.0, 0.0)]);
    assert!(sent
        .iter()
        .all(|c| (c.target_system, c.target_component) == (1, 1)));
    assert!(rig
        .events_only()
        .iter()
        .all(|e| !matches!(e, OffboardEvent::Refused(_) | OffboardEvent::NoAck(_))));
}

#[test]
fn a_rejection_is_a_refusal_and_silence_is_no_answer() {
    // PX4 refuses a front transition in Takeoff mode, Land, RTL and Orbit.
    let mut rig = scripted(mav::MavType::MAV_TYPE_VTOL_TAILSITTER_DUOROTOR);
    transition(&mut rig, VtolState::Fw).unwrap();
    rig.deliver(command_ack(
        mav::MavCmd::MAV_CMD_DO_VTOL_TRANSITION,
        mav::MavResult::MAV_RESULT_TEMPORARILY_REJECTED,
    ));
    rig.run_ms(1_000);
    let r = rig
        .events_only()
        .into_iter()
        .find_map(|e| match e {
            OffboardEvent::Refused(r) => Some(r),
            _ => None,
        })
        .expect("the rejection reported");
    assert_eq!(r.command, Command::VtolTransition);
    assert_eq!(
        r.to_string(),
        "VTOL transition refused (TEMPORARILY_REJECTED, 1)"
    );
    // Unanswered: once, as no answer; never sent again.
    let mut rig = scripted(mav::MavType::MAV_TYPE_VTOL_FIXEDROTOR);
    transition(&mut rig, VtolState::Mc).unwrap();
    rig.run_ms(10_000);
    let events = rig.events_only();
    let silent = OffboardEvent::NoAck(Command::VtolTransition);
    assert_eq!(
        events.iter().filter(|e| **e == silent).count(),
        1,
        "{events:?}"
    );
    assert_eq!(
        silent.to_string(),
        "no COMMAND_ACK for VTOL transition within 5 s"
    );
    assert_eq!(transitions(&rig).len(), 1);
}

#[test]
fn a_vehicle_that_is_no_vtol_is_refused_before_anything_is_sent() {
    for (t, kind) in [
        (
            mav::MavType::MAV_TYPE_QUADROTOR,
            "a multicopter (HEARTBEAT type 2)",
        ),
        (
            mav::MavType::MAV_TYPE_GROUND_ROVER,
            "a rover (HEARTBEAT type 10)",
        ),
        (
            mav::MavType::MAV_TYPE_FIXED_WING,
            "a fixed-wing airplane (HEARTBEAT type 1)",
        ),
    ] {
        let mut rig = scripted(t);
        let before = rig.sent.len();
        let e = transition(&mut rig, VtolState::Fw).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "vtol_transition: the vehicle is {kind}: only a VTOL transitions (PX4 would \
                 not answer)"
            )
        );
        rig.run_ms(1_000);
        assert!(transitions(&rig).is_empty());
        assert!(rig.sent[before..]
            .iter()
            .all(|s| matches!(s.msg, mav::MavMessage::HEARTBEAT(_))));
    }
    // A transition goes to fw or mc, nothing else.
    let mut rig = scripted(mav::MavType::MAV_TYPE_VTOL_FIXEDROTOR);
    for to in [VtolState::Undefined, VtolState::TransitionToFw] {
        assert_eq!(
            transition(&mut rig, to),
            Err(OffboardError::InvalidArgument(
                "a VTOL transition goes to fw or mc"
            ))
        );
    }
    assert!(transitions(&rig).is_empty());
}

#[test]
fn a_rover_takes_no_takeoff_and_no_land() {
    let mut rig = scripted(mav::MavType::MAV_TYPE_GROUND_ROVER);
    let before = rig.sent.len();
    let now = rig.now();
    let e = rig
        .ob
        .apply(now, &rig.tel, &Action::Takeoff { alt_m: 5.0 })
        .unwrap_err();
    assert!(matches!(
        e,
        OffboardError::NotForVehicle {
            verb: "takeoff",
            mav_type: 10,
            ..
        }
    ));
    assert!(e.to_string().starts_with(
        "takeoff: the vehicle is a rover (HEARTBEAT type 10): a rover does not take off"
    ));
    let e = rig.ob.apply(now, &rig.tel, &Action::Land).unwrap_err();
    assert!(e.to_string().starts_with(
        "land: the vehicle is a rover (HEARTBEAT type 10): a rover does not land (PX4's Land \
         mode stops it and disarms it)"
    ));
    rig.run_ms(2_000);
    // Neither MIS_TAKEOFF_ALT, nor Takeoff or Land mode, nor an arm went out.
    assert!(rig.sent[before..]
        .iter()
        .all(|s| matches!(s.msg, mav::MavMessage::HEARTBEAT(_))));
    assert!(rig.ob.pending().mode.is_none());
    // What a rover does take: a mission, Hold, RTL, goto, arming.
    for a in [
        Action::Hold,
        Action::ReturnToLaunch,
        Action::StartMission,
        Action::Arm,
    ] {
        assert_eq!(check_action_for(&a, 10), Ok(()), "{a:?}");
    }
    // Before the first heartbeat nothing is known: PX4 answers for itself.
    let mut rig = Rig::new();
    rig.auto_reply = false;
    let now = rig.now();
    assert_eq!(rig.ob.apply(now, &rig.tel, &Action::Land), Ok(()));
}

#[test]
fn the_check_by_type_covers_every_airframe() {
    let takeoff = Action::Takeoff { alt_m: 5.0 };
    let fw = Action::VtolTransition { to: VtolState::Fw };
    // PX4's SIH airframes: quad 2, hex 13, airplane 1, tailsitter 19, standard VTOL 22, rover 10.
    for (t, takes_off, transitions) in [
        (2, true, false),
        (13, true, false),
        (1, true, false),
        (19, true, true),
        (22, true, true),
        (20, true, true),
        (10, false, false),
    ] {
        assert_eq!(check_action_for(&takeoff, t).is_ok(), takes_off, "{t}");
        assert_eq!(check_action_for(&Action::Land, t).is_ok(), takes_off, "{t}");
        assert_eq!(check_action_for(&fw, t).is_ok(), transitions, "{t}");
    }
}
