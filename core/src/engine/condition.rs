//! Conditions: the wait engine's table as a spec ([`Condition`]), and compiled for evaluation.
//!
//! A spec holds what the caller wrote; compiling it (at registration) checks it and turns
//! every threshold into the form the hot path compares: `f32` for the numeric readings the
//! telemetry reports as `f32`, integer milliseconds for everything on the sim clock.

use super::error::SpecError;
use super::MAX_NEEDLE_LEN;
use crate::mode::Mode;
use crate::telemetry::TextLog;
#[cfg(feature = "extra-conditions")]
use crate::telemetry::{GpsFix, LandedState};
use crate::time::secs_to_ms;
use heapless::String;

/// How a numeric reading compares with its target (`op`, default `>=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Op {
    /// reading >= target.
    #[default]
    Ge,
    /// reading <= target.
    Le,
    /// reading == target (exact: for floats and ms prefer [`Condition::within`]).
    Eq,
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
    /// Distance to a [`Place`], m.
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
    /// GPS_RAW_INT.fix_type (a [`GpsFix`] compared by its number: `>=` is "at least").
    #[cfg(feature = "extra-conditions")]
    GpsFix,
    /// GPS_RAW_INT.satellites_visible.
    #[cfg(feature = "extra-conditions")]
    Satellites,
    /// EXTENDED_SYS_STATE.landed_state is any of a set.
    #[cfg(feature = "extra-conditions")]
    LandedState,
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
}

/// What a `distance` condition measures to.
#[cfg(feature = "extra-conditions")]
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum Place {
    /// A world-frame point (FLU: x north, y west, z up over the launch point), m: the 3D
    /// distance from LOCAL_POSITION_NED, whose origin PX4 puts where it powered up.
    World {
        /// Forward (north), m.
        x_m: f32,
        /// Left (west), m.
        y_m: f32,
        /// Up, m.
        z_m: f32,
    },
    /// A latitude and longitude, degrees: the horizontal distance from GLOBAL_POSITION_INT.
    LatLon {
        /// Latitude, degrees.
        lat_deg: f64,
        /// Longitude, degrees.
        lon_deg: f64,
    },
    /// Home: the horizontal distance from GLOBAL_POSITION_INT to HOME_POSITION.
    Home,
}

#[cfg(feature = "extra-conditions")]
impl core::fmt::Display for Place {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match *self {
            Place::World { x_m, y_m, z_m } => write!(f, "({x_m}, {y_m}, {z_m}) m"),
            Place::LatLon { lat_deg, lon_deg } => write!(f, "{lat_deg:.7}°, {lon_deg:.7}°"),
            Place::Home => f.write_str("home"),
        }
    }
}

/// Whether `v` is finite and not negative: what every duration, tolerance and non-negative
/// target must be. Not inlined: the spec checks share one copy.
#[inline(never)]
pub(crate) fn finite_nonneg(v: f32) -> bool {
    v.is_finite() && v >= 0.0
}

/// A text needle, at most [`MAX_NEEDLE_LEN`] bytes.
pub type Needle = String<MAX_NEEDLE_LEN>;

#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
enum Target {
    None,
    Number(f32),
    Mode(Mode),
    Text(Needle),
    #[cfg(feature = "extra-conditions")]
    Distance(f32, Place),
    /// A set of landed states, bit `1 << MAV_LANDED_STATE`.
    #[cfg(feature = "extra-conditions")]
    Landed(u8),
}

/// One condition as written: a row of the condition table plus its modifiers.
///
/// Build with the constructors and chain the modifiers; mistakes (an `op` on `armed`, a needle
/// that is too long, an unknown mode name) are reported when the wait is validated or
/// registered, never by a panic and never by silently changing what is waited for.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Condition {
    kind: ConditionKind,
    target: Target,
    op: Option<Op>,
    within: Option<f32>,
    since_seq: Option<u32>,
    relative: bool,
    defect: Option<SpecError>,
}

impl Condition {
    fn new(kind: ConditionKind, target: Target) -> Self {
        Condition {
            kind,
            target,
            op: None,
            within: None,
            since_seq: None,
            relative: false,
            defect: None,
        }
    }

    fn defective(mut self, e: SpecError) -> Self {
        self.defect.get_or_insert(e);
        self
    }

    /// Height above the pad reaches `m`: the simulator's ground truth (HIL_STATE_QUATERNION.alt)
    /// minus its value at arming while it streams, else GLOBAL_POSITION_INT.alt minus its value
    /// at arming ([`crate::HeightSource`] says which). Never `relative_alt`, which jumps when PX4
    /// re-estimates home (docs/px4-wire.md §Height).
    pub fn altitude_m(m: f32) -> Self {
        Self::new(ConditionKind::Altitude, Target::Number(m))
    }

    /// VFR_HUD.airspeed reaches `m_s`.
    pub fn airspeed_m_s(m_s: f32) -> Self {
        Self::new(ConditionKind::Airspeed, Target::Number(m_s))
    }

    /// MISSION_CURRENT.seq reaches `seq`.
    pub fn waypoint(seq: u16) -> Self {
        Self::new(ConditionKind::Waypoint, Target::Number(seq as f32))
    }

    /// The autopilot clock reaches `s` seconds since boot (or since the reference tick with
    /// [`Condition::relative`]).
    pub fn sim_time_s(s: f32) -> Self {
        Self::new(ConditionKind::SimTime, Target::Number(s))
    }

