//! Why a wait or step ended without its condition: what was pending and why it did not happen,
//! in the vehicle's own words where it gave any.
//!
//! A bare "timeout" tells the user nothing they can act on. The offboard machine knows what it
//! was still trying to do (an arm it never sent because PX4 never became armable, a mode PX4
//! refused, an upload PX4 never asked items for) and the telemetry holds what PX4 said
//! (system_status, its recent STATUSTEXTs). [`Explanation::build`] looks at both at the moment
//! a wait settles and picks the most specific cause; its `Display` is the sentence a report
//! shows. Fixed capacity, no allocation: a firmware can build one too, and pays nothing (code or
//! RAM) if it never does.

use crate::engine::{Condition, ConditionKind, Reason, Wait, WaitResult};
use crate::mode::Mode;
use crate::offboard::{ArmWait, GaveUp, MissionError, Offboard, Pending, Refusal};
use crate::telemetry::{LandedState, Snapshot, Telemetry, MAX_ERROR_LEN};
use crate::time::Instant;
use crate::vehicle::{VehicleKind, VtolState};
use core::fmt;
use heapless::String;

/// Longest run of the vehicle's recent words kept in an explanation, bytes.
pub const WORDS_LEN: usize = 120;
/// Recent warning-or-worse STATUSTEXTs quoted.
pub const WORDS_TEXTS: usize = 2;
/// MAV_SEVERITY at or below which a text is quoted (WARNING).
const QUOTE_SEVERITY: u8 = 4;

/// The vehicle's recent warning-or-worse texts, quoted and joined (`'…'; '…'`), cut to fit.
pub type Words = String<WORDS_LEN>;

/// What a condition read when the wait ended.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive] // a row per condition kind, some behind features; match with a `_` arm
pub enum Reading {
    /// A number in the condition's unit (height m, airspeed m/s, sim time s).
    Number(f32, &'static str),
    /// An item seq (waypoint, reached).
    Seq(u16),
    /// A flight mode.
    Mode(Mode),
    /// Armed (true) or disarmed.
    Armed(bool),
    /// The landed state.
    Landed(LandedState),
    /// The VTOL state.
    Vtol(VtolState),
    /// Whether the mission was complete.
    Complete(bool),
    /// Whether a verifying download found the vehicle's mission identical to the upload.
    Verified(bool),
    /// Whether the vehicle was at the last verb's target.
    #[cfg(feature = "extra-conditions")]
    AtTarget(bool),
    /// Nothing was known (the message it reads never came).
    Unknown,
}

impl fmt::Display for Reading {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reading::Number(v, unit) => write!(f, "{v:.1}{unit}"),
            Reading::Seq(s) => write!(f, "{s}"),
            Reading::Mode(m) => write!(f, "{m}"),
            Reading::Armed(true) => f.write_str("armed"),
            Reading::Armed(false) => f.write_str("disarmed"),
            Reading::Landed(l) => f.write_str(l.name()),
            Reading::Vtol(v) => f.write_str(v.name()),
            Reading::Complete(true) => f.write_str("complete"),
            Reading::Complete(false) => f.write_str("not complete"),
            Reading::Verified(true) => f.write_str("verified"),
            Reading::Verified(false) => f.write_str("not verified"),
            #[cfg(feature = "extra-conditions")]
            Reading::AtTarget(true) => f.write_str("at the target"),
            #[cfg(feature = "extra-conditions")]
            Reading::AtTarget(false) => f.write_str("not at the target"),
            Reading::Unknown => f.write_str("no reading yet"),
        }
    }
}

/// What the offboard machine still had outstanding when a wait settled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Outstanding {
    /// The pending requests.
    pub pending: Pending,
    /// Why a pending arm had not gone out.
    pub arm_wait: Option<ArmWait>,
}

