//! MAVLink 2 signing on the simulated vehicle, as PX4 main does it
//! (`src/modules/mavlink/mavlink_sign_control.cpp`, 2026):
//!
//! * the key lives in a file of 32 key bytes and an 8-byte timestamp (little-endian), PX4's
//!   `mavlink/.secret` ([`SigningConfig::key_file`]); read at boot, rewritten by every
//!   SETUP_SIGNING. A zero key and timestamp mean "no key".
//! * SETUP_SIGNING (256) installs (or, all zero, clears) the key; it is a frame like any other,
//!   so once a key is set under "always" it must itself be signed.
//! * the mode is PX4's `MAV_SIGN_CFG` ([`SignMode`]): 0 optional (everything accepted), 1 all
//!   but USB, 2 always. Whatever the mode, RADIO_STATUS, ADSB_VEHICLE and COLLISION are
//!   accepted unsigned; without a key, only a USB link takes unsigned frames (so a key can be
//!   provisioned there). As in the MAVLink C library PX4 uses, a frame that fails the
//!   signature check is still accepted where an unsigned one would be.
//! * with a key, every frame sent is signed (link id 0, timestamps from the wall clock, always
//!   above the stored one).
//!
//! The simulated link is UDP (not USB) unless [`SigningConfig::usb`] says otherwise.
//!
//! PX4 main has since moved on (its `mavlink_sign_control.cpp` with `MavlinkSigningStorage`,
//! and docs.px4.io/main "MAVLink Message Signing"): there is no `MAV_SIGN_CFG` any more, a
//! provisioned key turns signing on for every link (USB too), HEARTBEAT joins the messages
//! accepted unsigned, and a SETUP_SIGNING that clears the key must itself be signed. So the
//! mode stays a start-up option here (`nexus sim --sign-mode`), not a parameter the vehicle
//! lists; [`SignMode::Always`] is what a key means on PX4 main, but for HEARTBEAT.

use nexus_core::frame::signing::{
    Signer, SigningClock, SigningKey, SigningStats, Verdict, Verifier, VerifyPolicy, PX4_UNSIGNED,
};
use nexus_core::frame::RawFrame;
use nexus_core::Instant;
use std::path::PathBuf;

/// SETUP_SIGNING's message id.
pub const SETUP_SIGNING_ID: u32 = 256;

/// PX4's `MAV_SIGN_CFG`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum SignMode {
    /// 0: unsigned frames accepted (PX4's default).
    #[default]
    Optional,
    /// 1: unsigned frames accepted on USB only.
    NonUsb,
    /// 2: signed frames only (but PX4's few exceptions).
    Always,
}

impl SignMode {
    /// From `MAV_SIGN_CFG`'s value (anything above 2 is "always", as PX4's `default:`).
    pub fn from_param(v: i32) -> Self {
        match v {
            i32::MIN..=0 => SignMode::Optional,
            1 => SignMode::NonUsb,
            _ => SignMode::Always,
        }
    }
}

/// How the vehicle signs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SigningConfig {
    /// A key installed at boot (as if its key file held it).
    pub key: Option<SigningKey>,
    /// PX4's key file (32 key bytes + 8 timestamp bytes): read at boot when `key` is `None`,
    /// written on SETUP_SIGNING. `None`: keys live in memory only.
    pub key_file: Option<PathBuf>,
    /// `MAV_SIGN_CFG`.
    pub mode: SignMode,
    /// The link counts as USB (mode 1 accepts unsigned frames on it).
    pub usb: bool,
}

/// What the vehicle's signing did to incoming frames.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SimSigningStats {
    /// The verifier's verdicts (before PX4's accept-unsigned rule).
    pub verdicts: SigningStats,
    /// Frames dropped: neither validly signed nor acceptable unsigned.
    pub dropped: u32,
    /// SETUP_SIGNING messages applied.
    pub setups: u32,
}

/// The vehicle's signing state.
#[derive(Debug)]
pub struct SimSigning {
    cfg: SigningConfig,
    key: Option<SigningKey>,
    verifier: Verifier<16>,
    signer: Option<Signer>,
    stored_ts: u64,
    origin: std::time::Instant,
    clock: SigningClock,
    stats: SimSigningStats,
}

fn read_key_file(path: &std::path::Path) -> Option<(SigningKey, u64)> {
    let b = std::fs::read(path).ok()?;
    if b.len() < 40 {
        return None;
    }
    let mut k = [0u8; 32];
    k.copy_from_slice(&b[..32]);
    let mut t = [0u8; 8];
    t.copy_from_slice(&b[32..40]);
    Some((SigningKey::new(k), u64::from_le_bytes(t)))
}