    /// At least `s` sim seconds have passed since registration.
    pub fn time_s(s: f32) -> Self {
        Self::new(ConditionKind::Time, Target::Number(s))
    }

    /// The heartbeat reports `mode`.
    pub fn mode(mode: Mode) -> Self {
        Self::new(ConditionKind::Mode, Target::Mode(mode))
    }

    /// The heartbeat reports the mode called `name` (case-insensitive, PX4's names and
    /// aliases); an unknown name is a [`SpecError::UnknownMode`] at registration.
    pub fn mode_named(name: &str) -> Self {
        match Mode::from_name(name) {
            Ok(m) => Self::mode(m),
            Err(_) => {
                Self::new(ConditionKind::Mode, Target::None).defective(SpecError::UnknownMode)
            }
        }
    }

    /// A STATUSTEXT containing `needle` (case-sensitive substring) arrives after `since_seq`
    /// (default: the newest text at registration, so only texts after the call count).
    /// A needle over [`MAX_NEEDLE_LEN`] bytes is a [`SpecError::NeedleTooLong`].
    pub fn text(needle: &str) -> Self {
        let mut s = Needle::new();
        match s.push_str(needle) {
            Ok(()) => Self::new(ConditionKind::Text, Target::Text(s)),
            Err(_) => Self::new(ConditionKind::Text, Target::None)
                .defective(SpecError::NeedleTooLong { len: needle.len() }),
        }
    }

    /// The vehicle is armed.
    pub fn armed() -> Self {
        Self::new(ConditionKind::Armed, Target::None)
    }

    /// The vehicle is disarmed.
    pub fn disarmed() -> Self {
        Self::new(ConditionKind::Disarmed, Target::None)
    }

    /// The vehicle is on the ground.
    pub fn landed() -> Self {
        Self::new(ConditionKind::Landed, Target::None)
    }

    /// PX4 reports item `seq` reached in this mission run (MISSION_ITEM_REACHED; the highest
    /// seq reported so far is compared, `>=` by default). Never met before a report of this run
    /// arrives: a start resets it. Read from the engine's mission-progress input
    /// ([`crate::engine::Engine::set_mission_progress`]), which the client keeps up to date from
    /// the offboard machine.
    pub fn reached(seq: u16) -> Self {
        Self::new(ConditionKind::Reached, Target::Number(seq as f32))
    }

    /// PX4 reports the mission's last reachable item reached in this run
    /// ([`crate::offboard::Offboard::mission_complete`]); a COMPLETE state left over from an
    /// earlier flight does not count.
    pub fn mission_complete() -> Self {
        Self::new(ConditionKind::MissionComplete, Target::None)
    }

    /// A verifying download ([`crate::Action::VerifyMission`]) found the vehicle's mission
    /// identical to the one uploaded ([`crate::mission::MissionProgress::verified`]).
    pub fn mission_verified() -> Self {
        Self::new(ConditionKind::MissionVerified, Target::None)
    }

    /// The vehicle has reached what the last verb commanded: a takeoff altitude, or a goto
    /// position (and yaw) within the offboard configuration's tolerances
    /// ([`crate::offboard::Offboard::at_target`], read from GLOBAL_POSITION_INT and ATTITUDE).
    /// Never met with no target, after land or RTL, or before the first position report. The
    /// client hands it to the engine after every frame and action.
    #[cfg(feature = "extra-conditions")]
    pub fn at_target() -> Self {
        Self::new(ConditionKind::AtTarget, Target::None)
    }

    /// The distance to `to` compared with `m` (`>=` by default: use `op(Op::Le)` for "within
    /// `m` of"). Reads LOCAL_POSITION_NED for a world point, GLOBAL_POSITION_INT for a lat/lon,
    /// and GLOBAL_POSITION_INT with HOME_POSITION for home; never met before they arrive.
    #[cfg(feature = "extra-conditions")]
    pub fn distance_m(m: f32, to: Place) -> Self {
        Self::new(ConditionKind::Distance, Target::Distance(m, to))
    }

    /// VFR_HUD.groundspeed compared with `m_s`; never met before the first VFR_HUD.
    #[cfg(feature = "extra-conditions")]
    pub fn groundspeed_m_s(m_s: f32) -> Self {
        Self::new(ConditionKind::Groundspeed, Target::Number(m_s))
    }

    /// VFR_HUD.climb (up positive, m/s) compared with `m_s`; never met before the first
    /// VFR_HUD.
    #[cfg(feature = "extra-conditions")]
    pub fn climb_rate_m_s(m_s: f32) -> Self {
        Self::new(ConditionKind::ClimbRate, Target::Number(m_s))
    }

    /// The compass heading (ATTITUDE.yaw as degrees in [0, 360)) compared with `deg` in
    /// [0, 360]; with [`Condition::within`], the difference is taken around the circle (359°
    /// is within 2° of 1°). Never met before the first ATTITUDE.
    #[cfg(feature = "extra-conditions")]
    pub fn heading_deg(deg: f32) -> Self {
        Self::new(ConditionKind::Heading, Target::Number(deg))
    }

    /// SYS_STATUS.battery_remaining (%) compared with `pct`; never met before the first
    /// SYS_STATUS, nor while the autopilot reports it unknown (−1).
    #[cfg(feature = "extra-conditions")]
    pub fn battery_remaining_pct(pct: f32) -> Self {
        Self::new(ConditionKind::BatteryRemaining, Target::Number(pct))
    }

