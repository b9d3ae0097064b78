//! The latest of everything the target autopilot said, and nothing anyone else said.
//!
//! [`Telemetry::handle`] keeps the newest message of each type from the target system's
//! autopilot component only: PX4 also puts its own gimbal/camera COMMAND_LONGs and other
//! components' traffic on the link, and messages addressed to someone else (a COMMAND_ACK for
//! another GCS) must not be mistaken for ours. Conditions, the offboard machine and snapshots
//! all read from here.

mod clock;
mod height;
mod snapshot;
mod text;
mod typed;

pub use clock::{SimClock, REBOOT_BACKSTEP_MS};
pub use height::{HeightSource, GROUND_TRUTH_FRESH_MS};
/// A STATUSTEXT's MAV_SEVERITY, by name ([`Text::level`]).
pub use mavlink::dialects::common::MavSeverity as Severity;
pub use snapshot::{error_text, LandedState, Snapshot, MAX_ERROR_LEN};
pub(crate) use text::fit;
pub use text::{Text, TextLog, MAX_TEXT_LEN, TEXT_FLUSH_MS};
pub use typed::{heading_rad, Attitude, Battery, Gps, GpsFix, Home, LocalNed, Position};

use crate::mode::Mode;
use crate::msg::{Frame, Msg};
use crate::time::Instant;
use crate::vehicle::{VehicleKind, VtolState};
use height::PadHeights;
use mavlink::dialects::common as mav;

/// PX4's autopilot component id, assumed until the first HEARTBEAT says otherwise.
pub const AUTOPILOT_COMPID: u8 = 1;
/// SYS_STATUS sensor bit PX4 sets once its prearm checks pass.
pub const PREARM_CHECK_BIT: u32 = 0x1000_0000;
/// Height within which a vehicle that is disarmed counts as on the pad, m (the `landed` condition).
pub const PAD_TOLERANCE_M: f32 = 0.3;

/// Who we talk to and who we are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct LinkIds {
    /// The autopilot's system id (PX4 SITL instance N: N + 1).
    pub target_sysid: u8,
    /// Our own system id (a GCS: 255).
    pub own_sysid: u8,
    /// Our own component id (240, as pymavlink, or 190 for a mission planner).
    pub own_compid: u8,
}

impl Default for LinkIds {
    fn default() -> Self {
        LinkIds {
            target_sysid: 1,
            own_sysid: 255,
            own_compid: 240,
        }
    }
}

/// Cache of the target autopilot's telemetry; `TEXTS` STATUSTEXTs are kept.
#[derive(Debug, Clone)]
pub struct Telemetry<const TEXTS: usize> {
    ids: LinkIds,
    target_compid: u8,
    /// The caller chose the component: a HEARTBEAT of another never replaces it.
    compid_pinned: bool,
    heartbeat: Option<mav::HEARTBEAT_DATA>,
    sys_status: Option<mav::SYS_STATUS_DATA>,
    global_position: Option<mav::GLOBAL_POSITION_INT_DATA>,
    local_position: Option<mav::LOCAL_POSITION_NED_DATA>,
    vfr_hud: Option<mav::VFR_HUD_DATA>,
    attitude: Option<mav::ATTITUDE_DATA>,
    extended_sys_state: Option<mav::EXTENDED_SYS_STATE_DATA>,
    home: Option<mav::HOME_POSITION_DATA>,
    mission_current: Option<mav::MISSION_CURRENT_DATA>,
    mission_item_reached: Option<u16>,
    command_ack: Option<mav::COMMAND_ACK_DATA>,
    param_value: Option<mav::PARAM_VALUE_DATA>,
    param_error: Option<mav::PARAM_ERROR_DATA>,
    ground_truth: Option<mav::HIL_STATE_QUATERNION_DATA>,
    autopilot_version: Option<mav::AUTOPILOT_VERSION_DATA>,
    #[cfg(feature = "extra-conditions")]
    gps_raw: Option<mav::GPS_RAW_INT_DATA>,
    heights: PadHeights,
    clock: SimClock,
    texts: TextLog<TEXTS>,
    last_rx: Option<Instant>,
    last_heartbeat_rx: Option<Instant>,
    accepted: u32,
    ignored: u32,
}

