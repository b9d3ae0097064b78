//! Signed links: MAVLink 2 message signing on a pump link, the watch driver and the bridge.
//!
//! A link given a [`Signing`] signs every frame it sends (its own timestamp: the wall clock
//! when the link opened plus the pump's clock, always increasing) and verifies every signed
//! frame it receives ([`nexus_core::frame::signing::Verifier`]). With
//! [`Signing::require_signed`], an unsigned or badly signed frame, a replay and a stale
//! timestamp are never applied: they are counted by cause ([`SigningStats`]) and reported as
//! foreign frames are. Without it, unsigned frames are applied and badly signed ones are not.
//!
//! Keys come from a file ([`load_key`]): 32 raw bytes, or 64 hex digits, or else a passphrase
//! whose SHA-256 is the key (as QGroundControl and MAVProxy derive it). A key never shows: its
//! `Debug` is redacted and no error message quotes the file's contents.

use std::path::{Path, PathBuf};

pub use nexus_core::frame::signing::{
    Rejection, SigningClock, SigningKey, SigningStats, Verdict, VerifyPolicy, HOST_STREAMS,
    PX4_UNSIGNED,
};
use nexus_core::frame::signing::{Signer, Verifier};
use nexus_core::frame::RawFrame;
use nexus_core::Instant;

/// A key file could not be read.
#[derive(Debug, thiserror::Error)]
#[error("signing key {}: {why}", path.display())]
pub struct KeyError {
    /// The file.
    pub path: PathBuf,
    /// Why, in words (never the file's contents).
    pub why: String,
}

/// The key in `bytes` (a key file's contents): 32 raw bytes; 64 hex digits (surrounding
/// whitespace allowed); else a passphrase (trailing newline dropped) hashed with SHA-256.
pub fn parse_key(bytes: &[u8]) -> Result<SigningKey, &'static str> {
    if bytes.len() == 32 {
        let mut k = [0u8; 32];
        k.copy_from_slice(bytes);
        return Ok(SigningKey::new(k));
    }
    let Ok(text) = std::str::from_utf8(bytes) else {
        return Err("neither 32 raw bytes, nor 64 hex digits, nor a text passphrase");
    };
    let t = text.trim();
    if t.len() == 64 && t.bytes().all(|b| b.is_ascii_hexdigit()) {
        let mut k = [0u8; 32];
        for (i, out) in k.iter_mut().enumerate() {
            *out = u8::from_str_radix(&t[2 * i..2 * i + 2], 16).unwrap_or(0);
        }
        return Ok(SigningKey::new(k));
    }
    let pass = text.trim_end_matches(['\r', '\n']);
    if pass.is_empty() {
        return Err("empty: no key and no passphrase");
    }
    Ok(SigningKey::from_passphrase(pass))
}

/// Read the key file `path` (see [`parse_key`]).
pub fn load_key(path: &Path) -> Result<SigningKey, KeyError> {
    let err = |why: String| KeyError {
        path: path.to_owned(),
        why,
    };
    let bytes = std::fs::read(path).map_err(|e| err(e.kind().to_string()))?;
    parse_key(&bytes).map_err(|w| err(w.to_owned()))
}

/// How a link signs and verifies.
#[derive(Debug, Clone, PartialEq)]
pub struct Signing {
    /// The shared secret.
    pub key: SigningKey,
    /// Apply only frames signed with `key` (except `unsigned_ids`).
    pub require_signed: bool,
    /// Message ids applied unsigned even with `require_signed` (none by default).
    pub unsigned_ids: &'static [u32],
    /// The link id our signatures carry.
    pub link_id: u8,
    /// Sign what the link sends (on by default; a verifying-only bridge side turns it off).
    pub sign_outgoing: bool,
}

impl Signing {
    /// Sign with `key` and verify signed frames; unsigned frames applied.
    pub fn new(key: SigningKey) -> Self {
        Signing {
            key,
            require_signed: false,
            unsigned_ids: &[],
            link_id: 0,
            sign_outgoing: true,
        }
    }

    /// Apply only signed frames.
    pub fn require_signed(mut self, on: bool) -> Self {
        self.require_signed = on;
        self
    }

    fn policy(&self) -> VerifyPolicy {
        VerifyPolicy {
            require_signed: self.require_signed,
            unsigned_ids: self.unsigned_ids,
        }
    }
}

