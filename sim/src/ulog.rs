//! PX4's log format (ULog, `docs.px4.io` "ULog File Format", version 1) written: the built-in
//! vehicle's own log of its flight ([`FlightLog`]) and any log made of PX4's topics
//! ([`UlogWriter`]), which pyulog and Flight Review open.
//!
//! [`FlightLog`] logs the topics the vehicle models, with PX4's topic and field names and PX4's
//! enumerations (`vehicle_status.arming_state` 1 disarmed / 2 armed, `nav_state` as
//! `NAVIGATION_STATE_*`), at [`FLIGHT_LOG_PERIOD_US`] of the vehicle's clock, every timestamp in
//! µs of that clock (PX4's boot clock: `time_boot_ms` × 1000):
//! * `vehicle_status`: `arming_state`, `nav_state`, `failsafe`, `armed_time`, `takeoff_time`,
//!   `vehicle_type` and `system_type` (the airframe, with SYS_AUTOSTART and MAV_TYPE among the
//!   header's parameters);
//! * `vehicle_land_detected`: `landed`, `maybe_landed`, `ground_contact`, `freefall`;
//! * `vehicle_local_position`: `x`, `y`, `z`, `vx`, `vy`, `vz`, `heading` (NED of the pad, m,
//!   m/s, rad), `xy_valid`, `z_valid`, `ref_lat`, `ref_lon` (deg), `ref_alt` (m AMSL);
//! * `vehicle_global_position`: `lat`, `lon` (deg), `alt` (m AMSL);
//! * `mission_result`: `seq_current`, `seq_reached`, `seq_total`, `valid`, `finished`;
//! * `battery_status`: `voltage_v`, `remaining` (0–1), `connected`, `warning`.
//!
//! The vehicle's own model is logged, not the ground truth of a separate simulator: it has one
//! state, which is what it reports on MAVLink.

use std::io::{self, Write};

/// ULog's file magic: `ULog`, then 0x01 0x12 0x35.
pub const MAGIC: [u8; 7] = [0x55, 0x4c, 0x6f, 0x67, 0x01, 0x12, 0x35];
/// The format version written (1: with the flag-bits message).
pub const VERSION: u8 = 1;
/// How often [`FlightLog`] logs each topic, µs of the vehicle's clock (10 Hz).
pub const FLIGHT_LOG_PERIOD_US: u64 = 100_000;

/// A field's type in a format definition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldType {
    /// `uint8_t`
    U8,
    /// `int32_t`
    I32,
    /// `uint16_t`
    U16,
    /// `uint64_t`
    U64,
    /// `float`
    F32,
    /// `double`
    F64,
    /// `bool`
    Bool,
}

impl FieldType {
    /// ULog's name of the type.
    pub fn name(self) -> &'static str {
        match self {
            FieldType::U8 => "uint8_t",
            FieldType::I32 => "int32_t",
            FieldType::U16 => "uint16_t",
            FieldType::U64 => "uint64_t",
            FieldType::F32 => "float",
            FieldType::F64 => "double",
            FieldType::Bool => "bool",
        }
    }

    /// Bytes of one value.
    pub fn size(self) -> usize {
        match self {
            FieldType::U8 | FieldType::Bool => 1,
            FieldType::U16 => 2,
            FieldType::I32 | FieldType::F32 => 4,
            FieldType::U64 | FieldType::F64 => 8,
        }
    }
}

/// One value of a logged message, in its field's type.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Value {
    /// `uint8_t`
    U8(u8),
    /// `int32_t`
    I32(i32),
    /// `uint16_t`
    U16(u16),
    /// `uint64_t`
    U64(u64),
    /// `float`
    F32(f32),
    /// `double`
    F64(f64),
    /// `bool`
    Bool(bool),
}

impl Value {
    fn field_type(self) -> FieldType {
        match self {
            Value::U8(_) => FieldType::U8,
            Value::I32(_) => FieldType::I32,
            Value::U16(_) => FieldType::U16,
            Value::U64(_) => FieldType::U64,
            Value::F32(_) => FieldType::F32,
            Value::F64(_) => FieldType::F64,
            Value::Bool(_) => FieldType::Bool,
        }
    }

