//! PX4's parameters on the simulated vehicle: exactly the ones PX4 SITL lists for the SIH
//! quadrotor (airframe 10040), with PX4's names, wire types and values (`data/sih-quadx.tsv`,
//! turned into [`TABLE`] by the build script), of which the model honours the [`P`] ones.
//!
//! PARAM_VALUE/PARAM_SET carry every value in one float field. For INT32 parameters PX4 moves
//! the integer's *bits* through that field (bytewise encoding), not its numeric value: a client
//! that sends `1.0` for an INT32 sets 1065353216. The table is sorted by name, as PX4 indexes its
//! parameters.

use crate::vehicle_type::VehicleType;
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

/// A parameter value in its own type (the core's, as PARAM_SET and PARAM_VALUE carry it).
pub use nexus_core::action::ParamValue;

macro_rules! modelled {
    ($( $id:ident ),* $(,)?) => {
        /// A parameter the vehicle's model reads or writes; its row in [`TABLE`] is found by name.
        #[allow(non_camel_case_types, clippy::upper_case_acronyms)]
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum P { $(
            #[doc = stringify!($id)]
            $id,
        )* }

        impl P {
            /// Every modelled parameter, in enum order.
            pub const ALL: &'static [P] = &[ $( P::$id, )* ];

            /// PX4's name of the parameter.
            pub fn name(self) -> &'static str {
                match self { $( P::$id => stringify!($id), )* }
            }
        }
    };
}

modelled! {
    BAT1_N_CELLS,
    BAT1_V_CHARGED,
    BAT1_V_EMPTY,
    BAT_CRIT_THR,
    BAT_EMERGEN_THR,
    BAT_LOW_THR,
    COM_ARM_WO_GPS,
    COM_DISARM_LAND,
    COM_DISARM_PRFLT,
    COM_DLL_EXCEPT,
    COM_DL_LOSS_T,
    COM_FAIL_ACT_T,
    COM_FLIGHT_UUID,
    COM_HOME_EN,
    COM_LOW_BAT_ACT,
    COM_OBL_RC_ACT,
    COM_OF_LOSS_T,
    COM_RC_IN_MODE,
    COM_RC_LOSS_T,
    COM_SPOOLUP_TIME,
    COM_TAKEOFF_ACT,
    FW_AIRSPD_MIN,
    FW_AIRSPD_TRIM,
    FW_LND_ANG,
    FW_LND_FLALT,
    FW_LND_FL_SINK,
    FW_R_LIM,
    FW_TKO_AIRSPD,
    FW_T_ALT_TC,
    FW_T_CLMB_MAX,
    FW_T_SINK_MAX,
    GF_ACTION,
    GF_MAX_HOR_DIST,
    GF_MAX_VER_DIST,
    LNDFW_TRIG_TIME,
    LNDFW_VEL_XY_MAX,
    MAV_HASH_CHK_EN,
    MAV_SYS_ID,
    MAV_TYPE,
    MIS_TAKEOFF_ALT,
    MPC_ACC_DOWN_MAX,
    MPC_ACC_HOR,
    MPC_ACC_UP_MAX,
    MPC_LAND_ALT1,
    MPC_LAND_ALT2,
    MPC_LAND_SPEED,
    MPC_TKO_RAMP_T,
    MPC_TKO_SPEED,
    MPC_XY_CRUISE,
    MPC_XY_VEL_MAX,
    MPC_YAWRAUTO_MAX,
    MPC_Z_VEL_MAX_DN,
    MPC_Z_VEL_MAX_UP,
    MPC_Z_V_AUTO_DN,
    MPC_Z_V_AUTO_UP,
    NAV_ACC_RAD,
    NAV_DLL_ACT,
    NAV_FW_ALT_RAD,
    NAV_LOITER_RAD,
    NAV_MC_ALT_RAD,
    NPFG_DAMPING,
    NPFG_PERIOD,
    NPFG_ROLL_TC,
    NPFG_SW_DST_MLT,
    RTL_CONE_ANG,
    RTL_DESCEND_ALT,
    RTL_LAND_DELAY,
    RTL_MIN_DIST,
    RTL_RETURN_ALT,
    RTL_TYPE,
    RWTO_RAMP_TIME,
    SIM_BAT_DRAIN,
    SIM_BAT_ENABLE,
    SIM_BAT_MIN_PCT,
    SYS_AUTOSTART,
    SYS_FAILURE_EN,
    UXRCE_DDS_KEY,
}

