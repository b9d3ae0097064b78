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

/// A parameter's value in its MAVLink type: what a PARAM_SET carries and a PARAM_VALUE
/// reports. PX4 sends integers bytewise: an INT32's bits ride in the message's float field
/// (1 goes out as 0x00000001, not as 1.0), so the type decides how the field is read.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum ParamValue {
    /// A REAL32 parameter, in the parameter's own unit.
    Real(f32),
    /// An INT32 parameter (PX4's integer parameters are all INT32).
    Int(i32),
}

impl ParamValue {
    /// The 32 bits of the message's float field: the f32's bits, or the i32's own.
    pub fn wire_bits(self) -> u32 {
        match self {
            ParamValue::Real(v) => v.to_bits(),
            ParamValue::Int(i) => i as u32,
        }
    }

    /// The message's float field as it travels ([`ParamValue::wire_bits`] as an f32).
    pub fn wire_f32(self) -> f32 {
        f32::from_bits(self.wire_bits())
    }

    /// Read a float field's `bits`: an integer when `int` (any MAV_PARAM_TYPE INT8..UINT32;
    /// PX4 uses INT32), else a REAL32.
    pub fn from_wire(bits: u32, int: bool) -> Self {
        if int {
            ParamValue::Int(bits as i32)
        } else {
            ParamValue::Real(f32::from_bits(bits))
        }
    }

    /// Whether it is an integer parameter.
    pub fn is_int(self) -> bool {
        matches!(self, ParamValue::Int(_))
    }

    /// The integer, `None` for a REAL32.
    pub fn as_int(self) -> Option<i32> {
        match self {
            ParamValue::Int(i) => Some(i),
            ParamValue::Real(_) => None,
        }
    }

    /// The float, `None` for an INT32.
    pub fn as_real(self) -> Option<f32> {
        match self {
            ParamValue::Real(v) => Some(v),
            ParamValue::Int(_) => None,
        }
    }

    /// The value as a number (an INT32 converted numerically, not bitwise).
    pub fn as_f32(self) -> f32 {
        match self {
            ParamValue::Real(v) => v,
            ParamValue::Int(i) => i as f32,
        }
    }
}

impl From<f32> for ParamValue {
    fn from(v: f32) -> Self {
        ParamValue::Real(v)
    }
}

impl From<i32> for ParamValue {
    fn from(v: i32) -> Self {
        ParamValue::Int(v)
    }
}

impl core::fmt::Display for ParamValue {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            ParamValue::Real(v) => write!(f, "{v}"),
            ParamValue::Int(i) => write!(f, "{i}"),
        }
    }
}

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

/// The keys every step of a program may have, whatever its action: `name`, `action`, `until`,
/// `timeout_s`, `on_timeout`.
pub const STEP_KEYS: [&str; 5] = ["name", "action", "until", "timeout_s", "on_timeout"];

/// One action of a step program as written (`action = "takeoff"` in a `nexus run` program,
/// `{"action": "takeoff"}` from Python): its name and the keys it takes besides [`STEP_KEYS`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ActionSpec {
    /// The name a step writes (`"takeoff"`, `"stop_rc"`, …).
    pub name: &'static str,
    /// The keys of its arguments (`["alt_m"]`).
    pub keys: &'static [&'static str],
    /// Whether reading it needs what only a host with std has: `upload` names a `.plan` file,
    /// which a front end reads from its file system (the action itself uploads the mission
    /// lodged with the offboard machine).
    pub needs_std: bool,
}

const fn spec(name: &'static str, keys: &'static [&'static str]) -> ActionSpec {
    ActionSpec {
        name,
        keys,
        needs_std: false,
    }
}

/// The actions a step may name, in the order a person reads them, with this build's features
/// (`offboard` and `stop_offboard` need `setpoints`, `vtol_transition` needs `vtol`,
/// `inject_failure` needs `failure-injection`).
pub const ACTIONS: &[ActionSpec] = &[
    spec("none", &[]),
    spec("mode", &["mode"]),
    spec("arm", &["gesture"]),
    spec("disarm", &[]),
    spec("takeoff", &["alt_m"]),
    spec("goto", &["x_m", "y_m", "z_m", "yaw_deg"]),
    spec("land", &[]),
    spec("rtl", &[]),
    spec("hold", &[]),
    spec("rc", &["sticks"]),
    spec("stop_rc", &[]),
    spec("param", &["param", "real", "int"]),
    ActionSpec {
        name: "upload",
        keys: &["plan"],
        needs_std: true,
    },
    spec("verify_mission", &[]),
    spec("start", &[]),
    spec("pause", &[]),
    spec("resume", &[]),
    spec("speedup", &["factor"]),
    #[cfg(feature = "setpoints")]
    spec(
        "offboard",
        &[
            "north_m",
            "east_m",
            "down_m",
            "v_north_m_s",
            "v_east_m_s",
            "v_down_m_s",
            "yaw_deg",
        ],
    ),
    #[cfg(feature = "setpoints")]
    spec("stop_offboard", &[]),
    #[cfg(feature = "failure-injection")]
    spec("inject_failure", &["unit", "failure", "instance"]),
    #[cfg(feature = "vtol")]
    spec("vtol_transition", &["to"]),
];

/// The action named `name` in [`ACTIONS`], or `None` for a name it has not.
pub fn action_named(name: &str) -> Option<&'static ActionSpec> {
    ACTIONS.iter().find(|a| a.name == name)
}

/// The first action in [`ACTIONS`] that takes `key` (what an error for a key given to the wrong
/// action names), or `None` for a key no action takes.
pub fn action_with_key(key: &str) -> Option<&'static ActionSpec> {
    ACTIONS.iter().find(|a| a.keys.contains(&key))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn actions_are_found_by_name_and_by_key() {
        assert_eq!(
            action_named("takeoff").map(|a| a.keys),
            Some(&["alt_m"][..])
        );
        assert_eq!(action_named("fly"), None);
        assert_eq!(action_with_key("alt_m").map(|a| a.name), Some("takeoff"));
        assert_eq!(action_with_key("name"), None);
        // Names are unique and no action takes a key every step has.
        for (i, a) in ACTIONS.iter().enumerate() {
            assert!(
                ACTIONS[i + 1..].iter().all(|b| b.name != a.name),
                "{}",
                a.name
            );
            assert!(a.keys.iter().all(|k| !STEP_KEYS.contains(k)), "{}", a.name);
        }
        assert_eq!(
            ACTIONS
                .iter()
                .filter(|a| a.needs_std)
                .map(|a| a.name)
                .next(),
            Some("upload")
        );
    }
}
