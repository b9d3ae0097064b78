//! COMMAND_LONG / COMMAND_INT handling and COMMAND_ACK, as PX4's mavlink receiver and
//! commander answer them.
//!
//! * COMMAND_INT must use frame 5 (GLOBAL_INT), else MAV_RESULT_COMMAND_UNSUPPORTED_MAV_FRAME (9).
//! * DO_SET_MODE as COMMAND_LONG is acked twice: ACCEPTED at once, then commander's result.
//! * DO_REPOSITION is COMMAND_INT only (COMMAND_LONG: MAV_RESULT_COMMAND_INT_ONLY, 8);
//!   param2 must be exactly the "change mode" bit (1) else UNSUPPORTED (3). Accepted, it
//!   switches to Hold; a target the geofence does not allow is refused by the navigator after
//!   the ACCEPTED ack: "Reposition is outside geofence" (critical), the hold kept.
//! * Unknown commands: UNSUPPORTED (3).
#![allow(deprecated)] // PX4 still answers GET_MESSAGE_INTERVAL and REQUEST_AUTOPILOT_CAPABILITIES.

use super::commander::ArmReason;
use super::geofence::GeofenceAction;
use super::mission::cmd_or_waypoint;
use super::navigator::Reposition;
use super::params::P;
use super::vehicle::Vehicle;
use super::wire::CommandIn;
use mav::{MavCmd, MavResult};
use mavlink::dialects::common as mav;
use mavlink::MessageData;
use nexus_core::Mode;
use num_traits::FromPrimitive;

/// The COMMAND_INT frame PX4 accepts (MAV_FRAME_GLOBAL_INT).
pub const GLOBAL_INT: u8 = 5;
/// AUTOPILOT_VERSION.capabilities of PX4 main SITL (MAVSDK 4 against v1.18 dev).
pub const PX4_CAPABILITIES: u64 = 0xe8ff;
/// AUTOPILOT_VERSION.flight_sw_version: 1.18.0, type byte 0 (dev), as the traces' PX4.
pub const PX4_SW_VERSION: u32 = 0x0112_0000;
/// From an accepted shutdown to the process's exit, µs (PX4 SITL: ~0.5 s).
pub const SHUTDOWN_DELAY_US: u64 = 500_000;

/// MAV_CMD_COMPONENT_ARM_DISARM param2 that forces the arm or disarm (PX4's magic number).
pub const FORCE_ARM_DISARM: i32 = 21196;

/// The mode a DO_SET_MODE asks for (PX4 commander), `Err(())` for an unsupported auto sub mode,
/// `Ok(None)` when nothing is asked.
pub fn desired_mode(base: u8, main: u8, sub: u8) -> Result<Option<Mode>, ()> {
    if base & 0x01 != 0 {
        Ok(match main {
            1 => Some(Mode::Manual),
            2 => Some(Mode::Altitude),
            3 => Some(if sub == 2 {
                Mode::PositionSlow
            } else {
                Mode::Position
            }),
            4 => Some(match sub {
                0 | 4 => Mode::Mission,
                2 => Mode::Takeoff,
                3 => Mode::Hold,
                5 => Mode::Rtl,
                6 => Mode::Land,
                8 => Mode::FollowMe,
                9 => Mode::PrecisionLand,
                _ => return Err(()),
            }),
            5 => Some(Mode::Acro),
            6 => Some(Mode::Offboard),
            7 => Some(Mode::Stabilized),
            _ => None,
        })
    } else if base & 0x04 != 0 {
        Ok(Some(Mode::Mission))
    } else if base & 0x40 != 0 {
        Ok(Some(if base & 0x08 != 0 {
            Mode::Position
        } else if base & 0x10 != 0 {
            Mode::Stabilized
        } else {
            Mode::Manual
        }))
    } else {
        Ok(None)
    }
}

impl Vehicle {
    fn ack(&mut self, command: u16, result: MavResult, to: (u8, u8)) {
        self.io.out.push(&mav::COMMAND_ACK_DATA {
            command: cmd_or_waypoint(command),
            result,
            progress: 0,
            result_param2: 0,
            target_system: to.0,
            target_component: to.1,
        });
    }

