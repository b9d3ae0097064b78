//! `Action::InjectFailure`: one MAV_CMD_INJECT_FAILURE with the unit, kind and instance; PX4's
//! refusal (SYS_FAILURE_EN 0 denies it) is reported with its result, and PX4's silence (it
//! sends no COMMAND_ACK for a GPS or RC-signal failure) is reported as no answer.

mod offboard_rig;

use nexus_core::mav;
use nexus_core::offboard::{Command, OffboardEvent};
use nexus_core::Action;
use offboard_rig::{command_ack, Rig};

fn injected(rig: &Rig) -> Vec<mav::COMMAND_LONG_DATA> {
    rig.sent
        .iter()
        .filter_map(|s| match &s.msg {
            mav::MavMessage::COMMAND_LONG(c)
                if c.command == mav::MavCmd::MAV_CMD_INJECT_FAILURE =>
            {
                Some(c.clone())
            }
            _ => None,
        })
        .collect()
}

fn scripted() -> Rig {
    let mut rig = Rig::new();
    rig.auto_reply = false;
    rig.boot();
    rig
}

fn inject(rig: &mut Rig, unit: u8, kind: u8, instance: u8) {
    let now = rig.now();
    let a = Action::InjectFailure {
        unit,
        kind,
        instance,
    };
    rig.ob.apply(now, &rig.tel, &a).unwrap();
    rig.pump();
}

#[test]
fn the_command_goes_out_once_with_its_numbers() {
    let mut rig = scripted();
    inject(&mut rig, 100, 1, 0);
    let sent = injected(&rig);
    assert_eq!(sent.len(), 1);
    let c = &sent[0];
    assert_eq!((c.param1, c.param2, c.param3), (100.0, 1.0, 0.0));
    assert_eq!((c.target_system, c.target_component), (1, 1));
    // PX4 accepts a battery failure: nothing to report, and it is never sent again.
    rig.deliver(command_ack(
        mav::MavCmd::MAV_CMD_INJECT_FAILURE,
        mav::MavResult::MAV_RESULT_ACCEPTED,
    ));
    rig.run_ms(5_000);
    assert_eq!(injected(&rig).len(), 1);
    assert!(rig
        .events_only()
        .iter()
        .all(|e| !matches!(e, OffboardEvent::Refused(_) | OffboardEvent::NoAck(_))));
}

#[test]
fn a_denial_is_a_refusal_and_silence_is_no_answer() {
    let mut rig = scripted();
    inject(&mut rig, 4, 1, 0);
    rig.deliver(command_ack(
        mav::MavCmd::MAV_CMD_INJECT_FAILURE,
        mav::MavResult::MAV_RESULT_DENIED,
    ));
    rig.run_ms(1_000);
    let refused = rig.events_only().into_iter().find_map(|e| match e {
        OffboardEvent::Refused(r) => Some(r),
        _ => None,
    });
    let r = refused.expect("the denial reported");
    assert_eq!(r.command, Command::InjectFailure);
    assert_eq!(r.result, Some(mav::MavResult::MAV_RESULT_DENIED as u8));
    assert!(
        r.to_string().starts_with("failure injection refused"),
        "{r}"
    );
    // PX4 leaves an RC-signal failure unanswered: reported once, as no answer.
    let mut rig = scripted();
    inject(&mut rig, 104, 1, 0);
    rig.run_ms(10_000);
    let events = rig.events_only();
    assert_eq!(
        events
            .iter()
            .filter(|e| **e == OffboardEvent::NoAck(Command::InjectFailure))
            .count(),
        1,
        "{events:?}"
    );
    assert!(events
        .iter()
        .all(|e| !matches!(e, OffboardEvent::Refused(_))));
    assert_eq!(injected(&rig).len(), 1);
}
