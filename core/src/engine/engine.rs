//! [`Engine`]: a fixed set of concurrent waits, evaluated after every accepted message.

use super::condition::{dep, Readings};
use super::error::EngineError;
use super::result::{EngineEvent, Reaction, Reason, SnapshotAt, WaitId, WaitResult};
use super::wait::{Compiled, Reactions, Wait};
use super::MAX_WAITS;
use crate::mission::MissionProgress;
use crate::mode::Mode;
use crate::telemetry::{Telemetry, TextLog};
use crate::time::Instant;
use core::mem;

/// Bit `i` of the pending mask (`i` < [`MAX_WAITS`]). Not inlined: a variable 64-bit shift is
/// a dozen instructions on a 32-bit MCU, and one copy serves registration and settling.
#[inline(never)]
fn slot_bit(i: usize) -> u64 {
    1u64.checked_shl(i as u32).unwrap_or(0)
}

/// Error text of a program step's wait ended by [`Engine::close`].
pub const CLOSED_ERROR: &str = "session closed";

/// Who registered a wait: the spec treats `wait_until` and program steps slightly differently
/// (a step cannot be capped; closing the session aborts a step).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Origin {
    Wait,
    Step,
}

#[derive(Debug, Clone)]
struct Active {
    origin: Origin,
    spec: Compiled,
    registered_at: Instant,
    /// Sim tick the wait started counting at (registration, or the first sim time after it).
    start_ms: Option<u64>,
    /// `start_ms + timeout`, valid once `start_ms` is known.
    deadline_ms: u64,
    /// Reference tick of a relative sim_time; `None` = the first sim time seen.
    base_ms: Option<u64>,
    /// Sim tick since which the condition has held without a break (for `hold_s`).
    holding_since: Option<u64>,
}

/// The outcome of looking at one wait.
enum Look {
    /// It ends now, for this reason (and guard).
    Settle(Reason, Option<u8>),
    /// It goes on; nothing but a change of its readings can end it before sim time `wake_ms`.
    Wait { wake_ms: u64 },
}

impl Active {
    /// Look at the wait against readings `r`. Met wins over a guard, a guard over the timeout;
    /// guards are held while the main condition's report is settling ([`Cond::settling`]).
    #[inline]
    fn look<const T: usize>(&mut self, r: &Readings, texts: &TextLog<T>) -> Look {
        let Some(t) = r.sim_ms else {
            // No clock yet: only the readings can end it (time-based parts never hold).
            let (start, base) = (self.start_ms, self.base_ms);
            if self.spec.cond.holds(r, texts, start, base) && self.spec.hold_ms == 0 {
                return Look::Settle(Reason::Met, None);
            }
            if !self.spec.cond.settling(r) {
                for (i, g) in self.spec.guards.iter_mut().enumerate() {
                    if g.holds(r, texts, start, base) {
                        return Look::Settle(Reason::Guard, Some(i as u8));
                    }
                }
            }
            return Look::Wait { wake_ms: u64::MAX };
        };
        let start = *self.start_ms.get_or_insert(t);
        self.deadline_ms = start.saturating_add(self.spec.timeout_ms);
        let base = *self.base_ms.get_or_insert(t);
        let (start, base) = (Some(start), Some(base));
        let mut wake = self.deadline_ms;
        if self.spec.cond.holds(r, texts, start, base) {
            if self.spec.hold_ms == 0 {
                return Look::Settle(Reason::Met, None);
            }
            let since = *self.holding_since.get_or_insert(t);
            let done = since.saturating_add(self.spec.hold_ms);
            if t >= done {
                return Look::Settle(Reason::Met, None);
            }
            wake = wake.min(done);
        } else {
            self.holding_since = None;
            wake = wake.min(self.spec.cond.wake_ms(t, start, base));
        }
        let settling = self.spec.cond.settling(r);
        for (i, g) in self.spec.guards.iter_mut().enumerate() {
            if !settling && g.holds(r, texts, start, base) {
                return Look::Settle(Reason::Guard, Some(i as u8));
            }
            wake = wake.min(g.wake_ms(t, start, base));
        }
        if t >= self.deadline_ms {
            return Look::Settle(Reason::Timeout, None);
        }
        Look::Wait { wake_ms: wake }
    }
}

