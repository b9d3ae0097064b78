//! Pacing under SITL lockstep: streams are due when either clock has run their period (so PX4
//! is not starved at 10× and they keep flowing when sim time stalls); retries count sim time;
//! next_deadline is a wall deadline a driver can sleep until without spinning.

mod offboard_rig;

use nexus_core::frame::{Encoder, MAX_FRAME_LEN};
use nexus_core::mav;
use nexus_core::msg::Frame;
use nexus_core::offboard::{Offboard, OffboardConfig};
use nexus_core::telemetry::{LinkIds, Telemetry};
use nexus_core::{Instant, Mode, RcSticks};
use offboard_rig::{FakePx4, Rig};

fn heartbeats(rig: &Rig, from_wall_ms: u64) -> Vec<(u64, u64)> {
    rig.sent
        .iter()
        .filter(|s| s.wall_ms >= from_wall_ms && matches!(s.msg, mav::MavMessage::HEARTBEAT(_)))
        .map(|s| (s.wall_ms, s.sim_ms))
        .collect()
}

fn rc_frames(rig: &Rig, from_wall_ms: u64) -> Vec<(u64, u64)> {
    rig.sent
        .iter()
        .filter(|s| {
            s.wall_ms >= from_wall_ms && matches!(s.msg, mav::MavMessage::MANUAL_CONTROL(_))
        })
        .map(|s| (s.wall_ms, s.sim_ms))
        .collect()
}

#[test]
fn at_ten_times_speed_streams_follow_sim_time() {
    let mut rig = Rig::new();
    rig.speed = 10.0;
    rig.step_ms = 1;
    rig.boot();
    rig.ob.set_rc(RcSticks::NEUTRAL);
    let from = rig.wall_ms() + 100;
    rig.run_ms(2_100);
    // 2 s of wall time is 20 s of PX4's time: 20 heartbeats (1 Hz sim), 400 stick frames (20 Hz).
    let hb = heartbeats(&rig, from);
    assert!((19..=21).contains(&hb.len()), "{}", hb.len());
    for w in hb.windows(2) {
        let sim_gap = w[1].1 - w[0].1;
        assert!((990..=1_020).contains(&sim_gap), "{hb:?}");
    }
    let rc = rc_frames(&rig, from);
    assert!((390..=410).contains(&rc.len()), "{}", rc.len());
}

#[test]
fn with_sim_time_stalled_streams_follow_wall_time_and_retries_wait() {
    let mut rig = Rig::new();
    rig.boot();
    rig.ob.set_rc(RcSticks::NEUTRAL);
    rig.px4.two_mode_acks = true;
    rig.ob.set_mode(Mode::Takeoff);
    rig.pump();
    assert_eq!(rig.mode_commands().len(), 1);
    // PX4 accepted at once, but its clock stalls before the heartbeat can show it.
    rig.speed = 0.0;
    let from = rig.wall_ms();
    rig.run_ms(5_000);
    let hb = heartbeats(&rig, from + 1);
    assert_eq!(hb.len(), 5, "1 Hz of wall time: {hb:?}");
    for w in hb.windows(2) {
        assert_eq!(w[1].0 - w[0].0, 1_000);
    }
    let rc = rc_frames(&rig, from + 1);
    assert!((99..=101).contains(&rc.len()), "{}", rc.len());
    // No sim time passed: the mode is not re-commanded, however long the wall clock runs.
    assert_eq!(rig.mode_commands().len(), 1);
    rig.speed = 1.0;
    assert!(rig.run_until(3_000, |r| r.ob.mode(&r.tel) == Some(Mode::Takeoff)));
    rig.run_ms(3_000);
    assert_eq!(rig.mode_commands().len(), 1);
}

#[test]
fn retries_before_sim_time_is_known_count_wall_time() {
    // A vehicle that has only sent heartbeats: no time_boot_ms yet.
    let mut tel = Telemetry::<4>::new(LinkIds::default());
    let mut ob = Offboard::<4>::new(OffboardConfig::default());
    let mut enc = Encoder::new(255, 240);
    let mut buf = [0u8; MAX_FRAME_LEN];
    let f = Frame::from_msg(1, 1, FakePx4::default().heartbeat(0));
    assert!(tel.handle(Instant::ZERO, &f));
    ob.handle(Instant::ZERO, &tel, &f);
    assert_eq!(
        ob.next_deadline(),
        Some(Instant::ZERO),
        "the first heartbeat is due"
    );
    ob.set_mode(Mode::Land);
    let mut sent = |ob: &mut Offboard<4>, ms: u64| {
        let mut n = 0;
        while let Some(len) = ob.poll_transmit(Instant::from_millis(ms), &tel, &mut enc, &mut buf) {
            if let mav::MavMessage::COMMAND_LONG(_) = offboard_rig::decode(&buf[..len]) {
                n += 1;
            }
        }
        n
    };
    assert_eq!(sent(&mut ob, 0), 1);
    // The wall-time retry timer is the next deadline after the heartbeat's.
    assert_eq!(ob.next_deadline(), Some(Instant::from_millis(1_000)));
    assert_eq!(sent(&mut ob, 1_000), 0);
    assert_eq!(ob.next_deadline(), Some(Instant::from_millis(1_500)));
    assert_eq!(sent(&mut ob, 1_499), 0);
    assert_eq!(sent(&mut ob, 1_500), 1);
    assert_eq!(ob.next_deadline(), Some(Instant::from_millis(2_000)));
}

#[test]
fn next_deadline_tracks_the_streams() {
    let mut rig = Rig::new();
    rig.boot();
    rig.run_until(2_000, |r| r.wall_ms() % 1_000 == 500);
    let last_hb = heartbeats(&rig, 0).last().unwrap().0;
    assert_eq!(
        rig.ob.next_deadline(),
        Some(Instant::from_millis(last_hb + 1_000))
    );
    rig.ob.set_rc(RcSticks::NEUTRAL);
    rig.pump();
    let last_rc = rc_frames(&rig, 0).last().unwrap().0;
    assert_eq!(
        rig.ob.next_deadline(),
        Some(Instant::from_millis(last_rc + 50))
    );
    rig.ob.stop_rc();
    assert_eq!(
        rig.ob.next_deadline(),
        Some(Instant::from_millis(last_hb + 1_000))
    );
}

#[test]
fn a_small_buffer_gets_nothing_and_loses_nothing() {
    let tel = Telemetry::<4>::new(LinkIds::default());
    let mut ob = Offboard::<4>::new(OffboardConfig::default());
    let mut enc = Encoder::new(255, 240);
    let mut small = [0u8; nexus_core::offboard::MIN_TX_BUF - 1];
    assert_eq!(
        ob.poll_transmit(Instant::ZERO, &tel, &mut enc, &mut small),
        None
    );
    let mut buf = [0u8; nexus_core::offboard::MIN_TX_BUF];
    let n = ob
        .poll_transmit(Instant::ZERO, &tel, &mut enc, &mut buf)
        .unwrap();
    assert!(matches!(
        offboard_rig::decode(&buf[..n]),
        mav::MavMessage::HEARTBEAT(_)
    ));
}
