//! `until = { … }`: one condition of the wait engine's table, its modifiers, guards and reactions.

use super::fields::{Fields, Src, Val};
use crate::diag::SourceError;
use nexus_core::engine::{
    Condition, ConditionKind, Op, Place, ValueKind, Wait, MAX_GUARDS, MAX_NEEDLE_LEN,
};
use nexus_core::telemetry::GpsFix;
use nexus_core::{LandedState, Mode, RcSticks, VtolState};
use std::ops::Range;
use toml::de::DeValue;

/// The condition keys, one per row of the wait engine's condition table (the core's names).
pub const CONDITION_KEYS: &[&str] = ConditionKind::NAMES;

/// The conditions that compare a number with `op` or `within`, as an error lists them.
fn numeric_keys() -> Vec<&'static str> {
    ConditionKind::ALL
        .iter()
        .filter(|k| k.takes_op())
        .map(|k| k.name())
        .collect()
}

/// Modifiers a condition (main or guard) may carry.
const MODIFIER_KEYS: [&str; 5] = ["op", "within", "since_seq", "relative", "to"];

/// What a wait adds to its condition.
const WAIT_KEYS: [&str; 5] = ["hold_s", "guards", "then_rc", "then_mode", "then_speedup"];

/// A wait read from a program, and how to say it to a person.
pub(crate) struct Until {
    /// The wait, without its timeout (the step's `timeout_s` sets it).
    pub wait: Wait,
    /// "altitude >= 4.5 m for 2 s, then mode Land".
    pub text: String,
    /// Where the `until` value is (for errors the engine finds later).
    pub span: Range<usize>,
}