    fn put(self, out: &mut Vec<u8>) {
        match self {
            Value::U8(v) => out.push(v),
            Value::I32(v) => out.extend_from_slice(&v.to_le_bytes()),
            Value::U16(v) => out.extend_from_slice(&v.to_le_bytes()),
            Value::U64(v) => out.extend_from_slice(&v.to_le_bytes()),
            Value::F32(v) => out.extend_from_slice(&v.to_le_bytes()),
            Value::F64(v) => out.extend_from_slice(&v.to_le_bytes()),
            Value::Bool(v) => out.push(v as u8),
        }
    }
}

/// A topic's format: its name and fields after the leading `uint64_t timestamp`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Topic {
    /// PX4's topic name (`vehicle_status`).
    pub name: String,
    /// The fields after `timestamp`, in order.
    pub fields: Vec<(FieldType, String)>,
}

impl Topic {
    /// A topic named `name` with these fields (after `timestamp`).
    pub fn new(name: &str, fields: &[(FieldType, &str)]) -> Topic {
        Topic {
            name: name.to_string(),
            fields: fields.iter().map(|(t, n)| (*t, n.to_string())).collect(),
        }
    }

    /// The format message's text: `name:uint64_t timestamp;type field;…`.
    pub fn format(&self) -> String {
        let mut s = format!("{}:uint64_t timestamp;", self.name);
        for (t, n) in &self.fields {
            s.push_str(&format!("{} {n};", t.name()));
        }
        s
    }
}

/// Why a message was not written.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    /// The file could not be written.
    #[error("cannot write the ULog: {0}")]
    Io(#[from] io::Error),
    /// A message is longer than ULog's 16-bit size.
    #[error("a ULog message of {0} bytes is longer than the format's 65535")]
    TooLong(usize),
    /// Data for a topic that was not added, or values that do not match its fields.
    #[error("data for topic {0} does not match its format")]
    Mismatch(String),
    /// A definition (format, info, parameter) after the first subscription.
    #[error("ULog definitions come before the first subscription")]
    Late,
}

/// Writes a ULog: the header and flag bits at once, then definitions (infos, parameters,
/// formats), then subscriptions and their data, and logged strings.
#[derive(Debug)]
pub struct UlogWriter<W: Write> {
    out: W,
    topics: Vec<Topic>,
    /// Topics subscribed (by index in `topics`): the msg_id is the position here.
    subscribed: Vec<usize>,
    buf: Vec<u8>,
}

impl<W: Write> UlogWriter<W> {
    /// Start a log whose header says it began at `start_us` of the vehicle's clock.
    pub fn new(mut out: W, start_us: u64) -> Result<UlogWriter<W>, WriteError> {
        let mut header = Vec::with_capacity(16);
        header.extend_from_slice(&MAGIC);
        header.push(VERSION);
        header.extend_from_slice(&start_us.to_le_bytes());
        out.write_all(&header)?;
        let mut w = UlogWriter {
            out,
            topics: Vec::new(),
            subscribed: Vec::new(),
            buf: Vec::new(),
        };
        // Flag bits: no compatible or incompatible flags, no appended data.
        w.message(b'B', &[0u8; 40])?;
        Ok(w)
    }

    fn message(&mut self, kind: u8, body: &[u8]) -> Result<(), WriteError> {
        let len = u16::try_from(body.len()).map_err(|_| WriteError::TooLong(body.len()))?;
        let mut m = Vec::with_capacity(3 + body.len());
        m.extend_from_slice(&len.to_le_bytes());
        m.push(kind);
        m.extend_from_slice(body);
        self.out.write_all(&m)?;
        Ok(())
    }

    fn definitions_open(&self) -> Result<(), WriteError> {
        if self.subscribed.is_empty() {
            Ok(())
        } else {
            Err(WriteError::Late)
        }
    }

    /// An information message: `char[N] key` = `value` (`sys_name`, `ver_hw`, …).
    pub fn info(&mut self, key: &str, value: &str) -> Result<(), WriteError> {
        self.definitions_open()?;
        let k = format!("char[{}] {key}", value.len());
        let mut body = vec![k.len() as u8];
        body.extend_from_slice(k.as_bytes());
        body.extend_from_slice(value.as_bytes());
        self.message(b'I', &body)
    }

    /// A parameter's initial value (`float NAME` or `int32_t NAME`).
    pub fn parameter(&mut self, name: &str, value: Value) -> Result<(), WriteError> {
        self.definitions_open()?;
        let k = match value {
            Value::F32(_) => format!("float {name}"),
            Value::I32(_) => format!("int32_t {name}"),
            _ => return Err(WriteError::Mismatch(name.to_string())),
        };
        let mut body = vec![k.len() as u8];
        body.extend_from_slice(k.as_bytes());
        value.put(&mut body);
        self.message(b'P', &body)
    }

