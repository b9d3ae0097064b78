//! The height above the pad, from the wire only.
//!
//! PX4's `GLOBAL_POSITION_INT.relative_alt` is `alt − HOME_POSITION.altitude`, and PX4 keeps
//! re-estimating the home altitude in flight: on PX4 SITL (SIH) it jumped by up to 1.45 m in a
//! 5 m hover, which fails altitude conditions at random (docs/px4-wire.md §Height). So the
//! height is never read from `relative_alt`. Instead:
//!
//! * **ground truth** ([`HeightSource::GroundTruth`]): a simulator's true altitude
//!   (HIL_STATE_QUATERNION.alt, mm AMSL, which PX4 SITL streams when asked) minus its value at
//!   arming, while a sample is at most [`GROUND_TRUTH_FRESH_MS`] of sim time old;
//! * **AMSL since arm** ([`HeightSource::AmslSinceArm`]) otherwise: GLOBAL_POSITION_INT.alt
//!   minus its value at arming (measured within 0.73 m of the truth on PX4: EKF lag in the
//!   climb, 0.1–0.2 m in the hover).
//!
//! Both references ("pads") are latched on the disarmed→armed edge of the heartbeat; before the
//! first arming, the first sample is the pad. Ground truth that starts only after arming (or
//! was stale at arming) takes its pad from the AMSL estimate of the moment it comes, so the
//! height does not restart at zero.

/// How old (sim time) the newest ground-truth sample may be for the height to use it, ms.
/// PX4 streams it at 25 Hz when asked (40 ms); 500 ms rides out a dozen lost samples yet
/// switches to the AMSL estimate well within a second of the stream stopping.
pub const GROUND_TRUTH_FRESH_MS: u64 = 500;

/// Where a height above the pad came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum HeightSource {
    /// The simulator's true altitude (HIL_STATE_QUATERNION) minus its value at arming.
    GroundTruth,
    /// GLOBAL_POSITION_INT.alt (the estimate, AMSL) minus its value at arming.
    AmslSinceArm,
}

impl HeightSource {
    /// The report's name: `ground_truth` or `amsl_since_arm`.
    pub fn name(self) -> &'static str {
        match self {
            HeightSource::GroundTruth => "ground_truth",
            HeightSource::AmslSinceArm => "amsl_since_arm",
        }
    }
}

/// The samples and pads the height is computed from (all altitudes mm AMSL).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct PadHeights {
    truth_mm: Option<i32>,
    /// Sim time the newest truth sample arrived at; `None` when no clock was known then.
    truth_at_ms: Option<u64>,
    truth_pad_mm: Option<i32>,
    amsl_mm: Option<i32>,
    amsl_pad_mm: Option<i32>,
    armed: bool,
}

impl PadHeights {
    /// A heartbeat's armed flag at sim time `now_ms`: the disarmed→armed edge latches both
    /// pads. Ground truth that is not fresh then is forgotten as a pad: when it comes back, its
    /// pad follows from the AMSL estimate (the vehicle may have moved meanwhile).
    pub fn on_armed(&mut self, armed: bool, now_ms: Option<u64>) {
        if armed && !self.armed {
            self.truth_pad_mm = if self.truth_fresh(now_ms) {
                self.truth_mm
            } else {
                None
            };
            if let Some(a) = self.amsl_mm {
                self.amsl_pad_mm = Some(a);
            }
        }
        self.armed = armed;
    }

    /// A ground-truth altitude, mm AMSL, arriving at sim time `sim_ms`.
    #[cfg(feature = "ground-truth")] // only its HIL_STATE_QUATERNION is taken in
    pub fn on_truth(&mut self, alt_mm: i32, sim_ms: Option<u64>) {
        if self.truth_pad_mm.is_none() {
            // First sample: on the pad unless already armed, where the AMSL estimate says
            // how far above it we are.
            let above_mm = match (self.armed, self.amsl_mm, self.amsl_pad_mm) {
                (true, Some(a), Some(p)) => a.saturating_sub(p),
                _ => 0,
            };
            self.truth_pad_mm = Some(alt_mm.saturating_sub(above_mm));
        }
        self.truth_mm = Some(alt_mm);
        self.truth_at_ms = sim_ms;
    }

    /// A GLOBAL_POSITION_INT.alt, mm AMSL.
    pub fn on_amsl(&mut self, alt_mm: i32) {
        if self.amsl_pad_mm.is_none() {
            self.amsl_pad_mm = Some(alt_mm);
        }
        self.amsl_mm = Some(alt_mm);
    }