/// Name, type and value of every parameter PX4 SITL lists after boot (PX4 main of 2026-03, SIH
/// quadrotor), sorted by name as PX4 indexes them: built from `data/sih-quadx.tsv` (`build.rs`).
/// MAV_SYS_ID and UXRCE_DDS_KEY are per instance (the instance + 1, as SITL's startup sets
/// them): [`Params::new`] sets both to the vehicle's system id.
pub static TABLE: &[(&str, ParamKind, f64)] = include!(concat!(env!("OUT_DIR"), "/px4_table.rs"));

/// The same for the SIH airplane (airframe 10041, `rc.fw_defaults`): the 964 parameters PX4
/// SITL lists for it (the fixed-wing controllers' instead of the multicopter's), from
/// `data/sih-airplane.tsv`.
pub static AIRPLANE_TABLE: &[(&str, ParamKind, f64)] =
    include!(concat!(env!("OUT_DIR"), "/px4_table_airplane.rs"));

/// Where the SIH hexarotor's list differs from the quadrotor's: its airframe file's defaults
/// (`10044_sihsim_hex`: six rotors in X, SIH_VEHICLE_TYPE 4). Its list has the quadrotor's 897
/// names (measured on PX4 SITL; every other value the same, calibration offsets aside).
pub const HEX_DEFAULTS: &[(&str, f64)] = &[
    ("SYS_AUTOSTART", 10044.0),
    ("SIH_VEHICLE_TYPE", 4.0),
    ("CA_ROTOR_COUNT", 6.0),
    ("CA_ROTOR0_PX", 0.866),
    ("CA_ROTOR0_PY", 0.5),
    ("CA_ROTOR1_PX", 0.0),
    ("CA_ROTOR1_PY", 1.0),
    ("CA_ROTOR1_KM", -0.05),
    ("CA_ROTOR2_PX", -0.866),
    ("CA_ROTOR2_PY", 0.5),
    ("CA_ROTOR3_PX", -0.866),
    ("CA_ROTOR3_PY", -0.5),
    ("CA_ROTOR3_KM", -0.05),
    ("CA_ROTOR4_PX", 0.0),
    ("CA_ROTOR4_PY", -1.0),
    ("CA_ROTOR5_PX", 0.866),
    ("CA_ROTOR5_PY", -0.5),
    ("CA_ROTOR5_KM", -0.05),
    ("PWM_MAIN_FUNC5", 105.0),
    ("PWM_MAIN_FUNC6", 106.0),
];

/// The parameter list PX4 SITL serves for a vehicle.
pub fn table_for(vehicle: VehicleType) -> &'static [(&'static str, ParamKind, f64)] {
    match vehicle {
        VehicleType::Quadrotor | VehicleType::Hexarotor => TABLE,
        VehicleType::FixedWing => AIRPLANE_TABLE,
    }
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
    table: &'static [(&'static str, ParamKind, f64)],
    values: Vec<ParamValue>,
    /// Row in the table of each [`P`], resolved once by name; `None` for a parameter this
    /// airframe's PX4 does not list (a multicopter's on the airplane, a fixed-wing controller's
    /// on a multicopter), whose PX4 default the model reads from `unlisted` and no client sees.
    rows: Vec<Option<usize>>,
    unlisted: Vec<ParamValue>,
}

fn initial(kind: ParamKind, v: f64) -> ParamValue {
    match kind {
        ParamKind::Real32 => ParamValue::Real(v as f32),
        ParamKind::Int32 => ParamValue::Int(v.round() as i32),
    }
}

impl Params {
    /// PX4 SITL's values for the quadrotor; `MAV_SYS_ID` and `UXRCE_DDS_KEY` set to `sysid`
    /// (the instance + 1).
    pub fn new(sysid: u8) -> Self {
        Params::for_vehicle(sysid, VehicleType::Quadrotor)
    }

