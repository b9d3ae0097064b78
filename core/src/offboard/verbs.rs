//! The verbs: what an application (or a flight program's step, through [`Offboard::apply`])
//! asks the vehicle to do. Each returns at once; the machine carries it out over the next
//! `poll_transmit` calls, and the queries tell when it is done.

use super::clock::Stamp;
use super::geo::{self, Anchor};
use super::mission::Transfer;
#[cfg(feature = "mission-download")]
use super::mission_download::{Clear, Download};
use super::mission_upload::Upload;
use super::{Offboard, OffboardError, OneShot, Target};
use crate::action::{Action, ParamName, ParamValue};
use crate::mission::{validate_mission, MissionItem};
use crate::mode::Mode;
use crate::plan::Plan;
use crate::rc::RcSticks;
use crate::telemetry::Telemetry;
use crate::time::Instant;
use crate::vehicle::VehicleKind;
#[cfg(feature = "vtol")]
use crate::vehicle::VtolState;

/// PX4's takeoff altitude parameter (REAL32, m over home).
pub const TAKEOFF_ALT_PARAM: &str = "MIS_TAKEOFF_ALT";

fn finite(v: f32, what: &'static str) -> Result<f32, OffboardError> {
    if v.is_finite() {
        Ok(v)
    } else {
        Err(OffboardError::InvalidArgument(what))
    }
}

fn param_name(name: &str) -> Result<ParamName, OffboardError> {
    super::wire::param_id(name).map_err(|_| OffboardError::BadParamName)?;
    crate::action::param_name(name).ok_or(OffboardError::BadParamName)
}

/// What a rover does with a takeoff: PX4 switches to Takeoff mode, says "Already higher than
/// takeoff altitude" once armed, and does not move (measured on PX4 SITL's Ackermann rover).
const ROVER_TAKEOFF: &str = "a rover does not take off (PX4 would take Takeoff mode and stay \
    where it is): arm and drive it with a mission or goto";
/// What a rover does with a land: PX4's Land mode stops it and its land detector disarms it
/// ("Landing detected", "Disarmed by landing" 2 s later; measured on PX4 SITL's Ackermann
/// rover).
const ROVER_LAND: &str = "a rover does not land (PX4's Land mode stops it and disarms it): \
    use hold to stop, then disarm";
/// What PX4 does with a transition on a vehicle that is no VTOL: nothing, and no answer
/// (measured on PX4 SITL's Ackermann rover; its vtol_att_control, which answers it, runs on
/// VTOLs only).
#[cfg(feature = "vtol")]
const NOT_VTOL: &str = "only a VTOL transitions (PX4 would not answer)";

/// Whether PX4 carries out `action` on a vehicle whose HEARTBEAT.type is `mav_type`: a rover
/// takes no takeoff or land, and only a VTOL transitions. The verbs check it against the
/// vehicle's heartbeat before they send anything; a driver that knows the airframe before it
/// connects (`nexus run --model rover`) checks a program's actions with it before flying.
/// `Err` is an [`OffboardError::NotForVehicle`] saying what PX4 would do instead.
pub fn check_action_for(action: &Action, mav_type: u8) -> Result<(), OffboardError> {
    let kind = VehicleKind::from_mav_type(mav_type);
    let refuse = |verb, why| {
        Err(OffboardError::NotForVehicle {
            verb,
            mav_type,
            why,
        })
    };
    match action {
        Action::Takeoff { .. } if kind == VehicleKind::Rover => refuse("takeoff", ROVER_TAKEOFF),
        Action::Land if kind == VehicleKind::Rover => refuse("land", ROVER_LAND),
        #[cfg(feature = "vtol")]
        Action::VtolTransition { .. } if kind != VehicleKind::Vtol => {
            refuse("vtol_transition", NOT_VTOL)
        }
        _ => Ok(()),
    }
}

