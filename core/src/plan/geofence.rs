//! The `geoFence` and `rallyPoints` sections of a `.plan`, as QGroundControl writes them
//! (version 2):
//!
//! ```text
//! "geoFence": {"polygons": [{"inclusion": true, "polygon": [[lat, lon], …], "version": 1}],
//!              "circles": [{"inclusion": false, "circle": {"center": [lat, lon], "radius": m},
//!                           "version": 1}], "version": 2},
//! "rallyPoints": {"points": [[lat, lon, alt], …], "version": 2}
//! ```
//!
//! They become the items PX4's fence and rally transfers carry, in QGC's order (polygons, then
//! circles): a polygon's vertices are MAV_CMD 5001 (inclusion) or 5002 (exclusion) with param1
//! its vertex count; a circle is 5003 or 5004 with param1 its radius; a rally point is 5100.
//! The frames are QGroundControl's for PX4 (its `GeoFenceManager` and `RallyPointManager`):
//! fence items in MAV_FRAME_GLOBAL (altitude 0: PX4's fence is horizontal here, its height
//! limit is GF_MAX_VER_DIST), rally points in MAV_FRAME_GLOBAL_RELATIVE_ALT (their altitude over
//! home), both carried by MISSION_ITEM_INT, autocontinue off. These are the frames PX4 takes: its
//! RTL reads a rally point's frame as it was stored and knows only GLOBAL and
//! GLOBAL_RELATIVE_ALT (any other gives "RTL: unsupported MAV_FRAME", critical, every 2 s).
//! A download from PX4 brings them back in the `_INT` frames (fence items always GLOBAL_INT,
//! rally points GLOBAL_RELATIVE_ALT_INT): the same items, as
//! [`GeoKind::same_items`](crate::offboard::GeoKind::same_items) compares them. `inclusion` defaults to true as in QGC. A
//! section that is absent is empty. Errors carry the byte offset of the value they concern.

use super::json::{self, Seg, Tok, Token, Tokens};
use super::number::Decimal;
use super::{scan, PlanError};
use crate::mission::MissionItem;
use heapless::Vec;

/// MAV_FRAME_GLOBAL: fence vertices and circles (QGroundControl's frame for them).
pub const FENCE_FRAME: u8 = 0;
/// MAV_FRAME_GLOBAL_RELATIVE_ALT: rally points, altitude over home (QGroundControl's frame for
/// them, one of the two PX4's RTL accepts).
pub const RALLY_FRAME: u8 = 3;

/// A `.plan`'s geofence and rally points, as the items their transfers carry.
#[derive(Debug, Clone, PartialEq, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct GeoPlan<const F: usize, const R: usize> {
    /// Fence items (polygon vertices, then circles), `seq` equal to the index.
    pub fence: Vec<MissionItem, F>,
    /// Rally points, `seq` equal to the index.
    pub rally: Vec<MissionItem, R>,
}

impl<const F: usize, const R: usize> GeoPlan<F, R> {
    /// Whether the plan has neither a fence nor rally points.
    pub fn is_empty(&self) -> bool {
        self.fence.is_empty() && self.rally.is_empty()
    }
}

fn bad(offset: usize, problem: &'static str) -> PlanError {
    PlanError::BadGeo { offset, problem }
}

/// Read the `geoFence` and `rallyPoints` of a `.plan` into at most `F` fence items and `R` rally
/// points. The document must be a plan (`fileType` "Plan"); the mission is not read (see
/// [`super::read_plan`]). Never panics, on any input.
pub fn read_geo<const F: usize, const R: usize>(src: &[u8]) -> Result<GeoPlan<F, R>, PlanError> {
    let top = scan(src).map_err(PlanError::Syntax)?;
    if src.get(top.root) != Some(&b'{') {
        return Err(PlanError::NotAPlan {
            offset: top.root,
            found: None,
        });
    }
    match top.file_type {
        Some(at) if src.get(at..at + 6) == Some(&b"\"Plan\""[..]) => {}
        Some(at) => {
            return Err(PlanError::NotAPlan {
                offset: at,
                found: super::quote(src, at),
            })
        }
        None => {
            return Err(PlanError::NotAPlan {
                offset: top.root,
                found: None,
            })
        }
    }
    let mut out = GeoPlan::default();
    let mut fence = Sink::new(&mut out.fence);
    if let Some(at) = json::locate(src, &[Seg::Key("geoFence")]) {
        expect_object(src, at, "geoFence is an object")?;
        if let Some(p) = json::locate(src, &[Seg::Key("geoFence"), Seg::Key("polygons")]) {
            each(src, p, "polygons is an array", |v| {
                polygon(src, v, &mut fence)
            })?;
        }
        if let Some(c) = json::locate(src, &[Seg::Key("geoFence"), Seg::Key("circles")]) {
            each(src, c, "circles is an array", |v| {
                circle(src, v, &mut fence)
            })?;
        }
    }
    fence.done()?;
    let mut rally = Sink::new(&mut out.rally);
    if let Some(at) = json::locate(src, &[Seg::Key("rallyPoints")]) {
        expect_object(src, at, "rallyPoints is an object")?;
        if let Some(p) = json::locate(src, &[Seg::Key("rallyPoints"), Seg::Key("points")]) {
            each(src, p, "points is an array", |v| {
                let [lat, lon, alt] = numbers::<3>(src, v, "a rally point is [lat, lon, alt]")?;
                let (x, y) = lat_lon(src, lat, lon)?;
                let z = number(src, alt).to_f64();
                if !super::reader::alt_ok(z) {
                    return Err(bad(
                        alt.start,
                        "a rally point's altitude is a number of metres from -1000 to 10000",
                    ));
                }
                rally.push(v.start, item(5100, RALLY_FRAME, 0.0, x, y, z as f32));
                Ok(())
            })?;
        }
    }
    rally.done()?;
    Ok(out)
}

