//! PX4's navigator for a multicopter: what each mode flies.
//!
//! * Takeoff: climb over the current position to home + MIS_TAKEOFF_ALT (or a NAV_TAKEOFF's
//!   altitude) at MPC_TKO_SPEED, ramped over MPC_TKO_RAMP_T; done within NAV_MC_ALT_RAD, then the
//!   commander selects Hold, which keeps the takeoff setpoint.
//! * Hold (loiter): the takeoff/mission setpoint it inherits, else the braking stopping point; a
//!   DO_REPOSITION moves the hold point.
//! * Land: descend in place, MPC_Z_V_AUTO_DN above MPC_LAND_ALT1, MPC_LAND_SPEED below
//!   MPC_LAND_ALT2, interpolated between.
//! * RTL (`rtl_direct.cpp`): climb to the cone-limited return altitude, fly to the destination
//!   ([`crate::rtl`]: home or the closest rally point, per RTL_TYPE), descend to RTL_DESCEND_ALT
//!   over it, land.
//! * Mission: climb first when starting on the ground ("Climb to … meters above home"), then the
//!   items; "Mission finished, loitering" at the end.
//! * Offboard and the manual modes follow the setpoint / stick streams.

use super::commander::ArmReason;
use super::dynamics::{Body, ControlSetpoint, MotionLimits, PosSp};
use super::events::level;
use super::geo::LocalFrame;
use super::io::Io;
use super::mission::{Item, MissionManager};
use super::params::{Params, P};
use mavlink::dialects::common::MavCmd::*;
use nexus_core::offboard::geo::wrap_pi_open_below_f32 as wrap_pi;
use nexus_core::{Mode, RcSticks};

#[path = "navigator_fw.rs"]
mod fw;

/// What kind of setpoint is flown (drives EXTENDED_SYS_STATE.landed_state).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SpType {
    /// Idle on the ground.
    #[default]
    Idle,
    /// A position/velocity setpoint.
    Position,
    /// Climbing out (takeoff or a mission's initial climb).
    Takeoff,
    /// Landing.
    Land,
}

/// Something the commander must act on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NavEvent {
    /// The takeoff altitude was reached.
    TakeoffDone,
    /// The mission ran to its end.
    MissionFinished,
    /// A mission item asked for Return mode.
    MissionRtl,
}

/// The latest offboard setpoint (SET_POSITION_TARGET_LOCAL_NED), local NED.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct OffboardSp {
    /// Position, m.
    pub pos: Option<[f32; 3]>,
    /// Velocity, m/s.
    pub vel: Option<[f32; 3]>,
    /// Heading, rad.
    pub yaw: Option<f32>,
    /// Yaw rate, rad/s.
    pub yaw_rate: Option<f32>,
}

/// A pending DO_REPOSITION: local NED target (NaN components keep the current value).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Reposition {
    /// Target, local NED, m; `None` horizontal keeps the current hold point.
    pub ne: Option<[f32; 2]>,
    /// Target down, m; `None` keeps the altitude.
    pub d: Option<f32>,
    /// Ground speed, m/s; `None` is the default cruise.
    pub speed: Option<f32>,
    /// Heading, rad; `None` keeps it.
    pub yaw: Option<f32>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RtlPhase {
    Climb,
    Return,
    Descend,
    Hover,
    Land,
    Idle,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Work {
    Default,
    Climb,
    MoveToLand,
    Landing,
}

/// Everything the navigator reads each tick.
pub struct Inputs<'a> {
    /// Sim time, µs.
    pub now: u64,
    /// The mode in force.
    pub mode: Mode,
    /// Armed.
    pub armed: bool,
    /// Motors have spooled up (armed for COM_SPOOLUP_TIME).
    pub spooled: bool,
    /// Land detector.
    pub landed: bool,
    /// The true body state.
    pub body: &'a Body,
    /// Home, local NED (z of the pad), and its altitude AMSL.
    pub home_ned: [f32; 3],
    /// Home has been set.
    pub home_valid: bool,
    /// The local frame (for mission lat/lon).
    pub frame: &'a LocalFrame,
    /// Parameters.
    pub params: &'a Params,
    /// Dynamics limits.
    pub limits: &'a MotionLimits,
    /// Latest manual-control sticks, if live.
    pub sticks: Option<RcSticks>,
    /// Latest offboard setpoint.
    pub offboard: OffboardSp,
}

/// The navigator.
#[derive(Debug, Clone)]
pub struct Navigator {
    active: Option<(Mode, bool)>,
    target: Option<PosSp>,
    last_target: Option<PosSp>,
    can_loiter_at_sp: bool,
    reposition: Option<Reposition>,
    /// NAV_TAKEOFF's altitude AMSL for the next takeoff.
    pub takeoff_alt_amsl: Option<f32>,
    takeoff_done: bool,
    rtl: RtlPhase,
    rtl_alt_z: f32,
    rtl_loiter_z: f32,
    /// Where RTL goes (local NED; `[2]` the destination's altitude as a down coordinate).
    rtl_dest: [f32; 3],
    work: Work,
    mission_gen: u32,
    mission_speed: Option<f32>,
    item_hold_until: Option<u64>,
    jumps_done: Vec<(u16, u16)>,
    climb_start_us: u64,
    /// Kind of setpoint in force.
    pub sp_type: SpType,
    fw: fw::FwNav,
}

