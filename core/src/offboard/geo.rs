//! World FLU ↔ geodetic, through a local tangent plane, and world yaw ↔ PX4's NED heading.
//!
//! The world frame is the simulator's: x forward (north at the anchor), y left (west), z up
//! over the launch point. PX4 speaks geodetic positions and NED headings. The plane is
//! equirectangular around the anchor latitude `lat0` on a sphere of radius
//! [`EARTH_RADIUS_M`] (PX4's own `CONSTANTS_RADIUS_OF_EARTH`, so a position PX4 reports maps
//! back to the one we sent): north = x, east = −y, `lat = lat0 + north / m_per_deg`,
//! `lon = lon0 + east / (m_per_deg · cos lat0)` with `m_per_deg = π/180 · R`. Within a few
//! kilometres of the anchor that is centimetre-exact against PX4's azimuthal projection.
//!
//! Yaw is reflected the same way: world yaw turns +x toward +y (north toward west), PX4's
//! heading turns north toward east, so `yaw_ned = wrap_pi(−yaw_world)` and back.

use core::f64::consts::PI;

/// Sphere radius of the tangent plane, m (PX4's CONSTANTS_RADIUS_OF_EARTH).
pub const EARTH_RADIUS_M: f64 = 6_371_000.0;

/// Metres per degree of latitude on that sphere.
pub const M_PER_DEG: f64 = PI / 180.0 * EARTH_RADIUS_M;

/// The tangent plane's origin: where the world frame's origin is on Earth.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Anchor {
    /// Latitude of the world origin, degrees.
    pub lat0_deg: f64,
    /// Longitude of the world origin, degrees.
    pub lon0_deg: f64,
    /// Altitude of the launch point (world z = 0) over mean sea level, m.
    pub home_amsl_m: f64,
}

impl Anchor {
    /// The anchor captured on the first goto: the vehicle's current position from
    /// GLOBAL_POSITION_INT, and the pad's altitude in PX4's own AMSL estimate: `alt − height_m`
    /// with the telemetry's height above the pad, so world z = 0 is the pad PX4 flies from;
    /// `alt − relative_alt` (PX4's home, which it re-estimates in flight) only without a height.
    pub fn from_position(
        p: &crate::mav::GLOBAL_POSITION_INT_DATA,
        height_m: Option<f32>,
    ) -> Anchor {
        let alt_m = p.alt as f64 / 1000.0;
        Anchor {
            lat0_deg: p.lat as f64 / 1e7,
            lon0_deg: p.lon as f64 / 1e7,
            home_amsl_m: match height_m {
                Some(h) => alt_m - h as f64,
                None => alt_m - p.relative_alt as f64 / 1000.0,
            },
        }
    }

    fn cos_lat0(&self) -> f64 {
        libm::cos(self.lat0_deg.to_radians())
    }

    /// World (x forward/north, y left/west), m → (latitude, longitude), degrees.
    pub fn to_global(&self, x_m: f64, y_m: f64) -> (f64, f64) {
        let north = x_m;
        let east = -y_m;
        (
            self.lat0_deg + north / M_PER_DEG,
            self.lon0_deg + east / (M_PER_DEG * self.cos_lat0()),
        )
    }

    /// (latitude, longitude), degrees → world (x, y), m: the inverse of [`Anchor::to_global`].
    pub fn to_world(&self, lat_deg: f64, lon_deg: f64) -> (f64, f64) {
        let north = (lat_deg - self.lat0_deg) * M_PER_DEG;
        let east = (lon_deg - self.lon0_deg) * M_PER_DEG * self.cos_lat0();
        (north, -east)
    }

    /// World z (over the launch point), m → altitude AMSL, m.
    pub fn amsl_m(&self, z_m: f64) -> f64 {
        self.home_amsl_m + z_m
    }
}

/// Horizontal north/east offset from `(lat_a, lon_a)` to `(lat_b, lon_b)`, m, on the plane
/// around latitude `lat0_deg` (what the Python client's `at_target` measures).
pub fn ne_offset_m(lat0_deg: f64, a: (f64, f64), b: (f64, f64)) -> (f64, f64) {
    let dn = (b.0 - a.0) * M_PER_DEG;
    let de = (b.1 - a.1) * M_PER_DEG * libm::cos(lat0_deg.to_radians());
    (dn, de)
}

/// An angle wrapped into [−π, π), as Python's `(a + π) % 2π − π`.
pub fn wrap_pi(a: f64) -> f64 {
    let tau = 2.0 * PI;
    let mut r = libm::fmod(a + PI, tau);
    if r < 0.0 {
        r += tau;
    }
    r - PI
}

/// An angle wrapped into (−π, π], in f32: +π stays +π and −π becomes +π, unlike
/// [`wrap_pi`]'s [−π, π). The simulated vehicle's headings and yaw errors use it.
pub fn wrap_pi_open_below_f32(a: f32) -> f32 {
    let tau = core::f32::consts::TAU;
    let mut r = libm::fmodf(a, tau);
    if r > core::f32::consts::PI {
        r -= tau;
    } else if r <= -core::f32::consts::PI {
        r += tau;
    }
    r
}

/// World yaw (right-handed about +z, +π/2 faces +y = west) → PX4 NED heading, rad.
pub fn yaw_world_to_ned(yaw_world_rad: f64) -> f64 {
    wrap_pi(-yaw_world_rad)
}

/// PX4 NED heading → world yaw, rad (the same reflection).
pub fn yaw_ned_to_world(yaw_ned_rad: f64) -> f64 {
    wrap_pi(-yaw_ned_rad)
}

/// Degrees → degrees × 1e7, rounded half to even (Python's `round`); `None` if it does not
/// fit MAVLink's int32 field or is not finite.
pub fn deg_to_e7(deg: f64) -> Option<i32> {
    let v = libm::rint(deg * 1e7);
    (v >= i32::MIN as f64 && v <= i32::MAX as f64).then_some(v as i32)
}
