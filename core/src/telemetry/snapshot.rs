//! A point-in-time summary of the vehicle: what a wait reports when it settles.

use super::text::Text;
use crate::mode::Mode;
use heapless::String;

/// Longest error text kept in a snapshot, in bytes.
pub const MAX_ERROR_LEN: usize = 96;

/// PX4's landed state (EXTENDED_SYS_STATE.landed_state).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum LandedState {
    /// Not reported yet (or MAV_LANDED_STATE_UNDEFINED).
    #[default]
    Unknown,
    /// On the ground.
    OnGround,
    /// Flying.
    InAir,
    /// Taking off.
    TakingOff,
    /// Landing.
    Landing,
}

impl LandedState {
    /// From the MAV_LANDED_STATE value.
    pub fn from_mav(v: u8) -> LandedState {
        match v {
            1 => LandedState::OnGround,
            2 => LandedState::InAir,
            3 => LandedState::TakingOff,
            4 => LandedState::Landing,
            _ => LandedState::Unknown,
        }
    }

    /// The MAV_LANDED_STATE value (0 for [`LandedState::Unknown`]: UNDEFINED).
    pub fn to_mav(self) -> u8 {
        match self {
            LandedState::Unknown => 0,
            LandedState::OnGround => 1,
            LandedState::InAir => 2,
            LandedState::TakingOff => 3,
            LandedState::Landing => 4,
        }
    }

    /// By name as [`LandedState::name`] writes it (case-insensitive).
    pub fn from_name(name: &str) -> Option<LandedState> {
        (0..=4u8)
            .map(LandedState::from_mav)
            .find(|s| s.name().eq_ignore_ascii_case(name))
    }

    /// The wait engine's names: `ON_GROUND`, `IN_AIR`, `TAKING_OFF`, `LANDING`, `UNKNOWN`.
    pub fn name(self) -> &'static str {
        match self {
            LandedState::Unknown => "UNKNOWN",
            LandedState::OnGround => "ON_GROUND",
            LandedState::InAir => "IN_AIR",
            LandedState::TakingOff => "TAKING_OFF",
            LandedState::Landing => "LANDING",
        }
    }
}

/// The vehicle as last reported, captured at one tick. [`Default`]: nothing known yet.
#[derive(Debug, Clone, PartialEq, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive] // more of the vehicle may be captured; start from `Snapshot::default()`
pub struct Snapshot {
    /// Autopilot (sim) clock, ms since its boot; `None` before the first timestamped message.
    pub sim_ms: Option<u64>,
    /// `seq` of the newest STATUSTEXT (0 before any): pass it as `since_seq` to continue.
    pub seq: u32,
    /// Armed flag of the last HEARTBEAT.
    pub armed: bool,
    /// Mode of the last HEARTBEAT.
    pub mode: Option<Mode>,
    /// Height above the pad, m: ground truth since arming when a simulator streams it, else
    /// GLOBAL_POSITION_INT.alt since arming (never `relative_alt`).
    pub height_m: Option<f32>,
    /// Where `height_m` came from, so a report can say which was used.
    pub height_source: Option<super::HeightSource>,
    /// VFR_HUD.airspeed, m/s.
    pub airspeed_m_s: Option<f32>,
    /// MISSION_CURRENT.seq.
    pub waypoint: Option<u16>,
    /// EXTENDED_SYS_STATE.landed_state.
    pub landed: LandedState,
    /// The newest STATUSTEXT.
    pub last_text: Option<Text>,
    /// Why the run died or the link was lost, when it did.
    pub error: Option<String<MAX_ERROR_LEN>>,
}

impl Snapshot {
    /// Sim time in seconds (`t_sim_s` in the wait engine's spec); 0 before the clock is known.
    pub fn t_sim_s(&self) -> f64 {
        self.sim_ms.unwrap_or(0) as f64 / 1000.0
    }
}

/// Copy `s` into a bounded error string, cutting at a character boundary.
pub fn error_text(s: &str) -> String<MAX_ERROR_LEN> {
    let mut out = String::new();
    let _ = out.push_str(super::text::fit(s, MAX_ERROR_LEN)); // fits: cut to the capacity
    out
}
