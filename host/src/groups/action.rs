//! Action: arm, take off, fly to, land, return, modes and sticks (MAVSDK's Action and
//! ManualControl).

use nexus_core::rc::RcSticks;
use nexus_core::Mode;

use super::{run, Facade};
use crate::error::OffboardClientError;

/// Flying the vehicle by command. Each verb returns once the link's machine has it; the
/// machine sends and resends it until telemetry confirms it. Observe the result with
/// [`super::TelemetryApi`] or a wait.
pub trait ActionApi: Facade {
    /// Request flight mode `mode`, commanded until telemetry confirms it. A manual mode starts
    /// the neutral MANUAL_CONTROL stream first. A mode by name: [`Mode::from_name`].
    fn set_mode(&self, mode: Mode) -> Result<(), OffboardClientError> {
        run(self, move |c, _| c.set_mode(mode))
    }

    /// Request arming by command, sent once armable (pending mode confirmed, a position,
    /// failure-free for the options' `wait_clear_s`).
    fn arm(&self) -> Result<(), OffboardClientError> {
        run(self, |c, now| c.arm(now))
    }

    /// Request arming with the pilot's throttle-down, yaw-right stick gesture (neutral
    /// MANUAL_CONTROL until armable, then the gesture).
    fn arm_gesture(&self) -> Result<(), OffboardClientError> {
        run(self, |c, now| c.arm_gesture(now))
    }

    /// Send one disarm command (not verified) and drop any pending arm.
    fn disarm(&self) -> Result<(), OffboardClientError> {
        self.apply(|c, _| Ok(c.disarm()?))
    }

    /// Take off to `alt_m` over home: MIS_TAKEOFF_ALT, Takeoff mode confirmed, then arm.
    /// The climb is done when [`super::TelemetryApi::at_target`].
    fn takeoff(&self, alt_m: f32) -> Result<(), OffboardClientError> {
        self.apply(move |c, now| Ok(c.takeoff(now, alt_m)?))
    }

    /// Land in place (Land mode); clears the target.
    fn land(&self) -> Result<(), OffboardClientError> {
        run(self, |c, _| c.land())
    }

    /// Return to launch (RTL mode); clears the target.
    fn return_to_launch(&self) -> Result<(), OffboardClientError> {
        run(self, |c, _| c.return_to_launch())
    }

    /// Hold position (Hold mode).
    fn hold(&self) -> Result<(), OffboardClientError> {
        run(self, |c, _| c.hold())
    }

    /// Fly to a world-frame position, m (FLU over the launch point: `x_m` north, `y_m` west,
    /// `z_m` up), with an optional world yaw (rad, right-handed about +z: +π/2 faces west). One DO_REPOSITION; done when [`super::TelemetryApi::at_target`].
    /// Fails before the first position report.
    fn goto_flu(
        &self,
        x_m: f32,
        y_m: f32,
        z_m: f32,
        yaw_rad: Option<f32>,
    ) -> Result<(), OffboardClientError> {
        self.apply(move |c, _| Ok(c.goto_flu(x_m, y_m, z_m, yaw_rad)?))
    }

    /// Stream these sticks (MANUAL_CONTROL at 20 Hz) until changed or
    /// [`ActionApi::stop_rc`].
    fn set_rc(&self, sticks: RcSticks) -> Result<(), OffboardClientError> {
        run(self, move |c, _| c.set_rc(sticks))
    }

    /// Stop the MANUAL_CONTROL stream.
    fn stop_rc(&self) -> Result<(), OffboardClientError> {
        run(self, |c, _| c.stop_rc())
    }
}
