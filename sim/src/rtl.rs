//! Where PX4's RTL returns to (`rtl.cpp` `setRtlTypeAndDestination` / `findRtlDestination` /
//! `findClosestSafePoint`), over the stored rally points (MAV_MISSION_TYPE_RALLY, MAV_CMD 5100).
//!
//! * RTL_TYPE 0 (PX4's default): the closest of home and the rally points; a rally point wins
//!   only when it is more than 2 m closer than the best so far, and only one more than 10 m from
//!   home counts (one by home is home's own approach point).
//! * RTL_TYPE 1: the closest rally point, home only when there is none.
//! * RTL_TYPE 5: rally points only (those by home too); without one, where the vehicle is
//!   (PX4: the last position with a ground-station link, which the sim never loses).
//! * RTL_TYPE 2 and 4 (return along the mission) and 3 (a mission landing): not modelled; the
//!   sim returns to home or the closest rally point as with 0 (mission landings are not used as
//!   destinations either).
//!
//! PX4 reads a rally point's position by the frame it was stored with, and knows only
//! MAV_FRAME_GLOBAL (0, altitude AMSL) and MAV_FRAME_GLOBAL_RELATIVE_ALT (3, over home). For any
//! other frame each evaluation says "RTL: unsupported MAV_FRAME" (critical) once per such point,
//! and PX4 would go on with an uninitialised position; the sim leaves such a point out. PX4
//! evaluates every 2 s while RTL is not active (and once when it activates): on real PX4 a plan
//! with two rally points in GLOBAL_RELATIVE_ALT_INT gives the text twice every ~2 s, for ever,
//! while the vehicle stays armable (a client that waits for a spell without critical texts
//! before it arms never arms).

use super::geo::LocalFrame;
use super::mission::Item;
use mavlink::dialects::common::MavCmd;

/// PX4 (`rtl.cpp`): rally points within this of home are not destinations (except RTL_TYPE 5).
pub const MIN_DIST_FROM_HOME_M: f32 = 10.0;
/// PX4: a candidate must be this much closer than the best so far.
pub const MIN_DIST_THRESHOLD_M: f32 = 2.0;
/// How often PX4 re-evaluates the destination while RTL is inactive, µs (`> 2_s` in the
/// navigator's loop, which the measurement saw as ~2.04 s).
pub const CHECK_PERIOD_US: u64 = 2_040_000;
/// PX4's text for a rally point in a frame RTL cannot read.
pub const UNSUPPORTED_FRAME_TEXT: &str = "RTL: unsupported MAV_FRAME\t";

/// What an evaluation found.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Destination {
    /// Local NED of the destination; `[2]` is its altitude as a local down coordinate.
    pub ned: [f32; 3],
    /// The index of the rally point chosen, `None` for home (or the vehicle's own position).
    pub rally: Option<usize>,
    /// Rally points looked at whose frame PX4's RTL cannot read (one critical text each).
    pub unsupported: usize,
}