/// [`check_action_for`] against the vehicle's HEARTBEAT.type; nothing to check before the
/// first heartbeat (PX4 then answers for itself).
fn check_action<const T: usize>(tel: &Telemetry<T>, action: &Action) -> Result<(), OffboardError> {
    match tel.heartbeat() {
        Some(h) => check_action_for(action, h.mavtype as u8),
        None => Ok(()),
    }
}

impl<const ITEMS: usize> Offboard<ITEMS> {
    fn queue(&mut self, one: OneShot) -> Result<(), OffboardError> {
        self.outbox
            .push_back(one)
            .map_err(|_| OffboardError::OutboxFull)
    }

    /// Request a flight mode; commanded until a HEARTBEAT shows it. A manual mode
    /// ([`Mode::needs_manual_control`]) starts the neutral MANUAL_CONTROL stream first if none
    /// runs: PX4 refuses a manual mode without a live manual-control source.
    pub fn set_mode(&mut self, mode: Mode) {
        if mode.needs_manual_control() && self.rc.is_none() {
            self.rc = Some(RcSticks::NEUTRAL);
        }
        self.req.request_mode(mode);
    }

    /// [`Offboard::set_mode`] by name, case-insensitively (`"Takeoff"`, `"rtl"`, `"main=4,sub=3"`).
    pub fn set_mode_name(&mut self, name: &str) -> Result<(), OffboardError> {
        let mode = Mode::from_name(name).map_err(|_| OffboardError::UnknownMode)?;
        self.set_mode(mode);
        Ok(())
    }

    /// Request arming by command, sent once armable: any pending mode confirmed, a position
    /// estimate present, failure-free for `wait_clear_s` from now.
    pub fn arm<const T: usize>(&mut self, now: Instant, tel: &Telemetry<T>) {
        self.req.request_arm(Stamp::at(now, tel), false);
    }

    /// Request arming with the throttle-down, yaw-right stick gesture: neutral sticks until
    /// armable, then the gesture until armed, then neutral. Starts the MANUAL_CONTROL stream
    /// if none runs (the gesture needs a live manual-control source).
    pub fn arm_gesture<const T: usize>(&mut self, now: Instant, tel: &Telemetry<T>) {
        if self.rc.is_none() {
            self.rc = Some(RcSticks::NEUTRAL);
        }
        self.req.request_arm(Stamp::at(now, tel), true);
    }

    /// Send one disarm command (not verified; a refusal is reported) and drop any pending arm
    /// or gesture, which would otherwise undo it.
    pub fn disarm(&mut self) -> Result<(), OffboardError> {
        self.queue(OneShot::Disarm)?;
        self.req.arm = None;
        Ok(())
    }

    /// Send one MAV_CMD_INJECT_FAILURE ([`crate::Action::InjectFailure`] says what the numbers
    /// mean); a refusal is reported, and so is no answer (PX4 leaves some kinds unanswered).
    #[cfg(feature = "failure-injection")]
    pub fn inject_failure(
        &mut self,
        unit: u8,
        kind: u8,
        instance: u8,
    ) -> Result<(), OffboardError> {
        self.queue(OneShot::InjectFailure {
            unit,
            kind,
            instance,
        })
    }

    /// Stream these sticks at 20 Hz (clamped: roll/pitch/yaw to [-1, 1], throttle to [0, 1]).
    pub fn set_rc(&mut self, sticks: RcSticks) {
        self.rc = Some(sticks.clamped());
    }

    /// Stop the MANUAL_CONTROL stream.
    pub fn stop_rc(&mut self) {
        self.rc = None;
    }

    /// Stream `sp` from the next poll on, at the stick period (20 Hz by default), replacing
    /// the setpoint streamed before. Set one before requesting Offboard mode (PX4 refuses the
    /// mode without a stream) and keep it set while in it. A setpoint with a non-finite
    /// number (or a thrust outside 0..1) is an [`OffboardError::InvalidArgument`].
    #[cfg(feature = "setpoints")]
    pub fn set_setpoint(&mut self, sp: super::Setpoint) -> Result<(), OffboardError> {
        if !sp.is_valid() {
            return Err(OffboardError::InvalidArgument(
                "setpoint must be finite (thrust 0..1, lat/lon on Earth)",
            ));
        }
        self.sp = Some(sp);
        // `at_target` measures the setpoint from now on, not an earlier verb's target.
        self.target = None;
        Ok(())
    }

