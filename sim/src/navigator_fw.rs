//! PX4's navigator for a fixed-wing: what each mode asks the fixed-wing controllers
//! ([`crate::fixed_wing`]) to fly.
//!
//! * Takeoff: the runway takeoff along the current heading to home + MIS_TAKEOFF_ALT; done once
//!   above it, then Hold.
//! * Hold: a circle of NAV_LOITER_RAD (positive: clockwise) around where the vehicle was, or the
//!   circle it already flies; a DO_REPOSITION moves the circle's centre (a fixed-wing's `goto`
//!   is a loiter point) and its altitude.
//! * Mission (`mission_block.cpp`): NAV_TAKEOFF is a runway takeoff towards the item, reached
//!   once above its altitude; a waypoint is the line from the previous one, reached within the
//!   acceptance radius (the larger of NAV_ACC_RAD and NPFG's switch distance) or once passed,
//!   and within NAV_FW_ALT_RAD of its altitude (short of it, the airplane circles the
//!   waypoint until it is); NAV_LOITER_TO_ALT circles its point at its radius, at the altitude
//!   it came with until on the circle, then to the item's, leaving on the course to the next
//!   item (within 5°) when its param4 asks; NAV_LAND is the approach from the previous point,
//!   reached when landed; a NAV_DELAY (or CONDITION_DELAY) waits where the vehicle is: still
//!   on the ground (armed, idle), circling there in the air.
//! * Land: the approach straight ahead from where the vehicle is, on FW_LND_ANG.
//! * RTL: to home at RTL_RETURN_ALT above it (or higher, as it is), then a loiter over home
//!   (the fixed-wing's RTL_LAND_DELAY -1: it does not land by itself).
//!
//! Not modelled: the mission landing RTL_TYPE 1 picks (DO_LAND_START), PX4's circular landing
//! of Land mode, the loiter's direction from an item's negative radius on LOITER_TIME /
//! LOITER_UNLIM (they circle clockwise), Offboard and the manual modes (held as Hold).

use super::*;
use crate::fixed_wing::{FwLimits, FwSetpoint};

/// Cosine of the exit-course tolerance of a loiter that leaves towards the next item
/// (`kCosineExitCourseThreshold`, 5°).
const EXIT_COURSE_COS: f32 = 0.99619;
/// Height above the clearance altitude the takeoff climbs to (`kClearanceAltitudeBuffer`), m.
const CLEARANCE_BUFFER_M: f32 = 10.0;

/// The fixed-wing navigator's own state.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(super) struct FwNav {
    /// The start of the line to the current item, local NE.
    prev_ne: Option<[f32; 2]>,
    /// The runway takeoff's start and course.
    takeoff: Option<([f32; 2], f32)>,
    /// The circle flown: centre (NE), altitude (down), radius (m, positive clockwise).
    loiter: Option<([f32; 2], f32, f32)>,
    /// NAV_LOITER_TO_ALT: on the circle, at the item's altitude now.
    loiter_alt: bool,
    /// The mission item this state belongs to.
    item: Option<u16>,
    /// The landing approach's start altitude, down, m.
    approach_d: Option<f32>,
    /// Land mode's approach: its start and touchdown point, local NE.
    land: Option<([f32; 2], [f32; 2])>,
}

fn ne(p: [f32; 3]) -> [f32; 2] {
    [p[0], p[1]]
}

fn dist2(a: [f32; 2], b: [f32; 2]) -> f32 {
    (a[0] - b[0]).hypot(a[1] - b[1])
}