    /// Define a topic's format; returns its index for [`UlogWriter::subscribe`].
    pub fn format(&mut self, topic: Topic) -> Result<usize, WriteError> {
        self.definitions_open()?;
        let text = topic.format();
        self.message(b'F', text.as_bytes())?;
        self.topics.push(topic);
        Ok(self.topics.len() - 1)
    }

    /// Subscribe to a defined topic (instance 0); returns the msg_id its data goes under.
    pub fn subscribe(&mut self, topic: usize) -> Result<u16, WriteError> {
        let name = self
            .topics
            .get(topic)
            .map(|t| t.name.clone())
            .ok_or_else(|| WriteError::Mismatch(format!("#{topic}")))?;
        let id = self.subscribed.len() as u16;
        let mut body = vec![0u8];
        body.extend_from_slice(&id.to_le_bytes());
        body.extend_from_slice(name.as_bytes());
        self.message(b'A', &body)?;
        self.subscribed.push(topic);
        Ok(id)
    }

    /// One sample of subscription `msg_id` at `timestamp_us`, its values in field order.
    pub fn data(
        &mut self,
        msg_id: u16,
        timestamp_us: u64,
        values: &[Value],
    ) -> Result<(), WriteError> {
        let topic = self
            .subscribed
            .get(msg_id as usize)
            .and_then(|&i| self.topics.get(i))
            .ok_or_else(|| WriteError::Mismatch(format!("msg_id {msg_id}")))?;
        let fits = topic.fields.len() == values.len()
            && topic
                .fields
                .iter()
                .zip(values)
                .all(|((t, _), v)| *t == v.field_type());
        if !fits {
            return Err(WriteError::Mismatch(topic.name.clone()));
        }
        let mut body = std::mem::take(&mut self.buf);
        body.clear();
        body.extend_from_slice(&msg_id.to_le_bytes());
        body.extend_from_slice(&timestamp_us.to_le_bytes());
        for v in values {
            v.put(&mut body);
        }
        let r = self.message(b'D', &body);
        self.buf = body;
        r
    }

    /// A logged string (PX4's console and event texts) at `log_level` (ASCII `'0'`–`'7'`,
    /// syslog's levels: `'6'` info, `'4'` warning, `'3'` error).
    pub fn log(&mut self, log_level: u8, timestamp_us: u64, text: &str) -> Result<(), WriteError> {
        let mut body = vec![log_level];
        body.extend_from_slice(&timestamp_us.to_le_bytes());
        body.extend_from_slice(text.as_bytes());
        self.message(b'L', &body)
    }

    /// Flush what was written.
    pub fn flush(&mut self) -> Result<(), WriteError> {
        self.out.flush()?;
        Ok(())
    }

    /// What it writes into.
    pub fn get_ref(&self) -> &W {
        &self.out
    }

    /// The writer, flushed.
    pub fn into_inner(mut self) -> Result<W, WriteError> {
        self.flush()?;
        Ok(self.out)
    }
}

use FieldType::{Bool, F32, F64, I32, U16, U64, U8};

/// The topics [`FlightLog`] writes, with PX4's names (a subset of each topic's fields).
pub fn flight_topics() -> Vec<Topic> {
    vec![
        Topic::new(
            "vehicle_status",
            &[
                (U64, "armed_time"),
                (U64, "takeoff_time"),
                (U8, "arming_state"),
                (U8, "nav_state"),
                (U8, "nav_state_user_intention"),
                (U8, "vehicle_type"),
                (U8, "system_type"),
                (Bool, "failsafe"),
            ],
        ),
        Topic::new(
            "vehicle_land_detected",
            &[
                (Bool, "freefall"),
                (Bool, "ground_contact"),
                (Bool, "maybe_landed"),
                (Bool, "landed"),
            ],
        ),
        Topic::new(
            "vehicle_local_position",
            &[
                (F64, "ref_lat"),
                (F64, "ref_lon"),
                (F32, "x"),
                (F32, "y"),
                (F32, "z"),
                (F32, "vx"),
                (F32, "vy"),
                (F32, "vz"),
                (F32, "heading"),
                (F32, "ref_alt"),
                (Bool, "xy_valid"),
                (Bool, "z_valid"),
            ],
        ),
        Topic::new(
            "vehicle_global_position",
            &[(F64, "lat"), (F64, "lon"), (F32, "alt")],
        ),
        Topic::new(
            "mission_result",
            &[
                (I32, "seq_reached"),
                (U16, "seq_current"),
                (U16, "seq_total"),
                (Bool, "valid"),
                (Bool, "finished"),
            ],
        ),
        Topic::new(
            "battery_status",
            &[
                (F32, "voltage_v"),
                (F32, "remaining"),
                (U8, "warning"),
                (Bool, "connected"),
            ],
        ),
    ]
}