    /// Stop the setpoint stream. In Offboard mode that is a stream loss: PX4 fails safe after
    /// COM_OF_LOSS_T; request Hold first to leave Offboard cleanly.
    #[cfg(feature = "setpoints")]
    pub fn stop_setpoints(&mut self) {
        self.sp = None;
        self.sp_last = None;
    }

    /// The setpoint being streamed.
    #[cfg(feature = "setpoints")]
    pub fn setpoint(&self) -> Option<super::Setpoint> {
        self.sp
    }

    /// Set parameter `name` to `value`: PARAM_SET of its type (REAL32, 9; INT32, 6, the int's
    /// bits in the float field: 1 goes out as 0x00000001, not as 1.0). With
    /// `confirmed-params` (default) it is resent until PX4 echoes the value and ends in an
    /// `OffboardEvent::ParamSet` (confirmed, refused with PX4's MAV_PARAM_ERROR, or given
    /// up); without it, one send, not verified. A non-finite REAL32 is refused.
    pub fn set_param(&mut self, name: &str, value: ParamValue) -> Result<(), OffboardError> {
        let name = param_name(name)?;
        if let ParamValue::Real(v) = value {
            finite(v, "parameter value must be finite")?;
        }
        self.set_param_bits(name, value.wire_bits(), value.is_int())
    }

    #[cfg(feature = "confirmed-params")]
    fn set_param_bits(
        &mut self,
        name: ParamName,
        bits: u32,
        int32: bool,
    ) -> Result<(), OffboardError> {
        self.params.request(name, bits, int32)
    }

    #[cfg(not(feature = "confirmed-params"))]
    fn set_param_bits(
        &mut self,
        name: ParamName,
        bits: u32,
        int32: bool,
    ) -> Result<(), OffboardError> {
        self.queue(OneShot::Param { name, bits, int32 })
    }

    /// Take off to `alt_m` over home: MIS_TAKEOFF_ALT, then Takeoff mode, confirmed before the
    /// arm (the machine owns that order). Replaces a pending mission start. `at_target` turns
    /// true within `alt_tol_m` of the altitude.
    pub fn takeoff<const T: usize>(
        &mut self,
        now: Instant,
        tel: &Telemetry<T>,
        alt_m: f32,
    ) -> Result<(), OffboardError> {
        if !(alt_m.is_finite() && alt_m > 0.0) {
            return Err(OffboardError::InvalidArgument(
                "takeoff altitude must be finite and positive",
            ));
        }
        check_action(tel, &Action::Takeoff { alt_m })?;
        self.set_param(TAKEOFF_ALT_PARAM, ParamValue::Real(alt_m))?;
        self.req.restart = None;
        #[cfg(feature = "setpoints")]
        self.stop_setpoints();
        self.target = Some(Target::Climb { rel_alt_m: alt_m });
        self.set_mode(Mode::Takeoff);
        self.arm(now, tel);
        Ok(())
    }

    /// Land in place (Land mode). Clears the target and drops a pending mission start or arm
    /// (an arm after a land request would only arm in Land mode).
    pub fn land(&mut self) {
        self.end_flight_in(Mode::Land);
    }

    /// Return to launch (RTL mode). Clears the target, drops a pending mission start or arm.
    pub fn return_to_launch(&mut self) {
        self.end_flight_in(Mode::Rtl);
    }

    /// Land and RTL: no setpoints, no target, no pending mission start or arm, then `mode`.
    fn end_flight_in(&mut self, mode: Mode) {
        #[cfg(feature = "setpoints")]
        self.stop_setpoints();
        self.target = None;
        self.req.restart = None;
        self.req.arm = None;
        self.set_mode(mode);
    }