impl Default for Navigator {
    fn default() -> Self {
        Navigator {
            active: None,
            target: None,
            last_target: None,
            can_loiter_at_sp: false,
            reposition: None,
            takeoff_alt_amsl: None,
            takeoff_done: false,
            rtl: RtlPhase::Idle,
            rtl_alt_z: 0.0,
            rtl_loiter_z: 0.0,
            rtl_dest: [0.0; 3],
            work: Work::Default,
            mission_gen: 0,
            mission_speed: None,
            item_hold_until: None,
            jumps_done: Vec::new(),
            climb_start_us: 0,
            sp_type: SpType::Idle,
            fw: fw::FwNav::default(),
        }
    }
}

/// PX4's MPC_VEL_MANUAL default, m/s: the horizontal speed at full stick.
pub const MPC_VEL_MANUAL_M_S: f32 = 10.0;
/// PX4's MPC_XY_MAN_EXPO default: the stick's cubic share.
pub const MAN_EXPO: f32 = 0.6;
/// Deceleration with the sticks centred in a manual mode, m/s² (PX4 brakes with MPC_ACC_HOR).
pub const MAN_BRAKE_M_S2: f32 = 3.0;

/// Time PX4 SIH stays on the ground after the spool-up while its takeoff ramp is below hover
/// thrust, s: the traces lift off 4.6 s after arming (takeoff-hover-land-x4, box-x4).
pub const TKO_LIFT_DELAY_S: f32 = 3.6;

fn auto_sp(p: &Params, target: [f32; 3], yaw: Option<f32>) -> PosSp {
    PosSp {
        target_ned_m: target,
        cruise_m_s: p.f(P::MPC_XY_CRUISE),
        up_m_s: p.f(P::MPC_Z_V_AUTO_UP),
        down_m_s: p.f(P::MPC_Z_V_AUTO_DN),
        descend_m_s: None,
        yaw_rad: yaw,
        auto: true,
    }
}

fn land_speed(p: &Params, height_m: f32) -> f32 {
    let (alt1, alt2) = (p.f(P::MPC_LAND_ALT1), p.f(P::MPC_LAND_ALT2));
    let (fast, slow) = (p.f(P::MPC_Z_V_AUTO_DN), p.f(P::MPC_LAND_SPEED));
    if height_m >= alt1 {
        fast
    } else if height_m <= alt2 || alt1 <= alt2 {
        slow
    } else {
        slow + (fast - slow) * (height_m - alt2) / (alt1 - alt2)
    }
}

fn reached(body: &Body, sp: &PosSp, acc_rad: f32, alt_rad: f32) -> bool {
    let dn = sp.target_ned_m[0] - body.pos_ned_m[0];
    let de = sp.target_ned_m[1] - body.pos_ned_m[1];
    let dz = sp.target_ned_m[2] - body.pos_ned_m[2];
    dn.hypot(de) <= acc_rad && dz.abs() <= alt_rad
}

impl Navigator {
    /// Queue a DO_REPOSITION (only called while armed: PX4 ignores it disarmed).
    pub fn reposition(&mut self, r: Reposition) {
        self.reposition = Some(r);
    }

    /// Force re-activation of the current mode (e.g. on arming).
    pub fn reactivate(&mut self) {
        self.active = None;
    }

    /// The position target currently flown, if any (diagnostics, tests).
    pub fn target(&self) -> Option<[f32; 3]> {
        self.target.map(|t| t.target_ned_m)
    }

    fn item_target(&self, i: &Inputs<'_>, it: &Item) -> [f32; 3] {
        let ne = if it.x == 0.0 && it.y == 0.0 {
            [i.body.pos_ned_m[0], i.body.pos_ned_m[1]]
        } else {
            i.frame.to_local_ne(it.x, it.y)
        };
        let origin_alt = i.frame.origin().alt_amsl_m;
        let home_alt = origin_alt - i.home_ned[2];
        let alt = if it.relative { home_alt + it.z } else { it.z };
        [ne[0], ne[1], origin_alt - alt]
    }

