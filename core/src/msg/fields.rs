//! The hot messages read straight from their payload bytes.
//!
//! Ten messages make up nearly every frame the engine reads (PX4 streams ATTITUDE,
//! GLOBAL_POSITION_INT and LOCAL_POSITION_NED at 30–100 Hz). `mavlink`'s generated `deser`
//! reads them field by field through a checked cursor and returns a `Result` the caller moves
//! twice more; it is not inlined across the crate boundary. Here each is one fixed-size array
//! (the payload, zero-filled past a MAVLink 2 truncation) read at constant offsets, built where
//! [`super::Msg::decode`] returns it. The offsets are MAVLink's wire order (fields by
//! decreasing size, extensions last); a property test checks every function against
//! `mavlink`'s own `deser` on random payloads of every length, errors included.

use super::{enum_u8, padded};
use mavlink::dialects::common as mav;
use mavlink::error::ParserError;

#[inline(always)]
fn u16_at<const N: usize>(a: &[u8; N], o: usize) -> u16 {
    u16::from_le_bytes([a[o], a[o + 1]])
}

#[inline(always)]
fn i16_at<const N: usize>(a: &[u8; N], o: usize) -> i16 {
    u16_at(a, o) as i16
}

#[inline(always)]
fn u32_at<const N: usize>(a: &[u8; N], o: usize) -> u32 {
    u32::from_le_bytes([a[o], a[o + 1], a[o + 2], a[o + 3]])
}

#[inline(always)]
fn i32_at<const N: usize>(a: &[u8; N], o: usize) -> i32 {
    u32_at(a, o) as i32
}

#[inline(always)]
fn f32_at<const N: usize>(a: &[u8; N], o: usize) -> f32 {
    f32::from_bits(u32_at(a, o))
}

#[inline(always)]
fn u64_at<const N: usize>(a: &[u8; N], o: usize) -> u64 {
    u64::from(u32_at(a, o)) | (u64::from(u32_at(a, o + 4)) << 32)
}

/// HEARTBEAT (9 bytes).
#[inline(always)]
pub(super) fn heartbeat(p: &[u8]) -> Result<mav::HEARTBEAT_DATA, ParserError> {
    let a = padded::<9>(p);
    Ok(mav::HEARTBEAT_DATA {
        custom_mode: u32_at(&a, 0),
        mavtype: enum_u8(a[4], "MavType")?,
        autopilot: enum_u8(a[5], "MavAutopilot")?,
        base_mode: mav::MavModeFlag::from_bits_retain(a[6]),
        system_status: enum_u8(a[7], "MavState")?,
        mavlink_version: a[8],
    })
}

/// SYS_STATUS (31 bytes, 43 with its extensions).
#[inline(always)]
pub(super) fn sys_status(p: &[u8]) -> Result<mav::SYS_STATUS_DATA, ParserError> {
    let a = padded::<43>(p);
    let sensors = |o| mav::MavSysStatusSensor::from_bits_retain(u32_at(&a, o));
    let extended = |o| mav::MavSysStatusSensorExtended::from_bits_retain(u32_at(&a, o));
    Ok(mav::SYS_STATUS_DATA {
        onboard_control_sensors_present: sensors(0),
        onboard_control_sensors_enabled: sensors(4),
        onboard_control_sensors_health: sensors(8),
        load: u16_at(&a, 12),
        voltage_battery: u16_at(&a, 14),
        current_battery: i16_at(&a, 16),
        drop_rate_comm: u16_at(&a, 18),
        errors_comm: u16_at(&a, 20),
        errors_count1: u16_at(&a, 22),
        errors_count2: u16_at(&a, 24),
        errors_count3: u16_at(&a, 26),
        errors_count4: u16_at(&a, 28),
        battery_remaining: a[30] as i8,
        onboard_control_sensors_present_extended: extended(31),
        onboard_control_sensors_enabled_extended: extended(35),
        onboard_control_sensors_health_extended: extended(39),
    })
}

/// SYSTEM_TIME (12 bytes).
#[inline(always)]
pub(super) fn system_time(p: &[u8]) -> Result<mav::SYSTEM_TIME_DATA, ParserError> {
    let a = padded::<12>(p);
    Ok(mav::SYSTEM_TIME_DATA {
        time_unix_usec: u64_at(&a, 0),
        time_boot_ms: u32_at(&a, 8),
    })
}

/// GLOBAL_POSITION_INT (28 bytes).
#[inline(always)]
pub(super) fn global_position_int(p: &[u8]) -> Result<mav::GLOBAL_POSITION_INT_DATA, ParserError> {
    let a = padded::<28>(p);
    Ok(mav::GLOBAL_POSITION_INT_DATA {
        time_boot_ms: u32_at(&a, 0),
        lat: i32_at(&a, 4),
        lon: i32_at(&a, 8),
        alt: i32_at(&a, 12),
        relative_alt: i32_at(&a, 16),
        vx: i16_at(&a, 20),
        vy: i16_at(&a, 22),
        vz: i16_at(&a, 24),
        hdg: u16_at(&a, 26),
    })
}

