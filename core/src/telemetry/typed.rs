//! Telemetry in units: degrees, metres, radians, volts and percent instead of MAVLink's
//! 1e7 degrees, millimetres and centi-degrees, and "not reported" as `None` instead of the
//! sentinel values (−1, `u16::MAX`) the messages use.

use crate::mav;

/// Where the vehicle is on Earth (GLOBAL_POSITION_INT).
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub struct Position {
    /// Latitude, degrees (WGS84).
    pub lat_deg: f64,
    /// Longitude, degrees (WGS84).
    pub lon_deg: f64,
    /// Altitude above mean sea level, m.
    pub alt_amsl_m: f32,
    /// Altitude above home, m (PX4 re-estimates home's altitude in flight, so this jumps; the
    /// `altitude` condition reads the height above the pad instead).
    pub alt_above_home_m: f32,
}

impl Position {
    /// From GLOBAL_POSITION_INT.
    pub fn from_mav(m: &mav::GLOBAL_POSITION_INT_DATA) -> Self {
        Position {
            lat_deg: m.lat as f64 / 1e7,
            lon_deg: m.lon as f64 / 1e7,
            alt_amsl_m: m.alt as f32 / 1000.0,
            alt_above_home_m: m.relative_alt as f32 / 1000.0,
        }
    }
}

/// Local position and velocity in PX4's NED frame (x north, y east, z down) around its
/// estimator origin (LOCAL_POSITION_NED).
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub struct LocalNed {
    /// North, m.
    pub north_m: f32,
    /// East, m.
    pub east_m: f32,
    /// Down, m (negative above the origin).
    pub down_m: f32,
    /// Velocity north, m/s.
    pub v_north_m_s: f32,
    /// Velocity east, m/s.
    pub v_east_m_s: f32,
    /// Velocity down, m/s (negative while climbing).
    pub v_down_m_s: f32,
}

impl LocalNed {
    /// From LOCAL_POSITION_NED.
    pub fn from_mav(m: &mav::LOCAL_POSITION_NED_DATA) -> Self {
        LocalNed {
            north_m: m.x,
            east_m: m.y,
            down_m: m.z,
            v_north_m_s: m.vx,
            v_east_m_s: m.vy,
            v_down_m_s: m.vz,
        }
    }
}

/// Orientation in PX4's NED body convention (ATTITUDE).
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub struct Attitude {
    /// Roll, rad (right wing down positive).
    pub roll_rad: f32,
    /// Pitch, rad (nose up positive).
    pub pitch_rad: f32,
    /// Yaw, rad, NED: 0 north, +π/2 east, in [−π, π].
    pub yaw_rad: f32,
}

impl Attitude {
    /// From ATTITUDE.
    pub fn from_mav(m: &mav::ATTITUDE_DATA) -> Self {
        Attitude {
            roll_rad: m.roll,
            pitch_rad: m.pitch,
            yaw_rad: m.yaw,
        }
    }

    /// The heading, rad in [0, 2π): the NED yaw as a compass reads it.
    pub fn heading_rad(&self) -> f32 {
        heading_rad(self.yaw_rad)
    }
}

/// A NED yaw (rad) as a compass heading in [0, 2π).
pub fn heading_rad(yaw_rad: f32) -> f32 {
    let tau = core::f32::consts::TAU;
    let h = libm::fmodf(yaw_rad, tau);
    let h = if h < 0.0 { h + tau } else { h };
    // fmodf of a value just under 0 can round up to τ itself.
    if h >= tau {
        0.0
    } else {
        h
    }
}

/// The main battery as SYS_STATUS reports it.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub struct Battery {
    /// Voltage, V; `None` when the autopilot does not measure it (`u16::MAX`).
    pub voltage_v: Option<f32>,
    /// Remaining charge, %; `None` when the autopilot does not estimate it (−1).
    pub remaining_pct: Option<f32>,
}

impl Battery {
    /// From SYS_STATUS.
    pub fn from_mav(m: &mav::SYS_STATUS_DATA) -> Self {
        Battery {
            voltage_v: (m.voltage_battery != u16::MAX).then(|| m.voltage_battery as f32 / 1000.0),
            remaining_pct: (m.battery_remaining >= 0).then_some(m.battery_remaining as f32),
        }
    }
}

/// GPS fix type (GPS_FIX_TYPE), ordered: a better fix compares greater.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum GpsFix {
    /// No GPS connected.
    NoGps = 0,
    /// No position information, GPS is connected.
    NoFix = 1,
    /// 2D position.
    Fix2d = 2,
    /// 3D position.
    Fix3d = 3,
    /// DGPS/SBAS aided 3D position.
    Dgps = 4,
    /// RTK float, 3D position.
    RtkFloat = 5,
    /// RTK fixed, 3D position.
    RtkFixed = 6,
    /// Static fixed, typically used for base stations.
    Static = 7,
    /// PPP, 3D position.
    Ppp = 8,
}

