//! One mission item, in the shape MISSION_ITEM_INT carries it.
//!
//! Items keep `frame` and `command` as the plain numbers a `.plan` file or a download gives, and
//! the offboard machine puts them on the wire as they are (MISSION_ITEM_INT's layout is fixed).
//! A number the common dialect does not define is refused when a mission is read
//! ([`crate::plan::read_plan`]) or lodged with the offboard machine, as an [`ItemError`]:
//! [`is_known_command`] and [`is_known_frame`] check against compact tables of the dialect's
//! values (a test compares them with the `mavlink` crate's enums for every possible value), so
//! the check costs a few hundred bytes of flash rather than the enums' 2 KiB conversion match.

use core::fmt;
use mavlink::dialects::common as mav;
use num_traits::FromPrimitive;

/// MAV_CMD_NAV_WAYPOINT: fly to a position.
pub const NAV_WAYPOINT: u16 = 16;
/// MAV_CMD_NAV_RETURN_TO_LAUNCH.
pub const NAV_RETURN_TO_LAUNCH: u16 = 20;
/// MAV_CMD_NAV_LAND.
pub const NAV_LAND: u16 = 21;
/// MAV_CMD_NAV_TAKEOFF.
pub const NAV_TAKEOFF: u16 = 22;
/// MAV_FRAME_GLOBAL_RELATIVE_ALT: `z` is metres over the home position.
pub const FRAME_GLOBAL_RELATIVE_ALT: u8 = 3;

/// The MAV_CMD values of the common dialect, as runs of consecutive values: (first, count).
/// `mission::tests` checks them against `mavlink`'s `MavCmd` for all 65 536 values.
const COMMAND_RUNS: [(u16, u8); 49] = [
    (16, 10),
    (30, 7),
    (80, 3),
    (84, 2),
    (92, 4),
    (112, 4),
    (159, 1),
    (176, 23),
    (200, 15),
    (220, 5),
    (240, 4),
    (245, 2),
    (252, 1),
    (260, 1),
    (262, 1),
    (300, 1),
    (310, 2),
    (400, 2),
    (405, 2),
    (410, 1),
    (420, 1),
    (500, 1),
    (510, 3),
    (519, 4),
    (525, 10),
    (600, 2),
    (611, 1),
    (1000, 2),
    (2000, 6),
    (2010, 1),
    (2500, 6),
    (2510, 2),
    (2520, 1),
    (2600, 1),
    (2800, 1),
    (3000, 2),
    (4000, 2),
    (4501, 1),
    (5000, 5),
    (5100, 1),
    (5200, 1),
    (5300, 1),
    (10001, 1),
    (30001, 2),
    (31000, 15),
    (32000, 1),
    (42006, 1),
    (42600, 1),
    (43000, 4),
];

/// Highest MAV_FRAME of the common dialect (its values are 0 to this, all defined).
const LAST_FRAME: u8 = 21;

/// Whether `command` is a MAV_CMD of the common dialect.
pub fn is_known_command(command: u16) -> bool {
    COMMAND_RUNS
        .iter()
        .any(|&(first, n)| command >= first && command - first < n as u16)
}

/// Whether `frame` is a MAV_FRAME of the common dialect.
pub fn is_known_frame(frame: u8) -> bool {
    frame <= LAST_FRAME
}

/// PX4's MISSION_ACK result by name (`MissionAck::MAV_MISSION_ACCEPTED`, …).
pub use mav::MavMissionResult as MissionAck;

/// One mission item.
///
/// Equality is bitwise on the float fields (a NaN param equals the same NaN): two items are
/// equal when they put the same bytes on the wire.
#[derive(Debug, Clone, Copy, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct MissionItem {
    /// Position in the mission, from 0; a mission's items have `seq` equal to their index.
    pub seq: u16,
    /// MAV_FRAME; 3 (GLOBAL_RELATIVE_ALT) means `z` is metres over home.
    pub frame: u8,
    /// MAV_CMD, e.g. 16 NAV_WAYPOINT, 22 NAV_TAKEOFF, 20 NAV_RETURN_TO_LAUNCH.
    pub command: u16,
    /// Whether PX4 proceeds to the next item on arrival.
    pub autocontinue: bool,
    /// param1..param4; NaN is MAVLink's "no value" (param4 NaN leaves the heading to PX4).
    pub params: [f32; 4],
    /// Latitude, degrees × 1e7 (or local x, per `frame`).
    pub x: i32,
    /// Longitude, degrees × 1e7 (or local y, per `frame`).
    pub y: i32,
    /// Altitude in metres, in this item's frame.
    pub z: f32,
}

