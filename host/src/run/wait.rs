//! The run's waits, while its clock advances (a lockstep vehicle stepped): [`Run::wait`]
//! (a [`Wait`] on the link's wait engine; every outcome a [`WaitResult`]) and [`Run::until`]
//! (a predicate, a condition or a Wait that must hold in time, else an error).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use nexus_core::engine::{Condition, Reason, Wait, WaitResult};

use super::probe::SimProbe;
use super::{Run, RunClock, Running, Vehicle};
use crate::error::RunError;
use crate::launcher::DeathCause;
use crate::pump::{LinkHandle, WeakLink};
use crate::sim::SimError;
use crate::sync::lock;

/// Lockstep: after a step to sim time T, the pump counts as caught up once the link's clock
/// reads at least T minus this, ms (PX4 stamps ATTITUDE every 10 ms).
pub const BARRIER_SLACK_MS: u64 = 15;
/// Lockstep: longest the caller waits for the pump to catch up after a step (wall).
const BARRIER_MAX: Duration = Duration::from_millis(250);
/// Real time: how often a predicate is polled (wall).
const POLL_PERIOD: Duration = Duration::from_millis(2);

/// Wall-time margin added to every wait's bound ([`wall_bound`]), s: a loaded machine, the
/// start of a run.
pub const WALL_MARGIN_S: f64 = 10.0;

/// Longest sim timeout a wall-time bound is computed for, s (10^6 s, 11.6 days): a longer one
/// (or an infinite one) is bounded as this, far from the wall clock's overflow.
const BOUNDED_TIMEOUT_MAX_S: f64 = 1e6;

/// The wall-time bound of a real-time wait: longest a wait of `timeout_s` sim seconds may take
/// in wall time at `speed`, its sim timeout at the speed, twice, plus [`WALL_MARGIN_S`]:
/// `timeout_s / speed × 2 + 10 s`. A vehicle whose clock runs at even half the asked speed ends
/// the wait by its own timeout first; past this bound its clock has (nearly) stopped, and the
/// wait ends with that reason ([`DeathCause::NoClockProgress`]) instead of hanging. Every wait
/// of a real-time [`Run`] is bounded so, and so is every step of the `nexus` command.
///
/// Any value gives a finite bound, never a panic: a speed that is not a positive number counts
/// as 1, a positive one below [`super::SPEED_MIN`] as that minimum; a timeout is clamped to
/// 0..=10^6 s (an infinite or NaN one counts as 10^6 s).
pub fn wall_bound(timeout_s: f64, speed: f64) -> Duration {
    let speed = if speed.is_finite() && speed > 0.0 {
        speed
    } else {
        1.0
    };
    let t = if timeout_s.is_finite() {
        timeout_s.clamp(0.0, BOUNDED_TIMEOUT_MAX_S)
    } else {
        BOUNDED_TIMEOUT_MAX_S
    };
    Duration::from_secs_f64(t / speed.max(super::SPEED_MIN) * 2.0 + WALL_MARGIN_S)
}

/// How a [`Run::until`] went.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive] // more fields may come
pub struct Waited {
    /// Sim seconds from the call to the condition holding.
    pub waited_sim_s: f64,
    /// Wall time likewise.
    pub waited_wall: std::time::Duration,
    /// A condition's [`WaitResult`] (`None` for a predicate).
    pub result: Option<WaitResult>,
}

/// What [`Run::until`] waits for: a predicate (any `FnMut() -> bool`, polled on the
/// caller's thread), a [`Condition`] or a `&`[`Wait`] (evaluated by the pump on the run's
/// offboard link after every message).
pub trait Until {
    /// Hold within `sim_timeout_s` sim seconds on `run`, or fail as [`Run::until`] says.
    fn until_on(self, run: &Run, sim_timeout_s: f64) -> Result<Waited, RunError>;
}

impl<F: FnMut() -> bool> Until for F {
    fn until_on(mut self, run: &Run, sim_timeout_s: f64) -> Result<Waited, RunError> {
        run.until_predicate(&mut self, sim_timeout_s)
    }
}

impl Until for Condition {
    fn until_on(self, run: &Run, sim_timeout_s: f64) -> Result<Waited, RunError> {
        Until::until_on(&Wait::until(self), run, sim_timeout_s)
    }
}

