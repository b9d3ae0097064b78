//! The rows of the condition table and how a numeric row compares.

/// How a numeric reading compares with its target (`op`, default `>=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Op {
    /// reading >= target.
    #[default]
    Ge,
    /// reading <= target.
    Le,
    /// reading == target (exact: for floats and ms prefer [`Condition::within`](super::Condition::within)).
    Eq,
}

impl Op {
    /// The operator as written (`">="`, `"<="`, `"=="`).
    pub fn symbol(self) -> &'static str {
        match self {
            Op::Ge => ">=",
            Op::Le => "<=",
            Op::Eq => "==",
        }
    }
}

/// The rows of the wait engine's condition table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive] // rows behind features (geofence, ground truth), and more to come
pub enum ConditionKind {
    /// Height above the pad, m ([`crate::telemetry::Telemetry::height_m`]).
    Altitude,
    /// VFR_HUD.airspeed, m/s.
    Airspeed,
    /// MISSION_CURRENT.seq.
    Waypoint,
    /// The autopilot clock, s: absolute, or relative to the previous settle / step start.
    SimTime,
    /// Sim seconds since registration (always `>=`).
    Time,
    /// The heartbeat's flight mode.
    Mode,
    /// A STATUSTEXT containing a needle, after `since_seq`.
    Text,
    /// Heartbeat armed flag set.
    Armed,
    /// Heartbeat armed flag clear.
    Disarmed,
    /// On the ground ([`crate::telemetry::Telemetry::landed`]).
    Landed,
    /// Highest item PX4 reported reached in this mission run (MISSION_ITEM_REACHED).
    Reached,
    /// PX4 reported the mission's last reachable item reached in this run.
    MissionComplete,
    /// A verifying download found the vehicle's mission identical to the one uploaded.
    MissionVerified,
    /// The vehicle has reached what the last verb commanded
    /// ([`crate::offboard::Offboard::at_target`]).
    #[cfg(feature = "extra-conditions")]
    AtTarget,
    /// Distance to a [`Place`](super::Place), m.
    #[cfg(feature = "extra-conditions")]
    Distance,
    /// VFR_HUD.groundspeed, m/s.
    #[cfg(feature = "extra-conditions")]
    Groundspeed,
    /// VFR_HUD.climb, m/s (up positive).
    #[cfg(feature = "extra-conditions")]
    ClimbRate,
    /// Compass heading from ATTITUDE.yaw, degrees in [0, 360).
    #[cfg(feature = "extra-conditions")]
    Heading,
    /// SYS_STATUS.battery_remaining, %.
    #[cfg(feature = "extra-conditions")]
    BatteryRemaining,
    /// SYS_STATUS.voltage_battery, V.
    #[cfg(feature = "extra-conditions")]
    BatteryVoltage,
    /// GPS_RAW_INT.fix_type (a [`GpsFix`](crate::telemetry::GpsFix) compared by its number: `>=` is "at least").
    #[cfg(feature = "extra-conditions")]
    GpsFix,
    /// GPS_RAW_INT.satellites_visible.
    #[cfg(feature = "extra-conditions")]
    Satellites,
    /// EXTENDED_SYS_STATE.landed_state is any of a set.
    #[cfg(feature = "extra-conditions")]
    LandedState,
    /// EXTENDED_SYS_STATE.vtol_state is any of a set.
    #[cfg(feature = "extra-conditions")]
    VtolState,
}

/// What a condition's row compares its reading with: the kind of value a front end reads for
/// it (a program's TOML, a Python argument) before it builds the [`Condition`](super::Condition).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum ValueKind {
    /// A number in the row's unit ([`ConditionKind::unit`]), within [`ConditionKind::bounds`].
    Number,
    /// A whole number (a mission item's seq, a satellite count), within [`ConditionKind::bounds`].
    Integer,
    /// A flight mode by name ([`Mode::from_name`](crate::mode::Mode::from_name)).
    Mode,
    /// A substring of a STATUSTEXT, at most [`MAX_NEEDLE_LEN`](super::super::MAX_NEEDLE_LEN) bytes.
    Text,
    /// No value: the state holds or it does not (a program writes `true`, or the bare name).
    Flag,
    /// A GPS fix by name ([`GpsFix::from_name`](crate::telemetry::GpsFix::from_name)) or by its
    /// GPS_FIX_TYPE number.
    GpsFix,
    /// Any of a set of landed states by name ([`LandedState::from_name`](crate::LandedState::from_name)).
    LandedStates,
    /// Any of a set of VTOL states by name ([`VtolState::from_name`](crate::VtolState::from_name)).
    VtolStates,
}

