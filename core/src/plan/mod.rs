//! The QGroundControl `.plan` reader: a mission from bytes, without allocation.
//!
//! A `.plan` is JSON: `{"fileType": "Plan", "mission": {"items": [...], "plannedHomePosition":
//! [lat, lon, alt]}, "geoFence": …, "rallyPoints": …}`. [`read_plan`] reads the mission and
//! nothing else, exactly as the Python OffboardClient's `read_plan`:
//!
//! * items keep their file order and get `seq` = index; there is no implicit home item (PX4
//!   takes the mission as sent, as MAVSDK sends it);
//! * each item must be a `"SimpleItem"` with exactly seven `params`: params 0..3 are
//!   param1..param4 (`null` → NaN, MAVLink's "no value"), params 4 and 5 latitude and
//!   longitude in degrees (stored × 1e7, rounded half to even as Python's `round`, decided on
//!   the decimal digits as written; `null` → 0), param 6 the altitude (`null` → 0.0);
//!   `autoContinue` defaults to true;
//! * `home` is `plannedHomePosition` (altitude over mean sea level), (0, 0, 0) when absent;
//! * beyond that reference reader, values must mean something ([`PlanError::OutOfRange`],
//!   at the value): in a global frame latitude within ±90° and longitude within ±180° (in other frames x and
//!   y must fit MISSION_ITEM_INT's `i32`), every altitude finite within
//!   [`ALT_MIN_M`]..=[`ALT_MAX_M`], params 1–4 finite as `f32` or `null` (as QGroundControl
//!   writes them); `plannedHomePosition` likewise;
//! * `vehicleType` (a MAV_TYPE, a whole number 0 to 255, or `null`) is kept as
//!   [`Plan::vehicle_type`];
//! * unknown keys (`AMSLAltAboveTerrain`, `Altitude`, `doJumpId`, `cruiseSpeed`, …) and the
//!   `geoFence` and `rallyPoints` sections are skipped.
//!
//! Errors come in the Python client's order: JSON syntax; not a plan (`fileType` is not `"Plan"`);
//! no `mission` object; the first item that is not a SimpleItem, lacks seven params or has a bad
//! field; then, beyond the Python client, more items than the capacity `N`. Every error carries the
//! byte offset it concerns ([`PlanError::offset`]; [`line_col`] turns it into a line and column).
//!
//! How: one small tokenizer ([`json`]) does everything. It checks the whole document first
//! (a syntax error anywhere wins, with its byte offset), noting where the top-level `fileType`
//! and `mission` values are; then it walks the `mission` object token by token, and every token
//! carries its byte range, so any error points at the value it concerns. Numbers are read as
//! exact decimal digits and converted in integer arithmetic (latitude and longitude × 1e7
//! rounded on the decimal value; floats correctly rounded), not through `core`'s float parser.
//!
//! Why hand-rolled rather than serde-json-core (docs/design.md §Core pieces): serde-json-core
//! reports neither positions nor syntax errors precisely, so the reader needed this tokenizer
//! anyway, and with it two JSON parsers plus `str::parse::<f64>` (Eisel–Lemire and its tables). On
//! thumbv7em that was ~27 KiB of flash; the one-tokenizer reader is ~8 KiB, which is what lets the
//! mission firmware fit a 64 KiB flash. Strings are compared as written (escapes are not decoded):
//! a `"fileType"` spelled with `\u` escapes is not recognised.

#[cfg(feature = "geofence")]
mod geofence;
pub mod json;
mod number;
mod reader;

use crate::mission::MissionItem;
use core::fmt;
use heapless::{String, Vec};
use json::{Tok, Tokens};

#[cfg(feature = "geofence")]
pub use geofence::{read_geo, GeoPlan};
pub use json::{line_col, SyntaxError, SyntaxKind};
pub use reader::KIND_LEN;

/// Where the vehicle starts: `plannedHomePosition`.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct PlannedHome {
    /// Latitude, degrees.
    pub lat_deg: f64,
    /// Longitude, degrees.
    pub lon_deg: f64,
    /// Altitude over mean sea level, m (not the WGS-84 ellipsoidal height).
    pub alt_amsl_m: f64,
}

