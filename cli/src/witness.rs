//! The second witness: what PX4's own log (its ULog) says about the facts behind the verdict,
//! next to what the link said, and whether they agree within [`Tolerance`].
//!
//! The facts ([`nexus_host::ulog::facts`] for the log; the flight's trace for the link):
//! * **armed**, **disarmed**: the first arming, and the first disarming after it;
//! * **landed**: the first landing after a takeoff (the land detector; on the link,
//!   EXTENDED_SYS_STATE going to ON_GROUND after another state);
//! * **max height**: above the pad at arming;
//! * **modes**: every mode the link reported must be one PX4's log was in (the log sees
//!   modes too short for a 1 Hz heartbeat, so not the other way round);
//! * **mission**: when the link saw the mission complete, PX4's `mission_result.finished`;
//! * **failsafes**: PX4's log only (the link carries no failsafe flag): reported, not compared.
//!
//! The link saw each change somewhere between two samples of the trace: a log time within that
//! interval, widened by [`Tolerance::time_s`] on each side, agrees. A fact one witness has and
//! the other lacks disagrees ("the link said landed at 64.8 s; PX4's log never landed"); a fact
//! the log has no topic for is `unknown`, never a disagreement.

use super::evidence::Sample;
use nexus_host::ulog::facts::Facts;
use nexus_host::ulog::Ulog;
use serde::Serialize;
use std::path::Path;

/// How far the two witnesses may differ and still agree.
#[derive(Debug, Clone, Copy, Serialize, PartialEq)]
pub struct Tolerance {
    /// Sim seconds either side of the interval the link saw a change in (PX4's heartbeat,
    /// which carries armed and the mode, comes once a second).
    pub time_s: f64,
    /// Metres of maximum height…
    pub height_m: f64,
    /// …or this fraction of it, whichever is more (the link's height and the log's estimate
    /// are not one sensor).
    pub height_fraction: f64,
}

/// The tolerance every run uses.
pub const TOLERANCE: Tolerance = Tolerance {
    time_s: 2.0,
    height_m: 1.0,
    height_fraction: 0.1,
};

/// One fact, as both witnesses tell it.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct FactReport {
    /// `armed`, `disarmed`, `landed`, `max_height`, `modes`, `mission`, `failsafe`.
    pub fact: &'static str,
    /// What the link said, in words.
    pub link: String,
    /// What PX4's log said, in words.
    pub ulog: String,
    /// `agree`, `disagree`, or `unknown` (one side cannot tell) / `not_compared`.
    pub verdict: &'static str,
}

/// The report's `second_witness` section.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct WitnessReport {
    /// The ULog read.
    pub ulog: String,
    /// Whether every compared fact agrees (and the log could be read).
    pub agrees: bool,
    /// The tolerance used.
    pub tolerance: Tolerance,
    /// Each fact.
    pub facts: Vec<FactReport>,
    /// Each disagreement in one sentence, both readings in it.
    pub disagreements: Vec<String>,
    /// Why the log could not be kept or read, if it could not.
    pub error: Option<String>,
    /// What reading it found: bytes, logged topics of the facts missing, damaged messages
    /// skipped, where it was cut short.
    pub read: Option<ReadReport>,
    /// How the log came over MAVLink's log transfer (`--connect`); `null` when it was kept
    /// from PX4's working directory or written by the built-in vehicle.
    pub transfer: Option<TransferReport>,
}

/// What fetching the log over MAVLink took.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct TransferReport {
    /// The vehicle's id of the log.
    pub log_id: u16,
    /// Its size, bytes (all of them written to the file).
    pub bytes: u32,
    /// When the vehicle last wrote it, s since the Unix epoch (its clock).
    pub time_utc_s: u32,
    /// Logs the vehicle listed.
    pub logs_listed: u16,
    /// Listings made (the newest log's size compared between two).
    pub listings: u32,
    /// LOG_REQUEST_DATA sent, the first of each window and every re-request.
    pub data_requests: u32,
    /// Of those, requests for missing chunks.
    pub re_requests: u32,
    /// Retry timers that ran out (the stream stalled).
    pub timeouts: u32,
    /// Chunks that came twice.
    pub duplicate_chunks: u32,
    /// The download's wall time, s.
    pub wall_s: f64,
}

