//! The `nexus` command.
//!
//! Subcommands live in the nexus-cli library (`nexus_cli::fly`, `run`, `watch`, `sim`,
//! `bridge`); this file only declares the command line and dispatches.

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// Command PX4 autopilots over MAVLink and wait, precisely, for what the vehicle does.
///
/// Exit codes: 0 the flight did what was asked; 1 it did not (the reason is printed);
/// 2 it could not start (bad file, no PX4 build, port in use, bad arguments); 130 / 143 / 129
/// interrupted by SIGINT / SIGTERM / SIGHUP (the report is written).
#[derive(Debug, Parser)]
#[command(name = "nexus", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Fly a QGroundControl .plan on the simulated vehicle (or PX4 SITL) and report.
    Fly(nexus_cli::fly::FlyArgs),
    /// Run a flight program (TOML steps: action, until, timeout_s, on_timeout) and report.
    Run(nexus_cli::run::RunArgs),
    /// Check a flight program against a recorded flight (.tlog): no vehicle, actions shown.
    Check(nexus_cli::check::CheckArgs),
    /// Show live telemetry from a MAVLink link (mode, armed, altitude, position, texts).
    Watch(nexus_cli::watch::WatchArgs),
    /// Run simulated PX4 vehicles (SITL-compatible UDP ports) until interrupted.
    Sim(nexus_cli::sim::SimArgs),
    /// Forward MAVLink between two links (a serial or TCP byte stream and UDP) until interrupted.
    Bridge(nexus_cli::bridge::BridgeArgs),
    /// MAVLink 2 signing: install a key on a vehicle (`sign setup CONN --signing-key FILE`).
    Sign(nexus_cli::sign::SignArgs),
    /// Serve sessions over MCP (stdio, or streamable HTTP with --http): waits, verbs, programs.
    Serve(nexus_cli::serve::ServeArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    // SIGINT, SIGTERM and SIGHUP end every command cleanly (see nexus_cli::interrupt); if
    // they cannot be taken, they keep their default action.
    if let Err(e) = nexus_cli::interrupt::install() {
        eprintln!("nexus: interrupts keep their default action: {e}");
    }
    match cli.command {
        Command::Fly(args) => nexus_cli::fly::main(&args),
        Command::Run(args) => nexus_cli::run::main(&args),
        Command::Check(args) => nexus_cli::check::main(&args),
        Command::Watch(args) => nexus_cli::watch::main(&args),
        Command::Sim(args) => nexus_cli::sim::run(&args),
        Command::Bridge(args) => nexus_cli::bridge::run(&args),
        Command::Sign(args) => nexus_cli::sign::main(&args),
        Command::Serve(args) => nexus_cli::serve::main(&args),
    }
}
