//! A fixed-wing airplane as a kinematic point with PX4's guidance laws, in the local NED frame
//! of the pad: PX4 SIH's airplane (`10041_sihsim_airplane`) as its controllers fly it.
//!
//! * Lateral: NPFG (`src/lib/npfg/DirectionalGuidance.cpp`) in its windless form: a track-error
//!   bound of ground speed × NPFG_PERIOD × NPFG_DAMPING, a look-ahead angle π/2·(1 − e/bound)²
//!   from the path's normal, a lateral acceleration from the bearing error (gain 4π·ζ/T) plus
//!   the circle's centripetal feed-forward; roll = atan(a/g), limited to FW_R_LIM, reached with
//!   the time constant NPFG_ROLL_TC; the course turns at g·tan(roll)/V.
//! * Longitudinal: TECS's outcome, not its energy loops: the height rate follows the height
//!   error over FW_T_ALT_TC, capped at FW_T_CLMB_MAX / FW_T_SINK_MAX; the airspeed slews to its
//!   setpoint (FW_AIRSPD_TRIM in cruise).
//! * Runway takeoff (`runway_takeoff/RunwayTakeoff.cpp`, RWTO_TKOFF 1): throttle ramp over
//!   RWTO_RAMP_TIME, ground roll straight along the takeoff bearing, rotation at 0.9 × the
//!   takeoff airspeed (FW_TKO_AIRSPD, else FW_AIRSPD_MIN), climb-out at the takeoff airspeed
//!   with wings level until the clearance altitude.
//! * Landing (`control_auto_landing_straight`): the approach line to the touchdown point, a
//!   glide slope of FW_LND_ANG from it (the height held until the slope is met), the flare at
//!   FW_LND_FLALT (sink rate FW_LND_FL_SINK), touchdown, then the roll-out braked to a stop.
//!
//! What it does not model: wind, the energy exchange between height and speed (a climb does not
//! slow the airplane), stall, the attitude loops.

use super::dynamics::{Body, G};
use nexus_core::offboard::geo::wrap_pi_open_below_f32 as wrap_pi;

/// The airframe's figures and PX4's parameters the model flies by.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FwLimits {
    /// Cruise airspeed, m/s (FW_AIRSPD_TRIM).
    pub trim_m_s: f32,
    /// Takeoff airspeed, m/s (FW_TKO_AIRSPD, else FW_AIRSPD_MIN).
    pub takeoff_m_s: f32,
    /// Maximum climb rate, m/s (FW_T_CLMB_MAX).
    pub climb_m_s: f32,
    /// Maximum sink rate, m/s (FW_T_SINK_MAX).
    pub sink_m_s: f32,
    /// Height error time constant, s (FW_T_ALT_TC).
    pub alt_tc_s: f32,
    /// Roll limit, rad (FW_R_LIM).
    pub roll_max_rad: f32,
    /// Roll time constant, s (NPFG_ROLL_TC).
    pub roll_tc_s: f32,
    /// NPFG period, s (NPFG_PERIOD).
    pub period_s: f32,
    /// NPFG damping (NPFG_DAMPING).
    pub damping: f32,
    /// Throttle ramp of the runway takeoff, s (RWTO_RAMP_TIME).
    pub ramp_s: f32,
    /// Glide slope, rad (FW_LND_ANG).
    pub land_slope_rad: f32,
    /// Flare height, m (FW_LND_FLALT).
    pub flare_m: f32,
    /// Sink rate at touchdown, m/s (FW_LND_FL_SINK).
    pub flare_sink_m_s: f32,
}

impl FwLimits {
    /// Track-error bound of NPFG at `ground_m_s`, m: beyond it the airplane heads straight at
    /// the path.
    pub fn track_error_bound_m(&self, ground_m_s: f32) -> f32 {
        let tc = self.period_s * self.damping;
        if ground_m_s > 1.0 {
            ground_m_s * tc
        } else {
            0.5 * tc * (ground_m_s * ground_m_s + 1.0)
        }
    }

