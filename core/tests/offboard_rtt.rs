//! Retry timers that follow the measured round trip (RFC 6298 with Karn's rule): a vehicle
//! that answers slowly is not flooded with duplicates once its round trip is known, a fast one
//! is still resent to at the configured floor, and on a vehicle clock running ×5 the timer,
//! measured in that clock, grows with it.

// MISSION_SET_CURRENT: the message PX4 handles (docs/px4-wire.md §Mission progress).
#![allow(deprecated)]

mod offboard_rig;

use nexus_core::mav;
use nexus_core::offboard::{OffboardEvent, RTO_CEILING_MS};
use nexus_core::Mode;
use offboard_rig::{box_mission, Rig};

fn sent_of(rig: &Rig, from: usize, f: impl Fn(&mav::MavMessage) -> bool) -> Vec<u64> {
    rig.sent[from..]
        .iter()
        .filter(|s| f(&s.msg))
        .map(|s| s.sim_ms)
        .collect()
}

fn is_count(m: &mav::MavMessage) -> bool {
    matches!(m, mav::MavMessage::MISSION_COUNT(_))
}

fn is_request_int(m: &mav::MavMessage) -> bool {
    matches!(m, mav::MavMessage::MISSION_REQUEST_INT(_))
}

fn is_item(m: &mav::MavMessage) -> bool {
    matches!(m, mav::MavMessage::MISSION_ITEM_INT(_))
}

fn is_mode(m: &mav::MavMessage) -> bool {
    matches!(m, mav::MavMessage::COMMAND_LONG(c)
        if c.command == mav::MavCmd::MAV_CMD_DO_SET_MODE)
}

/// A vehicle 400 ms of wall away each way (800 ms round trip) whose clock runs ×5: 4 s of its
/// time per round trip, four times the 1 s mission floor.
fn slow_rig() -> Rig {
    let mut rig = Rig::new();
    rig.speed = 5.0;
    rig.latency_ms = 400;
    rig.boot();
    rig
}

#[test]
fn a_slow_vehicle_gets_no_duplicates_once_its_round_trip_is_known() {
    let mut rig = slow_rig();
    assert_eq!(rig.ob.link_rtt().samples(), 0);
    assert_eq!(
        rig.ob.retry_timers_ms(),
        (1_500, 1_000),
        "the floors at first"
    );

    // Upload: before any sample the count goes out on the floor timer, backing off.
    rig.ob.upload_mission_items(&box_mission()).unwrap();
    assert!(rig.run_until(120_000, |r| r.ob.mission_uploaded()));
    let counts = sent_of(&rig, 0, is_count);
    assert!(
        counts.len() >= 2,
        "the floor is shorter than the round trip: {counts:?}"
    );
    // Every item after the first was asked for once and sent once: the re-asks PX4 makes
    // every 0.26 s while the item is in flight crossed it and were not answered.
    let items = sent_of(&rig, 0, is_item);
    assert_eq!(items.len(), box_mission().len(), "{items:?}");

    // The estimate is in the vehicle's clock: 800 ms of wall at ×5 is ~4 000 ms.
    let rtt = *rig.ob.link_rtt();
    let srtt = rtt.srtt_ms().unwrap();
    assert!((3_900.0..=4_300.0).contains(&srtt), "srtt {srtt} ms");
    assert!(rtt.samples() >= box_mission().len() as u32 - 1, "{rtt:?}");
    let (command_ms, mission_ms) = rig.ob.retry_timers_ms();
    assert!(
        mission_ms > 4_000 && mission_ms < RTO_CEILING_MS,
        "{mission_ms}"
    );
    assert!(command_ms > 4_000, "{command_ms}");

    // Download: each request goes out once, never resent before its answer.
    let from = rig.sent.len();
    rig.ob.download_mission();
    assert!(rig.run_until(120_000, |r| r
        .events_only()
        .iter()
        .any(|e| matches!(e, OffboardEvent::MissionDownloaded { .. }))));
    let requests = sent_of(&rig, from, is_request_int);
    assert_eq!(requests.len(), box_mission().len(), "{requests:?}");
    let lists = sent_of(&rig, from, |m| {
        matches!(m, mav::MavMessage::MISSION_REQUEST_LIST(_))
    });
    assert_eq!(lists.len(), 1, "{lists:?}");

    // A mode: one command, not one per floor (1.5 s) of a 4 s round trip.
    let from = rig.sent.len();
    rig.ob.set_mode(Mode::Position);
    assert!(rig.run_until(60_000, |r| r.ob.mode(&r.tel) == Some(Mode::Position)));
    assert_eq!(sent_of(&rig, from, is_mode).len(), 1);
}

#[test]
fn fixed_floor_timers_would_flood_the_same_slow_vehicle() {
    // A fresh machine on the same vehicle, nothing measured yet: its first request is resent
    // on the 1 s floor while the 4 s answer is on the way. Fixed timers do this to every
    // request; the estimate stops it after the first answers.
    let mut rig = slow_rig();
    rig.px4.mission = box_mission();
    rig.ob.download_mission();
    rig.run_ms(800);
    let lists = sent_of(&rig, 0, |m| {
        matches!(m, mav::MavMessage::MISSION_REQUEST_LIST(_))
    });
    assert!(
        lists.len() >= 2,
        "resent before the first answer: {lists:?}"
    );
    // Its answer is to a resent request: no sample (Karn), the timer stays backed off.
    assert!(rig.run_until(120_000, |r| r
        .events_only()
        .iter()
        .any(|e| matches!(e, OffboardEvent::MissionDownloaded { .. }))));
    assert!(
        rig.ob.link_rtt().samples() > 0,
        "items asked once give samples"
    );
}

#[test]
fn a_fast_vehicle_is_still_resent_to_at_the_floor() {
    let mut rig = Rig::new();
    rig.boot();
    rig.ob.upload_mission_items(&box_mission()).unwrap();
    assert!(rig.run_until(30_000, |r| r.ob.mission_uploaded()));
    let rtt = *rig.ob.link_rtt();
    assert!(
        rtt.samples() > 0 && rtt.srtt_ms().unwrap() < 50.0,
        "{rtt:?}"
    );
    assert_eq!(rig.ob.retry_timers_ms(), (1_500, 1_000));
    // PX4 now loses counts: resent every 1 s (the floor), then backing off.
    rig.px4.ignore_mission_count = true;
    let from = rig.sent.len();
    rig.ob.upload_mission_items(&box_mission()).unwrap();
    rig.run_ms(3_500);
    let counts = sent_of(&rig, from, is_count);
    assert_eq!(counts.len(), 3, "{counts:?}");
    assert!(
        (990..=1_010).contains(&(counts[1] - counts[0])),
        "{counts:?}"
    );
    assert!(
        (1_990..=2_010).contains(&(counts[2] - counts[1])),
        "{counts:?}"
    );
}
