//! The one JSON tokenizer of the plan reader: syntax checking, byte positions, and the tokens
//! the reader reads.
//!
//! `Tokens` pulls a document apart one token at a time without recursion (an explicit bit
//! stack, [`MAX_DEPTH`] levels), checking RFC 8259 as it goes and reporting the first error's
//! byte offset. Every token carries its byte range, so the reader can point at any value it
//! refuses. [`validate`] runs it over a whole document; [`locate`] and [`span`] walk it to the
//! value at a path and measure a value. Nothing here indexes without a bound check: any input
//! gives an answer, never a panic.

use core::fmt;

/// Deepest nesting of arrays and objects accepted. QGroundControl survey items nest about
/// eight deep; the tokenizer keeps which levels are objects in one `u32`.
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

impl fmt::Display for SyntaxError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} at byte {}", self.kind, self.offset)
    }
}

/// So `?` converts it into `Box<dyn Error>`.
impl core::error::Error for SyntaxError {}

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

    /// The error at the cursor. (Every syntax error is at the cursor, so what the cursor's
    /// steps return is only its kind: two bytes, in a register.)
    fn err(&self, kind: SyntaxKind) -> SyntaxError {
        SyntaxError {
            offset: self.i,
            kind,
        }
    }

    fn unexpected(&self) -> SyntaxKind {
        match self.peek() {
            Some(b) => SyntaxKind::UnexpectedByte(b),
            None => SyntaxKind::UnexpectedEnd,
        }
    }

    #[inline(always)] // a compare and a step: smaller than a call
    fn expect(&mut self, b: u8) -> Result<(), SyntaxKind> {
        if self.peek() == Some(b) {
            self.i += 1;
            Ok(())
        } else {
            Err(self.unexpected())
        }
    }

    fn string(&mut self) -> Result<(), SyntaxKind> {
        self.expect(b'"')?;
        loop {
            match self.peek() {
                None => return Err(SyntaxKind::UnexpectedEnd),
                Some(b'"') => {
                    self.i += 1;
                    return Ok(());
                }
                Some(b'\\') => {
                    self.i += 1;
                    match self.peek() {
                        None => return Err(SyntaxKind::UnexpectedEnd),
                        Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => self.i += 1,
                        Some(b'u') => {
                            self.i += 1;
                            for _ in 0..4 {
                                match self.peek() {
                                    Some(h) if h.is_ascii_hexdigit() => self.i += 1,
                                    None => return Err(SyntaxKind::UnexpectedEnd),
                                    Some(_) => return Err(SyntaxKind::BadEscape),
                                }
                            }
                        }
                        Some(_) => return Err(SyntaxKind::BadEscape),
                    }
                }
                Some(c) if c < 0x20 => return Err(SyntaxKind::ControlInString),
                Some(_) => self.i += 1,
            }
        }
    }

    fn digits(&mut self) -> Result<(), SyntaxKind> {
        if !self.peek().is_some_and(|b| b.is_ascii_digit()) {
            return Err(match self.peek() {
                None => SyntaxKind::UnexpectedEnd,
                Some(_) => SyntaxKind::BadNumber,
            });
        }
        while self.peek().is_some_and(|b| b.is_ascii_digit()) {
            self.i += 1;
        }
        Ok(())
    }

    fn number(&mut self) -> Result<(), SyntaxKind> {
        if self.peek() == Some(b'-') {
            self.i += 1;
        }
        match self.peek() {
            Some(b'0') => {
                self.i += 1;
                if self.peek().is_some_and(|b| b.is_ascii_digit()) {
                    return Err(SyntaxKind::BadNumber);
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

    fn literal(&mut self, word: &[u8]) -> Result<(), SyntaxKind> {
        for &w in word {
            if self.peek() != Some(w) {
                return Err(self.unexpected());
            }
            self.i += 1;
        }
        Ok(())
    }
}

/// What a token is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Tok {
    /// `{` (`true`) or `[` (`false`).
    Open(bool),
    /// `}` or `]`.
    Close,
    /// An object key (the token's range includes the quotes; the colon has been read).
    Key,
    /// A string value (the range includes the quotes; escapes are not decoded).
    Str,
    /// A number, as written.
    Num,
    /// `true`.
    True,
    /// `false`.
    False,
    /// `null`.
    Null,
}

/// One token and where it is: `src[start..end]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Token {
    pub tok: Tok,
    pub start: usize,
    pub end: usize,
}

impl Token {
    /// The text inside a key's or string's quotes (the token itself for anything else).
    #[inline(never)] // called for every key compared: one copy
    pub fn inner<'a>(&self, src: &'a [u8]) -> &'a [u8] {
        let quoted = matches!(self.tok, Tok::Key | Tok::Str);
        let (s, e) = if quoted {
            (self.start + 1, self.end.saturating_sub(1))
        } else {
            (self.start, self.end)
        };
        src.get(s..e).unwrap_or(&[])
    }

    /// The index in `names` of this key's (or string's) text, `names.len()` if none: one loop
    /// for all of the reader's key comparisons instead of an inlined `match` of byte strings at
    /// each (each arm its own length test and word compares).
    #[inline(never)]
    pub fn one_of(&self, src: &[u8], names: &[&[u8]]) -> usize {
        let text = self.inner(src);
        names.iter().position(|n| *n == text).unwrap_or(names.len())
    }
}

