//! Telemetry out: PX4's offboard-link streams at PX4's rates, and the mavlink module's other
//! periodic work (mission manager, STATUSTEXT, parameter list, PX4's own gimbal/camera commands).
//!
//! Streams are scheduled on the time the driver advanced (so they keep flowing when the
//! vehicle's clock is stalled), stamped with the vehicle's clock.

use super::commander::Conditions;
use super::params::P;
use super::vehicle::Vehicle;
use mav::{MavModeFlag, MavSysStatusSensor};
use mavlink::dialects::common as mav;
use mavlink::MessageData;
use nexus_core::offboard::geo::wrap_pi_open_below_f32 as wrap_pi;
use nexus_core::Mode;

/// Base of SYSTEM_TIME.time_unix_usec (2024-01-01T00:00:00Z): deterministic, unlike PX4's.
pub const UNIX_EPOCH_BASE_US: u64 = 1_704_067_200_000_000;
/// PARAM_VALUEs sent per tick while answering PARAM_REQUEST_LIST.
pub const PARAMS_PER_TICK: usize = 16;
/// The name PX4 gives the parameters' checksum in PARAM_VALUE.
pub const HASH_PARAM: &str = "_HASH_CHECK";
/// Period of the mission manager's work in the mavlink loop, µs.
pub const MISSION_MANAGER_US: u64 = 10_000;
/// Number of PX4's self-addressed gimbal/camera command sends per burst (one + retries).
pub const GIMBAL_SENDS: u8 = 3;
/// How far behind the vertical speed the AMSL estimate runs, s (EKF2-like lag in a climb).
pub const ESTIMATE_LAG_S: f32 = 0.25;
/// Largest lag of the AMSL estimate, m (docs/px4-wire.md §Height: within 0.73 m of the truth).
pub const ESTIMATE_LAG_MAX_M: f32 = 0.7;

/// A telemetry stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamKind {
    /// HEARTBEAT (0).
    Heartbeat,
    /// SYS_STATUS (1).
    SysStatus,
    /// SYSTEM_TIME (2).
    SystemTime,
    /// ATTITUDE (30).
    Attitude,
    /// ATTITUDE_QUATERNION (31).
    AttitudeQuaternion,
    /// HIGHRES_IMU (105).
    HighresImu,
    /// GLOBAL_POSITION_INT (33).
    GlobalPositionInt,
    /// LOCAL_POSITION_NED (32).
    LocalPositionNed,
    /// ODOMETRY (331).
    Odometry,
    /// VFR_HUD (74).
    VfrHud,
    /// ALTITUDE (141).
    Altitude,
    /// GPS_RAW_INT (24).
    GpsRawInt,
    /// EXTENDED_SYS_STATE (245).
    ExtendedSysState,
    /// HOME_POSITION (242).
    HomePosition,
    /// BATTERY_STATUS (147).
    BatteryStatus,
    /// HIL_STATE_QUATERNION (115): the simulator's true state. Off until asked for with
    /// SET_MESSAGE_INTERVAL, as on PX4 SITL.
    HilStateQuaternion,
    /// TIMESYNC (111): PX4's own time-sync requests (tc1 0, ts1 its clock in ns).
    Timesync,
    /// PING (4).
    Ping,
    /// SCALED_PRESSURE (29).
    ScaledPressure,
    /// DISTANCE_SENSOR (132): SIH's downward range finder.
    DistanceSensor,
    /// ESTIMATOR_STATUS (230).
    EstimatorStatus,
    /// ATTITUDE_TARGET (83).
    AttitudeTarget,
    /// POSITION_TARGET_LOCAL_NED (85).
    PositionTargetLocalNed,
    /// POSITION_TARGET_GLOBAL_INT (87): only while the navigator has a position target.
    PositionTargetGlobalInt,
    /// SERVO_OUTPUT_RAW (36).
    ServoOutputRaw,
    /// VIBRATION (241).
    Vibration,
    /// OPEN_DRONE_ID_LOCATION (12901).
    OpenDroneIdLocation,
    /// OPEN_DRONE_ID_SYSTEM (12904).
    OpenDroneIdSystem,
    /// LINK_NODE_STATUS (8).
    LinkNodeStatus,
    /// CURRENT_MODE (436).
    CurrentMode,
    /// TIME_ESTIMATE_TO_TARGET (380).
    TimeEstimateToTarget,
}

