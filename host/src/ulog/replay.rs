//! PX4's log read back as the link would have carried it: the MAVLink messages PX4's mavlink
//! module makes of the topics the log holds, at the log's times, so that a program can be
//! checked against the log alone by the same core client that flies it (`nexus check PROGRAM
//! --ulog FILE`).
//!
//! Each sample of a topic makes the messages PX4 sends from it (its streams' sources in
//! `src/modules/mavlink/streams/`), from the newest sample of every topic read so far:
//!
//! | topic | message |
//! | --- | --- |
//! | `vehicle_status` (`arming_state`, `nav_state`, `vehicle_type`) | HEARTBEAT |
//! | `vehicle_land_detected.landed` | EXTENDED_SYS_STATE (ON_GROUND / IN_AIR) |
//! | `vehicle_local_position` (`x` `y` `z` `vx` `vy` `vz` `heading`, `ref_*`) | LOCAL_POSITION_NED, VFR_HUD (ground speed, climb, heading), ATTITUDE's yaw (without `vehicle_attitude`), and GLOBAL_POSITION_INT (without `vehicle_global_position`: `ref_alt − z`, the position from the reference point) |
//! | `vehicle_global_position` (`lat` `lon` `alt`) | GLOBAL_POSITION_INT |
//! | `vehicle_attitude.q` | ATTITUDE |
//! | `airspeed_validated.calibrated_airspeed_m_s` | VFR_HUD.airspeed |
//! | `battery_status` (`voltage_v`, `remaining`) | SYS_STATUS |
//! | `vehicle_gps_position` (`fix_type`, `satellites_used`) | GPS_RAW_INT |
//! | `home_position` | HOME_POSITION |
//! | `mission_result` (`seq_current`, `seq_reached`, `seq_total`, `finished`) | MISSION_CURRENT, MISSION_ITEM_REACHED (each new `seq_reached`) |
//! | logged strings (PX4's console at INFO and above, which holds its STATUSTEXTs) | STATUSTEXT |
//!
//! and a SYSTEM_TIME before each, its `time_boot_ms` the sample's timestamp (PX4's boot
//! clock, as on the link). What the log has no topic for is never invented:
//! [`cannot_answer`] says which conditions the log cannot answer, and why.

use super::Ulog;
use nexus_core::engine::{Condition, ConditionKind, Place};
use nexus_core::msg::{Frame, Msg};
use nexus_core::{mav, Mode};

/// A message made from the log: (µs of PX4's boot clock, the frame as the vehicle's).
pub type Timed = (u64, Frame);

/// The topics [`frames`] reads.
pub const TOPICS: [&str; 10] = [
    "vehicle_status",
    "vehicle_land_detected",
    "vehicle_local_position",
    "vehicle_global_position",
    "vehicle_attitude",
    "airspeed_validated",
    "battery_status",
    "vehicle_gps_position",
    "home_position",
    "mission_result",
];

/// The samples of `fields` of `topic`, row by row: (timestamp, values; NaN where a field is
/// not in the log).
fn rows(log: &Ulog, topic: &str, fields: &[&str]) -> Vec<(u64, Vec<f64>)> {
    let cols: Vec<Vec<(u64, f64)>> = fields.iter().map(|f| log.series(topic, f)).collect();
    let n = cols.iter().map(Vec::len).max().unwrap_or(0);
    let ts = cols
        .iter()
        .find(|c| c.len() == n)
        .cloned()
        .unwrap_or_default();
    (0..n)
        .map(|i| {
            let vals = cols
                .iter()
                .map(|c| if c.len() == n { c[i].1 } else { f64::NAN })
                .collect();
            (ts[i].0, vals)
        })
        .collect()
}

/// What the vehicle is, as far as the log has said.
#[derive(Debug, Default, Clone, Copy)]
struct Latest {
    armed: bool,
    nav_state: u8,
    vehicle_type: u8,
    /// x, y, z, vx, vy, vz, heading (NaN where unknown).
    local: Option<[f64; 7]>,
    /// ref_lat, ref_lon, ref_alt.
    reference: Option<[f64; 3]>,
    global: Option<[f64; 3]>,
    airspeed: Option<f64>,
    heading: Option<f64>,
    mission_reached: Option<i64>,
    text_id: u16,
}

