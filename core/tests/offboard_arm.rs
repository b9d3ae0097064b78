//! Modes and arming against a scripted PX4 with docs/px4-wire.md's timings: ordering, refusals
//! with their texts, bounded give-up, the stick gesture, and requests that clear when PX4
//! moves on by itself.

mod offboard_rig;

use nexus_core::mav;
use nexus_core::offboard::{
    ArmWait, Command, GaveUp, GiveUpReason, OffboardConfig, OffboardEvent, Refusal, Request,
};
use nexus_core::{LandedState, Mode, RcSticks};
use offboard_rig::Rig;

const DENIED: &str = "Arming denied: Resolve system health failures first";

fn no_settle() -> OffboardConfig {
    OffboardConfig {
        wait_clear_s: 0.0,
        ..OffboardConfig::default()
    }
}

#[test]
fn takeoff_arms_only_after_the_heartbeat_shows_takeoff() {
    let mut rig = Rig::with_config(no_settle());
    rig.px4.ready_at_ms = 0;
    rig.px4.arm_ok_at_ms = 0;
    rig.boot();
    let t0 = rig.sim_ms();
    rig.ob.takeoff(rig.now(), &rig.tel, 2.5).unwrap();
    rig.pump();
    assert!(rig.run_until(30_000, |r| r.ob.at_target(&r.tel)));

    // MIS_TAKEOFF_ALT first (REAL32 2.5), then the mode, then the arm.
    let first = &rig.sent_where(|m| !matches!(m, mav::MavMessage::HEARTBEAT(_)))[0];
    match &first.msg {
        mav::MavMessage::PARAM_SET(p) => {
            assert_eq!(p.param_id.to_str().unwrap(), "MIS_TAKEOFF_ALT");
            assert_eq!(p.param_value, 2.5);
            assert_eq!(p.param_type, mav::MavParamType::MAV_PARAM_TYPE_REAL32);
        }
        other => panic!("first command was {other:?}"),
    }
    let modes = rig.mode_commands();
    assert_eq!(modes[0], (t0, Mode::Takeoff));
    let shown = rig.first_heartbeat_in(Mode::Takeoff).unwrap();
    // The ack came at once; the heartbeat lags it: the arm waits for the heartbeat.
    assert!(shown > t0, "heartbeat lag expected: {shown} vs {t0}");
    let arms = rig.arm_commands();
    assert_eq!(arms.len(), 1, "{arms:?}");
    assert!(arms[0].1);
    assert!(
        arms[0].0 >= shown,
        "armed at {} before Takeoff showed at {shown}",
        arms[0].0
    );
    // Takeoff was never re-commanded once shown, and not at all after the hand-over to Hold.
    assert!(
        modes.iter().all(|(t, m)| *m == Mode::Takeoff && *t < shown),
        "{modes:?}"
    );
    rig.run_ms(5_000);
    assert_eq!(rig.ob.mode(&rig.tel), Some(Mode::Hold));
    assert!(rig.ob.is_armed(&rig.tel));
    assert_eq!(rig.mode_commands().len(), modes.len());
    assert!(rig.ob.pending().mode.is_none() && !rig.ob.pending().arm);
}

#[test]
fn the_arm_waits_out_the_settle_window_from_the_request() {
    let mut rig = Rig::new();
    rig.px4.ready_at_ms = 0;
    rig.boot();
    let t0 = rig.sim_ms();
    rig.ob.takeoff(rig.now(), &rig.tel, 2.5).unwrap();
    rig.run_ms(2_000);
    assert!(matches!(
        rig.ob.arm_wait(rig.now(), &rig.tel),
        Some(ArmWait::Settling { remaining_ms }) if remaining_ms > 2_000 && remaining_ms <= 3_100
    ));
    assert!(rig.run_until(20_000, |r| r.ob.is_armed(&r.tel)));
    let arms = rig.arm_commands();
    assert_eq!(arms.len(), 1);
    assert!(arms[0].0 >= t0 + 5_000, "{} vs {t0}", arms[0].0);
    assert!(arms[0].0 <= t0 + 5_200, "{} vs {t0}", arms[0].0);
}