    /// Hold position (Hold mode). Drops a pending mission start.
    pub fn hold(&mut self) {
        #[cfg(feature = "setpoints")]
        self.stop_setpoints();
        self.req.restart = None;
        self.set_mode(Mode::Hold);
    }

    /// Fly to a world-frame position (FLU: x forward/north, y left/west, z up over the launch
    /// point), with an optional world yaw (rad, right-handed about +z: +π/2 faces west).
    ///
    /// One DO_REPOSITION (PX4 latches it). The world origin is anchored on the first goto at
    /// the vehicle's position then (see [`Anchor::from_position`]), horizontally at home for a
    /// fixed-wing (HEARTBEAT type 1), which flies there as a loiter point: it circles the
    /// point at NAV_LOITER_RAD; `set_anchor` overrides it.
    /// Fails with [`OffboardError::NoPosition`] before the first GLOBAL_POSITION_INT.
    pub fn goto_flu<const T: usize>(
        &mut self,
        tel: &Telemetry<T>,
        x_m: f32,
        y_m: f32,
        z_m: f32,
        yaw_rad: Option<f32>,
    ) -> Result<(), OffboardError> {
        finite(x_m, "goto x must be finite")?;
        finite(y_m, "goto y must be finite")?;
        finite(z_m, "goto z must be finite")?;
        if let Some(y) = yaw_rad {
            finite(y, "goto yaw must be finite")?;
        }
        let anchor = match self.anchor {
            Some(a) => a,
            None => {
                let here = Anchor::from_position(
                    tel.global_position().ok_or(OffboardError::NoPosition)?,
                    tel.height_m(),
                );
                match (fixed_wing(tel), tel.home_position()) {
                    // A fixed-wing is far from its pad by the first goto (the runway roll and
                    // climb-out cover a few hundred metres): its world origin is home, where
                    // LOCAL_POSITION_NED's is, so `distance` to a world point and the goto
                    // agree.
                    (true, Some(h)) => Anchor {
                        lat0_deg: h.lat_deg,
                        lon0_deg: h.lon_deg,
                        ..here
                    },
                    _ => here,
                }
            }
        };
        let (lat, lon) = anchor.to_global(x_m as f64, y_m as f64);
        let (Some(lat_e7), Some(lon_e7)) = (geo::deg_to_e7(lat), geo::deg_to_e7(lon)) else {
            return Err(OffboardError::InvalidArgument(
                "goto position off the globe",
            ));
        };
        let yaw_ned = yaw_rad.map(|y| geo::yaw_world_to_ned(y as f64) as f32);
        self.queue(OneShot::Reposition {
            lat_e7,
            lon_e7,
            alt_amsl_m: anchor.amsl_m(z_m as f64) as f32,
            yaw_ned_rad: yaw_ned.unwrap_or(f32::NAN),
        })?;
        self.anchor = Some(anchor);
        #[cfg(feature = "setpoints")]
        self.stop_setpoints();
        self.target = Some(Target::Goto {
            lat_deg: lat,
            lon_deg: lon,
            rel_alt_m: z_m,
            yaw_ned_rad: yaw_ned,
        });
        Ok(())
    }

    /// Change a VTOL to fixed-wing (`to` = [`VtolState::Fw`]) or multicopter
    /// ([`VtolState::Mc`]) flight: one DO_VTOL_TRANSITION; PX4's ack or refusal is reported
    /// ([`crate::Action::VtolTransition`] says what PX4 does). Refused before it is sent when
    /// the HEARTBEAT says the vehicle is no VTOL ([`OffboardError::NotForVehicle`]), and for
    /// any other `to` ([`OffboardError::InvalidArgument`]).
    #[cfg(feature = "vtol")]
    pub fn vtol_transition<const T: usize>(
        &mut self,
        tel: &Telemetry<T>,
        to: VtolState,
    ) -> Result<(), OffboardError> {
        let fw = match to {
            VtolState::Fw => true,
            VtolState::Mc => false,
            _ => {
                return Err(OffboardError::InvalidArgument(
                    "a VTOL transition goes to fw or mc",
                ))
            }
        };
        check_action(tel, &Action::VtolTransition { to })?;
        self.queue(OneShot::VtolTransition { fw })
    }