    fn item_sp(&self, i: &Inputs<'_>, it: &Item) -> PosSp {
        let target = self.item_target(i, it);
        let mut sp = auto_sp(i.params, target, None);
        if let Some(v) = self.mission_speed {
            sp.cruise_m_s = v;
        }
        let yaw_deg = it.params[3];
        sp.yaw_rad = if yaw_deg.is_finite()
            && matches!(
                it.cmd(),
                Some(MAV_CMD_NAV_WAYPOINT | MAV_CMD_NAV_LOITER_UNLIM | MAV_CMD_NAV_LOITER_TIME)
            ) {
            Some(wrap_pi(yaw_deg.to_radians()))
        } else {
            let dn = target[0] - i.body.pos_ned_m[0];
            let de = target[1] - i.body.pos_ned_m[1];
            (dn.hypot(de) > 1.0).then(|| de.atan2(dn))
        };
        sp
    }

    fn activate(
        &mut self,
        i: &Inputs<'_>,
        mission: &mut MissionManager,
        io: &mut Io,
    ) -> Option<NavEvent> {
        let p = i.params;
        let here = i.body.pos_ned_m;
        self.target = None;
        match i.mode {
            Mode::Hold => {
                if i.landed {
                    // Nothing to hold in the air.
                } else if self.can_loiter_at_sp && self.last_target.is_some() {
                    self.target = self.last_target;
                } else {
                    let stop = i.body.stopping_point(i.limits);
                    self.target = Some(auto_sp(p, stop, Some(i.body.yaw_rad)));
                }
                self.can_loiter_at_sp = false;
            }
            Mode::Takeoff => {
                let z = self.start_takeoff(i, io);
                if !i.landed && here[2] <= z + p.f(P::NAV_MC_ALT_RAD) {
                    io.critical(i.now, "navigator", "Already higher than takeoff altitude\t");
                    self.target = Some(auto_sp(p, here, Some(i.body.yaw_rad)));
                    self.takeoff_done = true;
                    self.last_target = self.target;
                    self.can_loiter_at_sp = true;
                    return Some(NavEvent::TakeoffDone);
                }
                self.target = Some(auto_sp(p, [here[0], here[1], z], Some(i.body.yaw_rad)));
                self.climb_start_us = i.now;
            }
            Mode::Land | Mode::PrecisionLand => {
                self.target = Some(auto_sp(p, [here[0], here[1], 0.0], Some(i.body.yaw_rad)));
            }
            Mode::Rtl => self.activate_rtl(i, mission, io),
            Mode::Mission => return self.activate_mission(i, mission, io),
            _ => {}
        }
        None
    }

    /// A takeoff begins (either airframe): the height it climbs to, NED z m, from the
    /// NAV_TAKEOFF altitude or `MIS_TAKEOFF_ALT` above home (saying so, as PX4 does).
    pub(crate) fn start_takeoff(&mut self, i: &Inputs<'_>, io: &mut Io) -> f32 {
        let p = i.params;
        let home_alt = i.frame.origin().alt_amsl_m - i.home_ned[2];
        let alt = self
            .takeoff_alt_amsl
            .unwrap_or(home_alt + p.f(P::MIS_TAKEOFF_ALT));
        self.takeoff_done = false;
        if i.armed && self.takeoff_alt_amsl.is_none() {
            // `Takeoff::set_takeoff_position` without a NAV_TAKEOFF altitude (seen on PX4
            // SITL 0.01 s after "Armed by external command").
            io.info(
                i.now,
                "navigator",
                &format!(
                    "Using default takeoff altitude: {:.1} m\t",
                    p.f(P::MIS_TAKEOFF_ALT)
                ),
            );
        }
        i.frame.origin().alt_amsl_m - alt
    }

    fn activate_rtl(&mut self, i: &Inputs<'_>, mission: &MissionManager, io: &mut Io) {
        let p = i.params;
        let origin_alt = i.frame.origin().alt_amsl_m;
        let here = i.body.pos_ned_m;
        // `RTL::on_activation` evaluates the destination once more (its texts included).
        let dest = crate::rtl::destination(
            &mission.plans[2].items,
            i.frame,
            i.home_valid.then_some(i.home_ned),
            here,
            p.i(P::RTL_TYPE),
        );
        for _ in 0..dest.unsupported {
            io.critical(i.now, "navigator", crate::rtl::UNSUPPORTED_FRAME_TEXT);
        }
        self.rtl_dest = dest.ned;
        let dest_alt = origin_alt - dest.ned[2];
        if i.landed {
            self.rtl = RtlPhase::Idle;
            return;
        }
        let dist = (dest.ned[0] - here[0]).hypot(dest.ned[1] - here[1]);
        let acc = p.f(P::NAV_ACC_RAD);
        let cur_alt = origin_alt - here[2];
        let max_ret = dest_alt + p.f(P::RTL_RETURN_ALT);
        let mut ret = max_ret;
        if dist <= acc {
            ret = dest_alt + 2.0 * dist;
        } else {
            let cone = p.i(P::RTL_CONE_ANG) as f32;
            if cone > 0.0 && dist <= p.f(P::RTL_MIN_DIST) {
                let half = cone.clamp(1.0, 89.0).to_radians();
                ret = ret.min(dist / half.tan() + dest_alt);
            }
            ret = ret.max(dest_alt + 2.0 * acc);
        }
        let rtl_alt = ret.max(cur_alt);
        self.rtl_alt_z = origin_alt - rtl_alt;
        let loiter_alt = (dest_alt + p.f(P::RTL_DESCEND_ALT)).min(rtl_alt);
        self.rtl_loiter_z = origin_alt - loiter_alt;
        self.rtl = if cur_alt < rtl_alt {
            RtlPhase::Climb
        } else {
            RtlPhase::Return
        };
        io.info(
            i.now,
            "navigator",
            &format!(
                "RTL: start return at {} m ({} m above destination)\t",
                rtl_alt.ceil() as i32,
                (rtl_alt - dest_alt).ceil() as i32
            ),
        );
        self.set_rtl_target(i);
    }

