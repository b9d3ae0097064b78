//! The `mission` object, read token by token with byte offsets.
//!
//! Item-level problems the Python client's reader raises (not a SimpleItem, not seven params, …)
//! are recorded, not raised, so the first one in item order wins, as in the Python client; reading
//! goes on so items past the capacity are still checked and counted. A value of the wrong type
//! stops the reading at once, with its offset.

use super::json::{SyntaxError, Tok, Token, Tokens};
use super::number::Decimal;
use crate::mission::{is_known_command, is_known_frame, MissionItem};
use heapless::Vec;

/// Longest `type` string kept for an error message.
pub const KIND_LEN: usize = 20;

/// A problem with one item, in the order the Python client checks them.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ItemProblem<'a> {
    /// Its `type` as written (made text for the error only when the error is raised).
    NotSimple(Option<&'a [u8]>),
    ParamCount(usize),
    /// A field ([`PARTS`] index) is missing.
    Missing(u8),
    /// A field ([`PARTS`] index) is not a whole number in range.
    NotInteger(u8),
    UnknownCommand(u16),
    UnknownFrame(u8),
    /// The number at byte `at` is outside what field `field` allows (both [`PARTS`]
    /// indices).
    OutOfRange {
        at: usize,
        field: u8,
        allowed: u8,
    },
}

/// The words an [`ItemProblem`] names, by index: fields, then what a field allows. A problem
/// holds a one-byte index, not the string (it is copied at every `?`, and only the error
/// raised needs the text); the texts are one string cut at [`BOUNDS`], as a table of `&str`
/// would cost eight bytes an entry.
const PARTS: [&str; 15] = [
    "frame",
    "command",
    "seq (more than 65535 items)",
    "param1 (params[0])",
    "param2 (params[1])",
    "param3 (params[2])",
    "param4 (params[3])",
    "latitude (params[4])",
    "longitude (params[5])",
    "altitude (params[6])",
    // What a latitude in a global frame allows.
    "a latitude is -90 to 90 degrees",
    // What a longitude in a global frame allows.
    "a longitude is -180 to 180 degrees",
    // What x and y of a non-global frame allow (MISSION_ITEM_INT stores them × 1e7 in an i32).
    "x and y are stored x 1e7 in an i32: -214.7483648 to 214.7483647",
    // What an altitude allows (see `ALT_MIN_M`).
    "an altitude is a finite number of metres from -1000 to 10000",
    // What params 1-4 allow.
    "a param is a finite number within f32 (about ±3.4e38) or null",
];
const FRAME: u8 = 0;
const COMMAND: u8 = 1;
const SEQ: u8 = 2;
/// Params 1–4 are `PARAM1 + i`.
const PARAM1: u8 = 3;
const LATITUDE: u8 = 7;
const LONGITUDE: u8 = 8;
const ALTITUDE: u8 = 9;
const IN_LAT: u8 = 10;
const IN_LON: u8 = 11;
const IN_XY: u8 = 12;
const IN_ALT: u8 = 13;
const IN_PARAM: u8 = 14;

/// Bytes of all [`PARTS`], one after another.
const TEXT_LEN: usize = {
    let mut n = 0;
    let mut i = 0;
    while i < PARTS.len() {
        n += PARTS[i].len();
        i += 1;
    }
    n
};

/// [`PARTS`] joined (built at compile time; only this and [`BOUNDS`] are in the firmware).
const TEXT: &str = {
    const BYTES: [u8; TEXT_LEN] = {
        let mut out = [0u8; TEXT_LEN];
        let (mut i, mut at) = (0, 0);
        while i < PARTS.len() {
            let part = PARTS[i].as_bytes();
            let mut j = 0;
            while j < part.len() {
                out[at] = part[j];
                at += 1;
                j += 1;
            }
            i += 1;
        }
        out
    };
    match core::str::from_utf8(&BYTES) {
        Ok(text) => text,
        Err(_) => panic!("PARTS are text"),
    }
};