    /// PX4 SITL's list and values for `vehicle`; `MAV_SYS_ID` and `UXRCE_DDS_KEY` set to
    /// `sysid` (the instance + 1).
    pub fn for_vehicle(sysid: u8, vehicle: VehicleType) -> Self {
        let table = table_for(vehicle);
        let mut values: Vec<ParamValue> =
            table.iter().map(|&(_, kind, v)| initial(kind, v)).collect();
        let find = |t: &[(&str, ParamKind, f64)], name: &str| {
            t.binary_search_by(|(n, _, _)| (*n).cmp(name)).ok()
        };
        let rows: Vec<Option<usize>> = P::ALL.iter().map(|p| find(table, p.name())).collect();
        // Every modelled name is in one of PX4's lists (the unit test below checks it).
        let unlisted = P::ALL
            .iter()
            .map(|p| {
                [TABLE, AIRPLANE_TABLE]
                    .into_iter()
                    .find_map(|t| find(t, p.name()).map(|r| initial(t[r].1, t[r].2)))
                    .unwrap_or(ParamValue::Int(0))
            })
            .collect();
        if vehicle == VehicleType::Hexarotor {
            for (name, v) in HEX_DEFAULTS {
                if let Some(r) = find(table, name) {
                    values[r] = initial(table[r].1, *v);
                }
            }
        }
        let mut params = Params {
            table,
            values,
            rows,
            unlisted,
        };
        params.set_int(P::MAV_SYS_ID, sysid as i32);
        params.set_int(P::UXRCE_DDS_KEY, sysid as i32);
        params
    }

    /// Number of parameters (PARAM_VALUE.param_count).
    pub fn count(&self) -> u16 {
        self.values.len() as u16
    }

    /// Index of `name`, if known.
    pub fn index_of(&self, name: &str) -> Option<usize> {
        self.table.binary_search_by(|(n, _, _)| (*n).cmp(name)).ok()
    }

    /// Name, type and value at `index`.
    pub fn entry(&self, index: usize) -> Option<(&'static str, ParamKind, ParamValue)> {
        let (name, kind, _) = self.table.get(index)?;
        Some((name, *kind, self.values[index]))
    }

    /// Index in the list (and in PARAM_VALUE.param_index) of a modelled parameter, if this
    /// airframe's PX4 lists it.
    pub fn row(&self, p: P) -> Option<usize> {
        self.rows[p as usize]
    }

    fn value(&self, p: P) -> ParamValue {
        match self.rows[p as usize] {
            Some(r) => self.values[r],
            None => self.unlisted[p as usize],
        }
    }

    /// A REAL32 parameter's value (INT32 ones converted numerically).
    pub fn f(&self, p: P) -> f32 {
        self.value(p).as_f32()
    }

