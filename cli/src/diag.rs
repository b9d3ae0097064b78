//! Errors in a file the user wrote (a `.plan`, a program), worded the way compilers do:
//! `path:line:col: message`, then the offending line with a caret under the position.

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
    /// The text of the line, for the excerpt.
    line_text: String,
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
        let line_text = src.lines().nth(line - 1).unwrap_or("").to_string();
        SourceError {
            path: path.to_path_buf(),
            line,
            col,
            key: key.map(str::to_string),
            message: message.into(),
            line_text,
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
                .take(self.col.saturating_sub(1))
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

/// Read a file as UTF-8 text.
pub fn read_text(path: &Path) -> Result<String, FileError> {
    let bytes = std::fs::read(path).map_err(|source| FileError::Io {
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
}