impl<const TEXTS: usize> Telemetry<TEXTS> {
    /// Empty telemetry for the link `ids`.
    // Not inlined: built once, and out of line its stores are short offsets into the
    // return slot rather than long ones into the caller's far larger struct (thumbv7em).
    #[inline(never)]
    pub fn new(ids: LinkIds) -> Self {
        Telemetry {
            ids,
            target_compid: AUTOPILOT_COMPID,
            compid_pinned: false,
            heartbeat: None,
            sys_status: None,
            global_position: None,
            local_position: None,
            vfr_hud: None,
            attitude: None,
            extended_sys_state: None,
            home: None,
            mission_current: None,
            mission_item_reached: None,
            command_ack: None,
            param_value: None,
            param_error: None,
            ground_truth: None,
            autopilot_version: None,
            #[cfg(feature = "extra-conditions")]
            gps_raw: None,
            heights: PadHeights::default(),
            clock: SimClock::new(),
            texts: TextLog::new(),
            last_rx: None,
            last_heartbeat_rx: None,
            accepted: 0,
            ignored: 0,
        }
    }

    /// Take frames only from component `compid` of the target system (and address it), from
    /// the start: what a caller who knows the autopilot's component sets.
    pub fn pin_target_compid(&mut self, compid: u8) {
        self.target_compid = compid;
        self.compid_pinned = true;
    }

    /// Link ids this cache filters on.
    pub fn ids(&self) -> LinkIds {
        self.ids
    }

    /// Whether `frame` is from the target autopilot and, if it names a recipient, for us.
    #[allow(deprecated)] // legacy MISSION_REQUEST is still PX4's
    pub fn is_for_us(&self, frame: &Frame) -> bool {
        let h = &frame.header;
        if h.sysid != self.ids.target_sysid {
            return false;
        }
        if let Msg::Heartbeat(hb) = &frame.msg {
            // Other components of the vehicle (camera, gimbal) heartbeat too; only an autopilot's counts.
            return hb.autopilot != mav::MavAutopilot::MAV_AUTOPILOT_INVALID
                && ((self.heartbeat.is_none() && !self.compid_pinned)
                    || h.compid == self.target_compid);
        }
        if h.compid != self.target_compid {
            return false;
        }
        let target = match &frame.msg {
            Msg::CommandAck(m) => Some((m.target_system, m.target_component)),
            Msg::MissionRequestInt(m) => Some((m.target_system, m.target_component)),
            Msg::MissionRequest(m) => Some((m.target_system, m.target_component)),
            Msg::MissionAck(m) => Some((m.target_system, m.target_component)),
            Msg::MissionCount(m) => Some((m.target_system, m.target_component)),
            Msg::MissionItemInt(m) => Some((m.target_system, m.target_component)),
            _ => None,
        };
        match target {
            Some((sys, comp)) => {
                (sys == 0 || sys == self.ids.own_sysid)
                    && (comp == 0 || comp == self.ids.own_compid)
            }
            None => true,
        }
    }

