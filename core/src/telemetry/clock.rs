//! The autopilot's clock, made monotonic.
//!
//! PX4 stamps SYSTEM_TIME, ATTITUDE, GLOBAL_POSITION_INT and LOCAL_POSITION_NED with
//! `time_boot_ms` (simulated time under SITL lockstep). Streams sample at slightly different
//! moments, so the clock is the newest stamp seen, never a step back. A step back of more than
//! [`REBOOT_BACKSTEP_MS`] is the autopilot rebooting: the clock keeps counting from where it was
//! (so no wait ever waits on a clock that restarted) and [`SimClock::reboots`] goes up.

/// A backwards jump in `time_boot_ms` larger than this is a reboot, not jitter.
pub const REBOOT_BACKSTEP_MS: u32 = 5_000;

/// Monotonic autopilot time in ms; equals `time_boot_ms` until a reboot or 32-bit wrap.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct SimClock {
    now_ms: Option<u64>,
    /// `now_ms - last_raw`, the offset that keeps time monotonic over reboots and wraps.
    offset_ms: u64,
    last_raw: u32,
    reboots: u32,
}

impl SimClock {
    /// A clock that has seen nothing.
    pub const fn new() -> Self {
        SimClock {
            now_ms: None,
            offset_ms: 0,
            last_raw: 0,
            reboots: 0,
        }
    }

    /// Current sim time, ms; `None` before the first stamp.
    pub fn now_ms(&self) -> Option<u64> {
        self.now_ms
    }

    /// How many reboots (large backwards steps) have been seen.
    pub fn reboots(&self) -> u32 {
        self.reboots
    }

    /// Take in one `time_boot_ms` stamp.
    pub fn observe(&mut self, raw: u32) {
        let Some(now) = self.now_ms else {
            self.now_ms = Some(raw as u64);
            self.last_raw = raw;
            return;
        };
        if raw >= self.last_raw {
            let t = self.offset_ms + raw as u64;
            if t > now {
                self.now_ms = Some(t);
            }
            self.last_raw = raw;
            return;
        }
        let back = self.last_raw - raw;
        if back > u32::MAX / 2 {
            // 32-bit wrap after ~49.7 days.
            self.offset_ms += 1u64 << 32;
        } else if back > REBOOT_BACKSTEP_MS {
            self.reboots += 1;
            self.offset_ms = now;
        } else {
            return; // jitter between streams: keep the newest
        }
        self.last_raw = raw;
        self.now_ms = Some(now.max(self.offset_ms + raw as u64));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jitter_never_steps_back() {
        let mut c = SimClock::new();
        assert_eq!(c.now_ms(), None);
        c.observe(1000);
        c.observe(995);
        assert_eq!(c.now_ms(), Some(1000));
        c.observe(1010);
        assert_eq!(c.now_ms(), Some(1010));
        assert_eq!(c.reboots(), 0);
    }

    #[test]
    fn reboot_keeps_counting() {
        let mut c = SimClock::new();
        c.observe(60_000);
        c.observe(100);
        assert_eq!(c.reboots(), 1);
        assert_eq!(c.now_ms(), Some(60_100));
        c.observe(1_100);
        assert_eq!(c.now_ms(), Some(61_100));
    }

    #[test]
    fn wraps_after_49_days() {
        let mut c = SimClock::new();
        c.observe(u32::MAX - 10);
        c.observe(5);
        assert_eq!(c.now_ms(), Some((1u64 << 32) + 5));
        assert_eq!(c.reboots(), 0);
    }
}
