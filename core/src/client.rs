//! [`Client`]: everything one vehicle link needs, behind one sans-IO interface.
//!
//! The client owns the [`Telemetry`] cache, the PX4 [`Offboard`] machine, the wait [`Engine`]
//! and a step-[`ProgramRunner`], and wires them so the wait engine's rules hold without the
//! driver's help:
//!
//! * every accepted frame updates telemetry, then the offboard machine, then evaluates waits;
//! * reactions (`then_rc`, `then_mode`) are applied to the offboard machine in that same call,
//!   so the frames they cause go out on the next [`Client::poll_transmit`] — before the driver
//!   even learns the wait settled; `then_speedup` is surfaced as [`Event::Speedup`] first;
//! * a program step that settles starts the next step (its action applied, its wait registered)
//!   in the same call;
//! * an autopilot reboot (its clock jumping back) ends every wait with `died`.
//!
//! It also takes what a transport received, as bytes ([`crate::link`]): it frames them, keeps
//! the vehicle's frames, counts loss, and supervises the link (silence, a standing autopilot
//! clock) with timers of its own. A driver loop (firmware main loop, host pump, tokio task,
//! the replay of a recording) is then only I/O:
//!
//! ```text
//! for each read: client.handle_datagram(now, &datagram)   // UDP
//!            or: client.handle_stream_bytes(now, &chunk)  // TCP, serial
//! while let Some(n) = client.poll_transmit(now, &mut buf) { send(&buf[..n]) }
//! while let Some(ev) = client.poll_event() { … }
//! sleep until client.next_deadline() or the next read
//! ```
//!
//! After the sends, [`Client::next_deadline`] is never a time already due: a driver that
//! sleeps until it never spins.

use crate::action::Action;
use crate::engine::{
    Actuator, Engine, EngineError, EngineEvent, Program, ProgramEnd, ProgramError, ProgramRunner,
    Progress, Reaction, Reason, Wait, WaitId, WaitResult,
};
use crate::explain::{Explanation, Outstanding};
use crate::frame::{BufferTooSmall, Encoder, RawFrame};
use crate::ground_truth::{GroundTruth, GroundTruthRequest};
use crate::link::{Note, Rx, Watch};
use crate::mission::MissionProgress;
use crate::msg::{Frame, ParserError};
use crate::offboard::{Offboard, OffboardConfig, OffboardError, OffboardEvent};
use crate::telemetry::{LinkIds, Snapshot, Telemetry};
use crate::time::{Duration, Instant};
use core::fmt;
use heapless::Deque;

mod rx;
pub mod verbs;

/// `snapshot.error` of the waits an autopilot reboot ended.
pub const REBOOT_ERROR: &str = "autopilot rebooted (time_boot_ms went back)";

/// Program notifications kept for the driver; older ones are dropped (and counted) when full.
/// The runner's records stay authoritative ([`Client::program`]).
pub const PROGRAM_EVENTS_LEN: usize = 8;

/// How the client identifies itself and its vehicle, and how the offboard machine behaves.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ClientConfig {
    /// Target system, our own system and component.
    pub ids: LinkIds,
    /// Tolerances, settle window and retry policy.
    pub offboard: OffboardConfig,
    /// Whether to ask the vehicle for a simulator's ground truth (see [`crate::ground_truth`]).
    pub ground_truth: GroundTruth,
    /// The autopilot's component id, when the caller knows it: only its frames count and every
    /// command, parameter and mission message addresses it. `None`: the component of the first
    /// autopilot HEARTBEAT of the target system, latched (1, PX4's autopilot, until then). A
    /// vehicle may run its autopilot as another component (behind a companion, a router).
    pub target_compid: Option<u8>,
    /// The link's supervision ([`crate::link`]): driver time of silence, or of an autopilot
    /// clock standing still while frames flow, after which [`Event::Silent`] or
    /// [`Event::ClockStalled`] comes. `None` (the default): not watched.
    pub stall: Option<Duration>,
}