    /// Whether the newest ground-truth sample is fresh at sim time `now_ms`.
    pub fn truth_fresh(&self, now_ms: Option<u64>) -> bool {
        // Without the feature no sample is taken in: the ground-truth paths fold away.
        if !cfg!(feature = "ground-truth") || self.truth_mm.is_none() {
            return false;
        }
        match (self.truth_at_ms, now_ms) {
            (Some(at), Some(now)) => now.saturating_sub(at) <= GROUND_TRUTH_FRESH_MS,
            // No clock at all yet: the sample is the newest thing there is.
            (None, None) => true,
            // The clock came after the sample: it cannot be dated, so it is not fresh.
            _ => false,
        }
    }

    /// Height above the pad, m, and where it came from, at sim time `now_ms`.
    pub fn height(&self, now_ms: Option<u64>) -> Option<(f32, HeightSource)> {
        if self.truth_fresh(now_ms) {
            if let (Some(t), Some(p)) = (self.truth_mm, self.truth_pad_mm) {
                return Some((mm_to_m(t, p), HeightSource::GroundTruth));
            }
        }
        match (self.amsl_mm, self.amsl_pad_mm) {
            (Some(a), Some(p)) => Some((mm_to_m(a, p), HeightSource::AmslSinceArm)),
            _ => None,
        }
    }
}

fn mm_to_m(alt_mm: i32, pad_mm: i32) -> f32 {
    // In i64: two extreme i32 altitudes cannot overflow the difference.
    (alt_mm as i64 - pad_mm as i64) as f32 / 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_sample_is_the_pad_until_arming_relatches() {
        let mut h = PadHeights::default();
        h.on_amsl(488_000);
        h.on_amsl(488_400);
        assert_eq!(h.height(None), Some((0.4, HeightSource::AmslSinceArm)));
        h.on_armed(true, None);
        assert_eq!(h.height(None).unwrap().0, 0.0);
        h.on_amsl(493_400);
        assert_eq!(h.height(None).unwrap().0, 5.0);
    }

    #[test]
    #[cfg(feature = "ground-truth")] // a sample is fresh only with it
    fn truth_starting_in_flight_continues_the_amsl_height() {
        let mut h = PadHeights::default();
        h.on_amsl(488_000);
        h.on_armed(true, None);
        h.on_amsl(492_000);
        h.on_truth(600_000, Some(1_000));
        let (m, src) = h.height(Some(1_000)).unwrap();
        assert_eq!((m, src), (4.0, HeightSource::GroundTruth));
        h.on_truth(601_000, Some(1_040));
        assert_eq!(h.height(Some(1_040)).unwrap().0, 5.0);
    }

    #[test]
    #[cfg(feature = "ground-truth")] // a sample is fresh only with it
    fn stale_truth_gives_way_to_amsl() {
        let mut h = PadHeights::default();
        h.on_amsl(488_000);
        h.on_truth(100_000, Some(0));
        let fresh = Some(GROUND_TRUTH_FRESH_MS);
        assert_eq!(h.height(fresh).unwrap().1, HeightSource::GroundTruth);
        let stale = Some(GROUND_TRUTH_FRESH_MS + 1);
        assert_eq!(h.height(stale).unwrap().1, HeightSource::AmslSinceArm);
        // Undatable: sample without a clock, clock afterwards.
        let mut u = PadHeights::default();
        u.on_truth(100_000, None);
        assert!(u.truth_fresh(None) && !u.truth_fresh(Some(0)));
    }

    #[test]
    #[cfg(feature = "ground-truth")] // a sample is fresh only with it
    fn stale_truth_at_arming_takes_its_pad_from_the_estimate() {
        let mut h = PadHeights::default();
        h.on_amsl(488_000);
        h.on_truth(100_000, Some(0));
        h.on_armed(true, Some(10_000)); // truth 10 s old: not a pad
        h.on_amsl(490_000);
        h.on_truth(102_500, Some(10_100));
        assert_eq!(
            h.height(Some(10_100)),
            Some((2.0, HeightSource::GroundTruth))
        );
    }

    #[test]
    fn extreme_altitudes_do_not_overflow() {
        let mut h = PadHeights::default();
        h.on_amsl(i32::MIN);
        h.on_armed(true, None);
        h.on_amsl(i32::MAX);
        assert!(h.height(None).unwrap().0 > 4.0e6);
    }
}
