//! Decimal numbers to binary floats, correctly rounded, in integer arithmetic.
//!
//! thumbv7em's FPU is single precision: every `f64` multiply, divide or conversion is a
//! soft-float routine (together ~2 KiB of flash), and the `.plan` reader and
//! [`crate::time::Duration::as_secs_f32`] were their only users in a firmware. Here
//! `mant × 10^exp10` is taken as `mant × 5^exp10 × 2^exp10`: the power of two is exact in the
//! exponent, and the power of five is multiplied into, or divided out of, a 192-bit integer in
//! 32-bit limbs (hardware multiplications and divisions), then the result is rounded once, to
//! nearest with ties to even. That is the correctly rounded value whenever `mant × 5^exp10`
//! fits 160 bits or `exp10 ≥ -54` (every number a `.plan` or a duration holds); beyond that,
//! the remaining factors of five are applied with 160-bit or more precision and any truncation
//! kept in a sticky bit: within one unit in the last place.

/// `x / d` and `x % d` for a divisor under 2^16, by long division in 16-bit limbs: each step
/// is a 32-bit division, which thumbv7em does in hardware. `u64 / u64` is a library routine
/// there (~0.9 KiB), which the firmware would link for its few divisions by 10 and 1000. (Not
/// inlined: with a constant divisor the optimiser turns the limbs back into one `u64` division.)
#[inline(never)]
pub(crate) const fn div_small(x: u64, d: u16) -> (u64, u32) {
    let d = d as u32;
    let mut q = 0u64;
    let mut r = 0u32;
    let mut shift = 64;
    while shift > 0 {
        shift -= 16;
        let cur = (r << 16) | ((x >> shift) as u32 & 0xffff);
        q = (q << 16) | (cur / d) as u64;
        r = cur % d;
    }
    (q, r)
}

/// Largest power of five divided out exactly (5^54 < 2^126).
const EXACT_FIVES: i32 = 54;

/// 32-bit limbs of the integer `binary` scales, most significant first: 192 bits, room for
/// the 5^54 of the exact range with 65 quotient bits left (2^191 / 5^54 > 2^65).
const LIMBS: usize = 6;

/// `5^c` for `c` ≤ 13 (5^13 < 2^32).
fn pow5(c: i32) -> u32 {
    (0..c).fold(1, |d, _| d * 5)
}

/// `x × d` in place; the top limb must be zero (so the product fits).
fn mul_limbs(x: &mut [u32; LIMBS], d: u32) {
    let mut carry = 0u64;
    for limb in x.iter_mut().rev() {
        let p = *limb as u64 * d as u64 + carry;
        *limb = p as u32;
        carry = p >> 32;
    }
}

/// `x / d` in place for a divisor under 2^16, by long division in 16-bit steps (each a 32-bit
/// division, which thumbv7em does in hardware); whether a remainder was left.
fn div_limbs(x: &mut [u32; LIMBS], d: u32) -> bool {
    // Never 0 (a power of five): said so, no division-by-zero panic is linked.
    let d = d.max(1);
    let mut r = 0u32;
    for limb in x.iter_mut() {
        let hi = r << 16 | *limb >> 16;
        let lo = (hi % d) << 16 | (*limb & 0xffff);
        *limb = ((hi / d) << 16) | (lo / d);
        r = lo % d;
    }
    r != 0
}

/// Shift `x` (not zero) left until its top bit is set, taking the shifts out of `e2`. One bit
/// at a time: no variable multi-word shift.
fn normalize_limbs(x: &mut [u32; LIMBS], e2: &mut i32) {
    while x[0] >> 31 == 0 {
        let mut carry = 0;
        for limb in x.iter_mut().rev() {
            let top = *limb >> 31;
            *limb = *limb << 1 | carry;
            carry = top;
        }
        *e2 -= 1;
    }
}