/// Why a wait ended without its condition (timeout, guard, died, aborted).
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Explanation {
    /// An arm was requested but never sent: PX4 never became armable (or what the arm waits
    /// for never came).
    ArmNotSent {
        /// What the arm was still waiting for.
        wait: ArmWait,
        /// Sim seconds the wait lasted.
        for_s: f32,
        /// The mode the heartbeat showed.
        mode: Option<Mode>,
        /// The mode is Mission and no mission upload was accepted on this link: PX4 cannot arm
        /// in Mission mode without one.
        no_mission: bool,
        /// HEARTBEAT.system_status (MAV_STATE), if a heartbeat came.
        system_status: Option<u8>,
        /// PX4's recent warnings.
        texts: Words,
    },
    /// The arm went out but the heartbeat never showed armed, and PX4 did not refuse it.
    ArmNotShown {
        /// PX4's recent warnings.
        texts: Words,
    },
    /// The mission restart (MISSION_SET_CURRENT 0) went out but PX4 never reported item 0
    /// current; the Mission mode and arm of the start wait for it.
    RestartNotShown,
    /// PX4 refused a command during the wait (with its words).
    Refused(Refusal),
    /// The machine gave a request up during the wait; the refusal that caused it, if any.
    GaveUp {
        /// What was given up, and why.
        gave_up: GaveUp,
        /// PX4's last refusal in the wait.
        refusal: Option<Refusal>,
    },
    /// The mission upload failed during the wait.
    Upload(MissionError),
    /// A mission transfer was still in flight at the end.
    TransferInFlight,
    /// A requested mode never showed in the heartbeat (and PX4 did not refuse it).
    ModeNotShown {
        /// The mode asked for.
        mode: Mode,
        /// The mode the heartbeat showed.
        shown: Option<Mode>,
        /// PX4's recent warnings.
        texts: Words,
    },
    /// A takeoff was accepted, the vehicle armed, yet it never left the ground.
    NeverLeftGround {
        /// PX4's recent warnings.
        texts: Words,
    },
    /// A guard fired.
    Guard {
        /// The guard.
        condition: Condition,
        /// What it read.
        reading: Reading,
        /// The class of the vehicle's HEARTBEAT.type, if one came: a condition that means
        /// something else on it ([`unsuited`]) says so.
        vehicle: Option<VehicleKind>,
    },
    /// The vehicle or link died.
    Died {
        /// The driver's cause (process exit, link silent, reboot).
        error: String<MAX_ERROR_LEN>,
        /// What was outstanding then.
        pending: Pending,
    },
    /// Nothing was outstanding: the vehicle simply did not get there in time.
    NotReached {
        /// The condition waited for.
        condition: Condition,
        /// What it read at the end.
        reading: Reading,
        /// PX4's recent warnings.
        texts: Words,
        /// The class of the vehicle's HEARTBEAT.type, if one came: a condition that cannot
        /// be met on it, or means something else there ([`unsuited`]), says so.
        vehicle: Option<VehicleKind>,
    },
    /// The wait was aborted or closed with nothing outstanding.
    Ended {
        /// Why.
        reason: Reason,
    },
}

/// MAV_STATE's name (HEARTBEAT.system_status).
pub fn mav_state_name(s: u8) -> &'static str {
    match s {
        0 => "UNINIT",
        1 => "BOOT",
        2 => "CALIBRATING",
        3 => "STANDBY",
        4 => "ACTIVE",
        5 => "CRITICAL",
        6 => "EMERGENCY",
        7 => "POWEROFF",
        8 => "FLIGHT_TERMINATION",
        _ => "unknown",
    }
}

/// What PX4's land detector says of a rover (`RoverLandDetector`, measured on PX4 SITL's
/// Ackermann rover): it never flies, so "landed" is a state of its autopilot, not of its wheels.
const ROVER_LANDED: &str = "PX4's land detector reports a rover ON_GROUND only while it is \
    disarmed, in Land mode or at the end of an RTL, and IN_AIR whenever else it is armed";

