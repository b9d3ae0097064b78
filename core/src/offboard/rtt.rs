//! The link's round-trip time, measured, and the retry timer that follows it.
//!
//! Fixed loopback retry intervals (1 s, 1.5 s) resend everything on a radio with a 2 s round
//! trip, and on a vehicle whose clock runs ×5 (a 400 ms wall round trip is 2 s of its time).
//! So the machine measures the round trip of its requests and waits for
//! `clamp(srtt + 4·rttvar, floor, ceiling)` before resending, RFC 6298's retransmission timer:
//!
//! * **Samples** are the time from a request to its answer, in the machine's timer clock (sim
//!   time once known, see [`super::clock`]): COMMAND_ACK for a mode or an arm;
//!   MISSION_COUNT for a MISSION_REQUEST_LIST; MISSION_ITEM_INT for a MISSION_REQUEST_INT;
//!   MISSION_REQUEST_INT (or the final MISSION_ACK) for a MISSION_COUNT or an item; MISSION_ACK
//!   for a MISSION_CLEAR_ALL. Karn's rule: a request that was sent more than once gives no
//!   sample (which send was answered is unknown).
//! * **Floor**: the configured interval (`command_retry_s`, `mission_retry_s`), so a fast
//!   loopback link behaves exactly as before; a command's floor also covers PX4's heartbeat lag.
//! * **Ceiling**: [`RTO_CEILING_MS`], so a dead link is still given up in bounded time.
//! * **Back-off**: every resend of an unanswered request doubles the timer, up to
//!   2^[`MAX_BACKOFF_SHIFT`] (and the ceiling), until a clean sample comes. This is what lets a
//!   link slower than the floor yield its first sample. The shift is capped low because on a
//!   radio a timeout is mostly loss, not congestion: unbounded doubling would stretch a lossy
//!   link's transfers for nothing.
//!
//! Integer milliseconds in fixed point, fixed size: no_std, no float.

/// The retry timer never exceeds this, ms of the timer clock (unless a configured floor does):
/// a dead link is resent to at least every 10 s and given up after a bounded number of sends.
pub const RTO_CEILING_MS: u64 = 10_000;
/// Consecutive unanswered resends double the timer at most this many times (×8).
pub const MAX_BACKOFF_SHIFT: u8 = 3;
/// A mission-protocol timer is backed off to at most this, ms (unless the measured round trip
/// itself is longer): PX4 ends a transfer after 5 s without a message of it
/// (MAVLINK_MISSION_PROTOCOL_TIMEOUT_DEFAULT), so a backed-off resend must come well before
/// that, with room for one more loss. Backed off further, a lossy radio's download outlived
/// PX4's side of it and stalled.
pub const MISSION_BACKOFF_CAP_MS: u64 = 2_000;
/// RFC 6298's clock granularity G, ms: the variance term is at least this, so a perfectly
/// steady link still leaves room for a little jitter.
const GRANULARITY_MS: u32 = 10;

/// Samples are taken up to this, ms (the ceiling is far below; it keeps the fixed point in u32).
const MAX_SAMPLE_MS: u64 = 1_000_000;

/// The measured round trip of the link (RFC 6298's SRTT and RTTVAR) and the retry back-off.
///
/// Fixed point as Jacobson's original: SRTT in ⅛ ms, 4·RTTVAR in ms, so the update is shifts
/// and adds in `u32` (no 64-bit division on a 32-bit MCU).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct RttEstimator {
    /// SRTT × 8, ms.
    srtt8: u32,
    /// RTTVAR × 4, ms.
    rttvar4: u32,
    samples: u32,
    backoff: u8,
}

impl RttEstimator {
    /// No samples yet: the retry timer is the floor.
    pub const fn new() -> Self {
        RttEstimator {
            srtt8: 0,
            rttvar4: 0,
            samples: 0,
            backoff: 0,
        }
    }

    /// Take in one round trip, ms (a request sent once and its answer). Ends any back-off.
    #[inline(never)]
    pub fn sample(&mut self, rtt_ms: u64) {
        let r = rtt_ms.min(MAX_SAMPLE_MS) as u32;
        if self.samples == 0 {
            // SRTT = R, RTTVAR = R/2 (RFC 6298 2.2).
            self.srtt8 = r << 3;
            self.rttvar4 = r << 1;
        } else {
            // RTTVAR first, with the old SRTT (RFC 6298 2.3): β = 1/4, α = 1/8.
            let err = (self.srtt8 >> 3).abs_diff(r);
            self.rttvar4 = self.rttvar4 - (self.rttvar4 >> 2) + err;
            self.srtt8 = self.srtt8 - (self.srtt8 >> 3) + r;
        }
        self.samples = self.samples.saturating_add(1);
        self.backoff = 0;
    }

    /// A request went unanswered for a whole timer and is resent: back off.
    pub fn timed_out(&mut self) {
        self.backoff = (self.backoff + 1).min(MAX_BACKOFF_SHIFT);
    }

    /// `srtt + max(G, 4·rttvar)`, ms, unclamped.
    fn rto_ms(&self) -> u32 {
        (self.srtt8 >> 3) + self.rttvar4.max(GRANULARITY_MS)
    }

    /// The retry timer, ms: `clamp(srtt + max(G, 4·rttvar), floor, ceiling)` shifted by the
    /// back-off and clamped again; the floor alone (shifted) before the first sample.
    #[inline(never)]
    pub fn timer_ms(&self, floor_ms: u64) -> u64 {
        // u32 arithmetic (a floor beyond 49 days is taken as that).
        let floor = floor_ms.clamp(1, u32::MAX as u64) as u32;
        let ceiling = (RTO_CEILING_MS as u32).max(floor);
        let rto = if self.samples == 0 {
            floor
        } else {
            self.rto_ms().clamp(floor, ceiling)
        };
        rto.saturating_mul(1 << self.backoff).min(ceiling) as u64
    }