/// `mant × 10^exp10`, `sticky` meaning "and a little more", as `q × 2^(e2 - 63)` with the top
/// bit of `q` set, plus whether nonzero bits lie below `q`. `None` for zero.
///
/// In 32-bit limbs (no 128-bit arithmetic, whose every operation is a dozen instructions on
/// thumbv7em): the value is X × 2^e2 (+ sticky) throughout, X = `mant` at first.
fn binary(mant: u64, exp10: i32, mut sticky: bool) -> Option<(u64, i32, bool)> {
    if mant == 0 {
        return None;
    }
    // Far beyond these, any float is infinite or zero; the clamp bounds the loops below.
    let e10 = exp10.clamp(-400, 400);
    let mut x = [0u32; LIMBS];
    x[LIMBS - 2] = (mant >> 32) as u32;
    x[LIMBS - 1] = mant as u32;
    let mut e2 = e10;
    let mut left = e10.unsigned_abs() as i32;
    if e10 >= 0 {
        // × 5^13 at a time; a product reaching the top limb drops its lowest limb (into
        // sticky), so the next one fits: exact while X stays under 2^160.
        while left > 0 {
            let c = left.min(13);
            mul_limbs(&mut x, pow5(c));
            left -= c;
            if x[0] != 0 {
                sticky |= x[LIMBS - 1] != 0;
                for i in (1..LIMBS).rev() {
                    x[i] = x[i - 1];
                }
                x[0] = 0;
                e2 += 32;
            }
        }
    } else {
        // X shifted to the top, then divided by at most 5^6 (under 2^16) at a time. Integer
        // division composes (⌊⌊X / a⌋ / b⌋ = ⌊X / ab⌋), so through the first EXACT_FIVES fives
        // the quotient and the sticky bit are exact. Beyond them, the quotient goes back to the
        // top before each division (190 bits kept, the rest in the sticky bit).
        normalize_limbs(&mut x, &mut e2);
        while left > 0 {
            if e10.unsigned_abs() as i32 - left >= EXACT_FIVES {
                normalize_limbs(&mut x, &mut e2);
            }
            let c = left.min(6);
            sticky |= div_limbs(&mut x, pow5(c));
            left -= c;
        }
    }
    // The top 64 bits: X × 2^e2 = q × 2^(e2 + 128) (+ the low limbs, into sticky).
    normalize_limbs(&mut x, &mut e2);
    sticky |= x[2] | x[3] | x[4] | x[5] != 0;
    let q = (x[0] as u64) << 32 | x[1] as u64;
    Some((q, e2 + 191, sticky))
}

/// The bits (sign excluded) of the float with `p` significand bits (the hidden bit included)
/// and exponent bias `bias` nearest to `q × 2^(e2 - 63)` (+ a little when `sticky`): ties to
/// even, subnormals and overflow to infinity included.
fn round(q: u64, e2: i32, sticky: bool, p: u32, bias: i32) -> u64 {
    let hidden = 1u64 << (p - 1);
    let inf = (2 * bias + 1) as u64 * hidden;
    let biased = e2 + bias;
    if biased > 2 * bias {
        return inf;
    }
    // Bits below the guard bit (the one below the significand): 63 - p, more for a subnormal.
    let below = (63 - p as i32) + if biased < 1 { 1 - biased } else { 0 };
    if below > 63 {
        return 0;
    }
    let below = below as u32;
    // Sticky joins the bits below the guard bit (at least ten of them): only "any of them
    // set" counts. Two shifts split the guard bit and the rest off the significand.
    let q = q | sticky as u64;
    let r = q >> below;
    let up = r & 1 == 1 && (r << below != q || r & 2 != 0);
    // A normal significand carries the hidden bit, which adds one to the exponent field; a
    // carry out of the significand moves into the exponent by the same addition.
    let field = if biased < 1 { 0 } else { (biased - 1) as u64 };
    (field * hidden + (r >> 1) + up as u64).min(inf)
}

/// `±mant × 10^exp10` (`sticky`: a little more in magnitude) as the nearest `f64`.
pub(crate) fn to_f64(neg: bool, mant: u64, exp10: i32, sticky: bool) -> f64 {
    let bits = binary(mant, exp10, sticky).map_or(0, |(q, e2, s)| round(q, e2, s, 53, 1023));
    f64::from_bits(bits | (neg as u64) << 63)
}

