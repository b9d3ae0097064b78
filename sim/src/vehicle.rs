//! The simulated PX4 vehicle: a pure, deterministic, in-memory model.
//!
//! Driven like the core (sans-IO): [`Vehicle::handle_datagram`] for every datagram that
//! arrived, [`Vehicle::step`] to advance sim time, [`Vehicle::poll_transmit`] for what to send.
//! Physics, commander and navigator run at a fixed rate (`physics_hz`, 250 Hz by default);
//! telemetry streams are scheduled in sim time. Nothing here reads a clock or touches a socket.

use super::commander::{ArmReason, ArmRequest, Commander, Conditions, Failsafe, LandEvent};
use super::config::VehicleConfig;
use super::dynamics::{Body, ControlSetpoint, MotionLimits};
use super::events::level;
use super::faults::{ExitStatus, Fault};
use super::fixed_wing::FwState;
use super::geo::LocalFrame;
use super::geofence::{Fence, GeofenceAction};
use super::io::Io;
use super::mission::{MissionManager, VehicleView};
use super::navigator::{Inputs, NavEvent, Navigator, OffboardSp, SpType};
use super::params::{Params, P};
use super::streams::Streams;
use super::vehicle_type::VehicleType;

/// Seconds of takeoff thrust after the spool-up at which the land detector reports the takeoff:
/// "Takeoff detected" comes 1.6–1.9 s after arming in the traces, while still on the ground.
const TAKEOFF_DETECT_THRUST_S: f32 = 0.95;
/// Seconds on the ground before "Landing detected": ~7 s after touchdown in box-x4 (the land
/// detector's hysteresis with SIH's thrust), 5–6 s in PX4's Land-mode runs. PX4 1.18 has
/// no LNDMC_TRIG_TIME parameter to set it.
const LAND_DETECT_S: f32 = 6.0;
/// The same for the hexarotor: "Landing detected" 2.9 s after touchdown in hex-box-x4 (its
/// six rotors' thrust drops below the land detector's threshold sooner).
const HEX_LAND_DETECT_S: f32 = 2.9;
/// The same for a vehicle that never left the ground since arming: Land commanded on the
/// ground gives "Landing detected" 1.48 s later (wait-for-text-with-reaction-x4: Land at
/// 16.27 s, the text at 17.748 s, ON_GROUND in the next EXTENDED_SYS_STATE at 17.868 s).
const LAND_DETECT_UNFLOWN_S: f32 = 1.48;
/// How long the arm/disarm stick gesture must be held, us: a fixed 1 s on PX4 main, which has
/// no COM_RC_ARM_HYST parameter any more.
const STICK_GESTURE_HOLD_US: u64 = 1_000_000;
/// Height above the pad that counts as having flown, m.
const FLEW_HEIGHT_M: f32 = 0.3;
/// Ground speed on the takeoff roll at which the fixed-wing land detector reports the
/// takeoff, m/s (plane-mission-x4: 7.0 m/s, 2.0 s after arming).
const FW_TAKEOFF_DETECT_M_S: f32 = 7.0;
use super::wire::{CommandIn, TxFault, XorShift64Star};
use nexus_core::frame::Decoder;
use nexus_core::{Mode, RcSticks};
use std::collections::VecDeque;

/// PX4's autopilot component id.
pub const COMPID: u8 = 1;
/// A GCS/onboard heartbeat keeps the link "connected" this long, µs.
pub const GCS_TIMEOUT_US: u64 = 3_000_000;
/// Longest gap allowed inside an offboard stream (2 Hz), µs.
pub const OFFBOARD_MAX_GAP_US: u64 = 500_000;
/// Stick gesture thresholds (PX4 ManualControl): throttle below, |yaw| above.
pub const GESTURE_THROTTLE: f32 = 0.1;
/// See [`GESTURE_THROTTLE`].
pub const GESTURE_YAW: f32 = 0.8;
/// Commands queued while the clock is stalled (uORB vehicle_command queue).
pub const STALLED_CMD_CAP: usize = 8;

/// Ground truth and headline state, for the host (never sent on the link).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct VehicleSnapshot {
    /// The vehicle's clock (time_boot_ms), ms.
    pub sim_ms: u64,
    /// Armed.
    pub armed: bool,
    /// Mode in force.
    pub mode: Mode,
    /// MAV_LANDED_STATE value (1 ground, 2 air, 3 takeoff, 4 landing).
    pub landed_state: u8,
    /// True height above the pad, m.
    pub true_height_m: f32,
    /// True position, local NED of the pad, m.
    pub position_ned_m: [f32; 3],
    /// True velocity, NED, m/s.
    pub velocity_ned_m_s: [f32; 3],
    /// A failsafe is active.
    pub failsafe: bool,
    /// MISSION_CURRENT seq.
    pub mission_current: u16,
    /// Mission finished.
    pub mission_finished: bool,
    /// The clock is stalled by a fault.
    pub stalled: bool,
}

/// Manual-control input state.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Manual {
    pub last_us: Option<u64>,
    pub sticks: RcSticks,
    pub gesture_since_us: Option<u64>,
    pub gesture_arm: bool,
    pub gesture_fired: bool,
}

/// Offboard setpoint stream state.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Offboard {
    pub sp: OffboardSp,
    pub last_us: Option<u64>,
    pub since_us: Option<u64>,
}

/// Commander's view of the ground station link (`dataLinkCheck`).
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct DataLink {
    /// The last GCS HEARTBEAT, µs.
    pub last_gcs_us: Option<u64>,
    /// Lost: no GCS HEARTBEAT for COM_DL_LOSS_T.
    pub lost: bool,
}

/// The home position as PX4 holds it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Home {
    pub ned: [f32; 3],
    pub yaw: f32,
}

/// How often PX4 re-estimates (and re-sends) home's altitude in flight, µs (every 2 s, as
/// recorded).
pub const ALT_STEP_PERIOD_US: u64 = 2_000_000;
/// How long after takeoff the home-altitude re-estimation goes on, µs (~120 s, as measured).
pub const ALT_STEPS_FOR_US: u64 = 120_000_000;

/// GLOBAL_POSITION_INT.relative_alt's home-altitude corrections after takeoff
/// (docs/px4-wire.md §Height).
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct AltSteps {
    pub offset_m: f32,
    pub next_us: u64,
    pub end_us: u64,
    pub active: bool,
}

