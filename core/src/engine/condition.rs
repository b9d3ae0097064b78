//! Conditions: seed 000's table as a spec ([`Condition`]), and compiled for evaluation.
//!
//! A spec holds what the caller wrote; compiling it (at registration) checks it and turns
//! every threshold into the form the hot path compares: `f32` for the numeric readings the
//! telemetry reports as `f32`, integer milliseconds for everything on the sim clock.

use super::error::SpecError;
use super::MAX_NEEDLE_LEN;
use crate::mode::Mode;
use crate::telemetry::TextLog;
use crate::time::secs_to_ms;
use heapless::String;

/// How a numeric reading compares with its target (seed 000: `op`, default `>=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Op {
    /// reading >= target.
    #[default]
    Ge,
    /// reading <= target.
    Le,
    /// reading == target (exact: for floats and ms prefer [`Condition::within`]).
    Eq,
}

/// The rows of seed 000's condition table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum ConditionKind {
    /// Height above the pad, m ([`crate::telemetry::Telemetry::height_m`]).
    Altitude,
    /// VFR_HUD.airspeed, m/s.
    Airspeed,
    /// MISSION_CURRENT.seq.
    Waypoint,
    /// The autopilot clock, s: absolute, or relative to the previous settle / step start.
    SimTime,
    /// Sim seconds since registration (always `>=`).
    Time,
    /// The heartbeat's flight mode.
    Mode,
    /// A STATUSTEXT containing a needle, after `since_seq`.
    Text,
    /// Heartbeat armed flag set.
    Armed,
    /// Heartbeat armed flag clear.
    Disarmed,
    /// On the ground ([`crate::telemetry::Telemetry::landed`]).
    Landed,
    /// Highest item PX4 reported reached in this mission run (MISSION_ITEM_REACHED).
    Reached,
    /// PX4 reported the mission's last reachable item reached in this run.
    MissionComplete,
}

impl ConditionKind {
    /// The seed's name (`"altitude"`, `"sim_time"`, …).
    pub fn name(self) -> &'static str {
        match self {
            ConditionKind::Altitude => "altitude",
            ConditionKind::Airspeed => "airspeed",
            ConditionKind::Waypoint => "waypoint",
            ConditionKind::SimTime => "sim_time",
            ConditionKind::Time => "time",
            ConditionKind::Mode => "mode",
            ConditionKind::Text => "text",
            ConditionKind::Armed => "armed",
            ConditionKind::Disarmed => "disarmed",
            ConditionKind::Landed => "landed",
            ConditionKind::Reached => "reached",
            ConditionKind::MissionComplete => "mission_complete",
        }
    }

    /// Whether `op` (and `within`) apply: the numeric rows the seed marks "op applies".
    pub fn takes_op(self) -> bool {
        matches!(
            self,
            ConditionKind::Altitude
                | ConditionKind::Airspeed
                | ConditionKind::Waypoint
                | ConditionKind::SimTime
                | ConditionKind::Reached
        )
    }
}

/// A text needle, at most [`MAX_NEEDLE_LEN`] bytes.
pub type Needle = String<MAX_NEEDLE_LEN>;

#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
enum Target {
    None,
    Number(f32),
    Mode(Mode),
    Text(Needle),
}

/// One condition as written: a row of seed 000's table plus its modifiers.
///
/// Build with the constructors and chain the modifiers; mistakes (an `op` on `armed`, a needle
/// that is too long, an unknown mode name) are reported when the wait is validated or
/// registered, never by a panic and never by silently changing what is waited for.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Condition {
    kind: ConditionKind,
    target: Target,
    op: Option<Op>,
    within: Option<f32>,
    since_seq: Option<u32>,
    relative: bool,
    defect: Option<SpecError>,
}

impl Condition {
    fn new(kind: ConditionKind, target: Target) -> Self {
        Condition {
            kind,
            target,
            op: None,
            within: None,
            since_seq: None,
            relative: false,
            defect: None,
        }
    }

    fn defective(mut self, e: SpecError) -> Self {
        self.defect.get_or_insert(e);
        self
    }

    /// Height above the pad reaches `m` (true height when the driver supplies it, else
    /// GLOBAL_POSITION_INT.relative_alt).
    pub fn altitude_m(m: f32) -> Self {
        Self::new(ConditionKind::Altitude, Target::Number(m))
    }

    /// VFR_HUD.airspeed reaches `m_s`.
    pub fn airspeed_m_s(m_s: f32) -> Self {
        Self::new(ConditionKind::Airspeed, Target::Number(m_s))
    }

    /// MISSION_CURRENT.seq reaches `seq`.
    pub fn waypoint(seq: u16) -> Self {
        Self::new(ConditionKind::Waypoint, Target::Number(seq as f32))
    }

