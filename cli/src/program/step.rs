//! One `[[step]]` table: an action, its arguments, `until`, `timeout_s`, `on_timeout`.

use super::fields::{Fields, Src};
use super::until::{fmt_num, mode_named, read_sticks, read_until, sticks_text};
use crate::diag::SourceError;
use nexus_core::action::{param_name, PARAM_NAME_LEN};
pub use nexus_core::action::{FAILURE_KINDS, FAILURE_UNITS};
use nexus_core::engine::{OnTimeout, Step};
use nexus_core::plan::{ALT_MAX_M, ALT_MIN_M};
use nexus_core::{Action, VtolState};
use std::ops::Range;
use std::path::PathBuf;
use toml::de::DeTable;

/// Farthest a `goto` may go from the launch point in x or y, m (100 km: beyond any flight a
/// program makes; a larger value is a typo the vehicle would fly).
pub const XY_MAX_M: f64 = 100_000.0;

/// How long a `verify_mission` step waits for the download by default, sim s: a 100-item
/// mission over a lossy 57 600 baud radio takes about a minute.
pub const VERIFY_TIMEOUT_S: f32 = 300.0;

/// How long a `vtol_transition` step waits for the VTOL state it asks for by default, sim s:
/// PX4 gives a front transition VT_TRANS_TIMEOUT (15 s) before it falls back to hover; the
/// SIH VTOLs take about 5 s either way.
pub const TRANSITION_TIMEOUT_S: f32 = 60.0;

/// Keys every step may have (the core's).
const COMMON: [&str; 5] = nexus_core::action::STEP_KEYS;

/// The actions and the keys each takes besides those every step has: the core's table.
pub use nexus_core::action::ACTIONS;

/// A step read from a program.
#[derive(Debug, Clone)]
pub struct StepSpec {
    /// The step's `name`, if given.
    pub name: Option<String>,
    /// The action as written (`"takeoff"`).
    pub action_name: String,
    /// The action, for a person: "takeoff to 5 m".
    pub action_text: String,
    /// The wait, for a person: "altitude >= 4.5 m for 2 s (timeout 60 s, stop)".
    pub until_text: String,
    /// The core step.
    pub step: Step,
    /// 1-based line of the step's table.
    pub line: usize,
    /// For `upload`: the `.plan` path (relative to the program's directory, as written) and
    /// where it is written.
    pub plan: Option<(PathBuf, Range<usize>)>,
}

impl StepSpec {
    /// "step 3 (take off)" or "step 3".
    pub fn label(&self, index: usize) -> String {
        match &self.name {
            Some(n) => format!("step {} ({n})", index + 1),
            None => format!("step {}", index + 1),
        }
    }
}

/// Read step `index` (0-based; messages count from 1).
pub(crate) fn read_step(
    src: Src<'_>,
    table: &DeTable<'_>,
    span: Range<usize>,
    index: usize,
) -> Result<StepSpec, SourceError> {
    let mut f = Fields::new(src, table, span.clone(), format!("step {}", index + 1), "");
    let name = f.string("name")?.map(|(s, _)| s.to_string());
    if let Some(n) = &name {
        f.what = format!("step {} ({n})", index + 1);
    }
    let (action_name, keys) = find_action(&f, span.clone())?;
    let allowed: Vec<&str> = COMMON.iter().chain(keys.iter()).copied().collect();
    let whose = |mut e: SourceError| {
        // A key of another action: say which action it belongs to.
        if let Some(k) = e.key.clone() {
            if let Some(a) = nexus_core::action::action_with_key(&k).map(|a| a.name) {
                e.message = format!(
                    "`{k}` does not apply to action \"{action_name}\" in {} (it belongs to \"{a}\"); \"{action_name}\" takes: {}",
                    f.what,
                    allowed.join(", ")
                );
            }
        }
        e
    };
    f.check_keys(&allowed).map_err(whose)?;
    let (action, action_text, plan) = read_action(src, &f, action_name)?;
    let (step, until_text) = read_wait(src, &f, action)?;
    f.finish(&allowed).map_err(whose)?;
    Ok(StepSpec {
        name,
        action_name: action_name.to_string(),
        action_text,
        until_text,
        step,
        line: crate::diag::SourceError::at(src.path, src.text, span.start, None, "").line,
        plan,
    })
}