/// The simulated vehicle.
#[derive(Debug)]
pub struct Vehicle {
    pub(super) cfg: VehicleConfig,
    pub(super) sysid: u8,
    /// The autopilot's component id (PX4: [`COMPID`]).
    pub(super) compid: u8,
    /// The vehicle's clock, µs (frozen while stalled).
    pub(super) now_us: u64,
    /// Time the driver has advanced, µs (streams keep their pace on it while stalled).
    pub(super) elapsed_us: u64,
    pending_us: u64,
    pub(super) tick_us: u64,
    pub(super) params: Params,
    pub(super) frame: LocalFrame,
    /// The fence PX4 enforces (loaded from the stored fence plan when it changes).
    pub(super) fence: Fence,
    /// CRC of the fence plan `fence` was loaded from.
    fence_crc: u32,
    /// The last breach check found the fence breached.
    pub(super) fence_breached: bool,
    /// Next breach check, µs.
    fence_check_next_us: u64,
    /// The health report's breach text: earliest next, and one is owed.
    fence_report: (u64, bool),
    /// A failsafe's Return or Land, due after its COM_FAIL_ACT_T hold: when, the mode, and
    /// the failsafe it belongs to.
    delayed: Option<(u64, Mode, Failsafe)>,
    /// The simulated battery and PX4's estimate of it.
    pub(super) battery: super::battery::BatteryModel,
    /// The battery warning acted on since arming (PX4 acts only on worse ones).
    bat_acted: super::battery::Warning,
    /// The health report's battery text: earliest next, and the one owed.
    bat_report: (u64, Option<&'static str>),
    /// The battery warning commander last saw (its shutdown check acts on a change).
    bat_seen: super::battery::Warning,
    /// Commander hangs waiting for the power-off it asked for (an EMERGENCY battery while
    /// disarmed): it answers no command and the vehicle is not armable until the process ends.
    pub(super) commander_hung: bool,
    /// Commander's data link to a ground station.
    pub(super) datalink: DataLink,
    /// Mission CRC, fence CRC and home updates the mission's feasibility was last checked at.
    mission_check_key: (u32, u32, u32),
    /// The mission has a position outside the fence (PX4's feasibility check fails).
    pub(super) mission_outside_fence: bool,
    /// Home set or moved this many times (PX4's home update count).
    pub(super) home_updates: u32,
    pub(super) body: Body,
    /// The fixed-wing controllers' state (the airplane only).
    pub(super) fw: FwState,
    pub(super) commander: Commander,
    pub(super) nav: Navigator,
    pub(super) mission: MissionManager,
    pub(super) io: Io,
    pub(super) streams: Streams,
    pub(super) home: Option<Home>,
    pub(super) alt_steps: AltSteps,
    pub(super) manual: Manual,
    pub(super) offboard: Offboard,
    pub(super) gcs_heartbeat_us: Option<u64>,
    pub(super) stalled: bool,
    pub(super) refusal: Option<String>,
    pub(super) stalled_cmds: VecDeque<(CommandIn, (u8, u8))>,
    pub(super) exit: Option<ExitStatus>,
    /// Left the ground (above [`FLEW_HEIGHT_M`]) since arming: its landing is detected slowly.
    pub(super) flew: bool,
    pub(super) rng: XorShift64Star,
    pub(super) boot_texts_done: usize,
    pub(super) gimbal_burst: Option<(u64, u8)>,
    /// MAV_CMD_PREFLIGHT_REBOOT_SHUTDOWN accepted a shutdown: PX4 exits 0 at this time.
    pub(super) shutdown_at_us: Option<u64>,
    /// Next evaluation of RTL's destination while RTL is inactive, µs.
    rtl_check_next_us: u64,
    /// FLIGHT_INFORMATION's arming and takeoff times, µs of the vehicle's clock (0: not yet).
    pub(super) flight_info: (u64, u64),
    /// PING stream sequence number.
    pub(super) ping_seq: u32,
    /// Its own log and the MAVLink log handler serving it ([`crate::logger`]).
    pub(super) logger: crate::logger::Logger,
    decoder: Decoder,
}

impl Vehicle {
    /// A vehicle at sim time 0 ("exec"), on the pad, disarmed, in Hold.
    pub fn new(cfg: VehicleConfig) -> Vehicle {
        let sysid = cfg.sysid();
        let mut params = Params::for_vehicle(sysid, cfg.vehicle);
        let compid = cfg.component_id;
        let mut io = Io::new(sysid, compid, cfg.random_start);
        io.out.signing = cfg.signing.clone().map(crate::signing::SimSigning::new);
        for (name, v) in &cfg.params {
            if let Err(e) = params.set_numeric(name, *v) {
                io.print(format!(
                    "WARN  [param] parameter override {name}={v} ignored: {e:?}"
                ));
            }
        }
        let tick_us = 1_000_000 / cfg.physics_hz.clamp(50, 2000) as u64;
        let mut boot_texts = cfg.boot_texts.clone();
        boot_texts.sort_by_key(|t| t.0);
        let cfg = VehicleConfig { boot_texts, ..cfg };
        Vehicle {
            frame: LocalFrame::new(cfg.origin),
            fence: Fence::default(),
            fence_crc: 0,
            fence_breached: false,
            fence_check_next_us: 0,
            fence_report: (0, false),
            delayed: None,
            battery: Default::default(),
            bat_acted: Default::default(),
            bat_report: (0, None),
            bat_seen: Default::default(),
            commander_hung: false,
            datalink: DataLink::default(),
            mission_check_key: (0, 0, 0),
            mission_outside_fence: false,
            home_updates: 0,
            rng: XorShift64Star::new(cfg.random_start),
            sysid,
            compid,
            now_us: 0,
            elapsed_us: 0,
            pending_us: 0,
            tick_us,
            params,
            body: Body::default(),
            fw: FwState::default(),
            commander: Commander::default(),
            nav: Navigator::default(),
            mission: MissionManager::new(sysid, compid),
            io,
            streams: Streams::new(),
            home: None,
            alt_steps: AltSteps::default(),
            manual: Manual::default(),
            offboard: Offboard::default(),
            gcs_heartbeat_us: None,
            stalled: false,
            refusal: None,
            stalled_cmds: VecDeque::new(),
            exit: None,
            flew: false,
            boot_texts_done: 0,
            gimbal_burst: None,
            ping_seq: 0,
            flight_info: (0, 0),
            rtl_check_next_us: 0,
            shutdown_at_us: None,
            logger: Default::default(),
            decoder: Decoder::new(),
            cfg,
        }
    }

    /// The vehicle's configuration.
    pub fn config(&self) -> &VehicleConfig {
        &self.cfg
    }

    /// MAVLink system id.
    pub fn sysid(&self) -> u8 {
        self.sysid
    }

    /// The vehicle's clock (time_boot_ms source), µs.
    pub fn now_us(&self) -> u64 {
        self.now_us
    }

    /// Time the driver has advanced the vehicle by, µs (equals `now_us` unless stalled).
    pub fn elapsed_us(&self) -> u64 {
        self.elapsed_us
    }

    /// Ground-truth height above the pad, m.
    pub fn true_height_m(&self) -> f32 {
        self.body.height_m()
    }

    /// How the vehicle ended, once an exit or panic fault has fired.
    pub fn exit_status(&self) -> Option<ExitStatus> {
        self.exit
    }

