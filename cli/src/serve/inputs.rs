//! The tools' inputs: each tool's arguments (its JSON schema, from these types' docs) and the
//! checks that read them as the `nexus` command does (a wait is a step's `until`, read by the
//! program reader).

use super::server::*;
use std::path::Path;
use std::time::Duration;

use crate::limits;
use nexus_core::engine::Wait;
use rmcp::schemars;
use serde::Deserialize;
use serde_json::{json, Value};

use crate::diag::FileError;
use crate::program::{json_to_toml, ProgramFile, StepSpec, CONDITION_KEYS};

/// `start_session`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StartArgs {
    /// SITL instance, 0 to 253: UDP ports 14540 + instance (offboard) and system id
    /// instance + 1. Default: the lowest one no session of this server uses, from 0.
    #[schemars(range(min = 0, max = 253))]
    pub instance: Option<u8>,
    /// Speed factor (× real time): 0.1 to 500 on the built-in vehicle, 0.1 to 20 on PX4 SITL.
    /// Default 1.
    pub speed: Option<f64>,
    /// A PX4 SITL build directory (inside --root) to run real PX4 instead of the built-in
    /// simulated vehicle (default: the built-in one).
    pub px4_build: Option<String>,
    /// Sim seconds to wait for the vehicle's first heartbeat, 0 to 600. Default 30.
    pub connect_timeout_s: Option<f64>,
    /// Attach to a vehicle already running instead (as `nexus run --connect`): a connection
    /// string, udpin:127.0.0.1:14540, udpout:HOST:PORT, tcp:HOST:PORT, serial:/dev/ttyACM0:57600.
    /// Nothing is launched. A vehicle that does not identify as a simulator is refused every
    /// verb that can arm, move or reconfigure it unless the server runs with --real-vehicle.
    pub connect: Option<String>,
    /// With `connect`: the vehicle's system id (default: the first autopilot heard).
    pub sysid: Option<u8>,
    /// With `connect`: the autopilot's component id (default: the first autopilot heard's).
    pub compid: Option<u8>,
    /// Record every frame of the session's link in its tlog (the resource
    /// nexus://session/ID/tlog; its HTML report draws the flight from it). Default true;
    /// false saves the recording's work (every frame checked and written), and the report
    /// then lists the waits, steps and verdict without the flight drawn.
    pub tlog: Option<bool>,
}

/// A session.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SessionArg {
    /// The session id `start_session` returned.
    pub session: u64,
}

/// A guard of `wait_until`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GuardArg {
    /// A condition name (see `wait_until`).
    pub condition: String,
    /// Its value, if it takes one.
    pub value: Option<Value>,
    /// ">=" (default), "<=" or "==" for numeric conditions.
    pub op: Option<String>,
    /// `==` within this tolerance, in the condition's unit.
    pub within: Option<f64>,
    /// For `text`: texts after this seq.
    pub since_seq: Option<u32>,
    /// For `distance`: the place, "home" or {"x_m": …, "y_m": …}.
    pub to: Option<Value>,
}

/// RC sticks.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SticksArg {
    /// Roll, -1 to 1 (default 0).
    pub roll: Option<f32>,
    /// Pitch, -1 to 1 (default 0).
    pub pitch: Option<f32>,
    /// Throttle, 0 to 1 (default 0.5).
    pub throttle: Option<f32>,
    /// Yaw, -1 to 1 (default 0).
    pub yaw: Option<f32>,
}

