//! Offboard setpoints: what PX4's Offboard mode follows, streamed by the machine at the stick
//! period (20 Hz by default; PX4 needs more than 2 Hz and fails safe after COM_OF_LOSS_T
//! without one).
//!
//! PX4's rule is kept by the caller's order: set a setpoint (it goes out on the next poll),
//! then request [`crate::Mode::Offboard`]; keep the setpoint set while in Offboard; clear it
//! and request Hold to stop. Clearing it without a mode change is a stream loss, which PX4
//! answers with its failsafe (COM_OBL_RC_ACT) — on purpose, when that is what a test wants.

use crate::mav;

/// One setpoint, in the frame its name says.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum Setpoint {
    /// Position in PX4's local NED frame (SET_POSITION_TARGET_LOCAL_NED, MAV_FRAME_LOCAL_NED),
    /// with an optional NED yaw.
    PositionNed {
        /// North, m.
        north_m: f32,
        /// East, m.
        east_m: f32,
        /// Down, m (negative above the origin).
        down_m: f32,
        /// NED yaw, rad (0 north, +π/2 east); `None` leaves the yaw to PX4.
        yaw_rad: Option<f32>,
    },
    /// Velocity in PX4's local NED frame (SET_POSITION_TARGET_LOCAL_NED), with a yaw or a yaw
    /// rate.
    VelocityNed {
        /// North, m/s.
        v_north_m_s: f32,
        /// East, m/s.
        v_east_m_s: f32,
        /// Down, m/s (negative climbs).
        v_down_m_s: f32,
        /// How the yaw is commanded.
        yaw: Yaw,
    },
    /// A global position (SET_POSITION_TARGET_GLOBAL_INT, MAV_FRAME_GLOBAL: altitude AMSL).
    Global {
        /// Latitude, degrees.
        lat_deg: f64,
        /// Longitude, degrees.
        lon_deg: f64,
        /// Altitude above mean sea level, m.
        alt_amsl_m: f32,
        /// NED yaw, rad; `None` leaves the yaw to PX4.
        yaw_rad: Option<f32>,
    },
    /// Attitude and collective thrust (SET_ATTITUDE_TARGET, body rates ignored).
    Attitude {
        /// Roll, rad.
        roll_rad: f32,
        /// Pitch, rad.
        pitch_rad: f32,
        /// NED yaw, rad.
        yaw_rad: f32,
        /// Normalised thrust, 0..1.
        thrust: f32,
    },
}

/// The yaw part of a velocity setpoint.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Yaw {
    /// Leave the yaw to PX4.
    #[default]
    Free,
    /// Hold this NED yaw, rad.
    Angle(f32),
    /// Turn at this rate, rad/s (positive clockwise seen from above).
    Rate(f32),
}

/// Type-mask bits (POSITION_TARGET_TYPEMASK).
const IGNORE_POS: u16 = 0b111;
const IGNORE_VEL: u16 = 0b111_000;
const IGNORE_ACC: u16 = 0b111_000_000;
const IGNORE_YAW: u16 = 0x400;
const IGNORE_YAW_RATE: u16 = 0x800;

impl Setpoint {
    /// Whether every number is finite (and the thrust in 0..1, the latitude and longitude on
    /// Earth): a setpoint that is not is refused, never sent.
    pub fn is_valid(&self) -> bool {
        let fin = |v: &[f32]| v.iter().all(|x| x.is_finite());
        let opt = |v: Option<f32>| v.is_none_or(f32::is_finite);
        match *self {
            Setpoint::PositionNed {
                north_m,
                east_m,
                down_m,
                yaw_rad,
            } => fin(&[north_m, east_m, down_m]) && opt(yaw_rad),
            Setpoint::VelocityNed {
                v_north_m_s,
                v_east_m_s,
                v_down_m_s,
                yaw,
            } => {
                fin(&[v_north_m_s, v_east_m_s, v_down_m_s])
                    && match yaw {
                        Yaw::Free => true,
                        Yaw::Angle(a) | Yaw::Rate(a) => a.is_finite(),
                    }
            }
            Setpoint::Global {
                lat_deg,
                lon_deg,
                alt_amsl_m,
                yaw_rad,
            } => {
                (-90.0..=90.0).contains(&lat_deg)
                    && (-180.0..=180.0).contains(&lon_deg)
                    && alt_amsl_m.is_finite()
                    && opt(yaw_rad)
            }
            Setpoint::Attitude {
                roll_rad,
                pitch_rad,
                yaw_rad,
                thrust,
            } => fin(&[roll_rad, pitch_rad, yaw_rad]) && (0.0..=1.0).contains(&thrust),
        }
    }
}

/// How close a velocity setpoint's velocity must be for it to count as reached, m/s.
pub const VELOCITY_TOL_M_S: f32 = 0.3;

