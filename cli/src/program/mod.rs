//! Flight programs: the TOML file `nexus run` reads, turned into a core [`Program`].
//!
//! A program is the wait engine's steps ([`Program`]) written down. Each `[[step]]` does one
//! action, then waits `until` a condition holds, at most `timeout_s` sim seconds, and on a timeout
//! stops the program (`on_timeout = "stop"`, the default) or goes on (`"continue"`):
//!
//! ```toml
//! name = "takeoff, hover, land"
//!
//! [[step]]
//! name = "take off"
//! action = "takeoff"
//! alt_m = 5
//! until = { altitude = 4.5, op = ">=", hold_s = 2 }
//! timeout_s = 60
//!
//! [[step]]
//! action = "land"
//! until = "landed"
//! timeout_s = 60
//! ```
//!
//! The full format is in docs/cli.md ("Flight programs"). Every mistake is reported with the
//! file, line and column of the offending key and what would be right; unknown keys are errors,
//! never ignored. The reader checks what the engine will check ([`Program::validate`]), so a
//! program that loads also starts.
//!
//! `upload` steps name a QGroundControl `.plan` relative to the program file; it is read (and
//! its errors reported) when the program loads. The vehicle holds one mission at a time, so
//! every `upload` of a program names the same plan. The plan's geofence and rally points go up
//! after its mission, as `nexus fly` sends them: once PX4 has accepted the mission, in the
//! pump's own ticks ([`nexus_core::offboard::Offboard::lodge_geo`]); a fence PX4 refuses ends
//! the run.
//!
//! A `verify_mission` step (no arguments) downloads the vehicle's mission and compares it item
//! for item with the plan uploaded (after an upload still in flight, once PX4 accepts it); the
//! uploaded mission is kept. By default it waits `until = "mission_verified"` (timeout
//! [`VERIFY_TIMEOUT_S`] unless `timeout_s` says otherwise); a different count or the
//! first differing item ends the download and fails the run with that item, uploaded and as
//! the vehicle holds it:
//!
//! ```toml
//! [[step]]
//! action = "upload"
//! plan = "box.plan"
//!
//! [[step]]
//! action = "verify_mission"
//! ```

mod fields;
mod step;
pub use step::XY_MAX_M;
mod until;

pub use step::{StepSpec, ACTIONS, VERIFY_TIMEOUT_S};
pub use until::CONDITION_KEYS;

use crate::diag::{read_bytes, read_text, FileError, SourceError};
use crate::ITEMS;
use fields::{Fields, Src};
use nexus_core::engine::Program;
use nexus_core::offboard::{FENCE_ITEMS, RALLY_ITEMS};
use nexus_core::plan::{read_geo, read_plan, GeoPlan, Plan};
use nexus_host::launcher::Airframe;
use std::path::{Path, PathBuf};
use toml::de::DeTable;

/// Most steps in one program: what a host pump link runs.
pub const STEPS: usize = nexus_host::pump::STEPS;

/// A `.plan` read from disk.
#[derive(Debug, Clone)]
pub struct PlanFile {
    /// The path as given (or resolved against a program's directory).
    pub path: PathBuf,
    /// The plan.
    pub plan: Box<Plan<ITEMS>>,
    /// Its `geoFence` and `rallyPoints` (empty when the file has none): uploaded after the
    /// mission.
    pub geo: Box<GeoPlan<FENCE_ITEMS, RALLY_ITEMS>>,
}

impl PlanFile {
    /// Read and parse a QGroundControl `.plan` (a regular file of at most
    /// [`crate::limits::MAX_INPUT_BYTES`]); errors name the file, line and column.
    pub fn load(path: &Path) -> Result<PlanFile, FileError> {
        let bytes = read_bytes(path)?;
        Self::parse(path, &bytes)
    }

    /// Parse a `.plan`'s bytes (`path` names it in errors).
    pub fn parse(path: &Path, bytes: &[u8]) -> Result<PlanFile, FileError> {
        match read_plan::<ITEMS>(bytes) {
            Ok(plan) if plan.items.is_empty() => {
                let text = String::from_utf8_lossy(bytes);
                let at = text.find("\"items\"").unwrap_or(0);
                Err(
                    SourceError::at(path, &text, at, None, "the plan's mission has no items")
                        .into(),
                )
            }
            Ok(plan) => match read_geo::<FENCE_ITEMS, RALLY_ITEMS>(bytes) {
                Ok(geo) => Ok(PlanFile {
                    path: path.to_path_buf(),
                    plan: Box::new(plan),
                    geo: Box::new(geo),
                }),
                Err(e) => {
                    let text = String::from_utf8_lossy(bytes);
                    Err(SourceError::at(path, &text, e.offset(), None, e.to_string()).into())
                }
            },
            Err(e) => {
                let text = String::from_utf8_lossy(bytes);
                Err(SourceError::at(path, &text, e.offset(), None, e.to_string()).into())
            }
        }
    }
}

/// A program read from a file.
#[derive(Debug, Clone)]
pub struct ProgramFile {
    /// The file.
    pub path: PathBuf,
    /// Its `name`, if given.
    pub name: Option<String>,
    /// The steps, in order.
    pub steps: Vec<StepSpec>,
    /// The plan its `upload` steps name, read.
    pub plan: Option<PlanFile>,
    /// Its `model`: the airframe it is written for (`--model` must agree; see
    /// [`crate::airframe`]).
    pub model: Option<Airframe>,
}

impl ProgramFile {
    /// Read `path`.
    pub fn load(path: &Path) -> Result<ProgramFile, FileError> {
        let text = read_text(path)?;
        Self::parse(path, &text)
    }

