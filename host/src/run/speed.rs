//! A run's speed factor (sim time per wall time): the range the built-in vehicle keeps up with,
//! and the check of a factor against a range.

/// Slowest speed factor: at ×0.1 a 60 s start already takes 10 minutes of wall time. A wait's
/// wall-time bound ([`super::wall_bound`]) counts a slower (or invalid) factor as this one.
pub const SPEED_MIN: f64 = 0.1;

/// Fastest speed factor of the built-in vehicle. Its real-time pacing meets ×500: measured
/// (`cargo bench -p nexus-sim --bench pacing`, a vehicle serving one client at full stream
/// rates, 2 shared cores), ×10 to ×500 each achieved 0.999–1.001 of the factor asked. A flight
/// keeps up too since the client's retry timers follow the measured round trip (in the
/// vehicle's clock, so a pump lagging the stream at ×500 makes them longer, not a flood of
/// resends) and the vehicle takes in datagrams while it catches up after a preemption (before,
/// PX4's 5 s mission protocol timeout, 10 ms of wall at ×500, ran out with the client's answer
/// unread): `nexus fly examples/box.plan --speed 500` passed 10 of 10 in a debug build (×94–441
/// achieved on a machine at load 9–10) and 8 of 8 in a release build (×489–500). Before, a
/// debug flight failed above ×250. Faster is lockstep ([`super::RunClock::Max`]).
///
/// A `speedup` of a running built-in vehicle ([`super::Run::set_speed`]) outside
/// [`SPEED_MIN`]..=[`SIM_SPEED_MAX`] is refused: its clock would fall behind and look stopped.
pub const SIM_SPEED_MAX: f64 = 500.0;

/// Check a speed factor named `what` (`--speed`, `the speed factor`, …) against
/// [`SPEED_MIN`]..=`max` on `vehicle` (its name in the message: "the built-in simulated
/// vehicle", "PX4 SITL"). The factor, or a message that says the range (never a panic, on any
/// value).
pub fn check_speed(what: &str, factor: f64, max: f64, vehicle: &str) -> Result<f64, String> {
    if factor.is_finite() && (SPEED_MIN..=max).contains(&factor) {
        Ok(factor)
    } else {
        Err(format!(
            "{what} must be a positive number from {SPEED_MIN} to {max} on {vehicle}, got {factor}"
        ))
    }
}

/// [`check_speed`] on the built-in vehicle: [`SPEED_MIN`]..=[`SIM_SPEED_MAX`].
pub(crate) fn check_sim_speed(what: &str, factor: f64) -> Result<f64, String> {
    check_speed(
        what,
        factor,
        SIM_SPEED_MAX,
        "the built-in simulated vehicle",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_speed_is_checked_against_its_range() {
        assert_eq!(check_sim_speed("s", SIM_SPEED_MAX), Ok(SIM_SPEED_MAX));
        assert_eq!(check_sim_speed("s", SPEED_MIN), Ok(SPEED_MIN));
        assert!(check_sim_speed("s", SIM_SPEED_MAX + 0.1).is_err());
        assert_eq!(check_speed("s", 20.0, 20.0, "PX4 SITL"), Ok(20.0));
        for bad in [0.0, 1e-9, -1.0, 1e9, f64::NAN, f64::INFINITY] {
            let e = check_sim_speed("the speed factor", bad).unwrap_err();
            assert!(
                e.starts_with("the speed factor must be a positive number from 0.1 to 500 on the built-in simulated vehicle"),
                "{e}"
            );
        }
    }
}
