//! A run: the vehicle (the built-in simulated PX4, or a real PX4 SITL process, or none), the
//! pump its offboard link runs on, and the run's clock.
//!
//! ```no_run
//! use nexus_host::prelude::*;
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let sim = Run::new(RunOptions::simulated(0).speed(10.0)); // or RunOptions::px4(0, None)
//! sim.start()?;
//! let op = OffboardClient::connect(&sim, 10.0)?;
//! op.takeoff(2.0)?;
//! sim.until(|| op.at_target(), 60.0)?; // 60 s of sim time: 6 s of wall time at 10×
//! # Ok(())
//! # }
//! ```
//!
//! **Time.** [`Run::wait`] and [`Run::until`] count sim seconds. The built-in vehicle's clock
//! is exact (its own `time_boot_ms`); a lockstep run advances only while someone waits, so a
//! wait steps it, in chunks of [`RunOptions::lockstep_chunk_s`], and after each step lets the pump catch
//! up with what the vehicle sent before it looks again. For PX4 the clock is what PX4 reports
//! on the offboard link (SYSTEM_TIME and the other `time_boot_ms` stamps), and wall time ×
//! speed factor before the first report.
//!
//! **Supervision.** The run hands every link opened on its offboard port a probe (see
//! [`crate::pump::VehicleProbe`]): its exit, a PANIC line and its speed control
//! (`then_speedup`). A wait on a dead run fails with [`RunError::Died`], naming the cause. The
//! height above the pad is measured over the wire for both vehicles alike: clients of a run
//! ask for ground truth ([`GroundTruth::Always`]: the run started a simulator), which PX4 SITL
//! and the built-in vehicle both stream as HIL_STATE_QUATERNION.
//!
//! **Bounds.** A real-time wait is bounded in wall time too ([`wall_bound`]: its sim timeout at
//! the speed, twice, plus [`WALL_MARGIN_S`]), so a vehicle clock that stopped ends it with
//! [`DeathCause::NoClockProgress`] instead of holding it forever. The built-in vehicle keeps up
//! with speed factors [`SPEED_MIN`]..=[`SIM_SPEED_MAX`]; [`Run::set_speed`] refuses others.

mod probe;
mod speed;
mod wait;

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub use probe::{LOCKSTEP_SPEED, SIM_STOPPED};
pub use speed::{check_speed, SIM_SPEED_MAX, SPEED_MIN};
pub use wait::{wall_bound, Until, Waited, BARRIER_SLACK_MS, WALL_MARGIN_S};

use crate::error::RunError;
use crate::launcher::{DeathCause, LaunchOptions, OffboardPort, PortMap, Px4Build, Px4Process};
use crate::offboard_client::{GroundTruth, OffboardOptions};
use crate::pump::{LinkHandle, Pump, Supervision, VehicleProbe, WeakLink};
use crate::sim::{Fault, SimConfig, SimHandle, VehicleConfig};
use crate::sync::lock;
use probe::{Px4Probe, SimProbe};

/// Default supervision limit: wall time of silence or of a frozen autopilot clock.
pub const DEFAULT_STALL: Duration = Duration::from_secs(5);
/// Default lockstep step, sim s: how far the clock moves between two looks at a condition.
pub const DEFAULT_LOCKSTEP_CHUNK_S: f64 = 0.020;
/// How long `start` waits for PX4's startup script by default (wall).
pub const DEFAULT_PX4_READY_TIMEOUT: Duration = Duration::from_secs(60);

/// What flies in a run.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive] // more variants may come; match with a `_` arm
pub enum RunVehicle {
    /// The built-in simulated PX4 ([`crate::sim`]): the default, and what the tests fly.
    Simulated,
    /// A real PX4 SITL process (SIH quadrotor), from this build directory or
    /// `NEXUS_PX4_BUILD`.
    Px4 {
        /// The PX4 build directory (`…/build/px4_sitl_default`); `None`: `NEXUS_PX4_BUILD`.
        build: Option<PathBuf>,
    },
    /// No vehicle: a run with a clock and nothing to fly (it has no offboard link).
    None,
}

impl RunVehicle {
    fn name(&self) -> &'static str {
        match self {
            RunVehicle::Simulated => "the built-in simulated PX4",
            RunVehicle::Px4 { .. } => "PX4 SITL",
            RunVehicle::None => "none",
        }
    }
}