/// A parsed `.plan`: where the vehicle starts, and up to `N` items it flies.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Plan<const N: usize> {
    /// `plannedHomePosition`.
    pub home: PlannedHome,
    /// The mission items in file order, `seq` equal to the index.
    pub items: Vec<MissionItem, N>,
    /// `mission.vehicleType`: the MAV_TYPE the plan was made for (QGroundControl writes 2 for
    /// every multirotor, 1 fixed wing, 20 for every VTOL, 10 ground rover;
    /// [`crate::vehicle::VehicleKind::from_mav_type`] gives the class); `None` when absent or
    /// `null`.
    pub vehicle_type: Option<u8>,
}

/// Text of a value quoted in an error (the start of it, at most this many bytes).
pub const QUOTE_LEN: usize = 24;

/// Lowest altitude a plan may give (an item's param 7, `plannedHomePosition`'s third value),
/// m: below the Dead Sea shore (−430 m AMSL) with margin; anything lower is a typo, and PX4
/// would fly it.
pub const ALT_MIN_M: f64 = -1_000.0;
/// Highest altitude a plan may give, m: above any terrain a multicopter mission starts from
/// (Everest is 8 849 m AMSL); a larger value is a typo the vehicle would climb to.
pub const ALT_MAX_M: f64 = 10_000.0;

/// Why a `.plan` could not be read. Every variant has a byte offset ([`PlanError::offset`]).
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive] // more causes will come; match with a `_` arm
pub enum PlanError {
    /// The bytes are not JSON.
    Syntax(SyntaxError),
    /// `fileType` is not `"Plan"` (or the document is not an object).
    NotAPlan {
        /// Offset of the `fileType` value, or of the document when there is none.
        offset: usize,
        /// The `fileType` value as written, if there is one.
        found: Option<String<QUOTE_LEN>>,
    },
    /// There is no `mission` object.
    NoMission {
        /// Offset of the `mission` value, or of the document when there is none.
        offset: usize,
    },
    /// An item is not a `"SimpleItem"` (a survey `ComplexItem`, say).
    NotSimpleItem {
        /// Index of the item.
        index: usize,
        /// Offset of the item.
        offset: usize,
        /// Its `type`, if it has one.
        kind: Option<String<KIND_LEN>>,
    },
    /// An item does not carry exactly seven `params`.
    ParamCount {
        /// Index of the item.
        index: usize,
        /// Offset of the item.
        offset: usize,
        /// How many it carries.
        count: usize,
    },
    /// An item lacks `frame` or `command`, or one is not a whole number in range.
    BadField {
        /// Index of the item.
        index: usize,
        /// Offset of the item.
        offset: usize,
        /// The field.
        field: &'static str,
        /// `true` when the field is missing, `false` when it is not a whole number in range.
        missing: bool,
    },
    /// An item's command is not a MAV_CMD of the common dialect.
    UnknownCommand {
        /// Index of the item.
        index: usize,
        /// Offset of the item.
        offset: usize,
        /// The value.
        command: u16,
    },
    /// An item's frame is not a MAV_FRAME of the common dialect.
    UnknownFrame {
        /// Index of the item.
        index: usize,
        /// Offset of the item.
        offset: usize,
        /// The value.
        frame: u8,
    },
    /// More items than the reader's capacity `N`.
    TooManyItems {
        /// The capacity.
        capacity: usize,
        /// Items in the file.
        count: usize,
        /// Offset of the first item that does not fit.
        offset: usize,
    },
    /// `plannedHomePosition` does not hold exactly three numbers.
    BadHome {
        /// Offset of the value.
        offset: usize,
        /// How many elements it holds.
        count: usize,
    },
    /// A number outside what its field can mean: a latitude beyond ±90°, a longitude beyond
    /// ±180°, an altitude outside [`ALT_MIN_M`]..=[`ALT_MAX_M`], a param too large for `f32`.
    OutOfRange {
        /// Index of the item, `None` for `plannedHomePosition`.
        index: Option<usize>,
        /// Offset of the value.
        offset: usize,
        /// The field (`"latitude (params[4])"`, …).
        field: &'static str,
        /// The value as written (its start).
        value: Option<String<QUOTE_LEN>>,
        /// What the field allows, in words.
        allowed: &'static str,
    },
    /// A `geoFence` or `rallyPoints` value that is not what QGroundControl writes there (a
    /// polygon of fewer than 3 vertices, a vertex that is not `[lat, lon]`, a radius that is
    /// not a positive number of metres, …).
    BadGeo {
        /// Offset of the value.
        offset: usize,
        /// What the value should be, in words.
        problem: &'static str,
    },
    /// A value of the wrong type (a string where a number goes, …).
    Type {
        /// Offset of the value.
        offset: usize,
        /// What was expected there.
        expected: &'static str,
    },
}

