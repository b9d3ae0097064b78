//! The verbs of [`Client`]: what an application asks the vehicle to do, outside a step
//! program. Each hands the request to the offboard machine ([`Offboard`]'s verb of the same
//! name, which says what goes on the wire) and then does the client's own bookkeeping, as
//! [`Client::apply`] does: the wait engine gets the machine's mission progress and (with
//! `extra-conditions`) its `at_target` again, so a wait registered after the verb never reads
//! what was true before it (a mission start resets the progress; a new target is not reached).
//!
//! Each returns at once; the frames it causes go out on the next [`Client::poll_transmit`].
//! Queries stay on [`Client::offboard`] and [`Client::telemetry`].

use super::Client;
use crate::action::ParamValue;
use crate::mission::MissionItem;
use crate::mode::Mode;
use crate::offboard::{Anchor, Offboard, OffboardError};
use crate::rc::RcSticks;
use crate::telemetry::Telemetry;
use crate::time::Instant;

impl<const WAITS: usize, const TEXTS: usize, const ITEMS: usize, const STEPS: usize>
    Client<WAITS, TEXTS, ITEMS, STEPS>
{
    /// Run one verb on the offboard machine, then hand its state to the wait engine.
    fn verb<R>(&mut self, f: impl FnOnce(&mut Offboard<ITEMS>, &Telemetry<TEXTS>) -> R) -> R {
        let r = f(&mut self.offboard, &self.tel);
        self.sync_mission();
        r
    }

    /// Request flight mode `mode`; commanded until a HEARTBEAT shows it. A manual mode
    /// ([`Mode::needs_manual_control`]) starts the neutral MANUAL_CONTROL stream first if none
    /// runs (PX4 refuses a manual mode without a live manual-control source). By name:
    /// [`Mode::from_name`].
    pub fn set_mode(&mut self, mode: Mode) {
        self.verb(|ob, _| ob.set_mode(mode));
    }

    /// Request arming by command, sent once armable: any pending mode confirmed, a position
    /// estimate present, failure-free for `wait_clear_s` (s) from `now` (driver time).
    pub fn arm(&mut self, now: Instant) {
        self.verb(|ob, tel| ob.arm(now, tel));
    }

    /// Request arming with the throttle-down, yaw-right stick gesture from `now` (driver
    /// time): neutral sticks until armable, then the gesture until armed. Starts the
    /// MANUAL_CONTROL stream if none runs.
    pub fn arm_gesture(&mut self, now: Instant) {
        self.verb(|ob, tel| ob.arm_gesture(now, tel));
    }

    /// Send one disarm command (not verified; a refusal is reported as an event) and drop any
    /// pending arm or gesture. [`OffboardError::OutboxFull`] when the one-shot queue is full.
    pub fn disarm(&mut self) -> Result<(), OffboardError> {
        self.verb(|ob, _| ob.disarm())
    }

    /// Send one MAV_CMD_INJECT_FAILURE: `unit` (FAILURE_UNIT), `kind` (FAILURE_TYPE) and
    /// `instance` (0: all) as [`crate::Action::InjectFailure`] describes them; a refusal or no
    /// answer is reported as an event.
    #[cfg(feature = "failure-injection")]
    pub fn inject_failure(
        &mut self,
        unit: u8,
        kind: u8,
        instance: u8,
    ) -> Result<(), OffboardError> {
        self.verb(|ob, _| ob.inject_failure(unit, kind, instance))
    }

    /// Stream these sticks as MANUAL_CONTROL at 20 Hz until changed or stopped (clamped:
    /// roll, pitch and yaw to [-1, 1], throttle to [0, 1]).
    pub fn set_rc(&mut self, sticks: RcSticks) {
        self.verb(|ob, _| ob.set_rc(sticks));
    }

    /// Stop the MANUAL_CONTROL stream.
    pub fn stop_rc(&mut self) {
        self.verb(|ob, _| ob.stop_rc());
    }

    /// Stream setpoint `sp` (its own frame and units: [`crate::offboard::Setpoint`]) at the
    /// stick period (20 Hz by default), replacing the one streamed before; `at_target` then
    /// measures it. A non-finite one (or a thrust outside 0..1) is an
    /// [`OffboardError::InvalidArgument`].
    #[cfg(feature = "setpoints")]
    pub fn set_setpoint(&mut self, sp: crate::offboard::Setpoint) -> Result<(), OffboardError> {
        self.verb(|ob, _| ob.set_setpoint(sp))
    }

    /// Stop the setpoint stream without changing mode: in Offboard that is a stream loss, and
    /// PX4 fails safe after COM_OF_LOSS_T (s). To leave Offboard cleanly use
    /// [`Client::stop_offboard`].
    #[cfg(feature = "setpoints")]
    pub fn stop_setpoints(&mut self) {
        self.verb(|ob, _| ob.stop_setpoints());
    }

    /// Request Offboard mode, PX4's way: a setpoint must be streaming already
    /// ([`Client::set_setpoint`]); without one this is an [`OffboardError::InvalidArgument`]
    /// here, as PX4 would refuse the mode.
    #[cfg(feature = "setpoints")]
    pub fn start_offboard(&mut self) -> Result<(), OffboardError> {
        self.verb(|ob, _| {
            if ob.setpoint().is_none() {
                return Err(OffboardError::InvalidArgument(
                    "set a setpoint before requesting Offboard (PX4 refuses it without a stream)",
                ));
            }
            ob.set_mode(Mode::Offboard);
            Ok(())
        })
    }

    /// Leave Offboard: Hold is requested first, then the setpoint stream stops (so PX4 does
    /// not see a stream loss and take its failsafe).
    #[cfg(feature = "setpoints")]
    pub fn stop_offboard(&mut self) {
        self.verb(|ob, _| {
            ob.set_mode(Mode::Hold);
            ob.stop_setpoints();
        });
    }

    /// Set parameter `name` (at most 16 characters) to `value` (the parameter's own unit, in
    /// its type: an INT32's bits ride in PARAM_SET's float field, as PX4 reads them):
    /// PARAM_SET, resent until PX4 echoes it with `confirmed-params`, its end an
    /// [`crate::offboard::OffboardEvent::ParamSet`]. A bad name is
    /// [`OffboardError::BadParamName`], a non-finite value [`OffboardError::InvalidArgument`].
    pub fn set_param(&mut self, name: &str, value: ParamValue) -> Result<(), OffboardError> {
        self.verb(|ob, _| ob.set_param(name, value))
    }

    /// Take off to `alt_m` (m over home, finite and positive) from `now` (driver time):
    /// MIS_TAKEOFF_ALT, then Takeoff mode confirmed, then arm. Replaces a pending mission
    /// start; `at_target` turns true within `alt_tol_m` of the altitude. A rover is refused
    /// ([`OffboardError::NotForVehicle`]).
    pub fn takeoff(&mut self, now: Instant, alt_m: f32) -> Result<(), OffboardError> {
        self.verb(|ob, tel| ob.takeoff(now, tel, alt_m))
    }

    /// Land in place (Land mode): clears the target, drops a pending mission start or arm.
    pub fn land(&mut self) {
        self.verb(|ob, _| ob.land());
    }

    /// Return to launch (RTL mode): clears the target, drops a pending mission start or arm.
    pub fn return_to_launch(&mut self) {
        self.verb(|ob, _| ob.return_to_launch());
    }

    /// Hold position (Hold mode); drops a pending mission start.
    pub fn hold(&mut self) {
        self.verb(|ob, _| ob.hold());
    }

    /// Fly to a world-frame position, m (FLU: `x_m` forward/north, `y_m` left/west, `z_m` up
    /// over the launch point), with an optional world yaw `yaw_rad` (rad, right-handed about
    /// +z: +π/2 faces west): one DO_REPOSITION. The world origin is anchored on the first goto
    /// ([`Offboard::goto_flu`] says where). [`OffboardError::NoPosition`] before the first
    /// GLOBAL_POSITION_INT; a non-finite number is an [`OffboardError::InvalidArgument`].
    pub fn goto_flu(
        &mut self,
        x_m: f32,
        y_m: f32,
        z_m: f32,
        yaw_rad: Option<f32>,
    ) -> Result<(), OffboardError> {
        self.verb(|ob, tel| ob.goto_flu(tel, x_m, y_m, z_m, yaw_rad))
    }

    /// Change a VTOL to fixed-wing (`to` = [`crate::VtolState::Fw`]) or multicopter
    /// ([`crate::VtolState::Mc`]) flight: one DO_VTOL_TRANSITION. Refused when the HEARTBEAT
    /// says the vehicle is no VTOL ([`OffboardError::NotForVehicle`]), and for any other `to`.
    #[cfg(feature = "vtol")]
    pub fn vtol_transition(&mut self, to: crate::VtolState) -> Result<(), OffboardError> {
        self.verb(|ob, tel| ob.vtol_transition(tel, to))
    }

    /// Fix the world origin of [`Client::goto_flu`] instead of capturing it on the first goto.
    pub fn set_anchor(&mut self, anchor: Anchor) {
        self.verb(|ob, _| ob.set_anchor(anchor));
    }

    /// Replace the held mission with `items` (seq = index) without uploading it: progress and
    /// the upload ack reset, a transfer in flight is abandoned. More than `ITEMS` items is
    /// [`OffboardError::TooManyItems`]; an item the wire cannot carry is refused.
    pub fn lodge_mission(&mut self, items: &[MissionItem]) -> Result<(), OffboardError> {
        self.verb(|ob, _| ob.lodge_mission(items))
    }

    /// Upload the held mission (the handshake runs over the next polls; watch
    /// `offboard().mission_uploaded()` or the events). Resets progress, replaces a pending
    /// mission start. An empty mission is [`OffboardError::NoMission`].
    pub fn upload_mission(&mut self) -> Result<(), OffboardError> {
        self.verb(|ob, _| ob.upload_mission())
    }

    /// [`Client::lodge_mission`] `items`, then [`Client::upload_mission`] them.
    pub fn upload_mission_items(&mut self, items: &[MissionItem]) -> Result<(), OffboardError> {
        self.verb(|ob, _| ob.upload_mission_items(items))
    }

    /// Download the vehicle's mission into the held mission (`offboard().mission_items()`).
    #[cfg(feature = "mission-download")]
    pub fn download_mission(&mut self) {
        self.verb(|ob, _| ob.download_mission());
    }

    /// Download the vehicle's mission and compare it with the held one (not replaced):
    /// `MissionVerified` or `MissionMismatch` as an event. Asked during an upload, it starts
    /// once the upload ends.
    #[cfg(feature = "mission-verify")]
    pub fn verify_mission(&mut self) {
        self.verb(|ob, _| ob.verify_mission());
    }

    /// Clear the vehicle's mission (MISSION_CLEAR_ALL); the held one empties on PX4's ack.
    #[cfg(feature = "mission-download")]
    pub fn clear_mission(&mut self) {
        self.verb(|ob, _| ob.clear_mission());
    }

    /// Fly the mission from its first item from `now` (driver time): MISSION_SET_CURRENT 0
    /// confirmed, Mission mode confirmed, then arm; during an upload the start waits for its
    /// acceptance ([`Offboard::start_mission`]). Progress restarts with the run.
    pub fn start_mission(&mut self, now: Instant) {
        self.verb(|ob, tel| ob.start_mission(now, tel));
    }

    /// Pause the mission: Hold.
    pub fn pause_mission(&mut self) {
        self.verb(|ob, _| ob.pause_mission());
    }

    /// Resume the mission from the item PX4 holds current: Mission mode again.
    pub fn resume_mission(&mut self) {
        self.verb(|ob, _| ob.resume_mission());
    }

    /// Upload `items` (fence vertices and circles, or rally points; seq = index) as the
    /// vehicle's geofence or rally points now; watch `offboard().geo_status(kind)`.
    /// Independent of the mission. Empty is [`OffboardError::NoMission`]; over the capacity
    /// ([`crate::offboard::FENCE_ITEMS`], [`crate::offboard::RALLY_ITEMS`]) is refused.
    #[cfg(feature = "geofence")]
    pub fn upload_geo(
        &mut self,
        kind: crate::offboard::GeoKind,
        items: &[MissionItem],
    ) -> Result<(), OffboardError> {
        self.verb(|ob, _| ob.upload_geo(kind, items))
    }

    /// Lodge `items` as the geofence or rally points that go up after the mission: every
    /// mission upload from now on sends them once PX4 accepted the mission, the fence first.
    /// Errors as [`Client::upload_geo`].
    #[cfg(feature = "geofence")]
    pub fn lodge_geo(
        &mut self,
        kind: crate::offboard::GeoKind,
        items: &[MissionItem],
    ) -> Result<(), OffboardError> {
        self.verb(|ob, _| ob.lodge_geo(kind, items))
    }

    /// Download the vehicle's geofence or rally points (`offboard().geo_items(kind)`).
    #[cfg(feature = "geofence")]
    pub fn download_geo(&mut self, kind: crate::offboard::GeoKind) {
        self.verb(|ob, _| ob.download_geo(kind));
    }

    /// Clear the vehicle's geofence or rally points (that type only; the mission stays).
    #[cfg(feature = "geofence")]
    pub fn clear_geo(&mut self, kind: crate::offboard::GeoKind) {
        self.verb(|ob, _| ob.clear_geo(kind));
    }
}
