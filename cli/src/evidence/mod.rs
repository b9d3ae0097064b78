//! Flight evidence beside the `--json` report: `--tlog` (every frame of the link, as
//! QGroundControl records it: [`nexus_host::tlog`]), `--report FILE.html` (the flight drawn:
//! [`html`]) and `--junit FILE.xml` (a testsuite per program, a testcase per step: [`junit`]).
//!
//! Every output is checked writable before anything flies ([`EvidenceArgs::check`]), and
//! distinct from the others and from the files the command reads
//! ([`super::output::distinct`]).

pub mod html;
pub mod junit;
pub mod ulog_plots;

use super::report::Report;
use nexus_core::telemetry::Snapshot;
use nexus_host::tlog::Tlog;
use serde::Serialize;
use std::path::{Path, PathBuf};

/// `--tlog`, `--report`, `--junit`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct EvidenceArgs {
    /// Record every MAVLink frame of the vehicle link, both directions, to FILE (QGroundControl's
    /// .tlog format: 8-byte big-endian µs since the epoch, then the frame).
    #[arg(long, value_name = "FILE")]
    pub tlog: Option<PathBuf>,
    /// Draw the flight into FILE.html: ground track, height against sim time with the steps,
    /// the mode / armed / landed timeline, PX4's texts, the verdict (one self-contained file).
    #[arg(long = "report", value_name = "FILE.html")]
    pub html: Option<PathBuf>,
    /// Write a JUnit XML file for CI: a testsuite per program, a testcase per step.
    #[arg(long, value_name = "FILE.xml")]
    pub junit: Option<PathBuf>,
    /// Keep the vehicle's own log of the flight as FILE (PX4's ULog: with `--px4`, the one PX4
    /// wrote, copied when it stops; on the built-in vehicle, its own log with PX4's topic
    /// names), and check the verdict's facts against it: the report's `second_witness`.
    #[arg(long, value_name = "FILE.ulg")]
    pub ulog: Option<PathBuf>,
}

impl EvidenceArgs {
    /// Check every output file writable, before anything flies.
    pub fn check(&self) -> Result<(), String> {
        for (what, p) in [
            ("--tlog", &self.tlog),
            ("--report", &self.html),
            ("--junit", &self.junit),
            ("--ulog", &self.ulog),
        ] {
            if let Some(p) = p {
                crate::limits::check_output(what, p)?;
            }
        }
        Ok(())
    }

    /// The files these options write, for [`super::output::distinct`].
    pub fn named(&self) -> Vec<super::output::Named<'_>> {
        [
            ("--tlog", &self.tlog),
            ("--report", &self.html),
            ("--junit", &self.junit),
            ("--ulog", &self.ulog),
        ]
        .into_iter()
        .filter_map(|(what, p)| p.as_deref().map(|p| super::output::Named::output(what, p)))
        .collect()
    }

    /// Open the tlog, if asked for.
    pub fn open_tlog(&self) -> Result<Option<Tlog>, String> {
        match &self.tlog {
            None => Ok(None),
            Some(p) => Tlog::create(p)
                .map(Some)
                .map_err(|e| format!("--tlog {}: {e}", p.display())),
        }
    }

    /// Write the HTML report and the JUnit file asked for.
    pub fn write(&self, report: &Report, trace: &[Sample]) -> Result<(), String> {
        if let Some(p) = &self.html {
            // With a second witness, PX4's log is drawn too: its height beside the link's, and
            // what only it has (ground truth, setpoints, battery).
            let ulog = report
                .second_witness
                .as_ref()
                .filter(|w| w.error.is_none())
                .and_then(|w| nexus_host::ulog::Ulog::open(&w.ulog).ok());
            write_file(p, &html::render_with_ulog(report, trace, ulog.as_ref()))?;
        }
        if let Some(p) = &self.junit {
            let v = serde_json::to_value(report).map_err(|e| e.to_string())?;
            write_file(p, &junit::render(&[v]))?;
        }
        Ok(())
    }
}

/// Write `text` to `path`, the error naming the file.
pub fn write_file(path: &Path, text: &str) -> Result<(), String> {
    std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// The vehicle at one moment of the flight, for the plots.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Sample {
    /// Autopilot clock, ms.
    pub sim_ms: u64,
    /// Latitude and longitude, degrees (`None` before a position).
    pub position_deg: Option<(f64, f64)>,
    /// Height above the pad, m.
    pub height_m: Option<f32>,
    /// Flight mode.
    pub mode: String,
    /// Armed.
    pub armed: bool,
    /// Landed state name.
    pub landed: &'static str,
}

impl Sample {
    /// The sample of a snapshot and a position.
    pub fn new(s: &Snapshot, position_deg: Option<(f64, f64)>) -> Sample {
        Sample {
            sim_ms: s.sim_ms.unwrap_or(0),
            position_deg,
            height_m: s.height_m,
            mode: s.mode.map_or_else(|| "—".to_string(), |m| m.to_string()),
            armed: s.armed,
            landed: s.landed.name(),
        }
    }
}

/// What the link carried, for the report (the tlog's counts match these).
#[derive(Debug, Clone, Default, Serialize)]
pub struct LinkReport {
    /// Frames received from the vehicle (valid checksum).
    pub rx_frames: u64,
    /// Frames sent to the vehicle.
    pub tx_frames: u64,
    /// The tlog written, if any.
    pub tlog: Option<String>,
    /// Frames the tlog holds from the vehicle.
    pub tlog_received: u64,
    /// Frames the tlog holds to the vehicle.
    pub tlog_sent: u64,
}

/// Close the flight's link (the recording ends with it), flush the tlog and count.
pub fn close_link(
    flight: &mut super::exec::Flight,
    tlog: Option<&Tlog>,
    path: Option<&Path>,
) -> Result<LinkReport, String> {
    match &flight.vehicle.client {
        Some(c) => c.close(),
        // Attached (`--connect`): no client of ours, the link alone.
        None => flight.vehicle.link.close(),
    }
    let c = flight.vehicle.link.status().counters;
    let mut r = LinkReport {
        rx_frames: c.frames,
        tx_frames: c.tx_frames,
        ..LinkReport::default()
    };
    if let Some(t) = tlog {
        t.flush()
            .map_err(|e| format!("--tlog: recording stopped: {e}"))?;
        let n = t.counts();
        r.tlog = path.map(|p| p.display().to_string());
        r.tlog_received = n.received;
        r.tlog_sent = n.sent;
    }
    Ok(r)
}