    /// Take in one decoded frame; returns whether it was from the target and for us.
    ///
    /// Ignored frames change nothing but a counter.
    pub fn handle(&mut self, now: Instant, frame: &Frame) -> bool {
        if !self.is_for_us(frame) {
            self.ignored = self.ignored.wrapping_add(1);
            return false;
        }
        self.accepted = self.accepted.wrapping_add(1);
        self.last_rx = Some(now);
        match &frame.msg {
            Msg::Heartbeat(m) => {
                self.target_compid = frame.header.compid;
                self.last_heartbeat_rx = Some(now);
                self.heartbeat = Some(m.clone());
                self.heights.on_armed(
                    m.base_mode
                        .contains(mav::MavModeFlag::MAV_MODE_FLAG_SAFETY_ARMED),
                    self.clock.now_ms(),
                );
            }
            Msg::SysStatus(m) => self.sys_status = Some(m.clone()),
            Msg::SystemTime(m) => self.clock.observe(m.time_boot_ms),
            Msg::GlobalPositionInt(m) => {
                self.clock.observe(m.time_boot_ms);
                self.heights.on_amsl(m.alt);
                self.global_position = Some(m.clone());
            }
            Msg::LocalPositionNed(m) => {
                self.clock.observe(m.time_boot_ms);
                self.local_position = Some(m.clone());
            }
            Msg::VfrHud(m) => self.vfr_hud = Some(m.clone()),
            Msg::Attitude(m) => {
                self.clock.observe(m.time_boot_ms);
                self.attitude = Some(m.clone());
            }
            Msg::ExtendedSysState(m) => self.extended_sys_state = Some(m.clone()),
            Msg::HomePosition(m) => self.home = Some(m.clone()),
            Msg::MissionCurrent(m) => self.mission_current = Some(m.clone()),
            Msg::MissionItemReached(m) => self.mission_item_reached = Some(m.seq),
            Msg::CommandAck(m) => self.command_ack = Some(m.clone()),
            Msg::ParamValue(m) => self.param_value = Some(m.clone()),
            Msg::ParamError(m) => self.param_error = Some(m.clone()),
            #[cfg(feature = "ground-truth")]
            Msg::HilStateQuaternion(m) => {
                // Dated by the autopilot clock at arrival, not by its own time_usec: the
                // freshness rule then holds whatever clock the simulator stamps it with.
                self.heights.on_truth(m.alt, self.clock.now_ms());
                self.ground_truth = Some(m.clone());
            }
            #[cfg(feature = "ground-truth")]
            Msg::AutopilotVersion(m) => self.autopilot_version = Some(m.clone()),
            // Not decoded without the feature (`Msg::decode` skips them), so never stored.
            #[cfg(not(feature = "ground-truth"))]
            Msg::HilStateQuaternion(_) | Msg::AutopilotVersion(_) => {}
            #[cfg(feature = "extra-conditions")]
            Msg::GpsRawInt(m) => self.gps_raw = Some(m.clone()),
            Msg::Statustext(m) => {
                let sim = self.clock.now_ms();
                self.texts
                    .push_chunk(m.severity as u8, &m.text[..], m.id, m.chunk_seq, sim);
            }
            Msg::MissionRequestInt(_)
            | Msg::MissionRequest(_)
            | Msg::MissionAck(_)
            | Msg::MissionCount(_)
            | Msg::MissionItemInt(_) => {}
        }
        if let Some(t) = self.clock.now_ms() {
            self.texts.expire(t);
        }
        true
    }

    /// The autopilot clock, ms (see [`SimClock`]); `None` before the first timestamp.
    pub fn sim_ms(&self) -> Option<u64> {
        self.clock.now_ms()
    }

    /// The monotonic autopilot clock and its reboot count.
    pub fn clock(&self) -> &SimClock {
        &self.clock
    }

    /// Whether a HEARTBEAT from the target autopilot has arrived.
    pub fn connected(&self) -> bool {
        self.heartbeat.is_some()
    }

    /// The autopilot's component id (pinned by the caller, else learned from its first
    /// HEARTBEAT; 1 until then).
    pub fn target_compid(&self) -> u8 {
        self.target_compid
    }

    /// Driver time of the last accepted frame.
    pub fn last_rx(&self) -> Option<Instant> {
        self.last_rx
    }

    /// Driver time of the last autopilot HEARTBEAT.
    pub fn last_heartbeat_rx(&self) -> Option<Instant> {
        self.last_heartbeat_rx
    }

    /// Frames accepted and ignored (not from the target, or addressed to someone else).
    pub fn counts(&self) -> (u32, u32) {
        (self.accepted, self.ignored)
    }

    /// Latest HEARTBEAT.
    pub fn heartbeat(&self) -> Option<&mav::HEARTBEAT_DATA> {
        self.heartbeat.as_ref()
    }

    /// Latest SYS_STATUS.
    pub fn sys_status(&self) -> Option<&mav::SYS_STATUS_DATA> {
        self.sys_status.as_ref()
    }

    /// Latest GLOBAL_POSITION_INT.
    pub fn global_position(&self) -> Option<&mav::GLOBAL_POSITION_INT_DATA> {
        self.global_position.as_ref()
    }

    /// Latest LOCAL_POSITION_NED.
    pub fn local_position(&self) -> Option<&mav::LOCAL_POSITION_NED_DATA> {
        self.local_position.as_ref()
    }

    /// Latest VFR_HUD.
    pub fn vfr_hud(&self) -> Option<&mav::VFR_HUD_DATA> {
        self.vfr_hud.as_ref()
    }

    /// Latest ATTITUDE.
    pub fn attitude(&self) -> Option<&mav::ATTITUDE_DATA> {
        self.attitude.as_ref()
    }

    /// Latest EXTENDED_SYS_STATE.
    pub fn extended_sys_state(&self) -> Option<&mav::EXTENDED_SYS_STATE_DATA> {
        self.extended_sys_state.as_ref()
    }

    /// Latest HOME_POSITION.
    pub fn home(&self) -> Option<&mav::HOME_POSITION_DATA> {
        self.home.as_ref()
    }