fn refused_then_accepted(text_before_ack: bool) {
    let mut rig = Rig::new();
    rig.px4.ready_at_ms = 0; // PX4 claims ready, but refuses the arm until 12 s
    rig.px4.arm_ok_at_ms = 12_000;
    rig.px4.text_before_ack = text_before_ack;
    rig.boot();
    let t0 = rig.sim_ms();
    rig.ob.arm(rig.now(), &rig.tel);
    assert!(rig.run_until(40_000, |r| r.ob.is_armed(&r.tel)));
    rig.run_ms(1_000);

    let arms = rig.arm_commands();
    assert_eq!(arms.len(), 2, "{arms:?}");
    assert!(arms[0].0 >= t0 + 5_000);
    // The refusal restarts the failure-free window: the retry waits wait_clear_s again.
    assert!(arms[1].0 >= arms[0].0 + 5_000, "{arms:?}");
    let want = Refusal {
        command: Command::Arm,
        result: Some(1),
        text: DENIED.try_into().unwrap(),
    };
    let refusals: Vec<_> = rig
        .events_only()
        .into_iter()
        .filter(|e| matches!(e, OffboardEvent::Refused(_) | OffboardEvent::GaveUp(_)))
        .collect();
    assert_eq!(refusals, vec![OffboardEvent::Refused(want.clone())]);
    assert_eq!(rig.ob.last_refusal(), Some(&want));
    assert_eq!(
        want.to_string(),
        format!("arm refused (TEMPORARILY_REJECTED, 1): {DENIED}")
    );
}

#[test]
fn arm_refused_then_accepted_text_before_ack() {
    refused_then_accepted(true);
}

#[test]
fn arm_refused_then_accepted_text_after_ack() {
    refused_then_accepted(false);
}

#[test]
fn arm_gives_up_after_bounded_refusals() {
    let mut rig = Rig::with_config(OffboardConfig {
        max_refusals: 3,
        ..OffboardConfig::default()
    });
    rig.px4.ready_at_ms = 0;
    rig.px4.arm_ok_at_ms = u64::MAX;
    rig.boot();
    rig.ob.arm(rig.now(), &rig.tel);
    rig.run_ms(60_000);
    assert_eq!(rig.arm_commands().len(), 3);
    let ev = rig.events_only();
    assert_eq!(
        ev.iter()
            .filter(|e| matches!(e, OffboardEvent::Refused(r) if r.text == DENIED))
            .count(),
        3
    );
    assert_eq!(
        ev.last(),
        Some(&OffboardEvent::GaveUp(GaveUp {
            request: Request::Arm,
            reason: GiveUpReason::Refused { refusals: 3 },
            dropped_arm: false,
            dropped_start: false,
        }))
    );
    assert!(!rig.ob.pending().arm);
    assert!(!rig.ob.is_armed(&rig.tel));
}

#[test]
fn prearm_failures_hold_the_arm_back() {
    let mut rig = Rig::new();
    rig.px4.ready_at_ms = 20_000; // SYS_STATUS prearm bit clear until then
    rig.boot();
    rig.ob.arm(rig.now(), &rig.tel);
    rig.run_ms(15_000);
    assert!(rig.arm_commands().is_empty());
    assert!(matches!(
        rig.ob.arm_wait(rig.now(), &rig.tel),
        Some(ArmWait::Settling { remaining_ms }) if remaining_ms >= 4_800
    ));
    assert!(rig.run_until(20_000, |r| r.ob.is_armed(&r.tel)));
    let arms = rig.arm_commands();
    assert_eq!(arms.len(), 1);
    // 5 s after the last SYS_STATUS with the prearm bit clear (19.9 s).
    assert!(arms[0].0 >= 24_900 && arms[0].0 <= 25_100, "{arms:?}");
    assert!(rig.ob.last_refusal().is_none());
}

#[test]
fn arm_waits_for_a_position() {
    let mut rig = Rig::with_config(no_settle());
    rig.px4.ready_at_ms = 0;
    rig.px4.pos_at_ms = 8_000;
    assert!(rig.run_until(10_000, |r| r.tel.connected()));
    rig.ob.arm(rig.now(), &rig.tel);
    rig.step();
    assert_eq!(
        rig.ob.arm_wait(rig.now(), &rig.tel),
        Some(ArmWait::NoPosition)
    );
    assert!(rig.run_until(20_000, |r| r.ob.is_armed(&r.tel)));
    assert!(rig.arm_commands()[0].0 >= 8_000);
}

