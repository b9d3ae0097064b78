//! The MCP tools of `nexus serve`: one per call of the session service.
//!
//! Each tool checks its input as the `nexus` command does (`nexus_host::limits`, the program
//! reader's bounds), runs the call on a blocking thread (a wait may take its whole
//! `wait_cap_s`; other calls go on meanwhile) and answers JSON text, or a tool error with
//! the same words as the command line.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use nexus_core::engine::{Condition, Op, SnapshotAt, Wait, WaitResult};
use nexus_core::mode::Mode;
use nexus_core::plan::{read_plan, ALT_MAX_M, ALT_MIN_M};
use nexus_core::rc::RcSticks;
use nexus_core::telemetry::{Snapshot, Text};
use nexus_host::limits;
use nexus_host::run::{RunClock, SimOptions};
use nexus_host::session::{Session, Sessions};
use rmcp::handler::server::{router::tool::ToolRouter, wrapper::Parameters};
use rmcp::model::{Implementation, ServerCapabilities, ServerConfig};
use rmcp::{schemars, tool, tool_handler, tool_router, ServerHandler};
use serde::Deserialize;
use serde_json::{json, Value};

use super::Config;
use crate::program::{ProgramFile, XY_MAX_M};

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
    starting: Arc<Mutex<()>>,
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
    /// One of: altitude (m, height above the pad), airspeed (m/s), groundspeed (m/s),
    /// climb_rate (m/s), waypoint (mission seq), reached (mission seq), sim_time (s, the
    /// autopilot clock), time (s since this call), mode (a mode name), text (a substring of a
    /// STATUSTEXT after since_seq), armed, disarmed, landed, mission_complete, at_target.
    pub condition: String,
    /// The condition's value in its unit: a number, a mode name or a text; none for the flags.
    pub value: Option<Value>,
    /// ">=" (default), "<=" or "==", for numeric conditions only.
    pub op: Option<String>,
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
    /// A flight program, the TOML of `nexus run` (`[[step]]` tables: action, until, timeout_s,
    /// on_timeout). A `plan` it uploads is read relative to --root.
    pub program: String,
    /// Wall seconds at most, 0 to 600 (default 30): then the program is aborted and the
    /// answer says which steps ran.
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

fn number(name: &str, v: &Value) -> Result<f32, String> {
    let x = v
        .as_f64()
        .ok_or_else(|| format!("condition {name:?} needs a number, got {v}"))?;
    let lim = limits::MAX_DURATION_S;
    if !x.is_finite() || x.abs() > lim {
        return Err(format!(
            "condition {name:?}: the value must be a number from -{lim:e} to {lim:e}, got {x}"
        ));
    }
    Ok(x as f32)
}

