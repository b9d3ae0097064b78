//! A condition as written: a row of the table, its target and its modifiers.

use super::super::error::SpecError;
use super::super::MAX_NEEDLE_LEN;
use super::kind::{ConditionKind, Op};
use crate::mode::Mode;
#[cfg(feature = "extra-conditions")]
use crate::telemetry::{GpsFix, LandedState};
#[cfg(feature = "extra-conditions")]
use crate::vehicle::VtolState;
use heapless::String;

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
pub(super) enum Target {
    None,
    Number(f32),
    Mode(Mode),
    Text(Needle),
    #[cfg(feature = "extra-conditions")]
    Distance(f32, Place),
    /// A set of landed states, bit `1 << MAV_LANDED_STATE`.
    #[cfg(feature = "extra-conditions")]
    Landed(u8),
    /// A set of VTOL states, bit `1 << MAV_VTOL_STATE`.
    #[cfg(feature = "extra-conditions")]
    Vtol(u8),
}

/// One condition as written: a row of the condition table plus its modifiers.
///
/// Build with the constructors and chain the modifiers; mistakes (an `op` on `armed`, a needle
/// that is too long, an unknown mode name) are reported when the wait is validated or
/// registered, never by a panic and never by silently changing what is waited for.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[must_use = "a Condition does nothing until a wait takes it"]
pub struct Condition {
    pub(super) kind: ConditionKind,
    pub(super) target: Target,
    pub(super) op: Option<Op>,
    pub(super) within: Option<f32>,
    pub(super) since_seq: Option<u32>,
    pub(super) relative: bool,
    pub(super) defect: Option<SpecError>,
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

    /// EXTENDED_SYS_STATE.vtol_state is any of `states` (`[VtolState::Fw]`: flying on the
    /// wing; `[VtolState::TransitionToFw, VtolState::Fw]`: the transition has begun). Never met
    /// before the first EXTENDED_SYS_STATE; on a vehicle that is no VTOL PX4 reports
    /// [`VtolState::Undefined`]. An empty set is a [`SpecError::BadValue`].
    #[cfg(feature = "extra-conditions")]
    pub fn vtol_state(states: &[VtolState]) -> Self {
        let mask = states.iter().fold(0u8, |m, s| m | 1 << s.to_mav());
        Self::new(ConditionKind::VtolState, Target::Vtol(mask))
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
}
