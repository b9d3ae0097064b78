//! The two angle wraps and the one sphere of `offboard::geo`: the client's [−π, π) and the
//! simulated vehicle's (−π, π], both kept because their edges differ.

use core::f32::consts::{PI as PI32, TAU as TAU32};
use core::f64::consts::PI;
use nexus_core::offboard::geo::{wrap_pi, wrap_pi_open_below_f32, EARTH_RADIUS_M, M_PER_DEG};

#[test]
fn wrap_pi_is_half_open_above() {
    assert_eq!(wrap_pi(PI), -PI);
    assert_eq!(wrap_pi(-PI), -PI);
    assert!((wrap_pi(3.5) - (3.5 - 2.0 * PI)).abs() < 1e-12);
    assert!((wrap_pi(-7.0) - (-7.0 + 2.0 * PI)).abs() < 1e-12);
    assert_eq!(wrap_pi(1.0), 1.0);
}

#[test]
fn wrap_pi_open_below_keeps_plus_pi() {
    assert_eq!(wrap_pi_open_below_f32(PI32), PI32);
    assert_eq!(wrap_pi_open_below_f32(-PI32), PI32);
    assert!((wrap_pi_open_below_f32(3.5) - (3.5 - TAU32)).abs() < 1e-6);
    assert!((wrap_pi_open_below_f32(-3.5) - (-3.5 + TAU32)).abs() < 1e-6);
    assert!((wrap_pi_open_below_f32(10.0) - (10.0 - 2.0 * TAU32)).abs() < 1e-5);
    assert_eq!(wrap_pi_open_below_f32(1.0), 1.0);
}

#[test]
fn one_sphere_px4s_radius() {
    assert_eq!(EARTH_RADIUS_M, 6_371_000.0);
    assert!((M_PER_DEG - 111_194.93).abs() < 0.01);
}