#[derive(Debug, Clone)]
struct Done {
    result: WaitResult,
    /// Reactions not yet handed out by `poll_event`.
    reactions: Reactions,
    /// Settle order, so events come out in the order waits settled.
    order: u64,
}

#[derive(Debug, Clone)]
// Fixed-size slots without a heap: a slot is as large as its largest state.
#[allow(clippy::large_enum_variant)]
enum State {
    Free,
    Pending(Active),
    Settled(Done),
}

#[derive(Debug, Clone)]
struct Slot {
    generation: u32,
    state: State,
}

/// A fixed set of `N` concurrent waits (1 ≤ `N` ≤ [`MAX_WAITS`]).
///
/// Drive it with [`Engine::evaluate`] after every message [`Telemetry::handle`] accepted, and
/// drain [`Engine::poll_event`]. Every registered wait settles exactly once; its slot stays
/// taken until its `Settled` event has been polled (results are never dropped, and a full
/// engine is an error at registration). All timing is on the autopilot's clock
/// ([`Telemetry::sim_ms`]); `now` only measures `waited_wall`.
#[derive(Debug, Clone)]
pub struct Engine<const N: usize> {
    slots: [Slot; N],
    /// Bit i: slot i holds a pending wait. The hot loop visits only these.
    pending: u64,
    /// Slots holding a settled, unpolled result.
    settled: usize,
    settle_count: u64,
    /// `None`: nothing settled yet; `Some(t)`: the sim tick of the last settle (`None` inside
    /// if the clock was not known then).
    last_settle: Option<Option<u64>>,
    /// The heartbeat's `custom_mode` and the mode it names, so the table is searched only
    /// when the mode changes.
    mode_cache: Option<(u32, Mode)>,
    /// Per slot, what the hot loop needs to skip a wait: its readings and its wake time.
    hot: [Hot; N],
    /// The readings of the last evaluation, to tell what changed.
    last: Readings,
    /// A superset of the pending waits' `deps`: the readings an evaluation takes and compares
    /// (the others cannot end a wait). Widened at registration, narrowed when the hot loop runs.
    need: dep::Deps,
    /// At most the earliest `wake_ms` of the pending waits: before it, a frame that changed
    /// none of `need` cannot end any wait, and the hot loop is not entered.
    wake_ms: u64,
    /// This mission run's progress, as the driver last supplied it.
    mission: Option<MissionProgress>,
    /// The offboard machine's at_target, as the driver last supplied it.
    #[cfg(feature = "extra-conditions")]
    at_target: Option<bool>,
}

/// When a pending wait must be looked at again: when one of its `deps` readings changed, or
/// the sim clock reached `wake_ms` (its timeout, the end of a hold, a time target).
#[derive(Debug, Clone, Copy)]
struct Hot {
    deps: super::condition::dep::Deps,
    wake_ms: u64,
}

impl<const N: usize> Default for Engine<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> Engine<N> {
    /// An engine with every slot free.
    // Not inlined: built once, and out of line its stores are short offsets into the
    // return slot rather than long ones into the caller's far larger struct (thumbv7em).
    #[inline(never)]
    pub fn new() -> Self {
        const {
            assert!(
                N >= 1 && N <= MAX_WAITS,
                "Engine<N>: N must be 1..=MAX_WAITS"
            )
        };
        Engine {
            slots: core::array::from_fn(|_| Slot {
                generation: 0,
                state: State::Free,
            }),
            pending: 0,
            settled: 0,
            settle_count: 0,
            last_settle: None,
            mode_cache: None,
            hot: [Hot {
                deps: 0,
                wake_ms: u64::MAX,
            }; N],
            last: Readings::UNKNOWN,
            need: 0,
            wake_ms: u64::MAX,
            mission: None,
            #[cfg(feature = "extra-conditions")]
            at_target: None,
        }
    }

    /// Supply this mission run's progress (`None`: PX4 reported nothing in this run yet), which
    /// the `reached` and `mission_complete` conditions read; evaluated at the next
    /// [`Engine::evaluate`] or registration. The offboard machine has it
    /// ([`crate::offboard::Offboard::mission_progress`]); the client hands it over after every
    /// frame and action, before any wait registered after them is looked at.
    pub fn set_mission_progress(&mut self, progress: Option<MissionProgress>) {
        self.mission = progress;
    }

