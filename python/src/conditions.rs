//! The wait engine's closed table of conditions, from Python: a condition by name, value and op
//! (`sim.wait("altitude", 2.5, op=">=")`), a guard (`"disarmed"`, `("altitude", 1.5, "<=")` or
//! `{"altitude": 1.5, "op": "<="}`), sticks, and the whole [`Wait`] a `sim.wait(...)` call or a
//! step's `until` describes. Never Python code: the pump evaluates these after every message.

use nexus_core::engine::{Condition, ConditionKind, Op, Place, ValueKind, Wait};
use nexus_core::mode::Mode;
use nexus_core::rc::RcSticks;
use nexus_core::telemetry::GpsFix;
use nexus_core::{LandedState, VtolState};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};

/// The condition names, in the order the engine's table lists them (the core's).
pub(crate) const CONDITIONS: &[&str] = ConditionKind::NAMES;

fn parse_op(op: &str) -> PyResult<Op> {
    match op {
        ">=" => Ok(Op::Ge),
        "<=" => Ok(Op::Le),
        "==" => Ok(Op::Eq),
        other => Err(PyValueError::new_err(format!(
            "op must be \">=\", \"<=\" or \"==\", got {other:?}"
        ))),
    }
}

fn need_value<'py>(name: &str, value: Option<&Bound<'py, PyAny>>) -> PyResult<Bound<'py, PyAny>> {
    value
        .cloned()
        .ok_or_else(|| PyValueError::new_err(format!("condition {name:?} needs a value")))
}

fn no_value(name: &str, value: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
    match value {
        Some(v) if !v.is_none() => Err(PyValueError::new_err(format!(
            "condition {name:?} takes no value"
        ))),
        _ => Ok(()),
    }
}

fn f32_of(name: &str, v: &Bound<'_, PyAny>) -> PyResult<f32> {
    let x: f64 = v
        .extract()
        .map_err(|_| PyTypeError::new_err(format!("condition {name:?} needs a number")))?;
    Ok(x as f32)
}

/// A number for condition `kind`, within its bounds ([`ConditionKind::bounds`]).
fn number_of(kind: ConditionKind, v: &Bound<'_, PyAny>) -> PyResult<f32> {
    let name = kind.name();
    let x = f32_of(name, v)?;
    if let Some((lo, hi)) = kind.bounds() {
        if !(lo..=hi).contains(&(x as f64)) {
            let hi = if hi.is_infinite() {
                "".to_owned()
            } else {
                format!("{hi}")
            };
            return Err(PyValueError::new_err(format!(
                "condition {name:?} must be in [{lo}, {hi}]{}, got {x}",
                kind.unit()
            )));
        }
    }
    Ok(x)
}

/// A set of states by name: one name or a list of them.
fn states_of<T>(
    name: &str,
    v: &Bound<'_, PyAny>,
    parse: fn(&str) -> Option<T>,
    names: &str,
) -> PyResult<Vec<T>> {
    let list: Vec<String> = match v.extract::<String>() {
        Ok(one) => vec![one],
        Err(_) => v.extract().map_err(|_| {
            PyTypeError::new_err(format!(
                "condition {name:?} needs a state name or a list of them ({names})"
            ))
        })?,
    };
    if list.is_empty() {
        return Err(PyValueError::new_err(format!(
            "condition {name:?} names no state; give any of {names}"
        )));
    }
    list.iter()
        .map(|s| {
            parse(s).ok_or_else(|| {
                PyValueError::new_err(format!(
                    "condition {name:?}: {s:?} is not a state; expected any of {names}"
                ))
            })
        })
        .collect()
}