/// What [`FlightLog`] logs of the vehicle at one moment (filled by
/// [`crate::Vehicle::flight_log_sample`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FlightSample {
    /// The vehicle's clock, µs.
    pub now_us: u64,
    /// Armed.
    pub armed: bool,
    /// `vehicle_status.nav_state`.
    pub nav_state: u8,
    /// A failsafe is active.
    pub failsafe: bool,
    /// Arming and takeoff times, µs (0: not yet).
    pub armed_time_us: u64,
    /// Takeoff time, µs (0: not yet).
    pub takeoff_time_us: u64,
    /// The land detector says landed.
    pub landed: bool,
    /// `vehicle_status.vehicle_type`: 1 rotary wing, 2 fixed wing.
    pub vehicle_type: u8,
    /// `vehicle_status.system_type`: the MAV_TYPE (2 quadrotor, 1 fixed wing).
    pub system_type: u8,
    /// Local position NED of the pad, m.
    pub ned_m: [f32; 3],
    /// Velocity NED, m/s.
    pub vel_ned_m_s: [f32; 3],
    /// Heading, rad.
    pub yaw_rad: f32,
    /// The local frame's origin: lat, lon (deg), alt (m AMSL).
    pub origin: (f64, f64, f32),
    /// Global position: lat, lon (deg), alt (m AMSL).
    pub global: (f64, f64, f32),
    /// The local position is valid.
    pub position_valid: bool,
    /// Mission: current item, last item reached (-1 none), items, valid, finished.
    pub mission: (u16, i32, u16, bool, bool),
    /// Battery: volts, remaining 0–1, PX4's warning level.
    pub battery: (f32, f32, u8),
}

/// The built-in vehicle's own log of its flight: [`flight_topics`] every
/// [`FLIGHT_LOG_PERIOD_US`], its console lines as logged strings.
#[derive(Debug)]
pub struct FlightLog<W: Write> {
    w: UlogWriter<W>,
    ids: Vec<u16>,
    next_us: u64,
}

impl<W: Write> FlightLog<W> {
    /// Start the log of the quadrotor at `start_us` (the vehicle's clock): header, infos,
    /// parameters, formats, subscriptions.
    pub fn new(out: W, start_us: u64, sys_name: &str) -> Result<FlightLog<W>, WriteError> {
        Self::for_vehicle(out, start_us, sys_name, crate::VehicleType::Quadrotor)
    }

    /// The same for `vehicle`, whose airframe the log names as PX4's does: the parameters
    /// SYS_AUTOSTART and MAV_TYPE in its header (PX4 logs every parameter there), and
    /// `vehicle_status.vehicle_type` / `system_type` in its samples.
    pub fn for_vehicle(
        out: W,
        start_us: u64,
        sys_name: &str,
        vehicle: crate::VehicleType,
    ) -> Result<FlightLog<W>, WriteError> {
        let mut w = UlogWriter::new(out, start_us)?;
        w.info("sys_name", sys_name)?;
        w.info("ver_hw", "SITL")?;
        w.info("ver_sw", "nexus-sim")?;
        let params = crate::params::Params::for_vehicle(1, vehicle);
        for p in [crate::params::P::SYS_AUTOSTART, crate::params::P::MAV_TYPE] {
            w.parameter(p.name(), Value::I32(params.i(p)))?;
        }
        let mut ids = Vec::new();
        let topics: Vec<usize> = flight_topics()
            .into_iter()
            .map(|t| w.format(t))
            .collect::<Result<_, _>>()?;
        for t in topics {
            ids.push(w.subscribe(t)?);
        }
        Ok(FlightLog {
            w,
            ids,
            next_us: start_us,
        })
    }

    /// Whether a sample is due at `now_us`.
    pub fn due(&self, now_us: u64) -> bool {
        now_us >= self.next_us
    }