    /// Supply whether the vehicle is at the last verb's target
    /// ([`crate::offboard::Offboard::at_target`]; `None`: not known), which the `at_target`
    /// condition reads; the client hands it over after every frame and action, as the mission
    /// progress.
    #[cfg(feature = "extra-conditions")]
    pub fn set_at_target(&mut self, at_target: Option<bool>) {
        self.at_target = at_target;
    }

    /// The mission progress the conditions read.
    pub fn mission_progress(&self) -> Option<MissionProgress> {
        self.mission
    }

    /// Number of slots.
    pub fn capacity(&self) -> usize {
        N
    }

    /// Waits not yet settled.
    pub fn pending_count(&self) -> usize {
        self.pending.count_ones() as usize
    }

    /// Slots free for a new wait (neither pending nor holding an unpolled result).
    pub fn free_slots(&self) -> usize {
        self.slots
            .iter()
            .filter(|s| matches!(s.state, State::Free))
            .count()
    }

    /// Whether `id` names a wait that has not settled yet.
    pub fn is_pending(&self, id: WaitId) -> bool {
        self.index(id)
            .is_ok_and(|i| matches!(self.slots[i].state, State::Pending(_)))
    }

    /// Whether [`Engine::poll_event`] has something.
    pub fn has_events(&self) -> bool {
        self.settled > 0
    }

    /// Sim tick (ms) of the most recent settle: `None` if nothing has settled, `Some(None)`
    /// if it settled before the sim clock was known. Relative `sim_time` counts from it.
    pub fn last_settle_sim_ms(&self) -> Option<Option<u64>> {
        self.last_settle
    }

    /// Register a `wait_until`. A relative `sim_time` counts from the last settle on this
    /// engine (an error if nothing has settled). If the wait can already be decided (the
    /// condition holds with no `hold_s`, a guard holds, or `timeout_s` is 0) it settles now,
    /// with `snapshot_at` [`SnapshotAt::Return`] and, when met, its reactions queued first.
    ///
    /// The other waits are first evaluated against `tel` (as [`Engine::evaluate`] would), in
    /// case the driver handled messages since the last evaluation.
    pub fn register<const T: usize>(
        &mut self,
        now: Instant,
        tel: &Telemetry<T>,
        wait: &Wait,
    ) -> Result<WaitId, EngineError> {
        let spec = wait.compile(tel.texts().last_seq())?;
        let base = if spec.relative {
            self.last_settle.ok_or(EngineError::NoPreviousSettle)?
        } else {
            None
        };
        self.insert(now, tel, spec, base, Origin::Wait)
    }

    /// Register a program step's wait; a relative `sim_time` counts from `base_ms` (the step's
    /// start tick; `None` = the first sim time seen).
    pub(crate) fn register_step<const T: usize>(
        &mut self,
        now: Instant,
        tel: &Telemetry<T>,
        wait: &Wait,
        base_ms: Option<u64>,
    ) -> Result<WaitId, EngineError> {
        let spec = wait.compile(tel.texts().last_seq())?;
        self.insert(now, tel, spec, base_ms, Origin::Step)
    }

    fn insert<const T: usize>(
        &mut self,
        now: Instant,
        tel: &Telemetry<T>,
        spec: Compiled,
        base_ms: Option<u64>,
        origin: Origin,
    ) -> Result<WaitId, EngineError> {
        let i = self
            .slots
            .iter()
            .position(|s| matches!(s.state, State::Free))
            .ok_or(EngineError::Full)?;
        // Bring every other wait up to date first, so "what changed" stays exact for all of
        // them even if the driver handled messages without evaluating.
        self.evaluate(now, tel);
        self.last = self.readings(tel, dep::ALL);
        let start_ms = tel.sim_ms();
        let deps = spec.deps;
        // Straight into the slot, then looked at there: no second copy of the wait on the
        // stack (it is several hundred bytes).
        let slot = &mut self.slots[i];
        slot.state = State::Pending(Active {
            origin,
            deadline_ms: start_ms.unwrap_or(0).saturating_add(spec.timeout_ms),
            spec,
            registered_at: now,
            start_ms,
            base_ms,
            holding_since: None,
        });
        let id = WaitId {
            slot: i as u8,
            generation: slot.generation,
        };
        let look = match &mut slot.state {
            State::Pending(active) => active.look(&self.last, tel.texts()),
            // Not reached (just stored); a wait that never wakes by itself, not a panic.
            _ => Look::Wait { wake_ms: u64::MAX },
        };
        self.pending |= slot_bit(i);
        match look {
            Look::Settle(reason, guard) => {
                self.settle(i, now, tel, reason, guard, SnapshotAt::Return, None)
            }
            Look::Wait { wake_ms } => {
                self.hot[i] = Hot { deps, wake_ms };
                self.need |= deps;
                self.wake_ms = self.wake_ms.min(wake_ms);
            }
        }
        Ok(id)
    }