impl Navigator {
    /// The fixed-wing's figures from the parameters.
    pub fn fw_limits(p: &Params) -> FwLimits {
        let tko = p.f(P::FW_TKO_AIRSPD);
        FwLimits {
            trim_m_s: p.f(P::FW_AIRSPD_TRIM),
            takeoff_m_s: if tko > 0.0 {
                tko
            } else {
                p.f(P::FW_AIRSPD_MIN)
            },
            climb_m_s: p.f(P::FW_T_CLMB_MAX),
            sink_m_s: p.f(P::FW_T_SINK_MAX),
            alt_tc_s: p.f(P::FW_T_ALT_TC),
            roll_max_rad: p.f(P::FW_R_LIM).to_radians(),
            roll_tc_s: p.f(P::NPFG_ROLL_TC),
            period_s: p.f(P::NPFG_PERIOD),
            damping: p.f(P::NPFG_DAMPING),
            ramp_s: p.f(P::RWTO_RAMP_TIME),
            land_slope_rad: p.f(P::FW_LND_ANG).to_radians(),
            flare_m: p.f(P::FW_LND_FLALT),
            flare_sink_m_s: p.f(P::FW_LND_FL_SINK),
        }
    }

    fn fw_acceptance_m(i: &Inputs<'_>) -> f32 {
        let p = i.params;
        let lim = Self::fw_limits(p);
        p.f(P::NAV_ACC_RAD)
            .max(lim.switch_distance_m(i.body.ground_speed_m_s(), p.f(P::NPFG_SW_DST_MLT)))
    }

    fn loiter_radius(p: &Params) -> f32 {
        let r = p.f(P::NAV_LOITER_RAD);
        if r.abs() < 1.0 {
            80.0
        } else {
            r
        }
    }

    fn fw_loiter_sp(&self, p: &Params) -> FwSetpoint {
        match self.fw.loiter {
            Some((c, d, r)) => FwSetpoint::Loiter {
                center_ne_m: c,
                radius_m: r,
                alt_d_m: d,
                airspeed_m_s: p.f(P::FW_AIRSPD_TRIM),
            },
            None => FwSetpoint::Idle,
        }
    }

    /// Loiter where the vehicle is, unless it already circles near here (`Loiter::
    /// set_loiter_position`).
    fn fw_loiter_here(&mut self, i: &Inputs<'_>) {
        let here = i.body.pos_ned_m;
        let keep = self
            .fw
            .loiter
            .is_some_and(|(c, _, r)| dist2(c, ne(here)) <= Self::fw_acceptance_m(i) + r.abs());
        if !keep {
            self.fw.loiter = Some((ne(here), here[2], Self::loiter_radius(i.params)));
        }
    }

    /// The fixed-wing's step: what to fly and any event for the commander.
    pub fn update_fw(
        &mut self,
        i: &Inputs<'_>,
        mission: &mut MissionManager,
        io: &mut Io,
    ) -> (FwSetpoint, Option<NavEvent>) {
        let mut event = None;
        if self.active != Some((i.mode, i.armed)) {
            self.active = Some((i.mode, i.armed));
            event = self.activate_fw(i, mission, io);
        }
        if !i.armed {
            self.sp_type = SpType::Idle;
            self.reposition = None;
            self.fw = FwNav::default();
            return (FwSetpoint::Idle, event);
        }
        let p = i.params;
        let sp = match i.mode {
            Mode::Takeoff => {
                let (sp, ev) = self.fw_takeoff_step(i);
                event = ev.or(event);
                sp
            }
            Mode::Mission => {
                let (sp, ev) = self.fw_mission_step(i, mission, io);
                event = ev.or(event);
                sp
            }
            Mode::Land | Mode::PrecisionLand => self.fw_land_step(i),
            Mode::Rtl => self.fw_rtl_step(i),
            _ => {
                if let Some(r) = self.reposition.take() {
                    let here = i.body.pos_ned_m;
                    let (c, d, rad) =
                        self.fw
                            .loiter
                            .unwrap_or((ne(here), here[2], Self::loiter_radius(p)));
                    self.fw.loiter = Some((r.ne.unwrap_or(c), r.d.unwrap_or(d), rad));
                }
                if i.landed {
                    self.sp_type = SpType::Idle;
                    FwSetpoint::Idle
                } else {
                    if self.fw.loiter.is_none() {
                        self.fw_loiter_here(i);
                    }
                    self.sp_type = SpType::Position;
                    self.fw_loiter_sp(p)
                }
            }
        };
        self.fw_publish_target(i, &sp);
        (sp, event)
    }