/// Where each of [`PARTS`] starts in [`TEXT`], and where the last ends.
const BOUNDS: [u16; PARTS.len() + 1] = {
    let mut bounds = [0u16; PARTS.len() + 1];
    let (mut i, mut at) = (0, 0);
    while i < PARTS.len() {
        at += PARTS[i].len();
        bounds[i + 1] = at as u16;
        i += 1;
    }
    bounds
};

/// The text of a [`PARTS`] index.
pub(crate) fn words(i: u8) -> &'static str {
    let i = i as usize;
    match (BOUNDS.get(i), BOUNDS.get(i + 1)) {
        (Some(&start), Some(&end)) => TEXT
            .as_bytes()
            .get(start as usize..end as usize)
            .and_then(|b| core::str::from_utf8(b).ok())
            .unwrap_or("?"),
        _ => "?",
    }
}

/// Why reading stopped early.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Halt {
    /// Not JSON (the document was checked first, so this does not happen in practice).
    Syntax(SyntaxError),
    /// A value of the wrong type at `offset`.
    Type {
        offset: usize,
        expected: &'static str,
    },
}

fn type_error(t: &Token, expected: &'static str) -> Halt {
    Halt::Type {
        offset: t.start,
        expected,
    }
}

/// What the reader collects from the `mission` object.
pub(crate) struct Mission<'a, const N: usize> {
    pub items: Vec<MissionItem, N>,
    /// Items in the (last) `items` array.
    pub count: usize,
    /// Offset of item `N`, the first that does not fit.
    pub overflow_at: Option<usize>,
    /// The first item problem: (index, offset of the item, problem).
    pub first_problem: Option<(usize, usize, ItemProblem<'a>)>,
    /// The (last) `plannedHomePosition`: offset, element count, and the values if exactly 3.
    pub home: Option<(usize, usize, Option<[f64; 3]>)>,
    /// The first `plannedHomePosition` value out of range: offset, field, what is allowed
    /// (a [`PARTS`] index, as in an item's problem).
    pub home_range: Option<(usize, &'static str, u8)>,
    /// The (last) `vehicleType`: MAV_TYPE.
    pub vehicle_type: Option<u8>,
}

/// A number field as read: absent, `null`, or the number's text range.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
enum Field {
    #[default]
    Absent,
    Null,
    Num(usize, usize),
}

/// MAV_FRAMEs whose x and y are latitude and longitude.
fn is_global(frame: u8) -> bool {
    matches!(frame, 0 | 3 | 5 | 6 | 10 | 11)
}

/// Whether an altitude in metres is one a plan may give.
pub(crate) fn alt_ok(m: f64) -> bool {
    within(m, super::ALT_MIN_M, super::ALT_MAX_M)
}

/// `lo <= x && x <= hi` for bounds that are not zero, in integer arithmetic: on thumbv7em an
/// `f64` comparison is a soft-float routine (two of them, ~240 B), and `total_cmp` orders the
/// bit patterns as `<=` does except at -0 against +0 (no bound here) and NaN (never in range:
/// a positive NaN sorts above every bound, a negative one below).
pub(crate) fn within(x: f64, lo: f64, hi: f64) -> bool {
    x.total_cmp(&lo).is_ge() && x.total_cmp(&hi).is_le()
}

impl Field {
    fn decimal(self, src: &[u8]) -> Option<Decimal> {
        match self {
            Field::Num(s, e) => Some(Decimal::parse(src.get(s..e).unwrap_or(&[]))),
            _ => None,
        }
    }
}

/// One item's fields as read, before the Python client's checks.
#[derive(Default)]
struct RawItem<'a> {
    kind: Option<&'a [u8]>,
    params: [Field; 7],
    nparams: Option<usize>,
    frame: Field,
    command: Field,
    autocontinue: Option<bool>,
}

impl<const N: usize> Mission<'_, N> {
    pub fn new() -> Self {
        Mission {
            items: Vec::new(),
            count: 0,
            overflow_at: None,
            first_problem: None,
            home: None,
            home_range: None,
            vehicle_type: None,
        }
    }
}

