//! How a simulated vehicle is set up: identity, location, boot timing and fidelity switches.

use super::geo::GeoPoint;

/// When things happen after boot, in sim milliseconds of PX4's own clock (time_boot_ms), as the
/// px4-traces hold them (`scripts/trace-phases DIR NAME --boot`, `fixtures/calibration/
/// px4-boot.tsv`): first HEARTBEAT at 1.24–1.25 s (docs/px4-wire.md §Boot: 1.3–1.8 s from the exec,
/// a few tenths earlier); the SYS_STATUS prearm bit at 4.07–4.08 s in Hold and Takeoff, 6.11 s
/// in Mission mode with a mission loaded (box-x4), STANDBY at 4.26–4.28 s in every mode. A
/// client that settles 5 s after the last "not armable" SYS_STATUS then arms at 8.9 s and
/// 11.1 s, as nexus did on PX4.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BootTimings {
    /// The mavlink module starts: first HEARTBEAT, inbound traffic handled from here on.
    pub mavlink_start_ms: u64,
    /// STATUSTEXT stream starts draining the queued texts (earlier ones arrive together).
    pub texts_start_ms: u64,
    /// Local position estimate valid (LOCAL_POSITION_NED starts).
    pub local_position_ms: u64,
    /// Global position estimate valid (GLOBAL_POSITION_INT starts, home set).
    pub global_position_ms: u64,
    /// Prearm checks pass: armable (SYS_STATUS prearm bit, then STANDBY at the next heartbeat).
    pub prearm_ok_ms: u64,
    /// Prearm checks pass in Mission mode, with a mission loaded: later than in the other modes.
    pub mission_prearm_ok_ms: u64,
}

impl Default for BootTimings {
    fn default() -> Self {
        BootTimings {
            mavlink_start_ms: 1_240,
            texts_start_ms: 2_700,
            local_position_ms: 2_600,
            global_position_ms: 3_000,
            prearm_ok_ms: 4_080,
            mission_prearm_ok_ms: 6_110,
        }
    }
}

/// Configuration of one simulated PX4 vehicle (the in-memory model; sockets are the server's).
#[derive(Debug, Clone, PartialEq)]
pub struct VehicleConfig {
    /// SITL instance N: system id N + 1.
    pub instance: u8,
    /// Which SIH vehicle flies: its parameter list, HEARTBEAT type and flight model.
    pub vehicle: crate::VehicleType,
    /// Where the pad is.
    pub origin: GeoPoint,
    /// Physics and controller rate, Hz (sim time).
    pub physics_hz: u32,
    /// Model PX4's home-altitude re-estimation after takeoff: HOME_POSITION.altitude (and so
    /// GLOBAL_POSITION_INT.relative_alt) moves every 2 s for ~120 s, often in steps of ≥ 1 m,
    /// while LOCAL_POSITION_NED.z, GLOBAL_POSITION_INT.alt and the ground truth stay smooth. On
    /// by default because real PX4 does it: code that reads relative_alt meets it in tests.
    pub relative_alt_steps: bool,
    /// Send STATUSTEXT only while a GCS/onboard HEARTBEAT has been seen in the last 3 s, as
    /// PX4's STATUSTEXT stream does.
    pub texts_need_gcs_heartbeat: bool,
    /// Boot timeline.
    pub boot: BootTimings,
    /// Parameter overrides at boot (as `PX4_PARAM_<NAME>=v` would set them), numeric values.
    pub params: Vec<(String, f64)>,
    /// Texts PX4 emits during boot: (sim ms, MAV_SEVERITY, text).
    pub boot_texts: Vec<(u64, u8, String)>,
    /// Identify as PX4 on flight-controller hardware (AUTOPILOT_VERSION as a Pixhawk 6C on
    /// NuttX sends it) instead of as SITL: a stand-in for a real vehicle, so tests can check
    /// what a client refuses to do to one. Everything else still simulates.
    pub hardware_identity: bool,
    /// The autopilot's MAVLink component id: 1 as PX4's autopilot; another stands in for a
    /// vehicle whose autopilot a client must find by its heartbeat (or be told).
    pub component_id: u8,
    /// Starting state of the deterministic pseudo-random parts (garbage bytes, altitude
    /// steps): the same value, the same flight.
    pub random_start: u64,
    /// MAVLink 2 signing as PX4 main does it ([`crate::signing`]); `None`: no signing at all
    /// (PX4 before it).
    pub signing: Option<crate::signing::SigningConfig>,
}

impl VehicleConfig {
    /// Defaults for instance `n`.
    pub fn instance(n: u8) -> Self {
        VehicleConfig {
            instance: n,
            vehicle: crate::VehicleType::Quadrotor,
            origin: GeoPoint::SIH_DEFAULT,
            physics_hz: 250,
            relative_alt_steps: true,
            texts_need_gcs_heartbeat: true,
            boot: BootTimings::default(),
            params: Vec::new(),
            // PX4 1.18's only boot text on this link in every trace (CRITICAL, at 2.56-2.58 s).
            boot_texts: vec![(
                2_560,
                2,
                "Preflight Fail: heading estimate not stable".to_owned(),
            )],
            hardware_identity: false,
            component_id: super::vehicle::COMPID,
            random_start: 0x5eed_0000 + n as u64,
            signing: None,
        }
    }

    /// Defaults for instance `n` flying `vehicle`.
    pub fn vehicle(n: u8, vehicle: crate::VehicleType) -> Self {
        VehicleConfig {
            vehicle,
            ..VehicleConfig::instance(n)
        }
    }

    /// MAVLink system id (instance + 1).
    pub fn sysid(&self) -> u8 {
        self.instance.wrapping_add(1)
    }
}

impl Default for VehicleConfig {
    fn default() -> Self {
        VehicleConfig::instance(0)
    }
}