fn condition(name: &str, value: Option<&Value>, op: Option<&str>) -> Result<Condition, String> {
    let value = value.filter(|v| !v.is_null());
    let need = || value.ok_or_else(|| format!("condition {name:?} needs a value"));
    let seq = |v: &Value| {
        v.as_u64()
            .and_then(|n| u16::try_from(n).ok())
            .ok_or_else(|| format!("condition {name:?} needs a mission seq, 0 to 65535, got {v}"))
    };
    let string = |v: &Value| {
        v.as_str()
            .map(str::to_owned)
            .ok_or_else(|| format!("condition {name:?} needs a text, got {v}"))
    };
    let mut c = match name {
        "altitude" => Condition::altitude_m(number(name, need()?)?),
        "airspeed" => Condition::airspeed_m_s(number(name, need()?)?),
        "groundspeed" => Condition::groundspeed_m_s(number(name, need()?)?),
        "climb_rate" => Condition::climb_rate_m_s(number(name, need()?)?),
        "waypoint" => Condition::waypoint(seq(need()?)?),
        "reached" => Condition::reached(seq(need()?)?),
        "sim_time" | "time" => {
            let s = need()?
                .as_f64()
                .ok_or_else(|| format!("condition {name:?} needs a number of seconds"))?;
            let s = limits::duration_s(name, s)? as f32;
            if name == "time" {
                Condition::time_s(s)
            } else {
                Condition::sim_time_s(s)
            }
        }
        "mode" => Condition::mode(Mode::from_name(&string(need()?)?).map_err(|e| e.to_string())?),
        "text" => {
            let t = string(need()?)?;
            if t.len() > 200 {
                return Err("condition \"text\": at most 200 bytes".into());
            }
            Condition::text(&t)
        }
        "armed" | "disarmed" | "landed" | "mission_complete" | "at_target" => {
            if value.is_some() {
                return Err(format!("condition {name:?} takes no value"));
            }
            match name {
                "armed" => Condition::armed(),
                "disarmed" => Condition::disarmed(),
                "landed" => Condition::landed(),
                "mission_complete" => Condition::mission_complete(),
                _ => Condition::at_target(),
            }
        }
        other => {
            return Err(format!(
                "unknown condition {other:?}; known: altitude, airspeed, waypoint, sim_time, \
                 time, mode, text, armed, disarmed, landed, reached, mission_complete, \
                 at_target, groundspeed, climb_rate"
            ))
        }
    };
    if let Some(op) = op {
        let op = match op {
            ">=" => Op::Ge,
            "<=" => Op::Le,
            "==" => Op::Eq,
            other => {
                return Err(format!(
                    "op must be \">=\", \"<=\" or \"==\", got {other:?}"
                ))
            }
        };
        if !c.kind().takes_op() {
            if op != Op::Ge {
                return Err(format!("condition {name:?} takes no op"));
            }
        } else {
            c = c.op(op);
        }
    }
    Ok(c)
}

fn build_wait(a: &WaitArgs, px4: bool) -> Result<Wait, String> {
    let mut c = condition(&a.condition, a.value.as_ref(), a.op.as_deref())?;
    if let Some(s) = a.since_seq {
        if a.condition != "text" {
            return Err("since_seq applies to \"text\" only".into());
        }
        c = c.since_seq(s);
    }
    if a.relative {
        if a.condition != "sim_time" {
            return Err("relative applies to \"sim_time\" only".into());
        }
        c = c.relative();
    }
    let timeout = limits::duration_s("timeout_s", a.timeout_s)?;
    let hold = limits::duration_s("hold_s", a.hold_s.unwrap_or(0.0))?;
    let mut w = Wait::until(c).timeout_s(timeout as f32).hold_s(hold as f32);
    if a.guards.len() > 4 {
        return Err("at most 4 guards".into());
    }
    for g in &a.guards {
        w = w.guard(condition(&g.condition, g.value.as_ref(), g.op.as_deref())?);
    }
    if let Some(m) = &a.then_mode {
        w = w.then_mode(Mode::from_name(m).map_err(|e| e.to_string())?);
    }
    if let Some(s) = &a.then_rc {
        let k = |v: Option<f32>, d: f32| v.unwrap_or(d);
        let sticks = RcSticks {
            roll: k(s.roll, 0.0),
            pitch: k(s.pitch, 0.0),
            throttle: k(s.throttle, 0.5),
            yaw: k(s.yaw, 0.0),
        };
        if ![sticks.roll, sticks.pitch, sticks.throttle, sticks.yaw]
            .iter()
            .all(|x| x.is_finite())
        {
            return Err("then_rc: every stick must be a finite number".into());
        }
        w = w.then_rc(sticks.clamped());
    }
    if let Some(f) = a.then_speedup {
        w = w.then_speedup(limits::speed("then_speedup", f, px4)? as f32);
    }
    w.validate().map_err(|e| e.to_string())?;
    Ok(w)
}

fn param_name(name: &str) -> Result<(), String> {
    if name.is_empty() || name.len() > 16 || !name.chars().all(|c| c.is_ascii_graphic()) {
        return Err(format!(
            "a parameter name is 1 to 16 printable ASCII characters, got {name:?}"
        ));
    }
    Ok(())
}

