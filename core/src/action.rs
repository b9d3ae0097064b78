//! What a flight program's step, or a reaction, asks the vehicle to do.
//!
//! One closed set shared by step programs ([`crate::engine`]) and the offboard machine
//! ([`crate::offboard`]), which carries them out. `Speedup` is the driver's (only a simulator's
//! clock can be sped up); everything else is a verb of the offboard machine.

use crate::mode::Mode;
use crate::rc::RcSticks;
#[cfg(feature = "vtol")]
use crate::vehicle::VtolState;
use heapless::String;

/// Longest PX4 parameter name (PARAM_SET.param_id), bytes.
pub const PARAM_NAME_LEN: usize = 16;

/// A PX4 parameter name.
pub type ParamName = String<PARAM_NAME_LEN>;

/// One thing to do.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive] // variants behind features (failure injection), and more to come
pub enum Action {
    /// Nothing: a step that only waits.
    None,
    /// Request a flight mode (a manual mode starts the neutral MANUAL_CONTROL stream first).
    SetMode(Mode),
    /// Arm by command once armable.
    Arm,
    /// Arm with the throttle-down, yaw-right stick gesture once armable.
    ArmGesture,
    /// Send one disarm command and drop any outstanding arm request.
    Disarm,
    /// MIS_TAKEOFF_ALT, Takeoff mode confirmed, then arm.
    Takeoff {
        /// Takeoff altitude above home, m.
        alt_m: f32,
    },
    /// DO_REPOSITION to a world-frame (FLU, z up over the launch point) position.
    Goto {
        /// World x (forward/north at the anchor), m.
        x_m: f32,
        /// World y (left/west), m.
        y_m: f32,
        /// Height over the launch point, m.
        z_m: f32,
        /// World heading, rad, right-handed about +z (+π/2 faces +y = west); `None` leaves it to PX4.
        yaw_rad: Option<f32>,
    },
    /// Land mode.
    Land,
    /// RTL mode.
    ReturnToLaunch,
    /// Hold (Loiter) mode.
    Hold,
    /// Stream these sticks at 20 Hz.
    Rc(RcSticks),
    /// Stop the MANUAL_CONTROL stream.
    StopRc,
    /// PARAM_SET of a REAL32 parameter.
    ParamReal {
        /// Parameter name.
        name: ParamName,
        /// New value.
        value: f32,
    },
    /// PARAM_SET of an INT32 parameter (the int's bits ride in the float field).
    ParamInt {
        /// Parameter name.
        name: ParamName,
        /// New value.
        value: i32,
    },
    /// Upload the mission lodged with the offboard machine.
    UploadMission,
    /// Download the vehicle's mission and compare it, item for item, with the one uploaded
    /// (held): identical sets [`crate::mission::MissionProgress::verified`]; the first
    /// difference ends the download and is reported
    /// ([`crate::offboard::OffboardEvent::MissionMismatch`]). The held mission is not replaced.
    VerifyMission,
    /// MISSION_SET_CURRENT 0, Mission mode confirmed, then arm.
    StartMission,
    /// Pause a mission (Hold).
    PauseMission,
    /// Resume a paused mission (Mission mode again).
    ResumeMission,
    /// Change the simulator's speed factor (the driver's, not the autopilot's).
    Speedup(f32),
    /// Stream this setpoint and request Offboard mode (once: not again while in it).
    #[cfg(feature = "setpoints")]
    Offboard(crate::offboard::Setpoint),
    /// Request Hold and stop the setpoint stream.
    #[cfg(feature = "setpoints")]
    StopOffboard,
    /// MAV_CMD_DO_VTOL_TRANSITION, sent once: change a VTOL to `to`, [`VtolState::Fw`] (wing-borne
    /// flight) or [`VtolState::Mc`] (hover). PX4 answers ACCEPTED and EXTENDED_SYS_STATE shows
    /// the transition state, then `to`; it refuses a transition to fixed-wing in Takeoff, Land,
    /// RTL and Orbit (TEMPORARILY_REJECTED). Refused before it is sent on a vehicle that is no
    /// VTOL ([`crate::offboard::OffboardError::NotForVehicle`]): PX4 sends no answer there.
    #[cfg(feature = "vtol")]
    VtolTransition {
        /// [`VtolState::Fw`] or [`VtolState::Mc`]; any other state is an invalid argument.
        to: VtolState,
    },
    /// MAV_CMD_INJECT_FAILURE, sent once: make the autopilot behave as if `unit` failed in
    /// manner `kind` (PX4 SITL honours it with SYS_FAILURE_EN = 1, its default there). PX4
    /// acknowledges a battery failure; a GPS or RC-signal failure gets no COMMAND_ACK at all,
    /// which is reported as no answer, not as a refusal.
    #[cfg(feature = "failure-injection")]
    InjectFailure {
        /// FAILURE_UNIT: 0 gyro, 1 accel, 2 mag, 3 baro, 4 GPS, 5 optical flow, 6 VIO,
        /// 7 distance sensor, 8 airspeed, 100 battery, 101 motor, 102 servo, 103 avoidance,
        /// 104 RC signal, 105 MAVLink signal.
        unit: u8,
        /// FAILURE_TYPE: 0 ok (clear it), 1 off, 2 stuck, 3 garbage, 4 wrong, 5 slow,
        /// 6 delayed, 7 intermittent.
        kind: u8,
        /// Which instance of the unit (0: all).
        instance: u8,
    },
}

/// Build a [`ParamName`], or `None` if `name` is longer than [`PARAM_NAME_LEN`] bytes.
pub fn param_name(name: &str) -> Option<ParamName> {
    let mut s = String::new();
    s.push_str(name).ok()?;
    Some(s)
}

/// The FAILURE_UNIT names `inject_failure` takes (the program reader's and the Python
/// package's), with their numbers in MAVLink's FAILURE_UNIT.
pub const FAILURE_UNITS: [(&str, u8); 15] = [
    ("gyro", 0),
    ("accel", 1),
    ("mag", 2),
    ("baro", 3),
    ("gps", 4),
    ("optical_flow", 5),
    ("vio", 6),
    ("distance_sensor", 7),
    ("airspeed", 8),
    ("battery", 100),
    ("motor", 101),
    ("servo", 102),
    ("avoidance", 103),
    ("rc_signal", 104),
    ("mavlink_signal", 105),
];

/// The FAILURE_TYPE names `inject_failure` takes, with their numbers in MAVLink's
/// FAILURE_TYPE.
pub const FAILURE_KINDS: [(&str, u8); 8] = [
    ("ok", 0),
    ("off", 1),
    ("stuck", 2),
    ("garbage", 3),
    ("wrong", 4),
    ("slow", 5),
    ("delayed", 6),
    ("intermittent", 7),
];
