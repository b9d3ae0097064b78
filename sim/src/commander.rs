//! PX4's commander: arming, the user's mode intention, mode availability, auto-disarm,
//! failsafes and the land detector.
//!
//! Mode changes follow `UserModeIntention::change`: always allowed while disarmed, allowed when
//! armed only if the mode can run now (its inputs are present); Land is forced. On disarm the
//! mode reverts to the last intended mode that does not prevent arming (so Land and RTL fall
//! back to, typically, Hold). Arming runs the checks for the current mode; auto-disarm fires
//! COM_DISARM_PRFLT after arming without takeoff and COM_DISARM_LAND after landing.

use super::events::level;
use super::io::Io;
use nexus_core::Mode;

/// Everything mode availability and arming checks depend on, computed by the vehicle each tick.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Conditions {
    /// Boot-time prearm checks have passed (sensors and estimator settled).
    pub boot_done: bool,
    /// The later boot-time checks of Mission mode have passed too.
    pub mission_boot_done: bool,
    /// Global position estimate valid.
    pub global_pos: bool,
    /// Local position estimate valid.
    pub local_pos: bool,
    /// Home position set.
    pub home: bool,
    /// A live manual-control source (MANUAL_CONTROL within COM_RC_LOSS_T, COM_RC_IN_MODE ok).
    pub manual_control: bool,
    /// An established offboard setpoint stream.
    pub offboard: bool,
    /// A valid mission is stored.
    pub mission: bool,
    /// The refuse-arming fault is injected.
    pub refuse_arming: bool,
    /// The geofence is breached (with GF_ACTION not 0): PX4's geofence check fails for every
    /// mode.
    pub fence_breached: bool,
    /// The battery warning is CRITICAL or worse: PX4's battery check fails for every mode
    /// (or commander hangs waiting for a power-off).
    pub battery_critical: bool,
}

/// Why the vehicle was armed or disarmed (PX4's `arm_disarm_reason_t` wording).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArmReason {
    /// A MAVLink command.
    ExternalCommand,
    /// The throttle-down, yaw-right (or left) stick gesture.
    StickGesture,
    /// MAV_CMD_MISSION_START.
    MissionStart,
    /// Landed for COM_DISARM_LAND.
    Landing,
    /// Armed on the ground for COM_DISARM_PRFLT without taking off.
    Preflight,
    /// A failsafe's disarm (NAV_DLL_ACT 6).
    Failsafe,
}

impl ArmReason {
    /// PX4's `arm_disarm_reason_str`.
    pub fn text(self) -> &'static str {
        match self {
            ArmReason::ExternalCommand => "external command",
            ArmReason::StickGesture => "Stick gesture",
            ArmReason::MissionStart => "mission start",
            ArmReason::Landing => "landing",
            ArmReason::Preflight => "auto preflight disarming",
            ArmReason::Failsafe => "failsafe",
        }
    }

    /// PX4's `arm_disarm_reason_t` value, the argument of its armed/disarmed events (4 and 6
    /// in box-x4: external command, landing).
    pub fn px4_code(self) -> u8 {
        match self {
            ArmReason::StickGesture => 1,
            ArmReason::ExternalCommand => 4,
            ArmReason::MissionStart => 5,
            ArmReason::Landing => 6,
            ArmReason::Preflight => 7,
            ArmReason::Failsafe => 14,
        }
    }
}

/// An arming attempt.
#[derive(Debug, Clone, Copy)]
pub struct ArmRequest<'a> {
    /// Why.
    pub reason: ArmReason,
    /// Run the prearm checks (false: forced).
    pub run_checks: bool,
    /// Current conditions.
    pub conditions: &'a Conditions,
    /// The live throttle stick in [0, 1], if manual control is live.
    pub throttle: Option<f32>,
    /// The injected refusal text, if any.
    pub refusal: Option<&'a str>,
}

/// An active failsafe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failsafe {
    /// The offboard setpoint stream stopped.
    OffboardLost,
    /// The manual-control stream stopped while flying a manual mode.
    ManualControlLost,
    /// The vehicle left the geofence (GF_ACTION Hold, Return, Land or Terminate).
    Geofence,
    /// The battery warning got worse (COM_LOW_BAT_ACT).
    Battery,
    /// The ground station link was lost (NAV_DLL_ACT).
    DataLink,
}

