//! MAVLink 2 message signing: verifying incoming signatures ([`Verifier`]) and signing
//! outgoing frames ([`Signer`]), fixed capacity and allocation-free (the `signing` feature).
//!
//! A signed frame has the incompatibility flag 0x01 set and 13 bytes after its checksum: the
//! link id (u8), a 48-bit timestamp (10 µs units since 2015-01-01 00:00 GMT, little-endian) and
//! the first 48 bits of SHA-256(secret key (32) + header + payload + checksum + link id +
//! timestamp). The checksum covers the incompatibility flags, so signing an encoded frame
//! recomputes it.
//!
//! **Timestamps** (the MAVLink signing spec). Every (system, component, link id) is a stream
//! whose timestamps must increase: a frame whose timestamp is not above its stream's last is a
//! replay ([`Rejection::Replay`]). A stream's first frame is accepted unless its timestamp is
//! more than [`NEW_STREAM_WINDOW`] (one minute) behind the local timestamp, the greater of our
//! own clock and the newest timestamp accepted so far ([`Rejection::Stale`]). The stream table
//! holds `STREAMS` entries; a new stream past them is rejected ([`Rejection::StreamsFull`]),
//! counted, never a panic.
//!
//! A signature is checked before its timestamp is believed, so a forged frame moves no stream.
//! Unsigned frames are rejected when signing is required, except the message ids the
//! configuration lets through unsigned (PX4 lets RADIO_STATUS, ADSB_VEHICLE and COLLISION
//! through: [`PX4_UNSIGNED`]).
//!
//! Keys never show: [`SigningKey`]'s `Debug` is redacted.

use super::crc::frame_crc;
use super::crc_extra::crc_extra;
use super::decoder::{RawFrame, Version, MAGIC_V2, MAX_FRAME_LEN};
use crate::Instant;
use sha2::{Digest, Sha256};

/// Bytes a signature adds to a frame: link id, timestamp, signature.
pub const SIGNATURE_LEN: usize = 13;
/// The incompatibility flag of a signed frame.
pub const INCOMPAT_SIGNED: u8 = 0x01;
/// The signing epoch, 2015-01-01 00:00 GMT, in seconds since the Unix epoch.
pub const SIGNING_EPOCH_UNIX_S: u64 = 1_420_070_400;
/// How far behind the local timestamp a new stream's first frame may be: one minute, in 10 µs
/// units.
pub const NEW_STREAM_WINDOW: u64 = 6_000_000;
/// The largest 48-bit timestamp.
pub const MAX_TIMESTAMP: u64 = (1 << 48) - 1;
/// Streams a host verifier follows (its `STREAMS`): far more senders than one vehicle link has.
pub const HOST_STREAMS: usize = 16;

/// Message ids PX4 accepts unsigned whatever its signing mode (`mavlink_sign_control.cpp`):
/// RADIO_STATUS (109), ADSB_VEHICLE (246), COLLISION (247).
pub const PX4_UNSIGNED: &[u32] = &[109, 246, 247];

/// A 32-byte signing secret. Its `Debug` never shows the bytes.
#[derive(Clone, PartialEq, Eq)]
pub struct SigningKey([u8; 32]);

impl core::fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("SigningKey(<redacted>)")
    }
}

impl SigningKey {
    /// A key of these bytes.
    pub const fn new(bytes: [u8; 32]) -> Self {
        SigningKey(bytes)
    }

    /// The key QGroundControl and MAVProxy derive from a passphrase: its SHA-256.
    pub fn from_passphrase(passphrase: &str) -> Self {
        SigningKey(Sha256::digest(passphrase.as_bytes()).into())
    }

    /// The secret bytes (what SETUP_SIGNING carries).
    pub fn bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// All zero: PX4's "no key" (SETUP_SIGNING with a zero key and timestamp clears it).
    pub fn is_zero(&self) -> bool {
        self.0.iter().all(|&b| b == 0)
    }
}

/// The first 48 bits of SHA-256(key + `frame` + link id + timestamp), `frame` being the signed
/// frame up to and including its checksum.
pub fn signature(key: &SigningKey, frame: &[u8], link_id: u8, timestamp: u64) -> [u8; 6] {
    let mut h = Sha256::new();
    h.update(key.0);
    h.update(frame);
    h.update([link_id]);
    h.update(&timestamp.to_le_bytes()[..6]);
    let d = h.finalize();
    let mut out = [0u8; 6];
    out.copy_from_slice(&d[..6]);
    out
}