    /// DO_SET_MODE core; returns commander's result. A rejection is explained in a text only
    /// to a mission planner (compid 190), as commander does.
    pub(super) fn set_mode_from(
        &mut self,
        base: f32,
        main: f32,
        sub: f32,
        src: (u8, u8),
    ) -> MavResult {
        let now = self.now_us;
        let desired = match desired_mode(base as u8, main as u8, sub as u8) {
            Ok(d) => d,
            Err(()) => {
                self.io
                    .critical(now, "commander", "Unsupported auto mode\t");
                return MavResult::MAV_RESULT_TEMPORARILY_REJECTED;
            }
        };
        let Some(m) = desired else {
            return MavResult::MAV_RESULT_ACCEPTED;
        };
        if m == Mode::Takeoff {
            // A mode switch takes off to MIS_TAKEOFF_ALT; only NAV_TAKEOFF carries an altitude.
            self.nav.takeoff_alt_amsl = None;
        }
        let c = self.conditions();
        if self.commander.change_mode(m, m == Mode::Land, &c) {
            MavResult::MAV_RESULT_ACCEPTED
        } else {
            if src.1 == 190 {
                self.commander.print_reject(now, m, &mut self.io);
            }
            MavResult::MAV_RESULT_TEMPORARILY_REJECTED
        }
    }

    fn mode_cmd(&mut self, m: Mode, force: bool) -> MavResult {
        let c = self.conditions();
        if self.commander.change_mode(m, force, &c) {
            MavResult::MAV_RESULT_ACCEPTED
        } else {
            let now = self.now_us;
            self.commander.print_reject(now, m, &mut self.io);
            MavResult::MAV_RESULT_TEMPORARILY_REJECTED
        }
    }