impl StreamKind {
    /// MAVLink message id.
    #[allow(deprecated)] // PING: PX4 still streams it.
    pub fn msgid(self) -> u32 {
        match self {
            StreamKind::Heartbeat => mav::HEARTBEAT_DATA::ID,
            StreamKind::SysStatus => mav::SYS_STATUS_DATA::ID,
            StreamKind::SystemTime => mav::SYSTEM_TIME_DATA::ID,
            StreamKind::Attitude => mav::ATTITUDE_DATA::ID,
            StreamKind::AttitudeQuaternion => mav::ATTITUDE_QUATERNION_DATA::ID,
            StreamKind::HighresImu => mav::HIGHRES_IMU_DATA::ID,
            StreamKind::GlobalPositionInt => mav::GLOBAL_POSITION_INT_DATA::ID,
            StreamKind::LocalPositionNed => mav::LOCAL_POSITION_NED_DATA::ID,
            StreamKind::Odometry => mav::ODOMETRY_DATA::ID,
            StreamKind::VfrHud => mav::VFR_HUD_DATA::ID,
            StreamKind::Altitude => mav::ALTITUDE_DATA::ID,
            StreamKind::GpsRawInt => mav::GPS_RAW_INT_DATA::ID,
            StreamKind::ExtendedSysState => mav::EXTENDED_SYS_STATE_DATA::ID,
            StreamKind::HomePosition => mav::HOME_POSITION_DATA::ID,
            StreamKind::BatteryStatus => mav::BATTERY_STATUS_DATA::ID,
            StreamKind::HilStateQuaternion => mav::HIL_STATE_QUATERNION_DATA::ID,
            StreamKind::Timesync => mav::TIMESYNC_DATA::ID,
            StreamKind::Ping => mav::PING_DATA::ID,
            StreamKind::ScaledPressure => mav::SCALED_PRESSURE_DATA::ID,
            StreamKind::DistanceSensor => mav::DISTANCE_SENSOR_DATA::ID,
            StreamKind::EstimatorStatus => mav::ESTIMATOR_STATUS_DATA::ID,
            StreamKind::AttitudeTarget => mav::ATTITUDE_TARGET_DATA::ID,
            StreamKind::PositionTargetLocalNed => mav::POSITION_TARGET_LOCAL_NED_DATA::ID,
            StreamKind::PositionTargetGlobalInt => mav::POSITION_TARGET_GLOBAL_INT_DATA::ID,
            StreamKind::ServoOutputRaw => mav::SERVO_OUTPUT_RAW_DATA::ID,
            StreamKind::Vibration => mav::VIBRATION_DATA::ID,
            StreamKind::OpenDroneIdLocation => mav::OPEN_DRONE_ID_LOCATION_DATA::ID,
            StreamKind::OpenDroneIdSystem => mav::OPEN_DRONE_ID_SYSTEM_DATA::ID,
            StreamKind::LinkNodeStatus => mav::LINK_NODE_STATUS_DATA::ID,
            StreamKind::CurrentMode => mav::CURRENT_MODE_DATA::ID,
            StreamKind::TimeEstimateToTarget => mav::TIME_ESTIMATE_TO_TARGET_DATA::ID,
        }
    }
}

/// PX4's rates on the offboard link (docs/px4-wire.md §Streams and the px4-traces, whose rates
/// `fixtures/calibration/px4-rates.tsv` lists), Hz; 0: not streamed until asked for.
pub const DEFAULT_RATES: &[(StreamKind, f32)] = &[
    (StreamKind::Heartbeat, 1.0),
    (StreamKind::SysStatus, 5.0),
    (StreamKind::SystemTime, 1.0),
    (StreamKind::Attitude, 100.0),
    (StreamKind::AttitudeQuaternion, 50.0),
    (StreamKind::HighresImu, 50.0),
    (StreamKind::GlobalPositionInt, 50.0),
    (StreamKind::LocalPositionNed, 30.0),
    (StreamKind::Odometry, 30.0),
    (StreamKind::VfrHud, 10.0),
    (StreamKind::Altitude, 10.0),
    (StreamKind::GpsRawInt, 8.0),
    (StreamKind::ExtendedSysState, 5.0),
    (StreamKind::HomePosition, 0.5),
    (StreamKind::BatteryStatus, 0.5),
    (StreamKind::HilStateQuaternion, 0.0),
    (StreamKind::Timesync, 10.0),
    (StreamKind::Ping, 1.0),
    (StreamKind::ScaledPressure, 1.0),
    (StreamKind::DistanceSensor, 10.0),
    (StreamKind::EstimatorStatus, 1.0),
    (StreamKind::AttitudeTarget, 10.0),
    (StreamKind::PositionTargetLocalNed, 10.0),
    (StreamKind::PositionTargetGlobalInt, 10.0),
    (StreamKind::ServoOutputRaw, 10.0),
    (StreamKind::Vibration, 0.5),
    (StreamKind::OpenDroneIdLocation, 1.0),
    (StreamKind::OpenDroneIdSystem, 1.0),
    (StreamKind::LinkNodeStatus, 1.0),
    (StreamKind::CurrentMode, 0.5),
    (StreamKind::TimeEstimateToTarget, 0.5),
];

#[derive(Debug, Clone, Copy)]
struct Entry {
    kind: StreamKind,
    interval_us: u64,
    default_us: u64,
    next_us: u64,
}

/// Stream schedule and the mavlink module's pending one-off work.
#[derive(Debug, Clone)]
pub struct Streams {
    entries: Vec<Entry>,
    started: bool,
    /// HOME_POSITION must go out now (home moved).
    pub home_changed: bool,
    /// A parameter changed internally: send its PARAM_VALUE unsolicited.
    pub unsolicited_param: Option<usize>,
    /// PARAM_REQUEST_LIST in progress: next index.
    pub param_list: Option<usize>,
    /// `_HASH_CHECK` goes out before the list's first parameter.
    pub param_hash_due: bool,
    next_mission_us: u64,
}

impl Default for Streams {
    fn default() -> Self {
        Self::new()
    }
}

impl Streams {
    /// PX4's default schedule.
    pub fn new() -> Self {
        Streams {
            entries: DEFAULT_RATES
                .iter()
                .map(|&(kind, hz)| {
                    let us = if hz > 0.0 { (1e6 / hz) as u64 } else { 0 };
                    Entry {
                        kind,
                        interval_us: us,
                        default_us: us,
                        next_us: 0,
                    }
                })
                .collect(),
            started: false,
            home_changed: false,
            unsolicited_param: None,
            param_list: None,
            param_hash_due: false,
            next_mission_us: 0,
        }
    }

