//! The driver's monotonic clock, as numbers.
//!
//! The core never reads a clock: the driver (firmware main loop or host pump) passes `now` into
//! every call, exactly as smoltcp and quinn-proto do. [`Instant`] is that wall/monotonic time.
//! The autopilot's own clock (sim time, `time_boot_ms`) is a different thing and lives in
//! [`crate::telemetry::Telemetry::sim_ms`]: every engine timeout counts in it.

use core::ops::{Add, Sub};

/// A point on the driver's monotonic clock, in microseconds since an arbitrary origin.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Instant {
    micros: u64,
}

/// A span of driver (wall) time, in microseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Duration {
    micros: u64,
}

impl Instant {
    /// The clock's origin.
    pub const ZERO: Instant = Instant { micros: 0 };

    /// An instant `micros` microseconds after the origin.
    pub const fn from_micros(micros: u64) -> Self {
        Instant { micros }
    }

    /// An instant `millis` milliseconds after the origin.
    pub const fn from_millis(millis: u64) -> Self {
        Instant {
            micros: millis.saturating_mul(1000),
        }
    }

    /// Microseconds since the origin.
    pub const fn total_micros(self) -> u64 {
        self.micros
    }

    /// Milliseconds since the origin (truncated).
    pub const fn total_millis(self) -> u64 {
        crate::decimal::div_small(self.micros, 1000).0
    }

    /// Time from `earlier` to `self`; zero if `earlier` is later.
    pub const fn saturating_since(self, earlier: Instant) -> Duration {
        Duration {
            micros: self.micros.saturating_sub(earlier.micros),
        }
    }
}

impl Duration {
    /// No time at all.
    pub const ZERO: Duration = Duration { micros: 0 };

    /// A duration of `micros` microseconds.
    pub const fn from_micros(micros: u64) -> Self {
        Duration { micros }
    }

    /// A duration of `millis` milliseconds.
    pub const fn from_millis(millis: u64) -> Self {
        Duration {
            micros: millis.saturating_mul(1000),
        }
    }

    /// A duration of `secs` seconds; negative or NaN gives zero.
    pub fn from_secs_f32(secs: f32) -> Self {
        if secs.is_nan() || secs <= 0.0 {
            return Duration::ZERO;
        }
        Duration {
            micros: (secs as f64 * 1e6) as u64,
        }
    }

    /// Whole microseconds.
    pub const fn total_micros(self) -> u64 {
        self.micros
    }

    /// Whole milliseconds (truncated).
    pub const fn total_millis(self) -> u64 {
        crate::decimal::div_small(self.micros, 1000).0
    }

    /// Seconds as a float (the nearest `f32`; computed in integers, so an MCU needs no
    /// soft-float `f64` division for it).
    pub fn as_secs_f32(self) -> f32 {
        crate::decimal::to_f32(false, self.micros, -6, false)
    }
}

impl Add<Duration> for Instant {
    type Output = Instant;
    fn add(self, rhs: Duration) -> Instant {
        Instant {
            micros: self.micros.saturating_add(rhs.micros),
        }
    }
}

impl Sub<Instant> for Instant {
    type Output = Duration;
    fn sub(self, rhs: Instant) -> Duration {
        self.saturating_since(rhs)
    }
}

/// Seconds (`f32`) to whole milliseconds, rounded half away from zero, saturating; negative or
/// NaN gives 0.
///
/// Every engine threshold is converted once, at registration, so evaluation compares integers.
/// Exact, in integers: `secs` is `m × 2^e` with `m < 2^24`, so `secs × 1000` is `m × 1000`
/// (under 2^34) shifted by `e`. (The same result as rounding `secs as f64 * 1000.0`, which is
/// exact too, without linking the soft-float `f64` addition on an MCU.)
pub fn secs_to_ms(secs: f32) -> u64 {
    if secs.is_nan() || secs <= 0.0 {
        return 0;
    }
    if secs >= 1.8e16 {
        return u64::MAX;
    }
    let bits = secs.to_bits();
    // Positive: no sign bit. Normal numbers carry the implicit leading 1; subnormals have the
    // exponent of biased 1 without it.
    let biased = (bits >> 23) as i32;
    let m = bits & 0x7f_ffff | if biased != 0 { 0x80_0000 } else { 0 };
    let e = biased.max(1) - 150;
    let v = m as u64 * 1000;
    if e >= 0 {
        // secs < 1.8e16, so secs × 1000 < 1.8e19 < 2^64: no overflow.
        v << e
    } else if e < -34 {
        // v < 2^34: under one half.
        0
    } else {
        // Half away from zero: the bit below the result decides (one shift, then one more).
        ((v >> (e.unsigned_abs() - 1)) + 1) >> 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arithmetic_saturates() {
        let a = Instant::from_millis(10);
        let b = Instant::from_millis(4);
        assert_eq!((a - b).total_millis(), 6);
        assert_eq!((b - a), Duration::ZERO);
        assert_eq!((a + Duration::from_millis(5)).total_millis(), 15);
    }

    #[test]
    fn seconds_to_ms_is_the_exact_f64_rounding() {
        // Every exponent, and mantissas at the edges and in between.
        for biased in 0u32..255 {
            for fraction in [
                0u32, 1, 2, 0x40_0000, 0x7f_fffe, 0x7f_ffff, 0x12_3456, 0x55_5555,
            ] {
                let secs = f32::from_bits(biased << 23 | fraction);
                let want = if secs >= 1.8e16 {
                    u64::MAX
                } else {
                    libm::round(secs as f64 * 1000.0) as u64
                };
                assert_eq!(secs_to_ms(secs), want, "{secs:e}");
            }
        }
        // Halves round away from zero.
        assert_eq!(secs_to_ms(0.0005), 1);
        assert_eq!(secs_to_ms(0.0015), 2);
        assert_eq!(secs_to_ms(f32::MIN_POSITIVE), 0);
        assert_eq!(secs_to_ms(-0.0), 0);
    }

    #[test]
    fn seconds_convert() {
        assert_eq!(secs_to_ms(1.5), 1500);
        assert_eq!(secs_to_ms(-1.0), 0);
        assert_eq!(secs_to_ms(f32::NAN), 0);
        assert_eq!(secs_to_ms(f32::INFINITY), u64::MAX);
        assert_eq!(Duration::from_secs_f32(0.25).total_millis(), 250);
        for us in [
            0,
            1,
            999_999,
            1_000_000,
            2_500_000,
            16_777_217_000_001,
            u64::MAX,
        ] {
            let d = Duration::from_micros(us);
            assert_eq!(d.as_secs_f32(), (us as f64 / 1e6) as f32, "{us}");
        }
    }
}
