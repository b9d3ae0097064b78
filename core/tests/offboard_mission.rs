//! The mission protocol against a scripted PX4: upload (with MISSION_REQUEST_INT and legacy
//! MISSION_REQUEST, duplicates, out of order, rejected, timed out), start after a finished
//! mission, progress with PX4's repeated MISSION_ITEM_REACHED, download, clear, pause/resume.

// MISSION_SET_CURRENT: the message PX4 handles (docs/px4-wire.md §Mission progress).
#![allow(deprecated)]

mod offboard_rig;

use nexus_core::mav;
use nexus_core::mission::MissionItem;
use nexus_core::msg::Msg;
use nexus_core::offboard::{MissionError, OffboardEvent, TransferStage};
use nexus_core::Mode;
use offboard_rig::{box_mission, item, mission_ack, request, Rig};

fn items_sent(rig: &Rig) -> Vec<mav::MISSION_ITEM_INT_DATA> {
    rig.sent
        .iter()
        .filter_map(|s| match &s.msg {
            mav::MavMessage::MISSION_ITEM_INT(m) => Some(m.clone()),
            _ => None,
        })
        .collect()
}

fn counts_sent(rig: &Rig) -> Vec<u64> {
    rig.sent
        .iter()
        .filter_map(|s| match &s.msg {
            mav::MavMessage::MISSION_COUNT(c) => {
                assert_eq!(
                    c.mission_type,
                    mav::MavMissionType::MAV_MISSION_TYPE_MISSION
                );
                Some(s.sim_ms)
            }
            _ => None,
        })
        .collect()
}

fn upload_ok(legacy: bool) {
    let mut rig = Rig::new();
    rig.px4.legacy_requests = legacy;
    rig.boot();
    let mission = box_mission();
    rig.ob.upload_mission_items(&mission).unwrap();
    assert!(!rig.ob.mission_uploaded());
    assert_eq!(rig.ob.mission_ack(), None);
    assert!(rig.run_until(5_000, |r| r.ob.mission_uploaded()));
    assert_eq!(rig.px4.mission, mission, "PX4 holds the items verbatim");
    assert_eq!(counts_sent(&rig).len(), 1);
    let sent = items_sent(&rig);
    assert_eq!(sent.len(), 6);
    for (m, it) in sent.iter().zip(&mission) {
        assert_eq!(MissionItem::from_mav(m), *it);
        assert_eq!(m.target_system, 1);
        assert_eq!(m.target_component, 1);
    }
    assert_eq!(rig.ob.mission_ack(), Some(0));
    assert_eq!(rig.ob.mission_opaque_id(), Some(0xC0FFEE));
    assert_eq!(rig.ob.mission_count(), 6);
    assert!(rig.events_only().contains(&OffboardEvent::MissionUploaded {
        count: 6,
        opaque_id: 0xC0FFEE
    }));
    assert!(!rig.ob.pending().transfer);
}

#[test]
fn upload_with_mission_request_int() {
    upload_ok(false);
}

#[test]
fn upload_with_legacy_mission_request() {
    upload_ok(true);
}

/// A rig where PX4 says nothing back on its own: the test plays PX4's side of the protocol.
fn scripted() -> Rig {
    let mut rig = Rig::new();
    rig.auto_reply = false;
    rig.px4.ready_at_ms = 0;
    rig.boot();
    rig
}

fn three() -> Vec<MissionItem> {
    vec![
        item(0, 22, 47.3977, 8.5456, 5.0),
        item(1, 16, 47.3978, 8.5457, 10.0),
        item(2, 16, 47.3979, 8.5458, 10.0),
    ]
}

