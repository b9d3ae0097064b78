//! PX4's geofence (navigator `geofence.cpp`) over the stored fence plan
//! (MAV_MISSION_TYPE_FENCE): polygons are the runs of vertex items (5001 inclusion, 5002
//! exclusion) of the length their param1 gives; circles are 5003 (inclusion) and 5004
//! (exclusion) with param1 the radius in m. Tested in the local north/east plane of the
//! vehicle's frame (the areas are small against the Earth).
//!
//! As PX4 does:
//! * a position is allowed when it passes *every* area: inside each inclusion area and outside
//!   each exclusion area (`isInsidePolygonOrCircle` ANDs them); no area, no limit; a circle's
//!   edge is outside it;
//! * when the fence changes, an area that fails for home (while home is set) is dropped with
//!   "Geofence invalid, doesn't contain Home position", and one that fails for the vehicle's
//!   position while it flies (and GF_ACTION is not 0) with "Geofence invalid, doesn't contain
//!   current vehicle position" (both critical);
//! * GF_MAX_HOR_DIST (from home) and GF_MAX_VER_DIST (above home) limit too when above 0.
//!
//! What a breach does is the vehicle's (`failsafes`): GF_ACTION's action.

use crate::geo::LocalFrame;
use crate::mission::Item;
use mavlink::dialects::common::MavCmd::*;

/// PX4's breach check interval, µs (GEOFENCE_CHECK_INTERVAL_US).
pub const CHECK_INTERVAL_US: u64 = 200_000;
/// PX4's text when a DO_REPOSITION's target is not allowed (critical).
pub const REPOSITION_REFUSED: &str = "Reposition is outside geofence\t";
/// The health report's text while the fence is breached (critical, no trailing tab: a legacy
/// report of commander's geofence check).
pub const BREACH_TEXT: &str = "Geofence: approaching or outside geofence";

/// What GF_ACTION asks for on a breach (PX4's `geofence_result` GF_ACTION_*).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GeofenceAction {
    /// 0: no breach check at all.
    None,
    /// 1: the health report's text only (a failsafe "warning": no mode change).
    Warn,
    /// 2 (PX4's default): Hold where the breach was seen.
    Hold,
    /// 3: Return.
    Return,
    /// 4: flight termination (motors off).
    Terminate,
    /// 5: Land.
    Land,
}

