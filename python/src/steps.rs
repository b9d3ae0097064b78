//! Step programs from Python: a list of steps, each a dict shaped like a `[[step]]` table of a
//! `nexus run` program (so `tomllib.load(f)["step"]` reads one from its TOML), turned into the
//! wait engine's [`HostProgram`]. Each step does its `action`, then waits `until` a condition
//! holds, at most `timeout_s` sim seconds; on a timeout it stops the program (`on_timeout`
//! "stop", the default) or goes on ("continue"). A step without `until` goes on at once.
//!
//! ```python
//! report = sim.run_steps([
//!     {"action": "takeoff", "alt_m": 5, "until": {"altitude": 4.5, "hold_s": 2}, "timeout_s": 60},
//!     {"action": "land", "until": "landed", "timeout_s": 60},
//! ])
//! ```

use nexus_core::action::{
    action_named, action_with_key, param_name, Action, ActionSpec, ACTIONS, FAILURE_KINDS,
    FAILURE_UNITS, PARAM_NAME_LEN, STEP_KEYS,
};
use nexus_core::engine::{Condition, OnTimeout, Step, Wait};
use nexus_core::mode::Mode;
use nexus_host::pump::HostProgram;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use crate::conditions::{condition, condition_of_dict, sticks_of, wait_of, Extras};

/// Keys every step may have (the core's).
const COMMON: [&str; 5] = STEP_KEYS;

/// The actions of the core's table ([`ACTIONS`]) a Python step program does not take, each with
/// what to do instead: `upload` reads a `.plan` file (`OffboardClient.upload_mission` here);
/// offboard setpoints and VTOL transitions have no reader here yet.
const NOT_HERE: [(&str, &str); 3] = [
    (
        "upload",
        " (upload the plan with OffboardClient.upload_mission first, then run the steps)",
    ),
    (
        "offboard",
        " (offboard setpoints are not available from Python)",
    ),
    (
        "vtol_transition",
        " (VTOL transitions are not available from Python)",
    ),
];

/// The core's action named `name`, if a Python step program takes it.
fn action_here(name: &str) -> Option<&'static ActionSpec> {
    action_named(name).filter(|a| !a.needs_std && NOT_HERE.iter().all(|(n, _)| *n != a.name))
}

/// What a `verify_mission` step waits by default, sim s (as `nexus run`).
const VERIFY_TIMEOUT_S: f64 = 300.0;

/// The keys `until` may carry besides its condition.
const UNTIL_KEYS: [&str; 5] = ["hold_s", "guards", "then_rc", "then_mode", "then_speedup"];

/// One step's dict, read with the step's label ("step 2 (climb)") in every error.
struct StepDict<'a, 'py> {
    d: &'a Bound<'py, PyDict>,
    what: String,
}

impl<'py> StepDict<'_, 'py> {
    fn err(&self, msg: impl std::fmt::Display) -> PyErr {
        PyValueError::new_err(format!("{}: {msg}", self.what))
    }

    /// `e` (from a condition or sticks reader) with the step's label, keeping its type.
    fn wrap(&self, prefix: &str, e: PyErr) -> PyErr {
        Python::with_gil(|py| {
            let msg = format!("{}: {prefix}{}", self.what, e.value(py));
            if e.is_instance_of::<PyTypeError>(py) {
                PyTypeError::new_err(msg)
            } else {
                PyValueError::new_err(msg)
            }
        })
    }

    fn get(&self, k: &str) -> PyResult<Option<Bound<'py, PyAny>>> {
        self.d.get_item(k)
    }

    fn number(&self, k: &str) -> PyResult<Option<f64>> {
        match self.get(k)? {
            None => Ok(None),
            Some(v) => {
                let x: f64 = v
                    .extract()
                    .map_err(|_| self.err(format!("{k:?} must be a number")))?;
                if !x.is_finite() {
                    return Err(self.err(format!("{k:?} must be finite, got {x}")));
                }
                Ok(Some(x))
            }
        }
    }

    fn required(&self, k: &str, what: &str) -> PyResult<f64> {
        self.number(k)?
            .ok_or_else(|| self.err(format!("needs {k:?} ({what})")))
    }

    fn string(&self, k: &str) -> PyResult<Option<String>> {
        self.get(k)?
            .map(|v| {
                v.extract()
                    .map_err(|_| self.err(format!("{k:?} must be a string")))
            })
            .transpose()
    }
}

/// A name from a table of names and numbers (or the number itself).
fn named(s: &StepDict<'_, '_>, key: &str, table: &[(&str, u8)]) -> PyResult<u8> {
    let v = s.get(key)?.ok_or_else(|| s.err(format!("needs {key:?}")))?;
    if let Ok(n) = v.extract::<u8>() {
        return Ok(n);
    }
    let name: String = v
        .extract()
        .map_err(|_| s.err(format!("{key:?} must be a name or a number")))?;
    table
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, x)| *x)
        .ok_or_else(|| {
            let names: Vec<&str> = table.iter().map(|(n, _)| *n).collect();
            s.err(format!(
                "unknown {key} {name:?}; expected one of: {}",
                names.join(", ")
            ))
        })
}