/// PX4's flight termination (NAVIGATION_STATE_TERMINATION, custom main mode 10): motors off.
pub const TERMINATION: Mode = Mode::Unknown { main: 10, sub: 0 };

/// PX4's `nav_state_names` for the modes the simulator knows.
pub fn nav_state_name(m: Mode) -> &'static str {
    match m {
        Mode::Manual => "Manual",
        Mode::Altitude => "Altitude",
        Mode::Position | Mode::PositionSlow => "Position",
        Mode::Orbit => "Orbit",
        Mode::Mission => "Mission",
        Mode::Hold => "Hold",
        Mode::Rtl => "Return",
        Mode::Land => "Land",
        Mode::Takeoff => "Takeoff",
        Mode::Offboard => "Offboard",
        Mode::Stabilized => "Stabilized",
        Mode::Acro => "Acro",
        Mode::FollowMe => "Follow Target",
        Mode::PrecisionLand => "Precision Land",
        Mode::VtolTakeoff => "VTOL Takeoff",
        TERMINATION => "Termination",
        Mode::Ready | Mode::Unknown { .. } => "Unknown",
    }
}

/// Whether `m` can run now (PX4 `canRun`: its required inputs are present).
pub fn can_run(m: Mode, c: &Conditions) -> bool {
    match m {
        Mode::Manual | Mode::Stabilized | Mode::Acro => c.manual_control,
        Mode::Altitude => c.manual_control && c.local_pos,
        Mode::Position | Mode::PositionSlow | Mode::Orbit => c.manual_control && c.global_pos,
        Mode::Mission => c.mission && c.global_pos && c.home,
        Mode::Offboard => c.offboard && c.local_pos,
        Mode::Rtl => c.global_pos && c.home,
        Mode::Takeoff | Mode::Hold | Mode::Land | Mode::PrecisionLand | Mode::FollowMe => {
            c.global_pos
        }
        Mode::VtolTakeoff | Mode::Ready | Mode::Unknown { .. } => false,
    }
}

/// Modes PX4 will not arm in (`mode_req_prevent_arming`).
pub fn prevents_arming(m: Mode) -> bool {
    matches!(m, Mode::Land | Mode::PrecisionLand | Mode::Rtl)
}

/// The commander state.
#[derive(Debug, Clone)]
pub struct Commander {
    /// Armed.
    pub armed: bool,
    /// Sim time of arming, µs.
    pub armed_at_us: u64,
    /// Took off since arming.
    pub taken_off: bool,
    /// The mode the user asked for.
    pub user_mode: Mode,
    /// Mode to return to on disarm.
    pub after_disarm: Mode,
    /// Active failsafe.
    pub failsafe: Option<Failsafe>,
    /// The mode the active failsafe flies.
    pub failsafe_mode: Option<Mode>,
    /// Land detector: on the ground.
    pub landed: bool,
    contact_since_us: Option<u64>,
    auto_disarm_since_us: Option<u64>,
    last_reject_print_us: Option<u64>,
    /// Loss of the failsafe-watched input began here, µs.
    loss_since_us: Option<u64>,
    /// The "Ready for takeoff!" console line has been printed.
    pub ready_printed: bool,
    /// COM_FLIGHT_UUID to bump at each disarm.
    pub flights: u32,
}

impl Default for Commander {
    fn default() -> Self {
        Commander {
            armed: false,
            armed_at_us: 0,
            taken_off: false,
            user_mode: Mode::Hold,
            after_disarm: Mode::Hold,
            failsafe: None,
            failsafe_mode: None,
            landed: true,
            contact_since_us: None,
            auto_disarm_since_us: None,
            last_reject_print_us: None,
            loss_since_us: None,
            ready_printed: false,
            flights: 0,
        }
    }
}

/// A land-detector transition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LandEvent {
    /// Left the ground.
    Takeoff,
    /// Settled on the ground.
    Landing,
}

/// Failsafe trigger latency after the watched input is declared lost, µs. PX4 measured
/// "Failsafe activated" ~1.3 s after an offboard stream stops with COM_OF_LOSS_T = 1 s
/// (docs/px4-wire.md §Offboard).
pub const FAILSAFE_DELAY_US: u64 = 300_000;
/// Extra latency of the auto-disarm after landing, µs: PX4 measured "Disarmed by landing"
/// 2.0–2.4 s after EXTENDED_SYS_STATE first said ON_GROUND with COM_DISARM_LAND = 2 s
/// (docs/px4-wire.md §Flight).
pub const LAND_DISARM_LATENCY_US: u64 = 250_000;
/// Height at which the land detector declares a takeoff, m.
pub const TAKEOFF_HEIGHT_M: f32 = 0.2;

