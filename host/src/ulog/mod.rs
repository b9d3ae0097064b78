//! PX4's own log of a flight (ULog, `docs.px4.io` "ULog File Format"), read: what PX4 wrote
//! about the flight, a second witness beside the MAVLink link ([`facts`]).
//!
//! ```no_run
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let log = nexus_host::ulog::Ulog::open("flight.ulg")?;
//! let z = log.series("vehicle_local_position", "z"); // (µs of PX4's boot clock, m)
//! let facts = nexus_host::ulog::facts::Facts::of(&log);
//! println!("armed at {:?} µs, {} samples of z", facts.arms.first(), z.len());
//! # Ok(())
//! # }
//! ```
//!
//! The reader is our own, written against the published format (version 1: header, flag bits,
//! definitions, then data): of the Rust crates, `yule_log` (MIT) is a streaming parser that
//! brings `regex`, `lazy_static` and `env_logger` into a library, `ulog-rs` (0.0.x) says its
//! interface is still changing, and `px4-ulog` is unmaintained; none writes ULog, which the
//! built-in vehicle needs ([`nexus_sim::ulog`]). What is read:
//! * every message type of version 1 is framed by its size; a type this reader does not know
//!   is skipped whole, as the format asks;
//! * it never panics on bad input: a file that is no ULog, or sets an incompatible flag this
//!   reader does not know, is an [`UlogError`]; a message whose contents do not fit its kind
//!   (a data message for no subscription, a format that does not parse) is counted in
//!   [`Ulog::damaged`] and skipped; a file that ends inside a message (PX4 killed while
//!   writing) yields everything before it, with [`Ulog::truncated_at`] saying where;
//! * data is kept as the file's bytes and decoded on demand ([`Ulog::series`]): top-level
//!   fields of the primitive types, arrays by element (`name[i]`), nested types skipped by
//!   their size; a data message shorter than its format (PX4 leaves out trailing padding)
//!   yields the fields it holds.
//!
//! Every timestamp is µs of PX4's boot clock (`hrt_absolute_time`; the MAVLink
//! `time_boot_ms` × 1000 in SITL).

pub mod facts;
pub mod fetch;
pub mod replay;

pub use nexus_sim::ulog::{FieldType, Topic, UlogWriter, Value as WriteValue, MAGIC};

use std::collections::HashMap;
use std::path::Path;

/// The largest ULog read, bytes (PX4's full log of an hour's flight is ~500 MB; the facts of a
/// test flight are in far less).
pub const MAX_ULOG_BYTES: u64 = 1 << 30;

/// How deeply nested types may nest (PX4's go 3 deep); deeper is a damaged format.
const MAX_NESTING: usize = 8;

/// Why a file could not be read as a ULog.
#[derive(Debug, thiserror::Error)]
pub enum UlogError {
    /// The file could not be read.
    #[error("cannot read the ULog: {0}")]
    Io(#[from] std::io::Error),
    /// Larger than [`MAX_ULOG_BYTES`].
    #[error("the ULog holds {0} bytes, more than the {MAX_ULOG_BYTES} read")]
    TooLarge(u64),
    /// No ULog header (magic bytes `ULog\x01\x12\x35`).
    #[error("not a ULog: the file does not start with ULog's magic bytes")]
    NotUlog,
    /// An incompatible flag this reader does not know is set: the format says not to read on.
    #[error("the ULog sets incompatible flag bits {0:#x} that this reader does not know")]
    Incompatible(u64),
}

/// A primitive field type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Primitive {
    /// int8_t
    I8,
    /// uint8_t
    U8,
    /// int16_t
    I16,
    /// uint16_t
    U16,
    /// int32_t
    I32,
    /// uint32_t
    U32,
    /// int64_t
    I64,
    /// uint64_t
    U64,
    /// float
    F32,
    /// double
    F64,
    /// bool
    Bool,
    /// char
    Char,
}