    /// [`RttEstimator::timer_ms`] with the back-off held to `cap_ms` once the round trip is
    /// measured (the measured `srtt + 4·rttvar`, when longer, still applies): for a peer that
    /// gives up on its own. Before the first sample the back-off is what finds a slow link's
    /// first clean answer, so it is not capped.
    pub fn timer_capped_ms(&self, floor_ms: u64, cap_ms: u64) -> u64 {
        let timer = self.timer_ms(floor_ms);
        if self.samples == 0 {
            return timer;
        }
        timer.min(cap_ms.max(self.rto_ms() as u64).max(floor_ms))
    }

    /// How long after sending an answer the vehicle may still be asking for it, ms: the raw
    /// `srtt + max(G, 4·rttvar)` without the floor (a loopback link's is a few ms); before the
    /// first sample, the backed-off timer once a timeout showed the link slower than the floor,
    /// else `None` (nothing known: assume a fast link).
    pub fn in_flight_ms(&self, floor_ms: u64) -> Option<u64> {
        if self.samples > 0 {
            Some(self.rto_ms() as u64)
        } else {
            (self.backoff > 0).then(|| self.timer_ms(floor_ms))
        }
    }

    /// The smoothed round trip, ms; `None` before the first sample.
    pub fn srtt_ms(&self) -> Option<f32> {
        (self.samples > 0).then(|| self.srtt8 as f32 / 8.0)
    }

    /// The round-trip variation (RTTVAR), ms; `None` before the first sample.
    pub fn rttvar_ms(&self) -> Option<f32> {
        (self.samples > 0).then(|| self.rttvar4 as f32 / 4.0)
    }

    /// Samples taken so far.
    pub fn samples(&self) -> u32 {
        self.samples
    }

    /// Current back-off: the timer is doubled this many times.
    pub fn backoff(&self) -> u8 {
        self.backoff
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc6298_math() {
        let mut r = RttEstimator::new();
        assert_eq!(r.timer_ms(1000), 1000);
        assert_eq!(r.srtt_ms(), None);
        r.sample(800);
        // First: SRTT = R, RTTVAR = R/2; timer = 800 + 4·400.
        assert_eq!(r.srtt_ms(), Some(800.0));
        assert_eq!(r.rttvar_ms(), Some(400.0));
        assert_eq!(r.timer_ms(1000), 2400);
        r.sample(400);
        // RTTVAR = 3/4·400 + 1/4·|800-400| = 400; SRTT = 7/8·800 + 1/8·400 = 750.
        assert_eq!(r.rttvar_ms(), Some(400.0));
        assert_eq!(r.srtt_ms(), Some(750.0));
        assert_eq!(r.timer_ms(1000), 2350);
        // A steady fast link converges to the floor.
        for _ in 0..50 {
            r.sample(5);
        }
        assert_eq!(r.timer_ms(1000), 1000);
        assert_eq!(r.samples(), 52);
    }

    #[test]
    fn a_mission_timer_backs_off_only_to_its_cap_unless_the_link_is_slower() {
        // Nothing measured yet: the back-off is free to find a slow link's first answer.
        let mut r = RttEstimator::new();
        for _ in 0..5 {
            r.timed_out();
        }
        assert_eq!(r.timer_capped_ms(1000, MISSION_BACKOFF_CAP_MS), 8000);
        // A lossy radio with a measured 600 ms round trip: backed off to 2 s at the most.
        let mut r = RttEstimator::new();
        r.sample(600);
        for _ in 0..5 {
            r.timed_out();
        }
        assert_eq!(r.timer_ms(1000), RTO_CEILING_MS);
        assert_eq!(r.timer_capped_ms(1000, MISSION_BACKOFF_CAP_MS), 2000);
        // A measured round trip longer than the cap is waited for (backed off, it is capped
        // at that round trip's timer).
        let mut r = RttEstimator::new();
        r.sample(4000);
        assert_eq!(
            r.timer_capped_ms(1000, MISSION_BACKOFF_CAP_MS),
            12_000.min(RTO_CEILING_MS)
        );
        r.timed_out();
        assert_eq!(
            r.timer_capped_ms(1000, MISSION_BACKOFF_CAP_MS),
            RTO_CEILING_MS
        );
        // A fast link: the floor, and back-off up to the cap.
        let mut r = RttEstimator::new();
        r.sample(5);
        assert_eq!(r.timer_capped_ms(1000, MISSION_BACKOFF_CAP_MS), 1000);
        r.timed_out();
        r.timed_out();
        assert_eq!(r.timer_capped_ms(1000, MISSION_BACKOFF_CAP_MS), 2000);
    }

    #[test]
    fn ceiling_and_back_off() {
        let mut r = RttEstimator::new();
        r.sample(30_000);
        assert_eq!(r.timer_ms(1000), RTO_CEILING_MS);
        // A floor above the ceiling wins.
        assert_eq!(r.timer_ms(20_000), 20_000);
        let mut r = RttEstimator::new();
        r.timed_out();
        assert_eq!(r.timer_ms(1000), 2000);
        r.timed_out();
        r.timed_out();
        r.timed_out();
        r.timed_out();
        assert_eq!(r.backoff(), MAX_BACKOFF_SHIFT);
        assert_eq!(r.timer_ms(1000), 8000);
        assert_eq!(r.timer_ms(1500), RTO_CEILING_MS);
        // A clean sample ends the back-off.
        r.sample(10);
        assert_eq!(r.backoff(), 0);
        assert_eq!(r.timer_ms(1000), 1000);
    }
}
