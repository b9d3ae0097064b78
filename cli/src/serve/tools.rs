//! The MCP tools of `nexus serve`: one per call of the session service.
//!
//! Each tool checks its input as the `nexus` command does: waits, program actions and step
//! programs are read by the program reader itself (a wait is a step's `until`, a verb such as
//! `rc` or `offboard` a step's action, written as JSON and read as TOML), so every condition,
//! modifier, bound and message is `nexus run`'s. The `--real-vehicle` guard
//! ([`crate::guard`]) judges each verb's action, each wait's reactions and each program. A
//! call runs on a blocking thread (a wait may take its whole `wait_cap_s`; other calls go on
//! meanwhile) and answers JSON text, or a tool error with the same words as the command line.

use nexus_host::groups::{ActionApi, GeofenceApi, MissionApi, ParamApi};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::limits;
use nexus_core::action::Action;
use nexus_core::action::ParamValue;
use nexus_core::engine::{SnapshotAt, Wait, WaitResult};
use nexus_core::mode::Mode;
use nexus_core::offboard::GeoKind;
use nexus_core::plan::{ALT_MAX_M, ALT_MIN_M};
use nexus_core::telemetry::{Snapshot, Text};
use nexus_host::pump::ProgramReport;
use nexus_host::run::{RunClock, RunOptions};
use nexus_host::session::{Session, Sessions};
use rmcp::handler::server::{router::tool::ToolRouter, wrapper::Parameters};
use rmcp::model::{
    Implementation, ListResourcesResult, PaginatedRequestParams, ReadResourceRequestParams,
    ReadResourceResponse, ReadResourceResult, Resource, ResourceContents, ServerCapabilities,
    ServerConfig,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{schemars, tool, tool_handler, tool_router, ErrorData as McpError, ServerHandler};
use serde::Deserialize;
use serde_json::{json, Value};

use super::records::{Meta, RecordKind, Records, Running, RESOURCE_MAX_BYTES};
use super::Config;
use crate::diag::FileError;
use crate::exec::StepMeta;
use crate::program::{json_to_toml, PlanFile, ProgramFile, StepSpec, CONDITION_KEYS, XY_MAX_M};
use crate::{guard, vehicle};

/// Longest `wait_cap_s`, wall s: an MCP client's request times out long before.
pub const WAIT_CAP_MAX_S: f64 = 600.0;
/// `wait_cap_s` when none is given, wall s.
pub const WAIT_CAP_DEFAULT_S: f64 = 30.0;
/// Longest `connect_timeout_s` of `start_session`, sim s.
pub const CONNECT_MAX_S: f64 = 600.0;
/// Largest inline text (a program, a plan), bytes.
pub const MAX_TEXT_BYTES: usize = limits::MAX_INPUT_BYTES as usize;

type ToolResult = Result<String, String>;

/// The MCP server: the sessions it holds and the tools.
#[derive(Debug, Clone)]
pub struct NexusServer {
    sessions: Arc<Sessions>,
    config: Arc<Config>,
    /// Instances being started (reserved: concurrent starts take different ones).
    starting: Arc<Mutex<Vec<u8>>>,
    /// What the server keeps of each session, open and closed, and their files.
    records: Arc<Records>,
    tool_router: ToolRouter<Self>,
}

// ---- inputs ----

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

// ---- outputs ----

fn mode_json(m: Option<Mode>) -> Value {
    m.map_or(Value::Null, |m| Value::String(m.to_string()))
}

fn text_json(t: &Text) -> Value {
    json!({
        "seq": t.seq,
        "severity": t.severity,
        "t_sim_s": t.sim_ms.map(|ms| ms as f64 / 1000.0),
        "text": t.text.as_str(),
    })
}

/// A snapshot as the spec's Snapshot.
pub fn snapshot_json(s: &Snapshot) -> Value {
    json!({
        "t_sim_s": s.t_sim_s(),
        "seq": s.seq,
        "armed": s.armed,
        "mode": mode_json(s.mode),
        "height_m": s.height_m,
        "airspeed_m_s": s.airspeed_m_s,
        "waypoint": s.waypoint,
        "landed": s.landed.name(),
        "last_text": s.last_text.as_ref().map(text_json),
        "error": s.error.as_ref().map(|e| e.as_str()),
    })
}

/// A wait's result as the spec's WaitResult.
pub fn wait_json(r: &WaitResult, explanation: Option<String>) -> Value {
    json!({
        "satisfied": r.satisfied,
        "reason": r.reason.to_string(),
        "waited_sim_s": r.waited_sim_s,
        "waited_wall_s": r.waited_wall.total_micros() as f64 / 1e6,
        "snapshot_at": match r.snapshot_at {
            SnapshotAt::Settle => "settle",
            SnapshotAt::Return => "return",
        },
        "snapshot": snapshot_json(&r.snapshot),
        "guard": r.guard,
        "explanation": explanation,
    })
}

fn to_text(v: Value) -> String {
    serde_json::to_string_pretty(&v).unwrap_or_else(|_| v.to_string())
}

// ---- input checks ----

fn wall_cap(v: Option<f64>) -> Result<Duration, String> {
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
fn reader_error(e: FileError) -> String {
    match e {
        FileError::Source(s) => s.message,
        other => other.to_string(),
    }
}

/// One step written as JSON (the keys of a program's `[[step]]`), read by the program reader:
/// the same checks, bounds and words as `nexus run`.
fn read_step(step: Value) -> Result<StepSpec, String> {
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
fn condition_table(
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
fn until_json(a: &WaitArgs) -> Result<Value, String> {
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
fn build_wait(a: &WaitArgs, px4: bool) -> Result<(Wait, String), String> {
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

fn param_name(name: &str) -> Result<(), String> {
    if name.is_empty() || name.len() > 16 || !name.chars().all(|c| c.is_ascii_graphic()) {
        return Err(format!(
            "a parameter name is 1 to 16 printable ASCII characters, got {name:?}"
        ));
    }
    Ok(())
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The instance an attached session's run is held under: no SITL instance (0 to 253) is its,
/// so `kill_instance` never reaches it and one is attached at a time; never shown (an attached
/// session lists no instance).
const ATTACHED: u8 = u8::MAX;

/// Each settled step of a program: passed, its label and wait in words, its WaitResult with
/// the explanation of a step that did not pass (what `nexus run` prints after it).
fn steps_json(records: &[nexus_core::engine::StepRecord], program: &Running) -> Vec<Value> {
    let total = program.steps.len();
    records
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let m = program.steps.get(i);
            json!({
                "step": i + 1,
                "label": m.map(|m| m.label(i, total)),
                "until": m.map(|m| m.until.clone()),
                "passed": r.passed,
                "result": wait_json(&r.result, program.explanations.get(&i).cloned()),
            })
        })
        .collect()
}

fn program_json(report: &ProgramReport, program: &Running) -> Value {
    json!({
        "running": false,
        "passed": report.passed(),
        "end": format!("{:?}", report.end),
        "error": report.error,
        "steps": steps_json(&report.records, program),
    })
}

impl NexusServer {
    /// A server on `sessions`, keeping what it knows of them in `records`.
    pub fn new(sessions: Arc<Sessions>, config: Config, records: Arc<Records>) -> Self {
        NexusServer {
            sessions,
            config: Arc::new(config),
            starting: Arc::new(Mutex::new(Vec::new())),
            records,
            tool_router: Self::tool_router(),
        }
    }

    /// Hold session `s`'s entry, and keep its files and verdict when it closes.
    fn adopt(&self, s: &Session, meta: Meta) {
        self.records.adopt(s.id(), meta);
        let records = Arc::clone(&self.records);
        let id = s.id();
        s.on_close(move |c| records.close(id, c));
    }

    /// Mark a call on session `id` under way (its end is noted in the session's report).
    fn busy(&self, id: u64, by: isize) {
        if let Some(m) = lock(&self.records.meta).get_mut(&id) {
            m.busy = m.busy.saturating_add_signed(by);
        }
    }

    fn session(&self, id: u64) -> Result<Session, String> {
        match self.sessions.get(id) {
            Some(s) => match s.closed() {
                Some(why) => Err(format!("session {id} is closed ({why})")),
                None => Ok(s),
            },
            None => Err(format!(
                "no session {id} (closed, or never started: list_sessions shows the open ones)"
            )),
        }
    }

    fn px4(s: &Session) -> bool {
        matches!(
            s.sim().options().vehicle,
            nexus_host::run::RunVehicle::Px4 { .. }
        )
    }

    /// Whether session `id` may be sent what `why` says (an arm, a move, a reconfiguration,
    /// [`crate::guard`]'s words); `what` names the call.
    fn gate(&self, id: u64, what: &str, why: Option<&str>) -> Result<(), String> {
        let Some(why) = why else { return Ok(()) };
        let meta = lock(&self.records.meta);
        match meta.get(&id) {
            Some(m) if !m.may_move => Err(format!(
                "refusing {what} on session {id}: the vehicle does not identify as a simulator \
                 ({}), and {what} {why}; start nexus serve with --real-vehicle to fly a real \
                 vehicle",
                match m.simulator {
                    Some(_) => "AUTOPILOT_VERSION did not identify PX4 SITL",
                    None => "no AUTOPILOT_VERSION decided it in time",
                }
            )),
            _ => Ok(()),
        }
    }

    fn gate_action(&self, id: u64, what: &str, action: &Action) -> Result<(), String> {
        self.gate(id, what, guard::action_moves(action))
    }

    /// A path inside the root, canonical (symlinks resolved), or why not.
    pub fn inside_root(&self, p: &str) -> Result<PathBuf, String> {
        confine(&self.config.root, Path::new(p))
    }

    /// Run `f` on the session on a blocking thread.
    async fn on<R: Send + 'static>(
        &self,
        id: u64,
        f: impl FnOnce(Session) -> Result<R, String> + Send + 'static,
    ) -> Result<R, String> {
        let s = self.session(id)?;
        blocking(move || f(s)).await
    }

    /// A verb: `action` is what it does, for the `--real-vehicle` guard.
    async fn verb(
        &self,
        id: u64,
        what: &'static str,
        action: Action,
        f: impl FnOnce(&Session) -> Result<(), nexus_host::error::OffboardClientError> + Send + 'static,
    ) -> ToolResult {
        self.gate_action(id, what, &action)?;
        self.on(id, move |s| {
            f(&s).map_err(|e| format!("{what}: {e}"))?;
            Ok(verb_answer(&s, what))
        })
        .await
    }

    /// An action of a flight program (`step`: its keys as JSON, read by the program reader),
    /// carried out now by the offboard machine as a program step would.
    async fn act(&self, id: u64, what: &'static str, step: Value) -> ToolResult {
        let action = read_step(step)?.step.action;
        self.gate_action(id, what, &action)?;
        self.on(id, move |s| {
            let link = s.client().link().map_err(|e| format!("{what}: {e}"))?;
            link.call(move |ctx| {
                let now = ctx.now();
                ctx.client().apply(now, &action)
            })
            .map_err(|e| format!("{what}: {e}"))?
            .map_err(|e| format!("{what}: {e}"))?;
            Ok(verb_answer(&s, what))
        })
        .await
    }

    /// A plan from `path` (inside the root) or its JSON text.
    fn plan(&self, path: Option<&str>, text: Option<&str>) -> Result<PlanFile, String> {
        match (path, text) {
            (Some(p), None) => {
                let full = self.inside_root(p)?;
                PlanFile::load(&full).map_err(reader_error)
            }
            (None, Some(t)) if t.len() <= MAX_TEXT_BYTES => {
                PlanFile::parse(Path::new("plan_json"), t.as_bytes()).map_err(reader_error)
            }
            (None, Some(_)) => Err(format!("plan_json is over {MAX_TEXT_BYTES} bytes")),
            _ => Err("give exactly one of path and plan_json".into()),
        }
    }

    /// Wait up to `cap` for session `id`'s program; its report, or where it is.
    fn follow_program(&self, s: &Session, cap: Duration) -> Result<Value, String> {
        let id = s.id();
        let pending = {
            let mut meta = lock(&self.records.meta);
            let m = meta.get_mut(&id);
            let p = m
                .and_then(|m| {
                    let p = m.program.as_mut()?.pending.take()?;
                    m.busy += 1;
                    Some(p)
                })
                .ok_or_else(|| {
                    format!(
                        "no program is running on session {id} (it ended, or another call \
                         waits for it)"
                    )
                })?;
            p
        };
        let got = pending.wait_timeout(cap);
        let link = s.client().link();
        let mut meta = lock(&self.records.meta);
        let Some(m) = meta.get_mut(&id) else {
            return Err(format!(
                "session {id} closed ({}) while its program ran",
                s.closed().unwrap_or_default()
            ));
        };
        let Some(mut program) = m.program.take() else {
            m.busy = m.busy.saturating_sub(1);
            return Err(format!("no program is running on session {id}"));
        };
        if let Ok(link) = &link {
            program.harvest(link);
        }
        match got {
            Some(report) => {
                let v = program_json(&report, &program);
                m.note_program(&program, &report);
                m.last_program = Some(v.clone());
                m.busy = m.busy.saturating_sub(1);
                Ok(v)
            }
            None => {
                drop(meta);
                let put_back = |program: Running| {
                    if let Some(m) = lock(&self.records.meta).get_mut(&id) {
                        m.program = Some(program);
                        m.busy = m.busy.saturating_sub(1);
                    }
                };
                let link = match link {
                    Ok(l) => l,
                    Err(e) => {
                        put_back(program);
                        return Err(format!("run_steps: {e}"));
                    }
                };
                let settled = link
                    .call(|ctx| {
                        let p = ctx.client().program();
                        let step = match p.state() {
                            nexus_core::engine::ProgramState::Running { step } => Some(step),
                            _ => None,
                        };
                        (p.records().to_vec(), step)
                    })
                    .map_err(|e| format!("run_steps: {e}"));
                program.pending = Some(pending);
                let (done, step) = match settled {
                    Ok(d) => d,
                    Err(e) => {
                        put_back(program);
                        return Err(e);
                    }
                };
                let steps = steps_json(&done, &program);
                put_back(program);
                Ok(json!({
                    "running": true,
                    "reason": "cap",
                    "running_step": step,
                    "steps": steps,
                    "snapshot": s.snapshot().ok().as_ref().map(snapshot_json),
                }))
            }
        }
    }

    /// The session's live report: what it is, the vehicle now, its texts, mission, link.
    fn report(&self, s: &Session) -> Value {
        let meta = lock(&self.records.meta);
        let m = meta.get(&s.id());
        let status = s.client().status();
        json!({
            "format": 1,
            "session": s.id(),
            "instance": m.and_then(|m| m.instance),
            "vehicle": {
                "kind": m.map(|m| m.vehicle),
                "system_id": m.map(|m| m.system_id),
                "connection": m.and_then(|m| m.connection.clone()),
                "simulator": m.and_then(|m| m.simulator),
                "may_move": m.map(|m| m.may_move),
            },
            "tlog": m.and_then(|m| m.tlog.as_ref()).map(|(_, p)| json!({
                "path": p.display().to_string(),
                "resource": RecordKind::Tlog.uri(s.id()),
            })),
            "closed": s.closed(),
            "idle_s": s.idle_for().as_secs_f64(),
            "snapshot": status.as_ref().map(|st| snapshot_json(&st.snapshot)),
            "mission": status.as_ref().map(|st| json!({
                "count": st.mission.count,
                "uploaded": st.mission.uploaded,
                "current": st.mission.current,
                "reached": st.mission.reached,
                "complete": st.mission.complete,
            })),
            "link": status.as_ref().map(|st| json!({
                "rx_frames": st.counters.frames,
                "tx_frames": st.counters.tx_frames,
                "died": st.died.as_ref().map(|d| d.to_string()),
            })),
            "program": m.map(|m| match (&m.program, &m.last_program) {
                (Some(_), _) => json!({"running": true}),
                (None, Some(v)) => v.clone(),
                (None, None) => Value::Null,
            }),
            "texts": s.texts_since(0).map(|t| t.iter().map(text_json).collect::<Vec<_>>()).unwrap_or_default(),
        })
    }
}

/// `p` (relative to `root`, or absolute) resolved, symlinks and all, if it is inside `root`.
fn confine(root: &Path, p: &Path) -> Result<PathBuf, String> {
    let full = if p.is_absolute() {
        p.to_path_buf()
    } else {
        root.join(p)
    };
    let outside = || {
        format!(
            "{}: outside the served root {} (only files inside --root are read)",
            p.display(),
            root.display()
        )
    };
    // `..` first, by the path's words (a file that does not exist is still outside)…
    let mut lexical = PathBuf::new();
    for c in full.components() {
        match c {
            std::path::Component::ParentDir => {
                lexical.pop();
            }
            std::path::Component::CurDir => {}
            other => lexical.push(other),
        }
    }
    if !lexical.starts_with(root) {
        return Err(outside());
    }
    // … then symlinks, resolved.
    let canon = full.canonicalize().map_err(|e| {
        format!(
            "{}: {e} (paths are read inside --root {})",
            p.display(),
            root.display()
        )
    })?;
    if !canon.starts_with(root) {
        return Err(outside());
    }
    Ok(canon)
}

fn verb_answer(s: &Session, what: &str) -> String {
    to_text(json!({
        "ok": true,
        "sent": what,
        "snapshot": s.snapshot().ok().as_ref().map(snapshot_json),
    }))
}

fn geo_kind(k: &str) -> Result<GeoKind, String> {
    match k {
        "fence" => Ok(GeoKind::Fence),
        "rally" => Ok(GeoKind::Rally),
        other => Err(format!(
            "kind must be \"fence\" or \"rally\", got {other:?}"
        )),
    }
}

async fn blocking<R: Send + 'static>(
    f: impl FnOnce() -> Result<R, String> + Send + 'static,
) -> Result<R, String> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| format!("internal error: {e}"))?
}

#[tool_router]
impl NexusServer {
    #[tool(
        description = "Start a session: a vehicle and a client connected to it — the built-in simulated PX4 (default), PX4 SITL from a build directory (px4_build, inside --root), or a vehicle already running, attached over a connection string (connect). Returns the session id, the vehicle's system id and its ports."
    )]
    async fn start_session(&self, Parameters(a): Parameters<StartArgs>) -> ToolResult {
        if let Some(conn) = a.connect.clone() {
            return self.attach(a, conn).await;
        }
        if a.sysid.is_some() || a.compid.is_some() {
            return Err("sysid and compid go with connect".into());
        }
        let build = match &a.px4_build {
            Some(b) => Some(self.inside_root(b)?),
            None => None,
        };
        let px4 = build.is_some();
        let speed = limits::speed("speed", a.speed.unwrap_or(1.0), px4)?;
        let connect = a.connect_timeout_s.unwrap_or(30.0);
        if !(connect.is_finite() && (0.0..=CONNECT_MAX_S).contains(&connect)) {
            return Err(format!(
                "connect_timeout_s must be 0 to {CONNECT_MAX_S} sim seconds, got {connect}"
            ));
        }
        if let Some(i) = a.instance {
            limits::instance(i)?;
        }
        let record = a.tlog.unwrap_or(true);
        let instance = self.reserve(a.instance)?;
        let sessions = Arc::clone(&self.sessions);
        let signing = self.config.signing.clone();
        let starting = Arc::clone(&self.starting);
        let me = self.clone();
        blocking(move || {
            let tlog = record.then(|| me.records.new_tlog());
            let mut options = match build {
                Some(b) => RunOptions::px4(instance, Some(b)),
                None => RunOptions::simulated(instance),
            }
            .speed(speed);
            if let Some(Ok((t, _))) = &tlog {
                options = options.tlog(t.clone());
            }
            let opened = signing.apply(options).and_then(|o| {
                sessions
                    .open(o, connect)
                    .map_err(|e| format!("cannot start instance {instance}: {e}"))
            });
            lock(&starting).retain(|i| *i != instance);
            let s = match opened {
                Ok(s) => s,
                Err(e) => {
                    me.records.discard(tlog);
                    return Err(e);
                }
            };
            let vehicle = if px4 { "px4" } else { "simulated" };
            let system_id = s
                .sim()
                .offboard_port()
                .map_or(instance.saturating_add(1), |p| p.system_id);
            let mut meta = Meta::new(vehicle, system_id, tlog);
            meta.instance = Some(instance);
            meta.speed = speed;
            let recorded = meta.tlog.is_some();
            me.adopt(&s, meta);
            let ports = s
                .sim()
                .offboard_port()
                .map(|p| format!("{p:?}"))
                .unwrap_or_default();
            Ok(to_text(json!({
                "session": s.id(),
                "instance": instance,
                "system_id": system_id,
                "vehicle": vehicle,
                "speed": speed,
                "offboard_port": ports,
                "vehicle_addr": s.sim().vehicle_addr().map(|a| a.to_string()),
                "report": format!("nexus://session/{}/report", s.id()),
                "tlog": recorded.then(|| RecordKind::Tlog.uri(s.id())),
                "snapshot": s.snapshot().ok().as_ref().map(snapshot_json),
            })))
        })
        .await
    }

    #[tool(
        description = "Wait, on the autopilot's clock, until a condition holds (the wait engine's wait_until): condition + value (+ op, within, since_seq, relative, to, hold_s, guards, then_mode / then_rc / then_speedup), or `until` written as a flight program's until. timeout_s is sim seconds; wait_cap_s is wall seconds for this call (default 30): on reason `cap` the wait is not over, call again with since_seq = snapshot.seq and no text is missed. Returns WaitResult: satisfied, reason (met, timeout, guard, cap, died, closed), waited_sim_s, waited_wall_s, snapshot_at (settle|return), snapshot, guard, explanation."
    )]
    async fn wait_until(&self, Parameters(a): Parameters<WaitArgs>) -> ToolResult {
        let s = self.session(a.session)?;
        let (wait, until) = build_wait(&a, Self::px4(&s))?;
        self.gate(
            a.session,
            "wait_until",
            guard::reactions_move(wait.reactions()).map(|(_, why)| why),
        )?;
        let cap = wall_cap(a.wait_cap_s)?;
        let timeout = a.timeout_s;
        let me = self.clone();
        blocking(move || {
            // Bounded in wall time as every wait of the `nexus` command, too.
            let cap = match s.sim().options().clock {
                RunClock::RealTime { speed } => {
                    cap.min(nexus_host::run::wall_bound(timeout, speed))
                }
                _ => cap,
            };
            let id = s.id();
            me.busy(id, 1);
            let waited = s.wait_explained(&wait, Some(cap));
            let mut meta = lock(&me.records.meta);
            if let Some(m) = meta.get_mut(&id) {
                m.busy = m.busy.saturating_sub(1);
                // A capped wait goes on in the next call: only a settled one is the report's.
                if let Ok((r, why)) = &waited {
                    if r.reason != nexus_core::engine::Reason::Cap {
                        m.note_wait(&until, r, why.clone());
                    }
                }
            }
            drop(meta);
            let (r, why) = waited.map_err(|e| format!("wait_until: {e}"))?;
            Ok(to_text(wait_json(&r, why)))
        })
        .await
    }

    #[tool(
        description = "Run a step program on the session: `program` (the TOML of `nexus run`, or the same as JSON) or `path` (a program file inside --root); `upload` steps read their plan inside --root. Waits at most wait_cap_s wall seconds (default 30): the program then goes on and the answer is {running: true, reason: cap, steps settled so far}; call again with continue = true to wait more, or abort_steps. When it ends: passed, end, error and each step's WaitResult."
    )]
    async fn run_steps(&self, Parameters(a): Parameters<StepsArgs>) -> ToolResult {
        let cap = wall_cap(a.wait_cap_s)?;
        let s = self.session(a.session)?;
        if a.continue_ {
            if a.program.is_some() || a.path.is_some() {
                return Err("continue takes no program: it waits for the one running".into());
            }
            let me = self.clone();
            return blocking(move || me.follow_program(&s, cap).map(to_text)).await;
        }
        let root = self.config.root.clone();
        let inside = move |p: &Path| confine(&root, p);
        let program = match (&a.program, &a.path) {
            (Some(text), None) => {
                if text.len() > MAX_TEXT_BYTES {
                    return Err(format!("the program is over {MAX_TEXT_BYTES} bytes"));
                }
                let name = self.config.root.join("program");
                if text.trim_start().starts_with('{') {
                    let v: Value = serde_json::from_str(text)
                        .map_err(|e| format!("the program is not JSON: {e}"))?;
                    let toml = json_to_toml(&v)?;
                    ProgramFile::parse_confined(&name, &toml, &inside).map_err(reader_error)?
                } else {
                    ProgramFile::parse_confined(&name, text, &inside).map_err(|e| e.to_string())?
                }
            }
            (None, Some(p)) => {
                let full = self.inside_root(p)?;
                let text = crate::diag::read_text(&full).map_err(|e| e.to_string())?;
                ProgramFile::parse_confined(&full, &text, &inside).map_err(|e| e.to_string())?
            }
            _ => return Err("give exactly one of program and path (or continue)".into()),
        };
        let core = program.to_program();
        if let Some(m) = guard::program_moves(&core) {
            self.gate(
                a.session,
                &format!("run_steps (step {}, {})", m.step + 1, m.part.words()),
                Some(m.why),
            )?;
        }
        let me = self.clone();
        blocking(move || {
            let link = s.client().link().map_err(|e| format!("run_steps: {e}"))?;
            if let Some(plan) = &program.plan {
                crate::exec::lodge_plan(&link, plan)?;
            }
            let steps: Vec<StepMeta> = program.steps.iter().map(StepMeta::from).collect();
            let events_from = link.last_event_seq();
            let pending = link
                .start_program(core)
                .map_err(|e| format!("run_steps: {e}"))?;
            if let Some(m) = lock(&me.records.meta).get_mut(&s.id()) {
                if let Some(plan) = &program.plan {
                    m.plan = Some((plan.path.display().to_string(), plan.plan.items.to_vec()));
                }
                m.program = Some(Running {
                    pending: Some(pending),
                    steps,
                    events_from,
                    explanations: HashMap::new(),
                });
                m.last_program = None;
            }
            me.follow_program(&s, cap).map(to_text)
        })
        .await
    }

    #[tool(description = "Abort the session's running step program: its step ends `aborted`.")]
    async fn abort_steps(&self, Parameters(a): Parameters<SessionArg>) -> ToolResult {
        self.on(a.session, |s| {
            s.abort_steps().map_err(|e| format!("abort_steps: {e}"))?;
            Ok(to_text(json!({"ok": true})))
        })
        .await
    }

    #[tool(
        description = "The vehicle now: t_sim_s, seq (the newest text's), armed, mode, height_m, airspeed_m_s, waypoint, landed, last_text, error."
    )]
    async fn snapshot(&self, Parameters(a): Parameters<SessionArg>) -> ToolResult {
        self.on(a.session, |s| {
            let snap = s.snapshot().map_err(|e| format!("snapshot: {e}"))?;
            Ok(to_text(snapshot_json(&snap)))
        })
        .await
    }

    #[tool(
        description = "The STATUSTEXTs the session kept whose seq is after since_seq, oldest first."
    )]
    async fn texts(&self, Parameters(a): Parameters<TextsArgs>) -> ToolResult {
        let since = a.since_seq;
        self.on(a.session, move |s| {
            let t = s.texts_since(since).map_err(|e| format!("texts: {e}"))?;
            Ok(to_text(json!({
                "texts": t.iter().map(text_json).collect::<Vec<_>>(),
            })))
        })
        .await
    }

    #[tool(description = "Arm the vehicle (returns once sent; wait for `armed`).")]
    async fn arm(&self, Parameters(a): Parameters<SessionArg>) -> ToolResult {
        self.verb(a.session, "arm", Action::Arm, |s| s.client().arm())
            .await
    }

    #[tool(description = "Disarm the vehicle.")]
    async fn disarm(&self, Parameters(a): Parameters<SessionArg>) -> ToolResult {
        self.verb(a.session, "disarm", Action::Disarm, |s| s.client().disarm())
            .await
    }

    #[tool(description = "Request a flight mode (wait for `mode` to see it taken).")]
    async fn set_mode(&self, Parameters(a): Parameters<ModeArgs>) -> ToolResult {
        let mode = Mode::from_name(&a.mode).map_err(|e| e.to_string())?;
        self.verb(a.session, "set_mode", Action::SetMode(mode), move |s| {
            s.client().set_mode(mode)
        })
        .await
    }

    #[tool(
        description = "Take off to alt_m over home (arms if needed; wait for `altitude` to see it climb)."
    )]
    async fn takeoff(&self, Parameters(a): Parameters<TakeoffArgs>) -> ToolResult {
        let alt = a.alt_m.unwrap_or(5.0);
        if !(alt.is_finite() && alt > 0.0 && alt <= ALT_MAX_M) {
            return Err(format!(
                "alt_m must be above 0 and at most {ALT_MAX_M} m, got {alt}"
            ));
        }
        let action = Action::Takeoff { alt_m: alt as f32 };
        self.verb(a.session, "takeoff", action, move |s| {
            s.client().takeoff(alt as f32)
        })
        .await
    }

    #[tool(description = "Land where the vehicle is (wait for `landed`).")]
    async fn land(&self, Parameters(a): Parameters<SessionArg>) -> ToolResult {
        self.verb(a.session, "land", Action::Land, |s| s.client().land())
            .await
    }

    #[tool(description = "Return to launch.")]
    async fn rtl(&self, Parameters(a): Parameters<SessionArg>) -> ToolResult {
        self.verb(a.session, "rtl", Action::ReturnToLaunch, |s| {
            s.client().return_to_launch()
        })
        .await
    }

    #[tool(description = "Hold position (PX4's Hold mode).")]
    async fn hold(&self, Parameters(a): Parameters<SessionArg>) -> ToolResult {
        self.verb(a.session, "hold", Action::Hold, |s| s.client().hold())
            .await
    }

    #[tool(
        description = "Fly to a point relative to home: x_m north, y_m west (left), z_m up, metres; optional yaw_deg (wait for `at_target`)."
    )]
    async fn goto(&self, Parameters(a): Parameters<GotoArgs>) -> ToolResult {
        for (k, v, lo, hi) in [
            ("x_m", a.x_m, -XY_MAX_M, XY_MAX_M),
            ("y_m", a.y_m, -XY_MAX_M, XY_MAX_M),
            ("z_m", a.z_m, ALT_MIN_M, ALT_MAX_M),
        ] {
            if !(v.is_finite() && (lo..=hi).contains(&v)) {
                return Err(format!("{k} must be from {lo} to {hi} m, got {v}"));
            }
        }
        let yaw = match a.yaw_deg {
            None => None,
            Some(d) if d.is_finite() && (-360.0..=360.0).contains(&d) => {
                Some(d.to_radians() as f32)
            }
            Some(d) => return Err(format!("yaw_deg must be -360 to 360, got {d}")),
        };
        let (x, y, z) = (a.x_m as f32, a.y_m as f32, a.z_m as f32);
        let action = Action::Goto {
            x_m: x,
            y_m: y,
            z_m: z,
            yaw_rad: yaw,
        };
        self.verb(a.session, "goto", action, move |s| {
            s.client().goto(x, y, z, yaw)
        })
        .await
    }

    #[tool(description = "Pause the mission (hold where the vehicle is).")]
    async fn pause_mission(&self, Parameters(a): Parameters<SessionArg>) -> ToolResult {
        self.verb(a.session, "pause_mission", Action::PauseMission, |s| {
            s.client().pause_mission()
        })
        .await
    }

    #[tool(description = "Resume the paused mission.")]
    async fn resume_mission(&self, Parameters(a): Parameters<SessionArg>) -> ToolResult {
        self.verb(a.session, "resume_mission", Action::ResumeMission, |s| {
            s.client().resume_mission()
        })
        .await
    }

    #[tool(
        description = "Fly the uploaded mission from its first item (wait for `mission_complete`)."
    )]
    async fn start_mission(&self, Parameters(a): Parameters<SessionArg>) -> ToolResult {
        self.verb(a.session, "start_mission", Action::StartMission, |s| {
            s.client().start_mission()
        })
        .await
    }

    #[tool(
        description = "Upload a QGroundControl .plan: `path` (a file inside --root) or `plan_json` (its text). Its mission goes up now, its geofence and rally points (if any) once PX4 has accepted the mission, as `nexus fly` sends them. Returns once sent: wait for PX4's verdict with verify_mission, or read geo_status."
    )]
    async fn upload_plan(&self, Parameters(a): Parameters<PlanArgs>) -> ToolResult {
        self.gate_action(a.session, "upload_plan", &Action::UploadMission)?;
        let plan = self.plan(a.path.as_deref(), a.plan_json.as_deref())?;
        let records = Arc::clone(&self.records);
        self.on(a.session, move |s| {
            let link = s.client().link().map_err(|e| format!("upload_plan: {e}"))?;
            crate::exec::lodge_plan(&link, &plan)?;
            if let Some(m) = lock(&records.meta).get_mut(&s.id()) {
                m.plan = Some((plan.path.display().to_string(), plan.plan.items.to_vec()));
            }
            link.call(|ctx| ctx.client().upload_mission())
                .map_err(|e| format!("upload_plan: {e}"))?
                .map_err(|e| format!("upload_plan: {e}"))?;
            Ok(to_text(json!({
                "ok": true,
                "items": plan.plan.items.len(),
                "fence_items": plan.geo.fence.len(),
                "rally_points": plan.geo.rally.len(),
                "mission_uploaded": s.client().mission_uploaded(),
            })))
        })
        .await
    }

    #[tool(
        description = "Download the vehicle's mission and compare it item for item with the one uploaded (the `verify_mission` step: until mission_verified). Returns its WaitResult (met: identical; else the explanation names the first differing item)."
    )]
    async fn verify_mission(&self, Parameters(a): Parameters<VerifyArgs>) -> ToolResult {
        let cap = wall_cap(a.wait_cap_s)?;
        let mut step = json!({"action": "verify_mission"});
        if let Some(t) = a.timeout_s {
            step["timeout_s"] = Value::from(t);
        }
        let step = read_step(step)?.step;
        self.on(a.session, move |s| {
            let mut p = nexus_host::pump::HostProgram::new();
            p.push(step).map_err(|e| format!("verify_mission: {e:?}"))?;
            let report = s
                .run_steps(p, Some(cap))
                .map_err(|e| format!("verify_mission: {e}"))?;
            match report.records.first() {
                Some(r) => Ok(to_text(wait_json(&r.result, report.error.clone()))),
                None => Err(format!(
                    "verify_mission: {}",
                    report.error.unwrap_or_else(|| format!("{:?}", report.end))
                )),
            }
        })
        .await
    }

    #[tool(
        description = "Upload a .plan's geofence (kind \"fence\") or rally points (kind \"rally\") alone: `path` inside --root or `plan_json`. Returns once sent; geo_status says how it ended."
    )]
    async fn upload_geo(&self, Parameters(a): Parameters<GeoArgs>) -> ToolResult {
        let kind = geo_kind(&a.kind)?;
        self.gate_action(a.session, "upload_geo", &Action::UploadMission)?;
        let plan = self.plan(a.path.as_deref(), a.plan_json.as_deref())?;
        let items = match kind {
            GeoKind::Fence => plan.geo.fence.to_vec(),
            _ => plan.geo.rally.to_vec(),
        };
        if items.is_empty() {
            return Err(format!("the plan has no {} items", a.kind));
        }
        let n = items.len();
        self.on(a.session, move |s| {
            s.client()
                .upload_geo(kind, &items)
                .map_err(|e| format!("upload_geo: {e}"))?;
            Ok(to_text(json!({"ok": true, "items": n})))
        })
        .await
    }

    #[tool(
        description = "Clear the vehicle's geofence (kind \"fence\") or rally points (\"rally\")."
    )]
    async fn clear_geo(&self, Parameters(a): Parameters<GeoArgs>) -> ToolResult {
        let kind = geo_kind(&a.kind)?;
        if a.path.is_some() || a.plan_json.is_some() {
            return Err("clear_geo takes no plan".into());
        }
        self.gate_action(a.session, "clear_geo", &Action::UploadMission)?;
        self.on(a.session, move |s| {
            s.client()
                .clear_geo(kind)
                .map_err(|e| format!("clear_geo: {e}"))?;
            Ok(verb_answer(&s, "clear_geo"))
        })
        .await
    }

    #[tool(
        description = "How the last geofence or rally transfer ended (Idle, Busy, Uploaded, Failed …) and the items held."
    )]
    async fn geo_status(&self, Parameters(a): Parameters<GeoArgs>) -> ToolResult {
        let kind = geo_kind(&a.kind)?;
        self.on(a.session, move |s| {
            let st = s
                .client()
                .geo_status(kind)
                .map_err(|e| format!("geo_status: {e}"))?;
            let items = s
                .client()
                .geo_items(kind)
                .map_err(|e| format!("geo_status: {e}"))?;
            Ok(to_text(
                json!({"status": format!("{st:?}"), "items": items.len()}),
            ))
        })
        .await
    }

    #[tool(
        description = "Stream RC sticks (MANUAL_CONTROL at 20 Hz) until changed or stop_rc: roll, pitch, yaw -1 to 1, throttle 0 to 1."
    )]
    async fn rc(&self, Parameters(a): Parameters<RcArgs>) -> ToolResult {
        let mut sticks = serde_json::Map::new();
        for (k, v) in [
            ("roll", a.roll),
            ("pitch", a.pitch),
            ("throttle", a.throttle),
            ("yaw", a.yaw),
        ] {
            if let Some(v) = v {
                sticks.insert(k.into(), Value::from(v));
            }
        }
        self.act(a.session, "rc", json!({"action": "rc", "sticks": sticks}))
            .await
    }

    #[tool(description = "Stop the RC stick stream.")]
    async fn stop_rc(&self, Parameters(a): Parameters<SessionArg>) -> ToolResult {
        self.act(a.session, "stop_rc", json!({"action": "stop_rc"}))
            .await
    }

    #[tool(
        description = "Stream an Offboard setpoint and request Offboard mode: a local NED position (north_m, east_m, down_m) or velocity (v_north_m_s, v_east_m_s, v_down_m_s), optional yaw_deg. Call again to move the setpoint; stop_offboard to leave."
    )]
    async fn offboard(&self, Parameters(a): Parameters<OffboardArgs>) -> ToolResult {
        let mut step = serde_json::Map::new();
        step.insert("action".into(), Value::from("offboard"));
        for (k, v) in [
            ("north_m", a.north_m),
            ("east_m", a.east_m),
            ("down_m", a.down_m),
            ("v_north_m_s", a.v_north_m_s),
            ("v_east_m_s", a.v_east_m_s),
            ("v_down_m_s", a.v_down_m_s),
            ("yaw_deg", a.yaw_deg),
        ] {
            if let Some(v) = v {
                step.insert(k.into(), Value::from(v));
            }
        }
        self.act(a.session, "offboard", Value::Object(step)).await
    }

    #[tool(description = "Leave Offboard for Hold and stop the setpoint stream.")]
    async fn stop_offboard(&self, Parameters(a): Parameters<SessionArg>) -> ToolResult {
        self.act(
            a.session,
            "stop_offboard",
            json!({"action": "stop_offboard"}),
        )
        .await
    }

    #[tool(
        description = "Inject a failure (MAV_CMD_INJECT_FAILURE, as the program action inject_failure): unit, failure, instance. PX4 needs SYS_FAILURE_EN 1."
    )]
    async fn inject_failure(&self, Parameters(a): Parameters<InjectArgs>) -> ToolResult {
        let mut step = json!({"action": "inject_failure", "unit": a.unit, "failure": a.failure});
        if let Some(i) = a.instance {
            step["instance"] = Value::from(i);
        }
        self.act(a.session, "inject_failure", step).await
    }

    #[tool(description = "Set a PX4 parameter: kind \"real\" (default) or \"int\".")]
    async fn param_set(&self, Parameters(a): Parameters<ParamSetArgs>) -> ToolResult {
        param_name(&a.name)?;
        let v = a.value;
        let int = match a.kind.as_deref().unwrap_or("real") {
            "real" => false,
            "int" => true,
            other => return Err(format!("kind must be \"real\" or \"int\", got {other:?}")),
        };
        if int && !(v.fract() == 0.0 && (i32::MIN as f64..=i32::MAX as f64).contains(&v)) {
            return Err(format!(
                "an int parameter's value must be a 32-bit integer, got {v}"
            ));
        }
        if !int && (!v.is_finite() || v.abs() > f32::MAX as f64) {
            return Err(format!(
                "a real parameter's value must be a finite f32, got {v}"
            ));
        }
        let pname = nexus_core::action::param_name(&a.name)
            .ok_or_else(|| format!("{:?} is no PX4 parameter name", a.name))?;
        let action = if int {
            Action::ParamInt {
                name: pname,
                value: v as i32,
            }
        } else {
            Action::ParamReal {
                name: pname,
                value: v as f32,
            }
        };
        let name = a.name.clone();
        self.verb(a.session, "param_set", action, move |s| {
            let value = if int {
                ParamValue::Int(v as i32)
            } else {
                ParamValue::Real(v as f32)
            };
            s.client().set_param(&name, value)
        })
        .await
    }

    #[tool(
        description = "Read a PX4 parameter (waits up to timeout_s wall seconds for the answer)."
    )]
    async fn param_get(&self, Parameters(a): Parameters<ParamGetArgs>) -> ToolResult {
        param_name(&a.name)?;
        let t = a.timeout_s.unwrap_or(5.0);
        if !(t.is_finite() && (0.0..=60.0).contains(&t)) {
            return Err(format!("timeout_s must be 0 to 60 wall seconds, got {t}"));
        }
        let name = a.name.clone();
        self.on(a.session, move |s| {
            let v = s
                .client()
                .param_get(&name, Duration::from_secs_f64(t))
                .map_err(|e| format!("param_get {name}: {e}"))?;
            Ok(to_text(json!({ "name": name, "value": format!("{v:?}") })))
        })
        .await
    }

    #[tool(
        description = "Close the session's vehicle: its waits end `closed`, a program `aborted`; the vehicle stops (an attached one is only let go). Returns where its tlog and HTML report are (files and resources nexus://session/ID/tlog and nexus://session/ID/report.html) and the report's verdict."
    )]
    async fn close_sitl(&self, Parameters(a): Parameters<SessionArg>) -> ToolResult {
        let s = self.session(a.session)?;
        let sessions = Arc::clone(&self.sessions);
        let records = Arc::clone(&self.records);
        blocking(move || {
            // Its files are written by now (the close hook runs on the closing thread).
            sessions.close_sitl(&s);
            let mut v = json!({"ok": true, "closed": s.id()});
            if let Some(k) = records.kept(s.id()) {
                v["records"] = k.json();
            }
            Ok(to_text(v))
        })
        .await
    }

    #[tool(
        description = "Kill SITL instance `instance`: its session's waits end `closed`, the vehicle stops, the session goes. Returns where its tlog and HTML report are, as close_sitl does."
    )]
    async fn kill_instance(&self, Parameters(a): Parameters<InstanceArg>) -> ToolResult {
        limits::instance(a.instance)?;
        let sessions = Arc::clone(&self.sessions);
        let records = Arc::clone(&self.records);
        let i = a.instance;
        blocking(move || {
            let id = sessions.by_instance(i).map(|s| s.id());
            sessions
                .kill_instance(i)
                .map_err(|e| format!("kill_instance: {e}"))?;
            let mut v = json!({"ok": true, "killed": i, "session": id});
            if let Some(k) = id.and_then(|id| records.kept(id)) {
                v["records"] = k.json();
            }
            Ok(to_text(v))
        })
        .await
    }

    #[tool(
        description = "The open sessions (id, instance (null for an attached vehicle), system_id, vehicle (simulated, px4, attached), connection, idle seconds, its resources) and the closed ones whose tlog and HTML report are kept (where they are, the verdict)."
    )]
    async fn list_sessions(&self, Parameters(_): Parameters<NoArgs>) -> ToolResult {
        let meta = lock(&self.records.meta);
        let list: Vec<Value> = self
            .sessions
            .list()
            .iter()
            .filter(|s| !s.is_closed())
            .map(|s| {
                let m = meta.get(&s.id());
                json!({
                    "session": s.id(),
                    "instance": m.and_then(|m| m.instance),
                    "system_id": m.map(|m| m.system_id),
                    "vehicle": m.map(|m| m.vehicle),
                    "connection": m.and_then(|m| m.connection.clone()),
                    "idle_s": s.idle_for().as_secs_f64(),
                    "report": format!("nexus://session/{}/report", s.id()),
                    "tlog": m.and_then(|m| m.tlog.as_ref()).map(|_| RecordKind::Tlog.uri(s.id())),
                })
            })
            .collect();
        drop(meta);
        let closed: Vec<Value> = self.records.all_kept().iter().map(|k| k.json()).collect();
        Ok(to_text(json!({ "sessions": list, "closed": closed })))
    }
}