impl Primitive {
    fn parse(s: &str) -> Option<Primitive> {
        Some(match s {
            "int8_t" => Primitive::I8,
            "uint8_t" => Primitive::U8,
            "int16_t" => Primitive::I16,
            "uint16_t" => Primitive::U16,
            "int32_t" => Primitive::I32,
            "uint32_t" => Primitive::U32,
            "int64_t" => Primitive::I64,
            "uint64_t" => Primitive::U64,
            "float" => Primitive::F32,
            "double" => Primitive::F64,
            "bool" => Primitive::Bool,
            "char" => Primitive::Char,
            _ => return None,
        })
    }

    /// Bytes of one value.
    pub fn size(self) -> usize {
        match self {
            Primitive::I8 | Primitive::U8 | Primitive::Bool | Primitive::Char => 1,
            Primitive::I16 | Primitive::U16 => 2,
            Primitive::I32 | Primitive::U32 | Primitive::F32 => 4,
            Primitive::I64 | Primitive::U64 | Primitive::F64 => 8,
        }
    }

    /// The value at the start of `b` (which holds at least [`Primitive::size`] bytes).
    fn decode(self, b: &[u8]) -> Option<f64> {
        let a = |n: usize| b.get(..n);
        Some(match self {
            Primitive::I8 => *b.first()? as i8 as f64,
            Primitive::U8 | Primitive::Char => *b.first()? as f64,
            Primitive::Bool => (*b.first()? != 0) as u8 as f64,
            Primitive::I16 => i16::from_le_bytes(a(2)?.try_into().ok()?) as f64,
            Primitive::U16 => u16::from_le_bytes(a(2)?.try_into().ok()?) as f64,
            Primitive::I32 => i32::from_le_bytes(a(4)?.try_into().ok()?) as f64,
            Primitive::U32 => u32::from_le_bytes(a(4)?.try_into().ok()?) as f64,
            Primitive::I64 => i64::from_le_bytes(a(8)?.try_into().ok()?) as f64,
            Primitive::U64 => u64::from_le_bytes(a(8)?.try_into().ok()?) as f64,
            Primitive::F32 => f32::from_le_bytes(a(4)?.try_into().ok()?) as f64,
            Primitive::F64 => f64::from_le_bytes(a(8)?.try_into().ok()?),
        })
    }
}

/// A field's type: a primitive or another format, by name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FieldKind {
    /// One of ULog's primitive types.
    Primitive(Primitive),
    /// A nested type (another format message's name).
    Nested(String),
}

/// One field of a format.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    /// Its type.
    pub kind: FieldKind,
    /// Elements, for an array (`float[3] x`).
    pub array: Option<usize>,
    /// Its name.
    pub name: String,
}

/// A format message: a topic's type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Format {
    /// The type's name (`vehicle_status`).
    pub name: String,
    /// Its fields in order (padding included).
    pub fields: Vec<Field>,
}

impl Format {
    /// Parse `name:type field;type field;…`.
    fn parse(text: &str) -> Option<Format> {
        let (name, rest) = text.split_once(':')?;
        let mut fields = Vec::new();
        for f in rest.split(';').map(str::trim).filter(|f| !f.is_empty()) {
            let (ty, fname) = f.rsplit_once(' ')?;
            let ty = ty.trim();
            let (base, array) = match ty.split_once('[') {
                Some((b, n)) => (b, Some(n.strip_suffix(']')?.parse::<usize>().ok()?)),
                None => (ty, None),
            };
            if base.is_empty() || fname.is_empty() {
                return None;
            }
            let kind = match Primitive::parse(base) {
                Some(p) => FieldKind::Primitive(p),
                None => FieldKind::Nested(base.to_string()),
            };
            fields.push(Field {
                kind,
                array,
                name: fname.to_string(),
            });
        }
        if name.is_empty() {
            return None;
        }
        Some(Format {
            name: name.to_string(),
            fields,
        })
    }
}

/// A subscription: a topic instance whose data messages carry `msg_id`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subscription {
    /// The format's name.
    pub name: String,
    /// The topic's instance (0 for the first).
    pub multi_id: u8,
}

/// A string PX4 logged (its console and events' texts).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoggedString {
    /// Syslog level, `b'0'` (emergency) to `b'7'` (debug).
    pub level: u8,
    /// µs of PX4's boot clock.
    pub timestamp_us: u64,
    /// The text (lossy UTF-8).
    pub text: String,
}