    /// Evaluate the pending waits against the telemetry as it is now. Call it after every
    /// message `tel` accepted. Only waits whose readings changed, or whose wake time (timeout,
    /// end of a hold, a time target) the sim clock has reached, are looked at; the outcome is
    /// the same as looking at all of them. In one tick, met wins over a guard, a guard over
    /// the timeout.
    pub fn evaluate<const T: usize>(&mut self, now: Instant, tel: &Telemetry<T>) {
        if self.pending == 0 {
            return; // `last` is refreshed at the next registration
        }
        let r = self.readings(tel, self.need);
        let changed = r.changed_since(&self.last);
        self.last = r;
        let all = changed == dep::ALL;
        let sim = r.sim_ms.unwrap_or(0);
        // The common frame: nothing any wait reads changed and no wake time is due.
        if !all && changed & self.need == 0 && sim < self.wake_ms {
            return;
        }
        let (mut need, mut wake) = (0, u64::MAX);
        let mut bits = self.pending;
        while bits != 0 {
            let i = bits.trailing_zeros() as usize;
            bits &= bits - 1;
            // `get`, not indexing: a bit is always a slot, and no panic path is linked in.
            let Some(&hot) = self.hot.get(i) else {
                continue;
            };
            if !all && hot.deps & changed == 0 && sim < hot.wake_ms {
                need |= hot.deps;
                wake = wake.min(hot.wake_ms);
                continue;
            }
            let look = match self.slots.get_mut(i).map(|s| &mut s.state) {
                Some(State::Pending(a)) => a.look(&self.last, tel.texts()),
                _ => continue,
            };
            match look {
                Look::Settle(reason, guard) => {
                    self.settle(i, now, tel, reason, guard, SnapshotAt::Settle, None)
                }
                Look::Wait { wake_ms } => {
                    if let Some(h) = self.hot.get_mut(i) {
                        h.wake_ms = wake_ms;
                    }
                    need |= hot.deps;
                    wake = wake.min(wake_ms);
                }
            }
        }
        self.need = need;
        self.wake_ms = wake;
    }

    /// The reference [`Engine::evaluate`] is held to: every pending wait looked at against
    /// every reading, nothing skipped (no change mask, no wake times). For tests that check
    /// the skipping never changes an outcome; a driver calls [`Engine::evaluate`].
    #[doc(hidden)]
    pub fn evaluate_every_wait<const T: usize>(&mut self, now: Instant, tel: &Telemetry<T>) {
        if self.pending == 0 {
            return;
        }
        self.last = self.readings(tel, dep::ALL);
        let mut bits = self.pending;
        while bits != 0 {
            let i = bits.trailing_zeros() as usize;
            bits &= bits - 1;
            let look = match &mut self.slots[i].state {
                State::Pending(a) => a.look(&self.last, tel.texts()),
                _ => continue,
            };
            if let Look::Settle(reason, guard) = look {
                self.settle(i, now, tel, reason, guard, SnapshotAt::Settle, None);
            }
        }
    }

    /// The driver's wall-clock limit for wait `id` came first: settle it with
    /// [`Reason::Cap`] and `snapshot_at` Return. Not for program steps.
    pub fn cap<const T: usize>(
        &mut self,
        now: Instant,
        tel: &Telemetry<T>,
        id: WaitId,
    ) -> Result<(), EngineError> {
        let i = self.pending_index(id)?;
        let cursor = match &self.slots[i].state {
            State::Pending(a) if a.origin == Origin::Step => return Err(EngineError::NotCappable),
            State::Pending(a) => a.spec.cond.text_cursor(),
            _ => None,
        };
        self.settle(i, now, tel, Reason::Cap, None, SnapshotAt::Return, None);
        if let (Some(c), State::Settled(d)) = (cursor, &mut self.slots[i].state) {
            d.result.snapshot.seq = d.result.snapshot.seq.min(c);
        }
        Ok(())
    }