impl MissionItem {
    fn global(
        command: mav::MavCmd,
        lat_deg: f64,
        lon_deg: f64,
        alt_rel_m: f32,
    ) -> Result<Self, ItemError> {
        let e7 = |deg| crate::offboard::geo::deg_to_e7(deg).ok_or(ItemError::BadCoordinate);
        Ok(MissionItem {
            seq: 0,
            frame: mav::MavFrame::MAV_FRAME_GLOBAL_RELATIVE_ALT as u8,
            command: command as u16,
            autocontinue: true,
            // param4 NaN: PX4 keeps its own heading.
            params: [0.0, 0.0, 0.0, f32::NAN],
            x: e7(lat_deg)?,
            y: e7(lon_deg)?,
            z: alt_rel_m,
        })
    }

    /// Fly to `lat_deg`, `lon_deg` (WGS84 degrees) at `alt_rel_m` metres above home
    /// (MAV_CMD_NAV_WAYPOINT, no hold, PX4's acceptance radius). `seq` 0: set it with
    /// [`MissionItem::at`]. Errors: [`ItemError::BadCoordinate`].
    pub fn waypoint(lat_deg: f64, lon_deg: f64, alt_rel_m: f32) -> Result<Self, ItemError> {
        Self::global(
            mav::MavCmd::MAV_CMD_NAV_WAYPOINT,
            lat_deg,
            lon_deg,
            alt_rel_m,
        )
    }

    /// Take off above `lat_deg`, `lon_deg` to `alt_rel_m` metres above home
    /// (MAV_CMD_NAV_TAKEOFF).
    pub fn takeoff(lat_deg: f64, lon_deg: f64, alt_rel_m: f32) -> Result<Self, ItemError> {
        Self::global(
            mav::MavCmd::MAV_CMD_NAV_TAKEOFF,
            lat_deg,
            lon_deg,
            alt_rel_m,
        )
    }

    /// Land at `lat_deg`, `lon_deg` (MAV_CMD_NAV_LAND; the altitude is PX4's ground).
    pub fn land(lat_deg: f64, lon_deg: f64) -> Result<Self, ItemError> {
        Self::global(mav::MavCmd::MAV_CMD_NAV_LAND, lat_deg, lon_deg, 0.0)
    }

    /// Return to the launch position and land there (MAV_CMD_NAV_RETURN_TO_LAUNCH).
    pub fn return_to_launch() -> Self {
        MissionItem {
            seq: 0,
            frame: mav::MavFrame::MAV_FRAME_MISSION as u8,
            command: mav::MavCmd::MAV_CMD_NAV_RETURN_TO_LAUNCH as u16,
            autocontinue: true,
            params: [0.0; 4],
            x: 0,
            y: 0,
            z: 0.0,
        }
    }

    /// Hold at `lat_deg`, `lon_deg`, `alt_rel_m` metres above home for `hold_s` seconds
    /// (MAV_CMD_NAV_LOITER_TIME), then go on.
    pub fn loiter_s(
        lat_deg: f64,
        lon_deg: f64,
        alt_rel_m: f32,
        hold_s: f32,
    ) -> Result<Self, ItemError> {
        let mut item = Self::global(
            mav::MavCmd::MAV_CMD_NAV_LOITER_TIME,
            lat_deg,
            lon_deg,
            alt_rel_m,
        )?;
        item.params[0] = hold_s;
        Ok(item)
    }

    /// This item at position `seq` of its mission (a mission's items are numbered from 0).
    pub fn at(mut self, seq: u16) -> Self {
        self.seq = seq;
        self
    }
}

/// Bitwise equality is an equivalence (a NaN equals the same NaN).
impl Eq for MissionItem {}

impl PartialEq for MissionItem {
    fn eq(&self, o: &Self) -> bool {
        self.seq == o.seq
            && self.frame == o.frame
            && self.command == o.command
            && self.autocontinue == o.autocontinue
            && self
                .params
                .iter()
                .zip(o.params.iter())
                .all(|(a, b)| a.to_bits() == b.to_bits())
            && self.x == o.x
            && self.y == o.y
            && self.z.to_bits() == o.z.to_bits()
    }
}