/// A ULog, read: its definitions, and where each data message's bytes are.
#[derive(Debug, Clone, Default)]
pub struct Ulog {
    bytes: Vec<u8>,
    /// The header's timestamp: when logging started, µs of PX4's boot clock.
    pub start_us: u64,
    /// The format version in the header.
    pub version: u8,
    /// Format messages by type name.
    pub formats: HashMap<String, Format>,
    /// Information messages (`sys_name`, `ver_sw`, …): key name → value (strings as text,
    /// numbers in decimal).
    pub info: Vec<(String, String)>,
    /// Parameters' initial values, in file order (later changes in the data section too).
    pub params: Vec<(String, f64)>,
    /// Subscriptions by msg_id.
    pub subscriptions: HashMap<u16, Subscription>,
    /// Data messages of each msg_id: (offset, length) of the payload after the msg_id.
    data: HashMap<u16, Vec<(usize, usize)>>,
    /// Logged strings in file order.
    pub logged: Vec<LoggedString>,
    /// Dropouts PX4 recorded (messages it lost), ms each.
    pub dropouts_ms: Vec<u16>,
    /// Messages skipped because their contents do not fit their kind.
    pub damaged: u64,
    /// Messages of kinds this reader does not know, skipped whole.
    pub unknown: u64,
    /// Where the file ended inside a message (bytes from its start), if it did.
    pub truncated_at: Option<usize>,
}

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(at..at + 2)?.try_into().ok()?))
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

/// A key-value message's `type name` key and its value bytes.
fn key_value(body: &[u8], key_at: usize) -> Option<(String, &[u8])> {
    let len = *body.get(key_at.checked_sub(1)?)? as usize;
    let key = body.get(key_at..key_at + len)?;
    let key = std::str::from_utf8(key).ok()?.to_string();
    Some((key, body.get(key_at + len..)?))
}

/// The value of an info or parameter message, as text, and as a number where it is one.
fn value_text(key_type: &str, v: &[u8]) -> (String, Option<f64>) {
    if key_type.starts_with("char[") {
        let text = String::from_utf8_lossy(v)
            .trim_end_matches('\0')
            .to_string();
        return (text, None);
    }
    match Primitive::parse(key_type) {
        Some(p) if v.len() >= p.size() => {
            let n = p.decode(v);
            (n.map_or(String::new(), |n| n.to_string()), n)
        }
        _ => (format!("{} bytes", v.len()), None),
    }
}

impl Ulog {
    /// Read the ULog at `path` (at most [`MAX_ULOG_BYTES`]).
    pub fn open(path: impl AsRef<Path>) -> Result<Ulog, UlogError> {
        let f = std::fs::File::open(path.as_ref())?;
        let len = f.metadata()?.len();
        if len > MAX_ULOG_BYTES {
            return Err(UlogError::TooLarge(len));
        }
        let mut bytes = Vec::with_capacity(len as usize);
        std::io::Read::read_to_end(&mut std::io::Read::take(f, MAX_ULOG_BYTES + 1), &mut bytes)?;
        if bytes.len() as u64 > MAX_ULOG_BYTES {
            return Err(UlogError::TooLarge(bytes.len() as u64));
        }
        Ulog::parse(bytes)
    }

    /// Read a ULog from its bytes.
    pub fn parse(bytes: Vec<u8>) -> Result<Ulog, UlogError> {
        if bytes.len() < 16 || bytes[..7] != MAGIC {
            return Err(UlogError::NotUlog);
        }
        let mut log = Ulog {
            version: bytes[7],
            start_us: u64_at(&bytes, 8).unwrap_or(0),
            ..Ulog::default()
        };
        let mut at = 16;
        while at < bytes.len() {
            let (Some(size), Some(&kind)) = (u16_at(&bytes, at), bytes.get(at + 2)) else {
                log.truncated_at = Some(at);
                break;
            };
            let start = at + 3;
            let end = start + size as usize;
            if end > bytes.len() {
                log.truncated_at = Some(at);
                break;
            }
            log.message(&bytes, kind, start, end)?;
            at = end;
        }
        log.bytes = bytes;
        Ok(log)
    }