/// `to` of a distance: "home", `{"lat", "lon"}` (degrees) or `{"x", "y", "z"}` (world FLU, m).
pub(crate) fn place_of(v: Option<&Bound<'_, PyAny>>) -> PyResult<Place> {
    const HINT: &str = "\"home\", {\"lat\": 47.39, \"lon\": 8.54} (degrees) or {\"x\": 10, \
                        \"y\": 0, \"z\": 5} (world frame: x north, y west, z up, m)";
    let Some(v) = v else {
        return Ok(Place::Home);
    };
    if let Ok(s) = v.extract::<String>() {
        return if s == "home" {
            Ok(Place::Home)
        } else {
            Err(PyValueError::new_err(format!("to {s:?}: expected {HINT}")))
        };
    }
    let d = v
        .downcast::<PyDict>()
        .map_err(|_| PyTypeError::new_err(format!("to: expected {HINT}")))?;
    let get =
        |k: &str| -> PyResult<Option<f64>> { d.get_item(k)?.map(|x| x.extract()).transpose() };
    match (get("lat")?, get("lon")?) {
        (Some(lat_deg), Some(lon_deg)) => Ok(Place::LatLon { lat_deg, lon_deg }),
        (None, None) => Ok(Place::World {
            x_m: get("x")?.unwrap_or(0.0) as f32,
            y_m: get("y")?.unwrap_or(0.0) as f32,
            z_m: get("z")?.unwrap_or(0.0) as f32,
        }),
        _ => Err(PyValueError::new_err(format!(
            "to: give both lat and lon; expected {HINT}"
        ))),
    }
}

/// One condition of the engine's closed table, from its name, value and op (a `distance` is
/// to home; [`condition_of_dict`] reads its `to`).
pub(crate) fn condition(
    name: &str,
    value: Option<&Bound<'_, PyAny>>,
    op: Option<&str>,
) -> PyResult<Condition> {
    condition_to(name, value, op, Place::Home)
}

fn condition_to(
    name: &str,
    value: Option<&Bound<'_, PyAny>>,
    op: Option<&str>,
    place: Place,
) -> PyResult<Condition> {
    use ConditionKind as K;
    let Some(kind) = K::from_name(name) else {
        return Err(PyValueError::new_err(format!(
            "unknown condition {name:?}; known: {}",
            CONDITIONS.join(", ")
        )));
    };
    let mut c = if let Some(flag) = kind.flag() {
        no_value(name, value)?;
        flag
    } else {
        let v = need_value(name, value)?;
        let num = || number_of(kind, &v);
        let int = || -> PyResult<i64> {
            let n: i64 = v.extract().map_err(|_| {
                PyTypeError::new_err(format!("condition {name:?} needs a whole number"))
            })?;
            let (lo, hi) = kind.bounds().unwrap_or((0.0, 0.0));
            if !(lo as i64..=hi as i64).contains(&n) {
                return Err(PyValueError::new_err(format!(
                    "condition {name:?} must be {lo} to {hi}, got {n}"
                )));
            }
            Ok(n)
        };
        let numeric = match kind.value() {
            ValueKind::Integer => kind.of_number(int()? as f64),
            ValueKind::Number => kind.of_number(num()? as f64),
            _ => None,
        };
        match numeric {
            Some(c) => c,
            None => match kind {
                K::Mode => {
                    let m: String = v.extract()?;
                    Condition::mode(
                        Mode::from_name(&m)
                            .map_err(|e| PyValueError::new_err(format!("mode {m:?}: {e}")))?,
                    )
                }
                K::Text => Condition::text(&v.extract::<String>()?),
                K::Distance => Condition::distance_m(num()?, place),
                K::GpsFix => {
                    const NAMES: &str =
                        "none, no_fix, 2d, 3d, dgps, rtk_float, rtk_fixed, static, ppp";
                    let fix = match v.extract::<String>() {
                        Ok(s) => GpsFix::from_name(&s),
                        Err(_) => v.extract::<u8>().ok().and_then(GpsFix::from_mav),
                    };
                    Condition::gps_fix(fix.ok_or_else(|| {
                        PyValueError::new_err(format!(
                            "condition \"gps_fix\" needs a fix name ({NAMES}) or its GPS_FIX_TYPE \
                         number 0 to 8"
                        ))
                    })?)
                }
                K::LandedState => Condition::landed_state(&states_of(
                    name,
                    &v,
                    LandedState::from_name,
                    "ON_GROUND, IN_AIR, TAKING_OFF, LANDING, UNKNOWN",
                )?),
                K::VtolState => Condition::vtol_state(&states_of(
                    name,
                    &v,
                    VtolState::from_name,
                    "mc, fw, transition_to_fw, transition_to_mc, undefined",
                )?),
                other => unreachable!("{} is a flag or a number, built above", other.name()),
            },
        }
    };
    if let Some(op) = op {
        let op = parse_op(op)?;
        if op != Op::Ge || kind.takes_op() {
            if !kind.takes_op() {
                return Err(PyValueError::new_err(format!(
                    "condition {name:?} takes no op (it is {})",
                    match kind.value() {
                        ValueKind::Mode => "an equality",
                        ValueKind::Text => "a substring match",
                        ValueKind::Flag => "a flag",
                        ValueKind::LandedStates | ValueKind::VtolStates => "any of a set of states",
                        _ => "always at least the value",
                    }
                )));
            }
            c = c.op(op);
        }
    }
    Ok(c)
}

