//! The `--json` report: what was asked, what happened, and the verdict, for CI jobs and
//! scripts. Field names carry their units (`_s` sim or wall seconds as named, `_m` metres).
//!
//! The report's shape (`"format": 1`) is stable: fields are added, never renamed.

use super::driver::TextRecord;
use nexus_core::engine::{Reason, SnapshotAt, StepRecord, WaitResult};
use nexus_core::mission::MissionItem;
use nexus_core::telemetry::Snapshot;
use serde::Serialize;

/// Version of the report's shape.
pub const FORMAT: u32 = 1;

/// The whole report.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// [`FORMAT`].
    pub format: u32,
    /// `"fly"`, `"run"` or `"check"`.
    pub command: &'static str,
    /// The `.plan` or program file.
    pub file: String,
    /// The program's `name`, if it has one.
    pub name: Option<String>,
    /// What was flown.
    pub vehicle: VehicleReport,
    /// Whether the flight did what was asked (exit code 0).
    pub passed: bool,
    /// One sentence: what happened, or what failed and why.
    pub verdict: String,
    /// The exit code.
    pub exit_code: u8,
    /// Each program step that ran, in order.
    pub steps: Vec<StepReport>,
    /// Steps in the program (some may not have run).
    pub steps_total: usize,
    /// The mission, when one was uploaded.
    pub mission: Option<MissionReport>,
    /// Every STATUSTEXT the vehicle sent, in order.
    pub texts: Vec<TextReport>,
    /// Offboard events (refusals, requests given up, mission transfers) and notes.
    pub events: Vec<String>,
    /// Why the vehicle died, if it did.
    pub died: Option<String>,
    /// The vehicle at the end.
    #[serde(rename = "final")]
    pub final_state: Option<SnapshotReport>,
    /// Wall seconds the command flew (from the vehicle's first heartbeat to the program's end).
    pub wall_s: f64,
    /// Sim seconds the command flew, on the vehicle's clock, over the same span.
    pub sim_s: f64,
    /// The speed factor achieved: `sim_s / wall_s` (what `--speed max` ran at).
    pub achieved_speed: Option<f64>,
    /// UDP traffic from sources other than the vehicle: counted, never applied.
    pub ignored: IgnoredReport,
    /// Frames on the vehicle link, and in the `--tlog` when one was written.
    pub link: Option<super::evidence::LinkReport>,
    /// The requests sent, by kind, and the retries a lossy link made them take.
    pub requests: RequestsReport,
    /// `check`: what reading the recordings found (records, damaged records skipped whole,
    /// garbage); `null` for a flight.
    pub recording: Option<RecordingReport>,
    /// `--ulog`: what PX4's own log says about the facts behind the verdict, next to what the
    /// link said ([`super::witness`]); a disagreement beyond the stated tolerance fails the
    /// run. `null` without `--ulog`.
    pub second_witness: Option<super::witness::WitnessReport>,
}

/// What `check` read of its recordings.
#[derive(Debug, Clone, Default, Serialize)]
pub struct RecordingReport {
    /// Records read (each a checked frame), over all the files.
    pub records: u64,
    /// Records whose frame failed its checksum: skipped whole, never searched for frames.
    pub damaged_records: u64,
    /// Bytes that began no record (garbage between records, a cut end), skipped.
    pub garbage_bytes: u64,
    /// Each `--tlog`, in the order given.
    pub files: Vec<RecordingFileReport>,
}

/// One `--tlog` of a check.
#[derive(Debug, Clone, Serialize)]
pub struct RecordingFileReport {
    /// The path, as given.
    pub path: String,
    /// Its size, bytes.
    pub bytes: u64,
    /// Records read.
    pub records: u64,
    /// Damaged records skipped whole.
    pub damaged_records: u64,
    /// Bytes of garbage skipped.
    pub garbage_bytes: u64,
}