#[test]
fn duplicate_and_out_of_order_requests_get_the_item_asked_for() {
    let mut rig = scripted();
    let mission = three();
    rig.ob.upload_mission_items(&mission).unwrap();
    rig.pump();
    assert_eq!(counts_sent(&rig).len(), 1);
    for seq in [0u16, 0, 2, 1] {
        // The count's answer came at once (a 0 ms round trip): each request comes a round
        // trip (0 ms + the 10 ms granularity) or more after the item before it.
        if seq != 0 || !items_sent(&rig).is_empty() {
            rig.run_ms(50);
        }
        rig.deliver(request(seq, seq == 2)); // a legacy request among them
        rig.pump();
    }
    let sent: Vec<u16> = items_sent(&rig).iter().map(|m| m.seq).collect();
    assert_eq!(sent, vec![0, 0, 2, 1]);
    // A re-ask within a round trip of the item crossed it on the wire: not answered again.
    rig.deliver(request(1, false));
    rig.pump();
    assert_eq!(items_sent(&rig).len(), 4);
    for m in items_sent(&rig) {
        assert_eq!(MissionItem::from_mav(&m), mission[m.seq as usize]);
    }
    rig.deliver(mission_ack(mav::MavMissionResult::MAV_MISSION_ACCEPTED, 7));
    assert!(rig.ob.mission_uploaded());
    assert_eq!(rig.ob.mission_opaque_id(), Some(7));
}

#[test]
fn a_request_beyond_the_mission_fails_the_upload() {
    let mut rig = scripted();
    rig.ob.upload_mission_items(&three()).unwrap();
    rig.pump();
    rig.deliver(request(5, false));
    rig.pump();
    assert!(rig
        .events_only()
        .contains(&OffboardEvent::MissionUploadFailed(
            MissionError::RequestOutOfRange { seq: 5, count: 3 }
        )));
    let acks: Vec<_> = rig
        .sent_where(|m| matches!(m, mav::MavMessage::MISSION_ACK(_)))
        .into_iter()
        .map(|s| s.msg.clone())
        .collect();
    assert!(matches!(
        &acks[..],
        [mav::MavMessage::MISSION_ACK(a)] if a.mavtype == mav::MavMissionResult::MAV_MISSION_INVALID_SEQUENCE
    ));
    assert!(!rig.ob.pending().transfer);
    // PX4 asking again afterwards is ignored.
    rig.deliver(request(0, false));
    rig.pump();
    assert!(items_sent(&rig).is_empty());
}

#[test]
fn a_rejected_upload_keeps_the_result_code() {
    let mut rig = Rig::new();
    rig.px4.reject_mission = Some(mav::MavMissionResult::MAV_MISSION_UNSUPPORTED_FRAME);
    rig.boot();
    rig.ob.upload_mission_items(&box_mission()).unwrap();
    rig.run_ms(3_000);
    assert!(!rig.ob.mission_uploaded());
    assert_eq!(rig.ob.mission_ack(), Some(2));
    let failed = OffboardEvent::MissionUploadFailed(MissionError::Rejected { result: 2 });
    assert!(rig.events_only().contains(&failed));
    assert_eq!(
        failed.to_string(),
        "mission upload rejected: UNSUPPORTED_FRAME (2)"
    );
    assert_eq!(counts_sent(&rig).len(), 1, "a rejection is not retried");
}

#[test]
fn count_unanswered_times_out_after_retries() {
    let mut rig = Rig::new();
    rig.px4.ignore_mission_count = true;
    rig.boot();
    rig.ob.upload_mission_items(&box_mission()).unwrap();
    rig.run_ms(30_000);
    let counts = counts_sent(&rig);
    assert_eq!(counts.len(), 5, "{counts:?}");
    // Unanswered: the retry timer backs off from its 1 s floor, doubling (RFC 6298 5.5).
    for (w, gap) in counts.windows(2).zip([1_000, 2_000, 4_000, 8_000]) {
        assert!(
            (gap - 100..=gap + 100).contains(&(w[1] - w[0])),
            "{counts:?}"
        );
    }
    assert_eq!(
        rig.events_only()
            .into_iter()
            .filter(|e| matches!(e, OffboardEvent::MissionUploadFailed(_)))
            .collect::<Vec<_>>(),
        vec![OffboardEvent::MissionUploadFailed(MissionError::Timeout {
            stage: TransferStage::Count,
            sends: 5
        })]
    );
    assert_eq!(rig.ob.mission_ack(), None);
}

