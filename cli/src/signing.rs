//! Signed links on the command line: the `--signing-key FILE` / `--require-signed` options,
//! flattened into `fly`, `run`, `watch`, `bridge` and `serve` (`sim` has its own).
//!
//! A key file holds 32 raw bytes, or 64 hex digits, or else a passphrase (its SHA-256 is the
//! key, as QGroundControl and MAVProxy derive it). No key ever shows in a message or report.

use nexus_host::signing::{load_key, Signing, SigningKey};
use std::path::PathBuf;

/// `--signing-key` and `--require-signed`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct SigningArgs {
    /// Sign every frame sent with the key in FILE (32 raw bytes, 64 hex digits, or a
    /// passphrase hashed with SHA-256) and verify signed frames received. The built-in vehicle
    /// gets the key too, in PX4's "always" mode.
    #[arg(long, value_name = "FILE")]
    pub signing_key: Option<PathBuf>,
    /// Apply only frames from the vehicle signed with the key: unsigned, badly signed,
    /// replayed and stale frames are counted and reported (`ignored.signing`), never applied.
    #[arg(long, requires = "signing_key")]
    pub require_signed: bool,
}

impl SigningArgs {
    /// The key file, as an input no output may overwrite ([`crate::output::distinct`]).
    pub fn named(&self) -> Option<crate::output::Named<'_>> {
        self.signing_key
            .as_deref()
            .map(|p| crate::output::Named::input("--signing-key", p))
    }

    /// The key, read from its file (`None` without `--signing-key`).
    pub fn key(&self) -> Result<Option<SigningKey>, String> {
        self.signing_key
            .as_deref()
            .map(|p| load_key(p).map_err(|e| format!("--signing-key: {e}")))
            .transpose()
    }

    /// The links' signing (`None` without `--signing-key`).
    pub fn signing(&self) -> Result<Option<Signing>, String> {
        Ok(self
            .key()?
            .map(|k| Signing::new(k).require_signed(self.require_signed)))
    }

    /// `opts` with these options applied.
    pub fn apply(
        &self,
        opts: nexus_host::run::RunOptions,
    ) -> Result<nexus_host::run::RunOptions, String> {
        Ok(match self.signing()? {
            Some(s) => opts.signing(s),
            None => opts,
        })
    }
}
