//! PX4's flight modes: friendly names ↔ the main/sub mode pair in HEARTBEAT.custom_mode.
//!
//! PX4 packs its mode as `custom_mode = main << 16 | sub << 24`; sub modes are only used under
//! AUTO (4) and POSCTL (3). Names compare case-insensitively; a mode this table does not know
//! still round-trips as `main=…,sub=…`.

use core::fmt;

/// A PX4 flight mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Mode {
    /// MANUAL (1/0): direct stick control.
    Manual,
    /// ALTCTL (2/0): altitude hold with sticks.
    Altitude,
    /// POSCTL (3/0): position hold with sticks.
    Position,
    /// POSCTL/ORBIT (3/1).
    Orbit,
    /// POSCTL/SLOW (3/2).
    PositionSlow,
    /// AUTO/READY (4/1).
    Ready,
    /// AUTO/TAKEOFF (4/2): climb to MIS_TAKEOFF_ALT, then Hold.
    Takeoff,
    /// AUTO/LOITER (4/3): hold position; PX4's boot mode.
    Hold,
    /// AUTO/MISSION (4/4): fly the uploaded mission.
    Mission,
    /// AUTO/RTL (4/5): return to launch.
    Rtl,
    /// AUTO/LAND (4/6): land in place.
    Land,
    /// AUTO/FOLLOW_TARGET (4/8).
    FollowMe,
    /// AUTO/PRECLAND (4/9).
    PrecisionLand,
    /// AUTO/VTOL_TAKEOFF (4/10).
    VtolTakeoff,
    /// ACRO (5/0): rate control with sticks.
    Acro,
    /// OFFBOARD (6/0): external setpoints.
    Offboard,
    /// STABILIZED (7/0): attitude stabilisation with sticks.
    Stabilized,
    /// A main/sub pair this table does not name.
    Unknown {
        /// PX4 main mode.
        main: u8,
        /// PX4 sub mode.
        sub: u8,
    },
}

struct Entry {
    name: &'static str,
    mode: Mode,
    main: u8,
    sub: u8,
}

const fn e(name: &'static str, mode: Mode, main: u8, sub: u8) -> Entry {
    Entry {
        name,
        mode,
        main,
        sub,
    }
}

/// The table, canonical names first (in the order an error lists them).
static TABLE: [Entry; 17] = [
    e("Manual", Mode::Manual, 1, 0),
    e("Altitude", Mode::Altitude, 2, 0),
    e("Position", Mode::Position, 3, 0),
    e("Orbit", Mode::Orbit, 3, 1),
    e("PositionSlow", Mode::PositionSlow, 3, 2),
    e("Ready", Mode::Ready, 4, 1),
    e("Takeoff", Mode::Takeoff, 4, 2),
    e("Hold", Mode::Hold, 4, 3),
    e("Mission", Mode::Mission, 4, 4),
    e("RTL", Mode::Rtl, 4, 5),
    e("Land", Mode::Land, 4, 6),
    e("FollowMe", Mode::FollowMe, 4, 8),
    e("PrecisionLand", Mode::PrecisionLand, 4, 9),
    e("VtolTakeoff", Mode::VtolTakeoff, 4, 10),
    e("Acro", Mode::Acro, 5, 0),
    e("Offboard", Mode::Offboard, 6, 0),
    e("Stabilized", Mode::Stabilized, 7, 0),
];

/// Other spellings people use for the same modes (PX4's internal names, QGC's labels).
static ALIASES: [(&str, Mode); 8] = [
    ("Loiter", Mode::Hold),
    ("AltCtl", Mode::Altitude),
    ("PosCtl", Mode::Position),
    ("Return", Mode::Rtl),
    ("ReturnToLaunch", Mode::Rtl),
    ("Auto.Loiter", Mode::Hold),
    ("Auto.Mission", Mode::Mission),
    ("Stabilize", Mode::Stabilized),
];

/// A mode name that is neither in the table nor a `main=…,sub=…` pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct UnknownMode;

impl fmt::Display for UnknownMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("unknown mode; known: ")?;
        for (i, entry) in TABLE.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            f.write_str(entry.name)?;
        }
        Ok(())
    }
}

/// So `?` converts it into `Box<dyn Error>` and other error types.
impl core::error::Error for UnknownMode {}

impl Mode {
    /// Look a mode up by name, case-insensitively; also accepts `main=M,sub=S`.
    pub fn from_name(name: &str) -> Result<Mode, UnknownMode> {
        let name = name.trim();
        if let Some(entry) = TABLE.iter().find(|en| en.name.eq_ignore_ascii_case(name)) {
            return Ok(entry.mode);
        }
        if let Some((_, mode)) = ALIASES.iter().find(|(a, _)| a.eq_ignore_ascii_case(name)) {
            return Ok(*mode);
        }
        parse_pair(name)
            .map(|(main, sub)| Mode::from_main_sub(main, sub))
            .ok_or(UnknownMode)
    }

