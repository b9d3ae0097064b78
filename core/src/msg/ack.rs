//! COMMAND_ACK, read by hand so its `command` needs `MavCmd`'s full conversion only where
//! it can matter.
//!
//! `mavlink`'s deserialiser converts the acknowledged command through `MavCmd::from_u16`, a
//! comparison tree over the ~200 sparse values of the dialect (~1.9 KB of an MCU's flash).
//! Without the `raw-send` feature the core sends only its own commands ([`OWN_COMMANDS`]),
//! so an ACK of any other command answers nobody here: it is skipped like an unread message
//! (`Ok(None)`) and never reaches telemetry. With `raw-send` (a client may send any command)
//! every command the dialect defines is converted, and one it does not define is an error, as
//! in `mavlink`'s deserialiser. Either way an undefined `result` is an error, never a panic.

use mavlink::dialects::common as mav;
use mavlink::error::ParserError;
#[cfg(any(feature = "raw-send", test))]
use num_traits::FromPrimitive;

/// Every command the core sends (COMMAND_LONG / COMMAND_INT), so every command whose ACK it
/// reads: mode, arm/disarm and reposition (the offboard machine), message interval and
/// message request (ground truth, and a firmware's own link check), failure injection, VTOL
/// transition. A test checks that every command named in the core's senders and ACK handlers
/// is here.
pub const OWN_COMMANDS: [mav::MavCmd; 7] = [
    mav::MavCmd::MAV_CMD_DO_SET_MODE,
    mav::MavCmd::MAV_CMD_DO_REPOSITION,
    mav::MavCmd::MAV_CMD_COMPONENT_ARM_DISARM,
    mav::MavCmd::MAV_CMD_SET_MESSAGE_INTERVAL,
    mav::MavCmd::MAV_CMD_REQUEST_MESSAGE,
    mav::MavCmd::MAV_CMD_INJECT_FAILURE,
    mav::MavCmd::MAV_CMD_DO_VTOL_TRANSITION,
];

/// The one of [`OWN_COMMANDS`] numbered `v`, if any.
pub fn own_command(v: u16) -> Option<mav::MavCmd> {
    OWN_COMMANDS.iter().copied().find(|c| *c as u16 == v)
}

/// The acknowledged command numbered `v`: `Ok(None)` when the ACK is skipped (see the module
/// comment).
#[inline(always)]
fn command(v: u16) -> Result<Option<mav::MavCmd>, ParserError> {
    #[cfg(feature = "raw-send")]
    {
        match mav::MavCmd::from_u16(v) {
            Some(c) => Ok(Some(c)),
            None => Err(ParserError::InvalidEnum {
                enum_type: "MavCmd",
                value: v as u64,
            }),
        }
    }
    #[cfg(not(feature = "raw-send"))]
    {
        Ok(own_command(v))
    }
}

