//! Real PX4 refusing a goto outside its geofence, replayed through the core: PX4 SITL (PX4 main
//! of 2026-03, SIH, instance 40 = system 41, 4×) holding `examples/fenced.plan`'s fence, a
//! `nexus run` program's `goto` 150 m north after its takeoff. PX4's commander acked the
//! DO_REPOSITION ACCEPTED and its navigator said "Reposition is outside geofence" (critical)
//! 1 ms later; the vehicle stayed in Hold. The core must report the goto refused, in PX4's
//! words.
//!
//! Fixture: `fixtures/px4-traces/goto-outside-fence-x4.px4-to-nexus.tlog` (see its README).
#![cfg(feature = "geofence")]

mod tlog_support;

use nexus_core::offboard::{Command, Offboard, OffboardConfig, OffboardEvent};
use nexus_core::telemetry::LinkIds;
use nexus_core::{mav, Instant, Mode, Msg, Telemetry};
use tlog_support::read_tlog;

const PX4: &[u8] =
    include_bytes!("../../fixtures/px4-traces/goto-outside-fence-x4.px4-to-nexus.tlog");

const IDS: LinkIds = LinkIds {
    target_sysid: 41,
    own_sysid: 255,
    own_compid: 240,
};

#[test]
fn px4s_accepted_then_refused_goto_is_reported_refused_in_its_words() {
    let frames = read_tlog(PX4);
    let t0 = frames[0].0;
    let mut tel: Telemetry<16> = Telemetry::new(IDS);
    let mut ob: Offboard<16> = Offboard::new(OffboardConfig::default());
    let mut enc = nexus_core::frame::Encoder::new(255, 240);
    let mut buf = [0u8; nexus_core::frame::MAX_FRAME_LEN];
    let mut events = Vec::new();
    let mut goto_at = None;
    let mut acks_192 = 0;
    for (ts, f) in &frames {
        let now = Instant::from_micros(ts - t0);
        if let Msg::CommandAck(a) = &f.msg {
            if a.command == mav::MavCmd::MAV_CMD_DO_REPOSITION && goto_at.is_none() {
                // nexus sent its goto 3 ms before this ack: send ours now.
                acks_192 += 1;
                assert_eq!(a.result, mav::MavResult::MAV_RESULT_ACCEPTED);
                ob.goto_flu(&tel, 150.0, 0.0, 5.0, None).unwrap();
                let mut sent_reposition = false;
                while let Some(n) = ob.poll_transmit(now, &tel, &mut enc, &mut buf) {
                    // COMMAND_INT is message 75: the goto went out.
                    sent_reposition |= buf[7] == 75 && buf[8] == 0;
                    assert!(n > 0);
                }
                assert!(sent_reposition, "the goto went out");
                goto_at = Some(ts - t0);
            }
        }
        if tel.handle(now, f) {
            ob.handle(now, &tel, f);
        }
        // Let the refusal's text window close on the clock.
        while ob.poll_transmit(now, &tel, &mut enc, &mut buf).is_some() {}
        while let Some(e) = ob.poll_event() {
            events.push((ts - t0, e));
        }
    }
    assert_eq!(acks_192, 1, "one DO_REPOSITION in the recording");
    let goto_at = goto_at.unwrap();
    let refused: Vec<_> = events
        .iter()
        .filter_map(|(t, e)| match e {
            OffboardEvent::Refused(r) if r.command == Command::Reposition => Some((*t, r)),
            _ => None,
        })
        .collect();
    assert_eq!(refused.len(), 1, "{events:?}");
    let (at, r) = refused[0];
    assert!(at - goto_at < 2_000_000, "within the refusal window");
    assert_eq!(r.result, Some(0));
    assert_eq!(
        r.to_string(),
        "reposition refused after an ACCEPTED ack: Reposition is outside geofence"
    );
    // PX4 stayed in Hold.
    assert_eq!(tel.mode(), Some(Mode::Hold));
}
