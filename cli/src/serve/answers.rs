//! The tools' answers: snapshots, wait results, texts and program reports as JSON, the words of
//! `nexus run` where it prints the same thing.

use nexus_core::engine::{SnapshotAt, WaitResult};
use nexus_core::mode::Mode;
use nexus_core::telemetry::{Snapshot, Text};
use nexus_host::pump::ProgramReport;
use nexus_host::session::Session;
use serde_json::{json, Value};

use super::records::Running;

pub(super) fn mode_json(m: Option<Mode>) -> Value {
    m.map_or(Value::Null, |m| Value::String(m.to_string()))
}

pub(super) fn text_json(t: &Text) -> Value {
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

pub(super) fn to_text(v: Value) -> String {
    serde_json::to_string_pretty(&v).unwrap_or_else(|_| v.to_string())
}

/// Each settled step of a program: passed, its label and wait in words, its WaitResult with
/// the explanation of a step that did not pass (what `nexus run` prints after it).
pub(super) fn steps_json(
    records: &[nexus_core::engine::StepRecord],
    program: &Running,
) -> Vec<Value> {
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

pub(super) fn program_json(report: &ProgramReport, program: &Running) -> Value {
    json!({
        "running": false,
        "passed": report.passed(),
        "end": format!("{:?}", report.end),
        "error": report.error,
        "steps": steps_json(&report.records, program),
    })
}

pub(super) fn verb_answer(s: &Session, what: &str) -> String {
    to_text(json!({
        "ok": true,
        "sent": what,
        "snapshot": s.snapshot().ok().as_ref().map(snapshot_json),
    }))
}
