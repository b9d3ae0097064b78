//! Launcher errors, each saying what to do about it.

use std::io;
use std::path::PathBuf;

use super::DeathCause;

/// Why a PX4 SITL instance could not be started, readied or closed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive] // more variants may come; match with a `_` arm
pub enum LaunchError {
    /// The build directory lacks `bin/px4` or `etc/`.
    #[error("no PX4 build at {}: expected {}/bin/px4 and {}/etc ({missing})", path.display(), path.display(), path.display())]
    NoBuild {
        /// The directory given.
        path: PathBuf,
        /// What is missing.
        missing: String,
    },
    /// No build directory passed and `NEXUS_PX4_BUILD` unset.
    #[error("no PX4 build given: pass the build directory (e.g. PX4-Autopilot/build/px4_sitl_default) or set NEXUS_PX4_BUILD")]
    NoBuildGiven,
    /// `bin/px4` exists but is not executable.
    #[error("{} is not executable (chmod +x it, or rebuild PX4)", path.display())]
    NotExecutable {
        /// The binary.
        path: PathBuf,
    },
    /// Instance 255 has no system id.
    #[error("PX4 instance {instance} is out of range (0-254: the system id is instance + 1)")]
    BadInstance {
        /// The instance asked for.
        instance: u8,
    },
    /// A speed factor that is not a positive finite number.
    #[error("speed factor {factor} must be a positive finite number")]
    BadSpeedFactor {
        /// The factor asked for.
        factor: f32,
    },
    /// A parameter name PX4 cannot have.
    #[error("parameter name '{name}' is not a PX4 name (1-16 characters of A-Z, 0-9, _)")]
    BadParamName {
        /// The name given.
        name: String,
    },
    /// A parameter value that is not a finite number.
    #[error("parameter {name} = {value} is not a finite number")]
    BadParamValue {
        /// The parameter.
        name: String,
        /// The value given.
        value: String,
    },
    /// PX4's offboard UDP port is taken before PX4 even started.
    #[error(
        "UDP port {port} is in use, and PX4 instance {instance} binds it for its offboard link: \
         is PX4 server already running for instance {instance} (or a simulated vehicle on that \
         port)? Stop it or use another instance ({source})"
    )]
    PortInUse {
        /// The instance asked for.
        instance: u8,
        /// The port, `14580 + instance`.
        port: u16,
        /// The bind error.
        source: io::Error,
    },
    /// The fresh working directory could not be created.
    #[error("cannot create a PX4 working directory under {}: {source}", parent.display())]
    Workdir {
        /// Where it was to be created.
        parent: PathBuf,
        /// The OS error.
        source: io::Error,
    },
    /// The console log could not be created.
    #[error("cannot create the PX4 console log {}: {source}", path.display())]
    LogFile {
        /// The log file.
        path: PathBuf,
        /// The OS error.
        source: io::Error,
    },
    /// The OS refused to start `bin/px4`.
    #[error("cannot start {}: {source}", program.display())]
    Spawn {
        /// The program.
        program: PathBuf,
        /// The OS error.
        source: io::Error,
    },
    /// PX4 died before it was ready.
    #[error("PX4 died before it was ready: {cause} (console log: {})", log.display())]
    Died {
        /// Why.
        cause: DeathCause,
        /// The console log to read.
        log: PathBuf,
    },
    /// PX4's startup script reported failure.
    #[error("PX4's startup script failed: {line} (console log: {})", log.display())]
    StartupFailed {
        /// PX4's line saying so.
        line: String,
        /// The console log to read.
        log: PathBuf,
    },
    /// No "Startup script returned successfully" within the timeout.
    #[error(
        "PX4 not ready within {timeout_s} s: no \"Startup script returned successfully\" in its \
         output (console log: {})", log.display()
    )]
    NotReady {
        /// The wall-time limit, in seconds.
        timeout_s: f32,
        /// The console log to read.
        log: PathBuf,
    },
    /// The process outlived SIGKILL (stuck in the kernel).
    #[error("PX4 (pid {pid}) did not die after SIGKILL")]
    Unkillable {
        /// Its pid.
        pid: u32,
    },
    /// The working directory could not be removed on close.
    #[error("cannot remove the PX4 working directory {}: {source}", path.display())]
    RemoveWorkdir {
        /// The directory.
        path: PathBuf,
        /// The OS error.
        source: io::Error,
    },
    /// PX4's ULog could not be kept ([`super::LaunchOptions::keep_ulog`]); the working
    /// directory is kept instead, so nothing PX4 wrote is lost.
    #[error(
        "PX4's log could not be kept as {}: {why}; its working directory is kept at {}",
        to.display(),
        workdir.display()
    )]
    Ulog {
        /// Where it was to be copied.
        to: PathBuf,
        /// Why not (no .ulg written, the copy failed).
        why: String,
        /// The working directory, kept.
        workdir: PathBuf,
    },
}
