//! The MCP tools of `nexus serve`: one per call of the session service.
//!
//! Each tool checks its input as the `nexus` command does: waits, program actions and step
//! programs are read by the program reader itself (a wait is a step's `until`, a verb such as
//! `rc` or `offboard` a step's action, written as JSON and read as TOML), so every condition,
//! modifier, bound and message is `nexus run`'s. The `--real-vehicle` guard
//! ([`crate::guard`]) judges each verb's action, each wait's reactions and each program. A
//! call runs on a blocking thread (a wait may take its whole `wait_cap_s`; other calls go on
//! meanwhile) and answers JSON text, or a tool error with the same words as the command line.

use super::answers::*;
use super::inputs::*;
use super::server::*;
use nexus_host::groups::{ActionApi, GeofenceApi, MissionApi, ParamApi};
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use crate::limits;
use nexus_core::action::Action;
use nexus_core::action::ParamValue;
use nexus_core::mode::Mode;
use nexus_core::offboard::GeoKind;
use nexus_core::plan::{ALT_MAX_M, ALT_MIN_M};
use nexus_host::run::{RunClock, RunOptions};
use rmcp::handler::server::wrapper::Parameters;
use rmcp::{tool, tool_router};
use serde_json::{json, Value};

use super::records::{Meta, RecordKind, Running};
use crate::exec::StepMeta;
use crate::guard;
use crate::program::{json_to_toml, ProgramFile, XY_MAX_M};

#[tool_router(vis = "pub(super)")]
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
            s.client().goto_flu(x, y, z, yaw)
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
