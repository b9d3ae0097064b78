//! The telemetry a condition reads, taken once per evaluation, and which of it changed.

#[cfg(feature = "extra-conditions")]
use super::spec::Place;
use crate::mode::Mode;

/// Bits of [`Readings`] a condition reads (the sim clock is tracked by wake times instead).
pub(crate) mod dep {
    /// A set of these bits (a byte holds the basic rows' eight).
    #[cfg(feature = "extra-conditions")]
    pub type Deps = u16;
    /// A set of these bits (a byte holds the basic rows' eight).
    #[cfg(not(feature = "extra-conditions"))]
    pub type Deps = u8;
    pub const HEIGHT: Deps = 1;
    pub const AIRSPEED: Deps = 1 << 1;
    pub const WAYPOINT: Deps = 1 << 2;
    pub const ARMED: Deps = 1 << 3;
    pub const MODE: Deps = 1 << 4;
    pub const LANDED: Deps = 1 << 5;
    pub const TEXT: Deps = 1 << 6;
    pub const MISSION: Deps = 1 << 7;
    /// VFR_HUD's ground speed and climb.
    #[cfg(feature = "extra-conditions")]
    pub const VFR: Deps = 1 << 8;
    /// ATTITUDE's heading.
    #[cfg(feature = "extra-conditions")]
    pub const HEADING: Deps = 1 << 9;
    /// SYS_STATUS's battery.
    #[cfg(feature = "extra-conditions")]
    pub const BATTERY: Deps = 1 << 10;
    /// GPS_RAW_INT.
    #[cfg(feature = "extra-conditions")]
    pub const GPS: Deps = 1 << 11;
    /// EXTENDED_SYS_STATE's landed and VTOL states.
    #[cfg(feature = "extra-conditions")]
    pub const LANDED_STATE: Deps = 1 << 12;
    /// Global and local position, home.
    #[cfg(feature = "extra-conditions")]
    pub const POSITION: Deps = 1 << 13;
    /// The offboard machine's at_target.
    #[cfg(feature = "extra-conditions")]
    pub const AT_TARGET: Deps = 1 << 14;
    /// Everything: the sim clock became known.
    pub const ALL: Deps = Deps::MAX;
}

/// The readings of the `extra-conditions` rows.
#[cfg(feature = "extra-conditions")]
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Extra {
    pub groundspeed_m_s: Option<f32>,
    pub climb_m_s: Option<f32>,
    pub heading_deg: Option<f32>,
    pub battery_pct: Option<f32>,
    pub battery_v: Option<f32>,
    pub gps_fix: Option<u8>,
    pub satellites: Option<u8>,
    /// MAV_LANDED_STATE, raw.
    pub landed_state: Option<u8>,
    /// MAV_VTOL_STATE, raw.
    pub vtol_state: Option<u8>,
    /// GLOBAL_POSITION_INT (lat, lon), 1e7 degrees.
    pub global: Option<(i32, i32)>,
    /// LOCAL_POSITION_NED (x, y, z), m.
    pub local: Option<(f32, f32, f32)>,
    /// HOME_POSITION (lat, lon), 1e7 degrees.
    pub home: Option<(i32, i32)>,
    pub at_target: Option<bool>,
}

#[cfg(feature = "extra-conditions")]
impl Extra {
    pub const UNKNOWN: Extra = Extra {
        groundspeed_m_s: None,
        climb_m_s: None,
        heading_deg: None,
        battery_pct: None,
        battery_v: None,
        gps_fix: None,
        satellites: None,
        landed_state: None,
        vtol_state: None,
        global: None,
        local: None,
        home: None,
        at_target: None,
    };

    /// Take them from `tel`, with the client's `at_target`: only the groups in `need` (the
    /// others stay unknown), so a frame costs nothing for rows no pending wait reads.
    pub(crate) fn read<const T: usize>(
        tel: &crate::telemetry::Telemetry<T>,
        at_target: Option<bool>,
        need: dep::Deps,
    ) -> Extra {
        let mut e = Extra::UNKNOWN;
        if need & dep::VFR != 0 {
            e.groundspeed_m_s = tel.groundspeed_m_s();
            e.climb_m_s = tel.climb_rate_m_s();
        }
        if need & dep::HEADING != 0 {
            e.heading_deg = tel.heading_rad().map(|h| h.to_degrees());
        }
        if need & dep::BATTERY != 0 {
            let battery = tel.battery();
            e.battery_pct = battery.and_then(|b| b.remaining_pct);
            e.battery_v = battery.and_then(|b| b.voltage_v);
        }
        if need & dep::GPS != 0 {
            let gps = tel.gps_raw();
            e.gps_fix = gps.map(|g| g.fix_type as u8);
            e.satellites = gps.map(|g| g.satellites_visible).filter(|&n| n != u8::MAX);
        }
        if need & dep::LANDED_STATE != 0 {
            let x = tel.extended_sys_state();
            e.landed_state = x.map(|x| x.landed_state as u8);
            e.vtol_state = x.map(|x| x.vtol_state as u8);
        }
        if need & dep::POSITION != 0 {
            e.global = tel.global_position().map(|g| (g.lat, g.lon));
            e.local = tel.local_position().map(|l| (l.x, l.y, l.z));
            e.home = tel.home().map(|h| (h.latitude, h.longitude));
        }
        if need & dep::AT_TARGET != 0 {
            e.at_target = at_target;
        }
        e
    }