    /// SYS_STATUS.voltage_battery (V) compared with `v`; never met before the first
    /// SYS_STATUS, nor while the autopilot reports it unknown (`u16::MAX`).
    #[cfg(feature = "extra-conditions")]
    pub fn battery_voltage_v(v: f32) -> Self {
        Self::new(ConditionKind::BatteryVoltage, Target::Number(v))
    }

    /// GPS_RAW_INT.fix_type at least `fix` (by default; ops compare the fix numbers); never
    /// met before the first GPS_RAW_INT.
    #[cfg(feature = "extra-conditions")]
    pub fn gps_fix(fix: GpsFix) -> Self {
        Self::new(ConditionKind::GpsFix, Target::Number(fix as u8 as f32))
    }

    /// GPS_RAW_INT.satellites_visible compared with `n`; never met before the first
    /// GPS_RAW_INT, nor while the count is unknown (255).
    #[cfg(feature = "extra-conditions")]
    pub fn satellites(n: u8) -> Self {
        Self::new(ConditionKind::Satellites, Target::Number(n as f32))
    }

    /// EXTENDED_SYS_STATE.landed_state is any of `states`; never met before the first
    /// EXTENDED_SYS_STATE (then [`LandedState::Unknown`] stands for UNDEFINED). An empty set is
    /// a [`SpecError::BadValue`].
    #[cfg(feature = "extra-conditions")]
    pub fn landed_state(states: &[LandedState]) -> Self {
        let mask = states.iter().fold(0u8, |m, s| m | 1 << s.to_mav());
        Self::new(ConditionKind::LandedState, Target::Landed(mask))
    }

    /// Compare with `op` instead of `>=` (the numeric rows only: altitude, airspeed, waypoint,
    /// sim_time, reached, and with `extra-conditions` distance, groundspeed, climb_rate,
    /// heading, battery_remaining, battery_voltage, gps_fix, satellites).
    pub fn op(mut self, op: Op) -> Self {
        self.op = Some(op);
        self
    }

    /// Met when |reading − target| ≤ `tol` (same unit as the target; numeric conditions only,
    /// not together with [`Condition::op`]).
    pub fn within(mut self, tol: f32) -> Self {
        self.within = Some(tol);
        self
    }

    /// Count texts with `seq > since_seq` (text only): pass a snapshot's `seq` to catch a text
    /// that arrived between that snapshot and this call.
    pub fn since_seq(mut self, since_seq: u32) -> Self {
        self.since_seq = Some(since_seq);
        self
    }

    /// Count `sim_time` from the reference tick (sim_time only): in a wait, the tick the
    /// previous wait or step on the engine settled; in a step, the tick the step started.
    pub fn relative(mut self) -> Self {
        self.relative = true;
        self
    }

    /// The place a `distance` condition measures to.
    #[cfg(feature = "extra-conditions")]
    pub fn place(&self) -> Option<Place> {
        match self.target {
            Target::Distance(_, to) => Some(to),
            _ => None,
        }
    }

    /// Which row of the table.
    pub fn kind(&self) -> ConditionKind {
        self.kind
    }

    /// Whether this is a relative `sim_time`.
    pub fn is_relative(&self) -> bool {
        self.relative
    }

    /// Check the spec without registering it.
    pub fn validate(&self) -> Result<(), SpecError> {
        self.compile(0).map(|_| ())
    }

    /// The numeric target, finite (and not negative when `nonneg`). Not inlined: every
    /// numeric row's arm of [`Condition::compile`] calls it, and one copy serves them all.
    #[inline(never)]
    fn number(&self, nonneg: bool) -> Result<f32, SpecError> {
        match self.target {
            Target::Number(v) if v.is_finite() && (!nonneg || finite_nonneg(v)) => Ok(v),
            _ => Err(SpecError::BadValue { field: "value" }),
        }
    }