fn allowed(extra: &[&'static str]) -> Vec<&'static str> {
    CONDITION_KEYS
        .iter()
        .chain(MODIFIER_KEYS.iter())
        .chain(extra.iter())
        .copied()
        .collect()
}

/// Read `until` (a table, or the shorthand string "armed", "disarmed" or "landed").
pub(crate) fn read_until(
    src: Src<'_>,
    value: &Val<'_>,
    step_what: &str,
) -> Result<Until, SourceError> {
    let span = value.span();
    if let Some(s) = value.get_ref().as_str() {
        let cond = shorthand(src, s, &span, "until", step_what)?;
        return Ok(Until {
            text: cond.to_string(),
            wait: Wait::until(cond),
            span,
        });
    }
    let Some(table) = value.get_ref().as_table() else {
        return Err(src.err(
            &span,
            Some("until"),
            format!(
                "`until` in {step_what} must be a table such as {{ altitude = 4.5, op = \">=\" }} \
                 or one of \"armed\", \"disarmed\", \"landed\""
            ),
        ));
    };
    let f = Fields::new(
        src,
        table,
        span.clone(),
        format!("{step_what}'s until"),
        "until.",
    );
    let cond = read_condition(&f)?;
    let mut text = cond.to_string();
    let mut wait = Wait::until(cond);
    if let Some(h) = f.nonneg("hold_s", " s")? {
        if h > 0.0 {
            wait = wait.hold_s(h);
            text.push_str(&format!(" for {} s", fmt_num(h)));
        }
    }
    for cond in read_guards(src, &f, step_what)? {
        text.push_str(&format!(", failing if {cond}"));
        wait = wait.guard(cond);
    }
    let wait = read_reactions(src, &f, step_what, wait, &mut text)?;
    f.finish(&allowed(&WAIT_KEYS))?;
    Ok(Until { wait, text, span })
}

/// `guards`: each a condition table or a short form, at most [`MAX_GUARDS`].
fn read_guards(
    src: Src<'_>,
    f: &Fields<'_, '_>,
    step_what: &str,
) -> Result<Vec<Condition>, SourceError> {
    let Some((guards, gspan)) = f.array("guards")? else {
        return Ok(Vec::new());
    };
    if guards.len() > MAX_GUARDS {
        return Err(f.err_at(
            &gspan,
            "guards",
            format!("at most {MAX_GUARDS} guards, found {}", guards.len()),
        ));
    }
    guards
        .iter()
        .enumerate()
        .map(|(i, g)| {
            let key = format!("guards[{i}]");
            let gwhat = format!("{step_what}'s until.{key}");
            match g.get_ref() {
                DeValue::String(s) => {
                    shorthand(src, s, &g.span(), &format!("until.{key}"), step_what)
                }
                DeValue::Table(t) => {
                    let gf = Fields::new(src, t, g.span(), gwhat, format!("until.{key}."));
                    let got = read_condition(&gf)?;
                    gf.finish(&allowed(&[]))?;
                    Ok(got)
                }
                _ => Err(f.err_at(
                    &g.span(),
                    &key,
                    "a guard is a condition table such as { disarmed = true } or \"disarmed\"",
                )),
            }
        })
        .collect()
}

/// `then_rc`, `then_mode` and `then_speedup`: the reactions added to `wait`, and said in
/// `text`.
fn read_reactions(
    src: Src<'_>,
    f: &Fields<'_, '_>,
    step_what: &str,
    mut wait: Wait,
    text: &mut String,
) -> Result<Wait, SourceError> {
    if let Some((t, tspan)) = f.table("then_rc")? {
        let sticks = read_sticks(
            src,
            t,
            tspan,
            &format!("{step_what}'s until.then_rc"),
            "until.then_rc.",
        )?;
        wait = wait.then_rc(sticks);
        text.push_str(&format!(", then sticks {}", sticks_text(&sticks)));
    }
    if let Some((name, mspan)) = f.string("then_mode")? {
        let mode = mode_named(f, name, &mspan, "then_mode")?;
        wait = wait.then_mode(mode);
        text.push_str(&format!(", then mode {mode}"));
    }
    if let Some((x, sspan)) = f.number("then_speedup")? {
        if let Err(e) = crate::limits::speed("`until.then_speedup`", x as f64, false) {
            return Err(f.err_at(&sspan, "then_speedup", e));
        }
        wait = wait.then_speedup(x);
        text.push_str(&format!(", then speed-up ×{}", fmt_num(x)));
    }
    Ok(wait)
}

fn shorthand(
    src: Src<'_>,
    s: &str,
    span: &Range<usize>,
    key: &str,
    step_what: &str,
) -> Result<Condition, SourceError> {
    match ConditionKind::from_name(s).and_then(ConditionKind::flag) {
        Some(cond) => Ok(cond),
        None => {
            let flags: Vec<String> = ConditionKind::ALL
                .iter()
                .filter(|k| k.value() == ValueKind::Flag)
                .map(|k| format!("\"{}\"", k.name()))
                .collect();
            Err(src.err(
                span,
                Some(key),
                format!(
                    "`{key}` in {step_what}: \"{s}\" is not a condition; the short form is one \
                     of {} (others need a table, e.g. {{ altitude = 5 }})",
                    flags.join(", ")
                ),
            ))
        }
    }
}

/// A mode by name; an unknown name lists the known ones.
pub(crate) fn mode_named(
    f: &Fields<'_, '_>,
    name: &str,
    span: &Range<usize>,
    key: &str,
) -> Result<Mode, SourceError> {
    Mode::from_name(name).map_err(|e| {
        f.err_at(
            span,
            key,
            format!("`{}` = \"{name}\": {e}", f.full_key(key)),
        )
    })
}

/// One condition and its modifiers from `f` (the caller finishes `f`).
fn read_condition(f: &Fields<'_, '_>) -> Result<Condition, SourceError> {
    let (kind, kspan) = which_condition(f)?;
    let m = read_modifiers(f, &kind, &kspan)?;
    let mut cond = read_kind(f, &kind, &kspan)?;
    if let Some(op) = m.op {
        cond = cond.op(op);
    }
    if let Some(tol) = m.within {
        cond = cond.within(tol);
    }
    if let Some(seq) = m.since_seq {
        cond = cond.since_seq(seq as u32);
    }
    if m.relative {
        cond = cond.relative();
    }
    Ok(cond)
}

/// The one condition key of `f` and where it is written; none or two are errors.
fn which_condition(f: &Fields<'_, '_>) -> Result<(String, Range<usize>), SourceError> {
    let present: Vec<(String, Range<usize>)> = f
        .keys()
        .into_iter()
        .filter(|(k, _)| CONDITION_KEYS.contains(&k.as_str()))
        .collect();
    match present.as_slice() {
        [] => Err(f.err_table(
            None,
            format!(
                "{} names no condition; give exactly one of: {}",
                f.what,
                CONDITION_KEYS.join(", ")
            ),
        )),
        [one] => Ok(one.clone()),
        [first, second, ..] => Err(f.err_at(
            &second.1,
            &second.0,
            format!(
                "{} has two conditions (`{}` and `{}`); a wait has one — put the other in \
                     `guards` (fails the step) or in a step of its own",
                f.what, first.0, second.0
            ),
        )),
    }
}

/// A condition's modifiers, checked against its kind.
struct Modifiers {
    op: Option<Op>,
    within: Option<f32>,
    since_seq: Option<i64>,
    relative: bool,
}

/// `op`, `within`, `since_seq`, `relative` and `to`, each refused where it does not apply to
/// the condition `kind` (written at `kspan`).
fn read_modifiers(
    f: &Fields<'_, '_>,
    kind: &str,
    kspan: &Range<usize>,
) -> Result<Modifiers, SourceError> {
    let numeric = ConditionKind::from_name(kind).is_some_and(ConditionKind::takes_op);
    let op = read_op(f, kind, numeric)?;
    let within = read_within(f, kind, numeric, op)?;
    let since_seq = f.int_in("since_seq", 0, u32::MAX as i64)?;
    if since_seq.is_some() && kind != "text" {
        let span = f
            .get("since_seq")
            .map(|v| v.span())
            .unwrap_or(kspan.clone());
        return Err(f.err_at(
            &span,
            "since_seq",
            format!("`{}` only applies to `text`", f.full_key("since_seq")),
        ));
    }
    let relative = f.boolean("relative")?;
    if let Some((true, span)) = &relative {
        if kind != "sim_time" {
            return Err(f.err_at(
                span,
                "relative",
                format!("`{}` only applies to `sim_time`", f.full_key("relative")),
            ));
        }
    }
    let relative = matches!(relative, Some((true, _)));
    if kind != "distance" {
        if let Some(v) = f.get("to") {
            return Err(f.err_at(
                &v.span(),
                "to",
                format!("`{}` only applies to `distance`", f.full_key("to")),
            ));
        }
    }

    Ok(Modifiers {
        op,
        within,
        since_seq,
        relative,
    })
}

/// `op` (`">="`, `"<="`, `"=="`), on a `numeric` condition only.
fn read_op(f: &Fields<'_, '_>, kind: &str, numeric: bool) -> Result<Option<Op>, SourceError> {
    let Some((s, span)) = f.string("op")? else {
        return Ok(None);
    };
    if !numeric {
        return Err(f.err_at(
            &span,
            "op",
            format!(
                "`{}` does not apply to `{kind}` (only {} compare with an op)",
                f.full_key("op"),
                numeric_keys().join(", ")
            ),
        ));
    }
    match s {
        ">=" => Ok(Some(Op::Ge)),
        "<=" => Ok(Some(Op::Le)),
        "==" => Ok(Some(Op::Eq)),
        other => Err(f.err_at(
            &span,
            "op",
            format!(
                "`{}` = \"{other}\": expected \">=\", \"<=\" or \"==\"",
                f.full_key("op")
            ),
        )),
    }
}

/// `within` (a tolerance, not negative), on a `numeric` condition without an `op` only.
fn read_within(
    f: &Fields<'_, '_>,
    kind: &str,
    numeric: bool,
    op: Option<Op>,
) -> Result<Option<f32>, SourceError> {
    let Some((tol, span)) = f.number("within")? else {
        return Ok(None);
    };
    let problem = if !numeric {
        Some(format!("does not apply to `{kind}`"))
    } else if op.is_some() {
        Some("cannot go with `op`: within is its own comparison (|value − target| ≤ within)".into())
    } else if tol < 0.0 {
        Some("must not be negative".into())
    } else {
        None
    };
    match problem {
        Some(p) => Err(f.err_at(&span, "within", format!("`{}` {p}", f.full_key("within")))),
        None => Ok(Some(tol)),
    }
}

/// The condition `kind` (written at `kspan`) with its target; its modifiers come after.
fn read_kind(
    f: &Fields<'_, '_>,
    kind: &str,
    kspan: &Range<usize>,
) -> Result<Condition, SourceError> {
    use ConditionKind as K;
    let Some(k) = K::from_name(kind) else {
        unreachable!("which_condition gives a key of CONDITION_KEYS")
    };
    if k.value() == ValueKind::Flag {
        return read_flag(f, k, kspan);
    }
    // A number within the row's bounds, in its unit (0 when it is not a number).
    let num = || -> Result<f32, SourceError> {
        Ok(match k.bounds() {
            Some((0.0, hi)) if hi.is_infinite() => f.nonneg(kind, k.unit())?.unwrap_or(0.0),
            Some((lo, hi)) => f.number_in(kind, lo, hi, k.unit())?.map_or(0.0, |(v, _)| v),
            None => f.number(kind)?.map_or(0.0, |(v, _)| v),
        })
    };
    let int = || -> Result<i64, SourceError> {
        let (lo, hi) = k.bounds().unwrap_or((0.0, 0.0));
        Ok(f.int_in(kind, lo as i64, hi as i64)?.unwrap_or(0))
    };
    if let Some(cond) = match k.value() {
        ValueKind::Integer => k.of_number(int()? as f64),
        ValueKind::Number => k.of_number(num()? as f64),
        _ => None,
    } {
        return Ok(cond);
    }
    Ok(match k {
        K::Mode => {
            let (name, span) = f.string("mode")?.unwrap_or(("", kspan.clone()));
            Condition::mode(mode_named(f, name, &span, "mode")?)
        }
        K::Text => {
            let (needle, span) = f.string("text")?.unwrap_or(("", kspan.clone()));
            if needle.len() > MAX_NEEDLE_LEN {
                return Err(f.err_at(
                    &span,
                    "text",
                    format!(
                        "`{}` is {} bytes; at most {MAX_NEEDLE_LEN} (a STATUSTEXT is matched by \
                         substring: a shorter part of it will do)",
                        f.full_key("text"),
                        needle.len()
                    ),
                ));
            }
            Condition::text(needle)
        }
        K::Distance => Condition::distance_m(num()?, read_place(f, kspan)?),
        K::GpsFix => Condition::gps_fix(read_fix(f, kspan)?),
        K::LandedState => Condition::landed_state(&read_landed_states(f, kspan)?),
        K::VtolState => Condition::vtol_state(&read_vtol_states(f, kspan)?),
        other => unreachable!("{} is a flag or a number, read above", other.name()),
    })
}

/// A condition that can only be true (`armed`, `disarmed`, `landed`, `mission_complete`,
/// `mission_verified`, `at_target`).
fn read_flag(
    f: &Fields<'_, '_>,
    kind: ConditionKind,
    kspan: &Range<usize>,
) -> Result<Condition, SourceError> {
    let flag = kind.name();
    let (b, span) = f.boolean(flag)?.unwrap_or((true, kspan.clone()));
    if !b {
        let hint = match kind {
            ConditionKind::Armed => "write `disarmed = true`",
            ConditionKind::Disarmed => "write `armed = true`",
            ConditionKind::MissionComplete => "wait on `reached` for an item instead",
            ConditionKind::MissionVerified => "a difference fails the run by itself",
            ConditionKind::AtTarget => "wait on `distance` instead",
            _ => "wait on `altitude` instead (e.g. { altitude = 1 })",
        };
        return Err(f.err_at(
            &span,
            flag,
            format!("`{}` can only be true: {hint}", f.full_key(flag)),
        ));
    }
    Ok(kind.flag().unwrap_or_else(Condition::landed))
}

/// `to` of a distance: `"home"`, `{ lat, lon }` (degrees) or `{ x, y, z }` (world FLU, m).
fn read_place(f: &Fields<'_, '_>, kspan: &Range<usize>) -> Result<Place, SourceError> {
    const HINT: &str = "\"home\", { lat = 47.39, lon = 8.54 } (degrees) or { x = 10, y = 0, \
                        z = 5 } (world frame: x north, y west, z up over the launch point, m)";
    let Some(v) = f.get("to") else {
        return Err(f.err_at(
            kspan,
            "to",
            format!("`distance` needs `{}`: {HINT}", f.full_key("to")),
        ));
    };
    if let Some(s) = v.get_ref().as_str() {
        if s == "home" {
            return Ok(Place::Home);
        }
        return Err(f.err_at(
            &v.span(),
            "to",
            format!("`{}` = \"{s}\": expected {HINT}", f.full_key("to")),
        ));
    }
    let Some((t, tspan)) = f.table("to")? else {
        return Err(f.err_at(
            &v.span(),
            "to",
            format!("`{}`: expected {HINT}", f.full_key("to")),
        ));
    };
    let what = format!("{}'s to", f.what);
    let tf = Fields::new(f.src, t, tspan.clone(), what, format!("{}to.", f.prefix));
    let place = if tf.has("lat") || tf.has("lon") {
        let lat = tf.number_in("lat", -90.0, 90.0, "°")?;
        let lon = tf.number_in("lon", -180.0, 180.0, "°")?;
        let lat = tf.required("lat", lat, " (degrees)")?.0;
        let lon = tf.required("lon", lon, " (degrees)")?.0;
        // Read as f64 from the source: f32 degrees would be metres off.
        let deg = |key: &str, v: f32| {
            tf.get(key)
                .and_then(|x| super::fields::as_f64(x.get_ref()))
                .unwrap_or(v as f64)
        };
        Place::LatLon {
            lat_deg: deg("lat", lat),
            lon_deg: deg("lon", lon),
        }
    } else {
        let x = tf.number("x")?.map_or(0.0, |(v, _)| v);
        let y = tf.number("y")?.map_or(0.0, |(v, _)| v);
        let z = tf.number("z")?.map_or(0.0, |(v, _)| v);
        Place::World {
            x_m: x,
            y_m: y,
            z_m: z,
        }
    };
    tf.finish(&["lat", "lon", "x", "y", "z"])?;
    Ok(place)
}

/// `gps_fix`: a name (`"3d"`, `"rtk_fixed"`, …) or the GPS_FIX_TYPE number.
fn read_fix(f: &Fields<'_, '_>, kspan: &Range<usize>) -> Result<GpsFix, SourceError> {
    const NAMES: &str = "none, no_fix, 2d, 3d, dgps, rtk_float, rtk_fixed, static, ppp";
    let v = f.get("gps_fix");
    if let Some(s) = v.and_then(|v| v.get_ref().as_str()) {
        let span = v.map_or(kspan.clone(), |v| v.span());
        let _ = f.string("gps_fix")?;
        return GpsFix::from_name(s).ok_or_else(|| {
            f.err_at(
                &span,
                "gps_fix",
                format!(
                    "`{}` = \"{s}\": expected one of {NAMES}",
                    f.full_key("gps_fix")
                ),
            )
        });
    }
    let n = f.int_in("gps_fix", 0, 8)?.unwrap_or(0);
    Ok(GpsFix::from_mav(n as u8).unwrap_or(GpsFix::NoGps))
}

/// `landed_state`: a name or an array of names (`ON_GROUND`, `IN_AIR`, `TAKING_OFF`,
/// `LANDING`, `UNKNOWN`), any of which meets the condition.
fn read_landed_states(
    f: &Fields<'_, '_>,
    kspan: &Range<usize>,
) -> Result<Vec<LandedState>, SourceError> {
    const NAMES: &str = "ON_GROUND, IN_AIR, TAKING_OFF, LANDING, UNKNOWN";
    let Some(v) = f.get("landed_state") else {
        return Ok(Vec::new());
    };
    let items: Vec<&Val<'_>> = match v.get_ref().as_array() {
        Some(a) => {
            let _ = f.array("landed_state")?;
            a.iter().collect()
        }
        None => {
            let _ = f.string("landed_state")?;
            vec![v]
        }
    };
    if items.is_empty() {
        return Err(f.err_at(
            kspan,
            "landed_state",
            format!(
                "`{}` names no state; give any of {NAMES}",
                f.full_key("landed_state")
            ),
        ));
    }
    items
        .into_iter()
        .map(|item| {
            item.get_ref()
                .as_str()
                .and_then(LandedState::from_name)
                .ok_or_else(|| {
                    f.err_at(
                        &item.span(),
                        "landed_state",
                        format!("`{}`: expected any of {NAMES}", f.full_key("landed_state")),
                    )
                })
        })
        .collect()
}

/// `vtol_state`: a name or an array of names (`mc`, `fw`, `transition_to_fw`,
/// `transition_to_mc`, `undefined`), any of which meets the condition.
fn read_vtol_states(
    f: &Fields<'_, '_>,
    kspan: &Range<usize>,
) -> Result<Vec<VtolState>, SourceError> {
    const NAMES: &str = "mc, fw, transition_to_fw, transition_to_mc, undefined";
    let Some(v) = f.get("vtol_state") else {
        return Ok(Vec::new());
    };
    let items: Vec<&Val<'_>> = match v.get_ref().as_array() {
        Some(a) => {
            let _ = f.array("vtol_state")?;
            a.iter().collect()
        }
        None => {
            let _ = f.string("vtol_state")?;
            vec![v]
        }
    };
    if items.is_empty() {
        return Err(f.err_at(
            kspan,
            "vtol_state",
            format!(
                "`{}` names no state; give any of {NAMES}",
                f.full_key("vtol_state")
            ),
        ));
    }
    items
        .into_iter()
        .map(|item| {
            item.get_ref()
                .as_str()
                .and_then(VtolState::from_name)
                .ok_or_else(|| {
                    f.err_at(
                        &item.span(),
                        "vtol_state",
                        format!("`{}`: expected any of {NAMES}", f.full_key("vtol_state")),
                    )
                })
        })
        .collect()
}