impl From<&nexus_host::ulog::fetch::Fetched> for TransferReport {
    fn from(f: &nexus_host::ulog::fetch::Fetched) -> Self {
        TransferReport {
            log_id: f.entry.id,
            bytes: f.entry.size_bytes,
            time_utc_s: f.entry.time_utc_s,
            logs_listed: f.listed,
            listings: f.listings,
            data_requests: f.stats.data_requests,
            re_requests: f.stats.re_requests,
            timeouts: f.stats.timeouts,
            duplicate_chunks: f.stats.duplicates,
            wall_s: f.download_wall.as_secs_f64(),
        }
    }
}

/// What reading the ULog found.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ReadReport {
    /// The file's size.
    pub bytes: u64,
    /// Which of the facts' topics it lacks.
    pub missing_topics: Vec<&'static str>,
    /// Messages skipped because their contents did not fit their kind.
    pub damaged_messages: u64,
    /// Where the file ended inside a message, if it did.
    pub truncated_at: Option<u64>,
    /// PX4's clock span of the facts' topics, s.
    pub span_s: Option<(f64, f64)>,
}

/// When the link saw a change: after `from_ms` (the sample before), by `at_ms`.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Seen {
    from_ms: u64,
    at_ms: u64,
}

impl Seen {
    fn text(self) -> String {
        if self.at_ms.saturating_sub(self.from_ms) <= 100 {
            format!("at {:.1} s", self.at_ms as f64 / 1000.0)
        } else {
            format!(
                "at {:.1} s (between {:.1} and {:.1} s)",
                self.at_ms as f64 / 1000.0,
                self.from_ms as f64 / 1000.0,
                self.at_ms as f64 / 1000.0
            )
        }
    }

    fn agrees(self, ulog_us: u64, tol: &Tolerance) -> bool {
        let t = ulog_us as f64 / 1e6;
        t >= self.from_ms as f64 / 1000.0 - tol.time_s
            && t <= self.at_ms as f64 / 1000.0 + tol.time_s
    }
}

/// The link's facts, from the flight's trace.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LinkFacts {
    armed: Option<Seen>,
    disarmed: Option<Seen>,
    landed: Option<Seen>,
    max_height_m: Option<(f32, u64)>,
    /// When the trace had a height, ms: a maximum it did not sample near is one it cannot
    /// speak for.
    height_at_ms: Vec<u64>,
    modes: Vec<(u64, String)>,
    /// Whether the link saw the mission complete (`None`: no mission in this command).
    pub mission_complete: Option<bool>,
}

impl LinkFacts {
    /// The facts of `trace`.
    pub fn of(trace: &[Sample], mission_complete: Option<bool>) -> LinkFacts {
        let mut f = LinkFacts {
            mission_complete,
            ..LinkFacts::default()
        };
        let mut prev: Option<&Sample> = None;
        let mut airborne = false;
        for s in trace {
            // What the first sample shows (an arm, on a sparse trace: a vehicle flown in
            // lockstep at full speed is sampled every few seconds of its time) came after 0.
            let from_ms = prev.map_or(0, |p| p.sim_ms);
            let seen = Seen {
                from_ms,
                at_ms: s.sim_ms,
            };
            if s.armed && f.armed.is_none() && prev.is_none_or(|p| !p.armed) {
                f.armed = Some(seen);
            }
            if !s.armed && f.armed.is_some() && f.disarmed.is_none() {
                f.disarmed = Some(seen);
            }
            let on_ground = s.landed == "ON_GROUND";
            if !on_ground && s.landed != "UNKNOWN" {
                airborne = true;
            }
            if on_ground && airborne && f.landed.is_none() {
                f.landed = Some(seen);
            }
            if let Some(h) = s.height_m {
                f.height_at_ms.push(s.sim_ms);
                if f.max_height_m.is_none_or(|(m, _)| h > m) {
                    f.max_height_m = Some((h, s.sim_ms));
                }
            }
            if f.modes.last().is_none_or(|(_, m)| *m != s.mode) && s.mode != "—" {
                f.modes.push((s.sim_ms, s.mode.clone()));
            }
            prev = Some(s);
        }
        f
    }