/// Requests sent to the vehicle (each count with its first send) and the retries they took.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct RequestsReport {
    /// COMMAND_LONG / COMMAND_INT frames sent.
    pub commands_sent: u64,
    /// PARAM_SET frames sent.
    pub param_sets_sent: u64,
    /// MISSION_COUNT frames sent (each upload's start, and its repeats).
    pub mission_counts_sent: u64,
    /// MISSION_ITEM_INT frames sent.
    pub mission_items_sent: u64,
    /// Items of the mission uploaded (0 without one).
    pub mission_items: u64,
    /// MISSION_ITEM_INT sent beyond one per item: the upload's retries.
    pub mission_item_retries: u64,
    /// MISSION_REQUEST_LIST / MISSION_REQUEST_INT frames sent (downloads).
    pub mission_requests_sent: u64,
    /// The link's smoothed round trip at the end, ms of the vehicle's clock (sim ms; at ×5 five
    /// times the wall round trip); `null` before a clean sample. The retry timers follow it.
    pub rtt_ms: Option<f64>,
    /// Its variation (RTTVAR), ms of the vehicle's clock.
    pub rttvar_ms: Option<f64>,
    /// Round-trip samples taken (answers to requests sent once).
    pub rtt_samples: u32,
    /// The re-command timer of modes, arms and restarts at the end, ms of the vehicle's clock.
    pub command_retry_ms: u64,
    /// The resend timer of mission-protocol requests at the end, ms of the vehicle's clock.
    pub mission_retry_ms: u64,
    /// The parameter reads' smoothed round trip, wall ms; `null` before a sample.
    pub param_rtt_wall_ms: Option<f64>,
}

impl RequestsReport {
    /// The report of what the link sent, for a mission of `items` items, and the round trip
    /// its retry timers followed.
    pub fn new(
        tx: &nexus_host::pump::TxRequests,
        items: u64,
        rtt: &nexus_host::pump::LinkRtt,
    ) -> RequestsReport {
        RequestsReport {
            rtt_ms: rtt.srtt_ms.map(f64::from),
            rttvar_ms: rtt.rttvar_ms.map(f64::from),
            rtt_samples: rtt.samples,
            command_retry_ms: rtt.command_retry_ms,
            mission_retry_ms: rtt.mission_retry_ms,
            param_rtt_wall_ms: rtt.param_srtt_wall.map(|d| d.as_secs_f64() * 1000.0),
            commands_sent: tx.commands,
            param_sets_sent: tx.param_sets,
            mission_counts_sent: tx.mission_counts,
            mission_items_sent: tx.mission_items,
            mission_items: items,
            mission_item_retries: tx.mission_items.saturating_sub(items),
            mission_requests_sent: tx.mission_requests,
        }
    }
}

impl Report {
    /// A report of a flight not yet flown: failed until the verdict says otherwise.
    pub fn new(
        command: &'static str,
        file: String,
        name: Option<String>,
        vehicle: VehicleReport,
        steps_total: usize,
    ) -> Report {
        Report {
            format: FORMAT,
            command,
            file,
            name,
            vehicle,
            passed: false,
            verdict: String::new(),
            exit_code: 1,
            steps: Vec::new(),
            steps_total,
            mission: None,
            texts: Vec::new(),
            events: Vec::new(),
            died: None,
            final_state: None,
            wall_s: 0.0,
            sim_s: 0.0,
            achieved_speed: None,
            ignored: IgnoredReport::default(),
            link: None,
            requests: RequestsReport::default(),
            recording: None,
            second_witness: None,
        }
    }
}

/// The vehicle flown.
#[derive(Debug, Clone, Serialize)]
pub struct VehicleReport {
    /// `"sim"` (built-in simulated PX4), `"px4"` (PX4 SITL) or `"attached"` (`--connect`: a
    /// vehicle nexus did not start).
    pub kind: &'static str,
    /// SITL instance N.
    pub instance: u8,
    /// PX4's system id (N + 1).
    pub system_id: u8,
    /// Speed factor asked for with `--speed`: a number, or `"max"`.
    pub speed: super::vehicle::Speed,
    /// `kind` `"attached"`: the `--connect` connection string (canonical form).
    pub connection: Option<String>,
    /// `kind` `"attached"`: the autopilot's component id.
    pub component_id: Option<u8>,
    /// Whether the vehicle identifies as a simulator (always for the ones nexus starts);
    /// `None`: it never said.
    pub simulator: Option<bool>,
    /// The airframe nexus started (`--model`: `"quad"`, `"hex"`, …); `None` for a vehicle it
    /// did not start.
    pub model: Option<&'static str>,
}