    /// Check and compile; `last_seq` is the newest text seq now (the default `since_seq`).
    pub(crate) fn compile(&self, last_seq: u32) -> Result<Cond, SpecError> {
        if let Some(e) = self.defect {
            return Err(e);
        }
        let kind = self.kind;
        if self.op.is_some() && !kind.takes_op() {
            return Err(SpecError::OpNotApplicable(kind));
        }
        if self.within.is_some() && !kind.takes_op() {
            return Err(SpecError::WithinNotApplicable(kind));
        }
        if self.op.is_some() && self.within.is_some() {
            return Err(SpecError::OpWithWithin);
        }
        if self.since_seq.is_some() && kind != ConditionKind::Text {
            return Err(SpecError::SinceSeqNotApplicable(kind));
        }
        if self.relative && kind != ConditionKind::SimTime {
            return Err(SpecError::RelativeNotApplicable(kind));
        }
        if let Some(tol) = self.within {
            if !finite_nonneg(tol) {
                return Err(SpecError::BadValue { field: "within" });
            }
        }
        let op = self.op.unwrap_or_default();
        let number = |nonneg: bool| self.number(nonneg);
        let cmp = |v: f32| match self.within {
            Some(tol) => Cmp::Within(v, tol),
            None => match op {
                Op::Ge => Cmp::Ge(v),
                Op::Le => Cmp::Le(v),
                Op::Eq => Cmp::Eq(v),
            },
        };
        Ok(match kind {
            ConditionKind::Altitude => Cond::Height(cmp(number(false)?)),
            ConditionKind::Airspeed => Cond::Airspeed(cmp(number(false)?)),
            ConditionKind::Waypoint => Cond::Waypoint(cmp(number(false)?)),
            ConditionKind::SimTime => {
                let t = secs_to_ms(number(true)?);
                let cmp = match self.within {
                    Some(tol) => CmpMs::Within(t, secs_to_ms(tol)),
                    None => match op {
                        Op::Ge => CmpMs::Ge(t),
                        Op::Le => CmpMs::Le(t),
                        Op::Eq => CmpMs::Eq(t),
                    },
                };
                Cond::SimTime {
                    cmp,
                    relative: self.relative,
                }
            }
            ConditionKind::Time => Cond::Time {
                ms: secs_to_ms(number(true)?),
            },
            ConditionKind::Mode => match self.target {
                Target::Mode(m) => Cond::Mode(m),
                _ => return Err(SpecError::UnknownMode),
            },
            ConditionKind::Text => match &self.target {
                Target::Text(needle) => Cond::Text {
                    needle: {
                        // One copy of the bytes (a clone moves them one by one); always fits.
                        let mut n = Needle::new();
                        let _ = n.push_str(needle);
                        n
                    },
                    cursor: self.since_seq.unwrap_or(last_seq),
                    seen: false,
                },
                _ => return Err(SpecError::NeedleTooLong { len: 0 }),
            },
            ConditionKind::Armed => Cond::Armed,
            ConditionKind::Disarmed => Cond::Disarmed,
            ConditionKind::Landed => Cond::Landed,
            ConditionKind::Reached => Cond::Reached(cmp(number(false)?)),
            ConditionKind::MissionComplete => Cond::MissionComplete,
            ConditionKind::MissionVerified => Cond::MissionVerified,
            #[cfg(feature = "extra-conditions")]
            ConditionKind::AtTarget => Cond::AtTarget,
            #[cfg(feature = "extra-conditions")]
            ConditionKind::Distance => match self.target {
                Target::Distance(m, to) if m.is_finite() && m >= 0.0 => {
                    let ok = match to {
                        Place::World { x_m, y_m, z_m } => {
                            x_m.is_finite() && y_m.is_finite() && z_m.is_finite()
                        }
                        Place::LatLon { lat_deg, lon_deg } => {
                            (-90.0..=90.0).contains(&lat_deg) && (-180.0..=180.0).contains(&lon_deg)
                        }
                        Place::Home => true,
                    };
                    if !ok {
                        return Err(SpecError::BadValue { field: "to" });
                    }
                    Cond::Distance(cmp(m), to)
                }
                _ => return Err(SpecError::BadValue { field: "value" }),
            },
            #[cfg(feature = "extra-conditions")]
            ConditionKind::Groundspeed => Cond::Groundspeed(cmp(number(false)?)),
            #[cfg(feature = "extra-conditions")]
            ConditionKind::ClimbRate => Cond::ClimbRate(cmp(number(false)?)),
            #[cfg(feature = "extra-conditions")]
            ConditionKind::Heading => {
                let deg = number(true)?;
                if deg > 360.0 {
                    return Err(SpecError::BadValue { field: "value" });
                }
                Cond::Heading(cmp(deg))
            }
            #[cfg(feature = "extra-conditions")]
            ConditionKind::BatteryRemaining => Cond::BatteryRemaining(cmp(number(false)?)),
            #[cfg(feature = "extra-conditions")]
            ConditionKind::BatteryVoltage => Cond::BatteryVoltage(cmp(number(false)?)),
            #[cfg(feature = "extra-conditions")]
            ConditionKind::GpsFix => Cond::GpsFix(cmp(number(true)?)),
            #[cfg(feature = "extra-conditions")]
            ConditionKind::Satellites => Cond::Satellites(cmp(number(true)?)),
            #[cfg(feature = "extra-conditions")]
            ConditionKind::LandedState => match self.target {
                Target::Landed(mask) if mask != 0 => Cond::LandedState(mask),
                _ => return Err(SpecError::BadValue { field: "value" }),
            },
        })
    }
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

impl ConditionKind {
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

/// The condition as a person would write it (`altitude <= 3 m`, `mode Hold`,
/// `text 'Takeoff detected'`, `reached >= 4`): how a guard or a wait is named in a report.
impl core::fmt::Display for Condition {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let kind = self.kind;
        f.write_str(kind.name())?;
        match &self.target {
            Target::Number(v) => {
                let unit = kind.unit();
                match (self.within, kind) {
                    (Some(tol), _) => write!(f, " within {tol}{unit} of {v}{unit}")?,
                    (None, ConditionKind::Time) => write!(f, " {v}{unit}")?,
                    (None, _) => write!(f, " {} {v}{unit}", self.op.unwrap_or_default().symbol())?,
                }
                if self.relative {
                    f.write_str(" (from the step's start)")?;
                }
            }
            Target::Mode(m) => write!(f, " {m}")?,
            Target::Text(t) => write!(f, " '{}'", t.as_str())?,
            #[cfg(feature = "extra-conditions")]
            Target::Distance(v, to) => match self.within {
                Some(tol) => write!(f, " to {to} within {tol} m of {v} m")?,
                None => write!(f, " to {to} {} {v} m", self.op.unwrap_or_default().symbol())?,
            },
            #[cfg(feature = "extra-conditions")]
            Target::Landed(mask) => {
                let mut first = true;
                for v in 0..=4u8 {
                    if mask & (1 << v) != 0 {
                        let sep = if first { " " } else { " | " };
                        write!(f, "{sep}{}", LandedState::from_mav(v).name())?;
                        first = false;
                    }
                }
            }
            Target::None => {}
        }
        Ok(())
    }
}

/// A numeric comparison, thresholds in the reading's own unit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Cmp {
    Ge(f32),
    Le(f32),
    Eq(f32),
    /// (target, tolerance)
    Within(f32, f32),
}