    /// POSITION_TARGET_LOCAL_NED and the landed-state logic read the target: the point flown to.
    fn fw_publish_target(&mut self, i: &Inputs<'_>, sp: &FwSetpoint) {
        let p = i.params;
        let t = match *sp {
            FwSetpoint::Idle => None,
            FwSetpoint::Takeoff {
                start_ne_m,
                bearing_rad,
                alt_d_m,
            } => Some([
                start_ne_m[0] + bearing_rad.cos() * 100.0,
                start_ne_m[1] + bearing_rad.sin() * 100.0,
                alt_d_m,
            ]),
            FwSetpoint::Line {
                to_ne_m, alt_d_m, ..
            } => Some([to_ne_m[0], to_ne_m[1], alt_d_m]),
            FwSetpoint::Loiter {
                center_ne_m,
                alt_d_m,
                ..
            } => Some([center_ne_m[0], center_ne_m[1], alt_d_m]),
            FwSetpoint::Land {
                land_ne_m,
                land_d_m,
                ..
            } => Some([land_ne_m[0], land_ne_m[1], land_d_m]),
        };
        self.target = t.map(|t| auto_sp(p, t, None));
    }

    fn activate_fw(
        &mut self,
        i: &Inputs<'_>,
        mission: &mut MissionManager,
        io: &mut Io,
    ) -> Option<NavEvent> {
        let p = i.params;
        let here = i.body.pos_ned_m;
        self.fw.land = None;
        self.fw.approach_d = None;
        match i.mode {
            Mode::Hold if !i.landed => self.fw_loiter_here(i),
            Mode::Takeoff => {
                let z = self.start_takeoff(i, io);
                if !i.landed && here[2] <= z {
                    io.critical(i.now, "navigator", "Already higher than takeoff altitude\t");
                    self.takeoff_done = true;
                    self.fw_loiter_here(i);
                    return Some(NavEvent::TakeoffDone);
                }
                self.fw.takeoff = Some((ne(here), i.body.yaw_rad));
                self.fw.loiter = None;
                self.rtl_alt_z = z;
            }
            Mode::Rtl => {
                let origin_alt = i.frame.origin().alt_amsl_m;
                let home_alt = origin_alt - i.home_ned[2];
                let ret = (home_alt + p.f(P::RTL_RETURN_ALT)).max(origin_alt - here[2]);
                self.rtl_alt_z = origin_alt - ret;
                if !i.landed {
                    io.info(
                        i.now,
                        "navigator",
                        &format!(
                            "RTL: start return at {} m ({} m above destination)\t",
                            ret.ceil() as i32,
                            (ret - home_alt).ceil() as i32
                        ),
                    );
                }
                self.fw.loiter = None;
                self.fw.prev_ne = Some(ne(here));
            }
            Mode::Mission => return self.fw_activate_mission(i, mission, io),
            _ => {}
        }
        None
    }

    fn fw_activate_mission(
        &mut self,
        i: &Inputs<'_>,
        mission: &mut MissionManager,
        io: &mut Io,
    ) -> Option<NavEvent> {
        self.mission_gen = mission.progress.generation;
        self.item_hold_until = None;
        self.fw.item = None;
        if !i.armed || mission.progress.finished || mission.mission().is_empty() {
            if i.armed && mission.progress.finished && !i.landed {
                return Some(NavEvent::MissionFinished);
            }
            return None;
        }
        io.info(i.now, "navigator", "Executing Mission\t");
        io.event(i.now, "mission_execute", level::INFO_INFO, &[]);
        self.fw.prev_ne = Some(ne(i.body.pos_ned_m));
        None
    }

