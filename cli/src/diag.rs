//! Errors in a file the user wrote (a `.plan`, a program), worded the way compilers do:
//! `path:line:col: message`, then the offending line with a caret under the position — a
//! window of the line around the column, so a huge one-line file gives a few lines of error,
//! not a copy of itself.

use std::fmt;
use std::path::{Path, PathBuf};

/// A problem at one place in a source file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceError {
    /// The file, as the user named it.
    pub path: PathBuf,
    /// 1-based line.
    pub line: usize,
    /// 1-based column, in characters.
    pub col: usize,
    /// The key the problem concerns (`alt_m`, `until.op`, …), when there is one.
    pub key: Option<String>,
    /// What is wrong and, where possible, what would be right.
    pub message: String,
    /// The excerpt: the line, or the window of it around the column ([`WINDOW_CHARS`]), with
    /// `…` where it was cut.
    line_text: String,
    /// Characters of `line_text` before the caret.
    caret: usize,
}

/// Longest excerpt of a line shown under an error, characters; the caret sits
/// [`WINDOW_BEFORE`] characters into it when the line is longer.
pub const WINDOW_CHARS: usize = 100;
/// Characters of context before the caret in a cut line.
pub const WINDOW_BEFORE: usize = 40;
/// Longest message kept, characters (a message quoting a value stays readable).
pub const MESSAGE_CHARS: usize = 400;

/// The window of `line` around 0-based character `at`: the text (with `…` where cut) and the
/// caret's character position in it.
fn window(line: &str, at: usize) -> (String, usize) {
    let line = line.trim_end();
    let n = line.chars().count();
    if n <= WINDOW_CHARS {
        return (line.to_string(), at);
    }
    let start = at.saturating_sub(WINDOW_BEFORE).min(n - WINDOW_CHARS);
    let end = start + WINDOW_CHARS;
    let mut text = String::new();
    let mut caret = at - start;
    if start > 0 {
        text.push('…');
        caret += 1;
    }
    text.extend(line.chars().skip(start).take(WINDOW_CHARS));
    if end < n {
        text.push('…');
    }
    (text, caret)
}

impl SourceError {
    /// A problem at byte `offset` of `src` (clamped to the text; moved back to a character
    /// boundary).
    pub fn at(
        path: &Path,
        src: &str,
        offset: usize,
        key: Option<&str>,
        message: impl Into<String>,
    ) -> Self {
        let mut offset = offset.min(src.len());
        while !src.is_char_boundary(offset) {
            offset -= 1;
        }
        let (line, col) = nexus_core::plan::line_col(src.as_bytes(), offset);
        let (line_text, caret) = window(
            src.lines().nth(line - 1).unwrap_or(""),
            col.saturating_sub(1),
        );
        let mut message: String = message.into();
        if message.chars().count() > MESSAGE_CHARS {
            message = message.chars().take(MESSAGE_CHARS).collect::<String>() + "…";
        }
        SourceError {
            path: path.to_path_buf(),
            line,
            col,
            key: key.map(str::to_string),
            message,
            line_text,
            caret,
        }
    }

    /// `path:line:col`.
    pub fn location(&self) -> String {
        format!("{}:{}:{}", self.path.display(), self.line, self.col)
    }
}

impl fmt::Display for SourceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.location(), self.message)?;
        if !self.line_text.trim().is_empty() {
            let gutter = self.line.to_string();
            let pad = " ".repeat(gutter.len());
            // Tabs keep their width in the caret line, so the caret lands under the column.
            let lead: String = self
                .line_text
                .chars()
                .take(self.caret)
                .map(|c| if c == '\t' { '\t' } else { ' ' })
                .collect();
            write!(
                f,
                "\n{pad} |\n{gutter} | {}\n{pad} | {lead}^",
                self.line_text.trim_end()
            )?;
        }
        Ok(())
    }
}

impl std::error::Error for SourceError {}

/// Why a file could not be used: not readable, or wrong inside.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    /// The file could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The file was read and is wrong at a known place.
    #[error("{0}")]
    Source(Box<SourceError>),
}

impl From<SourceError> for FileError {
    fn from(e: SourceError) -> Self {
        FileError::Source(Box::new(e))
    }
}

/// Read an input file's bytes: a regular file within the size limit
/// ([`super::limits::read_input`]); errors name the file.
pub fn read_bytes(path: &Path) -> Result<Vec<u8>, FileError> {
    super::limits::read_input(path).map_err(|source| FileError::Io {
        path: path.to_path_buf(),
        source,
    })
}

/// Read a file as UTF-8 text (a regular file within the size limit).
pub fn read_text(path: &Path) -> Result<String, FileError> {
    let bytes = super::limits::read_input(path).map_err(|source| FileError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    String::from_utf8(bytes).map_err(|e| {
        let valid = e.utf8_error().valid_up_to();
        let text = String::from_utf8_lossy(e.as_bytes()).into_owned();
        SourceError::at(path, &text, valid, None, "the file is not UTF-8 text").into()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn points_at_the_column_with_a_caret() {
        let src = "a = 1\nalt_m = \"five\"\n";
        let e = SourceError::at(Path::new("p.toml"), src, 14, Some("alt_m"), "not a number");
        assert_eq!((e.line, e.col), (2, 9));
        let shown = e.to_string();
        assert!(shown.starts_with("p.toml:2:9: not a number"), "{shown}");
        assert!(shown.ends_with("  |         ^"), "{shown}");
    }

    #[test]
    fn offsets_past_the_end_or_inside_a_character_are_clamped() {
        let src = "é";
        let e = SourceError::at(Path::new("x"), src, 1, None, "m");
        assert_eq!((e.line, e.col), (1, 1));
        let e = SourceError::at(Path::new("x"), src, 99, None, "m");
        assert_eq!((e.line, e.col), (1, 2));
    }

    #[test]
    fn a_long_line_is_shown_as_a_window_around_the_column() {
        let mut src = "x".repeat(1_000_000);
        src.replace_range(500_000..500_001, "!");
        let e = SourceError::at(Path::new("p.plan"), &src, 500_000, None, "m".repeat(5000));
        assert_eq!((e.line, e.col), (1, 500_001));
        let shown = e.to_string();
        assert!(shown.len() < 1_000, "{} bytes", shown.len());
        let lines: Vec<&str> = shown.lines().collect();
        let excerpt = lines[2];
        let caret = lines[3];
        assert!(
            excerpt.contains("…x") && excerpt.ends_with("x…"),
            "{excerpt}"
        );
        // The caret is under the '!'.
        let bang = excerpt.chars().position(|c| c == '!').unwrap();
        assert_eq!(caret.chars().count() - 1, bang, "{shown}");
        // Near the end of the line the window ends at the line's end.
        let e = SourceError::at(Path::new("p"), &src, 999_999, None, "m");
        let shown = e.to_string();
        assert!(shown.lines().nth(2).unwrap().ends_with('x'), "{shown}");
        assert!(shown.ends_with('^'));
    }
}
