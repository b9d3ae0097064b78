//! The height above the pad without and with ground truth, and the client asking a simulator
//! for it: the AMSL fallback (alt − alt at arming, relative_alt ignored), the switch between
//! sources when ground truth comes and stops, the `landed` fallback on the same height, and
//! the SET_MESSAGE_INTERVAL / AUTOPILOT_VERSION requests with their pacing and refusals.
#![cfg(feature = "ground-truth")]

mod offboard_rig;
mod tlog_support;

use nexus_core::client::{Client, ClientConfig};
use nexus_core::frame::MAX_FRAME_LEN;
use nexus_core::ground_truth::{
    is_px4_sitl, GroundTruth, GroundTruthState, AUTO_STREAM_TRIES, GROUND_TRUTH_RETRY_MS,
    PX4_SITL_UID, PX4_SOC_ARCH_ID_SITL, VERSION_TRIES,
};
use nexus_core::telemetry::{LinkIds, GROUND_TRUTH_FRESH_MS};
use nexus_core::{mav, Frame, HeightSource, Instant, Mode, Msg, Telemetry};
use offboard_rig::decode;

const SYS: u8 = 1;

fn heartbeat(armed: bool) -> Msg {
    let mut base = mav::MavModeFlag::MAV_MODE_FLAG_CUSTOM_MODE_ENABLED;
    if armed {
        base |= mav::MavModeFlag::MAV_MODE_FLAG_SAFETY_ARMED;
    }
    Msg::Heartbeat(mav::HEARTBEAT_DATA {
        custom_mode: Mode::Hold.custom_mode(),
        mavtype: mav::MavType::MAV_TYPE_QUADROTOR,
        autopilot: mav::MavAutopilot::MAV_AUTOPILOT_PX4,
        base_mode: base,
        system_status: mav::MavState::MAV_STATE_STANDBY,
        mavlink_version: 3,
    })
}

/// GLOBAL_POSITION_INT: the estimate `alt_mm` AMSL and a `relative_alt_mm` that need not agree
/// (PX4 re-estimates home).
fn position(ms: u32, alt_mm: i32, relative_alt_mm: i32) -> Msg {
    Msg::GlobalPositionInt(mav::GLOBAL_POSITION_INT_DATA {
        time_boot_ms: ms,
        lat: 473_977_420,
        lon: 85_455_940,
        alt: alt_mm,
        relative_alt: relative_alt_mm,
        vx: 0,
        vy: 0,
        vz: 0,
        hdg: 0,
    })
}

fn truth(alt_mm: i32) -> Msg {
    Msg::HilStateQuaternion(mav::HIL_STATE_QUATERNION_DATA {
        attitude_quaternion: [1.0, 0.0, 0.0, 0.0],
        alt: alt_mm,
        ..Default::default()
    })
}

fn feed(tel: &mut Telemetry<8>, msg: Msg) {
    assert!(tel.handle(Instant::ZERO, &Frame::from_msg(SYS, 1, msg)));
}

#[test]
fn without_ground_truth_the_height_is_alt_since_arming_not_relative_alt() {
    let mut tel: Telemetry<8> = Telemetry::new(LinkIds::default());
    feed(&mut tel, heartbeat(false));
    assert_eq!(tel.height(), None, "no position yet");
    // On the pad; the estimate drifts 0.5 m before arming (as PX4's does).
    feed(&mut tel, position(1_000, 488_000, 0));
    feed(&mut tel, position(2_000, 488_500, 560));
    assert_eq!(tel.height(), Some((0.5, HeightSource::AmslSinceArm)));
    // Arming latches the pad: height 0 from here.
    feed(&mut tel, heartbeat(true));
    assert_eq!(tel.height_m(), Some(0.0));
    // Climb to 5 m while relative_alt jumps 1.4 m low (home re-estimated).
    feed(&mut tel, position(3_000, 493_500, 3_600));
    assert_eq!(tel.height(), Some((5.0, HeightSource::AmslSinceArm)));
    assert_eq!(tel.relative_alt_m(), Some(3.6));
    let snap = tel.snapshot(None);
    assert_eq!(snap.height_m, Some(5.0));
    assert_eq!(snap.height_source, Some(HeightSource::AmslSinceArm));
    // Land (0.2 m above the first pad) and disarm: `landed` reads the same height.
    feed(&mut tel, position(9_000, 493_700, 0));
    feed(&mut tel, heartbeat(false));
    assert_eq!(tel.landed(), Some(false), "5.2 m up is not on the pad");
    feed(&mut tel, position(9_500, 488_700, 100));
    assert_eq!(tel.height_m(), Some(0.2));
    assert_eq!(tel.landed(), Some(true));
    // The next arming re-latches: this pad is 0.2 m higher.
    feed(&mut tel, heartbeat(true));
    feed(&mut tel, position(10_000, 489_700, 900));
    assert_eq!(tel.height_m(), Some(1.0));
}