fn mode_of(s: &StepDict<'_, '_>, name: &str) -> PyResult<Mode> {
    Mode::from_name(name).map_err(|e| s.err(format!("mode {name:?}: {e}")))
}

/// The step's action.
fn action_of(s: &StepDict<'_, '_>, name: &str) -> PyResult<Action> {
    Ok(match name {
        "none" => Action::None,
        "mode" => {
            let m = s
                .string("mode")?
                .ok_or_else(|| s.err("needs \"mode\" (a PX4 mode name, e.g. \"Hold\")"))?;
            Action::SetMode(mode_of(s, &m)?)
        }
        "arm" => match s.get("gesture")? {
            Some(g) if g.is_truthy()? => Action::ArmGesture,
            _ => Action::Arm,
        },
        "disarm" => Action::Disarm,
        "takeoff" => {
            let alt = s.required("alt_m", "metres over home")?;
            if alt <= 0.0 {
                return Err(s.err(format!("\"alt_m\" must be above 0 m, got {alt}")));
            }
            Action::Takeoff { alt_m: alt as f32 }
        }
        "goto" => Action::Goto {
            x_m: s.required("x_m", "world x, forward/north, m")? as f32,
            y_m: s.required("y_m", "world y, left/west, m")? as f32,
            z_m: s.required("z_m", "height over the launch point, m")? as f32,
            yaw_rad: s.number("yaw_deg")?.map(|d| (d as f32).to_radians()),
        },
        "land" => Action::Land,
        "rtl" => Action::ReturnToLaunch,
        "hold" => Action::Hold,
        "rc" => {
            let sticks = s.get("sticks")?.ok_or_else(|| {
                s.err("needs \"sticks\" ({\"roll\", \"pitch\", \"throttle\", \"yaw\"})")
            })?;
            Action::Rc(sticks_of(&sticks).map_err(|e| s.wrap("sticks: ", e))?)
        }
        "stop_rc" => Action::StopRc,
        "param" => {
            let p = s
                .string("param")?
                .ok_or_else(|| s.err("needs \"param\" (a PX4 parameter name)"))?;
            let pname = param_name(&p).ok_or_else(|| {
                s.err(format!(
                    "parameter {p:?} is longer than {PARAM_NAME_LEN} characters"
                ))
            })?;
            match (s.get("real")?, s.get("int")?) {
                (Some(_), Some(_)) => {
                    return Err(s.err("gives both \"real\" and \"int\": a parameter has one type"))
                }
                (Some(_), None) => Action::ParamReal {
                    name: pname,
                    value: s.required("real", "the REAL32 value")? as f32,
                },
                (None, Some(v)) => Action::ParamInt {
                    name: pname,
                    value: v
                        .extract()
                        .map_err(|_| s.err("\"int\" must be a 32-bit integer"))?,
                },
                (None, None) => {
                    return Err(s.err("needs \"real\" (REAL32) or \"int\" (INT32): the value"))
                }
            }
        }
        "verify_mission" => Action::VerifyMission,
        "start" => Action::StartMission,
        "pause" => Action::PauseMission,
        "resume" => Action::ResumeMission,
        "speedup" => {
            let f = s.required("factor", "the simulator's speed factor")?;
            if f <= 0.0 {
                return Err(s.err(format!("\"factor\" must be above 0, got {f}")));
            }
            Action::Speedup(f as f32)
        }
        "stop_offboard" => Action::StopOffboard,
        "inject_failure" => Action::InjectFailure {
            unit: named(s, "unit", &FAILURE_UNITS)?,
            kind: named(s, "failure", &FAILURE_KINDS)?,
            instance: match s.get("instance")? {
                Some(v) => v
                    .extract()
                    .map_err(|_| s.err("\"instance\" must be 0 to 255"))?,
                None => 0,
            },
        },
        other => unreachable!("{other:?} is not taken here (action_here)"),
    })
}

/// `until`: a shorthand name ("armed", "landed", …) or a dict with one condition and its
/// modifiers, hold, guards and reactions; the step's timeout on top.
fn until_of(s: &StepDict<'_, '_>, u: &Bound<'_, PyAny>, timeout_s: f64) -> PyResult<Wait> {
    if let Ok(name) = u.extract::<String>() {
        let c = condition(&name, None, None).map_err(|e| s.wrap("until: ", e))?;
        return wait_of(c, timeout_s, Extras::default()).map_err(|e| s.wrap("until: ", e));
    }
    let d = u.downcast::<PyDict>().map_err(|_| {
        PyTypeError::new_err(format!(
            "{}: until must be a dict such as {{\"altitude\": 4.5, \"op\": \">=\"}} or a name \
             such as \"landed\"",
            s.what
        ))
    })?;
    let c: Condition = condition_of_dict(d, &UNTIL_KEYS).map_err(|e| s.wrap("until: ", e))?;
    let hold_s: f64 = d
        .get_item("hold_s")?
        .map(|v| v.extract())
        .transpose()?
        .unwrap_or(0.0);
    let guard = d.get_item("guards")?;
    let then_rc = d.get_item("then_rc")?;
    let then_mode: Option<String> = d.get_item("then_mode")?.map(|v| v.extract()).transpose()?;
    let then_speedup: Option<f64> = d
        .get_item("then_speedup")?
        .map(|v| v.extract())
        .transpose()?;
    wait_of(
        c,
        timeout_s,
        Extras {
            hold_s,
            guard: guard.as_ref(),
            then_rc: then_rc.as_ref(),
            then_mode: then_mode.as_deref(),
            then_speedup,
        },
    )
    .map_err(|e| s.wrap("until: ", e))
}

