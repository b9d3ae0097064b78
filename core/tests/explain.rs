//! Every failure explained: each kind of [`Explanation`] produced by the core Client from a
//! scripted PX4 (the offboard rig's), as a driver gets it when the step or wait settles.

mod offboard_rig;

use nexus_core::action::Action;
use nexus_core::client::{Client, ClientConfig, Event};
use nexus_core::engine::{Condition, Op, Program, Reason, Step, Wait, WaitId, WaitResult};
use nexus_core::explain::Explanation;
use nexus_core::frame::MAX_FRAME_LEN;
use nexus_core::mav;
use nexus_core::msg::{Frame, Msg};
use nexus_core::offboard::{ArmWait, GiveUpReason, MissionError, OffboardConfig, TransferStage};
use nexus_core::{Instant, Mode};
use offboard_rig::{box_mission, decode, statustext, FakePx4};

type TestClient = Client<8, 16, 32, 8>;

/// The Client against the scripted PX4, wall and sim clocks at 1:1.
struct Drive {
    client: TestClient,
    px4: FakePx4,
    wall_ms: u64,
    /// Frames that never reach PX4 (a lossy link, or a PX4 that ignores them).
    drop: fn(&mav::MavMessage) -> bool,
    /// PX4 accepts the arm but never leaves the ground.
    stuck_on_ground: bool,
    events: Vec<Event>,
    /// Each failed program step's explanation, asked for as its event came (as a pump does).
    step_whys: Vec<(usize, String)>,
}

impl Drive {
    fn new() -> Drive {
        Drive::with(FakePx4 {
            ready_at_ms: 0,
            arm_ok_at_ms: 0,
            ..FakePx4::default()
        })
    }

    fn with(px4: FakePx4) -> Drive {
        let config = ClientConfig {
            offboard: OffboardConfig {
                wait_clear_s: 0.5,
                ..OffboardConfig::default()
            },
            ..ClientConfig::default()
        };
        Drive {
            client: Client::new(config),
            px4,
            wall_ms: 0,
            drop: |_| false,
            stuck_on_ground: false,
            events: Vec::new(),
            step_whys: Vec::new(),
        }
    }

    fn now(&self) -> Instant {
        Instant::from_millis(self.wall_ms)
    }

    fn deliver(&mut self, msg: Msg) {
        let now = self.now();
        self.client.handle(now, &Frame::from_msg(1, 1, msg));
        self.transmit();
    }

    fn transmit(&mut self) {
        let mut buf = [0u8; MAX_FRAME_LEN];
        let now = self.now();
        while let Some(n) = self.client.poll_transmit(now, &mut buf) {
            let msg = decode(&buf[..n]);
            if (self.drop)(&msg) {
                continue;
            }
            for reply in self.px4.receive(self.wall_ms, &msg) {
                self.client.handle(now, &Frame::from_msg(1, 1, reply));
            }
        }
        while let Some(e) = self.client.poll_event() {
            if let Event::Step {
                step,
                passed: false,
                ..
            } = e
            {
                if let Some(why) = self.client.explain_step(now, step) {
                    self.step_whys.push((step, why.to_string()));
                }
            }
            self.events.push(e);
        }
    }

    fn step(&mut self) {
        self.wall_ms += 10;
        if self.stuck_on_ground {
            self.px4.takeoff_detect_at = None;
        }
        for m in self.px4.step(self.wall_ms) {
            self.deliver(m);
        }
        self.transmit();
    }

    fn run_until(&mut self, max_ms: u64, mut done: impl FnMut(&Drive) -> bool) -> bool {
        let end = self.wall_ms + max_ms;
        while self.wall_ms < end {
            self.step();
            if done(self) {
                return true;
            }
        }
        false
    }

    fn boot(&mut self) {
        assert!(self.run_until(10_000, |d| d.client.telemetry().global_position().is_some()));
    }

    /// Register `wait`, run until it settles, and explain it at once (as a driver would).
    fn settle(&mut self, wait: Wait, max_ms: u64) -> (WaitResult, Option<Explanation>) {
        let now = self.now();
        let id = self.client.wait(now, &wait).unwrap();
        self.settle_id(id, &wait, max_ms)
    }