/// Signing time: a wall-clock base (the signing timestamp at the driver's [`Instant::ZERO`])
/// plus the driver's clock. A driver without a wall clock may start at 0 (and should persist the
/// last timestamp it used).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct SigningClock {
    /// The signing timestamp (10 µs since 2015-01-01) at the driver's `Instant::ZERO`.
    pub base: u64,
}

impl SigningClock {
    /// A clock whose `Instant::ZERO` is `unix_us` µs after the Unix epoch.
    pub const fn from_unix_micros(unix_us: u64) -> Self {
        SigningClock {
            base: (unix_us / 10).saturating_sub(SIGNING_EPOCH_UNIX_S * 100_000),
        }
    }

    /// The signing timestamp at `now`.
    pub const fn at(&self, now: Instant) -> u64 {
        let t = self.base.saturating_add(now.total_micros() / 10);
        if t > MAX_TIMESTAMP {
            MAX_TIMESTAMP
        } else {
            t
        }
    }
}

/// Why a frame could not be signed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum SignError {
    /// Not a MAVLink 2 frame, or shorter than its header says.
    NotV2,
    /// Already signed (or another incompatibility flag is set).
    AlreadySigned,
    /// A message id outside the common dialect: its checksum cannot be recomputed.
    UnknownId,
    /// The buffer has no room for the 13 signature bytes.
    NoRoom,
}

impl core::fmt::Display for SignError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            SignError::NotV2 => "not a whole MAVLink 2 frame",
            SignError::AlreadySigned => "the frame is already signed",
            SignError::UnknownId => "a message outside the common dialect",
            SignError::NoRoom => "no room for the signature",
        })
    }
}

impl core::error::Error for SignError {}

/// Signs outgoing frames with one key and link id, each with its own increasing timestamp.
#[derive(Debug, Clone)]
pub struct Signer {
    key: SigningKey,
    link_id: u8,
    last: u64,
    clock: SigningClock,
}

impl Signer {
    /// A signer for `link_id`, its timestamps from `clock`.
    pub fn new(key: SigningKey, link_id: u8, clock: SigningClock) -> Self {
        Signer {
            key,
            link_id,
            last: 0,
            clock,
        }
    }

    /// Never sign at or below `timestamp` (one persisted from an earlier run).
    pub fn resume_after(&mut self, timestamp: u64) {
        self.last = self.last.max(timestamp);
    }

    /// The last timestamp signed with (what a driver persists).
    pub fn last_timestamp(&self) -> u64 {
        self.last
    }

    /// The link id frames are signed with.
    pub fn link_id(&self) -> u8 {
        self.link_id
    }

    /// The next timestamp at `now`: our clock, and always above the last one used.
    fn next_timestamp(&mut self, now: Instant) -> u64 {
        let t = self.clock.at(now).max(self.last.saturating_add(1));
        self.last = t.min(MAX_TIMESTAMP);
        self.last
    }

    /// Sign the unsigned MAVLink 2 frame `buf[..len]` in place: set the flag, recompute the
    /// checksum, append the signature. Returns the new length (`len + 13`); `buf` must have
    /// room ([`MAX_FRAME_LEN`] always does).
    pub fn sign(&mut self, now: Instant, buf: &mut [u8], len: usize) -> Result<usize, SignError> {
        if len < 12 || buf[0] != MAGIC_V2 || len != 12 + buf[1] as usize {
            return Err(SignError::NotV2);
        }
        if buf[2] != 0 {
            return Err(SignError::AlreadySigned);
        }
        if buf.len() < len + SIGNATURE_LEN || len + SIGNATURE_LEN > MAX_FRAME_LEN {
            return Err(SignError::NoRoom);
        }
        let msgid = u32::from_le_bytes([buf[7], buf[8], buf[9], 0]);
        let extra = crc_extra(msgid).ok_or(SignError::UnknownId)?;
        buf[2] = INCOMPAT_SIGNED;
        let body = len - 2;
        let crc = frame_crc(&buf[1..body], extra);
        buf[body..len].copy_from_slice(&crc.to_le_bytes());
        let ts = self.next_timestamp(now);
        let sig = signature(&self.key, &buf[..len], self.link_id, ts);
        buf[len] = self.link_id;
        buf[len + 1..len + 7].copy_from_slice(&ts.to_le_bytes()[..6]);
        buf[len + 7..len + SIGNATURE_LEN].copy_from_slice(&sig);
        Ok(len + SIGNATURE_LEN)
    }
}

