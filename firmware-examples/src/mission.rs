//! The mission flight as a [`Node`]: the nexus-core [`Client`] flies a mission end to end.
//!
//! Phases, each ended by the core (a wait, an offboard event) or by a wall-clock backstop:
//!
//! 1. **Connect**: the autopilot's HEARTBEAT, a position estimate and its clock are in.
//! 2. **Upload**: the lodged mission goes up; PX4's MISSION_ACK(ACCEPTED) ends it
//!    ([`OffboardEvent::MissionUploaded`]); a rejection or a stalled transfer fails the run.
//! 3. **Climb**: `start_mission` (restart at item 0, Mission mode, arm); a wait for
//!    [`CLIMB_CONFIRM_M`] over home proves the vehicle took off.
//! 4. **Fly**: one wait, `landed` held [`LANDED_HOLD_S`], with the reaction `then_mode(Hold)`:
//!    in the tick the vehicle is found on the ground the core commands Hold, so nothing resumes
//!    the mission and PX4 disarms on the ground.
//! 5. **Settle**: waits for `disarmed` and for the heartbeat to show Hold (the reaction took).
//!    Then a landing before the mission's last reachable item was reached
//!    ([`nexus_core::offboard::Offboard::mission_complete`]) is a failure. It is judged here,
//!    not at touchdown: on a line that drops frames, the word that the last item was reached
//!    (MISSION_ITEM_REACHED, or MISSION_CURRENT's COMPLETE, which PX4 keeps sending) may come
//!    after the landing does.
//!
//! Engine timeouts count autopilot (sim) seconds, so they hold at any simulator speed; the
//! wall-clock limits below are backstops for a stalled clock or a dead link. Any refusal by
//! PX4, any request the offboard machine gives up, a failed upload, a timeout or a lost link
//! ends the run with a failure and a logged reason.

use nexus_core::engine::{Reason, Wait, WaitId, WaitResult};
use nexus_core::link::{Framing, RxStats};
use nexus_core::mission::{last_reachable, MissionItem};
use nexus_core::offboard::{ArmWait, OffboardEvent};
use nexus_core::plan::read_plan;
use nexus_core::telemetry::LinkIds;
use nexus_core::{Client, ClientConfig, Duration, Event, Instant, Mode};

use crate::pump::{LinkSigning, Node, Outcome};
use crate::{error, info, report};

/// Concurrent waits: at most two are pending at once (Settle).
pub const WAITS: usize = 2;
/// STATUSTEXTs kept: enough for the texts between two evaluations and a refusal's reasons.
pub const TEXTS: usize = 4;
/// Mission items held (the box mission has 6).
pub const ITEMS: usize = 16;
/// Step-program length: the firmware sequences its phases itself and runs no programs.
pub const STEPS: usize = 0;

/// The core client the firmware runs.
pub type MissionClient = Client<WAITS, TEXTS, ITEMS, STEPS>;

/// The mission: the repository's `fixtures/plans/MC_mission_box.plan` as QGroundControl saved
/// it, its indentation removed by build.rs (the same JSON document, 1476 bytes instead of 3845).
pub static PLAN: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/MC_mission_box.plan"));

/// Who we are (a ground station), and the autopilot we fly (PX4's default system id).
pub const IDS: LinkIds = LinkIds {
    target_sysid: 1,
    own_sysid: 255,
    own_compid: 190,
};

/// Height over home that proves the vehicle took off, m.
pub const CLIMB_CONFIRM_M: f32 = 2.0;
/// How long the vehicle must stay on the ground before the flight counts as landed, sim s.
pub const LANDED_HOLD_S: f32 = 1.0;
/// Arm, spool up and climb to [`CLIMB_CONFIRM_M`] within this, sim s.
pub const CLIMB_TIMEOUT_S: f32 = 60.0;
/// Fly the mission and land within this, sim s.
pub const FLIGHT_TIMEOUT_S: f32 = 600.0;
/// Disarm and show Hold within this after landing, sim s (PX4 disarms ~2 s after landing).
/// Generous: the firmware sees the landing, and then the Hold, only as fast as its UART
/// delivers them. The 15 s between landing and Hold once measured here (and 27.6 s on real
/// PX4 SITL) was the lag of QEMU's own UART socket, whose kernel buffer held tens of seconds
/// of telemetry on a busy host; with the tests' small-buffer socket real PX4 shows Hold 0.6 s
/// after the landing.
pub const SETTLE_TIMEOUT_S: f32 = 90.0;

