//! Asking a simulator for its ground truth, so the height above the pad is the true one.
//!
//! PX4 SITL streams the simulator's true state, HIL_STATE_QUATERNION (id 115: lat/lon, alt mm
//! AMSL, velocities, attitude), on the link that asks with COMMAND_LONG
//! MAV_CMD_SET_MESSAGE_INTERVAL (511, param1 = 115, param2 = interval µs); it acks ACCEPTED.
//! [`GroundTruthRequest`] sends that request (param2 = [`GROUND_TRUTH_INTERVAL_US`], 25 Hz) when
//! the vehicle is a simulator, and repeats it every [`GROUND_TRUTH_RETRY_MS`] of driver time
//! while no fresh sample arrives: a lost command, or a stream that stopped (a reboot), is asked
//! for again. A COMMAND_ACK DENIED or UNSUPPORTED for it stops the requests for good; the height
//! is then the AMSL estimate ([`crate::telemetry::HeightSource`]).
//!
//! # Which vehicle is a simulator
//!
//! [`GroundTruth::Always`] and [`GroundTruth::Never`] say so outright (the host uses Always for
//! the PX4 it launched and for its built-in vehicle). [`GroundTruth::Auto`] asks the vehicle:
//! MAV_CMD_REQUEST_MESSAGE (512, param1 = 148) for AUTOPILOT_VERSION, sent every
//! [`GROUND_TRUTH_RETRY_MS`] up to [`VERSION_TRIES`] times. PX4's `send_autopilot_capabilities`
//! (src/modules/mavlink/mavlink_main.cpp) fills it so that SITL is told apart:
//!
//! * `vendor_id` and `product_id` are the board's USB (CDC ACM) ids, 0 on a build without USB;
//!   `board_version` is `px4_board_version()`: the USB product id on NuttX, 1 on every other OS.
//!   So 0 / 0 / 1 is a POSIX build: SITL, or PX4 running on a Linux flight computer;
//! * `uid` is built from the board's CPU UUID, which SITL overrides with the text
//!   `"SIMULATIONID0000"` (boards/px4/sitl: `BOARD_OVERRIDE_UUID`): its words 1 and 2 read as
//!   little-endian u32s ("LATI", "ONID"), word 1 in the high half: [`PX4_SITL_UID`]. Linux
//!   flight computers override it with their own text (`"RPIID000…"`, `"BBBLUEID…"`, …);
//! * `uid2` is the PX4 GUID. POSIX builds have none (`BOARD_HAS_NO_UUID`), so it is all zeros;
//!   a build with one starts it with the SoC architecture id, big-endian
//!   ([`PX4_SOC_ARCH_ID_SITL`] for SITL);
//! * on SITL only, PX4 adds `sysid − 1` to `uid` and to `uid2[0]` so that instances differ.
//!
//! Measured on PX4 main SITL (March 2026, instance 5, system id 6): vendor 0, product 0, board
//! version 1, `uid` = [`PX4_SITL_UID`] + 5, `uid2` = `[5, 0, …, 0]` (the recording is
//! fixtures/px4-traces/autopilot-version-sitl-i5.tlog).
//!
//! [`is_px4_sitl`] requires all three. HEARTBEAT and SYS_STATUS of SITL look like a real vehicle's,
//! and neither QGroundControl nor MAVSDK has a "this is SITL" test of its own to borrow. A
//! vehicle that never answers, refuses the request, or answers otherwise is not a simulator:
//! its height is the AMSL estimate. A vehicle that streams HIL_STATE_QUATERNION unasked is
//! a simulator by that fact.
//!
//! The acks of 511 and 512 do not reach the offboard machine's command tracking: it matches
//! COMMAND_ACKs by command id to its own outstanding requests (mode, arm, disarm, reposition)
//! and ignores every other command id.

use crate::msg::{Frame, Msg};
use crate::offboard::wire::{command_long, Addr};
use crate::telemetry::Telemetry;
use crate::time::Instant;
use mavlink::dialects::common as mav;
use mavlink::MessageData;

