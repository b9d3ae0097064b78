//! The vehicles PX4 SITL's SIH simulator flies without Gazebo, by `--model` name.
//!
//! PX4's startup script (`etc/init.d-posix/rcS`) takes `PX4_SIM_MODEL` and loads the airframe
//! file `<SYS_AUTOSTART>_<model>` from `etc/init.d-posix/airframes/`; the SIH airframes of PX4
//! main are 10040 to 10045 (docs/px4-wire.md §SITL build). The box mission flies on the
//! quadrotor and the hexarotor alike (measured on PX4 main SITL at ×4: 6 items, landed and
//! disarmed, 51.5 s of mission on both).

use std::fmt;
use std::str::FromStr;

use nexus_core::escape::Escaped;

/// An SIH airframe of PX4 SITL.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive] // PX4 adds SIH airframes now and then
pub enum Airframe {
    /// The quadrotor in X (`sihsim_quadx`, 10040): what nexus flies by default.
    #[default]
    Quad,
    /// The hexarotor (`sihsim_hex`, 10044).
    Hex,
    /// The fixed-wing airplane (`sihsim_airplane`, 10041).
    Airplane,
    /// The tailsitter VTOL (`sihsim_xvert`, 10042).
    Tailsitter,
    /// The standard VTOL, a plane with four lift rotors (`sihsim_standard_vtol`, 10043).
    Vtol,
    /// The Ackermann-steered rover (`sihsim_rover_ackermann`, 10045).
    Rover,
}

impl Airframe {
    /// Every airframe, in `--model` order.
    pub const ALL: [Airframe; 6] = [
        Airframe::Quad,
        Airframe::Hex,
        Airframe::Airplane,
        Airframe::Tailsitter,
        Airframe::Vtol,
        Airframe::Rover,
    ];

    /// The `--model` name: `quad`, `hex`, `airplane`, `tailsitter`, `vtol`, `rover`.
    pub fn name(self) -> &'static str {
        match self {
            Airframe::Quad => "quad",
            Airframe::Hex => "hex",
            Airframe::Airplane => "airplane",
            Airframe::Tailsitter => "tailsitter",
            Airframe::Vtol => "vtol",
            Airframe::Rover => "rover",
        }
    }

    /// `PX4_SIM_MODEL`: the airframe file's name after its SYS_AUTOSTART number.
    pub fn sih_model(self) -> &'static str {
        match self {
            Airframe::Quad => "sihsim_quadx",
            Airframe::Hex => "sihsim_hex",
            Airframe::Airplane => "sihsim_airplane",
            Airframe::Tailsitter => "sihsim_xvert",
            Airframe::Vtol => "sihsim_standard_vtol",
            Airframe::Rover => "sihsim_rover_ackermann",
        }
    }

    /// The built-in vehicle's model of this airframe, if it has one (the quad, the hex and the
    /// airplane; the VTOLs and the rover fly on PX4 SITL only).
    pub fn simulated(self) -> Option<nexus_sim::VehicleType> {
        match self {
            Airframe::Quad => Some(nexus_sim::VehicleType::Quadrotor),
            Airframe::Hex => Some(nexus_sim::VehicleType::Hexarotor),
            Airframe::Airplane => Some(nexus_sim::VehicleType::FixedWing),
            Airframe::Tailsitter | Airframe::Vtol | Airframe::Rover => None,
        }
    }

    /// SYS_AUTOSTART: the airframe file's number in PX4's `etc/init.d-posix/airframes/`.
    pub fn sys_autostart(self) -> u32 {
        match self {
            Airframe::Quad => 10040,
            Airframe::Airplane => 10041,
            Airframe::Tailsitter => 10042,
            Airframe::Vtol => 10043,
            Airframe::Hex => 10044,
            Airframe::Rover => 10045,
        }
    }
}

impl fmt::Display for Airframe {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A `--model` name that is not an airframe; its text lists the ones there are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownAirframe(pub String);

impl fmt::Display for UnknownAirframe {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown model '{}' (one of: ", Escaped(&self.0))?;
        for (i, a) in Airframe::ALL.iter().enumerate() {
            let sep = if i == 0 { "" } else { ", " };
            write!(f, "{sep}{a}")?;
        }
        f.write_str(")")
    }
}

impl std::error::Error for UnknownAirframe {}

impl FromStr for Airframe {
    type Err = UnknownAirframe;

    /// The `--model` name, or PX4's own model name (`sihsim_hex`).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Airframe::ALL
            .into_iter()
            .find(|a| a.name() == s || a.sih_model() == s)
            .ok_or_else(|| UnknownAirframe(s.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_unknown_ones_list_the_choices() {
        for a in Airframe::ALL {
            assert_eq!(a.name().parse::<Airframe>(), Ok(a));
            assert_eq!(a.sih_model().parse::<Airframe>(), Ok(a));
        }
        assert_eq!(
            "octo".parse::<Airframe>().unwrap_err().to_string(),
            "unknown model 'octo' (one of: quad, hex, airplane, tailsitter, vtol, rover)"
        );
    }
}
