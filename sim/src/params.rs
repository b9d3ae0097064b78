//! The PX4 parameters the simulated vehicle honours, with PX4's defaults and wire types.
//!
//! PARAM_VALUE/PARAM_SET carry every value in one float field. For INT32 parameters PX4 moves
//! the integer's *bits* through that field (bytewise encoding), not its numeric value: a client
//! that sends `1.0` for an INT32 sets 1065353216. The table is sorted by name, as PX4 indexes its
//! parameters.

use mavlink::dialects::common::MavParamType;

/// Wire type of a parameter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParamKind {
    /// MAV_PARAM_TYPE_REAL32 (9).
    Real32,
    /// MAV_PARAM_TYPE_INT32 (6), bits carried in the float field.
    Int32,
}

impl ParamKind {
    /// The MAVLink type code.
    pub fn mav(self) -> MavParamType {
        match self {
            ParamKind::Real32 => MavParamType::MAV_PARAM_TYPE_REAL32,
            ParamKind::Int32 => MavParamType::MAV_PARAM_TYPE_INT32,
        }
    }
}

/// A parameter value in its own type.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ParamValue {
    /// REAL32 value.
    Real(f32),
    /// INT32 value.
    Int(i32),
}

impl ParamValue {
    /// The float field as it travels in PARAM_VALUE (INT32: the int's bits).
    pub fn wire(self) -> f32 {
        match self {
            ParamValue::Real(v) => v,
            ParamValue::Int(i) => f32::from_bits(i as u32),
        }
    }

    /// Numeric value as f32 (INT32 converted numerically).
    pub fn as_f32(self) -> f32 {
        match self {
            ParamValue::Real(v) => v,
            ParamValue::Int(i) => i as f32,
        }
    }
}

macro_rules! param_table {
    ($( $id:ident = $name:literal, $kind:ident, $default:expr; )*) => {
        /// Index of a parameter in [`TABLE`].
        #[allow(non_camel_case_types, clippy::upper_case_acronyms)]
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum P { $(
            #[doc = $name]
            $id,
        )* }

        /// Name, type and PX4 default of every parameter, sorted by name.
        pub static TABLE: &[(&str, ParamKind, f64)] = &[ $( ($name, ParamKind::$kind, $default), )* ];
    };
}

param_table! {
    COM_ARM_WO_GPS = "COM_ARM_WO_GPS", Int32, 1.0;
    COM_DISARM_LAND = "COM_DISARM_LAND", Real32, 2.0;
    COM_DISARM_PRFLT = "COM_DISARM_PRFLT", Real32, 10.0;
    COM_FLIGHT_UUID = "COM_FLIGHT_UUID", Int32, 0.0;
    COM_HOME_EN = "COM_HOME_EN", Int32, 1.0;
    COM_OBL_RC_ACT = "COM_OBL_RC_ACT", Int32, 0.0;
    COM_OF_LOSS_T = "COM_OF_LOSS_T", Real32, 1.0;
    COM_RC_ARM_HYST = "COM_RC_ARM_HYST", Int32, 1000.0;
    COM_RC_IN_MODE = "COM_RC_IN_MODE", Int32, 1.0;
    COM_RC_LOSS_T = "COM_RC_LOSS_T", Real32, 0.5;
    COM_SPOOLUP_TIME = "COM_SPOOLUP_TIME", Real32, 1.0;
    COM_TAKEOFF_ACT = "COM_TAKEOFF_ACT", Int32, 0.0;
    GF_ACTION = "GF_ACTION", Int32, 2.0;
    MAV_SYS_ID = "MAV_SYS_ID", Int32, 1.0;
    MIS_TAKEOFF_ALT = "MIS_TAKEOFF_ALT", Real32, 2.5;
    MPC_ACC_DOWN_MAX = "MPC_ACC_DOWN_MAX", Real32, 3.0;
    MPC_ACC_HOR = "MPC_ACC_HOR", Real32, 3.0;
    MPC_ACC_UP_MAX = "MPC_ACC_UP_MAX", Real32, 4.0;
    MPC_LAND_ALT1 = "MPC_LAND_ALT1", Real32, 10.0;
    MPC_LAND_ALT2 = "MPC_LAND_ALT2", Real32, 5.0;
    MPC_LAND_SPEED = "MPC_LAND_SPEED", Real32, 0.7;
    MPC_TKO_RAMP_T = "MPC_TKO_RAMP_T", Real32, 3.0;
    MPC_TKO_SPEED = "MPC_TKO_SPEED", Real32, 1.5;
    MPC_XY_CRUISE = "MPC_XY_CRUISE", Real32, 5.0;
    MPC_XY_VEL_MAX = "MPC_XY_VEL_MAX", Real32, 12.0;
    MPC_YAWRAUTO_MAX = "MPC_YAWRAUTO_MAX", Real32, 60.0;
    MPC_Z_VEL_MAX_DN = "MPC_Z_VEL_MAX_DN", Real32, 1.5;
    MPC_Z_VEL_MAX_UP = "MPC_Z_VEL_MAX_UP", Real32, 3.0;
    MPC_Z_V_AUTO_DN = "MPC_Z_V_AUTO_DN", Real32, 1.5;
    MPC_Z_V_AUTO_UP = "MPC_Z_V_AUTO_UP", Real32, 3.0;
    NAV_ACC_RAD = "NAV_ACC_RAD", Real32, 2.0;
    NAV_MC_ALT_RAD = "NAV_MC_ALT_RAD", Real32, 0.8;
    RTL_CONE_ANG = "RTL_CONE_ANG", Int32, 45.0;
    RTL_DESCEND_ALT = "RTL_DESCEND_ALT", Real32, 10.0;
    RTL_LAND_DELAY = "RTL_LAND_DELAY", Real32, 0.0;
    RTL_MIN_DIST = "RTL_MIN_DIST", Real32, 10.0;
    RTL_RETURN_ALT = "RTL_RETURN_ALT", Real32, 30.0;
    SYS_AUTOSTART = "SYS_AUTOSTART", Int32, 10040.0;
}