/// Ground-truth interval asked for, µs: 25 Hz, as PX4's own SIH display link sends it.
pub const GROUND_TRUTH_INTERVAL_US: f32 = 40_000.0;
/// Pause between two requests (SET_MESSAGE_INTERVAL or REQUEST_MESSAGE), driver ms.
pub const GROUND_TRUTH_RETRY_MS: u64 = 1_000;
/// AUTOPILOT_VERSION requests before [`GroundTruth::Auto`] decides "not a simulator". Ten:
/// on a lossy radio (20 % each way, a third of the round trips lost) five tries a second apart
/// lost a simulator's answer often enough to refuse a test flight; ten make it ~1 in 30 000.
pub const VERSION_TRIES: u8 = 10;
/// Unanswered stream requests after which [`GroundTruth::Auto`] stops asking (an accepted
/// request that never streams: PX4 on a Linux board has the stream but no simulator).
pub const AUTO_STREAM_TRIES: u8 = 10;
/// SoC architecture id PX4 SITL puts at the head of AUTOPILOT_VERSION.uid2 (big-endian) on a
/// build that has a GUID (POSIX builds have none: `uid2` is zeros there).
pub const PX4_SOC_ARCH_ID_SITL: u16 = 0x1006;
/// AUTOPILOT_VERSION.uid of PX4 SITL system id 1: words 1 and 2 of `"SIMULATIONID0000"`
/// (module docs); system id N adds N − 1.
pub const PX4_SITL_UID: u64 = 0x4954_414C_4449_4E4F;

/// Whether to ask the vehicle for a simulator's ground truth (a [`crate::ClientConfig`] choice).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum GroundTruth {
    /// Ask when AUTOPILOT_VERSION identifies PX4 SITL ([`is_px4_sitl`]).
    #[default]
    Auto,
    /// The vehicle is a simulator: ask at once (a PX4 SITL we launched, the built-in vehicle).
    Always,
    /// Never ask: the height is the AMSL estimate unless ground truth streams unasked.
    Never,
}

/// Why no ground truth is being asked for (any more).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum GroundTruthState {
    /// [`GroundTruth::Auto`] is still waiting for AUTOPILOT_VERSION.
    Identifying,
    /// Not a simulator (or [`GroundTruth::Never`]).
    NotSimulator,
    /// Asking, or streaming.
    Requesting,
    /// The vehicle refused the stream (COMMAND_ACK result, MAV_RESULT).
    Refused(u8),
    /// [`GroundTruth::Auto`] asked [`AUTO_STREAM_TRIES`] times and nothing came.
    NoStream,
}

/// Whether AUTOPILOT_VERSION `v` is PX4 SITL's (module docs): a POSIX build (USB ids 0,
/// board_version 1) whose `uid` is the SITL board's, offset by `sysid − 1` as PX4 does, and
/// whose GUID is either absent (zeros) or names the SITL architecture, with the same offset.
pub fn is_px4_sitl(v: &mav::AUTOPILOT_VERSION_DATA, sysid: u8) -> bool {
    let posix = v.vendor_id == 0 && v.product_id == 0 && v.board_version == 1;
    let offset = sysid.wrapping_sub(1);
    let uid = v.uid.wrapping_sub(u64::from(offset)) == PX4_SITL_UID;
    let [hi, lo] = PX4_SOC_ARCH_ID_SITL.to_be_bytes();
    let head = v.uid2[0].wrapping_sub(offset);
    let no_guid = head == 0 && v.uid2[1..].iter().all(|&b| b == 0);
    let sitl_guid = head == hi && v.uid2[1] == lo;
    posix && uid && (no_guid || sitl_guid)
}

/// The request machine (module docs); the [`crate::Client`] runs one per link.
#[derive(Debug, Clone, PartialEq)]
pub struct GroundTruthRequest {
    mode: GroundTruth,
    simulator: Option<bool>,
    version_sends: u8,
    version_last: Option<Instant>,
    stream_sends: u8,
    stream_last: Option<Instant>,
    refused: Option<u8>,
}

impl GroundTruthRequest {
    /// A machine for `mode`; nothing is sent before the vehicle's first HEARTBEAT.
    pub fn new(mode: GroundTruth) -> Self {
        // Without the `ground-truth` feature nothing can read the stream: never ask for it.
        let mode = if cfg!(feature = "ground-truth") {
            mode
        } else {
            GroundTruth::Never
        };
        GroundTruthRequest {
            mode,
            simulator: match mode {
                GroundTruth::Auto => None,
                GroundTruth::Always => Some(true),
                GroundTruth::Never => Some(false),
            },
            version_sends: 0,
            version_last: None,
            stream_sends: 0,
            stream_last: None,
            refused: None,
        }
    }

    /// The configured choice.
    pub fn mode(&self) -> GroundTruth {
        self.mode
    }

    /// Whether the vehicle counts as a simulator; `None` while [`GroundTruth::Auto`] waits for
    /// AUTOPILOT_VERSION.
    pub fn simulator(&self) -> Option<bool> {
        self.simulator
    }