    fn changed_since(&self, prev: &Extra) -> dep::Deps {
        let bit = |c: bool, b: dep::Deps| if c { b } else { 0 };
        let local = |l: Option<(f32, f32, f32)>| l.map(|(x, y, z)| [x, y, z].map(f32::to_bits));
        bit(
            differ(self.groundspeed_m_s, prev.groundspeed_m_s)
                || differ(self.climb_m_s, prev.climb_m_s),
            dep::VFR,
        ) | bit(differ(self.heading_deg, prev.heading_deg), dep::HEADING)
            | bit(
                differ(self.battery_pct, prev.battery_pct)
                    || differ(self.battery_v, prev.battery_v),
                dep::BATTERY,
            )
            | bit(
                self.gps_fix != prev.gps_fix || self.satellites != prev.satellites,
                dep::GPS,
            )
            | bit(
                self.landed_state != prev.landed_state || self.vtol_state != prev.vtol_state,
                dep::LANDED_STATE,
            )
            | bit(
                self.global != prev.global
                    || local(self.local) != local(prev.local)
                    || self.home != prev.home,
                dep::POSITION,
            )
            | bit(self.at_target != prev.at_target, dep::AT_TARGET)
    }

    /// The distance to `to`, m, from what has arrived; `None` before it did.
    pub(crate) fn distance_m(&self, to: &Place) -> Option<f32> {
        use crate::offboard::geo::ne_offset_m;
        let horizontal = |a: (i32, i32), b: (f64, f64)| {
            let here = (a.0 as f64 / 1e7, a.1 as f64 / 1e7);
            let (dn, de) = ne_offset_m(b.0, b, here);
            libm::sqrt(dn * dn + de * de) as f32
        };
        match *to {
            Place::World { x_m, y_m, z_m } => {
                let (n, e, d) = self.local?;
                // World FLU → NED: north = x, east = −y, down = −z.
                let (dn, de, dd) = (n - x_m, e + y_m, d + z_m);
                Some(libm::sqrtf(dn * dn + de * de + dd * dd))
            }
            Place::LatLon { lat_deg, lon_deg } => {
                Some(horizontal(self.global?, (lat_deg, lon_deg)))
            }
            Place::Home => {
                let h = self.home?;
                Some(horizontal(
                    self.global?,
                    (h.0 as f64 / 1e7, h.1 as f64 / 1e7),
                ))
            }
        }
    }
}

/// Whether a float reading changed, by its bits: PX4 sends NaN for what it does not measure
/// (VFR_HUD.airspeed without an airspeed sensor), and `NaN != NaN` would make every frame a
/// change. Same bits, same verdict of every comparison, so skipping on them is exact.
#[inline]
fn differ(a: Option<f32>, b: Option<f32>) -> bool {
    a.map(f32::to_bits) != b.map(f32::to_bits)
}

/// The telemetry every condition reads, taken once per evaluation (one `f32` division for
/// the height, one mode lookup only when the heartbeat's mode changed).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Readings {
    pub sim_ms: Option<u64>,
    pub height_m: Option<f32>,
    pub airspeed_m_s: Option<f32>,
    pub waypoint: Option<u16>,
    pub armed: Option<bool>,
    pub mode: Option<Mode>,
    pub landed: Option<bool>,
    pub last_seq: u32,
    pub mission: Option<crate::mission::MissionProgress>,
    #[cfg(feature = "extra-conditions")]
    pub extra: Extra,
}

impl Readings {
    /// Nothing known yet.
    pub const UNKNOWN: Readings = Readings {
        sim_ms: None,
        height_m: None,
        airspeed_m_s: None,
        waypoint: None,
        armed: None,
        mode: None,
        landed: None,
        last_seq: 0,
        mission: None,
        #[cfg(feature = "extra-conditions")]
        extra: Extra::UNKNOWN,
    };

    /// The [`dep`] bits whose value differs from `prev` ([`dep::ALL`] when the sim clock
    /// has just become known: every time-based condition must be looked at once).
    #[inline]
    pub(crate) fn changed_since(&self, prev: &Readings) -> dep::Deps {
        if prev.sim_ms.is_none() && self.sim_ms.is_some() {
            return dep::ALL;
        }
        let bit = |c: bool, b: dep::Deps| if c { b } else { 0 };
        #[cfg(feature = "extra-conditions")]
        let extra = self.extra.changed_since(&prev.extra);
        #[cfg(not(feature = "extra-conditions"))]
        let extra = 0;
        extra
            | bit(differ(self.height_m, prev.height_m), dep::HEIGHT)
            | bit(differ(self.airspeed_m_s, prev.airspeed_m_s), dep::AIRSPEED)
            | bit(self.waypoint != prev.waypoint, dep::WAYPOINT)
            | bit(self.armed != prev.armed, dep::ARMED)
            | bit(self.mode != prev.mode, dep::MODE)
            | bit(self.landed != prev.landed, dep::LANDED)
            | bit(self.last_seq != prev.last_seq, dep::TEXT)
            | bit(self.mission != prev.mission, dep::MISSION)
    }
}
