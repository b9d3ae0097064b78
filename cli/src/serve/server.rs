//! The MCP server of `nexus serve`: the sessions it holds, what each call shares (the session
//! lookup, the `--real-vehicle` gate, a verb run on a blocking thread), and the start of an
//! attached session.

use super::answers::*;
use super::inputs::*;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::limits;
use nexus_core::action::Action;
use nexus_core::offboard::GeoKind;
use nexus_host::session::{Session, Sessions};
use rmcp::handler::server::router::tool::ToolRouter;
use serde_json::{json, Value};

use super::records::{Meta, RecordKind, Records, Running};
use super::Config;
use crate::program::PlanFile;
use crate::{guard, vehicle};

/// Longest `wait_cap_s`, wall s: an MCP client's request times out long before.
pub const WAIT_CAP_MAX_S: f64 = 600.0;
/// `wait_cap_s` when none is given, wall s.
pub const WAIT_CAP_DEFAULT_S: f64 = 30.0;
/// Longest `connect_timeout_s` of `start_session`, sim s.
pub const CONNECT_MAX_S: f64 = 600.0;
/// Largest inline text (a program, a plan), bytes.
pub const MAX_TEXT_BYTES: usize = limits::MAX_INPUT_BYTES as usize;

pub(super) type ToolResult = Result<String, String>;

/// The MCP server: the sessions it holds and the tools.
#[derive(Debug, Clone)]
pub struct NexusServer {
    pub(super) sessions: Arc<Sessions>,
    pub(super) config: Arc<Config>,
    /// Instances being started (reserved: concurrent starts take different ones).
    pub(super) starting: Arc<Mutex<Vec<u8>>>,
    /// What the server keeps of each session, open and closed, and their files.
    pub(super) records: Arc<Records>,
    pub(super) tool_router: ToolRouter<Self>,
}

pub(super) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The instance an attached session's run is held under: no SITL instance (0 to 253) is its,
/// so `kill_instance` never reaches it and one is attached at a time; never shown (an attached
/// session lists no instance).
pub(super) const ATTACHED: u8 = u8::MAX;

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
    pub(super) fn adopt(&self, s: &Session, meta: Meta) {
        self.records.adopt(s.id(), meta);
        let records = Arc::clone(&self.records);
        let id = s.id();
        s.on_close(move |c| records.close(id, c));
    }

    /// Mark a call on session `id` under way (its end is noted in the session's report).
    pub(super) fn busy(&self, id: u64, by: isize) {
        if let Some(m) = lock(&self.records.meta).get_mut(&id) {
            m.busy = m.busy.saturating_add_signed(by);
        }
    }

    pub(super) fn session(&self, id: u64) -> Result<Session, String> {
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

    pub(super) fn px4(s: &Session) -> bool {
        matches!(
            s.sim().options().vehicle,
            nexus_host::run::RunVehicle::Px4 { .. }
        )
    }

    /// Whether session `id` may be sent what `why` says (an arm, a move, a reconfiguration,
    /// [`crate::guard`]'s words); `what` names the call.
    pub(super) fn gate(&self, id: u64, what: &str, why: Option<&str>) -> Result<(), String> {
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

    pub(super) fn gate_action(&self, id: u64, what: &str, action: &Action) -> Result<(), String> {
        self.gate(id, what, guard::action_moves(action))
    }

    /// A path inside the root, canonical (symlinks resolved), or why not.
    pub fn inside_root(&self, p: &str) -> Result<PathBuf, String> {
        confine(&self.config.root, Path::new(p))
    }

    /// Run `f` on the session on a blocking thread.
    pub(super) async fn on<R: Send + 'static>(
        &self,
        id: u64,
        f: impl FnOnce(Session) -> Result<R, String> + Send + 'static,
    ) -> Result<R, String> {
        let s = self.session(id)?;
        blocking(move || f(s)).await
    }

    /// A verb: `action` is what it does, for the `--real-vehicle` guard.
    pub(super) async fn verb(
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
    pub(super) async fn act(&self, id: u64, what: &'static str, step: Value) -> ToolResult {
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
    pub(super) fn plan(&self, path: Option<&str>, text: Option<&str>) -> Result<PlanFile, String> {
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
    pub(super) fn follow_program(&self, s: &Session, cap: Duration) -> Result<Value, String> {
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
        let got = pending.join_timeout(cap);
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
    pub(super) fn report(&self, s: &Session) -> Value {
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
pub(super) fn confine(root: &Path, p: &Path) -> Result<PathBuf, String> {
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

pub(super) fn geo_kind(k: &str) -> Result<GeoKind, String> {
    match k {
        "fence" => Ok(GeoKind::Fence),
        "rally" => Ok(GeoKind::Rally),
        other => Err(format!(
            "kind must be \"fence\" or \"rally\", got {other:?}"
        )),
    }
}

pub(super) async fn blocking<R: Send + 'static>(
    f: impl FnOnce() -> Result<R, String> + Send + 'static,
) -> Result<R, String> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| format!("internal error: {e}"))?
}

impl NexusServer {
    /// A free instance (`want`, or the lowest one no session uses or is starting on),
    /// reserved until its start ends; refused past --max-sessions.
    pub(super) fn reserve(&self, want: Option<u8>) -> Result<u8, String> {
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
    pub(super) async fn attach(&self, a: StartArgs, conn: String) -> ToolResult {
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