/// How the run's clock goes.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive] // more variants may come; match with a `_` arm
pub enum RunClock {
    /// Sim time follows wall time × `speed`.
    RealTime {
        /// Speed factor, > 0 (1 = real time).
        speed: f64,
    },
    /// The built-in vehicle advances only when stepped (by the run's waits): as fast as the CPU
    /// allows, deterministic.
    Lockstep,
    /// As fast as possible (`--speed max`): the built-in vehicle in lockstep, stepped by the
    /// run's own thread while a client holds the offboard link open, each step only once the
    /// client's pump has taken in what the vehicle sent (the lockstep barrier). The vehicle
    /// runs exactly as fast as the client consumes, nothing is dropped, and waits need not
    /// step it (to them the clock runs by itself).
    Max,
}

/// How to run.
#[derive(Debug, Clone)]
#[non_exhaustive] // more fields may come
#[must_use = "options do nothing until a run takes them"]
pub struct RunOptions {
    /// SITL instance N: offboard UDP port 14540 + N, system id N + 1.
    pub instance: u8,
    /// What flies.
    pub vehicle: RunVehicle,
    /// How the clock goes.
    pub clock: RunClock,
    /// Lockstep: sim seconds per step of a wait (whole milliseconds, at least one).
    /// Default [`DEFAULT_LOCKSTEP_CHUNK_S`].
    pub lockstep_chunk_s: f64,
    /// PX4: how long `start` waits for its startup script (wall).
    pub px4_ready_timeout: Duration,
    /// The simulated vehicle's configuration (parameters, boot timings, origin); `None`:
    /// defaults for the instance.
    pub vehicle_config: Option<VehicleConfig>,
    /// PX4: launch options (parameter overrides, environment, workdir); the instance and
    /// speed factor come from this struct.
    pub launch: Option<LaunchOptions>,
    /// The defaults of clients [`crate::offboard_client::OffboardClient::connect`] opens on
    /// this run (tolerances, `wait_clear_s`); its system id and port come from the run.
    pub client: OffboardOptions,
    /// The pump the run's links join; `None`: the process-wide pump.
    pub pump: Option<Pump>,
    /// Where clients connected to this run listen ([`DEFAULT_LISTEN`]: the vehicle is
    /// local, so nothing off this host can reach the offboard port).
    pub listen: IpAddr,
    /// Where links to this run record their frames ([`crate::tlog`]); `None`: nowhere.
    pub tlog: Option<crate::tlog::Tlog>,
    /// Links to this run sign and verify ([`crate::signing`]); the built-in vehicle then has
    /// the key too, in PX4's "always" mode. `None`: unsigned.
    pub signing: Option<crate::signing::Signing>,
    /// Keep the vehicle's own log of the run here (PX4's ULog format): PX4's, copied from its
    /// working directory when it stops ([`LaunchOptions::keep_ulog`]); the built-in vehicle's,
    /// written as it flies ([`nexus_sim::ulog::FlightLog`]). Complete once [`Run::close`] (or
    /// [`Run::close_checked`]) returns. `None`: not kept.
    pub ulog: Option<PathBuf>,
}

/// Where a run's offboard client listens by default: loopback, where the vehicle we launched
/// sends.
pub const DEFAULT_LISTEN: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);

impl RunOptions {
    fn with(instance: u8, vehicle: RunVehicle) -> Self {
        RunOptions {
            instance,
            vehicle,
            clock: RunClock::RealTime { speed: 1.0 },
            lockstep_chunk_s: DEFAULT_LOCKSTEP_CHUNK_S,
            px4_ready_timeout: DEFAULT_PX4_READY_TIMEOUT,
            vehicle_config: None,
            launch: None,
            client: OffboardOptions::default(),
            pump: None,
            listen: DEFAULT_LISTEN,
            tlog: None,
            signing: None,
            ulog: None,
        }
    }

    /// The built-in simulated PX4 as instance `instance`, in real time.
    pub fn simulated(instance: u8) -> Self {
        Self::with(instance, RunVehicle::Simulated)
    }

    /// PX4 SITL instance `instance` from `build` (`None`: `NEXUS_PX4_BUILD`), in real time.
    pub fn px4(instance: u8, build: Option<PathBuf>) -> Self {
        Self::with(instance, RunVehicle::Px4 { build })
    }

    /// A run with no vehicle.
    pub fn no_vehicle() -> Self {
        Self::with(0, RunVehicle::None)
    }