/// Why an incoming frame was rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Rejection {
    /// Unsigned (or MAVLink 1), signing required, and not an id let through unsigned.
    Unsigned,
    /// Signed, but not with our key (or altered on the way).
    BadSignature,
    /// Its timestamp is not above its stream's last: a replay or an old frame.
    Replay,
    /// A new stream's first timestamp is more than [`NEW_STREAM_WINDOW`] behind ours.
    Stale,
    /// A new stream when the stream table is full.
    StreamsFull,
}

impl Rejection {
    /// A short name, for reports ("unsigned", "bad_signature", "replay", "stale",
    /// "streams_full").
    pub fn name(self) -> &'static str {
        match self {
            Rejection::Unsigned => "unsigned",
            Rejection::BadSignature => "bad_signature",
            Rejection::Replay => "replay",
            Rejection::Stale => "stale",
            Rejection::StreamsFull => "streams_full",
        }
    }
}

/// What the verifier made of a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Verdict {
    /// Signed with our key, its timestamp new: apply it.
    Signed,
    /// Unsigned, and allowed (signing optional, or an id let through unsigned).
    Unsigned,
    /// Not to be applied.
    Rejected(Rejection),
}

impl Verdict {
    /// Whether the frame may be applied.
    pub fn accepted(self) -> bool {
        !matches!(self, Verdict::Rejected(_))
    }
}

/// The verifier's counters, by verdict and cause.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct SigningStats {
    /// Signed frames accepted.
    pub signed: u32,
    /// Unsigned frames accepted.
    pub unsigned_accepted: u32,
    /// Rejected: unsigned.
    pub unsigned: u32,
    /// Rejected: a signature not of our key.
    pub bad_signature: u32,
    /// Rejected: a timestamp not above its stream's last.
    pub replay: u32,
    /// Rejected: a new stream's timestamp too far behind ours.
    pub stale: u32,
    /// Rejected: the stream table was full.
    pub streams_full: u32,
}

impl SigningStats {
    /// Every rejected frame.
    pub fn rejected(&self) -> u32 {
        self.unsigned
            .saturating_add(self.bad_signature)
            .saturating_add(self.replay)
            .saturating_add(self.stale)
            .saturating_add(self.streams_full)
    }

    fn count(&mut self, v: Verdict) {
        let c = match v {
            Verdict::Signed => &mut self.signed,
            Verdict::Unsigned => &mut self.unsigned_accepted,
            Verdict::Rejected(Rejection::Unsigned) => &mut self.unsigned,
            Verdict::Rejected(Rejection::BadSignature) => &mut self.bad_signature,
            Verdict::Rejected(Rejection::Replay) => &mut self.replay,
            Verdict::Rejected(Rejection::Stale) => &mut self.stale,
            Verdict::Rejected(Rejection::StreamsFull) => &mut self.streams_full,
        };
        *c = c.saturating_add(1);
    }
}

/// Which unsigned frames a verifier lets through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct VerifyPolicy {
    /// Reject unsigned frames (except `unsigned_ids`). `false`: signing optional, unsigned
    /// frames accepted, badly signed ones still rejected.
    pub require_signed: bool,
    /// Message ids accepted unsigned even when signing is required.
    pub unsigned_ids: &'static [u32],
}

impl VerifyPolicy {
    /// Unsigned frames accepted; signed ones verified.
    pub const OPTIONAL: VerifyPolicy = VerifyPolicy {
        require_signed: false,
        unsigned_ids: &[],
    };
    /// Every frame signed; no exception.
    pub const STRICT: VerifyPolicy = VerifyPolicy {
        require_signed: true,
        unsigned_ids: &[],
    };
    /// PX4's "always": signed, except [`PX4_UNSIGNED`].
    pub const PX4_ALWAYS: VerifyPolicy = VerifyPolicy {
        require_signed: true,
        unsigned_ids: PX4_UNSIGNED,
    };
}

#[derive(Debug, Clone, Copy)]
struct Stream {
    sysid: u8,
    compid: u8,
    link_id: u8,
    last: u64,
}

/// Checks incoming frames against one key, following up to `STREAMS` (system, component,
/// link id) streams' timestamps.
#[derive(Debug, Clone)]
pub struct Verifier<const STREAMS: usize> {
    key: SigningKey,
    policy: VerifyPolicy,
    streams: [Option<Stream>; STREAMS],
    local: u64,
    stats: SigningStats,
}