/// What the driver learns from [`Client::poll_event`].
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[allow(clippy::large_enum_variant)] // a WaitResult travels by value; no heap
#[non_exhaustive] // more news may come; match with a `_` arm
pub enum Event {
    /// A `then_speedup` reaction fired (or a program step asked for it): set the simulator's
    /// speed factor now. Only the newest pending factor is kept.
    Speedup(f32),
    /// A wait registered with [`Client::wait`] ended.
    Settled {
        /// The wait.
        id: WaitId,
        /// How it ended.
        result: WaitResult,
    },
    /// A program step ended (its full result is in [`ProgramRunner::records`]).
    Step {
        /// Step index.
        step: usize,
        /// Whether its condition was met.
        passed: bool,
        /// Why its wait ended.
        reason: Reason,
    },
    /// The running program ended.
    ProgramFinished(ProgramEnd),
    /// The offboard machine reports a refusal, a give-up, or a mission transfer's outcome.
    Offboard(OffboardEvent),
    /// Nothing from the vehicle for the stall limit ([`ClientConfig::stall`]); reported once,
    /// until [`Event::Resumed`].
    Silent {
        /// Driver time since the vehicle's last frame.
        silent: Duration,
    },
    /// The autopilot clock stood still for the stall limit while frames still flowed (its
    /// simulation hangs: waits counting its clock would never end); reported once.
    ClockStalled {
        /// Driver time since the clock last moved.
        stalled: Duration,
    },
    /// Frames (and the clock) again after [`Event::Silent`] or [`Event::ClockStalled`].
    Resumed,
}

/// A request the client could not take.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive] // more causes will come; match with a `_` arm
pub enum ClientError {
    /// The wait engine refused (full, stale id, bad spec, …).
    Engine(EngineError),
    /// The program runner refused.
    Program(ProgramError),
    /// The offboard machine refused the action.
    Offboard(OffboardError),
}

impl fmt::Display for ClientError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClientError::Engine(e) => e.fmt(f),
            ClientError::Program(e) => e.fmt(f),
            ClientError::Offboard(e) => e.fmt(f),
        }
    }
}

impl From<EngineError> for ClientError {
    fn from(e: EngineError) -> Self {
        ClientError::Engine(e)
    }
}

impl From<ProgramError> for ClientError {
    fn from(e: ProgramError) -> Self {
        ClientError::Program(e)
    }
}

impl From<OffboardError> for ClientError {
    fn from(e: OffboardError) -> Self {
        ClientError::Offboard(e)
    }
}

/// A program notification waiting for [`Client::poll_event`]: the small events only, so the
/// queue does not hold [`PROGRAM_EVENTS_LEN`] copies of the large [`Event`] (a `WaitResult`
/// travels in `Settled`), which would cost a firmware ~2.7 KiB of RAM for nothing.
#[derive(Debug, Clone, Copy, PartialEq)]
enum ProgramNote {
    Step {
        step: usize,
        passed: bool,
        reason: Reason,
    },
    Finished(ProgramEnd),
}

impl ProgramNote {
    fn event(self) -> Event {
        match self {
            ProgramNote::Step {
                step,
                passed,
                reason,
            } => Event::Step {
                step,
                passed,
                reason,
            },
            ProgramNote::Finished(end) => Event::ProgramFinished(end),
        }
    }
}

/// Carries out program actions: the offboard machine's verbs, and the driver's speed factor.
struct Act<'a, const ITEMS: usize, const TEXTS: usize> {
    offboard: &'a mut Offboard<ITEMS>,
    tel: &'a Telemetry<TEXTS>,
    speedup: &'a mut Option<f32>,
}

impl<const ITEMS: usize, const TEXTS: usize> Actuator for Act<'_, ITEMS, TEXTS> {
    type Error = OffboardError;

    fn apply(&mut self, now: Instant, action: &Action) -> Result<(), OffboardError> {
        match action {
            Action::Speedup(f) => {
                *self.speedup = Some(*f);
                Ok(())
            }
            other => self.offboard.apply(now, self.tel, other),
        }
    }

    fn mission_progress(&self) -> Option<Option<MissionProgress>> {
        Some(self.offboard.mission_progress())
    }

    #[cfg(feature = "extra-conditions")]
    fn at_target(&self) -> Option<bool> {
        Some(self.offboard.at_target(self.tel))
    }
}

/// Raw outbound messages queued at most ([`Client::send_raw`]).
#[cfg(feature = "raw-send")]
pub const RAW_QUEUE_LEN: usize = 4;

/// One queued raw message.
#[cfg(feature = "raw-send")]
#[derive(Debug, Clone)]
struct RawOut {
    id: u32,
    crc_extra: u8,
    payload: heapless::Vec<u8, 255>,
}