/// Why a PARAM_SET was not applied (PX4 answers none of these with a PARAM_VALUE).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetError {
    /// No parameter of that name.
    Unknown,
    /// The PARAM_SET's type does not match the parameter's (PX4 ignores it).
    TypeMismatch,
    /// A REAL32 value that is not a finite number.
    NotFinite,
}

/// The vehicle's parameter values.
#[derive(Debug, Clone)]
pub struct Params {
    values: Vec<ParamValue>,
}

fn initial(kind: ParamKind, v: f64) -> ParamValue {
    match kind {
        ParamKind::Real32 => ParamValue::Real(v as f32),
        ParamKind::Int32 => ParamValue::Int(v.round() as i32),
    }
}

impl Params {
    /// PX4 defaults; `MAV_SYS_ID` set to `sysid`.
    pub fn new(sysid: u8) -> Self {
        let mut values: Vec<ParamValue> =
            TABLE.iter().map(|&(_, kind, v)| initial(kind, v)).collect();
        values[P::MAV_SYS_ID as usize] = ParamValue::Int(sysid as i32);
        Params { values }
    }

    /// Number of parameters (PARAM_VALUE.param_count).
    pub fn count(&self) -> u16 {
        self.values.len() as u16
    }

    /// Index of `name`, if known.
    pub fn index_of(&self, name: &str) -> Option<usize> {
        TABLE.binary_search_by(|(n, _, _)| (*n).cmp(name)).ok()
    }

    /// Name, type and value at `index`.
    pub fn entry(&self, index: usize) -> Option<(&'static str, ParamKind, ParamValue)> {
        let (name, kind, _) = TABLE.get(index)?;
        Some((name, *kind, self.values[index]))
    }

    /// A REAL32 parameter's value (INT32 ones converted numerically).
    pub fn f(&self, p: P) -> f32 {
        self.values[p as usize].as_f32()
    }

    /// An INT32 parameter's value (REAL32 ones truncated).
    pub fn i(&self, p: P) -> i32 {
        match self.values[p as usize] {
            ParamValue::Int(i) => i,
            ParamValue::Real(v) => v as i32,
        }
    }

    /// Set a parameter by value in its own type (host-side overrides, internal updates).
    pub fn set_numeric(&mut self, name: &str, v: f64) -> Result<usize, SetError> {
        let idx = self.index_of(name).ok_or(SetError::Unknown)?;
        if !v.is_finite() {
            return Err(SetError::NotFinite);
        }
        self.values[idx] = initial(TABLE[idx].1, v);
        Ok(idx)
    }

    /// Set from a PARAM_SET: the float field decoded according to `ty` (INT32: bytewise).
    pub fn set_from_wire(
        &mut self,
        name: &str,
        wire: f32,
        ty: MavParamType,
    ) -> Result<usize, SetError> {
        let idx = self.index_of(name).ok_or(SetError::Unknown)?;
        let value = match (TABLE[idx].1, ty) {
            (ParamKind::Real32, MavParamType::MAV_PARAM_TYPE_REAL32) if !wire.is_finite() => {
                return Err(SetError::NotFinite)
            }
            (ParamKind::Real32, MavParamType::MAV_PARAM_TYPE_REAL32) => ParamValue::Real(wire),
            (ParamKind::Int32, MavParamType::MAV_PARAM_TYPE_INT32) => {
                ParamValue::Int(wire.to_bits() as i32)
            }
            _ => return Err(SetError::TypeMismatch),
        };
        self.values[idx] = value;
        Ok(idx)
    }

    /// Set an INT32 parameter internally (e.g. COM_FLIGHT_UUID at disarm).
    pub fn set_int(&mut self, p: P, v: i32) {
        self.values[p as usize] = ParamValue::Int(v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_is_sorted_and_matches_the_enum() {
        for w in TABLE.windows(2) {
            assert!(w[0].0 < w[1].0, "{} !< {}", w[0].0, w[1].0);
        }
        assert_eq!(TABLE[P::MIS_TAKEOFF_ALT as usize].0, "MIS_TAKEOFF_ALT");
        assert_eq!(TABLE[P::SYS_AUTOSTART as usize].0, "SYS_AUTOSTART");
    }

    #[test]
    fn int32_travels_bytewise() {
        let mut p = Params::new(1);
        let idx = p
            .set_from_wire(
                "COM_RC_IN_MODE",
                f32::from_bits(2),
                MavParamType::MAV_PARAM_TYPE_INT32,
            )
            .unwrap();
        assert_eq!(p.i(P::COM_RC_IN_MODE), 2);
        assert_eq!(p.entry(idx).unwrap().2.wire().to_bits(), 2);
        // A float-typed set of an INT32 is ignored, as PX4 does.
        assert_eq!(
            p.set_from_wire("COM_RC_IN_MODE", 1.0, MavParamType::MAV_PARAM_TYPE_REAL32),
            Err(SetError::TypeMismatch)
        );
        assert_eq!(p.i(P::COM_RC_IN_MODE), 2);
        p.set_from_wire("MIS_TAKEOFF_ALT", 5.0, MavParamType::MAV_PARAM_TYPE_REAL32)
            .unwrap();
        assert_eq!(p.f(P::MIS_TAKEOFF_ALT), 5.0);
        assert_eq!(
            p.set_from_wire("NOPE", 1.0, MavParamType::MAV_PARAM_TYPE_REAL32),
            Err(SetError::Unknown)
        );
    }
}