    /// Handle a command addressed to the autopilot (or broadcast).
    pub(super) fn on_command(&mut self, cmd: CommandIn, src: (u8, u8)) {
        if (cmd.target_system != self.sysid && cmd.target_system != 0)
            || (cmd.target_component != self.compid && cmd.target_component != 0)
        {
            return;
        }
        if cmd.frame.is_some_and(|f| f != GLOBAL_INT) {
            self.ack(
                cmd.command,
                MavResult::MAV_RESULT_COMMAND_UNSUPPORTED_MAV_FRAME,
                src,
            );
            return;
        }
        let now = self.now_us;
        let is_long = cmd.frame.is_none();
        if cmd.command == MavCmd::MAV_CMD_INJECT_FAILURE as u16 {
            if let Some(result) = self.inject_failure(&cmd) {
                self.ack(cmd.command, result, src);
            }
            return;
        }
        if self.commander_hung {
            // Commander waits for its power-off: the mavlink module's own answers only.
            match <MavCmd as FromPrimitive>::from_u16(cmd.command) {
                Some(MavCmd::MAV_CMD_DO_SET_MODE) if is_long => {
                    self.ack(cmd.command, MavResult::MAV_RESULT_ACCEPTED, src);
                    return;
                }
                Some(
                    MavCmd::MAV_CMD_DO_SET_MODE
                    | MavCmd::MAV_CMD_COMPONENT_ARM_DISARM
                    | MavCmd::MAV_CMD_NAV_TAKEOFF
                    | MavCmd::MAV_CMD_NAV_LAND
                    | MavCmd::MAV_CMD_NAV_RETURN_TO_LAUNCH
                    | MavCmd::MAV_CMD_DO_REPOSITION
                    | MavCmd::MAV_CMD_MISSION_START
                    | MavCmd::MAV_CMD_DO_SET_HOME
                    | MavCmd::MAV_CMD_PREFLIGHT_REBOOT_SHUTDOWN,
                ) => return,
                _ => {}
            }
        }
        let result = match <MavCmd as FromPrimitive>::from_u16(cmd.command) {
            Some(MavCmd::MAV_CMD_DO_SET_MODE) => {
                if is_long {
                    self.ack(cmd.command, MavResult::MAV_RESULT_ACCEPTED, src);
                }
                self.set_mode_from(cmd.p[0], cmd.p[1], cmd.p[2], src)
            }
            Some(MavCmd::MAV_CMD_COMPONENT_ARM_DISARM) => self.arm_disarm_cmd(&cmd),
            Some(MavCmd::MAV_CMD_NAV_TAKEOFF) => {
                // param7 is the takeoff altitude AMSL when finite.
                self.nav.takeoff_alt_amsl = cmd.p7.is_finite().then_some(cmd.p7);
                let r = self.mode_cmd(Mode::Takeoff, false);
                if r == MavResult::MAV_RESULT_ACCEPTED {
                    self.nav.reactivate();
                }
                r
            }
            Some(MavCmd::MAV_CMD_NAV_LAND) => {
                let r = self.mode_cmd(Mode::Land, true);
                if r == MavResult::MAV_RESULT_ACCEPTED {
                    self.io
                        .info(now, "commander", "Landing at current position\t");
                }
                r
            }
            Some(MavCmd::MAV_CMD_NAV_RETURN_TO_LAUNCH) => {
                let r = self.mode_cmd(Mode::Rtl, false);
                if r == MavResult::MAV_RESULT_ACCEPTED {
                    self.io.info(now, "commander", "Returning to launch\t");
                }
                r
            }
            Some(MavCmd::MAV_CMD_DO_REPOSITION) => {
                if is_long {
                    MavResult::MAV_RESULT_COMMAND_INT_ONLY
                } else {
                    self.reposition(&cmd)
                }
            }
            Some(MavCmd::MAV_CMD_MISSION_START) => self.mission_start_cmd(&cmd),
            Some(MavCmd::MAV_CMD_DO_SET_HOME) => self.set_home_cmd(&cmd, is_long),
            Some(MavCmd::MAV_CMD_SET_MESSAGE_INTERVAL) => {
                // param1 message id, param2 interval µs.
                let t = self.elapsed_us;
                if self.streams.set_interval(cmd.p[0] as u32, cmd.p[1], t) {
                    MavResult::MAV_RESULT_ACCEPTED
                } else {
                    MavResult::MAV_RESULT_DENIED
                }
            }
            Some(MavCmd::MAV_CMD_GET_MESSAGE_INTERVAL) => {
                // MESSAGE_INTERVAL (0: not streamed, as PX4 says it).
                if (0.0..=u16::MAX as f32).contains(&cmd.p[0]) {
                    self.send_message_interval(cmd.p[0] as u16);
                    MavResult::MAV_RESULT_ACCEPTED
                } else {
                    MavResult::MAV_RESULT_DENIED
                }
            }
            Some(MavCmd::MAV_CMD_PREFLIGHT_REBOOT_SHUTDOWN) => {
                // On SITL: a reboot is refused, PX4 keeps running; a
                // shutdown (param1 2) while disarmed is accepted and the process exits 0 ~0.5 s
                // later (docs/px4-wire.md §Launch).
                if cmd.p[0] == 2.0 && !self.commander.armed {
                    self.shutdown_at_us = Some(self.now_us + SHUTDOWN_DELAY_US);
                    MavResult::MAV_RESULT_ACCEPTED
                } else {
                    MavResult::MAV_RESULT_DENIED
                }
            }
            Some(MavCmd::MAV_CMD_REQUEST_MESSAGE) => self.request_message(cmd.p[0], cmd.p[1]),
            // The legacy command PX4's receiver still maps to REQUEST_MESSAGE.
            Some(MavCmd::MAV_CMD_REQUEST_FLIGHT_INFORMATION) => {
                self.send_flight_information();
                MavResult::MAV_RESULT_ACCEPTED
            }
            Some(MavCmd::MAV_CMD_REQUEST_AUTOPILOT_CAPABILITIES) => {
                self.send_autopilot_version();
                MavResult::MAV_RESULT_ACCEPTED
            }
            _ => MavResult::MAV_RESULT_UNSUPPORTED,
        };
        self.ack(cmd.command, result, src);
    }