impl Cmp {
    #[inline]
    fn test(self, v: f32) -> bool {
        match self {
            Cmp::Ge(t) => v >= t,
            Cmp::Le(t) => v <= t,
            Cmp::Eq(t) => v == t,
            Cmp::Within(t, tol) => libm::fabsf(v - t) <= tol,
        }
    }
}

/// A comparison on the sim clock, integer ms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CmpMs {
    Ge(u64),
    Le(u64),
    Eq(u64),
    /// (target, tolerance)
    Within(u64, u64),
}

impl CmpMs {
    #[inline]
    fn test(self, v: u64) -> bool {
        match self {
            CmpMs::Ge(t) => v >= t,
            CmpMs::Le(t) => v <= t,
            CmpMs::Eq(t) => v == t,
            CmpMs::Within(t, tol) => v.abs_diff(t) <= tol,
        }
    }
}

/// Bits of [`Readings`] a condition reads (the sim clock is tracked by wake times instead).
pub(crate) mod dep {
    /// A set of these bits (a byte holds the basic rows' eight).
    #[cfg(feature = "extra-conditions")]
    pub type Deps = u16;
    /// A set of these bits (a byte holds the basic rows' eight).
    #[cfg(not(feature = "extra-conditions"))]
    pub type Deps = u8;
    pub const HEIGHT: Deps = 1;
    pub const AIRSPEED: Deps = 1 << 1;
    pub const WAYPOINT: Deps = 1 << 2;
    pub const ARMED: Deps = 1 << 3;
    pub const MODE: Deps = 1 << 4;
    pub const LANDED: Deps = 1 << 5;
    pub const TEXT: Deps = 1 << 6;
    pub const MISSION: Deps = 1 << 7;
    /// VFR_HUD's ground speed and climb.
    #[cfg(feature = "extra-conditions")]
    pub const VFR: Deps = 1 << 8;
    /// ATTITUDE's heading.
    #[cfg(feature = "extra-conditions")]
    pub const HEADING: Deps = 1 << 9;
    /// SYS_STATUS's battery.
    #[cfg(feature = "extra-conditions")]
    pub const BATTERY: Deps = 1 << 10;
    /// GPS_RAW_INT.
    #[cfg(feature = "extra-conditions")]
    pub const GPS: Deps = 1 << 11;
    /// EXTENDED_SYS_STATE's landed state.
    #[cfg(feature = "extra-conditions")]
    pub const LANDED_STATE: Deps = 1 << 12;
    /// Global and local position, home.
    #[cfg(feature = "extra-conditions")]
    pub const POSITION: Deps = 1 << 13;
    /// The offboard machine's at_target.
    #[cfg(feature = "extra-conditions")]
    pub const AT_TARGET: Deps = 1 << 14;
    /// Everything: the sim clock became known.
    pub const ALL: Deps = Deps::MAX;
}

/// The readings of the `extra-conditions` rows.
#[cfg(feature = "extra-conditions")]
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Extra {
    pub groundspeed_m_s: Option<f32>,
    pub climb_m_s: Option<f32>,
    pub heading_deg: Option<f32>,
    pub battery_pct: Option<f32>,
    pub battery_v: Option<f32>,
    pub gps_fix: Option<u8>,
    pub satellites: Option<u8>,
    /// MAV_LANDED_STATE, raw.
    pub landed_state: Option<u8>,
    /// GLOBAL_POSITION_INT (lat, lon), 1e7 degrees.
    pub global: Option<(i32, i32)>,
    /// LOCAL_POSITION_NED (x, y, z), m.
    pub local: Option<(f32, f32, f32)>,
    /// HOME_POSITION (lat, lon), 1e7 degrees.
    pub home: Option<(i32, i32)>,
    pub at_target: Option<bool>,
}

#[cfg(feature = "extra-conditions")]
impl Extra {
    pub const UNKNOWN: Extra = Extra {
        groundspeed_m_s: None,
        climb_m_s: None,
        heading_deg: None,
        battery_pct: None,
        battery_v: None,
        gps_fix: None,
        satellites: None,
        landed_state: None,
        global: None,
        local: None,
        home: None,
        at_target: None,
    };

