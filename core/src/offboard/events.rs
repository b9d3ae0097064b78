//! What the application must know: refusals with PX4's words, requests given up, mission
//! transfers done or failed. Drained with [`super::Offboard::poll_event`].

use crate::mode::Mode;
use core::fmt;
use heapless::String;

/// Longest refusal explanation kept, bytes (the STATUSTEXTs that came with it, joined by "; ").
pub const REFUSAL_TEXT_LEN: usize = 120;

/// A command the machine sends whose refusal is reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Command {
    /// DO_SET_MODE to this mode.
    SetMode(Mode),
    /// COMPONENT_ARM_DISARM, arm.
    Arm,
    /// The throttle-down, yaw-right stick gesture (no ack: "refused" means it did not arm).
    ArmGesture,
    /// COMPONENT_ARM_DISARM, disarm.
    Disarm,
    /// DO_REPOSITION (goto).
    Reposition,
    /// INJECT_FAILURE.
    #[cfg(feature = "failure-injection")]
    InjectFailure,
    /// DO_VTOL_TRANSITION.
    #[cfg(feature = "vtol")]
    VtolTransition,
}

impl fmt::Display for Command {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Command::SetMode(m) => write!(f, "mode {m}"),
            Command::Arm => f.write_str("arm"),
            Command::ArmGesture => f.write_str("arm gesture"),
            Command::Disarm => f.write_str("disarm"),
            Command::Reposition => f.write_str("reposition"),
            #[cfg(feature = "failure-injection")]
            Command::InjectFailure => f.write_str("failure injection"),
            #[cfg(feature = "vtol")]
            Command::VtolTransition => f.write_str("VTOL transition"),
        }
    }
}

/// PX4 said no: which command, its MAV_RESULT, and the STATUSTEXT(s) that explain it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Refusal {
    /// The refused command.
    pub command: Command,
    /// COMMAND_ACK.result (MAV_RESULT); `None` for the gesture, which has no ack. ACCEPTED (0)
    /// for a goto PX4's commander acked and its navigator refused in words
    /// ("Reposition is outside geofence").
    pub result: Option<u8>,
    /// Warning-or-worse STATUSTEXTs from the send until shortly after the refusal, joined by
    /// "; " (e.g. "Arming denied: Resolve system health failures first"); empty if none came.
    pub text: String<REFUSAL_TEXT_LEN>,
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.result {
            // PX4's navigator refusing what its commander accepted (a goto outside the fence).
            #[cfg(feature = "geofence")]
            Some(0) => write!(f, "{} refused after an ACCEPTED ack", self.command)?,
            Some(r) => write!(f, "{} refused ({}, {r})", self.command, mav_result_name(r))?,
            None => write!(f, "{} did not arm the vehicle", self.command)?,
        }
        if !self.text.is_empty() {
            write!(f, ": {}", self.text)?;
        }
        Ok(())
    }
}

/// An outstanding request the machine stopped pursuing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Request {
    /// A mode change.
    Mode(Mode),
    /// An arm (by command or gesture).
    Arm,
    /// MISSION_SET_CURRENT 0 before a mission start.
    MissionRestart,
}

impl fmt::Display for Request {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Request::Mode(m) => write!(f, "mode {m}"),
            Request::Arm => f.write_str("arm"),
            Request::MissionRestart => f.write_str("mission restart (MISSION_SET_CURRENT 0)"),
        }
    }
}

/// Why a request was given up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum GiveUpReason {
    /// PX4 refused it this many times (see [`super::Offboard::last_refusal`] for its words).
    Refused {
        /// Refusals counted.
        refusals: u8,
    },
    /// PX4 answered MAV_RESULT_UNSUPPORTED: retrying cannot help.
    Unsupported,
    /// Sent this many times without telemetry ever confirming it.
    Unconfirmed {
        /// Sends made.
        sends: u8,
    },
    /// The mission upload it was waiting for failed: starting would fly whatever mission PX4
    /// still holds.
    UploadFailed,
}

/// A request given up, and what was dropped with it (an arm ordered after a mode never goes
/// out once that mode has failed: it would arm in the wrong mode).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct GaveUp {
    /// The request.
    pub request: Request,
    /// Why.
    pub reason: GiveUpReason,
    /// A pending arm was dropped with it.
    pub dropped_arm: bool,
    /// A pending mission start (restart or Mission mode) was dropped with it.
    pub dropped_start: bool,
}

