//! The compiled condition and whether it holds on a set of readings.

use super::readings::{dep, Readings};
use super::spec::Needle;
#[cfg(feature = "extra-conditions")]
use super::spec::Place;
use crate::mode::Mode;
use crate::telemetry::TextLog;

/// A numeric comparison, thresholds in the reading's own unit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Cmp {
    Ge(f32),
    Le(f32),
    Eq(f32),
    /// (target, tolerance)
    Within(f32, f32),
}

impl Cmp {
    #[inline]
    fn test(self, v: f32) -> bool {
        match self {
            Cmp::Ge(t) => v >= t,
            Cmp::Le(t) => v <= t,
            Cmp::Eq(t) => v == t,
            Cmp::Within(t, tol) => libm::fabsf(v - t) <= tol,
        }
    }
}

/// A comparison on the sim clock, integer ms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CmpMs {
    Ge(u64),
    Le(u64),
    Eq(u64),
    /// (target, tolerance)
    Within(u64, u64),
}

impl CmpMs {
    #[inline]
    fn test(self, v: u64) -> bool {
        match self {
            CmpMs::Ge(t) => v >= t,
            CmpMs::Le(t) => v <= t,
            CmpMs::Eq(t) => v == t,
            CmpMs::Within(t, tol) => v.abs_diff(t) <= tol,
        }
    }
}

/// |a − b| around the circle, degrees in [0, 180].
#[cfg(feature = "extra-conditions")]
fn angle_diff_deg(a: f32, b: f32) -> f32 {
    let d = libm::fmodf(libm::fabsf(a - b), 360.0);
    if d > 180.0 {
        360.0 - d
    } else {
        d
    }
}

/// A compiled condition with its own small state (the text cursor).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Cond {
    Height(Cmp),
    Airspeed(Cmp),
    Waypoint(Cmp),
    SimTime {
        cmp: CmpMs,
        relative: bool,
    },
    Time {
        ms: u64,
    },
    Mode(Mode),
    /// `cursor`: the newest seq already looked at; `seen`: a match was found (texts are events,
    /// so once seen the condition stays met).
    Text {
        needle: Needle,
        cursor: u32,
        seen: bool,
    },
    Armed,
    Disarmed,
    Landed,
    Reached(Cmp),
    MissionComplete,
    MissionVerified,
    #[cfg(feature = "extra-conditions")]
    AtTarget,
    #[cfg(feature = "extra-conditions")]
    Distance(Cmp, Place),
    #[cfg(feature = "extra-conditions")]
    Groundspeed(Cmp),
    #[cfg(feature = "extra-conditions")]
    ClimbRate(Cmp),
    #[cfg(feature = "extra-conditions")]
    Heading(Cmp),
    #[cfg(feature = "extra-conditions")]
    BatteryRemaining(Cmp),
    #[cfg(feature = "extra-conditions")]
    BatteryVoltage(Cmp),
    #[cfg(feature = "extra-conditions")]
    GpsFix(Cmp),
    #[cfg(feature = "extra-conditions")]
    Satellites(Cmp),
    #[cfg(feature = "extra-conditions")]
    LandedState(u8),
    #[cfg(feature = "extra-conditions")]
    VtolState(u8),
}

/// Whether a reported state (a MAV_LANDED_STATE, a MAV_VTOL_STATE) is in `mask`
/// (bit `1 << state`); never before the first report.
#[cfg(feature = "extra-conditions")]
fn in_set(state: Option<u8>, mask: u8) -> bool {
    state.is_some_and(|v| v < 8 && mask & (1 << v) != 0)
}

/// Whether a text after seq `after` contains `needle`: only called when a new text arrived.
#[cold]
#[inline(never)]
fn scan_texts<const T: usize>(texts: &TextLog<T>, after: u32, needle: &Needle) -> bool {
    texts
        .after(after)
        .any(|t| contains(t.text.as_bytes(), needle.as_bytes()))
}

