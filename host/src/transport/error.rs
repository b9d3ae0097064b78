//! Why a link could not be opened, worded for the person who typed the connection string.

use std::fmt;
use std::io;

use super::ConnString;

/// A link that could not be opened: which connection string, what the link tried, and the OS
/// error, e.g. `udpin:0.0.0.0:14540 — cannot bind UDP 0.0.0.0:14540 (another program already
/// listens on this port): Address already in use (os error 98)`.
#[derive(Debug)]
pub struct OpenError {
    conn: ConnString,
    what: String,
    source: io::Error,
}

impl OpenError {
    /// The error of `conn` failing at `what` (a hint for common OS errors is appended); public
    /// for programs that run their own loop around a [`super::Link`] (`nexus watch`'s driver).
    pub fn new(conn: &ConnString, what: impl Into<String>, source: io::Error) -> Self {
        let mut what = what.into();
        if let Some(hint) = hint(source.kind()) {
            what.push_str(" (");
            what.push_str(hint);
            what.push(')');
        }
        OpenError {
            conn: conn.clone(),
            what,
            source,
        }
    }

    /// The connection string that failed.
    pub fn conn(&self) -> &ConnString {
        &self.conn
    }

    /// The OS error's kind, for callers that react to it (e.g. `AddrInUse`).
    pub fn kind(&self) -> io::ErrorKind {
        self.source.kind()
    }
}

fn hint(kind: io::ErrorKind) -> Option<&'static str> {
    match kind {
        io::ErrorKind::AddrInUse => Some("another program already listens on this port"),
        io::ErrorKind::ConnectionRefused => Some("nothing listens there"),
        io::ErrorKind::TimedOut => Some("no answer"),
        io::ErrorKind::PermissionDenied => Some(
            "permission denied: check the user's groups (e.g. dialout) or use a port above 1023",
        ),
        _ => None,
    }
}

impl fmt::Display for OpenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} — {}: {}", self.conn, self.what, self.source)
    }
}

impl std::error::Error for OpenError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.source)
    }
}

/// Either half of [`super::Link::open_str`]: the string did not parse, or the link did not open.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive] // more variants may come; match with a `_` arm
pub enum LinkError {
    /// The connection string is malformed.
    #[error(transparent)]
    Parse(#[from] super::ConnStringError),
    /// The connection string is fine but the link could not be opened.
    #[error(transparent)]
    Open(#[from] OpenError),
}