/// The step's `action` (`none` when not given) and the keys it takes; an unknown one is an
/// error naming the closest and every known action.
fn find_action<'a>(
    f: &Fields<'a, '_>,
    span: Range<usize>,
) -> Result<(&'a str, &'static [&'static str]), SourceError> {
    let (action_name, aspan) = f.string("action")?.unwrap_or(("none", span.clone()));
    let Some(spec) = nexus_core::action::action_named(action_name) else {
        let names: Vec<&str> = ACTIONS.iter().map(|a| a.name).collect();
        return Err(unknown_name(f, "action", action_name, &aspan, &names));
    };
    Ok((action_name, spec.keys))
}

/// The error for `name`, not one of `names`, given for `key`: it names the closest and every
/// known one.
fn unknown_name(
    f: &Fields<'_, '_>,
    key: &str,
    name: &str,
    span: &Range<usize>,
    names: &[&str],
) -> SourceError {
    let mut msg = format!("unknown {key} \"{name}\" in {}", f.what);
    if let Some(c) = super::fields::closest(name, names) {
        msg.push_str(&format!(" (did you mean \"{c}\"?)"));
    }
    msg.push_str(&format!("; expected one of: {}", names.join(", ")));
    f.err_at(span, key, msg)
}

/// A `.plan` path as written (relative to the program's directory) and where it is written.
type PlanRef = (PathBuf, Range<usize>);

/// The action `action_name` with its arguments, in words, and for `upload` the plan it names.
/// A new action is one arm here (and its keys in [`ACTIONS`]).
fn read_action(
    src: Src<'_>,
    f: &Fields<'_, '_>,
    action_name: &str,
) -> Result<(Action, String, Option<PlanRef>), SourceError> {
    let mut plan = None;
    let (action, action_text) = match action_name {
        "none" => (Action::None, "nothing".to_string()),
        "mode" => {
            let got = f.string("mode")?;
            let (m, mspan) = f.required("mode", got, " (a PX4 mode name, e.g. \"Hold\")")?;
            let mode = mode_named(f, m, &mspan, "mode")?;
            (Action::SetMode(mode), format!("mode {mode}"))
        }
        "arm" => match f.boolean("gesture")? {
            Some((true, _)) => (Action::ArmGesture, "arm by stick gesture".into()),
            _ => (Action::Arm, "arm".into()),
        },
        "disarm" => (Action::Disarm, "disarm".into()),
        "takeoff" => read_takeoff(f)?,
        "goto" => read_goto(f)?,
        "offboard" => read_offboard(f)?,
        "stop_offboard" => (Action::StopOffboard, "stop offboard (Hold)".into()),
        "land" => (Action::Land, "land".into()),
        "rtl" => (Action::ReturnToLaunch, "return to launch".into()),
        "hold" => (Action::Hold, "hold".into()),
        "rc" => read_rc(src, f)?,
        "stop_rc" => (Action::StopRc, "stop the stick stream".into()),
        "param" => read_param(f)?,
        "upload" => {
            let got = f.string("plan")?;
            let (p, pspan) = f.required(
                "plan",
                got,
                " (a QGroundControl .plan, relative to this file)",
            )?;
            plan = Some((PathBuf::from(p), pspan));
            (Action::UploadMission, format!("upload {p}"))
        }
        "verify_mission" => (
            Action::VerifyMission,
            "verify the mission (download it, compare with the upload)".into(),
        ),
        "start" => (Action::StartMission, "start the mission".into()),
        "pause" => (Action::PauseMission, "pause the mission".into()),
        "resume" => (Action::ResumeMission, "resume the mission".into()),
        "inject_failure" => read_inject_failure(f)?,
        "vtol_transition" => {
            let got = f.string("to")?;
            let (to, s) = f.required("to", got, " (\"fw\" or \"mc\")")?;
            let (state, words) = match to {
                "fw" => (VtolState::Fw, "fixed-wing"),
                "mc" => (VtolState::Mc, "multicopter"),
                other => {
                    return Err(f.err_at(
                        &s,
                        "to",
                        format!(
                            "`to` = \"{other}\": a VTOL transitions to \"fw\" (fixed-wing \
                             flight) or \"mc\" (multicopter flight)"
                        ),
                    ))
                }
            };
            (
                Action::VtolTransition { to: state },
                format!("VTOL transition to {words} ({to})"),
            )
        }
        "speedup" => {
            let got = f.number("factor")?;
            let (x, s) = f.required("factor", got, " (the simulator's speed factor)")?;
            // Only the built-in vehicle's speed can change while it runs.
            if let Err(e) = crate::limits::speed("`factor`", x as f64, false) {
                return Err(f.err_at(&s, "factor", e));
            }
            (Action::Speedup(x), format!("speed-up ×{}", fmt_num(x)))
        }
        _ => unreachable!("every name in ACTIONS is matched above"),
    };
    Ok((action, action_text, plan))
}

/// The step's wait (`until`, `timeout_s`, `on_timeout`) around `action`, and the wait in words.
fn read_wait(
    src: Src<'_>,
    f: &Fields<'_, '_>,
    action: Action,
) -> Result<(Step, String), SourceError> {
    let until = match f.get("until") {
        Some(v) => Some(read_until(src, v, &f.what)?),
        None => None,
    };
    let timeout = f.nonneg("timeout_s", " s")?;
    let on_timeout = match f.string("on_timeout")? {
        None => None,
        Some(("stop", s)) => Some((OnTimeout::Stop, s)),
        Some(("continue", s)) => Some((OnTimeout::Continue, s)),
        Some((other, s)) => {
            return Err(f.err_at(
                &s,
                "on_timeout",
                format!("`on_timeout` = \"{other}\": expected \"stop\" or \"continue\""),
            ))
        }
    };
    Ok(match until {
        // A verification waits for its own verdict by default; a difference fails the run at
        // once with the first differing item (the CLI's reaction to the MissionMismatch event).
        // A transition waits for the state it asks for by default; a refusal ends it early
        // with PX4's answer in its explanation.
        None if matches!(action, Action::VtolTransition { .. }) => {
            let Action::VtolTransition { to } = action else {
                unreachable!("matched above")
            };
            let timeout_s = timeout.unwrap_or(TRANSITION_TIMEOUT_S);
            let on = on_timeout.map(|(o, _)| o).unwrap_or(OnTimeout::Stop);
            let wait =
                nexus_core::engine::Wait::until(nexus_core::engine::Condition::vtol_state(&[to]))
                    .timeout_s(timeout_s);
            let text = format!("VTOL state {to} (timeout {} s)", fmt_num(timeout_s));
            (Step::new(action, wait).on_timeout(on), text)
        }
        None if matches!(action, Action::VerifyMission) => {
            let timeout_s = timeout.unwrap_or(VERIFY_TIMEOUT_S);
            let on = on_timeout.map(|(o, _)| o).unwrap_or(OnTimeout::Stop);
            let wait =
                nexus_core::engine::Wait::until(nexus_core::engine::Condition::mission_verified())
                    .timeout_s(timeout_s);
            let text = format!("mission_verified (timeout {} s)", fmt_num(timeout_s));
            (Step::new(action, wait).on_timeout(on), text)
        }
        None => {
            if f.has("timeout_s") || on_timeout.is_some() {
                let key = if f.has("timeout_s") {
                    "timeout_s"
                } else {
                    "on_timeout"
                };
                return Err(f.err_table(
                    Some(key),
                    format!(
                        "{} has `{key}` but no `until`: there is nothing to time out",
                        f.what
                    ),
                ));
            }
            let words = match action {
                // The step waits for PX4's answer to its set (the core holds it).
                Action::ParamReal { .. } | Action::ParamInt { .. } => "PX4 echoes the value stored",
                _ => "go on at once",
            };
            (Step::action_only(action), words.to_string())
        }
        Some(u) => {
            let timeout_s = f.required(
                "timeout_s",
                timeout,
                " with its `until` (sim seconds: every wait must end)",
            )?;
            let on = on_timeout.map(|(o, _)| o).unwrap_or(OnTimeout::Stop);
            let wait = u.wait.timeout_s(timeout_s);
            if let Err(e) = wait.validate() {
                return Err(f.src.err(
                    &u.span,
                    Some("until"),
                    format!("{} cannot wait like this: {e}", f.what),
                ));
            }
            let on_text = match on {
                OnTimeout::Stop => "stop",
                OnTimeout::Continue => "continue",
            };
            let text = format!(
                "{} (timeout {} s, then {on_text})",
                u.text,
                fmt_num(timeout_s)
            );
            (Step::new(action, wait).on_timeout(on), text)
        }
    })
}

/// `takeoff`: `alt_m` over home, above 0.
fn read_takeoff(f: &Fields<'_, '_>) -> Result<(Action, String), SourceError> {
    let got = f.number_in("alt_m", 0.0, ALT_MAX_M, " m")?;
    let (alt_m, s) = f.required("alt_m", got, " (takeoff altitude over home, m)")?;
    if alt_m <= 0.0 {
        return Err(f.err_at(&s, "alt_m", "`alt_m` must be above 0"));
    }
    Ok((
        Action::Takeoff { alt_m },
        format!("takeoff to {} m", fmt_num(alt_m)),
    ))
}

/// `goto`: a world-frame point (x forward/north, y left, z up, m) and an optional yaw.
fn read_goto(f: &Fields<'_, '_>) -> Result<(Action, String), SourceError> {
    let hint = " (world frame: x forward/north, y left/west, z up over the launch point, m)";
    let x = f.number_in("x_m", -XY_MAX_M, XY_MAX_M, " m")?;
    let y = f.number_in("y_m", -XY_MAX_M, XY_MAX_M, " m")?;
    let z = f.number_in("z_m", ALT_MIN_M, ALT_MAX_M, " m")?;
    let (x_m, _) = f.required("x_m", x, hint)?;
    let (y_m, _) = f.required("y_m", y, hint)?;
    let (z_m, _) = f.required("z_m", z, hint)?;
    let yaw = f.number("yaw_deg")?.map(|(d, _)| d);
    let text = match yaw {
        Some(d) => format!(
            "goto x {} m, y {} m, z {} m, yaw {}°",
            fmt_num(x_m),
            fmt_num(y_m),
            fmt_num(z_m),
            fmt_num(d)
        ),
        None => format!(
            "goto x {} m, y {} m, z {} m",
            fmt_num(x_m),
            fmt_num(y_m),
            fmt_num(z_m)
        ),
    };
    let yaw_rad = yaw.map(f32::to_radians);
    Ok((
        Action::Goto {
            x_m,
            y_m,
            z_m,
            yaw_rad,
        },
        text,
    ))
}

/// `offboard`: a local NED position or velocity setpoint (one of the two), optional yaw.
fn read_offboard(f: &Fields<'_, '_>) -> Result<(Action, String), SourceError> {
    use nexus_core::offboard::{Setpoint, Yaw};
    const HINT: &str = " (an offboard setpoint is a position north_m, east_m, down_m \
                        or a velocity v_north_m_s, v_east_m_s, v_down_m_s, local NED)";
    let pos = ["north_m", "east_m", "down_m"];
    let vel = ["v_north_m_s", "v_east_m_s", "v_down_m_s"];
    let has = |keys: &[&str]| keys.iter().any(|k| f.has(k));
    let yaw = f.number("yaw_deg")?.map(|(d, _)| d);
    let three = |keys: [&str; 3], lo: f64, hi: f64, unit: &str| -> Result<[f32; 3], SourceError> {
        let mut out = [0.0; 3];
        for (i, k) in keys.iter().enumerate() {
            let got = f.number_in(k, lo, hi, unit)?;
            out[i] = f.required(k, got, HINT)?.0;
        }
        Ok(out)
    };
    let yaw_text = yaw.map_or(String::new(), |d| format!(", yaw {}°", fmt_num(d)));
    match (has(&pos), has(&vel)) {
        (true, false) => {
            let [n, e, d] = three(pos, -XY_MAX_M, XY_MAX_M, " m")?;
            Ok((
                Action::Offboard(Setpoint::PositionNed {
                    north_m: n,
                    east_m: e,
                    down_m: d,
                    yaw_rad: yaw.map(f32::to_radians),
                }),
                format!(
                    "offboard to NED ({}, {}, {}) m{yaw_text}",
                    fmt_num(n),
                    fmt_num(e),
                    fmt_num(d)
                ),
            ))
        }
        (false, true) => {
            let [n, e, d] = three(vel, -50.0, 50.0, " m/s")?;
            Ok((
                Action::Offboard(Setpoint::VelocityNed {
                    v_north_m_s: n,
                    v_east_m_s: e,
                    v_down_m_s: d,
                    yaw: yaw.map_or(Yaw::Free, |d| Yaw::Angle(d.to_radians())),
                }),
                format!(
                    "offboard at NED ({}, {}, {}) m/s{yaw_text}",
                    fmt_num(n),
                    fmt_num(e),
                    fmt_num(d)
                ),
            ))
        }
        (true, true) => Err(f.err_table(
            Some("v_north_m_s"),
            format!("{} gives a position and a velocity; give one{HINT}", f.what),
        )),
        (false, false) => Err(f.err_table(
            Some("north_m"),
            format!("{} needs a setpoint{HINT}", f.what),
        )),
    }
}

/// `rc`: the stick positions.
fn read_rc(src: Src<'_>, f: &Fields<'_, '_>) -> Result<(Action, String), SourceError> {
    let got = f.table("sticks")?;
    let (t, tspan) = f.required(
        "sticks",
        got,
        " (e.g. sticks = { roll = 0, pitch = 0, throttle = 0.5, yaw = 0 })",
    )?;
    let what = format!("{}'s sticks", f.what);
    let s = read_sticks(src, t, tspan, &what, "sticks.")?;
    Ok((Action::Rc(s), format!("sticks {}", sticks_text(&s))))
}

/// `param`: a PX4 parameter and its value, as `real` (REAL32) or `int` (INT32).
/// `inject_failure`: `unit` and `failure` by name (MAVLink's FAILURE_UNIT and FAILURE_TYPE,
/// lower case), `instance` 0 (all) to 255.
fn read_inject_failure(f: &Fields<'_, '_>) -> Result<(Action, String), SourceError> {
    let named = |key: &str,
                 table: &[(&'static str, u8)],
                 what: &str|
     -> Result<(&'static str, u8), SourceError> {
        let got = f.string(key)?;
        let names: Vec<&str> = table.iter().map(|(n, _)| *n).collect();
        let hint = format!(" ({what}: one of {})", names.join(", "));
        let (name, span) = f.required(key, got, &hint)?;
        match table.iter().find(|(n, _)| *n == name) {
            Some(&(n, v)) => Ok((n, v)),
            None => Err(unknown_name(f, key, name, &span, &names)),
        }
    };
    let (uname, unit) = named("unit", &FAILURE_UNITS, "what fails")?;
    let (kname, kind) = named("failure", &FAILURE_KINDS, "how it fails")?;
    let instance = f.int_in("instance", 0, 255)?.unwrap_or(0) as u8;
    let which = if instance == 0 {
        String::new()
    } else {
        format!(" {instance}")
    };
    Ok((
        Action::InjectFailure {
            unit,
            kind,
            instance,
        },
        format!("inject failure: {uname}{which} {kname}"),
    ))
}

fn read_param(f: &Fields<'_, '_>) -> Result<(Action, String), SourceError> {
    let got = f.string("param")?;
    let (pname, pspan) = f.required("param", got, " (the PX4 parameter name)")?;
    let Some(name) = param_name(pname).filter(|n| !n.is_empty()) else {
        return Err(f.err_at(
            &pspan,
            "param",
            format!("`param` must be 1 to {PARAM_NAME_LEN} characters, found \"{pname}\""),
        ));
    };
    let real = f.number("real")?;
    let int = f.int_in("int", i32::MIN as i64, i32::MAX as i64)?;
    match (real, int) {
        (Some((value, _)), None) => Ok((
            Action::ParamReal { name, value },
            format!("set {pname} = {} (REAL32)", fmt_num(value)),
        )),
        (None, Some(value)) => Ok((
            Action::ParamInt {
                name,
                value: value as i32,
            },
            format!("set {pname} = {value} (INT32)"),
        )),
        (Some(_), Some(_)) => Err(f.err_table(
            Some("int"),
            format!(
                "{} gives both `real` and `int`: give the one that is the parameter's type",
                f.what
            ),
        )),
        (None, None) => Err(f.err_table(
            Some("real"),
            format!(
                "{} needs the value as `real = …` (a REAL32 parameter) or `int = …` \
                     (an INT32 parameter): PX4 ignores a value of the wrong type",
                f.what
            ),
        )),
    }
}
