//! PX4 messages a client may ask for beyond the basics: the events protocol, the standard-modes
//! protocol and GPS_GLOBAL_ORIGIN, against what the px4-traces hold.

use super::*;
use crate::events::{id, INITIAL_SEQUENCE};
use mav::MavCmd::*;

fn decoded<M: MessageData>(g: &Gcs) -> Vec<(u64, M)> {
    g.raw
        .iter()
        .filter(|(_, id, _)| *id == M::ID)
        .map(|(t, _, p)| (*t, M::deser(MavlinkVersion::V2, p).unwrap()))
        .collect()
}

/// The latest `M` received.
fn last<M: MessageData + Clone>(g: &Gcs) -> M {
    decoded::<M>(g).last().expect("one received").1.clone()
}

/// MAV_CMD_REQUEST_MESSAGE for `M`, with `param2`.
fn request<M: MessageData>(g: &mut Gcs, param2: f32) {
    g.cmd_long(
        MAV_CMD_REQUEST_MESSAGE,
        [M::ID as f32, param2, 0.0, 0.0, 0.0, 0.0, 0.0],
    );
}

#[test]
fn events_for_arming_takeoff_landing_and_disarming_as_box_x4() {
    let mut g = Gcs::airborne(3.0);
    g.cmd_long(MAV_CMD_NAV_LAND, [0.0; 7]);
    assert!(g.run_until(60_000, |g| !g.armed()));
    g.run(500);
    let events: Vec<(u32, u8, u8)> = decoded::<mav::EVENT_DATA>(&g)
        .iter()
        .map(|(_, e)| (e.id, e.log_levels, e.arguments[0]))
        .collect();
    // Armed by external command (4), takeoff, landing, disarmed by landing (6): ids, levels
    // and arguments as PX4 sent them in box-x4.
    assert_eq!(
        events,
        vec![
            (0x0190_caf3, 0x66, 4),
            (0x0141_4569, 0x66, 0),
            (0x0196_38ac, 0x66, 0),
            (0x01f4_6777, 0x66, 6),
        ]
    );
    let seqs: Vec<u16> = decoded::<mav::EVENT_DATA>(&g)
        .iter()
        .map(|(_, e)| e.sequence)
        .collect();
    let want: Vec<u16> = (0..4).map(|k| INITIAL_SEQUENCE.wrapping_add(k)).collect();
    assert_eq!(seqs, want);
    // CURRENT_EVENT_SEQUENCE every ~3 s from the mavlink start, naming the newest event; the
    // reset flag before any event and with the first one, not after.
    let cur = decoded::<mav::CURRENT_EVENT_SEQUENCE_DATA>(&g);
    let up = crate::BootTimings::default().mavlink_start_ms;
    assert!(
        cur[0].0 >= up && cur[0].0 < up + 100,
        "first at {}",
        cur[0].0
    );
    assert!(cur[0].1.flags.bits() == 1);
    for w in cur.windows(2).filter(|w| w[1].1.flags.bits() == 0) {
        let dt = w[1].0 - w[0].0;
        assert!((2_990..=3_100).contains(&dt), "{dt} ms apart");
    }
    assert_eq!(
        cur.last().unwrap().1.sequence,
        INITIAL_SEQUENCE.wrapping_add(3)
    );
    assert_eq!(cur.last().unwrap().1.flags.bits(), 0);
}

#[test]
fn request_event_resends_held_events_and_errors_for_the_rest() {
    let mut g = Gcs::airborne(3.0);
    let armed = decoded::<mav::EVENT_DATA>(&g)[0].1.clone();
    assert_eq!(armed.id, id("commander_armed_by"));
    let from = g.raw.len();
    g.send(&mav::REQUEST_EVENT_DATA {
        first_sequence: armed.sequence.wrapping_sub(2),
        last_sequence: armed.sequence.wrapping_add(1),
        target_system: 1,
        target_component: 1,
    });
    let got: Vec<(u32, Vec<u8>)> = g.raw[from..]
        .iter()
        .map(|(_, id, p)| (*id, p.clone()))
        .collect();
    assert_eq!(got.len(), 4, "{got:?}");
    // Two before the first event: never held; the oldest available is the arming.
    for (id, p) in &got[..2] {
        assert_eq!(*id, mav::RESPONSE_EVENT_ERROR_DATA::ID);
        let e = mav::RESPONSE_EVENT_ERROR_DATA::deser(MavlinkVersion::V2, p).unwrap();
        assert_eq!(e.sequence_oldest_available, armed.sequence);
        assert_eq!((e.target_system, e.target_component), (255, 190));
    }
    let again = mav::EVENT_DATA::deser(MavlinkVersion::V2, &got[2].1).unwrap();
    assert_eq!(again, armed);
    let takeoff = mav::EVENT_DATA::deser(MavlinkVersion::V2, &got[3].1).unwrap();
    assert_eq!(takeoff.id, id("commander_takeoff_detected"));
    // Addressed to another system: ignored.
    let from = g.raw.len();
    g.send(&mav::REQUEST_EVENT_DATA {
        first_sequence: armed.sequence,
        last_sequence: armed.sequence,
        target_system: 9,
        target_component: 1,
    });
    assert_eq!(g.raw.len(), from);
}