impl PlanError {
    /// Byte offset in the input this error concerns; [`line_col`] makes it a line and column.
    pub fn offset(&self) -> usize {
        match self {
            PlanError::Syntax(e) => e.offset,
            PlanError::NotAPlan { offset, .. }
            | PlanError::NoMission { offset }
            | PlanError::NotSimpleItem { offset, .. }
            | PlanError::ParamCount { offset, .. }
            | PlanError::BadField { offset, .. }
            | PlanError::UnknownCommand { offset, .. }
            | PlanError::UnknownFrame { offset, .. }
            | PlanError::TooManyItems { offset, .. }
            | PlanError::BadHome { offset, .. }
            | PlanError::OutOfRange { offset, .. }
            | PlanError::BadGeo { offset, .. }
            | PlanError::Type { offset, .. } => *offset,
        }
    }
}

impl fmt::Display for PlanError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PlanError::Syntax(e) => write!(f, "invalid JSON at byte {}: {}", e.offset, e.kind),
            PlanError::NotAPlan { found, .. } => match found {
                Some(v) => write!(f, "not a QGC .plan (fileType={v})"),
                None => f.write_str("not a QGC .plan (fileType=None)"),
            },
            PlanError::NoMission { .. } => f.write_str("no 'mission' object"),
            PlanError::NotSimpleItem { index, kind, .. } => match kind {
                Some(k) => write!(f, "item {index} is a '{k}'; only 'SimpleItem' is supported"),
                None => write!(f, "item {index} is a None; only 'SimpleItem' is supported"),
            },
            PlanError::ParamCount { index, count, .. } => {
                write!(f, "item {index} has {count} params, expected 7")
            }
            PlanError::BadField {
                index,
                field,
                missing: true,
                ..
            } => write!(f, "item {index} has no '{field}'"),
            PlanError::BadField { index, field, .. } => {
                write!(f, "item {index}: '{field}' is not a whole number in range")
            }
            PlanError::UnknownCommand { index, command, .. } => {
                write!(f, "item {index}: unknown MAV_CMD {command}")
            }
            PlanError::UnknownFrame { index, frame, .. } => {
                write!(f, "item {index}: unknown MAV_FRAME {frame}")
            }
            PlanError::TooManyItems {
                capacity, count, ..
            } => write!(
                f,
                "{count} items, more than the {capacity} this reader holds"
            ),
            PlanError::BadHome { count, .. } => write!(
                f,
                "plannedHomePosition holds {count} values, expected [lat, lon, alt]"
            ),
            PlanError::OutOfRange {
                index,
                field,
                value,
                allowed,
                ..
            } => {
                match index {
                    Some(i) => write!(f, "item {i}: ")?,
                    None => f.write_str("plannedHomePosition: ")?,
                }
                let value = value.as_ref().map_or("?", |v| v.as_str());
                write!(f, "{field} {value} is out of range: {allowed}")
            }
            PlanError::BadGeo { offset, problem } => {
                write!(f, "bad geofence or rally value at byte {offset}: {problem}")
            }
            PlanError::Type {
                offset, expected, ..
            } => write!(f, "wrong type at byte {offset}: expected {expected}"),
        }
    }
}

/// So `?` converts it into `Box<dyn Error>` and other error types.
impl core::error::Error for PlanError {}

/// The raw text of the value at `at` (a number, a string, any value of a checked document),
/// cut to [`QUOTE_LEN`] bytes at a character boundary.
fn quote(src: &[u8], at: usize) -> Option<String<QUOTE_LEN>> {
    let (s, e) = json::span(src, at)?;
    truncated(src.get(s..e)?)
}

/// `bytes` as text, cut to at most `N` bytes at a character boundary; `None` if not UTF-8.
fn truncated<const N: usize>(bytes: &[u8]) -> Option<String<N>> {
    String::try_from(cut(bytes, N)?).ok()
}

/// `bytes` as text, cut to at most `max` bytes at a character boundary; `None` if not UTF-8.
/// Not generic, so the capacities [`truncated`] is used with share one copy.
#[inline(never)]
fn cut(bytes: &[u8], max: usize) -> Option<&str> {
    let text = core::str::from_utf8(bytes).ok()?;
    let mut n = text.len().min(max);
    while !text.is_char_boundary(n) {
        n -= 1;
    }
    text.get(..n)
}

/// Where the top-level values the reader needs are.
struct Top {
    root: usize,
    file_type: Option<usize>,
    mission: Option<usize>,
}