/// What a condition of row `kind` reads on a vehicle of class `vehicle` when that is not what
/// it reads on a multicopter, or why it cannot be met there: the words an explanation adds,
/// and `nexus run` prints when it checks a program against the airframe it flies. From PX4
/// SITL's SIH rover and VTOLs (docs/cli.md §Airframes).
pub fn unsuited(kind: ConditionKind, vehicle: VehicleKind) -> Option<&'static str> {
    match (kind, vehicle) {
        (ConditionKind::Landed, VehicleKind::Rover) => Some(ROVER_LANDED),
        #[cfg(feature = "extra-conditions")]
        (ConditionKind::LandedState, VehicleKind::Rover) => Some(ROVER_LANDED),
        (ConditionKind::Altitude, VehicleKind::Rover) => {
            Some("a rover does not fly: its height stays at the ground's")
        }
        #[cfg(feature = "extra-conditions")]
        (ConditionKind::ClimbRate, VehicleKind::Rover) => {
            Some("a rover does not fly: it climbs only with the ground")
        }
        (ConditionKind::Airspeed, VehicleKind::Rover | VehicleKind::Multicopter) => Some(
            "PX4 reports no airspeed (NaN) on a vehicle without an airspeed sensor: the SIH \
             airplane and VTOLs have one, the multicopters and the rover do not",
        ),
        #[cfg(feature = "extra-conditions")]
        (ConditionKind::VtolState, k) if k != VehicleKind::Vtol => {
            Some("only a VTOL has a VTOL state: PX4 reports `undefined` on any other vehicle")
        }
        _ => None,
    }
}

/// `"; the vehicle is a rover: …"` when [`unsuited`] has words for `condition` on `vehicle`.
fn unsuited_suffix<W: fmt::Write>(
    f: &mut W,
    condition: &Condition,
    vehicle: Option<VehicleKind>,
) -> fmt::Result {
    match vehicle.and_then(|v| Some((v, unsuited(condition.kind(), v)?))) {
        Some((v, why)) => write!(f, "; the vehicle is {v}: {why}"),
        None => Ok(()),
    }
}

fn texts_suffix<W: fmt::Write>(f: &mut W, texts: &Words, lead: &str) -> fmt::Result {
    if texts.is_empty() {
        Ok(())
    } else {
        write!(f, "{lead}last texts: {texts}")
    }
}

/// The sentence, with every vehicle word in it escaped ([`crate::escape`]): PX4's texts and
/// refusals, a died cause that quotes a console line. No vehicle text in an explanation can
/// start a line or move a terminal's cursor.
impl fmt::Display for Explanation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.write_words(&mut crate::escape::Escaping(f))
    }
}