    /// The interval of `msgid` as MESSAGE_INTERVAL states it, µs: 0 when this vehicle has no
    /// such stream, −1 when it is off (HIL_STATE_QUATERNION until asked for).
    pub fn interval_us(&self, msgid: u32) -> i32 {
        match self.entries.iter().find(|e| e.kind.msgid() == msgid) {
            None => 0,
            Some(e) if e.interval_us == 0 => -1,
            Some(e) => e.interval_us.min(i32::MAX as u64) as i32,
        }
    }

    /// MAV_CMD_SET_MESSAGE_INTERVAL: `interval_us` −1 disables, 0 restores the default.
    /// Returns false when the message is not streamed by this vehicle.
    pub fn set_interval(&mut self, msgid: u32, interval_us: f32, now_us: u64) -> bool {
        let Some(e) = self.entries.iter_mut().find(|e| e.kind.msgid() == msgid) else {
            return false;
        };
        e.interval_us = if interval_us < 0.0 {
            0
        } else if interval_us == 0.0 {
            e.default_us
        } else {
            (interval_us as u64).max(1_000)
        };
        e.next_us = now_us;
        true
    }
}

fn quat(roll: f32, pitch: f32, yaw: f32) -> [f32; 4] {
    let (sr, cr) = (roll * 0.5).sin_cos();
    let (sp, cp) = (pitch * 0.5).sin_cos();
    let (sy, cy) = (yaw * 0.5).sin_cos();
    [
        cr * cp * cy + sr * sp * sy,
        sr * cp * cy - cr * sp * sy,
        cr * sp * cy + sr * cp * sy,
        cr * cp * sy - sr * sp * cy,
    ]
}

const SENSORS: u32 = 0x1
    | 0x2
    | 0x4
    | 0x8
    | 0x20
    | 0x400
    | 0x800
    | 0x1000
    | 0x2000
    | 0x4000
    | 0x8000
    | 0x20_0000
    | 0x200_0000;
const PREARM: u32 = 0x1000_0000;

impl Vehicle {
    fn base_mode(&self, m: Mode) -> MavModeFlag {
        let mut b = 0x01u8; // CUSTOM_MODE_ENABLED
        if self.commander.armed {
            b |= 0x80;
        }
        b |= match m {
            _ if m.is_auto() => 0x04 | 0x08 | 0x10,
            Mode::Acro => 0x40,
            Mode::Offboard => 0x10,
            _ if m.needs_manual_control() => 0x40 | 0x10,
            _ => 0x10,
        };
        MavModeFlag::from_bits_retain(b)
    }

    fn heartbeat(&self) -> mav::HEARTBEAT_DATA {
        let m = self.commander.nav_state();
        let c = self.conditions();
        let status = if self.commander.armed {
            if self.commander.terminated() {
                mav::MavState::MAV_STATE_FLIGHT_TERMINATION
            } else if self.commander.failsafe.is_some() {
                mav::MavState::MAV_STATE_CRITICAL
            } else {
                mav::MavState::MAV_STATE_ACTIVE
            }
        } else if self.commander.can_arm(&Conditions {
            // box-x4: STANDBY at 4.28 s in Mission mode, 1.8 s before the prearm bit.
            mission_boot_done: true,
            ..c
        }) {
            mav::MavState::MAV_STATE_STANDBY
        } else {
            mav::MavState::MAV_STATE_UNINIT
        };
        mav::HEARTBEAT_DATA {
            custom_mode: m.custom_mode(),
            // PX4 sends its MAV_TYPE parameter (`vehicle_status.system_type`).
            mavtype: <mav::MavType as num_traits::FromPrimitive>::from_i32(
                self.params.i(P::MAV_TYPE),
            )
            .unwrap_or(mav::MavType::MAV_TYPE_GENERIC),
            autopilot: mav::MavAutopilot::MAV_AUTOPILOT_PX4,
            base_mode: self.base_mode(m),
            system_status: status,
            mavlink_version: 3,
        }
    }

    pub(super) fn time_boot_ms(&self) -> u32 {
        (self.now_us / 1000) as u32
    }

    /// GLOBAL_POSITION_INT.alt as PX4's estimator reports it, m AMSL: the true altitude
    /// lagging in a climb or descent like EKF2's (0.25 s of the vertical speed, at most
    /// [`ESTIMATE_LAG_MAX_M`]; docs/px4-wire.md §Height: the AMSL estimate within 0.73 m of truth).
    pub(super) fn estimated_alt_amsl(&self, true_alt_amsl_m: f32) -> f32 {
        let climb_m_s = -self.body.vel_ned_m_s[2];
        let lag = (climb_m_s * ESTIMATE_LAG_S).clamp(-ESTIMATE_LAG_MAX_M, ESTIMATE_LAG_MAX_M);
        true_alt_amsl_m - lag
    }

    /// Altitude of home as PX4 reports it (with the post-takeoff corrections), m AMSL.
    pub(super) fn reported_home_alt(&self) -> f32 {
        let origin = self.frame.origin().alt_amsl_m;
        let home = self.home.map(|h| origin - h.ned[2]).unwrap_or(origin);
        home + self.alt_steps.offset_m
    }