    /// [`RunOptions::lockstep_chunk_s`] as the whole sim milliseconds a step takes (at least
    /// one; a chunk that is no finite number is the default).
    pub(crate) fn lockstep_chunk_ms(&self) -> u64 {
        let s = self.lockstep_chunk_s;
        let s = if s.is_finite() {
            s
        } else {
            DEFAULT_LOCKSTEP_CHUNK_S
        };
        ((s * 1000.0).round() as u64).max(1)
    }

    /// Run at `speed` × real time.
    pub fn speed(mut self, speed: f64) -> Self {
        self.clock = RunClock::RealTime { speed };
        self
    }

    /// Step the built-in vehicle's clock from the run's waits (lockstep).
    pub fn lockstep(mut self) -> Self {
        self.clock = RunClock::Lockstep;
        self
    }

    /// Run the built-in vehicle as fast as its client takes in what it sends
    /// ([`RunClock::Max`]).
    pub fn max_speed(mut self) -> Self {
        self.clock = RunClock::Max;
        self
    }

    /// Set the supervision limit: wall time of silence, or of a clock that does not advance,
    /// after which the run counts as dead (`None`: not supervised). It is the run's clients'
    /// [`OffboardOptions::stall`], the one place the limit is kept; default
    /// `Some(`[`DEFAULT_STALL`]`)`.
    pub fn stall(mut self, stall: Option<Duration>) -> Self {
        self.client.stall = stall;
        self
    }

    /// Set the arm settle window of clients connected to this run (sim seconds).
    pub fn wait_clear_s(mut self, s: f32) -> Self {
        self.client.offboard.wait_clear_s = s;
        self
    }

    /// Listen for the vehicle on `ip` (e.g. `0.0.0.0`) instead of [`DEFAULT_LISTEN`].
    pub fn listen(mut self, ip: IpAddr) -> Self {
        self.listen = ip;
        self
    }

    /// Record the run's offboard link in this tlog.
    pub fn tlog(mut self, tlog: crate::tlog::Tlog) -> Self {
        self.tlog = Some(tlog);
        self
    }

    /// Sign and verify the run's links (and give the built-in vehicle the key).
    pub fn signing(mut self, signing: crate::signing::Signing) -> Self {
        self.signing = Some(signing);
        self
    }

    /// Keep the vehicle's ULog of the run at `path` ([`RunOptions::ulog`]).
    pub fn ulog(mut self, path: impl Into<PathBuf>) -> Self {
        self.ulog = Some(path.into());
        self
    }

    /// Join this pump.
    pub fn on_pump(mut self, pump: Pump) -> Self {
        self.pump = Some(pump);
        self
    }
}

#[derive(Debug, Clone)]
pub(crate) enum Vehicle {
    Simulated(Arc<SimProbe>),
    Px4(Arc<Px4Probe>),
    None,
}

#[derive(Debug, Clone)]
pub(crate) struct Running {
    pub vehicle: Vehicle,
    pub pump: Pump,
    pub started: Instant,
    pub ports: Option<PortMap>,
}

#[derive(Debug)]
enum State {
    Idle,
    Running(Running),
    Closed,
}

/// A run (the Python client's `Sim`): owns the vehicle and the pump its offboard link runs on.
/// `Send + Sync`; closes on `Drop` (the vehicle stops, PX4 is killed, nothing outlives it).
#[derive(Debug)]
pub struct Run {
    options: RunOptions,
    state: Mutex<State>,
    offboard: Arc<Mutex<Option<WeakLink>>>,
    /// The stepping thread of a [`RunClock::Max`] run, and its stop flag.
    driver: Mutex<Option<(Arc<AtomicBool>, std::thread::JoinHandle<()>)>>,
}

impl Run {
    /// A run with these options; nothing starts until [`Run::start`].
    pub fn new(options: RunOptions) -> Run {
        Run {
            options,
            state: Mutex::new(State::Idle),
            offboard: Arc::new(Mutex::new(None)),
            driver: Mutex::new(None),
        }
    }

    /// [`Run::new`] then [`Run::start`].
    pub fn started(options: RunOptions) -> Result<Run, RunError> {
        let sim = Run::new(options);
        sim.start()?;
        Ok(sim)
    }

    /// The options.
    pub fn options(&self) -> &RunOptions {
        &self.options
    }

    /// SITL instance N.
    pub fn instance(&self) -> u8 {
        self.options.instance
    }