/// What the tokenizer reads next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Next {
    /// A value.
    Value,
    /// Just inside `{` (`true`) or `[` (`false`): the first member or the close.
    First(bool),
    /// After a value: `,`, a close, or (at top level) the end of the input.
    After,
}

/// A pull tokenizer over one JSON value starting at some offset of a byte slice.
///
/// It checks syntax as it goes: the first error is returned with its offset, and the
/// tokenizer should not be used after that. After the value it was started on, it returns
/// `Ok(None)` at the end of the input and [`SyntaxKind::TrailingData`] otherwise.
pub(crate) struct Tokens<'a> {
    c: Cursor<'a>,
    /// Bit d is set when nesting level d is an object.
    objects: u32,
    depth: usize,
    next: Next,
    /// The first syntax error [`Tokens::tok`] met: from there on it gives only `Close` tokens.
    err: Option<SyntaxError>,
}

impl<'a> Tokens<'a> {
    /// Tokens of the value at `at` (after whitespace) in `src`.
    pub fn new(src: &'a [u8], at: usize) -> Self {
        Tokens {
            c: Cursor { s: src, i: at },
            objects: 0,
            depth: 0,
            next: Next::Value,
            err: None,
        }
    }

    /// The first syntax error [`Tokens::tok`] met, if any.
    pub fn error(&self) -> Option<SyntaxError> {
        self.err
    }

    /// Containers open around the next token.
    pub fn depth(&self) -> usize {
        self.depth
    }

    /// The next token; `Ok(None)` once the value is done and only whitespace follows.
    #[allow(clippy::should_implement_trait)] // fallible: not an Iterator
    pub fn next(&mut self) -> Result<Option<Token>, SyntaxError> {
        match self.pull() {
            Some(t) => Ok(Some(t)),
            None => self.err.map_or(Ok(None), Err),
        }
    }

    /// The next token, `None` at the end of the value or at a syntax error, which is kept in
    /// `err` (and ends every later call). The one caller of [`Tokens::step`].
    fn pull(&mut self) -> Option<Token> {
        if self.err.is_some() {
            return None;
        }
        match self.step() {
            Ok(t) => t,
            Err(kind) => {
                self.err = Some(self.c.err(kind));
                None
            }
        }
    }

