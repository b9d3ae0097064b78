//! A tiny JSON checker and locator: the byte positions serde-json-core cannot give.
//!
//! [`validate`] checks a whole document against RFC 8259 without recursion (an explicit bit
//! stack, [`MAX_DEPTH`] levels) and reports the first error's byte offset. Once a document is
//! known to be valid, [`locate`] walks it to the value at a path and [`span`] measures a value,
//! so the reader can point at a wrong-typed value and hand serde-json-core only the part it
//! needs. Nothing here indexes without a bound check: any input gives an answer, never a panic.

use core::fmt;

/// Deepest nesting of arrays and objects accepted. QGroundControl survey items nest about
/// eight deep; the limit also bounds serde-json-core's recursion on the values it skips.
pub const MAX_DEPTH: usize = 20;

/// What is wrong at a syntax error's position.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum SyntaxKind {
    /// The input ended inside a value.
    UnexpectedEnd,
    /// A byte that cannot start or continue what is being read.
    UnexpectedByte(u8),
    /// A malformed number (leading zero, missing digits, …).
    BadNumber,
    /// A malformed escape sequence in a string.
    BadEscape,
    /// A raw control character inside a string.
    ControlInString,
    /// Bytes that are not UTF-8.
    BadUtf8,
    /// More than [`MAX_DEPTH`] nested arrays/objects.
    TooDeep,
    /// Something after the document's one value.
    TrailingData,
}

impl fmt::Display for SyntaxKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SyntaxKind::UnexpectedEnd => f.write_str("unexpected end of input"),
            SyntaxKind::UnexpectedByte(b) if b.is_ascii_graphic() => {
                write!(f, "unexpected '{}'", *b as char)
            }
            SyntaxKind::UnexpectedByte(b) => write!(f, "unexpected byte 0x{b:02x}"),
            SyntaxKind::BadNumber => f.write_str("malformed number"),
            SyntaxKind::BadEscape => f.write_str("malformed escape in string"),
            SyntaxKind::ControlInString => f.write_str("control character in string"),
            SyntaxKind::BadUtf8 => f.write_str("invalid UTF-8"),
            SyntaxKind::TooDeep => write!(f, "nested deeper than {MAX_DEPTH}"),
            SyntaxKind::TrailingData => f.write_str("data after the JSON value"),
        }
    }
}

/// A syntax error: where and what.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct SyntaxError {
    /// Byte offset of the offending byte (the input's length when it ended early).
    pub offset: usize,
    /// What is wrong there.
    pub kind: SyntaxKind,
}

/// One step of a path into a document.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Seg {
    /// The value of this key in an object (the last one, if the key repeats, as Python's
    /// `json` keeps).
    Key(&'static str),
    /// The element at this index of an array.
    Index(usize),
}

fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

struct Cursor<'a> {
    s: &'a [u8],
    i: usize,
}