impl ConditionKind {
    /// Every row, in the order of the engine's table (and of [`ConditionKind::NAMES`]).
    pub const ALL: &'static [ConditionKind] = &[
        ConditionKind::Altitude,
        ConditionKind::Airspeed,
        ConditionKind::Waypoint,
        ConditionKind::SimTime,
        ConditionKind::Time,
        ConditionKind::Mode,
        ConditionKind::Text,
        ConditionKind::Armed,
        ConditionKind::Disarmed,
        ConditionKind::Landed,
        ConditionKind::Reached,
        ConditionKind::MissionComplete,
        ConditionKind::MissionVerified,
        #[cfg(feature = "extra-conditions")]
        ConditionKind::AtTarget,
        #[cfg(feature = "extra-conditions")]
        ConditionKind::Distance,
        #[cfg(feature = "extra-conditions")]
        ConditionKind::Groundspeed,
        #[cfg(feature = "extra-conditions")]
        ConditionKind::ClimbRate,
        #[cfg(feature = "extra-conditions")]
        ConditionKind::Heading,
        #[cfg(feature = "extra-conditions")]
        ConditionKind::BatteryRemaining,
        #[cfg(feature = "extra-conditions")]
        ConditionKind::BatteryVoltage,
        #[cfg(feature = "extra-conditions")]
        ConditionKind::GpsFix,
        #[cfg(feature = "extra-conditions")]
        ConditionKind::Satellites,
        #[cfg(feature = "extra-conditions")]
        ConditionKind::LandedState,
        #[cfg(feature = "extra-conditions")]
        ConditionKind::VtolState,
    ];

    /// The names of [`ConditionKind::ALL`], in its order ([`ConditionKind::name`] of each): what
    /// an error for an unknown condition lists.
    pub const NAMES: &'static [&'static str] = &[
        "altitude",
        "airspeed",
        "waypoint",
        "sim_time",
        "time",
        "mode",
        "text",
        "armed",
        "disarmed",
        "landed",
        "reached",
        "mission_complete",
        "mission_verified",
        #[cfg(feature = "extra-conditions")]
        "at_target",
        #[cfg(feature = "extra-conditions")]
        "distance",
        #[cfg(feature = "extra-conditions")]
        "groundspeed",
        #[cfg(feature = "extra-conditions")]
        "climb_rate",
        #[cfg(feature = "extra-conditions")]
        "heading",
        #[cfg(feature = "extra-conditions")]
        "battery_remaining",
        #[cfg(feature = "extra-conditions")]
        "battery_voltage",
        #[cfg(feature = "extra-conditions")]
        "gps_fix",
        #[cfg(feature = "extra-conditions")]
        "satellites",
        #[cfg(feature = "extra-conditions")]
        "landed_state",
        #[cfg(feature = "extra-conditions")]
        "vtol_state",
    ];

    /// The row named `name` (as [`ConditionKind::name`] spells it), or `None` for a name the
    /// table (with this build's features) has not.
    pub fn from_name(name: &str) -> Option<ConditionKind> {
        Self::ALL.iter().copied().find(|k| k.name() == name)
    }

    /// The kind of value the row compares with.
    pub fn value(self) -> ValueKind {
        match self {
            ConditionKind::Waypoint | ConditionKind::Reached => ValueKind::Integer,
            ConditionKind::Mode => ValueKind::Mode,
            ConditionKind::Text => ValueKind::Text,
            ConditionKind::Armed
            | ConditionKind::Disarmed
            | ConditionKind::Landed
            | ConditionKind::MissionComplete
            | ConditionKind::MissionVerified => ValueKind::Flag,
            #[cfg(feature = "extra-conditions")]
            ConditionKind::AtTarget => ValueKind::Flag,
            #[cfg(feature = "extra-conditions")]
            ConditionKind::Satellites => ValueKind::Integer,
            #[cfg(feature = "extra-conditions")]
            ConditionKind::GpsFix => ValueKind::GpsFix,
            #[cfg(feature = "extra-conditions")]
            ConditionKind::LandedState => ValueKind::LandedStates,
            #[cfg(feature = "extra-conditions")]
            ConditionKind::VtolState => ValueKind::VtolStates,
            _ => ValueKind::Number,
        }
    }

    /// The values a [`ValueKind::Number`] or [`ValueKind::Integer`] row may be given, `(lo, hi)`
    /// inclusive in its unit ([`ConditionKind::unit`]); `None` for a row without bounds (a
    /// speed, a climb rate) or without a number.
    pub fn bounds(self) -> Option<(f64, f64)> {
        match self {
            ConditionKind::Altitude => Some((crate::plan::ALT_MIN_M, crate::plan::ALT_MAX_M)),
            ConditionKind::Waypoint | ConditionKind::Reached => Some((0.0, u16::MAX as f64)),
            ConditionKind::SimTime | ConditionKind::Time => Some((0.0, f64::INFINITY)),
            #[cfg(feature = "extra-conditions")]
            ConditionKind::Distance | ConditionKind::BatteryVoltage => Some((0.0, f64::INFINITY)),
            #[cfg(feature = "extra-conditions")]
            ConditionKind::Heading => Some((0.0, 360.0)),
            #[cfg(feature = "extra-conditions")]
            ConditionKind::BatteryRemaining => Some((0.0, 100.0)),
            #[cfg(feature = "extra-conditions")]
            ConditionKind::Satellites => Some((0.0, 254.0)),
            _ => None,
        }
    }

    /// The condition of a [`ValueKind::Number`] or [`ValueKind::Integer`] row compared with `x`
    /// (in the row's unit; a whole number for an integer row, saturated to its type), with the
    /// default op; `None` for any other row and for `distance`, which needs its place too
    /// ([`Condition::distance_m`](super::Condition::distance_m)). Bounds are the caller's to
    /// check ([`ConditionKind::bounds`]).
    pub fn of_number(self, x: f64) -> Option<super::Condition> {
        use super::Condition;
        let v = x as f32;
        Some(match self {
            ConditionKind::Altitude => Condition::altitude_m(v),
            ConditionKind::Airspeed => Condition::airspeed_m_s(v),
            ConditionKind::Waypoint => Condition::waypoint(x as u16),
            ConditionKind::Reached => Condition::reached(x as u16),
            ConditionKind::SimTime => Condition::sim_time_s(v),
            ConditionKind::Time => Condition::time_s(v),
            #[cfg(feature = "extra-conditions")]
            ConditionKind::Groundspeed => Condition::groundspeed_m_s(v),
            #[cfg(feature = "extra-conditions")]
            ConditionKind::ClimbRate => Condition::climb_rate_m_s(v),
            #[cfg(feature = "extra-conditions")]
            ConditionKind::Heading => Condition::heading_deg(v),
            #[cfg(feature = "extra-conditions")]
            ConditionKind::BatteryRemaining => Condition::battery_remaining_pct(v),
            #[cfg(feature = "extra-conditions")]
            ConditionKind::BatteryVoltage => Condition::battery_voltage_v(v),
            #[cfg(feature = "extra-conditions")]
            ConditionKind::Satellites => Condition::satellites(x as u8),
            _ => return None,
        })
    }

    /// The condition of a [`ValueKind::Flag`] row (`armed`, `landed`, …), which needs no value;
    /// `None` for a row that does.
    pub fn flag(self) -> Option<super::Condition> {
        use super::Condition;
        Some(match self {
            ConditionKind::Armed => Condition::armed(),
            ConditionKind::Disarmed => Condition::disarmed(),
            ConditionKind::Landed => Condition::landed(),
            ConditionKind::MissionComplete => Condition::mission_complete(),
            ConditionKind::MissionVerified => Condition::mission_verified(),
            #[cfg(feature = "extra-conditions")]
            ConditionKind::AtTarget => Condition::at_target(),
            _ => return None,
        })
    }

    /// The condition's name (`"altitude"`, `"sim_time"`, …).
    pub fn name(self) -> &'static str {
        match self {
            ConditionKind::Altitude => "altitude",
            ConditionKind::Airspeed => "airspeed",
            ConditionKind::Waypoint => "waypoint",
            ConditionKind::SimTime => "sim_time",
            ConditionKind::Time => "time",
            ConditionKind::Mode => "mode",
            ConditionKind::Text => "text",
            ConditionKind::Armed => "armed",
            ConditionKind::Disarmed => "disarmed",
            ConditionKind::Landed => "landed",
            ConditionKind::Reached => "reached",
            ConditionKind::MissionComplete => "mission_complete",
            ConditionKind::MissionVerified => "mission_verified",
            #[cfg(feature = "extra-conditions")]
            ConditionKind::AtTarget => "at_target",
            #[cfg(feature = "extra-conditions")]
            ConditionKind::Distance => "distance",
            #[cfg(feature = "extra-conditions")]
            ConditionKind::Groundspeed => "groundspeed",
            #[cfg(feature = "extra-conditions")]
            ConditionKind::ClimbRate => "climb_rate",
            #[cfg(feature = "extra-conditions")]
            ConditionKind::Heading => "heading",
            #[cfg(feature = "extra-conditions")]
            ConditionKind::BatteryRemaining => "battery_remaining",
            #[cfg(feature = "extra-conditions")]
            ConditionKind::BatteryVoltage => "battery_voltage",
            #[cfg(feature = "extra-conditions")]
            ConditionKind::GpsFix => "gps_fix",
            #[cfg(feature = "extra-conditions")]
            ConditionKind::Satellites => "satellites",
            #[cfg(feature = "extra-conditions")]
            ConditionKind::LandedState => "landed_state",
            #[cfg(feature = "extra-conditions")]
            ConditionKind::VtolState => "vtol_state",
        }
    }

    /// Whether `op` (and `within`) apply: the numeric rows the spec marks "op applies".
    pub fn takes_op(self) -> bool {
        match self {
            ConditionKind::Altitude
            | ConditionKind::Airspeed
            | ConditionKind::Waypoint
            | ConditionKind::SimTime
            | ConditionKind::Reached => true,
            #[cfg(feature = "extra-conditions")]
            ConditionKind::Distance
            | ConditionKind::Groundspeed
            | ConditionKind::ClimbRate
            | ConditionKind::Heading
            | ConditionKind::BatteryRemaining
            | ConditionKind::BatteryVoltage
            | ConditionKind::GpsFix
            | ConditionKind::Satellites => true,
            _ => false,
        }
    }

    /// The unit a reading of this row is written in (`" m"`, `" m/s"`, `" s"`; `""` for none).
    pub fn unit(self) -> &'static str {
        match self {
            ConditionKind::Altitude => " m",
            ConditionKind::Airspeed => " m/s",
            ConditionKind::SimTime | ConditionKind::Time => " s",
            #[cfg(feature = "extra-conditions")]
            ConditionKind::Distance => " m",
            #[cfg(feature = "extra-conditions")]
            ConditionKind::Groundspeed | ConditionKind::ClimbRate => " m/s",
            #[cfg(feature = "extra-conditions")]
            ConditionKind::Heading => "°",
            #[cfg(feature = "extra-conditions")]
            ConditionKind::BatteryRemaining => " %",
            #[cfg(feature = "extra-conditions")]
            ConditionKind::BatteryVoltage => " V",
            _ => "",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_all_and_read_back() {
        assert_eq!(ConditionKind::ALL.len(), ConditionKind::NAMES.len());
        for (k, n) in ConditionKind::ALL.iter().zip(ConditionKind::NAMES) {
            assert_eq!(k.name(), *n);
            assert_eq!(ConditionKind::from_name(n), Some(*k));
        }
        assert_eq!(ConditionKind::from_name("hovering"), None);
        assert_eq!(ConditionKind::from_name("Altitude"), None);
    }

    #[test]
    fn flags_build_their_condition_and_numbers_take_an_op() {
        for &k in ConditionKind::ALL {
            let flag = k.flag();
            assert_eq!(flag.is_some(), k.value() == ValueKind::Flag, "{}", k.name());
            if let Some(c) = flag {
                assert_eq!(c.kind(), k);
            }
            // Every row that takes an op compares a number; time is a number without one.
            if k.takes_op() {
                assert!(
                    matches!(
                        k.value(),
                        ValueKind::Number | ValueKind::Integer | ValueKind::GpsFix
                    ),
                    "{}",
                    k.name()
                );
            }
        }
        assert_eq!(ConditionKind::Time.value(), ValueKind::Number);
        assert!(!ConditionKind::Time.takes_op());
        assert_eq!(ConditionKind::Altitude.bounds(), Some((-1_000.0, 10_000.0)));
        for &k in ConditionKind::ALL {
            let c = k.of_number(2.0);
            let numeric = matches!(k.value(), ValueKind::Number | ValueKind::Integer);
            #[cfg(feature = "extra-conditions")]
            let numeric = numeric && k != ConditionKind::Distance;
            assert_eq!(c.is_some(), numeric, "{}", k.name());
            if let Some(c) = c {
                assert_eq!(c.kind(), k);
            }
        }
    }
}