impl NexusServer {
    /// A free instance (`want`, or the lowest one no session uses or is starting on),
    /// reserved until its start ends; refused past --max-sessions.
    fn reserve(&self, want: Option<u8>) -> Result<u8, String> {
        let mut starting = lock(&self.starting);
        let open: Vec<u8> = self
            .sessions
            .list()
            .into_iter()
            .filter(|s| !s.is_closed())
            .map(|s| s.instance())
            .collect();
        let max = self.config.max_sessions;
        if open.len() + starting.len() >= max {
            return Err(format!(
                "{} sessions are open or starting, the most this server holds \
                 (--max-sessions {max}): close one first (close_sitl)",
                open.len() + starting.len()
            ));
        }
        let used = |i: u8| open.contains(&i) || starting.contains(&i);
        let instance = match want {
            Some(i) if used(i) => {
                return Err(format!("instance {i} is already in use by a session"))
            }
            Some(i) => i,
            None => (0..=limits::INSTANCE_MAX)
                .find(|i| !used(*i))
                .ok_or("no free instance")?,
        };
        starting.push(instance);
        Ok(instance)
    }

    /// `start_session` with `connect`: attach as `nexus run --connect` does.
    async fn attach(&self, a: StartArgs, conn: String) -> ToolResult {
        if a.instance.is_some() || a.speed.is_some() || a.px4_build.is_some() {
            return Err(
                "connect attaches to a vehicle someone else runs: instance, speed and \
                 px4_build do not apply"
                    .into(),
            );
        }
        if conn.len() > 256 {
            return Err("connect: at most 256 characters".into());
        }
        let reserved = self.reserve(Some(ATTACHED)).map_err(|e| {
            if e.contains("in use") {
                "one attached session at a time: close it first".to_string()
            } else {
                e
            }
        })?;
        let args = vehicle::VehicleArgs {
            signing: self.config.signing.clone(),
            px4: None,
            sim: false,
            connect: Some(conn.clone()),
            sysid: a.sysid,
            compid: a.compid,
            real_vehicle: self.config.real_vehicle,
            link_rate_baud: None,
            speed: vehicle::Speed::Factor(1.0),
            instance: 0,
            listen: nexus_host::run::DEFAULT_LISTEN,
            model: None,
        };
        let record = a.tlog.unwrap_or(true);
        let sessions = Arc::clone(&self.sessions);
        let starting = Arc::clone(&self.starting);
        let me = self.clone();
        blocking(move || {
            let tlog = record.then(|| me.records.new_tlog());
            let started = args.options().and_then(|mut opts| {
                // Listed under no instance: none of ours is its.
                opts.instance = ATTACHED;
                if let Some(Ok((t, _))) = &tlog {
                    opts = opts.tlog(t.clone());
                }
                vehicle::attach(&args, &conn, opts, None).map_err(|e| e.message().to_string())
            });
            lock(&starting).retain(|i| *i != reserved);
            let c = match started {
                Ok(c) => c,
                Err(e) => {
                    me.records.discard(tlog);
                    return Err(format!("cannot attach: {e}"));
                }
            };
            let attached = c.attached.clone();
            let client = nexus_host::offboard_client::OffboardClient::on_link(
                c.link.clone(),
                c.sim.offboard_options(),
            );
            let s = Session::new(c.sim, client);
            sessions.add(s.clone());
            let simulator = attached.as_ref().and_then(|a| a.simulator);
            let mut meta = Meta::new("attached", c.system_id, tlog);
            meta.may_move = c.may_move;
            meta.simulator = simulator;
            meta.connection = attached.as_ref().map(|a| a.connection.clone());
            meta.component_id = attached.as_ref().map(|a| a.component_id);
            let recorded = meta.tlog.is_some();
            me.adopt(&s, meta);
            Ok(to_text(json!({
                "session": s.id(),
                "instance": Value::Null,
                "vehicle": "attached",
                "connection": attached.as_ref().map(|a| a.connection.clone()),
                "system_id": c.system_id,
                "component_id": attached.as_ref().map(|a| a.component_id),
                "simulator": simulator,
                "may_move": c.may_move,
                "report": format!("nexus://session/{}/report", s.id()),
                "tlog": recorded.then(|| RecordKind::Tlog.uri(s.id())),
                "snapshot": s.snapshot().ok().as_ref().map(snapshot_json),
            })))
        })
        .await
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for NexusServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_resources()
                .build(),
        )
        .with_server_info(Implementation::new("nexus", env!("CARGO_PKG_VERSION")))
        .with_instructions(
            "nexus: command simulated PX4 vehicles and wait, on the autopilot's clock, for \
             what they do. start_session, then verbs (takeoff, goto, land, …) and wait_until \
             (timeout_s in sim seconds, wait_cap_s in wall seconds; on reason `cap` call \
             again with since_seq = snapshot.seq). close_sitl when done. Each session's live \
             report is the resource nexus://session/ID/report, its tlog (every MAVLink frame \
             of its link) nexus://session/ID/tlog, and once it closed its HTML report \
             nexus://session/ID/report.html.",
        )
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        let mut resources: Vec<Resource> = self
            .sessions
            .list()
            .iter()
            .filter(|s| !s.is_closed())
            .map(|s| {
                Resource::new(
                    format!("nexus://session/{}/report", s.id()),
                    format!("session {} report", s.id()),
                )
                .with_mime_type("application/json")
            })
            .collect();
        for (id, kind, path) in self.records.resources() {
            let what = match kind {
                RecordKind::Tlog => "tlog",
                RecordKind::Html => "HTML report",
            };
            let mut r = Resource::new(kind.uri(id), format!("session {id} {what}"))
                .with_mime_type(kind.mime());
            if let Ok(m) = std::fs::metadata(&path) {
                r = r.with_size(m.len());
            }
            resources.push(r);
        }
        Ok(ListResourcesResult::with_all_items(resources))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        let uri = request.uri;
        let not_found = || McpError::resource_not_found(format!("no resource {uri}"), None);
        let (id, what) = uri
            .strip_prefix("nexus://session/")
            .and_then(|r| r.split_once('/'))
            .and_then(|(n, what)| Some((n.parse::<u64>().ok()?, what)))
            .ok_or_else(not_found)?;
        let kind = match what {
            "report" => None,
            "tlog" => Some(RecordKind::Tlog),
            "report.html" => Some(RecordKind::Html),
            _ => return Err(not_found()),
        };
        let Some(kind) = kind else {
            let s = self
                .sessions
                .get(id)
                .filter(|s| !s.is_closed())
                .ok_or_else(not_found)?;
            let me = self.clone();
            let report = tokio::task::spawn_blocking(move || me.report(&s))
                .await
                .map_err(|e| McpError::internal_error(e.to_string(), None))?;
            return Ok(ReadResourceResponse::Complete(ReadResourceResult::new(
                vec![
                    ResourceContents::text(to_text(report), uri).with_mime_type("application/json")
                ],
            )));
        };
        let records = Arc::clone(&self.records);
        let read = tokio::task::spawn_blocking(move || {
            let path = records.file(id, kind)?;
            Some(read_bounded(&path))
        })
        .await
        .map_err(|e| McpError::internal_error(e.to_string(), None))?;
        let bytes = match read {
            None => return Err(not_found()),
            Some(Err(e)) => return Err(McpError::internal_error(e, None)),
            Some(Ok(b)) => b,
        };
        let contents = match kind {
            RecordKind::Tlog => {
                use base64::Engine;
                ResourceContents::blob(
                    base64::engine::general_purpose::STANDARD.encode(&bytes),
                    uri,
                )
            }
            RecordKind::Html => ResourceContents::text(String::from_utf8_lossy(&bytes), uri),
        }
        .with_mime_type(kind.mime());
        Ok(ReadResourceResponse::Complete(ReadResourceResult::new(
            vec![contents],
        )))
    }
}

/// A records file's bytes, at most [`RESOURCE_MAX_BYTES`].
fn read_bounded(path: &Path) -> Result<Vec<u8>, String> {
    use std::io::Read;
    let f = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut bytes = Vec::new();
    f.take(RESOURCE_MAX_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    if bytes.len() as u64 > RESOURCE_MAX_BYTES {
        return Err(format!(
            "{} is over {} MiB, the most one resource carries: read the file itself",
            path.display(),
            RESOURCE_MAX_BYTES >> 20
        ));
    }
    Ok(bytes)
}