/// An item that cannot go on the wire as it stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive] // more causes will come; match with a `_` arm
pub enum ItemError {
    /// `command` is not a MAV_CMD of the common dialect.
    UnknownCommand {
        /// The item's seq.
        seq: u16,
        /// The unknown value.
        command: u16,
    },
    /// `frame` is not a MAV_FRAME of the common dialect.
    UnknownFrame {
        /// The item's seq.
        seq: u16,
        /// The unknown value.
        frame: u8,
    },
    /// The item at `index` carries `seq`; a mission's seqs must be 0, 1, 2, ….
    SeqMismatch {
        /// Position in the slice.
        index: usize,
        /// The seq it carries.
        seq: u16,
    },
    /// A latitude or longitude that MAVLink's degrees × 1e7 cannot carry (not finite, or
    /// beyond ±214°), given to a [`MissionItem`] constructor.
    BadCoordinate,
}

impl fmt::Display for ItemError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ItemError::BadCoordinate => {
                f.write_str("a latitude or longitude MAVLink cannot carry (degrees × 1e7)")
            }
            ItemError::UnknownCommand { seq, command } => {
                write!(f, "item {seq}: unknown MAV_CMD {command}")
            }
            ItemError::UnknownFrame { seq, frame } => {
                write!(f, "item {seq}: unknown MAV_FRAME {frame}")
            }
            ItemError::SeqMismatch { index, seq } => {
                write!(
                    f,
                    "item at index {index} carries seq {seq}; expected {index}"
                )
            }
        }
    }
}

/// So `?` converts it into `Box<dyn Error>` and other error types.
impl core::error::Error for ItemError {}

impl MissionItem {
    /// The command as the dialect's enum.
    pub fn mav_command(&self) -> Result<mav::MavCmd, ItemError> {
        mav::MavCmd::from_u16(self.command).ok_or(ItemError::UnknownCommand {
            seq: self.seq,
            command: self.command,
        })
    }

    /// The frame as the dialect's enum.
    pub fn mav_frame(&self) -> Result<mav::MavFrame, ItemError> {
        mav::MavFrame::from_u8(self.frame).ok_or(ItemError::UnknownFrame {
            seq: self.seq,
            frame: self.frame,
        })
    }

    /// Check that the item's command and frame are values of the common dialect.
    pub fn validate(&self) -> Result<(), ItemError> {
        if !is_known_command(self.command) {
            return Err(ItemError::UnknownCommand {
                seq: self.seq,
                command: self.command,
            });
        }
        if !is_known_frame(self.frame) {
            return Err(ItemError::UnknownFrame {
                seq: self.seq,
                frame: self.frame,
            });
        }
        Ok(())
    }

    /// The item a MISSION_ITEM_INT carries (a download).
    pub fn from_mav(m: &mav::MISSION_ITEM_INT_DATA) -> MissionItem {
        MissionItem {
            seq: m.seq,
            frame: m.frame as u8,
            command: m.command as u32 as u16,
            autocontinue: m.autocontinue != 0,
            params: [m.param1, m.param2, m.param3, m.param4],
            x: m.x,
            y: m.y,
            z: m.z,
        }
    }

    /// Latitude in degrees (`x / 1e7`), for the global frames.
    pub fn lat_deg(&self) -> f64 {
        self.x as f64 / 1e7
    }

    /// Longitude in degrees (`y / 1e7`), for the global frames.
    pub fn lon_deg(&self) -> f64 {
        self.y as f64 / 1e7
    }
}

/// Check a whole mission: seq equal to index, every item encodable.
pub fn validate_mission(items: &[MissionItem]) -> Result<(), ItemError> {
    for (index, it) in items.iter().enumerate() {
        if it.seq as usize != index {
            return Err(ItemError::SeqMismatch { index, seq: it.seq });
        }
        it.validate()?;
    }
    Ok(())
}

/// The seq of the mission's last NAV_WAYPOINT, if it has one.
pub fn last_waypoint(items: &[MissionItem]) -> Option<u16> {
    items
        .iter()
        .rev()
        .find(|it| it.command == NAV_WAYPOINT)
        .map(|it| it.seq)
}

/// A mission run's progress as PX4 reported it: what the `reached` and `mission_complete`
/// conditions read. The offboard machine knows the mission and the run
/// ([`crate::offboard::Offboard::mission_progress`]); the driver hands it to the wait engine
/// ([`crate::engine::Engine::set_mission_progress`]; the client does after every frame and
/// action).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct MissionProgress {
    /// Highest item PX4 reported reached (MISSION_ITEM_REACHED) in this run.
    pub reached: Option<u16>,
    /// The last reachable item was reported reached in this run.
    pub complete: bool,
    /// A verifying download ([`crate::Action::VerifyMission`]) found the vehicle's mission
    /// identical, item for item, to the one uploaded (reset by an upload or a new verify).
    pub verified: bool,
    /// The vehicle disarmed while flying the last reachable item and its arrival was not
    /// reported: the one-shot MISSION_ITEM_REACHED may have been lost on the link, and PX4's
    /// next MISSION_CURRENT (1 Hz) or reached repeat will say. Until it comes (or a retry timer
    /// runs out) a wait on `reached` or `mission_complete` holds its guards, so a `disarmed`
    /// guard cannot fail a mission PX4 completed.
    pub settling: bool,
}