#[test]
fn available_modes_current_mode_and_origin_on_request() {
    let mut g = Gcs::booted();
    let from = g.log.len();
    request::<mav::AVAILABLE_MODES_DATA>(&mut g, 0.0);
    let modes = decoded::<mav::AVAILABLE_MODES_DATA>(&g);
    assert_eq!(modes.len(), crate::modes::AVAILABLE.len());
    let customs: Vec<u32> = modes.iter().map(|(_, m)| m.custom_mode).collect();
    for m in [
        Mode::Hold,
        Mode::Mission,
        Mode::Takeoff,
        Mode::Land,
        Mode::Rtl,
        Mode::Offboard,
    ] {
        assert!(customs.contains(&m.custom_mode()), "{m:?} listed");
    }
    // One by index, past the end denied.
    request::<mav::AVAILABLE_MODES_DATA>(&mut g, 4.0);
    let one = last::<mav::AVAILABLE_MODES_DATA>(&g);
    assert_eq!(
        (one.mode_index, one.custom_mode),
        (4, Mode::Mission.custom_mode())
    );
    assert_eq!(
        one.standard_mode,
        mav::MavStandardMode::MAV_STANDARD_MODE_MISSION
    );
    request::<mav::AVAILABLE_MODES_DATA>(&mut g, 99.0);
    // CURRENT_MODE on request: Hold, no standard mode (as the traces); then Takeoff is 8.
    request::<mav::CURRENT_MODE_DATA>(&mut g, 0.0);
    let cur = last::<mav::CURRENT_MODE_DATA>(&g);
    assert_eq!(cur.custom_mode, Mode::Hold.custom_mode());
    assert_eq!(cur.standard_mode as u8, 0);
    g.set_mode(Mode::Takeoff);
    request::<mav::CURRENT_MODE_DATA>(&mut g, 0.0);
    let cur = last::<mav::CURRENT_MODE_DATA>(&g);
    assert_eq!(
        (cur.custom_mode, cur.standard_mode as u8),
        (Mode::Takeoff.custom_mode(), 8)
    );
    // GPS_GLOBAL_ORIGIN: once just after the first heartbeat, again on request, the pad.
    let origins = decoded::<mav::GPS_GLOBAL_ORIGIN_DATA>(&g);
    assert_eq!(origins.len(), 1);
    // PX4: 1.27-1.28 s, just after its first heartbeat.
    assert!(origins[0].0 < 1_300, "origin sent at {} ms", origins[0].0);
    request::<mav::GPS_GLOBAL_ORIGIN_DATA>(&mut g, 0.0);
    let origins = decoded::<mav::GPS_GLOBAL_ORIGIN_DATA>(&g);
    assert_eq!(origins.len(), 2);
    let pad = crate::GeoPoint::SIH_DEFAULT;
    assert_eq!(origins[1].1.latitude, (pad.lat_deg * 1e7).round() as i32);
    assert_eq!(
        origins[1].1.altitude,
        (pad.alt_amsl_m * 1000.0).round() as i32
    );
    // No AVAILABLE_MODES_MONITOR: the set of modes never changes.
    assert!(decoded::<mav::AVAILABLE_MODES_MONITOR_DATA>(&g).is_empty());
    let acks: Vec<Ev> = g
        .events(from)
        .into_iter()
        .filter(|e| matches!(e, Ev::Ack { cmd: 512, .. }))
        .collect();
    let results: Vec<u8> = acks
        .iter()
        .map(|e| match e {
            Ev::Ack { result, .. } => *result,
            _ => unreachable!(),
        })
        .collect();
    assert_eq!(results, vec![0, 0, 2, 0, 0, 0]);
}