    /// NPFG's switch distance at `ground_m_s` (NPFG_SW_DST_MLT × the bound, at most 500 m):
    /// the fixed-wing's waypoint acceptance radius when it is larger than NAV_ACC_RAD.
    pub fn switch_distance_m(&self, ground_m_s: f32, multiplier: f32) -> f32 {
        (self.track_error_bound_m(ground_m_s) * multiplier).min(500.0)
    }
}

// Measured on PX4 SITL (plane-mission at ×4, fixtures/px4-traces/plane-mission-x4.tlog): what
// SIH's airplane (0.3 kg, SIH_T_MAX 6 N, SIH_KDV 0.2) does under PX4's controllers.

/// Ground acceleration of the takeoff roll at full throttle, m/s²: 7 m/s 2.0 s after
/// arming, rotating at 9 m/s 0.3 s later.
pub const ROLL_ACC_M_S2: f32 = 7.0;
/// Airspeed change in flight, m/s² (TECS's speed loop).
pub const AIR_ACC_M_S2: f32 = 1.5;
/// Braking on the roll-out after touchdown, m/s²: 10 m/s to a stop in 2.5 s.
pub const ROLLOUT_DECEL_M_S2: f32 = 4.0;
/// The speed the airplane climbs out at, m/s: 11.5–12.0 with its takeoff airspeed at
/// FW_AIRSPD_MIN 10 (full throttle).
pub const CLIMB_OUT_M_S: f32 = 11.7;
/// The speed the airplane cruises at, m/s: with FW_AIRSPD_TRIM 15 it does 12.3–13.8 (12.9 on
/// the straight leg, 13.3 in the loiter) at 80–95 % throttle: its drag caps it.
pub const CRUISE_MAX_M_S: f32 = 13.0;
/// The climb rate it achieves at full throttle, m/s: 4.0–4.4 (FW_T_CLMB_MAX 5 is not reached).
pub const CLIMB_MAX_M_S: f32 = 4.2;
/// Its speed on the landing approach, m/s: 10.0–10.5 (FW_AIRSPD_MIN 10).
pub const APPROACH_M_S: f32 = 10.4;
/// Time of the rotation: the pitch constraints ramp in over RWTO_ROT_TIME, s.
pub const ROTATION_S: f32 = 1.0;

/// What the fixed-wing controllers are asked to fly.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FwSetpoint {
    /// Engine off: on the ground it rolls to a stop; in the air it glides down.
    Idle,
    /// Runway takeoff along `bearing_rad` from `start_ne_m`, climbing to `alt_d_m` (down,
    /// m) past the clearance height.
    Takeoff {
        /// Where the roll started, local NE, m.
        start_ne_m: [f32; 2],
        /// Course of the runway, rad.
        bearing_rad: f32,
        /// Altitude to climb to, down, m.
        alt_d_m: f32,
    },
    /// Follow the line from `from_ne_m` to (and past) `to_ne_m` at `alt_d_m`.
    Line {
        /// Start of the segment, local NE, m.
        from_ne_m: [f32; 2],
        /// Its end, local NE, m.
        to_ne_m: [f32; 2],
        /// Altitude, down, m.
        alt_d_m: f32,
        /// Airspeed, m/s.
        airspeed_m_s: f32,
    },
    /// Circle `center_ne_m` at `radius_m` (positive clockwise seen from above) at `alt_d_m`.
    Loiter {
        /// Centre, local NE, m.
        center_ne_m: [f32; 2],
        /// Radius, m; negative: counter-clockwise.
        radius_m: f32,
        /// Altitude, down, m.
        alt_d_m: f32,
        /// Airspeed, m/s.
        airspeed_m_s: f32,
    },
    /// Land on `land_ne_m` (at the pad's height `land_d_m`), approaching on the line from
    /// `from_ne_m`.
    Land {
        /// Start of the approach, local NE, m.
        from_ne_m: [f32; 2],
        /// Its altitude, down, m: the glide path is the line from there to the touchdown
        /// point (what PX4's feasibility check holds to FW_LND_ANG).
        from_d_m: f32,
        /// Touchdown point, local NE, m.
        land_ne_m: [f32; 2],
        /// The ground there, down, m.
        land_d_m: f32,
    },
}