/// Read the `mission` object starting at `at` (a `{`, checked by the caller) of the valid
/// document `src` into `m`; stops at the first value of the wrong type.
pub(crate) fn read_mission<'a, const N: usize>(
    src: &'a [u8],
    at: usize,
    m: &mut Mission<'a, N>,
) -> Result<(), Halt> {
    let mut t = Tokens::new(src, at);
    let read = read_object(src, &mut t, m);
    // A syntax error (none in a checked document) ends every loop with a `Close`; it wins.
    match t.error() {
        Some(e) => Err(Halt::Syntax(e)),
        None => read,
    }
}

fn read_object<'a, const N: usize>(
    src: &'a [u8],
    t: &mut Tokens<'a>,
    m: &mut Mission<'a, N>,
) -> Result<(), Halt> {
    let open = t.tok();
    if open.tok != Tok::Open(true) {
        return Err(type_error(&open, "an object"));
    }
    loop {
        let key = t.tok();
        if key.tok == Tok::Close {
            return Ok(());
        }
        let value = t.tok();
        match key.one_of(src, &[b"items", b"plannedHomePosition", b"vehicleType"]) {
            0 => read_items(src, t, &value, m)?,
            1 => read_home(src, t, &value, m)?,
            2 => {
                // A MAV_TYPE, as QGroundControl writes it (2 for every multirotor, 20 for
                // every VTOL); `null` is no type.
                m.vehicle_type = match value.tok {
                    Tok::Null => None,
                    Tok::Num => Some(
                        Decimal::parse(value.inner(src))
                            .to_whole(u8::MAX as u32)
                            .ok_or_else(|| type_error(&value, "a MAV_TYPE (0 to 255)"))?
                            as u8,
                    ),
                    _ => return Err(type_error(&value, "a MAV_TYPE (0 to 255)")),
                };
            }
            _ => {
                t.pass(&value);
            }
        }
    }
}

fn read_items<'a, const N: usize>(
    src: &'a [u8],
    t: &mut Tokens<'a>,
    open: &Token,
    m: &mut Mission<'a, N>,
) -> Result<(), Halt> {
    if open.tok != Tok::Open(false) {
        return Err(type_error(open, "an array of items"));
    }
    // A repeated key replaces the earlier one, as Python's json does.
    m.items.clear();
    m.count = 0;
    m.overflow_at = None;
    m.first_problem = None;
    loop {
        let item = t.tok();
        if item.tok == Tok::Close {
            return Ok(());
        }
        let index = m.count;
        let raw = read_item(src, t, &item)?;
        m.count += 1;
        if index == N {
            m.overflow_at = Some(item.start);
        }
        match finish(src, raw, index) {
            // Past the capacity the item is checked and counted, not stored.
            Ok(it) => {
                let _ = m.items.push(it);
            }
            Err(p) => {
                if m.first_problem.is_none() {
                    m.first_problem = Some((index, item.start, p));
                }
            }
        }
    }
}

