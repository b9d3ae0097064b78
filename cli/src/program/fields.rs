//! Typed, position-aware reads of one TOML table, for the program reader.
//!
//! Every read names the key it read; [`Fields::finish`] then reports the first key nobody
//! read as unknown, so a misspelt key (`alt = 5` for `alt_m = 5`) is an error, never ignored.

use crate::diag::SourceError;
use std::cell::RefCell;
use std::ops::Range;
use std::path::Path;
use toml::de::{DeTable, DeValue};
use toml::Spanned;

/// The file being read.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Src<'a> {
    pub path: &'a Path,
    pub text: &'a str,
}

impl Src<'_> {
    /// An error at `span`.
    pub fn err(
        &self,
        span: &Range<usize>,
        key: Option<&str>,
        msg: impl Into<String>,
    ) -> SourceError {
        SourceError::at(self.path, self.text, span.start, key, msg)
    }
}

/// One value with where it is.
pub(crate) type Val<'i> = Spanned<DeValue<'i>>;

/// A value read, with its span, if the key is there.
pub(crate) type Got<T> = Result<Option<(T, Range<usize>)>, SourceError>;

/// A table being read: the keys read so far are remembered.
pub(crate) struct Fields<'a, 'i> {
    pub src: Src<'a>,
    table: &'a DeTable<'i>,
    /// The table's own span (its header or opening brace).
    pub span: Range<usize>,
    /// What the table is, for messages: "step 3", "step 3's until", …
    pub what: String,
    /// Key path prefix for messages: "" or "until." or "until.guards[0].".
    pub prefix: String,
    used: RefCell<Vec<String>>,
}