    /// End wait `id` with [`Reason::Aborted`].
    pub fn abort<const T: usize>(
        &mut self,
        now: Instant,
        tel: &Telemetry<T>,
        id: WaitId,
    ) -> Result<(), EngineError> {
        let i = self.pending_index(id)?;
        self.settle(i, now, tel, Reason::Aborted, None, SnapshotAt::Settle, None);
        Ok(())
    }

    /// The vehicle or link died: settle every pending wait (steps included) with
    /// [`Reason::Died`], `snapshot.error` = `error`. Returns how many settled.
    pub fn died<const T: usize>(&mut self, now: Instant, tel: &Telemetry<T>, error: &str) -> usize {
        self.settle_all(now, tel, |_| (Reason::Died, Some(error)))
    }

    /// The session is closing: settle every pending `wait_until` with [`Reason::Closed`] and
    /// every program step with [`Reason::Aborted`] (error [`CLOSED_ERROR`]), which ends a
    /// running program. Returns how many settled.
    pub fn close<const T: usize>(&mut self, now: Instant, tel: &Telemetry<T>) -> usize {
        self.settle_all(now, tel, |o| match o {
            Origin::Wait => (Reason::Closed, None),
            Origin::Step => (Reason::Aborted, Some(CLOSED_ERROR)),
        })
    }

    /// Next event, oldest settle first; a wait's reactions come before its `Settled`, which
    /// frees its slot.
    #[must_use = "a polled event is gone from the queue"]
    pub fn poll_event(&mut self) -> Option<EngineEvent> {
        let (i, id) = self.oldest_settled(false)?;
        if let Some(State::Settled(d)) = self.slots.get_mut(i).map(|s| &mut s.state) {
            if let Some(reaction) = d.reactions.take_next() {
                return Some(EngineEvent::Reaction { id, reaction });
            }
        }
        self.release(i)
            .map(|result| EngineEvent::Settled { id, result })
    }

    /// Next reaction to apply, oldest settle first, leaving every `Settled` where it is.
    ///
    /// A driver that must apply reactions in the tick they fire but reports results later (the
    /// [`crate::client::Client`]) drains this after every evaluation and registration.
    #[must_use = "a polled reaction is gone from the queue: carry it out"]
    pub fn poll_reaction(&mut self) -> Option<(WaitId, Reaction)> {
        let (i, id) = self.oldest_settled(true)?;
        match self.slots.get_mut(i).map(|s| &mut s.state) {
            Some(State::Settled(d)) => d.reactions.take_next().map(|r| (id, r)),
            _ => None,
        }
    }

    /// The settled slot (with reactions still to hand out, if `with_reactions`) that settled
    /// first, and its id. A flag, not a closure: one copy serves both callers.
    fn oldest_settled(&self, with_reactions: bool) -> Option<(usize, WaitId)> {
        if self.settled == 0 {
            return None;
        }
        let mut best: Option<(usize, u64, u32)> = None;
        for (i, s) in self.slots.iter().enumerate() {
            if let State::Settled(d) = &s.state {
                let want = !with_reactions || d.reactions != Reactions::NONE;
                if want && best.is_none_or(|(_, o, _)| d.order < o) {
                    best = Some((i, d.order, s.generation));
                }
            }
        }
        let (i, _, generation) = best?;
        let id = WaitId {
            slot: i as u8,
            generation,
        };
        Some((i, id))
    }

    /// Take the result of settled wait `id` directly, freeing its slot; refused while it has
    /// reactions not yet polled (they must reach the driver), and for a wait still pending.
    pub fn take_settled(&mut self, id: WaitId) -> Result<WaitResult, EngineError> {
        let i = self.index(id)?;
        match &self.slots[i].state {
            State::Settled(d) if d.reactions == Reactions::NONE => {}
            _ => return Err(EngineError::NotPending),
        }
        self.release(i).ok_or(EngineError::NotPending)
    }

    fn release(&mut self, i: usize) -> Option<WaitResult> {
        let slot = self.slots.get_mut(i)?; // always a slot; `get` links no panic path in
        match mem::replace(&mut slot.state, State::Free) {
            State::Settled(d) => {
                slot.generation = slot.generation.wrapping_add(1);
                self.settled -= 1;
                Some(d.result)
            }
            other => {
                slot.state = other;
                None
            }
        }
    }

