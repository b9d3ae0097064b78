//! A multicopter as a point mass with PX4-like limits, in the local NED frame of the pad.
//!
//! The position controller is PX4's in spirit: a velocity setpoint from the position error
//! (P gain `MPC_XY_P` 0.95, braking so the vehicle can stop at the target with half the
//! horizontal acceleration limit, speed capped at the cruise speed), vertical speed capped at the
//! climb/descent limits, and the velocity slewed by the acceleration limits. Attitude follows
//! from the acceleration (tilt = atan(a/g)), yaw slews at `MPC_YAWRAUTO_MAX`. The ground is the
//! plane z = 0: resting on it holds the vehicle still until thrust asks to climb.

use nexus_core::offboard::geo::wrap_pi_open_below_f32 as wrap_pi;

/// Standard gravity, m/s².
pub const G: f32 = 9.80665;
/// Horizontal position P gain (PX4 MPC_XY_P): offboard and manual position setpoints.
pub const XY_P: f32 = 0.95;
/// Share of MPC_ACC_HOR PX4's jerk-limited auto trajectory (missions, reposition, RTL) gains
/// and sheds speed with: box-x4's 15–19 m legs peak at 3.8 m/s, PX4's 15 m reposition
/// takes ~6.5 s, a 20 m one 7.5 s (docs/px4-wire.md §Reposition).
pub const AUTO_ACC_SHARE: f32 = 0.35;
/// Vertical position P gain (PX4 MPC_Z_P).
pub const Z_P: f32 = 1.0;

/// A position setpoint with the speed limits of the leg flying to it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PosSp {
    /// Target, local NED, m.
    pub target_ned_m: [f32; 3],
    /// Horizontal speed limit, m/s.
    pub cruise_m_s: f32,
    /// Climb speed limit, m/s.
    pub up_m_s: f32,
    /// Descent speed limit, m/s.
    pub down_m_s: f32,
    /// Descend at exactly this speed regardless of the target's z (landing), m/s.
    pub descend_m_s: Option<f32>,
    /// Heading to turn to, rad (NED: 0 north, +π/2 east); `None` keeps the current one.
    pub yaw_rad: Option<f32>,
    /// Flown by PX4's auto trajectory (gentler acceleration and braking, speed held back while
    /// the heading turns) rather than straight by the position controller (offboard).
    pub auto: bool,
}

/// What the controller is asked to do.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ControlSetpoint {
    /// No thrust: on the ground the vehicle stays; in the air it falls.
    Idle,
    /// Fly to a position.
    Position(PosSp),
    /// Follow a velocity, local NED m/s, with an optional heading or yaw rate.
    Velocity {
        /// Velocity, NED, m/s.
        vel_ned_m_s: [f32; 3],
        /// Heading, rad.
        yaw_rad: Option<f32>,
        /// Yaw rate, rad/s (used when no heading is given).
        yaw_rate_rad_s: Option<f32>,
        /// Horizontal acceleration limit of this setpoint, m/s² (`None`: MPC_ACC_HOR).
        acc_hor_m_s2: Option<f32>,
    },
}

/// Acceleration and yaw-rate limits.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MotionLimits {
    /// Horizontal acceleration, m/s² (MPC_ACC_HOR).
    pub acc_hor_m_s2: f32,
    /// Upward acceleration, m/s² (MPC_ACC_UP_MAX).
    pub acc_up_m_s2: f32,
    /// Downward acceleration, m/s² (MPC_ACC_DOWN_MAX).
    pub acc_down_m_s2: f32,
    /// Yaw rate, rad/s (MPC_YAWRAUTO_MAX).
    pub yaw_rate_rad_s: f32,
}