    /// [`Tokens::next`], the error's offset being the cursor's.
    fn step(&mut self) -> Result<Option<Token>, SyntaxKind> {
        loop {
            match self.next {
                Next::Value => return self.value().map(Some),
                Next::First(object) => {
                    self.c.ws();
                    let close = if object { b'}' } else { b']' };
                    if self.c.peek() == Some(close) {
                        return Ok(Some(self.close()));
                    }
                    if object {
                        return self.key().map(Some);
                    }
                    self.next = Next::Value;
                }
                Next::After => {
                    self.c.ws();
                    if self.depth == 0 {
                        return match self.c.peek() {
                            None => Ok(None),
                            Some(_) => Err(SyntaxKind::TrailingData),
                        };
                    }
                    let in_object = self.objects & (1 << (self.depth - 1)) != 0;
                    match (self.c.peek(), in_object) {
                        (Some(b','), true) => {
                            self.c.i += 1;
                            return self.key().map(Some);
                        }
                        (Some(b','), false) => {
                            self.c.i += 1;
                            self.next = Next::Value;
                        }
                        (Some(b'}'), true) | (Some(b']'), false) => return Ok(Some(self.close())),
                        _ => return Err(self.c.unexpected()),
                    }
                }
            }
        }
    }

    /// The next token, which must exist (the end of the input is an error here).
    pub fn token(&mut self) -> Result<Token, SyntaxError> {
        let t = self.tok();
        self.err.map_or(Ok(t), Err)
    }

    /// The next token, which must exist; on a syntax error (the end of the input included) a
    /// `Close` at the error, as every token after it, so a reader's loops end, and
    /// [`Tokens::error`] holds it. One check at the end instead of one at every token.
    pub fn tok(&mut self) -> Token {
        if let Some(t) = self.pull() {
            return t;
        }
        if self.err.is_none() {
            self.err = Some(self.c.err(SyntaxKind::UnexpectedEnd));
        }
        Token {
            tok: Tok::Close,
            start: self.c.i,
            end: self.c.i,
        }
    }

    /// Read past the rest of the value that `first` began; returns the offset after it.
    pub fn skip(&mut self, first: &Token) -> Result<usize, SyntaxError> {
        let end = self.pass(first);
        self.err.map_or(Ok(end), Err)
    }

    /// [`Tokens::skip`] with the error left in [`Tokens::error`].
    pub fn pass(&mut self, first: &Token) -> usize {
        if !matches!(first.tok, Tok::Open(_)) {
            return first.end;
        }
        let outer = self.depth.saturating_sub(1);
        loop {
            let t = self.tok();
            if self.err.is_some() || (t.tok == Tok::Close && self.depth == outer) {
                return t.end;
            }
        }
    }

    fn value(&mut self) -> Result<Token, SyntaxKind> {
        self.c.ws();
        let start = self.c.i;
        let tok = match self.c.peek() {
            Some(b @ (b'{' | b'[')) => {
                let object = b == b'{';
                if self.depth == MAX_DEPTH {
                    return Err(SyntaxKind::TooDeep);
                }
                self.c.i += 1;
                if object {
                    self.objects |= 1 << self.depth;
                } else {
                    self.objects &= !(1 << self.depth);
                }
                self.depth += 1;
                self.next = Next::First(object);
                return Ok(Token {
                    tok: Tok::Open(object),
                    start,
                    end: self.c.i,
                });
            }
            Some(b'"') => self.c.string().map(|_| Tok::Str),
            Some(b'-' | b'0'..=b'9') => self.c.number().map(|_| Tok::Num),
            Some(b @ (b't' | b'f' | b'n')) => {
                let (word, tok): (&[u8], _) = match b {
                    b't' => (b"true", Tok::True),
                    b'f' => (b"false", Tok::False),
                    _ => (b"null", Tok::Null),
                };
                self.c.literal(word).map(|_| tok)
            }
            _ => Err(self.c.unexpected()),
        }?;
        self.next = Next::After;
        Ok(Token {
            tok,
            start,
            end: self.c.i,
        })
    }

    /// A key and its colon.
    #[inline(always)] // two callers in the one step; inlined, its token is not passed through memory
    fn key(&mut self) -> Result<Token, SyntaxKind> {
        self.c.ws();
        let start = self.c.i;
        self.c.string()?;
        let end = self.c.i;
        self.c.ws();
        self.c.expect(b':')?;
        self.next = Next::Value;
        Ok(Token {
            tok: Tok::Key,
            start,
            end,
        })
    }

    fn close(&mut self) -> Token {
        let start = self.c.i;
        self.c.i += 1;
        self.depth -= 1;
        self.next = Next::After;
        Token {
            tok: Tok::Close,
            start,
            end: self.c.i,
        }
    }
}