    /// Start the vehicle (for PX4: spawn it and wait for its startup script) and join a pump.
    pub fn start(&self) -> Result<(), RunError> {
        let mut state = lock(&self.state);
        match *state {
            State::Idle => {}
            State::Running(_) => return Err(RunError::AlreadyStarted),
            State::Closed => return Err(RunError::Closed),
        }
        let o = &self.options;
        let (vehicle, ports) = match &o.vehicle {
            RunVehicle::Simulated => {
                let mut cfg = match o.clock {
                    RunClock::RealTime { speed } => SimConfig::realtime(o.instance, speed),
                    RunClock::Lockstep | RunClock::Max => SimConfig::lockstep(o.instance),
                };
                if let Some(v) = &o.vehicle_config {
                    cfg.vehicle = v.clone();
                    cfg.vehicle.instance = o.instance;
                }
                crate::signing::give_vehicle(&mut cfg.vehicle, o.signing.as_ref());
                cfg.ulog = o.ulog.clone();
                let h = SimHandle::start(cfg)?;
                let p = h.ports();
                let ports = PortMap {
                    offboard: OffboardPort {
                        port: p.offboard.port,
                        px4_port: p.vehicle_port,
                        system_id: p.offboard.system_id,
                    },
                };
                let lockstep = !matches!(o.clock, RunClock::RealTime { .. });
                let probe = SimProbe::new(h, lockstep);
                if o.clock == RunClock::Max {
                    let stop = Arc::new(AtomicBool::new(false));
                    let thread = wait::spawn_driver(
                        o.instance,
                        Arc::clone(&probe),
                        Arc::clone(&self.offboard),
                        Arc::clone(&stop),
                        o.lockstep_chunk_ms(),
                    )
                    .map_err(|e| {
                        RunError::Speed(format!("cannot start the stepping thread: {e}"))
                    })?;
                    *lock(&self.driver) = Some((stop, thread));
                }
                (Vehicle::Simulated(probe), Some(ports))
            }
            RunVehicle::Px4 { build } => {
                let speed =
                    match o.clock {
                        RunClock::RealTime { speed } => speed,
                        RunClock::Lockstep | RunClock::Max => return Err(RunError::Speed(
                            "PX4 SITL keeps its own lockstep with its simulator: give a PX4 run a \
                             speed factor, not host stepping"
                                .into(),
                        )),
                    };
                let build = Px4Build::locate(build.as_deref())?;
                let mut launch = o
                    .launch
                    .clone()
                    .unwrap_or_else(|| LaunchOptions::new(o.instance));
                launch.instance = o.instance;
                launch.speed_factor = (speed != 1.0).then_some(speed as f32);
                if o.ulog.is_some() {
                    launch.keep_ulog = o.ulog.clone();
                }
                let process = Px4Process::spawn(&build, &launch)?;
                process.wait_ready(o.px4_ready_timeout)?;
                let ports = process.ports();
                (
                    Vehicle::Px4(Px4Probe::new(process, launch.speed_factor)),
                    Some(ports),
                )
            }
            RunVehicle::None => (Vehicle::None, None),
        };
        let pump = match &o.pump {
            Some(p) => p.clone(),
            None => Pump::shared()?,
        };
        *state = State::Running(Running {
            vehicle,
            pump,
            started: Instant::now(),
            ports,
        });
        Ok(())
    }

    pub(crate) fn running(&self) -> Result<Running, RunError> {
        match &*lock(&self.state) {
            State::Idle => Err(RunError::NotStarted),
            State::Running(r) => Ok(r.clone()),
            State::Closed => Err(RunError::Closed),
        }
    }

    /// Whether the run was started and not closed.
    pub fn is_running(&self) -> bool {
        matches!(*lock(&self.state), State::Running(_))
    }

    fn no_vehicle_reason(&self) -> String {
        "the run has no PX4: it was started with RunVehicle::None, which has no MAVLink \
         vehicle to connect to"
            .to_owned()
    }

    /// The run's port map (the Python client's `sim.ports`): `ports()?.get("offboard")` → the UDP
    /// port the client listens on and PX4's system id. A run without a vehicle has none, and says
    /// why.
    pub fn ports(&self) -> Result<PortMap, RunError> {
        let run = self.running()?;
        run.ports.ok_or_else(|| RunError::NoOffboardLink {
            why: self.no_vehicle_reason(),
        })
    }