/// One step's outcome (the engine's WaitResult plus what the step was).
#[derive(Debug, Clone, Serialize)]
pub struct StepReport {
    /// 1-based.
    pub index: usize,
    /// The step's name, if it has one.
    pub name: Option<String>,
    /// The action as written (`"takeoff"`).
    pub action: String,
    /// The action in words.
    pub action_text: String,
    /// The wait in words.
    pub until: String,
    /// Whether the step passed.
    pub passed: bool,
    /// `met`, `timeout`, `died`, `aborted`, `guard`, `cap`, `closed`.
    pub reason: &'static str,
    /// `reason == "met"`.
    pub satisfied: bool,
    /// Sim seconds waited.
    pub waited_sim_s: f32,
    /// Wall seconds waited.
    pub waited_wall_s: f32,
    /// `settle` or `return`.
    pub snapshot_at: &'static str,
    /// Index of the guard that fired, with `guard`.
    pub guard: Option<u8>,
    /// The vehicle when the step settled.
    pub snapshot: SnapshotReport,
    /// Why a step that did not pass failed: what was pending and why it did not happen, in
    /// PX4's words where it gave any (`null` for a step that passed).
    pub explanation: Option<String>,
    /// A `param` step's answer from PX4: "PX4 stored NAME = value" once echoed, or its
    /// refusal ("PX4 refused COM_FOO = 3: DOES_NOT_EXIST"); `null` for other steps.
    pub param: Option<String>,
}

/// The engine's Snapshot of the vehicle.
#[derive(Debug, Clone, Serialize)]
pub struct SnapshotReport {
    /// Autopilot clock, s (`null` before it was known).
    pub t_sim_s: Option<f64>,
    /// Newest STATUSTEXT seq.
    pub seq: u32,
    /// Armed.
    pub armed: bool,
    /// Flight mode.
    pub mode: Option<String>,
    /// Height above the pad, m.
    pub height_m: Option<f32>,
    /// Where `height_m` came from: `ground_truth` (the simulator's true altitude since arming)
    /// or `amsl_since_arm` (GLOBAL_POSITION_INT.alt since arming); `null` without a height.
    pub height_source: Option<&'static str>,
    /// Airspeed, m/s.
    pub airspeed_m_s: Option<f32>,
    /// MISSION_CURRENT.seq.
    pub waypoint: Option<u16>,
    /// `ON_GROUND`, `IN_AIR`, `TAKING_OFF`, `LANDING`, `UNKNOWN`.
    pub landed_state: &'static str,
    /// The newest STATUSTEXT.
    pub last_text: Option<String>,
    /// Why the vehicle or link died, when it did.
    pub error: Option<String>,
}

impl From<&Snapshot> for SnapshotReport {
    fn from(s: &Snapshot) -> Self {
        SnapshotReport {
            t_sim_s: s.sim_ms.map(|ms| ms as f64 / 1000.0),
            seq: s.seq,
            armed: s.armed,
            mode: s.mode.map(|m| m.to_string()),
            height_m: s.height_m,
            height_source: s.height_source.map(|h| h.name()),
            airspeed_m_s: s.airspeed_m_s,
            waypoint: s.waypoint,
            landed_state: s.landed.name(),
            last_text: s.last_text.as_ref().map(|t| t.text.as_str().to_string()),
            error: s.error.as_ref().map(|e| e.as_str().to_string()),
        }
    }
}

/// `snapshot_at` as the wait engine's spec writes it.
pub fn snapshot_at_name(at: SnapshotAt) -> &'static str {
    match at {
        SnapshotAt::Settle => "settle",
        SnapshotAt::Return => "return",
    }
}