    /// Console (stdout) lines printed since the last call (logged in its own log as they are
    /// taken, as PX4 logs its console).
    pub fn take_console(&mut self) -> Vec<String> {
        let lines: Vec<String> = self.io.console.drain(..).collect();
        if let Err(e) = self.logger.console(self.now_us, &lines) {
            self.io.print(e);
        }
        lines
    }

    /// Begin its own log of the flight (PX4's ULog, [`crate::logger`]): from now (boot) until
    /// its first disarm after an arming; served to LOG_REQUEST_LIST / LOG_REQUEST_DATA.
    pub fn start_flight_log(&mut self) -> Result<(), crate::ulog::WriteError> {
        let name = format!("nexus-sim instance {}", self.cfg.instance);
        self.logger.start(self.now_us, &name, self.cfg.vehicle)
    }

    /// Every byte of its own log so far; `None` when none was begun.
    pub fn flight_log(&self) -> Option<&[u8]> {
        self.logger.bytes()
    }

    /// Whether its own log is still being written (it closes at the first disarm after an
    /// arming).
    pub fn flight_log_open(&self) -> bool {
        self.logger.is_open()
    }

    /// The bytes of its own log written since the last call (what a driver appends to the
    /// log's file).
    pub fn take_flight_log_written(&mut self) -> &[u8] {
        self.logger.take_written()
    }

    /// Headline state and ground truth.
    pub fn snapshot(&self) -> VehicleSnapshot {
        VehicleSnapshot {
            sim_ms: self.now_us / 1000,
            armed: self.commander.armed,
            mode: self.commander.nav_state(),
            landed_state: self.landed_state(),
            true_height_m: self.body.height_m(),
            position_ned_m: self.body.pos_ned_m,
            velocity_ned_m_s: self.body.vel_ned_m_s,
            failsafe: self.commander.failsafe.is_some(),
            mission_current: self.mission.progress.current,
            mission_finished: self.mission.progress.finished,
            stalled: self.stalled,
        }
    }

    /// Inject a fault (see [`Fault`]).
    pub fn inject(&mut self, fault: Fault) {
        match fault {
            Fault::Exit { code } => {
                self.io.print("INFO  [px4] Exiting NOW.".to_owned());
                self.exit = Some(ExitStatus::Code(code));
            }
            Fault::Panic { module, message } => {
                self.io.print(format!("PANIC [{module}] {message}"));
                self.exit = Some(ExitStatus::Signal(6));
            }
            Fault::StallClock => self.stalled = true,
            Fault::Silence => self.io.out.set_fault(TxFault::Silent),
            Fault::Garbage => self.io.out.set_fault(TxFault::Garbage),
            Fault::RefuseArming { text } => self.refusal = Some(text),
        }
    }

    /// Remove stall, silence, garbage and arming refusal (exit and panic are final).
    pub fn clear_faults(&mut self) {
        self.stalled = false;
        self.refusal = None;
        self.io.out.set_fault(TxFault::None);
        while let Some((cmd, src)) = self.stalled_cmds.pop_front() {
            self.on_command(cmd, src);
        }
    }

    /// Internal tick length, µs (1 / physics_hz).
    pub fn tick_us(&self) -> u64 {
        self.tick_us
    }

    /// MAVLink frames queued for sending since creation.
    pub fn frames_total(&self) -> u64 {
        self.io.out.frames_total
    }

    /// Whether the mavlink module runs (it sends and receives from then on).
    pub fn mavlink_is_up(&self) -> bool {
        self.mavlink_up()
    }

    /// The driver latched onto a client at `ip` (console line, as PX4 prints it).
    pub fn note_partner(&mut self, ip: String) {
        self.io.print(format!("INFO  [mavlink] partner IP: {ip}"));
    }

    /// Whether the mavlink module is running (first heartbeat sent).
    pub(super) fn mavlink_up(&self) -> bool {
        self.now_us >= self.cfg.boot.mavlink_start_ms * 1000
    }

    /// Feed one received datagram; its frames are handled at the current sim time.
    pub fn handle_datagram(&mut self, bytes: &[u8]) {
        if self.exit.is_some() || !self.mavlink_up() {
            return;
        }
        let mut rest = bytes;
        loop {
            let mut decoded: Option<(nexus_core::frame::Header, [u8; 255], usize)> = None;
            let used = {
                let (used, frame) = self.decoder.feed(rest);
                let signing = &mut self.io.out.signing;
                if let Some(f) = frame.filter(|f| signing.as_mut().is_none_or(|s| s.admit(f))) {
                    let mut p = [0u8; 255];
                    p[..f.payload.len()].copy_from_slice(f.payload);
                    decoded = Some((f.header, p, f.payload.len()));
                }
                used
            };
            rest = &rest[used..];
            match decoded {
                Some((h, p, n)) => self.handle_frame(&h, &p[..n]),
                None if rest.is_empty() => break,
                None => {}
            }
        }
    }

    /// The next datagram to send: whole frames packed into `out` (give it ≥ 280 bytes).
    pub fn poll_transmit(&mut self, out: &mut [u8]) -> Option<usize> {
        if self.exit.is_some() {
            self.io.out.clear();
            return None;
        }
        self.io.out.poll_transmit(out)
    }

    /// What its own log ([`crate::ulog::FlightLog`]) records of it now, in PX4's terms.
    pub fn flight_log_sample(&self) -> crate::ulog::FlightSample {
        let mode = self.commander.nav_state();
        let origin = self.frame.origin();
        let global = self.frame.to_geo(self.body.pos_ned_m);
        let m = &self.mission;
        crate::ulog::FlightSample {
            now_us: self.now_us,
            armed: self.commander.armed,
            nav_state: mode.nav_state().unwrap_or(4),
            failsafe: self.commander.failsafe.is_some(),
            armed_time_us: self.flight_info.0,
            takeoff_time_us: self.flight_info.1,
            landed: self.commander.landed,
            vehicle_type: self.cfg.vehicle.px4_vehicle_type(),
            system_type: self.params.i(P::MAV_TYPE) as u8,
            ned_m: self.body.pos_ned_m,
            vel_ned_m_s: self.body.vel_ned_m_s,
            yaw_rad: self.body.yaw_rad,
            origin: (origin.lat_deg, origin.lon_deg, origin.alt_amsl_m),
            global: (global.lat_deg, global.lon_deg, global.alt_amsl_m),
            position_valid: self.conditions().local_pos,
            mission: (
                m.progress.current,
                m.progress.reached,
                m.mission().len() as u16,
                m.mission_valid(),
                m.progress.finished,
            ),
            battery: (
                self.battery.voltage_mv(&self.params) as f32 / 1000.0,
                self.battery.remaining(&self.params),
                self.battery.warning as u8,
            ),
        }
    }

    /// Advance the vehicle by `dt_us` of sim time (fixed-rate internal ticks; the remainder
    /// carries over to the next call).
    pub fn step(&mut self, dt_us: u64) {
        self.pending_us += dt_us;
        while self.pending_us >= self.tick_us && self.exit.is_none() {
            self.pending_us -= self.tick_us;
            self.tick();
        }
    }