/// Check that `src` is exactly one JSON value (RFC 8259), nested at most [`MAX_DEPTH`] deep.
pub fn validate(src: &[u8]) -> Result<(), SyntaxError> {
    if let Err(e) = core::str::from_utf8(src) {
        // Report UTF-8 trouble only if the JSON is fine up to there: a syntax error earlier
        // in the document is the more useful position.
        let upto = e.valid_up_to();
        if let Err(se) = validate_bytes(src.get(..upto).unwrap_or(&[])) {
            if se.kind != SyntaxKind::UnexpectedEnd {
                return Err(se);
            }
        }
        return Err(SyntaxError {
            offset: upto,
            kind: SyntaxKind::BadUtf8,
        });
    }
    validate_bytes(src)
}

/// The syntax check without the UTF-8 one.
fn validate_bytes(src: &[u8]) -> Result<(), SyntaxError> {
    let mut t = Tokens::new(src, 0);
    while t.next()?.is_some() {}
    Ok(())
}

/// Start and end offsets of the value starting at `at` (after whitespace) in a valid document.
///
/// Returns `None` on anything a valid document would not contain, never panics.
pub fn span(src: &[u8], at: usize) -> Option<(usize, usize)> {
    let mut t = Tokens::new(src, at);
    let first = t.token().ok()?;
    if matches!(first.tok, Tok::Close | Tok::Key) {
        return None;
    }
    Some((first.start, t.skip(&first).ok()?))
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

/// Offset of one child of the container at `at` in a valid document: [`locate`] from there.
#[cfg(feature = "geofence")]
pub(crate) fn child_at(src: &[u8], at: usize, seg: Seg) -> Option<usize> {
    child(src, at, seg)
}

/// Offset of one child of the container at `at`.
fn child(src: &[u8], at: usize, seg: Seg) -> Option<usize> {
    let mut t = Tokens::new(src, at);
    let object = match (t.token().ok()?.tok, seg) {
        (Tok::Open(true), Seg::Key(_)) => true,
        (Tok::Open(false), Seg::Index(_)) => false,
        _ => return None,
    };
    let mut found = None;
    let mut index = 0usize;
    loop {
        let mut tok = t.token().ok()?;
        if tok.tok == Tok::Close {
            return found;
        }
        if object {
            let key = tok.inner(src);
            tok = t.token().ok()?;
            if matches!(seg, Seg::Key(want) if key == want.as_bytes()) {
                found = Some(tok.start);
            }
        } else {
            if seg == Seg::Index(index) {
                return Some(tok.start);
            }
            index += 1;
        }
        t.skip(&tok).ok()?;
    }
}

/// 1-based line and column (in characters) of byte `offset` in `src`, for error messages.
pub fn line_col(src: &[u8], offset: usize) -> (usize, usize) {
    // One pass, no indexing (so no bounds-check panic is linked): a newline starts the next
    // line; characters, not bytes, are counted: UTF-8 continuation bytes do not start one.
    let (mut line, mut col) = (1, 1);
    for &b in src.get(..offset).unwrap_or(src) {
        if b == b'\n' {
            line += 1;
            col = 1;
        } else if b & 0xC0 != 0x80 {
            col += 1;
        }
    }
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

    /// Lines and columns as the first version counted them (slices and searches).
    fn line_col_reference(src: &[u8], offset: usize) -> (usize, usize) {
        let before = &src[..offset.min(src.len())];
        let line = 1 + before.iter().filter(|&&b| b == b'\n').count();
        let start = before
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |p| p + 1);
        let col = 1 + before[start..]
            .iter()
            .filter(|&&b| b & 0xC0 != 0x80)
            .count();
        (line, col)
    }

    use proptest::prelude::*;

    proptest! {
        #[test]
        fn line_col_is_the_reference(
            src in prop::collection::vec(prop_oneof![Just(b'\n'), Just(0xc3), Just(0xa9), any::<u8>()], 0..200),
            offset in 0usize..260,
        ) {
            prop_assert_eq!(line_col(&src, offset), line_col_reference(&src, offset));
        }
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
