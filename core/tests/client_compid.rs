//! The autopilot's component id: by default the component of the first autopilot HEARTBEAT
//! is latched and addressed; [`ClientConfig::target_compid`] pins one from the start, so
//! another component's heartbeat neither connects nor redirects the client.

mod offboard_rig;

use nexus_core::action::Action;
use nexus_core::client::{Client, ClientConfig};
use nexus_core::frame::MAX_FRAME_LEN;
use nexus_core::mav;
use nexus_core::msg::Frame;
use nexus_core::{Instant, Mode};
use offboard_rig::{decode, FakePx4};

type TestClient = Client<4, 8, 8, 4>;

/// The target component of every COMMAND_LONG the client sends at `now` (the mode, the
/// identification request).
fn command_targets(c: &mut TestClient, now: Instant) -> Vec<u8> {
    let mut buf = [0u8; MAX_FRAME_LEN];
    let mut out = Vec::new();
    while let Some(n) = c.poll_transmit(now, &mut buf) {
        if let mav::MavMessage::COMMAND_LONG(m) = decode(&buf[..n]) {
            out.push(m.target_component);
        }
    }
    out
}

fn heartbeat_from(compid: u8) -> Frame {
    Frame::from_msg(1, compid, FakePx4::default().heartbeat(0))
}

#[test]
fn the_first_autopilot_heartbeats_component_is_latched_and_addressed() {
    let mut c = TestClient::new(ClientConfig::default());
    let now = Instant::from_millis(0);
    assert!(c.handle(now, &heartbeat_from(2)));
    assert_eq!(c.telemetry().target_compid(), 2);
    // Component 1 heartbeating later is another component now, not the autopilot.
    assert!(!c.handle(now, &heartbeat_from(1)));
    c.apply(now, &Action::SetMode(Mode::Position)).unwrap();
    let to = command_targets(&mut c, now);
    assert!(!to.is_empty() && to.iter().all(|&t| t == 2), "{to:?}");
}

#[test]
fn a_pinned_component_ignores_the_others_from_the_start() {
    let mut c = TestClient::new(ClientConfig {
        target_compid: Some(2),
        ..ClientConfig::default()
    });
    let now = Instant::from_millis(0);
    assert!(
        !c.handle(now, &heartbeat_from(1)),
        "component 1 is not ours"
    );
    assert!(!c.telemetry().connected());
    assert!(c.handle(now, &heartbeat_from(2)));
    assert!(c.telemetry().connected());
    assert_eq!(c.telemetry().target_compid(), 2);
    c.apply(now, &Action::SetMode(Mode::Position)).unwrap();
    let to = command_targets(&mut c, now);
    assert!(!to.is_empty() && to.iter().all(|&t| t == 2), "{to:?}");
}
