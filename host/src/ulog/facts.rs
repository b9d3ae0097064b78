//! What PX4's log says about the facts a verdict rests on: arming and disarming, the land
//! detector, the height, the modes, failsafes and the mission's result, each with its time in
//! µs of PX4's boot clock.
//!
//! Read from PX4's topics (names and values of PX4's `msg/` definitions):
//! * `vehicle_status.arming_state` (1 disarmed, 2 armed), `.nav_state` (as
//!   [`nexus_core::Mode::from_nav_state`]), `.failsafe`;
//! * `vehicle_land_detected.landed`;
//! * `vehicle_local_position.z` (NED, m): the height is `-(z - z0)`, `z0` the last `z` at or
//!   before the first arming (the first `z` if it never armed), as the link's height is from
//!   the pad at arming;
//! * `mission_result.finished`, `.seq_reached`.

use super::Ulog;
use nexus_core::Mode;

/// The topics the facts are read from.
pub const TOPICS: [&str; 4] = [
    "vehicle_status",
    "vehicle_land_detected",
    "vehicle_local_position",
    "mission_result",
];

/// What PX4's log says.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Facts {
    /// The first and last timestamps of the topics read, µs.
    pub span_us: Option<(u64, u64)>,
    /// Times the vehicle armed, µs.
    pub arms: Vec<u64>,
    /// Times it disarmed, µs.
    pub disarms: Vec<u64>,
    /// The land detector's changes: (µs, landed).
    pub landed: Vec<(u64, bool)>,
    /// Highest height above the pad at arming, m, and when.
    pub max_height_m: Option<(f32, u64)>,
    /// Mode changes: (µs, mode); the first entry is the mode at the log's start.
    pub modes: Vec<(u64, Mode)>,
    /// Failsafe changes: (µs, in failsafe).
    pub failsafe: Vec<(u64, bool)>,
    /// When `mission_result.finished` first became true, µs.
    pub mission_finished_us: Option<u64>,
    /// The highest `mission_result.seq_reached` (−1: none).
    pub mission_seq_reached: Option<i32>,
    /// Which of [`TOPICS`] the log lacks.
    pub missing_topics: Vec<&'static str>,
}

/// The changes of a series treated as a flag (`v != 0`): the first value, then each change.
fn changes(series: &[(u64, f64)], on: impl Fn(f64) -> bool) -> Vec<(u64, bool)> {
    let mut out: Vec<(u64, bool)> = Vec::new();
    for &(t, v) in series {
        let b = on(v);
        if out.last().is_none_or(|&(_, last)| last != b) {
            out.push((t, b));
        }
    }
    out
}

impl Facts {
    /// The facts of `log`.
    pub fn of(log: &Ulog) -> Facts {
        let mut f = Facts {
            missing_topics: TOPICS
                .iter()
                .copied()
                .filter(|t| !log.has_topic(t))
                .collect(),
            ..Facts::default()
        };
        let arming = log.series("vehicle_status", "arming_state");
        let armed = changes(&arming, |v| v == 2.0);
        for (i, &(t, a)) in armed.iter().enumerate() {
            match (a, i) {
                (true, _) => f.arms.push(t),
                // A log that starts disarmed does not disarm then.
                (false, 0) => {}
                (false, _) => f.disarms.push(t),
            }
        }
        f.landed = changes(&log.series("vehicle_land_detected", "landed"), |v| v != 0.0);
        f.failsafe = changes(&log.series("vehicle_status", "failsafe"), |v| v != 0.0);
        let mut last_mode = None;
        for (t, n) in log.series("vehicle_status", "nav_state") {
            let m = Mode::from_nav_state(n as u8).unwrap_or(Mode::Unknown { main: 0, sub: 0 });
            if last_mode != Some(m) {
                f.modes.push((t, m));
                last_mode = Some(m);
            }
        }
        let z = log.series("vehicle_local_position", "z");
        let first_arm = f.arms.first().copied();
        let z0 = match first_arm {
            Some(t) => z
                .iter()
                .take_while(|&&(ts, _)| ts <= t)
                .last()
                .or(z.first())
                .map(|&(_, v)| v),
            None => z.first().map(|&(_, v)| v),
        };
        if let Some(z0) = z0 {
            for &(t, v) in &z {
                if !v.is_finite() {
                    continue;
                }
                let h = -(v - z0) as f32;
                if f.max_height_m.is_none_or(|(m, _)| h > m) {
                    f.max_height_m = Some((h, t));
                }
            }
        }
        f.mission_finished_us = log
            .series("mission_result", "finished")
            .iter()
            .find(|&&(_, v)| v != 0.0)
            .map(|&(t, _)| t);
        f.mission_seq_reached = log
            .series("mission_result", "seq_reached")
            .iter()
            .map(|&(_, v)| v as i32)
            .max();
        let mut lo = u64::MAX;
        let mut hi = 0;
        for t in TOPICS {
            for (ts, _) in log.series(t, "timestamp") {
                lo = lo.min(ts);
                hi = hi.max(ts);
            }
        }
        f.span_us = (lo <= hi).then_some((lo, hi));
        f
    }

    /// Landings: times the land detector went to landed after being in the air.
    pub fn landings(&self) -> Vec<u64> {
        self.landed
            .windows(2)
            .filter(|w| !w[0].1 && w[1].1)
            .map(|w| w[1].0)
            .collect()
    }

    /// Takeoffs: times the land detector left landed.
    pub fn takeoffs(&self) -> Vec<u64> {
        self.landed
            .iter()
            .filter(|(_, l)| !l)
            .map(|&(t, _)| t)
            .collect()
    }

    /// Whether the vehicle was ever in failsafe.
    pub fn had_failsafe(&self) -> bool {
        self.failsafe.iter().any(|&(_, f)| f)
    }
}