    /// Log `s` if a sample is due (at most one per [`FLIGHT_LOG_PERIOD_US`]).
    pub fn sample(&mut self, s: &FlightSample) -> Result<(), WriteError> {
        if !self.due(s.now_us) {
            return Ok(());
        }
        self.sample_now(s)
    }

    /// Log `s` whether a sample is due or not (the last one, at a disarm).
    pub fn sample_now(&mut self, s: &FlightSample) -> Result<(), WriteError> {
        self.next_us = s.now_us - s.now_us % FLIGHT_LOG_PERIOD_US + FLIGHT_LOG_PERIOD_US;
        let t = s.now_us;
        let id = |i: usize| self.ids.get(i).copied().unwrap_or(u16::MAX);
        let (status, land, local, global, mission, battery) =
            (id(0), id(1), id(2), id(3), id(4), id(5));
        self.w.data(
            status,
            t,
            &[
                Value::U64(s.armed_time_us),
                Value::U64(s.takeoff_time_us),
                Value::U8(if s.armed { 2 } else { 1 }),
                Value::U8(s.nav_state),
                Value::U8(s.nav_state),
                Value::U8(s.vehicle_type),
                Value::U8(s.system_type),
                Value::Bool(s.failsafe),
            ],
        )?;
        self.w.data(
            land,
            t,
            &[
                Value::Bool(false),
                Value::Bool(s.landed),
                Value::Bool(s.landed),
                Value::Bool(s.landed),
            ],
        )?;
        self.w.data(
            local,
            t,
            &[
                Value::F64(s.origin.0),
                Value::F64(s.origin.1),
                Value::F32(s.ned_m[0]),
                Value::F32(s.ned_m[1]),
                Value::F32(s.ned_m[2]),
                Value::F32(s.vel_ned_m_s[0]),
                Value::F32(s.vel_ned_m_s[1]),
                Value::F32(s.vel_ned_m_s[2]),
                Value::F32(s.yaw_rad),
                Value::F32(s.origin.2),
                Value::Bool(s.position_valid),
                Value::Bool(s.position_valid),
            ],
        )?;
        self.w.data(
            global,
            t,
            &[
                Value::F64(s.global.0),
                Value::F64(s.global.1),
                Value::F32(s.global.2),
            ],
        )?;
        let (current, reached, total, valid, finished) = s.mission;
        self.w.data(
            mission,
            t,
            &[
                Value::I32(reached),
                Value::U16(current),
                Value::U16(total),
                Value::Bool(valid),
                Value::Bool(finished),
            ],
        )?;
        self.w.data(
            battery,
            t,
            &[
                Value::F32(s.battery.0),
                Value::F32(s.battery.1),
                Value::U8(s.battery.2),
                Value::Bool(true),
            ],
        )?;
        Ok(())
    }

    /// Log a console line at `now_us` (PX4 logs its console texts too).
    pub fn console(&mut self, now_us: u64, line: &str) -> Result<(), WriteError> {
        let level = if line.starts_with("ERROR") {
            b'3'
        } else if line.starts_with("WARN") {
            b'4'
        } else {
            b'6'
        };
        self.w.log(level, now_us, line)
    }

    /// Flush the log.
    pub fn flush(&mut self) -> Result<(), WriteError> {
        self.w.flush()
    }

    /// What it writes into.
    pub fn get_ref(&self) -> &W {
        self.w.get_ref()
    }

    /// The writer, flushed.
    pub fn into_inner(self) -> Result<W, WriteError> {
        self.w.into_inner()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_flag_bits_and_a_format() {
        let mut w = UlogWriter::new(Vec::new(), 7).unwrap();
        let t = w
            .format(Topic::new("mission_result", &[(Bool, "finished")]))
            .unwrap();
        let id = w.subscribe(t).unwrap();
        w.data(id, 9, &[Value::Bool(true)]).unwrap();
        assert!(w.info("late", "x").is_err());
        assert!(w.data(id, 9, &[Value::U8(1)]).is_err());
        let b = w.into_inner().unwrap();
        assert_eq!(&b[..7], &MAGIC);
        assert_eq!(b[7], 1);
        assert_eq!(u64::from_le_bytes(b[8..16].try_into().unwrap()), 7);
        // Flag bits: 40 bytes, type 'B'.
        assert_eq!(&b[16..19], &[40, 0, b'B']);
        let f = "mission_result:uint64_t timestamp;bool finished;";
        assert_eq!(b[61], b'F');
        assert_eq!(&b[62..62 + f.len()], f.as_bytes());
    }
}
