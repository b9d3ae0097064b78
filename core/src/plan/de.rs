//! The `mission` object through serde-json-core, with hand-written visitors.
//!
//! The visitors record the path of the value being read, so a type error serde-json-core
//! reports without a position can be located afterwards ([`super::json::locate`]). Item-level
//! problems the seed's reader raises (not a SimpleItem, not seven params, …) are recorded, not
//! raised, so the first one in item order wins, as in the seed; parsing continues so items
//! past the capacity are still checked and counted.

use super::json::Seg;
use crate::mission::MissionItem;
use core::fmt;
use heapless::{String, Vec};
use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

/// Longest `type` string kept for an error message.
pub const KIND_LEN: usize = 20;

/// Path depth the reader ever goes: items, index, params, index.
const PATH_LEN: usize = 6;

/// A problem with one item, in the order the seed checks them.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ItemProblem {
    NotSimple(Option<String<KIND_LEN>>),
    ParamCount(usize),
    Missing(&'static str),
    NotInteger(&'static str),
    UnknownCommand(u16),
    UnknownFrame(u8),
    Coordinate(&'static str),
}

/// What the visitors collect.
pub(crate) struct Ctx<const N: usize> {
    pub path: Vec<Seg, PATH_LEN>,
    pub expected: &'static str,
    pub items: Vec<MissionItem, N>,
    pub count: usize,
    pub first_problem: Option<(usize, ItemProblem)>,
    pub home: Option<[f64; 3]>,
    pub home_count: Option<usize>,
}

impl<const N: usize> Ctx<N> {
    pub fn new() -> Self {
        Ctx {
            path: Vec::new(),
            expected: "a value",
            items: Vec::new(),
            count: 0,
            first_problem: None,
            home: None,
            home_count: None,
        }
    }

    fn push(&mut self, seg: Seg) {
        // PATH_LEN covers every path this reader builds; a full path only loses precision.
        let _ = self.path.push(seg);
    }

    fn pop(&mut self) {
        self.path.pop();
    }

    fn problem(&mut self, index: usize, p: ItemProblem) {
        if self.first_problem.is_none() {
            self.first_problem = Some((index, p));
        }
    }
}

/// Deserialize the `mission` object.
pub(crate) struct MissionSeed<'c, const N: usize>(pub &'c mut Ctx<N>);

impl<'de, const N: usize> DeserializeSeed<'de> for MissionSeed<'_, N> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        self.0.expected = "an object";
        d.deserialize_map(MissionVisitor(self.0))
    }
}

struct MissionVisitor<'c, const N: usize>(&'c mut Ctx<N>);

impl<'de, const N: usize> Visitor<'de> for MissionVisitor<'_, N> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the mission object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let ctx = self.0;
        while let Some(key) = map.next_key::<&'de str>()? {
            match key {
                "items" => {
                    ctx.push(Seg::Key("items"));
                    // A repeated key replaces the earlier one, as Python's json does.
                    ctx.items.clear();
                    ctx.count = 0;
                    ctx.first_problem = None;
                    ctx.expected = "an array of items";
                    map.next_value_seed(ItemsSeed(&mut *ctx))?;
                    ctx.pop();
                }
                "plannedHomePosition" => {
                    ctx.push(Seg::Key("plannedHomePosition"));
                    ctx.expected = "an array of 3 numbers";
                    map.next_value_seed(HomeSeed(&mut *ctx))?;
                    ctx.pop();
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

struct ItemsSeed<'c, const N: usize>(&'c mut Ctx<N>);

impl<'de, const N: usize> DeserializeSeed<'de> for ItemsSeed<'_, N> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(ItemsVisitor(self.0))
    }
}

struct ItemsVisitor<'c, const N: usize>(&'c mut Ctx<N>);