/// A condition written as a table, as in a `nexus run` program: `{"altitude": 4.5, "op": "<="}`,
/// `{"text": "Takeoff", "since_seq": 3}`, `{"sim_time": 2, "relative": True}`, `{"armed": True}`.
/// `extra` names the other keys the caller reads from the same dict (a step's `hold_s`, …).
pub(crate) fn condition_of_dict(d: &Bound<'_, PyDict>, extra: &[&str]) -> PyResult<Condition> {
    let mut name: Option<String> = None;
    for (k, _) in d.iter() {
        let k: String = k.extract()?;
        if CONDITIONS.contains(&k.as_str()) {
            if let Some(first) = &name {
                return Err(PyValueError::new_err(format!(
                    "a wait has one condition, this one has {first:?} and {k:?}: put the other \
                     in \"guards\" or in a step of its own"
                )));
            }
            name = Some(k);
        } else if !["op", "since_seq", "relative", "to"].contains(&k.as_str())
            && !extra.contains(&k.as_str())
        {
            return Err(PyValueError::new_err(format!(
                "unknown key {k:?} in a condition; a condition is one of {} with op, since_seq, \
                 relative, to{}{}",
                CONDITIONS.join(", "),
                if extra.is_empty() { "" } else { ", " },
                extra.join(", ")
            )));
        }
    }
    let name = name.ok_or_else(|| {
        PyValueError::new_err(format!(
            "the condition names none of: {}",
            CONDITIONS.join(", ")
        ))
    })?;
    let value = d.get_item(&name)?;
    // A flag is written `{"armed": True}`: true is the flag itself, no value.
    let flag = ConditionKind::from_name(&name).is_some_and(|k| k.value() == ValueKind::Flag);
    let value = if flag {
        match &value {
            Some(v) if v.extract::<bool>().is_ok_and(|b| b) => None,
            _ => {
                return Err(PyValueError::new_err(format!(
                    "condition {name:?} is a flag: write {{{name:?}: True}} or just {name:?}"
                )))
            }
        }
    } else {
        value
    };
    let op: Option<String> = d.get_item("op")?.map(|v| v.extract()).transpose()?;
    let to = d.get_item("to")?;
    if to.is_some() && name != "distance" {
        return Err(PyValueError::new_err("to applies to \"distance\" only"));
    }
    let place = place_of(to.as_ref())?;
    let mut c = condition_to(&name, value.as_ref(), op.as_deref(), place)?;
    if let Some(s) = d.get_item("since_seq")? {
        if name != "text" {
            return Err(PyValueError::new_err("since_seq applies to \"text\" only"));
        }
        c = c.since_seq(s.extract()?);
    }
    if let Some(r) = d.get_item("relative")? {
        if r.is_truthy()? {
            if name != "sim_time" {
                return Err(PyValueError::new_err(
                    "relative applies to \"sim_time\" only",
                ));
            }
            c = c.relative();
        }
    }
    Ok(c)
}