    fn set_rtl_target(&mut self, i: &Inputs<'_>) {
        let p = i.params;
        let here = i.body.pos_ned_m;
        let dest = self.rtl_dest;
        self.target = match self.rtl {
            RtlPhase::Climb => Some(auto_sp(
                p,
                [here[0], here[1], self.rtl_alt_z],
                Some(i.body.yaw_rad),
            )),
            RtlPhase::Return => Some(auto_sp(p, [dest[0], dest[1], self.rtl_alt_z], None)),
            RtlPhase::Descend | RtlPhase::Hover => {
                Some(auto_sp(p, [dest[0], dest[1], self.rtl_loiter_z], None))
            }
            RtlPhase::Land => Some(auto_sp(p, [dest[0], dest[1], 0.0], None)),
            RtlPhase::Idle => None,
        };
        if self.rtl == RtlPhase::Return {
            if let Some(t) = &mut self.target {
                let dn = dest[0] - here[0];
                let de = dest[1] - here[1];
                t.yaw_rad = (dn.hypot(de) > 1.0).then(|| de.atan2(dn));
            }
        }
    }

    fn activate_mission(
        &mut self,
        i: &Inputs<'_>,
        mission: &mut MissionManager,
        io: &mut Io,
    ) -> Option<NavEvent> {
        self.mission_gen = mission.progress.generation;
        self.work = Work::Default;
        self.item_hold_until = None;
        if !i.armed || mission.progress.finished || mission.mission().is_empty() {
            if i.armed && mission.progress.finished && !i.landed {
                return Some(NavEvent::MissionFinished);
            }
            return None;
        }
        // `MissionBase::on_activation` (box-x4: 0.05 s after "Armed by external command").
        io.info(i.now, "navigator", "Executing Mission\t");
        io.event(i.now, "mission_execute", level::INFO_INFO, &[]);
        if i.landed {
            // checkClimbRequired: climb to the first position item's altitude.
            let items = mission.mission();
            let start = mission.progress.current as usize;
            if let Some(it) = items.iter().skip(start).find(|it| it.has_position()) {
                let t = self.item_target(i, it);
                let here_z = i.body.pos_ned_m[2];
                if here_z - t[2] > i.params.f(P::NAV_MC_ALT_RAD) {
                    let origin_alt = i.frame.origin().alt_amsl_m;
                    let home_alt = origin_alt - i.home_ned[2];
                    io.info(
                        i.now,
                        "navigator",
                        &format!(
                            "Climb to {:.1} meters above home\t",
                            (origin_alt - t[2]) - home_alt
                        ),
                    );
                    let here = i.body.pos_ned_m;
                    self.target = Some(auto_sp(
                        i.params,
                        [here[0], here[1], t[2]],
                        Some(i.body.yaw_rad),
                    ));
                    self.work = Work::Climb;
                    self.climb_start_us = i.now;
                }
            }
        }
        None
    }

    fn takeoff_up_speed(&self, i: &Inputs<'_>) -> f32 {
        let p = i.params;
        let ramp = p.f(P::MPC_TKO_RAMP_T);
        let t = i.now.saturating_sub(self.climb_start_us) as f32 * 1e-6;
        let spool = p.f(P::COM_SPOOLUP_TIME);
        let t = (t - spool).max(0.0);
        // The traces: PX4 leaves the ground TKO_LIFT_DELAY_S after the spool-up (its ramp starts
        // below hover thrust), then reaches MPC_TKO_SPEED over MPC_TKO_RAMP_T.
        let t = t - TKO_LIFT_DELAY_S;
        let k = if t < 0.0 {
            0.0
        } else if ramp > 0.0 {
            (t / ramp).clamp(0.02, 1.0)
        } else {
            1.0
        };
        p.f(P::MPC_TKO_SPEED) * k
    }