    fn settle_id(
        &mut self,
        id: WaitId,
        wait: &Wait,
        max_ms: u64,
    ) -> (WaitResult, Option<Explanation>) {
        let end = self.wall_ms + max_ms;
        loop {
            let found = self
                .events
                .iter()
                .position(|e| matches!(e, Event::Settled { id: i, .. } if *i == id));
            if let Some(i) = found {
                let Event::Settled { result, .. } = self.events.remove(i) else {
                    unreachable!()
                };
                let why = self.client.explain(self.now(), wait, &result);
                return (result, why);
            }
            assert!(self.wall_ms < end, "the wait never settled");
            self.step();
        }
    }
}

fn is_command(m: &mav::MavMessage, cmd: mav::MavCmd) -> bool {
    matches!(m, mav::MavMessage::COMMAND_LONG(c) if c.command == cmd)
}

fn preflight_fail() -> Msg {
    statustext(
        mav::MavSeverity::MAV_SEVERITY_CRITICAL,
        "Preflight Fail: heading estimate not stable\t",
        0,
        0,
    )
}

#[test]
fn an_arm_never_sent_says_px4_was_not_armable_in_its_words() {
    // PX4 in Mission mode without a mission: never armable, system_status stays UNINIT.
    let mut d = Drive::with(FakePx4 {
        ready_at_ms: u64::MAX,
        arm_ok_at_ms: u64::MAX,
        ..FakePx4::default()
    });
    d.boot();
    d.deliver(preflight_fail());
    let now = d.now();
    d.client
        .apply(now, &Action::SetMode(Mode::Mission))
        .unwrap();
    d.client.apply(d.now(), &Action::Arm).unwrap();
    let (r, why) = d.settle(Wait::armed().timeout_s(25.0), 40_000);
    assert_eq!(r.reason, Reason::Timeout);
    let why = why.unwrap();
    assert!(
        matches!(
            why,
            Explanation::ArmNotSent {
                wait: ArmWait::Settling { .. },
                system_status: Some(0),
                ..
            }
        ),
        "{why:?}"
    );
    assert_eq!(
        why.to_string(),
        "arm not sent: PX4 not armable for 25 s in Mission mode, with no mission uploaded on \
         this link (system_status UNINIT; last texts: 'Preflight Fail: heading estimate not \
         stable')"
    );
}

#[test]
fn the_vehicles_words_in_an_explanation_cannot_break_its_line() {
    // A text with a line break, a carriage return, an escape sequence, a C1 line break and a
    // bidi override: quoted in the explanation, each is an escape.
    let mut d = Drive::with(FakePx4 {
        ready_at_ms: u64::MAX,
        arm_ok_at_ms: u64::MAX,
        ..FakePx4::default()
    });
    d.boot();
    d.deliver(statustext(
        mav::MavSeverity::MAV_SEVERITY_CRITICAL,
        "no\nPASS: forged\r\x1b[2K\u{85}\u{202e}x",
        0,
        0,
    ));
    d.client.apply(d.now(), &Action::Arm).unwrap();
    let (r, why) = d.settle(Wait::armed().timeout_s(5.0), 20_000);
    assert_eq!(r.reason, Reason::Timeout);
    let text = why.unwrap().to_string();
    assert!(
        text.ends_with("last texts: 'no\\nPASS: forged\\r\\x1b[2K\\u{85}\\u{202e}x')"),
        "{text}"
    );
    assert!(!nexus_core::escape::needs_escaping(&text), "{text:?}");
}

