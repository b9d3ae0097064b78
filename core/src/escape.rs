//! Text from a vehicle, shown safely on a terminal or in a log.
//!
//! A vehicle's STATUSTEXT, a parameter name it echoes, the words of a refusal, a console line:
//! every byte of them is the vehicle's to choose. Printed raw, a line feed starts a line of
//! the vehicle's own (`PASS: …` where a CI job greps for the verdict), a carriage return or a
//! backspace overwrites what nexus printed, an escape sequence moves the cursor or recolours the
//! terminal, a bidi override reorders what follows. Shown through [`Escaped`] (or written
//! through [`Escaping`]) every such character is written as an escape instead, so no vehicle
//! text can start a line, move the cursor or hide what surrounds it; the verdict line is
//! nexus's alone.
//!
//! Escaped ([`is_escaped`]):
//! * the C0 controls U+0000–U+001F, TAB, CR and LF included (`\t`, `\r`, `\n`; the others
//!   `\x1b`), and DEL U+007F (`\x7f`);
//! * the C1 controls U+0080–U+009F (`\u{85}`: NEL is a line break to some terminals, U+009B a
//!   one-byte CSI);
//! * the line and paragraph separators U+2028 and U+2029;
//! * the bidi controls: embeddings and overrides U+202A–U+202E, isolates U+2066–U+2069, and the
//!   marks U+200E, U+200F, U+061C.
//!
//! Everything else is shown as it is, backslashes too: the escapes only ever stand for
//! characters that could not have been shown. Escaping what was escaped changes nothing. No
//! allocation: a firmware can use it, and `std` code formats with it (`Escaped(s).to_string()`).

use core::fmt;

/// Whether `c` is written as an escape (see the module docs).
pub const fn is_escaped(c: char) -> bool {
    matches!(
        c as u32,
        0x00..=0x1f
            | 0x7f..=0x9f
            | 0x2028
            | 0x2029
            | 0x202a..=0x202e
            | 0x2066..=0x2069
            | 0x200e
            | 0x200f
            | 0x061c
    )
}

/// Whether `s` holds a character [`is_escaped`] escapes.
pub fn needs_escaping(s: &str) -> bool {
    s.chars().any(is_escaped)
}

/// How one character is shown: itself, or its escape (at most 8 bytes: `\u{2028}`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shown {
    buf: [u8; 8],
    len: u8,
}

impl Shown {
    /// The character or its escape.
    pub fn as_str(&self) -> &str {
        // Only ASCII escapes or a whole character's UTF-8 are ever stored.
        core::str::from_utf8(self.buf.get(..self.len as usize).unwrap_or_default())
            .unwrap_or_default()
    }
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// How `c` is shown: `\t`, `\n`, `\r`; `\x1b` for the other C0 controls and DEL; `\u{85}` for
/// the C1 controls, the separators and the bidi controls; else `c` itself.
pub fn show(c: char) -> Shown {
    let mut buf = [0u8; 8];
    if !is_escaped(c) {
        let len = c.encode_utf8(&mut buf).len() as u8;
        return Shown { buf, len };
    }
    let mut len = 0usize;
    // `get_mut`, not indexing (always in range): no panic path linked in.
    let mut put = |b: u8| {
        if let Some(slot) = buf.get_mut(len) {
            *slot = b;
            len += 1;
        }
    };
    let hex = |d: u32| HEX.get(d as usize & 0xf).copied().unwrap_or(b'?');
    let n = c as u32;
    put(b'\\');
    match c {
        '\t' => put(b't'),
        '\n' => put(b'n'),
        '\r' => put(b'r'),
        _ if n < 0x80 => {
            put(b'x');
            put(hex(n >> 4));
            put(hex(n));
        }
        _ => {
            put(b'u');
            put(b'{');
            let digits = if n > 0xfff {
                4
            } else if n > 0xff {
                3
            } else {
                2
            };
            for i in (0..digits).rev() {
                put(hex(n >> (4 * i)));
            }
            put(b'}');
        }
    }
    Shown {
        buf,
        len: len as u8,
    }
}

/// Displays a string with every character [`is_escaped`] names written as its escape.
#[derive(Debug, Clone, Copy)]
pub struct Escaped<'a>(pub &'a str);

impl fmt::Display for Escaped<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Write::write_str(&mut Escaping(f), self.0)
    }
}

/// A [`fmt::Write`] that escapes what is written through it into the writer it wraps:
/// `write!(Escaping(f), "{refusal}")` shows a value whose `Display` holds vehicle words.
#[derive(Debug)]
pub struct Escaping<W>(pub W);

impl<W: fmt::Write> fmt::Write for Escaping<W> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let mut rest = s;
        // Runs of plain characters in one write; each escape in one.
        while let Some((at, c)) = rest.char_indices().find(|&(_, c)| is_escaped(c)) {
            self.0.write_str(rest.get(..at).unwrap_or_default())?;
            self.0.write_str(show(c).as_str())?;
            rest = rest.get(at + c.len_utf8()..).unwrap_or_default();
        }
        self.0.write_str(rest)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::fmt::Write;

    fn shown(s: &str) -> heapless::String<256> {
        let mut out = heapless::String::new();
        write!(out, "{}", Escaped(s)).unwrap();
        out
    }

    #[test]
    fn controls_breaks_and_bidi_are_escaped_and_the_rest_is_kept() {
        assert_eq!(
            shown("a\x1b[2J\x07b\x08\r\nPASS: forged\t\x7f"),
            "a\\x1b[2J\\x07b\\x08\\r\\nPASS: forged\\t\\x7f"
        );
        assert_eq!(shown("\u{85}\u{9b}31m"), "\\u{85}\\u{9b}31m");
        assert_eq!(
            shown("x\u{2028}y\u{2029}\u{202e}txt\u{2066}\u{2069}\u{200f}\u{61c}"),
            "x\\u{2028}y\\u{2029}\\u{202e}txt\\u{2066}\\u{2069}\\u{200f}\\u{61c}"
        );
        assert_eq!(shown("\0"), "\\x00");
        // Ordinary texts, non-ASCII letters and backslashes are shown as they are.
        let plain = "Arming denied: Resolve system health failures first — Höhe 5 m \\ ok";
        assert_eq!(shown(plain), plain);
        assert!(!needs_escaping(plain));
    }

    #[test]
    fn escaping_twice_changes_nothing_and_nothing_escaped_is_left() {
        let nasty = "\n\rPASS\u{85}\u{2028}\u{202e}\x1b\x00\x7f\t";
        let once = shown(nasty);
        assert_eq!(shown(&once), once);
        assert!(!needs_escaping(&once));
        for c in (0u32..0x3000).filter_map(char::from_u32) {
            let s = show(c);
            assert_eq!(
                is_escaped(c),
                s.as_str() != c.encode_utf8(&mut [0; 4]),
                "{c:?}"
            );
            assert!(!needs_escaping(s.as_str()), "{c:?}");
        }
    }

    #[test]
    fn the_writer_escapes_every_piece_written_through_it() {
        let mut out: heapless::String<64> = heapless::String::new();
        let why = "no\nway";
        write!(Escaping(&mut out), "refused: {why}|{}", 5).unwrap();
        assert_eq!(out, "refused: no\\nway|5");
    }
}