fn read_item<'a>(src: &'a [u8], t: &mut Tokens<'a>, open: &Token) -> Result<RawItem<'a>, Halt> {
    if open.tok != Tok::Open(true) {
        return Err(type_error(open, "an item object"));
    }
    let mut raw = RawItem::default();
    loop {
        let key = t.tok();
        if key.tok == Tok::Close {
            return Ok(raw);
        }
        let v = t.tok();
        const KEYS: [&[u8]; 5] = [b"type", b"params", b"frame", b"command", b"autoContinue"];
        match key.one_of(src, &KEYS) {
            // A null type is Python's None: "item N is a None", not a type error.
            0 => {
                raw.kind = match v.tok {
                    Tok::Null => None,
                    Tok::Str => Some(v.inner(src)),
                    _ => return Err(type_error(&v, "a string")),
                }
            }
            1 => {
                if v.tok != Tok::Open(false) {
                    return Err(type_error(&v, "an array of numbers or nulls"));
                }
                raw.params = [Field::Absent; 7];
                let mut n = 0usize;
                loop {
                    let p = t.tok();
                    let field = match p.tok {
                        Tok::Close => break,
                        Tok::Null => Field::Null,
                        Tok::Num => Field::Num(p.start, p.end),
                        _ => return Err(type_error(&p, "a number or null")),
                    };
                    if let Some(slot) = raw.params.get_mut(n) {
                        *slot = field;
                    }
                    n += 1;
                }
                raw.nparams = Some(n);
            }
            name @ (2 | 3) => {
                let field = match v.tok {
                    // `null` is a number that is not whole (NaN), as the Python client reads it.
                    Tok::Null => Field::Null,
                    Tok::Num => Field::Num(v.start, v.end),
                    _ => return Err(type_error(&v, "a number")),
                };
                if name == 2 {
                    raw.frame = field;
                } else {
                    raw.command = field;
                }
            }
            // Python's bool(None) is False; QGroundControl writes true or false.
            4 => {
                raw.autocontinue = Some(match v.tok {
                    Tok::True => true,
                    Tok::False | Tok::Null => false,
                    _ => return Err(type_error(&v, "true, false or null")),
                })
            }
            _ => {
                t.pass(&v);
            }
        }
    }
}

fn read_home<const N: usize>(
    src: &[u8],
    t: &mut Tokens<'_>,
    open: &Token,
    m: &mut Mission<'_, N>,
) -> Result<(), Halt> {
    if open.tok != Tok::Open(false) {
        return Err(type_error(open, "an array of 3 numbers"));
    }
    let mut vals = [0.0f64; 3];
    let mut n = 0usize;
    // A repeated key replaces the earlier one, as Python's json does.
    m.home_range = None;
    loop {
        let v = t.tok();
        match v.tok {
            Tok::Close => break,
            // Not null: Python's float(None) is a type error.
            Tok::Num => {
                if let Some(slot) = vals.get_mut(n) {
                    *slot = Decimal::parse(v.inner(src)).to_f64();
                    let (field, allowed, ok) = match n {
                        0 => ("latitude", IN_LAT, within(*slot, -90.0, 90.0)),
                        1 => ("longitude", IN_LON, within(*slot, -180.0, 180.0)),
                        _ => ("altitude", IN_ALT, alt_ok(*slot)),
                    };
                    if !ok && m.home_range.is_none() {
                        m.home_range = Some((v.start, field, allowed));
                    }
                }
            }
            _ => return Err(type_error(&v, "a number")),
        }
        n += 1;
    }
    m.home = Some((open.start, n, (n == 3).then_some(vals)));
    Ok(())
}

fn whole(f: Field, src: &[u8], field: u8, max: u32) -> Result<u32, ItemProblem<'static>> {
    match f {
        Field::Absent => Err(ItemProblem::Missing(field)),
        _ => f
            .decimal(src)
            .and_then(|d| d.to_whole(max))
            .ok_or(ItemProblem::NotInteger(field)),
    }
}

/// Degrees to degrees × 1e7, within ±`max_deg` in a global frame (else within `i32`); `null`
/// gives 0.
fn dege7(
    f: Field,
    src: &[u8],
    field: u8,
    global: bool,
    (max_deg, words): (i32, u8),
) -> Result<i32, ItemProblem<'static>> {
    let Field::Num(at, _) = f else { return Ok(0) };
    match f.decimal(src).and_then(Decimal::to_e7) {
        Some(v) if !global || v.unsigned_abs() <= max_deg as u32 * 10_000_000 => Ok(v),
        _ => Err(ItemProblem::OutOfRange {
            at,
            field,
            allowed: if global { words } else { IN_XY },
        }),
    }
}