/// The controllers' state between steps.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct FwState {
    /// Since when the takeoff has run (its throttle ramp), s.
    takeoff_s: f32,
    /// Rotated: climbing out.
    rotated: bool,
    /// Flaring (stays on to the touchdown).
    flaring: bool,
    /// Roll commanded by the guidance last step, rad (the roll slews towards it).
    roll_cmd_rad: f32,
}

impl FwState {
    /// Forget a takeoff or landing in progress (a new setpoint of another kind).
    pub fn reset(&mut self) {
        *self = FwState::default();
    }

    /// The takeoff has left the runway.
    pub fn rotated(&self) -> bool {
        self.rotated
    }
}

/// Unit tangent and signed track error (positive right of the path) of a line or circle.
fn path(sp: &FwSetpoint, pos: [f32; 2]) -> Option<([f32; 2], f32, f32)> {
    match *sp {
        FwSetpoint::Line {
            from_ne_m, to_ne_m, ..
        }
        | FwSetpoint::Land {
            from_ne_m,
            land_ne_m: to_ne_m,
            ..
        } => {
            let (dn, de) = (to_ne_m[0] - from_ne_m[0], to_ne_m[1] - from_ne_m[1]);
            let len = dn.hypot(de);
            let t = if len > 1e-3 {
                [dn / len, de / len]
            } else {
                // A point: fly straight at it.
                let (pn, pe) = (to_ne_m[0] - pos[0], to_ne_m[1] - pos[1]);
                let d = pn.hypot(pe).max(1e-3);
                return Some(([pn / d, pe / d], 0.0, 0.0));
            };
            let (rn, re) = (pos[0] - from_ne_m[0], pos[1] - from_ne_m[1]);
            // Cross product: positive when the vehicle is right of the path.
            let e = t[0] * re - t[1] * rn;
            Some((t, e, 0.0))
        }
        FwSetpoint::Loiter {
            center_ne_m,
            radius_m,
            ..
        } => {
            let (rn, re) = (pos[0] - center_ne_m[0], pos[1] - center_ne_m[1]);
            let d = rn.hypot(re).max(1e-3);
            let (un, ue) = (rn / d, re / d);
            let r = radius_m.abs().max(1.0);
            // Clockwise: the tangent is the radial turned right.
            let cw = radius_m >= 0.0;
            let t = if cw { [-ue, un] } else { [ue, -un] };
            // Outside the circle is left of a clockwise path.
            let e = if cw { r - d } else { d - r };
            let curvature = if cw { 1.0 / r } else { -1.0 / r };
            Some((t, e, curvature))
        }
        _ => None,
    }
}

fn dist2(a: [f32; 2], b: [f32; 2]) -> f32 {
    (a[0] - b[0]).hypot(a[1] - b[1])
}

/// Distance left along the line `from` → `to` to `to`, m (negative once past it).
fn along_left(from: [f32; 2], to: [f32; 2], pos: [f32; 2]) -> f32 {
    let (dn, de) = (to[0] - from[0], to[1] - from[1]);
    let len = dn.hypot(de);
    if len < 1e-3 {
        return dist2(pos, to);
    }
    ((to[0] - pos[0]) * dn + (to[1] - pos[1]) * de) / len
}

/// The course NPFG steers for on a path: the tangent, turned towards the path by the
/// look-ahead angle's complement.
fn npfg_course(t: [f32; 2], e: f32, bound: f32) -> f32 {
    let n = (e.abs() / bound.max(1e-3)).min(1.0);
    let look_ahead = core::f32::consts::FRAC_PI_2 * (n - 1.0) * (n - 1.0);
    // The normal pointing back to the path.
    let back = if e > 0.0 {
        [t[1], -t[0]]
    } else {
        [-t[1], t[0]]
    };
    let (s, c) = look_ahead.sin_cos();
    let v = [c * back[0] + s * t[0], c * back[1] + s * t[1]];
    v[1].atan2(v[0])
}