    /// Sends one message of stream `kind`, built from the vehicle's state now.
    fn emit(&mut self, kind: StreamKind) {
        match kind {
            StreamKind::Heartbeat
            | StreamKind::SysStatus
            | StreamKind::ExtendedSysState
            | StreamKind::HomePosition
            | StreamKind::BatteryStatus
            | StreamKind::EstimatorStatus
            | StreamKind::ServoOutputRaw
            | StreamKind::CurrentMode
            | StreamKind::TimeEstimateToTarget => self.emit_health(kind),
            StreamKind::SystemTime
            | StreamKind::Timesync
            | StreamKind::Ping
            | StreamKind::LinkNodeStatus => self.emit_clock(kind),
            StreamKind::Attitude
            | StreamKind::AttitudeQuaternion
            | StreamKind::HighresImu
            | StreamKind::ScaledPressure
            | StreamKind::Vibration
            | StreamKind::AttitudeTarget
            | StreamKind::DistanceSensor => self.emit_attitude_and_sensors(kind),
            StreamKind::GlobalPositionInt
            | StreamKind::LocalPositionNed
            | StreamKind::Odometry
            | StreamKind::Altitude => self.emit_position_estimate(kind),
            StreamKind::GpsRawInt
            | StreamKind::VfrHud
            | StreamKind::OpenDroneIdLocation
            | StreamKind::OpenDroneIdSystem => self.emit_gnss_and_hud(kind),
            StreamKind::HilStateQuaternion
            | StreamKind::PositionTargetLocalNed
            | StreamKind::PositionTargetGlobalInt => self.emit_truth_and_targets(kind),
        }
    }

    /// Heartbeat, health and state: what a ground station shows on its status bar.
    fn emit_health(&mut self, kind: StreamKind) {
        let now = self.now_us;
        let can_arm = {
            let c = self.conditions();
            self.commander.can_arm(&c)
        };
        let landed_state = self.landed_state();
        let bat_mv = self.battery.voltage_mv(&self.params);
        let bat_pct = (self.battery.remaining(&self.params) * 100.0).round() as i8;
        let charge_state = match self.battery.warning {
            crate::battery::Warning::None => {
                mav::MavBatteryChargeState::MAV_BATTERY_CHARGE_STATE_OK
            }
            crate::battery::Warning::Low => {
                mav::MavBatteryChargeState::MAV_BATTERY_CHARGE_STATE_LOW
            }
            crate::battery::Warning::Critical => {
                mav::MavBatteryChargeState::MAV_BATTERY_CHARGE_STATE_CRITICAL
            }
            crate::battery::Warning::Emergency => {
                mav::MavBatteryChargeState::MAV_BATTERY_CHARGE_STATE_EMERGENCY
            }
        };
        let out = &mut self.io.out;
        match kind {
            StreamKind::Heartbeat => {
                let hb = self.heartbeat();
                self.io.out.push(&hb);
            }
            StreamKind::SysStatus => {
                let health = if can_arm { SENSORS | PREARM } else { SENSORS };
                out.push(&mav::SYS_STATUS_DATA {
                    onboard_control_sensors_present: MavSysStatusSensor::from_bits_retain(
                        SENSORS | PREARM,
                    ),
                    onboard_control_sensors_enabled: MavSysStatusSensor::from_bits_retain(
                        SENSORS | PREARM,
                    ),
                    onboard_control_sensors_health: MavSysStatusSensor::from_bits_retain(health),
                    load: 250,
                    voltage_battery: bat_mv,
                    current_battery: -1,
                    battery_remaining: bat_pct,
                    ..Default::default()
                });
            }
            StreamKind::ExtendedSysState => {
                let ls = match landed_state {
                    1 => mav::MavLandedState::MAV_LANDED_STATE_ON_GROUND,
                    3 => mav::MavLandedState::MAV_LANDED_STATE_TAKEOFF,
                    4 => mav::MavLandedState::MAV_LANDED_STATE_LANDING,
                    _ => mav::MavLandedState::MAV_LANDED_STATE_IN_AIR,
                };
                out.push(&mav::EXTENDED_SYS_STATE_DATA {
                    vtol_state: mav::MavVtolState::MAV_VTOL_STATE_UNDEFINED,
                    landed_state: ls,
                });
            }
            StreamKind::HomePosition => self.send_home(),
            StreamKind::BatteryStatus => {
                let mut voltages = [u16::MAX; 10];
                voltages[0] = bat_mv;
                out.push(&mav::BATTERY_STATUS_DATA {
                    current_consumed: -1,
                    energy_consumed: -1,
                    temperature: i16::MAX,
                    voltages,
                    current_battery: -1,
                    id: 0,
                    battery_function: mav::MavBatteryFunction::MAV_BATTERY_FUNCTION_UNKNOWN,
                    mavtype: mav::MavBatteryType::MAV_BATTERY_TYPE_LIPO,
                    battery_remaining: bat_pct,
                    time_remaining: 0,
                    charge_state,
                    ..Default::default()
                });
            }
            StreamKind::EstimatorStatus => out.push(&mav::ESTIMATOR_STATUS_DATA {
                time_usec: now,
                ..Default::default()
            }),
            StreamKind::ServoOutputRaw => {
                let pwm = if self.commander.armed { 1_500 } else { 1_000 };
                out.push(&mav::SERVO_OUTPUT_RAW_DATA {
                    time_usec: now as u32,
                    servo1_raw: pwm,
                    servo2_raw: pwm,
                    servo3_raw: pwm,
                    servo4_raw: pwm,
                    ..Default::default()
                });
            }
            StreamKind::CurrentMode => self.send_current_mode(),
            StreamKind::TimeEstimateToTarget => out.push(&mav::TIME_ESTIMATE_TO_TARGET_DATA {
                safe_return: -1,
                land: -1,
                mission_next_item: -1,
                mission_end: -1,
                commanded_action: -1,
            }),
            _ => {}
        }
    }