impl Explanation {
    /// The sentence, unescaped (what [`fmt::Display`] escapes).
    fn write_words<W: fmt::Write>(&self, f: &mut W) -> fmt::Result {
        match self {
            Explanation::ArmNotSent {
                wait,
                for_s,
                mode,
                no_mission,
                system_status,
                texts,
            } => {
                f.write_str("arm not sent: ")?;
                match wait {
                    ArmWait::NotConnected => f.write_str("no HEARTBEAT from the vehicle")?,
                    ArmWait::Restart => f.write_str("MISSION_SET_CURRENT 0 not confirmed")?,
                    ArmWait::Mode(m) => write!(f, "mode {m} not shown by the heartbeat")?,
                    ArmWait::NoPosition => {
                        f.write_str("no position estimate (GLOBAL_POSITION_INT) yet")?
                    }
                    ArmWait::Settling { .. } => {
                        write!(f, "PX4 not armable for {for_s:.0} s")?;
                        match (mode, no_mission) {
                            (Some(m), true) => {
                                write!(f, " in {m} mode, with no mission uploaded on this link")?
                            }
                            (Some(m), false) => write!(f, " in {m} mode")?,
                            (None, _) => {}
                        }
                    }
                }
                let status = system_status.map(mav_state_name);
                match (status, texts.is_empty()) {
                    (None, true) => Ok(()),
                    (Some(s), true) => write!(f, " (system_status {s})"),
                    (Some(s), false) => write!(f, " (system_status {s}; last texts: {texts})"),
                    (None, false) => write!(f, " (last texts: {texts})"),
                }
            }
            Explanation::ArmNotShown { texts } => {
                f.write_str("arm sent, but the heartbeat never showed armed (PX4 did not refuse)")?;
                texts_suffix(f, texts, "; ")
            }
            Explanation::RestartNotShown => f.write_str(
                "mission restart (MISSION_SET_CURRENT 0) sent, but PX4 never reported item 0 \
                 current",
            ),
            Explanation::Refused(r) => write!(f, "{r}"),
            Explanation::GaveUp { gave_up, refusal } => {
                if let Some(r) = refusal {
                    write!(f, "{r}; ")?;
                }
                write!(f, "{gave_up}")
            }
            Explanation::Upload(e) => write!(f, "mission upload {e}"),
            Explanation::TransferInFlight => {
                f.write_str("a mission transfer was still in flight (PX4 did not finish it)")
            }
            Explanation::ModeNotShown { mode, shown, texts } => {
                write!(
                    f,
                    "mode {mode} requested, never shown by the heartbeat (shows "
                )?;
                match shown {
                    Some(m) => write!(f, "{m}")?,
                    None => f.write_str("nothing")?,
                }
                f.write_str(")")?;
                texts_suffix(f, texts, "; ")
            }
            Explanation::NeverLeftGround { texts } => {
                f.write_str("takeoff: PX4 accepted but never left the ground")?;
                texts_suffix(f, texts, "; ")
            }
            Explanation::Guard {
                condition,
                reading,
                vehicle,
            } => {
                write!(f, "guard `{condition}` fired at {reading}")?;
                unsuited_suffix(f, condition, *vehicle)
            }
            Explanation::Died { error, pending } => {
                write!(f, "the vehicle died: {error}")?;
                let mut first = true;
                let mut item = |f: &mut W, what: fmt::Arguments<'_>| {
                    let lead = if first { "; pending: " } else { ", " };
                    first = false;
                    write!(f, "{lead}{what}")
                };
                if let Some(m) = pending.mode {
                    item(f, format_args!("mode {m}"))?;
                }
                if pending.arm {
                    item(f, format_args!("arm"))?;
                }
                if pending.restart {
                    item(f, format_args!("mission restart"))?;
                }
                if pending.transfer {
                    item(f, format_args!("mission transfer"))?;
                }
                Ok(())
            }
            Explanation::NotReached {
                condition,
                reading,
                texts,
                vehicle,
            } => {
                write!(
                    f,
                    "nothing outstanding; `{condition}` read {reading} at the end"
                )?;
                unsuited_suffix(f, condition, *vehicle)?;
                texts_suffix(f, texts, "; ")
            }
            Explanation::Ended { reason } => {
                write!(f, "{} with nothing outstanding", reason.name())
            }
        }
    }
}

