//! The messages the engine reads, decoded one by one.
//!
//! [`Msg::decode`] dispatches on the message id to that message's own deserialiser and returns
//! `Ok(None)` for every other id: a PX4 sends dozens of message types (ATTITUDE_QUATERNION,
//! HIGHRES_IMU, ODOMETRY, …) that nothing here reads, and skipping them costs one `match`.
//! On 64-bit hosts the streamed ones (`=> reader` in the list below) are read straight from the
//! payload bytes (module `fields`); the rest, rare, and all of them on 32-bit targets, through
//! `mavlink`'s generated deserialisers. On 32-bit targets the payload is first zero-extended
//! once to the longest decoded message, so those deserialisers see a slice of constant length
//! and their own copies and length checks fold away (the smallest shape measured: `fields`'
//! readers over the same slice are 312 B more on the mission firmware). COMMAND_ACK has its
//! own reader everywhere (module `ack`), so `MavCmd`'s conversion is linked only with
//! `raw-send`.

#![allow(deprecated)] // PX4 still speaks legacy MISSION_REQUEST; the engine must answer it.

use crate::frame::{RawFrame, Version};
use mavlink::dialects::common as mav;
use mavlink::{MavlinkVersion, MessageData};
use num_traits::FromPrimitive;

mod ack;
#[cfg(any(target_pointer_width = "64", test))]
mod fields;

pub use ack::{own_command, OWN_COMMANDS};

pub use mavlink::error::ParserError;

/// `mavlink`'s deserialiser of `$data`, or, on 64-bit hosts, the hand-written reader of
/// `fields` when the entry names one (`=> reader`). In the 32-bit targets' shape (`$mcu`, the
/// firmware) `mavlink`'s serve those messages: the readers, inlined into the pump, cost
/// ~2.5 KB of its budgeted flash for time an MCU fed by a UART does not lack (the readers
/// return what `mavlink`'s do: tested). An entry `or_skip reader` is read by `reader` in both
/// shapes, which returns `Ok(None)` for a message the core skips (module `ack`). The result is
/// `Ok(Some(_))` for a decoded message.
macro_rules! deser {
    ($mcu:ident, $v:ident, $payload:ident, $data:ident) => {
        mav::$data::deser($v, $payload).map(Some)
    };
    ($mcu:ident, $v:ident, $payload:ident, $data:ident, => $fast:ident) => {{
        #[cfg(target_pointer_width = "64")]
        let m = if $mcu {
            mav::$data::deser($v, $payload)
        } else {
            fields::$fast($payload)
        };
        #[cfg(not(target_pointer_width = "64"))]
        let m = mav::$data::deser($v, $payload);
        m.map(Some)
    }};
    ($mcu:ident, $v:ident, $payload:ident, $data:ident, or_skip $reader:ident) => {
        ack::$reader($payload)
    };
}

/// Whether this target decodes in the 32-bit shape (see [`Msg::decode_as`]): the firmware's.
const MCU_SHAPE: bool = cfg!(not(target_pointer_width = "64"));

/// `p` zero-extended to `buf`'s length (or cut to it): what a deserialiser of a message no
/// longer than `buf` reads of `p`, as a slice of constant length. In place, unlike
/// [`padded`], which returns the array: the mission firmware is 47 308 B with this, 48 264 B
/// with `padded` here.
#[inline(always)]
fn extend<'b, const N: usize>(p: &[u8], buf: &'b mut [u8; N]) -> &'b [u8] {
    let n = p.len().min(N);
    buf[..n].copy_from_slice(&p[..n]);
    buf
}

/// The first `N` bytes of `p`, zero-filled past its end: MAVLink 2 drops a payload's trailing
/// zeros, and a MAVLink 1 payload has no extension fields. Bytes past `N` are ignored, as
/// `mavlink`'s `deser` ignores them.
#[inline(always)]
fn padded<const N: usize>(p: &[u8]) -> [u8; N] {
    if let Some(a) = p.get(..N).and_then(|s| <[u8; N]>::try_from(s).ok()) {
        return a;
    }
    let mut a = [0u8; N];
    let n = p.len().min(N);
    a[..n].copy_from_slice(&p[..n]);
    a
}

/// A MAVLink enum from its byte, or the error `mavlink` gives for a value it does not define.
#[inline(always)]
fn enum_u8<E: FromPrimitive>(v: u8, name: &'static str) -> Result<E, ParserError> {
    E::from_u8(v).ok_or(ParserError::InvalidEnum {
        enum_type: name,
        value: v as u64,
    })
}