    /// Fix the world origin instead of capturing it on the first goto.
    pub fn set_anchor(&mut self, anchor: Anchor) {
        self.anchor = Some(anchor);
    }

    /// Replace the held mission with `items` (seq = index, encodable commands and frames)
    /// without uploading it. Resets progress and the upload ack; abandons a transfer in flight.
    pub fn lodge_mission(&mut self, items: &[MissionItem]) -> Result<(), OffboardError> {
        if items.len() > ITEMS || items.len() > u16::MAX as usize {
            return Err(OffboardError::TooManyItems {
                count: items.len(),
                capacity: ITEMS.min(u16::MAX as usize),
            });
        }
        validate_mission(items)?;
        self.mission.items.clear();
        // Cannot fail: the length was checked against the capacity.
        let _ = self.mission.items.extend_from_slice(items);
        self.mission.transfer = Transfer::Idle;
        self.mission.ack = None;
        self.mission.opaque_id = None;
        self.mission.reset_progress();
        Ok(())
    }

    /// Upload the held mission: the handshake runs over the next polls; watch
    /// `mission_uploaded`/`mission_ack` or the events. Resets progress and replaces a pending
    /// mission start. An empty mission is an error (use `clear_mission`).
    pub fn upload_mission(&mut self) -> Result<(), OffboardError> {
        if self.mission.items.is_empty() {
            return Err(OffboardError::NoMission);
        }
        self.mission.ack = None;
        self.mission.opaque_id = None;
        self.mission.reset_progress();
        self.mission.verified = false;
        self.req.restart = None;
        self.mission.transfer = Transfer::Upload(Upload::new(self.mission.items.len() as u16));
        #[cfg(feature = "geofence")]
        self.geo.mission_upload_started();
        Ok(())
    }

    /// Lodge `items` and upload them.
    pub fn upload_mission_items(&mut self, items: &[MissionItem]) -> Result<(), OffboardError> {
        self.lodge_mission(items)?;
        self.upload_mission()
    }

    /// Lodge a plan's items and upload them.
    pub fn upload_plan<const N: usize>(&mut self, plan: &Plan<N>) -> Result<(), OffboardError> {
        self.upload_mission_items(&plan.items)
    }

    /// Download the vehicle's mission into the held mission (see `mission_items`).
    #[cfg(feature = "mission-download")]
    pub fn download_mission(&mut self) {
        self.mission.transfer = Transfer::Download(Download::new());
    }

    /// Download the vehicle's mission and compare it with the held (uploaded) one, which is
    /// not replaced: [`super::OffboardEvent::MissionVerified`] when identical (and
    /// `mission_progress().verified`), else [`super::OffboardEvent::MissionMismatch`] at the
    /// first difference.
    /// Asked while an upload is in flight, it starts once the upload ends (accepted or not:
    /// it compares what the vehicle holds either way).
    #[cfg(feature = "mission-verify")]
    pub fn verify_mission(&mut self) {
        self.mission.verified = false;
        if self.mission.uploading() {
            self.mission.verify_pending = true;
        } else {
            self.mission.transfer = Transfer::Download(Download::verifying());
        }
    }

    /// Clear the vehicle's mission (MISSION_CLEAR_ALL); the held one empties on PX4's ack.
    #[cfg(feature = "mission-download")]
    pub fn clear_mission(&mut self) {
        self.mission.transfer = Transfer::Clear(Clear::new());
    }

    /// Fly the mission from its first item: MISSION_SET_CURRENT 0 until MISSION_CURRENT
    /// reports item 0 (after a finished mission PX4 stays at the last item), then Mission mode
    /// confirmed, then arm. Called while an upload is in flight, the start waits for it to be
    /// accepted (PX4 refuses Mission mode and arming without a valid mission, so engaging early
    /// would only burn retries); if that upload fails, the start is dropped and reported as
    /// [`GiveUpReason::UploadFailed`](super::GiveUpReason::UploadFailed), never flying the
    /// mission PX4 still holds. Progress counters restart with the run.
    pub fn start_mission<const T: usize>(&mut self, now: Instant, tel: &Telemetry<T>) {
        self.mission.reset_progress();
        self.req.request_restart();
        self.set_mode(Mode::Mission);
        self.arm(now, tel);
    }

