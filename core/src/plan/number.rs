//! JSON numbers without `core`'s float parser: exact decimal digits, then the one conversion
//! each field needs.
//!
//! `str::parse::<f64>` is correct for every input, and on thumbv7em it costs ~15 KiB of flash
//! (Eisel–Lemire with a 10 KiB power-of-five table, plus a big-decimal fallback). A `.plan`
//! needs much less: latitude and longitude as integer degrees × 1e7, rounded exactly from the
//! decimal digits; `frame` and `command` as exact whole numbers; params and altitudes as `f32`;
//! the home position as `f64`. [`Decimal`] holds up to 19 significant digits exactly, which
//! decides the integer conversions exactly; the float conversions are [`crate::decimal`]'s,
//! correctly rounded from those digits in integer arithmetic (no soft-float on the MCU).

use crate::decimal::div_small;

/// Significant digits kept exactly (10^19 < 2^64).
const DIGITS: u32 = 19;

/// A JSON number: `(-1)^neg × mant × 10^exp`, plus whether nonzero digits beyond the first
/// [`DIGITS`] significant ones were dropped (the true magnitude is then a little larger).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Decimal {
    neg: bool,
    mant: u64,
    exp: i32,
    inexact: bool,
}

/// `mant × 10^k` if it is at most `limit` (under 2^32), else `None`. The bound is checked
/// after every step, so each product stays under 2^36: no 64-bit overflow check or power
/// table, and a huge `k` ends after at most ten steps (for `mant` ≥ 1).
fn scaled(mant: u64, k: u32, limit: u64) -> Option<u64> {
    let mut v = mant;
    let mut steps = 0;
    loop {
        if v > limit {
            return None;
        }
        if steps == k {
            return Some(v);
        }
        v *= 10;
        steps += 1;
    }
}

impl Decimal {
    /// The digits of a JSON number token (`-? int frac? exp?`, as the tokenizer checked it).
    /// Bytes that are not part of a number are ignored, so any input gives some value.
    pub fn parse(s: &[u8]) -> Decimal {
        let mut d = Decimal {
            neg: s.first() == Some(&b'-'),
            mant: 0,
            exp: 0,
            inexact: false,
        };
        let mut kept = 0u32;
        let mut fraction = false;
        let mut rest = s;
        while let Some((&b, tail)) = rest.split_first() {
            match b {
                b'0'..=b'9' => {
                    let digit = (b - b'0') as u64;
                    if kept < DIGITS {
                        // A leading zero leaves `mant` 0 and is not kept: only its place counts.
                        d.mant = d.mant * 10 + digit;
                        kept += (d.mant != 0) as u32;
                        d.exp -= fraction as i32;
                    } else {
                        d.exp += !fraction as i32;
                        d.inexact |= digit != 0;
                    }
                }
                b'.' => fraction = true,
                b'e' | b'E' => {
                    d.exp = d.exp.saturating_add(exponent(tail));
                    break;
                }
                _ => {}
            }
            rest = tail;
        }
        d
    }

    /// The nearest whole number of degrees × 1e7, ties to even (as Python's `round`), decided
    /// on the exact decimal value; `None` outside `i32`.
    pub fn to_e7(self) -> Option<i32> {
        if self.mant == 0 {
            return Some(0);
        }
        let e = self.exp.saturating_add(7);
        let limit = if self.neg {
            1u64 << 31
        } else {
            i32::MAX as u64
        };
        let magnitude = if e >= 0 {
            scaled(self.mant, e as u32, limit)?
        } else if e < -(DIGITS as i32) {
            // mant < 10^19 ≤ 10^-e / 10: under 0.1, rounds to 0.
            0
        } else {
            // Drop -e digits, one division by 10 at a time (no 64-bit division routine): the
            // last one dropped decides, the ones below it (and `inexact`) break a tie.
            let (mut q, mut digit, mut below) = (self.mant, 0, self.inexact);
            for _ in 0..e.unsigned_abs() {
                below |= digit != 0;
                (q, digit) = div_small(q, 10);
            }
            let up = digit > 5 || (digit == 5 && (below || q % 2 == 1));
            q + up as u64
        };
        if magnitude > limit {
            return None;
        }
        Some(if self.neg {
            (magnitude as i64).wrapping_neg() as i32
        } else {
            magnitude as i32
        })
    }

    /// The value if it is exactly a whole number in `0..=max` (`-0` counts as 0).
    pub fn to_whole(self, max: u32) -> Option<u32> {
        if self.mant == 0 {
            return Some(0);
        }
        if self.neg || self.inexact {
            return None;
        }
        let v = if self.exp >= 0 {
            scaled(self.mant, self.exp as u32, max as u64)?
        } else {
            let k = self.exp.unsigned_abs();
            if k >= DIGITS {
                return None;
            }
            let mut q = self.mant;
            for _ in 0..k {
                let (next, digit) = div_small(q, 10);
                if digit != 0 {
                    return None;
                }
                q = next;
            }
            q
        };
        (v <= max as u64).then_some(v as u32)
    }