macro_rules! subset {
    ($( $(#[doc = $doc:literal])* $(@cfg($cfg:meta))? $variant:ident($data:ident) $(=> $fast:ident)? $(or_skip $reader:ident)?, )*) => {
        /// One decoded message of the subset the engine reads.
        #[derive(Debug, Clone, PartialEq)]
        #[allow(clippy::large_enum_variant)]
        pub enum Msg {
            $( $(#[doc = $doc])* $(#[cfg($cfg)])? $variant(mav::$data), )*
        }

        impl Msg {
            /// Decode a payload of message `id`; `Ok(None)` when the id is not in the subset (or
            /// for an ACK of another's command, without `raw-send`: see [`Msg::CommandAck`]).
            ///
            /// A payload with an out-of-range enum value is an error, never a panic.
            pub fn decode(version: Version, id: u32, payload: &[u8]) -> Result<Option<Msg>, ParserError> {
                Msg::decode_as::<MCU_SHAPE, _>(version, id, payload, |m| m)
            }

            /// [`Msg::decode`], the message handed to `wrap` in each arm: inlined into its
            /// caller, every arm builds the caller's result (a [`Frame`]) in place, instead of
            /// a `Result<Option<Msg>>` moved into another.
            ///
            /// `SHAPE_MCU` (the 32-bit targets'; a parameter so the host tests run it too): the
            /// payload is zero-extended once to the longest decoded message, so each
            /// deserialiser sees a slice of constant length and its own copy into a zeroed
            /// buffer (for a truncated payload) and its cursor's length checks fold away; and
            /// `mavlink`'s deserialisers serve every message. What each reads is the same:
            /// the zeros MAVLink 2 truncation dropped, nothing past its message's length.
            #[inline(always)]
            fn decode_as<const SHAPE_MCU: bool, R>(
                version: Version,
                id: u32,
                payload: &[u8],
                wrap: impl FnOnce(Msg) -> R,
            ) -> Result<Option<R>, ParserError> {
                let v = match version {
                    Version::V1 => MavlinkVersion::V1,
                    Version::V2 => MavlinkVersion::V2,
                };
                if !feature_decodes(id) {
                    return Ok(None);
                }
                let mut extended = [0u8; MAX_DECODED_LEN];
                let payload = if SHAPE_MCU {
                    extend(payload, &mut extended)
                } else {
                    payload
                };
                match id {
                    $( $(#[cfg($cfg)])? <mav::$data as MessageData>::ID => match deser!(SHAPE_MCU, v, payload, $data $(, => $fast)? $(, or_skip $reader)?) {
                        Ok(Some(m)) => Ok(Some(wrap(Msg::$variant(m)))),
                        Ok(None) => Ok(None),
                        Err(e) => Err(e),
                    }, )*
                    _ => Ok(None),
                }
            }

            /// The MAVLink message id.
            pub fn id(&self) -> u32 {
                match self {
                    $( $(#[cfg($cfg)])? Msg::$variant(_) => <mav::$data as MessageData>::ID, )*
                }
            }

            /// The MAVLink message name, for logs.
            pub fn name(&self) -> &'static str {
                match self {
                    $( $(#[cfg($cfg)])? Msg::$variant(_) => <mav::$data as MessageData>::NAME, )*
                }
            }
        }

        /// Every message of the subset (id, `ENCODED_LEN`), whether the features decode it or not.
        const SUBSET: &[(u32, usize)] = &[ $( $(#[cfg($cfg)])? (<mav::$data as MessageData>::ID, mav::$data::ENCODED_LEN), )* ];

        /// The longest payload (`ENCODED_LEN`) of a message the crate's features decode.
        const MAX_DECODED_LEN: usize = {
            let mut max = 0;
            let mut i = 0;
            while i < SUBSET.len() {
                if feature_decodes(SUBSET[i].0) && SUBSET[i].1 > max {
                    max = SUBSET[i].1;
                }
                i += 1;
            }
            max
        };

        /// Whether `id` is one of the messages [`Msg::decode`] decodes.
        pub fn is_decoded(id: u32) -> bool {
            feature_decodes(id)
                && match id {
                    $( $(#[cfg($cfg)])? <mav::$data as MessageData>::ID => true, )*
                    _ => false,
                }
        }
    };
}

/// Whether the crate's features let `id` be decoded: without the `ground-truth` feature (on by
/// default; a firmware that flies real vehicles turns it off) HIL_STATE_QUATERNION and
/// AUTOPILOT_VERSION are skipped like any unread message, and without `mission-download`
/// MISSION_COUNT and MISSION_ITEM_INT (only a download reads them), so their deserialisers
/// are not linked in.
#[inline(always)]
const fn feature_decodes(id: u32) -> bool {
    (cfg!(feature = "ground-truth")
        || !matches!(
            id,
            <mav::HIL_STATE_QUATERNION_DATA as MessageData>::ID
                | <mav::AUTOPILOT_VERSION_DATA as MessageData>::ID
        ))
        && (cfg!(feature = "mission-download")
            || !matches!(
                id,
                <mav::MISSION_COUNT_DATA as MessageData>::ID
                    | <mav::MISSION_ITEM_INT_DATA as MessageData>::ID
            ))
}

subset! {
    /// HEARTBEAT: mode, armed flag, system status.
    Heartbeat(HEARTBEAT_DATA) => heartbeat,
    /// SYS_STATUS: sensor health, including PX4's prearm-check bit.
    SysStatus(SYS_STATUS_DATA) => sys_status,
    /// SYSTEM_TIME: the autopilot clock.
    SystemTime(SYSTEM_TIME_DATA) => system_time,
    /// GLOBAL_POSITION_INT: position estimate, AMSL and relative altitude.
    GlobalPositionInt(GLOBAL_POSITION_INT_DATA) => global_position_int,
    /// LOCAL_POSITION_NED: smooth local position.
    LocalPositionNed(LOCAL_POSITION_NED_DATA) => local_position_ned,
    /// VFR_HUD: airspeed, ground speed, climb.
    VfrHud(VFR_HUD_DATA) => vfr_hud,
    /// ATTITUDE: roll, pitch, yaw.
    Attitude(ATTITUDE_DATA) => attitude,
    /// EXTENDED_SYS_STATE: landed state.
    ExtendedSysState(EXTENDED_SYS_STATE_DATA) => extended_sys_state,
    /// HOME_POSITION: where PX4 set home.
    HomePosition(HOME_POSITION_DATA) => home_position,
    /// MISSION_CURRENT: item being flown, mission state.
    MissionCurrent(MISSION_CURRENT_DATA) => mission_current,
    /// MISSION_ITEM_REACHED: an item was reached (PX4 repeats it).
    MissionItemReached(MISSION_ITEM_REACHED_DATA),
    /// MISSION_REQUEST_INT: PX4 asks for an item during upload.
    MissionRequestInt(MISSION_REQUEST_INT_DATA),
    /// MISSION_REQUEST: legacy form of the item request.
    MissionRequest(MISSION_REQUEST_DATA),
    /// MISSION_ACK: end of an upload (or a rejection).
    MissionAck(MISSION_ACK_DATA),
    /// MISSION_COUNT: start of a download (decoded only with the `mission-download` feature).
    MissionCount(MISSION_COUNT_DATA),
    /// MISSION_ITEM_INT: an item during download (decoded only with `mission-download`).
    MissionItemInt(MISSION_ITEM_INT_DATA),
    /// COMMAND_ACK: result of a command. Without the `raw-send` feature only the ACKs of the
    /// commands the core sends ([`OWN_COMMANDS`]) are decoded, the rest skipped (module `ack`).
    CommandAck(COMMAND_ACK_DATA) or_skip command_ack,
    /// PARAM_VALUE: a parameter's value.
    ParamValue(PARAM_VALUE_DATA),
    /// PARAM_ERROR: PX4's answer to a read or set it cannot serve (unknown name, wrong type),
    /// so a client fails at once instead of timing out.
    ParamError(PARAM_ERROR_DATA),
    /// STATUSTEXT: a text, possibly one chunk of a longer one.
    Statustext(STATUSTEXT_DATA),
    /// HIL_STATE_QUATERNION: a simulator's true state (PX4 SITL streams it when asked), the
    /// height above the pad when it comes.
    HilStateQuaternion(HIL_STATE_QUATERNION_DATA),
    /// AUTOPILOT_VERSION: what the autopilot is built for, which tells PX4 SITL from a board.
    AutopilotVersion(AUTOPILOT_VERSION_DATA),
    /// GPS_RAW_INT: fix type and satellites (the `gps_fix` and `satellites` conditions; only
    /// with the `extra-conditions` feature).
    @cfg(feature = "extra-conditions")
    GpsRawInt(GPS_RAW_INT_DATA) => gps_raw_int,
}

/// A decoded frame: who sent it, and what.
#[derive(Debug, Clone, PartialEq)]
pub struct Frame {
    /// Header of the frame it came in.
    pub header: crate::frame::Header,
    /// The message.
    pub msg: Msg,
}

impl Frame {
    /// Decode a checked raw frame; `Ok(None)` for messages outside the subset.
    #[cfg_attr(target_pointer_width = "64", inline)]
    pub fn decode(raw: &RawFrame<'_>) -> Result<Option<Frame>, ParserError> {
        let header = raw.header;
        // Each arm builds the frame in place (no `Result<Option<Msg>>` moved into another):
        // faster on the host, and 144 B smaller on the MCU.
        Msg::decode_as::<MCU_SHAPE, _>(header.version, header.msgid, raw.payload, |msg| Frame {
            header,
            msg,
        })
    }

    /// Build a frame as if `sysid`/`compid` had sent `msg` (scripted tests, replay).
    pub fn from_msg(sysid: u8, compid: u8, msg: Msg) -> Frame {
        Frame {
            header: crate::frame::Header {
                version: Version::V2,
                seq: 0,
                sysid,
                compid,
                msgid: msg.id(),
                signed: false,
            },
            msg,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    extern crate std;
    use std::format;
    use std::string::String;

    fn shown(r: Result<Option<Msg>, ParserError>) -> String {
        match r {
            Ok(m) => format!("Ok({m:?})"),
            Err(e) => format!("Err({e:?})"),
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// The firmware's decoding shape (one zero-extension, `mavlink`'s deserialisers) and
        /// the host's give the same message, or the same error, for every message of the
        /// subset, on random payloads of every length from empty to past the message's
        /// full length, in both MAVLink versions.
        #[test]
        fn the_mcu_shape_decodes_as_the_host_shape(
            bytes in prop::collection::vec(any::<u8>(), 100),
            small in prop::collection::vec(0u8..12, 100),
        ) {
            for b in [&bytes, &small] {
                for &(id, len) in SUBSET {
                    for n in 0..=len + 3 {
                        for version in [Version::V1, Version::V2] {
                            let p = &b[..n];
                            prop_assert_eq!(
                                shown(Msg::decode_as::<true, _>(version, id, p, |m| m)),
                                shown(Msg::decode_as::<false, _>(version, id, p, |m| m)),
                                "id {} from {} bytes {:?}", id, n, p
                            );
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn the_extension_covers_every_decoded_message() {
        for &(id, len) in SUBSET {
            assert!(!feature_decodes(id) || len <= MAX_DECODED_LEN, "{id}");
        }
    }

    fn payload<M: MessageData>(m: &M) -> ([u8; 255], usize) {
        let mut p = [0u8; 255];
        let n = m.ser(MavlinkVersion::V2, &mut p);
        (p, n)
    }

    #[test]
    fn download_messages_are_decoded_only_with_mission_download() {
        let count = mav::MISSION_COUNT_DATA {
            count: 3,
            target_system: 255,
            target_component: 190,
            mission_type: mav::MavMissionType::MAV_MISSION_TYPE_MISSION,
            opaque_id: 9,
        };
        let item = mav::MISSION_ITEM_INT_DATA {
            seq: 2,
            command: mav::MavCmd::MAV_CMD_NAV_WAYPOINT,
            frame: mav::MavFrame::MAV_FRAME_GLOBAL_RELATIVE_ALT_INT,
            x: 473_977_420,
            y: 85_455_940,
            z: 10.0,
            ..mav::MISSION_ITEM_INT_DATA::DEFAULT
        };
        let on = cfg!(feature = "mission-download");
        let (p, n) = payload(&count);
        let got = Msg::decode(Version::V2, mav::MISSION_COUNT_DATA::ID, &p[..n]).unwrap();
        assert_eq!(got, on.then_some(Msg::MissionCount(count)));
        assert_eq!(is_decoded(mav::MISSION_COUNT_DATA::ID), on);
        let (p, n) = payload(&item);
        let got = Msg::decode(Version::V2, mav::MISSION_ITEM_INT_DATA::ID, &p[..n]).unwrap();
        assert_eq!(got, on.then_some(Msg::MissionItemInt(item)));
        assert_eq!(is_decoded(mav::MISSION_ITEM_INT_DATA::ID), on);
        // The upload's requests and ACK are decoded whatever the features.
        assert!(is_decoded(mav::MISSION_REQUEST_INT_DATA::ID));
        assert!(is_decoded(mav::MISSION_ACK_DATA::ID));
    }

    #[test]
    fn command_acks_decode_through_msg_decode() {
        let ack = |command| mav::COMMAND_ACK_DATA {
            command,
            result: mav::MavResult::MAV_RESULT_TEMPORARILY_REJECTED,
            progress: 0,
            result_param2: 0,
            target_system: 255,
            target_component: 190,
        };
        let id = mav::COMMAND_ACK_DATA::ID;
        for c in OWN_COMMANDS {
            let (p, n) = payload(&ack(c));
            let got = Msg::decode(Version::V2, id, &p[..n]).unwrap();
            assert_eq!(got, Some(Msg::CommandAck(ack(c))));
        }
        // An ACK of a command the core never sends: read only with `raw-send`.
        let other = ack(mav::MavCmd::MAV_CMD_NAV_TAKEOFF);
        let (p, n) = payload(&other);
        let got = Msg::decode(Version::V2, id, &p[..n]).unwrap();
        let raw_send = cfg!(feature = "raw-send");
        assert_eq!(got, raw_send.then_some(Msg::CommandAck(other)));
        // An undefined result is an error for an ACK that is read, never a panic.
        let (mut p, n) = payload(&ack(mav::MavCmd::MAV_CMD_DO_SET_MODE));
        p[2] = 200;
        assert!(Msg::decode(Version::V2, id, &p[..n]).is_err());
    }
}