    /// Take them from `tel`, with the client's `at_target`: only the groups in `need` (the
    /// others stay unknown), so a frame costs nothing for rows no pending wait reads.
    pub(crate) fn read<const T: usize>(
        tel: &crate::telemetry::Telemetry<T>,
        at_target: Option<bool>,
        need: dep::Deps,
    ) -> Extra {
        let mut e = Extra::UNKNOWN;
        if need & dep::VFR != 0 {
            e.groundspeed_m_s = tel.groundspeed_m_s();
            e.climb_m_s = tel.climb_rate_m_s();
        }
        if need & dep::HEADING != 0 {
            e.heading_deg = tel.heading_rad().map(|h| h.to_degrees());
        }
        if need & dep::BATTERY != 0 {
            let battery = tel.battery();
            e.battery_pct = battery.and_then(|b| b.remaining_pct);
            e.battery_v = battery.and_then(|b| b.voltage_v);
        }
        if need & dep::GPS != 0 {
            let gps = tel.gps_raw();
            e.gps_fix = gps.map(|g| g.fix_type as u8);
            e.satellites = gps.map(|g| g.satellites_visible).filter(|&n| n != u8::MAX);
        }
        if need & dep::LANDED_STATE != 0 {
            e.landed_state = tel.extended_sys_state().map(|x| x.landed_state as u8);
        }
        if need & dep::POSITION != 0 {
            e.global = tel.global_position().map(|g| (g.lat, g.lon));
            e.local = tel.local_position().map(|l| (l.x, l.y, l.z));
            e.home = tel.home().map(|h| (h.latitude, h.longitude));
        }
        if need & dep::AT_TARGET != 0 {
            e.at_target = at_target;
        }
        e
    }

    fn changed_since(&self, prev: &Extra) -> dep::Deps {
        let bit = |c: bool, b: dep::Deps| if c { b } else { 0 };
        let local = |l: Option<(f32, f32, f32)>| l.map(|(x, y, z)| [x, y, z].map(f32::to_bits));
        bit(
            differ(self.groundspeed_m_s, prev.groundspeed_m_s)
                || differ(self.climb_m_s, prev.climb_m_s),
            dep::VFR,
        ) | bit(differ(self.heading_deg, prev.heading_deg), dep::HEADING)
            | bit(
                differ(self.battery_pct, prev.battery_pct)
                    || differ(self.battery_v, prev.battery_v),
                dep::BATTERY,
            )
            | bit(
                self.gps_fix != prev.gps_fix || self.satellites != prev.satellites,
                dep::GPS,
            )
            | bit(self.landed_state != prev.landed_state, dep::LANDED_STATE)
            | bit(
                self.global != prev.global
                    || local(self.local) != local(prev.local)
                    || self.home != prev.home,
                dep::POSITION,
            )
            | bit(self.at_target != prev.at_target, dep::AT_TARGET)
    }

    /// The distance to `to`, m, from what has arrived; `None` before it did.
    pub(crate) fn distance_m(&self, to: &Place) -> Option<f32> {
        use crate::offboard::geo::ne_offset_m;
        let horizontal = |a: (i32, i32), b: (f64, f64)| {
            let here = (a.0 as f64 / 1e7, a.1 as f64 / 1e7);
            let (dn, de) = ne_offset_m(b.0, b, here);
            libm::sqrt(dn * dn + de * de) as f32
        };
        match *to {
            Place::World { x_m, y_m, z_m } => {
                let (n, e, d) = self.local?;
                // World FLU → NED: north = x, east = −y, down = −z.
                let (dn, de, dd) = (n - x_m, e + y_m, d + z_m);
                Some(libm::sqrtf(dn * dn + de * de + dd * dd))
            }
            Place::LatLon { lat_deg, lon_deg } => {
                Some(horizontal(self.global?, (lat_deg, lon_deg)))
            }
            Place::Home => {
                let h = self.home?;
                Some(horizontal(
                    self.global?,
                    (h.0 as f64 / 1e7, h.1 as f64 / 1e7),
                ))
            }
        }
    }
}

/// Whether a float reading changed, by its bits: PX4 sends NaN for what it does not measure
/// (VFR_HUD.airspeed without an airspeed sensor), and `NaN != NaN` would make every frame a
/// change. Same bits, same verdict of every comparison, so skipping on them is exact.
#[inline]
fn differ(a: Option<f32>, b: Option<f32>) -> bool {
    a.map(f32::to_bits) != b.map(f32::to_bits)
}

/// |a − b| around the circle, degrees in [0, 180].
#[cfg(feature = "extra-conditions")]
fn angle_diff_deg(a: f32, b: f32) -> f32 {
    let d = libm::fmodf(libm::fabsf(a - b), 360.0);
    if d > 180.0 {
        360.0 - d
    } else {
        d
    }
}

/// The telemetry every condition reads, taken once per evaluation (one `f32` division for
/// the height, one mode lookup only when the heartbeat's mode changed).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Readings {
    pub sim_ms: Option<u64>,
    pub height_m: Option<f32>,
    pub airspeed_m_s: Option<f32>,
    pub waypoint: Option<u16>,
    pub armed: Option<bool>,
    pub mode: Option<Mode>,
    pub landed: Option<bool>,
    pub last_seq: u32,
    pub mission: Option<crate::mission::MissionProgress>,
    #[cfg(feature = "extra-conditions")]
    pub extra: Extra,
}

impl Readings {
    /// Nothing known yet.
    pub const UNKNOWN: Readings = Readings {
        sim_ms: None,
        height_m: None,
        airspeed_m_s: None,
        waypoint: None,
        armed: None,
        mode: None,
        landed: None,
        last_seq: 0,
        mission: None,
        #[cfg(feature = "extra-conditions")]
        extra: Extra::UNKNOWN,
    };