/// `haystack.contains(needle)` for byte strings, by plain comparison at each offset. Texts and
/// needles are short (a STATUSTEXT, [`MAX_NEEDLE_LEN`](super::super::MAX_NEEDLE_LEN) bytes), and `str::contains`'s Two-Way
/// searcher is ~1.4 KiB of flash on thumbv7em. On UTF-8 it finds exactly what `str::contains`
/// finds.
pub(crate) fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    needle.is_empty() || haystack.windows(needle.len()).any(|w| w == needle)
}

impl Cond {
    /// Whether the vehicle's answer about what this condition reads is still on its way
    /// ([`crate::mission::MissionProgress::settling`]): the wait's guards are held until it
    /// comes, so a guard cannot beat a report the link delayed.
    pub(crate) fn settling(&self, r: &Readings) -> bool {
        matches!(self, Cond::Reached(_) | Cond::MissionComplete)
            && r.mission.is_some_and(|m| m.settling)
    }

    /// Whether the condition holds now. `start_ms`: the wait's start on the sim clock;
    /// `base_ms`: the reference tick of a relative sim_time. Unknown readings never hold.
    #[inline]
    pub(crate) fn holds<const T: usize>(
        &mut self,
        r: &Readings,
        texts: &TextLog<T>,
        start_ms: Option<u64>,
        base_ms: Option<u64>,
    ) -> bool {
        // One match: the plain numeric rows fall through to one comparison site (so
        // `Cmp::test` is inlined once), every other row answers in its arm.
        let (c, v) = match self {
            Cond::Height(c) => (*c, r.height_m),
            Cond::Airspeed(c) => (*c, r.airspeed_m_s),
            Cond::Waypoint(c) => (*c, r.waypoint.map(|v| v as f32)),
            Cond::Reached(c) => (*c, r.mission.and_then(|m| m.reached).map(|v| v as f32)),
            #[cfg(feature = "extra-conditions")]
            Cond::Groundspeed(c) => (*c, r.extra.groundspeed_m_s),
            #[cfg(feature = "extra-conditions")]
            Cond::ClimbRate(c) => (*c, r.extra.climb_m_s),
            #[cfg(feature = "extra-conditions")]
            Cond::BatteryRemaining(c) => (*c, r.extra.battery_pct),
            #[cfg(feature = "extra-conditions")]
            Cond::BatteryVoltage(c) => (*c, r.extra.battery_v),
            #[cfg(feature = "extra-conditions")]
            Cond::GpsFix(c) => (*c, r.extra.gps_fix.map(|v| v as f32)),
            #[cfg(feature = "extra-conditions")]
            Cond::Satellites(c) => (*c, r.extra.satellites.map(|v| v as f32)),
            Cond::SimTime { cmp, relative } => {
                // The clock reading compared: absolute, or since the reference tick. One
                // comparison site, so `CmpMs::test` is inlined once.
                let t = match (r.sim_ms, *relative, base_ms) {
                    (Some(t), false, _) => Some(t),
                    (Some(t), true, Some(b)) => Some(t.saturating_sub(b)),
                    _ => None,
                };
                return t.is_some_and(|t| cmp.test(t));
            }
            Cond::Time { ms } => {
                return match (r.sim_ms, start_ms) {
                    (Some(t), Some(s)) => t.saturating_sub(s) >= *ms,
                    _ => false,
                }
            }
            Cond::Mode(m) => return r.mode == Some(*m),
            Cond::Text {
                needle,
                cursor,
                seen,
            } => {
                if !*seen && r.last_seq > *cursor {
                    *seen = scan_texts(texts, *cursor, needle);
                    *cursor = r.last_seq;
                }
                return *seen;
            }
            Cond::Armed => return r.armed == Some(true),
            Cond::Disarmed => return r.armed == Some(false),
            Cond::Landed => return r.landed == Some(true),
            Cond::MissionComplete => return r.mission.is_some_and(|m| m.complete),
            Cond::MissionVerified => return r.mission.is_some_and(|m| m.verified),
            #[cfg(feature = "extra-conditions")]
            Cond::AtTarget => return r.extra.at_target == Some(true),
            #[cfg(feature = "extra-conditions")]
            Cond::Distance(c, to) => return r.extra.distance_m(to).is_some_and(|v| c.test(v)),
            #[cfg(feature = "extra-conditions")]
            Cond::Heading(c) => {
                return r.extra.heading_deg.is_some_and(|v| match *c {
                    Cmp::Within(t, tol) => angle_diff_deg(v, t) <= tol,
                    c => c.test(v),
                })
            }
            #[cfg(feature = "extra-conditions")]
            Cond::LandedState(mask) => return in_set(r.extra.landed_state, *mask),
            #[cfg(feature = "extra-conditions")]
            Cond::VtolState(mask) => return in_set(r.extra.vtol_state, *mask),
        };
        v.is_some_and(|v| c.test(v))
    }