impl GeofenceAction {
    /// GF_ACTION's value (PX4 treats others as Warn).
    pub fn from_param(v: i32) -> Self {
        match v {
            0 => GeofenceAction::None,
            2 => GeofenceAction::Hold,
            3 => GeofenceAction::Return,
            4 => GeofenceAction::Terminate,
            5 => GeofenceAction::Land,
            _ => GeofenceAction::Warn,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Shape {
    Polygon(Vec<[f32; 2]>),
    Circle { centre: [f32; 2], radius_m: f32 },
}

/// One inclusion or exclusion area.
#[derive(Debug, Clone, PartialEq)]
struct Area {
    inclusion: bool,
    shape: Shape,
}

impl Area {
    fn inside(&self, p: [f32; 2]) -> bool {
        match &self.shape {
            Shape::Polygon(pts) => inside_polygon(pts, p),
            Shape::Circle { centre, radius_m } => {
                let (dn, de) = (p[0] - centre[0], p[1] - centre[1]);
                dn * dn + de * de < radius_m * radius_m
            }
        }
    }

    /// `checkPointAgainstPolygonCircle`: inside an inclusion area, outside an exclusion one.
    fn passes(&self, p: [f32; 2]) -> bool {
        self.inside(p) == self.inclusion
    }
}

/// The fence PX4 enforces: the stored areas that passed its checks when the fence was loaded.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Fence {
    areas: Vec<Area>,
}

impl Fence {
    /// `Geofence::_updateFence` over the stored `items`: the areas, each checked against home
    /// (`home_ne`, when set) and the vehicle's position (`flying_at`, when it flies and GF_ACTION
    /// is not 0); the texts of the areas dropped go to `texts`.
    pub fn load(
        items: &[Item],
        frame: &LocalFrame,
        home_ne: Option<[f32; 2]>,
        flying_at: Option<[f32; 2]>,
        texts: &mut Vec<&'static str>,
    ) -> Fence {
        let mut areas = Vec::new();
        let mut i = 0usize;
        while let Some(it) = items.get(i) {
            let (inclusion, shape) = match it.cmd() {
                Some(
                    c @ (MAV_CMD_NAV_FENCE_POLYGON_VERTEX_INCLUSION
                    | MAV_CMD_NAV_FENCE_POLYGON_VERTEX_EXCLUSION),
                ) => {
                    let n = (it.params[0] + 0.5) as usize;
                    if n == 0 {
                        i += 1; // PX4: "Polygon with 0 vertices. Skipping"
                        continue;
                    }
                    let poly = items.get(i..i + n).unwrap_or(&items[i..]);
                    i += n;
                    let pts = poly.iter().map(|v| frame.to_local_ne(v.x, v.y)).collect();
                    (
                        c == MAV_CMD_NAV_FENCE_POLYGON_VERTEX_INCLUSION,
                        Shape::Polygon(pts),
                    )
                }
                Some(
                    c @ (MAV_CMD_NAV_FENCE_CIRCLE_INCLUSION | MAV_CMD_NAV_FENCE_CIRCLE_EXCLUSION),
                ) => {
                    i += 1;
                    (
                        c == MAV_CMD_NAV_FENCE_CIRCLE_INCLUSION,
                        Shape::Circle {
                            centre: frame.to_local_ne(it.x, it.y),
                            radius_m: it.params[0],
                        },
                    )
                }
                _ => {
                    i += 1;
                    continue;
                }
            };
            let area = Area { inclusion, shape };
            let home_ok = home_ne.is_none_or(|h| area.passes(h));
            if !home_ok {
                texts.push("Geofence invalid, doesn't contain Home position\t");
            }
            let here_ok = flying_at.is_none_or(|p| area.passes(p));
            if !here_ok {
                texts.push("Geofence invalid, doesn't contain current vehicle position\t");
            }
            if home_ok && here_ok {
                areas.push(area);
            }
        }
        Fence { areas }
    }

    /// No area: every position is allowed.
    pub fn is_empty(&self) -> bool {
        self.areas.is_empty()
    }

    /// `isInsidePolygonOrCircle`: `ne_m` (local north/east) passes every area.
    pub fn allows(&self, ne_m: [f32; 2]) -> bool {
        self.areas.iter().all(|a| a.passes(ne_m))
    }
}

/// The limits besides the areas: GF_MAX_HOR_DIST from home and GF_MAX_VER_DIST above it (0:
/// off), as `isCloserThanMaxDistToHome` / `isBelowMaxAltitude`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FenceLimits {
    /// GF_MAX_HOR_DIST, m.
    pub max_hor_m: f32,
    /// GF_MAX_VER_DIST, m.
    pub max_ver_m: f32,
}

/// `checkPointAgainstAllGeofences`: local NED `p` passes the distance and height limits (from
/// `home`, local NED, when set) and the areas.
pub fn allows(fence: &Fence, limits: FenceLimits, home: Option<[f32; 3]>, p: [f32; 3]) -> bool {
    let (hor_ok, ver_ok) = match home {
        Some(h) => (
            limits.max_hor_m <= 0.0 || (p[0] - h[0]).hypot(p[1] - h[1]) < limits.max_hor_m,
            limits.max_ver_m <= 0.0 || h[2] - p[2] < limits.max_ver_m,
        ),
        None => (true, true),
    };
    hor_ok && ver_ok && fence.allows([p[0], p[1]])
}

/// Ray casting in the local north/east plane (PNPOLY, as PX4's `insidePolygon`).
fn inside_polygon(pts: &[[f32; 2]], p: [f32; 2]) -> bool {
    let mut inside = false;
    let mut j = pts.len().wrapping_sub(1);
    for (i, a) in pts.iter().enumerate() {
        let Some(b) = pts.get(j) else { break };
        if (a[1] > p[1]) != (b[1] > p[1]) {
            let t = (p[1] - a[1]) / (b[1] - a[1]);
            if p[0] < a[0] + t * (b[0] - a[0]) {
                inside = !inside;
            }
        }
        j = i;
    }
    inside
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geo::GeoPoint;

    fn frame() -> LocalFrame {
        LocalFrame::new(GeoPoint::SIH_DEFAULT)
    }

    fn at(f: &LocalFrame, cmd: u16, p1: f32, n: f32, e: f32) -> Item {
        let g = f.to_geo([n, e, 0.0]);
        Item {
            frame: 0,
            command: cmd,
            params: [p1, 0.0, 0.0, 0.0],
            x: g.lat_deg,
            y: g.lon_deg,
            z: 0.0,
            relative: false,
            autocontinue: false,
        }
    }

    /// A 50 m square around home and an 8 m exclusion circle 20 m north.
    fn square_and_hole(f: &LocalFrame) -> Vec<Item> {
        let mut v: Vec<Item> = [(-25.0, -25.0), (-25.0, 25.0), (25.0, 25.0), (25.0, -25.0)]
            .iter()
            .map(|&(n, e)| at(f, 5001, 4.0, n, e))
            .collect();
        v.push(at(f, 5004, 8.0, 20.0, 0.0));
        v
    }

    #[test]
    fn every_area_must_pass() {
        let f = frame();
        let mut texts = Vec::new();
        let fence = Fence::load(&square_and_hole(&f), &f, Some([0.0; 2]), None, &mut texts);
        assert!(texts.is_empty());
        assert!(fence.allows([0.0, 0.0]));
        assert!(!fence.allows([20.0, 0.0]), "in the exclusion circle");
        assert!(!fence.allows([30.0, 0.0]), "out of the square");
        assert!(fence.allows([-20.0, 20.0]));
        // Two inclusion areas: inside both, not just one (PX4 ANDs them).
        let mut two = square_and_hole(&f);
        two.pop();
        two.push(at(&f, 5003, 10.0, 0.0, 0.0));
        let fence = Fence::load(&two, &f, Some([0.0; 2]), None, &mut texts);
        assert!(fence.allows([5.0, 0.0]));
        assert!(
            !fence.allows([15.0, 0.0]),
            "in the square, out of the circle"
        );
        assert!(Fence::default().allows([1e4, 1e4]));
    }

    #[test]
    fn an_area_that_fails_for_home_or_the_vehicle_is_dropped_with_px4s_text() {
        let f = frame();
        let mut texts = Vec::new();
        // An exclusion circle over home and an inclusion circle 100 m away.
        let items = [at(&f, 5004, 5.0, 0.0, 0.0), at(&f, 5003, 10.0, 100.0, 0.0)];
        let fence = Fence::load(&items, &f, Some([0.0; 2]), None, &mut texts);
        assert!(fence.is_empty());
        assert_eq!(
            texts,
            ["Geofence invalid, doesn't contain Home position\t"; 2]
        );
        // Flying: one that does not contain the vehicle is dropped too.
        texts.clear();
        let items = [at(&f, 5003, 10.0, 0.0, 0.0)];
        let fence = Fence::load(&items, &f, Some([0.0; 2]), Some([30.0, 0.0]), &mut texts);
        assert!(fence.is_empty());
        assert_eq!(
            texts,
            ["Geofence invalid, doesn't contain current vehicle position\t"]
        );
        // Before home is set nothing is checked against it.
        texts.clear();
        let items = [at(&f, 5003, 10.0, 100.0, 0.0)];
        assert!(!Fence::load(&items, &f, None, None, &mut texts).is_empty());
        assert!(texts.is_empty());
    }

    #[test]
    fn distance_and_height_limits() {
        let lim = FenceLimits {
            max_hor_m: 30.0,
            max_ver_m: 20.0,
        };
        let e = Fence::default();
        let home = Some([0.0; 3]);
        assert!(allows(&e, lim, home, [20.0, 20.0, -10.0]));
        assert!(!allows(&e, lim, home, [25.0, 25.0, -10.0]));
        assert!(!allows(&e, lim, home, [0.0, 0.0, -20.0]));
        assert!(allows(&e, lim, None, [100.0, 0.0, -100.0]), "no home");
    }
}
