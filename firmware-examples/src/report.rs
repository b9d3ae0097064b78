//! Failure reports in a few words and numbers.
//!
//! The core's error and event types implement `Display` with full sentences, which is right on
//! a host. Here every `Display` impl the firmware calls stays in flash with its strings and the
//! `core::fmt` paths it drives, for lines printed only when something went wrong. So the
//! firmware names what happened with a short static word and prints the numbers that identify
//! it (item index, byte offset, line and column, MAV_RESULT, PX4's own refusal text); the
//! host-side tools and the core's docs explain them. Numbers go out as `u32` or `i32` only, so
//! no other integer `Display` impl is linked.

use nexus_core::client::ClientError;
use nexus_core::engine::EngineError;
use nexus_core::offboard::{
    Command, GiveUpReason, MissionError, OffboardError, OffboardEvent, Refusal, Request,
    TransferStage,
};
use nexus_core::plan::{line_col, PlanError};
use nexus_core::Mode;

use crate::error;

/// A mode's name as PX4's table spells it ("?" for a custom mode outside the table).
pub fn mode_name(mode: Mode) -> &'static str {
    mode.name().unwrap_or("?")
}

fn command_name(c: Command) -> (&'static str, &'static str) {
    match c {
        Command::SetMode(m) => ("mode", mode_name(m)),
        Command::Arm => ("arm", ""),
        Command::ArmGesture => ("arm gesture", ""),
        Command::Disarm => ("disarm", ""),
        Command::Reposition => ("reposition", ""),
    }
}

/// A refusal by PX4: the command, its MAV_RESULT (-1: the gesture, which has no ack) and the
/// STATUSTEXTs that came with it.
pub fn refusal(r: &Refusal) {
    let (what, mode) = command_name(r.command);
    error!(
        "refused: {} {} (MAV_RESULT {}): {}",
        what,
        mode,
        r.result.map_or(-1, i32::from),
        r.text.as_str()
    );
}

/// Log an offboard event that ends the flight; the failure it makes, in a few words.
pub fn offboard_event(e: &OffboardEvent) -> &'static str {
    match e {
        OffboardEvent::Refused(r) => {
            refusal(r);
            "command refused"
        }
        OffboardEvent::GaveUp(g) => {
            let (what, mode) = match g.request {
                Request::Mode(m) => ("mode", mode_name(m)),
                Request::Arm => ("arm", ""),
                Request::MissionRestart => ("mission restart", ""),
            };
            let (why, n) = match g.reason {
                GiveUpReason::Refused { refusals } => ("refusals", refusals),
                GiveUpReason::Unsupported => ("unsupported", 1),
                GiveUpReason::Unconfirmed { sends } => ("unconfirmed sends", sends),
                GiveUpReason::UploadFailed => ("its upload failed", 0),
            };
            error!(
                "gave up on {} {}: {} {} (dropped: arm {}, mission start {})",
                what,
                mode,
                why,
                u32::from(n),
                g.dropped_arm as u32,
                g.dropped_start as u32
            );
            "request given up"
        }
        OffboardEvent::MissionUploadFailed(m) => {
            mission_error(m);
            "mission upload failed"
        }
        OffboardEvent::MissionDownloadFailed(m) | OffboardEvent::MissionClearFailed(m) => {
            mission_error(m);
            "mission download or clear failed"
        }
        _ => "unexpected mission transfer event",
    }
}

fn mission_error(m: &MissionError) {
    match *m {
        MissionError::Rejected { result } => {
            error!(
                "mission transfer rejected: MAV_MISSION_RESULT {}",
                u32::from(result)
            )
        }
        MissionError::Timeout { stage, sends } => {
            let stage = match stage {
                TransferStage::Count => "MISSION_COUNT",
                TransferStage::Items => "items",
                TransferStage::List => "MISSION_REQUEST_LIST",
                TransferStage::Clear => "MISSION_CLEAR_ALL",
            };
            error!(
                "mission transfer timed out at {} after {} sends",
                stage,
                u32::from(sends)
            )
        }
        MissionError::RequestOutOfRange { seq, count } => {
            error!(
                "vehicle asked for item {} of {}",
                u32::from(seq),
                u32::from(count)
            )
        }
        MissionError::TooLarge { count, .. } => {
            error!("vehicle mission of {} items is too large", u32::from(count))
        }
    }
}

/// A verb the offboard machine refused.
pub fn offboard_error(what: &str, e: &OffboardError) {
    let why = match e {
        OffboardError::UnknownMode => "unknown mode",
        OffboardError::NoPosition => "no position yet",
        OffboardError::BadParamName => "bad parameter name",
        OffboardError::InvalidArgument(arg) => arg,
        OffboardError::OutboxFull => "outbox full",
        OffboardError::TooManyItems { .. } => "too many items",
        OffboardError::Item(_) => "item command or frame not in the dialect",
        OffboardError::NoMission => "no mission lodged",
        OffboardError::DriverAction => "a driver action",
        _ => "refused", // a cause added to the core after this firmware
    };
    error!("{}: {}", what, why);
}

/// A wait the client refused.
pub fn client_error(e: &ClientError) {
    let why = match e {
        ClientError::Engine(EngineError::Spec(_)) => "invalid wait",
        ClientError::Engine(EngineError::Full) => "wait engine full",
        ClientError::Engine(_) => "wait engine",
        ClientError::Program(_) => "program runner",
        ClientError::Offboard(_) => "offboard machine",
        _ => "client", // a cause added to the core after this firmware
    };
    error!("wait refused: {}", why);
}

/// Why the stored `.plan` could not be read, and where (line and column of `bytes`).
pub fn plan_error(bytes: &[u8], e: &PlanError) {
    let (what, index) = match e {
        PlanError::Syntax(_) => ("invalid JSON", None),
        PlanError::NotAPlan { .. } => ("not a QGC .plan", None),
        PlanError::NoMission { .. } => ("no mission object", None),
        PlanError::NotSimpleItem { index, .. } => ("not a SimpleItem", Some(*index)),
        PlanError::ParamCount { index, .. } => ("not 7 params", Some(*index)),
        PlanError::BadField { index, .. } => ("bad frame, command or coordinate", Some(*index)),
        PlanError::UnknownCommand { index, .. } => ("unknown MAV_CMD", Some(*index)),
        PlanError::UnknownFrame { index, .. } => ("unknown MAV_FRAME", Some(*index)),
        PlanError::TooManyItems { .. } => ("too many items", None),
        PlanError::BadHome { .. } => ("bad plannedHomePosition", None),
        PlanError::OutOfRange { index, .. } => ("value out of range", *index),
        PlanError::Type { .. } => ("value of the wrong type", None),
        _ => ("unreadable", None), // a cause added to the core after this firmware
    };
    let (line, col) = line_col(bytes, e.offset());
    error!(
        "plan: {} (item {}) at line {}, column {}",
        what,
        index.map_or(-1, |i| i as i32),
        line,
        col
    );
}