impl NexusServer {
    /// A server on `sessions`.
    pub fn new(sessions: Arc<Sessions>, config: Config) -> Self {
        NexusServer {
            sessions,
            config: Arc::new(config),
            starting: Arc::new(Mutex::new(())),
            tool_router: Self::tool_router(),
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
        !matches!(
            s.sim().options().vehicle,
            nexus_host::run::VehicleKind::Simulated
        )
    }

    /// A path inside the root, canonical (symlinks resolved), or why not.
    pub fn inside_root(&self, p: &str) -> Result<PathBuf, String> {
        let root = &self.config.root;
        let given = Path::new(p);
        let full = if given.is_absolute() {
            given.to_path_buf()
        } else {
            root.join(given)
        };
        let canon = full
            .canonicalize()
            .map_err(|e| format!("{p}: {e} (paths are read inside --root {})", root.display()))?;
        if !canon.starts_with(root) {
            return Err(format!(
                "{p}: outside the served root {} (only files inside --root are read)",
                root.display()
            ));
        }
        Ok(canon)
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

    async fn verb(
        &self,
        id: u64,
        what: &'static str,
        f: impl FnOnce(&Session) -> Result<(), nexus_host::error::ClientError> + Send + 'static,
    ) -> ToolResult {
        self.on(id, move |s| {
            f(&s).map_err(|e| format!("{what}: {e}"))?;
            Ok(to_text(json!({
                "ok": true,
                "sent": what,
                "snapshot": s.snapshot().ok().as_ref().map(snapshot_json),
            })))
        })
        .await
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
        description = "Start a session: a simulated vehicle (the built-in simulated PX4 by default; PX4 SITL with px4_build) and a client connected to it. Returns the session id, the vehicle's system id and its ports."
    )]
    async fn start_session(&self, Parameters(a): Parameters<StartArgs>) -> ToolResult {
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
        let sessions = Arc::clone(&self.sessions);
        let max = self.config.max_sessions;
        let signing = self.config.signing.clone();
        let starting = Arc::clone(&self.starting);
        blocking(move || {
            let _one = starting.lock().unwrap_or_else(|e| e.into_inner());
            let open: Vec<Session> = sessions
                .list()
                .into_iter()
                .filter(|s| !s.is_closed())
                .collect();
            if open.len() >= max {
                return Err(format!(
                    "{} sessions are open, the most this server holds (--max-sessions {max}): \
                     close one first (close_sitl)",
                    open.len()
                ));
            }
            let instance = match a.instance {
                Some(i) => {
                    if open.iter().any(|s| s.instance() == i) {
                        return Err(format!("instance {i} is already in use by a session"));
                    }
                    i
                }
                None => (0..=limits::INSTANCE_MAX)
                    .find(|i| open.iter().all(|s| s.instance() != *i))
                    .ok_or("no free instance")?,
            };
            let options = match build {
                Some(b) => SimOptions::px4(instance, Some(b)),
                None => SimOptions::simulated(instance),
            }
            .speed(speed);
            let options = signing.apply(options)?;
            let s = sessions
                .open(options, connect)
                .map_err(|e| format!("cannot start instance {instance}: {e}"))?;
            let ports = s
                .sim()
                .offboard_port()
                .map(|p| format!("{p:?}"))
                .unwrap_or_default();
            Ok(to_text(json!({
                "session": s.id(),
                "instance": instance,
                "system_id": instance as u16 + 1,
                "vehicle": if px4 { "px4" } else { "simulated" },
                "speed": speed,
                "offboard_port": ports,
                "vehicle_addr": s.sim().vehicle_addr().map(|a| a.to_string()),
                "snapshot": s.snapshot().ok().as_ref().map(snapshot_json),
            })))
        })
        .await
    }

    #[tool(
        description = "Wait, on the autopilot's clock, until a condition holds (the wait engine's wait_until). timeout_s is sim seconds; wait_cap_s is wall seconds for this call (default 30): on reason `cap` the wait is not over, call again with since_seq = snapshot.seq and no text is missed. Returns WaitResult: satisfied, reason (met, timeout, guard, cap, died, closed), waited_sim_s, waited_wall_s, snapshot_at (settle|return), snapshot, explanation."
    )]
    async fn wait_until(&self, Parameters(a): Parameters<WaitArgs>) -> ToolResult {
        let s = self.session(a.session)?;
        let wait = build_wait(&a, Self::px4(&s))?;
        let cap = wall_cap(a.wait_cap_s)?;
        let timeout = a.timeout_s;
        blocking(move || {
            // Bounded in wall time as every wait of the `nexus` command, too.
            let cap = match s.sim().options().clock {
                RunClock::RealTime { speed } => cap.min(limits::wall_bound(timeout, speed)),
                _ => cap,
            };
            let (r, why) = s
                .wait_until_explained(&wait, Some(cap))
                .map_err(|e| format!("wait_until: {e}"))?;
            Ok(to_text(wait_json(&r, why)))
        })
        .await
    }

    #[tool(
        description = "Run a step program (the TOML of `nexus run`) on the session to its end, for at most wait_cap_s wall seconds (then it is aborted). Returns each step's WaitResult."
    )]
    async fn run_steps(&self, Parameters(a): Parameters<StepsArgs>) -> ToolResult {
        if a.program.len() > MAX_TEXT_BYTES {
            return Err(format!("the program is over {MAX_TEXT_BYTES} bytes"));
        }
        let cap = wall_cap(a.wait_cap_s)?;
        let name = self.config.root.join("program.toml");
        let program = ProgramFile::parse(&name, &a.program).map_err(|e| e.to_string())?;
        if let Some(p) = &program.plan {
            self.inside_root(&p.path.display().to_string())?;
            return Err(
                "a program with an `upload` step is not run here: upload the plan with \
                 upload_plan first, then run the program without the upload step"
                    .into(),
            );
        }
        let core = program.to_program();
        self.on(a.session, move |s| {
            let report = s
                .run_steps(core, Some(cap))
                .map_err(|e| format!("run_steps: {e}"))?;
            Ok(to_text(json!({
                "passed": report.passed(),
                "end": format!("{:?}", report.end),
                "error": report.error,
                "steps": report
                    .records
                    .iter()
                    .map(|r| json!({"passed": r.passed, "result": wait_json(&r.result, None)}))
                    .collect::<Vec<_>>(),
            })))
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
        self.verb(a.session, "arm", |s| s.client().arm()).await
    }

    #[tool(description = "Disarm the vehicle.")]
    async fn disarm(&self, Parameters(a): Parameters<SessionArg>) -> ToolResult {
        self.verb(a.session, "disarm", |s| s.client().disarm())
            .await
    }

    #[tool(description = "Request a flight mode (wait for `mode` to see it taken).")]
    async fn set_mode(&self, Parameters(a): Parameters<ModeArgs>) -> ToolResult {
        let mode = Mode::from_name(&a.mode).map_err(|e| e.to_string())?;
        self.verb(a.session, "set_mode", move |s| {
            s.client().set_flight_mode(mode)
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
        self.verb(a.session, "takeoff", move |s| {
            s.client().takeoff(alt as f32)
        })
        .await
    }

    #[tool(description = "Land where the vehicle is (wait for `landed`).")]
    async fn land(&self, Parameters(a): Parameters<SessionArg>) -> ToolResult {
        self.verb(a.session, "land", |s| s.client().land()).await
    }

    #[tool(description = "Return to launch.")]
    async fn rtl(&self, Parameters(a): Parameters<SessionArg>) -> ToolResult {
        self.verb(a.session, "rtl", |s| s.client().return_to_launch())
            .await
    }

    #[tool(description = "Hold position (PX4's Hold mode).")]
    async fn hold(&self, Parameters(a): Parameters<SessionArg>) -> ToolResult {
        self.verb(a.session, "hold", |s| s.client().hold()).await
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
        self.verb(a.session, "goto", move |s| s.client().goto(x, y, z, yaw))
            .await
    }

    #[tool(description = "Pause the mission (hold where the vehicle is).")]
    async fn pause_mission(&self, Parameters(a): Parameters<SessionArg>) -> ToolResult {
        self.verb(a.session, "pause_mission", |s| s.client().pause_mission())
            .await
    }

    #[tool(description = "Resume the paused mission.")]
    async fn resume_mission(&self, Parameters(a): Parameters<SessionArg>) -> ToolResult {
        self.verb(a.session, "resume_mission", |s| s.client().resume_mission())
            .await
    }

    #[tool(description = "Fly the uploaded mission from its first item.")]
    async fn start_mission(&self, Parameters(a): Parameters<SessionArg>) -> ToolResult {
        self.verb(a.session, "start_mission", |s| s.client().start_mission())
            .await
    }

    #[tool(
        description = "Upload a QGroundControl .plan's mission: `path` (a file inside --root) or `plan_json` (its text). Returns once sent; the answer's mission_uploaded is PX4's verdict so far."
    )]
    async fn upload_plan(&self, Parameters(a): Parameters<PlanArgs>) -> ToolResult {
        let bytes = match (&a.path, &a.plan_json) {
            (Some(p), None) => {
                let path = self.inside_root(p)?;
                limits::read_input(&path).map_err(|e| format!("{p}: {e}"))?
            }
            (None, Some(t)) if t.len() <= MAX_TEXT_BYTES => t.as_bytes().to_vec(),
            (None, Some(_)) => return Err(format!("plan_json is over {MAX_TEXT_BYTES} bytes")),
            _ => return Err("give exactly one of path and plan_json".into()),
        };
        let plan = read_plan::<{ crate::ITEMS }>(&bytes).map_err(|e| format!("the plan: {e}"))?;
        if plan.items.is_empty() {
            return Err("the plan's mission has no items".into());
        }
        let items = plan.items.to_vec();
        let n = items.len();
        self.on(a.session, move |s| {
            s.client()
                .upload_mission(&items)
                .map_err(|e| format!("upload_plan: {e}"))?;
            Ok(to_text(json!({
                "ok": true,
                "items": n,
                "mission_uploaded": s.client().mission_uploaded(),
            })))
        })
        .await
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
        let name = a.name.clone();
        self.verb(a.session, "param_set", move |s| {
            if int {
                s.client().param_set_int(&name, v as i32)
            } else {
                s.client().param_set(&name, v as f32)
            }
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
        description = "Close the session's vehicle: its waits end `closed`, a program `aborted`; the vehicle stops."
    )]
    async fn close_sitl(&self, Parameters(a): Parameters<SessionArg>) -> ToolResult {
        let s = self.session(a.session)?;
        let instance = s.instance();
        let sessions = Arc::clone(&self.sessions);
        blocking(move || {
            // Through the registry, so the session is dropped from it too.
            let _ = sessions.kill_instance(instance);
            s.close_sitl();
            Ok(to_text(json!({"ok": true, "closed": s.id()})))
        })
        .await
    }

    #[tool(
        description = "Kill SITL instance `instance`: its session's waits end `closed`, the vehicle stops, the session goes."
    )]
    async fn kill_instance(&self, Parameters(a): Parameters<InstanceArg>) -> ToolResult {
        limits::instance(a.instance)?;
        let sessions = Arc::clone(&self.sessions);
        let i = a.instance;
        blocking(move || {
            sessions
                .kill_instance(i)
                .map_err(|e| format!("kill_instance: {e}"))?;
            Ok(to_text(json!({"ok": true, "killed": i})))
        })
        .await
    }

    #[tool(description = "The open sessions: id, instance, idle seconds.")]
    async fn list_sessions(&self, Parameters(_): Parameters<NoArgs>) -> ToolResult {
        let list: Vec<Value> = self
            .sessions
            .list()
            .iter()
            .filter(|s| !s.is_closed())
            .map(|s| {
                json!({
                    "session": s.id(),
                    "instance": s.instance(),
                    "system_id": s.instance() as u16 + 1,
                    "idle_s": s.idle_for().as_secs_f64(),
                })
            })
            .collect();
        Ok(to_text(json!({ "sessions": list })))
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for NexusServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("nexus", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "nexus: command simulated PX4 vehicles and wait, on the autopilot's clock, for \
                 what they do. start_session, then verbs (takeoff, goto, land, …) and wait_until \
                 (timeout_s in sim seconds, wait_cap_s in wall seconds; on reason `cap` call \
                 again with since_seq = snapshot.seq). close_sitl when done.",
            )
    }
}