/// Check the whole document and find the top-level `fileType` and `mission` values (the last
/// of each, as Python's `json` keeps).
///
/// Bytes that are not UTF-8 fail as [`json::validate`] has them fail: at the first of them,
/// unless the JSON before it has an error of its own (its end not counting). One tokenizer
/// pass does both: it reads the UTF-8 part, and that part's end is the UTF-8 error.
fn scan(src: &[u8]) -> Result<Top, json::SyntaxError> {
    let upto = core::str::from_utf8(src).map_or_else(|e| e.valid_up_to(), |_| src.len());
    let mut t = Tokens::new(src.get(..upto).unwrap_or(&[]), 0);
    match keys(src, &mut t) {
        Err(e) if upto < src.len() && e.kind != json::SyntaxKind::UnexpectedEnd => Err(e),
        _ if upto < src.len() => Err(json::SyntaxError {
            offset: upto,
            kind: json::SyntaxKind::BadUtf8,
        }),
        found => found,
    }
}

/// [`scan`]'s tokenizer pass over `t`, which reads (a prefix of) `src`.
fn keys(src: &[u8], t: &mut Tokens<'_>) -> Result<Top, json::SyntaxError> {
    let mut top = Top {
        root: t.token()?.start,
        file_type: None,
        mission: None,
    };
    // Which top-level key the next token is the value of: 0 fileType, 1 mission, 2 neither.
    const KEYS: [&[u8]; 2] = [b"fileType", b"mission"];
    let mut slot = KEYS.len();
    while let Some(tok) = t.next()? {
        match core::mem::replace(&mut slot, KEYS.len()) {
            0 => top.file_type = Some(tok.start),
            1 => top.mission = Some(tok.start),
            _ => {}
        }
        if tok.tok == Tok::Key && t.depth() == 1 {
            slot = tok.one_of(src, &KEYS);
        }
    }
    Ok(top)
}

/// Read a QGroundControl `.plan` holding at most `N` items. Never panics, on any input.
pub fn read_plan<const N: usize>(src: &[u8]) -> Result<Plan<N>, PlanError> {
    let top = scan(src).map_err(PlanError::Syntax)?;
    let root = top.root;
    let not_a_plan = |offset, found| PlanError::NotAPlan { offset, found };
    if src.get(root) != Some(&b'{') {
        return Err(not_a_plan(root, None));
    }
    match top.file_type {
        None => return Err(not_a_plan(root, None)),
        Some(at) => {
            if src.get(at..at + 6) != Some(&b"\"Plan\""[..]) {
                return Err(not_a_plan(at, quote(src, at)));
            }
        }
    }
    let mission_at = match top.mission {
        Some(at) if src.get(at) == Some(&b'{') => at,
        Some(at) => return Err(PlanError::NoMission { offset: at }),
        None => return Err(PlanError::NoMission { offset: root }),
    };
    let mut m = reader::Mission::<N>::new();
    let halted = reader::read_mission(src, mission_at, &mut m);
    if let Err(reader::Halt::Syntax(e)) = halted {
        return Err(PlanError::Syntax(e));
    }
    // An item problem found before a wrong-typed value still comes first, as in the Python client.
    if let Some((index, offset, problem)) = m.first_problem {
        return Err(item_error(src, index, offset, problem));
    }
    if let Err(reader::Halt::Type { offset, expected }) = halted {
        return Err(PlanError::Type { offset, expected });
    }
    if let Some(offset) = m.overflow_at {
        return Err(PlanError::TooManyItems {
            capacity: N,
            count: m.count,
            offset,
        });
    }
    let home = match m.home {
        None => PlannedHome::default(),
        Some((_, _, Some([lat, lon, alt]))) => PlannedHome {
            lat_deg: lat,
            lon_deg: lon,
            alt_amsl_m: alt,
        },
        Some((offset, count, None)) => return Err(PlanError::BadHome { offset, count }),
    };
    if let Some((at, field, allowed)) = m.home_range {
        return Err(PlanError::OutOfRange {
            index: None,
            offset: at,
            field,
            value: quote(src, at),
            allowed: reader::words(allowed),
        });
    }
    Ok(Plan {
        home,
        items: m.items,
        vehicle_type: m.vehicle_type,
    })
}