/// Advance `body` by `dt_s` on `sp`. `engine` is false while disarmed.
pub fn step(
    body: &mut Body,
    st: &mut FwState,
    sp: &FwSetpoint,
    engine: bool,
    lim: &FwLimits,
    dt_s: f32,
) {
    let prev_vel = body.vel_ned_m_s;
    let (prev_roll, prev_pitch, prev_yaw) = (body.roll_rad, body.pitch_rad, body.yaw_rad);
    let mut speed = body.ground_speed_m_s();
    let pos = [body.pos_ned_m[0], body.pos_ned_m[1]];
    let sp = if engine { *sp } else { FwSetpoint::Idle };
    let mut roll_cmd = 0.0;
    let mut vd = body.vel_ned_m_s[2];
    let climb_max = lim.climb_m_s.min(CLIMB_MAX_M_S);
    // TECS: the height error over FW_T_ALT_TC plus the setpoint's own height rate (`ff_up`).
    let height_rate = |target_d: f32, vd_now: f32, ff_up: f32| {
        let err_up = body.pos_ned_m[2] - target_d;
        let want = (ff_up + err_up / lim.alt_tc_s.max(0.1)).clamp(-lim.sink_m_s, climb_max);
        // The height rate itself changes at ~g/4 (TECS's pitch loop).
        let up = -vd_now;
        let up = up + (want - up).clamp(-G * 0.25 * dt_s, G * 0.25 * dt_s);
        -up
    };
    match sp {
        FwSetpoint::Idle => {
            st.reset();
            if body.on_ground {
                speed = (speed - ROLLOUT_DECEL_M_S2 * dt_s).max(0.0);
                vd = 0.0;
            } else {
                // Gliding down at the minimum sink.
                vd = (vd + G * 0.25 * dt_s).min(lim.sink_m_s);
            }
        }
        FwSetpoint::Takeoff {
            bearing_rad,
            alt_d_m,
            start_ne_m,
        } => {
            st.takeoff_s += dt_s;
            let throttle = (st.takeoff_s / lim.ramp_s.max(0.01)).min(1.0);
            if !st.rotated {
                // The ground roll holds the heading it started with.
                speed += ROLL_ACC_M_S2 * throttle * dt_s;
                vd = 0.0;
                if speed > 0.9 * lim.takeoff_m_s {
                    st.rotated = true;
                    st.takeoff_s = 0.0;
                }
            } else {
                speed += (CLIMB_OUT_M_S - speed).clamp(-AIR_ACC_M_S2 * dt_s, AIR_ACC_M_S2 * dt_s);
                // Climb-out at the maximum climb rate, ramped in over the rotation.
                let k = (st.takeoff_s / ROTATION_S).min(1.0);
                // (It holds the climb rate to the clearance altitude and past it: the takeoff
                // item is reached on crossing its altitude.)
                vd = if body.pos_ned_m[2] > alt_d_m {
                    -climb_max * k
                } else {
                    0.0
                };
                // Off the ground, NPFG steers onto the line from the roll's start along the
                // takeoff course (towards the takeoff waypoint in a mission).
                let line = FwSetpoint::Line {
                    from_ne_m: start_ne_m,
                    to_ne_m: [
                        start_ne_m[0] + bearing_rad.cos() * 1000.0,
                        start_ne_m[1] + bearing_rad.sin() * 1000.0,
                    ],
                    alt_d_m,
                    airspeed_m_s: CLIMB_OUT_M_S,
                };
                if !body.on_ground {
                    roll_cmd = lateral_roll(body, &line, pos, speed, lim);
                }
            }
        }
        FwSetpoint::Line {
            alt_d_m,
            airspeed_m_s,
            ..
        }
        | FwSetpoint::Loiter {
            alt_d_m,
            airspeed_m_s,
            ..
        } => {
            let want = airspeed_m_s.min(CRUISE_MAX_M_S);
            speed += (want - speed).clamp(-AIR_ACC_M_S2 * dt_s, AIR_ACC_M_S2 * dt_s);
            vd = height_rate(alt_d_m, vd, 0.0);
            roll_cmd = lateral_roll(body, &sp, pos, speed, lim);
        }
        FwSetpoint::Land {
            from_ne_m,
            from_d_m,
            land_ne_m,
            land_d_m,
        } => {
            let ground_h = land_d_m - body.pos_ned_m[2];
            if body.on_ground {
                speed = (speed - ROLLOUT_DECEL_M_S2 * dt_s).max(0.0);
                vd = 0.0;
            } else {
                speed += (APPROACH_M_S - speed).clamp(-AIR_ACC_M_S2 * dt_s, AIR_ACC_M_S2 * dt_s);
                if ground_h <= lim.flare_m {
                    st.flaring = true;
                }
                if st.flaring {
                    vd += (lim.flare_sink_m_s - vd).clamp(-G * 0.5 * dt_s, G * 0.5 * dt_s);
                } else {
                    // The glide path: the line from the approach's start to the touchdown
                    // point, at most FW_LND_ANG steep; past the point, the ground.
                    let total = dist2(from_ne_m, land_ne_m).max(1.0);
                    let left = along_left(from_ne_m, land_ne_m, pos);
                    let start_h = (land_d_m - from_d_m).max(0.0);
                    let slope_h = (start_h * left / total)
                        .min(left.max(0.0) * lim.land_slope_rad.tan())
                        .max(0.0);
                    // Aim below the ground past the point, so the flare is reached.
                    let target_h = if left > 0.0 { slope_h } else { -1.0 };
                    let ff_up = if left > 0.0 && slope_h > 0.0 {
                        -speed * (slope_h / left.max(1.0))
                    } else {
                        -lim.flare_sink_m_s
                    };
                    vd = height_rate(land_d_m - target_h, vd, ff_up);
                }
                roll_cmd = lateral_roll(body, &sp, pos, speed, lim);
            }
        }
    }
    if !body.on_ground || speed > 0.0 {
        // The roll follows its command with NPFG_ROLL_TC; the course turns with the roll.
        let k = (dt_s / lim.roll_tc_s.max(dt_s)).min(1.0);
        body.roll_rad += (roll_cmd - body.roll_rad) * k;
        if body.on_ground {
            body.roll_rad = 0.0;
        } else if speed > 1.0 {
            body.yaw_rad = wrap_pi(body.yaw_rad + G * body.roll_rad.tan() / speed * dt_s);
        }
    }
    st.roll_cmd_rad = roll_cmd;
    let (s, c) = body.yaw_rad.sin_cos();
    body.vel_ned_m_s = [speed * c, speed * s, vd];
    for i in 0..3 {
        body.pos_ned_m[i] += body.vel_ned_m_s[i] * dt_s;
    }
    if body.pos_ned_m[2] >= 0.0 && body.vel_ned_m_s[2] >= 0.0 {
        body.pos_ned_m[2] = 0.0;
        body.vel_ned_m_s[2] = 0.0;
        body.on_ground = true;
    } else if body.pos_ned_m[2] < 0.0 {
        body.on_ground = false;
    }
    for ((a, v), p) in body
        .acc_ned_m_s2
        .iter_mut()
        .zip(body.vel_ned_m_s)
        .zip(prev_vel)
    {
        *a = (v - p) / dt_s;
    }
    body.pitch_rad = if speed > 1.0 {
        (-body.vel_ned_m_s[2] / speed).atan() + if body.on_ground { 0.0 } else { 0.05 }
    } else {
        0.0
    };
    body.rates_rad_s = [
        (body.roll_rad - prev_roll) / dt_s,
        (body.pitch_rad - prev_pitch) / dt_s,
        wrap_pi(body.yaw_rad - prev_yaw) / dt_s,
    ];
}

