//! What kind of vehicle the autopilot says it is: the class of its HEARTBEAT's MAV_TYPE.
//!
//! PX4 sends its `MAV_TYPE` parameter as HEARTBEAT.type: 2 on the SIH quadrotor, 13 on the
//! hexarotor, 1 on the airplane, 22 on the standard VTOL, 19 on the tailsitter (`sihsim_xvert`),
//! 10 on the Ackermann rover (their airframe files in PX4's `etc/init.d-posix/airframes/`).
//! What a verb means depends on the class, not the exact type: a rover does not take off, only a
//! VTOL transitions. QGroundControl writes the same numbers as a `.plan`'s `vehicleType`, by
//! class too: 2 for every multirotor and 20 for every VTOL.

use core::fmt;

/// The class of a MAV_TYPE.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum VehicleKind {
    /// A rotorcraft that hovers: quad-, hexa-, octo-, tri-, deca-, dodecarotor, coaxial,
    /// helicopter, generic multirotor (MAV_TYPE 2, 3, 4, 13, 14, 15, 29, 35, 43).
    Multicopter,
    /// A fixed-wing airplane (MAV_TYPE 1).
    FixedWing,
    /// A VTOL: hovers on rotors and flies on a wing (MAV_TYPE 19 to 25 and 47: tailsitters,
    /// tiltrotor, standard "fixed rotor" VTOL, tiltwing, gyrodyne).
    Vtol,
    /// A ground rover or a surface boat (MAV_TYPE 10, 11): it drives, it never flies.
    Rover,
    /// Anything else (a GCS, a gimbal, a generic or unknown type).
    Other,
}

impl VehicleKind {
    /// The class of MAV_TYPE `t`.
    pub fn from_mav_type(t: u8) -> VehicleKind {
        match t {
            1 => VehicleKind::FixedWing,
            2 | 3 | 4 | 13 | 14 | 15 | 29 | 35 | 43 => VehicleKind::Multicopter,
            19..=25 | 47 => VehicleKind::Vtol,
            10 | 11 => VehicleKind::Rover,
            _ => VehicleKind::Other,
        }
    }

    /// The class with its article, as a sentence names it ("a multicopter", "a rover").
    pub fn name(self) -> &'static str {
        match self {
            VehicleKind::Multicopter => "a multicopter",
            VehicleKind::FixedWing => "a fixed-wing airplane",
            VehicleKind::Vtol => "a VTOL",
            VehicleKind::Rover => "a rover",
            VehicleKind::Other => "no vehicle nexus knows",
        }
    }

    /// Whether it flies (everything but a rover or boat, and the unknown).
    pub fn flies(self) -> bool {
        matches!(
            self,
            VehicleKind::Multicopter | VehicleKind::FixedWing | VehicleKind::Vtol
        )
    }
}

impl fmt::Display for VehicleKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// PX4's VTOL state (EXTENDED_SYS_STATE.vtol_state): what the `vtol_state` condition reads and
/// what a transition ([`crate::Action::VtolTransition`]) asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum VtolState {
    /// Not a VTOL, or not reported yet (MAV_VTOL_STATE_UNDEFINED).
    #[default]
    Undefined,
    /// Changing from hover to wing-borne flight.
    TransitionToFw,
    /// Changing from wing-borne flight to hover.
    TransitionToMc,
    /// Hovering on its rotors (multicopter mode).
    Mc,
    /// Flying on its wing (fixed-wing mode).
    Fw,
}

impl VtolState {
    /// Every state, in MAV_VTOL_STATE order.
    pub const ALL: [VtolState; 5] = [
        VtolState::Undefined,
        VtolState::TransitionToFw,
        VtolState::TransitionToMc,
        VtolState::Mc,
        VtolState::Fw,
    ];

    /// From the MAV_VTOL_STATE value (an undefined value is [`VtolState::Undefined`]).
    pub fn from_mav(v: u8) -> VtolState {
        match v {
            1 => VtolState::TransitionToFw,
            2 => VtolState::TransitionToMc,
            3 => VtolState::Mc,
            4 => VtolState::Fw,
            _ => VtolState::Undefined,
        }
    }

    /// The MAV_VTOL_STATE value.
    pub fn to_mav(self) -> u8 {
        match self {
            VtolState::Undefined => 0,
            VtolState::TransitionToFw => 1,
            VtolState::TransitionToMc => 2,
            VtolState::Mc => 3,
            VtolState::Fw => 4,
        }
    }

    /// The wait engine's names: `undefined`, `transition_to_fw`, `transition_to_mc`, `mc`, `fw`.
    pub fn name(self) -> &'static str {
        match self {
            VtolState::Undefined => "undefined",
            VtolState::TransitionToFw => "transition_to_fw",
            VtolState::TransitionToMc => "transition_to_mc",
            VtolState::Mc => "mc",
            VtolState::Fw => "fw",
        }
    }

    /// By name as [`VtolState::name`] writes it (case-insensitive).
    pub fn from_name(name: &str) -> Option<VtolState> {
        VtolState::ALL
            .into_iter()
            .find(|s| s.name().eq_ignore_ascii_case(name))
    }
}

impl fmt::Display for VtolState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mavlink::dialects::common as mav;
    use num_traits::FromPrimitive;

    #[test]
    fn the_sih_airframes_types_are_their_classes() {
        // MAV_TYPE of PX4's SIH airframes 10040..10045.
        for (t, kind) in [
            (2, VehicleKind::Multicopter),
            (13, VehicleKind::Multicopter),
            (1, VehicleKind::FixedWing),
            (19, VehicleKind::Vtol),
            (22, VehicleKind::Vtol),
            (10, VehicleKind::Rover),
            (6, VehicleKind::Other),
        ] {
            assert_eq!(VehicleKind::from_mav_type(t), kind, "MAV_TYPE {t}");
        }
    }

    #[test]
    fn every_vtol_type_of_the_dialect_is_a_vtol() {
        for t in 0..=u8::MAX {
            let Some(ty) = mav::MavType::from_u8(t) else {
                continue;
            };
            let mut name: heapless::String<48> = heapless::String::new();
            let _ = core::fmt::Write::write_fmt(&mut name, format_args!("{ty:?}"));
            let named_vtol = name.contains("VTOL");
            assert_eq!(
                VehicleKind::from_mav_type(t) == VehicleKind::Vtol,
                named_vtol,
                "{t}"
            );
        }
    }

    #[test]
    fn vtol_states_round_trip_by_number_and_name() {
        for s in VtolState::ALL {
            assert_eq!(VtolState::from_mav(s.to_mav()), s);
            assert_eq!(VtolState::from_name(s.name()), Some(s));
        }
        assert_eq!(VtolState::from_mav(9), VtolState::Undefined);
        assert_eq!(VtolState::from_name("FW"), Some(VtolState::Fw));
        assert_eq!(VtolState::from_name("hover"), None);
        // The numbers are MAVLink's.
        assert_eq!(
            VtolState::Fw.to_mav(),
            mav::MavVtolState::MAV_VTOL_STATE_FW as u8
        );
        assert_eq!(
            VtolState::TransitionToMc.to_mav(),
            mav::MavVtolState::MAV_VTOL_STATE_TRANSITION_TO_MC as u8
        );
    }
}