#[test]
fn a_refused_mode_is_explained_with_px4s_answer_and_then_as_given_up() {
    let mut d = Drive::with(FakePx4 {
        ready_at_ms: 0,
        arm_ok_at_ms: 0,
        refuse_modes: vec![Mode::Mission],
        ..FakePx4::default()
    });
    d.boot();
    d.client
        .apply(d.now(), &Action::SetMode(Mode::Mission))
        .unwrap();
    let (r, why) = d.settle(Wait::mode(Mode::Mission).timeout_s(2.0), 10_000);
    assert_eq!(r.reason, Reason::Timeout);
    let why = why.unwrap();
    let Explanation::Refused(refusal) = &why else {
        panic!("{why:?}")
    };
    assert_eq!(refusal.result, Some(1));
    let text = why.to_string();
    assert!(
        text.starts_with("mode Mission refused (TEMPORARILY_REJECTED, 1)"),
        "{text}"
    );
    // PX4 keeps refusing: the machine gives up, and the explanation says so with PX4's words.
    let (r, why) = d.settle(Wait::mode(Mode::Mission).timeout_s(20.0), 30_000);
    assert_eq!(r.reason, Reason::Timeout);
    let why = why.unwrap();
    let Explanation::GaveUp { gave_up, refusal } = &why else {
        panic!("{why:?}")
    };
    assert!(matches!(gave_up.reason, GiveUpReason::Refused { .. }));
    assert!(refusal.is_some());
    let text = why.to_string();
    assert!(
        text.contains("mode Mission refused (TEMPORARILY_REJECTED, 1)"),
        "{text}"
    );
    assert!(text.contains("gave up on mode Mission: refused"), "{text}");
}

#[test]
fn an_upload_px4_never_answers_is_explained_by_its_stage() {
    let mut d = Drive::with(FakePx4 {
        ready_at_ms: 0,
        arm_ok_at_ms: 0,
        ignore_mission_count: true,
        ..FakePx4::default()
    });
    d.boot();
    d.client
        .apply(d.now(), &Action::None)
        .expect("nothing to do is fine");
    d.client.upload_mission_items(&box_mission()).unwrap();
    // While the machine still retries: the transfer is what is outstanding.
    let (_, why) = d.settle(Wait::mission_complete().timeout_s(1.0), 5_000);
    assert_eq!(why, Some(Explanation::TransferInFlight));
    // After its retries: the upload failed at MISSION_COUNT.
    let (r, why) = d.settle(Wait::mission_complete().timeout_s(30.0), 40_000);
    assert_eq!(r.reason, Reason::Timeout);
    let why = why.unwrap();
    assert!(
        matches!(
            why,
            Explanation::Upload(MissionError::Timeout {
                stage: TransferStage::Count,
                ..
            })
        ),
        "{why:?}"
    );
    let text = why.to_string();
    assert!(
        text.starts_with("mission upload timed out: no item request after MISSION_COUNT ("),
        "{text}"
    );
}

#[test]
fn a_mode_never_shown_is_explained_with_what_the_heartbeat_shows() {
    let mut d = Drive::new();
    d.boot();
    d.drop = |m| is_command(m, mav::MavCmd::MAV_CMD_DO_SET_MODE);
    d.client
        .apply(d.now(), &Action::SetMode(Mode::Position))
        .unwrap();
    let (r, why) = d.settle(Wait::mode(Mode::Position).timeout_s(3.0), 10_000);
    assert_eq!(r.reason, Reason::Timeout);
    let why = why.unwrap();
    assert!(
        matches!(
            why,
            Explanation::ModeNotShown {
                mode: Mode::Position,
                shown: Some(Mode::Hold),
                ..
            }
        ),
        "{why:?}"
    );
    assert!(
        why.to_string()
            .starts_with("mode Position requested, never shown by the heartbeat (shows Hold)"),
        "{why}"
    );
}

#[test]
fn an_arm_sent_but_never_shown_and_a_restart_never_confirmed_say_so() {
    let mut d = Drive::new();
    d.boot();
    d.drop = |m| is_command(m, mav::MavCmd::MAV_CMD_COMPONENT_ARM_DISARM);
    d.client.apply(d.now(), &Action::Arm).unwrap();
    let (r, why) = d.settle(Wait::armed().timeout_s(3.0), 10_000);
    assert_eq!(r.reason, Reason::Timeout);
    let why = why.unwrap();
    assert!(matches!(why, Explanation::ArmNotShown { .. }), "{why:?}");
    assert!(why
        .to_string()
        .starts_with("arm sent, but the heartbeat never showed armed (PX4 did not refuse)"));

    let mut d = Drive::new();
    d.boot();
    // PX4 still uses MISSION_SET_CURRENT (the machine sends it); the crate marks it deprecated.
    #[allow(deprecated)]
    let set_current = |m: &mav::MavMessage| matches!(m, mav::MavMessage::MISSION_SET_CURRENT(_));
    d.drop = set_current;
    d.client.upload_mission_items(&box_mission()).unwrap();
    assert!(d.run_until(5_000, |d| d.client.offboard().mission_uploaded()));
    // PX4 holds item 3 current (an earlier run stopped there): only a restart makes it 0.
    d.px4.mission_current = 3;
    d.client.apply(d.now(), &Action::StartMission).unwrap();
    // Not an arm that waits: what the whole start waits on is the restart.
    let (r, why) = d.settle(Wait::mode(Mode::Mission).timeout_s(3.0), 10_000);
    assert_eq!(r.reason, Reason::Timeout);
    assert_eq!(why, Some(Explanation::RestartNotShown));
    assert_eq!(
        why.unwrap().to_string(),
        "mission restart (MISSION_SET_CURRENT 0) sent, but PX4 never reported item 0 current"
    );
}