    /// The clock and link messages: SYSTEM_TIME, TIMESYNC, PING, LINK_NODE_STATUS.
    fn emit_clock(&mut self, kind: StreamKind) {
        let now = self.now_us;
        let ms = self.time_boot_ms();
        let out = &mut self.io.out;
        match kind {
            StreamKind::SystemTime => out.push(&mav::SYSTEM_TIME_DATA {
                time_unix_usec: UNIX_EPOCH_BASE_US + now,
                time_boot_ms: ms,
            }),
            StreamKind::Timesync => out.push(&mav::TIMESYNC_DATA {
                tc1: 0,
                ts1: now as i64 * 1000,
                ..Default::default()
            }),
            // PX4 still streams the deprecated PING (the box trace: 1 Hz).
            #[allow(deprecated)]
            StreamKind::Ping => {
                self.ping_seq = self.ping_seq.wrapping_add(1);
                self.io.out.push(&mav::PING_DATA {
                    time_usec: now,
                    seq: self.ping_seq,
                    target_system: 0,
                    target_component: 0,
                });
            }
            StreamKind::LinkNodeStatus => out.push(&mav::LINK_NODE_STATUS_DATA {
                timestamp: now / 1000,
                ..Default::default()
            }),
            _ => {}
        }
    }

    /// Attitude and the raw sensors (IMU, barometer, vibration, range finder).
    fn emit_attitude_and_sensors(&mut self, kind: StreamKind) {
        let now = self.now_us;
        let b = self.body;
        let geo = self.frame.to_geo(b.pos_ned_m);
        let ms = self.time_boot_ms();
        let local_ok = now >= self.cfg.boot.local_position_ms * 1000;
        let out = &mut self.io.out;
        match kind {
            StreamKind::Attitude => out.push(&mav::ATTITUDE_DATA {
                time_boot_ms: ms,
                roll: b.roll_rad,
                pitch: b.pitch_rad,
                yaw: b.yaw_rad,
                rollspeed: b.rates_rad_s[0],
                pitchspeed: b.rates_rad_s[1],
                yawspeed: b.rates_rad_s[2],
            }),
            StreamKind::AttitudeQuaternion => {
                let q = quat(b.roll_rad, b.pitch_rad, b.yaw_rad);
                out.push(&mav::ATTITUDE_QUATERNION_DATA {
                    time_boot_ms: ms,
                    q1: q[0],
                    q2: q[1],
                    q3: q[2],
                    q4: q[3],
                    rollspeed: b.rates_rad_s[0],
                    pitchspeed: b.rates_rad_s[1],
                    yawspeed: b.rates_rad_s[2],
                    repr_offset_q: [0.0; 4],
                });
            }
            StreamKind::HighresImu => {
                let pressure_hpa = 1013.25 * (1.0 - 2.25577e-5 * geo.alt_amsl_m).powf(5.25588);
                out.push(&mav::HIGHRES_IMU_DATA {
                    time_usec: now,
                    xacc: 0.0,
                    yacc: 0.0,
                    zacc: -super::dynamics::G - b.acc_ned_m_s2[2],
                    xgyro: b.rates_rad_s[0],
                    ygyro: b.rates_rad_s[1],
                    zgyro: b.rates_rad_s[2],
                    xmag: 0.21 * b.yaw_rad.cos(),
                    ymag: -0.21 * b.yaw_rad.sin(),
                    zmag: 0.43,
                    abs_pressure: pressure_hpa,
                    diff_pressure: 0.0,
                    pressure_alt: geo.alt_amsl_m,
                    temperature: 25.0,
                    fields_updated: mav::HighresImuUpdatedFlags::from_bits_retain(0x1fff),
                    id: 0,
                });
            }
            StreamKind::ScaledPressure => {
                // Standard atmosphere near the ground: -12 Pa per metre.
                let hpa = 1013.25 - 0.12 * geo.alt_amsl_m;
                out.push(&mav::SCALED_PRESSURE_DATA {
                    time_boot_ms: ms,
                    press_abs: hpa,
                    temperature: 2_000,
                    ..Default::default()
                });
            }
            StreamKind::Vibration => out.push(&mav::VIBRATION_DATA {
                time_usec: now,
                ..Default::default()
            }),
            StreamKind::AttitudeTarget => out.push(&mav::ATTITUDE_TARGET_DATA {
                time_boot_ms: ms,
                q: quat(b.roll_rad, b.pitch_rad, b.yaw_rad),
                thrust: if self.commander.armed { 0.5 } else { 0.0 },
                ..Default::default()
            }),
            StreamKind::DistanceSensor if local_ok => out.push(&mav::DISTANCE_SENSOR_DATA {
                time_boot_ms: ms,
                min_distance: 0,
                max_distance: 10_000,
                current_distance: (b.height_m().max(0.0) * 100.0).round() as u16,
                orientation: mav::MavSensorOrientation::MAV_SENSOR_ROTATION_PITCH_270,
                ..Default::default()
            }),
            _ => {}
        }
    }