    /// Seconds the takeoff thrust has been applied after the spool-up (`None` when not taking
    /// off): PX4's land detector reports "Takeoff detected" from the thrust, ~0.9 s into the
    /// ramp, seconds before the vehicle leaves the ground.
    pub fn takeoff_thrust_s(&self, now: u64, spool_s: f32) -> Option<f32> {
        (self.sp_type == SpType::Takeoff)
            .then(|| now.saturating_sub(self.climb_start_us) as f32 * 1e-6 - spool_s)
    }

    /// One navigator step: the setpoint to fly and any event for the commander.
    pub fn update(
        &mut self,
        i: &Inputs<'_>,
        mission: &mut MissionManager,
        io: &mut Io,
    ) -> (ControlSetpoint, Option<NavEvent>) {
        let mut event = None;
        if self.active != Some((i.mode, i.armed)) {
            self.active = Some((i.mode, i.armed));
            if i.armed && matches!(i.mode, Mode::Takeoff | Mode::Mission) && i.landed {
                self.climb_start_us = i.now;
            }
            event = self.activate(i, mission, io);
        }
        if !i.armed {
            self.sp_type = SpType::Idle;
            self.reposition = None;
            return (ControlSetpoint::Idle, event);
        }
        let p = i.params;
        let sp = match i.mode {
            Mode::Hold => self.hold_step(i),
            Mode::Takeoff => {
                let (sp, ev) = self.takeoff_step(i);
                if ev.is_some() {
                    event = ev;
                }
                sp
            }
            Mode::Land | Mode::PrecisionLand => {
                if i.landed {
                    self.sp_type = SpType::Idle;
                    ControlSetpoint::Idle
                } else {
                    self.sp_type = SpType::Land;
                    match self.target {
                        Some(mut t) => {
                            t.descend_m_s = Some(land_speed(p, i.body.height_m()));
                            ControlSetpoint::Position(t)
                        }
                        None => ControlSetpoint::Idle,
                    }
                }
            }
            Mode::Rtl => self.rtl_step(i, io),
            Mode::Mission => {
                let (sp, ev) = self.mission_step(i, mission, io);
                if ev.is_some() {
                    event = ev;
                }
                sp
            }
            Mode::Offboard => self.offboard_step(i),
            m if m.needs_manual_control() => self.manual_step(i),
            _ => {
                self.sp_type = SpType::Position;
                let here = i.body.pos_ned_m;
                ControlSetpoint::Position(*self.target.get_or_insert(auto_sp(
                    p,
                    here,
                    Some(i.body.yaw_rad),
                )))
            }
        };
        let thrust_sp = if i.spooled { sp } else { ControlSetpoint::Idle };
        (thrust_sp, event)
    }

    /// Hold: at the last target (or a reposition's), else idle.
    fn hold_step(&mut self, i: &Inputs<'_>) -> ControlSetpoint {
        let p = i.params;
        if let Some(r) = self.reposition.take() {
            let base = self
                .target
                .map(|t| t.target_ned_m)
                .unwrap_or(i.body.pos_ned_m);
            let ne = r.ne.unwrap_or([base[0], base[1]]);
            let d = r.d.unwrap_or(base[2]);
            let yaw = r.yaw.or(Some(i.body.yaw_rad));
            let mut sp = auto_sp(p, [ne[0], ne[1], d], yaw);
            if let Some(v) = r.speed {
                sp.cruise_m_s = v;
            }
            self.target = Some(sp);
        }
        self.sp_type = if self.target.is_some() {
            SpType::Position
        } else {
            SpType::Idle
        };
        self.target
            .map(ControlSetpoint::Position)
            .unwrap_or(ControlSetpoint::Idle)
    }

    /// Takeoff: climb to the target; done (once) within NAV_MC_ALT_RAD of it.
    fn takeoff_step(&mut self, i: &Inputs<'_>) -> (ControlSetpoint, Option<NavEvent>) {
        let p = i.params;
        self.sp_type = SpType::Takeoff;
        match self.target {
            Some(mut t) => {
                t.up_m_s = self.takeoff_up_speed(i);
                if !self.takeoff_done
                    && !i.landed
                    && i.body.pos_ned_m[2] < t.target_ned_m[2] + p.f(P::NAV_MC_ALT_RAD)
                {
                    self.takeoff_done = true;
                    self.takeoff_alt_amsl = None;
                    self.last_target = self.target;
                    self.can_loiter_at_sp = true;
                    return (ControlSetpoint::Position(t), Some(NavEvent::TakeoffDone));
                }
                (ControlSetpoint::Position(t), None)
            }
            None => (ControlSetpoint::Idle, None),
        }
    }

