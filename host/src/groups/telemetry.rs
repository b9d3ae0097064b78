//! Telemetry: the vehicle's state in units (MAVSDK's Telemetry).

use nexus_core::telemetry::{Attitude, Battery, Gps, Home, LandedState, LocalNed, Position};
use nexus_core::Mode;

use super::Facade;

/// What the vehicle reports, as the driver last published it: never a round trip, and `None`
/// until the message it comes from has arrived.
pub trait TelemetryApi: Facade {
    /// Whether the vehicle reached what the last verb commanded (takeoff altitude within the
    /// options' `alt_tol_m`; goto position within `arrive_m` and yaw within `yaw_tol_rad`),
    /// measured on what PX4 reports. False with no target, after land, before a position.
    fn at_target(&self) -> bool {
        self.read_status(|s| s.at_target)
    }

    /// Armed flag of the last heartbeat.
    fn is_armed(&self) -> bool {
        self.read_status(|s| s.armed)
    }

    /// The mode of the last heartbeat; `None` before one. Its `Display` is the friendly name
    /// (`"main=…,sub=…"` for a mode the table does not name).
    fn mode(&self) -> Option<Mode> {
        self.read_status(|s| s.mode)
    }

    /// EXTENDED_SYS_STATE's landed state (`name()`: `ON_GROUND`, `IN_AIR`, `TAKING_OFF`,
    /// `LANDING`, `UNKNOWN`).
    fn landed_state(&self) -> LandedState {
        self.read_status(|s| s.landed_state)
    }

    /// On the ground by the wait engine's rule (the landed state; before one, disarmed near
    /// the pad); `None` while nothing says either way.
    fn landed(&self) -> Option<bool> {
        self.read_status(|s| s.landed)
    }

    /// Height over the launch point from GLOBAL_POSITION_INT, m; `None` before one. PX4
    /// steps this field after a takeoff rather than following the climb: for the height the
    /// verdicts use, see [`TelemetryApi::height_m`].
    fn relative_altitude_m(&self) -> Option<f32> {
        self.read_status(|s| s.relative_alt_m)
    }

    /// Height above the pad, m, as the waits, the `altitude` condition and `at_target` judge
    /// it: the vehicle's ground truth when it sends one, else its altitude's rise since
    /// arming; `None` before either.
    fn height_m(&self) -> Option<f32> {
        self.read_status(|s| s.height_m)
    }

    /// Position: latitude/longitude in degrees, altitude AMSL and above home in m
    /// (GLOBAL_POSITION_INT).
    fn position(&self) -> Option<Position> {
        self.read_status(|s| s.vitals.position)
    }

    /// Local position and velocity, NED, m and m/s (LOCAL_POSITION_NED).
    fn local_ned(&self) -> Option<LocalNed> {
        self.read_status(|s| s.vitals.local_ned)
    }

    /// Roll, pitch and NED yaw, rad (ATTITUDE).
    fn attitude(&self) -> Option<Attitude> {
        self.read_status(|s| s.vitals.attitude)
    }

    /// Compass heading, rad in [0, 2π) (ATTITUDE.yaw).
    fn heading_rad(&self) -> Option<f32> {
        self.read_status(|s| s.vitals.heading_rad)
    }

    /// Ground speed, m/s (VFR_HUD).
    fn groundspeed_m_s(&self) -> Option<f32> {
        self.read_status(|s| s.vitals.groundspeed_m_s)
    }

    /// Climb rate, m/s, up positive (VFR_HUD).
    fn climb_rate_m_s(&self) -> Option<f32> {
        self.read_status(|s| s.vitals.climb_rate_m_s)
    }

    /// Battery voltage (V) and charge (%) (SYS_STATUS).
    fn battery(&self) -> Option<Battery> {
        self.read_status(|s| s.vitals.battery)
    }

    /// GPS fix type and satellites (GPS_RAW_INT).
    fn gps(&self) -> Option<Gps> {
        self.read_status(|s| s.vitals.gps)
    }

    /// Home: latitude/longitude in degrees, altitude AMSL in m (HOME_POSITION); `None` until
    /// PX4 reports it.
    fn home(&self) -> Option<Home> {
        self.read_status(|s| s.vitals.home)
    }
}
