//! Stick positions for MANUAL_CONTROL, as the Python client's `set_rc` defines them.

/// Normalised stick positions. Roll, pitch and yaw in [-1, 1]; throttle in [0, 1], 0.5 is
/// mid-stick (hover in the position-holding modes).
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct RcSticks {
    /// Roll stick, right positive, [-1, 1].
    pub roll: f32,
    /// Pitch stick, forward positive, [-1, 1].
    pub pitch: f32,
    /// Throttle stick, [0, 1].
    pub throttle: f32,
    /// Yaw stick, right positive, [-1, 1].
    pub yaw: f32,
}

impl Default for RcSticks {
    fn default() -> Self {
        RcSticks::NEUTRAL
    }
}

#[inline(never)] // four calls per use, each with NaN handling and two compares: one copy
fn clamp(v: f32, lo: f32, hi: f32) -> f32 {
    if v.is_nan() {
        // A NaN stick is no input: centre it rather than let it through.
        return if lo < 0.0 { 0.0 } else { 0.5 };
    }
    v.max(lo).min(hi)
}

impl RcSticks {
    /// Centred sticks, throttle at mid: what a manual mode needs to stay put.
    pub const NEUTRAL: RcSticks = RcSticks {
        roll: 0.0,
        pitch: 0.0,
        throttle: 0.5,
        yaw: 0.0,
    };

    /// PX4's arming gesture: throttle down, yaw full right.
    pub const ARM_GESTURE: RcSticks = RcSticks {
        roll: 0.0,
        pitch: 0.0,
        throttle: 0.0,
        yaw: 1.0,
    };

    /// PX4's disarming gesture: throttle down, yaw full left.
    pub const DISARM_GESTURE: RcSticks = RcSticks {
        roll: 0.0,
        pitch: 0.0,
        throttle: 0.0,
        yaw: -1.0,
    };

    /// Sticks clamped to their ranges (NaN centred).
    pub fn clamped(self) -> RcSticks {
        RcSticks {
            roll: clamp(self.roll, -1.0, 1.0),
            pitch: clamp(self.pitch, -1.0, 1.0),
            throttle: clamp(self.throttle, 0.0, 1.0),
            yaw: clamp(self.yaw, -1.0, 1.0),
        }
    }

    /// MANUAL_CONTROL's `(x, y, z, r)`: pitch, roll, throttle, yaw, clamped then scaled by 1000
    /// and truncated toward zero, as the Python client does (`int(clamp(v) * 1000)`).
    pub fn to_manual_control(self) -> (i16, i16, i16, i16) {
        (
            axis(self.pitch, -1.0),
            axis(self.roll, -1.0),
            axis(self.throttle, 0.0),
            axis(self.yaw, -1.0),
        )
    }
}

/// One stick clamped to `[lo, 1]` (NaN centred), scaled by 1000 and truncated toward zero.
#[inline(never)] // four calls, each a clamp and a saturating float-to-int cast: one copy
fn axis(v: f32, lo: f32) -> i16 {
    (clamp(v, lo, 1.0) * 1000.0) as i16
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clamps_and_scales_like_the_python_client() {
        let s = RcSticks {
            roll: 2.0,
            pitch: -0.2345,
            throttle: -1.0,
            yaw: f32::NAN,
        };
        assert_eq!(s.to_manual_control(), (-234, 1000, 0, 0));
        assert_eq!(RcSticks::NEUTRAL.to_manual_control(), (0, 0, 500, 0));
        assert_eq!(RcSticks::ARM_GESTURE.to_manual_control(), (0, 0, 0, 1000));
    }
}
