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

/// The named modes, canonical names first (in the order an error lists them). Entry `i` of
/// [`PAIRS`] and of the names describes `MODES[i]`. Three small tables rather than one of
/// `(name, mode, main, sub)` rows: a row's `&str` alone is 8 bytes of flash on the MCU.
static MODES: [Mode; 17] = [
    Mode::Manual,
    Mode::Altitude,
    Mode::Position,
    Mode::Orbit,
    Mode::PositionSlow,
    Mode::Ready,
    Mode::Takeoff,
    Mode::Hold,
    Mode::Mission,
    Mode::Rtl,
    Mode::Land,
    Mode::FollowMe,
    Mode::PrecisionLand,
    Mode::VtolTakeoff,
    Mode::Acro,
    Mode::Offboard,
    Mode::Stabilized,
];

/// PX4's main mode (high nibble) and sub mode (low nibble) of each of [`MODES`].
static PAIRS: [u8; 17] = [
    0x10, 0x20, 0x30, 0x31, 0x32, 0x41, 0x42, 0x43, 0x44, 0x45, 0x46, 0x48, 0x49, 0x4a, 0x50, 0x60,
    0x70,
];

/// The canonical names of [`MODES`], in its order (an entry per mode).
const NAME_LIST: [&str; 17] = [
    "Manual",
    "Altitude",
    "Position",
    "Orbit",
    "PositionSlow",
    "Ready",
    "Takeoff",
    "Hold",
    "Mission",
    "RTL",
    "Land",
    "FollowMe",
    "PrecisionLand",
    "VtolTakeoff",
    "Acro",
    "Offboard",
    "Stabilized",
];

/// Bytes of all [`NAME_LIST`] names, back to back.
const NAMES_LEN: usize = {
    let (mut n, mut i) = (0, 0);
    while i < NAME_LIST.len() {
        n += NAME_LIST[i].len();
        i += 1;
    }
    n
};

/// The names back to back, built from [`NAME_LIST`] when compiling: what is kept in flash
/// (a table of `&str`s would cost 8 bytes per entry on the MCU); [`NAME_ENDS`] says where
/// each ends.
const NAME_BYTES: [u8; NAMES_LEN] = {
    let mut all = [0u8; NAMES_LEN];
    let (mut i, mut at) = (0, 0);
    while i < NAME_LIST.len() {
        let name = NAME_LIST[i].as_bytes();
        let mut k = 0;
        while k < name.len() {
            all[at + k] = name[k];
            k += 1;
        }
        at += name.len();
        i += 1;
    }
    all
};

/// [`NAME_BYTES`] as text (whole names of valid UTF-8 back to back: always valid).
const NAMES: &str = match core::str::from_utf8(&NAME_BYTES) {
    Ok(s) => s,
    Err(_) => panic!("mode names are UTF-8"),
};

/// End offset in [`NAMES`] of each name.
static NAME_ENDS: [u8; 17] = {
    let mut ends = [0u8; 17];
    let (mut i, mut at) = (0, 0);
    while i < NAME_LIST.len() {
        at += NAME_LIST[i].len();
        assert!(at <= u8::MAX as usize);
        ends[i] = at as u8;
        i += 1;
    }
    ends
};

/// The canonical name of `MODES[i]` (`""` past the table).
fn name_at(i: usize) -> &'static str {
    let start = match i {
        0 => 0,
        _ => NAME_ENDS.get(i - 1).map_or(0, |&e| e as usize),
    };
    let end = NAME_ENDS.get(i).map_or(0, |&e| e as usize);
    NAMES.get(start..end).unwrap_or("")
}