#[test]
fn a_stalled_item_exchange_times_out() {
    let mut rig = Rig::new();
    rig.px4.stall_after_requests = Some(2);
    rig.boot();
    rig.ob.upload_mission_items(&box_mission()).unwrap();
    rig.pump();
    let t0 = rig.sim_ms();
    assert!(rig.run_until(30_000, |r| !r.ob.pending().transfer));
    // Item 1 was asked for and sent; PX4 fell silent. It went out again on the retry timer
    // (a nudge: PX4 re-acks a repeated last item, or re-asks), 5 sends in all, then the
    // upload failed once PX4 had been silent for mission_timeout_s.
    let sent: Vec<u16> = items_sent(&rig).iter().map(|m| m.seq).collect();
    assert_eq!(sent, [0, 1, 1, 1, 1, 1]);
    assert!(rig.sim_ms() >= t0 + 6_000);
    assert!(rig
        .events_only()
        .contains(&OffboardEvent::MissionUploadFailed(MissionError::Timeout {
            stage: TransferStage::Items,
            sends: 5
        })));
}

#[test]
fn progress_ignores_repeats_and_stale_reports() {
    let mut rig = scripted();
    rig.ob.upload_mission_items(&box_mission()).unwrap();
    assert_eq!(rig.ob.mission_reached(), None);
    let current = |seq| {
        Msg::MissionCurrent(mav::MISSION_CURRENT_DATA {
            seq,
            total: 6,
            mission_state: mav::MissionState::MISSION_STATE_ACTIVE,
            ..mav::MISSION_CURRENT_DATA::DEFAULT
        })
    };
    let reached = |seq| Msg::MissionItemReached(mav::MISSION_ITEM_REACHED_DATA { seq });
    rig.deliver(current(3));
    for _ in 0..10 {
        rig.deliver(reached(2));
    }
    assert_eq!(rig.ob.mission_reached(), Some(2));
    rig.deliver(reached(1)); // a late repeat of an earlier item
    assert_eq!(rig.ob.mission_reached(), Some(2));
    rig.deliver(reached(4)); // not yet current: a previous run's leftover
    assert_eq!(rig.ob.mission_reached(), Some(2));
    assert!(!rig.ob.mission_complete());
    rig.deliver(current(4));
    rig.deliver(reached(4));
    assert_eq!(rig.ob.mission_reached(), Some(4));
    assert_eq!(rig.ob.mission_current(), 4);
    // Seq 4 is the last NAV_WAYPOINT, but seq 5, the landing, is the last reachable item:
    // PX4 reports it on touchdown.
    assert!(!rig.ob.mission_complete());
    rig.deliver(current(5));
    rig.deliver(reached(5));
    assert!(rig.ob.mission_complete());
}

/// Fly the box mission to its end: returns the rig with PX4 landed, disarmed, MISSION_CURRENT
/// stuck at the last item with state COMPLETE.
fn flown_box() -> Rig {
    let mut rig = Rig::new();
    rig.px4.ready_at_ms = 0;
    rig.boot();
    rig.ob.upload_mission_items(&box_mission()).unwrap();
    assert!(rig.run_until(5_000, |r| r.ob.mission_uploaded()));
    rig.ob.start_mission(rig.now(), &rig.tel);
    let mut seen = Vec::new();
    assert!(rig.run_until(60_000, |r| {
        seen.push(r.ob.mission_reached());
        r.ob.mission_complete()
    }));
    assert!(seen.windows(2).all(|w| w[0] <= w[1]), "never decreases");
    assert!(rig.run_until(60_000, |r| !r.ob.is_armed(&r.tel)));
    rig.run_ms(1_500);
    assert_eq!(rig.tel.mission_current().unwrap().seq, 5);
    assert_eq!(
        rig.tel.mission_current().unwrap().mission_state,
        mav::MissionState::MISSION_STATE_COMPLETE
    );
    rig
}

#[test]
fn start_mission_orders_restart_mode_arm() {
    let rig = flown_box();
    let wire: Vec<(u64, &str)> = rig
        .sent
        .iter()
        .filter_map(|s| match &s.msg {
            mav::MavMessage::MISSION_SET_CURRENT(m) => {
                assert_eq!(m.seq, 0);
                Some((s.sim_ms, "set_current"))
            }
            mav::MavMessage::COMMAND_LONG(c) if c.command == mav::MavCmd::MAV_CMD_DO_SET_MODE => {
                Some((s.sim_ms, "mode"))
            }
            mav::MavMessage::COMMAND_LONG(c)
                if c.command == mav::MavCmd::MAV_CMD_COMPONENT_ARM_DISARM =>
            {
                Some((s.sim_ms, "arm"))
            }
            _ => None,
        })
        .collect();
    let kinds: Vec<&str> = wire.iter().map(|w| w.1).collect();
    assert_eq!(kinds, vec!["set_current", "mode", "arm"], "{wire:?}");
    assert!(rig.first_heartbeat_in(Mode::Mission).unwrap() <= wire[2].0);
    // Reached repeats kept coming after the end; the count of reports far exceeds the items.
    let reports = rig
        .received
        .iter()
        .filter(|(_, m)| matches!(m, Msg::MissionItemReached(_)))
        .count();
    assert!(reports > 20, "{reports}");
}