impl Setpoint {
    /// Whether the vehicle is at this setpoint, by `cfg`'s tolerances: a position within
    /// `arrive_m` (3D; LOCAL_POSITION_NED, or GLOBAL_POSITION_INT for a global one) and a yaw,
    /// if given, within `yaw_tol_rad` (ATTITUDE); a velocity within [`VELOCITY_TOL_M_S`]
    /// (LOCAL_POSITION_NED); an attitude with each angle within `yaw_tol_rad`. False before
    /// those messages arrive.
    pub fn reached<const T: usize>(
        &self,
        tel: &crate::telemetry::Telemetry<T>,
        cfg: &super::OffboardConfig,
    ) -> bool {
        use super::geo::{ne_offset_m, wrap_pi};
        let angle_ok = |have: f32, want: f32| {
            libm::fabs(wrap_pi(have as f64 - want as f64)) < cfg.yaw_tol_rad as f64
        };
        let yaw_ok = |want: Option<f32>| match want {
            None => true,
            Some(w) => tel.attitude().is_some_and(|a| angle_ok(a.yaw, w)),
        };
        match *self {
            Setpoint::PositionNed {
                north_m,
                east_m,
                down_m,
                yaw_rad,
            } => {
                let Some(l) = tel.local_position() else {
                    return false;
                };
                let (dn, de, dd) = (l.x - north_m, l.y - east_m, l.z - down_m);
                libm::sqrtf(dn * dn + de * de + dd * dd) < cfg.arrive_m && yaw_ok(yaw_rad)
            }
            Setpoint::VelocityNed {
                v_north_m_s,
                v_east_m_s,
                v_down_m_s,
                yaw,
            } => {
                let Some(l) = tel.local_position() else {
                    return false;
                };
                let (a, b, c) = (l.vx - v_north_m_s, l.vy - v_east_m_s, l.vz - v_down_m_s);
                let yaw = match yaw {
                    Yaw::Angle(w) => yaw_ok(Some(w)),
                    _ => true,
                };
                libm::sqrtf(a * a + b * b + c * c) <= VELOCITY_TOL_M_S && yaw
            }
            Setpoint::Global {
                lat_deg,
                lon_deg,
                alt_amsl_m,
                yaw_rad,
            } => {
                let Some(p) = tel.global_position() else {
                    return false;
                };
                let here = (p.lat as f64 / 1e7, p.lon as f64 / 1e7);
                let (dn, de) = ne_offset_m(lat_deg, (lat_deg, lon_deg), here);
                let dz = (p.alt as f64 / 1000.0) - alt_amsl_m as f64;
                libm::sqrt(dn * dn + de * de + dz * dz) < cfg.arrive_m as f64 && yaw_ok(yaw_rad)
            }
            Setpoint::Attitude {
                roll_rad,
                pitch_rad,
                yaw_rad,
                ..
            } => tel.attitude().is_some_and(|a| {
                angle_ok(a.roll, roll_rad)
                    && angle_ok(a.pitch, pitch_rad)
                    && angle_ok(a.yaw, yaw_rad)
            }),
        }
    }
}

/// The frame for `sp`, sent to system `sys`, component `comp`.
pub(crate) enum SetpointMsg {
    Local(mav::SET_POSITION_TARGET_LOCAL_NED_DATA),
    Global(mav::SET_POSITION_TARGET_GLOBAL_INT_DATA),
    Attitude(mav::SET_ATTITUDE_TARGET_DATA),
}