/// COMMAND_ACK (3 bytes, 10 with its extensions), zero-filled past a MAVLink 2 truncation;
/// `Ok(None)` for an ACK the core skips.
pub(super) fn command_ack(p: &[u8]) -> Result<Option<mav::COMMAND_ACK_DATA>, ParserError> {
    let a: [u8; mav::COMMAND_ACK_DATA::ENCODED_LEN] = super::padded(p);
    let Some(command) = command(u16::from_le_bytes([a[0], a[1]]))? else {
        return Ok(None);
    };
    let result = super::enum_u8(a[2], "MavResult")?;
    Ok(Some(mav::COMMAND_ACK_DATA {
        command,
        result,
        progress: a[3],
        result_param2: i32::from_le_bytes([a[4], a[5], a[6], a[7]]),
        target_system: a[8],
        target_component: a[9],
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use mavlink::{MavlinkVersion, MessageData};
    use proptest::prelude::*;
    extern crate std;
    use std::format;
    use std::string::String;

    fn shown(r: Result<Option<mav::COMMAND_ACK_DATA>, ParserError>) -> String {
        match r {
            Ok(m) => format!("Ok({m:?})"),
            Err(e) => format!("Err({e:?})"),
        }
    }

    /// What the reader must return: `mavlink`'s deserialiser, except that without `raw-send`
    /// an ACK of a command not in [`OWN_COMMANDS`] is skipped before anything else is read.
    fn reference(p: &[u8]) -> Result<Option<mav::COMMAND_ACK_DATA>, ParserError> {
        let raw = u16::from_le_bytes([
            p.first().copied().unwrap_or(0),
            p.get(1).copied().unwrap_or(0),
        ]);
        if !cfg!(feature = "raw-send") && own_command(raw).is_none() {
            return Ok(None);
        }
        mav::COMMAND_ACK_DATA::deser(MavlinkVersion::V2, p).map(Some)
    }

    #[test]
    fn own_command_is_the_dialects_conversion_on_the_table() {
        for v in 0..=u16::MAX {
            let expected = mav::MavCmd::from_u16(v).filter(|c| OWN_COMMANDS.contains(c));
            assert_eq!(own_command(v), expected, "{v}");
        }
        // Mode, arm, reposition, interval, request, failure injection.
        for v in [176, 400, 192, 511, 512, 420] {
            assert_eq!(own_command(v).map(|c| c as u16), Some(v));
        }
    }

    #[test]
    fn every_command_the_core_sends_or_handles_is_in_the_table() {
        // The core's senders and ACK handlers, by source: a command added to one of them and
        // not to the table would have its ACKs skipped without `raw-send`.
        let sources = [
            include_str!("../offboard/wire/mod.rs"),
            include_str!("../offboard/wire/payload.rs"),
            include_str!("../ground_truth.rs"),
            include_str!("../offboard/requests/refusals.rs"),
            include_str!("../offboard/requests/mod.rs"),
            include_str!("../offboard/mod.rs"),
            include_str!("../client.rs"),
        ];
        let mut named = 0;
        for src in sources {
            for (i, _) in src.match_indices("MavCmd::MAV_CMD_") {
                let name: String = src[i + "MavCmd::".len()..]
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                named += 1;
                assert!(
                    OWN_COMMANDS.iter().any(|c| format!("{c:?}") == name),
                    "{name} is sent or handled by the core but not in OWN_COMMANDS"
                );
            }
        }
        assert!(named >= 10, "{named}");
    }

    #[test]
    fn acks_of_the_cores_commands_read_as_mavlinks() {
        for c in OWN_COMMANDS {
            let m = mav::COMMAND_ACK_DATA {
                command: c,
                result: mav::MavResult::MAV_RESULT_DENIED,
                progress: 7,
                result_param2: -3,
                target_system: 255,
                target_component: 190,
            };
            let mut p = [0u8; 10];
            let n = m.ser(MavlinkVersion::V2, &mut p);
            assert_eq!(command_ack(&p[..n]).unwrap(), Some(m.clone()));
            assert_eq!(command_ack(&p).unwrap(), Some(m));
        }
    }

    #[cfg(not(feature = "raw-send"))]
    #[test]
    fn without_raw_send_an_ack_of_another_command_is_skipped() {
        // NAV_TAKEOFF (22), a command the core never sends; 65535, one the dialect lacks.
        for cmd in [22u16, 65535] {
            let [lo, hi] = cmd.to_le_bytes();
            assert_eq!(command_ack(&[lo, hi, 0]).unwrap(), None);
            assert_eq!(command_ack(&[lo, hi, 200]).unwrap(), None);
        }
    }

    #[cfg(feature = "raw-send")]
    #[test]
    fn with_raw_send_any_command_is_read_and_an_undefined_one_is_an_error() {
        let m = command_ack(&[22, 0, 0]).unwrap().unwrap();
        assert_eq!(m.command, mav::MavCmd::MAV_CMD_NAV_TAKEOFF);
        assert!(matches!(
            command_ack(&[0xff, 0xff, 0]),
            Err(ParserError::InvalidEnum {
                enum_type: "MavCmd",
                value: 65535
            })
        ));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2048))]

        /// Random payloads of every length, with commands drawn from the core's own, the
        /// dialect's others and undefined values, and results valid or not.
        #[test]
        fn reader_agrees_with_mavlink(
            bytes in prop::collection::vec(any::<u8>(), 14),
            pick in 0usize..8,
            result in prop_oneof![0u8..10, any::<u8>()],
        ) {
            let mut b = bytes.clone();
            let cmd = match pick {
                0..=4 => OWN_COMMANDS[pick] as u16,
                5 => 22,
                _ => u16::from_le_bytes([b[0], b[1]]),
            };
            b[..2].copy_from_slice(&cmd.to_le_bytes());
            b[2] = result;
            for len in 0..=b.len() {
                let p = &b[..len];
                prop_assert_eq!(shown(command_ack(p)), shown(reference(p)), "{:?}", p);
            }
        }
    }
}