/// Wall-clock backstops per phase, ms of driver time (the failures name them: change both).
pub const CONNECT_WALL_MS: u64 = 60_000;
/// See [`CONNECT_WALL_MS`].
pub const UPLOAD_WALL_MS: u64 = 60_000;
/// See [`CONNECT_WALL_MS`]; generous: at 1× the flight takes minutes.
pub const FLIGHT_WALL_MS: u64 = 30 * 60_000;
/// Backstop for the whole run, ms of driver time (each phase has its own, shorter limits).
pub const RUN_CAP_MS: u64 = FLIGHT_WALL_MS + 120_000;
/// The core's supervision of the link (`ClientConfig::stall`), wall ms: no frame from the
/// autopilot for this long, or its clock standing still this long while frames still arrive
/// (its simulation hangs, and waits counting its clock would never end), fails the flight.
pub const STALL_MS: u64 = 5_000;

/// The failures of [`STALL_MS`], each with its limit in the words (a static string, not a log
/// line of its own; the asserts keep words and limits together, as for the phases' wall
/// limits).
const LINK_LOST: &str = "autopilot link lost: no frame for 5 s";
/// See [`LINK_LOST`].
const CLOCK_STALLED: &str = "autopilot clock stalled for 5 s";
const _: () = assert!(
    STALL_MS == 5_000
        && CONNECT_WALL_MS == 60_000
        && UPLOAD_WALL_MS == 60_000
        && FLIGHT_WALL_MS == 30 * 60_000,
    "the failure texts name these limits"
);

/// Where the flight is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
enum Phase {
    Connect,
    Upload,
    Climb(WaitId),
    Fly(WaitId),
    Settle {
        disarmed: Option<WaitId>,
        hold: Option<WaitId>,
    },
    Done,
}

/// The mission flight: the core client, the phase, and the progress it logs.
pub struct MissionFlight {
    client: MissionClient,
    phase: Phase,
    /// Wall deadline of the current phase.
    deadline: Instant,
    /// Seq of the mission's last NAV_WAYPOINT (what `mission_complete` waits for).
    last_reachable: Option<u16>,
    /// The MISSION_CURRENT seq last logged.
    logged_item: Option<u16>,
    /// Frames the client accepted from the autopilot.
    accepted: u32,
}

impl MissionFlight {
    /// A flight that has not connected yet.
    ///
    /// The flight is large (it holds the core client): build it in place in the caller's
    /// frame, once (a value returned from a call that is not inlined lands there directly),
    /// rather than inlined next to the loop's own temporaries.
    #[inline(never)]
    pub fn new(now: Instant) -> Self {
        MissionFlight {
            client: Client::new(ClientConfig {
                ids: IDS,
                offboard: Default::default(),
                ground_truth: Default::default(),
                target_compid: None,
                stall: Some(Duration::from_millis(STALL_MS)),
            }),
            phase: Phase::Connect,
            deadline: now + Duration::from_millis(CONNECT_WALL_MS),
            last_reachable: None,
            logged_item: None,
            accepted: 0,
        }
    }

    /// Load [`PLAN`] ([`MissionFlight::load_plan`]) and log what the flight will run, on
    /// `driver`; on an error, log it and exit with status 1.
    pub fn load_stored_plan(&mut self, driver: &str) {
        match self.load_plan(PLAN) {
            Ok(n) => info!(
                "mission: {} items from a {}-byte .plan; core client {} bytes; system {}; {}",
                n,
                PLAN.len(),
                core::mem::size_of::<MissionClient>(),
                IDS.target_sysid,
                driver
            ),
            Err(why) => {
                error!("result: failure: {}", why);
                crate::exit::failure()
            }
        }
    }