#[test]
fn start_mission_after_a_finished_mission_restarts_from_item_zero() {
    let mut rig = flown_box();
    let before = rig.sent.len();
    let t0 = rig.sim_ms();
    rig.ob.start_mission(rig.now(), &rig.tel);
    assert_eq!(
        rig.ob.mission_reached(),
        None,
        "a new run starts from nothing"
    );
    rig.pump();
    // PX4 is still repeating the previous run's last MISSION_ITEM_REACHED (seq 5); MISSION_CURRENT
    // says 5 until our MISSION_SET_CURRENT 0 lands.
    let mut reached_during_run = Vec::new();
    assert!(rig.run_until(60_000, |r| {
        reached_during_run.push(r.ob.mission_reached());
        r.ob.mission_complete()
    }));
    assert!(reached_during_run.windows(2).all(|w| w[0] <= w[1]));
    assert_eq!(reached_during_run[0], None);
    let after: Vec<&offboard_rig::Sent> = rig.sent[before..].iter().collect();
    let set_current = after
        .iter()
        .position(|s| matches!(s.msg, mav::MavMessage::MISSION_SET_CURRENT(_)))
        .expect("MISSION_SET_CURRENT 0 sent");
    let mode = after
        .iter()
        .position(|s| matches!(&s.msg, mav::MavMessage::COMMAND_LONG(c) if c.command == mav::MavCmd::MAV_CMD_DO_SET_MODE))
        .unwrap();
    let arm = after
        .iter()
        .position(|s| matches!(&s.msg, mav::MavMessage::COMMAND_LONG(c) if c.command == mav::MavCmd::MAV_CMD_COMPONENT_ARM_DISARM))
        .unwrap();
    assert!(set_current < mode && mode < arm);
    // The mode went out only after PX4 reported item 0 current.
    let item0_at = rig
        .received
        .iter()
        .find(|(t, m)| *t >= t0 && matches!(m, Msg::MissionCurrent(c) if c.seq == 0))
        .unwrap()
        .0;
    assert!(after[mode].sim_ms >= item0_at);
    // The second run flew every item again, from 0.
    let reached_after: Vec<u16> = rig
        .received
        .iter()
        .filter(|(t, _)| *t > after[arm].sim_ms)
        .filter_map(|(_, m)| match m {
            Msg::MissionItemReached(r) => Some(r.seq),
            _ => None,
        })
        .collect();
    assert!(reached_after.contains(&0) && reached_after.contains(&4));
}

#[test]
fn reupload_resets_progress() {
    let mut rig = flown_box();
    assert!(rig.ob.mission_complete());
    rig.ob.upload_mission_items(&box_mission()).unwrap();
    assert_eq!(rig.ob.mission_reached(), None);
    assert_eq!(rig.ob.mission_current(), 0);
    assert!(!rig.ob.mission_complete());
    assert!(rig.run_until(5_000, |r| r.ob.mission_uploaded()));
    rig.run_ms(3_000); // PX4's leftover repeats of seq 5 do not count for the new mission
    assert_eq!(rig.ob.mission_reached(), None);
}