#[test]
fn gesture_sequence_on_the_wire() {
    let mut rig = Rig::new();
    rig.px4.ready_at_ms = 6_000;
    rig.boot();
    rig.ob.arm_gesture(rig.now(), &rig.tel);
    assert!(rig.run_until(30_000, |r| r.ob.is_armed(&r.tel)));
    let armed_at = rig.sim_ms();
    rig.run_ms(1_000);

    assert!(
        rig.arm_commands().is_empty(),
        "a gesture arm sends no command"
    );
    let sticks: Vec<(u64, i16, i16, i16, i16)> = rig
        .sent
        .iter()
        .filter_map(|s| match &s.msg {
            mav::MavMessage::MANUAL_CONTROL(m) => Some((s.sim_ms, m.x, m.y, m.z, m.r)),
            _ => None,
        })
        .collect();
    // Runs of identical sticks: neutral, gesture, neutral.
    let mut runs: Vec<(i16, i16, i16, i16)> = Vec::new();
    for &(_, x, y, z, r) in &sticks {
        if runs.last() != Some(&(x, y, z, r)) {
            runs.push((x, y, z, r));
        }
    }
    assert_eq!(runs, vec![(0, 0, 500, 0), (0, 0, 0, 1000), (0, 0, 500, 0)]);
    let gesture_from = sticks.iter().find(|s| s.3 == 0).unwrap().0;
    // Armable 5 s after the last SYS_STATUS with the prearm bit clear (5.9 s).
    assert!(
        (10_900..=11_000).contains(&gesture_from),
        "gesture at {gesture_from}"
    );
    assert!(armed_at >= gesture_from + 1_000);
    // The stream ran at 20 Hz throughout.
    let span_s = (sticks.last().unwrap().0 - sticks[0].0) as f64 / 1000.0;
    let rate = sticks.len() as f64 / span_s;
    assert!((19.0..=21.5).contains(&rate), "{rate} Hz");
    assert_eq!(rig.ob.rc(), Some(RcSticks::NEUTRAL));
}

#[test]
fn auto_disarm_after_landing_does_not_rearm() {
    let mut rig = Rig::new();
    rig.boot();
    rig.ob.takeoff(rig.now(), &rig.tel, 2.5).unwrap();
    assert!(rig.run_until(30_000, |r| r.ob.at_target(&r.tel)));
    rig.run_ms(2_000);
    let land_at = rig.sim_ms();
    rig.ob.land();
    assert!(!rig.ob.at_target(&rig.tel), "land clears the target");
    assert!(rig.run_until(30_000, |r| !r.ob.is_armed(&r.tel)));
    rig.run_ms(10_000);

    assert_eq!(rig.arm_commands(), vec![(rig.arm_commands()[0].0, true)]);
    assert!(rig.arm_commands()[0].0 < land_at);
    assert!(!rig.ob.is_armed(&rig.tel));
    assert_eq!(rig.ob.landed_state(&rig.tel), LandedState::OnGround);
    // PX4 went back to Hold after disarming; Land is not commanded again.
    assert_eq!(rig.ob.mode(&rig.tel), Some(Mode::Hold));
    let lands: Vec<u64> = rig
        .mode_commands()
        .iter()
        .filter(|(_, m)| *m == Mode::Land)
        .map(|(t, _)| *t)
        .collect();
    let land_shown = rig.first_heartbeat_in(Mode::Land).unwrap();
    assert!(!lands.is_empty() && lands.iter().all(|t| *t < land_shown));
    assert!(rig
        .mode_commands()
        .iter()
        .all(|(t, m)| *m != Mode::Takeoff || *t < land_at));
    assert!(rig
        .events_only()
        .iter()
        .all(|e| !matches!(e, OffboardEvent::GaveUp(_))));
}