    fn tick(&mut self) {
        self.elapsed_us += self.tick_us;
        if self.shutdown_at_us.is_some_and(|t| self.now_us >= t) {
            self.inject(Fault::Exit { code: 0 });
            return;
        }
        if !self.stalled {
            self.now_us += self.tick_us;
            self.sim_tick();
            self.log_tick();
        }
        self.io_tick();
    }

    /// The logger's tick: a sample when due, the last one and the close at a disarm.
    fn log_tick(&mut self) {
        let (now, armed) = (self.now_us, self.commander.armed);
        // Arming is noted every tick; a sample is made only when one is written.
        let sample = if self.logger.due(now, armed) {
            self.flight_log_sample()
        } else if armed && self.logger.is_open() {
            self.logger.note_armed();
            return;
        } else {
            return;
        };
        if let Err(e) = self.logger.tick(now, armed, &sample) {
            self.io.print(e);
        }
    }

    pub(super) fn conditions(&self) -> Conditions {
        let now = self.now_us;
        let b = &self.cfg.boot;
        let rc_mode = self.params.i(P::COM_RC_IN_MODE);
        let rc_loss = (self.params.f(P::COM_RC_LOSS_T).max(0.05) * 1e6) as u64;
        let manual_control = matches!(rc_mode, 1..=3)
            && self
                .manual
                .last_us
                .is_some_and(|t| now.saturating_sub(t) <= rc_loss);
        // PX4 enters Offboard after a single setpoint (docs/px4-wire.md §Offboard): the
        // stream counts while its last setpoint is within the 2 Hz gap.
        let offboard = self
            .offboard
            .last_us
            .is_some_and(|last| now.saturating_sub(last) <= OFFBOARD_MAX_GAP_US);
        Conditions {
            boot_done: now >= b.prearm_ok_ms * 1000,
            mission_boot_done: now >= b.mission_prearm_ok_ms * 1000,
            global_pos: now >= b.global_position_ms * 1000,
            local_pos: now >= b.local_position_ms * 1000,
            home: self.home.is_some(),
            manual_control,
            offboard,
            mission: self.mission.mission_valid() && !self.mission_outside_fence,
            refuse_arming: self.refusal.is_some(),
            fence_breached: self.fence_breached,
            battery_critical: self.battery.warning >= super::battery::Warning::Critical
                || self.commander_hung,
        }
    }

    pub(super) fn limits(&self) -> MotionLimits {
        MotionLimits {
            acc_hor_m_s2: self.params.f(P::MPC_ACC_HOR),
            acc_up_m_s2: self.params.f(P::MPC_ACC_UP_MAX),
            acc_down_m_s2: self.params.f(P::MPC_ACC_DOWN_MAX),
            yaw_rate_rad_s: self.params.f(P::MPC_YAWRAUTO_MAX).to_radians(),
        }
    }

    pub(super) fn set_home(&mut self) {
        let mut ned = self.body.pos_ned_m;
        ned[2] = ned[2].max(-0.0);
        self.home_updates = self.home_updates.wrapping_add(1);
        self.home = Some(Home {
            ned,
            yaw: self.body.yaw_rad,
        });
        self.streams.home_changed = true;
    }

    fn sim_tick(&mut self) {
        let now = self.now_us;
        let c = self.conditions();
        self.boot_timeline(now, &c);
        self.land_detector(now);
        self.auto_disarm(now);
        self.failsafes(now, &c);
        self.rtl_destination_check(now);
        self.navigate(now, &c);
    }

    /// PX4's RTL evaluates its destination every 2 s while it is not flying RTL (`RTL::
    /// on_inactive`): the rally points are read then, and each in a frame it cannot read says
    /// so (see [`crate::rtl`]).
    fn rtl_destination_check(&mut self, now: u64) {
        if now < self.rtl_check_next_us {
            return;
        }
        self.rtl_check_next_us = now + crate::rtl::CHECK_PERIOD_US;
        if self.commander.nav_state() == Mode::Rtl && self.commander.armed {
            return;
        }
        let rtl_type = self.params.i(P::RTL_TYPE);
        if matches!(rtl_type, 2 | 4) {
            return; // mission-based RTL: no rally points read
        }
        let dest = crate::rtl::destination(
            &self.mission.plans[2].items,
            &self.frame,
            self.home.map(|h| h.ned),
            self.body.pos_ned_m,
            rtl_type,
        );
        for _ in 0..dest.unsupported {
            self.io
                .critical(now, "navigator", crate::rtl::UNSUPPORTED_FRAME_TEXT);
        }
    }

    /// The boot texts due by now, home once the position is good, "Ready for takeoff!", the
    /// stick gestures.
    fn boot_timeline(&mut self, now: u64, c: &Conditions) {
        while let Some((ms, sev, text)) = self.cfg.boot_texts.get(self.boot_texts_done).cloned() {
            if now < ms * 1000 {
                break;
            }
            let sev =
                <mavlink::dialects::common::MavSeverity as num_traits::FromPrimitive>::from_u8(sev)
                    .unwrap_or(mavlink::dialects::common::MavSeverity::MAV_SEVERITY_INFO);
            self.io.log(now, sev, "commander", &text);
            self.boot_texts_done += 1;
        }
        if c.global_pos && self.home.is_none() && !self.commander.armed {
            self.set_home();
            self.io.print("INFO  [tone_alarm] home set".to_owned());
        }
        if !self.commander.ready_printed && self.commander.can_arm(c) {
            self.commander.ready_printed = true;
            self.io
                .print("INFO  [commander] Ready for takeoff!".to_owned());
        }
        self.stick_gesture(c);
    }