const LOCAL: &[&str] = &[
    "x", "y", "z", "vx", "vy", "vz", "heading", "ref_lat", "ref_lon", "ref_alt",
];

fn finite(v: f64) -> Option<f64> {
    v.is_finite().then_some(v)
}

/// Metres north and east of a reference to degrees (the flat earth of a flight's size).
fn offset_deg(lat_deg: f64, north_m: f64, east_m: f64) -> (f64, f64) {
    const R: f64 = 6_371_000.0;
    let dlat = (north_m / R).to_degrees();
    let dlon = (east_m / (R * lat_deg.to_radians().cos().max(1e-6))).to_degrees();
    (dlat, dlon)
}

/// Every message the log makes, in time order (samples of one time in topic order), as
/// system `sysid`, component `compid`.
pub fn frames(log: &Ulog, sysid: u8, compid: u8) -> Vec<Timed> {
    // (timestamp, topic index, row)
    let mut samples: Vec<(u64, usize, Vec<f64>)> = Vec::new();
    let fields: [&[&str]; 10] = [
        &["arming_state", "nav_state", "vehicle_type"],
        &["landed"],
        LOCAL,
        &["lat", "lon", "alt"],
        &["q[0]", "q[1]", "q[2]", "q[3]"],
        &["calibrated_airspeed_m_s"],
        &["voltage_v", "remaining"],
        &["fix_type", "satellites_used"],
        &["lat", "lon", "alt", "x", "y", "z"],
        &["seq_current", "seq_reached", "seq_total", "finished"],
    ];
    for (k, (topic, f)) in TOPICS.iter().zip(fields).enumerate() {
        for (t, r) in rows(log, topic, f) {
            samples.push((t, k, r));
        }
    }
    let texts = log.logged.iter().map(|s| (s.timestamp_us, s));
    let mut texts: Vec<_> = texts.collect();
    texts.sort_by_key(|t| t.0);
    samples.sort_by_key(|s| (s.0, s.1));
    let has_global = log.has_topic("vehicle_global_position");
    let has_attitude = log.has_topic("vehicle_attitude");
    let mut out: Vec<Timed> = Vec::with_capacity(samples.len() * 3);
    let mut st = Latest::default();
    let frame = |m: Msg| Frame::from_msg(sysid, compid, m);
    let mut last_ms: Option<u32> = None;
    let mut push = |out: &mut Vec<Timed>, t: u64, m: Msg| {
        let ms = (t / 1000) as u32;
        if last_ms != Some(ms) {
            last_ms = Some(ms);
            out.push((
                t,
                frame(Msg::SystemTime(mav::SYSTEM_TIME_DATA {
                    time_unix_usec: 0,
                    time_boot_ms: ms,
                })),
            ));
        }
        out.push((t, frame(m)));
    };
    let mut ti = texts.into_iter().peekable();
    for (t, k, r) in samples {
        while let Some((tt, s)) = ti.next_if(|(tt, _)| *tt <= t) {
            statustext(&mut out, &mut push, tt, s, &mut st);
        }
        let ms = (t / 1000) as u32;
        match k {
            0 => {
                st.armed = r[0] == 2.0;
                if let Some(n) = finite(r[1]) {
                    st.nav_state = n as u8;
                }
                if let Some(v) = finite(r[2]) {
                    st.vehicle_type = v as u8;
                }
                push(&mut out, t, heartbeat(&st));
            }
            1 => {
                let landed_state = if r[0] != 0.0 {
                    mav::MavLandedState::MAV_LANDED_STATE_ON_GROUND
                } else {
                    mav::MavLandedState::MAV_LANDED_STATE_IN_AIR
                };
                push(
                    &mut out,
                    t,
                    Msg::ExtendedSysState(mav::EXTENDED_SYS_STATE_DATA {
                        vtol_state: mav::MavVtolState::MAV_VTOL_STATE_UNDEFINED,
                        landed_state,
                    }),
                );
            }
            2 => {
                let l = [r[0], r[1], r[2], r[3], r[4], r[5], r[6]];
                st.local = Some(l);
                if let (Some(a), Some(b), Some(c)) = (finite(r[7]), finite(r[8]), finite(r[9])) {
                    st.reference = Some([a, b, c]);
                }
                if let Some(h) = finite(l[6]) {
                    st.heading = Some(h);
                }
                let z = |v: f64| if v.is_finite() { v as f32 } else { 0.0 };
                push(
                    &mut out,
                    t,
                    Msg::LocalPositionNed(mav::LOCAL_POSITION_NED_DATA {
                        time_boot_ms: ms,
                        x: z(l[0]),
                        y: z(l[1]),
                        z: z(l[2]),
                        vx: z(l[3]),
                        vy: z(l[4]),
                        vz: z(l[5]),
                    }),
                );
                if !has_attitude {
                    if let Some(h) = st.heading {
                        push(&mut out, t, attitude(ms, 0.0, 0.0, h));
                    }
                }
                push(&mut out, t, vfr_hud(&st));
                if !has_global {
                    if let Some(g) = global_from_local(&st) {
                        st.global = Some(g);
                        push(&mut out, t, global_position(ms, &st));
                    }
                }
            }
            3 => {
                if let (Some(a), Some(b), Some(c)) = (finite(r[0]), finite(r[1]), finite(r[2])) {
                    st.global = Some([a, b, c]);
                    push(&mut out, t, global_position(ms, &st));
                }
            }
            4 => {
                let (w, x, y, zq) = (r[0], r[1], r[2], r[3]);
                if [w, x, y, zq].iter().all(|v| v.is_finite()) {
                    let roll = (2.0 * (w * x + y * zq)).atan2(1.0 - 2.0 * (x * x + y * y));
                    let pitch = (2.0 * (w * y - zq * x)).clamp(-1.0, 1.0).asin();
                    let yaw = (2.0 * (w * zq + x * y)).atan2(1.0 - 2.0 * (y * y + zq * zq));
                    st.heading = Some(yaw);
                    push(&mut out, t, attitude(ms, roll, pitch, yaw));
                }
            }
            5 => st.airspeed = finite(r[0]),
            6 => {
                let mut s = mav::SYS_STATUS_DATA::DEFAULT;
                s.voltage_battery = finite(r[0]).map_or(u16::MAX, |v| (v * 1000.0) as u16);
                s.current_battery = -1;
                s.battery_remaining = finite(r[1]).map_or(-1, |v| (v * 100.0).round() as i8);
                push(&mut out, t, Msg::SysStatus(s));
            }
            7 => {
                let mut g = mav::GPS_RAW_INT_DATA::DEFAULT;
                g.fix_type = num_traits::FromPrimitive::from_u8(r[0] as u8)
                    .unwrap_or(mav::GpsFixType::GPS_FIX_TYPE_NO_GPS);
                g.satellites_visible = finite(r[1]).map_or(255, |v| v as u8);
                g.time_usec = t;
                push(&mut out, t, Msg::GpsRawInt(g));
            }
            8 => {
                let mut h = mav::HOME_POSITION_DATA::DEFAULT;
                h.latitude = (r[0] * 1e7) as i32;
                h.longitude = (r[1] * 1e7) as i32;
                h.altitude = (r[2] * 1000.0) as i32;
                h.x = r[3] as f32;
                h.y = r[4] as f32;
                h.z = r[5] as f32;
                h.q = [1.0, 0.0, 0.0, 0.0];
                h.time_usec = t;
                if r[..3].iter().all(|v| v.is_finite()) {
                    push(&mut out, t, Msg::HomePosition(h));
                }
            }
            9 => {
                let current = finite(r[0]).unwrap_or(0.0) as u16;
                let total = finite(r[2]).map_or(u16::MAX, |v| v as u16);
                let finished = r[3] == 1.0;
                let state = if finished {
                    5 // MISSION_STATE_COMPLETE
                } else if st.nav_state == 3 {
                    3 // ACTIVE
                } else {
                    4 // PAUSED
                };
                let mut m = mav::MISSION_CURRENT_DATA::DEFAULT;
                m.seq = current;
                m.total = total;
                m.mission_state = num_traits::FromPrimitive::from_u8(state)
                    .unwrap_or(mav::MissionState::MISSION_STATE_UNKNOWN);
                push(&mut out, t, Msg::MissionCurrent(m));
                if let Some(reached) = finite(r[1]).map(|v| v as i64) {
                    if reached >= 0 && st.mission_reached != Some(reached) {
                        st.mission_reached = Some(reached);
                        push(
                            &mut out,
                            t,
                            Msg::MissionItemReached(mav::MISSION_ITEM_REACHED_DATA {
                                seq: reached as u16,
                            }),
                        );
                    }
                }
            }
            _ => {}
        }
    }
    for (tt, s) in ti {
        statustext(&mut out, &mut push, tt, s, &mut st);
    }
    out
}