/// `±mant × 10^exp10` (`sticky`: a little more in magnitude) as the nearest `f32`.
pub(crate) fn to_f32(neg: bool, mant: u64, exp10: i32, sticky: bool) -> f32 {
    let bits = binary(mant, exp10, sticky).map_or(0, |(q, e2, s)| round(q, e2, s, 24, 127));
    f32::from_bits(bits as u32 | (neg as u32) << 31)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    extern crate std;
    use std::format;

    #[test]
    fn small_divisions_are_u64_division() {
        for x in [
            0,
            1,
            9,
            10,
            999,
            1000,
            65_535,
            1 << 32,
            u64::MAX,
            0x1234_5678_9abc_def0,
        ] {
            for d in [1u16, 5, 10, 1000, 65_535] {
                assert_eq!(
                    div_small(x, d),
                    (x / d as u64, (x % d as u64) as u32),
                    "{x} / {d}"
                );
            }
        }
        // 128-bit values in the low limbs: the limb division is u128 division.
        let limbs = |n: u128| {
            [
                0,
                0,
                (n >> 96) as u32,
                (n >> 64) as u32,
                (n >> 32) as u32,
                n as u32,
            ]
        };
        for n in [
            1u128,
            5,
            u128::MAX,
            1 << 127,
            (1 << 127) + 12_345_678_901,
            15_624,
            15_625,
        ] {
            for d in [1u32, 5, 25, 125, 3_125, 15_625] {
                let mut x = limbs(n);
                let rest = div_limbs(&mut x, d);
                assert_eq!(
                    (x, rest),
                    (limbs(n / d as u128), n % d as u128 != 0),
                    "{n} / {d}"
                );
            }
        }
        for n in [
            1u128,
            7,
            u64::MAX as u128,
            (1 << 100) + 3,
            (1 << 127) / 15_625,
        ] {
            for d in [1u32, 5, 15_625, 1_220_703_125] {
                let Some(p) = n.checked_mul(d as u128) else {
                    continue;
                };
                let mut x = limbs(n);
                mul_limbs(&mut x, d);
                assert_eq!(x, limbs(p), "{n} × {d}");
            }
        }
        // And in the high limbs: a shift of 64 bits.
        let mut x = [u32::MAX, u32::MAX, 7, 0, 0, 0];
        assert!(div_limbs(&mut x, 5));
        let high = ((u64::MAX as u128) << 32 | 7) / 5;
        let below = (((u64::MAX as u128) << 32 | 7) % 5) << 96;
        assert_eq!(
            x[..3],
            [(high >> 64) as u32, (high >> 32) as u32, high as u32]
        );
        let low = below / 5;
        assert_eq!(x[3..], [(low >> 64) as u32, (low >> 32) as u32, low as u32]);
    }

    /// The engine's `waited_sim_s` was `ms as f32 / 1000.0`: below 2^24 ms (4.6 h) that is one
    /// IEEE rounding of the exact quotient, so the integer conversion gives the same float.
    #[test]
    fn millis_as_seconds_are_the_f32_division() {
        let mut ms = 0u64;
        while ms < 1 << 24 {
            assert_eq!(to_f32(false, ms, -3, false), ms as f32 / 1000.0, "{ms} ms");
            ms += 1 + ms / 64;
        }
    }

    #[test]
    fn exact_values_and_edges() {
        assert_eq!(to_f64(false, 47_397_742, -6, false), 47.397742);
        assert_eq!(to_f64(true, 1, 0, false), -1.0);
        assert_eq!(to_f64(false, 0, 5, false), 0.0);
        assert!(to_f64(true, 0, 5, false).is_sign_negative());
        assert_eq!(to_f64(false, 1, 400, false), f64::INFINITY);
        assert_eq!(to_f64(false, 1, -400, false), 0.0);
        assert_eq!(to_f64(false, 5, -324, false), 5e-324);
        assert_eq!(to_f64(false, 2, -324, false), 0.0);
        assert_eq!(to_f64(false, 3, -324, false), 5e-324);
        assert_eq!(to_f32(false, 34_028_235, 31, false), f32::MAX);
        assert_eq!(to_f32(false, 34_028_237, 31, false), f32::INFINITY);
        assert_eq!(to_f32(false, 14_012_985, -52, false), f32::from_bits(1));
        assert_eq!(to_f32(false, 7, -46, false), 0.0);
        assert_eq!(to_f32(false, 1_000_000, -6, false), 1.0);
        // Ties to even, and the sticky bit breaking a tie: 2^24 + 1 lies halfway.
        assert_eq!(to_f32(false, 16_777_217, 0, false), 16_777_216.0);
        assert_eq!(to_f32(false, 16_777_217, 0, true), 16_777_218.0);
        assert_eq!(to_f32(false, 16_777_219, 0, false), 16_777_220.0);
    }

    /// Halfway cases reached through a negative power of ten: ties to even, exactly, and the
    /// nearest neighbours of the ties on either side.
    #[test]
    fn ties_through_division_are_exact() {
        for (mant, e) in [
            (45_035_996_273_704_975u64, -1), // 2^52 + 1.5 → 2^52 + 2
            (45_035_996_273_704_965, -1),    // 2^52 + 0.5 → 2^52
            (4_503_599_627_370_496_499, -3),
            (4_503_599_627_370_496_501, -3),
            (5, -1),
            (11_258_999_068_426_245, -1), // 2^50 + 0.5, exact in f64
            (22_250_738_585_072_011, -327),
            (49_406_564_584_124_654, -343),
            (1, -54),
            (3, -54),
        ] {
            let text = format!("{mant}e{e}");
            let want: f64 = text.parse().unwrap();
            let got = to_f64(false, mant, e, false);
            let ulps = (got.to_bits() as i64 - want.to_bits() as i64).unsigned_abs();
            assert!(
                ulps <= (e < -EXACT_FIVES) as u64,
                "{text}: {got:e} vs {want:e}"
            );
            let want: f32 = text.parse().unwrap();
            assert_eq!(to_f32(false, mant, e, false), want, "{text} as f32");
        }
        for (mant, e) in [
            (83_886_085u64, -1),
            (83_886_095, -1),
            (167_772_170_000_001, -7),
        ] {
            let text = format!("{mant}e{e}");
            assert_eq!(
                to_f32(false, mant, e, false),
                text.parse::<f32>().unwrap(),
                "{text}"
            );
        }
    }

    /// Around the subnormal range and its edges, where rounding shifts the most.
    #[test]
    fn subnormals_round_as_the_parser_does() {
        let mants = [
            1u64, 5, 7, 14, 701, 1_401_298, 14_012_985, 11_754_942, 11_754_944, 99_999_999,
        ];
        for &m in &mants {
            for e in -60..=-30 {
                let text = format!("{m}e{e}");
                let (got, want) = (to_f32(false, m, e, false), text.parse::<f32>().unwrap());
                let ulps = (got.to_bits() as i64 - want.to_bits() as i64).unsigned_abs();
                assert!(
                    ulps <= (e < -EXACT_FIVES) as u64,
                    "{text}: {got:e} vs {want:e}"
                );
            }
        }
        for &m in &mants {
            for e in -345..=-300 {
                let text = format!("{m}e{e}");
                let (got, want) = (to_f64(false, m, e, false), text.parse::<f64>().unwrap());
                let ulps = (got.to_bits() as i64 - want.to_bits() as i64).unsigned_abs();
                assert!(ulps <= 1, "{text}: {got:e} vs {want:e}");
            }
        }
    }

    fn decimal() -> impl Strategy<Value = (bool, u64, i32)> {
        (
            any::<bool>(),
            prop_oneof![
                1u64..1000,
                1u64..(1 << 53),
                any::<u64>().prop_map(|m| m.max(1))
            ],
            prop_oneof![-30i32..30, -350i32..320],
        )
    }

    /// The documented exact range: `mant × 5^e` under 2^125, or `e ≥ -54`.
    fn exact(mant: u64, e: i32) -> bool {
        if e < 0 {
            return e >= -EXACT_FIVES;
        }
        (mant as f64).log2() + e as f64 * 5f64.log2() < 124.9
    }

    /// Inside the exact range the result is what `str::parse` gives; beyond it, one ulp.
    fn close64(got: f64, want: f64, exact: bool) -> bool {
        let ulps = (got.to_bits() as i128 - want.to_bits() as i128).unsigned_abs();
        if exact {
            ulps == 0
        } else {
            ulps <= 1
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(20_000))]

        #[test]
        fn f64_is_correctly_rounded_in_the_exact_range((neg, mant, e) in decimal()) {
            let text = format!("{}{mant}e{e}", if neg { "-" } else { "" });
            let want: f64 = text.parse().unwrap();
            prop_assert!(close64(to_f64(neg, mant, e, false), want, exact(mant, e)), "{text}");
        }

        #[test]
        fn f32_is_correctly_rounded_in_the_exact_range((neg, mant, e) in decimal()) {
            let text = format!("{}{mant}e{e}", if neg { "-" } else { "" });
            let want: f32 = text.parse().unwrap();
            let got = to_f32(neg, mant, e, false);
            let ulps = (got.to_bits() as i64 - want.to_bits() as i64).unsigned_abs();
            let ok = if exact(mant, e) { ulps == 0 } else { ulps <= 1 };
            prop_assert!(ok, "{text}: {got:e} vs {want:e}");
        }
    }
}