impl Commander {
    /// The mode in force (a failsafe's action overrides the user's intention).
    pub fn nav_state(&self) -> Mode {
        match self.failsafe {
            Some(_) if self.armed => self.failsafe_mode.unwrap_or(Mode::Rtl),
            _ => self.user_mode,
        }
    }

    /// Whether the prearm checks pass for the mode in force (SYS_STATUS prearm bit, heartbeat
    /// system_status STANDBY vs UNINIT).
    pub fn can_arm(&self, c: &Conditions) -> bool {
        let m = self.nav_state();
        c.boot_done
            && (m != Mode::Mission || c.mission_boot_done)
            && !c.refuse_arming
            && !c.fence_breached
            && !c.battery_critical
            && c.global_pos
            && c.home
            && !prevents_arming(m)
            && can_run(m, c)
    }

    /// Whether flight termination is in force (no mode change can take over from it).
    pub fn terminated(&self) -> bool {
        self.armed && self.failsafe.is_some() && self.failsafe_mode == Some(TERMINATION)
    }

    /// End the active failsafe (its condition cleared): back to the user's mode.
    pub fn clear_failsafe(&mut self) {
        self.failsafe = None;
        self.failsafe_mode = None;
        self.loss_since_us = None;
    }

    /// Raise failsafe `kind` flying `mode` now (a failsafe that acts on its onset).
    pub fn trigger_failsafe(&mut self, kind: Failsafe, mode: Mode) {
        if self.terminated() {
            return;
        }
        self.failsafe = Some(kind);
        self.failsafe_mode = Some(mode);
        self.loss_since_us = None;
    }

    /// `UserModeIntention::change`. Returns whether the change was accepted.
    pub fn change_mode(&mut self, m: Mode, force: bool, c: &Conditions) -> bool {
        if self.terminated() {
            return false;
        }
        let allow = force || !self.armed || can_run(m, c);
        if allow {
            self.user_mode = m;
            if !prevents_arming(m) {
                self.after_disarm = m;
            }
            // A user mode change while in failsafe is a takeover.
            self.failsafe = None;
            self.failsafe_mode = None;
            self.loss_since_us = None;
        }
        allow
    }

    /// Print the mode-rejection text, at most once a second.
    pub fn print_reject(&mut self, now: u64, m: Mode, io: &mut Io) {
        if self
            .last_reject_print_us
            .is_none_or(|t| now.saturating_sub(t) > 1_000_000)
        {
            io.critical(
                now,
                "commander",
                &format!(
                    "Switching to {} is currently not available\t",
                    nav_state_name(m)
                ),
            );
            self.last_reject_print_us = Some(now);
        }
    }

    /// Arm (checks per `run_checks`); texts as PX4.
    pub fn arm(&mut self, now: u64, req: ArmRequest<'_>, io: &mut Io) -> bool {
        let ArmRequest {
            reason,
            run_checks,
            conditions: c,
            throttle,
            refusal,
        } = req;
        if self.armed {
            return true;
        }
        if run_checks {
            let m = self.nav_state();
            if m.needs_manual_control() {
                if let Some(t) = throttle {
                    let climb_rate_mode = matches!(m, Mode::Altitude | Mode::Position);
                    if climb_rate_mode && t > 0.6 {
                        io.critical(now, "commander", "Arming denied: throttle above center\t");
                        io.event(
                            now,
                            "commander_arm_denied_throttle_center",
                            level::both(level::CRITICAL, level::INFO),
                            &[],
                        );
                        return false;
                    }
                    if !climb_rate_mode && t >= 0.1 {
                        io.critical(now, "commander", "Arming denied: high throttle\t");
                        return false;
                    }
                }
            } else if reason == ArmReason::StickGesture {
                io.critical(
                    now,
                    "commander",
                    "Arming denied: switch to manual mode first\t",
                );
                return false;
            }
            if !self.can_arm(c) {
                match refusal {
                    Some(text) if c.refuse_arming => io.critical(now, "commander", text),
                    _ => io.critical(
                        now,
                        "commander",
                        "Arming denied: Resolve system health failures first\t",
                    ),
                }
                return false;
            }
        }
        self.armed = true;
        self.armed_at_us = now;
        self.taken_off = false;
        self.auto_disarm_since_us = None;
        io.info(now, "commander", &format!("Armed by {}\t", reason.text()));
        io.event(
            now,
            "commander_armed_by",
            level::INFO_INFO,
            &[reason.px4_code()],
        );
        true
    }