/// A logged string as STATUSTEXT, in chunks of 50 bytes (one id) when longer.
fn statustext(
    out: &mut Vec<Timed>,
    push: &mut impl FnMut(&mut Vec<Timed>, u64, Msg),
    t: u64,
    s: &super::LoggedString,
    st: &mut Latest,
) {
    let severity = num_traits::FromPrimitive::from_u8(s.level.saturating_sub(b'0').min(7))
        .unwrap_or(mav::MavSeverity::MAV_SEVERITY_INFO);
    let bytes = s.text.as_bytes();
    st.text_id = st.text_id.wrapping_add(1).max(1);
    let chunks: Vec<&[u8]> = if bytes.is_empty() {
        vec![&[][..]]
    } else {
        bytes.chunks(50).collect()
    };
    let many = chunks.len() > 1;
    for (i, c) in chunks.iter().enumerate() {
        let mut text = [0u8; 50];
        text[..c.len()].copy_from_slice(c);
        push(
            out,
            t,
            Msg::Statustext(mav::STATUSTEXT_DATA {
                severity,
                text: text.into(),
                id: if many { st.text_id } else { 0 },
                chunk_seq: i as u8,
            }),
        );
    }
}

fn heartbeat(st: &Latest) -> Msg {
    let mode = Mode::from_nav_state(st.nav_state).unwrap_or(Mode::Unknown { main: 0, sub: 0 });
    let mut base_mode = mav::MavModeFlag::MAV_MODE_FLAG_CUSTOM_MODE_ENABLED;
    if st.armed {
        base_mode |= mav::MavModeFlag::MAV_MODE_FLAG_SAFETY_ARMED;
    }
    let mavtype = match st.vehicle_type {
        2 => mav::MavType::MAV_TYPE_FIXED_WING,
        3 => mav::MavType::MAV_TYPE_GROUND_ROVER,
        4 => mav::MavType::MAV_TYPE_AIRSHIP,
        _ => mav::MavType::MAV_TYPE_QUADROTOR,
    };
    Msg::Heartbeat(mav::HEARTBEAT_DATA {
        custom_mode: mode.custom_mode(),
        mavtype,
        autopilot: mav::MavAutopilot::MAV_AUTOPILOT_PX4,
        base_mode,
        system_status: if st.armed {
            mav::MavState::MAV_STATE_ACTIVE
        } else {
            mav::MavState::MAV_STATE_STANDBY
        },
        mavlink_version: 3,
    })
}