    /// Latest MISSION_CURRENT.
    pub fn mission_current(&self) -> Option<&mav::MISSION_CURRENT_DATA> {
        self.mission_current.as_ref()
    }

    /// `seq` of the latest MISSION_ITEM_REACHED (not deduplicated; see the offboard machine).
    pub fn mission_item_reached(&self) -> Option<u16> {
        self.mission_item_reached
    }

    /// Latest COMMAND_ACK addressed to us.
    pub fn command_ack(&self) -> Option<&mav::COMMAND_ACK_DATA> {
        self.command_ack.as_ref()
    }

    /// Latest PARAM_VALUE.
    pub fn param_value(&self) -> Option<&mav::PARAM_VALUE_DATA> {
        self.param_value.as_ref()
    }

    /// Latest PARAM_ERROR: why the vehicle refused a parameter read or set.
    pub fn param_error(&self) -> Option<&mav::PARAM_ERROR_DATA> {
        self.param_error.as_ref()
    }

    /// Latest HIL_STATE_QUATERNION: a simulator's true state (PX4 SITL, when asked).
    pub fn ground_truth(&self) -> Option<&mav::HIL_STATE_QUATERNION_DATA> {
        self.ground_truth.as_ref()
    }

    /// Whether the newest ground-truth sample is at most [`GROUND_TRUTH_FRESH_MS`] of sim time
    /// old, so the height comes from it.
    pub fn ground_truth_fresh(&self) -> bool {
        self.heights.truth_fresh(self.clock.now_ms())
    }

    /// Latest AUTOPILOT_VERSION.
    pub fn autopilot_version(&self) -> Option<&mav::AUTOPILOT_VERSION_DATA> {
        self.autopilot_version.as_ref()
    }

    /// Latest GPS_RAW_INT (decoded with the `extra-conditions` feature only).
    #[cfg(feature = "extra-conditions")]
    pub fn gps_raw(&self) -> Option<&mav::GPS_RAW_INT_DATA> {
        self.gps_raw.as_ref()
    }

    /// Position in degrees and metres (GLOBAL_POSITION_INT); `None` before the first.
    pub fn position(&self) -> Option<Position> {
        self.global_position.as_ref().map(Position::from_mav)
    }

    /// Local NED position and velocity (LOCAL_POSITION_NED); `None` before the first.
    pub fn local_ned(&self) -> Option<LocalNed> {
        self.local_position.as_ref().map(LocalNed::from_mav)
    }

    /// Roll, pitch and NED yaw in radians (ATTITUDE); `None` before the first.
    pub fn attitude_rad(&self) -> Option<Attitude> {
        self.attitude.as_ref().map(Attitude::from_mav)
    }

    /// Compass heading, rad in [0, 2π) (ATTITUDE.yaw); `None` before the first ATTITUDE.
    pub fn heading_rad(&self) -> Option<f32> {
        self.attitude.as_ref().map(|a| heading_rad(a.yaw))
    }

    /// Ground speed, m/s (VFR_HUD.groundspeed); `None` before the first VFR_HUD.
    pub fn groundspeed_m_s(&self) -> Option<f32> {
        self.vfr_hud.as_ref().map(|v| v.groundspeed)
    }

    /// Climb rate, m/s, up positive (VFR_HUD.climb); `None` before the first VFR_HUD.
    pub fn climb_rate_m_s(&self) -> Option<f32> {
        self.vfr_hud.as_ref().map(|v| v.climb)
    }

    /// Battery voltage and charge (SYS_STATUS); `None` before the first SYS_STATUS.
    pub fn battery(&self) -> Option<Battery> {
        self.sys_status.as_ref().map(Battery::from_mav)
    }

    /// GPS fix and satellites (GPS_RAW_INT); `None` before the first, and always without the
    /// `extra-conditions` feature (which decodes that message).
    pub fn gps(&self) -> Option<Gps> {
        #[cfg(feature = "extra-conditions")]
        {
            self.gps_raw.as_ref().map(Gps::from_mav)
        }
        #[cfg(not(feature = "extra-conditions"))]
        {
            None
        }
    }

    /// Home in degrees and metres (HOME_POSITION); `None` before PX4 reports it.
    pub fn home_position(&self) -> Option<Home> {
        self.home.as_ref().map(Home::from_mav)
    }

    /// The STATUSTEXT log.
    pub fn texts(&self) -> &TextLog<TEXTS> {
        &self.texts
    }

