//! The errors of the run ([`crate::run::Run`]), the [`crate::offboard_client::OffboardClient`]
//! and the [`crate::session::Session`] service. Each message names the cause and, where there
//! is one, what to do about it.

use std::path::PathBuf;

use nexus_core::engine::WaitResult;
use nexus_core::offboard::OffboardError;

use crate::launcher::{DeathCause, LaunchError};
use crate::pump::{ParamError, PumpError, WaitError};
use crate::sim::SimError;
use crate::transport::ConnStringError;

/// Why a run (a [`crate::run::Run`]) could not do something.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive] // more causes will come; match with a `_` arm
pub enum RunError {
    /// `start()` has not been called.
    #[error("the run has not started: call start() first")]
    NotStarted,
    /// `start()` was called twice.
    #[error("the run has already started")]
    AlreadyStarted,
    /// The run was closed.
    #[error("the run is closed")]
    Closed,
    /// The run has no offboard link, and why.
    #[error("the run has no offboard link: {why}")]
    NoOffboardLink {
        /// Why not (e.g. the run has no PX4).
        why: String,
    },
    /// `ports().get(name)` for a link the run does not have.
    #[error("the run has no link named {name:?}; it has: {have}")]
    NoSuchLink {
        /// The name asked for.
        name: String,
        /// The links it has.
        have: String,
    },
    /// A condition wait needs the run's offboard link, and no client is connected to it.
    #[error(
        "no client is connected to the run's offboard link: OffboardClient::connect(&sim, …) first"
    )]
    NoClient,
    /// The condition did not hold within the sim timeout.
    #[error(
        "not met within {timeout_s} s of sim time ({:.1} s of wall time)",
        .waited_wall.as_secs_f64()
    )]
    Timeout {
        /// The sim timeout, s.
        timeout_s: f64,
        /// Wall time spent.
        waited_wall: std::time::Duration,
    },
    /// The run lost its vehicle (exit, PANIC, link silent, clock stalled).
    #[error("the run lost its vehicle: {cause}")]
    Died {
        /// What happened (its text is what every wait's `snapshot.error` carries).
        cause: DeathCause,
    },
    /// A condition wait ended otherwise than met, timeout or died (closed, a cap, a guard).
    #[error("the wait ended {}", .0.reason.name())]
    Ended(Box<WaitResult>),
    /// The vehicle's speed cannot be changed (PX4: fixed at launch; lockstep: stepped).
    #[error("{0}")]
    Speed(String),
    /// A sim timeout that is not a finite, non-negative number.
    #[error("sim timeout must be a finite, non-negative number of seconds, got {0}")]
    BadTimeout(f64),
    /// The operation needs the built-in simulated vehicle.
    #[error("{what} needs the built-in simulated vehicle; this run's vehicle is {vehicle}")]
    NotSimulated {
        /// The operation.
        what: &'static str,
        /// The run's vehicle.
        vehicle: &'static str,
    },
    /// The simulated vehicle refused.
    #[error(transparent)]
    Sim(#[from] SimError),
    /// PX4 SITL could not be started.
    #[error(transparent)]
    Launch(#[from] LaunchError),
    /// The pump failed.
    #[error(transparent)]
    Pump(#[from] PumpError),
    /// A wait could not be registered.
    #[error(transparent)]
    Wait(#[from] WaitError),
}

/// Why an [`crate::offboard_client::OffboardClient`] call failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive] // more causes will come; match with a `_` arm
pub enum OffboardClientError {
    /// The connection string does not parse.
    #[error(transparent)]
    Conn(#[from] ConnStringError),
    /// The client is not open.
    #[error("the offboard client is not open: call open() (or OffboardClient::connect) first")]
    NotOpen,
    /// The pump or the link failed.
    #[error(transparent)]
    Pump(#[from] PumpError),
    /// `set_mode` with a name PX4's table does not know.
    #[error("unknown mode {name:?}; known: {known}")]
    UnknownMode {
        /// The name given.
        name: String,
        /// The names PX4's table knows.
        known: String,
    },
    /// The offboard machine refused the verb (bad argument, no position yet, queue full, …).
    #[error("{0}")]
    Verb(OffboardError),
    /// A `.plan` could not be read.
    #[error("{}: {message}", path.display())]
    Plan {
        /// The file.
        path: PathBuf,
        /// What is wrong, with the line and column.
        message: String,
    },
    /// A parameter read failed.
    #[error(transparent)]
    Param(#[from] ParamError),
}

impl From<OffboardError> for OffboardClientError {
    fn from(e: OffboardError) -> Self {
        OffboardClientError::Verb(e)
    }
}

/// Why [`crate::offboard_client::OffboardClient::connect`] failed. The client is closed first.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive] // more causes will come; match with a `_` arm
pub enum ConnectError {
    /// The run has no offboard link (the message says why).
    #[error("the run has no offboard link: {why}")]
    NoOffboardLink {
        /// Why not.
        why: String,
    },
    /// PX4 did not answer within the timeout.
    #[error(
        "no PX4 heartbeat on the offboard link, UDP port {port}, within {timeout_s}s of sim time"
    )]
    NoHeartbeat {
        /// The UDP port listened on.
        port: u16,
        /// The sim timeout, s.
        timeout_s: f64,
    },
    /// The run lost its vehicle while waiting for the heartbeat.
    #[error("the run lost PX4 while waiting for its heartbeat on UDP port {port}: {cause}")]
    LostPeer {
        /// The UDP port listened on.
        port: u16,
        /// What happened.
        cause: DeathCause,
    },
    /// The client could not be opened.
    #[error(transparent)]
    Client(#[from] OffboardClientError),
    /// The run could not be asked.
    #[error(transparent)]
    Run(RunError),
}

impl From<RunError> for ConnectError {
    fn from(e: RunError) -> Self {
        match e {
            RunError::NoOffboardLink { why } => ConnectError::NoOffboardLink { why },
            other => ConnectError::Run(other),
        }
    }
}

/// Why a [`crate::session::Session`] call failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive] // more causes will come; match with a `_` arm
pub enum SessionError {
    /// The session was closed (close_sitl, kill_instance, the idle reaper).
    #[error("the session is closed ({0})")]
    Closed(String),
    /// No session runs that instance.
    #[error("no session runs instance {0}")]
    NoSuchInstance(u8),
    /// The run failed.
    #[error(transparent)]
    Run(RunError),
    /// Connecting to the run's vehicle failed.
    #[error(transparent)]
    Connect(#[from] ConnectError),
    /// A wait or program could not be started (an invalid spec, every slot in use, …).
    #[error(transparent)]
    Wait(#[from] WaitError),
}

impl From<RunError> for SessionError {
    fn from(e: RunError) -> Self {
        match e {
            RunError::Wait(w) => SessionError::Wait(w),
            other => SessionError::Run(other),
        }
    }
}