/// The destination for RTL_TYPE `rtl_type` from `here` (local NED), with home at `home` (local
/// NED of the pad; `None` before home is set, when PX4 reads home as 0°, 0°).
pub fn destination(
    rally: &[Item],
    frame: &LocalFrame,
    home: Option<[f32; 3]>,
    here: [f32; 3],
    rtl_type: i32,
) -> Destination {
    let origin_alt = frame.origin().alt_amsl_m;
    let home_ned = home.unwrap_or([0.0; 3]);
    let home_alt = origin_alt - home_ned[2];
    let safe_points_only = rtl_type == 5;
    let dist = |ne: [f32; 2]| (ne[0] - here[0]).hypot(ne[1] - here[1]);
    let mut best = Destination {
        ned: home_ned,
        rally: None,
        unsupported: 0,
    };
    let mut min_dist = if rtl_type == 1 || safe_points_only {
        f32::MAX
    } else {
        dist([home_ned[0], home_ned[1]])
    };
    for (i, it) in rally.iter().enumerate() {
        if it.command != MavCmd::MAV_CMD_NAV_RALLY_POINT as u16 {
            continue;
        }
        let ne = frame.to_local_ne(it.x, it.y);
        let far_from_home = match home {
            Some(h) => (ne[0] - h[0]).hypot(ne[1] - h[1]) > MIN_DIST_FROM_HOME_M,
            None => true,
        };
        if !far_from_home && !safe_points_only {
            continue;
        }
        let alt = match it.frame {
            0 => it.z,
            3 => home_alt + it.z,
            _ => {
                best.unsupported += 1;
                continue;
            }
        };
        let d = dist(ne);
        if d + MIN_DIST_THRESHOLD_M < min_dist {
            min_dist = d;
            best.ned = [ne[0], ne[1], origin_alt - alt];
            best.rally = Some(i);
        }
    }
    if safe_points_only && best.rally.is_none() {
        best.ned = here;
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geo::GeoPoint;

    fn rally(lat: f64, lon: f64, z: f32, frame: u8) -> Item {
        Item {
            frame,
            command: 5100,
            params: [0.0; 4],
            x: lat,
            y: lon,
            z,
            relative: frame == 3,
            autocontinue: false,
        }
    }

    fn frame() -> LocalFrame {
        LocalFrame::new(GeoPoint {
            lat_deg: 47.397742,
            lon_deg: 8.545594,
            alt_amsl_m: 488.0,
        })
    }

    #[test]
    fn the_closest_of_home_and_the_rally_points() {
        let f = frame();
        // ~100 m north, 15 m over home; and one 5 m from home (home's own).
        let north = rally(47.398642, 8.545594, 15.0, 3);
        let by_home = rally(47.397787, 8.545594, 15.0, 3);
        let home = Some([0.0, 0.0, 0.0]);
        // Near home: home.
        let d = destination(&[north, by_home], &f, home, [10.0, 0.0, -10.0], 0);
        assert_eq!((d.rally, d.ned), (None, [0.0, 0.0, 0.0]));
        // Near the rally point: it, at its altitude over home.
        let d = destination(&[north, by_home], &f, home, [90.0, 0.0, -10.0], 0);
        assert_eq!(d.rally, Some(0));
        assert!((d.ned[0] - 100.1).abs() < 0.5, "{d:?}");
        assert!((d.ned[2] + 15.0).abs() < 1e-3, "{d:?}");
        // Halfway, within the 2 m threshold of home: home.
        let d = destination(&[north], &f, home, [50.5, 0.0, -10.0], 0);
        assert_eq!(d.rally, None);
        // RTL_TYPE 1: the rally point even from by home; 5 takes the one by home too.
        assert_eq!(
            destination(&[north], &f, home, [1.0, 0.0, -5.0], 1).rally,
            Some(0)
        );
        assert_eq!(
            destination(&[by_home], &f, home, [1.0, 0.0, -5.0], 5).rally,
            Some(0)
        );
        assert_eq!(
            destination(&[by_home], &f, home, [1.0, 0.0, -5.0], 0).rally,
            None
        );
        // An AMSL rally point (frame 0).
        let amsl = rally(47.398642, 8.545594, 500.0, 0);
        let d = destination(&[amsl], &f, home, [90.0, 0.0, -10.0], 0);
        assert!((d.ned[2] - (488.0 - 500.0)).abs() < 1e-3, "{d:?}");
    }

    #[test]
    fn frames_px4s_rtl_cannot_read_are_counted_and_skipped() {
        let f = frame();
        let home = Some([0.0, 0.0, 0.0]);
        let int = rally(47.398642, 8.545594, 15.0, 6);
        let d = destination(&[int, int], &f, home, [90.0, 0.0, -10.0], 0);
        assert_eq!((d.rally, d.unsupported), (None, 2));
        // Also looked at (and counted) from by home, as PX4 does every 2 s on the pad.
        assert_eq!(
            destination(&[int, int], &f, home, [0.0; 3], 0).unsupported,
            2
        );
        // One by home is not looked at.
        let near = rally(47.397787, 8.545594, 15.0, 6);
        assert_eq!(destination(&[near], &f, home, [0.0; 3], 0).unsupported, 0);
    }
}