/// What `kind` read in `snap` (and in the mission progress).
fn reading<const T: usize, const ITEMS: usize>(
    condition: &Condition,
    snap: &Snapshot,
    tel: &Telemetry<T>,
    offboard: &Offboard<ITEMS>,
) -> Reading {
    let kind = condition.kind();
    let mission = offboard.mission_progress();
    let num = |v: Option<f32>| v.map_or(Reading::Unknown, |v| Reading::Number(v, kind.unit()));
    match kind {
        ConditionKind::Altitude => num(snap.height_m),
        ConditionKind::Airspeed => num(snap.airspeed_m_s),
        ConditionKind::SimTime | ConditionKind::Time => {
            num(snap.sim_ms.map(|ms| ms as f32 / 1000.0))
        }
        ConditionKind::Waypoint => snap.waypoint.map_or(Reading::Unknown, Reading::Seq),
        ConditionKind::Mode => snap.mode.map_or(Reading::Unknown, Reading::Mode),
        ConditionKind::Armed | ConditionKind::Disarmed => match tel.armed() {
            Some(_) => Reading::Armed(snap.armed),
            None => Reading::Unknown,
        },
        ConditionKind::Landed => Reading::Landed(snap.landed),
        ConditionKind::Text => match &snap.last_text {
            Some(_) => Reading::Seq(snap.seq as u16),
            None => Reading::Unknown,
        },
        ConditionKind::Reached => mission
            .and_then(|m| m.reached)
            .map_or(Reading::Unknown, Reading::Seq),
        ConditionKind::MissionComplete => {
            mission.map_or(Reading::Unknown, |m| Reading::Complete(m.complete))
        }
        ConditionKind::MissionVerified => {
            mission.map_or(Reading::Unknown, |m| Reading::Verified(m.verified))
        }
        #[cfg(feature = "extra-conditions")]
        ConditionKind::Groundspeed => num(tel.groundspeed_m_s()),
        #[cfg(feature = "extra-conditions")]
        ConditionKind::ClimbRate => num(tel.climb_rate_m_s()),
        #[cfg(feature = "extra-conditions")]
        ConditionKind::Heading => num(tel.heading_rad().map(|h| h.to_degrees())),
        #[cfg(feature = "extra-conditions")]
        ConditionKind::BatteryRemaining => num(tel.battery().and_then(|b| b.remaining_pct)),
        #[cfg(feature = "extra-conditions")]
        ConditionKind::BatteryVoltage => num(tel.battery().and_then(|b| b.voltage_v)),
        #[cfg(feature = "extra-conditions")]
        ConditionKind::GpsFix => tel
            .gps_raw()
            .map_or(Reading::Unknown, |g| Reading::Seq(g.fix_type as u16)),
        #[cfg(feature = "extra-conditions")]
        ConditionKind::Satellites => tel
            .gps()
            .and_then(|g| g.satellites)
            .map_or(Reading::Unknown, |n| Reading::Seq(n as u16)),
        #[cfg(feature = "extra-conditions")]
        ConditionKind::LandedState => match tel.extended_sys_state() {
            Some(_) => Reading::Landed(tel.landed_state()),
            None => Reading::Unknown,
        },
        #[cfg(feature = "extra-conditions")]
        ConditionKind::VtolState => match tel.extended_sys_state() {
            Some(_) => Reading::Vtol(tel.vtol_state()),
            None => Reading::Unknown,
        },
        #[cfg(feature = "extra-conditions")]
        ConditionKind::Distance => num(condition
            .place()
            .and_then(|to| crate::engine::condition_distance_m(tel, &to))),
        #[cfg(feature = "extra-conditions")]
        ConditionKind::AtTarget => Reading::AtTarget(offboard.at_target(tel)),
    }
}

/// PX4's newest warning-or-worse texts, oldest first, quoted and cut to fit; with `since_ms`,
/// only those that came at or after that sim time.
pub fn recent_words<const T: usize>(tel: &Telemetry<T>, since_ms: Option<u64>) -> Words {
    let texts = tel.texts();
    let wanted = |t: &&crate::telemetry::Text| {
        t.severity <= QUOTE_SEVERITY
            && match (since_ms, t.sim_ms) {
                (Some(s), Some(at)) => at >= s,
                (Some(_), None) => false,
                (None, _) => true,
            }
    };
    let n = texts.iter().filter(wanted).count();
    let mut out = Words::new();
    for t in texts
        .iter()
        .filter(wanted)
        .skip(n.saturating_sub(WORDS_TEXTS))
    {
        if !out.is_empty() && out.push_str("; ").is_err() {
            break;
        }
        if out.push('\'').is_err() {
            break;
        }
        for c in t.text.chars() {
            // Shown safely (a line feed as `\n`, ESC as `\x1b`: crate::escape), whole escapes
            // only, with room for the closing quote.
            let shown = crate::escape::show(c);
            let piece = shown.as_str();
            if out.len() + piece.len() + 1 > WORDS_LEN {
                break;
            }
            let _ = out.push_str(piece);
        }
        let _ = out.push('\'');
    }
    out
}

impl Explanation {
    /// Explain `result`, a wait (or step) on `wait` that ended without its condition, from the
    /// offboard machine and the telemetry as they are when it settled (`now`: the driver's
    /// clock then; call it in the tick the wait settled, before handling more frames). `None`
    /// for a met wait.
    ///
    /// The most specific cause wins: a guard, a death, then what happened during the wait (an
    /// upload that failed, a request given up, a refusal), then what was still outstanding (a
    /// mission restart never confirmed, an arm never sent or never shown, a mode never shown, a
    /// transfer, a takeoff that never left the ground), else the condition's last reading.
    pub fn build<const T: usize, const ITEMS: usize>(
        now: Instant,
        offboard: &Offboard<ITEMS>,
        tel: &Telemetry<T>,
        wait: &Wait,
        result: &WaitResult,
    ) -> Option<Explanation> {
        let outstanding = Outstanding {
            pending: offboard.pending(),
            arm_wait: offboard.arm_wait(now, tel),
        };
        Self::build_with(offboard, tel, wait, result, outstanding)
    }