impl Cursor<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn ws(&mut self) {
        while self.peek().is_some_and(is_ws) {
            self.i += 1;
        }
    }

    fn err(&self, kind: SyntaxKind) -> SyntaxError {
        SyntaxError {
            offset: self.i,
            kind,
        }
    }

    fn unexpected(&self) -> SyntaxError {
        match self.peek() {
            Some(b) => self.err(SyntaxKind::UnexpectedByte(b)),
            None => self.err(SyntaxKind::UnexpectedEnd),
        }
    }

    fn expect(&mut self, b: u8) -> Result<(), SyntaxError> {
        if self.peek() == Some(b) {
            self.i += 1;
            Ok(())
        } else {
            Err(self.unexpected())
        }
    }

    fn string(&mut self) -> Result<(), SyntaxError> {
        self.expect(b'"')?;
        loop {
            match self.peek() {
                None => return Err(self.err(SyntaxKind::UnexpectedEnd)),
                Some(b'"') => {
                    self.i += 1;
                    return Ok(());
                }
                Some(b'\\') => {
                    self.i += 1;
                    match self.peek() {
                        None => return Err(self.err(SyntaxKind::UnexpectedEnd)),
                        Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => self.i += 1,
                        Some(b'u') => {
                            self.i += 1;
                            for _ in 0..4 {
                                match self.peek() {
                                    Some(h) if h.is_ascii_hexdigit() => self.i += 1,
                                    None => return Err(self.err(SyntaxKind::UnexpectedEnd)),
                                    Some(_) => return Err(self.err(SyntaxKind::BadEscape)),
                                }
                            }
                        }
                        Some(_) => return Err(self.err(SyntaxKind::BadEscape)),
                    }
                }
                Some(c) if c < 0x20 => return Err(self.err(SyntaxKind::ControlInString)),
                Some(_) => self.i += 1,
            }
        }
    }

    fn digits(&mut self) -> Result<(), SyntaxError> {
        if !self.peek().is_some_and(|b| b.is_ascii_digit()) {
            return Err(match self.peek() {
                None => self.err(SyntaxKind::UnexpectedEnd),
                Some(_) => self.err(SyntaxKind::BadNumber),
            });
        }
        while self.peek().is_some_and(|b| b.is_ascii_digit()) {
            self.i += 1;
        }
        Ok(())
    }

    fn number(&mut self) -> Result<(), SyntaxError> {
        if self.peek() == Some(b'-') {
            self.i += 1;
        }
        match self.peek() {
            Some(b'0') => {
                self.i += 1;
                if self.peek().is_some_and(|b| b.is_ascii_digit()) {
                    return Err(self.err(SyntaxKind::BadNumber));
                }
            }
            _ => self.digits()?,
        }
        if self.peek() == Some(b'.') {
            self.i += 1;
            self.digits()?;
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.i += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.i += 1;
            }
            self.digits()?;
        }
        Ok(())
    }

    fn literal(&mut self, word: &[u8]) -> Result<(), SyntaxError> {
        for &w in word {
            if self.peek() != Some(w) {
                return Err(self.unexpected());
            }
            self.i += 1;
        }
        Ok(())
    }

    /// A scalar value, or the opening of a container (returned as `Some(is_object)`).
    fn value_start(&mut self) -> Result<Option<bool>, SyntaxError> {
        self.ws();
        match self.peek() {
            Some(b'{') => {
                self.i += 1;
                Ok(Some(true))
            }
            Some(b'[') => {
                self.i += 1;
                Ok(Some(false))
            }
            Some(b'"') => self.string().map(|_| None),
            Some(b'-' | b'0'..=b'9') => self.number().map(|_| None),
            Some(b't') => self.literal(b"true").map(|_| None),
            Some(b'f') => self.literal(b"false").map(|_| None),
            Some(b'n') => self.literal(b"null").map(|_| None),
            _ => Err(self.unexpected()),
        }
    }

    /// After `{`: either `}` (returns false) or a key and its colon (returns true).
    fn first_key(&mut self) -> Result<bool, SyntaxError> {
        self.ws();
        if self.peek() == Some(b'}') {
            self.i += 1;
            return Ok(false);
        }
        self.key()?;
        Ok(true)
    }

    fn key(&mut self) -> Result<(), SyntaxError> {
        self.ws();
        self.string()?;
        self.ws();
        self.expect(b':')
    }
}

/// Check that `src` is exactly one JSON value (RFC 8259), nested at most [`MAX_DEPTH`] deep.
pub fn validate(src: &[u8]) -> Result<(), SyntaxError> {
    if let Err(e) = core::str::from_utf8(src) {
        // Report UTF-8 trouble only if the JSON is fine up to there: a syntax error earlier
        // in the document is the more useful position.
        let upto = e.valid_up_to();
        if let Err(se) = validate_ascii_prefix(&src[..upto]) {
            if se.kind != SyntaxKind::UnexpectedEnd {
                return Err(se);
            }
        }
        return Err(SyntaxError {
            offset: upto,
            kind: SyntaxKind::BadUtf8,
        });
    }
    validate_ascii_prefix(src)
}