/// LOCAL_POSITION_NED (28 bytes).
#[inline(always)]
pub(super) fn local_position_ned(p: &[u8]) -> Result<mav::LOCAL_POSITION_NED_DATA, ParserError> {
    let a = padded::<28>(p);
    Ok(mav::LOCAL_POSITION_NED_DATA {
        time_boot_ms: u32_at(&a, 0),
        x: f32_at(&a, 4),
        y: f32_at(&a, 8),
        z: f32_at(&a, 12),
        vx: f32_at(&a, 16),
        vy: f32_at(&a, 20),
        vz: f32_at(&a, 24),
    })
}

/// VFR_HUD (20 bytes).
#[inline(always)]
pub(super) fn vfr_hud(p: &[u8]) -> Result<mav::VFR_HUD_DATA, ParserError> {
    let a = padded::<20>(p);
    Ok(mav::VFR_HUD_DATA {
        airspeed: f32_at(&a, 0),
        groundspeed: f32_at(&a, 4),
        alt: f32_at(&a, 8),
        climb: f32_at(&a, 12),
        heading: i16_at(&a, 16),
        throttle: u16_at(&a, 18),
    })
}

/// ATTITUDE (28 bytes).
#[inline(always)]
pub(super) fn attitude(p: &[u8]) -> Result<mav::ATTITUDE_DATA, ParserError> {
    let a = padded::<28>(p);
    Ok(mav::ATTITUDE_DATA {
        time_boot_ms: u32_at(&a, 0),
        roll: f32_at(&a, 4),
        pitch: f32_at(&a, 8),
        yaw: f32_at(&a, 12),
        rollspeed: f32_at(&a, 16),
        pitchspeed: f32_at(&a, 20),
        yawspeed: f32_at(&a, 24),
    })
}

/// EXTENDED_SYS_STATE (2 bytes).
#[inline(always)]
pub(super) fn extended_sys_state(p: &[u8]) -> Result<mav::EXTENDED_SYS_STATE_DATA, ParserError> {
    let a = padded::<2>(p);
    Ok(mav::EXTENDED_SYS_STATE_DATA {
        vtol_state: enum_u8(a[0], "MavVtolState")?,
        landed_state: enum_u8(a[1], "MavLandedState")?,
    })
}

/// HOME_POSITION (52 bytes, 60 with its extension).
#[inline(always)]
pub(super) fn home_position(p: &[u8]) -> Result<mav::HOME_POSITION_DATA, ParserError> {
    let a = padded::<60>(p);
    Ok(mav::HOME_POSITION_DATA {
        latitude: i32_at(&a, 0),
        longitude: i32_at(&a, 4),
        altitude: i32_at(&a, 8),
        x: f32_at(&a, 12),
        y: f32_at(&a, 16),
        z: f32_at(&a, 20),
        q: [
            f32_at(&a, 24),
            f32_at(&a, 28),
            f32_at(&a, 32),
            f32_at(&a, 36),
        ],
        approach_x: f32_at(&a, 40),
        approach_y: f32_at(&a, 44),
        approach_z: f32_at(&a, 48),
        time_usec: u64_at(&a, 52),
    })
}

/// MISSION_CURRENT (2 bytes, 18 with its extensions).
#[inline(always)]
pub(super) fn mission_current(p: &[u8]) -> Result<mav::MISSION_CURRENT_DATA, ParserError> {
    let a = padded::<18>(p);
    Ok(mav::MISSION_CURRENT_DATA {
        seq: u16_at(&a, 0),
        total: u16_at(&a, 2),
        mission_state: enum_u8(a[4], "MissionState")?,
        mission_mode: a[5],
        mission_id: u32_at(&a, 6),
        fence_id: u32_at(&a, 10),
        rally_points_id: u32_at(&a, 14),
    })
}