    /// The autopilot clock reaches `s` seconds since boot (or since the reference tick with
    /// [`Condition::relative`]).
    pub fn sim_time_s(s: f32) -> Self {
        Self::new(ConditionKind::SimTime, Target::Number(s))
    }

    /// At least `s` sim seconds have passed since registration.
    pub fn time_s(s: f32) -> Self {
        Self::new(ConditionKind::Time, Target::Number(s))
    }

    /// The heartbeat reports `mode`.
    pub fn mode(mode: Mode) -> Self {
        Self::new(ConditionKind::Mode, Target::Mode(mode))
    }

    /// The heartbeat reports the mode called `name` (case-insensitive, PX4's names and
    /// aliases); an unknown name is a [`SpecError::UnknownMode`] at registration.
    pub fn mode_named(name: &str) -> Self {
        match Mode::from_name(name) {
            Ok(m) => Self::mode(m),
            Err(_) => {
                Self::new(ConditionKind::Mode, Target::None).defective(SpecError::UnknownMode)
            }
        }
    }

    /// A STATUSTEXT containing `needle` (case-sensitive substring) arrives after `since_seq`
    /// (default: the newest text at registration, so only texts after the call count).
    /// A needle over [`MAX_NEEDLE_LEN`] bytes is a [`SpecError::NeedleTooLong`].
    pub fn text(needle: &str) -> Self {
        let mut s = Needle::new();
        match s.push_str(needle) {
            Ok(()) => Self::new(ConditionKind::Text, Target::Text(s)),
            Err(_) => Self::new(ConditionKind::Text, Target::None)
                .defective(SpecError::NeedleTooLong { len: needle.len() }),
        }
    }

    /// The vehicle is armed.
    pub fn armed() -> Self {
        Self::new(ConditionKind::Armed, Target::None)
    }

    /// The vehicle is disarmed.
    pub fn disarmed() -> Self {
        Self::new(ConditionKind::Disarmed, Target::None)
    }

    /// The vehicle is on the ground.
    pub fn landed() -> Self {
        Self::new(ConditionKind::Landed, Target::None)
    }

    /// PX4 reports item `seq` reached in this mission run (MISSION_ITEM_REACHED; the highest
    /// seq reported so far is compared, `>=` by default). Never met before a report of this run
    /// arrives: a start resets it. Read from the engine's mission-progress input
    /// ([`crate::engine::Engine::set_mission_progress`]), which the client keeps up to date from
    /// the offboard machine.
    pub fn reached(seq: u16) -> Self {
        Self::new(ConditionKind::Reached, Target::Number(seq as f32))
    }

    /// PX4 reports the mission's last reachable item reached in this run
    /// ([`crate::offboard::Offboard::mission_complete`]); a COMPLETE state left over from an
    /// earlier flight does not count.
    pub fn mission_complete() -> Self {
        Self::new(ConditionKind::MissionComplete, Target::None)
    }

    /// Compare with `op` instead of `>=` (altitude, airspeed, waypoint, sim_time, reached only).
    pub fn op(mut self, op: Op) -> Self {
        self.op = Some(op);
        self
    }

    /// Met when |reading − target| ≤ `tol` (same unit as the target; numeric conditions only,
    /// not together with [`Condition::op`]).
    pub fn within(mut self, tol: f32) -> Self {
        self.within = Some(tol);
        self
    }

    /// Count texts with `seq > since_seq` (text only): pass a snapshot's `seq` to catch a text
    /// that arrived between that snapshot and this call.
    pub fn since_seq(mut self, since_seq: u32) -> Self {
        self.since_seq = Some(since_seq);
        self
    }

    /// Count `sim_time` from the reference tick (sim_time only): in a wait, the tick the
    /// previous wait or step on the engine settled; in a step, the tick the step started.
    pub fn relative(mut self) -> Self {
        self.relative = true;
        self
    }

    /// Which row of the table.
    pub fn kind(&self) -> ConditionKind {
        self.kind
    }

    /// Whether this is a relative `sim_time`.
    pub fn is_relative(&self) -> bool {
        self.relative
    }

    /// Check the spec without registering it.
    pub fn validate(&self) -> Result<(), SpecError> {
        self.compile(0).map(|_| ())
    }