impl StepReport {
    /// A step's report from its record and its description.
    pub fn new(
        index: usize,
        name: Option<String>,
        action: &str,
        action_text: &str,
        until: &str,
        rec: &StepRecord,
    ) -> Self {
        let r: &WaitResult = &rec.result;
        StepReport {
            index: index + 1,
            name,
            action: action.to_string(),
            action_text: action_text.to_string(),
            until: until.to_string(),
            passed: rec.passed,
            reason: r.reason.name(),
            satisfied: r.satisfied,
            waited_sim_s: r.waited_sim_s,
            waited_wall_s: r.waited_wall.as_secs_f32(),
            snapshot_at: snapshot_at_name(r.snapshot_at),
            guard: if r.reason == Reason::Guard {
                r.guard
            } else {
                None
            },
            snapshot: SnapshotReport::from(&r.snapshot),
            explanation: None,
            param: None,
        }
    }
}

/// A STATUSTEXT.
#[derive(Debug, Clone, Serialize)]
pub struct TextReport {
    /// Sequence number, from 1.
    pub seq: u32,
    /// MAV_SEVERITY (0 emergency … 7 debug).
    pub severity: u8,
    /// Autopilot clock when it arrived, s.
    pub t_sim_s: Option<f64>,
    /// The text.
    pub text: String,
}

impl From<&TextRecord> for TextReport {
    fn from(t: &TextRecord) -> Self {
        TextReport {
            seq: t.seq,
            severity: t.severity,
            t_sim_s: t.sim_ms.map(|ms| ms as f64 / 1000.0),
            text: t.text.clone(),
        }
    }
}

/// The mission flown.
#[derive(Debug, Clone, Serialize)]
pub struct MissionReport {
    /// The `.plan` file.
    pub plan: String,
    /// The items, as uploaded.
    pub items: Vec<ItemReport>,
    /// PX4 accepted the upload.
    pub uploaded: bool,
    /// PX4's MISSION_ACK result for the upload (0 accepted).
    pub ack: Option<u8>,
    /// Item PX4 was flying to at the end (MISSION_CURRENT.seq).
    pub current: u16,
    /// Highest item PX4 reported reached.
    pub reached: Option<u16>,
    /// PX4 reported the mission's last reachable item reached in this run.
    pub complete: bool,
    /// When PX4 moved on to each item: the item and the autopilot clock, s.
    pub progress: Vec<ItemProgress>,
    /// The last item PX4 reports reached when it flies this plan (the first LAND, or the item
    /// before an RTL; `null`: none).
    pub last_reachable: Option<u16>,
    /// Items PX4 reported reached (never the plan's length).
    pub items_flown: usize,
}

/// One change of the current mission item.
#[derive(Debug, Clone, Copy, Serialize, PartialEq)]
pub struct ItemProgress {
    /// MISSION_CURRENT.seq.
    pub item: u16,
    /// Autopilot clock, s.
    pub t_sim_s: f64,
}

/// One mission item.
#[derive(Debug, Clone, Serialize)]
pub struct ItemReport {
    /// Position in the mission.
    pub seq: u16,
    /// MAV_CMD number.
    pub command: u16,
    /// MAV_CMD name (`NAV_WAYPOINT`, …) where known.
    pub command_name: &'static str,
    /// MAV_FRAME number.
    pub frame: u8,
    /// Latitude, degrees.
    pub lat_deg: f64,
    /// Longitude, degrees.
    pub lon_deg: f64,
    /// Altitude in the item's frame, m.
    pub alt_m: f32,
}

impl From<&MissionItem> for ItemReport {
    fn from(i: &MissionItem) -> Self {
        ItemReport {
            seq: i.seq,
            command: i.command,
            command_name: command_name(i.command),
            frame: i.frame,
            lat_deg: i.x as f64 / 1e7,
            lon_deg: i.y as f64 / 1e7,
            alt_m: i.z,
        }
    }
}