impl fmt::Display for GaveUp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "gave up on {}: ", self.request)?;
        match self.reason {
            GiveUpReason::Refused { refusals } => write!(f, "refused {refusals} times")?,
            GiveUpReason::Unsupported => f.write_str("unsupported by the vehicle")?,
            GiveUpReason::Unconfirmed { sends } => write!(f, "not confirmed after {sends} sends")?,
            GiveUpReason::UploadFailed => f.write_str("the mission upload it waited for failed")?,
        }
        if self.dropped_arm {
            f.write_str("; pending arm dropped")?;
        }
        if self.dropped_start {
            f.write_str("; pending mission start dropped")?;
        }
        Ok(())
    }
}

/// The stage of a mission transfer that timed out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum TransferStage {
    /// Upload: MISSION_COUNT sent, PX4 never asked for an item.
    Count,
    /// Upload: PX4 stopped asking for items (or never acked); download: an item never came.
    Items,
    /// Download: MISSION_REQUEST_LIST sent, no MISSION_COUNT came.
    List,
    /// Clear: MISSION_CLEAR_ALL sent, no MISSION_ACK came.
    Clear,
}

/// Why a mission upload, download or clear failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum MissionError {
    /// PX4 answered MISSION_ACK with this MAV_MISSION_RESULT.
    Rejected {
        /// The MAV_MISSION_RESULT.
        result: u8,
    },
    /// No answer after the retries.
    Timeout {
        /// Where it stalled.
        stage: TransferStage,
        /// Sends made at that stage.
        sends: u8,
    },
    /// PX4 asked for an item the mission does not have.
    RequestOutOfRange {
        /// Requested seq.
        seq: u16,
        /// Items in the mission.
        count: u16,
    },
    /// The vehicle's mission is larger than the machine's capacity (download).
    TooLarge {
        /// Items on the vehicle.
        count: u16,
        /// The machine's capacity.
        capacity: usize,
    },
}

impl fmt::Display for MissionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MissionError::Rejected { result } => {
                write!(f, "rejected: {} ({result})", mission_result_name(*result))
            }
            MissionError::Timeout { stage, sends } => {
                let what = match stage {
                    TransferStage::Count => "no item request after MISSION_COUNT",
                    TransferStage::Items => "the item exchange stalled",
                    TransferStage::List => "no MISSION_COUNT after MISSION_REQUEST_LIST",
                    TransferStage::Clear => "no MISSION_ACK after MISSION_CLEAR_ALL",
                };
                write!(f, "timed out: {what} ({sends} sends)")
            }
            MissionError::RequestOutOfRange { seq, count } => {
                write!(f, "vehicle asked for item {seq} of a {count}-item mission")
            }
            MissionError::TooLarge { count, capacity } => write!(
                f,
                "vehicle mission has {count} items, more than the {capacity} held"
            ),
        }
    }
}

/// Something the application must know.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive] // more news may come; match with a `_` arm
pub enum OffboardEvent {
    /// PX4 refused a command (the request may still be retried; see `GaveUp`).
    Refused(Refusal),
    /// A request was abandoned.
    GaveUp(GaveUp),
    /// PX4 accepted the uploaded mission.
    MissionUploaded {
        /// Items uploaded.
        count: u16,
        /// MISSION_ACK.opaque_id (PX4's CRC32 of the mission; 0 if not sent).
        opaque_id: u32,
    },
    /// The upload failed.
    MissionUploadFailed(MissionError),
    /// The vehicle's mission was downloaded (see `Offboard::mission_items`).
    MissionDownloaded {
        /// Items downloaded.
        count: u16,
    },
    /// The download failed.
    MissionDownloadFailed(MissionError),
    /// A verifying download found the vehicle's mission identical to the one uploaded.
    MissionVerified {
        /// Items compared.
        count: u16,
    },
    /// A verifying download found the vehicle's mission different from the one uploaded
    /// (the download stops at the first difference).
    MissionMismatch(MissionMismatch),
    /// PX4 cleared its mission.
    MissionCleared,
    /// The clear failed.
    MissionClearFailed(MissionError),
    /// A one-shot command (disarm, goto) got no COMMAND_ACK at all within
    /// [`ACK_WAIT_MS`](super::ACK_WAIT_MS) (some autopilots, MAVSDK's among them, never ack
    /// DO_REPOSITION). It is not sent again: check the vehicle's state.
    NoAck(Command),
    /// A parameter set ended: PX4 echoed the value, refused it with PARAM_ERROR, or never
    /// echoed it within the resend limit.
    #[cfg(feature = "confirmed-params")]
    ParamSet(super::ParamSetOutcome),
}