    /// Read a program from `text` (`path` names it in errors and anchors `upload` plans).
    pub fn parse(path: &Path, text: &str) -> Result<ProgramFile, FileError> {
        Self::parse_confined(path, text, &|p| Ok(p.to_path_buf()))
    }

    /// [`ProgramFile::parse`], the plan an `upload` names first passed through `confine`
    /// (its path joined to the program's directory, in; the path to read, or why not, out),
    /// before anything is read: `nexus serve` reads no file outside its root.
    pub fn parse_confined(
        path: &Path,
        text: &str,
        confine: &dyn Fn(&Path) -> Result<PathBuf, String>,
    ) -> Result<ProgramFile, FileError> {
        let src = Src { path, text };
        let doc = DeTable::parse(text).map_err(|e| {
            let at = e.span().map(|s| s.start).unwrap_or(0);
            let msg = format!("not valid TOML: {}", e.message().trim_end());
            SourceError::at(path, text, at, None, msg)
        })?;
        let top = Fields::new(src, doc.get_ref(), 0..0, "the program", "");
        let name = top.string("name")?.map(|(s, _)| s.to_string());
        let _ = top.string("description")?;
        let model = match top.string("model")? {
            None => None,
            Some((m, span)) => Some(m.parse::<Airframe>().map_err(|e| {
                SourceError::at(path, text, span.start, Some("model"), e.to_string())
            })?),
        };
        let Some((steps_val, steps_span)) = top.array("step")? else {
            return Err(top
                .err_table(
                    Some("step"),
                    "the program has no steps: add [[step]] tables (see examples/*.toml)",
                )
                .into());
        };
        top.finish(&["name", "description", "model", "step"])?;
        if steps_val.len() > STEPS {
            let at = steps_val[STEPS].span();
            return Err(src
                .err(
                    &at,
                    Some("step"),
                    format!("{} steps; a program holds at most {STEPS}", steps_val.len()),
                )
                .into());
        }
        if steps_val.is_empty() {
            return Err(src
                .err(&steps_span, Some("step"), "the program has no steps")
                .into());
        }
        let mut steps = Vec::with_capacity(steps_val.len());
        for (i, v) in steps_val.iter().enumerate() {
            let Some(t) = v.get_ref().as_table() else {
                return Err(src
                    .err(
                        &v.span(),
                        Some("step"),
                        "each step is a table: write [[step]] sections",
                    )
                    .into());
            };
            steps.push(step::read_step(src, t, v.span(), i)?);
        }
        let plan = load_plan(src, &steps, confine)?;
        let program = ProgramFile {
            path: path.to_path_buf(),
            name,
            steps,
            plan,
            model,
        };
        // The engine's own check, so a program that loads also starts.
        if let Err(e) = program.to_program().validate() {
            return Err(SourceError::at(path, text, 0, None, e.to_string()).into());
        }
        Ok(program)
    }

    /// The core program.
    pub fn to_program(&self) -> Program<STEPS> {
        let mut p = Program::new();
        for s in &self.steps {
            // Cannot fail: the step count was checked against STEPS when reading.
            let _ = p.push(s.step.clone());
        }
        p
    }
}

/// Read the plan the `upload` steps name (all the same one), relative to the program.
fn load_plan(
    src: Src<'_>,
    steps: &[StepSpec],
    confine: &dyn Fn(&Path) -> Result<PathBuf, String>,
) -> Result<Option<PlanFile>, FileError> {
    let mut first: Option<&PathBuf> = None;
    for s in steps {
        let Some((p, span)) = &s.plan else { continue };
        match first {
            None => first = Some(p),
            Some(f) if f == p => {}
            Some(f) => {
                return Err(src
                    .err(
                        span,
                        Some("plan"),
                        format!(
                            "this program already uploads \"{}\"; the vehicle holds one mission, \
                             so every upload in a program names the same plan (split the \
                             program in two for another)",
                            f.display()
                        ),
                    )
                    .into())
            }
        }
    }
    let Some(rel) = first else { return Ok(None) };
    let base = src.path.parent().unwrap_or(Path::new(""));
    let span = || {
        steps
            .iter()
            .find_map(|s| s.plan.as_ref().map(|(_, sp)| sp.clone()))
            .unwrap_or(0..0)
    };
    let full = confine(&base.join(rel))
        .map_err(|why| FileError::from(src.err(&span(), Some("plan"), why)))?;
    match PlanFile::load(&full) {
        Ok(p) => Ok(Some(p)),
        Err(FileError::Io { source, .. }) => {
            let span = span();
            Err(src
                .err(
                    &span,
                    Some("plan"),
                    format!("cannot read the plan {}: {source}", full.display()),
                )
                .into())
        }
        Err(e) => Err(e),
    }
}

/// A program (or a part of one: a step's `until`) written as JSON, as the TOML text the
/// program reader reads: the same keys and values (JSON has no dates; `null` is refused).
pub fn json_to_toml(v: &serde_json::Value) -> Result<String, String> {
    if !v.is_object() {
        return Err(
            "a program in JSON is an object such as {\"step\": [{\"action\": \"arm\"}]}".into(),
        );
    }
    fn no_null(v: &serde_json::Value) -> Result<(), String> {
        match v {
            serde_json::Value::Null => {
                Err("null is no value in a program: leave the key out".into())
            }
            serde_json::Value::Array(a) => a.iter().try_for_each(no_null),
            serde_json::Value::Object(o) => o.values().try_for_each(no_null),
            _ => Ok(()),
        }
    }
    no_null(v)?;
    toml::to_string(v).map_err(|e| format!("not a program: {e}"))
}

#[cfg(test)]
mod tests;