    /// Armed flag of the latest HEARTBEAT; `None` before one.
    pub fn armed(&self) -> Option<bool> {
        self.heartbeat.as_ref().map(|hb| {
            hb.base_mode
                .contains(mav::MavModeFlag::MAV_MODE_FLAG_SAFETY_ARMED)
        })
    }

    /// Flight mode of the latest HEARTBEAT.
    pub fn mode(&self) -> Option<Mode> {
        self.heartbeat
            .as_ref()
            .map(|hb| Mode::from_custom_mode(hb.custom_mode))
    }

    /// Whether PX4 reports its prearm checks passed (SYS_STATUS health bit 0x10000000).
    pub fn prearm_ok(&self) -> Option<bool> {
        self.sys_status
            .as_ref()
            .map(|s| s.onboard_control_sensors_health.bits() & PREARM_CHECK_BIT != 0)
    }

    /// GLOBAL_POSITION_INT.relative_alt in m (PX4's estimate above a home whose altitude PX4
    /// keeps re-estimating in flight: it jumps; the height does not read it).
    pub fn relative_alt_m(&self) -> Option<f32> {
        self.global_position
            .as_ref()
            .map(|g| g.relative_alt as f32 / 1000.0)
    }

    /// Height above the pad, m (the `altitude` condition): fresh ground truth minus its value at
    /// arming, else GLOBAL_POSITION_INT.alt minus its value at arming (see [`HeightSource`]).
    pub fn height_m(&self) -> Option<f32> {
        self.height().map(|(m, _)| m)
    }

    /// Where [`Telemetry::height_m`] comes from now; `None` while there is no height.
    pub fn height_source(&self) -> Option<HeightSource> {
        self.height().map(|(_, s)| s)
    }

    /// The height above the pad, m, with its source.
    pub fn height(&self) -> Option<(f32, HeightSource)> {
        self.heights.height(self.clock.now_ms())
    }

    /// VFR_HUD.airspeed, m/s.
    pub fn airspeed_m_s(&self) -> Option<f32> {
        self.vfr_hud.as_ref().map(|v| v.airspeed)
    }

    /// MISSION_CURRENT.seq.
    pub fn waypoint(&self) -> Option<u16> {
        self.mission_current.as_ref().map(|m| m.seq)
    }

    /// EXTENDED_SYS_STATE.landed_state.
    pub fn landed_state(&self) -> LandedState {
        self.extended_sys_state
            .as_ref()
            .map(|e| LandedState::from_mav(e.landed_state as u8))
            .unwrap_or_default()
    }

    /// EXTENDED_SYS_STATE.vtol_state ([`VtolState::Undefined`] before one, and on a vehicle
    /// that is no VTOL).
    pub fn vtol_state(&self) -> VtolState {
        self.extended_sys_state
            .as_ref()
            .map(|e| VtolState::from_mav(e.vtol_state as u8))
            .unwrap_or_default()
    }

    /// The class of the vehicle's HEARTBEAT.type; `None` before the first heartbeat.
    pub fn vehicle_kind(&self) -> Option<VehicleKind> {
        self.heartbeat()
            .map(|h| VehicleKind::from_mav_type(h.mavtype as u8))
    }

    /// On the ground: EXTENDED_SYS_STATE says so; before that message has ever arrived,
    /// disarmed and within [`PAD_TOLERANCE_M`] of the pad. `None` when neither can be told.
    pub fn landed(&self) -> Option<bool> {
        if let Some(e) = &self.extended_sys_state {
            return Some(e.landed_state == mav::MavLandedState::MAV_LANDED_STATE_ON_GROUND);
        }
        let armed = self.armed()?;
        let h = self.height_m()?;
        Some(!armed && libm::fabsf(h) <= PAD_TOLERANCE_M)
    }

    /// Capture the current state, with `error` when the run has died.
    pub fn snapshot(&self, error: Option<&str>) -> Snapshot {
        let height = self.height();
        Snapshot {
            sim_ms: self.sim_ms(),
            seq: self.texts.last_seq(),
            armed: self.armed().unwrap_or(false),
            mode: self.mode(),
            height_m: height.map(|(m, _)| m),
            height_source: height.map(|(_, s)| s),
            airspeed_m_s: self.airspeed_m_s(),
            waypoint: self.waypoint(),
            landed: self.landed_state(),
            last_text: self.texts.last().cloned(),
            error: error.map(error_text),
        }
    }
}