    fn index(&self, id: WaitId) -> Result<usize, EngineError> {
        let i = id.slot as usize;
        match self.slots.get(i) {
            Some(s) if s.generation == id.generation && !matches!(s.state, State::Free) => Ok(i),
            _ => Err(EngineError::StaleId),
        }
    }

    fn pending_index(&self, id: WaitId) -> Result<usize, EngineError> {
        let i = self.index(id)?;
        match self.slots[i].state {
            State::Pending(_) => Ok(i),
            _ => Err(EngineError::NotPending),
        }
    }

    fn settle_all<'a, const T: usize>(
        &mut self,
        now: Instant,
        tel: &Telemetry<T>,
        how: impl Fn(Origin) -> (Reason, Option<&'a str>),
    ) -> usize {
        let mut n = 0;
        let mut bits = self.pending;
        while bits != 0 {
            let i = bits.trailing_zeros() as usize;
            bits &= bits - 1;
            if let Some(State::Pending(a)) = self.slots.get(i).map(|s| &s.state) {
                let (reason, error) = how(a.origin);
                self.settle(i, now, tel, reason, None, SnapshotAt::Settle, error);
                n += 1;
            }
        }
        n
    }

    #[allow(clippy::too_many_arguments)]
    fn settle<const T: usize>(
        &mut self,
        i: usize,
        now: Instant,
        tel: &Telemetry<T>,
        reason: Reason,
        guard: Option<u8>,
        at: SnapshotAt,
        error: Option<&str>,
    ) {
        let slot = &mut self.slots[i];
        // The few fields needed, by reference: the pending wait is overwritten in place below,
        // never moved out whole (it and the result are several hundred bytes of stack each).
        let (start_ms, registered_at, reactions) = match &slot.state {
            State::Pending(a) => (a.start_ms, a.registered_at, a.spec.reactions),
            _ => return,
        };
        let sim = tel.sim_ms();
        let waited_sim_ms = match (start_ms, sim) {
            (Some(s), Some(t)) => t.saturating_sub(s),
            _ => 0,
        };
        self.settle_count += 1;
        slot.state = State::Settled(Done {
            result: WaitResult {
                satisfied: reason == Reason::Met,
                reason,
                // Correctly rounded in integers, as `as_secs_f32` below (the same value as
                // `ms as f32 / 1000.0` below 2^24 ms): no soft-float `u64 -> f32` routine.
                waited_sim_s: crate::decimal::to_f32(false, waited_sim_ms, -3, false),
                waited_wall: now.saturating_since(registered_at),
                snapshot_at: at,
                snapshot: tel.snapshot(error),
                guard,
            },
            reactions: if reason == Reason::Met {
                reactions
            } else {
                Reactions::NONE
            },
            order: self.settle_count,
        });
        self.pending &= !slot_bit(i);
        self.settled += 1;
        self.last_settle = Some(sim);
    }

    /// The readings in `need` (and the clock); the others stay unknown. Each condition reads
    /// only its own [`dep`] groups and the clock, so this is exact for the waits `need` covers.
    fn readings<const T: usize>(&mut self, tel: &Telemetry<T>, need: dep::Deps) -> Readings {
        // The cheap ones always (more readings than needed is still exact); the height (a
        // division), the mode (a table) and the landed state (the height again) on demand.
        let mut r = Readings {
            sim_ms: tel.sim_ms(),
            airspeed_m_s: tel.airspeed_m_s(),
            waypoint: tel.waypoint(),
            armed: tel.armed(),
            last_seq: tel.texts().last_seq(),
            mission: self.mission,
            ..Readings::UNKNOWN
        };
        if need & dep::HEIGHT != 0 {
            r.height_m = tel.height_m();
        }
        if need & dep::MODE != 0 {
            r.mode = tel.heartbeat().map(|hb| match self.mode_cache {
                Some((cm, m)) if cm == hb.custom_mode => m,
                _ => {
                    let m = Mode::from_custom_mode(hb.custom_mode);
                    self.mode_cache = Some((hb.custom_mode, m));
                    m
                }
            });
        }
        if need & dep::LANDED != 0 {
            r.landed = tel.landed();
        }
        #[cfg(feature = "extra-conditions")]
        {
            r.extra = super::condition::Extra::read(tel, self.at_target, need);
        }
        r
    }
}