/// `wait_until`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WaitArgs {
    /// The session id.
    pub session: u64,
    /// One of the wait engine's conditions: altitude (m, height above the pad), airspeed,
    /// groundspeed, climb_rate (m/s), waypoint, reached (mission seq), sim_time (s, the
    /// autopilot clock), time (s since this call), mode (a mode name), text (a substring of a
    /// STATUSTEXT after since_seq), distance (m, `to` a place), heading (deg),
    /// battery_remaining (%), battery_voltage (V), gps_fix (a fix name or number),
    /// satellites, landed_state (a state or a list), and the flags armed, disarmed, landed,
    /// mission_complete, mission_verified, at_target. Or give `until` instead.
    pub condition: Option<String>,
    /// The condition's value in its unit: a number, a mode name or a text; none for the flags.
    pub value: Option<Value>,
    /// ">=" (default), "<=" or "==", for numeric conditions only.
    pub op: Option<String>,
    /// `==` within this tolerance (numeric conditions), in the condition's unit.
    pub within: Option<f64>,
    /// For `distance`: the place, "home" or {"x_m": …, "y_m": …}.
    pub to: Option<Value>,
    /// Instead of condition/value/op/…: the wait as a flight program's `until` (the same
    /// table, as JSON: {"altitude": 4.5, "op": ">=", "hold_s": 2, "guards": ["disarmed"]}, or
    /// "landed").
    pub until: Option<Value>,
    /// Sim seconds to wait at most, 0 to 1e6 (required).
    pub timeout_s: f64,
    /// Wall seconds this call may take, 0 to 600 (default 30): then reason `cap`, and the wait
    /// is not over: call again with since_seq = snapshot.seq.
    pub wait_cap_s: Option<f64>,
    /// For `text`: count texts whose seq is after this one (pass the snapshot.seq of the last
    /// answer to miss none).
    pub since_seq: Option<u32>,
    /// For `sim_time`: count from the tick the previous wait on this session settled.
    #[serde(default)]
    pub relative: bool,
    /// The condition must hold this many sim seconds continuously, 0 to 1e6 (default 0).
    pub hold_s: Option<f64>,
    /// End early with reason `guard` when one of these holds first.
    #[serde(default)]
    pub guards: Vec<GuardArg>,
    /// A flight mode to request in the tick the condition is met.
    pub then_mode: Option<String>,
    /// RC sticks to stream from the tick the condition is met.
    pub then_rc: Option<SticksArg>,
    /// A speed factor to set in the tick the condition is met (as `speed`).
    pub then_speedup: Option<f64>,
}

/// `run_steps`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StepsArgs {
    /// The session id.
    pub session: u64,
    /// A flight program: the TOML of `nexus run` (`[[step]]` tables: action, until,
    /// timeout_s, on_timeout), or the same as JSON ({"step": [{"action": "takeoff", …}]}). The
    /// `plan` an `upload` step names is read relative to --root, never outside it.
    pub program: Option<String>,
    /// Or a program file inside --root (its `upload` plans relative to it, inside --root).
    pub path: Option<String>,
    /// Go on waiting for the program started by an earlier run_steps that ended `cap`.
    #[serde(default, rename = "continue")]
    pub continue_: bool,
    /// Wall seconds this call may take, 0 to 600 (default 30): then it answers `running`
    /// with the steps settled so far, and the program goes on (call again with continue,
    /// or abort_steps).
    pub wait_cap_s: Option<f64>,
}

/// `rc`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RcArgs {
    /// The session id.
    pub session: u64,
    /// Roll, -1 to 1 (default 0).
    pub roll: Option<f32>,
    /// Pitch, -1 to 1 (default 0).
    pub pitch: Option<f32>,
    /// Throttle, 0 to 1 (default 0.5).
    pub throttle: Option<f32>,
    /// Yaw, -1 to 1 (default 0).
    pub yaw: Option<f32>,
}

/// `offboard`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OffboardArgs {
    /// The session id.
    pub session: u64,
    /// A local NED position setpoint: north, east, down (m; down is negative above home)…
    pub north_m: Option<f64>,
    /// … east, m.
    pub east_m: Option<f64>,
    /// … down, m.
    pub down_m: Option<f64>,
    /// Or a NED velocity setpoint: north, east, down (m/s).
    pub v_north_m_s: Option<f64>,
    /// … east, m/s.
    pub v_east_m_s: Option<f64>,
    /// … down, m/s.
    pub v_down_m_s: Option<f64>,
    /// Heading, degrees (default: keep).
    pub yaw_deg: Option<f64>,
}

/// `inject_failure`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InjectArgs {
    /// The session id.
    pub session: u64,
    /// The unit (gyro, accel, mag, baro, gps, battery, motor, …: `nexus run`'s names).
    pub unit: String,
    /// The failure (ok, off, stuck, garbage, wrong, slow, delayed, intermittent).
    pub failure: String,
    /// The unit's instance (0: all).
    pub instance: Option<u8>,
}