    /// The land detector: takeoff and landing detected as PX4's, with their texts and events.
    fn land_detector(&mut self, now: u64) {
        if !self.commander.armed {
            self.flew = false;
        } else if self.body.height_m() > FLEW_HEIGHT_M {
            self.flew = true;
        }
        let trig = if self.flew && self.cfg.vehicle == VehicleType::Hexarotor {
            HEX_LAND_DETECT_S
        } else if self.flew {
            LAND_DETECT_S
        } else {
            LAND_DETECT_UNFLOWN_S
        };
        // Holding a position (Hold, a mission item) or taking off keeps the thrust up: no
        // landing is detected (wait-for-text-with-reaction-x4: 5 s in Hold on the ground after
        // "Takeoff detected", still IN_AIR, then Land and "Landing detected" 1.5 s later).
        let held_up = self.nav.sp_type == SpType::Takeoff
            || (self.nav.sp_type == SpType::Position
                && !self.commander.nav_state().needs_manual_control()
                && self.commander.nav_state() != Mode::Offboard
                && self.nav.target().is_some());
        let mut contact = self.body.on_ground && !held_up;
        let mut thrust = self
            .nav
            .takeoff_thrust_s(now, self.params.f(P::COM_SPOOLUP_TIME))
            .is_some_and(|t| t >= TAKEOFF_DETECT_THRUST_S);
        let mut trig = trig;
        if self.cfg.vehicle.is_fixed_wing() {
            // `FixedwingLandDetector`: landed while the runway takeoff rolls; landed again
            // LNDFW_TRIG_TIME after touchdown (plane-mission-x4: 2.2 s, still rolling out).
            let rolling = self.nav.sp_type == SpType::Takeoff && !self.fw.rotated();
            contact = self.body.on_ground && !rolling;
            // "Takeoff detected" 2.0 s after arming in plane-mission-x4, at ~7 m/s on the roll
            // (where PX4's filtered speeds pass LNDFW_VEL_XY_MAX / LNDFW_AIRSPD_MAX).
            thrust = self.nav.sp_type == SpType::Takeoff
                && self.body.ground_speed_m_s() > FW_TAKEOFF_DETECT_M_S;
            trig = self.params.f(P::LNDFW_TRIG_TIME);
        }
        match self
            .commander
            .update_land_detector(now, contact, self.body.height_m(), trig, thrust)
        {
            Some(LandEvent::Takeoff) => {
                self.commander.taken_off = true;
                self.flight_info.1 = now;
                self.io.info(now, "commander", "Takeoff detected\t");
                self.io
                    .event(now, "commander_takeoff_detected", level::INFO_INFO, &[]);
                if self.cfg.relative_alt_steps {
                    self.alt_steps = AltSteps {
                        offset_m: 0.0,
                        next_us: now
                            + ALT_STEP_PERIOD_US / 2
                            + self.rng.next_u64() % ALT_STEP_PERIOD_US,
                        end_us: now + ALT_STEPS_FOR_US,
                        active: true,
                    };
                }
            }
            Some(LandEvent::Landing) => {
                self.io.info(now, "commander", "Landing detected\t");
                self.io
                    .event(now, "commander_landing_detected", level::INFO_INFO, &[]);
            }
            None => {}
        }
        self.update_alt_steps();
    }

    /// Auto-disarm after landing or when never taken off (COM_DISARM_LAND, COM_DISARM_PRFLT).
    fn auto_disarm(&mut self, now: u64) {
        let landed_amid_mission =
            self.commander.nav_state() == Mode::Mission && !self.mission.progress.finished;
        if let Some(reason) = self.commander.auto_disarm_due(
            now,
            self.params.f(P::COM_DISARM_LAND),
            self.params.f(P::COM_DISARM_PRFLT),
            landed_amid_mission,
        ) {
            self.disarm(reason, true);
        }
    }

    /// The failsafes: offboard or manual control lost, the geofence.
    fn failsafes(&mut self, now: u64, c: &Conditions) {
        let user = self.commander.user_mode;
        let watched = if user == Mode::Offboard {
            let loss = (self.params.f(P::COM_OF_LOSS_T).max(0.0) * 1e6) as u64;
            let lost = self
                .offboard
                .last_us
                .is_none_or(|t| now.saturating_sub(t) > loss);
            let action = match self.params.i(P::COM_OBL_RC_ACT) {
                0 => Mode::Position,
                1 => Mode::Altitude,
                2 => Mode::Manual,
                4 => Mode::Land,
                5 => Mode::Hold,
                _ => Mode::Rtl,
            };
            let action = if super::commander::can_run(action, c) {
                action
            } else {
                Mode::Rtl
            };
            Some((Failsafe::OffboardLost, lost, action))
        } else if user.needs_manual_control() {
            Some((Failsafe::ManualControlLost, !c.manual_control, Mode::Rtl))
        } else {
            None
        };
        self.geofence(now, c);
        self.battery_failsafe(now);
        self.datalink_failsafe(now);
        self.delayed_failsafe(now);
        if self.commander.update_failsafe(now, watched) {
            if self.commander.failsafe == Some(Failsafe::ManualControlLost) {
                self.io.critical(now, "commander", "Manual control lost\t");
            }
            self.io.critical(now, "failsafe", "Failsafe activated\t");
        }
    }

    /// The fence PX4 enforces: (re)loaded when the fence plan changes (`Geofence::updateFence`,
    /// with its texts for areas it drops), checked every 200 ms when GF_ACTION is not 0
    /// (`Navigator::geofence_breach_check`), and a breach acted on as commander does.
    ///
    /// A breach raises the failsafe once, when it begins (PX4's failsafe framework adds an
    /// action on the change to "failed"): Hold (at the position where it was seen, the
    /// navigator's own reposition with GF_PREDICT 0), Return, Land or flight termination; each
    /// says "Failsafe activated" (critical), Return and Land after a Hold of COM_FAIL_ACT_T
    /// ("Failsafe activated: entering Hold for 5 seconds", in which a mode change takes over,
    /// as measured); Warn says nothing more. Commander's health report
    /// says "Geofence: approaching or outside geofence" (critical) at most every 2 s while the
    /// breach stands, and arming is refused meanwhile. A mode change takes over (PX4 allows it
    /// always for Hold, Return and Land, never for termination): Land then lands. Measured on
    /// PX4 SITL: after a Hold at the fence line, a Land was overridden by a second "Failsafe
    /// activated" 1.3 s later, the vehicle's hold position wandering back and forth across the
    /// line (the breach ending and beginning again); the sim's position does not wander, so
    /// the breach stands and Land lands.
    fn geofence(&mut self, now: u64, c: &Conditions) {
        let crc = self.mission.plans[1].crc;
        if crc != self.fence_crc {
            self.fence_crc = crc;
            let action = GeofenceAction::from_param(self.params.i(P::GF_ACTION));
            let home = self.home.map(|h| [h.ned[0], h.ned[1]]);
            let flying = (action != GeofenceAction::None && !self.commander.landed)
                .then_some([self.body.pos_ned_m[0], self.body.pos_ned_m[1]]);
            let mut texts = Vec::new();
            self.fence = Fence::load(
                &self.mission.plans[1].items,
                &self.frame,
                home,
                flying,
                &mut texts,
            );
            for t in texts {
                self.io.critical(now, "navigator", t);
            }
        }
        self.mission_feasibility(now);
        let action = GeofenceAction::from_param(self.params.i(P::GF_ACTION));
        if action == GeofenceAction::None {
            self.fence_breached = false;
            return;
        }
        if now >= self.fence_check_next_us && c.global_pos {
            self.fence_check_next_us = now + crate::geofence::CHECK_INTERVAL_US;
            let breached = !self.fence_allows(self.body.pos_ned_m);
            let began = breached && !self.fence_breached;
            self.fence_breached = breached;
            if began {
                self.fence_report.1 = true;
                self.fence_report_due(now);
                let mode = match action {
                    GeofenceAction::Hold => Some(Mode::Hold),
                    GeofenceAction::Return => Some(Mode::Rtl),
                    GeofenceAction::Land => Some(Mode::Land),
                    GeofenceAction::Terminate => Some(super::commander::TERMINATION),
                    GeofenceAction::None | GeofenceAction::Warn => None,
                };
                if let Some(m) = mode.filter(|_| self.commander.armed) {
                    if m == Mode::Hold {
                        let here = self.body.pos_ned_m;
                        self.nav.reposition(super::navigator::Reposition {
                            ne: Some([here[0], here[1]]),
                            d: Some(here[2]),
                            speed: None,
                            yaw: None,
                        });
                    }
                    // Hold (UserTakeoverAllowed::AlwaysModeSwitchOnly) and termination (Never)
                    // act at once; Return and Land (Auto) after COM_FAIL_ACT_T's hold.
                    let delayable = matches!(m, Mode::Rtl | Mode::Land);
                    self.raise_failsafe(now, Failsafe::Geofence, m, delayable);
                }
            }
        }
        if !self.fence_breached {
            self.fence_report.1 = false;
        }
        self.fence_report_due(now);
    }

