//! Streams for a link slower than PX4's: at 57 600 baud a serial line or telemetry radio moves
//! ~5.7 KB/s, while PX4 streams ~25 KB/s on its offboard link (ATTITUDE at 100 Hz, HIGHRES_IMU
//! and GLOBAL_POSITION_INT at 50 Hz, …, PX4-WIRE.md). What does not fit is lost at random —
//! among it the answers the engine waits for. So, as QGroundControl does for a radio, the
//! client asks (MAV_CMD_SET_MESSAGE_INTERVAL, 511) for the streams the engine reads at rates
//! the link carries, and turns off the bulk it never reads. The requests are idempotent and
//! are sent more than once: on a lossy link one may be lost.

use nexus_core::mav;
use nexus_core::offboard::wire::{command_long, Addr};
use nexus_core::offboard::OffboardConfig;

use super::{LinkHandle, PumpError};
use crate::transport::ConnString;

/// What PX4 streams on an offboard link, bytes a second (measured order of magnitude).
pub const PX4_STREAM_BYTES_PER_S: u32 = 25_000;

/// Message id and the rate asked for on a slow link, Hz (negative: off). About 1.5 KB/s in
/// all, a quarter of a 57 600 baud line, leaving room for commands and mission transfers.
pub const SLOW_LINK_RATES_HZ: [(u32, f32); 19] = [
    (30, 2.0),     // ATTITUDE: heading
    (31, -1.0),    // ATTITUDE_QUATERNION: not read
    (105, -1.0),   // HIGHRES_IMU: not read
    (331, -1.0),   // ODOMETRY: not read
    (83, -1.0),    // ATTITUDE_TARGET: not read (10 Hz)
    (85, -1.0),    // POSITION_TARGET_LOCAL_NED: not read (10 Hz)
    (87, -1.0),    // POSITION_TARGET_GLOBAL_INT: not read (10 Hz)
    (36, -1.0),    // SERVO_OUTPUT_RAW: not read (10 Hz)
    (132, -1.0),   // DISTANCE_SENSOR: not read (10 Hz)
    (111, -1.0),   // TIMESYNC: not read (10 Hz)
    (230, -1.0),   // ESTIMATOR_STATUS: not read
    (12901, -1.0), // OPEN_DRONE_ID_LOCATION: not read
    (33, 5.0),     // GLOBAL_POSITION_INT: position, height
    (32, 2.0),     // LOCAL_POSITION_NED
    (141, 1.0),    // ALTITUDE
    (24, 1.0),     // GPS_RAW_INT
    (74, 4.0),     // VFR_HUD: airspeed
    (1, 2.0),      // SYS_STATUS: health
    (245, 2.0),    // EXTENDED_SYS_STATE: landed state
];

/// The offboard machine's settings for a slow, lossy line: the same retry intervals (they
/// already exceed a radio's round trip of a few hundred ms at speed 1), but more resends
/// before a request or a mission transfer is given up, and a longer silence allowed inside
/// an upload — what still drops on a radio is tolerated, not reported as failure.
pub fn slow_link_offboard(c: OffboardConfig) -> OffboardConfig {
    OffboardConfig {
        max_sends: c.max_sends.max(20),
        mission_retries: c.mission_retries.max(12),
        mission_timeout_s: c.mission_timeout_s.max(15.0),
        ..c
    }
}

/// The line's byte rate when `conn` is a serial link slower than PX4's streams (8N1: ten bits
/// a byte); `None` otherwise (a network link, or a fast line).
pub fn slow_line_bytes_per_s(conn: &ConnString) -> Option<u32> {
    match conn {
        ConnString::Serial { baud, .. } if baud / 10 < PX4_STREAM_BYTES_PER_S => Some(baud / 10),
        _ => None,
    }
}

/// The SET_MESSAGE_INTERVAL commands of [`SLOW_LINK_RATES_HZ`] for the vehicle `to`.
pub fn slow_link_requests(to: Addr) -> impl Iterator<Item = mav::COMMAND_LONG_DATA> {
    SLOW_LINK_RATES_HZ.into_iter().map(move |(id, hz)| {
        let interval_us = if hz > 0.0 { 1e6 / hz } else { -1.0 };
        command_long(
            to,
            mav::MavCmd::MAV_CMD_SET_MESSAGE_INTERVAL,
            [id as f32, interval_us, 0.0, 0.0, 0.0, 0.0, 0.0],
            0,
        )
    })
}

impl LinkHandle {
    /// Ask the vehicle for [`SLOW_LINK_RATES_HZ`] once (call it again to repeat on a lossy
    /// link); how many requests went out.
    pub fn ask_slow_link_streams(&self) -> Result<usize, PumpError> {
        self.call(|ctx| {
            let tel = ctx.client().telemetry();
            let to = Addr {
                system: tel.ids().target_sysid,
                component: tel.target_compid(),
            };
            slow_link_requests(to)
                .filter(|cmd| ctx.send_message(cmd))
                .count()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_slow_serial_lines_are_slow_and_the_plan_fits_a_radio() {
        let s = |baud| ConnString::Serial {
            path: "/dev/ttyUSB0".into(),
            baud,
        };
        assert_eq!(slow_line_bytes_per_s(&s(57_600)), Some(5_760));
        assert_eq!(slow_line_bytes_per_s(&s(921_600)), None);
        assert_eq!(slow_line_bytes_per_s(&ConnString::udp_in_any(14540)), None);
        // Frame sizes: MAVLink 2 header and checksum (12 bytes) plus each payload.
        let payload = |id| match id {
            30 => 28,
            33 => 28,
            32 => 28,
            141 => 32,
            24 => 52,
            74 => 20,
            1 => 43,
            245 => 2,
            _ => 0,
        };
        let bytes: f32 = SLOW_LINK_RATES_HZ
            .iter()
            .filter(|(_, hz)| *hz > 0.0)
            .map(|&(id, hz)| hz * (12 + payload(id)) as f32)
            .sum();
        assert!(bytes < 5_760.0 / 3.0, "{bytes} B/s");
        let to = Addr {
            system: 3,
            component: 1,
        };
        let cmds: Vec<_> = slow_link_requests(to).collect();
        assert_eq!(cmds.len(), SLOW_LINK_RATES_HZ.len());
        assert_eq!(cmds[0].param1, 30.0);
        assert_eq!(cmds[0].param2, 500_000.0);
        assert_eq!(cmds[1].param2, -1.0);
        assert!(cmds.iter().all(|c| c.target_system == 3));
        let d = OffboardConfig::default();
        let slow = slow_link_offboard(d);
        assert!(slow.mission_retries > d.mission_retries && slow.max_sends > d.max_sends);
        assert_eq!(slow.mission_retry_s, d.mission_retry_s);
    }
}