/// `upload_geo`, `clear_geo`, `geo_status`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GeoArgs {
    /// The session id.
    pub session: u64,
    /// "fence" (the plan's geoFence) or "rally" (its rallyPoints).
    pub kind: String,
    /// upload_geo: a .plan file inside --root.
    pub path: Option<String>,
    /// upload_geo: or the .plan's JSON text.
    pub plan_json: Option<String>,
}

/// `verify_mission`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct VerifyArgs {
    /// The session id.
    pub session: u64,
    /// Sim seconds for the download and comparison, 0 to 1e6 (default 300).
    pub timeout_s: Option<f64>,
    /// Wall seconds this call may take, 0 to 600 (default 30).
    pub wait_cap_s: Option<f64>,
}

/// `texts`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TextsArgs {
    /// The session id.
    pub session: u64,
    /// Texts whose seq is after this one (default 0: every text kept).
    #[serde(default)]
    pub since_seq: u32,
}

/// `set_mode`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ModeArgs {
    /// The session id.
    pub session: u64,
    /// A PX4 mode name: Manual, Altitude, Position, Mission, Hold, Return, Land, Takeoff,
    /// Offboard, … (case-insensitive).
    pub mode: String,
}

/// `takeoff`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TakeoffArgs {
    /// The session id.
    pub session: u64,
    /// Takeoff altitude over home, m, above 0 and at most 10000 (default 5).
    pub alt_m: Option<f64>,
}

/// `goto`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GotoArgs {
    /// The session id.
    pub session: u64,
    /// North of home, m, -100000 to 100000.
    pub x_m: f64,
    /// West of home (left), m, -100000 to 100000.
    pub y_m: f64,
    /// Up from home, m, -1000 to 10000.
    pub z_m: f64,
    /// Heading, degrees, -360 to 360 (default: keep).
    pub yaw_deg: Option<f64>,
}

/// `upload_plan`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PlanArgs {
    /// The session id.
    pub session: u64,
    /// A QGroundControl .plan file inside --root (relative to it, or absolute inside it).
    pub path: Option<String>,
    /// Or the .plan's JSON text itself.
    pub plan_json: Option<String>,
}

/// `param_set`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ParamSetArgs {
    /// The session id.
    pub session: u64,
    /// The parameter's name, at most 16 characters.
    pub name: String,
    /// Its value: a finite number.
    pub value: f64,
    /// "real" (default, a float parameter) or "int".
    pub kind: Option<String>,
}

/// `param_get`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ParamGetArgs {
    /// The session id.
    pub session: u64,
    /// The parameter's name, at most 16 characters.
    pub name: String,
    /// Wall seconds to wait for the answer, 0 to 60 (default 5).
    pub timeout_s: Option<f64>,
}

/// `kill_instance`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InstanceArg {
    /// The SITL instance, 0 to 253.
    pub instance: u8,
}

/// Nothing.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoArgs {}

pub(super) fn wall_cap(v: Option<f64>) -> Result<Duration, String> {
    let s = v.unwrap_or(WAIT_CAP_DEFAULT_S);
    if s.is_finite() && (0.0..=WAIT_CAP_MAX_S).contains(&s) {
        Ok(Duration::from_secs_f64(s))
    } else {
        Err(format!(
            "wait_cap_s must be a number of wall seconds from 0 to {WAIT_CAP_MAX_S}, got {s}"
        ))
    }
}

/// What the program reader said, without the excerpt of the generated TOML it read.
pub(super) fn reader_error(e: FileError) -> String {
    match e {
        FileError::Source(s) => s.message,
        other => other.to_string(),
    }
}

/// One step written as JSON (the keys of a program's `[[step]]`), read by the program reader:
/// the same checks, bounds and words as `nexus run`.
pub(super) fn read_step(step: Value) -> Result<StepSpec, String> {
    let doc = json!({ "step": [step] });
    let text = json_to_toml(&doc)?;
    // The reader names the step it read; here the step is the call itself.
    let p = ProgramFile::parse(Path::new("the call"), &text).map_err(|e| {
        reader_error(e)
            .replace(" in step 1's until", "")
            .replace("step 1's until", "the wait")
            .replace(" in step 1", "")
            .replace("step 1 ", "the call ")
    })?;
    p.steps.into_iter().next().ok_or_else(|| "no step".into())
}

