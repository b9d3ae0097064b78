//! What the engine reports: how a wait ended ([`WaitResult`]) and the events the driver polls.

use crate::action::Action;
use crate::mode::Mode;
use crate::rc::RcSticks;
use crate::telemetry::Snapshot;

/// Why a wait ended (the spec's reasons, plus `Guard`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive] // more endings may come; match with a `_` arm
pub enum Reason {
    /// The condition held (for `hold_s`, continuously for that long).
    Met,
    /// `timeout_s` of sim time passed first.
    Timeout,
    /// The driver's wall-clock limit came first ([`super::Engine::cap`]); the wait is not over:
    /// register again with `since_seq` = `snapshot.seq`.
    Cap,
    /// The vehicle or link died ([`super::Engine::died`]); `snapshot.error` says which.
    Died,
    /// The session was closed ([`super::Engine::close`]).
    Closed,
    /// The wait or program was aborted.
    Aborted,
    /// A guard condition held first; [`WaitResult::guard`] says which.
    Guard,
}

impl Reason {
    /// The lower-case name (`"met"`, `"timeout"`, …, `"guard"`).
    pub fn name(self) -> &'static str {
        match self {
            Reason::Met => "met",
            Reason::Timeout => "timeout",
            Reason::Cap => "cap",
            Reason::Died => "died",
            Reason::Closed => "closed",
            Reason::Aborted => "aborted",
            Reason::Guard => "guard",
        }
    }
}

/// Its [`Reason::name`], for messages.
impl core::fmt::Display for Reason {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.name())
    }
}

/// When the snapshot was taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum SnapshotAt {
    /// In the evaluation the wait settled in (met, timeout, guard, died, closed, aborted).
    Settle,
    /// As the call returned: a cap, or a wait that settled at registration (already true).
    Return,
}

/// How a wait ended. Every registered wait produces exactly one.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive] // more about how it ended may come; build one with `WaitResult::ended`
pub struct WaitResult {
    /// `reason == Met`.
    pub satisfied: bool,
    /// Why it ended.
    pub reason: Reason,
    /// Sim seconds from registration (or the first sim time seen after it) to the end;
    /// 0 if the sim clock was never known.
    pub waited_sim_s: f32,
    /// Driver (wall) time from registration to the end.
    pub waited_wall: crate::time::Duration,
    /// When [`WaitResult::snapshot`] was taken.
    pub snapshot_at: SnapshotAt,
    /// The vehicle at the end. For a capped text wait, `seq` is the newest text the wait had
    /// checked, so re-registering with `since_seq = snapshot.seq` misses nothing.
    pub snapshot: Snapshot,
    /// Index of the guard that fired, with [`Reason::Guard`].
    pub guard: Option<u8>,
}

impl WaitResult {
    /// A wait that ended for `reason` with the vehicle as `snapshot`, as the call returned,
    /// having waited no time (what a driver reports for a wait it ends itself: closed on a
    /// pump that stopped, refused before it ran).
    pub fn ended(reason: Reason, snapshot: Snapshot) -> Self {
        WaitResult {
            satisfied: reason == Reason::Met,
            reason,
            waited_sim_s: 0.0,
            waited_wall: crate::time::Duration::from_micros(0),
            snapshot_at: SnapshotAt::Return,
            snapshot,
            guard: None,
        }
    }
}

/// Names a registered wait: a slot and that slot's generation, so an id whose result has
/// already been polled (and whose slot may hold a newer wait) is refused, never confused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct WaitId {
    pub(crate) slot: u8,
    pub(crate) generation: u32,
}

impl WaitId {
    /// The slot index.
    pub fn slot(self) -> usize {
        self.slot as usize
    }
    /// The slot's generation when the wait was registered.
    pub fn generation(self) -> u32 {
        self.generation
    }
}

/// One reaction for the driver to apply now.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Reaction {
    /// Stream these sticks (MANUAL_CONTROL).
    Rc(RcSticks),
    /// Request this mode.
    Mode(Mode),
    /// Set the simulator's speed factor.
    Speedup(f32),
}

impl Reaction {
    /// The same thing as an [`Action`], for drivers that apply actions.
    pub fn to_action(self) -> Action {
        match self {
            Reaction::Rc(s) => Action::Rc(s),
            Reaction::Mode(m) => Action::SetMode(m),
            Reaction::Speedup(f) => Action::Speedup(f),
        }
    }
}

/// What the engine tells the driver, from [`super::Engine::poll_event`].
///
/// A wait's reactions always come before its `Settled`.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
// No heap: the result travels by value; a reaction event is the rare small case.
#[allow(clippy::large_enum_variant)]
pub enum EngineEvent {
    /// Apply this reaction now: the wait's condition was met in the last evaluation.
    Reaction {
        /// The wait it belongs to.
        id: WaitId,
        /// What to do.
        reaction: Reaction,
    },
    /// The wait ended; its slot is free again.
    Settled {
        /// The wait.
        id: WaitId,
        /// How it ended.
        result: WaitResult,
    },
}