    /// Whether the trace had a height within `within_s` of `at_us` (PX4's log time, µs).
    fn height_sampled_near(&self, at_us: u64, within_s: f64) -> bool {
        let within_ms = (within_s * 1000.0) as u64;
        self.height_at_ms
            .iter()
            .any(|&ms| ms.abs_diff(at_us / 1000) <= within_ms)
    }
}

fn s_of(us: u64) -> String {
    format!("at {:.1} s", us as f64 / 1e6)
}

/// Compare one event: the link's `seen` and the log's `ulog` (µs), `what` in the sentences.
fn event(
    fact: &'static str,
    what: &str,
    link: Option<Seen>,
    ulog: Option<u64>,
    topic_there: bool,
    tol: &Tolerance,
    out: &mut Vec<String>,
) -> FactReport {
    let link_text = link.map_or(format!("never {what}"), |s| format!("{what} {}", s.text()));
    let ulog_text = if !topic_there {
        "not in PX4's log".to_string()
    } else {
        ulog.map_or(format!("never {what}"), |t| format!("{what} {}", s_of(t)))
    };
    let verdict = match (link, ulog, topic_there) {
        (_, _, false) => "unknown",
        (None, None, _) => "agree",
        (Some(s), Some(t), _) if s.agrees(t, tol) => "agree",
        _ => "disagree",
    };
    if verdict == "disagree" {
        out.push(format!("the link said {link_text}; PX4's log {ulog_text}"));
    }
    FactReport {
        fact,
        link: link_text,
        ulog: ulog_text,
        verdict,
    }
}

/// Compare the highest heights: the link's and the log's `ulog` (m, at µs).
fn max_height(
    link: &LinkFacts,
    ulog: Option<(f32, u64)>,
    topic_there: bool,
    tol: &Tolerance,
    out: &mut Vec<String>,
) -> FactReport {
    let mut link_h = link.max_height_m.map_or("no height".to_string(), |(h, t)| {
        format!("{h:.1} m at {:.1} s", t as f64 / 1000.0)
    });
    let ulog_h = match (topic_there, ulog) {
        (false, _) => "not in PX4's log".to_string(),
        (true, None) => "no height".to_string(),
        (true, Some((h, t))) => format!("{h:.1} m {}", s_of(t)),
    };
    let verdict = match (link.max_height_m, ulog, topic_there) {
        (_, _, false) | (None, _, _) => "unknown",
        (Some(_), None, _) => "disagree",
        (Some((a, _)), Some((b, tb)), _) => {
            let limit = tol.height_m.max(tol.height_fraction * (a.max(b) as f64));
            if ((a - b) as f64).abs() <= limit {
                "agree"
            } else if a < b && !link.height_sampled_near(tb, tol.time_s) {
                // A sampled trace's maximum is a lower bound: one that missed PX4's peak (a
                // vehicle flown in lockstep at full speed is sampled every few seconds of
                // its time) cannot contradict it. A higher one always can.
                link_h.push_str(&format!(
                    " (no sample within {:.1} s of PX4's peak)",
                    tol.time_s
                ));
                "unknown"
            } else {
                "disagree"
            }
        }
    };
    if verdict == "disagree" {
        out.push(format!(
            "the link said a maximum height of {link_h}; PX4's log {ulog_h}"
        ));
    }
    FactReport {
        fact: "max_height",
        link: link_h,
        ulog: ulog_h,
        verdict,
    }
}