    /// Offboard: the position or velocity the offboard controller streams, else stand still.
    fn offboard_step(&mut self, i: &Inputs<'_>) -> ControlSetpoint {
        let p = i.params;
        self.sp_type = SpType::Position;
        let o = i.offboard;
        if let Some(pos) = o.pos {
            ControlSetpoint::Position(PosSp {
                target_ned_m: pos,
                cruise_m_s: p.f(P::MPC_XY_VEL_MAX),
                up_m_s: p.f(P::MPC_Z_VEL_MAX_UP),
                down_m_s: p.f(P::MPC_Z_VEL_MAX_DN),
                descend_m_s: None,
                yaw_rad: o.yaw,
                auto: false,
            })
        } else if let Some(v) = o.vel {
            ControlSetpoint::Velocity {
                vel_ned_m_s: v,
                yaw_rad: o.yaw,
                yaw_rate_rad_s: o.yaw_rate,
                acc_hor_m_s2: None,
            }
        } else {
            ControlSetpoint::Velocity {
                vel_ned_m_s: [0.0; 3],
                yaw_rad: None,
                yaw_rate_rad_s: None,
                acc_hor_m_s2: None,
            }
        }
    }

    /// The manual modes: velocity from the sticks, shaped as PX4 shapes them.
    fn manual_step(&mut self, i: &Inputs<'_>) -> ControlSetpoint {
        let p = i.params;
        self.sp_type = SpType::Position;
        let s = i.sticks.unwrap_or(RcSticks::NEUTRAL).clamped();
        // PX4's stick shaping (MPC_XY_MAN_EXPO 0.6) up to MPC_VEL_MANUAL 10 m/s; the
        // acceleration-based Position mode gains speed slowly: pitch 0.5 for 4 s flies
        // 3.2-3.5 m on PX4 (docs/px4-wire.md §Flight), i.e. ~MPC_ACC_HOR/2 at full stick.
        let vmax = p.f(P::MPC_XY_VEL_MAX).min(MPC_VEL_MANUAL_M_S);
        let dead = |v: f32| if v.abs() < 0.05 { 0.0 } else { v };
        let expo = |v: f32| (1.0 - MAN_EXPO) * v + MAN_EXPO * v * v * v;
        let fwd = expo(dead(s.pitch)) * vmax;
        let right = expo(dead(s.roll)) * vmax;
        let stick = expo(dead(s.pitch).hypot(dead(s.roll)).min(1.0));
        let acc = if stick > 0.0 {
            stick * p.f(P::MPC_ACC_HOR) * 0.5
        } else {
            MAN_BRAKE_M_S2
        };
        let (sy, cy) = i.body.yaw_rad.sin_cos();
        let thr = (s.throttle - 0.5) * 2.0;
        let vz = if thr.abs() < 0.1 {
            0.0
        } else if thr > 0.0 {
            -thr * p.f(P::MPC_Z_VEL_MAX_UP)
        } else {
            -thr * p.f(P::MPC_Z_VEL_MAX_DN)
        };
        ControlSetpoint::Velocity {
            vel_ned_m_s: [fwd * cy - right * sy, fwd * sy + right * cy, vz],
            yaw_rad: None,
            yaw_rate_rad_s: Some(dead(s.yaw) * 150f32.to_radians()),
            acc_hor_m_s2: Some(acc),
        }
    }

    fn rtl_step(&mut self, i: &Inputs<'_>, io: &mut Io) -> ControlSetpoint {
        let p = i.params;
        let acc = p.f(P::NAV_ACC_RAD);
        let alt_rad = p.f(P::NAV_MC_ALT_RAD);
        if let Some(t) = self.target {
            let done = match self.rtl {
                RtlPhase::Climb | RtlPhase::Descend => {
                    (t.target_ned_m[2] - i.body.pos_ned_m[2]).abs() <= alt_rad
                }
                RtlPhase::Return | RtlPhase::Hover => reached(i.body, &t, acc, alt_rad),
                RtlPhase::Land | RtlPhase::Idle => false,
            };
            if done {
                self.rtl = match self.rtl {
                    RtlPhase::Climb => RtlPhase::Return,
                    RtlPhase::Return => RtlPhase::Descend,
                    RtlPhase::Descend => RtlPhase::Hover,
                    RtlPhase::Hover => RtlPhase::Land,
                    other => other,
                };
                if self.rtl == RtlPhase::Land {
                    io.info(i.now, "navigator", "RTL: land at destination\t");
                }
                self.set_rtl_target(i);
            }
        }
        if i.landed || self.rtl == RtlPhase::Idle {
            self.sp_type = SpType::Idle;
            return ControlSetpoint::Idle;
        }
        match (self.rtl, self.target) {
            (RtlPhase::Land, Some(mut t)) => {
                self.sp_type = SpType::Land;
                t.descend_m_s = Some(land_speed(p, i.body.height_m()));
                ControlSetpoint::Position(t)
            }
            (_, Some(t)) => {
                self.sp_type = SpType::Position;
                ControlSetpoint::Position(t)
            }
            _ => ControlSetpoint::Idle,
        }
    }