    fn fw_takeoff_step(&mut self, i: &Inputs<'_>) -> (FwSetpoint, Option<NavEvent>) {
        let p = i.params;
        if self.takeoff_done {
            self.sp_type = SpType::Position;
            return (self.fw_loiter_sp(p), None);
        }
        let Some((start, bearing)) = self.fw.takeoff else {
            self.sp_type = SpType::Idle;
            return (FwSetpoint::Idle, None);
        };
        self.sp_type = SpType::Takeoff;
        let z = self.rtl_alt_z;
        if !i.landed && i.body.pos_ned_m[2] < z {
            // Above the takeoff altitude: done; Hold circles here.
            self.takeoff_done = true;
            self.takeoff_alt_amsl = None;
            self.fw.takeoff = None;
            self.fw_loiter_here(i);
            self.can_loiter_at_sp = true;
            self.sp_type = SpType::Position;
            return (self.fw_loiter_sp(p), Some(NavEvent::TakeoffDone));
        }
        (
            FwSetpoint::Takeoff {
                start_ne_m: start,
                bearing_rad: bearing,
                alt_d_m: z - CLEARANCE_BUFFER_M,
            },
            None,
        )
    }

    fn fw_land_step(&mut self, i: &Inputs<'_>) -> FwSetpoint {
        if i.landed {
            self.sp_type = SpType::Idle;
            return FwSetpoint::Idle;
        }
        self.sp_type = SpType::Land;
        let p = i.params;
        let here = i.body.pos_ned_m;
        let (from, land) = *self.fw.land.get_or_insert_with(|| {
            let run = i.body.height_m() / p.f(P::FW_LND_ANG).to_radians().tan().max(0.01);
            let (s, c) = i.body.yaw_rad.sin_cos();
            (ne(here), [here[0] + c * run, here[1] + s * run])
        });
        let from_d = *self.fw.approach_d.get_or_insert(here[2]);
        FwSetpoint::Land {
            from_ne_m: from,
            from_d_m: from_d,
            land_ne_m: land,
            land_d_m: i.home_ned[2],
        }
    }

    fn fw_rtl_step(&mut self, i: &Inputs<'_>) -> FwSetpoint {
        let p = i.params;
        if i.landed {
            self.sp_type = SpType::Idle;
            return FwSetpoint::Idle;
        }
        self.sp_type = SpType::Position;
        let home = ne(i.home_ned);
        if self.fw.loiter.is_none() {
            let here = ne(i.body.pos_ned_m);
            if dist2(here, home) <= Self::fw_acceptance_m(i) + Self::loiter_radius(p).abs() {
                self.fw.loiter = Some((home, self.rtl_alt_z, Self::loiter_radius(p)));
            } else {
                return FwSetpoint::Line {
                    from_ne_m: self.fw.prev_ne.unwrap_or(here),
                    to_ne_m: home,
                    alt_d_m: self.rtl_alt_z,
                    airspeed_m_s: p.f(P::FW_AIRSPD_TRIM),
                };
            }
        }
        self.fw_loiter_sp(p)
    }