fn validate_ascii_prefix(src: &[u8]) -> Result<(), SyntaxError> {
    let mut c = Cursor { s: src, i: 0 };
    // Bit d of `objects` is set when nesting level d is an object.
    let mut objects: u32 = 0;
    let mut depth: usize = 0;
    let mut open = c.value_start()?;
    loop {
        // Enter a container just opened, or finish the scalar just read.
        if let Some(is_object) = open.take() {
            if depth == MAX_DEPTH {
                c.i -= 1;
                return Err(c.err(SyntaxKind::TooDeep));
            }
            if is_object {
                objects |= 1 << depth;
            } else {
                objects &= !(1 << depth);
            }
            depth += 1;
            let non_empty = if is_object {
                c.first_key()?
            } else {
                c.ws();
                if c.peek() == Some(b']') {
                    c.i += 1;
                    false
                } else {
                    true
                }
            };
            if non_empty {
                open = c.value_start()?;
                continue;
            }
            depth -= 1;
        }
        // A value has ended: at top level, only whitespace may follow.
        c.ws();
        if depth == 0 {
            return match c.peek() {
                None => Ok(()),
                Some(_) => Err(c.err(SyntaxKind::TrailingData)),
            };
        }
        let in_object = objects & (1 << (depth - 1)) != 0;
        match (c.peek(), in_object) {
            (Some(b','), true) => {
                c.i += 1;
                c.key()?;
                open = c.value_start()?;
            }
            (Some(b','), false) => {
                c.i += 1;
                open = c.value_start()?;
            }
            (Some(b'}'), true) | (Some(b']'), false) => {
                c.i += 1;
                depth -= 1;
                // `open` stays None: the container just closed is a value that has ended.
            }
            _ => return Err(c.unexpected()),
        }
    }
}

/// Offset just past the value starting at `at` (after whitespace) in a valid document.
///
/// Returns `None` on anything a valid document would not contain, never panics.
pub fn span(src: &[u8], at: usize) -> Option<(usize, usize)> {
    let mut i = at;
    while src.get(i).copied().is_some_and(is_ws) {
        i += 1;
    }
    let start = i;
    let first = *src.get(i)?;
    match first {
        b'{' | b'[' => {
            let mut depth = 0usize;
            while i < src.len() {
                match src[i] {
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth = depth.checked_sub(1)?;
                        if depth == 0 {
                            return Some((start, i + 1));
                        }
                    }
                    b'"' => i = skip_string(src, i)? - 1,
                    _ => {}
                }
                i += 1;
            }
            None
        }
        b'"' => Some((start, skip_string(src, i)?)),
        _ => {
            while i < src.len() && !matches!(src[i], b',' | b'}' | b']') && !is_ws(src[i]) {
                i += 1;
            }
            (i > start).then_some((start, i))
        }
    }
}

/// Offset just past the string starting at `at` (which must be `"`).
fn skip_string(src: &[u8], at: usize) -> Option<usize> {
    if src.get(at) != Some(&b'"') {
        return None;
    }
    let mut i = at + 1;
    while i < src.len() {
        match src[i] {
            b'\\' => i += 2,
            b'"' => return Some(i + 1),
            _ => i += 1,
        }
    }
    None
}

fn skip_ws(src: &[u8], mut i: usize) -> usize {
    while src.get(i).copied().is_some_and(is_ws) {
        i += 1;
    }
    i
}

/// Offset of the value at `path` in a valid document (`None` if the path is not there).
///
/// Object keys compare byte for byte with the raw (unescaped) key; a repeated key resolves to
/// its last occurrence.
pub fn locate(src: &[u8], path: &[Seg]) -> Option<usize> {
    let mut at = skip_ws(src, 0);
    for seg in path {
        at = child(src, at, *seg)?;
    }
    Some(at)
}

/// Offset of one child of the container at `at`.
fn child(src: &[u8], at: usize, seg: Seg) -> Option<usize> {
    let open = *src.get(at)?;
    let mut i = skip_ws(src, at + 1);
    let mut found = None;
    let mut index = 0usize;
    match (open, seg) {
        (b'{', Seg::Key(want)) => loop {
            if src.get(i) == Some(&b'}') {
                return found;
            }
            let key_end = skip_string(src, i)?;
            let key = src.get(i + 1..key_end - 1)?;
            i = skip_ws(src, key_end);
            if src.get(i) != Some(&b':') {
                return None;
            }
            let value = skip_ws(src, i + 1);
            if key == want.as_bytes() {
                found = Some(value);
            }
            let (_, end) = span(src, value)?;
            i = skip_ws(src, end);
            match src.get(i) {
                Some(b',') => i = skip_ws(src, i + 1),
                Some(b'}') => return found,
                _ => return None,
            }
        },
        (b'[', Seg::Index(want)) => loop {
            if src.get(i) == Some(&b']') {
                return None;
            }
            if index == want {
                return Some(i);
            }
            let (_, end) = span(src, i)?;
            i = skip_ws(src, end);
            match src.get(i) {
                Some(b',') => i = skip_ws(src, i + 1),
                _ => return None,
            }
            index += 1;
        },
        _ => None,
    }
}