/// The name of the common MAV_CMDs a mission holds.
pub fn command_name(cmd: u16) -> &'static str {
    match cmd {
        16 => "NAV_WAYPOINT",
        17 => "NAV_LOITER_UNLIM",
        18 => "NAV_LOITER_TURNS",
        19 => "NAV_LOITER_TIME",
        20 => "NAV_RETURN_TO_LAUNCH",
        21 => "NAV_LAND",
        22 => "NAV_TAKEOFF",
        93 => "NAV_DELAY",
        112 => "CONDITION_DELAY",
        177 => "DO_JUMP",
        178 => "DO_CHANGE_SPEED",
        206 => "DO_SET_CAM_TRIGG_DIST",
        _ => "",
    }
}

/// What sources other than the vehicle sent on its UDP link (never applied to the verdict).
#[derive(Debug, Clone, Default, Serialize)]
pub struct IgnoredReport {
    /// Frames from all of them.
    pub frames: u64,
    /// Datagrams from all of them.
    pub datagrams: u64,
    /// The first sources (at most `FOREIGN_SOURCES`), in the order they first sent.
    pub sources: Vec<IgnoredSource>,
    /// Sources past those, added together.
    pub others: IgnoredCounts,
    /// One line per source, as printed ("ignored 4 frames from 127.0.0.1:53211 claiming
    /// system 1").
    pub lines: Vec<String>,
    /// A signed link's rejected frames by cause (`None`: the link does not sign).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signing: Option<SigningRejections>,
}

/// Frames a signed link did not apply, by cause (none of them changed a verdict).
#[derive(Debug, Clone, Default, Serialize)]
pub struct SigningRejections {
    /// All of them.
    pub rejected: u32,
    /// Unsigned, with `--require-signed`.
    pub unsigned: u32,
    /// Signed, not with the key.
    pub bad_signature: u32,
    /// A timestamp not above its stream's last (a replay).
    pub replay: u32,
    /// A new stream's timestamp more than a minute behind ours.
    pub stale: u32,
    /// A new stream when the stream table was full.
    pub streams_full: u32,
    /// Signed frames applied.
    pub signed: u32,
    /// Unsigned frames applied (signing not required).
    pub unsigned_accepted: u32,
}

impl IgnoredReport {
    /// Add a signed link's rejections (a line among `lines` when there are any).
    pub fn add_signing(&mut self, s: Option<&nexus_host::signing::SigningStats>) {
        let Some(s) = s else { return };
        if let Some(l) = nexus_host::signing::rejected_line(s) {
            self.lines.push(l);
        }
        self.signing = Some(SigningRejections {
            rejected: s.rejected(),
            unsigned: s.unsigned,
            bad_signature: s.bad_signature,
            replay: s.replay,
            stale: s.stale,
            streams_full: s.streams_full,
            signed: s.signed,
            unsigned_accepted: s.unsigned_accepted,
        });
    }
}

/// One ignored source.
#[derive(Debug, Clone, Serialize)]
pub struct IgnoredSource {
    /// `address:port`.
    pub from: String,
    /// What it sent.
    #[serde(flatten)]
    pub counts: IgnoredCounts,
}

/// What an ignored source sent.
#[derive(Debug, Clone, Default, Serialize)]
pub struct IgnoredCounts {
    /// Datagrams.
    pub datagrams: u64,
    /// MAVLink frames in them.
    pub frames: u64,
    /// Bytes.
    pub bytes: u64,
    /// The system ids the frames claimed.
    pub systems: Vec<u8>,
}

impl From<&nexus_host::transport::ForeignCounts> for IgnoredCounts {
    fn from(c: &nexus_host::transport::ForeignCounts) -> Self {
        IgnoredCounts {
            datagrams: c.datagrams,
            frames: c.frames,
            bytes: c.bytes,
            systems: c.systems.iter().collect(),
        }
    }
}

impl From<&nexus_host::transport::ForeignTraffic> for IgnoredReport {
    fn from(f: &nexus_host::transport::ForeignTraffic) -> Self {
        IgnoredReport {
            frames: f.frames(),
            datagrams: f.datagrams(),
            sources: f
                .sources
                .iter()
                .map(|s| IgnoredSource {
                    from: s.addr.to_string(),
                    counts: IgnoredCounts::from(&s.counts),
                })
                .collect(),
            others: IgnoredCounts::from(&f.others),
            lines: f.lines(),
            signing: None,
        }
    }
}