#[test]
fn download_the_vehicle_mission() {
    let mut rig = Rig::new();
    rig.px4.mission = box_mission();
    rig.boot();
    rig.ob.download_mission();
    assert!(rig.run_until(5_000, |r| !r.ob.pending().transfer));
    assert_eq!(rig.ob.mission_items(), &box_mission()[..]);
    assert!(rig
        .events_only()
        .contains(&OffboardEvent::MissionDownloaded { count: 6 }));
    let requested: Vec<u16> = rig
        .sent
        .iter()
        .filter_map(|s| match &s.msg {
            mav::MavMessage::MISSION_REQUEST_INT(r) => Some(r.seq),
            _ => None,
        })
        .collect();
    assert_eq!(requested, vec![0, 1, 2, 3, 4, 5]);
    assert_eq!(
        rig.sent_where(|m| matches!(m, mav::MavMessage::MISSION_REQUEST_LIST(_)))
            .len(),
        1
    );
    let last = &rig.sent_where(|m| matches!(m, mav::MavMessage::MISSION_ACK(_)))[0].msg;
    assert!(
        matches!(last, mav::MavMessage::MISSION_ACK(a) if a.mavtype == mav::MavMissionResult::MAV_MISSION_ACCEPTED)
    );
}

#[test]
fn download_larger_than_capacity_is_refused() {
    let mut rig = Rig::new();
    rig.px4.mission = (0..33).map(|i| item(i, 16, 47.0, 8.0, 10.0)).collect();
    rig.boot();
    rig.ob.download_mission();
    rig.run_ms(2_000);
    assert!(rig
        .events_only()
        .contains(&OffboardEvent::MissionDownloadFailed(
            MissionError::TooLarge {
                count: 33,
                capacity: 32
            }
        )));
    let acks = rig.sent_where(|m| matches!(m, mav::MavMessage::MISSION_ACK(a) if a.mavtype == mav::MavMissionResult::MAV_MISSION_NO_SPACE));
    assert_eq!(acks.len(), 1);
    assert!(rig
        .sent_where(|m| matches!(m, mav::MavMessage::MISSION_REQUEST_INT(_)))
        .is_empty());
}

#[test]
fn an_identical_download_keeps_progress() {
    let mut rig = scripted();
    rig.ob.upload_mission_items(&box_mission()).unwrap();
    rig.pump();
    rig.deliver(mission_ack(mav::MavMissionResult::MAV_MISSION_ACCEPTED, 1));
    rig.deliver(Msg::MissionCurrent(mav::MISSION_CURRENT_DATA {
        seq: 3,
        mission_state: mav::MissionState::MISSION_STATE_ACTIVE,
        ..mav::MISSION_CURRENT_DATA::DEFAULT
    }));
    rig.deliver(Msg::MissionItemReached(mav::MISSION_ITEM_REACHED_DATA {
        seq: 2,
    }));
    rig.auto_reply = true;
    rig.px4.mission = box_mission();
    rig.ob.download_mission();
    rig.run_ms(1_000);
    assert!(rig
        .events_only()
        .contains(&OffboardEvent::MissionDownloaded { count: 6 }));
    assert_eq!(rig.ob.mission_reached(), Some(2));
    assert!(rig.ob.mission_uploaded());

    // A different mission on the vehicle replaces ours and resets progress.
    rig.px4.mission = three();
    rig.ob.download_mission();
    rig.run_ms(1_000);
    assert_eq!(rig.ob.mission_items(), &three()[..]);
    assert_eq!(rig.ob.mission_reached(), None);
    assert!(!rig.ob.mission_uploaded());
}

#[test]
fn clear_the_vehicle_mission() {
    let mut rig = Rig::new();
    rig.boot();
    rig.ob.upload_mission_items(&box_mission()).unwrap();
    assert!(rig.run_until(5_000, |r| r.ob.mission_uploaded()));
    rig.ob.clear_mission();
    assert!(rig.run_until(5_000, |r| !r.ob.pending().transfer));
    assert!(rig.events_only().contains(&OffboardEvent::MissionCleared));
    assert_eq!(rig.ob.mission_count(), 0);
    assert!(!rig.ob.mission_uploaded());
    assert!(rig.px4.mission.is_empty());
    assert_eq!(
        rig.sent_where(|m| matches!(m, mav::MavMessage::MISSION_CLEAR_ALL(_)))
            .len(),
        1
    );
}