/// Compare the link's facts with PX4's log.
pub fn compare(link: &LinkFacts, log: &Ulog, path: &Path, tol: &Tolerance) -> WitnessReport {
    let f = Facts::of(log);
    let has = |t: &str| !f.missing_topics.contains(&t);
    let mut dis = Vec::new();
    let mut facts = Vec::new();
    let first_arm = f.arms.first().copied();
    facts.push(event(
        "armed",
        "armed",
        link.armed,
        first_arm,
        has("vehicle_status"),
        tol,
        &mut dis,
    ));
    let disarm = f
        .disarms
        .iter()
        .copied()
        .find(|&d| first_arm.is_some_and(|a| d > a));
    facts.push(event(
        "disarmed",
        "disarmed",
        link.disarmed,
        disarm,
        has("vehicle_status"),
        tol,
        &mut dis,
    ));
    facts.push(event(
        "landed",
        "landed",
        link.landed,
        f.landings().first().copied(),
        has("vehicle_land_detected"),
        tol,
        &mut dis,
    ));
    facts.push(max_height(
        link,
        f.max_height_m,
        has("vehicle_local_position"),
        tol,
        &mut dis,
    ));
    // Modes.
    let log_modes: Vec<String> = f.modes.iter().map(|(_, m)| m.to_string()).collect();
    let mut unseen = Vec::new();
    for (t, m) in &link.modes {
        if !log_modes.contains(m) && !unseen.iter().any(|(_, u): &(u64, String)| u == m) {
            unseen.push((*t, m.clone()));
        }
    }
    let join = |v: Vec<String>| {
        let mut d: Vec<String> = Vec::new();
        for m in v {
            if d.last() != Some(&m) {
                d.push(m);
            }
        }
        if d.is_empty() {
            "none".to_string()
        } else {
            d.join(" → ")
        }
    };
    let link_modes = join(link.modes.iter().map(|(_, m)| m.clone()).collect());
    let verdict = if !has("vehicle_status") {
        "unknown"
    } else if unseen.is_empty() {
        "agree"
    } else {
        for (t, m) in &unseen {
            dis.push(format!(
                "the link said {m} at {:.1} s; PX4's log was never in {m}",
                *t as f64 / 1000.0
            ));
        }
        "disagree"
    };
    facts.push(FactReport {
        fact: "modes",
        link: link_modes,
        ulog: if has("vehicle_status") {
            join(log_modes)
        } else {
            "not in PX4's log".into()
        },
        verdict,
    });
    // Mission.
    if let Some(done) = link.mission_complete {
        let link_text = if done {
            "mission complete"
        } else {
            "mission not complete"
        };
        let ulog_text = match (has("mission_result"), f.mission_finished_us) {
            (false, _) => "not in PX4's log".to_string(),
            (true, Some(t)) => format!("mission finished {}", s_of(t)),
            (true, None) => "mission never finished".to_string(),
        };
        let verdict = match (has("mission_result"), done, f.mission_finished_us) {
            (false, _, _) => "unknown",
            (true, true, None) => "disagree",
            (true, true, Some(_)) => "agree",
            // PX4 may finish as the link closes: not a contradiction of a failed run.
            (true, false, _) => "not_compared",
        };
        if verdict == "disagree" {
            dis.push(format!("the link said {link_text}; PX4's log {ulog_text}"));
        }
        facts.push(FactReport {
            fact: "mission",
            link: link_text.into(),
            ulog: ulog_text,
            verdict,
        });
    }
    // Failsafes: the log's word only.
    let fs: Vec<String> = f
        .failsafe
        .iter()
        .filter(|&&(_, on)| on)
        .map(|&(t, _)| s_of(t))
        .collect();
    facts.push(FactReport {
        fact: "failsafe",
        link: "not carried on the link".into(),
        ulog: if !has("vehicle_status") {
            "not in PX4's log".into()
        } else if fs.is_empty() {
            "no failsafe".into()
        } else {
            format!("failsafe {}", fs.join(", "))
        },
        verdict: "not_compared",
    });
    WitnessReport {
        ulog: path.display().to_string(),
        agrees: dis.is_empty(),
        tolerance: *tol,
        facts,
        disagreements: dis,
        error: None,
        read: Some(ReadReport {
            bytes: log.len() as u64,
            missing_topics: f.missing_topics.clone(),
            damaged_messages: log.damaged,
            truncated_at: log.truncated_at.map(|t| t as u64),
            span_s: f.span_us.map(|(a, b)| (a as f64 / 1e6, b as f64 / 1e6)),
        }),
        transfer: None,
    }
}