/// How the vehicle's mission differs from the one uploaded: the first difference.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum MissionMismatch {
    /// The vehicle holds another number of items.
    Count {
        /// Items on the vehicle.
        vehicle: u16,
        /// Items uploaded.
        uploaded: u16,
    },
    /// Item `seq` is not the one uploaded.
    Item {
        /// The item as uploaded.
        uploaded: crate::mission::MissionItem,
        /// The item as the vehicle holds it.
        vehicle: crate::mission::MissionItem,
    },
}

impl fmt::Display for MissionMismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let item = |f: &mut fmt::Formatter<'_>, i: &crate::mission::MissionItem| {
            write!(
                f,
                "command {} frame {} at ({}, {}, {} m), params {:?}",
                i.command, i.frame, i.x, i.y, i.z, i.params
            )
        };
        match self {
            MissionMismatch::Count { vehicle, uploaded } => write!(
                f,
                "the vehicle holds {vehicle} items, {uploaded} were uploaded"
            ),
            MissionMismatch::Item { uploaded, vehicle } => {
                write!(f, "item {} differs: uploaded ", uploaded.seq)?;
                item(f, uploaded)?;
                f.write_str(", the vehicle holds ")?;
                item(f, vehicle)
            }
        }
    }
}

impl fmt::Display for OffboardEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OffboardEvent::Refused(r) => r.fmt(f),
            OffboardEvent::GaveUp(g) => g.fmt(f),
            OffboardEvent::MissionUploaded { count, opaque_id } => {
                write!(
                    f,
                    "mission of {count} items uploaded (opaque_id {opaque_id:#010x})"
                )
            }
            OffboardEvent::MissionUploadFailed(e) => write!(f, "mission upload {e}"),
            OffboardEvent::NoAck(c) => write!(
                f,
                "no COMMAND_ACK for {c} within {} s",
                super::ACK_WAIT_MS / 1000
            ),
            OffboardEvent::MissionDownloaded { count } => {
                write!(f, "mission of {count} items downloaded")
            }
            OffboardEvent::MissionDownloadFailed(e) => write!(f, "mission download {e}"),
            OffboardEvent::MissionVerified { count } => write!(
                f,
                "mission verified: the vehicle holds the {count} items uploaded"
            ),
            OffboardEvent::MissionMismatch(m) => write!(f, "mission verification failed: {m}"),
            OffboardEvent::MissionCleared => f.write_str("mission cleared"),
            OffboardEvent::MissionClearFailed(e) => write!(f, "mission clear {e}"),
            #[cfg(feature = "confirmed-params")]
            OffboardEvent::ParamSet(p) => p.fmt(f),
        }
    }
}

/// MAV_RESULT's name.
pub fn mav_result_name(r: u8) -> &'static str {
    match r {
        0 => "ACCEPTED",
        1 => "TEMPORARILY_REJECTED",
        2 => "DENIED",
        3 => "UNSUPPORTED",
        4 => "FAILED",
        5 => "IN_PROGRESS",
        6 => "CANCELLED",
        7 => "COMMAND_LONG_ONLY",
        8 => "COMMAND_INT_ONLY",
        9 => "UNSUPPORTED_MAV_FRAME",
        10 => "NOT_IN_CONTROL",
        _ => "unknown result",
    }
}

/// MAV_MISSION_RESULT's name.
pub fn mission_result_name(r: u8) -> &'static str {
    match r {
        0 => "ACCEPTED",
        1 => "ERROR",
        2 => "UNSUPPORTED_FRAME",
        3 => "UNSUPPORTED",
        4 => "NO_SPACE",
        5 => "INVALID",
        6 => "INVALID_PARAM1",
        7 => "INVALID_PARAM2",
        8 => "INVALID_PARAM3",
        9 => "INVALID_PARAM4",
        10 => "INVALID_PARAM5_X",
        11 => "INVALID_PARAM6_Y",
        12 => "INVALID_PARAM7",
        13 => "INVALID_SEQUENCE",
        14 => "DENIED",
        15 => "OPERATION_CANCELLED",
        _ => "unknown result",
    }
}
/// So `?` converts it into `Box<dyn Error>` and other error types.
impl core::error::Error for MissionError {}

/// So `?` converts it into `Box<dyn Error>` and other error types.
impl core::error::Error for GaveUp {}

/// So `?` converts it into `Box<dyn Error>` and other error types.
impl core::error::Error for Refusal {}