    /// Take in one message; `Err` only for what ends reading (incompatible flags).
    fn message(&mut self, b: &[u8], kind: u8, start: usize, end: usize) -> Result<(), UlogError> {
        let body = &b[start..end];
        let ok = match kind {
            b'B' => {
                // incompat_flags[0] bit 0: data appended (read in sequence here); others unknown.
                let incompat = body.get(8..16).map(|f| {
                    let mut v = [0u8; 8];
                    v.copy_from_slice(f);
                    u64::from_le_bytes(v)
                });
                match incompat {
                    Some(flags) if flags & !1 != 0 => return Err(UlogError::Incompatible(flags)),
                    Some(_) => true,
                    None => false,
                }
            }
            b'F' => match std::str::from_utf8(body).ok().and_then(Format::parse) {
                Some(f) => {
                    self.formats.insert(f.name.clone(), f);
                    true
                }
                None => false,
            },
            // Information (key_len, key, value) and multi information (is_continued, then
            // the same): kept together.
            b'I' | b'M' => match key_value(body, if kind == b'I' { 1 } else { 2 }) {
                Some((key, v)) => {
                    let (ty, name) = key.rsplit_once(' ').unwrap_or(("", key.as_str()));
                    let (text, _) = value_text(ty, v);
                    self.info.push((name.to_string(), text));
                    true
                }
                None => false,
            },
            b'P' => match key_value(body, 1) {
                Some((key, v)) => {
                    let (ty, name) = key.rsplit_once(' ').unwrap_or(("", key.as_str()));
                    match value_text(ty, v).1 {
                        Some(n) => {
                            self.params.push((name.to_string(), n));
                            true
                        }
                        None => false,
                    }
                }
                None => false,
            },
            // Default parameters: not needed for the facts.
            b'Q' => true,
            b'A' => match (body.first(), u16_at(body, 1), body.get(3..)) {
                (Some(&multi_id), Some(id), Some(name)) => match std::str::from_utf8(name) {
                    Ok(name) => {
                        self.subscriptions.insert(
                            id,
                            Subscription {
                                name: name.trim_end_matches('\0').to_string(),
                                multi_id,
                            },
                        );
                        true
                    }
                    Err(_) => false,
                },
                _ => false,
            },
            b'R' => u16_at(body, 0).is_some(),
            b'D' => match u16_at(body, 0) {
                Some(id) if self.subscriptions.contains_key(&id) && body.len() >= 10 => {
                    self.data
                        .entry(id)
                        .or_default()
                        .push((start + 2, body.len() - 2));
                    true
                }
                _ => false,
            },
            b'L' => match (body.first(), u64_at(body, 1), body.get(9..)) {
                (Some(&level), Some(ts), Some(text)) => {
                    self.logged.push(LoggedString {
                        level,
                        timestamp_us: ts,
                        text: String::from_utf8_lossy(text).to_string(),
                    });
                    true
                }
                _ => false,
            },
            b'C' => match (body.first(), u64_at(body, 3), body.get(11..)) {
                (Some(&level), Some(ts), Some(text)) => {
                    self.logged.push(LoggedString {
                        level,
                        timestamp_us: ts,
                        text: String::from_utf8_lossy(text).to_string(),
                    });
                    true
                }
                _ => false,
            },
            b'O' => match u16_at(body, 0) {
                Some(ms) => {
                    self.dropouts_ms.push(ms);
                    true
                }
                None => false,
            },
            b'S' => true,
            _ => {
                self.unknown += 1;
                true
            }
        };
        if !ok {
            self.damaged += 1;
        }
        Ok(())
    }

    /// Bytes of one value of type `kind` (arrays by `array`), nested types resolved;
    /// `None` for a type that is not defined or nests too deeply.
    fn size_of(&self, kind: &FieldKind, array: Option<usize>, depth: usize) -> Option<usize> {
        let one = match kind {
            FieldKind::Primitive(p) => p.size(),
            FieldKind::Nested(name) => {
                if depth >= MAX_NESTING {
                    return None;
                }
                let f = self.formats.get(name)?;
                let mut total = 0usize;
                for fl in &f.fields {
                    total = total.checked_add(self.size_of(&fl.kind, fl.array, depth + 1)?)?;
                }
                total
            }
        };
        one.checked_mul(array.unwrap_or(1))
    }