    /// MAV_CMD_INJECT_FAILURE (param1 unit, param2 type, param3 instance), as PX4 SITL answers
    /// it: refused (DENIED) unless SYS_FAILURE_EN (1 on SITL); otherwise PX4's receiver acks
    /// nothing itself and passes it on, and only the modules that handle a unit answer. SITL's
    /// battery simulator handles the battery (unit 100): type 0 (ok) and 1 (off: the voltage
    /// pinned at empty) ACCEPTED for instance 0, UNSUPPORTED for another; nothing else answers
    /// (measured: GPS, unit 4, and RC signal, unit 104, get no COMMAND_ACK at all). `None`: no
    /// ack.
    fn inject_failure(&mut self, cmd: &CommandIn) -> Option<MavResult> {
        if self.params.i(P::SYS_FAILURE_EN) == 0 {
            return Some(MavResult::MAV_RESULT_DENIED);
        }
        let (unit, ty, instance) = (
            cmd.p[0].round() as i32,
            cmd.p[1].round() as i32,
            cmd.p[2].round() as i32,
        );
        const FAILURE_UNIT_SYSTEM_BATTERY: i32 = 100;
        if unit != FAILURE_UNIT_SYSTEM_BATTERY || !matches!(ty, 0 | 1) {
            return None;
        }
        if instance != 0 {
            return Some(MavResult::MAV_RESULT_UNSUPPORTED);
        }
        self.battery.forced_empty = ty == 1;
        self.io.print(if ty == 1 {
            "WARN  [battery_simulator] CMD_INJECT_FAILURE, battery empty".to_owned()
        } else {
            "INFO  [battery_simulator] CMD_INJECT_FAILURE, battery ok".to_owned()
        });
        Some(MavResult::MAV_RESULT_ACCEPTED)
    }

    /// MAV_CMD_COMPONENT_ARM_DISARM: param1 arm (1) or disarm (0), param2 21196 forces it.
    fn arm_disarm_cmd(&mut self, cmd: &CommandIn) -> MavResult {
        let now = self.now_us;
        let action = cmd.p[0].round();
        if action != 0.0 && action != 1.0 {
            self.io.critical(
                now,
                "commander",
                &format!("Unsupported ARM_DISARM param: {:.3}\t", cmd.p[0]),
            );
            MavResult::MAV_RESULT_UNSUPPORTED
        } else {
            let forced = cmd.p[1].round() as i32 == FORCE_ARM_DISARM;
            let ok = if action == 1.0 {
                self.arm(ArmReason::ExternalCommand, !forced)
            } else {
                self.disarm(ArmReason::ExternalCommand, forced)
            };
            if ok {
                MavResult::MAV_RESULT_ACCEPTED
            } else {
                MavResult::MAV_RESULT_TEMPORARILY_REJECTED
            }
        }
    }

    /// MAV_CMD_MISSION_START: Mission mode and arm, from item param1 when given.
    fn mission_start_cmd(&mut self, cmd: &CommandIn) -> MavResult {
        let now = self.now_us;
        // param1: the first item.
        let c = self.conditions();
        if !c.mission {
            self.io
                .critical(now, "commander", "Mission start denied! No valid mission\t");
            MavResult::MAV_RESULT_DENIED
        } else if cmd.p[0].is_finite()
            && cmd.p[0] >= -1.0
            && (cmd.p[0] as i64) < self.mission.mission().len() as i64
        {
            if cmd.p[0] >= 0.0 {
                self.mission.set_current(cmd.p[0] as u16);
            }
            if self.commander.change_mode(Mode::Mission, false, &c)
                && self.arm(ArmReason::MissionStart, true)
            {
                MavResult::MAV_RESULT_ACCEPTED
            } else {
                self.commander
                    .print_reject(now, Mode::Mission, &mut self.io);
                MavResult::MAV_RESULT_TEMPORARILY_REJECTED
            }
        } else {
            MavResult::MAV_RESULT_DENIED
        }
    }

    /// MAV_CMD_DO_SET_HOME: the current position (param1 1) or the one given (degrees, m AMSL).
    fn set_home_cmd(&mut self, cmd: &CommandIn, is_long: bool) -> MavResult {
        // param1 = 1 uses the current position.
        if self.params.i(P::COM_HOME_EN) == 0 {
            MavResult::MAV_RESULT_DENIED
        } else if cmd.p[0] > 0.5 {
            self.set_home();
            MavResult::MAV_RESULT_ACCEPTED
        } else if cmd.p5.is_finite() && cmd.p6.is_finite() && cmd.p7.is_finite() {
            let (lat, lon) = if is_long {
                (cmd.p5 as f64, cmd.p6 as f64)
            } else {
                (cmd.x as f64 * 1e-7, cmd.y as f64 * 1e-7)
            };
            let ne = self.frame.to_local_ne(lat, lon);
            let d = self.frame.origin().alt_amsl_m - cmd.p7;
            self.home_updates = self.home_updates.wrapping_add(1);
            self.home = Some(super::vehicle::Home {
                ned: [ne[0], ne[1], d],
                yaw: self.body.yaw_rad,
            });
            self.streams.home_changed = true;
            MavResult::MAV_RESULT_ACCEPTED
        } else {
            MavResult::MAV_RESULT_DENIED
        }
    }