/// Encode `sp` for `sys`/`comp`, stamped `time_boot_ms`.
pub(crate) fn setpoint_msg(sp: &Setpoint, sys: u8, comp: u8, time_boot_ms: u32) -> SetpointMsg {
    let yaw_bits = |y: Option<f32>| match y {
        Some(_) => IGNORE_YAW_RATE,
        None => IGNORE_YAW | IGNORE_YAW_RATE,
    };
    // A local NED setpoint ignoring what `type_mask` says, to this system.
    let local = |type_mask: u16| mav::SET_POSITION_TARGET_LOCAL_NED_DATA {
        time_boot_ms,
        type_mask: mav::PositionTargetTypemask::from_bits_truncate(type_mask),
        target_system: sys,
        target_component: comp,
        coordinate_frame: mav::MavFrame::MAV_FRAME_LOCAL_NED,
        ..Default::default()
    };
    match *sp {
        Setpoint::PositionNed {
            north_m,
            east_m,
            down_m,
            yaw_rad,
        } => SetpointMsg::Local(mav::SET_POSITION_TARGET_LOCAL_NED_DATA {
            x: north_m,
            y: east_m,
            z: down_m,
            yaw: yaw_rad.unwrap_or(0.0),
            ..local(IGNORE_VEL | IGNORE_ACC | yaw_bits(yaw_rad))
        }),
        Setpoint::VelocityNed {
            v_north_m_s,
            v_east_m_s,
            v_down_m_s,
            yaw,
        } => {
            let (yaw_v, rate_v, bits) = match yaw {
                Yaw::Free => (0.0, 0.0, IGNORE_YAW | IGNORE_YAW_RATE),
                Yaw::Angle(a) => (a, 0.0, IGNORE_YAW_RATE),
                Yaw::Rate(r) => (0.0, r, IGNORE_YAW),
            };
            SetpointMsg::Local(mav::SET_POSITION_TARGET_LOCAL_NED_DATA {
                vx: v_north_m_s,
                vy: v_east_m_s,
                vz: v_down_m_s,
                yaw: yaw_v,
                yaw_rate: rate_v,
                ..local(IGNORE_POS | IGNORE_ACC | bits)
            })
        }
        Setpoint::Global {
            lat_deg,
            lon_deg,
            alt_amsl_m,
            yaw_rad,
        } => SetpointMsg::Global(mav::SET_POSITION_TARGET_GLOBAL_INT_DATA {
            time_boot_ms,
            lat_int: libm::round(lat_deg * 1e7) as i32,
            lon_int: libm::round(lon_deg * 1e7) as i32,
            alt: alt_amsl_m,
            yaw: yaw_rad.unwrap_or(0.0),
            type_mask: mav::PositionTargetTypemask::from_bits_truncate(
                IGNORE_VEL | IGNORE_ACC | yaw_bits(yaw_rad),
            ),
            target_system: sys,
            target_component: comp,
            coordinate_frame: mav::MavFrame::MAV_FRAME_GLOBAL,
            ..Default::default()
        }),
        Setpoint::Attitude {
            roll_rad,
            pitch_rad,
            yaw_rad,
            thrust,
        } => SetpointMsg::Attitude(mav::SET_ATTITUDE_TARGET_DATA {
            time_boot_ms,
            q: quaternion(roll_rad, pitch_rad, yaw_rad),
            thrust,
            target_system: sys,
            target_component: comp,
            // Ignore the body rates: attitude and thrust only.
            type_mask: mav::AttitudeTargetTypemask::from_bits_truncate(0b111),
            ..Default::default()
        }),
    }
}

/// Roll, pitch, yaw (ZYX) → quaternion (w, x, y, z).
fn quaternion(roll: f32, pitch: f32, yaw: f32) -> [f32; 4] {
    let (sr, cr) = libm::sincosf(roll * 0.5);
    let (sp, cp) = libm::sincosf(pitch * 0.5);
    let (sy, cy) = libm::sincosf(yaw * 0.5);
    [
        cr * cp * cy + sr * sp * sy,
        sr * cp * cy - cr * sp * sy,
        cr * sp * cy + sr * cp * sy,
        cr * cp * sy - sr * sp * cy,
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_say_what_is_commanded() {
        let p = Setpoint::PositionNed {
            north_m: 1.0,
            east_m: 2.0,
            down_m: -3.0,
            yaw_rad: None,
        };
        let SetpointMsg::Local(m) = setpoint_msg(&p, 1, 1, 0) else {
            panic!("local")
        };
        assert_eq!((m.x, m.y, m.z), (1.0, 2.0, -3.0));
        assert_eq!(m.type_mask.bits() & 0b111, 0);
        assert_eq!(m.type_mask.bits() & 0b111_000, 0b111_000);
        assert_ne!(m.type_mask.bits() & 0x400, 0);
        let v = Setpoint::VelocityNed {
            v_north_m_s: 1.0,
            v_east_m_s: 0.0,
            v_down_m_s: 0.0,
            yaw: Yaw::Rate(0.5),
        };
        let SetpointMsg::Local(m) = setpoint_msg(&v, 1, 1, 0) else {
            panic!("local")
        };
        assert_eq!(m.type_mask.bits() & 0b111, 0b111);
        assert_eq!(m.type_mask.bits() & 0b111_000, 0);
        assert_eq!(m.type_mask.bits() & 0xC00, 0x400);
        assert_eq!(m.yaw_rate, 0.5);
        let q = quaternion(0.0, 0.0, core::f32::consts::PI);
        assert!(q[0].abs() < 1e-6 && (q[3] - 1.0).abs() < 1e-6, "{q:?}");
    }

    #[test]
    fn bad_numbers_are_not_valid() {
        let bad = [
            Setpoint::PositionNed {
                north_m: f32::NAN,
                east_m: 0.0,
                down_m: 0.0,
                yaw_rad: None,
            },
            Setpoint::VelocityNed {
                v_north_m_s: 0.0,
                v_east_m_s: 0.0,
                v_down_m_s: 0.0,
                yaw: Yaw::Rate(f32::INFINITY),
            },
            Setpoint::Global {
                lat_deg: 95.0,
                lon_deg: 0.0,
                alt_amsl_m: 500.0,
                yaw_rad: None,
            },
            Setpoint::Attitude {
                roll_rad: 0.0,
                pitch_rad: 0.0,
                yaw_rad: 0.0,
                thrust: 1.5,
            },
        ];
        for sp in bad {
            assert!(!sp.is_valid(), "{sp:?}");
        }
    }
}