    fn mission_step(
        &mut self,
        i: &Inputs<'_>,
        mission: &mut MissionManager,
        io: &mut Io,
    ) -> (ControlSetpoint, Option<NavEvent>) {
        let p = i.params;
        if mission.progress.generation != self.mission_gen {
            self.mission_gen = mission.progress.generation;
            self.work = Work::Default;
            self.item_hold_until = None;
            self.jumps_done.clear();
        }
        if mission.mission().is_empty() || mission.progress.finished {
            self.sp_type = if i.landed {
                SpType::Idle
            } else {
                SpType::Position
            };
            return (
                self.target
                    .map(ControlSetpoint::Position)
                    .unwrap_or(ControlSetpoint::Idle),
                None,
            );
        }
        let alt_rad = p.f(P::NAV_MC_ALT_RAD);
        // Climb before the first item when starting on the ground.
        if self.work == Work::Climb {
            if let Some(mut t) = self.target {
                t.up_m_s = self.takeoff_up_speed(i);
                if !i.landed && (t.target_ned_m[2] - i.body.pos_ned_m[2]).abs() <= alt_rad {
                    self.work = Work::Default;
                } else {
                    self.sp_type = SpType::Takeoff;
                    return (ControlSetpoint::Position(t), None);
                }
            }
        }
        if let Some(step) = self.run_instant_items(i, mission, io) {
            return step;
        }
        let cur = mission.progress.current as usize;
        let Some(it) = mission.mission().get(cur).copied() else {
            return self.finish(i, mission, io);
        };
        if matches!(it.cmd(), Some(MAV_CMD_NAV_LAND | MAV_CMD_NAV_VTOL_LAND)) {
            return self.mission_land(i, mission, io, it);
        }
        self.fly_to_item(i, mission, io, cur, it)
    }

    /// Runs through the items that take no flying (jumps, speed changes, delays done, items
    /// without a position) at once, bounded: each pass consumes an item. `Some` when the step
    /// is decided here (the mission ended, or an RTL item hands over), `None` to fly the current
    /// item.
    fn run_instant_items(
        &mut self,
        i: &Inputs<'_>,
        mission: &mut MissionManager,
        io: &mut Io,
    ) -> Option<(ControlSetpoint, Option<NavEvent>)> {
        let mut guard = 0;
        loop {
            guard += 1;
            let cur = mission.progress.current as usize;
            let Some(it) = mission.mission().get(cur).copied() else {
                return Some(self.finish(i, mission, io));
            };
            if guard > mission.mission().len() + 2 {
                return None;
            }
            match it.cmd() {
                Some(MAV_CMD_NAV_RETURN_TO_LAUNCH) => {
                    // Hand over to RTL.
                    if cur + 1 >= mission.mission().len() {
                        mission.progress.finished = true;
                    } else {
                        mission.progress.current = (cur + 1) as u16;
                    }
                    self.last_target = self.target;
                    return Some((
                        self.target
                            .map(ControlSetpoint::Position)
                            .unwrap_or(ControlSetpoint::Idle),
                        Some(NavEvent::MissionRtl),
                    ));
                }
                Some(MAV_CMD_DO_JUMP) => {
                    // param1 = target index, param2 = repeat count.
                    let done = self
                        .jumps_done
                        .iter()
                        .find(|(s, _)| *s as usize == cur)
                        .map(|(_, n)| *n)
                        .unwrap_or(0);
                    let repeat = it.params[1].max(0.0) as u16;
                    let target = it.params[0].max(0.0) as usize;
                    if done < repeat && target < mission.mission().len() {
                        match self.jumps_done.iter_mut().find(|(s, _)| *s as usize == cur) {
                            Some(e) => e.1 += 1,
                            None => self.jumps_done.push((cur as u16, 1)),
                        }
                        mission.progress.current = target as u16;
                    } else {
                        mission.progress.reached = cur as i32;
                        mission.progress.current = (cur + 1) as u16;
                    }
                    continue;
                }
                Some(MAV_CMD_DO_CHANGE_SPEED) => {
                    if it.params[1] > 0.0 {
                        self.mission_speed = Some(it.params[1]);
                    }
                    mission.progress.reached = cur as i32;
                    mission.progress.current = (cur + 1) as u16;
                    continue;
                }
                Some(MAV_CMD_NAV_DELAY | MAV_CMD_CONDITION_DELAY) => {
                    // Wait param1 seconds in place.
                    let until = *self
                        .item_hold_until
                        .get_or_insert(i.now + (it.params[0].max(0.0) * 1e6) as u64);
                    if i.now >= until {
                        self.item_hold_until = None;
                        mission.progress.reached = cur as i32;
                        mission.progress.current = (cur + 1) as u16;
                        continue;
                    }
                    return None;
                }
                _ if !it.has_position() => {
                    mission.progress.reached = cur as i32;
                    mission.progress.current = (cur + 1) as u16;
                    continue;
                }
                _ => return None,
            }
        }
    }