    /// Raise failsafe `kind` flying `mode`, as PX4's failsafe framework does: a worse action
    /// replaces a lighter one ("Failsafe activated"); with `delayable` (an action the user may
    /// take over from, UserTakeoverAllowed::Auto) and COM_FAIL_ACT_T above 0.1 s it holds
    /// first ("Failsafe activated: entering Hold for N seconds") and acts when the hold ends
    /// (with the worst action raised meanwhile).
    pub(super) fn raise_failsafe(&mut self, now: u64, kind: Failsafe, mode: Mode, delayable: bool) {
        if !self.commander.armed || self.commander.terminated() {
            return;
        }
        if let Some((due, pending, _)) = self.delayed {
            if severity(mode) > severity(pending) {
                self.delayed = Some((due, mode, kind));
            }
            return;
        }
        if self.commander.failsafe.is_some() {
            let current = self.commander.nav_state();
            if severity(mode) > severity(current) {
                self.commander.trigger_failsafe(kind, mode);
                self.io.critical(now, "failsafe", "Failsafe activated\t");
            }
            return;
        }
        let delay_s = self.params.f(P::COM_FAIL_ACT_T);
        if delayable && delay_s > 0.1 {
            self.commander.trigger_failsafe(kind, Mode::Hold);
            self.delayed = Some((now + (delay_s * 1e6) as u64, mode, kind));
            self.io.critical(
                now,
                "failsafe",
                &format!(
                    "Failsafe activated: entering Hold for {} seconds\t",
                    (delay_s + 0.5) as i32
                ),
            );
        } else {
            self.commander.trigger_failsafe(kind, mode);
            self.io.critical(now, "failsafe", "Failsafe activated\t");
        }
    }

    /// The held failsafe's action when COM_FAIL_ACT_T has passed (dropped when the user took
    /// over or the vehicle disarmed).
    fn delayed_failsafe(&mut self, now: u64) {
        let Some((due, mode, kind)) = self.delayed else {
            return;
        };
        if self.commander.failsafe.is_none() || !self.commander.armed {
            self.delayed = None;
        } else if now >= due {
            self.delayed = None;
            self.commander.trigger_failsafe(kind, mode);
            if severity(mode) > severity(Mode::Hold) {
                self.io.critical(now, "failsafe", "Failsafe activated\t");
            }
        }
    }

    /// PX4 SITL's battery and what its warnings do (`batteryCheck`, the failsafe's
    /// COM_LOW_BAT_ACT): each worse warning's text in the health report (at most every 2 s:
    /// "Low battery", "Critical battery" critical, "Emergency battery level" emergency; at
    /// EMERGENCY commander also says "System does not support shutdown", SITL having no power
    /// control), and, armed, COM_LOW_BAT_ACT's action: 0 none; 1 Return at CRITICAL and
    /// EMERGENCY; 2 Land at both; 3 (PX4 SITL's) Return at CRITICAL, Land at EMERGENCY, each
    /// after COM_FAIL_ACT_T's hold. Measured on PX4 SITL with SIM_BAT_MIN_PCT 2: "Low battery"
    /// at ~15 %, "Critical battery" and the hold at ~7 %, "System does not support shutdown"
    /// and "Emergency battery level" at ~5 %, then "Failsafe activated" and Land 5.3 s after
    /// the hold began.
    fn battery_failsafe(&mut self, now: u64) {
        use super::battery::Warning;
        let armed = self.commander.armed;
        let dt = self.tick_us as f32 * 1e-6;
        self.battery.step(&self.params, armed, dt);
        let w = self.battery.warning;
        if w != self.bat_seen {
            self.bat_seen = w;
            if w == Warning::Emergency && !armed && !self.commander_hung {
                // `battery_status_check`: disarmed, commander asks for a power-off in 60 s
                // and waits for it, answering nothing more (measured: MAV_CMD_INJECT_FAILURE
                // battery off on the pad, "Low battery", this text, HEARTBEAT system_status 0,
                // no acks, and 60 s later "Powering off NOW." and the process is gone).
                self.io.critical(
                    now,
                    "commander",
                    "Dangerously low battery! Shutting system down in 60 seconds\t",
                );
                self.commander_hung = true;
                self.shutdown_at_us = Some(now + 60_000_000);
            }
        }
        if !armed {
            if self.bat_acted == Warning::None && w >= Warning::Low {
                // Disarmed, the health report says the first level it sees.
                self.bat_report.1 = Some("Low battery\t");
            }
            self.bat_acted = w;
        } else if w > self.bat_acted {
            self.bat_acted = w;
            self.bat_report.1 = Some(match w {
                Warning::Low => "Low battery\t",
                Warning::Critical => "Critical battery\t",
                _ => "Emergency battery level\t",
            });
            if w == Warning::Emergency {
                self.io
                    .critical(now, "commander", "System does not support shutdown\t");
            }
            let act = self.params.i(P::COM_LOW_BAT_ACT);
            let mode = match (w, act) {
                (Warning::Critical, 1 | 3) | (Warning::Emergency, 1) => Some(Mode::Rtl),
                (Warning::Critical, 2) | (Warning::Emergency, 2 | 3) => Some(Mode::Land),
                _ => None,
            };
            if let Some(m) = mode {
                self.raise_failsafe(now, Failsafe::Battery, m, true);
            }
        }
        if let Some(text) = self.bat_report.1.filter(|_| !self.commander_hung) {
            if now >= self.bat_report.0 {
                self.bat_report = (now + 2_000_000, None);
                let sev = if text.starts_with("Emergency") {
                    mavlink::dialects::common::MavSeverity::MAV_SEVERITY_EMERGENCY
                } else {
                    mavlink::dialects::common::MavSeverity::MAV_SEVERITY_CRITICAL
                };
                self.io.log(now, sev, "commander", text);
            }
        }
    }