    /// Pause the mission: Hold.
    pub fn pause_mission(&mut self) {
        self.hold();
    }

    /// Resume the mission from the item PX4 holds current: Mission mode again.
    pub fn resume_mission(&mut self) {
        self.set_mode(Mode::Mission);
    }

    /// Carry out a flight-program action. `Speedup` is the driver's and is refused with
    /// [`OffboardError::DriverAction`].
    pub fn apply<const T: usize>(
        &mut self,
        now: Instant,
        tel: &Telemetry<T>,
        action: &Action,
    ) -> Result<(), OffboardError> {
        match action {
            Action::None => Ok(()),
            Action::SetMode(m) => {
                self.set_mode(*m);
                Ok(())
            }
            Action::Arm => {
                self.arm(now, tel);
                Ok(())
            }
            Action::ArmGesture => {
                self.arm_gesture(now, tel);
                Ok(())
            }
            Action::Disarm => self.disarm(),
            #[cfg(feature = "failure-injection")]
            Action::InjectFailure {
                unit,
                kind,
                instance,
            } => self.inject_failure(*unit, *kind, *instance),
            Action::Takeoff { alt_m } => self.takeoff(now, tel, *alt_m),
            Action::Goto {
                x_m,
                y_m,
                z_m,
                yaw_rad,
            } => self.goto_flu(tel, *x_m, *y_m, *z_m, *yaw_rad),
            Action::Land => {
                check_action(tel, action)?;
                self.land();
                Ok(())
            }
            #[cfg(feature = "vtol")]
            Action::VtolTransition { to } => self.vtol_transition(tel, *to),
            Action::ReturnToLaunch => {
                self.return_to_launch();
                Ok(())
            }
            Action::Hold => {
                self.hold();
                Ok(())
            }
            Action::Rc(s) => {
                self.set_rc(*s);
                Ok(())
            }
            Action::StopRc => {
                self.stop_rc();
                Ok(())
            }
            Action::ParamReal { name, value } => self.set_param(name, ParamValue::Real(*value)),
            Action::ParamInt { name, value } => self.set_param(name, ParamValue::Int(*value)),
            Action::UploadMission => self.upload_mission(),
            #[cfg(feature = "mission-verify")]
            Action::VerifyMission => {
                self.verify_mission();
                Ok(())
            }
            #[cfg(not(feature = "mission-verify"))]
            Action::VerifyMission => Err(OffboardError::InvalidArgument(
                "mission verification is not built in (nexus-core feature mission-verify)",
            )),
            Action::StartMission => {
                self.start_mission(now, tel);
                Ok(())
            }
            Action::PauseMission => {
                self.pause_mission();
                Ok(())
            }
            Action::ResumeMission => {
                self.resume_mission();
                Ok(())
            }
            Action::Speedup(_) => Err(OffboardError::DriverAction),
            #[cfg(feature = "setpoints")]
            Action::Offboard(sp) => {
                self.set_setpoint(*sp)?;
                if tel.mode() != Some(Mode::Offboard) {
                    self.set_mode(Mode::Offboard);
                }
                Ok(())
            }
            #[cfg(feature = "setpoints")]
            Action::StopOffboard => {
                self.hold();
                Ok(())
            }
        }
    }
}

/// The vehicle says it is a fixed-wing (HEARTBEAT.type MAV_TYPE_FIXED_WING).
pub(crate) fn fixed_wing<const T: usize>(tel: &Telemetry<T>) -> bool {
    tel.heartbeat()
        .is_some_and(|hb| hb.mavtype == crate::mav::MavType::MAV_TYPE_FIXED_WING)
}
