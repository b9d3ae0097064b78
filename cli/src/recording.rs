//! Recorded flights read back: the `.tlog` files of one flight merged by time and streamed
//! record by record (`Recordings`), the client that replays them (`replay_client`), and
//! what a replay draws and lists (`Tracer`, `mission_report`). `nexus check` and the MCP
//! server's recordings both replay through these.
//!
//! Each file is read record by record ([`TlogReader`]: a 64 KiB buffer each) and the files
//! are merged as they are read (the earliest next record of any file goes first; a file's own
//! records in its order), so memory does not grow with the recordings' size.

use crate::evidence::Sample;
use crate::replay::frame_of;
use crate::report::TextReport;
use nexus_core::client::ClientConfig;
use nexus_core::ground_truth::GroundTruth;
use nexus_core::msg::Frame;
use nexus_core::telemetry::LinkIds;
use nexus_core::Client;
use nexus_host::offboard_client::{OffboardOptions, OWN_COMPONENT_ID, OWN_SYSTEM_ID};
use nexus_host::tlog::{ReadStats, TlogFrame, TlogReader};
use std::path::PathBuf;

/// The client a replay runs: the host link's capacities.
pub(crate) type ReplayClient = Client<
    { nexus_host::pump::WAITS },
    { nexus_host::pump::TEXTS },
    { nexus_host::pump::MISSION_ITEMS },
    { nexus_host::pump::STEPS },
>;

/// Most `--tlog` files one replay reads (the links of one flight: two or three).
pub const MAX_TLOGS: usize = 16;

/// Most bytes all `--tlog` files of one check may hold together (256 MiB: hours of PX4
/// telemetry). The files are streamed, so this bounds the time a check takes, not its memory.
pub const MAX_TLOG_TOTAL_BYTES: u64 = nexus_host::tlog::MAX_TLOG_BYTES;

/// Sim time between two samples of the `--report` drawing, ms (the live run samples at
/// 20 Hz of wall time): a long recording's drawing stays small.
const TRACE_STEP_MS: u64 = 50;

/// One `--tlog` being read.
pub(crate) struct Input {
    /// Its path, as given.
    path: PathBuf,
    /// Its size when opened, bytes.
    bytes: u64,
    reader: TlogReader<std::io::Take<std::fs::File>>,
    /// Its next record, read ahead for the merge.
    head: Option<TlogFrame>,
}

/// The `--tlog` files, read record by record and merged by time.
pub(crate) struct Recordings {
    files: Vec<Input>,
}

impl Recordings {
    /// Open every file (at most [`MAX_TLOGS`], [`MAX_TLOG_TOTAL_BYTES`] together), each checked
    /// as an input file.
    pub(crate) fn open(paths: &[PathBuf]) -> Result<Recordings, String> {
        if paths.len() > MAX_TLOGS {
            return Err(format!(
                "{} --tlog files: at most {MAX_TLOGS} are read (the links of one flight)",
                paths.len()
            ));
        }
        let mut files = Vec::new();
        let mut total = 0u64;
        for p in paths {
            let (reader, len) = TlogReader::open(p)
                .map_err(|e| format!("{}: cannot read the tlog: {e}", p.display()))?;
            total += len;
            if total > MAX_TLOG_TOTAL_BYTES {
                return Err(format!(
                    "the --tlog files hold more than {MAX_TLOG_TOTAL_BYTES} bytes together \
                     ({} MiB, the limit of one check) at {}",
                    MAX_TLOG_TOTAL_BYTES >> 20,
                    p.display()
                ));
            }
            files.push(Input {
                path: p.clone(),
                bytes: len,
                reader,
                head: None,
            });
        }
        let mut r = Recordings { files };
        for k in 0..r.files.len() {
            r.refill(k)?;
            if r.files[k].head.is_none() {
                return Err(format!(
                    "{}: no MAVLink frame in the tlog",
                    r.files[k].path.display()
                ));
            }
        }
        Ok(r)
    }

    fn refill(&mut self, k: usize) -> Result<(), String> {
        let f = &mut self.files[k];
        f.head = f
            .reader
            .next_record()
            .map_err(|e| format!("{}: cannot read the tlog: {e}", f.path.display()))?;
        Ok(())
    }

    /// The next record of all the files: the earliest of their next records (the first file's
    /// on a tie).
    fn next_record(&mut self) -> Result<Option<TlogFrame>, String> {
        let next = self
            .files
            .iter()
            .enumerate()
            .filter_map(|(k, f)| f.head.as_ref().map(|r| (r.epoch_us, k)))
            .min();
        let Some((_, k)) = next else {
            return Ok(None);
        };
        let rec = self.files[k].head.take();
        self.refill(k)?;
        Ok(rec)
    }