/// Items pushed in order; past the capacity they are counted, not stored.
struct Sink<'a, const N: usize> {
    items: &'a mut Vec<MissionItem, N>,
    count: usize,
    overflow_at: Option<usize>,
}

impl<'a, const N: usize> Sink<'a, N> {
    fn new(items: &'a mut Vec<MissionItem, N>) -> Self {
        Sink {
            items,
            count: 0,
            overflow_at: None,
        }
    }

    fn push(&mut self, offset: usize, mut it: MissionItem) {
        it.seq = self.count.min(u16::MAX as usize) as u16;
        if self.items.push(it).is_err() && self.overflow_at.is_none() {
            self.overflow_at = Some(offset);
        }
        self.count += 1;
    }

    fn done(self) -> Result<(), PlanError> {
        match self.overflow_at {
            Some(offset) => Err(PlanError::TooManyItems {
                capacity: N,
                count: self.count,
                offset,
            }),
            None => Ok(()),
        }
    }
}

fn item(command: u16, frame: u8, param1: f32, x: i32, y: i32, z: f32) -> MissionItem {
    MissionItem {
        seq: 0,
        frame,
        command,
        // As QGroundControl sends fence and rally items (PX4 sends fence items back with it off
        // whatever was uploaded).
        autocontinue: false,
        params: [param1, 0.0, 0.0, 0.0],
        x,
        y,
        z,
    }
}

fn first(src: &[u8], at: usize) -> Result<(Tokens<'_>, Token), PlanError> {
    let mut t = Tokens::new(src, at);
    let open = t.token().map_err(PlanError::Syntax)?;
    Ok((t, open))
}

fn expect_object(src: &[u8], at: usize, problem: &'static str) -> Result<(), PlanError> {
    match first(src, at)?.1.tok {
        Tok::Open(true) => Ok(()),
        _ => Err(bad(at, problem)),
    }
}

/// Call `f` with the first token of each element of the array at `at`.
fn each(
    src: &[u8],
    at: usize,
    problem: &'static str,
    mut f: impl FnMut(&Token) -> Result<(), PlanError>,
) -> Result<(), PlanError> {
    let (mut t, open) = first(src, at)?;
    if open.tok != Tok::Open(false) {
        return Err(bad(at, problem));
    }
    loop {
        let v = t.token().map_err(PlanError::Syntax)?;
        if v.tok == Tok::Close {
            return Ok(());
        }
        f(&v)?;
        t.skip(&v).map_err(PlanError::Syntax)?;
    }
}

/// The array of exactly `K` numbers at `v`.
fn numbers<const K: usize>(
    src: &[u8],
    v: &Token,
    problem: &'static str,
) -> Result<[Token; K], PlanError> {
    let mut out = [*v; K];
    let mut n = 0usize;
    each(src, v.start, problem, |e| {
        if e.tok != Tok::Num {
            return Err(bad(e.start, problem));
        }
        if let Some(slot) = out.get_mut(n) {
            *slot = *e;
        }
        n += 1;
        Ok(())
    })?;
    if n != K {
        return Err(bad(v.start, problem));
    }
    Ok(out)
}

fn number(src: &[u8], t: Token) -> Decimal {
    Decimal::parse(t.inner(src))
}