    /// Where field `field` of format `format` is: its byte offset and primitive type. `field`
    /// is a top-level name, or `name[i]` for an element of an array.
    pub fn field(&self, format: &str, field: &str) -> Option<(usize, Primitive)> {
        let f = self.formats.get(format)?;
        let (name, index) = match field.split_once('[') {
            Some((n, i)) => (n, Some(i.strip_suffix(']')?.parse::<usize>().ok()?)),
            None => (field, None),
        };
        let mut offset = 0usize;
        for fl in &f.fields {
            if fl.name == name {
                let FieldKind::Primitive(p) = fl.kind else {
                    return None;
                };
                return match (index, fl.array) {
                    (None, None) => Some((offset, p)),
                    (Some(i), Some(n)) if i < n => Some((offset + i * p.size(), p)),
                    _ => None,
                };
            }
            offset = offset.checked_add(self.size_of(&fl.kind, fl.array, 0)?)?;
        }
        None
    }

    /// The msg_ids of `topic` (every instance), in msg_id order.
    pub fn msg_ids(&self, topic: &str) -> Vec<u16> {
        let mut ids: Vec<u16> = self
            .subscriptions
            .iter()
            .filter(|(_, s)| s.name == topic)
            .map(|(&id, _)| id)
            .collect();
        ids.sort_unstable();
        ids
    }

    /// Whether `topic` was logged at all (subscribed, with data).
    pub fn has_topic(&self, topic: &str) -> bool {
        self.msg_ids(topic)
            .iter()
            .any(|id| self.data.get(id).is_some_and(|d| !d.is_empty()))
    }

    /// Data messages of `topic` instance `multi_id`.
    pub fn samples(&self, topic: &str, multi_id: u8) -> usize {
        self.msg_ids(topic)
            .iter()
            .filter(|id| self.subscriptions.get(id).map(|s| s.multi_id) == Some(multi_id))
            .map(|id| self.data.get(id).map_or(0, Vec::len))
            .sum()
    }

    /// `field` of `topic` (instance 0), sample by sample: (timestamp µs, value), in file
    /// order. Samples too short to hold the field are left out; an unknown topic or field
    /// gives none.
    pub fn series(&self, topic: &str, field: &str) -> Vec<(u64, f64)> {
        self.series_of(topic, 0, field)
    }

    /// [`Ulog::series`] of instance `multi_id`.
    pub fn series_of(&self, topic: &str, multi_id: u8, field: &str) -> Vec<(u64, f64)> {
        let (Some((ts_at, ts_ty)), Some((at, ty))) =
            (self.field(topic, "timestamp"), self.field(topic, field))
        else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for id in self.msg_ids(topic) {
            if self.subscriptions.get(&id).map(|s| s.multi_id) != Some(multi_id) {
                continue;
            }
            for &(off, len) in self.data.get(&id).map_or(&[][..], Vec::as_slice) {
                let Some(d) = self.bytes.get(off..off + len) else {
                    continue;
                };
                let value = d
                    .get(at..)
                    .and_then(|b| (b.len() >= ty.size()).then(|| ty.decode(b)).flatten());
                let ts = d
                    .get(ts_at..)
                    .and_then(|b| (b.len() >= ts_ty.size()).then(|| ts_ty.decode(b)).flatten());
                if let (Some(ts), Some(v)) = (ts, value) {
                    out.push((ts as u64, v));
                }
            }
        }
        // A topic subscribed again has a second msg_id: its samples in time order.
        out.sort_by_key(|&(t, _)| t);
        out
    }

    /// The value of information message `key` (`sys_name`, `ver_sw`, …).
    pub fn info(&self, key: &str) -> Option<&str> {
        self.info
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// The file's size, bytes.
    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    /// Whether the file holds nothing past its header.
    pub fn is_empty(&self) -> bool {
        self.bytes.len() <= 16
    }
}

#[cfg(test)]
mod tests;