impl GpsFix {
    /// From the GPS_FIX_TYPE value; `None` for a value MAVLink does not define.
    pub fn from_mav(v: u8) -> Option<GpsFix> {
        Some(match v {
            0 => GpsFix::NoGps,
            1 => GpsFix::NoFix,
            2 => GpsFix::Fix2d,
            3 => GpsFix::Fix3d,
            4 => GpsFix::Dgps,
            5 => GpsFix::RtkFloat,
            6 => GpsFix::RtkFixed,
            7 => GpsFix::Static,
            8 => GpsFix::Ppp,
            _ => return None,
        })
    }

    /// By the name a program writes: `none`, `no_fix`, `2d`, `3d`, `dgps`, `rtk_float`,
    /// `rtk_fixed`, `static`, `ppp` (case-insensitive).
    pub fn from_name(name: &str) -> Option<GpsFix> {
        const NAMES: [(&str, GpsFix); 9] = [
            ("none", GpsFix::NoGps),
            ("no_fix", GpsFix::NoFix),
            ("2d", GpsFix::Fix2d),
            ("3d", GpsFix::Fix3d),
            ("dgps", GpsFix::Dgps),
            ("rtk_float", GpsFix::RtkFloat),
            ("rtk_fixed", GpsFix::RtkFixed),
            ("static", GpsFix::Static),
            ("ppp", GpsFix::Ppp),
        ];
        NAMES
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, f)| *f)
    }
}

/// What GPS_RAW_INT says about the receiver.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub struct Gps {
    /// Fix type; `None` for a value MAVLink does not define.
    pub fix: Option<GpsFix>,
    /// Satellites visible; `None` when unknown (255).
    pub satellites: Option<u8>,
}

impl Gps {
    /// From GPS_RAW_INT.
    pub fn from_mav(m: &mav::GPS_RAW_INT_DATA) -> Self {
        Gps {
            fix: GpsFix::from_mav(m.fix_type as u8),
            satellites: (m.satellites_visible != u8::MAX).then_some(m.satellites_visible),
        }
    }
}

/// Where PX4 set home (HOME_POSITION).
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub struct Home {
    /// Latitude, degrees.
    pub lat_deg: f64,
    /// Longitude, degrees.
    pub lon_deg: f64,
    /// Altitude above mean sea level, m.
    pub alt_amsl_m: f32,
}

impl Home {
    /// From HOME_POSITION.
    pub fn from_mav(m: &mav::HOME_POSITION_DATA) -> Self {
        Home {
            lat_deg: m.latitude as f64 / 1e7,
            lon_deg: m.longitude as f64 / 1e7,
            alt_amsl_m: m.altitude as f32 / 1000.0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heading_wraps_into_one_turn() {
        let pi = core::f32::consts::PI;
        assert!((heading_rad(-pi / 2.0) - 1.5 * pi).abs() < 1e-5);
        assert!((heading_rad(pi / 2.0) - pi / 2.0).abs() < 1e-6);
        assert_eq!(heading_rad(0.0), 0.0);
        assert!(heading_rad(-1e-9) < core::f32::consts::TAU);
    }

    #[test]
    fn sentinels_are_none() {
        let s = mav::SYS_STATUS_DATA {
            voltage_battery: u16::MAX,
            battery_remaining: -1,
            ..Default::default()
        };
        let b = Battery::from_mav(&s);
        assert_eq!((b.voltage_v, b.remaining_pct), (None, None));
        let s = mav::SYS_STATUS_DATA {
            voltage_battery: 16_200,
            battery_remaining: 87,
            ..Default::default()
        };
        let b = Battery::from_mav(&s);
        assert_eq!((b.voltage_v, b.remaining_pct), (Some(16.2), Some(87.0)));
        let g = mav::GPS_RAW_INT_DATA {
            fix_type: mav::GpsFixType::GPS_FIX_TYPE_3D_FIX,
            satellites_visible: u8::MAX,
            ..Default::default()
        };
        let g = Gps::from_mav(&g);
        assert_eq!((g.fix, g.satellites), (Some(GpsFix::Fix3d), None));
    }

    #[test]
    fn fix_names_and_order() {
        assert_eq!(GpsFix::from_name("3D"), Some(GpsFix::Fix3d));
        assert_eq!(GpsFix::from_name("rtk_fixed"), Some(GpsFix::RtkFixed));
        assert_eq!(GpsFix::from_name("4d"), None);
        assert!(GpsFix::RtkFixed > GpsFix::Fix3d);
        assert_eq!(GpsFix::from_mav(9), None);
    }
}
