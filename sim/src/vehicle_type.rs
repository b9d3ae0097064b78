//! Which of PX4 SIH's vehicles the built-in vehicle is: the airframes it models.
//!
//! PX4 SITL's SIH flies six airframes (`etc/init.d-posix/airframes/1004x_sihsim_*`); the built-in
//! vehicle models three of them. Each has its own PX4 parameter list (the airframe file's
//! defaults on top of `rc.mc_defaults` or `rc.fw_defaults`), its own MAV_TYPE in HEARTBEAT (PX4
//! sends the MAV_TYPE parameter: 2 for both multicopters, whose `rc.mc_defaults` sets it, 1 for
//! the airplane) and its own flight model: the multicopter point mass of [`crate::dynamics`] or
//! the fixed-wing one of [`crate::fixed_wing`].

/// A PX4 SIH vehicle the built-in vehicle models.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum VehicleType {
    /// The quadrotor in X (`sihsim_quadx`, SYS_AUTOSTART 10040).
    #[default]
    Quadrotor,
    /// The hexarotor in X (`sihsim_hex`, 10044): the quadrotor's position controller and limits
    /// (the same `rc.mc_defaults`), six rotors.
    Hexarotor,
    /// The fixed-wing airplane (`sihsim_airplane`, 10041): runway takeoff (RWTO_TKOFF 1),
    /// fixed-wing guidance, TECS-like height and airspeed, the landing approach and flare.
    FixedWing,
}

impl VehicleType {
    /// SYS_AUTOSTART: the airframe file's number.
    pub fn sys_autostart(self) -> i32 {
        match self {
            VehicleType::Quadrotor => 10040,
            VehicleType::Hexarotor => 10044,
            VehicleType::FixedWing => 10041,
        }
    }

    /// Flies as a fixed-wing (PX4's `vehicle_status.vehicle_type` FIXED_WING).
    pub fn is_fixed_wing(self) -> bool {
        self == VehicleType::FixedWing
    }

    /// `vehicle_status.vehicle_type` as PX4 logs it: 1 rotary wing, 2 fixed wing.
    pub fn px4_vehicle_type(self) -> u8 {
        if self.is_fixed_wing() {
            2
        } else {
            1
        }
    }

    /// `PX4_SIM_MODEL`: the airframe file's name after its number.
    pub fn sih_model(self) -> &'static str {
        match self {
            VehicleType::Quadrotor => "sihsim_quadx",
            VehicleType::Hexarotor => "sihsim_hex",
            VehicleType::FixedWing => "sihsim_airplane",
        }
    }
}