/// The vehicle's true state.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Body {
    /// Position, local NED relative to the pad, m.
    pub pos_ned_m: [f32; 3],
    /// Velocity, NED, m/s.
    pub vel_ned_m_s: [f32; 3],
    /// Acceleration of the last step, NED, m/s².
    pub acc_ned_m_s2: [f32; 3],
    /// Roll, rad.
    pub roll_rad: f32,
    /// Pitch, rad.
    pub pitch_rad: f32,
    /// Heading, rad, NED.
    pub yaw_rad: f32,
    /// Body rates (roll, pitch, yaw), rad/s.
    pub rates_rad_s: [f32; 3],
    /// Resting on the ground.
    pub on_ground: bool,
}

impl Default for Body {
    fn default() -> Self {
        Body {
            pos_ned_m: [0.0; 3],
            vel_ned_m_s: [0.0; 3],
            acc_ned_m_s2: [0.0; 3],
            roll_rad: 0.0,
            pitch_rad: 0.0,
            yaw_rad: 0.0,
            rates_rad_s: [0.0; 3],
            on_ground: true,
        }
    }
}

fn slew(current: f32, desired: f32, max_up: f32, max_down: f32) -> f32 {
    (desired - current).clamp(-max_down, max_up) + current
}

impl Body {
    /// Height above the pad, m.
    pub fn height_m(&self) -> f32 {
        -self.pos_ned_m[2]
    }

    /// Horizontal speed, m/s.
    pub fn ground_speed_m_s(&self) -> f32 {
        self.vel_ned_m_s[0].hypot(self.vel_ned_m_s[1])
    }

    /// The point where the vehicle would stop if it braked now (PX4 loiter's stopping point).
    pub fn stopping_point(&self, lim: &MotionLimits) -> [f32; 3] {
        let v = self.ground_speed_m_s();
        let a = (lim.acc_hor_m_s2 * 0.5).max(0.1);
        let k = if v > 1e-3 { v / (2.0 * a) } else { 0.0 };
        [
            self.pos_ned_m[0] + self.vel_ned_m_s[0] * k,
            self.pos_ned_m[1] + self.vel_ned_m_s[1] * k,
            self.pos_ned_m[2],
        ]
    }

    fn desired_velocity(
        &self,
        sp: &ControlSetpoint,
        lim: &MotionLimits,
    ) -> ([f32; 3], Option<f32>, Option<f32>) {
        match *sp {
            ControlSetpoint::Idle => ([0.0; 3], None, None),
            ControlSetpoint::Velocity {
                vel_ned_m_s,
                yaw_rad,
                yaw_rate_rad_s,
                ..
            } => (vel_ned_m_s, yaw_rad, yaw_rate_rad_s),
            ControlSetpoint::Position(p) => {
                let dn = p.target_ned_m[0] - self.pos_ned_m[0];
                let de = p.target_ned_m[1] - self.pos_ned_m[1];
                let d = dn.hypot(de);
                let brake = lim.acc_hor_m_s2 * if p.auto { AUTO_ACC_SHARE } else { 0.8 };
                let speed = p.cruise_m_s.min((2.0 * brake.max(0.1) * d).sqrt());
                let mut speed = speed.min(XY_P * d);
                if let (true, Some(y)) = (p.auto, p.yaw_rad) {
                    // PX4 turns at a corner before it speeds up along the new leg (box-x4: each
                    // 90° turn costs ~1.5 s): hold back until the heading is within ~30°.
                    let e = wrap_pi(y - self.yaw_rad).abs();
                    speed *= if e > 0.5 { 0.0 } else { e.cos().powi(3) };
                }
                let (vn, ve) = if d > 1e-4 {
                    (dn / d * speed, de / d * speed)
                } else {
                    (0.0, 0.0)
                };
                let vd = match p.descend_m_s {
                    Some(v) => v,
                    None => {
                        let dz = p.target_ned_m[2] - self.pos_ned_m[2];
                        let acc = if dz > 0.0 {
                            lim.acc_down_m_s2
                        } else {
                            lim.acc_up_m_s2
                        };
                        let mag = (Z_P * dz.abs()).min((2.0 * acc * 0.8 * dz.abs()).sqrt());
                        (mag * dz.signum()).clamp(-p.up_m_s, p.down_m_s)
                    }
                };
                ([vn, ve, vd], p.yaw_rad, None)
            }
        }
    }