    /// The mode PX4 reports in a HEARTBEAT's `custom_mode`.
    pub fn from_custom_mode(custom_mode: u32) -> Mode {
        Mode::from_main_sub((custom_mode >> 16) as u8, (custom_mode >> 24) as u8)
    }

    /// The mode for a main/sub pair.
    pub fn from_main_sub(main: u8, sub: u8) -> Mode {
        // Outside AUTO and POSCTL, PX4 leaves the sub mode 0 but does not promise it.
        let known = TABLE
            .iter()
            .find(|en| en.main == main && (en.sub == sub || (sub == 0 && en.sub == 0)));
        match known {
            Some(entry) => entry.mode,
            None if !matches!(main, 3 | 4) => TABLE
                .iter()
                .find(|en| en.main == main)
                .map(|en| en.mode)
                .unwrap_or(Mode::Unknown { main, sub }),
            None => Mode::Unknown { main, sub },
        }
    }

    /// PX4's (main, sub) pair for this mode.
    pub fn main_sub(self) -> (u8, u8) {
        match self {
            Mode::Unknown { main, sub } => (main, sub),
            m => TABLE
                .iter()
                .find(|en| en.mode == m)
                .map(|en| (en.main, en.sub))
                .unwrap_or((0, 0)),
        }
    }

    /// The `custom_mode` value PX4 puts in its HEARTBEAT for this mode.
    pub fn custom_mode(self) -> u32 {
        let (main, sub) = self.main_sub();
        (main as u32) << 16 | (sub as u32) << 24
    }

    /// The canonical name, or `None` for [`Mode::Unknown`] (whose Display is `main=…,sub=…`).
    pub fn name(self) -> Option<&'static str> {
        TABLE.iter().find(|en| en.mode == self).map(|en| en.name)
    }

    /// Modes PX4 only enters with a live manual-control source (sticks or MANUAL_CONTROL).
    pub fn needs_manual_control(self) -> bool {
        matches!(
            self,
            Mode::Manual
                | Mode::Altitude
                | Mode::Position
                | Mode::PositionSlow
                | Mode::Acro
                | Mode::Stabilized
        )
    }

    /// AUTO modes (navigator-driven): base_mode 0x1d on PX4 rather than 0x51.
    pub fn is_auto(self) -> bool {
        self.main_sub().0 == 4
    }

    /// Every named mode, in table order.
    pub fn all() -> impl Iterator<Item = Mode> {
        TABLE.iter().map(|en| en.mode)
    }
}

fn parse_pair(s: &str) -> Option<(u8, u8)> {
    let (a, b) = s.split_once(',')?;
    let main = a.trim().strip_prefix("main=")?.trim().parse().ok()?;
    let sub = b.trim().strip_prefix("sub=")?.trim().parse().ok()?;
    Some((main, sub))
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.name(), self) {
            (Some(n), _) => f.write_str(n),
            (None, _) => {
                let (main, sub) = self.main_sub();
                write!(f, "main={main},sub={sub}")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    extern crate std;
    use std::string::ToString;

    #[test]
    fn wire_values_match_px4() {
        // PX4-WIRE.md: custom_mode = main<<16 | sub<<24
        assert_eq!(Mode::Takeoff.custom_mode(), 4 << 16 | 2 << 24);
        assert_eq!(Mode::Hold.custom_mode(), 4 << 16 | 3 << 24);
        assert_eq!(Mode::Offboard.custom_mode(), 6 << 16);
        for m in Mode::all() {
            assert_eq!(Mode::from_custom_mode(m.custom_mode()), m);
            assert_eq!(Mode::from_name(m.name().unwrap()), Ok(m));
        }
    }

    #[test]
    fn names_are_case_insensitive_and_unknowns_round_trip() {
        assert_eq!(Mode::from_name("rtl"), Ok(Mode::Rtl));
        assert_eq!(Mode::from_name("TAKEOFF"), Ok(Mode::Takeoff));
        assert_eq!(Mode::from_name("loiter"), Ok(Mode::Hold));
        let odd = Mode::from_custom_mode(4 << 16 | 42 << 24);
        assert_eq!(odd, Mode::Unknown { main: 4, sub: 42 });
        assert_eq!(odd.to_string(), "main=4,sub=42");
        assert_eq!(Mode::from_name("main=4,sub=42"), Ok(odd));
        assert_eq!(Mode::from_name("main=4,sub=3"), Ok(Mode::Hold));
    }

    #[test]
    fn unknown_name_lists_the_known_ones() {
        let err = Mode::from_name("Hover").unwrap_err().to_string();
        assert!(
            err.contains("Takeoff") && err.contains("Mission") && err.contains("RTL"),
            "{err}"
        );
    }
}