/// The witness when the log could not be kept or read.
pub fn failed(path: &Path, why: String) -> WitnessReport {
    WitnessReport {
        ulog: path.display().to_string(),
        agrees: false,
        tolerance: TOLERANCE,
        facts: Vec::new(),
        disagreements: Vec::new(),
        error: Some(why),
        read: None,
        transfer: None,
    }
}

/// Read the ULog at `path` and compare it with `link`.
pub fn witness(path: &Path, link: &LinkFacts) -> WitnessReport {
    match Ulog::open(path) {
        Ok(log) => compare(link, &log, path, &TOLERANCE),
        Err(e) => failed(path, format!("{}: {e}", path.display())),
    }
}

/// The verdict's reason when the witness does not agree: the disagreements, or the error.
pub fn failure(w: &WitnessReport) -> Option<String> {
    if w.agrees {
        return None;
    }
    Some(match &w.error {
        Some(e) => format!("second witness: {e}"),
        None => format!(
            "second witness: PX4's log contradicts the link: {}",
            w.disagreements.join("; ")
        ),
    })
}

/// One line for the terminal.
pub fn summary(w: &WitnessReport) -> String {
    if let Some(e) = &w.error {
        return format!("second witness: {e}");
    }
    let named = |v: &str| -> Vec<&str> {
        w.facts
            .iter()
            .filter(|f| f.verdict == v)
            .map(|f| f.fact)
            .collect()
    };
    let mut line = format!("second witness (PX4's log {}): ", w.ulog);
    if w.agrees {
        line.push_str(&format!("agrees on {}", named("agree").join(", ")));
    } else {
        line.push_str(&format!("DISAGREES: {}", w.disagreements.join("; ")));
    }
    let unknown = named("unknown");
    if !unknown.is_empty() {
        line.push_str(&format!("; cannot tell {}", unknown.join(", ")));
    }
    line
}