#[test]
fn a_takeoff_that_never_leaves_the_ground_says_so() {
    let mut d = Drive::new();
    d.boot();
    d.stuck_on_ground = true;
    d.client
        .apply(d.now(), &Action::Takeoff { alt_m: 5.0 })
        .unwrap();
    let (r, why) = d.settle(Wait::altitude_m(4.5).timeout_s(15.0), 30_000);
    assert_eq!(r.reason, Reason::Timeout);
    assert!(r.snapshot.armed, "PX4 accepted and armed");
    let why = why.unwrap();
    assert!(
        matches!(why, Explanation::NeverLeftGround { .. }),
        "{why:?}"
    );
    assert!(why
        .to_string()
        .starts_with("takeoff: PX4 accepted but never left the ground"));
}

#[test]
fn a_guard_is_named_by_its_condition_and_reading() {
    let mut d = Drive::new();
    d.boot();
    let wait = Wait::time_s(30.0)
        .guard(Condition::armed())
        .guard(Condition::altitude_m(3.0).op(Op::Le))
        .timeout_s(60.0);
    let (r, why) = d.settle(wait, 5_000);
    assert_eq!(r.reason, Reason::Guard);
    assert_eq!(r.guard, Some(1));
    assert_eq!(
        why.unwrap().to_string(),
        "guard `altitude <= 3 m` fired at 0.0 m"
    );
}

#[test]
fn a_death_says_what_was_pending() {
    let mut d = Drive::with(FakePx4 {
        ready_at_ms: u64::MAX,
        arm_ok_at_ms: u64::MAX,
        ..FakePx4::default()
    });
    d.boot();
    d.client.apply(d.now(), &Action::Arm).unwrap();
    let wait = Wait::armed().timeout_s(60.0);
    let id = d.client.wait(d.now(), &wait).unwrap();
    d.step();
    d.client.died(d.now(), "link silent for 8.0 s");
    d.transmit();
    let (r, why) = d.settle_id(id, &wait, 1_000);
    assert_eq!(r.reason, Reason::Died);
    assert_eq!(
        why.unwrap().to_string(),
        "the vehicle died: link silent for 8.0 s; pending: arm"
    );
}

#[test]
fn with_nothing_outstanding_the_reading_is_the_explanation() {
    let mut d = Drive::new();
    d.boot();
    let (r, why) = d.settle(Wait::altitude_m(50.0).timeout_s(2.0), 5_000);
    assert_eq!(r.reason, Reason::Timeout);
    assert_eq!(
        why.unwrap().to_string(),
        "nothing outstanding; `altitude >= 50 m` read 0.0 m at the end"
    );
    // An abort with nothing outstanding says just that.
    let wait = Wait::altitude_m(50.0).timeout_s(60.0);
    let id = d.client.wait(d.now(), &wait).unwrap();
    d.client.abort_wait(d.now(), id).unwrap();
    d.transmit();
    let (r, why) = d.settle_id(id, &wait, 1_000);
    assert_eq!(r.reason, Reason::Aborted);
    assert_eq!(why.unwrap().to_string(), "aborted with nothing outstanding");
    // A met wait has no explanation.
    let (r, why) = d.settle(Wait::disarmed().timeout_s(5.0), 1_000);
    assert_eq!(r.reason, Reason::Met);
    assert_eq!(why, None);
}