    /// Check and compile; `last_seq` is the newest text seq now (the default `since_seq`).
    pub(crate) fn compile(&self, last_seq: u32) -> Result<Cond, SpecError> {
        if let Some(e) = self.defect {
            return Err(e);
        }
        let kind = self.kind;
        if self.op.is_some() && !kind.takes_op() {
            return Err(SpecError::OpNotApplicable(kind));
        }
        if self.within.is_some() && !kind.takes_op() {
            return Err(SpecError::WithinNotApplicable(kind));
        }
        if self.op.is_some() && self.within.is_some() {
            return Err(SpecError::OpWithWithin);
        }
        if self.since_seq.is_some() && kind != ConditionKind::Text {
            return Err(SpecError::SinceSeqNotApplicable(kind));
        }
        if self.relative && kind != ConditionKind::SimTime {
            return Err(SpecError::RelativeNotApplicable(kind));
        }
        if let Some(tol) = self.within {
            if !tol.is_finite() || tol < 0.0 {
                return Err(SpecError::BadValue { field: "within" });
            }
        }
        let op = self.op.unwrap_or_default();
        let number = |nonneg: bool| -> Result<f32, SpecError> {
            match self.target {
                Target::Number(v) if v.is_finite() && (!nonneg || v >= 0.0) => Ok(v),
                _ => Err(SpecError::BadValue { field: "value" }),
            }
        };
        let cmp = |v: f32| match self.within {
            Some(tol) => Cmp::Within(v, tol),
            None => match op {
                Op::Ge => Cmp::Ge(v),
                Op::Le => Cmp::Le(v),
                Op::Eq => Cmp::Eq(v),
            },
        };
        Ok(match kind {
            ConditionKind::Altitude => Cond::Height(cmp(number(false)?)),
            ConditionKind::Airspeed => Cond::Airspeed(cmp(number(false)?)),
            ConditionKind::Waypoint => Cond::Waypoint(cmp(number(false)?)),
            ConditionKind::SimTime => {
                let t = secs_to_ms(number(true)?);
                let cmp = match self.within {
                    Some(tol) => CmpMs::Within(t, secs_to_ms(tol)),
                    None => match op {
                        Op::Ge => CmpMs::Ge(t),
                        Op::Le => CmpMs::Le(t),
                        Op::Eq => CmpMs::Eq(t),
                    },
                };
                Cond::SimTime {
                    cmp,
                    relative: self.relative,
                }
            }
            ConditionKind::Time => Cond::Time {
                ms: secs_to_ms(number(true)?),
            },
            ConditionKind::Mode => match self.target {
                Target::Mode(m) => Cond::Mode(m),
                _ => return Err(SpecError::UnknownMode),
            },
            ConditionKind::Text => match &self.target {
                Target::Text(needle) => Cond::Text {
                    needle: needle.clone(),
                    cursor: self.since_seq.unwrap_or(last_seq),
                    seen: false,
                },
                _ => return Err(SpecError::NeedleTooLong { len: 0 }),
            },
            ConditionKind::Armed => Cond::Armed,
            ConditionKind::Disarmed => Cond::Disarmed,
            ConditionKind::Landed => Cond::Landed,
            ConditionKind::Reached => Cond::Reached(cmp(number(false)?)),
            ConditionKind::MissionComplete => Cond::MissionComplete,
        })
    }
}

impl Op {
    /// The operator as written (`">="`, `"<="`, `"=="`).
    pub fn symbol(self) -> &'static str {
        match self {
            Op::Ge => ">=",
            Op::Le => "<=",
            Op::Eq => "==",
        }
    }
}

impl ConditionKind {
    /// The unit a reading of this row is written in (`" m"`, `" m/s"`, `" s"`; `""` for none).
    pub fn unit(self) -> &'static str {
        match self {
            ConditionKind::Altitude => " m",
            ConditionKind::Airspeed => " m/s",
            ConditionKind::SimTime | ConditionKind::Time => " s",
            _ => "",
        }
    }
}

/// The condition as a person would write it (`altitude <= 3 m`, `mode Hold`,
/// `text 'Takeoff detected'`, `reached >= 4`): how a guard or a wait is named in a report.
impl core::fmt::Display for Condition {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let kind = self.kind;
        f.write_str(kind.name())?;
        match &self.target {
            Target::Number(v) => {
                let unit = kind.unit();
                match (self.within, kind) {
                    (Some(tol), _) => write!(f, " within {tol}{unit} of {v}{unit}")?,
                    (None, ConditionKind::Time) => write!(f, " {v}{unit}")?,
                    (None, _) => write!(f, " {} {v}{unit}", self.op.unwrap_or_default().symbol())?,
                }
                if self.relative {
                    f.write_str(" (from the step's start)")?;
                }
            }
            Target::Mode(m) => write!(f, " {m}")?,
            Target::Text(t) => write!(f, " '{}'", t.as_str())?,
            Target::None => {}
        }
        Ok(())
    }
}

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

/// Bits of [`Readings`] a condition reads (the sim clock is tracked by wake times instead).
pub(crate) mod dep {
    pub const HEIGHT: u8 = 1;
    pub const AIRSPEED: u8 = 1 << 1;
    pub const WAYPOINT: u8 = 1 << 2;
    pub const ARMED: u8 = 1 << 3;
    pub const MODE: u8 = 1 << 4;
    pub const LANDED: u8 = 1 << 5;
    pub const TEXT: u8 = 1 << 6;
    pub const MISSION: u8 = 1 << 7;
    /// Everything: the sim clock became known.
    pub const ALL: u8 = 0xFF;
}

