//! Local tangent plane ↔ WGS84, the way PX4's `map_projection` does it for short distances.
//!
//! The simulated world is flat: a local North-East-Down (NED) frame anchored at the pad the
//! vehicle boots on. Latitude/longitude come from an azimuthal equidistant projection around
//! that anchor (PX4 `lib/geo`), exact enough for the few kilometres a test flies.

pub use nexus_core::offboard::geo::EARTH_RADIUS_M;

/// A geodetic position: latitude/longitude in degrees, altitude over mean sea level in metres.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GeoPoint {
    /// Latitude, degrees, north positive.
    pub lat_deg: f64,
    /// Longitude, degrees, east positive.
    pub lon_deg: f64,
    /// Altitude over mean sea level, m.
    pub alt_amsl_m: f32,
}

impl GeoPoint {
    /// PX4 SIH's default location (SIH_LOC_LAT0/LON0/H0): Zürich, Irchel park.
    pub const SIH_DEFAULT: GeoPoint = GeoPoint {
        lat_deg: 47.397742,
        lon_deg: 8.545594,
        alt_amsl_m: 489.4,
    };
}

/// Projection around a fixed reference point.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LocalFrame {
    origin: GeoPoint,
    lat0_rad: f64,
    lon0_rad: f64,
    sin_lat0: f64,
    cos_lat0: f64,
}

impl LocalFrame {
    /// A local NED frame whose origin (0, 0, 0) is `origin`.
    pub fn new(origin: GeoPoint) -> Self {
        let lat0_rad = origin.lat_deg.to_radians();
        LocalFrame {
            origin,
            lat0_rad,
            lon0_rad: origin.lon_deg.to_radians(),
            sin_lat0: lat0_rad.sin(),
            cos_lat0: lat0_rad.cos(),
        }
    }

    /// The geodetic origin.
    pub fn origin(&self) -> GeoPoint {
        self.origin
    }

    /// Geodetic position of a local NED point (m); `z` is down, so altitude = origin − z.
    pub fn to_geo(&self, ned_m: [f32; 3]) -> GeoPoint {
        let x = ned_m[0] as f64 / EARTH_RADIUS_M;
        let y = ned_m[1] as f64 / EARTH_RADIUS_M;
        let c = (x * x + y * y).sqrt();
        let (lat, lon) = if c > 0.0 {
            let (sin_c, cos_c) = c.sin_cos();
            let lat = (cos_c * self.sin_lat0 + (x * sin_c * self.cos_lat0) / c).asin();
            let lon = self.lon0_rad
                + (y * sin_c).atan2(c * self.cos_lat0 * cos_c - x * self.sin_lat0 * sin_c);
            (lat, lon)
        } else {
            (self.lat0_rad, self.lon0_rad)
        };
        GeoPoint {
            lat_deg: lat.to_degrees(),
            lon_deg: lon.to_degrees(),
            alt_amsl_m: self.origin.alt_amsl_m - ned_m[2],
        }
    }

    /// Local north/east (m) of a latitude/longitude in degrees.
    pub fn to_local_ne(&self, lat_deg: f64, lon_deg: f64) -> [f32; 2] {
        let lat = lat_deg.to_radians();
        let lon = lon_deg.to_radians();
        let (sin_lat, cos_lat) = lat.sin_cos();
        let cos_d_lon = (lon - self.lon0_rad).cos();
        let arg = (self.sin_lat0 * sin_lat + self.cos_lat0 * cos_lat * cos_d_lon).clamp(-1.0, 1.0);
        let c = arg.acos();
        let k = if c.abs() > 0.0 { c / c.sin() } else { 1.0 };
        let x =
            k * (self.cos_lat0 * sin_lat - self.sin_lat0 * cos_lat * cos_d_lon) * EARTH_RADIUS_M;
        let y = k * cos_lat * (lon - self.lon0_rad).sin() * EARTH_RADIUS_M;
        [x as f32, y as f32]
    }

    /// Local NED of a geodetic point.
    pub fn to_local(&self, p: GeoPoint) -> [f32; 3] {
        let ne = self.to_local_ne(p.lat_deg, p.lon_deg);
        [ne[0], ne[1], self.origin.alt_amsl_m - p.alt_amsl_m]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_within_a_millimetre() {
        let f = LocalFrame::new(GeoPoint::SIH_DEFAULT);
        for ned in [[0.0, 0.0, 0.0], [15.0, 0.0, -5.0], [-120.0, 340.5, -60.0]] {
            let g = f.to_geo(ned);
            let back = f.to_local(g);
            for i in 0..3 {
                assert!((back[i] - ned[i]).abs() < 1e-3, "{ned:?} -> {back:?}");
            }
        }
        // 1e-7 deg of latitude is about 1.1 cm.
        let g = f.to_geo([1.113, 0.0, 0.0]);
        assert!(((g.lat_deg - 47.397742) * 1e7 - 100.0).abs() < 1.0);
    }
}