    /// Flies to position item `it` (index `cur`): its acceptance radius, then its hold time,
    /// then the next item (or the end of the mission).
    fn fly_to_item(
        &mut self,
        i: &Inputs<'_>,
        mission: &mut MissionManager,
        io: &mut Io,
        cur: usize,
        it: Item,
    ) -> (ControlSetpoint, Option<NavEvent>) {
        let p = i.params;
        let acc_default = p.f(P::NAV_ACC_RAD);
        let alt_rad = p.f(P::NAV_MC_ALT_RAD);
        let sp = self.item_sp(i, &it);
        self.target = Some(sp);
        self.sp_type = SpType::Position;
        let acc = if it.cmd() == Some(MAV_CMD_NAV_WAYPOINT) && it.params[1] > 0.0 {
            it.params[1]
        } else {
            acc_default
        };
        if reached(i.body, &sp, acc, alt_rad) {
            let hold_s = match it.cmd() {
                Some(MAV_CMD_NAV_WAYPOINT | MAV_CMD_NAV_LOITER_TIME) => it.params[0].max(0.0),
                _ => 0.0,
            };
            if it.cmd() == Some(MAV_CMD_NAV_LOITER_UNLIM) {
                // Stay.
                if mission.progress.reached != cur as i32 {
                    mission.progress.reached = cur as i32;
                }
                return (ControlSetpoint::Position(sp), None);
            }
            let until = *self
                .item_hold_until
                .get_or_insert(i.now + (hold_s * 1e6) as u64);
            if i.now >= until {
                self.item_hold_until = None;
                mission.progress.reached = cur as i32;
                if !it.autocontinue {
                    return (ControlSetpoint::Position(sp), None);
                }
                if cur + 1 >= mission.mission().len() {
                    return self.finish(i, mission, io);
                }
                mission.progress.current = (cur + 1) as u16;
            }
        }
        (ControlSetpoint::Position(sp), None)
    }

    fn mission_land(
        &mut self,
        i: &Inputs<'_>,
        mission: &mut MissionManager,
        io: &mut Io,
        it: Item,
    ) -> (ControlSetpoint, Option<NavEvent>) {
        let p = i.params;
        let cur = mission.progress.current as usize;
        let mut t = self.item_target(i, &it);
        if self.work != Work::Landing {
            self.work = Work::MoveToLand;
            t[2] = self
                .target
                .map(|s| s.target_ned_m[2])
                .unwrap_or(i.body.pos_ned_m[2]);
            let sp = auto_sp(p, t, None);
            self.target = Some(sp);
            self.sp_type = SpType::Position;
            if reached(i.body, &sp, p.f(P::NAV_ACC_RAD), p.f(P::NAV_MC_ALT_RAD)) {
                self.work = Work::Landing;
            } else {
                return (ControlSetpoint::Position(sp), None);
            }
        }
        if i.landed {
            mission.progress.reached = cur as i32;
            self.work = Work::Default;
            return self.finish(i, mission, io);
        }
        let mut sp = auto_sp(p, [t[0], t[1], 0.0], None);
        sp.descend_m_s = Some(land_speed(p, i.body.height_m()));
        self.target = Some(sp);
        self.sp_type = SpType::Land;
        (ControlSetpoint::Position(sp), None)
    }

    fn finish(
        &mut self,
        i: &Inputs<'_>,
        mission: &mut MissionManager,
        io: &mut Io,
    ) -> (ControlSetpoint, Option<NavEvent>) {
        if finish_mission(i, mission, io) {
            self.sp_type = SpType::Idle;
            (ControlSetpoint::Idle, Some(NavEvent::MissionFinished))
        } else {
            self.last_target = self.target;
            self.can_loiter_at_sp = true;
            self.sp_type = SpType::Position;
            (
                self.target
                    .map(ControlSetpoint::Position)
                    .unwrap_or(ControlSetpoint::Idle),
                Some(NavEvent::MissionFinished),
            )
        }
    }

    /// Arm-time hook (PX4 sets home at arming; the navigator restarts its current mode).
    pub fn on_armed(&mut self, _reason: ArmReason) {
        self.active = None;
        self.last_target = None;
        self.can_loiter_at_sp = false;
        self.mission_speed = None;
    }
}

/// The mission's end, as PX4's navigator marks and says it (any airframe): the last item
/// current, the mission finished, "Mission finished, landed" (with its event) or "…,
/// loitering". Whether the vehicle is landed, for the caller's setpoint.
fn finish_mission(i: &Inputs<'_>, mission: &mut MissionManager, io: &mut Io) -> bool {
    let last = mission.mission().len().saturating_sub(1) as u16;
    mission.progress.current = last;
    mission.progress.finished = true;
    if i.landed {
        io.info(i.now, "navigator", "Mission finished, landed\t");
        io.event(i.now, "mission_finished", level::INFO_INFO, &[]);
    } else {
        io.info(i.now, "navigator", "Mission finished, loitering\t");
    }
    i.landed
}