    /// The link called `name` in the port map (today only `"offboard"`).
    pub fn port(&self, name: &str) -> Result<OffboardPort, RunError> {
        let ports = self.ports()?;
        ports.get(name).ok_or_else(|| RunError::NoSuchLink {
            name: name.to_owned(),
            have: "offboard".to_owned(),
        })
    }

    /// The offboard link's port (`port("offboard")`).
    pub fn offboard_port(&self) -> Result<OffboardPort, RunError> {
        self.port("offboard")
    }

    /// Where a client of this run listens and what it is opened with: UDP on the run's
    /// offboard port, for the vehicle's system id, taking frames only from the address the
    /// vehicle sends from when the run knows it (every `connect` opens this link).
    pub fn client_link(&self) -> Result<(crate::transport::ConnString, OffboardOptions), RunError> {
        let port = self.offboard_port()?;
        let mut options = self.offboard_options();
        options.system_id = port.system_id;
        if let Some(vehicle) = self.vehicle_addr() {
            options.transport.peer = crate::transport::PeerRule::Address(vehicle);
        }
        let conn = crate::transport::ConnString::UdpIn {
            host: self.options().listen.to_string(),
            port: port.port,
        };
        Ok((conn, options))
    }

    /// The pump the run's links join.
    pub fn pump(&self) -> Result<Pump, RunError> {
        Ok(self.running()?.pump)
    }

    fn probe_of(run: &Running) -> Option<Arc<dyn VehicleProbe>> {
        match &run.vehicle {
            Vehicle::Simulated(p) => Some(Arc::clone(p) as Arc<dyn VehicleProbe>),
            Vehicle::Px4(p) => Some(Arc::clone(p) as Arc<dyn VehicleProbe>),
            Vehicle::None => None,
        }
    }

    /// What a link to this run's vehicle is supervised with (stall limit, the vehicle's
    /// probe).
    pub fn supervision(&self) -> Result<Supervision, RunError> {
        let run = self.running()?;
        Ok(Supervision {
            stall: self.options.client.stall,
            probe: Self::probe_of(&run),
            tlog: self.options.tlog.clone(),
            signing: self.options.signing.clone(),
        })
    }

    /// The options for clients connected to this run.
    pub fn offboard_options(&self) -> OffboardOptions {
        let mut o = self.options.client.clone();
        // The run started the vehicle, so it is a simulator (PX4 SITL or the built-in one):
        // ask for its ground truth at once, unless the caller chose otherwise.
        let started = self
            .running()
            .is_ok_and(|r| !matches!(r.vehicle, Vehicle::None));
        if started && o.ground_truth == GroundTruth::Auto {
            o.ground_truth = GroundTruth::Always;
        }
        o
    }

    /// The address the vehicle we launched sends from (loopback, its bound port 14580 + N):
    /// a client of this run takes frames only from there. `None` without a vehicle.
    pub fn vehicle_addr(&self) -> Option<SocketAddr> {
        let port = self.offboard_port().ok()?;
        Some(SocketAddr::new(
            IpAddr::V4(Ipv4Addr::LOCALHOST),
            port.px4_port,
        ))
    }

    /// Make `link` the run's offboard link: its clock is the run's clock for PX4, a lockstep
    /// step waits for it to catch up, and condition waits go to it. The run does not keep it
    /// open.
    pub fn attach(&self, link: &LinkHandle) {
        *lock(&self.offboard) = Some(link.downgrade());
    }

    /// The run's offboard link, while a client holds it open.
    pub fn offboard_link(&self) -> Option<LinkHandle> {
        lock(&self.offboard)
            .as_ref()
            .and_then(WeakLink::upgrade)
            .filter(|l| !l.is_closed())
    }

    /// The run's clock now, ms: the built-in vehicle's own; for PX4 what it last reported,
    /// or wall time × speed before the first report.
    pub fn sim_time_ms(&self) -> Result<u64, RunError> {
        let run = self.running()?;
        Ok(self.clock_ms(&run))
    }

    /// [`Run::sim_time_ms`] in seconds.
    pub fn sim_time_s(&self) -> Result<f64, RunError> {
        Ok(self.sim_time_ms()? as f64 / 1000.0)
    }