impl<'de, const N: usize> Visitor<'de> for ItemsVisitor<'_, N> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an array of mission items")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let ctx = self.0;
        loop {
            let index = ctx.count;
            ctx.push(Seg::Index(index));
            ctx.expected = "an item object";
            let Some(raw) = seq.next_element_seed(ItemSeed(&mut *ctx))? else {
                ctx.pop();
                return Ok(());
            };
            ctx.pop();
            ctx.count += 1;
            match raw.finish(index) {
                Ok(item) => {
                    // Past the capacity the item is checked and counted, not stored.
                    let _ = ctx.items.push(item);
                }
                Err(p) => ctx.problem(index, p),
            }
        }
    }
}

/// One item's fields as read, before the seed's checks.
#[derive(Default)]
struct RawItem<'de> {
    kind: Option<&'de str>,
    params: [Option<f64>; 7],
    nparams: Option<usize>,
    frame: Option<f64>,
    command: Option<f64>,
    autocontinue: Option<bool>,
}

fn integer(v: Option<f64>, field: &'static str, max: f64) -> Result<f64, ItemProblem> {
    let v = v.ok_or(ItemProblem::Missing(field))?;
    if v.is_nan() || v < 0.0 || v > max || libm::trunc(v) != v {
        return Err(ItemProblem::NotInteger(field));
    }
    Ok(v)
}

/// Degrees to degrees × 1e7, rounding half to even as Python's `round` does; null gives 0.
fn dege7(v: Option<f64>, field: &'static str) -> Result<i32, ItemProblem> {
    let Some(deg) = v else { return Ok(0) };
    let e7 = libm::rint(deg * 1e7);
    if !(e7 >= i32::MIN as f64 && e7 <= i32::MAX as f64) {
        return Err(ItemProblem::Coordinate(field));
    }
    Ok(e7 as i32)
}

impl RawItem<'_> {
    /// The seed's checks, in its order, then the conversion.
    fn finish(self, index: usize) -> Result<MissionItem, ItemProblem> {
        if self.kind != Some("SimpleItem") {
            return Err(ItemProblem::NotSimple(self.kind.map(|k| {
                let mut s = String::new();
                for c in k.chars() {
                    if s.push(c).is_err() {
                        break;
                    }
                }
                s
            })));
        }
        let n = self.nparams.unwrap_or(0);
        if n != 7 {
            return Err(ItemProblem::ParamCount(n));
        }
        let frame = integer(self.frame, "frame", u8::MAX as f64)? as u8;
        let command = integer(self.command, "command", u16::MAX as f64)? as u16;
        let p = self.params;
        let nan = |v: Option<f64>| v.map_or(f32::NAN, |v| v as f32);
        let item = MissionItem {
            seq: index as u16,
            frame,
            command,
            autocontinue: self.autocontinue.unwrap_or(true),
            params: [nan(p[0]), nan(p[1]), nan(p[2]), nan(p[3])],
            x: dege7(p[4], "latitude (params[4])")?,
            y: dege7(p[5], "longitude (params[5])")?,
            z: p[6].map_or(0.0, |v| v as f32),
        };
        if item.mav_command().is_err() {
            return Err(ItemProblem::UnknownCommand(command));
        }
        if item.mav_frame().is_err() {
            return Err(ItemProblem::UnknownFrame(frame));
        }
        if index > u16::MAX as usize {
            return Err(ItemProblem::Coordinate("seq (more than 65535 items)"));
        }
        Ok(item)
    }
}

struct ItemSeed<'c, const N: usize>(&'c mut Ctx<N>);

impl<'de, const N: usize> DeserializeSeed<'de> for ItemSeed<'_, N> {
    type Value = RawItem<'de>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<RawItem<'de>, D::Error> {
        d.deserialize_map(ItemVisitor(self.0))
    }
}

struct ItemVisitor<'c, const N: usize>(&'c mut Ctx<N>);

