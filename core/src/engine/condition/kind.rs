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

impl ConditionKind {
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