    /// Disarm unless airborne (or `forced`). Returns whether the vehicle is now disarmed.
    pub fn disarm(&mut self, now: u64, reason: ArmReason, forced: bool, io: &mut Io) -> bool {
        if !self.armed {
            return true;
        }
        if !forced && !self.landed {
            if reason != ArmReason::StickGesture {
                io.critical(now, "commander", "Disarming denied: not landed\t");
            }
            return false;
        }
        self.armed = false;
        self.taken_off = false;
        self.failsafe = None;
        self.failsafe_mode = None;
        self.loss_since_us = None;
        self.auto_disarm_since_us = None;
        self.user_mode = self.after_disarm;
        self.flights = self.flights.wrapping_add(1);
        io.info(
            now,
            "commander",
            &format!("Disarmed by {}\t", reason.text()),
        );
        io.event(
            now,
            "commander_disarmed_by",
            level::INFO_INFO,
            &[reason.px4_code()],
        );
        true
    }

    /// Land detector step: `on_ground` is the body's ground contact.
    pub fn update_land_detector(
        &mut self,
        now: u64,
        on_ground: bool,
        height_m: f32,
        trig_time_s: f32,
        takeoff_thrust: bool,
    ) -> Option<LandEvent> {
        if !self.armed {
            self.contact_since_us = None;
            self.landed = on_ground;
            return None;
        }
        if self.landed {
            if takeoff_thrust || (!on_ground && height_m > TAKEOFF_HEIGHT_M) {
                self.landed = false;
                self.contact_since_us = None;
                return Some(LandEvent::Takeoff);
            }
            None
        } else if on_ground {
            let since = *self.contact_since_us.get_or_insert(now);
            if now.saturating_sub(since) as f32 >= trig_time_s * 1e6 {
                self.landed = true;
                self.contact_since_us = None;
                return Some(LandEvent::Landing);
            }
            None
        } else {
            self.contact_since_us = None;
            None
        }
    }

    /// `handleAutoDisarm`: returns the reason when it is time to disarm.
    pub fn auto_disarm_due(
        &mut self,
        now: u64,
        disarm_land_s: f32,
        disarm_prflt_s: f32,
        landed_amid_mission: bool,
    ) -> Option<ArmReason> {
        if !self.armed {
            self.auto_disarm_since_us = None;
            return None;
        }
        let (cond, hold_s, reason) =
            if disarm_land_s > 0.0 && !landed_amid_mission && self.taken_off {
                (
                    self.landed,
                    disarm_land_s + LAND_DISARM_LATENCY_US as f32 * 1e-6,
                    ArmReason::Landing,
                )
            } else if disarm_prflt_s > 0.0 && !self.taken_off {
                (true, disarm_prflt_s, ArmReason::Preflight)
            } else {
                (false, 0.0, ArmReason::Landing)
            };
        if !cond {
            self.auto_disarm_since_us = None;
            return None;
        }
        let since = *self.auto_disarm_since_us.get_or_insert(now);
        (now.saturating_sub(since) as f32 >= hold_s * 1e6).then_some(reason)
    }

    /// Failsafe supervision. `watched` is the failsafe the current mode is exposed to, whether
    /// its input is lost now, and the mode the failsafe would fly. Returns true when a failsafe
    /// has just been activated.
    pub fn update_failsafe(&mut self, now: u64, watched: Option<(Failsafe, bool, Mode)>) -> bool {
        if !self.armed || self.failsafe.is_some() {
            self.loss_since_us = None;
            return false;
        }
        match watched {
            Some((kind, true, action)) => {
                let since = *self.loss_since_us.get_or_insert(now);
                if now.saturating_sub(since) >= FAILSAFE_DELAY_US {
                    self.failsafe = Some(kind);
                    self.failsafe_mode = Some(action);
                    self.loss_since_us = None;
                    return true;
                }
                false
            }
            _ => {
                self.loss_since_us = None;
                false
            }
        }
    }
}
