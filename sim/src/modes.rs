//! The standard-modes protocol as PX4 answers it (`streams/AVAILABLE_MODES.hpp`,
//! `lib/modes/standard_modes.hpp`, `lib/modes/ui.hpp`): AVAILABLE_MODES (435) on
//! MAV_CMD_REQUEST_MESSAGE, one message per mode (param2 0) or the one asked for (param2 =
//! 1-based index); CURRENT_MODE (436) with the standard mode of the mode in force.
//!
//! AVAILABLE_MODES_MONITOR (437) is not sent: PX4 sends it only once the set of modes changed
//! after boot (an external mode registered, the selectable set changed), which never happens
//! here; the traces hold none.

use mav::{MavModeProperty, MavStandardMode};
use mavlink::dialects::common as mav;
use mavlink::types::CharArray;
use nexus_core::Mode;

/// The modes PX4 lists for a multicopter, in its nav_state order (`getValidNavStates`), with
/// its nav_state names (`nav_state_names`). PX4 main also lists Altitude Cruise and Guided
/// Course (nav_states 8 and 7), Descend (12) and Termination (13); this vehicle flies none of
/// them, so it does not offer them.
pub const AVAILABLE: &[(Mode, &str)] = &[
    (Mode::Manual, "Manual"),
    (Mode::Altitude, "Altitude"),
    (Mode::Position, "Position"),
    (Mode::Mission, "Mission"),
    (Mode::Hold, "Hold"),
    (Mode::Rtl, "Return"),
    (Mode::PositionSlow, "Position Slow"),
    (Mode::Acro, "Acro"),
    (Mode::Offboard, "Offboard"),
    (Mode::Stabilized, "Stabilized"),
    (Mode::Takeoff, "Takeoff"),
    (Mode::Land, "Land"),
    (Mode::FollowMe, "Follow Target"),
    (Mode::PrecisionLand, "Precision Landing"),
    (Mode::Orbit, "Orbit"),
    (Mode::VtolTakeoff, "VTOL Takeoff"),
];

/// `getStandardModeFromNavState` for a multicopter (not VTOL): Hold is no standard mode on
/// PX4 (CURRENT_MODE standard_mode 0 in Hold, 8 in Takeoff, 6 in Mission in the traces).
pub fn standard_mode(m: Mode) -> MavStandardMode {
    match m {
        Mode::Rtl => MavStandardMode::MAV_STANDARD_MODE_SAFE_RECOVERY,
        Mode::Mission => MavStandardMode::MAV_STANDARD_MODE_MISSION,
        Mode::Land => MavStandardMode::MAV_STANDARD_MODE_LAND,
        Mode::Takeoff => MavStandardMode::MAV_STANDARD_MODE_TAKEOFF,
        Mode::Altitude => MavStandardMode::MAV_STANDARD_MODE_ALTITUDE_HOLD,
        Mode::Position => MavStandardMode::MAV_STANDARD_MODE_POSITION_HOLD,
        Mode::Orbit => MavStandardMode::MAV_STANDARD_MODE_ORBIT,
        _ => MavStandardMode::MAV_STANDARD_MODE_NON_STANDARD,
    }
}

/// AVAILABLE_MODES for the mode at 1-based `index` of [`AVAILABLE`]; `None` out of range.
/// A non-standard mode carries its name; every mode but Altitude and Position is "advanced"
/// (`mode_util::isAdvanced`); all are user-selectable (no external modes).
pub fn available_mode(index: usize) -> Option<mav::AVAILABLE_MODES_DATA> {
    let &(mode, name) = AVAILABLE.get(index.checked_sub(1)?)?;
    let standard = standard_mode(mode);
    let mut properties = MavModeProperty::empty();
    if !matches!(mode, Mode::Altitude | Mode::Position) {
        properties |= MavModeProperty::MAV_MODE_PROPERTY_ADVANCED;
    }
    let mut mode_name = [0u8; 35];
    if standard == MavStandardMode::MAV_STANDARD_MODE_NON_STANDARD {
        mode_name[..name.len()].copy_from_slice(name.as_bytes());
    }
    Some(mav::AVAILABLE_MODES_DATA {
        custom_mode: mode.custom_mode(),
        properties,
        number_modes: AVAILABLE.len() as u8,
        mode_index: index as u8,
        standard_mode: standard,
        mode_name: CharArray::new(mode_name),
    })
}

/// The answer to MAV_CMD_REQUEST_MESSAGE(435, param2): all modes for 0, the one at that
/// index, or `None` (PX4: the request fails, MAV_RESULT_DENIED) for an index past the list.
pub fn requested(param2: f32) -> Option<Vec<mav::AVAILABLE_MODES_DATA>> {
    let index = param2.round();
    if !(0.0..=255.0).contains(&index) {
        return None;
    }
    match index as usize {
        0 => Some((1..=AVAILABLE.len()).filter_map(available_mode).collect()),
        i => available_mode(i).map(|m| vec![m]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_modes_once_each_with_px4s_custom_modes() {
        let all = requested(0.0).unwrap();
        assert_eq!(all.len(), AVAILABLE.len());
        for (k, m) in all.iter().enumerate() {
            assert_eq!(m.mode_index as usize, k + 1);
            assert_eq!(m.number_modes as usize, AVAILABLE.len());
        }
        let hold = all
            .iter()
            .find(|m| m.custom_mode == 4 << 16 | 3 << 24)
            .unwrap();
        assert_eq!(
            hold.standard_mode,
            MavStandardMode::MAV_STANDARD_MODE_NON_STANDARD
        );
        assert_eq!(hold.mode_name.to_str().unwrap(), "Hold");
        let pos = &requested(3.0).unwrap()[0];
        assert_eq!(
            pos.standard_mode,
            MavStandardMode::MAV_STANDARD_MODE_POSITION_HOLD
        );
        assert!(pos.properties.is_empty() && pos.mode_name.to_str().unwrap().is_empty());
        assert!(requested(17.0).is_none() && requested(-1.0).is_none());
    }

    #[test]
    fn standard_modes_as_the_traces_show() {
        assert_eq!(standard_mode(Mode::Takeoff) as u8, 8);
        assert_eq!(standard_mode(Mode::Mission) as u8, 6);
        assert_eq!(standard_mode(Mode::Hold) as u8, 0);
    }
}