    /// The next frame the core decodes, with its record's timestamp.
    pub(crate) fn next_frame(&mut self) -> Result<Option<(u64, Frame)>, String> {
        while let Some(rec) = self.next_record()? {
            if let Some(f) = frame_of(&rec) {
                return Ok(Some((rec.epoch_us, f)));
            }
        }
        Ok(None)
    }

    /// Read the rest of every file (counting what it holds), and say what was read.
    pub(crate) fn finish(mut self) -> Result<crate::report::RecordingReport, String> {
        while self.next_record()?.is_some() {}
        let mut all = ReadStats::default();
        let files = self
            .files
            .iter()
            .map(|f| {
                let st = f.reader.stats();
                all.add(&st);
                crate::report::RecordingFileReport {
                    path: f.path.display().to_string(),
                    bytes: f.bytes,
                    records: st.records,
                    damaged_records: st.damaged,
                    garbage_bytes: st.garbage_bytes,
                }
            })
            .collect();
        Ok(crate::report::RecordingReport {
            records: all.records,
            damaged_records: all.damaged,
            garbage_bytes: all.garbage_bytes,
            files,
        })
    }
}

/// The client that replays a recording of system `target`'s link (it sends nothing).
pub(crate) fn replay_client(target: u8) -> Box<ReplayClient> {
    let config = ClientConfig {
        ids: LinkIds {
            target_sysid: target,
            own_sysid: OWN_SYSTEM_ID,
            own_compid: OWN_COMPONENT_ID,
        },
        // Nothing is sent: ground truth counts when the recording holds it.
        ground_truth: GroundTruth::Never,
        // A recording's wall-clock gaps are not judged: a lockstep run's vehicle is silent
        // between its steps, and a check sees only what was recorded.
        stall: None,
        ..OffboardOptions::default().client_config()
    };
    Box::new(Client::new(config))
}

/// What a replay draws and lists: the vehicle's texts, its samples for the HTML report, the
/// mission items as they became current. Fed after every frame the client handled.
#[derive(Debug, Default)]
pub(crate) struct Tracer {
    /// The vehicle's texts.
    pub texts: Vec<TextReport>,
    /// The flight drawn in the HTML report.
    pub trace: Vec<Sample>,
    /// The mission items as they became current.
    pub progress: Vec<crate::report::ItemProgress>,
}

impl Tracer {
    /// Take what `client` shows after a frame: new texts, a sample when one is due, and (once
    /// the program `started`) a change of the current mission item.
    pub(crate) fn look(&mut self, client: &ReplayClient, started: bool) {
        let cur = client.offboard().mission_current();
        let known = (cur as usize) < client.offboard().mission_count().max(1);
        if started && known && self.progress.last().is_none_or(|p| p.item != cur) {
            if let Some(ms) = client.telemetry().sim_ms() {
                self.progress.push(crate::report::ItemProgress {
                    item: cur,
                    t_sim_s: ms as f64 / 1000.0,
                });
            }
        }
        let tel = client.telemetry();
        let have = self.texts.last().map_or(0, |t| t.seq);
        for t in tel.texts().after(have) {
            self.texts.push(TextReport {
                seq: t.seq,
                severity: t.severity,
                t_sim_s: t.sim_ms.map(|ms| ms as f64 / 1000.0),
                text: t.text.as_str().to_string(),
            });
        }
        let s = client.snapshot();
        // One sample per TRACE_STEP_MS of sim time, and at every arm or disarm, landed state
        // and mode change (what the second witness compares: the step that waits for one
        // may end the program at once).
        let due = |l: &Sample| {
            s.sim_ms
                .is_some_and(|ms| ms < l.sim_ms || ms >= l.sim_ms + TRACE_STEP_MS)
                || l.armed != s.armed
                || l.landed != s.landed.name()
                || s.mode.is_some_and(|m| l.mode != m.to_string())
        };
        if s.sim_ms.is_some() && self.trace.last().is_none_or(due) {
            let pos = tel
                .global_position()
                .map(|p| (p.lat as f64 / 1e7, p.lon as f64 / 1e7));
            self.trace.push(Sample::new(&s, pos));
        }
    }
}

/// The mission as the replayed `client` saw it flown: `plan` names the `.plan`, `items` are
/// the ones uploaded, `progress` when each became current.
pub(crate) fn mission_report(
    plan: String,
    items: &[nexus_core::mission::MissionItem],
    client: &ReplayClient,
    progress: Vec<crate::report::ItemProgress>,
) -> crate::report::MissionReport {
    let ob = client.offboard();
    crate::report::MissionReport {
        plan,
        items: items.iter().map(crate::report::ItemReport::from).collect(),
        uploaded: ob.mission_uploaded(),
        ack: ob.mission_ack(),
        current: ob.mission_current(),
        reached: ob.mission_reached(),
        complete: ob.mission_complete(),
        progress,
        last_reachable: nexus_core::mission::last_reachable(items),
        items_flown: ob.mission_reached().map_or(0, |r| r as usize + 1),
    }
}