/// A guard: a name ("disarmed"), a tuple (name, value[, op]) or a table
/// (`{"altitude": 1.5, "op": "<="}`).
pub(crate) fn guard_condition(g: &Bound<'_, PyAny>) -> PyResult<Condition> {
    if let Ok(name) = g.extract::<String>() {
        return condition(&name, None, None);
    }
    if let Ok(d) = g.downcast::<PyDict>() {
        return condition_of_dict(d, &[]);
    }
    let t = g.downcast::<PyTuple>().map_err(|_| {
        PyTypeError::new_err(
            "a guard is a condition name (\"disarmed\"), a tuple (name, value[, op]) or a dict \
             ({\"altitude\": 1.5, \"op\": \"<=\"})",
        )
    })?;
    let name: String = t.get_item(0)?.extract()?;
    let value = if t.len() > 1 {
        Some(t.get_item(1)?)
    } else {
        None
    };
    let op: Option<String> = if t.len() > 2 {
        Some(t.get_item(2)?.extract()?)
    } else {
        None
    };
    condition(&name, value.as_ref(), op.as_deref())
}

/// Guards: one guard or a list of them.
pub(crate) fn guards_of(g: &Bound<'_, PyAny>) -> PyResult<Vec<Condition>> {
    if let Ok(list) = g.downcast::<PyList>() {
        list.iter().map(|g| guard_condition(&g)).collect()
    } else {
        Ok(vec![guard_condition(g)?])
    }
}

pub(crate) fn sticks_of(v: &Bound<'_, PyAny>) -> PyResult<RcSticks> {
    if let Ok(d) = v.downcast::<PyDict>() {
        let get = |k: &str, dflt: f32| -> PyResult<f32> {
            Ok(match d.get_item(k)? {
                Some(x) => x.extract::<f64>()? as f32,
                None => dflt,
            })
        };
        return Ok(RcSticks {
            roll: get("roll", 0.0)?,
            pitch: get("pitch", 0.0)?,
            throttle: get("throttle", 0.5)?,
            yaw: get("yaw", 0.0)?,
        }
        .clamped());
    }
    let (roll, pitch, throttle, yaw): (f32, f32, f32, f32) = v.extract().map_err(|_| {
        PyTypeError::new_err(
            "then_rc is a dict with roll, pitch, throttle, yaw or a tuple (roll, pitch, throttle, yaw)",
        )
    })?;
    Ok(RcSticks {
        roll,
        pitch,
        throttle,
        yaw,
    }
    .clamped())
}
/// What a wait adds to its condition: hold, guards and the reactions of the tick it is met.
#[derive(Default)]
pub(crate) struct Extras<'a, 'py> {
    pub hold_s: f64,
    pub guard: Option<&'a Bound<'py, PyAny>>,
    pub then_rc: Option<&'a Bound<'py, PyAny>>,
    pub then_mode: Option<&'a str>,
    pub then_speedup: Option<f64>,
}

/// `condition` with its hold, guards and reactions, and its timeout (sim seconds), checked as
/// the engine will check it.
pub(crate) fn wait_of(c: Condition, timeout_s: f64, x: Extras<'_, '_>) -> PyResult<Wait> {
    if !(timeout_s.is_finite() && timeout_s >= 0.0) {
        return Err(PyValueError::new_err(format!(
            "timeout_s must be a finite number of sim seconds >= 0, got {timeout_s}"
        )));
    }
    if !(x.hold_s.is_finite() && x.hold_s >= 0.0) {
        return Err(PyValueError::new_err(format!(
            "hold_s must be a finite number of sim seconds >= 0, got {}",
            x.hold_s
        )));
    }
    let mut w = Wait::until(c)
        .timeout_s(timeout_s as f32)
        .hold_s(x.hold_s as f32);
    if let Some(g) = x.guard {
        for g in guards_of(g)? {
            w = w.guard(g);
        }
    }
    if let Some(rc) = x.then_rc {
        w = w.then_rc(sticks_of(rc)?);
    }
    if let Some(m) = x.then_mode {
        w = w.then_mode(
            Mode::from_name(m)
                .map_err(|e| PyValueError::new_err(format!("then_mode {m:?}: {e}")))?,
        );
    }
    if let Some(f) = x.then_speedup {
        if !(f.is_finite() && f > 0.0) {
            return Err(PyValueError::new_err(format!(
                "then_speedup must be a speed factor above 0, got {f}"
            )));
        }
        w = w.then_speedup(f as f32);
    }
    w.validate()
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    Ok(w)
}