#[cfg(feature = "raw-send")]
impl<const WAITS: usize, const TEXTS: usize, const ITEMS: usize, const STEPS: usize>
    Client<WAITS, TEXTS, ITEMS, STEPS>
{
    /// Queue any message for the next [`Client::poll_transmit`]: its id, its CRC extra and its
    /// payload in MAVLink 2 wire order (the core decodes only its subset, but sends anything:
    /// a host serialises a `MavMessage` and hands it here). Sent after the machine's own
    /// frames due at that poll, in order. A payload over 255 bytes is an
    /// [`OffboardError::InvalidArgument`]; a full queue ([`RAW_QUEUE_LEN`]) an
    /// [`OffboardError::OutboxFull`]: nothing is dropped silently.
    pub fn send_raw(
        &mut self,
        id: u32,
        crc_extra: u8,
        payload: &[u8],
    ) -> Result<(), OffboardError> {
        let payload = heapless::Vec::from_slice(payload).map_err(|_| {
            OffboardError::InvalidArgument("a MAVLink payload is at most 255 bytes")
        })?;
        // Due now, whatever the last poll found.
        self.drained = None;
        self.raw
            .push_back(RawOut {
                id,
                crc_extra,
                payload,
            })
            .map_err(|_| OffboardError::OutboxFull)
    }
}

/// One vehicle link's core: `WAITS` concurrent waits, `TEXTS` STATUSTEXTs kept, missions of up
/// to `ITEMS` items, programs of up to `STEPS` steps.
#[derive(Debug, Clone)]
pub struct Client<const WAITS: usize, const TEXTS: usize, const ITEMS: usize, const STEPS: usize> {
    tel: Telemetry<TEXTS>,
    offboard: Offboard<ITEMS>,
    engine: Engine<WAITS>,
    runner: ProgramRunner<STEPS>,
    encoder: Encoder,
    truth: GroundTruthRequest,
    speedup: Option<f32>,
    #[cfg(feature = "raw-send")]
    raw: Deque<RawOut, RAW_QUEUE_LEN>,
    program_events: Deque<ProgramNote, PROGRAM_EVENTS_LEN>,
    program_events_lost: u32,
    steps_reported: usize,
    reboots_seen: u32,
    /// A failed step and what was outstanding when it settled (before the next step's action).
    failed_step: Option<(usize, Outstanding)>,
    /// A `param` step's met wait, held until PX4 answers its set.
    #[cfg(feature = "confirmed-params")]
    held_step: Option<(WaitId, WaitResult)>,
    /// The framer of [`Client::handle_datagram`] and [`Client::handle_stream_bytes`].
    rx: Rx,
    watch: Watch,
    /// The last [`Client::poll_transmit`] that found nothing due, and no frame since: a raw
    /// message or ground-truth request due at or before it waits on something other than
    /// time. (The offboard machine keeps its own such mark; the supervision never reports a
    /// window it has judged.)
    #[cfg(any(feature = "raw-send", feature = "ground-truth"))]
    drained: Option<Instant>,
}