/// 1-based line and column (in characters) of byte `offset` in `src`, for error messages.
pub fn line_col(src: &[u8], offset: usize) -> (usize, usize) {
    let offset = offset.min(src.len());
    let before = &src[..offset];
    let line = 1 + before.iter().filter(|&&b| b == b'\n').count();
    let line_start = before
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |p| p + 1);
    // Count characters, not bytes: UTF-8 continuation bytes do not start a character.
    let col = 1 + before[line_start..]
        .iter()
        .filter(|&&b| b & 0xC0 != 0x80)
        .count();
    (line, col)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(s: &str) -> (usize, SyntaxKind) {
        let e = validate(s.as_bytes()).unwrap_err();
        (e.offset, e.kind)
    }

    #[test]
    fn accepts_valid_documents() {
        for ok in [
            "{}",
            " [ ] ",
            r#"{"a": [1, -0.5e+3, true, false, null, "x\"\u00e9\n"], "b": {}}"#,
            "0",
            r#""just a string""#,
            "[[[[]]]]",
        ] {
            assert_eq!(validate(ok.as_bytes()), Ok(()), "{ok}");
        }
    }

    #[test]
    fn reports_the_offending_offset() {
        assert_eq!(err(""), (0, SyntaxKind::UnexpectedEnd));
        assert_eq!(err("{\"a\": 1"), (7, SyntaxKind::UnexpectedEnd));
        assert_eq!(err("{\"a\" 1}"), (5, SyntaxKind::UnexpectedByte(b'1')));
        assert_eq!(err("[1,]"), (3, SyntaxKind::UnexpectedByte(b']')));
        assert_eq!(err("[01]"), (2, SyntaxKind::BadNumber));
        assert_eq!(err("[1.]"), (3, SyntaxKind::BadNumber));
        assert_eq!(err("[tru]"), (4, SyntaxKind::UnexpectedByte(b']')));
        assert_eq!(err("\"a\\x\""), (3, SyntaxKind::BadEscape));
        assert_eq!(err("\"a\nb\""), (2, SyntaxKind::ControlInString));
        assert_eq!(err("{} x"), (3, SyntaxKind::TrailingData));
        assert_eq!(err("{1:2}"), (1, SyntaxKind::UnexpectedByte(b'1')));
        let mut deep = [b'['; MAX_DEPTH + 1];
        deep[MAX_DEPTH] = b'[';
        assert_eq!(
            validate(&deep).unwrap_err(),
            SyntaxError {
                offset: MAX_DEPTH,
                kind: SyntaxKind::TooDeep
            }
        );
        assert_eq!(
            validate(b"[\"\xff\"]").unwrap_err(),
            SyntaxError {
                offset: 2,
                kind: SyntaxKind::BadUtf8
            }
        );
    }

    #[test]
    fn locates_values_by_path() {
        let doc = br#"{"a": {"b": [10, {"c": "x"}, 30]}, "d": 1, "d": 2}"#;
        let at = |p: &[Seg]| locate(doc, p).map(|i| &doc[i..i + 2]);
        assert_eq!(at(&[Seg::Key("d")]), Some(&b"2}"[..]));
        assert_eq!(
            at(&[Seg::Key("a"), Seg::Key("b"), Seg::Index(2)]),
            Some(&b"30"[..])
        );
        assert_eq!(
            at(&[Seg::Key("a"), Seg::Key("b"), Seg::Index(1), Seg::Key("c")]),
            Some(&b"\"x"[..])
        );
        assert_eq!(locate(doc, &[Seg::Key("zz")]), None);
        assert_eq!(locate(doc, &[Seg::Key("a"), Seg::Index(0)]), None);
        let (s, e) = span(doc, locate(doc, &[Seg::Key("a")]).unwrap()).unwrap();
        assert_eq!(&doc[s..e], br#"{"b": [10, {"c": "x"}, 30]}"#);
    }

    #[test]
    fn line_and_column_count_characters() {
        let doc = "{\n  \"é\": x\n}".as_bytes();
        let off = doc.iter().position(|&b| b == b'x').unwrap();
        assert_eq!(line_col(doc, off), (2, 8));
        assert_eq!(line_col(doc, 0), (1, 1));
        assert_eq!(line_col(doc, 10_000).0, 3);
    }
}