/// NPFG's roll for a line, circle or approach: the bearing error's lateral acceleration plus
/// the path's centripetal one, as a roll angle within FW_R_LIM.
fn lateral_roll(body: &Body, sp: &FwSetpoint, pos: [f32; 2], speed: f32, lim: &FwLimits) -> f32 {
    let Some((t, e, curvature)) = path(sp, pos) else {
        return 0.0;
    };
    let v = speed.max(1.0);
    let bound = lim.track_error_bound_m(v);
    let want = npfg_course(t, e, bound);
    let err = wrap_pi(want - body.yaw_rad);
    let gain = 4.0 * core::f32::consts::PI * lim.damping / lim.period_s.max(0.1);
    // The feed-forward counts only on the circle (near the path).
    let on_path = 1.0 - (e.abs() / bound.max(1e-3)).min(1.0);
    let acc = v * gain * err + v * v * curvature * on_path;
    (acc / G).atan().clamp(-lim.roll_max_rad, lim.roll_max_rad)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lim() -> FwLimits {
        FwLimits {
            trim_m_s: 15.0,
            takeoff_m_s: 10.0,
            climb_m_s: 5.0,
            sink_m_s: 5.0,
            alt_tc_s: 5.0,
            roll_max_rad: 50f32.to_radians(),
            roll_tc_s: 0.5,
            period_s: 10.0,
            damping: 0.7,
            ramp_s: 2.0,
            land_slope_rad: 5f32.to_radians(),
            flare_m: 0.5,
            flare_sink_m_s: 0.25,
        }
    }

    fn fly(b: &mut Body, st: &mut FwState, sp: &FwSetpoint, secs: f32) {
        for _ in 0..(secs * 250.0) as u32 {
            step(b, st, sp, true, &lim(), 0.004);
        }
    }

    #[test]
    fn rolls_rotates_and_climbs_out_along_the_runway() {
        let mut b = Body::default();
        let mut st = FwState::default();
        let sp = FwSetpoint::Takeoff {
            start_ne_m: [0.0, 0.0],
            bearing_rad: core::f32::consts::FRAC_PI_2,
            alt_d_m: -50.0,
        };
        // The roll holds the heading (north) it started with.
        fly(&mut b, &mut st, &sp, 2.0);
        assert!(b.on_ground && b.pos_ned_m[0] > 3.0 && b.pos_ned_m[1] == 0.0);
        assert!((b.ground_speed_m_s() - 7.0).abs() < 0.1);
        fly(&mut b, &mut st, &sp, 20.0);
        assert!(st.rotated() && !b.on_ground);
        assert!(b.height_m() > 30.0, "{}", b.height_m());
        // Then turns onto the runway's course, east.
        assert!(
            (b.yaw_rad - core::f32::consts::FRAC_PI_2).abs() < 0.2,
            "{}",
            b.yaw_rad
        );
    }

    #[test]
    fn holds_a_circle_of_the_loiter_radius() {
        let mut b = Body {
            on_ground: false,
            pos_ned_m: [0.0, 0.0, -50.0],
            vel_ned_m_s: [15.0, 0.0, 0.0],
            ..Default::default()
        };
        let mut st = FwState::default();
        let sp = FwSetpoint::Loiter {
            center_ne_m: [200.0, 0.0],
            radius_m: 80.0,
            alt_d_m: -50.0,
            airspeed_m_s: 15.0,
        };
        fly(&mut b, &mut st, &sp, 120.0);
        let d = (b.pos_ned_m[0] - 200.0).hypot(b.pos_ned_m[1]);
        assert!((d - 80.0).abs() < 5.0, "{d}");
        assert!((b.height_m() - 50.0).abs() < 1.0);
    }

    #[test]
    fn lands_on_the_point_and_stops() {
        let mut b = Body {
            on_ground: false,
            pos_ned_m: [-300.0, 0.0, -25.0],
            vel_ned_m_s: [15.0, 0.0, 0.0],
            ..Default::default()
        };
        let mut st = FwState::default();
        let sp = FwSetpoint::Land {
            from_ne_m: [-300.0, 0.0],
            from_d_m: -25.0,
            land_ne_m: [0.0, 0.0],
            land_d_m: 0.0,
        };
        fly(&mut b, &mut st, &sp, 60.0);
        assert!(b.on_ground && b.ground_speed_m_s() == 0.0);
        assert!(b.pos_ned_m[0].abs() < 60.0, "{:?}", b.pos_ned_m);
    }
}