/// The log's height above the pad at arming, (µs, m), for the drawing.
pub fn ulog_heights(log: &Ulog) -> Vec<(u64, f32)> {
    let f = Facts::of(log);
    let z = log.series("vehicle_local_position", "z");
    let first_arm = f.arms.first().copied();
    let z0 = match first_arm {
        Some(t) => z
            .iter()
            .take_while(|&&(ts, _)| ts <= t)
            .last()
            .or(z.first()),
        None => z.first(),
    };
    let Some(&(_, z0)) = z0 else {
        return Vec::new();
    };
    z.iter()
        .filter(|(_, v)| v.is_finite())
        .map(|&(t, v)| (t, -(v - z0) as f32))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(ms: u64, armed: bool, landed: &'static str, h: f32, mode: &str) -> Sample {
        Sample {
            sim_ms: ms,
            position_deg: None,
            height_m: Some(h),
            mode: mode.into(),
            armed,
            landed,
        }
    }

    #[test]
    fn a_trace_that_starts_armed_saw_the_arm_before_its_first_sample() {
        let t = vec![
            s(30_000, true, "IN_AIR", 28.0, "Takeoff"),
            s(60_000, true, "IN_AIR", 39.0, "Hold"),
            s(119_000, false, "ON_GROUND", 0.0, "Hold"),
        ];
        let f = LinkFacts::of(&t, None);
        assert_eq!(
            f.armed,
            Some(Seen {
                from_ms: 0,
                at_ms: 30_000
            })
        );
        assert_eq!(f.disarmed.map(|s| s.at_ms), Some(119_000));
        let tol = TOLERANCE;
        assert!(
            f.armed.unwrap().agrees(23_300_000, &tol),
            "PX4 armed at 23.3 s"
        );
        assert!(
            !f.armed.unwrap().agrees(40_000_000, &tol),
            "not after the sample"
        );
    }

    #[test]
    fn link_facts_from_a_trace() {
        let t = vec![
            s(1000, false, "ON_GROUND", 0.0, "Hold"),
            s(1500, true, "ON_GROUND", 0.0, "Mission"),
            s(2000, true, "IN_AIR", 5.0, "Mission"),
            s(2500, true, "ON_GROUND", 0.1, "Hold"),
            s(3000, false, "ON_GROUND", 0.0, "Hold"),
        ];
        let f = LinkFacts::of(&t, Some(true));
        assert_eq!(
            f.armed,
            Some(Seen {
                from_ms: 1000,
                at_ms: 1500
            })
        );
        assert_eq!(f.landed.map(|s| s.at_ms), Some(2500));
        assert_eq!(f.disarmed.map(|s| s.at_ms), Some(3000));
        assert_eq!(f.max_height_m, Some((5.0, 2000)));
        assert_eq!(f.modes.len(), 3);
        // A log time within the interval, widened by the tolerance, agrees.
        let seen = f.armed.unwrap();
        // Between 1.0 and 1.5 s, ± 2 s.
        assert!(!seen.agrees(
            0,
            &Tolerance {
                time_s: 0.5,
                ..TOLERANCE
            }
        ));
        assert!(seen.agrees(3_400_000, &TOLERANCE));
        assert!(!seen.agrees(3_600_000, &TOLERANCE));
    }

    #[test]
    fn a_lower_maximum_contradicts_only_where_the_trace_sampled_the_peak() {
        // Sampled every 30 s: the peak of 33.6 m at 192.9 s fell between two samples.
        let sparse = LinkFacts::of(
            &[
                s(150_000, true, "IN_AIR", 28.0, "Mission"),
                s(180_000, true, "IN_AIR", 30.1, "Mission"),
                s(211_800, true, "IN_AIR", 29.0, "Mission"),
            ],
            None,
        );
        let mut dis = Vec::new();
        let peak = Some((33.6, 192_900_000));
        let r = max_height(&sparse, peak, true, &TOLERANCE, &mut dis);
        assert_eq!(r.verdict, "unknown", "{}", r.link);
        assert!(r.link.contains("no sample within 2.0 s"), "{}", r.link);
        assert!(dis.is_empty());
        // A sample at the peak's time that saw less, or a maximum above PX4's: contradictions.
        let dense = LinkFacts::of(
            &[
                s(180_000, true, "IN_AIR", 30.1, "Mission"),
                s(192_000, true, "IN_AIR", 30.0, "Mission"),
            ],
            None,
        );
        assert_eq!(
            max_height(&dense, peak, true, &TOLERANCE, &mut dis).verdict,
            "disagree"
        );
        let high = Some((25.0, 192_900_000));
        assert_eq!(
            max_height(&sparse, high, true, &TOLERANCE, &mut dis).verdict,
            "disagree"
        );
        assert_eq!(dis.len(), 2);
        // Within the tolerance: agree, sampled or not.
        let near = Some((30.5, 192_900_000));
        assert_eq!(
            max_height(&sparse, near, true, &TOLERANCE, &mut dis).verdict,
            "agree"
        );
    }
}