/// `{ roll, pitch, throttle, yaw }`; missing sticks are centred (throttle at mid).
pub(crate) fn read_sticks(
    src: Src<'_>,
    table: &toml::de::DeTable<'_>,
    span: Range<usize>,
    what: &str,
    prefix: &str,
) -> Result<RcSticks, SourceError> {
    let f = Fields::new(src, table, span, what, prefix);
    let mut s = RcSticks::NEUTRAL;
    for (key, lo, slot) in [
        ("roll", -1.0, &mut s.roll),
        ("pitch", -1.0, &mut s.pitch),
        ("throttle", 0.0, &mut s.throttle),
        ("yaw", -1.0, &mut s.yaw),
    ] {
        if let Some((v, vspan)) = f.number(key)? {
            if !(lo..=1.0).contains(&v) {
                return Err(f.err_at(
                    &vspan,
                    key,
                    format!("`{}` must be in [{lo}, 1], found {v}", f.full_key(key)),
                ));
            }
            *slot = v;
        }
    }
    f.finish(&["roll", "pitch", "throttle", "yaw"])?;
    Ok(s)
}

/// "roll 0, pitch 0.3, throttle 0.5, yaw 0".
pub(crate) fn sticks_text(s: &RcSticks) -> String {
    format!(
        "roll {}, pitch {}, throttle {}, yaw {}",
        fmt_num(s.roll),
        fmt_num(s.pitch),
        fmt_num(s.throttle),
        fmt_num(s.yaw)
    )
}

/// A number as a person writes it: no trailing zeros.
pub(crate) fn fmt_num(x: f32) -> String {
    let s = format!("{x:.3}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" {
        "0".into()
    } else {
        s.into()
    }
}