/// VTOL_LAND: ends a mission like NAV_LAND.
pub const NAV_VTOL_LAND: u16 = 85;

/// The seq of the last item PX4 reports reached (MISSION_ITEM_REACHED) when it flies this
/// mission from the top; `None` when it reports none (empty, or an RTL first).
///
/// From PX4's navigator (`mission_block.cpp`, `mission_base.cpp`) and the simulated vehicle
/// that follows it: a LAND (or VTOL_LAND) item is reached on touchdown, and the mission then
/// ends ("Mission finished, landed") — the vehicle disarms on the ground, so nothing after the
/// first landing item is flown; an RETURN_TO_LAUNCH item is never reported reached (PX4 hands
/// over to RTL mode), so the item before it is the last one reached. Otherwise the last item.
pub fn last_reachable(items: &[MissionItem]) -> Option<u16> {
    for (i, it) in items.iter().enumerate() {
        match it.command {
            NAV_LAND | NAV_VTOL_LAND => return Some(i as u16),
            NAV_RETURN_TO_LAUNCH => return i.checked_sub(1).map(|p| p as u16),
            _ => {}
        }
    }
    items.len().checked_sub(1).map(|p| p as u16)
}

/// Items after [`last_reachable`] that PX4 will not fly, other than a final RTL (which it
/// flies as RTL mode): items after the first landing item, or after an RTL that is not last.
pub fn unreachable_items(items: &[MissionItem]) -> usize {
    let n = items.len();
    let Some(last) = last_reachable(items) else {
        // An RTL first (or nothing): only a lone RTL is flown.
        return n.saturating_sub(1);
    };
    let after = n - 1 - last as usize;
    match items.get(last as usize + 1) {
        Some(it) if it.command == NAV_RETURN_TO_LAUNCH => after - 1,
        _ => after,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_values_are_errors_not_panics() {
        let mut it = MissionItem {
            command: NAV_WAYPOINT,
            frame: FRAME_GLOBAL_RELATIVE_ALT,
            ..MissionItem::default()
        };
        assert_eq!(it.validate(), Ok(()));
        it.command = 65_000;
        assert_eq!(
            it.validate(),
            Err(ItemError::UnknownCommand {
                seq: 0,
                command: 65_000
            })
        );
        it.command = NAV_WAYPOINT;
        it.frame = 200;
        assert_eq!(
            it.validate(),
            Err(ItemError::UnknownFrame { seq: 0, frame: 200 })
        );
    }

    #[test]
    fn the_tables_hold_exactly_the_dialects_values() {
        for v in 0..=u16::MAX {
            assert_eq!(
                is_known_command(v),
                mav::MavCmd::from_u16(v).is_some(),
                "MAV_CMD {v}"
            );
        }
        for v in 0..=u8::MAX {
            assert_eq!(
                is_known_frame(v),
                mav::MavFrame::from_u8(v).is_some(),
                "MAV_FRAME {v}"
            );
        }
    }

    #[test]
    fn nan_params_compare_bitwise() {
        let a = MissionItem {
            params: [0.0, 0.0, 0.0, f32::NAN],
            ..MissionItem::default()
        };
        assert_eq!(a, a);
        let mut b = a;
        b.params[3] = 0.0;
        assert_ne!(a, b);
    }

    #[test]
    fn mission_checks_seq_and_finds_last_waypoint() {
        let mk = |seq, command| MissionItem {
            seq,
            command,
            frame: FRAME_GLOBAL_RELATIVE_ALT,
            ..MissionItem::default()
        };
        let items = [
            mk(0, NAV_TAKEOFF),
            mk(1, NAV_WAYPOINT),
            mk(2, NAV_WAYPOINT),
            mk(3, NAV_RETURN_TO_LAUNCH),
        ];
        assert_eq!(validate_mission(&items), Ok(()));
        assert_eq!(last_waypoint(&items), Some(2));
        assert_eq!(last_waypoint(&items[..1]), None);
        let bad = [mk(0, NAV_TAKEOFF), mk(2, NAV_WAYPOINT)];
        assert_eq!(
            validate_mission(&bad),
            Err(ItemError::SeqMismatch { index: 1, seq: 2 })
        );
    }
}