#[test]
fn mode_refusal_is_reported_and_given_up() {
    let mut rig = Rig::new();
    rig.px4.refuse_modes = vec![Mode::Position];
    rig.boot();
    rig.ob.set_mode(Mode::Position);
    rig.run_ms(15_000);
    // A manual mode starts the neutral stick stream first.
    let first_rc = rig
        .sent
        .iter()
        .position(|s| matches!(s.msg, mav::MavMessage::MANUAL_CONTROL(_)))
        .unwrap();
    let first_mode = rig
        .sent
        .iter()
        .position(|s| matches!(&s.msg, mav::MavMessage::COMMAND_LONG(c) if c.command == mav::MavCmd::MAV_CMD_DO_SET_MODE))
        .unwrap();
    assert!(first_rc < first_mode);
    let sends = rig.mode_commands();
    assert_eq!(sends.len(), 5);
    for w in sends.windows(2) {
        // 1.5 s of PX4's clock, as stamped by its 10 Hz telemetry.
        assert!(w[1].0 - w[0].0 >= 1_400, "{sends:?}");
    }
    let ev = rig.events_only();
    let text = "Switching to Position is currently not possible";
    assert_eq!(
        ev.iter()
            .filter(|e| matches!(e, OffboardEvent::Refused(r) if r.text == text && r.command == Command::SetMode(Mode::Position)))
            .count(),
        5
    );
    assert!(matches!(
        ev.last(),
        Some(OffboardEvent::GaveUp(GaveUp {
            request: Request::Mode(Mode::Position),
            reason: GiveUpReason::Refused { refusals: 5 },
            ..
        }))
    ));
    assert!(rig.ob.pending().mode.is_none());
}

#[test]
fn a_failed_takeoff_mode_drops_the_arm() {
    let mut rig = Rig::new();
    rig.px4.ready_at_ms = 0;
    rig.px4.refuse_modes = vec![Mode::Takeoff];
    rig.boot();
    rig.ob.takeoff(rig.now(), &rig.tel, 2.5).unwrap();
    rig.run_ms(20_000);
    assert!(rig.arm_commands().is_empty(), "never arm in the wrong mode");
    assert!(rig.events_only().iter().any(|e| matches!(
        e,
        OffboardEvent::GaveUp(GaveUp {
            request: Request::Mode(Mode::Takeoff),
            dropped_arm: true,
            ..
        })
    )));
    assert!(!rig.ob.pending().arm);
}

#[test]
fn an_accepted_mode_px4_leaves_at_once_is_not_recommanded() {
    let mut rig = Rig::new();
    rig.px4.bounce_modes = vec![(Mode::Mission, Mode::Hold)];
    rig.boot();
    rig.ob.set_mode(Mode::Mission);
    rig.run_ms(10_000);
    assert_eq!(rig.mode_commands().len(), 1);
    assert!(rig.ob.pending().mode.is_none());
    assert_eq!(rig.ob.mode(&rig.tel), Some(Mode::Hold));
}

#[test]
fn disarm_drops_a_pending_arm_and_refusals_are_reported() {
    let mut rig = Rig::new();
    rig.px4.ready_at_ms = 30_000;
    rig.boot();
    rig.ob.arm(rig.now(), &rig.tel);
    rig.run_ms(1_000);
    rig.ob.disarm().unwrap();
    rig.run_ms(40_000);
    assert_eq!(rig.arm_commands().iter().filter(|(_, a)| *a).count(), 0);
    assert_eq!(rig.arm_commands().len(), 1);
    assert!(!rig.ob.pending().arm);

    // In the air PX4 refuses a disarm: reported with its text.
    let mut rig = Rig::new();
    rig.boot();
    rig.ob.takeoff(rig.now(), &rig.tel, 2.5).unwrap();
    assert!(rig.run_until(30_000, |r| r.ob.at_target(&r.tel)));
    rig.ob.disarm().unwrap();
    rig.run_ms(1_000);
    assert_eq!(
        rig.ob.last_refusal(),
        Some(&Refusal {
            command: Command::Disarm,
            result: Some(2),
            text: "Disarming denied: not landed".try_into().unwrap(),
        })
    );
    assert!(rig.ob.is_armed(&rig.tel));
}

#[test]
fn unknown_mode_names_are_errors() {
    let mut rig = Rig::new();
    assert_eq!(
        rig.ob.set_mode_name("Hover"),
        Err(nexus_core::offboard::OffboardError::UnknownMode)
    );
    assert!(rig
        .ob
        .set_mode_name("hover")
        .unwrap_err()
        .to_string()
        .contains("Takeoff"));
    rig.ob.set_mode_name("rtl").unwrap();
    assert_eq!(rig.ob.pending().mode, Some(Mode::Rtl));
}

