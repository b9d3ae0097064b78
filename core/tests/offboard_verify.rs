//! Verifying the vehicle's mission ([`Action::VerifyMission`]): a download compared item for
//! item with the upload, which it never replaces. Asked during the upload it waits for PX4 to
//! accept it; identical sets `verified`; the first differing item (or another count) ends the
//! download with a cancelling MISSION_ACK and is reported.
#![cfg(feature = "mission-verify")]

mod offboard_rig;

use nexus_core::mav;
use nexus_core::offboard::{MissionMismatch, OffboardEvent};
use nexus_core::Action;
use offboard_rig::{box_mission, Rig};

/// A rig whose PX4 took the box mission, then (before the verification) holds `edit` of it.
fn verified_after(edit: impl FnOnce(&mut Vec<nexus_core::mission::MissionItem>)) -> Rig {
    let mut rig = Rig::new();
    rig.boot();
    rig.ob.upload_mission_items(&box_mission()).unwrap();
    assert!(rig.run_until(5_000, |r| r.ob.mission_uploaded()));
    edit(&mut rig.px4.mission);
    let now = rig.now();
    rig.ob.apply(now, &rig.tel, &Action::VerifyMission).unwrap();
    assert!(rig.run_until(5_000, |r| !r.ob.pending().transfer));
    rig
}

fn last_ack(rig: &Rig) -> mav::MavMissionResult {
    match &rig
        .sent_where(|m| matches!(m, mav::MavMessage::MISSION_ACK(_)))
        .last()
        .expect("a MISSION_ACK to PX4")
        .msg
    {
        mav::MavMessage::MISSION_ACK(a) => a.mavtype,
        _ => unreachable!(),
    }
}

#[test]
fn asked_during_the_upload_it_waits_and_finds_the_mission_identical() {
    let mut rig = Rig::new();
    rig.boot();
    rig.ob.upload_mission_items(&box_mission()).unwrap();
    let now = rig.now();
    rig.ob.apply(now, &rig.tel, &Action::VerifyMission).unwrap();
    assert!(rig.run_until(10_000, |r| r
        .events_only()
        .contains(&OffboardEvent::MissionVerified { count: 6 })));
    // The upload went through first, whole.
    assert!(rig.ob.mission_uploaded());
    assert!(rig
        .events_only()
        .iter()
        .all(|e| !matches!(e, OffboardEvent::MissionMismatch(_))));
    assert_eq!(rig.ob.mission_items(), &box_mission()[..]);
    assert_eq!(last_ack(&rig), mav::MavMissionResult::MAV_MISSION_ACCEPTED);
    assert!(rig.run_until(3_000, |r| r.ob.mission_progress().is_some()));
    assert!(rig.ob.mission_progress().unwrap().verified);
}

#[test]
fn the_first_differing_item_ends_the_verification_and_the_upload_is_kept() {
    let rig = verified_after(|m| {
        m[3].z += 5.0;
        m[4].z += 5.0;
    });
    let mismatch = rig
        .events_only()
        .into_iter()
        .find_map(|e| match e {
            OffboardEvent::MissionMismatch(m) => Some(m),
            _ => None,
        })
        .expect("a mismatch");
    match &mismatch {
        MissionMismatch::Item { uploaded, vehicle } => {
            assert_eq!(uploaded.seq, 3);
            assert_eq!(*uploaded, box_mission()[3]);
            assert_eq!(vehicle.z, box_mission()[3].z + 5.0);
        }
        other => panic!("{other:?}"),
    }
    let text = OffboardEvent::MissionMismatch(mismatch).to_string();
    assert!(
        text.starts_with("mission verification failed: item 3 differs"),
        "{text}"
    );
    // Not one request past the difference; PX4 is told the transfer is over.
    let asked: Vec<u16> = rig
        .sent
        .iter()
        .filter_map(|s| match &s.msg {
            mav::MavMessage::MISSION_REQUEST_INT(r) => Some(r.seq),
            _ => None,
        })
        .collect();
    assert_eq!(asked, [0, 1, 2, 3]);
    assert_eq!(
        last_ack(&rig),
        mav::MavMissionResult::MAV_MISSION_OPERATION_CANCELLED
    );
    assert_eq!(rig.ob.mission_items(), &box_mission()[..]);
    assert!(rig.ob.mission_progress().is_none_or(|p| !p.verified));
}

#[test]
fn another_count_is_a_mismatch_at_once() {
    let rig = verified_after(|m| {
        m.pop();
    });
    assert!(rig
        .events_only()
        .contains(&OffboardEvent::MissionMismatch(MissionMismatch::Count {
            vehicle: 5,
            uploaded: 6
        })));
    assert_eq!(rig.ob.mission_items(), &box_mission()[..]);
}

/// The upload's late repeats reach PX4 after it accepted the upload, and it answers each
/// with an error MISSION_ACK while it serves the verification: those do not end it.
#[test]
fn error_acks_for_stray_upload_items_do_not_end_the_verification() {
    let mut rig = Rig::new();
    rig.boot();
    rig.ob.upload_mission_items(&box_mission()).unwrap();
    assert!(rig.run_until(5_000, |r| r.ob.mission_uploaded()));
    let now = rig.now();
    rig.ob.apply(now, &rig.tel, &Action::VerifyMission).unwrap();
    rig.pump();
    rig.deliver(offboard_rig::mission_ack(
        mav::MavMissionResult::MAV_MISSION_ERROR,
        0,
    ));
    assert!(rig.run_until(5_000, |r| !r.ob.pending().transfer));
    assert!(rig
        .events_only()
        .contains(&OffboardEvent::MissionVerified { count: 6 }));
}

/// PX4 sends an item uploaded in GLOBAL_RELATIVE_ALT (3) back in GLOBAL_RELATIVE_ALT_INT
/// (6): the same item. Another frame is a difference.
#[test]
fn the_int_variant_of_a_global_frame_is_the_same_item() {
    let rig = verified_after(|m| {
        for it in m.iter_mut() {
            if it.frame == 3 {
                it.frame = 6;
            }
        }
    });
    assert!(rig
        .events_only()
        .contains(&OffboardEvent::MissionVerified { count: 6 }));
    let rig = verified_after(|m| m[2].frame = 4);
    assert!(rig
        .events_only()
        .iter()
        .any(|e| matches!(e, OffboardEvent::MissionMismatch(MissionMismatch::Item { uploaded, .. }) if uploaded.seq == 2)));
}

/// A verification asked during an upload PX4 rejects still ends, with what the vehicle holds
/// (here: no mission, so another count), not at the step's timeout.
#[test]
fn asked_during_an_upload_that_fails_it_still_compares_and_ends() {
    let mut rig = Rig::new();
    rig.px4.reject_mission = Some(mav::MavMissionResult::MAV_MISSION_INVALID_PARAM1);
    rig.boot();
    rig.ob.upload_mission_items(&box_mission()).unwrap();
    let now = rig.now();
    rig.ob.apply(now, &rig.tel, &Action::VerifyMission).unwrap();
    assert!(rig.run_until(10_000, |r| r
        .events_only()
        .iter()
        .any(|e| matches!(e, OffboardEvent::MissionMismatch(_)))));
    let events = rig.events_only();
    assert!(events
        .iter()
        .any(|e| matches!(e, OffboardEvent::MissionUploadFailed(_))));
    assert!(
        events.contains(&OffboardEvent::MissionMismatch(MissionMismatch::Count {
            vehicle: 0,
            uploaded: 6
        }))
    );
    assert!(!rig.ob.pending().transfer);
}
