//! `apply` maps every flight-program action onto its verb; Speedup is refused as the driver's.

mod offboard_rig;

use nexus_core::action::{param_name, Action};
use nexus_core::mav;
use nexus_core::offboard::{OffboardError, Pending};
use nexus_core::{Mode, RcSticks};
use offboard_rig::{box_mission, Rig};

fn apply(rig: &mut Rig, a: Action) -> Result<(), OffboardError> {
    let now = rig.now();
    let r = rig.ob.apply(now, &rig.tel, &a);
    rig.pump();
    r
}

fn last_sent(rig: &Rig) -> mav::MavMessage {
    rig.sent
        .iter()
        .rev()
        .find(|s| {
            !matches!(
                s.msg,
                mav::MavMessage::HEARTBEAT(_) | mav::MavMessage::MANUAL_CONTROL(_)
            )
        })
        .unwrap()
        .msg
        .clone()
}

#[test]
fn every_action_maps_onto_its_verb() {
    let mut rig = Rig::new();
    rig.auto_reply = false;
    rig.boot();
    apply(&mut rig, Action::None).unwrap();
    assert_eq!(rig.ob.pending(), Pending::default());

    apply(&mut rig, Action::SetMode(Mode::Altitude)).unwrap();
    assert_eq!(rig.ob.pending().mode, Some(Mode::Altitude));
    assert_eq!(
        rig.ob.rc(),
        Some(RcSticks::NEUTRAL),
        "manual mode starts the stream"
    );
    apply(&mut rig, Action::Hold).unwrap();
    // PX4 already reports Hold: nothing to command.
    assert_eq!(rig.ob.pending().mode, None);
    assert!(rig.mode_commands().iter().all(|(_, m)| *m != Mode::Hold));
    apply(&mut rig, Action::ReturnToLaunch).unwrap();
    assert_eq!(rig.ob.pending().mode, Some(Mode::Rtl));
    apply(&mut rig, Action::Land).unwrap();
    assert_eq!(rig.ob.pending().mode, Some(Mode::Land));

    apply(&mut rig, Action::Arm).unwrap();
    assert!(rig.ob.pending().arm);
    apply(&mut rig, Action::Disarm).unwrap();
    assert!(!rig.ob.pending().arm);
    assert!(matches!(last_sent(&rig), mav::MavMessage::COMMAND_LONG(c) if c.param1 == 0.0));
    apply(&mut rig, Action::ArmGesture).unwrap();
    assert!(rig.ob.pending().arm);

    apply(
        &mut rig,
        Action::Rc(RcSticks {
            roll: 0.2,
            pitch: -0.4,
            throttle: 0.7,
            yaw: 2.0,
        }),
    )
    .unwrap();
    rig.run_ms(100);
    apply(&mut rig, Action::Disarm).unwrap(); // stop the gesture taking over the stream
    rig.run_ms(100);
    let rc = rig.sent.iter().rev().find_map(|s| match &s.msg {
        mav::MavMessage::MANUAL_CONTROL(m) => Some((m.x, m.y, m.z, m.r)),
        _ => None,
    });
    assert_eq!(rc, Some((-400, 200, 700, 1000)));
    apply(&mut rig, Action::StopRc).unwrap();
    assert_eq!(rig.ob.rc(), None);

    apply(
        &mut rig,
        Action::ParamReal {
            name: param_name("MPC_XY_CRUISE").unwrap(),
            value: 7.5,
        },
    )
    .unwrap();
    assert!(matches!(last_sent(&rig), mav::MavMessage::PARAM_SET(p) if p.param_value == 7.5));
    apply(
        &mut rig,
        Action::ParamInt {
            name: param_name("COM_RC_IN_MODE").unwrap(),
            value: 1,
        },
    )
    .unwrap();
    assert!(
        matches!(last_sent(&rig), mav::MavMessage::PARAM_SET(p) if p.param_value.to_bits() == 1)
    );

    apply(
        &mut rig,
        Action::Goto {
            x_m: 1.0,
            y_m: 2.0,
            z_m: 3.0,
            yaw_rad: None,
        },
    )
    .unwrap();
    assert!(
        matches!(last_sent(&rig), mav::MavMessage::COMMAND_INT(c) if c.command == mav::MavCmd::MAV_CMD_DO_REPOSITION)
    );

    assert_eq!(
        apply(&mut rig, Action::UploadMission),
        Err(OffboardError::NoMission)
    );
    rig.ob.lodge_mission(&box_mission()).unwrap();
    apply(&mut rig, Action::UploadMission).unwrap();
    assert!(matches!(last_sent(&rig), mav::MavMessage::MISSION_COUNT(c) if c.count == 6));

    apply(&mut rig, Action::StartMission).unwrap();
    assert!(rig.ob.pending().restart && rig.ob.pending().arm);
    assert_eq!(rig.ob.pending().mode, Some(Mode::Mission));
    apply(&mut rig, Action::PauseMission).unwrap();
    assert_eq!(rig.ob.pending().mode, None, "Hold, which PX4 reports");
    assert!(!rig.ob.pending().restart, "a pause drops the pending start");
    apply(&mut rig, Action::ResumeMission).unwrap();
    assert_eq!(rig.ob.pending().mode, Some(Mode::Mission));
    assert!(!rig.ob.pending().restart, "resume does not restart");

    apply(&mut rig, Action::Takeoff { alt_m: 4.0 }).unwrap();
    assert_eq!(rig.ob.pending().mode, Some(Mode::Takeoff));
    assert!(rig.ob.pending().arm);
    assert_eq!(
        apply(&mut rig, Action::Takeoff { alt_m: -1.0 }),
        Err(OffboardError::InvalidArgument(
            "takeoff altitude must be finite and positive"
        ))
    );

    let err = apply(&mut rig, Action::Speedup(10.0)).unwrap_err();
    assert_eq!(err, OffboardError::DriverAction);
    assert!(err.to_string().contains("driver"));
}

#[test]
fn a_full_outbox_is_an_error_not_a_loss() {
    let mut rig = Rig::new();
    rig.boot();
    // Disarms are one-shot frames (parameter sets are too without `confirmed-params`).
    for _ in 0..nexus_core::offboard::OUTBOX_LEN {
        rig.ob.disarm().unwrap();
    }
    assert_eq!(rig.ob.disarm(), Err(OffboardError::OutboxFull));
    #[cfg(not(feature = "confirmed-params"))]
    assert_eq!(
        rig.ob
            .set_param("SYS_AUTOSTART", nexus_core::action::ParamValue::Int(99)),
        Err(OffboardError::OutboxFull)
    );
    rig.pump();
    let disarms = rig
        .sent
        .iter()
        .filter(|s| {
            matches!(&s.msg, mav::MavMessage::COMMAND_LONG(c)
                if c.command == mav::MavCmd::MAV_CMD_COMPONENT_ARM_DISARM && c.param1 == 0.0)
        })
        .count();
    assert_eq!(disarms, nexus_core::offboard::OUTBOX_LEN);
    rig.ob.disarm().unwrap();
}