    fn fw_mission_step(
        &mut self,
        i: &Inputs<'_>,
        mission: &mut MissionManager,
        io: &mut Io,
    ) -> (FwSetpoint, Option<NavEvent>) {
        let p = i.params;
        if mission.progress.generation != self.mission_gen {
            self.mission_gen = mission.progress.generation;
            self.item_hold_until = None;
            self.jumps_done.clear();
            self.fw.item = None;
        }
        if mission.mission().is_empty() || mission.progress.finished {
            if i.landed {
                self.sp_type = SpType::Idle;
                return (FwSetpoint::Idle, None);
            }
            if self.fw.loiter.is_none() {
                self.fw_loiter_here(i);
            }
            self.sp_type = SpType::Position;
            return (self.fw_loiter_sp(p), None);
        }
        if let Some((_, ev)) = self.run_instant_items(i, mission, io) {
            // The mission ended (or an RTL item hands over): circle where it ended.
            if !i.landed {
                self.fw_loiter_here(i);
            }
            let sp = if i.landed {
                FwSetpoint::Idle
            } else {
                self.fw_loiter_sp(p)
            };
            return (sp, ev);
        }
        let cur = mission.progress.current as usize;
        let Some(it) = mission.mission().get(cur).copied() else {
            return (FwSetpoint::Idle, None);
        };
        if self.fw.item != Some(cur as u16) {
            self.fw.item = Some(cur as u16);
            self.fw.loiter_alt = false;
            self.fw.approach_d = None;
            if !matches!(
                it.cmd(),
                Some(MAV_CMD_NAV_TAKEOFF | MAV_CMD_NAV_LAND | MAV_CMD_NAV_LOITER_TO_ALT)
            ) {
                self.fw.loiter = None;
            }
        }
        if matches!(it.cmd(), Some(MAV_CMD_NAV_DELAY | MAV_CMD_CONDITION_DELAY)) {
            // A delay under way (`run_instant_items` counts it): wait where the vehicle is,
            // idle on the ground (PX4 keeps the airplane still there until the takeoff item),
            // circling here in the air.
            if i.landed {
                self.sp_type = SpType::Idle;
                return (FwSetpoint::Idle, None);
            }
            if self.fw.loiter.is_none() {
                self.fw_loiter_here(i);
            }
            self.sp_type = SpType::Position;
            return (self.fw_loiter_sp(p), None);
        }
        let t = self.item_target(i, &it);
        let here = i.body.pos_ned_m;
        let prev = self.fw.prev_ne.unwrap_or(ne(here));
        let trim = self.mission_speed.unwrap_or(p.f(P::FW_AIRSPD_TRIM));
        let acc = Self::fw_acceptance_m(i);
        let alt_rad = p.f(P::NAV_FW_ALT_RAD);
        let mut reached = false;
        let sp = match it.cmd() {
            Some(MAV_CMD_NAV_TAKEOFF) => {
                let (start, bearing) = *self.fw.takeoff.get_or_insert_with(|| {
                    let (dn, de) = (t[0] - here[0], t[1] - here[1]);
                    let b = if dn.hypot(de) > 1.0 {
                        de.atan2(dn)
                    } else {
                        i.body.yaw_rad
                    };
                    (ne(here), b)
                });
                reached = !i.landed && here[2] < t[2];
                self.sp_type = SpType::Takeoff;
                FwSetpoint::Takeoff {
                    start_ne_m: start,
                    bearing_rad: bearing,
                    alt_d_m: t[2] - CLEARANCE_BUFFER_M,
                }
            }
            Some(MAV_CMD_NAV_LAND) => {
                self.sp_type = SpType::Land;
                if i.landed {
                    mission.progress.reached = cur as i32;
                    return self.fw_finish(i, mission, io);
                }
                let from_d = *self.fw.approach_d.get_or_insert(here[2]);
                FwSetpoint::Land {
                    from_ne_m: prev,
                    from_d_m: from_d,
                    land_ne_m: ne(t),
                    land_d_m: t[2],
                }
            }
            Some(MAV_CMD_NAV_LOITER_TO_ALT) => {
                self.sp_type = SpType::Position;
                let r = if it.params[1].abs() > 1.0 {
                    it.params[1]
                } else {
                    Self::loiter_radius(p)
                };
                let d = dist2(ne(here), ne(t));
                let entry_d = self.fw.loiter.map(|l| l.1).unwrap_or(here[2]);
                if !self.fw.loiter_alt && d <= acc + r.abs() && (here[2] - entry_d).abs() <= alt_rad
                {
                    self.fw.loiter_alt = true;
                }
                let alt = if self.fw.loiter_alt { t[2] } else { entry_d };
                self.fw.loiter = Some((ne(t), alt, r));
                if self.fw.loiter_alt && d <= acc + r.abs() && (here[2] - t[2]).abs() <= alt_rad {
                    reached = self.fw_exit_course_ok(i, mission, cur, it.params[3] > 0.0);
                }
                self.fw_loiter_sp(p)
            }
            Some(MAV_CMD_NAV_LOITER_UNLIM | MAV_CMD_NAV_LOITER_TIME) => {
                self.sp_type = SpType::Position;
                let r = Self::loiter_radius(p);
                self.fw.loiter = Some((ne(t), t[2], r));
                let d = dist2(ne(here), ne(t));
                if d <= acc + r.abs() && (here[2] - t[2]).abs() <= alt_rad {
                    if it.cmd() == Some(MAV_CMD_NAV_LOITER_UNLIM) {
                        mission.progress.reached = cur as i32;
                    } else {
                        let until = *self
                            .item_hold_until
                            .get_or_insert(i.now + (it.params[0].max(0.0) * 1e6) as u64);
                        reached = i.now >= until
                            && self.fw_exit_course_ok(i, mission, cur, it.params[3] > 0.0);
                    }
                }
                self.fw_loiter_sp(p)
            }
            _ => {
                self.sp_type = SpType::Position;
                let d = dist2(ne(here), ne(t));
                let seg = [t[0] - prev[0], t[1] - prev[1]];
                let passed = seg[0].hypot(seg[1]) > 1e-3
                    && seg[0] * (here[0] - t[0]) + seg[1] * (here[1] - t[1]) > 0.0;
                let horizontal = d <= acc || passed;
                if horizontal && (here[2] - t[2]).abs() > alt_rad {
                    // Short of the altitude: circle the waypoint until there.
                    self.fw.loiter = Some((ne(t), t[2], Self::loiter_radius(p)));
                }
                if self.fw.loiter.is_some() {
                    reached = (here[2] - t[2]).abs() <= alt_rad
                        && self.fw_exit_course_ok(i, mission, cur, true);
                    self.fw_loiter_sp(p)
                } else {
                    reached = horizontal;
                    FwSetpoint::Line {
                        from_ne_m: prev,
                        to_ne_m: ne(t),
                        alt_d_m: t[2],
                        airspeed_m_s: trim,
                    }
                }
            }
        };
        if reached {
            mission.progress.reached = cur as i32;
            self.item_hold_until = None;
            // The next line starts here: at the item (a waypoint), or where the loiter left
            // its circle, or where the takeoff reached its altitude.
            self.fw.prev_ne = Some(match it.cmd() {
                Some(MAV_CMD_NAV_WAYPOINT) if self.fw.loiter.is_none() => ne(t),
                _ => ne(here),
            });
            self.fw.takeoff = None;
            self.fw.loiter = None;
            if !it.autocontinue {
                self.fw.loiter = Some((ne(here), here[2], Self::loiter_radius(p)));
            } else if cur + 1 >= mission.mission().len() {
                return self.fw_finish(i, mission, io);
            } else {
                mission.progress.current = (cur + 1) as u16;
            }
        }
        (sp, None)
    }