    /// The estimator's position: global, local, odometry, altitude (each once its boot delay passed).
    fn emit_position_estimate(&mut self, kind: StreamKind) {
        let now = self.now_us;
        let b = self.body;
        let geo = self.frame.to_geo(b.pos_ned_m);
        let ms = self.time_boot_ms();
        let global_ok = now >= self.cfg.boot.global_position_ms * 1000;
        let local_ok = now >= self.cfg.boot.local_position_ms * 1000;
        let yaw_deg = {
            let d = b.yaw_rad.to_degrees();
            if d < 0.0 {
                d + 360.0
            } else {
                d
            }
        };
        let out = &mut self.io.out;
        match kind {
            StreamKind::GlobalPositionInt if global_ok => {
                let est = self.estimated_alt_amsl(geo.alt_amsl_m);
                let rel = est - self.reported_home_alt();
                let hdg = ((yaw_deg * 100.0).round() as u32 % 36000) as u16;
                self.io.out.push(&mav::GLOBAL_POSITION_INT_DATA {
                    time_boot_ms: ms,
                    lat: (geo.lat_deg * 1e7).round() as i32,
                    lon: (geo.lon_deg * 1e7).round() as i32,
                    alt: (est * 1000.0).round() as i32,
                    relative_alt: (rel * 1000.0).round() as i32,
                    vx: (b.vel_ned_m_s[0] * 100.0).round() as i16,
                    vy: (b.vel_ned_m_s[1] * 100.0).round() as i16,
                    vz: (b.vel_ned_m_s[2] * 100.0).round() as i16,
                    hdg,
                });
            }
            StreamKind::LocalPositionNed if local_ok => out.push(&mav::LOCAL_POSITION_NED_DATA {
                time_boot_ms: ms,
                x: b.pos_ned_m[0],
                y: b.pos_ned_m[1],
                z: b.pos_ned_m[2],
                vx: b.vel_ned_m_s[0],
                vy: b.vel_ned_m_s[1],
                vz: b.vel_ned_m_s[2],
            }),
            StreamKind::Odometry if local_ok => {
                let q = quat(b.roll_rad, b.pitch_rad, b.yaw_rad);
                let (s, c) = b.yaw_rad.sin_cos();
                let v = b.vel_ned_m_s;
                out.push(&mav::ODOMETRY_DATA {
                    time_usec: now,
                    x: b.pos_ned_m[0],
                    y: b.pos_ned_m[1],
                    z: b.pos_ned_m[2],
                    q,
                    vx: v[0] * c + v[1] * s,
                    vy: -v[0] * s + v[1] * c,
                    vz: v[2],
                    rollspeed: b.rates_rad_s[0],
                    pitchspeed: b.rates_rad_s[1],
                    yawspeed: b.rates_rad_s[2],
                    pose_covariance: [f32::NAN; 21],
                    velocity_covariance: [f32::NAN; 21],
                    frame_id: mav::MavFrame::MAV_FRAME_LOCAL_NED,
                    child_frame_id: mav::MavFrame::MAV_FRAME_BODY_FRD,
                    reset_counter: 0,
                    estimator_type: mav::MavEstimatorType::MAV_ESTIMATOR_TYPE_AUTOPILOT,
                    quality: 100,
                });
            }
            StreamKind::Altitude if local_ok => {
                let rel = geo.alt_amsl_m - self.reported_home_alt();
                self.io.out.push(&mav::ALTITUDE_DATA {
                    time_usec: now,
                    altitude_monotonic: geo.alt_amsl_m,
                    altitude_amsl: geo.alt_amsl_m,
                    altitude_local: -b.pos_ned_m[2],
                    altitude_relative: rel,
                    altitude_terrain: f32::NAN,
                    bottom_clearance: f32::NAN,
                });
            }
            _ => {}
        }
    }

    /// GPS_RAW_INT, VFR_HUD and the Open Drone ID location.
    fn emit_gnss_and_hud(&mut self, kind: StreamKind) {
        let now = self.now_us;
        let b = self.body;
        let geo = self.frame.to_geo(b.pos_ned_m);
        let global_ok = now >= self.cfg.boot.global_position_ms * 1000;
        let yaw_deg = {
            let d = b.yaw_rad.to_degrees();
            if d < 0.0 {
                d + 360.0
            } else {
                d
            }
        };
        let out = &mut self.io.out;
        match kind {
            StreamKind::GpsRawInt => {
                let fix = if global_ok {
                    mav::GpsFixType::GPS_FIX_TYPE_3D_FIX
                } else {
                    mav::GpsFixType::GPS_FIX_TYPE_NO_FIX
                };
                let gs = b.ground_speed_m_s();
                let cog = b.vel_ned_m_s[1].atan2(b.vel_ned_m_s[0]).to_degrees();
                let cog = if cog < 0.0 { cog + 360.0 } else { cog };
                out.push(&mav::GPS_RAW_INT_DATA {
                    time_usec: now,
                    lat: (geo.lat_deg * 1e7).round() as i32,
                    lon: (geo.lon_deg * 1e7).round() as i32,
                    alt: (geo.alt_amsl_m * 1000.0).round() as i32,
                    eph: 90,
                    epv: 130,
                    vel: (gs * 100.0).round() as u16,
                    cog: ((cog * 100.0).round() as u32 % 36000) as u16,
                    fix_type: fix,
                    satellites_visible: if global_ok { 10 } else { 0 },
                    alt_ellipsoid: ((geo.alt_amsl_m + 47.0) * 1000.0).round() as i32,
                    h_acc: 500,
                    v_acc: 800,
                    vel_acc: 300,
                    hdg_acc: 0,
                    yaw: 0,
                });
            }
            StreamKind::VfrHud => {
                let gs = b.ground_speed_m_s();
                let throttle = if self.commander.armed && !b.on_ground {
                    50
                } else {
                    0
                };
                out.push(&mav::VFR_HUD_DATA {
                    airspeed: gs,
                    groundspeed: gs,
                    alt: geo.alt_amsl_m,
                    climb: -b.vel_ned_m_s[2],
                    heading: yaw_deg.round() as i16 % 360,
                    throttle,
                });
            }
            StreamKind::OpenDroneIdLocation => out.push(&mav::OPEN_DRONE_ID_LOCATION_DATA {
                latitude: (geo.lat_deg * 1e7).round() as i32,
                longitude: (geo.lon_deg * 1e7).round() as i32,
                altitude_geodetic: geo.alt_amsl_m,
                height: b.height_m(),
                ..Default::default()
            }),
            StreamKind::OpenDroneIdSystem => out.push(&mav::OPEN_DRONE_ID_SYSTEM_DATA {
                ..Default::default()
            }),
            _ => {}
        }
    }