fn step_of(index: usize, v: &Bound<'_, PyAny>) -> PyResult<Step> {
    let d = v.downcast::<PyDict>().map_err(|_| {
        PyTypeError::new_err(format!(
            "step {}: a step is a dict such as {{\"action\": \"land\", \"until\": \"landed\", \
             \"timeout_s\": 60}}",
            index + 1
        ))
    })?;
    let mut s = StepDict {
        d,
        what: format!("step {}", index + 1),
    };
    if let Some(n) = s.string("name")? {
        s.what = format!("step {} ({n})", index + 1);
    }
    let name = s.string("action")?.unwrap_or_else(|| "none".to_owned());
    let Some(keys) = action_here(&name).map(|a| a.keys) else {
        let names: Vec<&str> = ACTIONS
            .iter()
            .filter(|a| action_here(a.name).is_some())
            .map(|a| a.name)
            .collect();
        let hint = NOT_HERE
            .iter()
            .find(|(n, _)| *n == name)
            .map_or("", |(_, h)| *h);
        return Err(s.err(format!(
            "unknown action {name:?}{hint}; expected one of: {}",
            names.join(", ")
        )));
    };
    for (k, _) in d.iter() {
        let k: String = k.extract()?;
        if !COMMON.contains(&k.as_str()) && !keys.contains(&k.as_str()) {
            let owner = action_with_key(&k).map(|a| a.name);
            let mut allowed: Vec<&str> = COMMON.to_vec();
            allowed.extend_from_slice(keys);
            return Err(s.err(match owner {
                Some(a) => format!(
                    "{k:?} does not apply to action {name:?} (it belongs to {a:?}); {name:?} takes: {}",
                    allowed.join(", ")
                ),
                None => format!(
                    "unknown key {k:?}; action {name:?} takes: {}",
                    allowed.join(", ")
                ),
            }));
        }
    }
    let action = action_of(&s, &name)?;
    let timeout = s.number("timeout_s")?;
    let on_timeout = match s.string("on_timeout")?.as_deref() {
        None | Some("stop") => OnTimeout::Stop,
        Some("continue") => OnTimeout::Continue,
        Some(other) => {
            return Err(s.err(format!(
                "on_timeout {other:?}: expected \"stop\" or \"continue\""
            )))
        }
    };
    let step = match s.get("until")? {
        Some(u) => {
            let t = timeout.ok_or_else(|| {
                s.err("has \"until\" but no \"timeout_s\" (sim seconds: every wait must end)")
            })?;
            Step::new(action, until_of(&s, &u, t)?)
        }
        None if matches!(action, Action::VerifyMission) => Step::new(
            action,
            wait_of(
                Condition::mission_verified(),
                timeout.unwrap_or(VERIFY_TIMEOUT_S),
                Extras::default(),
            )?,
        ),
        None => {
            if timeout.is_some() || s.get("on_timeout")?.is_some() {
                return Err(s.err(
                    "has \"timeout_s\" or \"on_timeout\" but no \"until\": there is nothing to \
                     time out",
                ));
            }
            Step::action_only(action)
        }
    };
    Ok(step.on_timeout(on_timeout))
}

/// The program `steps` describes: a list of step dicts, or a parsed `nexus run` TOML
/// document (a dict whose "step" is that list).
pub(crate) fn program_of(steps: &Bound<'_, PyAny>) -> PyResult<HostProgram> {
    let list = match steps.downcast::<PyDict>() {
        Ok(doc) => doc.get_item("step")?.ok_or_else(|| {
            PyValueError::new_err(
                "the program has no \"step\" list (a nexus run program's [[step]] tables)",
            )
        })?,
        Err(_) => steps.clone(),
    };
    let list = list.downcast::<PyList>().map_err(|_| {
        PyTypeError::new_err("steps must be a list of step dicts (or a program dict with \"step\")")
    })?;
    if list.is_empty() {
        return Err(PyValueError::new_err("the program has no steps"));
    }
    let mut program = HostProgram::new();
    for (i, v) in list.iter().enumerate() {
        program.push(step_of(i, &v)?).map_err(|_| {
            PyValueError::new_err(format!(
                "the program has {} steps; at most {} fit",
                list.len(),
                nexus_host::pump::STEPS
            ))
        })?;
    }
    program
        .validate()
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    Ok(program)
}