    /// The [`dep`] bits whose value differs from `prev` ([`dep::ALL`] when the sim clock
    /// has just become known: every time-based condition must be looked at once).
    #[inline]
    pub(crate) fn changed_since(&self, prev: &Readings) -> dep::Deps {
        if prev.sim_ms.is_none() && self.sim_ms.is_some() {
            return dep::ALL;
        }
        let bit = |c: bool, b: dep::Deps| if c { b } else { 0 };
        #[cfg(feature = "extra-conditions")]
        let extra = self.extra.changed_since(&prev.extra);
        #[cfg(not(feature = "extra-conditions"))]
        let extra = 0;
        extra
            | bit(differ(self.height_m, prev.height_m), dep::HEIGHT)
            | bit(differ(self.airspeed_m_s, prev.airspeed_m_s), dep::AIRSPEED)
            | bit(self.waypoint != prev.waypoint, dep::WAYPOINT)
            | bit(self.armed != prev.armed, dep::ARMED)
            | bit(self.mode != prev.mode, dep::MODE)
            | bit(self.landed != prev.landed, dep::LANDED)
            | bit(self.last_seq != prev.last_seq, dep::TEXT)
            | bit(self.mission != prev.mission, dep::MISSION)
    }
}

/// A compiled condition with its own small state (the text cursor).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Cond {
    Height(Cmp),
    Airspeed(Cmp),
    Waypoint(Cmp),
    SimTime {
        cmp: CmpMs,
        relative: bool,
    },
    Time {
        ms: u64,
    },
    Mode(Mode),
    /// `cursor`: the newest seq already looked at; `seen`: a match was found (texts are events,
    /// so once seen the condition stays met).
    Text {
        needle: Needle,
        cursor: u32,
        seen: bool,
    },
    Armed,
    Disarmed,
    Landed,
    Reached(Cmp),
    MissionComplete,
    MissionVerified,
    #[cfg(feature = "extra-conditions")]
    AtTarget,
    #[cfg(feature = "extra-conditions")]
    Distance(Cmp, Place),
    #[cfg(feature = "extra-conditions")]
    Groundspeed(Cmp),
    #[cfg(feature = "extra-conditions")]
    ClimbRate(Cmp),
    #[cfg(feature = "extra-conditions")]
    Heading(Cmp),
    #[cfg(feature = "extra-conditions")]
    BatteryRemaining(Cmp),
    #[cfg(feature = "extra-conditions")]
    BatteryVoltage(Cmp),
    #[cfg(feature = "extra-conditions")]
    GpsFix(Cmp),
    #[cfg(feature = "extra-conditions")]
    Satellites(Cmp),
    #[cfg(feature = "extra-conditions")]
    LandedState(u8),
}

/// Whether a text after seq `after` contains `needle`: only called when a new text arrived.
#[cold]
#[inline(never)]
fn scan_texts<const T: usize>(texts: &TextLog<T>, after: u32, needle: &Needle) -> bool {
    texts
        .after(after)
        .any(|t| contains(t.text.as_bytes(), needle.as_bytes()))
}

/// `haystack.contains(needle)` for byte strings, by plain comparison at each offset. Texts and
/// needles are short (a STATUSTEXT, [`MAX_NEEDLE_LEN`] bytes), and `str::contains`'s Two-Way
/// searcher is ~1.4 KiB of flash on thumbv7em. On UTF-8 it finds exactly what `str::contains`
/// finds.
pub(crate) fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    needle.is_empty() || haystack.windows(needle.len()).any(|w| w == needle)
}

impl Cond {
    /// Whether the vehicle's answer about what this condition reads is still on its way
    /// ([`crate::mission::MissionProgress::settling`]): the wait's guards are held until it
    /// comes, so a guard cannot beat a report the link delayed.
    pub(crate) fn settling(&self, r: &Readings) -> bool {
        matches!(self, Cond::Reached(_) | Cond::MissionComplete)
            && r.mission.is_some_and(|m| m.settling)
    }

