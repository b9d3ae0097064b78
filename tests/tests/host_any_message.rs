//! Any message over UDP against the simulated PX4 (instance 99, in real time: lockstep would only step inside a wait): one the core has no verb for
//! sent on the link and answered, and one the core does not decode subscribed to and received
//! decoded in full.

mod host_support;

use nexus_host::groups::InfoApi;
use std::time::Duration;

use host_support::*;
use nexus_core::mav;

#[test]
fn an_arbitrary_message_is_sent_and_another_subscribed() {
    let (_sim, op) = connect(realtime(99));
    // BATTERY_STATUS (147): PX4 streams it, the core's subset does not decode it.
    let battery = op.subscribe(147).unwrap();
    let got = battery
        .recv_timeout(Duration::from_secs(30))
        .expect("a BATTERY_STATUS");
    match got {
        mav::MavMessage::BATTERY_STATUS(b) => {
            assert!(b.battery_remaining > 0, "{b:?}");
        }
        other => panic!("subscribed to 147, got {other:?}"),
    }
    // PARAM_REQUEST_READ (20): no verb sends it; PX4 answers with a PARAM_VALUE.
    let values = op.subscribe(22).unwrap();
    op.send_message(&mav::MavMessage::PARAM_REQUEST_READ(
        mav::PARAM_REQUEST_READ_DATA {
            param_index: -1,
            target_system: op.options().client_config().ids.target_sysid,
            target_component: 1,
            param_id: "COM_OF_LOSS_T".into(),
        },
    ))
    .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        let m = values.recv_timeout(left).expect("PX4 answers the request");
        if let mav::MavMessage::PARAM_VALUE(v) = m {
            if v.param_id.to_str().unwrap().trim_end_matches('\0') == "COM_OF_LOSS_T" {
                assert_eq!(v.param_value, 1.0);
                break;
            }
        }
    }
    // A dropped receiver ends its subscription; the link goes on.
    drop(battery);
    drop(values);
    assert!(op.connected());
}