impl SimSigning {
    /// Signing as `cfg` sets it up (reading the key file).
    pub fn new(cfg: SigningConfig) -> Self {
        let (key, ts) = match (&cfg.key, &cfg.key_file) {
            (Some(k), _) => (Some(k.clone()), 0),
            (None, Some(p)) => match read_key_file(p) {
                Some((k, ts)) if ts != 0 || !k.is_zero() => (Some(k), ts),
                _ => (None, 0),
            },
            (None, None) => (None, 0),
        };
        let origin = std::time::Instant::now();
        let clock = wall_clock();
        let mut s = SimSigning {
            verifier: Verifier::new(SigningKey::new([0; 32]), VerifyPolicy::STRICT),
            cfg,
            key: None,
            signer: None,
            stored_ts: 0,
            origin,
            clock,
            stats: SimSigningStats::default(),
        };
        s.install(key, ts);
        s
    }

    fn install(&mut self, key: Option<SigningKey>, ts: u64) {
        self.stored_ts = ts;
        let k = key.clone().unwrap_or(SigningKey::new([0; 32]));
        self.verifier = Verifier::new(k.clone(), VerifyPolicy::STRICT);
        self.signer = key.as_ref().map(|k| {
            let mut s = Signer::new(k.clone(), 0, self.clock);
            s.resume_after(ts);
            s
        });
        self.key = key;
    }

    /// Whether a key is installed.
    pub fn has_key(&self) -> bool {
        self.key.is_some()
    }

    /// The mode in force (`MAV_SIGN_CFG`).
    pub fn mode(&self) -> SignMode {
        self.cfg.mode
    }

    /// Change the mode.
    pub fn set_mode(&mut self, mode: SignMode) {
        self.cfg.mode = mode;
    }

    /// Counters since boot.
    pub fn stats(&self) -> SimSigningStats {
        self.stats
    }

    fn now(&self) -> Instant {
        Instant::from_micros(self.origin.elapsed().as_micros() as u64)
    }

    /// PX4's `accept_unsigned`.
    fn accept_unsigned(&self, msgid: u32) -> bool {
        if self.cfg.mode == SignMode::Optional || PX4_UNSIGNED.contains(&msgid) {
            return true;
        }
        if self.key.is_none() {
            return self.cfg.usb;
        }
        self.cfg.mode == SignMode::NonUsb && self.cfg.usb
    }

    /// Whether `frame` is taken in. A SETUP_SIGNING taken in is applied here (and not handed
    /// on: `false`).
    pub fn admit(&mut self, frame: &RawFrame<'_>) -> bool {
        let ts = self.clock.at(self.now());
        let v = self.verifier.check(frame, ts);
        self.stats.verdicts = self.verifier.stats();
        if v != Verdict::Signed && !self.accept_unsigned(frame.header.msgid) {
            self.stats.dropped = self.stats.dropped.saturating_add(1);
            return false;
        }
        if frame.header.msgid == SETUP_SIGNING_ID {
            self.setup(frame.payload);
            return false;
        }
        true
    }

    /// SETUP_SIGNING: the key and the initial timestamp (all zero: clear the key).
    fn setup(&mut self, payload: &[u8]) {
        use mavlink::MessageData as _;
        let Ok(m) = mavlink::dialects::common::SETUP_SIGNING_DATA::deser(
            mavlink::MavlinkVersion::V2,
            payload,
        ) else {
            return;
        };
        let ts = m.initial_timestamp;
        let key = SigningKey::new(m.secret_key);
        let cleared = ts == 0 && key.is_zero();
        self.install((!cleared).then_some(key.clone()), ts);
        self.stats.setups = self.stats.setups.saturating_add(1);
        if let Some(path) = &self.cfg.key_file {
            let mut b = Vec::with_capacity(40);
            b.extend_from_slice(key.bytes());
            b.extend_from_slice(&ts.to_le_bytes());
            let _ = write_private(path, &b);
        }
    }

    /// Sign `buf[..len]` when a key is installed; the new length.
    pub fn sign(&mut self, buf: &mut [u8], len: usize) -> usize {
        let now = self.now();
        match &mut self.signer {
            Some(s) => s.sign(now, buf, len).unwrap_or(len),
            None => len,
        }
    }
}

/// Write the key file readable by its owner only (PX4: mode 600).
fn write_private(path: &std::path::Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    #[cfg(unix)]
    use std::os::unix::fs::OpenOptionsExt;
    let mut o = std::fs::OpenOptions::new();
    o.write(true).create(true).truncate(true);
    #[cfg(unix)]
    o.mode(0o600);
    o.open(path)?.write_all(bytes)
}

/// The signing clock of the wall clock now.
fn wall_clock() -> SigningClock {
    let unix = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64);
    SigningClock::from_unix_micros(unix)
}