    /// An INT32 parameter's value (REAL32 ones truncated).
    pub fn i(&self, p: P) -> i32 {
        match self.value(p) {
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
        self.values[idx] = initial(self.table[idx].1, v);
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
        let value = match (self.table[idx].1, ty) {
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

    /// PX4's `param_hash_check`: CRC-32 (NuttX `crc32part`, chained from 0) over each
    /// parameter's name and its 4 value bytes, in index order. PX4 sends it as `_HASH_CHECK`
    /// (MAV_PARAM_TYPE_UINT32, index -1) ahead of a PARAM_REQUEST_LIST's answer, so a ground
    /// station can reuse a cached list. (PX4 leaves out its volatile parameters, which are not
    /// marked in its list: the value is this vehicle's, not PX4's.)
    pub fn hash(&self) -> u32 {
        self.table
            .iter()
            .zip(&self.values)
            .fold(0, |crc, ((name, _, _), v)| {
                let bits = match *v {
                    ParamValue::Real(f) => f.to_bits(),
                    ParamValue::Int(i) => i as u32,
                };
                let crc = crate::mission::crc32part(name.as_bytes(), crc);
                crate::mission::crc32part(&bits.to_le_bytes(), crc)
            })
    }

    /// Set an INT32 parameter internally (e.g. COM_FLIGHT_UUID at disarm).
    pub fn set_int(&mut self, p: P, v: i32) {
        match self.rows[p as usize] {
            Some(r) => self.values[r] = ParamValue::Int(v),
            None => self.unlisted[p as usize] = ParamValue::Int(v),
        }
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
        for w in AIRPLANE_TABLE.windows(2) {
            assert!(w[0].0 < w[1].0, "{} !< {}", w[0].0, w[1].0);
        }
        for p in P::ALL {
            assert!(
                [TABLE, AIRPLANE_TABLE]
                    .iter()
                    .any(|t| t.iter().any(|(n, _, _)| *n == p.name())),
                "{} missing from PX4's lists",
                p.name()
            );
        }
        let params = Params::new(1);
        assert_eq!(params.f(P::MIS_TAKEOFF_ALT), 2.5);
        assert_eq!(params.i(P::SYS_AUTOSTART), 10040);
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
        assert_eq!(p.entry(idx).unwrap().2.wire_bits(), 2);
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

    fn row(name: &str) -> (ParamKind, f64) {
        let (_, kind, v) = TABLE
            .iter()
            .find(|(n, _, _)| *n == name)
            .unwrap_or_else(|| panic!("{name} missing from PX4's table"));
        (*kind, *v)
    }

    #[test]
    fn table_has_what_clients_touch_with_px4s_types_and_defaults() {
        use ParamKind::{Int32, Real32};
        // What PX4 SITL lists (and what differs from PX4's parameter definitions: SITL's startup
        // scripts and the SIH airframe set them).
        for (name, kind, v) in [
            ("RC1_REV", Real32, 1.0),
            ("RC18_REV", Real32, 1.0),
            ("COM_LOW_BAT_ACT", Int32, 3.0),
            ("SYS_FAILURE_EN", Int32, 1.0),
            ("SIM_BAT_ENABLE", Int32, 1.0),
            ("COM_MODE_ARM_CHK", Int32, 1.0),
            ("EKF2_GPS_CHECK", Int32, 2047.0),
            ("CBRK_SUPPLY_CHK", Int32, 0.0),
            ("IMU_GYRO_RATEMAX", Int32, 800.0),
            ("RTL_RETURN_ALT", Real32, 30.0),
            ("RTL_DESCEND_ALT", Real32, 10.0),
            ("MPC_YAWRAUTO_MAX", Real32, 60.0),
            ("NAV_RCL_ACT", Int32, 2.0),
            ("COM_DISARM_LAND", Real32, 2.0),
            ("COM_DISARM_PRFLT", Real32, 10.0),
            // From PX4's sources: QGroundControl's safety and battery pages, mavsdk_tests.
            ("NAV_DLL_ACT", Int32, 0.0),
            ("GF_ACTION", Int32, 2.0),
            ("GF_MAX_HOR_DIST", Real32, 0.0),
            ("BAT_LOW_THR", Real32, 0.15),
            ("BAT_CRIT_THR", Real32, 0.07),
            ("BAT_EMERGEN_THR", Real32, 0.05),
            ("SYS_HITL", Int32, 0.0),
            ("RTL_TYPE", Int32, 0.0),
            ("MPC_LAND_CRWL", Real32, 0.3),
            ("BAT1_V_EMPTY", Real32, 3.6),
            ("BAT1_N_CELLS", Int32, 4.0), // PX4 SITL's rcS sets 4
            ("COM_FLTMODE1", Int32, -1.0),
            ("COM_DL_LOSS_T", Int32, 10.0),
            // MAVSDK Action.
            ("MIS_TAKEOFF_ALT", Real32, 2.5),
            ("MPC_XY_CRUISE", Real32, 5.0),
        ] {
            let (k, d) = row(name);
            assert_eq!((k, d as f32), (kind, v as f32), "{name}");
        }
        // Types PX4 sent in the recordings (values are SITL's calibration).
        assert_eq!(row("CAL_ACC0_ID").0, Int32);
        assert_eq!(row("CAL_GYRO0_ID").0, Int32);
        assert_eq!(row("CAL_MAG0_ID").0, Int32);
        // Not on PX4 main: answered with PARAM_ERROR like any unknown name.
        let p = Params::new(1);
        assert_eq!(p.index_of("COM_RC_ARM_HYST"), None);
        assert_eq!(p.index_of("LNDMC_TRIG_TIME"), None);
        assert_eq!(p.count() as usize, TABLE.len());
        assert_eq!(TABLE.len(), 897);
        // Per instance, as SITL's startup sets them.
        let p = Params::new(5);
        assert_eq!((p.i(P::MAV_SYS_ID), p.i(P::UXRCE_DDS_KEY)), (5, 5));
    }
}
