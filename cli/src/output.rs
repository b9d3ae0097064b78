//! Where a command's output goes: human lines to stdout, or to stderr when the JSON report
//! takes stdout (so `nexus run p.toml --json | jq` sees only JSON).

use serde::Serialize;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};

/// `--json [FILE]`: `-` (or the flag alone) is stdout.
pub const STDOUT: &str = "-";

/// The human side of a command's output.
#[derive(Debug, Clone)]
pub struct Out {
    to_stderr: bool,
    tty: bool,
    json: Option<PathBuf>,
}

impl Out {
    /// Output for a command given `--json` = `json`.
    pub fn new(json: Option<&Path>) -> Out {
        let to_stderr = json.is_some_and(|p| p == Path::new(STDOUT));
        let tty = if to_stderr {
            std::io::stderr().is_terminal()
        } else {
            std::io::stdout().is_terminal()
        };
        Out {
            to_stderr,
            tty,
            json: json.map(Path::to_path_buf),
        }
    }

    /// Whether human output goes to stderr.
    pub fn to_stderr(&self) -> bool {
        self.to_stderr
    }

    /// Whether human output goes to a terminal (progress bar) or a pipe or file (plain lines).
    pub fn is_tty(&self) -> bool {
        self.tty
    }

    /// Print one line for a person.
    pub fn line(&self, s: &str) {
        if self.to_stderr {
            eprintln!("{s}");
        } else {
            println!("{s}");
            let _ = std::io::stdout().flush();
        }
    }

    /// Write the report where `--json` said, if it said; an error names the file.
    pub fn write_json<T: Serialize>(&self, report: &T) -> Result<(), String> {
        let Some(dest) = &self.json else {
            return Ok(());
        };
        let text = serde_json::to_string_pretty(report)
            .map_err(|e| format!("cannot encode the JSON report: {e}"))?;
        if dest == Path::new(STDOUT) {
            let mut out = std::io::stdout().lock();
            writeln!(out, "{text}")
                .and_then(|()| out.flush())
                .map_err(|e| format!("cannot write the JSON report to stdout: {e}"))
        } else {
            std::fs::write(dest, text + "\n")
                .map_err(|e| format!("cannot write the JSON report to {}: {e}", dest.display()))
        }
    }
}