#[test]
fn the_source_switches_to_amsl_when_ground_truth_stops_and_back_when_it_returns() {
    let mut tel: Telemetry<8> = Telemetry::new(LinkIds::default());
    feed(&mut tel, heartbeat(false));
    feed(&mut tel, position(1_000, 488_000, 0));
    feed(&mut tel, truth(500_000)); // the simulator's own altitude datum
    feed(&mut tel, heartbeat(true));
    feed(&mut tel, position(2_000, 493_300, 3_000));
    feed(&mut tel, truth(505_000));
    assert_eq!(tel.height(), Some((5.0, HeightSource::GroundTruth)));
    assert!(tel.ground_truth_fresh());
    // Ground truth stops; sim time runs on with the estimate.
    let last = 2_000 + GROUND_TRUTH_FRESH_MS as u32;
    feed(&mut tel, position(last, 493_300, 3_000));
    assert_eq!(
        tel.height_source(),
        Some(HeightSource::GroundTruth),
        "still fresh"
    );
    feed(&mut tel, position(last + 1, 493_300, 3_000));
    assert_eq!(tel.height(), Some((5.3, HeightSource::AmslSinceArm)));
    assert_eq!(
        tel.snapshot(None).height_source,
        Some(HeightSource::AmslSinceArm)
    );
    // It comes back: truth again, same pad.
    feed(&mut tel, truth(504_000));
    assert_eq!(tel.height(), Some((4.0, HeightSource::GroundTruth)));
}

// --- the client's requests ------------------------------------------------------------------

type C = Client<4, 8, 8, 4>;

struct Link {
    client: C,
    ms: u64,
}

impl Link {
    fn new(ground_truth: GroundTruth) -> Link {
        Link {
            client: C::new(ClientConfig {
                ground_truth,
                ..ClientConfig::default()
            }),
            ms: 0,
        }
    }

    fn now(&self) -> Instant {
        Instant::from_millis(self.ms)
    }

    fn deliver(&mut self, msg: Msg) {
        let now = self.now();
        self.client.handle(now, &Frame::from_msg(SYS, 1, msg));
    }

    /// The COMMAND_LONGs the client sends now: (command, param1, param2).
    fn commands(&mut self) -> Vec<(mav::MavCmd, f32, f32)> {
        let mut buf = [0u8; MAX_FRAME_LEN];
        let now = self.now();
        let mut out = Vec::new();
        while let Some(n) = self.client.poll_transmit(now, &mut buf) {
            if let mav::MavMessage::COMMAND_LONG(c) = decode(&buf[..n]) {
                out.push((c.command, c.param1, c.param2));
            }
        }
        out
    }

    fn advance(&mut self, ms: u64) {
        self.ms += ms;
    }

    fn ack(&mut self, command: mav::MavCmd, result: mav::MavResult) {
        self.deliver(Msg::CommandAck(mav::COMMAND_ACK_DATA {
            command,
            result,
            target_system: 255,
            target_component: 240,
            ..Default::default()
        }));
    }
}

const INTERVAL: mav::MavCmd = mav::MavCmd::MAV_CMD_SET_MESSAGE_INTERVAL;
const REQUEST: mav::MavCmd = mav::MavCmd::MAV_CMD_REQUEST_MESSAGE;