impl Until for &Wait {
    fn until_on(self, sim: &Run, sim_timeout_s: f64) -> Result<Waited, RunError> {
        // The Wait's own timeout wins; `sim_timeout_s` is the timeout of a Wait without one.
        let sim_timeout_s = self.timeout().map_or(sim_timeout_s, f64::from);
        check_timeout(sim_timeout_s)?;
        let link = sim.offboard_link().ok_or(RunError::NoClient)?;
        let wait = self.clone().timeout_s(sim_timeout_s as f32);
        let wall0 = Instant::now();
        // Real time: bounded in wall time too, so a stopped vehicle clock cannot hold the
        // wait forever (`timeout / speed × 2 + margin`, as every CLI step).
        let speed = match sim.options.clock {
            RunClock::RealTime { speed } if !sim.is_lockstep() => Some(speed),
            // As fast as possible is never slower than real time.
            RunClock::Max => Some(1.0),
            _ => None,
        };
        let bound = speed.map(|s| wall_bound(sim_timeout_s, s));
        let r = sim.wait_on_link(&link, &wait, bound)?;
        match r.reason {
            Reason::Cap => Err(RunError::Died {
                cause: DeathCause::NoClockProgress {
                    waited_sim_s: r.waited_sim_s as f64,
                    timeout_s: sim_timeout_s,
                    wall: wall0.elapsed(),
                    speed,
                },
            }),
            Reason::Met => Ok(Waited {
                waited_sim_s: r.waited_sim_s as f64,
                waited_wall: std::time::Duration::from_micros(r.waited_wall.total_micros()),
                result: Some(r),
            }),
            Reason::Timeout => Err(RunError::Timeout {
                timeout_s: sim_timeout_s,
                waited_wall: wall0.elapsed(),
            }),
            Reason::Died => Err(RunError::Died {
                // The link's own cause (what the settle carried), else the vehicle's.
                cause: link
                    .with_status(|s| s.died.clone())
                    .or_else(|| sim.death())
                    .unwrap_or_else(|| {
                        DeathCause::Other(
                            r.snapshot
                                .error
                                .as_ref()
                                .map_or_else(|| "died".to_owned(), |e| e.as_str().to_owned()),
                        )
                    }),
            }),
            _ => Err(RunError::Ended(Box::new(r))),
        }
    }
}

fn check_timeout(s: f64) -> Result<(), RunError> {
    if s.is_finite() && s >= 0.0 {
        Ok(())
    } else {
        Err(RunError::BadTimeout(s))
    }
}

/// Watches a lockstep clock for a stall while stepping.
struct Stepper {
    last_ms: Option<u64>,
    moved: Instant,
}

impl Stepper {
    fn new() -> Self {
        Stepper {
            last_ms: None,
            moved: Instant::now(),
        }
    }
}

impl Run {
    /// Wait for `wait` on the run's offboard link, advancing the run's clock (stepping a
    /// lockstep vehicle), for the Wait's own `timeout_s` (sim seconds): the one wait model.
    /// The result is data whether the condition was met or not ([`WaitResult::reason`]:
    /// met, timeout, a guard by name, died, …); errors only when it cannot wait at all:
    /// no client connected ([`RunError::NoClient`]), an invalid Wait (no timeout, a bad
    /// value), a closed link. In real time it is also bounded in wall time
    /// (`timeout / speed × 2 + margin`), ending with [`Reason::Cap`].
    ///
    /// ```
    /// use nexus_host::prelude::*;
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let sim = Run::started(RunOptions::simulated(166).lockstep())?;
    /// let _op = OffboardClient::connect(&sim, 10.0)?;
    /// // Nobody arms it: the wait ends after its own 1 s of sim time, as a result.
    /// let r = sim.wait(&Wait::armed().timeout_s(1.0))?;
    /// assert_eq!(r.reason, Reason::Timeout);
    /// assert!(r.waited_sim_s >= 1.0 && r.waited_sim_s < 2.0);
    /// # Ok(())
    /// # }
    /// ```
    pub fn wait(&self, wait: &Wait) -> Result<WaitResult, RunError> {
        self.wait_reporting(wait, || {})
    }