    /// Commander's data link check: no GCS HEARTBEAT for COM_DL_LOSS_T (after one was seen)
    /// is "Connection to ground station lost" (info), the next one "GCS connection regained";
    /// armed, NAV_DLL_ACT's failsafe (0 none, PX4 SITL's; 1 Hold, 2 Return, 3 Land, 5
    /// terminate, 6 disarm), not in Land or in a mode COM_DLL_EXCEPT excepts, cleared when the
    /// link is back. This follows PX4's source (`Commander::dataLinkCheck`); on PX4 SITL a
    /// client on the offboard link that stopped its HEARTBEATs for 40 s (disarmed, and armed
    /// with NAV_DLL_ACT 2) saw no reaction at all, neither text nor mode change — why is not
    /// known yet, so a test of this against real PX4 is owed.
    fn datalink_failsafe(&mut self, now: u64) {
        let loss_us = self.params.i(P::COM_DL_LOSS_T).max(0) as u64 * 1_000_000;
        let Some(last) = self.datalink.last_gcs_us else {
            return;
        };
        let lost = now.saturating_sub(last) > loss_us;
        if lost && !self.datalink.lost {
            self.datalink.lost = true;
            self.io
                .info(now, "commander", "Connection to ground station lost\t");
            let user = self.commander.user_mode;
            let except = self.params.i(P::COM_DLL_EXCEPT);
            let excepted = match user {
                Mode::Land | Mode::PrecisionLand => true,
                Mode::Mission => except & 1 != 0,
                Mode::Offboard => except & 4 != 0,
                m if m.is_auto() => except & 2 != 0,
                _ => false,
            };
            let action = match self.params.i(P::NAV_DLL_ACT) {
                1 => Some(Mode::Hold),
                2 => Some(Mode::Rtl),
                3 => Some(Mode::Land),
                5 => Some(super::commander::TERMINATION),
                6 => None, // disarm, below
                _ => return,
            };
            if excepted || !self.commander.armed {
                return;
            }
            match action {
                Some(m) => {
                    let delayable = matches!(m, Mode::Rtl | Mode::Land);
                    self.raise_failsafe(now, Failsafe::DataLink, m, delayable);
                }
                None => {
                    self.io.critical(now, "failsafe", "Failsafe activated\t");
                    self.disarm(ArmReason::Failsafe, true);
                }
            }
        } else if !lost && self.datalink.lost {
            self.datalink.lost = false;
            self.io.info(now, "commander", "GCS connection regained\t");
            if self.commander.failsafe == Some(Failsafe::DataLink) {
                // The action clears with its condition: back to the user's mode.
                self.commander.clear_failsafe();
                self.delayed = None;
            }
        }
    }

    /// The health report's breach text, when one is owed and 2 s have passed since the last
    /// (PX4 reports a change in the checks at most every 2 s).
    fn fence_report_due(&mut self, now: u64) {
        if self.fence_report.1 && now >= self.fence_report.0 {
            self.fence_report = (now + 2_000_000, false);
            self.io
                .critical(now, "commander", crate::geofence::BREACH_TEXT);
        }
    }

    /// PX4's mission feasibility check against the fence (`checkMissionAgainstGeofence`), run
    /// when the mission, the fence or home changes (`MissionBase::check_mission_valid`): every
    /// item with a position (its stored latitude/longitude, its altitude over home when
    /// relative) must be allowed, else "Geofence violation for waypoint N" (critical, N from 1)
    /// and the mission is not valid: Mission mode can neither arm nor start.
    fn mission_feasibility(&mut self, now: u64) {
        let key = (
            self.mission.plans[0].crc,
            self.mission.plans[1].crc,
            self.home_updates,
        );
        if key == self.mission_check_key {
            return;
        }
        self.mission_check_key = key;
        self.mission_outside_fence = false;
        let Some(home) = self.home else { return };
        let origin_alt = self.frame.origin().alt_amsl_m;
        let home_alt = origin_alt - home.ned[2];
        let bad = self.mission.plans[0].items.iter().position(|it| {
            let ne = self.frame.to_local_ne(it.x, it.y);
            let alt = if it.relative { home_alt + it.z } else { it.z };
            it.has_position() && !self.fence_allows([ne[0], ne[1], origin_alt - alt])
        });
        if let Some(i) = bad {
            self.mission_outside_fence = true;
            self.io.critical(
                now,
                "navigator",
                &format!("Geofence violation for waypoint {}\t", i + 1),
            );
        }
    }

    /// `checkPointAgainstAllGeofences` for local NED `p`: the areas, GF_MAX_HOR_DIST and
    /// GF_MAX_VER_DIST.
    pub(super) fn fence_allows(&self, p: [f32; 3]) -> bool {
        let limits = crate::geofence::FenceLimits {
            max_hor_m: self.params.f(P::GF_MAX_HOR_DIST),
            max_ver_m: self.params.f(P::GF_MAX_VER_DIST),
        };
        crate::geofence::allows(&self.fence, limits, self.home.map(|h| h.ned), p)
    }

    /// The navigator's setpoint for this tick, its events acted on, and the body stepped.
    fn navigate(&mut self, now: u64, c: &Conditions) {
        let mode = self.commander.nav_state();
        let armed = self.commander.armed;
        let spool = (self.params.f(P::COM_SPOOLUP_TIME).max(0.0) * 1e6) as u64;
        let spooled = armed && now.saturating_sub(self.commander.armed_at_us) >= spool;
        let limits = self.limits();
        let home_ned = self.home.map(|h| h.ned).unwrap_or([0.0; 3]);
        let sticks = c.manual_control.then_some(self.manual.sticks);
        let inputs = Inputs {
            now,
            mode,
            armed,
            spooled,
            landed: self.commander.landed,
            body: &self.body,
            home_ned,
            home_valid: self.home.is_some(),
            frame: &self.frame,
            params: &self.params,
            limits: &limits,
            sticks,
            offboard: self.offboard.sp,
        };
        let fixed_wing = self.cfg.vehicle.is_fixed_wing();
        let (sp, fw_sp, event) = if fixed_wing {
            let (f, e) = self.nav.update_fw(&inputs, &mut self.mission, &mut self.io);
            (ControlSetpoint::Idle, f, e)
        } else {
            let (s, e) = self.nav.update(&inputs, &mut self.mission, &mut self.io);
            (s, super::fixed_wing::FwSetpoint::Idle, e)
        };
        match event {
            Some(NavEvent::TakeoffDone)
                if armed && !self.commander.landed && mode == Mode::Takeoff =>
            {
                let next = if self.params.i(P::COM_TAKEOFF_ACT) == 1 && c.mission {
                    Mode::Mission
                } else {
                    Mode::Hold
                };
                self.commander.change_mode(next, true, c);
            }
            Some(NavEvent::MissionFinished)
                if armed && !self.commander.landed && mode == Mode::Mission =>
            {
                self.commander.change_mode(Mode::Hold, true, c);
            }
            Some(NavEvent::MissionFinished)
                if armed
                    && self.commander.landed
                    && mode == Mode::Mission
                    && !self.cfg.vehicle.is_fixed_wing() =>
            {
                // (The airplane waits COM_DISARM_LAND: "Disarmed by landing" 2.0 s after
                // "Mission finished, landed" in plane-mission-x4.)
                // The trace (box-x4): a mission that ends landed disarms at once, 0.1 s after
                // "Landing detected", not COM_DISARM_LAND later.
                self.disarm(ArmReason::Landing, false);
            }
            Some(NavEvent::MissionRtl) if self.commander.change_mode(Mode::Rtl, false, c) => {
                self.io.info(now, "commander", "Returning to launch\t");
            }
            _ => {}
        }
        // Flight termination: motors off, wherever the vehicle is.
        let sp = if self.commander.terminated() {
            ControlSetpoint::Idle
        } else {
            sp
        };
        let dt = self.tick_us as f32 * 1e-6;
        if fixed_wing {
            // The airplane's throttle ramp starts at arming (RWTO_RAMP_TIME; plane-mission-x4
            // rolls at 1.2 m/s 1.0 s after arming): no spool-up wait.
            let engine = armed && !self.commander.terminated();
            let lim = Navigator::fw_limits(&self.params);
            super::fixed_wing::step(&mut self.body, &mut self.fw, &fw_sp, engine, &lim, dt);
            return;
        }
        let thrust = spooled && !matches!(sp, ControlSetpoint::Idle);
        self.body.step(&sp, thrust, &limits, dt);
    }