    /// [`Explanation::build`] with what was outstanding taken earlier (in the tick the wait
    /// settled), for a driver that explains after the machine moved on (the next step's action
    /// already applied).
    pub fn build_with<const T: usize, const ITEMS: usize>(
        offboard: &Offboard<ITEMS>,
        tel: &Telemetry<T>,
        wait: &Wait,
        result: &WaitResult,
        outstanding: Outstanding,
    ) -> Option<Explanation> {
        let snap = &result.snapshot;
        match result.reason {
            Reason::Met | Reason::Cap => return None,
            Reason::Guard => {
                let condition = wait.guards().get(result.guard? as usize)?.clone();
                let reading = reading(&condition, snap, tel, offboard);
                return Some(Explanation::Guard {
                    condition,
                    reading,
                    vehicle: tel.vehicle_kind(),
                });
            }
            Reason::Died => {
                return Some(Explanation::Died {
                    error: snap.error.clone().unwrap_or_default(),
                    pending: outstanding.pending,
                })
            }
            Reason::Timeout | Reason::Aborted | Reason::Closed => {}
        }
        // What happened since the wait began (sim time; without a clock, anything counts).
        let start_ms = snap
            .sim_ms
            .map(|t| t.saturating_sub((result.waited_sim_s * 1000.0) as u64));
        let recent = |at: Option<u64>| match (at, start_ms) {
            (Some(a), Some(s)) => a >= s,
            _ => true,
        };
        let news = offboard.news();
        if let Some((at, e)) = news.upload_failed {
            if recent(at) {
                return Some(Explanation::Upload(e));
            }
        }
        let refusal = match news.refused_at {
            Some(at) if recent(at) => offboard.last_refusal().cloned(),
            _ => None,
        };
        if let Some((at, g)) = news.gave_up {
            if recent(at) {
                return Some(Explanation::GaveUp {
                    gave_up: g,
                    refusal,
                });
            }
        }
        if let Some(r) = refusal {
            return Some(Explanation::Refused(r));
        }
        // Why PX4 will not arm or switch is often said once, at boot: any text counts there.
        let texts = recent_words(tel, None);
        let pending = outstanding.pending;
        if pending.restart {
            // The start's Mission mode and arm both wait on it: name the root.
            return Some(Explanation::RestartNotShown);
        }
        if pending.arm {
            if let Some(w) = outstanding.arm_wait {
                return Some(Explanation::ArmNotSent {
                    wait: w,
                    for_s: result.waited_sim_s,
                    mode: snap.mode,
                    no_mission: snap.mode == Some(Mode::Mission) && !offboard.mission_uploaded(),
                    system_status: tel.heartbeat().map(|h| h.system_status as u8),
                    texts,
                });
            }
        }
        if pending.arm {
            return Some(Explanation::ArmNotShown { texts });
        }
        if let Some(mode) = pending.mode {
            return Some(Explanation::ModeNotShown {
                mode,
                shown: snap.mode,
                texts,
            });
        }
        if pending.transfer {
            return Some(Explanation::TransferInFlight);
        }
        if offboard.climbing() && snap.armed && snap.landed == LandedState::OnGround {
            return Some(Explanation::NeverLeftGround { texts });
        }
        if result.reason != Reason::Timeout {
            return Some(Explanation::Ended {
                reason: result.reason,
            });
        }
        let condition = wait.condition().clone();
        let reading = reading(&condition, snap, tel, offboard);
        Some(Explanation::NotReached {
            condition,
            reading,
            // Nothing was pending: only what PX4 said during the wait can bear on it.
            texts: recent_words(tel, start_ms),
            vehicle: tel.vehicle_kind(),
        })
    }
}