    /// Advance by `dt_s`. `thrust` is false while disarmed or spooling up.
    pub fn step(&mut self, sp: &ControlSetpoint, thrust: bool, lim: &MotionLimits, dt_s: f32) {
        let prev_vel = self.vel_ned_m_s;
        let (prev_roll, prev_pitch, prev_yaw) = (self.roll_rad, self.pitch_rad, self.yaw_rad);
        if !thrust || matches!(sp, ControlSetpoint::Idle) {
            if self.on_ground {
                self.vel_ned_m_s = [0.0; 3];
            } else {
                // Motors off in the air: a ballistic fall, horizontal speed bleeding off.
                self.vel_ned_m_s[0] *= 1.0 - 0.2 * dt_s;
                self.vel_ned_m_s[1] *= 1.0 - 0.2 * dt_s;
                self.vel_ned_m_s[2] += G * dt_s;
            }
        } else {
            let (v_des, yaw_sp, yaw_rate_sp) = self.desired_velocity(sp, lim);
            if self.on_ground && v_des[2] > -0.05 {
                // Thrust below hover on the ground: nothing moves.
                self.vel_ned_m_s = [0.0; 3];
            } else {
                // PX4's auto trajectory is jerk-limited (MPC_JERK_AUTO): on the traces' legs it
                // gains speed at about half of MPC_ACC_HOR.
                let auto = matches!(sp, ControlSetpoint::Position(p) if p.auto);
                let acc = match sp {
                    ControlSetpoint::Velocity {
                        acc_hor_m_s2: Some(a),
                        ..
                    } => *a,
                    _ if auto => lim.acc_hor_m_s2 * AUTO_ACC_SHARE,
                    _ => lim.acc_hor_m_s2,
                };
                let dvh = acc * dt_s;
                let dn = v_des[0] - self.vel_ned_m_s[0];
                let de = v_des[1] - self.vel_ned_m_s[1];
                let dh = dn.hypot(de);
                let k = if dh > dvh { dvh / dh } else { 1.0 };
                self.vel_ned_m_s[0] += dn * k;
                self.vel_ned_m_s[1] += de * k;
                self.vel_ned_m_s[2] = slew(
                    self.vel_ned_m_s[2],
                    v_des[2],
                    lim.acc_down_m_s2 * dt_s,
                    lim.acc_up_m_s2 * dt_s,
                );
                self.on_ground = false;
            }
            let max_dyaw = lim.yaw_rate_rad_s * dt_s;
            if let Some(y) = yaw_sp {
                let e = wrap_pi(y - self.yaw_rad);
                self.yaw_rad = wrap_pi(self.yaw_rad + e.clamp(-max_dyaw, max_dyaw));
            } else if let Some(r) = yaw_rate_sp {
                if !self.on_ground {
                    let r = r.clamp(-lim.yaw_rate_rad_s, lim.yaw_rate_rad_s);
                    self.yaw_rad = wrap_pi(self.yaw_rad + r * dt_s);
                }
            }
        }
        for i in 0..3 {
            self.pos_ned_m[i] += self.vel_ned_m_s[i] * dt_s;
        }
        if self.pos_ned_m[2] >= 0.0 {
            self.pos_ned_m[2] = 0.0;
            if self.vel_ned_m_s[2] >= 0.0 {
                self.on_ground = true;
                self.vel_ned_m_s = [0.0; 3];
            }
        }
        for ((a, v), p) in self
            .acc_ned_m_s2
            .iter_mut()
            .zip(self.vel_ned_m_s)
            .zip(prev_vel)
        {
            *a = (v - p) / dt_s;
        }
        // Tilt needed for the horizontal acceleration plus a little drag at speed.
        let an = self.acc_ned_m_s2[0] + 0.05 * self.vel_ned_m_s[0];
        let ae = self.acc_ned_m_s2[1] + 0.05 * self.vel_ned_m_s[1];
        let (s, c) = self.yaw_rad.sin_cos();
        let fwd = an * c + ae * s;
        let right = -an * s + ae * c;
        if self.on_ground {
            self.roll_rad = 0.0;
            self.pitch_rad = 0.0;
        } else {
            self.pitch_rad = (-fwd / G).atan();
            self.roll_rad = (right / G).atan();
        }
        self.rates_rad_s = [
            (self.roll_rad - prev_roll) / dt_s,
            (self.pitch_rad - prev_pitch) / dt_s,
            wrap_pi(self.yaw_rad - prev_yaw) / dt_s,
        ];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lim() -> MotionLimits {
        MotionLimits {
            acc_hor_m_s2: 3.0,
            acc_up_m_s2: 4.0,
            acc_down_m_s2: 3.0,
            yaw_rate_rad_s: 45f32.to_radians(),
        }
    }

    /// A non-auto position setpoint at `target_ned_m` with PX4's default speeds.
    fn pos_sp(target_ned_m: [f32; 3]) -> PosSp {
        PosSp {
            target_ned_m,
            cruise_m_s: 5.0,
            up_m_s: 3.0,
            down_m_s: 1.5,
            descend_m_s: None,
            yaw_rad: None,
            auto: false,
        }
    }

    /// A body in the air at `height_m` above the pad.
    fn airborne(height_m: f32) -> Body {
        Body {
            on_ground: false,
            pos_ned_m: [0.0, 0.0, -height_m],
            ..Default::default()
        }
    }

    fn fly(b: &mut Body, sp: &ControlSetpoint, secs: f32) {
        for _ in 0..(secs * 250.0) as u32 {
            b.step(sp, true, &lim(), 0.004);
        }
    }

    #[test]
    fn climbs_holds_and_repositions_like_px4() {
        let mut b = Body::default();
        let up = ControlSetpoint::Position(pos_sp([0.0, 0.0, -5.0]));
        fly(&mut b, &up, 10.0);
        assert!((b.height_m() - 5.0).abs() < 0.05, "{}", b.height_m());
        assert!(!b.on_ground);
        // 15 m north: PX4 SITL takes ~6.5 s.
        let go = ControlSetpoint::Position(pos_sp([15.0, 0.0, -5.0]));
        let mut t = 0.0;
        while (15.0 - b.pos_ned_m[0]).abs() > 0.1 && t < 20.0 {
            b.step(&go, true, &lim(), 0.004);
            t += 0.004;
        }
        assert!((5.5..8.0).contains(&t), "reached in {t}");
    }

    #[test]
    fn lands_and_falls_when_motors_stop() {
        let mut b = airborne(3.0);
        let land = ControlSetpoint::Position(PosSp {
            descend_m_s: Some(0.7),
            ..pos_sp([0.0, 0.0, 0.0])
        });
        fly(&mut b, &land, 6.0);
        assert!(b.on_ground && b.height_m() == 0.0);
        b.on_ground = false;
        b.pos_ned_m[2] = -10.0;
        for _ in 0..1000 {
            b.step(&ControlSetpoint::Idle, false, &lim(), 0.004);
        }
        assert!(b.on_ground);
    }

    #[test]
    fn turns_at_the_yaw_rate_limit() {
        let mut b = airborne(5.0);
        let sp = ControlSetpoint::Position(PosSp {
            yaw_rad: Some(1.0),
            ..pos_sp([0.0, 0.0, -5.0])
        });
        fly(&mut b, &sp, 1.0);
        assert!((b.yaw_rad - 45f32.to_radians()).abs() < 0.02);
        fly(&mut b, &sp, 1.0);
        assert!((b.yaw_rad - 1.0).abs() < 1e-4);
    }
}
