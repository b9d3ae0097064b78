//! What `fly` and `run` do around their flight, written once: start the vehicle (a signal cuts
//! the start short), fill the report from the flight, and end with the verdict line, the
//! `--json` report and the evidence files.

use super::evidence::{EvidenceArgs, Sample};
use super::exec::{Flight, StepMeta};
use super::output::Out;
use super::program::PlanFile;
use super::report::{IgnoredReport, Report};
use super::vehicle::{start_interruptible, StartError, VehicleArgs};
use super::{exit, EXIT_FAILED, EXIT_OK, EXIT_SETUP};
use nexus_core::escape::Escaped;
use nexus_host::tlog::Tlog;
use std::process::ExitCode;

/// One `fly` or `run` command: its name for error lines, its output and its evidence.
pub struct Invocation<'a> {
    /// "nexus fly", "nexus run".
    pub name: &'static str,
    /// Where lines and the JSON report go.
    pub out: &'a Out,
    /// `--tlog`, `--report`, `--junit`.
    pub evidence: &'a EvidenceArgs,
}

impl Invocation<'_> {
    /// Start the vehicle and a flight on it (`items` mission items for the display; see
    /// [`Flight::new`] for `abort_on_give_up`), with the vehicle in `report`. `moves`: what the
    /// flight can do to the vehicle that needs `--real-vehicle` on one that is not a simulator
    /// ([`super::guard`]), in words. A start that
    /// fails ends the command here: the exit code (2 for a setup error, else the verdict).
    ///
    /// A signal from the start on ends the command in order, with its report: while the
    /// vehicle starts, that start is cut short (nothing flew); afterwards the flight ends
    /// `aborted`. The returned guard keeps that so while it lives.
    pub fn start(
        &self,
        vehicle: &VehicleArgs,
        moves: Option<String>,
        tlog: Option<Tlog>,
        report: &mut Report,
        items: usize,
        abort_on_give_up: bool,
    ) -> Result<(Flight, crate::interrupt::Handling), ExitCode> {
        let interrupts = crate::interrupt::handle();
        let connected = match start_interruptible(vehicle, moves, tlog, self.evidence.ulog.clone())
        {
            Ok(v) => v,
            Err(StartError::Setup(e)) => {
                eprintln!("{}: {}", self.name, Escaped(&e));
                return Err(exit(EXIT_SETUP));
            }
            Err(e) => {
                if let StartError::Died(why) = &e {
                    report.died = Some(Escaped(why).to_string());
                }
                return Err(self.finish(report.clone(), Err(e.message().to_string()), None));
            }
        };
        self.out.line(&connected.banner());
        report.vehicle = connected.report(vehicle);
        let notes = connected.notes();
        let mut flight = Flight::new(connected, self.out, items, abort_on_give_up);
        flight.log.events.extend(notes);
        Ok((flight, interrupts))
    }

    /// Fill `report` from the ended flight (`plan` the one it flew, if any) and close its
    /// link (the `--tlog` and the link's figures).
    pub fn fill(
        &self,
        report: &mut Report,
        flight: &mut Flight,
        meta: &[StepMeta],
        plan: Option<&PlanFile>,
        tlog: Option<&Tlog>,
    ) {
        report.steps = flight.log.step_reports(meta);
        report.mission = plan.map(|p| flight.log.mission_report(p));
        report.texts = flight.log.text_reports();
        report.events = flight.log.events.clone();
        report.died = flight.log.died();
        report.final_state = Some(flight.final_snapshot());
        flight.log.fill_times(report);
        report.ignored = IgnoredReport::from(&flight.summarize_ignored());
        if let (Some(path), true) = (&self.evidence.ulog, flight.vehicle.attached.is_some()) {
            let fetched = self.fetch_ulog(path, &flight.vehicle.link);
            if let Some(a) = &mut flight.vehicle.attached {
                a.fetched_ulog = Some(fetched);
            }
        }
        let items = plan.map_or(0, |p| p.plan.items.len());
        let link_status = flight.vehicle.link.status();
        report
            .ignored
            .add_signing(link_status.counters.signing.as_ref());
        report.requests = super::report::RequestsReport::new(
            &link_status.counters.tx_requests,
            items as u64,
            &link_status.rtt,
        );
        match super::evidence::close_link(flight, tlog, self.evidence.tlog.as_deref()) {
            Ok(l) => report.link = Some(l),
            Err(e) => report.events.push(e),
        }
    }

    /// `--ulog` on an attached vehicle: its newest log fetched over MAVLink into `path`, once
    /// the vehicle has disarmed (PX4 closes its log then); a vehicle still armed is not asked.
    fn fetch_ulog(
        &self,
        path: &std::path::Path,
        link: &nexus_host::pump::LinkHandle,
    ) -> Result<nexus_host::ulog::fetch::Fetched, String> {
        if let Some(c) = crate::interrupt::caught() {
            return Err(format!(
                "the vehicle's log was not fetched: the run was {}",
                c.reason()
            ));
        }
        if link.with_status(|s| s.armed) {
            return Err(
                "the vehicle was still armed when the program ended: PX4 closes its log at the \
                 disarm, so it was not fetched (end the program with a `disarmed` step)"
                    .into(),
            );
        }
        self.out.line(&format!(
            "fetching the vehicle's log over MAVLink (LOG_REQUEST_LIST, LOG_REQUEST_DATA) into {}",
            path.display()
        ));
        // A signal during the fetch ends it with "… was interrupted by SIGINT".
        let opts = nexus_host::ulog::fetch::FetchOptions::default()
            .cancel_when(|| crate::interrupt::caught().map(|c| c.reason()));
        match nexus_host::ulog::fetch::fetch_newest(link, path, &opts) {
            Ok(f) => {
                self.out.line(&format!(
                    "fetched log {} of {}: {} bytes in {:.1} s ({} requests, {} re-requests)",
                    f.entry.id,
                    f.listed,
                    f.entry.size_bytes,
                    f.download_wall.as_secs_f64(),
                    f.stats.data_requests,
                    f.stats.re_requests
                ));
                Ok(f)
            }
            Err(e) => Err(format!("the vehicle's log could not be fetched: {e}")),
        }
    }

    /// Say the verdict of `outcome` (with the vehicle's last console lines when it died),
    /// write the reports, and the exit code: 0 passed, 1 failed, 128 + the signal when
    /// interrupted, 2 when a report could not be written.
    pub fn finish(
        &self,
        mut report: Report,
        outcome: Result<String, String>,
        flight: Option<&Flight>,
    ) -> ExitCode {
        // `--ulog`: the vehicle stops (PX4 closes its log, the launcher keeps it), then the
        // log is read and compared with the link; a disagreement fails a run that passed.
        let mut outcome = outcome;
        if let (Some(path), Some(f)) = (&self.evidence.ulog, flight) {
            let link = || {
                super::witness::LinkFacts::of(
                    &f.log.trace,
                    report.mission.is_some().then(|| f.log.mission_complete()),
                )
            };
            let w = match &f.vehicle.attached {
                // Attached: the log fetched over MAVLink before the link closed.
                Some(a) => match &a.fetched_ulog {
                    Some(Ok(got)) => {
                        let mut w = super::witness::witness(path, &link());
                        w.transfer = Some(got.into());
                        w
                    }
                    Some(Err(e)) => super::witness::failed(path, e.clone()),
                    None => super::witness::failed(
                        path,
                        "the flight ended before the vehicle's log could be fetched".into(),
                    ),
                },
                None => match f.vehicle.sim.close_checked() {
                    Err(e) => super::witness::failed(path, e.to_string()),
                    Ok(()) => super::witness::witness(path, &link()),
                },
            };
            self.out.line(&super::witness::summary(&w));
            if let (Ok(_), Some(why)) = (&outcome, super::witness::failure(&w)) {
                outcome = Err(why);
            }
            report.second_witness = Some(w);
        }
        // The verdict line is nexus's alone: whatever vehicle words it quotes are escaped, on
        // the terminal and in the report.
        let (code, verdict) = match outcome {
            Ok(v) => (EXIT_OK, format!("PASS: {}", Escaped(&v))),
            // Interrupted: the shell's 128 + signal number (130 SIGINT, 143 SIGTERM, 129 SIGHUP).
            Err(e) => (
                crate::interrupt::caught().map_or(EXIT_FAILED, |c| c.exit_code()),
                format!("FAIL: {}", Escaped(&e)),
            ),
        };
        if code != EXIT_OK && report.died.is_some() {
            let tail = flight.map_or_else(Vec::new, |f| f.console_tail(8));
            if !tail.is_empty() {
                self.out.line("vehicle console (last lines):");
                for l in tail {
                    self.out.line(&format!("  {l}"));
                }
            }
        }
        self.out.line(&verdict);
        report.passed = code == EXIT_OK;
        report.verdict = verdict;
        report.exit_code = code;
        let trace: &[Sample] = flight.map_or(&[], |f| &f.log.trace);
        if let Err(e) = self
            .out
            .write_json(&report)
            .and_then(|()| self.evidence.write(&report, trace))
        {
            eprintln!("{}: {e}", self.name);
            return exit(EXIT_SETUP);
        }
        exit(code)
    }
}