    /// MAV_CMD_REQUEST_MESSAGE for message `id` (param1), `param2` as that message reads it.
    fn request_message(&mut self, id: f32, param2: f32) -> MavResult {
        match id as u32 {
            mav::AUTOPILOT_VERSION_DATA::ID => self.send_autopilot_version(),
            mav::FLIGHT_INFORMATION_DATA::ID => self.send_flight_information(),
            // The interval of the message in param2.
            mav::MESSAGE_INTERVAL_DATA::ID => {
                self.send_message_interval(param2.clamp(0.0, u16::MAX as f32) as u16)
            }
            mav::HOME_POSITION_DATA::ID => self.send_home(),
            mav::AVAILABLE_MODES_DATA::ID => match super::modes::requested(param2) {
                Some(modes) => modes.iter().for_each(|m| self.io.out.push(m)),
                None => return MavResult::MAV_RESULT_DENIED,
            },
            mav::CURRENT_MODE_DATA::ID => self.send_current_mode(),
            mav::GPS_GLOBAL_ORIGIN_DATA::ID => self.send_gps_origin(),
            _ => return MavResult::MAV_RESULT_DENIED,
        }
        MavResult::MAV_RESULT_ACCEPTED
    }

    /// MESSAGE_INTERVAL of message `id` as this vehicle streams it.
    fn send_message_interval(&mut self, id: u16) {
        let interval_us = self.streams.interval_us(id as u32);
        self.io.out.push(&mav::MESSAGE_INTERVAL_DATA {
            interval_us,
            message_id: id,
        });
    }

    fn reposition(&mut self, cmd: &CommandIn) -> MavResult {
        let flags = if cmd.p[1].is_finite() && cmd.p[1] >= 0.0 {
            cmd.p[1] as u32
        } else {
            0
        };
        if flags & 1 == 0 || flags & !1 != 0 {
            return MavResult::MAV_RESULT_UNSUPPORTED;
        }
        let r = self.mode_cmd(Mode::Hold, false);
        if r != MavResult::MAV_RESULT_ACCEPTED || !self.commander.armed {
            return r;
        }
        let keep_xy = cmd.x == i32::MAX || cmd.y == i32::MAX;
        let ne = (!keep_xy).then(|| {
            self.frame
                .to_local_ne(cmd.x as f64 * 1e-7, cmd.y as f64 * 1e-7)
        });
        let d = cmd
            .p7
            .is_finite()
            .then(|| self.frame.origin().alt_amsl_m - cmd.p7);
        let speed = (cmd.p[0].is_finite() && cmd.p[0] > 0.0).then_some(cmd.p[0]);
        let yaw = cmd.p[3]
            .is_finite()
            .then(|| nexus_core::offboard::geo::wrap_pi_open_below_f32(cmd.p[3]));
        // The navigator checks the target against the fence (`geofence_allows_position`, when
        // GF_ACTION is neither 0 nor 1; a missing latitude/longitude or altitude is the
        // vehicle's own): outside, it says so and keeps its hold; commander has acked and
        // switched to Hold already.
        let action = GeofenceAction::from_param(self.params.i(P::GF_ACTION));
        if !matches!(action, GeofenceAction::None | GeofenceAction::Warn) {
            let here = self.body.pos_ned_m;
            let ne_t = ne.unwrap_or([here[0], here[1]]);
            let target = [ne_t[0], ne_t[1], d.unwrap_or(here[2])];
            if !self.fence_allows(target) {
                let now = self.now_us;
                self.io
                    .critical(now, "navigator", crate::geofence::REPOSITION_REFUSED);
                return r;
            }
        }
        self.nav.reposition(Reposition { ne, d, speed, yaw });
        r
    }