    /// [`Run::wait`], calling `progress` on this thread as the wait goes: after every
    /// lockstep step, or every few milliseconds in real time. For progress prints: the
    /// condition, guards and timeout stay in the Wait.
    pub fn wait_reporting(
        &self,
        wait: &Wait,
        mut progress: impl FnMut(),
    ) -> Result<WaitResult, RunError> {
        let link = self.offboard_link().ok_or(RunError::NoClient)?;
        let timeout_s = wait.timeout().map(f64::from);
        let cap = match (self.options.clock, timeout_s) {
            (RunClock::RealTime { speed }, Some(t)) if !self.is_lockstep() && t.is_finite() => {
                Some(wall_bound(t.max(0.0), speed))
            }
            _ => None,
        };
        let pending = link.register(wait)?;
        self.drive_wait_reporting(pending, cap, &mut progress)
    }

    /// Wait until `until` holds, advancing the run's clock, `sim_timeout_s` sim seconds at
    /// most (a [`Wait`] with its own `timeout_s` waits that long instead: the argument is
    /// the timeout of a Wait without one). A predicate is polled on this thread; a
    /// [`Condition`] or `&`[`Wait`] is evaluated by the pump on the run's offboard link. The
    /// shorthand that makes "not met" an error (so it is no `wait`): [`RunError::Timeout`],
    /// [`RunError::Died`] (the vehicle exited, panicked, went silent or its clock stalled);
    /// [`Run::wait`] returns every outcome as a [`WaitResult`] instead.
    pub fn until<U: Until>(&self, until: U, sim_timeout_s: f64) -> Result<Waited, RunError> {
        until.until_on(self, sim_timeout_s)
    }

    fn until_predicate(
        &self,
        pred: &mut dyn FnMut() -> bool,
        sim_timeout_s: f64,
    ) -> Result<Waited, RunError> {
        check_timeout(sim_timeout_s)?;
        let run = self.running()?;
        let limit_ms = (sim_timeout_s * 1000.0).round() as u64;
        let wall0 = Instant::now();
        let t0 = self.clock_ms(&run);
        let mut stepper = Stepper::new();
        loop {
            let now = self.clock_ms(&run);
            let done = |t: u64| Waited {
                waited_sim_s: t.saturating_sub(t0) as f64 / 1000.0,
                waited_wall: wall0.elapsed(),
                result: None,
            };
            if pred() {
                return Ok(done(now));
            }
            if let Some(cause) = self.death_of(&run) {
                return Err(RunError::Died { cause });
            }
            let elapsed = now.saturating_sub(t0);
            if elapsed >= limit_ms {
                return Err(RunError::Timeout {
                    timeout_s: sim_timeout_s,
                    waited_wall: wall0.elapsed(),
                });
            }
            // Real time: also bounded in wall time, so a clock that stopped cannot hold the
            // wait forever (`timeout / speed × 2 + margin`, as every CLI step).
            let bound_speed = match self.options.clock {
                RunClock::RealTime { speed } => Some(speed),
                // As fast as possible is never slower than real time.
                RunClock::Max => Some(1.0),
                RunClock::Lockstep => None,
            };
            if let Some(speed) = bound_speed {
                let bound = wall_bound(sim_timeout_s, speed);
                if wall0.elapsed() > bound {
                    return Err(RunError::Died {
                        cause: DeathCause::NoClockProgress {
                            waited_sim_s: elapsed as f64 / 1000.0,
                            timeout_s: sim_timeout_s,
                            wall: wall0.elapsed(),
                            speed: Some(speed),
                        },
                    });
                }
            }
            match (&run.vehicle, self.is_lockstep()) {
                (Vehicle::Simulated(p), true) => {
                    let chunk = self.options.lockstep_chunk_ms().min(limit_ms - elapsed);
                    self.step_lockstep(&run, p, chunk, &mut stepper)?;
                }
                _ => std::thread::sleep(POLL_PERIOD),
            }
        }
    }

    /// Advance a lockstep run by `dt_ms` of sim time (then let the pump catch up); its clock
    /// afterwards, ms.
    pub fn step(&self, dt_ms: u64) -> Result<u64, RunError> {
        let run = self.running()?;
        let Vehicle::Simulated(p) = &run.vehicle else {
            return Err(SimError::NotLockstep.into());
        };
        self.step_lockstep(&run, p, dt_ms, &mut Stepper::new())
    }