    pub(crate) fn clock_ms(&self, run: &Running) -> u64 {
        if let Vehicle::Simulated(p) = &run.vehicle {
            if let Some(ms) = p.with(SimHandle::sim_time_ms) {
                return ms;
            }
        }
        if let Some(ms) = self
            .offboard_link()
            .and_then(|l| l.with_status(|s| s.sim_ms))
        {
            return ms;
        }
        let speed = match self.options.clock {
            RunClock::RealTime { speed } => speed,
            RunClock::Lockstep | RunClock::Max => 0.0,
        };
        (run.started.elapsed().as_secs_f64() * speed * 1000.0) as u64
    }

    /// Why the run's vehicle is dead, if it is (exit, PANIC, link silent, clock stalled).
    pub fn death(&self) -> Option<DeathCause> {
        let run = self.running().ok()?;
        self.death_of(&run)
    }

    pub(crate) fn death_of(&self, run: &Running) -> Option<DeathCause> {
        if let Some(r) = Self::probe_of(run).and_then(|p| p.death()) {
            return Some(r);
        }
        self.offboard_link()
            .and_then(|l| l.with_status(|s| s.died.clone()))
    }

    /// Whether the built-in vehicle runs in lockstep.
    pub fn is_lockstep(&self) -> bool {
        self.options.clock == RunClock::Lockstep && self.options.vehicle == RunVehicle::Simulated
    }

    /// Change the speed factor: the built-in vehicle in real time only (PX4 fixes it at
    /// launch; a lockstep run has none).
    pub fn set_speed(&self, speed: f64) -> Result<(), RunError> {
        let run = self.running()?;
        match &run.vehicle {
            Vehicle::Simulated(p) => {
                let probe: &dyn VehicleProbe = p.as_ref();
                probe.set_speed(speed as f32).map_err(RunError::Speed)
            }
            Vehicle::Px4(p) => {
                let probe: &dyn VehicleProbe = p.as_ref();
                probe.set_speed(speed as f32).map_err(RunError::Speed)
            }
            Vehicle::None => Err(RunError::Speed(
                "this run has no vehicle whose speed could change".into(),
            )),
        }
    }

    fn simulated(&self, what: &'static str) -> Result<Arc<SimProbe>, RunError> {
        match self.running()?.vehicle {
            Vehicle::Simulated(p) => Ok(p),
            _ => Err(RunError::NotSimulated {
                what,
                vehicle: self.options.vehicle.name(),
            }),
        }
    }

    /// Inject a fault into the built-in vehicle (tests: exit, PANIC, a stalled clock, …).
    pub fn inject(&self, fault: Fault) -> Result<(), RunError> {
        let p = self.simulated("inject")?;
        p.with(|h| h.inject(fault))
            .unwrap_or(Err(crate::sim::SimError::Stopped))?;
        Ok(())
    }

    /// Ground truth: the built-in vehicle's height above the pad, m.
    pub fn true_height_m(&self) -> Option<f32> {
        let p = self.simulated("true_height_m").ok()?;
        p.with(SimHandle::true_height_m)
    }

    /// The vehicle's console so far (the built-in vehicle's log; PX4's last lines).
    pub fn console(&self) -> Vec<String> {
        match self.running().map(|r| r.vehicle) {
            Ok(Vehicle::Simulated(p)) => p.with(SimHandle::output_log).unwrap_or_default(),
            Ok(Vehicle::Px4(p)) => p.output_tail(),
            _ => Vec::new(),
        }
    }

    /// Stop the vehicle (PX4: SIGTERM, then SIGKILL) and leave the pump. Links on the run's
    /// port then see their vehicle gone. Idempotent.
    pub fn close(&self) {
        let _ = self.close_checked();
    }

    /// [`Run::close`], saying what went wrong stopping PX4: it could not be killed, its
    /// working directory could not be removed, its ULog could not be kept
    /// ([`RunOptions::ulog`]). The second call returns `Ok`.
    pub fn close_checked(&self) -> Result<(), RunError> {
        let mut result = Ok(());
        let prev = std::mem::replace(&mut *lock(&self.state), State::Closed);
        *lock(&self.offboard) = None;
        let driver = lock(&self.driver).take();
        if let Some((stop, _)) = &driver {
            stop.store(true, Ordering::Relaxed);
        }
        if let State::Running(run) = prev {
            match run.vehicle {
                Vehicle::Simulated(p) => p.stop(),
                Vehicle::Px4(p) => {
                    result = p.stop().map_err(RunError::from);
                }
                Vehicle::None => {}
            }
        }
        if let Some((_, thread)) = driver {
            let _ = thread.join();
        }
        result
    }
}

impl Drop for Run {
    fn drop(&mut self) {
        self.close();
    }
}