impl<'de, const N: usize> Visitor<'de> for ItemVisitor<'_, N> {
    type Value = RawItem<'de>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a mission item object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawItem<'de>, A::Error> {
        let ctx = self.0;
        let mut raw = RawItem::default();
        while let Some(key) = map.next_key::<&'de str>()? {
            let (seg, expected) = match key {
                "type" => (Seg::Key("type"), "a string"),
                "params" => (Seg::Key("params"), "an array of numbers or nulls"),
                "frame" => (Seg::Key("frame"), "a number"),
                "command" => (Seg::Key("command"), "a number"),
                "autoContinue" => (Seg::Key("autoContinue"), "true, false or null"),
                _ => {
                    map.next_value::<IgnoredAny>()?;
                    continue;
                }
            };
            ctx.push(seg);
            ctx.expected = expected;
            match key {
                // A null type is Python's None: "item N is a None", not a type error.
                "type" => raw.kind = map.next_value::<Option<&'de str>>()?,
                "params" => {
                    let (vals, n) = map.next_value_seed(ParamsSeed(&mut *ctx))?;
                    raw.params = vals;
                    raw.nparams = Some(n);
                }
                "frame" => raw.frame = Some(map.next_value::<f64>()?),
                "command" => raw.command = Some(map.next_value::<f64>()?),
                // Python's bool(None) is False; QGroundControl writes true or false.
                _ => raw.autocontinue = Some(map.next_value::<Option<bool>>()?.unwrap_or(false)),
            }
            ctx.pop();
        }
        Ok(raw)
    }
}

struct ParamsSeed<'c, const N: usize>(&'c mut Ctx<N>);

impl<'de, const N: usize> DeserializeSeed<'de> for ParamsSeed<'_, N> {
    type Value = ([Option<f64>; 7], usize);
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_seq(NumbersVisitor(self.0))
    }
}

/// An array of numbers or nulls: the first seven kept, all counted.
struct NumbersVisitor<'c, const N: usize>(&'c mut Ctx<N>);

impl<'de, const N: usize> Visitor<'de> for NumbersVisitor<'_, N> {
    type Value = ([Option<f64>; 7], usize);
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an array of numbers")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let ctx = self.0;
        let mut vals = [None; 7];
        let mut n = 0usize;
        loop {
            ctx.push(Seg::Index(n));
            ctx.expected = "a number or null";
            let Some(v) = seq.next_element::<Option<f64>>()? else {
                ctx.pop();
                return Ok((vals, n));
            };
            ctx.pop();
            if let Some(slot) = vals.get_mut(n) {
                *slot = v;
            }
            n += 1;
        }
    }
}

struct HomeSeed<'c, const N: usize>(&'c mut Ctx<N>);

impl<'de, const N: usize> DeserializeSeed<'de> for HomeSeed<'_, N> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(HomeVisitor(self.0))
    }
}

struct HomeVisitor<'c, const N: usize>(&'c mut Ctx<N>);

impl<'de, const N: usize> Visitor<'de> for HomeVisitor<'_, N> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[lat, lon, alt]")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let ctx = self.0;
        let mut vals = [0.0f64; 3];
        let mut n = 0usize;
        loop {
            ctx.push(Seg::Index(n));
            ctx.expected = "a number";
            // Not Option: a null here is a type error, as Python's float(None) is.
            let Some(v) = seq.next_element::<NotNull>()? else {
                ctx.pop();
                break;
            };
            ctx.pop();
            if let Some(slot) = vals.get_mut(n) {
                *slot = v.0;
            }
            n += 1;
        }
        ctx.home_count = Some(n);
        ctx.home = (n == 3).then_some(vals);
        Ok(())
    }
}

/// A number that must not be `null` (serde-json-core reads `null` as NaN for plain floats).
struct NotNull(f64);

impl<'de> serde::Deserialize<'de> for NotNull {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<NotNull, D::Error> {
        match Option::<f64>::deserialize(d)? {
            Some(v) => Ok(NotNull(v)),
            None => Err(serde::de::Error::custom("null")),
        }
    }
}