    /// FLIGHT_INFORMATION as PX4's stream fills it: the vehicle's clock, commander's arming and
    /// takeoff times (µs of the vehicle's clock, 0 when not armed / not taken off since
    /// arming, as commander zeroes them at disarm; PX4 SITL has no UTC, the field names
    /// notwithstanding), COM_FLIGHT_UUID, landing_time 0.
    fn send_flight_information(&mut self) {
        self.io.out.push(&mav::FLIGHT_INFORMATION_DATA {
            arming_time_utc: self.flight_info.0,
            takeoff_time_utc: self.flight_info.1,
            flight_uuid: self.params.i(P::COM_FLIGHT_UUID) as u64,
            time_boot_ms: (self.now_us / 1000) as u32,
            landing_time: 0,
        });
    }

    /// AUTOPILOT_VERSION with the fields that identify PX4 SITL filled as SITL fills them
    /// (mavlink_main.cpp `send_autopilot_capabilities`, boards/px4/sitl): no USB, so vendor and
    /// product id 0 and `board_version` 1 (`px4_board_version()` off NuttX); `uid` words 1 and
    /// 2 of the board's override UUID "SIMULATIONID0000"; `uid2` zeros (POSIX builds have no
    /// GUID); both with `sysid − 1` added, so instances differ as they do on PX4.
    fn send_autopilot_version(&mut self) {
        if self.cfg.hardware_identity {
            self.send_hardware_version();
            return;
        }
        // What PX4 SITL sends (nexus_core::ground_truth's docs): the SITL board's uid, no
        // GUID (a POSIX build), both offset by the instance.
        let instance = self.sysid.wrapping_sub(1);
        let uid = nexus_core::ground_truth::PX4_SITL_UID + u64::from(instance);
        let mut uid2 = [0u8; 18];
        uid2[0] = instance;
        self.io.out.push(&mav::AUTOPILOT_VERSION_DATA {
            // PX4 main (v1.18 dev) SITL, as MAVSDK read it: 0xe8ff, PARAM_FLOAT,
            // PARAM_ENCODE_BYTEWISE and MISSION_RALLY among them.
            capabilities: mav::MavProtocolCapability::from_bits_retain(PX4_CAPABILITIES),
            uid,
            // 1.18.0, type 0 (dev): what the traces' PX4 reports (px4-traces/README.md).
            flight_sw_version: PX4_SW_VERSION,
            middleware_sw_version: PX4_SW_VERSION,
            os_sw_version: 0,
            board_version: 1,
            vendor_id: 0,
            product_id: 0,
            uid2,
            ..Default::default()
        });
    }

    /// AUTOPILOT_VERSION as PX4 on a Pixhawk 6C (NuttX) fills it: the board's USB vendor and
    /// product id (Holybro 0x3162 / 0x0056), `board_version` the product id, and a GUID whose
    /// architecture id is the STM32H7's (0x0006) — what a real flight controller says.
    fn send_hardware_version(&mut self) {
        let mut uid2 = [0u8; 18];
        uid2[..2].copy_from_slice(&0x0006u16.to_be_bytes());
        uid2[2..14].copy_from_slice(b"\x00\x35\x00\x2b\x31\x32\x51\x0e\x33\x39\x36\x36");
        uid2[14] = self.sysid;
        self.io.out.push(&mav::AUTOPILOT_VERSION_DATA {
            capabilities: mav::MavProtocolCapability::from_bits_retain(
                0x1 | 0x4 | 0x8 | 0x20 | 0x40 | 0x80 | 0x100 | 0x400 | 0x800 | 0x2000 | 0x4000,
            ),
            uid: 0x0035_002b_3132_510e,
            flight_sw_version: 0x010f_00ff,
            middleware_sw_version: 0x010f_00ff,
            os_sw_version: 0x0b00_00ff,
            board_version: 0x0056,
            vendor_id: 0x3162,
            product_id: 0x0056,
            uid2,
            ..Default::default()
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn px4_do_set_mode_table() {
        assert_eq!(desired_mode(1, 4, 2), Ok(Some(Mode::Takeoff)));
        assert_eq!(desired_mode(1, 4, 0), Ok(Some(Mode::Mission)));
        assert_eq!(desired_mode(1, 3, 1), Ok(Some(Mode::Position)));
        assert_eq!(desired_mode(1, 4, 1), Err(()));
        assert_eq!(desired_mode(1, 9, 0), Ok(None));
        assert_eq!(desired_mode(0x40 | 0x08, 0, 0), Ok(Some(Mode::Position)));
    }
}