impl<const WAITS: usize, const TEXTS: usize, const ITEMS: usize, const STEPS: usize>
    Client<WAITS, TEXTS, ITEMS, STEPS>
{
    /// A client for the vehicle and settings in `config`.
    pub fn new(config: ClientConfig) -> Self {
        let mut tel = Telemetry::new(config.ids);
        if let Some(c) = config.target_compid {
            tel.pin_target_compid(c);
        }
        Client {
            tel,
            offboard: Offboard::new(config.offboard),
            engine: Engine::new(),
            runner: ProgramRunner::new(),
            encoder: Encoder::new(config.ids.own_sysid, config.ids.own_compid),
            truth: GroundTruthRequest::new(config.ground_truth),
            #[cfg(feature = "raw-send")]
            raw: Deque::new(),
            speedup: None,
            program_events: Deque::new(),
            program_events_lost: 0,
            steps_reported: 0,
            reboots_seen: 0,
            failed_step: None,
            #[cfg(feature = "confirmed-params")]
            held_step: None,
            rx: Rx::new(),
            watch: Watch::new(config.stall),
            #[cfg(any(feature = "raw-send", feature = "ground-truth"))]
            drained: None,
        }
    }

    /// Take in one decoded frame. Returns whether it was from the target autopilot and for us;
    /// other frames change nothing.
    pub fn handle(&mut self, now: Instant, frame: &Frame) -> bool {
        if !self.tel.handle(now, frame) {
            return false;
        }
        #[cfg(any(feature = "raw-send", feature = "ground-truth"))]
        {
            self.drained = None;
        }
        self.watch.on_rx(now, self.tel.sim_ms());
        self.offboard.handle(now, &self.tel, frame);
        if cfg!(feature = "ground-truth") {
            self.truth.handle(&self.tel, frame);
        }
        self.sync_mission();
        let reboots = self.tel.clock().reboots();
        if reboots != self.reboots_seen {
            self.reboots_seen = reboots;
            self.engine.died(now, &self.tel, REBOOT_ERROR);
        }
        self.engine.evaluate(now, &self.tel);
        self.settle_tick(now);
        true
    }

    /// Decode a checked raw frame and take it in. Messages outside the decoded subset are
    /// skipped (`Ok(false)`); a payload that does not decode is counted and returned as an error.
    pub fn handle_raw(&mut self, now: Instant, raw: &RawFrame<'_>) -> Result<bool, ParserError> {
        match Frame::decode(raw) {
            Ok(Some(frame)) => Ok(self.handle(now, &frame)),
            Ok(None) => Ok(false),
            Err(e) => {
                self.rx.count_malformed();
                Err(e)
            }
        }
    }

    /// Encode the next frame due into `buf` (at least [`crate::frame::MAX_FRAME_LEN`] bytes);
    /// its length, or `None` when nothing is due. Call until `None` after every `handle`, verb
    /// or wait registration, and at [`Client::next_deadline`]: it also runs the link's
    /// supervision (its news comes from [`Client::poll_event`]).
    #[must_use = "the frame written into `buf` must be sent"]
    pub fn poll_transmit(&mut self, now: Instant, buf: &mut [u8]) -> Option<usize> {
        self.watch.poll(now);
        let n = self.next_frame(now, buf);
        #[cfg(any(feature = "raw-send", feature = "ground-truth"))]
        if n.is_none() {
            self.drained = Some(now);
        }
        n
    }

    fn next_frame(&mut self, now: Instant, buf: &mut [u8]) -> Option<usize> {
        if let Some(n) = self
            .offboard
            .poll_transmit(now, &self.tel, &mut self.encoder, buf)
        {
            return Some(n);
        }
        if buf.len() < crate::offboard::MIN_TX_BUF {
            return None; // too small for anything: ask nothing, lose nothing
        }
        #[cfg(feature = "raw-send")]
        if let Some(r) = self.raw.front() {
            let n = self
                .encoder
                .encode_payload(r.id, r.crc_extra, &r.payload, buf)
                .ok();
            if n.is_some() {
                self.raw.pop_front();
                return n;
            }
        }
        if !cfg!(feature = "ground-truth") {
            return None;
        }
        let cmd = self.truth.poll(now, &self.tel)?;
        self.encoder.encode(&cmd, buf).ok()
    }

    /// Encode `msg`, a message the offboard machine does not send itself (a driver's
    /// PARAM_REQUEST_READ, say), as this link's next frame: the same sender ids and one
    /// sequence counter with everything [`Client::poll_transmit`] sends, so the vehicle's
    /// loss statistics stay true. Returns the frame's length.
    pub fn encode<M: mavlink::MessageData>(
        &mut self,
        msg: &M,
        buf: &mut [u8],
    ) -> Result<usize, BufferTooSmall> {
        self.encoder.encode(msg, buf)
    }

    /// When to call [`Client::poll_transmit`] again if nothing arrives (driver time): the
    /// offboard machine's streams and retries, the ground-truth request, the link's
    /// supervision. Once `poll_transmit` found nothing due, a deadline at or before that poll
    /// is not reported: it waits on something other than time (a frame, a verb), and a driver
    /// sleeping until it would spin.
    #[must_use = "the driver must call back by then"]
    pub fn next_deadline(&self) -> Option<Instant> {
        let mut soonest = self.offboard.next_deadline();
        let mut take = |d: Option<Instant>| {
            if let Some(d) = d {
                soonest = Some(soonest.map_or(d, |s| s.min(d)));
            }
        };
        take(self.watch.deadline());
        #[cfg(any(feature = "raw-send", feature = "ground-truth"))]
        {
            let fresh = |d: Instant| self.drained.is_none_or(|p| d > p);
            #[cfg(feature = "raw-send")]
            if !self.raw.is_empty() {
                take(Some(Instant::ZERO).filter(|&d| fresh(d))); // queued messages go now
            }
            #[cfg(feature = "ground-truth")]
            take(self.truth.next_deadline(&self.tel).filter(|&d| fresh(d)));
        }
        soonest
    }

    /// The next thing the driver must know, most urgent first: a speed factor to apply, the
    /// link's health, program progress, offboard events, then settled waits (oldest first).
    ///
    /// Not inlined: moving a settled wait's result out of the engine takes a few temporaries of
    /// its size (~350 B each on thumbv7em), which would otherwise stay in the driver's frame
    /// while it handles the event (and registers the next wait, a deep call).
    #[inline(never)]
    #[must_use = "a polled event is gone from the queue"]
    pub fn poll_event(&mut self) -> Option<Event> {
        if let Some(f) = self.speedup.take() {
            return Some(Event::Speedup(f));
        }
        if let Some(n) = self.watch.pop() {
            return Some(match n {
                Note::Silent(silent) => Event::Silent { silent },
                Note::ClockStalled(stalled) => Event::ClockStalled { stalled },
                Note::Resumed => Event::Resumed,
            });
        }
        if let Some(e) = self.program_events.pop_front() {
            return Some(e.event());
        }
        if let Some(e) = self.offboard.poll_event() {
            return Some(Event::Offboard(e));
        }
        loop {
            match self.engine.poll_event()? {
                EngineEvent::Settled { id, result } => return Some(Event::Settled { id, result }),
                // Reactions are applied as they fire (settle_tick); one seen here is late but
                // still owed to the vehicle.
                EngineEvent::Reaction { reaction, .. } => {
                    self.apply_reaction(reaction);
                    if let Some(f) = self.speedup.take() {
                        return Some(Event::Speedup(f));
                    }
                }
            }
        }
    }

    /// Register a wait (`wait_until`). A wait already decided settles at once, its
    /// reactions applied now.
    pub fn wait(&mut self, now: Instant, wait: &Wait) -> Result<WaitId, ClientError> {
        self.sync_mission();
        let id = self.engine.register(now, &self.tel, wait)?;
        self.settle_tick(now);
        Ok(id)
    }

    /// The driver's wall-clock limit for wait `id` came first: end it with `cap` and return
    /// its result (`snapshot_at` Return). Continue with a new wait whose `since_seq` is
    /// `result.snapshot.seq`.
    pub fn cap(&mut self, now: Instant, id: WaitId) -> Result<WaitResult, ClientError> {
        self.engine.cap(now, &self.tel, id)?;
        Ok(self.engine.take_settled(id)?)
    }

    /// Take the result of settled wait `id` without going through [`Client::poll_event`].
    pub fn take_result(&mut self, id: WaitId) -> Result<WaitResult, ClientError> {
        Ok(self.engine.take_settled(id)?)
    }

    /// End wait `id` with `aborted`.
    pub fn abort_wait(&mut self, now: Instant, id: WaitId) -> Result<(), ClientError> {
        self.engine.abort(now, &self.tel, id)?;
        self.settle_tick(now);
        Ok(())
    }

    /// The vehicle or link died (process exit, PANIC, link silent, clock stalled): every wait
    /// ends with `died` and `snapshot.error` = `error`; a running program ends.
    pub fn died(&mut self, now: Instant, error: &str) {
        self.engine.died(now, &self.tel, error);
        self.end_held_step(Reason::Died, error);
        self.settle_tick(now);
    }

    /// The session is closing: waits end with `closed`, a running program with `aborted`.
    pub fn close(&mut self, now: Instant) {
        self.engine.close(now, &self.tel);
        self.end_held_step(Reason::Closed, "closed");
        self.settle_tick(now);
    }

    /// Start a step program (the engine's steps): step 0's action is applied and its wait
    /// registered now.
    pub fn start_program(
        &mut self,
        now: Instant,
        program: Program<STEPS>,
    ) -> Result<Progress, ClientError> {
        let mut act = Act {
            offboard: &mut self.offboard,
            tel: &self.tel,
            speedup: &mut self.speedup,
        };
        let progress = self
            .runner
            .start(now, &self.tel, &mut self.engine, &mut act, program)?;
        self.sync_mission();
        self.steps_reported = 0;
        #[cfg(feature = "confirmed-params")]
        {
            self.held_step = None;
        }
        self.note_progress(progress);
        self.settle_tick(now);
        Ok(progress)
    }

    /// Abort the running program (`abort_steps`).
    pub fn abort_program(&mut self, now: Instant) -> Result<Progress, ClientError> {
        // A held `param` step's wait is out of the engine: the runner's abort records it so.
        #[cfg(feature = "confirmed-params")]
        {
            self.held_step = None;
        }
        let progress = self.runner.abort(now, &self.tel, &mut self.engine)?;
        self.note_progress(progress);
        self.settle_tick(now);
        Ok(progress)
    }

    /// Carry out one action now (the verbs of the offboard machine, as a program step would;
    /// `Speedup` comes back as [`Event::Speedup`]). The same verbs one by one: [`verbs`].
    pub fn apply(&mut self, now: Instant, action: &Action) -> Result<(), ClientError> {
        let mut act = Act {
            offboard: &mut self.offboard,
            tel: &self.tel,
            speedup: &mut self.speedup,
        };
        act.apply(now, action)?;
        self.sync_mission();
        Ok(())
    }

    /// The offboard machine (queries; its verbs are the client's own, see [`verbs`]).
    pub fn offboard(&self) -> &Offboard<ITEMS> {
        &self.offboard
    }

    /// The telemetry cache.
    pub fn telemetry(&self) -> &Telemetry<TEXTS> {
        &self.tel
    }

    /// The ground-truth request machine (queries: simulator or not, refused, streaming).
    pub fn ground_truth(&self) -> &GroundTruthRequest {
        &self.truth
    }

    /// The wait engine (queries: pending count, free slots).
    pub fn engine(&self) -> &Engine<WAITS> {
        &self.engine
    }

    /// The program runner (state, records, error).
    pub fn program(&self) -> &ProgramRunner<STEPS> {
        &self.runner
    }

    /// Why wait `wait` ended as `result` (`None` when met): build it when the result arrives,
    /// before handling more frames ([`Explanation::build`]).
    pub fn explain(&self, now: Instant, wait: &Wait, result: &WaitResult) -> Option<Explanation> {
        Explanation::build(now, &self.offboard, &self.tel, wait, result)
    }

    /// Why program step `step` ended without its condition (`None` when it passed or did not
    /// run). What was outstanding is the machine's state in the tick the step settled, before
    /// the next step's action; call it when the step's [`Event::Step`] comes.
    pub fn explain_step(&self, now: Instant, step: usize) -> Option<Explanation> {
        let rec = self.runner.records().get(step)?;
        let wait = &self.runner.program().steps().get(step)?.until;
        match self.failed_step {
            Some((s, outstanding)) if s == step => {
                Explanation::build_with(&self.offboard, &self.tel, wait, &rec.result, outstanding)
            }
            _ => Explanation::build(now, &self.offboard, &self.tel, wait, &rec.result),
        }
    }

    /// The vehicle now.
    pub fn snapshot(&self) -> Snapshot {
        self.tel.snapshot(None)
    }

    /// Payloads that failed to decode, and program notifications dropped because the driver
    /// did not poll them in time.
    pub fn counters(&self) -> (u32, u32) {
        (self.rx.stats().malformed, self.program_events_lost)
    }

    /// Hand the offboard machine's mission progress to the engine (a verb such as a mission
    /// start resets it); a program step's action does the same through [`Act`].
    fn sync_mission(&mut self) {
        self.engine
            .set_mission_progress(self.offboard.mission_progress());
        #[cfg(feature = "extra-conditions")]
        self.engine
            .set_at_target(Some(self.offboard.at_target(&self.tel)));
    }

    fn apply_reaction(&mut self, reaction: Reaction) {
        match reaction {
            Reaction::Rc(sticks) => self.offboard.set_rc(sticks),
            Reaction::Mode(mode) => self.offboard.set_mode(mode),
            Reaction::Speedup(f) => self.speedup = Some(f),
        }
    }

    /// Apply every reaction that fired, and move the program on while its step waits settle
    /// (a new step's wait may settle at once, firing reactions of its own).
    fn settle_tick(&mut self, now: Instant) {
        loop {
            while let Some((_, reaction)) = self.engine.poll_reaction() {
                self.apply_reaction(reaction);
            }
            // Without step programs (`STEPS == 0`, const-folded) the runner never holds a wait:
            // returning here keeps the whole program path out of such a build.
            if STEPS == 0 {
                return;
            }
            let Some(id) = self.runner.current_wait() else {
                return;
            };
            #[cfg(feature = "confirmed-params")]
            let held = self.held_step.take().filter(|(h, _)| *h == id);
            #[cfg(not(feature = "confirmed-params"))]
            let held: Option<(WaitId, WaitResult)> = None;
            #[allow(unused_mut)] // changed only with confirmed-params
            let mut result = match held {
                Some((_, r)) => r,
                None => {
                    if self.engine.is_pending(id) {
                        return;
                    }
                    let Ok(r) = self.engine.take_settled(id) else {
                        return;
                    };
                    r
                }
            };
            // A `param` step waits for PX4's answer to its set: its met wait is held (out of
            // the engine, whose settled results the driver drains) until the set ends.
            #[cfg(feature = "confirmed-params")]
            if result.reason == Reason::Met {
                if let Some(name) = self.step_param_set() {
                    if self.offboard.param_set_pending(&name) {
                        self.held_step = Some((id, result));
                        return;
                    }
                    self.param_step_result(&name, &mut result);
                }
            }
            if result.reason != Reason::Met {
                let step = self.runner.records().len();
                self.failed_step = Some((
                    step,
                    Outstanding {
                        pending: self.offboard.pending(),
                        arm_wait: self.offboard.arm_wait(now, &self.tel),
                    },
                ));
            }
            let mut act = Act {
                offboard: &mut self.offboard,
                tel: &self.tel,
                speedup: &mut self.speedup,
            };
            let progress =
                self.runner
                    .on_settled(now, &self.tel, &mut self.engine, &mut act, id, &result);
            self.note_progress(progress);
        }
    }

    /// A held `param` step ends with the session (`reason`, `error`) rather than its set.
    fn end_held_step(&mut self, _reason: Reason, _error: &str) {
        #[cfg(feature = "confirmed-params")]
        if let Some((_, r)) = self.held_step.as_mut() {
            r.satisfied = false;
            r.reason = _reason;
            r.snapshot = self.tel.snapshot(Some(_error));
        }
    }

    /// The parameter the running step sets, if it is a `param` step.
    #[cfg(feature = "confirmed-params")]
    fn step_param_set(&self) -> Option<crate::action::ParamName> {
        let step = self.runner.records().len();
        match &self.runner.program().steps().get(step)?.action {
            Action::ParamReal { name, .. } | Action::ParamInt { name, .. } => Some(name.clone()),
            _ => None,
        }
    }

    /// A `param` step's result once its set ended: met with the vehicle as it is now (the wait
    /// counts the time to PX4's echo), or aborted with PX4's refusal or the give-up as its
    /// error ("PX4 refused COM_FOO = 3: DOES_NOT_EXIST").
    #[cfg(feature = "confirmed-params")]
    fn param_step_result(&self, name: &str, result: &mut WaitResult) {
        use core::fmt::Write;
        let outcome = self.offboard.param_set_outcome(name);
        let mut error: Option<heapless::String<{ crate::telemetry::MAX_ERROR_LEN }>> = None;
        if let Some(o) = outcome.filter(|o| !o.confirmed()) {
            let mut msg = heapless::String::new();
            let _ = write!(msg, "{o}");
            error = Some(msg);
        }
        let then = result.snapshot.sim_ms;
        result.snapshot = self.tel.snapshot(error.as_deref());
        if let (Some(a), Some(b)) = (then, result.snapshot.sim_ms) {
            result.waited_sim_s += b.saturating_sub(a) as f32 / 1000.0;
        }
        if error.is_some() {
            result.satisfied = false;
            result.reason = Reason::Aborted;
        }
    }

    /// Report the steps recorded since the last report, then the program's end if it ended.
    fn note_progress(&mut self, progress: Progress) {
        while let Some(rec) = self.runner.records().get(self.steps_reported) {
            let e = ProgramNote::Step {
                step: self.steps_reported,
                passed: rec.passed,
                reason: rec.result.reason,
            };
            self.steps_reported += 1;
            self.push_program_event(e);
        }
        if let Progress::Finished(end) = progress {
            self.push_program_event(ProgramNote::Finished(end));
        }
    }

    fn push_program_event(&mut self, e: ProgramNote) {
        if self.program_events.is_full() {
            self.program_events.pop_front();
            self.program_events_lost = self.program_events_lost.wrapping_add(1);
        }
        let _ = self.program_events.push_back(e);
    }
}
/// So `?` converts it into `Box<dyn Error>` and other error types.
impl core::error::Error for ClientError {}
