//! MissionItem constructors: units in, MAVLink's numbers out, bad coordinates refused; and the
//! enums the API hands out instead of raw codes.

use nexus_core::mav::{MavCmd, MavFrame, MavMissionResult, MavSeverity};
use nexus_core::mission::{validate_mission, ItemError, MissionAck, MissionItem};
use nexus_core::telemetry::{Severity, Text};

#[test]
fn constructors_carry_units_and_validate() {
    let mission = [
        MissionItem::takeoff(47.397742, 8.545594, 10.0).unwrap(),
        MissionItem::waypoint(47.398, 8.546, 15.0).unwrap(),
        MissionItem::loiter_s(47.398, 8.546, 15.0, 5.0).unwrap(),
        MissionItem::land(47.397742, 8.545594).unwrap(),
        MissionItem::return_to_launch(),
    ];
    let mission: Vec<_> = mission
        .into_iter()
        .enumerate()
        .map(|(i, it)| it.at(i as u16))
        .collect();
    validate_mission(&mission).expect("every constructed item goes on the wire");

    let expect = [
        MavCmd::MAV_CMD_NAV_TAKEOFF,
        MavCmd::MAV_CMD_NAV_WAYPOINT,
        MavCmd::MAV_CMD_NAV_LOITER_TIME,
        MavCmd::MAV_CMD_NAV_LAND,
        MavCmd::MAV_CMD_NAV_RETURN_TO_LAUNCH,
    ];
    for (it, cmd) in mission.iter().zip(expect) {
        assert_eq!(it.mav_command().unwrap(), cmd);
    }
    let wp = &mission[1];
    assert_eq!(
        wp.mav_frame().unwrap(),
        MavFrame::MAV_FRAME_GLOBAL_RELATIVE_ALT
    );
    assert_eq!((wp.x, wp.y), (473_980_000, 85_460_000));
    assert!((wp.lat_deg() - 47.398).abs() < 1e-9);
    assert_eq!(wp.z, 15.0);
    assert!(wp.params[3].is_nan(), "heading left to PX4");
    assert_eq!(mission[2].params[0], 5.0, "loiter time, s");
    assert_eq!(mission[4].params, [0.0; 4]);
}

#[test]
fn coordinates_mavlink_cannot_carry_are_refused() {
    assert_eq!(
        MissionItem::waypoint(f64::NAN, 8.5, 10.0),
        Err(ItemError::BadCoordinate)
    );
    assert_eq!(
        MissionItem::land(47.0, 300.0),
        Err(ItemError::BadCoordinate)
    );
    assert!(MissionItem::takeoff(47.0, f64::INFINITY, 5.0).is_err());
}

#[test]
fn codes_read_as_enums() {
    let accepted: MissionAck = MavMissionResult::MAV_MISSION_ACCEPTED;
    assert_eq!(accepted as u8, 0);
    let mut text = Text {
        seq: 1,
        severity: 4,
        sim_ms: None,
        text: heapless::String::new(),
    };
    assert_eq!(text.level(), Some(Severity::MAV_SEVERITY_WARNING));
    assert_eq!(text.level(), Some(MavSeverity::MAV_SEVERITY_WARNING));
    text.severity = 9;
    assert_eq!(text.level(), None);
}