fn item_error(
    src: &[u8],
    index: usize,
    offset: usize,
    problem: reader::ItemProblem<'_>,
) -> PlanError {
    use reader::ItemProblem as P;
    match problem {
        P::NotSimple(kind) => PlanError::NotSimpleItem {
            index,
            offset,
            kind: kind.map(|k| truncated(k).unwrap_or_default()),
        },
        P::ParamCount(count) => PlanError::ParamCount {
            index,
            offset,
            count,
        },
        P::Missing(field) => PlanError::BadField {
            index,
            offset,
            field: reader::words(field),
            missing: true,
        },
        P::NotInteger(field) => PlanError::BadField {
            index,
            offset,
            field: reader::words(field),
            missing: false,
        },
        P::UnknownCommand(command) => PlanError::UnknownCommand {
            index,
            offset,
            command,
        },
        P::UnknownFrame(frame) => PlanError::UnknownFrame {
            index,
            offset,
            frame,
        },
        P::OutOfRange { at, field, allowed } => PlanError::OutOfRange {
            index: Some(index),
            offset: at,
            field: reader::words(field),
            value: quote(src, at),
            allowed: reader::words(allowed),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINI: &str = r#"{"fileType": "Plan", "mission": {"items": [
        {"type": "SimpleItem", "command": 22, "frame": 3, "params": [0, 0, 0, null, 47.5, 8.25, 5]},
        {"type": "SimpleItem", "command": 16, "frame": 3, "autoContinue": false,
         "params": [1.5, 2, 0, 90, -33.8688, 151.2093, null], "doJumpId": 2}
    ], "plannedHomePosition": [47.5, 8.25, 488]}}"#;

    #[test]
    fn reads_a_small_plan() {
        let plan = read_plan::<4>(MINI.as_bytes()).unwrap();
        assert_eq!(
            plan.home,
            PlannedHome {
                lat_deg: 47.5,
                lon_deg: 8.25,
                alt_amsl_m: 488.0
            }
        );
        assert_eq!(plan.items.len(), 2);
        let a = plan.items[0];
        assert_eq!(
            (a.seq, a.command, a.frame, a.autocontinue),
            (0, 22, 3, true)
        );
        assert!(a.params[3].is_nan());
        assert_eq!((a.x, a.y, a.z), (475_000_000, 82_500_000, 5.0));
        let b = plan.items[1];
        assert_eq!((b.seq, b.autocontinue), (1, false));
        assert_eq!(&b.params, &[1.5, 2.0, 0.0, 90.0]);
        assert_eq!((b.x, b.y, b.z), (-338_688_000, 1_512_093_000, 0.0));
    }

    #[test]
    fn the_vehicle_type_is_kept_and_a_bad_one_is_refused_at_its_value() {
        extern crate std;
        use std::format;
        assert_eq!(read_plan::<4>(MINI.as_bytes()).unwrap().vehicle_type, None);
        let with = |v: &str| MINI.replace("\"items\"", &format!("\"vehicleType\": {v}, \"items\""));
        assert_eq!(
            read_plan::<4>(with("22").as_bytes()).unwrap().vehicle_type,
            Some(22)
        );
        assert_eq!(
            read_plan::<4>(with("null").as_bytes())
                .unwrap()
                .vehicle_type,
            None
        );
        for bad in ["2.5", "256", "-1", "\"vtol\""] {
            let doc = with(bad);
            let e = read_plan::<4>(doc.as_bytes()).unwrap_err();
            assert_eq!(
                e,
                PlanError::Type {
                    offset: doc.find(bad).unwrap(),
                    expected: "a MAV_TYPE (0 to 255)"
                },
                "{bad}"
            );
        }
    }

    #[test]
    fn capacity_is_an_error_with_the_first_extra_item() {
        let e = read_plan::<1>(MINI.as_bytes()).unwrap_err();
        let second = MINI
            .find("{\"type\": \"SimpleItem\", \"command\": 16")
            .unwrap();
        assert_eq!(
            e,
            PlanError::TooManyItems {
                capacity: 1,
                count: 2,
                offset: second
            }
        );
    }

    #[test]
    fn a_type_error_points_at_the_value() {
        let doc = MINI.replace("\"command\": 16", "\"command\": \"16\"");
        let e = read_plan::<4>(doc.as_bytes()).unwrap_err();
        let at = doc.find("\"16\"").unwrap();
        assert_eq!(
            e,
            PlanError::Type {
                offset: at,
                expected: "a number"
            }
        );
        let doc = MINI.replace("null, 47.5", "null, \"47.5\"");
        let e = read_plan::<4>(doc.as_bytes()).unwrap_err();
        assert_eq!(e.offset(), doc.find("\"47.5\"").unwrap());
    }
}