    /// Whether the condition holds now. `start_ms`: the wait's start on the sim clock;
    /// `base_ms`: the reference tick of a relative sim_time. Unknown readings never hold.
    #[inline]
    pub(crate) fn holds<const T: usize>(
        &mut self,
        r: &Readings,
        texts: &TextLog<T>,
        start_ms: Option<u64>,
        base_ms: Option<u64>,
    ) -> bool {
        // One match: the plain numeric rows fall through to one comparison site (so
        // `Cmp::test` is inlined once), every other row answers in its arm.
        let (c, v) = match self {
            Cond::Height(c) => (*c, r.height_m),
            Cond::Airspeed(c) => (*c, r.airspeed_m_s),
            Cond::Waypoint(c) => (*c, r.waypoint.map(|v| v as f32)),
            Cond::Reached(c) => (*c, r.mission.and_then(|m| m.reached).map(|v| v as f32)),
            #[cfg(feature = "extra-conditions")]
            Cond::Groundspeed(c) => (*c, r.extra.groundspeed_m_s),
            #[cfg(feature = "extra-conditions")]
            Cond::ClimbRate(c) => (*c, r.extra.climb_m_s),
            #[cfg(feature = "extra-conditions")]
            Cond::BatteryRemaining(c) => (*c, r.extra.battery_pct),
            #[cfg(feature = "extra-conditions")]
            Cond::BatteryVoltage(c) => (*c, r.extra.battery_v),
            #[cfg(feature = "extra-conditions")]
            Cond::GpsFix(c) => (*c, r.extra.gps_fix.map(|v| v as f32)),
            #[cfg(feature = "extra-conditions")]
            Cond::Satellites(c) => (*c, r.extra.satellites.map(|v| v as f32)),
            Cond::SimTime { cmp, relative } => {
                // The clock reading compared: absolute, or since the reference tick. One
                // comparison site, so `CmpMs::test` is inlined once.
                let t = match (r.sim_ms, *relative, base_ms) {
                    (Some(t), false, _) => Some(t),
                    (Some(t), true, Some(b)) => Some(t.saturating_sub(b)),
                    _ => None,
                };
                return t.is_some_and(|t| cmp.test(t));
            }
            Cond::Time { ms } => {
                return match (r.sim_ms, start_ms) {
                    (Some(t), Some(s)) => t.saturating_sub(s) >= *ms,
                    _ => false,
                }
            }
            Cond::Mode(m) => return r.mode == Some(*m),
            Cond::Text {
                needle,
                cursor,
                seen,
            } => {
                if !*seen && r.last_seq > *cursor {
                    *seen = scan_texts(texts, *cursor, needle);
                    *cursor = r.last_seq;
                }
                return *seen;
            }
            Cond::Armed => return r.armed == Some(true),
            Cond::Disarmed => return r.armed == Some(false),
            Cond::Landed => return r.landed == Some(true),
            Cond::MissionComplete => return r.mission.is_some_and(|m| m.complete),
            Cond::MissionVerified => return r.mission.is_some_and(|m| m.verified),
            #[cfg(feature = "extra-conditions")]
            Cond::AtTarget => return r.extra.at_target == Some(true),
            #[cfg(feature = "extra-conditions")]
            Cond::Distance(c, to) => return r.extra.distance_m(to).is_some_and(|v| c.test(v)),
            #[cfg(feature = "extra-conditions")]
            Cond::Heading(c) => {
                return r.extra.heading_deg.is_some_and(|v| match *c {
                    Cmp::Within(t, tol) => angle_diff_deg(v, t) <= tol,
                    c => c.test(v),
                })
            }
            #[cfg(feature = "extra-conditions")]
            Cond::LandedState(mask) => {
                return r
                    .extra
                    .landed_state
                    .is_some_and(|v| v < 8 && *mask & (1 << v) != 0)
            }
        };
        v.is_some_and(|v| c.test(v))
    }

    /// The readings whose change can change this condition (time is handled by
    /// [`Cond::wake_ms`]).
    pub(crate) fn deps(&self) -> dep::Deps {
        match self {
            Cond::Height(_) => dep::HEIGHT,
            Cond::Airspeed(_) => dep::AIRSPEED,
            Cond::Waypoint(_) => dep::WAYPOINT,
            Cond::SimTime { .. } | Cond::Time { .. } => 0,
            Cond::Mode(_) => dep::MODE,
            Cond::Text { .. } => dep::TEXT,
            Cond::Armed | Cond::Disarmed => dep::ARMED,
            Cond::Landed => dep::LANDED,
            Cond::Reached(_) | Cond::MissionComplete | Cond::MissionVerified => dep::MISSION,
            #[cfg(feature = "extra-conditions")]
            Cond::AtTarget => dep::AT_TARGET,
            #[cfg(feature = "extra-conditions")]
            Cond::Distance(..) => dep::POSITION,
            #[cfg(feature = "extra-conditions")]
            Cond::Groundspeed(_) | Cond::ClimbRate(_) => dep::VFR,
            #[cfg(feature = "extra-conditions")]
            Cond::Heading(_) => dep::HEADING,
            #[cfg(feature = "extra-conditions")]
            Cond::BatteryRemaining(_) | Cond::BatteryVoltage(_) => dep::BATTERY,
            #[cfg(feature = "extra-conditions")]
            Cond::GpsFix(_) | Cond::Satellites(_) => dep::GPS,
            #[cfg(feature = "extra-conditions")]
            Cond::LandedState(_) => dep::LANDED_STATE,
        }
    }

    /// For a condition that does not hold at sim time `sim`: the earliest sim time at which
    /// the passing of time alone could make it hold (`u64::MAX`: never, only a reading can).
    /// sim_time and time only move forward, so each has one window `[lower, upper]`; once
    /// past its start without holding, it never will.
    pub(crate) fn wake_ms(&self, sim: u64, start: Option<u64>, base: Option<u64>) -> u64 {
        let at = match *self {
            Cond::Time { ms } => match start {
                Some(s) => s.saturating_add(ms),
                None => return u64::MAX,
            },
            Cond::SimTime { cmp, relative } => {
                let origin = match (relative, base) {
                    (false, _) => 0,
                    (true, Some(b)) => b,
                    (true, None) => return u64::MAX,
                };
                let lower = match cmp {
                    CmpMs::Ge(t) | CmpMs::Eq(t) => t,
                    CmpMs::Le(_) => 0,
                    CmpMs::Within(t, tol) => t.saturating_sub(tol),
                };
                origin.saturating_add(lower)
            }
            _ => return u64::MAX,
        };
        if at > sim {
            at
        } else {
            u64::MAX
        }
    }

    /// The newest text seq this condition has looked at, for a text condition.
    pub(crate) fn text_cursor(&self) -> Option<u32> {
        match self {
            Cond::Text { cursor, .. } => Some(*cursor),
            _ => None,
        }
    }

    /// Whether this is a relative sim_time.
    pub(crate) fn is_relative(&self) -> bool {
        matches!(self, Cond::SimTime { relative: true, .. })
    }
}