    /// SIH's ground truth and the position controller's targets.
    fn emit_truth_and_targets(&mut self, kind: StreamKind) {
        let now = self.now_us;
        let b = self.body;
        let geo = self.frame.to_geo(b.pos_ned_m);
        let ms = self.time_boot_ms();
        let out = &mut self.io.out;
        match kind {
            StreamKind::HilStateQuaternion => {
                // SIH's ground truth as PX4 streams it: true position (alt mm AMSL), velocity
                // cm/s, attitude, body rates, speeds cm/s, acceleration mG.
                let q = quat(b.roll_rad, b.pitch_rad, b.yaw_rad);
                let v = b.vel_ned_m_s;
                let cm = |x: f32| (x * 100.0).round().clamp(-32_768.0, 32_767.0) as i16;
                let mg = |x: f32| (x / super::dynamics::G * 1000.0).round() as i16;
                let speed = (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt();
                let speed_cm = (speed * 100.0).round().min(65_535.0) as u16;
                let a = b.acc_ned_m_s2;
                out.push(&mav::HIL_STATE_QUATERNION_DATA {
                    time_usec: now,
                    attitude_quaternion: q,
                    rollspeed: b.rates_rad_s[0],
                    pitchspeed: b.rates_rad_s[1],
                    yawspeed: b.rates_rad_s[2],
                    lat: (geo.lat_deg * 1e7).round() as i32,
                    lon: (geo.lon_deg * 1e7).round() as i32,
                    alt: (geo.alt_amsl_m * 1000.0).round() as i32,
                    vx: cm(v[0]),
                    vy: cm(v[1]),
                    vz: cm(v[2]),
                    ind_airspeed: speed_cm,
                    true_airspeed: speed_cm,
                    xacc: mg(a[0]),
                    yacc: mg(a[1]),
                    zacc: mg(a[2] - super::dynamics::G),
                });
            }
            StreamKind::PositionTargetLocalNed => {
                let t = self.nav.target().unwrap_or(b.pos_ned_m);
                self.io.out.push(&mav::POSITION_TARGET_LOCAL_NED_DATA {
                    time_boot_ms: ms,
                    x: t[0],
                    y: t[1],
                    z: t[2],
                    coordinate_frame: mav::MavFrame::MAV_FRAME_LOCAL_NED,
                    ..Default::default()
                });
            }
            StreamKind::PositionTargetGlobalInt => {
                if let Some(t) = self.nav.target().filter(|_| self.commander.armed) {
                    let g = self.frame.to_geo(t);
                    self.io.out.push(&mav::POSITION_TARGET_GLOBAL_INT_DATA {
                        time_boot_ms: ms,
                        lat_int: (g.lat_deg * 1e7).round() as i32,
                        lon_int: (g.lon_deg * 1e7).round() as i32,
                        alt: g.alt_amsl_m,
                        // PX4 sends frame 5 (the box trace), deprecated in today's common.xml.
                        #[allow(deprecated)]
                        coordinate_frame: mav::MavFrame::MAV_FRAME_GLOBAL_INT,
                        ..Default::default()
                    });
                }
            }
            _ => {}
        }
    }

    /// CURRENT_MODE: the mode in force, its standard mode, and the user's intended mode.
    pub(super) fn send_current_mode(&mut self) {
        let mode = self.commander.nav_state();
        self.io.out.push(&mav::CURRENT_MODE_DATA {
            custom_mode: mode.custom_mode(),
            intended_custom_mode: self.commander.user_mode.custom_mode(),
            standard_mode: super::modes::standard_mode(mode),
        });
    }

    /// GPS_GLOBAL_ORIGIN: the estimator's origin (the pad), as PX4 sends it once the origin is
    /// set (1.27 s in the traces, just after the first heartbeat) and on request.
    pub(super) fn send_gps_origin(&mut self) {
        let o = self.frame.origin();
        self.io.out.push(&mav::GPS_GLOBAL_ORIGIN_DATA {
            latitude: (o.lat_deg * 1e7).round() as i32,
            longitude: (o.lon_deg * 1e7).round() as i32,
            altitude: (o.alt_amsl_m * 1000.0).round() as i32,
            time_usec: self.cfg.boot.mavlink_start_ms * 1000,
        });
    }

    /// HOME_POSITION, if home is set.
    pub(super) fn send_home(&mut self) {
        let Some(h) = self.home else { return };
        let g = self.frame.to_geo(h.ned);
        let alt = self.reported_home_alt();
        let q = quat(0.0, 0.0, wrap_pi(h.yaw));
        self.io.out.push(&mav::HOME_POSITION_DATA {
            latitude: (g.lat_deg * 1e7).round() as i32,
            longitude: (g.lon_deg * 1e7).round() as i32,
            altitude: (alt * 1000.0).round() as i32,
            x: h.ned[0],
            y: h.ned[1],
            z: h.ned[2],
            q,
            approach_x: 0.0,
            approach_y: 0.0,
            approach_z: 0.0,
            time_usec: self.now_us,
        });
    }

    /// PARAM_VALUE for the parameter at `index`.
    pub(super) fn send_param(&mut self, index: usize) {
        let count = self.params.count();
        if let Some((name, kind, value)) = self.params.entry(index) {
            let mut id = [0u8; 16];
            id[..name.len()].copy_from_slice(name.as_bytes());
            let wire = value.wire_f32();
            self.io.out.push(&mav::PARAM_VALUE_DATA {
                param_value: wire,
                param_count: count,
                param_index: index as u16,
                param_id: id.into(),
                param_type: kind.mav(),
            });
        }
    }

    /// PARAM_VALUE `_HASH_CHECK`: the parameters' checksum, type UINT32, index -1 (65535).
    pub(super) fn send_param_hash(&mut self) {
        let mut id = [0u8; 16];
        id[..HASH_PARAM.len()].copy_from_slice(HASH_PARAM.as_bytes());
        self.io.out.push(&mav::PARAM_VALUE_DATA {
            param_value: f32::from_bits(self.params.hash()),
            param_count: self.params.count(),
            param_index: u16::MAX,
            param_id: id.into(),
            param_type: mav::MavParamType::MAV_PARAM_TYPE_UINT32,
        });
    }

    fn gimbal_commands(&mut self) {
        let Some((start, sent)) = self.gimbal_burst else {
            return;
        };
        if sent >= GIMBAL_SENDS {
            self.gimbal_burst = None;
            return;
        }
        if self.now_us < start + sent as u64 * 1_000_000 {
            return;
        }
        let sys = self.sysid;
        for (cmd, comp, p1, p2) in [
            (
                mav::MavCmd::MAV_CMD_DO_GIMBAL_MANAGER_CONFIGURE,
                154u8,
                -2.0f32,
                -2.0f32,
            ),
            (
                mav::MavCmd::MAV_CMD_DO_GIMBAL_MANAGER_PITCHYAW,
                154,
                0.0,
                0.0,
            ),
            (mav::MavCmd::MAV_CMD_DO_TRIGGER_CONTROL, 100, 0.0, -1.0),
        ] {
            self.io.out.push(&mav::COMMAND_LONG_DATA {
                param1: p1,
                param2: p2,
                param3: f32::NAN,
                param4: f32::NAN,
                param5: 0.0,
                param6: 0.0,
                param7: 0.0,
                command: cmd,
                target_system: sys,
                target_component: comp,
                confirmation: sent,
            });
        }
        self.gimbal_burst = Some((start, sent + 1));
    }

    /// The mavlink module's work for one tick.
    pub(super) fn io_tick(&mut self) {
        if !self.mavlink_up() {
            return;
        }
        if !self.streams.started {
            self.streams.started = true;
            let n = self.cfg.instance as u32;
            self.io.print(format!(
                "INFO  [mavlink] mode: Onboard, data rate: 4000000 B/s on udp port {} remote port {}",
                14580 + n,
                14540 + n
            ));
            let t0 = self.elapsed_us;
            for (i, e) in self.streams.entries.iter_mut().enumerate() {
                // Spread the phases like independent PX4 streams.
                e.next_us = t0 + (i as u64 * 997) % e.interval_us.max(1);
            }
            self.gimbal_burst = Some((self.now_us + 2_500_000, 0));
            self.send_gps_origin();
        }
        let t = self.elapsed_us;
        if std::mem::take(&mut self.streams.home_changed) {
            self.send_home();
            // A home sent on change restarts the stream's period: the box trace has 0.5 Hz in
            // all, re-estimations included.
            if let Some(e) = self
                .streams
                .entries
                .iter_mut()
                .find(|e| e.kind == StreamKind::HomePosition && e.interval_us > 0)
            {
                e.next_us = t + e.interval_us;
            }
        }
        for i in 0..self.streams.entries.len() {
            let e = self.streams.entries[i];
            if e.interval_us == 0 || t < e.next_us {
                continue;
            }
            let mut next = e.next_us + e.interval_us;
            if next <= t {
                next = t + e.interval_us;
            }
            self.streams.entries[i].next_us = next;
            self.emit(e.kind);
        }
        let view = self.mission_view();
        let now = self.now_us;
        // The mission manager runs in the mavlink loop; its retries came ~0.26 s
        // apart for a 0.25 s timeout, i.e. a ~10 ms cadence (docs/px4-wire.md §Mission upload).
        let slow = now >= self.streams.next_mission_us;
        if slow {
            self.streams.next_mission_us = now - now % MISSION_MANAGER_US + MISSION_MANAGER_US;
        }
        self.mission.update(now, &mut self.io, view, slow);
        self.logger
            .send(self.tick_us, UNIX_EPOCH_BASE_US, &mut self.io.out);
        let connected = !self.cfg.texts_need_gcs_heartbeat
            || self
                .gcs_heartbeat_us
                .is_some_and(|h| now.saturating_sub(h) <= super::vehicle::GCS_TIMEOUT_US);
        if now >= self.cfg.boot.texts_start_ms * 1000 {
            self.io.texts.flush(now, connected, &mut self.io.out);
        }
        self.io.events_tick(now);
        self.gimbal_commands();
        if let Some(idx) = self.streams.unsolicited_param.take() {
            self.send_param(idx);
        }
        if self.streams.param_hash_due {
            self.streams.param_hash_due = false;
            self.send_param_hash();
        } else if let Some(next) = self.streams.param_list {
            let end = (next + PARAMS_PER_TICK).min(self.params.count() as usize);
            for i in next..end {
                self.send_param(i);
            }
            self.streams.param_list = (end < self.params.count() as usize).then_some(end);
        }
    }
}
