//! The machine's settings: the Python `OffboardClient`'s keyword arguments plus the pacing,
//! retry and give-up limits the Python client leaves implicit.

use super::rtt::RttEstimator;
use crate::time::secs_to_ms;

/// Settings of an [`super::Offboard`] machine. `Default` is the Python client's defaults.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct OffboardConfig {
    /// 3D arrival radius for `at_target` after a goto, m (Python client: 2.0).
    pub arrive_m: f32,
    /// Heading tolerance for `at_target` when a goto commanded a yaw, rad (Python client: 5°).
    pub yaw_tol_rad: f32,
    /// Altitude tolerance for `at_target` after a takeoff, m (Python client: 1.0).
    pub alt_tol_m: f32,
    /// Seconds the vehicle must be failure-free, counted from the arm request, before an arm
    /// goes out (Python client: 5.0). Sim seconds once sim time is known.
    pub wait_clear_s: f32,
    /// Our HEARTBEAT period, ms (1 Hz, as a GCS sends it).
    pub heartbeat_period_ms: u32,
    /// MANUAL_CONTROL stream period, ms (20 Hz: PX4 wants ≥ 2 Hz, SITL uses 20).
    pub rc_period_ms: u32,
    /// Re-command interval for an unconfirmed mode, arm or MISSION_SET_CURRENT, s. Must exceed
    /// the up-to-1-s lag of PX4's heartbeat behind its acks, so a command that worked is not
    /// sent again before the heartbeat can show it. The floor of the measured retry timer
    /// (`offboard::rtt`): a link with a longer round trip waits longer.
    pub command_retry_s: f32,
    /// Refusals (COMMAND_ACK other than ACCEPTED, or a gesture that did not arm) after which a
    /// request is given up and reported.
    pub max_refusals: u8,
    /// Sends without confirmation (no ack, or accepted but never shown) after which a request
    /// is given up and reported.
    pub max_sends: u8,
    /// How long the arm gesture is held without the vehicle arming before the attempt counts
    /// as refused, s (PX4 arms after ~1 s of gesture, COM_RC_ARM_HYST).
    pub gesture_hold_s: f32,
    /// After a refusal, how long STATUSTEXTs are still collected as its explanation, ms (either
    /// clock). PX4 sends the text and the ack within milliseconds of each other, in either order.
    pub refusal_text_ms: u32,
    /// Resend interval for an unanswered MISSION_COUNT, MISSION_REQUEST_LIST,
    /// MISSION_REQUEST_INT (download) or MISSION_CLEAR_ALL, s: the floor of the measured
    /// retry timer (`offboard::rtt`), as `command_retry_s` is for commands.
    pub mission_retry_s: f32,
    /// Resends after the first before a mission transfer fails with a timeout.
    pub mission_retries: u8,
    /// Silence from PX4 in the middle of an upload (after its first item request) after which
    /// the upload fails, s. PX4 itself re-requests an item every ~0.26 s for 5 s.
    pub mission_timeout_s: f32,
}

impl Default for OffboardConfig {
    fn default() -> Self {
        OffboardConfig {
            arrive_m: 2.0,
            yaw_tol_rad: 5.0 * core::f32::consts::PI / 180.0,
            alt_tol_m: 1.0,
            wait_clear_s: 5.0,
            heartbeat_period_ms: 1000,
            rc_period_ms: 50,
            command_retry_s: 1.5,
            max_refusals: 5,
            max_sends: 10,
            gesture_hold_s: 3.0,
            refusal_text_ms: 500,
            mission_retry_s: 1.0,
            mission_retries: 4,
            mission_timeout_s: 6.0,
        }
    }
}

/// The config in the integer milliseconds the machine compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub(crate) struct Timing {
    pub wait_clear_ms: u64,
    pub heartbeat_ms: u64,
    pub rc_ms: u64,
    pub retry_ms: u64,
    pub gesture_ms: u64,
    pub text_ms: u64,
    pub mission_retry_ms: u64,
    pub mission_timeout_ms: u64,
    pub max_refusals: u8,
    pub max_sends: u8,
    pub mission_retries: u8,
    /// The link's measured round trip: the retry timers follow it (`super::rtt`).
    pub rtt: RttEstimator,
}

impl Timing {
    /// The re-command timer of a mode, arm or restart, ms: `command_retry_s` or the measured
    /// round trip's, whichever is longer.
    pub fn command_timer_ms(&self) -> u64 {
        self.rtt.timer_ms(self.retry_ms)
    }

    /// The resend timer of a mission-protocol request, ms (floor `mission_retry_s`).
    pub fn mission_timer_ms(&self) -> u64 {
        self.rtt
            .timer_capped_ms(self.mission_retry_ms, super::rtt::MISSION_BACKOFF_CAP_MS)
    }

    /// Sends of a mission-protocol request before it is given up (the first and its retries).
    pub fn mission_sends(&self) -> u8 {
        self.mission_retries + 1
    }

    pub fn from(c: &OffboardConfig) -> Timing {
        Timing {
            wait_clear_ms: secs_to_ms(c.wait_clear_s),
            // A zero period would make a stream due on every poll: at least 1 ms.
            heartbeat_ms: (c.heartbeat_period_ms as u64).max(1),
            rc_ms: (c.rc_period_ms as u64).max(1),
            retry_ms: secs_to_ms(c.command_retry_s).max(1),
            gesture_ms: secs_to_ms(c.gesture_hold_s).max(1),
            text_ms: c.refusal_text_ms as u64,
            mission_retry_ms: secs_to_ms(c.mission_retry_s).max(1),
            mission_timeout_ms: secs_to_ms(c.mission_timeout_s).max(1),
            // Zero would give up before the first try.
            max_refusals: c.max_refusals.max(1),
            max_sends: c.max_sends.max(1),
            // A send counter must be able to exceed it.
            mission_retries: c.mission_retries.min(u8::MAX - 1),
            rtt: RttEstimator::new(),
        }
    }
}