    /// Read a QGroundControl `.plan` and lodge its items with the offboard machine (it is
    /// uploaded once the autopilot is up). Errors are logged with the line and column.
    #[inline(never)] // the parser's stack frame is gone before the flight starts
    pub fn load_plan(&mut self, bytes: &[u8]) -> Result<usize, &'static str> {
        let plan = match read_plan::<ITEMS>(bytes) {
            Ok(p) => p,
            Err(e) => {
                report::plan_error(bytes, &e);
                return Err("unreadable .plan");
            }
        };
        self.lodge(&plan.items)?;
        Ok(plan.items.len())
    }

    fn lodge(&mut self, items: &[MissionItem]) -> Result<(), &'static str> {
        if let Err(e) = self.client.lodge_mission(items) {
            report::offboard_error("lodge", &e);
            return Err("mission refused");
        }
        self.last_reachable = last_reachable(items);
        if self.last_reachable.is_none() {
            return Err("mission has no item PX4 reports reached");
        }
        Ok(())
    }

    /// Frames from the autopilot the client accepted.
    pub fn accepted(&self) -> u32 {
        self.accepted
    }

    fn enter(&mut self, now: Instant, phase: Phase, wall_ms: u64) {
        self.phase = phase;
        self.deadline = now + Duration::from_millis(wall_ms);
    }

    fn wait(&mut self, now: Instant, wait: &Wait) -> Result<WaitId, Outcome> {
        self.client.wait(now, wait).map_err(|e| {
            report::client_error(&e);
            Outcome::Failure("wait refused")
        })
    }

    /// Phase 1 → 2.
    fn connect(&mut self, now: Instant) -> Result<(), Outcome> {
        let tel = self.client.telemetry();
        let (Some(sim_ms), Some(_)) = (tel.sim_ms(), tel.global_position()) else {
            return Ok(());
        };
        if !tel.connected() {
            return Ok(());
        }
        info!(
            "autopilot up: system {}, clock {} ms; uploading {} items",
            u32::from(IDS.target_sysid),
            ms_u32(sim_ms),
            self.client.offboard().mission_count()
        );
        if let Err(e) = self.client.upload_mission() {
            report::offboard_error("upload", &e);
            return Err(Outcome::Failure("mission upload not started"));
        }
        self.enter(now, Phase::Upload, UPLOAD_WALL_MS);
        Ok(())
    }

    /// Phase 2 → 3, on PX4's acceptance.
    fn uploaded(&mut self, now: Instant) -> Result<(), Outcome> {
        if !self.client.offboard().mission_uploaded() {
            return Err(Outcome::Failure("upload done but not accepted"));
        }
        self.client.start_mission(now);
        info!("mission started: Mission mode, arming");
        let w = Wait::altitude_m(CLIMB_CONFIRM_M).timeout_s(CLIMB_TIMEOUT_S);
        let id = self.wait(now, &w)?;
        self.enter(now, Phase::Climb(id), FLIGHT_WALL_MS);
        Ok(())
    }

    /// A wait of the current phase ended.
    fn settled(&mut self, now: Instant, id: WaitId, result: &WaitResult) -> Result<(), Outcome> {
        match self.phase {
            Phase::Climb(w) if w == id => {
                if result.reason != Reason::Met {
                    log_wait("climb", result);
                    self.log_arm_state(now);
                    return Err(Outcome::Failure("the vehicle did not take off"));
                }
                info!(
                    "airborne: {} cm over home after {} ms",
                    cm(result.snapshot.height_m),
                    ms(result.waited_sim_s)
                );
                let w = Wait::landed()
                    .hold_s(LANDED_HOLD_S)
                    .timeout_s(FLIGHT_TIMEOUT_S)
                    .then_mode(Mode::Hold);
                let id = self.wait(now, &w)?;
                self.phase = Phase::Fly(id);
            }
            Phase::Fly(w) if w == id => {
                if result.reason != Reason::Met {
                    log_wait("flight", result);
                    return Err(Outcome::Failure("no landing in time"));
                }
                let ob = self.client.offboard();
                info!(
                    "landed after {} ms; reaction: Hold requested (pending {})",
                    ms(result.waited_sim_s),
                    ob.pending().mode.is_some() as u32
                );
                let disarmed = Some(self.wait(now, &Wait::disarmed().timeout_s(SETTLE_TIMEOUT_S))?);
                let hold = Wait::mode(Mode::Hold).timeout_s(SETTLE_TIMEOUT_S);
                let hold = Some(self.wait(now, &hold)?);
                self.phase = Phase::Settle { disarmed, hold };
            }
            Phase::Settle { disarmed, hold } => {
                // The wait that ended: its name, its failure, and the two waits left.
                let (which, failure, left) = if disarmed == Some(id) {
                    ("disarm", "no disarm after landing", (None, hold))
                } else if hold == Some(id) {
                    ("hold", "Hold reaction did not take", (disarmed, None))
                } else {
                    return Ok(());
                };
                if result.reason != Reason::Met {
                    log_wait(which, result);
                    return Err(Outcome::Failure(failure));
                }
                info!("{}: met after {} ms", which, ms(result.waited_sim_s));
                let (disarmed, hold) = left;
                self.phase = Phase::Settle { disarmed, hold };
                if disarmed.is_none() && hold.is_none() {
                    self.phase = Phase::Done;
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// Drain the client's events and move the phases on.
    fn step(&mut self, now: Instant) -> Result<(), Outcome> {
        if self.phase == Phase::Connect {
            self.connect(now)?;
        }
        while let Some(ev) = self.client.poll_event() {
            match ev {
                Event::Settled { id, result } => self.settled(now, id, &result)?,
                Event::Offboard(OffboardEvent::MissionUploaded { count, opaque_id }) => {
                    info!(
                        "mission uploaded: {} items, opaque_id {}",
                        u32::from(count),
                        opaque_id
                    );
                    if self.phase == Phase::Upload {
                        self.uploaded(now)?;
                    }
                }
                Event::Offboard(e) => return Err(Outcome::Failure(report::offboard_event(&e))),
                Event::Silent { .. } => return Err(Outcome::Failure(LINK_LOST)),
                Event::ClockStalled { .. } => return Err(Outcome::Failure(CLOCK_STALLED)),
                // No programs run here, and no simulator to speed up.
                Event::Step { .. } | Event::ProgramFinished(_) | Event::Speedup(_) => {}
                // News this driver does not act on (the enum grows).
                _ => {}
            }
        }
        self.log_progress();
        Ok(())
    }

    fn log_progress(&mut self) {
        let ob = self.client.offboard();
        if !matches!(self.phase, Phase::Climb(_) | Phase::Fly(_)) {
            return;
        }
        let current = ob.mission_current();
        if self.logged_item != Some(current) {
            self.logged_item = Some(current);
            info!(
                "flying to item {} of {}",
                u32::from(current),
                ob.mission_count()
            );
        }
    }

    /// Why the arm has not happened, when the climb failed.
    fn log_arm_state(&self, now: Instant) {
        let (ob, tel) = (self.client.offboard(), self.client.telemetry());
        let prearm = match tel.prearm_ok() {
            Some(true) => "passing",
            Some(false) => "failing",
            None => "not reported",
        };
        let (why, mode) = match ob.arm_wait(now, tel) {
            Some(ArmWait::Settling { remaining_ms }) => {
                error!(
                    "arm not sent: the vehicle is not failure-free yet ({} ms to go; prearm checks {})",
                    ms_u32(remaining_ms),
                    prearm
                );
                ("", "")
            }
            Some(ArmWait::Mode(m)) => ("mode not confirmed yet: ", report::mode_name(m)),
            Some(ArmWait::Restart) => ("mission restart not confirmed yet", ""),
            Some(ArmWait::NoPosition) => ("no position estimate", ""),
            Some(ArmWait::NotConnected) => ("no heartbeat", ""),
            None if ob.pending().arm => {
                error!("arm sent, not confirmed");
                ("", "")
            }
            None => ("", ""),
        };
        if !why.is_empty() {
            error!("arm not sent: {}{}", why, mode);
        }
        if let Some(r) = ob.last_refusal() {
            report::refusal(r);
        }
        if let Some(t) = tel.texts().last() {
            error!("last autopilot text: {}", t.text.as_str());
        }
    }

    /// The backstop: a phase over its wall limit (silence and a standing clock are the core's
    /// news, [`STALL_MS`]).
    fn check_wall(&self, now: Instant) -> Result<(), Outcome> {
        if now >= self.deadline {
            // The phase's wall limit (its constant, in the words).
            return Err(Outcome::Failure(match self.phase {
                Phase::Connect => "no autopilot heartbeat, position and clock in 60 s",
                Phase::Upload => "mission upload unfinished in 60 s",
                Phase::Climb(_) => "wall limit 30 min in climb",
                Phase::Fly(_) => "wall limit 30 min in flight",
                Phase::Settle { .. } | Phase::Done => "wall limit 30 min in settle",
            }));
        }
        Ok(())
    }
}

// The three entry points are kept out of the pump's loop (`inline(never)`): each drives a
// deep, temporary-heavy path of the core (frame handling and wait evaluation; encoding; events
// and wait registration), and as separate frames those temporaries share the stack one after
// the other instead of all piling up in the loop's frame for the whole flight.
impl Node for MissionFlight {
    #[inline(never)]
    fn handle_stream_bytes(&mut self, now: Instant, chunk: &[u8], tap: &mut LinkSigning) {
        let n = self.client.handle_bytes(now, chunk, Framing::Stream, tap);
        self.accepted = self.accepted.wrapping_add(n as u32);
    }

    #[inline(never)]
    fn poll_transmit(&mut self, now: Instant, buf: &mut [u8]) -> Option<usize> {
        self.client.poll_transmit(now, buf)
    }

    fn next_deadline(&self) -> Option<Instant> {
        self.client.next_deadline()
    }

    fn rx_stats(&self) -> RxStats {
        self.client.rx_stats()
    }

    #[inline(never)]
    fn poll_outcome(&mut self, now: Instant) -> Option<Outcome> {
        if let Err(outcome) = self.step(now).and_then(|()| self.check_wall(now)) {
            return Some(outcome);
        }
        if self.phase == Phase::Done {
            let ob = self.client.offboard();
            if !ob.mission_complete() {
                error!(
                    "landed with item {} of {} reached (last reachable {})",
                    ob.mission_reached().map_or(-1, i32::from),
                    ob.mission_count(),
                    self.last_reachable.map_or(-1, i32::from)
                );
                return Some(Outcome::Failure("landed before mission complete"));
            }
            info!(
                "flight confirmed: mission complete (item {} reached), landed, disarmed, in Hold",
                ob.mission_reached().map_or(-1, i32::from)
            );
            return Some(Outcome::Success);
        }
        None
    }
}

fn log_wait(what: &str, r: &WaitResult) {
    let s = &r.snapshot;
    error!(
        "{} wait ended: {} after {} ms (armed {}, height {} cm, {})",
        what,
        r.reason.name(),
        ms(r.waited_sim_s),
        s.armed as u32,
        cm(s.height_m),
        s.landed.name()
    );
}

/// Milliseconds for logs, as a `u32` (saturating): every number the firmware logs is a `u32` or
/// an `i32`, so only those two integer `Display` impls are linked.
fn ms_u32(ms: u64) -> u32 {
    u32::try_from(ms).unwrap_or(u32::MAX)
}

/// Seconds as whole milliseconds, for logs (no float formatting in the firmware).
fn ms(s: f32) -> i32 {
    (s * 1000.0) as i32
}

/// Metres as whole centimetres, for logs; -1 when unknown.
fn cm(m: Option<f32>) -> i32 {
    m.map_or(-1, |m| (m * 100.0) as i32)
}