/// GPS_RAW_INT (30 bytes, 52 with its extensions).
#[cfg(feature = "extra-conditions")]
#[inline(always)]
pub(super) fn gps_raw_int(p: &[u8]) -> Result<mav::GPS_RAW_INT_DATA, ParserError> {
    let a = padded::<52>(p);
    Ok(mav::GPS_RAW_INT_DATA {
        time_usec: u64_at(&a, 0),
        lat: i32_at(&a, 8),
        lon: i32_at(&a, 12),
        alt: i32_at(&a, 16),
        eph: u16_at(&a, 20),
        epv: u16_at(&a, 22),
        vel: u16_at(&a, 24),
        cog: u16_at(&a, 26),
        fix_type: enum_u8(a[28], "GpsFixType")?,
        satellites_visible: a[29],
        alt_ellipsoid: i32_at(&a, 30),
        h_acc: u32_at(&a, 34),
        v_acc: u32_at(&a, 38),
        vel_acc: u32_at(&a, 42),
        hdg_acc: u32_at(&a, 46),
        yaw: u16_at(&a, 50),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use mavlink::{MavlinkVersion, MessageData};
    use proptest::prelude::*;
    extern crate std;
    use std::format;
    use std::string::String;

    /// What a reader returned, comparable with `mavlink`'s: the value's `Debug` (f32 NaNs
    /// compare equal so), or the error's.
    fn shown<T: core::fmt::Debug>(r: Result<T, ParserError>) -> String {
        match r {
            Ok(m) => format!("Ok({m:?})"),
            Err(e) => format!("Err({e:?})"),
        }
    }

    /// Every payload length from empty to past the message's full length, with the bytes of
    /// `bytes` (so truncated, full and over-long payloads, and bad enum values, all occur).
    fn agrees<M: MessageData + core::fmt::Debug>(
        bytes: &[u8],
        reader: fn(&[u8]) -> Result<M, ParserError>,
    ) -> Result<(), TestCaseError> {
        for len in 0..=(M::ENCODED_LEN + 3).min(bytes.len()) {
            let p = &bytes[..len];
            for v in [MavlinkVersion::V1, MavlinkVersion::V2] {
                prop_assert_eq!(
                    shown(reader(p)),
                    shown(M::deser(v, p)),
                    "{} from {} bytes {:?}",
                    M::NAME,
                    len,
                    p
                );
            }
        }
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        /// Each hand-written reader returns what `mavlink`'s generated deserialiser returns, on
        /// any payload: same fields, same zero-fill, same error for an undefined enum value.
        #[test]
        fn readers_agree_with_mavlink(
            bytes in prop::collection::vec(any::<u8>(), 64),
            small in prop::collection::vec(0u8..12, 64),
        ) {
            // Small byte values make enum fields valid often (random bytes rarely are).
            for b in [&bytes, &small] {
                agrees(b, heartbeat)?;
                agrees(b, sys_status)?;
                agrees(b, system_time)?;
                agrees(b, global_position_int)?;
                agrees(b, local_position_ned)?;
                agrees(b, vfr_hud)?;
                agrees(b, attitude)?;
                agrees(b, extended_sys_state)?;
                agrees(b, home_position)?;
                agrees(b, mission_current)?;
                #[cfg(feature = "extra-conditions")]
                agrees(b, gps_raw_int)?;
            }
        }
    }

    #[test]
    fn readers_agree_with_mavlink_on_real_px4_payloads() {
        // Every frame of the recorded PX4 flight of a hot message, through both.
        let tlog = include_bytes!("../../../fixtures/px4-traces/box-x4.px4-to-nexus.tlog");
        let mut i = 0;
        let mut seen = 0;
        while i + 8 < tlog.len() {
            let f = &tlog[i + 8..];
            let len = 10 + f[1] as usize + 2 + if f[2] & 1 != 0 { 13 } else { 0 };
            let id = u32::from_le_bytes([f[7], f[8], f[9], 0]);
            let p = &f[10..10 + f[1] as usize];
            let v = MavlinkVersion::V2;
            let same = match id {
                0 => shown(heartbeat(p)) == shown(mav::HEARTBEAT_DATA::deser(v, p)),
                1 => shown(sys_status(p)) == shown(mav::SYS_STATUS_DATA::deser(v, p)),
                2 => shown(system_time(p)) == shown(mav::SYSTEM_TIME_DATA::deser(v, p)),
                30 => shown(attitude(p)) == shown(mav::ATTITUDE_DATA::deser(v, p)),
                32 => {
                    shown(local_position_ned(p)) == shown(mav::LOCAL_POSITION_NED_DATA::deser(v, p))
                }
                33 => {
                    shown(global_position_int(p))
                        == shown(mav::GLOBAL_POSITION_INT_DATA::deser(v, p))
                }
                42 => shown(mission_current(p)) == shown(mav::MISSION_CURRENT_DATA::deser(v, p)),
                74 => shown(vfr_hud(p)) == shown(mav::VFR_HUD_DATA::deser(v, p)),
                242 => shown(home_position(p)) == shown(mav::HOME_POSITION_DATA::deser(v, p)),
                245 => {
                    shown(extended_sys_state(p)) == shown(mav::EXTENDED_SYS_STATE_DATA::deser(v, p))
                }
                #[cfg(feature = "extra-conditions")]
                24 => shown(gps_raw_int(p)) == shown(mav::GPS_RAW_INT_DATA::deser(v, p)),
                _ => true,
            };
            assert!(same, "message {id} at tlog offset {i}: {p:?}");
            seen += usize::from(matches!(
                id,
                0 | 1 | 2 | 24 | 30 | 32 | 33 | 42 | 74 | 242 | 245
            ));
            i += 8 + len;
        }
        assert!(seen > 13_000, "{seen}");
    }
}
