//! Offboard: stream setpoints and fly in PX4's Offboard mode (MAVSDK's Offboard).

use nexus_core::offboard::{Setpoint, Yaw};

use super::{run, Facade};
use crate::error::OffboardClientError;

/// Offboard control. PX4 takes Offboard mode only while setpoints stream, and fails safe when
/// they stop: the machine streams the last setpoint at the stick period (20 Hz by default).
pub trait OffboardApi: Facade {
    /// Stream `setpoint` from now on, replacing the one streamed before; a non-finite one is
    /// refused. Set one before [`OffboardApi::start_offboard`] and keep updating it there.
    fn set_setpoint(&self, setpoint: Setpoint) -> Result<(), OffboardClientError> {
        self.apply(move |c, _| Ok(c.set_setpoint(setpoint)?))
    }

    /// Stream a local NED position setpoint (m; NED yaw in rad, or `None` to leave it).
    fn set_position_ned(
        &self,
        north_m: f32,
        east_m: f32,
        down_m: f32,
        yaw_rad: Option<f32>,
    ) -> Result<(), OffboardClientError> {
        self.set_setpoint(Setpoint::PositionNed {
            north_m,
            east_m,
            down_m,
            yaw_rad,
        })
    }

    /// Stream a local NED velocity setpoint (m/s) with a yaw or yaw rate.
    fn set_velocity_ned(
        &self,
        v_north_m_s: f32,
        v_east_m_s: f32,
        v_down_m_s: f32,
        yaw: Yaw,
    ) -> Result<(), OffboardClientError> {
        self.set_setpoint(Setpoint::VelocityNed {
            v_north_m_s,
            v_east_m_s,
            v_down_m_s,
            yaw,
        })
    }

    /// Request Offboard mode, PX4's way: a setpoint must be streaming already; without one
    /// this is refused here with `InvalidArgument`, as PX4 would refuse the mode.
    fn start_offboard(&self) -> Result<(), OffboardClientError> {
        self.apply(|c, _| Ok(c.start_offboard()?))
    }

    /// Leave Offboard for Hold and stop the setpoint stream (Hold is requested first, so the
    /// stream does not just stop under PX4: that is a stream loss and its failsafe).
    fn stop_offboard(&self) -> Result<(), OffboardClientError> {
        run(self, |c, _| c.stop_offboard())
    }

    /// Stop the setpoint stream without changing mode: in Offboard, PX4 fails safe after
    /// COM_OF_LOSS_T (what a stream-loss test wants).
    fn stop_setpoints(&self) -> Result<(), OffboardClientError> {
        run(self, |c, _| c.stop_setpoints())
    }
}