fn attitude(ms: u32, roll: f64, pitch: f64, yaw: f64) -> Msg {
    Msg::Attitude(mav::ATTITUDE_DATA {
        time_boot_ms: ms,
        roll: roll as f32,
        pitch: pitch as f32,
        yaw: yaw as f32,
        ..mav::ATTITUDE_DATA::DEFAULT
    })
}

fn vfr_hud(st: &Latest) -> Msg {
    let l = st.local.unwrap_or([f64::NAN; 7]);
    let heading = st.heading.map_or(0, |h| {
        let d = h.to_degrees().rem_euclid(360.0);
        d as i16
    });
    Msg::VfrHud(mav::VFR_HUD_DATA {
        airspeed: st.airspeed.map_or(f32::NAN, |a| a as f32),
        groundspeed: l[3].hypot(l[4]) as f32,
        alt: st.global.map_or(0.0, |g| g[2] as f32),
        climb: -l[5] as f32,
        heading,
        throttle: 0,
    })
}

/// The global position PX4 derives from the local one: the reference point moved by x, y,
/// its altitude less z; without a reference, only the altitude (from 0), at 0°, 0°.
fn global_from_local(st: &Latest) -> Option<[f64; 3]> {
    let l = st.local?;
    let z = finite(l[2])?;
    match st.reference {
        Some([lat, lon, alt]) => {
            let (dlat, dlon) = offset_deg(lat, l[0], l[1]);
            Some([lat + dlat, lon + dlon, alt - z])
        }
        None => Some([0.0, 0.0, -z]),
    }
}