/// Latitude and longitude × 1e7, each checked against its range.
fn lat_lon(src: &[u8], lat: Token, lon: Token) -> Result<(i32, i32), PlanError> {
    let range = |t: Token, limit: f64, problem| {
        let d = number(src, t);
        match d.to_e7() {
            Some(v) if d.to_f64().abs() <= limit => Ok(v),
            _ => Err(bad(t.start, problem)),
        }
    };
    Ok((
        range(lat, 90.0, "a latitude is -90 to 90 degrees")?,
        range(lon, 180.0, "a longitude is -180 to 180 degrees")?,
    ))
}

/// `inclusion` of the fence object at `at`: true when absent, as QGC reads it.
fn inclusion(src: &[u8], at: usize) -> Result<bool, PlanError> {
    let (mut t, _) = first(src, at)?;
    let mut inc = true;
    loop {
        let key = t.token().map_err(PlanError::Syntax)?;
        if key.tok == Tok::Close {
            return Ok(inc);
        }
        let v = t.token().map_err(PlanError::Syntax)?;
        if key.inner(src) == b"inclusion" {
            inc = match v.tok {
                Tok::True => true,
                Tok::False => false,
                _ => return Err(bad(v.start, "inclusion is true or false")),
            };
        }
        t.skip(&v).map_err(PlanError::Syntax)?;
    }
}

/// Offset of `key`'s value in the object at `at`, if it is an object with that key.
fn member(src: &[u8], at: usize, key: &'static str) -> Option<usize> {
    json::child_at(src, at, Seg::Key(key))
}

/// A polygon's or circle's object at `v`: its `inclusion` and the offset of its `key` member
/// (`not_object` and `missing` say what is wrong otherwise).
fn area(
    src: &[u8],
    v: &Token,
    (not_object, key): (&'static str, &'static str),
    missing: &'static str,
) -> Result<(bool, usize), PlanError> {
    if v.tok != Tok::Open(true) {
        return Err(bad(v.start, not_object));
    }
    let inc = inclusion(src, v.start)?;
    let at = member(src, v.start, key).ok_or_else(|| bad(v.start, missing))?;
    Ok((inc, at))
}

fn polygon<const N: usize>(src: &[u8], v: &Token, out: &mut Sink<'_, N>) -> Result<(), PlanError> {
    let (inc, p) = area(
        src,
        v,
        ("a polygon is an object", "polygon"),
        "a polygon has a 'polygon' array of [lat, lon] vertices",
    )?;
    // Two passes: the vertex count goes into every vertex's param1.
    let mut count = 0usize;
    vertices(src, p, |_, _, _| count += 1)?;
    if count < 3 {
        return Err(bad(p, "a polygon has at least 3 vertices"));
    }
    let command = if inc { 5001 } else { 5002 };
    vertices(src, p, |at, x, y| {
        out.push(at, item(command, FENCE_FRAME, count as f32, x, y, 0.0))
    })
}

/// Each vertex of the polygon array at `p`, checked: its offset and MISSION_ITEM_INT x, y.
fn vertices(src: &[u8], p: usize, mut f: impl FnMut(usize, i32, i32)) -> Result<(), PlanError> {
    each(
        src,
        p,
        "a polygon is an array of [lat, lon] vertices",
        |e| {
            let [lat, lon] = numbers::<2>(src, e, "a vertex is [lat, lon]")?;
            let (x, y) = lat_lon(src, lat, lon)?;
            f(e.start, x, y);
            Ok(())
        },
    )
}

fn circle<const N: usize>(src: &[u8], v: &Token, out: &mut Sink<'_, N>) -> Result<(), PlanError> {
    let (inc, c) = area(
        src,
        v,
        ("a circle is an object", "circle"),
        "a circle has a 'circle' object with center and radius",
    )?;
    let (Some(center), Some(radius)) = (member(src, c, "center"), member(src, c, "radius")) else {
        return Err(bad(c, "a circle has a center [lat, lon] and a radius"));
    };
    let ctr = first(src, center)?.1;
    let [lat, lon] = numbers::<2>(src, &ctr, "a center is [lat, lon]")?;
    let (x, y) = lat_lon(src, lat, lon)?;
    let r = first(src, radius)?.1;
    let r_m = if r.tok == Tok::Num {
        number(src, r).to_f32()
    } else {
        f32::NAN
    };
    if !(r_m.is_finite() && r_m > 0.0) {
        return Err(bad(
            radius,
            "a radius is a positive finite number of metres",
        ));
    }
    let command = if inc { 5003 } else { 5004 };
    out.push(v.start, item(command, FENCE_FRAME, r_m, x, y, 0.0));
    Ok(())
}