/// (main, sub) of `MODES[i]`.
fn pair_at(i: usize) -> (u8, u8) {
    let p = PAIRS.get(i).copied().unwrap_or(0);
    (p >> 4, p & 0x0f)
}

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
        for i in 0..MODES.len() {
            if i > 0 {
                f.write_str(", ")?;
            }
            f.write_str(name_at(i))?;
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
        if let Some(i) = (0..MODES.len()).find(|&i| name_at(i).eq_ignore_ascii_case(name)) {
            return MODES.get(i).copied().ok_or(UnknownMode); // always Some
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
        let known = (0..MODES.len()).find(|&i| pair_at(i) == (main, sub));
        // Outside AUTO and POSCTL, PX4 leaves the sub mode 0 but does not promise it.
        let known = match known {
            None if !matches!(main, 3 | 4) => (0..MODES.len()).find(|&i| pair_at(i).0 == main),
            k => k,
        };
        match known {
            // `get`, not indexing (always in range): no panic path linked in.
            Some(i) => MODES.get(i).copied().unwrap_or(Mode::Unknown { main, sub }),
            None => Mode::Unknown { main, sub },
        }
    }

    /// Where this mode is in [`MODES`]; `None` for [`Mode::Unknown`].
    fn index(self) -> Option<usize> {
        MODES.iter().position(|&m| m == self)
    }

    /// PX4's (main, sub) pair for this mode.
    pub fn main_sub(self) -> (u8, u8) {
        match (self, self.index()) {
            (Mode::Unknown { main, sub }, _) => (main, sub),
            (_, Some(i)) => pair_at(i),
            (_, None) => (0, 0),
        }
    }

    /// The `custom_mode` value PX4 puts in its HEARTBEAT for this mode.
    pub fn custom_mode(self) -> u32 {
        let (main, sub) = self.main_sub();
        (main as u32) << 16 | (sub as u32) << 24
    }

    /// The canonical name, or `None` for [`Mode::Unknown`] (whose Display is `main=…,sub=…`).
    pub fn name(self) -> Option<&'static str> {
        self.index().map(name_at)
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

    /// The mode of a `vehicle_status.nav_state` in PX4's own log (its `NAVIGATION_STATE_*`),
    /// as PX4's MAVLink reports it in a HEARTBEAT (`get_px4_custom_mode`: DESCEND shows as
    /// Land, TERMINATION as main mode 10). `None` for a nav state PX4 has no mode for.
    pub fn from_nav_state(nav_state: u8) -> Option<Mode> {
        Some(match nav_state {
            0 => Mode::Manual,
            1 => Mode::Altitude,
            2 => Mode::Position,
            3 => Mode::Mission,
            4 => Mode::Hold,
            5 => Mode::Rtl,
            6 => Mode::PositionSlow,
            10 => Mode::Acro,
            12 | 18 => Mode::Land,
            13 => Mode::Unknown { main: 10, sub: 0 },
            14 => Mode::Offboard,
            15 => Mode::Stabilized,
            17 => Mode::Takeoff,
            19 => Mode::FollowMe,
            20 => Mode::PrecisionLand,
            21 => Mode::Orbit,
            22 => Mode::VtolTakeoff,
            _ => return None,
        })
    }

    /// PX4's `vehicle_status.nav_state` for this mode (the inverse of
    /// [`Mode::from_nav_state`]; Land is AUTO_LAND, 18). `None` for a mode with no nav state
    /// (Ready, an unknown pair other than termination's).
    pub fn nav_state(self) -> Option<u8> {
        (0..=31u8).find(|&n| n != 12 && Mode::from_nav_state(n) == Some(self))
    }

    /// Every named mode, in table order.
    pub fn all() -> impl Iterator<Item = Mode> {
        MODES.iter().copied()
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
    fn nav_states_round_trip() {
        // PX4's VehicleStatus.msg: AUTO_MISSION 3, AUTO_LOITER 4, AUTO_RTL 5, AUTO_LAND 18.
        assert_eq!(Mode::from_nav_state(3), Some(Mode::Mission));
        assert_eq!(Mode::from_nav_state(12), Some(Mode::Land));
        assert_eq!(Mode::from_nav_state(7), None);
        for m in Mode::all() {
            if let Some(n) = m.nav_state() {
                assert_eq!(Mode::from_nav_state(n), Some(m), "{m}");
            }
        }
        assert_eq!(Mode::Land.nav_state(), Some(18));
        assert_eq!(Mode::Ready.nav_state(), None);
    }

    #[test]
    fn wire_values_match_px4() {
        // docs/px4-wire.md §Modes: custom_mode = main<<16 | sub<<24
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

    /// The single `(name, mode, main, sub)` table the three small ones replaced, and its lookups.
    const OLD_TABLE: [(&str, Mode, u8, u8); 17] = [
        ("Manual", Mode::Manual, 1, 0),
        ("Altitude", Mode::Altitude, 2, 0),
        ("Position", Mode::Position, 3, 0),
        ("Orbit", Mode::Orbit, 3, 1),
        ("PositionSlow", Mode::PositionSlow, 3, 2),
        ("Ready", Mode::Ready, 4, 1),
        ("Takeoff", Mode::Takeoff, 4, 2),
        ("Hold", Mode::Hold, 4, 3),
        ("Mission", Mode::Mission, 4, 4),
        ("RTL", Mode::Rtl, 4, 5),
        ("Land", Mode::Land, 4, 6),
        ("FollowMe", Mode::FollowMe, 4, 8),
        ("PrecisionLand", Mode::PrecisionLand, 4, 9),
        ("VtolTakeoff", Mode::VtolTakeoff, 4, 10),
        ("Acro", Mode::Acro, 5, 0),
        ("Offboard", Mode::Offboard, 6, 0),
        ("Stabilized", Mode::Stabilized, 7, 0),
    ];

    fn old_from_main_sub(main: u8, sub: u8) -> Mode {
        let known = OLD_TABLE
            .iter()
            .find(|en| en.2 == main && (en.3 == sub || (sub == 0 && en.3 == 0)));
        match known {
            Some(en) => en.1,
            None if !matches!(main, 3 | 4) => OLD_TABLE
                .iter()
                .find(|en| en.2 == main)
                .map(|en| en.1)
                .unwrap_or(Mode::Unknown { main, sub }),
            None => Mode::Unknown { main, sub },
        }
    }

    #[test]
    fn split_tables_answer_as_the_single_table_did() {
        for main in 0..=255u8 {
            for sub in 0..=255u8 {
                let m = Mode::from_main_sub(main, sub);
                assert_eq!(m, old_from_main_sub(main, sub), "{main}/{sub}");
                let old_pair = match m {
                    Mode::Unknown { main, sub } => (main, sub),
                    k => OLD_TABLE
                        .iter()
                        .find(|en| en.1 == k)
                        .map(|en| (en.2, en.3))
                        .unwrap(),
                };
                assert_eq!(m.main_sub(), old_pair);
            }
        }
        let mut listed = std::string::String::new();
        for (i, (name, mode, main, sub)) in OLD_TABLE.iter().enumerate() {
            assert_eq!(mode.name(), Some(*name));
            assert_eq!(mode.main_sub(), (*main, *sub));
            assert_eq!(Mode::all().nth(i), Some(*mode));
            assert_eq!(Mode::from_name(&name.to_lowercase()), Ok(*mode));
            if i > 0 {
                listed.push_str(", ");
            }
            listed.push_str(name);
        }
        assert_eq!(Mode::all().count(), OLD_TABLE.len());
        assert_eq!(Mode::Unknown { main: 9, sub: 1 }.name(), None);
        assert_eq!(
            UnknownMode.to_string(),
            std::format!("unknown mode; known: {listed}")
        );
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