/// The telemetry every condition reads, taken once per evaluation (one `f32` division for
/// the height, one mode lookup only when the heartbeat's mode changed).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Readings {
    pub sim_ms: Option<u64>,
    pub height_m: Option<f32>,
    pub airspeed_m_s: Option<f32>,
    pub waypoint: Option<u16>,
    pub armed: Option<bool>,
    pub mode: Option<Mode>,
    pub landed: Option<bool>,
    pub last_seq: u32,
    pub mission: Option<crate::mission::MissionProgress>,
}

impl Readings {
    /// Nothing known yet.
    pub const UNKNOWN: Readings = Readings {
        sim_ms: None,
        height_m: None,
        airspeed_m_s: None,
        waypoint: None,
        armed: None,
        mode: None,
        landed: None,
        last_seq: 0,
        mission: None,
    };

    /// The [`dep`] bits whose value differs from `prev` ([`dep::ALL`] when the sim clock
    /// has just become known: every time-based condition must be looked at once).
    #[inline]
    pub(crate) fn changed_since(&self, prev: &Readings) -> u8 {
        if prev.sim_ms.is_none() && self.sim_ms.is_some() {
            return dep::ALL;
        }
        let bit = |c: bool, b: u8| if c { b } else { 0 };
        bit(self.height_m != prev.height_m, dep::HEIGHT)
            | bit(self.airspeed_m_s != prev.airspeed_m_s, dep::AIRSPEED)
            | bit(self.waypoint != prev.waypoint, dep::WAYPOINT)
            | bit(self.armed != prev.armed, dep::ARMED)
            | bit(self.mode != prev.mode, dep::MODE)
            | bit(self.landed != prev.landed, dep::LANDED)
            | bit(self.last_seq != prev.last_seq, dep::TEXT)
            | bit(self.mission != prev.mission, dep::MISSION)
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
/// needles are short (a STATUSTEXT, [`MAX_NEEDLE_LEN`] bytes), and `str::contains`'s Two-Way
/// searcher is ~1.4 KiB of flash on thumbv7em. On UTF-8 it finds exactly what `str::contains`
/// finds.
pub(crate) fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    needle.is_empty() || haystack.windows(needle.len()).any(|w| w == needle)
}

impl Cond {
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
        match self {
            Cond::Height(c) => r.height_m.is_some_and(|v| c.test(v)),
            Cond::Airspeed(c) => r.airspeed_m_s.is_some_and(|v| c.test(v)),
            Cond::Waypoint(c) => r.waypoint.is_some_and(|v| c.test(v as f32)),
            Cond::SimTime { cmp, relative } => match (r.sim_ms, *relative) {
                (Some(t), false) => cmp.test(t),
                (Some(t), true) => base_ms.is_some_and(|b| cmp.test(t.saturating_sub(b))),
                (None, _) => false,
            },
            Cond::Time { ms } => match (r.sim_ms, start_ms) {
                (Some(t), Some(s)) => t.saturating_sub(s) >= *ms,
                _ => false,
            },
            Cond::Mode(m) => r.mode == Some(*m),
            Cond::Text {
                needle,
                cursor,
                seen,
            } => {
                if !*seen && r.last_seq > *cursor {
                    *seen = scan_texts(texts, *cursor, needle);
                    *cursor = r.last_seq;
                }
                *seen
            }
            Cond::Armed => r.armed == Some(true),
            Cond::Disarmed => r.armed == Some(false),
            Cond::Landed => r.landed == Some(true),
            Cond::Reached(c) => r
                .mission
                .and_then(|m| m.reached)
                .is_some_and(|v| c.test(v as f32)),
            Cond::MissionComplete => r.mission.is_some_and(|m| m.complete),
        }
    }

    /// The readings whose change can change this condition (time is handled by
    /// [`Cond::wake_ms`]).
    pub(crate) fn deps(&self) -> u8 {
        match self {
            Cond::Height(_) => dep::HEIGHT,
            Cond::Airspeed(_) => dep::AIRSPEED,
            Cond::Waypoint(_) => dep::WAYPOINT,
            Cond::SimTime { .. } | Cond::Time { .. } => 0,
            Cond::Mode(_) => dep::MODE,
            Cond::Text { .. } => dep::TEXT,
            Cond::Armed | Cond::Disarmed => dep::ARMED,
            Cond::Landed => dep::LANDED,
            Cond::Reached(_) | Cond::MissionComplete => dep::MISSION,
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
