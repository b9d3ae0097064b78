//! The `nexus` command's subcommands (the binary in `src/main.rs` only parses and
//! dispatches). The command line, its progress display and its reports live here, so the
//! libraries (nexus-host, nexus-sim) carry no clap, indicatif or toml:
//!
//! * [`fly`]: fly a QGroundControl `.plan` on the simulated vehicle or PX4 SITL, with progress
//!   and a verdict;
//! * [`run`]: run a flight program ([`program`]: TOML steps of action + `until` condition);
//! * [`watch`]: live telemetry of any MAVLink link;
//! * [`sim`]: run simulated PX4 vehicles ([`nexus_sim`]) on the network;
//! * [`bridge`]: forward MAVLink between two links ([`nexus_host::bridge`]);
//! * [`check`]: a flight program's conditions against a recorded flight (`.tlog`), no vehicle;
//! * [`run::multi`]: `run A B … --jobs N --partition K/N`, a set of programs in parallel.
//!
//! [`evidence`] writes `--tlog`, `--report` (HTML) and `--junit` beside the `--json` report.
//!
//! Shared pieces: [`airframe`] picks the airframe a flight flies (`--model`, a program's
//! `model`, a plan's `vehicleType`) and checks a program against it; [`vehicle`] starts the simulated vehicle or PX4 as a host run
//! ([`nexus_host::run::Run`]) and connects to it, [`guard`] judges what a program can make a
//! vehicle do (the `--real-vehicle` guard); [`exec`] flies a program on the run's link (the
//! host pump); [`driver`] is `watch`'s own small loop and [`replay`] `check`'s (both only
//! I/O around the core client); [`progress`] shows what happens,
//! [`report`] writes the `--json` report, [`diag`] words errors in the user's files as
//! `file:line:col`; [`limits`] bounds every input (speeds, durations, instances, files);
//! [`interrupt`] is what SIGINT, SIGTERM and SIGHUP do to a command.
//!
//! Exit codes: 0 the flight did what was asked; 1 it did not (a step timed out, a refusal, an
//! upload rejected, the vehicle died); 2 it could not start (bad file, no PX4 build, port in
//! use, bad arguments); 128 + the signal's number when interrupted (130 SIGINT, 143 SIGTERM,
//! 129 SIGHUP: [`interrupt`]).

pub mod airframe;
pub mod bridge;
pub mod check;
pub mod diag;
pub mod driver;
pub mod evidence;
pub mod exec;
pub mod fly;
pub mod guard;
pub mod interrupt;
pub mod limits;
pub mod outcome;
pub mod output;
pub mod program;
pub mod progress;
pub mod recording;
pub mod replay;
pub mod report;
pub mod run;
pub mod serve;
pub mod sign;
pub mod signing;
pub mod sim;
pub mod vehicle;
pub mod watch;
pub mod witness;

use std::process::ExitCode;

/// Most mission items a `.plan` may hold: what a host pump link holds.
pub const ITEMS: usize = nexus_host::pump::MISSION_ITEMS;

/// STATUSTEXTs `watch`'s client keeps between two looks (it copies every new one out).
pub const TEXTS: usize = 64;

/// Concurrent waits of `watch`'s client (it registers none).
pub const WAITS: usize = 1;

/// The core client `watch` drives.
pub type CliClient = nexus_core::Client<WAITS, TEXTS, ITEMS, { program::STEPS }>;

/// The flight did what was asked.
pub const EXIT_OK: u8 = 0;
/// The flight did not do what was asked.
pub const EXIT_FAILED: u8 = 1;
/// The flight could not start.
pub const EXIT_SETUP: u8 = 2;

/// Exit code from one of the constants above.
pub fn exit(code: u8) -> ExitCode {
    ExitCode::from(code)
}