    /// Whether a loiter may leave now: on the course to the next position item within 5°
    /// when `wants_course` (and that item lies outside the circle), else at once.
    fn fw_exit_course_ok(
        &self,
        i: &Inputs<'_>,
        mission: &MissionManager,
        cur: usize,
        wants_course: bool,
    ) -> bool {
        if !wants_course {
            return true;
        }
        let Some(next) = mission
            .mission()
            .iter()
            .skip(cur + 1)
            .find(|it| it.has_position())
        else {
            return true;
        };
        let n = self.item_target(i, next);
        let here = i.body.pos_ned_m;
        let Some((c, _, r)) = self.fw.loiter else {
            return true;
        };
        if dist2(c, ne(n)) <= 1.05 * r.abs() {
            return true;
        }
        let to = [n[0] - here[0], n[1] - here[1]];
        let v = [i.body.vel_ned_m_s[0], i.body.vel_ned_m_s[1]];
        let (nt, nv) = (to[0].hypot(to[1]), v[0].hypot(v[1]));
        to[0] * v[0] + to[1] * v[1] > nt * nv * EXIT_COURSE_COS
    }

    fn fw_finish(
        &mut self,
        i: &Inputs<'_>,
        mission: &mut MissionManager,
        io: &mut Io,
    ) -> (FwSetpoint, Option<NavEvent>) {
        if super::finish_mission(i, mission, io) {
            self.sp_type = SpType::Idle;
            (FwSetpoint::Idle, Some(NavEvent::MissionFinished))
        } else {
            self.fw_loiter_here(i);
            self.sp_type = SpType::Position;
            (self.fw_loiter_sp(i.params), Some(NavEvent::MissionFinished))
        }
    }
}