    /// What the machine is doing.
    pub fn state(&self) -> GroundTruthState {
        match self.simulator {
            None => GroundTruthState::Identifying,
            Some(false) => GroundTruthState::NotSimulator,
            Some(true) => match self.refused {
                Some(r) => GroundTruthState::Refused(r),
                None if self.gave_up() => GroundTruthState::NoStream,
                None => GroundTruthState::Requesting,
            },
        }
    }

    fn gave_up(&self) -> bool {
        self.mode == GroundTruth::Auto && self.stream_sends >= AUTO_STREAM_TRIES
    }

    /// Take in one frame the telemetry accepted (after telemetry was updated with it).
    pub fn handle<const T: usize>(&mut self, tel: &Telemetry<T>, frame: &Frame) {
        match &frame.msg {
            Msg::AutopilotVersion(v) if self.simulator.is_none() => {
                self.simulator = Some(is_px4_sitl(v, tel.ids().target_sysid));
            }
            Msg::HilStateQuaternion(_) => {
                if self.mode != GroundTruth::Never {
                    self.simulator = Some(true);
                }
                self.stream_sends = 0;
            }
            Msg::CommandAck(ack) => {
                let refusal = matches!(
                    ack.result,
                    mav::MavResult::MAV_RESULT_DENIED | mav::MavResult::MAV_RESULT_UNSUPPORTED
                );
                match ack.command {
                    mav::MavCmd::MAV_CMD_SET_MESSAGE_INTERVAL
                        if refusal && self.stream_last.is_some() =>
                    {
                        self.refused = Some(ack.result as u8);
                    }
                    mav::MavCmd::MAV_CMD_REQUEST_MESSAGE
                        if refusal && self.simulator.is_none() && self.version_last.is_some() =>
                    {
                        self.simulator = Some(false);
                    }
                    _ => {}
                }
            }
            _ => {}
        }
    }

    /// The request due now, if any (driver time `now`).
    pub fn poll<const T: usize>(
        &mut self,
        now: Instant,
        tel: &Telemetry<T>,
    ) -> Option<mav::COMMAND_LONG_DATA> {
        if !tel.connected() {
            return None;
        }
        let to = Addr {
            system: tel.ids().target_sysid,
            component: tel.target_compid(),
        };
        match self.simulator {
            None => {
                if self.version_sends >= VERSION_TRIES {
                    self.simulator = Some(false);
                    return None;
                }
                if !due(self.version_last, now) {
                    return None;
                }
                self.version_last = Some(now);
                self.version_sends += 1;
                let id = <mav::AUTOPILOT_VERSION_DATA as MessageData>::ID as f32;
                Some(command_long(
                    to,
                    mav::MavCmd::MAV_CMD_REQUEST_MESSAGE,
                    [id, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
                    0,
                ))
            }
            Some(false) => None,
            Some(true) => {
                if tel.ground_truth_fresh() {
                    self.stream_sends = 0;
                    return None;
                }
                if self.refused.is_some() || self.gave_up() || !due(self.stream_last, now) {
                    return None;
                }
                self.stream_last = Some(now);
                self.stream_sends = self.stream_sends.saturating_add(1);
                let id = <mav::HIL_STATE_QUATERNION_DATA as MessageData>::ID as f32;
                Some(command_long(
                    to,
                    mav::MavCmd::MAV_CMD_SET_MESSAGE_INTERVAL,
                    [id, GROUND_TRUTH_INTERVAL_US, 0.0, 0.0, 0.0, 0.0, 0.0],
                    0,
                ))
            }
        }
    }

    /// When [`GroundTruthRequest::poll`] may send next if nothing arrives (driver time);
    /// `None` when nothing is pending or it waits for a frame (the first HEARTBEAT).
    #[must_use = "the driver must wake by then"]
    pub fn next_deadline<const T: usize>(&self, tel: &Telemetry<T>) -> Option<Instant> {
        if !tel.connected() {
            return None;
        }
        let last = match self.simulator {
            None => self.version_last,
            // Fresh ground truth can only go stale on a frame (sim time), which polls anyway.
            Some(true)
                if self.refused.is_none() && !self.gave_up() && !tel.ground_truth_fresh() =>
            {
                self.stream_last
            }
            _ => None,
        }?;
        Some(Instant::from_micros(
            last.total_micros()
                .saturating_add(GROUND_TRUTH_RETRY_MS * 1_000),
        ))
    }
}

fn due(last: Option<Instant>, now: Instant) -> bool {
    last.is_none_or(|l| now.saturating_since(l).total_millis() >= GROUND_TRUTH_RETRY_MS)
}