/// Params 1–4 (finite, or NaN for `null`) and the altitude (finite, in range; 0 for `null`) of
/// an item, each number converted once.
#[inline(always)] // one caller; inlined, its result is not passed through memory
fn values(raw: &RawItem<'_>, src: &[u8]) -> Result<([f32; 4], f32), ItemProblem<'static>> {
    let mut params = [f32::NAN; 4];
    for ((p, field), slot) in raw.params.iter().zip(PARAM1..).zip(&mut params) {
        if let Field::Num(at, _) = *p {
            *slot = number(*p, src);
            if !slot.is_finite() {
                return Err(ItemProblem::OutOfRange {
                    at,
                    field,
                    allowed: IN_PARAM,
                });
            }
        }
    }
    let mut z = 0.0;
    if let Field::Num(at, _) = raw.params[6] {
        z = number(raw.params[6], src);
        // In f32, which the FPU compares; both bounds are exact in f32.
        if !(super::ALT_MIN_M as f32..=super::ALT_MAX_M as f32).contains(&z) {
            return Err(ItemProblem::OutOfRange {
                at,
                field: ALTITUDE,
                allowed: IN_ALT,
            });
        }
    }
    Ok((params, z))
}

/// A number field as the nearest `f32` (0 when it is not a number).
fn number(f: Field, src: &[u8]) -> f32 {
    f.decimal(src).map_or(0.0, Decimal::to_f32)
}

/// The Python client's checks, in its order, then the conversion.
fn finish<'a>(src: &[u8], raw: RawItem<'a>, index: usize) -> Result<MissionItem, ItemProblem<'a>> {
    if raw.kind != Some(b"SimpleItem") {
        return Err(ItemProblem::NotSimple(raw.kind));
    }
    let n = raw.nparams.unwrap_or(0);
    if n != 7 {
        return Err(ItemProblem::ParamCount(n));
    }
    let frame = whole(raw.frame, src, FRAME, u8::MAX as u32)? as u8;
    let command = whole(raw.command, src, COMMAND, u16::MAX as u32)? as u16;
    let p = raw.params;
    let global = is_global(frame);
    let x = dege7(p[4], src, LATITUDE, global, (90, IN_LAT))?;
    let y = dege7(p[5], src, LONGITUDE, global, (180, IN_LON))?;
    if !is_known_command(command) {
        return Err(ItemProblem::UnknownCommand(command));
    }
    if !is_known_frame(frame) {
        return Err(ItemProblem::UnknownFrame(frame));
    }
    let (params, z) = values(&raw, src)?;
    let seq = u16::try_from(index).map_err(|_| ItemProblem::NotInteger(SEQ))?;
    Ok(MissionItem {
        seq,
        frame,
        command,
        autocontinue: raw.autocontinue.unwrap_or(true),
        params,
        x,
        y,
        z,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_the_parts() {
        for (i, part) in PARTS.iter().enumerate() {
            assert_eq!(words(i as u8), *part, "{i}");
        }
        assert_eq!(words(PARTS.len() as u8), "?");
        assert_eq!(words(u8::MAX), "?");
        assert_eq!(TEXT.len(), PARTS.iter().map(|p| p.len()).sum::<usize>());
    }

    #[test]
    fn within_is_the_float_comparison() {
        let bounds = [
            (-90.0, 90.0),
            (-180.0, 180.0),
            (super::super::ALT_MIN_M, super::super::ALT_MAX_M),
        ];
        for (lo, hi) in bounds {
            for x in [
                lo,
                hi,
                -lo,
                -hi,
                lo * (1.0 + f64::EPSILON),
                hi * (1.0 + f64::EPSILON),
                hi * (1.0 - f64::EPSILON),
                0.0,
                -0.0,
                1e-300,
                -1e-300,
                47.397742,
                f64::INFINITY,
                f64::NEG_INFINITY,
                f64::NAN,
                -f64::NAN,
                f64::MAX,
                f64::MIN,
            ] {
                assert_eq!(within(x, lo, hi), lo <= x && x <= hi, "{x} in {lo}..={hi}");
            }
        }
    }
}