#[test]
fn always_asks_for_hil_state_quaternion_every_second_until_it_streams() {
    let mut l = Link::new(GroundTruth::Always);
    assert!(
        l.commands().is_empty(),
        "nothing before the first heartbeat"
    );
    l.deliver(heartbeat(false));
    assert_eq!(l.commands(), vec![(INTERVAL, 115.0, 40_000.0)]);
    l.advance(GROUND_TRUTH_RETRY_MS - 1);
    assert!(l.commands().is_empty(), "paced");
    assert_eq!(
        l.client.next_deadline().map(|d| d.total_millis()),
        Some(GROUND_TRUTH_RETRY_MS),
        "wakes the driver for the retry"
    );
    l.advance(1);
    assert_eq!(l.commands(), vec![(INTERVAL, 115.0, 40_000.0)]);
    l.ack(INTERVAL, mav::MavResult::MAV_RESULT_ACCEPTED);
    // Streams: no more requests, however long.
    l.deliver(position(1_000, 488_000, 0));
    for k in 0..30 {
        l.advance(100);
        l.deliver(position(1_000 + 100 * k, 488_000, 0));
        l.deliver(truth(500_000));
        assert!(l.commands().is_empty(), "asked again while streaming");
    }
    assert_eq!(
        l.client.ground_truth().state(),
        GroundTruthState::Requesting
    );
    // The stream stops (say, PX4 rebooted its mavlink): asked again once stale.
    for k in 0..6 {
        l.advance(100);
        l.deliver(position(4_000 + 100 * k, 488_000, 0));
    }
    assert!(!l.client.telemetry().ground_truth_fresh());
    assert_eq!(l.commands(), vec![(INTERVAL, 115.0, 40_000.0)]);
}

#[test]
fn a_denied_interval_stops_the_requests_and_leaves_the_arm_alone() {
    let mut l = Link::new(GroundTruth::Always);
    l.deliver(heartbeat(false));
    assert_eq!(l.commands().len(), 1);
    // An arm is outstanding when the refusal of 511 comes: it must not count against the arm.
    let now = l.now();
    l.client.arm(now);
    assert!(l.client.offboard().pending().arm);
    l.ack(INTERVAL, mav::MavResult::MAV_RESULT_DENIED);
    assert!(l.client.offboard().pending().arm, "the arm was dropped");
    assert!(
        l.client.poll_event().is_none(),
        "the 511 refusal was reported as the offboard machine's"
    );
    assert_eq!(
        l.client.ground_truth().state(),
        GroundTruthState::Refused(mav::MavResult::MAV_RESULT_DENIED as u8)
    );
    for _ in 0..5 {
        l.advance(GROUND_TRUTH_RETRY_MS);
        assert!(!l
            .commands()
            .iter()
            .any(|(c, _, _)| *c == INTERVAL || *c == REQUEST));
    }
}

#[test]
fn never_asks_nothing() {
    let mut l = Link::new(GroundTruth::Never);
    l.deliver(heartbeat(false));
    for _ in 0..5 {
        l.advance(GROUND_TRUTH_RETRY_MS);
        assert!(l.commands().is_empty());
    }
    assert_eq!(
        l.client.ground_truth().state(),
        GroundTruthState::NotSimulator
    );
}

/// AUTOPILOT_VERSION as PX4 SITL instance `sysid − 1` fills it (mavlink_main.cpp).
/// What PX4 SITL (a POSIX build: no GUID) answers as system `sysid`: the form of the recorded
/// answer in `replayed_px4_sitl_answer_identifies_it`.
fn sitl_version(sysid: u8) -> mav::AUTOPILOT_VERSION_DATA {
    let mut uid2 = [0u8; 18];
    uid2[0] = sysid - 1;
    mav::AUTOPILOT_VERSION_DATA {
        flight_sw_version: 0x0112_0000,
        board_version: 1,
        vendor_id: 0,
        product_id: 0,
        uid: PX4_SITL_UID + u64::from(sysid - 1),
        uid2,
        ..Default::default()
    }
}

#[test]
fn auto_asks_autopilot_version_and_requests_ground_truth_from_sitl_only() {
    // PX4 SITL.
    let mut l = Link::new(GroundTruth::Auto);
    l.deliver(heartbeat(false));
    assert_eq!(l.commands(), vec![(REQUEST, 148.0, 0.0)]);
    l.deliver(Msg::AutopilotVersion(sitl_version(SYS)));
    assert_eq!(l.client.ground_truth().simulator(), Some(true));
    assert_eq!(l.commands(), vec![(INTERVAL, 115.0, 40_000.0)]);

    // A NuttX board (a Pixhawk: USB ids, board_version = product id): not a simulator.
    let mut l = Link::new(GroundTruth::Auto);
    l.deliver(heartbeat(false));
    assert_eq!(l.commands().len(), 1);
    let mut board = sitl_version(SYS);
    (board.vendor_id, board.product_id, board.board_version) = (0x3185, 0x0035, 0x0035);
    board.uid2[..2].copy_from_slice(&[0x00, 0x06]);
    l.deliver(Msg::AutopilotVersion(board));
    assert_eq!(l.client.ground_truth().simulator(), Some(false));
    l.advance(GROUND_TRUTH_RETRY_MS);
    assert!(l.commands().is_empty());

    // Silence: AUTOPILOT_VERSION asked VERSION_TRIES times, a second apart, then given up.
    let mut l = Link::new(GroundTruth::Auto);
    l.deliver(heartbeat(false));
    let mut asked = l.commands().len();
    for _ in 0..VERSION_TRIES + 3 {
        l.advance(GROUND_TRUTH_RETRY_MS);
        asked += l.commands().len();
    }
    assert_eq!(asked, VERSION_TRIES as usize);
    assert_eq!(
        l.client.ground_truth().state(),
        GroundTruthState::NotSimulator
    );
}