    fn step_lockstep(
        &self,
        run: &Running,
        p: &Arc<SimProbe>,
        dt_ms: u64,
        stepper: &mut Stepper,
    ) -> Result<u64, RunError> {
        let link = self.offboard_link();
        let stepped = p.with(|h| h.step(dt_ms)).unwrap_or(Err(SimError::Stopped));
        match stepped {
            Ok(t) => {
                if let Some(l) = &link {
                    barrier(l, t);
                }
                if stepper.last_ms != Some(t) {
                    stepper.last_ms = Some(t);
                    stepper.moved = Instant::now();
                } else if let Some(stall) = self.options.client.stall.filter(|s| !s.is_zero()) {
                    // Frozen: stepping returns at once without moving the clock.
                    let stalled = stepper.moved.elapsed();
                    if stalled >= stall {
                        let cause = DeathCause::ClockStalled { stalled };
                        if let Some(l) = &link {
                            let _ = l.declare_died(cause.clone());
                        }
                        return Err(RunError::Died { cause });
                    }
                    std::thread::sleep(Duration::from_millis(1));
                }
                Ok(t)
            }
            Err(SimError::Exited(_)) | Err(SimError::Stopped) => {
                let cause = self.death_of(run).unwrap_or(DeathCause::SimStopped);
                if let Some(l) = &link {
                    let _ = l.declare_died(cause.clone());
                }
                Err(RunError::Died { cause })
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Wait on `link` with the link's wait engine: the result, or after `cap`
    /// (wall) the cap. A lockstep run is stepped meanwhile.
    pub fn wait_on_link(
        &self,
        link: &LinkHandle,
        wait: &Wait,
        cap: Option<Duration>,
    ) -> Result<WaitResult, RunError> {
        self.wait_on_link_explained(link, wait, cap).map(|(r, _)| r)
    }

    /// [`Run::wait_on_link`], with why the wait ended without its condition (what was pending
    /// and why it did not happen, in PX4's words where it gave any); `None` when it was met,
    /// capped or closed.
    pub fn wait_on_link_explained(
        &self,
        link: &LinkHandle,
        wait: &Wait,
        cap: Option<Duration>,
    ) -> Result<(WaitResult, Option<String>), RunError> {
        let pending = link.register(wait)?;
        let why = pending.why_handle();
        let r = self.drive_wait(pending, cap)?;
        let e = lock(&why).clone();
        Ok((r, e))
    }

    fn drive_wait(
        &self,
        pending: crate::pump::PendingWait,
        cap: Option<Duration>,
    ) -> Result<WaitResult, RunError> {
        self.drive_wait_reporting(pending, cap, &mut || {})
    }

    fn drive_wait_reporting(
        &self,
        mut pending: crate::pump::PendingWait,
        cap: Option<Duration>,
        progress: &mut dyn FnMut(),
    ) -> Result<WaitResult, RunError> {
        let run = match self.running() {
            Ok(r) => r,
            // A closed run: the link reports what became of its vehicle.
            Err(_) => return Ok(pending.join(Some(cap.unwrap_or(Duration::from_secs(1))))),
        };
        let deadline = cap.map(|c| Instant::now() + c);
        let probe = match (&run.vehicle, self.is_lockstep()) {
            (Vehicle::Simulated(p), true) => Arc::clone(p),
            _ => loop {
                // Real time: the pump settles the wait; this thread only reports.
                if let Some(r) = pending.try_result() {
                    return Ok(r);
                }
                if deadline.is_some_and(|d| Instant::now() >= d) {
                    return Ok(pending.cap());
                }
                progress();
                std::thread::sleep(POLL_PERIOD);
            },
        };
        let mut stepper = Stepper::new();
        loop {
            if let Some(r) = pending.try_result() {
                return Ok(r);
            }
            progress();
            let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
            if left == Some(Duration::ZERO) {
                return Ok(pending.cap());
            }
            let chunk = self.options.lockstep_chunk_ms();
            if self
                .step_lockstep(&run, &probe, chunk, &mut stepper)
                .is_err()
            {
                // The vehicle died or the run closed: the link ends the wait (died, closed);
                // the cap bounds the wait for that word.
                let grace = left
                    .unwrap_or(Duration::from_secs(2))
                    .min(Duration::from_secs(2));
                return Ok(pending.join(Some(grace)));
            }
        }
    }
}

/// Start the thread that steps a [`RunClock::Max`] run's vehicle: `chunk_ms` at a time, each
/// step followed by the lockstep barrier (the client's pump has taken in what was sent), and
/// only while a client holds the offboard link open (before it connects, nothing would take
/// in what the vehicle sends). It ends when the vehicle exits or stops, or on `stop`.
pub(super) fn spawn_driver(
    instance: u8,
    probe: Arc<SimProbe>,
    offboard: Arc<std::sync::Mutex<Option<WeakLink>>>,
    stop: Arc<AtomicBool>,
    chunk_ms: u64,
) -> std::io::Result<std::thread::JoinHandle<()>> {
    std::thread::Builder::new()
        .name(format!("nexus-max-{instance}"))
        .spawn(move || {
            let mut last = None;
            while !stop.load(Ordering::Relaxed) {
                let link = lock(&offboard)
                    .as_ref()
                    .and_then(WeakLink::upgrade)
                    .filter(|l| !l.is_closed());
                let Some(link) = link else {
                    std::thread::sleep(Duration::from_millis(1));
                    continue;
                };
                match probe.with(|h| h.step(chunk_ms)) {
                    Some(Ok(t)) => {
                        barrier(&link, t);
                        if last == Some(t) {
                            // A frozen clock (a stall fault): do not spin.
                            std::thread::sleep(Duration::from_millis(1));
                        }
                        last = Some(t);
                    }
                    // Exited or stopped: the probe and the link report it.
                    _ => return,
                }
            }
        })
}

/// After a lockstep step to `target_ms`, wait (briefly) until the pump has taken in what the
/// vehicle sent up to then.
fn barrier(link: &LinkHandle, target_ms: u64) {
    let pump = link.pump();
    let t0 = Instant::now();
    let mut seen = pump.news();
    loop {
        let caught_up = link.with_status(|s| {
            s.closed || s.sim_ms.is_none_or(|ms| ms + BARRIER_SLACK_MS >= target_ms)
        });
        if caught_up || t0.elapsed() >= BARRIER_MAX {
            return;
        }
        seen = pump.wait_news(seen, Duration::from_millis(2));
    }
}

impl Run {
    /// Run a step program on `link` (the wait engine's steps) until it ends, stepping a lockstep
    /// run; with a wall `limit`, abort it when the limit passes (it then ends `aborted`).
    pub fn run_program(
        &self,
        link: &LinkHandle,
        program: crate::pump::HostProgram,
        limit: Option<Duration>,
    ) -> Result<crate::pump::ProgramReport, RunError> {
        let pending = link.start_program(program)?;
        let run = self.running();
        let probe = match run.as_ref().map(|r| (&r.vehicle, self.is_lockstep())) {
            Ok((Vehicle::Simulated(p), true)) => Arc::clone(p),
            _ => return Ok(pending.join(limit)),
        };
        let Ok(run) = run else {
            return Ok(pending.join(limit));
        };
        let deadline = limit.map(|c| Instant::now() + c);
        let mut stepper = Stepper::new();
        loop {
            if let Some(r) = pending.try_report() {
                return Ok(r);
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return Ok(pending.join(Some(Duration::ZERO)));
            }
            let chunk = self.options.lockstep_chunk_ms();
            if self
                .step_lockstep(&run, &probe, chunk, &mut stepper)
                .is_err()
            {
                return Ok(pending.join(Some(Duration::from_secs(2))));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wall_bound_follows_the_timeout_and_the_speed() {
        assert_eq!(wall_bound(60.0, 2.0), Duration::from_secs(60 + 10));
        assert_eq!(wall_bound(0.0, 50.0), Duration::from_secs(10));
        assert_eq!(wall_bound(1.0, 0.01), Duration::from_secs(20 + 10));
        // Bad values give a finite bound, never a panic.
        for (t, s) in [(f64::NAN, 1.0), (1e300, 0.0), (-5.0, f64::NAN)] {
            assert!(wall_bound(t, s) <= Duration::from_secs(30_000_000));
        }
    }
}