fn global_position(ms: u32, st: &Latest) -> Msg {
    let g = st.global.unwrap_or([0.0; 3]);
    let l = st.local.unwrap_or([f64::NAN; 7]);
    let cm = |v: f64| if v.is_finite() { (v * 100.0) as i16 } else { 0 };
    Msg::GlobalPositionInt(mav::GLOBAL_POSITION_INT_DATA {
        time_boot_ms: ms,
        lat: (g[0] * 1e7) as i32,
        lon: (g[1] * 1e7) as i32,
        alt: (g[2] * 1000.0) as i32,
        relative_alt: finite(l[2]).map_or(0, |z| (-z * 1000.0) as i32),
        vx: cm(l[3]),
        vy: cm(l[4]),
        vz: cm(l[5]),
        hdg: st.heading.map_or(u16::MAX, |h| {
            (h.to_degrees().rem_euclid(360.0) * 100.0) as u16
        }),
    })
}

/// Why the log cannot answer `c`, naming what it lacks; `None` when it can.
pub fn cannot_answer(log: &Ulog, c: &Condition) -> Option<String> {
    let has = |t: &str| log.has_topic(t);
    let field = |t: &str, f: &str| log.field(t, f).is_some();
    let need = |what: &[(&str, bool)]| -> Option<String> {
        let missing: Vec<&str> = what.iter().filter(|(_, ok)| !ok).map(|(n, _)| *n).collect();
        (!missing.is_empty()).then(|| format!("PX4's log has no {}", missing.join(", no ")))
    };
    let status = ("vehicle_status", has("vehicle_status"));
    let height = (
        "vehicle_local_position.z or vehicle_global_position.alt",
        field("vehicle_local_position", "z") || field("vehicle_global_position", "alt"),
    );
    let latlon = (
        "vehicle_global_position, or vehicle_local_position's ref_lat/ref_lon",
        has("vehicle_global_position")
            || (field("vehicle_local_position", "ref_lat")
                && field("vehicle_local_position", "ref_lon")
                && field("vehicle_local_position", "x")),
    );
    let heading = (
        "vehicle_attitude or vehicle_local_position.heading",
        has("vehicle_attitude") || field("vehicle_local_position", "heading"),
    );
    let mission = ("mission_result", has("mission_result"));
    let battery = ("battery_status", has("battery_status"));
    let gps = ("vehicle_gps_position", has("vehicle_gps_position"));
    let landed = ("vehicle_land_detected", has("vehicle_land_detected"));
    match c.kind() {
        ConditionKind::Altitude => need(&[height]),
        ConditionKind::Airspeed => need(&[(
            "airspeed_validated",
            field("airspeed_validated", "calibrated_airspeed_m_s"),
        )]),
        ConditionKind::Waypoint | ConditionKind::Reached | ConditionKind::MissionComplete => {
            need(&[mission])
        }
        ConditionKind::SimTime | ConditionKind::Time => None,
        ConditionKind::Mode | ConditionKind::Armed | ConditionKind::Disarmed => need(&[status]),
        ConditionKind::Text => need(&[(
            "logged string (PX4's console texts)",
            !log.logged.is_empty(),
        )]),
        // The land detector, or the engine's rule: disarmed within 0.3 m of the pad.
        ConditionKind::Landed if has("vehicle_land_detected") => None,
        ConditionKind::Landed => need(&[status, height]),
        ConditionKind::MissionVerified => {
            Some("a mission verification is a download over the link; PX4's log holds none".into())
        }
        ConditionKind::AtTarget => need(&[height, latlon, heading]),
        ConditionKind::Distance => match c.place() {
            Some(Place::World { .. }) => need(&[(
                "vehicle_local_position x, y, z",
                field("vehicle_local_position", "x") && field("vehicle_local_position", "z"),
            )]),
            Some(Place::Home) => need(&[latlon, ("home_position", has("home_position"))]),
            _ => need(&[latlon]),
        },
        ConditionKind::Groundspeed => need(&[(
            "vehicle_local_position vx, vy",
            field("vehicle_local_position", "vx") && field("vehicle_local_position", "vy"),
        )]),
        ConditionKind::ClimbRate => need(&[(
            "vehicle_local_position.vz",
            field("vehicle_local_position", "vz"),
        )]),
        ConditionKind::Heading => need(&[heading]),
        ConditionKind::BatteryRemaining | ConditionKind::BatteryVoltage => need(&[battery]),
        ConditionKind::GpsFix | ConditionKind::Satellites => need(&[gps]),
        ConditionKind::LandedState => need(&[landed]),
        _ => Some(format!(
            "nexus does not know which topic of PX4's log answers `{}`",
            c.kind().name()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ulog::{FieldType, Topic, UlogWriter, WriteValue};

    /// A log with vehicle_status and vehicle_local_position only.
    fn small() -> Ulog {
        let mut w = UlogWriter::new(Vec::new(), 0).unwrap();
        let s = w
            .format(Topic::new(
                "vehicle_status",
                &[
                    (FieldType::U8, "arming_state"),
                    (FieldType::U8, "nav_state"),
                ],
            ))
            .unwrap();
        let l = w
            .format(Topic::new(
                "vehicle_local_position",
                &[(FieldType::F32, "z")],
            ))
            .unwrap();
        let (s, l) = (w.subscribe(s).unwrap(), w.subscribe(l).unwrap());
        for i in 0..20u64 {
            let t = i * 100_000;
            let armed = if i >= 5 { 2 } else { 1 };
            w.data(s, t, &[WriteValue::U8(armed), WriteValue::U8(4)])
                .unwrap();
            w.data(l, t, &[WriteValue::F32(-(i as f32))]).unwrap();
        }
        w.log(b'6', 1_050_000, "[commander] Takeoff detected")
            .unwrap();
        Ulog::parse(w.into_inner().unwrap()).unwrap()
    }

    #[test]
    fn samples_become_the_messages_px4_sends_from_them() {
        let log = small();
        let f = frames(&log, 1, 1);
        let beats: Vec<bool> = f
            .iter()
            .filter_map(|(_, fr)| match &fr.msg {
                Msg::Heartbeat(h) => Some(
                    h.base_mode
                        .contains(mav::MavModeFlag::MAV_MODE_FLAG_SAFETY_ARMED),
                ),
                _ => None,
            })
            .collect();
        assert_eq!(beats.len(), 20);
        assert_eq!(beats.iter().filter(|a| **a).count(), 15);
        // Without a global position or a reference: the altitude from z, at 0°, 0°.
        let alts: Vec<i32> = f
            .iter()
            .filter_map(|(_, fr)| match &fr.msg {
                Msg::GlobalPositionInt(g) => Some(g.alt),
                _ => None,
            })
            .collect();
        assert_eq!(alts[19], 19_000);
        // Time in order, a SYSTEM_TIME before each new millisecond.
        assert!(f.windows(2).all(|w| w[0].0 <= w[1].0));
        assert!(matches!(f[0].1.msg, Msg::SystemTime(_)));
        let text = f.iter().find_map(|(t, fr)| match &fr.msg {
            Msg::Statustext(s) => Some((*t, s.text.to_str().unwrap_or("").to_string())),
            _ => None,
        });
        assert_eq!(
            text,
            Some((1_050_000, "[commander] Takeoff detected".into()))
        );
    }

    #[test]
    fn what_the_log_lacks_is_named() {
        let log = small();
        assert_eq!(cannot_answer(&log, &Condition::armed()), None);
        assert_eq!(cannot_answer(&log, &Condition::altitude_m(3.0)), None);
        assert_eq!(cannot_answer(&log, &Condition::text("Takeoff")), None);
        // The engine's landed rule: disarmed near the pad, from the status and the height.
        assert_eq!(cannot_answer(&log, &Condition::landed()), None);
        let why = cannot_answer(&log, &Condition::airspeed_m_s(5.0)).unwrap();
        assert!(why.contains("airspeed_validated"), "{why}");
        let why = cannot_answer(&log, &Condition::mission_complete()).unwrap();
        assert!(why.contains("mission_result"), "{why}");
        let why = cannot_answer(&log, &Condition::distance_m(3.0, Place::Home)).unwrap();
        assert!(why.contains("home_position"), "{why}");
        assert!(cannot_answer(&log, &Condition::mission_verified()).is_some());
    }
}