#[test]
fn pause_and_resume_continue_from_the_current_item() {
    let mut rig = Rig::new();
    rig.px4.ready_at_ms = 0;
    rig.boot();
    rig.ob.upload_mission_items(&box_mission()).unwrap();
    assert!(rig.run_until(5_000, |r| r.ob.mission_uploaded()));
    rig.ob.start_mission(rig.now(), &rig.tel);
    assert!(rig.run_until(30_000, |r| r.ob.mission_reached() == Some(1)));
    rig.ob.pause_mission();
    assert!(rig.run_until(5_000, |r| r.ob.mode(&r.tel) == Some(Mode::Hold)));
    let paused_at = rig.ob.mission_current();
    rig.run_ms(5_000);
    assert_eq!(rig.ob.mission_current(), paused_at, "Hold does not advance");
    assert_eq!(rig.ob.mission_reached(), Some(1));
    let set_currents = rig
        .sent_where(|m| matches!(m, mav::MavMessage::MISSION_SET_CURRENT(_)))
        .len();
    rig.ob.resume_mission();
    assert!(rig.run_until(30_000, |r| r.ob.mission_complete()));
    assert_eq!(
        rig.sent_where(|m| matches!(m, mav::MavMessage::MISSION_SET_CURRENT(_)))
            .len(),
        set_currents,
        "resume does not restart"
    );
    let modes: Vec<Mode> = rig.mode_commands().iter().map(|m| m.1).collect();
    assert_eq!(modes, vec![Mode::Mission, Mode::Hold, Mode::Mission]);
}

#[test]
fn lodging_checks_the_items() {
    let mut rig = Rig::new();
    let mut bad = three();
    bad[1].seq = 7;
    assert!(rig.ob.upload_mission_items(&bad).is_err());
    let mut bad = three();
    bad[2].command = 9_999;
    assert_eq!(
        rig.ob.lodge_mission(&bad),
        Err(nexus_core::offboard::OffboardError::Item(
            nexus_core::mission::ItemError::UnknownCommand {
                seq: 2,
                command: 9_999
            }
        ))
    );
    let many: Vec<MissionItem> = (0..33).map(|i| item(i, 16, 47.0, 8.0, 1.0)).collect();
    assert!(matches!(
        rig.ob.lodge_mission(&many),
        Err(nexus_core::offboard::OffboardError::TooManyItems {
            count: 33,
            capacity: 32
        })
    ));
    assert_eq!(
        rig.ob.upload_mission(),
        Err(nexus_core::offboard::OffboardError::NoMission)
    );
}

#[test]
fn mission_mode_waits_for_item_zero_and_the_restart_gives_up() {
    let mut rig = scripted();
    // PX4 holds a finished mission: MISSION_CURRENT stays at the last item.
    rig.px4.mission = box_mission();
    rig.px4.mission_current = 5;
    rig.px4.mission_state = mav::MissionState::MISSION_STATE_COMPLETE;
    rig.ob.lodge_mission(&box_mission()).unwrap();
    rig.run_ms(1_100);
    let before = rig.sent.len();
    rig.ob.start_mission(rig.now(), &rig.tel);
    rig.run_ms(2_000);
    let kinds = |rig: &Rig, from: usize| -> Vec<&'static str> {
        rig.sent[from..]
            .iter()
            .filter_map(|s| match &s.msg {
                mav::MavMessage::MISSION_SET_CURRENT(_) => Some("set_current"),
                mav::MavMessage::COMMAND_LONG(_) => Some("command"),
                _ => None,
            })
            .collect()
    };
    // Re-sent after 1.5 s; neither the mode nor the arm goes out while PX4 says item 5.
    assert_eq!(kinds(&rig, before), vec!["set_current", "set_current"]);
    assert_eq!(rig.ob.pending().mode, Some(Mode::Mission));
    rig.px4.mission_current = 0;
    rig.deliver(Msg::MissionCurrent(mav::MISSION_CURRENT_DATA {
        seq: 0,
        total: 6,
        mission_state: mav::MissionState::MISSION_STATE_NOT_STARTED,
        ..mav::MISSION_CURRENT_DATA::DEFAULT
    }));
    rig.pump();
    assert_eq!(
        kinds(&rig, before),
        vec!["set_current", "set_current", "command"]
    );
    assert_eq!(rig.mode_commands().last().unwrap().1, Mode::Mission);

    // PX4 never reports item 0: the start is given up after max_sends, the arm with it. The
    // re-command timer backs off (1.5, 3, 6 s, then the 10 s ceiling): the 10th send goes out
    // at 70.5 s and is given up at 80.5 s.
    let mut rig = scripted();
    rig.px4.mission = box_mission();
    rig.px4.mission_current = 5;
    rig.ob.lodge_mission(&box_mission()).unwrap();
    rig.ob.start_mission(rig.now(), &rig.tel);
    rig.run_ms(85_000);
    assert_eq!(
        rig.sent_where(|m| matches!(m, mav::MavMessage::MISSION_SET_CURRENT(_)))
            .len(),
        10
    );
    assert!(rig.mode_commands().is_empty() && rig.arm_commands().is_empty());
    assert!(rig
        .events_only()
        .contains(&OffboardEvent::GaveUp(nexus_core::offboard::GaveUp {
            request: nexus_core::offboard::Request::MissionRestart,
            reason: nexus_core::offboard::GiveUpReason::Unconfirmed { sends: 10 },
            dropped_arm: true,
            dropped_start: true,
        })));
    assert_eq!(rig.ob.pending(), nexus_core::offboard::Pending::default());
}