#[test]
fn a_failed_step_is_explained_as_it_was_when_it_settled_not_after_the_next_step_began() {
    // Step 1 times out with nothing outstanding and continues; step 2's action (an arm that is
    // never sent: PX4 never armable) starts in the same tick. Asked when step 1's event comes,
    // its explanation is its own, not step 2's arm.
    let mut d = Drive::with(FakePx4 {
        ready_at_ms: u64::MAX,
        arm_ok_at_ms: u64::MAX,
        ..FakePx4::default()
    });
    d.boot();
    let mut p: Program<8> = Program::new();
    p.push(
        Step::new(Action::None, Wait::altitude_m(10.0))
            .timeout_s(2.0)
            .on_timeout(nexus_core::engine::OnTimeout::Continue),
    )
    .unwrap();
    p.push(Step::new(Action::Arm, Wait::armed()).timeout_s(3.0))
        .unwrap();
    d.client.start_program(d.now(), p).unwrap();
    assert!(d.run_until(20_000, |d| d.step_whys.len() == 2));
    assert_eq!(
        d.step_whys[0],
        (
            0,
            "nothing outstanding; `altitude >= 10 m` read 0.0 m at the end".to_string()
        )
    );
    assert_eq!(d.step_whys[1].0, 1);
    assert!(
        d.step_whys[1].1.starts_with(
            "arm not sent: PX4 not armable for 3 s in Hold mode (system_status UNINIT"
        ),
        "{:?}",
        d.step_whys
    );
}

#[test]
fn a_condition_that_means_something_else_on_the_airframe_says_so() {
    // A rover: PX4's land detector calls it in the air whenever it is armed.
    let mut d = Drive::with(FakePx4 {
        ready_at_ms: 0,
        arm_ok_at_ms: 0,
        mavtype: mav::MavType::MAV_TYPE_GROUND_ROVER,
        landed: mav::MavLandedState::MAV_LANDED_STATE_IN_AIR,
        ..FakePx4::default()
    });
    d.boot();
    let (r, why) = d.settle(Wait::landed().timeout_s(2.0), 5_000);
    assert_eq!(r.reason, Reason::Timeout);
    assert_eq!(
        why.unwrap().to_string(),
        "nothing outstanding; `landed` read IN_AIR at the end; the vehicle is a rover: PX4's \
         land detector reports a rover ON_GROUND only while it is disarmed, in Land mode or at \
         the end of an RTL, and IN_AIR whenever else it is armed"
    );
    let (_, why) = d.settle(Wait::altitude_m(5.0).timeout_s(2.0), 5_000);
    assert!(why.unwrap().to_string().ends_with(
        "the vehicle is a rover: a rover does not fly: its height stays at the ground's"
    ));
    // A guard too.
    let wait = Wait::time_s(30.0)
        .guard(Condition::altitude_m(1.0).op(Op::Le))
        .timeout_s(60.0);
    let (r, why) = d.settle(wait, 5_000);
    assert_eq!(r.reason, Reason::Guard);
    assert_eq!(
        why.unwrap().to_string(),
        "guard `altitude <= 1 m` fired at 0.0 m; the vehicle is a rover: a rover does not fly: \
         its height stays at the ground's"
    );
    // A multicopter: no VTOL state and no airspeed, and the reading says which.
    let mut d = Drive::new();
    d.boot();
    #[cfg(feature = "extra-conditions")]
    {
        let wait = Wait::until(Condition::vtol_state(&[nexus_core::VtolState::Fw])).timeout_s(2.0);
        let (_, why) = d.settle(wait, 5_000);
        assert_eq!(
            why.unwrap().to_string(),
            "nothing outstanding; `vtol_state fw` read undefined at the end; the vehicle is a \
             multicopter: only a VTOL has a VTOL state: PX4 reports `undefined` on any other \
             vehicle"
        );
    }
    // A condition that reads the same on every airframe adds nothing.
    let (_, why) = d.settle(Wait::altitude_m(50.0).timeout_s(2.0), 5_000);
    assert_eq!(
        why.unwrap().to_string(),
        "nothing outstanding; `altitude >= 50 m` read 0.0 m at the end"
    );
}