    /// The readings whose change can change this condition (time is handled by
    /// [`Cond::wake_ms`]).
    pub(crate) fn deps(&self) -> dep::Deps {
        match self {
            Cond::Height(_) => dep::HEIGHT,
            Cond::Airspeed(_) => dep::AIRSPEED,
            Cond::Waypoint(_) => dep::WAYPOINT,
            Cond::SimTime { .. } | Cond::Time { .. } => 0,
            Cond::Mode(_) => dep::MODE,
            Cond::Text { .. } => dep::TEXT,
            Cond::Armed | Cond::Disarmed => dep::ARMED,
            Cond::Landed => dep::LANDED,
            Cond::Reached(_) | Cond::MissionComplete | Cond::MissionVerified => dep::MISSION,
            #[cfg(feature = "extra-conditions")]
            Cond::AtTarget => dep::AT_TARGET,
            #[cfg(feature = "extra-conditions")]
            Cond::Distance(..) => dep::POSITION,
            #[cfg(feature = "extra-conditions")]
            Cond::Groundspeed(_) | Cond::ClimbRate(_) => dep::VFR,
            #[cfg(feature = "extra-conditions")]
            Cond::Heading(_) => dep::HEADING,
            #[cfg(feature = "extra-conditions")]
            Cond::BatteryRemaining(_) | Cond::BatteryVoltage(_) => dep::BATTERY,
            #[cfg(feature = "extra-conditions")]
            Cond::GpsFix(_) | Cond::Satellites(_) => dep::GPS,
            #[cfg(feature = "extra-conditions")]
            Cond::LandedState(_) | Cond::VtolState(_) => dep::LANDED_STATE,
        }
    }

    /// For a condition that does not hold at sim time `sim`: the earliest sim time at which
    /// the passing of time alone could make it hold (`u64::MAX`: never, only a reading can).
    /// sim_time and time only move forward, so each has one window `[lower, upper]`; once
    /// past its start without holding, it never will.
    pub(crate) fn wake_ms(&self, sim: u64, start: Option<u64>, base: Option<u64>) -> u64 {
        let at = match *self {
            Cond::Time { ms } => match start {
                Some(s) => s.saturating_add(ms),
                None => return u64::MAX,
            },
            Cond::SimTime { cmp, relative } => {
                let origin = match (relative, base) {
                    (false, _) => 0,
                    (true, Some(b)) => b,
                    (true, None) => return u64::MAX,
                };
                let lower = match cmp {
                    CmpMs::Ge(t) | CmpMs::Eq(t) => t,
                    CmpMs::Le(_) => 0,
                    CmpMs::Within(t, tol) => t.saturating_sub(tol),
                };
                origin.saturating_add(lower)
            }
            _ => return u64::MAX,
        };
        if at > sim {
            at
        } else {
            u64::MAX
        }
    }

    /// The newest text seq this condition has looked at, for a text condition.
    pub(crate) fn text_cursor(&self) -> Option<u32> {
        match self {
            Cond::Text { cursor, .. } => Some(*cursor),
            _ => None,
        }
    }

    /// Whether this is a relative sim_time.
    pub(crate) fn is_relative(&self) -> bool {
        matches!(self, Cond::SimTime { relative: true, .. })
    }
}