/// The TOML type name of a value, for messages.
pub(crate) fn type_name(v: &DeValue<'_>) -> &'static str {
    match v {
        DeValue::String(_) => "a string",
        DeValue::Integer(_) => "an integer",
        DeValue::Float(_) => "a float",
        DeValue::Boolean(_) => "a boolean",
        DeValue::Datetime(_) => "a date-time",
        DeValue::Array(_) => "an array",
        DeValue::Table(_) => "a table",
    }
}

/// A TOML integer as i64, if it fits.
pub(crate) fn as_i64(v: &DeValue<'_>) -> Option<i64> {
    let i = v.as_integer()?;
    i64::from_str_radix(i.as_str(), i.radix()).ok()
}

/// A TOML integer or float as f64.
pub(crate) fn as_f64(v: &DeValue<'_>) -> Option<f64> {
    match v {
        DeValue::Integer(_) => as_i64(v).map(|i| i as f64),
        DeValue::Float(f) => f.as_str().replace('_', "").parse::<f64>().ok(),
        _ => None,
    }
}

impl<'a, 'i> Fields<'a, 'i> {
    /// Read `table` (whose span is `span`), called `what` in messages.
    pub fn new(
        src: Src<'a>,
        table: &'a DeTable<'i>,
        span: Range<usize>,
        what: impl Into<String>,
        prefix: impl Into<String>,
    ) -> Self {
        Fields {
            src,
            table,
            span,
            what: what.into(),
            prefix: prefix.into(),
            used: RefCell::new(Vec::new()),
        }
    }

    /// `prefix` + `key`, as messages name it.
    pub fn full_key(&self, key: &str) -> String {
        format!("{}{key}", self.prefix)
    }

    /// An error about `key` at `span`.
    pub fn err_at(&self, span: &Range<usize>, key: &str, msg: impl Into<String>) -> SourceError {
        let full = self.full_key(key);
        self.src.err(span, Some(&full), msg)
    }

    /// An error about the table as a whole (a missing key, a conflict).
    pub fn err_table(&self, key: Option<&str>, msg: impl Into<String>) -> SourceError {
        let full = key.map(|k| self.full_key(k));
        self.src.err(&self.span, full.as_deref(), msg)
    }

    /// Whether the table has `key` (does not count as reading it).
    pub fn has(&self, key: &str) -> bool {
        self.table.get(key).is_some()
    }

    /// The value of `key`, marking it read.
    pub fn get(&self, key: &str) -> Option<&'a Val<'i>> {
        let v = self.table.get(key)?;
        self.used.borrow_mut().push(key.to_string());
        Some(v)
    }

    /// Every key present, in source order, with its span.
    pub fn keys(&self) -> Vec<(String, Range<usize>)> {
        let mut keys: Vec<_> = self
            .table
            .iter()
            .map(|(k, _)| (k.get_ref().to_string(), k.span()))
            .collect();
        keys.sort_by_key(|(_, s)| s.start);
        keys
    }

    fn wrong(&self, key: &str, v: &Val<'i>, want: &str) -> SourceError {
        self.err_at(
            &v.span(),
            key,
            format!(
                "`{}` in {} must be {want}, found {}",
                self.full_key(key),
                self.what,
                type_name(v.get_ref())
            ),
        )
    }

    /// A finite number (integer or float) as f32, with its span.
    pub fn number(&self, key: &str) -> Got<f32> {
        let Some(v) = self.get(key) else {
            return Ok(None);
        };
        let Some(x) = as_f64(v.get_ref()) else {
            return Err(self.wrong(key, v, "a number"));
        };
        if !x.is_finite() || x.abs() > f32::MAX as f64 {
            return Err(self.err_at(
                &v.span(),
                key,
                format!(
                    "`{}` must be a finite number, found {x}",
                    self.full_key(key)
                ),
            ));
        }
        Ok(Some((x as f32, v.span())))
    }

    /// A duration: a finite number that is not negative, at most
    /// [`crate::limits::MAX_DURATION_S`].
    pub fn nonneg(&self, key: &str, unit: &str) -> Result<Option<f32>, SourceError> {
        match self.number(key)? {
            Some((x, span)) if x < 0.0 => Err(self.err_at(
                &span,
                key,
                format!(
                    "`{}` must not be negative, found {x}{unit}",
                    self.full_key(key)
                ),
            )),
            Some((x, span)) if x as f64 > crate::limits::MAX_DURATION_S => Err(self.err_at(
                &span,
                key,
                format!(
                    "`{}` must be at most {:e}{unit}, found {x}{unit}",
                    self.full_key(key),
                    crate::limits::MAX_DURATION_S
                ),
            )),
            other => Ok(other.map(|(x, _)| x)),
        }
    }

    /// A finite number within `lo..=hi` (`unit` follows the numbers in the message).
    pub fn number_in(&self, key: &str, lo: f64, hi: f64, unit: &str) -> Got<f32> {
        match self.number(key)? {
            Some((x, span)) if !(lo..=hi).contains(&(x as f64)) => Err(self.err_at(
                &span,
                key,
                format!(
                    "`{}` must be from {lo} to {hi}{unit}, found {}{unit}",
                    self.full_key(key),
                    if x.abs() >= 1e6 {
                        format!("{x:e}")
                    } else {
                        x.to_string()
                    }
                ),
            )),
            other => Ok(other),
        }
    }

    /// An integer in `lo..=hi`.
    pub fn int_in(&self, key: &str, lo: i64, hi: i64) -> Result<Option<i64>, SourceError> {
        let Some(v) = self.get(key) else {
            return Ok(None);
        };
        let Some(i) = as_i64(v.get_ref()) else {
            return Err(self.wrong(key, v, "an integer"));
        };
        if i < lo || i > hi {
            return Err(self.err_at(
                &v.span(),
                key,
                format!("`{}` must be in {lo}..={hi}, found {i}", self.full_key(key)),
            ));
        }
        Ok(Some(i))
    }

    /// A string, with its span.
    pub fn string(&self, key: &str) -> Got<&'a str> {
        let Some(v) = self.get(key) else {
            return Ok(None);
        };
        match v.get_ref().as_str() {
            Some(s) => Ok(Some((s, v.span()))),
            None => Err(self.wrong(key, v, "a string")),
        }
    }

    /// A boolean.
    pub fn boolean(&self, key: &str) -> Got<bool> {
        let Some(v) = self.get(key) else {
            return Ok(None);
        };
        match v.get_ref().as_bool() {
            Some(b) => Ok(Some((b, v.span()))),
            None => Err(self.wrong(key, v, "true or false")),
        }
    }

    /// A table (inline or not), with its span.
    pub fn table(&self, key: &str) -> Got<&'a DeTable<'i>> {
        let Some(v) = self.get(key) else {
            return Ok(None);
        };
        match v.get_ref().as_table() {
            Some(t) => Ok(Some((t, v.span()))),
            None => Err(self.wrong(key, v, "a table, e.g. { … }")),
        }
    }

    /// An array of values, with its span.
    pub fn array(&self, key: &str) -> Got<&'a [Val<'i>]> {
        let Some(v) = self.get(key) else {
            return Ok(None);
        };
        match v.get_ref().as_array() {
            Some(a) => Ok(Some((&a[..], v.span()))),
            None => Err(self.wrong(key, v, "an array, e.g. [ … ]")),
        }
    }

    /// `key`, which must be present.
    pub fn required<T>(&self, key: &str, got: Option<T>, hint: &str) -> Result<T, SourceError> {
        got.ok_or_else(|| {
            self.err_table(
                Some(key),
                format!("{} needs `{}`{hint}", self.what, self.full_key(key)),
            )
        })
    }

    /// Fail on the first key (in source order) that was not read: a misspelling, or a key
    /// that does not belong here. `allowed` lists what does, for the message.
    pub fn finish(&self, allowed: &[&str]) -> Result<(), SourceError> {
        let used = self.used.borrow();
        self.first_unknown(allowed, |k| used.iter().any(|u| u == k))
    }

    /// Fail on the first key (in source order) not in `allowed`, before reading any: a
    /// misspelt key is reported as such rather than as the required key it was meant to be.
    pub fn check_keys(&self, allowed: &[&str]) -> Result<(), SourceError> {
        self.first_unknown(allowed, |k| allowed.contains(&k))
    }

    fn first_unknown(
        &self,
        allowed: &[&str],
        known: impl Fn(&str) -> bool,
    ) -> Result<(), SourceError> {
        for (key, span) in self.keys() {
            if !known(&key) {
                let mut msg = format!("unknown key `{}` in {}", self.full_key(&key), self.what);
                if let Some(close) = closest(&key, allowed) {
                    msg.push_str(&format!(" (did you mean `{close}`?)"));
                }
                msg.push_str(&format!("; expected one of: {}", allowed.join(", ")));
                return Err(self.err_at(&span, &key, msg));
            }
        }
        Ok(())
    }
}

/// The allowed key closest to `key` by edit distance, if it is close (a likely misspelling).
pub(crate) fn closest<'k>(key: &str, allowed: &[&'k str]) -> Option<&'k str> {
    allowed
        .iter()
        .map(|a| (edit_distance(key, a), *a))
        .filter(|(d, a)| *d <= 2.max(a.len() / 3) && *d < a.len())
        .min_by_key(|(d, _)| *d)
        .map(|(_, a)| a)
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != *cb);
            cur[j + 1] = sub.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggests_near_misses_only() {
        assert_eq!(closest("alt", &["alt_m", "timeout_s"]), Some("alt_m"));
        assert_eq!(
            closest("timout_s", &["alt_m", "timeout_s"]),
            Some("timeout_s")
        );
        assert_eq!(closest("banana", &["alt_m", "mode"]), None);
    }
}