    /// The nearest `f64`: correctly rounded from the digits held (in `crate::decimal`'s exact
    /// range, which covers every number a `.plan` carries), within one unit in the last place
    /// otherwise. Digits beyond the 19th, when not all zero, count as "a little more". Overflow
    /// gives ±infinity, underflow ±0.
    pub fn to_f64(self) -> f64 {
        crate::decimal::to_f64(self.neg, self.mant, self.exp, self.inexact)
    }

    /// The nearest `f32`, rounded once from the same digits: within one unit in the last place
    /// of the correctly rounded value, and equal to it in the exact range.
    pub fn to_f32(self) -> f32 {
        crate::decimal::to_f32(self.neg, self.mant, self.exp, self.inexact)
    }
}

/// The exponent after `e`/`E`, saturating far beyond any meaningful range.
fn exponent(s: &[u8]) -> i32 {
    let (neg, digits) = match s.split_first() {
        Some((b'-', rest)) => (true, rest),
        Some((b'+', rest)) => (false, rest),
        _ => (false, s),
    };
    let mut e: i32 = 0;
    for &b in digits {
        if b.is_ascii_digit() {
            e = (e * 10 + (b - b'0') as i32).min(100_000);
        }
    }
    if neg {
        -e
    } else {
        e
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(s: &str) -> Decimal {
        Decimal::parse(s.as_bytes())
    }

    #[test]
    fn digits_and_exponents() {
        let x = d("47.397742");
        assert_eq!(
            (x.neg, x.mant, x.exp, x.inexact),
            (false, 47_397_742, -6, false)
        );
        let x = d("-0.00025e-2");
        assert_eq!((x.neg, x.mant, x.exp), (true, 25, -7));
        let x = d("12345678901234567890123");
        assert_eq!(
            (x.mant, x.exp, x.inexact),
            (1_234_567_890_123_456_789, 4, true)
        );
        let x = d("1.0000000000000000000000");
        assert_eq!((x.mant, x.inexact), (1_000_000_000_000_000_000, false));
        assert_eq!(d("1e999999999999").exp, 100_000);
    }

    #[test]
    fn degrees_e7_round_half_to_even_on_the_decimal() {
        assert_eq!(d("47.397742").to_e7(), Some(473_977_420));
        assert_eq!(d("8.545590400695801").to_e7(), Some(85_455_904));
        assert_eq!(d("0.00000005").to_e7(), Some(0));
        assert_eq!(d("0.00000015").to_e7(), Some(2));
        assert_eq!(d("-0.00000025").to_e7(), Some(-2));
        assert_eq!(d("-0.000000250000000000000000001").to_e7(), Some(-3));
        assert_eq!(d("214.7483647").to_e7(), Some(i32::MAX));
        assert_eq!(d("214.7483648").to_e7(), None);
        assert_eq!(d("-214.7483648").to_e7(), Some(i32::MIN));
        assert_eq!(d("-214.74836485").to_e7(), Some(i32::MIN));
        assert_eq!(d("-214.74836486").to_e7(), None);
        assert_eq!(d("1e300").to_e7(), None);
        assert_eq!(d("1e2").to_e7(), Some(1_000_000_000));
        assert_eq!(d("-2e2").to_e7(), Some(-2_000_000_000));
        assert_eq!(d("1e3").to_e7(), None);
        assert_eq!(d("1e999999999").to_e7(), None);
        assert_eq!(d("1e-300").to_e7(), Some(0));
        assert_eq!(d("-0").to_e7(), Some(0));
    }

    #[test]
    fn whole_numbers_are_exact() {
        assert_eq!(d("16").to_whole(65_535), Some(16));
        assert_eq!(d("16.000").to_whole(65_535), Some(16));
        assert_eq!(d("1.6e1").to_whole(65_535), Some(16));
        assert_eq!(d("160e-1").to_whole(65_535), Some(16));
        assert_eq!(d("-0.0").to_whole(255), Some(0));
        assert_eq!(d("3.5").to_whole(255), None);
        assert_eq!(d("-1").to_whole(255), None);
        assert_eq!(d("256").to_whole(255), None);
        assert_eq!(d("1e999").to_whole(255), None);
        assert_eq!(d("65535").to_whole(65_535), Some(65_535));
        assert_eq!(d("4294967295").to_whole(u32::MAX), Some(u32::MAX));
        assert_eq!(d("4.294967295e9").to_whole(u32::MAX), Some(u32::MAX));
        assert_eq!(d("4294967296").to_whole(u32::MAX), None);
        assert_eq!(d("1e9").to_whole(u32::MAX), Some(1_000_000_000));
        assert_eq!(d("1e10").to_whole(u32::MAX), None);
    }

    #[test]
    fn floats_are_correctly_rounded() {
        for s in [
            "47.397742",
            "8.545594",
            "488",
            "47.3977419",
            "0.1",
            "-33.8688",
            "1e22",
        ] {
            assert_eq!(d(s).to_f64(), s.parse::<f64>().unwrap(), "{s}");
        }
        assert_eq!(d("1e999").to_f64(), f64::INFINITY);
        assert_eq!(d("-1e999").to_f32(), f32::NEG_INFINITY);
        assert_eq!(d("1e-999").to_f64(), 0.0);
        assert!(d("-0.0").to_f64().is_sign_negative());
    }

    use proptest::prelude::*;
    extern crate std;
    use std::format;
    use std::string::String;

    /// A JSON number: sign, up to 25 digits with a decimal point somewhere, maybe an exponent.
    fn json_number() -> impl Strategy<Value = String> {
        (
            any::<bool>(),
            "[1-9][0-9]{0,24}",
            0usize..26,
            prop::option::of(-60i32..60),
            any::<bool>(),
        )
            .prop_map(|(neg, digits, point, exp, leading_zero)| {
                let point = point.min(digits.len());
                let (int, frac) = digits.split_at(digits.len() - point);
                let mut s = String::from(if neg { "-" } else { "" });
                match (int.is_empty(), frac.is_empty()) {
                    (true, _) => s += &format!("0.{}{frac}", if leading_zero { "00" } else { "" }),
                    (false, true) => s += int,
                    (false, false) => s += &format!("{int}.{frac}"),
                }
                if let Some(e) = exp {
                    s += &format!("e{e}");
                }
                s
            })
    }

    /// Within `crate::decimal`'s documented exact range (and no digits dropped): 0 ulps;
    /// elsewhere 1.
    fn ulp_limit(x: &Decimal) -> u128 {
        let exact = !x.inexact
            && x.exp >= -54
            && (x.exp <= 0 || (x.mant as f64).log2() + x.exp as f64 * 5f64.log2() < 124.9);
        if exact {
            0
        } else {
            1
        }
    }

    /// Distance in units in the last place between two floats of the same sign.
    fn ulps32(a: f32, b: f32) -> u32 {
        (a.to_bits() as i64 - b.to_bits() as i64).unsigned_abs() as u32
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(20_000))]

        /// The requirement: within one ulp of the correctly rounded `f32` (and exact in the
        /// exact range).
        #[test]
        fn f32_within_one_ulp_of_the_correctly_rounded_value(s in json_number()) {
            let want: f32 = s.parse().unwrap();
            let x = d(&s);
            let got = x.to_f32();
            prop_assert!(ulps32(got, want) as u128 <= ulp_limit(&x), "{s}: {got:e} vs {want:e}");
        }

        #[test]
        fn f64_correctly_rounded_in_the_exact_range(s in json_number()) {
            let want: f64 = s.parse().unwrap();
            let x = d(&s);
            let got = x.to_f64();
            let ulps = (got.to_bits() as i128 - want.to_bits() as i128).unsigned_abs();
            prop_assert!(ulps <= ulp_limit(&x), "{s}: {got:e} vs {want:e}");
        }

        #[test]
        fn e7_is_the_f64_rounding_except_on_exact_ties(s in json_number()) {
            let x = d(&s);
            let p = s.parse::<f64>().unwrap() * 1e7;
            match x.to_e7() {
                // Out of range: at least i32's bound, give or take the rounding.
                None => prop_assert!(p.abs() >= i32::MAX as f64 - 1.0, "{}", s),
                Some(got) => {
                    prop_assert!((got as f64 - p).abs() <= 0.5 + 1e-6 * p.abs().max(1.0), "{s}: {got} vs {p}");
                    let frac = p.abs().fract();
                    if (frac - 0.5).abs() > 1e-6 {
                        prop_assert_eq!(got as f64, p.round_ties_even(), "{}", s);
                    }
                }
            }
        }

        #[test]
        fn whole_numbers_are_exact_integers(n in 0u32..70_000, zeros in 0usize..4, e in -3i32..4) {
            // n × 10^e written as digits with `zeros` trailing fraction zeros.
            let s = if zeros == 0 { format!("{n}e{e}") } else { format!("{n}.{}e{e}", "0".repeat(zeros)) };
            let exact = if e >= 0 { Some(n as u64 * 10u64.pow(e as u32)) }
                else if n as u64 % 10u64.pow(e.unsigned_abs()) == 0 { Some(n as u64 / 10u64.pow(e.unsigned_abs())) }
                else { None };
            let want = exact.filter(|&v| v <= 65_535).map(|v| v as u32);
            prop_assert_eq!(d(&s).to_whole(65_535), want, "{}", s);
        }
    }
}