#[test]
fn the_refusal_text_is_the_warnings_around_the_ack() {
    use offboard_rig::{command_ack, statustext};
    let mut rig = Rig::with_config(no_settle());
    rig.auto_reply = false;
    rig.px4.ready_at_ms = 0;
    rig.boot();
    rig.deliver(statustext(
        mav::MavSeverity::MAV_SEVERITY_WARNING,
        "Before the send",
        0,
        0,
    ));
    rig.ob.arm(rig.now(), &rig.tel);
    rig.pump();
    assert_eq!(rig.arm_commands().len(), 1);
    let full = format!("{DENIED}\t");
    rig.deliver(statustext(
        mav::MavSeverity::MAV_SEVERITY_INFO,
        "[logger] chatter",
        0,
        0,
    ));
    rig.deliver(statustext(
        mav::MavSeverity::MAV_SEVERITY_CRITICAL,
        &full[..50],
        9,
        0,
    ));
    rig.deliver(command_ack(
        mav::MavCmd::MAV_CMD_COMPONENT_ARM_DISARM,
        mav::MavResult::MAV_RESULT_TEMPORARILY_REJECTED,
    ));
    assert!(rig.ob.last_refusal().is_none(), "texts are still collected");
    rig.deliver(statustext(
        mav::MavSeverity::MAV_SEVERITY_CRITICAL,
        &full[50..],
        9,
        1,
    ));
    rig.deliver(statustext(
        mav::MavSeverity::MAV_SEVERITY_WARNING,
        "Preflight Fail: ekf2 missing data",
        0,
        0,
    ));
    rig.run_ms(600);
    rig.deliver(statustext(
        mav::MavSeverity::MAV_SEVERITY_WARNING,
        "Too late",
        0,
        0,
    ));
    assert_eq!(
        rig.ob.last_refusal().map(|r| r.text.as_str()),
        Some("Arming denied: Resolve system health failures first; Preflight Fail: ekf2 missing data")
    );
    assert!(rig.ob.pending().arm, "refused once: still pending");
}

/// What the refusal text is, by definition: the explaining texts joined by "; ", each cut to
/// the longest prefix of whole characters that fits the text's capacity; a separator that no
/// longer fits ends it.
fn joined_as_defined(texts: &[&str]) -> String {
    let cap = nexus_core::offboard::REFUSAL_TEXT_LEN;
    let mut out = String::new();
    for t in texts {
        if !out.is_empty() {
            if out.len() + 2 > cap {
                break;
            }
            out.push_str("; ");
        }
        for c in t.chars() {
            if out.len() + c.len_utf8() > cap {
                break;
            }
            out.push(c);
        }
    }
    out
}

#[test]
fn a_long_refusal_text_is_cut_at_a_character_boundary() {
    use offboard_rig::{command_ack, statustext};
    let first = "Preflight Fail: ekf2 missing data, 40 b.";
    let second = "Arming denied: Resolve system failures";
    assert_eq!((first.len(), second.len()), (40, 38));
    // The third text meets the end of the capacity at each byte of a four-byte character.
    for pad in 0..4 {
        let third = format!("{}{}", "a".repeat(pad + 2), "🚁".repeat(9));
        let texts = [first, second, third.as_str(), "b-last"];
        let mut rig = Rig::with_config(no_settle());
        rig.auto_reply = false;
        rig.px4.ready_at_ms = 0;
        rig.boot();
        rig.ob.arm(rig.now(), &rig.tel);
        rig.pump();
        assert_eq!(rig.arm_commands().len(), 1);
        for t in texts {
            rig.deliver(statustext(mav::MavSeverity::MAV_SEVERITY_WARNING, t, 0, 0));
        }
        rig.deliver(command_ack(
            mav::MavCmd::MAV_CMD_COMPONENT_ARM_DISARM,
            mav::MavResult::MAV_RESULT_TEMPORARILY_REJECTED,
        ));
        rig.run_ms(600);
        let got = rig.ob.last_refusal().map(|r| r.text.to_string());
        let want = joined_as_defined(&texts);
        assert_eq!(got.as_deref(), Some(want.as_str()), "pad {pad}");
        assert!(want.len() <= nexus_core::offboard::REFUSAL_TEXT_LEN);
        assert!(
            want.len() > nexus_core::offboard::REFUSAL_TEXT_LEN - 4,
            "{want}"
        );
        // pad 1: the drone that does not fit leaves room for the separator and one letter.
        if pad == 1 {
            assert!(want.ends_with("🚁; b"), "{want}");
        }
    }
}