/// A condition (main or guard) of the flat form, as a program's `until` table.
pub(super) fn condition_table(
    name: &str,
    value: Option<&Value>,
    modifiers: &[(&str, Option<Value>)],
) -> Result<serde_json::Map<String, Value>, String> {
    if !CONDITION_KEYS.contains(&name) {
        return Err(format!(
            "unknown condition {name:?}; known: {}",
            CONDITION_KEYS.join(", ")
        ));
    }
    let mut t = serde_json::Map::new();
    t.insert(
        name.to_string(),
        value
            .filter(|v| !v.is_null())
            .cloned()
            .unwrap_or(Value::Bool(true)),
    );
    for (k, v) in modifiers {
        if let Some(v) = v {
            t.insert((*k).to_string(), v.clone());
        }
    }
    Ok(t)
}

/// `wait_until`'s arguments as a program's `until` (the `until` given, or the flat form).
pub(super) fn until_json(a: &WaitArgs) -> Result<Value, String> {
    if let Some(u) = &a.until {
        if a.condition.is_some() || a.value.is_some() {
            return Err("give `until` or `condition` (with `value`), not both".into());
        }
        return Ok(u.clone());
    }
    let Some(name) = a.condition.as_deref() else {
        return Err("give `condition` (and its `value`) or `until`".into());
    };
    let f = |x: Option<f64>| x.map(Value::from);
    let mut t = condition_table(
        name,
        a.value.as_ref(),
        &[
            ("op", a.op.clone().map(Value::from)),
            ("within", f(a.within)),
            ("since_seq", a.since_seq.map(Value::from)),
            ("relative", a.relative.then_some(Value::Bool(true))),
            ("to", a.to.clone()),
        ],
    )?;
    if let Some(h) = a.hold_s {
        t.insert("hold_s".into(), Value::from(h));
    }
    if !a.guards.is_empty() {
        let mut gs = Vec::new();
        for g in &a.guards {
            gs.push(Value::Object(condition_table(
                &g.condition,
                g.value.as_ref(),
                &[
                    ("op", g.op.clone().map(Value::from)),
                    ("within", f(g.within)),
                    ("since_seq", g.since_seq.map(Value::from)),
                    ("to", g.to.clone()),
                ],
            )?));
        }
        t.insert("guards".into(), Value::Array(gs));
    }
    if let Some(m) = &a.then_mode {
        t.insert("then_mode".into(), Value::from(m.clone()));
    }
    if let Some(s) = &a.then_rc {
        let mut r = serde_json::Map::new();
        for (k, v) in [
            ("roll", s.roll),
            ("pitch", s.pitch),
            ("throttle", s.throttle),
            ("yaw", s.yaw),
        ] {
            if let Some(v) = v {
                r.insert(k.into(), Value::from(v));
            }
        }
        t.insert("then_rc".into(), Value::Object(r));
    }
    if let Some(x) = a.then_speedup {
        t.insert("then_speedup".into(), Value::from(x));
    }
    Ok(Value::Object(t))
}

/// The wait `wait_until` asks for, read by the program reader (every condition, op, within,
/// since_seq, relative, to, hold_s, guards and reactions of a program's `until`), and the wait
/// in words.
pub(super) fn build_wait(a: &WaitArgs, px4: bool) -> Result<(Wait, String), String> {
    limits::duration_s("timeout_s", a.timeout_s)?;
    if let Some(f) = a.then_speedup {
        limits::speed("then_speedup", f, px4)?;
    }
    let step = read_step(json!({ "until": until_json(a)?, "timeout_s": a.timeout_s }))?;
    // A wait has no on_timeout (the step's "then stop"): it just ends.
    let text = match step.until_text.strip_suffix(", then stop)") {
        Some(t) => format!("{t})"),
        None => step.until_text,
    };
    Ok((step.step.until, text))
}

pub(super) fn param_name(name: &str) -> Result<(), String> {
    if name.is_empty() || name.len() > 16 || !name.chars().all(|c| c.is_ascii_graphic()) {
        return Err(format!(
            "a parameter name is 1 to 16 printable ASCII characters, got {name:?}"
        ));
    }
    Ok(())
}