impl<const STREAMS: usize> Verifier<STREAMS> {
    /// A verifier of `key` under `policy`, its stream table empty.
    pub fn new(key: SigningKey, policy: VerifyPolicy) -> Self {
        Verifier {
            key,
            policy,
            streams: [None; STREAMS],
            local: 0,
            stats: SigningStats::default(),
        }
    }

    /// The policy.
    pub fn policy(&self) -> VerifyPolicy {
        self.policy
    }

    /// Change the policy (the stream table is kept).
    pub fn set_policy(&mut self, policy: VerifyPolicy) {
        self.policy = policy;
    }

    /// Counters since creation.
    pub fn stats(&self) -> SigningStats {
        self.stats
    }

    /// The local timestamp: the greatest of our clock's readings and the timestamps accepted.
    pub fn local_timestamp(&self) -> u64 {
        self.local
    }

    /// Judge `frame` (one the decoder checked) at our signing time `now_ts` (a
    /// [`SigningClock`] reading), counting the verdict. A signed frame's stream advances only
    /// when it is accepted.
    pub fn check(&mut self, frame: &RawFrame<'_>, now_ts: u64) -> Verdict {
        let v = self.judge(frame, now_ts);
        self.stats.count(v);
        v
    }

    fn judge(&mut self, frame: &RawFrame<'_>, now_ts: u64) -> Verdict {
        self.local = self.local.max(now_ts);
        let h = &frame.header;
        let b = frame.bytes;
        if h.version != Version::V2 || !h.signed || b.len() < 12 + SIGNATURE_LEN {
            return if !self.policy.require_signed || self.policy.unsigned_ids.contains(&h.msgid) {
                Verdict::Unsigned
            } else {
                Verdict::Rejected(Rejection::Unsigned)
            };
        }
        let (body, sig) = b.split_at(b.len() - SIGNATURE_LEN);
        let link_id = sig[0];
        let mut ts = [0u8; 8];
        ts[..6].copy_from_slice(&sig[1..7]);
        let ts = u64::from_le_bytes(ts);
        if signature(&self.key, body, link_id, ts) != sig[7..] {
            return Verdict::Rejected(Rejection::BadSignature);
        }
        let found = self
            .streams
            .iter_mut()
            .flatten()
            .find(|s| s.sysid == h.sysid && s.compid == h.compid && s.link_id == link_id);
        match found {
            Some(s) => {
                if ts <= s.last {
                    return Verdict::Rejected(Rejection::Replay);
                }
                s.last = ts;
            }
            None => {
                if ts.saturating_add(NEW_STREAM_WINDOW) < self.local {
                    return Verdict::Rejected(Rejection::Stale);
                }
                let Some(slot) = self.streams.iter_mut().find(|s| s.is_none()) else {
                    return Verdict::Rejected(Rejection::StreamsFull);
                };
                *slot = Some(Stream {
                    sysid: h.sysid,
                    compid: h.compid,
                    link_id,
                    last: ts,
                });
            }
        }
        self.local = self.local.max(ts);
        Verdict::Signed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::{Decoder, Encoder};
    use crate::mav;
    extern crate std;
    use std::vec::Vec;

    fn key() -> SigningKey {
        SigningKey::new([7; 32])
    }

    fn heartbeat(enc: &mut Encoder) -> Vec<u8> {
        let mut buf = [0u8; MAX_FRAME_LEN];
        let n = enc
            .encode(&mav::HEARTBEAT_DATA::default(), &mut buf)
            .unwrap();
        buf[..n].to_vec()
    }

    fn signed(signer: &mut Signer, enc: &mut Encoder, now_ms: u64) -> Vec<u8> {
        let mut buf = [0u8; MAX_FRAME_LEN];
        let f = heartbeat(enc);
        buf[..f.len()].copy_from_slice(&f);
        let n = signer
            .sign(Instant::from_millis(now_ms), &mut buf, f.len())
            .unwrap();
        buf[..n].to_vec()
    }

    fn judge(v: &mut Verifier<2>, bytes: &[u8], now_ts: u64) -> Verdict {
        let mut d = Decoder::new();
        let (_, raw) = d.feed(bytes);
        let raw = raw.expect("a checked frame");
        v.check(&raw, now_ts)
    }

    #[test]
    fn debug_redacts_the_key() {
        let s = std::format!("{:?}", Signer::new(key(), 1, SigningClock::default()));
        assert!(!s.contains("7, 7"), "{s}");
        assert!(s.contains("redacted"));
    }

    #[test]
    fn passphrase_is_its_sha256() {
        // SHA-256("abc"), FIPS 180-2's example.
        let k = SigningKey::from_passphrase("abc");
        assert_eq!(k.bytes()[..4], [0xba, 0x78, 0x16, 0xbf]);
    }

    #[test]
    fn signed_frames_decode_and_verify_and_replays_do_not() {
        let mut enc = Encoder::new(1, 1);
        let mut signer = Signer::new(
            key(),
            3,
            SigningClock {
                base: 1_000_000_000,
            },
        );
        let mut v: Verifier<2> = Verifier::new(key(), VerifyPolicy::STRICT);
        let a = signed(&mut signer, &mut enc, 0);
        let b = signed(&mut signer, &mut enc, 0);
        assert_eq!(a.len(), 12 + 9 + 13);
        assert_eq!(judge(&mut v, &a, 1_000_000_000), Verdict::Signed);
        assert_eq!(
            judge(&mut v, &b, 1_000_000_000),
            Verdict::Signed,
            "same instant, +1"
        );
        assert_eq!(
            judge(&mut v, &a, 1_000_000_000),
            Verdict::Rejected(Rejection::Replay)
        );
        let unsigned = heartbeat(&mut enc);
        assert_eq!(
            judge(&mut v, &unsigned, 1_000_000_000),
            Verdict::Rejected(Rejection::Unsigned)
        );
        let mut other = Signer::new(SigningKey::new([8; 32]), 3, SigningClock::default());
        let c = signed(&mut other, &mut enc, 5);
        assert_eq!(
            judge(&mut v, &c, 1_000_000_000),
            Verdict::Rejected(Rejection::BadSignature)
        );
        let s = v.stats();
        assert_eq!(
            (s.signed, s.replay, s.unsigned, s.bad_signature),
            (2, 1, 1, 1)
        );
        assert_eq!(s.rejected(), 3);
    }

    #[test]
    fn stale_new_streams_and_a_full_table_are_rejected() {
        let mut v: Verifier<2> = Verifier::new(key(), VerifyPolicy::PX4_ALWAYS);
        let now = 10 * NEW_STREAM_WINDOW;
        let mut old = Signer::new(
            key(),
            0,
            SigningClock {
                base: now - NEW_STREAM_WINDOW - 1,
            },
        );
        let f = signed(&mut old, &mut Encoder::new(1, 1), 0);
        assert_eq!(judge(&mut v, &f, now), Verdict::Rejected(Rejection::Stale));
        let mut fresh = Signer::new(key(), 0, SigningClock { base: now });
        for (i, want) in [
            Verdict::Signed,
            Verdict::Signed,
            Verdict::Rejected(Rejection::StreamsFull),
        ]
        .into_iter()
        .enumerate()
        {
            let f = signed(&mut fresh, &mut Encoder::new(1, i as u8), 0);
            assert_eq!(judge(&mut v, &f, now), want, "stream {i}");
        }
        // RADIO_STATUS passes unsigned under PX4's "always".
        let mut buf = [0u8; MAX_FRAME_LEN];
        let n = Encoder::new(3, 68)
            .encode(&mav::RADIO_STATUS_DATA::default(), &mut buf)
            .unwrap();
        assert_eq!(judge(&mut v, &buf[..n], now), Verdict::Unsigned);
    }

    #[test]
    fn signing_refuses_what_it_cannot_sign() {
        let mut s = Signer::new(key(), 0, SigningClock::default());
        let mut enc = Encoder::new(1, 1);
        let f = heartbeat(&mut enc);
        let mut short = f.clone();
        assert_eq!(
            s.sign(Instant::ZERO, &mut short, f.len()),
            Err(SignError::NoRoom)
        );
        let mut buf = [0u8; MAX_FRAME_LEN];
        buf[..f.len()].copy_from_slice(&f);
        let n = s.sign(Instant::ZERO, &mut buf, f.len()).unwrap();
        assert_eq!(
            s.sign(Instant::ZERO, &mut buf, n - SIGNATURE_LEN),
            Err(SignError::AlreadySigned)
        );
    }

    #[test]
    fn clock_counts_from_2015() {
        let c = SigningClock::from_unix_micros(SIGNING_EPOCH_UNIX_S * 1_000_000 + 1_000);
        assert_eq!(c.at(Instant::from_millis(1)), 200);
    }
}