/// The wall clock now, as a signing clock whose zero is `at` (an `Instant::ZERO` of a driver
/// that started `elapsed` ago).
pub fn wall_clock(elapsed: std::time::Duration) -> SigningClock {
    let unix = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64);
    SigningClock::from_unix_micros(unix.saturating_sub(elapsed.as_micros() as u64))
}

/// One link's signer and verifier.
#[derive(Debug, Clone)]
pub struct LinkSigning {
    signer: Option<Signer>,
    verifier: Verifier<HOST_STREAMS>,
    clock: SigningClock,
    /// The latest driver time seen (a caller without a clock signs at it).
    latest: Instant,
    /// Frames we could not sign (not MAVLink 2, or an id outside the dialect): sent unsigned.
    pub sign_failures: u64,
}

impl LinkSigning {
    /// `signing` on a driver whose clock reads `now` at this moment.
    pub fn new(signing: &Signing, now: Instant) -> Self {
        let clock = wall_clock(std::time::Duration::from_micros(now.total_micros()));
        LinkSigning {
            signer: signing
                .sign_outgoing
                .then(|| Signer::new(signing.key.clone(), signing.link_id, clock)),
            verifier: Verifier::new(signing.key.clone(), signing.policy()),
            clock,
            latest: now,
            sign_failures: 0,
        }
    }

    /// Judge a received frame at `now`; counted in [`LinkSigning::stats`].
    pub fn check(&mut self, now: Instant, frame: &RawFrame<'_>) -> Verdict {
        self.latest = self.latest.max(now);
        self.verifier.check(frame, self.clock.at(now))
    }

    /// Sign `buf[..len]` in place (it must have room: `MAX_FRAME_LEN`); the new length. A
    /// frame that cannot be signed (or a link that does not sign) keeps its length. A `now`
    /// older than the latest seen (`Instant::ZERO` from a caller without a clock) signs at the
    /// latest.
    pub fn sign(&mut self, now: Instant, buf: &mut [u8], len: usize) -> usize {
        self.latest = self.latest.max(now);
        let now = self.latest;
        let Some(s) = &mut self.signer else {
            return len;
        };
        match s.sign(now, buf, len) {
            Ok(n) => n,
            Err(_) => {
                self.sign_failures += 1;
                len
            }
        }
    }

    /// The verifier's counters.
    pub fn stats(&self) -> SigningStats {
        self.verifier.stats()
    }
}

/// The built-in vehicle of a signed run: the run's key, PX4's "always" mode (unless its
/// configuration already sets up signing).
pub fn give_vehicle(v: &mut crate::sim::VehicleConfig, signing: Option<&Signing>) {
    if let (Some(s), None) = (signing, &v.signing) {
        v.signing = Some(crate::sim::signing::SigningConfig {
            key: Some(s.key.clone()),
            mode: crate::sim::signing::SignMode::Always,
            ..Default::default()
        });
    }
}

/// One line on rejected frames ("ignored 3 frames failing the signing check: 1 unsigned, 2
/// bad signature"), `None` when none was rejected.
pub fn rejected_line(s: &SigningStats) -> Option<String> {
    if s.rejected() == 0 {
        return None;
    }
    let parts: Vec<String> = [
        (s.unsigned, "unsigned"),
        (s.bad_signature, "bad signature"),
        (s.replay, "replayed or old timestamp"),
        (s.stale, "stale timestamp"),
        (s.streams_full, "stream table full"),
    ]
    .iter()
    .filter(|(n, _)| *n > 0)
    .map(|(n, what)| format!("{n} {what}"))
    .collect();
    Some(format!(
        "ignored {} frames failing the signing check: {}",
        s.rejected(),
        parts.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_files_in_three_forms() {
        let raw = [5u8; 32];
        assert_eq!(parse_key(&raw).unwrap(), SigningKey::new(raw));
        let hex = "05".repeat(32) + "\n";
        assert_eq!(parse_key(hex.as_bytes()).unwrap(), SigningKey::new(raw));
        assert_eq!(
            parse_key(b"secret phrase\n").unwrap(),
            SigningKey::from_passphrase("secret phrase")
        );
        assert!(parse_key(b"\n").is_err());
    }

    #[test]
    fn errors_and_debug_never_show_the_key() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("k");
        std::fs::write(&p, "05".repeat(32)).unwrap();
        let s = Signing::new(load_key(&p).unwrap());
        let dbg = format!("{s:?} {:?}", LinkSigning::new(&s, Instant::ZERO));
        assert!(!dbg.contains("5, 5"), "{dbg}");
        let e = load_key(&dir.path().join("missing"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("missing") && e.contains("signing key"), "{e}");
    }
}
