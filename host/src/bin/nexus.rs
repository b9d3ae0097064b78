//! The `nexus` command.
//!
//! Subcommands live with their subsystems (`nexus_host::sim::cli` for `sim`); this file only
//! declares the command line and dispatches.

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// Command PX4 autopilots over MAVLink and wait, precisely, for what the vehicle does.
#[derive(Debug, Parser)]
#[command(name = "nexus", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run simulated PX4 vehicles (SITL-compatible UDP ports) until interrupted.
    Sim(nexus_host::sim::cli::SimArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Sim(args) => nexus_host::sim::cli::run(&args),
    }
}