#[test]
fn auto_stops_asking_a_posix_px4_that_accepts_but_never_streams() {
    let mut l = Link::new(GroundTruth::Auto);
    l.deliver(heartbeat(false));
    l.commands();
    l.deliver(Msg::AutopilotVersion(sitl_version(SYS)));
    let mut asked = 0;
    for _ in 0..AUTO_STREAM_TRIES + 5 {
        asked += l.commands().len();
        l.ack(INTERVAL, mav::MavResult::MAV_RESULT_ACCEPTED);
        l.advance(GROUND_TRUTH_RETRY_MS);
    }
    assert_eq!(asked, AUTO_STREAM_TRIES as usize);
    assert_eq!(l.client.ground_truth().state(), GroundTruthState::NoStream);
}

#[test]
fn sitl_is_recognised_whatever_its_instance() {
    for sysid in [1u8, 2, 6, 11, 200] {
        assert!(is_px4_sitl(&sitl_version(sysid), sysid), "sysid {sysid}");
        assert!(
            !is_px4_sitl(&sitl_version(sysid), sysid.wrapping_add(1)),
            "sysid {sysid} as another instance"
        );
    }
    // A build with a GUID: the SITL architecture id, then the override UUID.
    for sysid in [1u8, 6] {
        let mut guid = sitl_version(sysid);
        guid.uid2[..2].copy_from_slice(&PX4_SOC_ARCH_ID_SITL.to_be_bytes());
        guid.uid2[0] += sysid - 1;
        guid.uid2[2..].copy_from_slice(b"SIMULATIONID0000");
        assert!(is_px4_sitl(&guid, sysid), "GUID form, sysid {sysid}");
        guid.uid2[1] = 0x04; // the Raspberry Pi's architecture
        assert!(
            !is_px4_sitl(&guid, sysid),
            "another architecture, sysid {sysid}"
        );
    }
    // PX4 on a Linux board: POSIX and no GUID too, but its own override UUID ("RPIID000…").
    let mut rpi = sitl_version(1);
    let word = |t: &[u8]| u64::from(u32::from_le_bytes(t.try_into().unwrap()));
    rpi.uid = word(b"D000") << 32 | word(b"0000");
    assert!(!is_px4_sitl(&rpi, 1));
    // A GUID byte past the head set: not the zero GUID of a POSIX build.
    let mut odd = sitl_version(1);
    odd.uid2[9] = 1;
    assert!(!is_px4_sitl(&odd, 1));
}

/// The answer real PX4 SITL gave (PX4 main of March 2026, instance 5, system id 6; recorded
/// with pymavlink: fixtures/px4-traces/README.md): it identifies as SITL for its own system id
/// and for no other.
#[test]
fn replayed_px4_sitl_answer_identifies_it() {
    const RECORDED: &[u8] =
        include_bytes!("../../fixtures/px4-traces/autopilot-version-sitl-i5.tlog");
    let versions: Vec<_> = tlog_support::read_tlog(RECORDED)
        .into_iter()
        .filter_map(|(_, f)| match f.msg {
            Msg::AutopilotVersion(v) => Some((f.header.sysid, v)),
            _ => None,
        })
        .collect();
    assert_eq!(
        versions.len(),
        1,
        "the recording holds one AUTOPILOT_VERSION"
    );
    let (sysid, v) = &versions[0];
    assert_eq!(*sysid, 6);
    assert!(is_px4_sitl(v, 6));
    assert!(!is_px4_sitl(v, 1) && !is_px4_sitl(v, 7));
}
