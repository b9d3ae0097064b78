//! Logging: defmt over semihosting with the `defmt` feature, else plain semihosting lines.
//!
//! Format strings must use only what both accept: `{}` with integers and `&str` (a `{}` count
//! that does not match the arguments fails to compile). Without the feature a line is not
//! formatted by `core::fmt`: [`line`] copies the format string, puts each argument ([`Arg`]:
//! a `u32`, an `i32` or a `&str`) in place of its `{}`, and writes the line in a few
//! semihosting calls. `core::fmt` (its `write`, padding and integer `Display` paths, ~2.5 KB of
//! flash) is then not linked at all, and a call site only builds a slice of arguments. Values
//! with a `Display` impl are not logged as such ([`crate::report`] names failures in words and
//! numbers instead). The firmware logs only at start, on progress, on failure and at exit.

use core::cell::Cell;

use cortex_m_semihosting::hio::{self, HostStream};
use critical_section::Mutex;

#[cfg(feature = "defmt")]
use defmt_semihosting as _; // the global defmt logger

/// Log a line at info level.
#[macro_export]
macro_rules! info {
    ($($t:tt)*) => { $crate::__log!(info, "I", $($t)*) };
}

/// Log a line at error level.
#[macro_export]
macro_rules! error {
    ($($t:tt)*) => { $crate::__log!(error, "E", $($t)*) };
}

/// What [`info!`] and [`error!`] expand to: the defmt macro of that level, or [`line`] with
/// the level's letter in front of the format string (one byte of flash per line, not six).
#[doc(hidden)]
#[macro_export]
macro_rules! __log {
    ($defmt:ident, $level:literal, $fmt:literal $(, $arg:expr)* $(,)?) => {{
        #[cfg(feature = "defmt")]
        ::defmt::$defmt!($fmt $(, $arg)*);
        #[cfg(not(feature = "defmt"))]
        {
            const _: () = assert!(
                $crate::log::placeholders($fmt) == <[&str]>::len(&[$(stringify!($arg)),*]),
                "a log line's placeholder count differs from its arguments"
            );
            $crate::log::line(concat!($level, $fmt), &[$($crate::log::Arg::from($arg)),*]);
        }
    }};
}

/// One value of a log line.
#[derive(Debug, Clone, Copy)]
pub enum Arg<'a> {
    /// An unsigned number (every `u8`, `u16`, `u32`, `usize` the firmware logs).
    U(u32),
    /// A signed number (-1 stands for "unknown" in the firmware's lines).
    I(i32),
    /// Text.
    S(&'a str),
}

impl From<u32> for Arg<'_> {
    fn from(v: u32) -> Self {
        Arg::U(v)
    }
}

impl From<u16> for Arg<'_> {
    fn from(v: u16) -> Self {
        Arg::U(v.into())
    }
}

impl From<u8> for Arg<'_> {
    fn from(v: u8) -> Self {
        Arg::U(v.into())
    }
}

impl From<usize> for Arg<'_> {
    /// Counts and lengths (saturating; `usize` is 32 bits on this target anyway).
    fn from(v: usize) -> Self {
        Arg::U(u32::try_from(v).unwrap_or(u32::MAX))
    }
}

impl From<i32> for Arg<'_> {
    fn from(v: i32) -> Self {
        Arg::I(v)
    }
}

impl<'a> From<&'a str> for Arg<'a> {
    fn from(v: &'a str) -> Self {
        Arg::S(v)
    }
}

/// How many `{}` a format string holds (checked against the arguments at compile time).
pub const fn placeholders(fmt: &str) -> usize {
    let b = fmt.as_bytes();
    let (mut i, mut n) = (0, 0);
    while i + 1 < b.len() {
        if b[i] == b'{' && b[i + 1] == b'}' {
            n += 1;
            i += 1;
        }
        i += 1;
    }
    n
}

/// Bytes of a line written at once: a longer line goes out in pieces, which join up on the
/// host (one core, nothing else writes between them). Small, because the buffer is on the
/// stack of whatever logs, the flight's deepest path included.
const LINE_LEN: usize = 64;

/// The semihosting stdout, opened by the first line.
static STDOUT: Mutex<Cell<Option<HostStream>>> = Mutex::new(Cell::new(None));

/// A line being built.
struct Line {
    buf: [u8; LINE_LEN],
    len: usize,
}

// Every index below is checked with `get`: an indexing panic would link `core::fmt`'s integer
// formatting (its bounds-check message formats two `usize`s), though the handler never prints it.
impl Line {
    fn put(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.put_byte(b);
        }
    }

    fn put_byte(&mut self, b: u8) {
        if self.len >= LINE_LEN {
            self.flush();
        }
        if let Some(slot) = self.buf.get_mut(self.len) {
            *slot = b;
            self.len += 1;
        }
    }

    fn put_u32(&mut self, mut v: u32) {
        let mut digits = [0u8; 10];
        let mut n = 0;
        for d in digits.iter_mut().rev() {
            *d = b'0' + (v % 10) as u8;
            n += 1;
            v /= 10;
            if v == 0 {
                break;
            }
        }
        self.put(digits.get(digits.len() - n..).unwrap_or_default());
    }

    fn flush(&mut self) {
        let bytes = self.buf.get(..self.len).unwrap_or_default();
        self.len = 0;
        critical_section::with(|cs| {
            let cell = STDOUT.borrow(cs);
            let Some(mut out) = cell.get().or_else(|| hio::hstdout().ok()) else {
                return; // no host: the line is lost, as hprintln would lose it
            };
            cell.set(Some(out));
            let _ = out.write_all(bytes);
        });
    }
}

/// Write `fmt` with each `{}` replaced by the next of `args`, and a newline, to semihosting
/// stdout. The first byte of `fmt` is the level: `E` starts the line with `ERROR `, anything
/// else with `INFO  `. A `{}` without an argument stays as written; extra arguments are dropped (the
/// macros rule both out at compile time).
#[inline(never)]
pub fn line(fmt: &str, args: &[Arg<'_>]) {
    let mut out = Line {
        buf: [0; LINE_LEN],
        len: 0,
    };
    let mut args = args.iter();
    let mut rest = fmt.as_bytes().iter();
    out.put(match rest.next() {
        Some(b'E') => b"ERROR ",
        _ => b"INFO  ",
    });
    while let Some(&b) = rest.next() {
        if b != b'{' || rest.as_slice().first() != Some(&b'}') {
            out.put_byte(b);
            continue;
        }
        rest.next();
        match args.next() {
            Some(Arg::U(v)) => out.put_u32(*v),
            Some(Arg::I(v)) => {
                if *v < 0 {
                    out.put_byte(b'-');
                }
                out.put_u32(v.unsigned_abs());
            }
            Some(Arg::S(s)) => out.put(s.as_bytes()),
            None => out.put(b"{}"),
        }
    }
    out.put_byte(b'\n');
    out.flush();
}
