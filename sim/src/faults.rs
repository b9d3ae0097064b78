//! Failures a test can inject, each shown to a client the way the real failure would be.
//!
//! * [`Fault::Exit`]: PX4 exits. The console prints "Exiting NOW.", the vehicle stops, the
//!   server closes its socket and the handle reports the exit status. A client sees the link go
//!   silent (and, on loopback, ICMP "port unreachable" for anything it sends).
//! * [`Fault::Panic`]: PX4 panics. The console prints `PANIC [<module>] <message>`, then the
//!   process aborts: exit status signal 6 (SIGABRT). On the wire: silence, like an exit.
//! * [`Fault::StallClock`]: the lockstep simulation hangs. Sim time freezes: physics, estimator
//!   and commander stop (commands are queued, not acknowledged, up to uORB's 8), while the
//!   mavlink module keeps emitting its streams at the driver's pace with frozen contents and a
//!   frozen `time_boot_ms`; parameters and the mission protocol still answer. A client that
//!   watches heartbeats alone sees a live vehicle; one that watches the autopilot clock sees it
//!   stall. Clearing the fault resumes time where it stopped.
//! * [`Fault::Silence`]: no byte leaves the vehicle (a dead link); it still runs and receives.
//! * [`Fault::Garbage`]: bursts of 1–16 random bytes (biased toward MAVLink start bytes, so a
//!   decoder meets false frame starts) precede about one frame in eight, inside the datagrams;
//!   the valid frames are intact. A resynchronising decoder loses nothing; a parser that skips
//!   a whole false frame (pymavlink) loses the frames it swallows, as on a noisy link.
//! * [`Fault::RefuseArming`]: the prearm checks fail (SYS_STATUS prearm bit off, heartbeat
//!   system_status UNINIT) and every arming attempt is refused with COMMAND_ACK
//!   TEMPORARILY_REJECTED and the given text as a CRITICAL STATUSTEXT.

/// A failure to inject into a running vehicle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fault {
    /// The process exits with `code`.
    Exit {
        /// Exit status code.
        code: i32,
    },
    /// The process panics with `message` (printed as `PANIC [module] message`) and aborts.
    Panic {
        /// Module name printed in the PANIC line.
        module: String,
        /// The panic message.
        message: String,
    },
    /// Sim time stops; streams continue with a frozen clock.
    StallClock,
    /// No more bytes are sent.
    Silence,
    /// Garbage bytes are interleaved with valid frames.
    Garbage,
    /// Arming is refused with this text (sent as CRITICAL; add a trailing tab for an event text).
    RefuseArming {
        /// The refusal text.
        text: String,
    },
}

/// How the vehicle process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitStatus {
    /// Exited normally with a code.
    Code(i32),
    /// Killed by a signal (6 = SIGABRT after a panic).
    Signal(i32),
}

impl core::fmt::Display for ExitStatus {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            ExitStatus::Code(c) => write!(f, "exit status {c}"),
            ExitStatus::Signal(s) => write!(f, "killed by signal {s}"),
        }
    }
}