/// The first frame of each start step on the wire, with its sim time.
fn start_frames(rig: &Rig) -> Vec<(u64, &'static str)> {
    rig.sent
        .iter()
        .filter_map(|s| match &s.msg {
            mav::MavMessage::MISSION_SET_CURRENT(_) => Some((s.sim_ms, "set_current")),
            mav::MavMessage::COMMAND_LONG(c) if c.command == mav::MavCmd::MAV_CMD_DO_SET_MODE => {
                Some((s.sim_ms, "mode"))
            }
            mav::MavMessage::COMMAND_LONG(c)
                if c.command == mav::MavCmd::MAV_CMD_COMPONENT_ARM_DISARM =>
            {
                Some((s.sim_ms, "arm"))
            }
            _ => None,
        })
        .collect()
}

#[test]
fn a_start_during_an_upload_waits_for_the_upload() {
    // A slow link: PX4 asks for one item every 0.8 s.
    let mut rig = scripted();
    let mission = three();
    rig.ob.upload_mission_items(&mission).unwrap();
    rig.ob.start_mission(rig.now(), &rig.tel);
    rig.pump();
    for seq in 0..3u16 {
        rig.run_ms(800);
        rig.deliver(request(seq, false));
        rig.pump();
    }
    rig.run_ms(800);
    assert_eq!(items_sent(&rig).len(), 3);
    let before_ack = start_frames(&rig);
    assert!(
        before_ack.iter().all(|(_, k)| *k == "set_current"),
        "Mission mode or arm during the upload: {before_ack:?}"
    );
    let acked_at = rig.sim_ms();
    rig.deliver(mission_ack(mav::MavMissionResult::MAV_MISSION_ACCEPTED, 7));
    rig.pump();
    rig.run_ms(2_000);
    let wire = start_frames(&rig);
    assert!(
        wire.iter().any(|(t, k)| *k == "mode" && *t >= acked_at),
        "Mission mode once the upload was accepted: {wire:?}"
    );
    assert!(
        !rig.events_only()
            .iter()
            .any(|e| matches!(e, OffboardEvent::GaveUp(_))),
        "{:?}",
        rig.events_only()
    );
}

#[test]
fn a_failed_upload_drops_the_start_that_waited_for_it() {
    let mut rig = Rig::new();
    rig.px4.ready_at_ms = 0;
    rig.px4.reject_mission = Some(mav::MavMissionResult::MAV_MISSION_NO_SPACE);
    rig.boot();
    rig.ob.upload_mission_items(&box_mission()).unwrap();
    rig.ob.start_mission(rig.now(), &rig.tel);
    rig.pump();
    rig.run_ms(10_000);
    assert!(start_frames(&rig).is_empty(), "{:?}", start_frames(&rig));
    let gave_up = rig
        .events_only()
        .into_iter()
        .find_map(|e| match e {
            OffboardEvent::GaveUp(g) => Some(g),
            _ => None,
        })
        .expect("the start was given up");
    assert_eq!(
        gave_up.request,
        nexus_core::offboard::Request::MissionRestart
    );
    assert_eq!(
        gave_up.reason,
        nexus_core::offboard::GiveUpReason::UploadFailed
    );
    assert!(gave_up.dropped_arm && gave_up.dropped_start, "{gave_up:?}");
    assert!(!rig.ob.is_armed(&rig.tel));
    assert!(gave_up.to_string().contains("upload"), "{gave_up}");
}
