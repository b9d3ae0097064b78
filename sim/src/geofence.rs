//! PX4's geofence check over the stored fence plan (MAV_MISSION_TYPE_FENCE): the vehicle is
//! inside when it is inside at least one inclusion polygon or circle (if there are any) and
//! outside every exclusion one, as PX4's `Geofence::checkPolygons`. Polygons are the runs of
//! vertex items (5001 inclusion, 5002 exclusion) of the length their param1 gives; circles are
//! 5003 (inclusion) and 5004 (exclusion) with param1 the radius in m. Tested in the local
//! north/east plane of the vehicle's frame (the areas are small against the Earth).

use crate::geo::LocalFrame;
use crate::mission::Item;
use mavlink::dialects::common::MavCmd::*;

/// What GF_ACTION asks for on a breach (PX4's `geofence_result` GF_ACTION_*).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GeofenceAction {
    /// 0: nothing.
    None,
    /// 1: the critical message only.
    Warn,
    /// 2 (PX4's default): Hold (AUTO_LOITER).
    Hold,
    /// 3: Return.
    Return,
    /// 5: Land.
    Land,
}

impl GeofenceAction {
    /// GF_ACTION's value; 4 (flight termination) is not simulated and acts as Warn.
    pub fn from_param(v: i32) -> Self {
        match v {
            0 => GeofenceAction::None,
            2 => GeofenceAction::Hold,
            3 => GeofenceAction::Return,
            5 => GeofenceAction::Land,
            _ => GeofenceAction::Warn,
        }
    }
}

/// Whether the horizontal position `ne_m` (local north/east, m) breaches the fence `items`.
/// An empty fence is never breached.
pub fn breached(items: &[Item], frame: &LocalFrame, ne_m: [f32; 2]) -> bool {
    let mut had_inclusion = false;
    let mut in_inclusion = false;
    let mut in_exclusion = false;
    let mut i = 0usize;
    while let Some(it) = items.get(i) {
        let inclusion = matches!(
            it.cmd(),
            Some(MAV_CMD_NAV_FENCE_POLYGON_VERTEX_INCLUSION | MAV_CMD_NAV_FENCE_CIRCLE_INCLUSION)
        );
        let inside = match it.cmd() {
            Some(
                MAV_CMD_NAV_FENCE_POLYGON_VERTEX_INCLUSION
                | MAV_CMD_NAV_FENCE_POLYGON_VERTEX_EXCLUSION,
            ) => {
                let n = ((it.params[0] + 0.5) as usize).max(1);
                let poly = items.get(i..i + n).unwrap_or(&items[i..]);
                i += poly.len();
                inside_polygon(poly, frame, ne_m)
            }
            Some(MAV_CMD_NAV_FENCE_CIRCLE_INCLUSION | MAV_CMD_NAV_FENCE_CIRCLE_EXCLUSION) => {
                i += 1;
                let c = frame.to_local_ne(it.x, it.y);
                let (dn, de) = (ne_m[0] - c[0], ne_m[1] - c[1]);
                (dn * dn + de * de).sqrt() <= it.params[0]
            }
            _ => {
                i += 1;
                continue;
            }
        };
        if inclusion {
            had_inclusion = true;
            in_inclusion |= inside;
        } else {
            in_exclusion |= inside;
        }
    }
    (had_inclusion && !in_inclusion) || in_exclusion
}

/// Ray casting in the local north/east plane.
fn inside_polygon(poly: &[Item], frame: &LocalFrame, p: [f32; 2]) -> bool {
    let pts: Vec<[f32; 2]> = poly.iter().map(|v| frame.to_local_ne(v.x, v.y)).collect();
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