    fn update_alt_steps(&mut self) {
        let now = self.now_us;
        if !self.alt_steps.active || now < self.alt_steps.next_us {
            return;
        }
        if now >= self.alt_steps.end_us {
            self.alt_steps.active = false;
            self.alt_steps.offset_m = 0.0;
            return;
        }
        // PX4 (SIH, docs/px4-wire.md §Height, fixtures/px4-traces): HOME_POSITION.altitude
        // re-estimated every ~2 s in flight, between ~0.6 m below and ~1.25 m above the pad's
        // altitude, often by more than 1 m at once; relative_alt (= alt − home) read 3.7 .. 5.6 m
        // in a 5 m hover. Modelled as two bands, high [1.0, 1.25] m and low [−0.6, 0] m: at each
        // update the offset jumps to the other band (a step of ≥ 1 m) half of the time, else moves
        // within its band.
        let r = self.rng.next_u64();
        let frac = (r % 1000) as f32 / 1000.0;
        let high = self.alt_steps.offset_m > 0.5;
        let jump = (r >> 20) & 1 == 0;
        self.alt_steps.offset_m = if high != jump {
            1.0 + 0.25 * frac
        } else {
            -0.6 + 0.6 * frac
        };
        self.alt_steps.next_us = now + ALT_STEP_PERIOD_US;
        self.streams.home_changed = true;
    }

    fn stick_gesture(&mut self, c: &Conditions) {
        let now = self.now_us;
        if !c.manual_control {
            self.manual.gesture_since_us = None;
            self.manual.gesture_fired = false;
            return;
        }
        let s = self.manual.sticks.clamped();
        let low = s.throttle < GESTURE_THROTTLE;
        let want = if low && s.yaw > GESTURE_YAW {
            Some(true)
        } else if low && s.yaw < -GESTURE_YAW {
            Some(false)
        } else {
            None
        };
        match want {
            None => {
                self.manual.gesture_since_us = None;
                self.manual.gesture_fired = false;
            }
            Some(arm) => {
                if self.manual.gesture_since_us.is_none() || self.manual.gesture_arm != arm {
                    self.manual.gesture_since_us = Some(now);
                    self.manual.gesture_arm = arm;
                    self.manual.gesture_fired = false;
                }
                let hold = STICK_GESTURE_HOLD_US;
                let since = self.manual.gesture_since_us.unwrap_or(now);
                if !self.manual.gesture_fired && now.saturating_sub(since) >= hold {
                    self.manual.gesture_fired = true;
                    if arm {
                        self.arm(ArmReason::StickGesture, true);
                    } else {
                        self.disarm(ArmReason::StickGesture, false);
                    }
                }
            }
        }
    }

    /// Arm with PX4's checks and side effects; returns whether the vehicle is armed.
    pub(super) fn arm(&mut self, reason: ArmReason, run_checks: bool) -> bool {
        if self.commander.armed {
            return true;
        }
        let c = self.conditions();
        let throttle = c
            .manual_control
            .then_some(self.manual.sticks.clamped().throttle);
        let refusal = self.refusal.clone();
        let now = self.now_us;
        let req = ArmRequest {
            reason,
            run_checks,
            conditions: &c,
            throttle,
            refusal: refusal.as_deref(),
        };
        if !self.commander.arm(now, req, &mut self.io) {
            return false;
        }
        self.flight_info = (now, 0);
        if self.params.i(P::COM_HOME_EN) != 0 {
            self.set_home();
        }
        self.alt_steps = AltSteps::default();
        self.nav.on_armed(reason);
        let secs = now / 1_000_000;
        self.io.info(
            now,
            "logger",
            &format!(
                "[logger] ./log/2024-01-01/{:02}_{:02}_{:02}.ulg\t",
                (12 + secs / 3600) % 24,
                (secs / 60) % 60,
                secs % 60
            ),
        );
        self.gimbal_burst = Some((now, 0));
        true
    }

    /// Disarm; returns whether the vehicle is now disarmed.
    pub(super) fn disarm(&mut self, reason: ArmReason, forced: bool) -> bool {
        let was = self.commander.armed;
        let now = self.now_us;
        let ok = self.commander.disarm(now, reason, forced, &mut self.io);
        if ok && was {
            // Commander zeroes the arming and takeoff times at disarm (FLIGHT_INFORMATION).
            self.flight_info = (0, 0);
            self.nav.reactivate();
            self.params
                .set_int(P::COM_FLIGHT_UUID, self.commander.flights as i32);
            self.streams.unsolicited_param = self.params.row(P::COM_FLIGHT_UUID);
            self.alt_steps.active = false;
        }
        ok
    }

    /// MAV_LANDED_STATE as EXTENDED_SYS_STATE reports it.
    pub(super) fn landed_state(&self) -> u8 {
        if self.commander.landed {
            1
        } else {
            match self.nav.sp_type {
                SpType::Takeoff => 3,
                SpType::Land => 4,
                _ => 2,
            }
        }
    }

    pub(super) fn mission_view(&self) -> VehicleView {
        VehicleView {
            in_mission_mode: self.commander.nav_state() == Mode::Mission,
        }
    }
}

/// PX4's order of failsafe actions (a worse one replaces a lighter one).
fn severity(m: Mode) -> u8 {
    match m {
        Mode::Hold => 1,
        Mode::Rtl => 2,
        Mode::Land => 3,
        super::commander::TERMINATION => 5,
        _ => 0,
    }
}
