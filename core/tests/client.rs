//! The Client wires telemetry, offboard machine, wait engine and program runner: reactions
//! reach the wire in the tick their condition is met, program steps chain in one call, and
//! the driver's died/close/cap and an autopilot reboot end waits with their reasons. Flown
//! against the offboard rig's scripted PX4 (docs/px4-wire.md timings).

mod offboard_rig;

use nexus_core::action::Action;
use nexus_core::client::{Client, ClientConfig, Event, REBOOT_ERROR};
use nexus_core::engine::{
    Condition, OnTimeout, Program, ProgramEnd, Reason, SnapshotAt, Step, Wait,
};
use nexus_core::frame::MAX_FRAME_LEN;
use nexus_core::mav;
use nexus_core::msg::{Frame, Msg};
use nexus_core::offboard::OffboardConfig;
use nexus_core::{Instant, Mode};
use offboard_rig::{decode, FakePx4};

type TestClient = Client<8, 16, 32, 8>;

/// A driver loop: the Client against the scripted PX4, wall and sim clocks at 1:1.
struct Drive {
    client: TestClient,
    px4: FakePx4,
    wall_ms: u64,
    /// (sim ms, message) the client sent.
    sent: Vec<(u64, mav::MavMessage)>,
    events: Vec<(u64, Event)>,
}

impl Drive {
    fn new() -> Drive {
        let config = ClientConfig {
            offboard: OffboardConfig {
                wait_clear_s: 0.5,
                ..OffboardConfig::default()
            },
            ..ClientConfig::default()
        };
        let px4 = FakePx4 {
            ready_at_ms: 0,
            arm_ok_at_ms: 0,
            ..FakePx4::default()
        };
        Drive {
            client: Client::new(config),
            px4,
            wall_ms: 0,
            sent: Vec::new(),
            events: Vec::new(),
        }
    }

    fn now(&self) -> Instant {
        Instant::from_millis(self.wall_ms)
    }

    /// Deliver one PX4 message; whatever the client sends in answer goes out (and is answered)
    /// before the next message, as a pump does.
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
            self.sent.push((self.wall_ms, msg.clone()));
            for reply in self.px4.receive(self.wall_ms, &msg) {
                self.client.handle(now, &Frame::from_msg(1, 1, reply));
            }
        }
        while let Some(e) = self.client.poll_event() {
            self.events.push((self.wall_ms, e));
        }
    }

    fn step(&mut self) {
        self.wall_ms += 10;
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

    fn settled(&self) -> Vec<(u64, nexus_core::engine::WaitResult)> {
        self.events
            .iter()
            .filter_map(|(t, e)| match e {
                Event::Settled { result, .. } => Some((*t, result.clone())),
                _ => None,
            })
            .collect()
    }

    fn mode_commands(&self) -> Vec<(u64, Mode)> {
        self.sent
            .iter()
            .filter_map(|(t, m)| match m {
                mav::MavMessage::COMMAND_LONG(c)
                    if c.command == mav::MavCmd::MAV_CMD_DO_SET_MODE =>
                {
                    Some((*t, Mode::from_main_sub(c.param2 as u8, c.param3 as u8)))
                }
                _ => None,
            })
            .collect()
    }
}

#[test]
fn then_mode_goes_on_the_wire_in_the_tick_the_condition_is_met() {
    let mut d = Drive::new();
    d.boot();
    let now = d.now();
    let id = d
        .client
        .wait(
            now,
            &Wait::altitude_m(2.0).timeout_s(60.0).then_mode(Mode::Land),
        )
        .unwrap();
    d.client
        .apply(now, &Action::Takeoff { alt_m: 2.5 })
        .unwrap();
    d.transmit();
    assert!(d.run_until(60_000, |d| !d.settled().is_empty()));
    let (_, result) = d.settled().remove(0);
    assert_eq!(result.reason, Reason::Met);
    assert!(result.snapshot.height_m.unwrap() >= 2.0);
    // The Land command left in the very tick the climb crossed 2 m: same sim instant as the
    // snapshot the wait settled with, before the driver had even polled the event.
    let land = d
        .mode_commands()
        .into_iter()
        .find(|(_, m)| *m == Mode::Land)
        .expect("Land was commanded");
    assert_eq!(Some(land.0), result.snapshot.sim_ms, "{result:?}");
    assert!(
        d.client.take_result(id).is_err(),
        "the result was delivered once"
    );
    assert!(d.run_until(30_000, |d| d.client.telemetry().mode() == Some(Mode::Land)));
}

#[test]
fn speedup_reaction_reaches_the_driver_before_the_result() {
    let mut d = Drive::new();
    d.boot();
    let now = d.now();
    d.client
        .wait(now, &Wait::time_s(1.0).timeout_s(5.0).then_speedup(4.0))
        .unwrap();
    assert!(d.run_until(3_000, |d| !d.settled().is_empty()));
    let kinds: Vec<&Event> = d
        .events
        .iter()
        .map(|(_, e)| e)
        .filter(|e| matches!(e, Event::Speedup(_) | Event::Settled { .. }))
        .collect();
    assert!(
        matches!(kinds[0], Event::Speedup(f) if *f == 4.0),
        "{kinds:?}"
    );
    assert!(matches!(kinds[1], Event::Settled { result, .. } if result.satisfied));
}

#[test]
fn reactions_do_nothing_on_timeout() {
    let mut d = Drive::new();
    d.boot();
    let now = d.now();
    d.client
        .wait(
            now,
            &Wait::altitude_m(50.0)
                .timeout_s(1.0)
                .then_mode(Mode::Land)
                .then_speedup(9.0),
        )
        .unwrap();
    assert!(d.run_until(3_000, |d| !d.settled().is_empty()));
    assert_eq!(d.settled()[0].1.reason, Reason::Timeout);
    assert!(d.mode_commands().is_empty());
    assert!(!d.events.iter().any(|(_, e)| matches!(e, Event::Speedup(_))));
}

#[test]
fn an_already_true_wait_reacts_at_once() {
    let mut d = Drive::new();
    d.boot();
    let now = d.now();
    d.client
        .wait(
            now,
            &Wait::until(Condition::disarmed())
                .timeout_s(5.0)
                .then_mode(Mode::Position),
        )
        .unwrap();
    // Before any further message: the reaction is already queued for the wire (a manual mode
    // starts the neutral stick stream, then the mode command).
    d.transmit();
    let settled = d.settled();
    assert_eq!(settled[0].1.waited_sim_s, 0.0);
    assert_eq!(settled[0].1.snapshot_at, SnapshotAt::Return);
    assert!(d
        .sent
        .iter()
        .any(|(_, m)| matches!(m, mav::MavMessage::MANUAL_CONTROL(_))));
    assert_eq!(d.mode_commands().last().map(|m| m.1), Some(Mode::Position));
}

#[test]
fn a_program_chains_its_steps_and_reports_each() {
    let mut d = Drive::new();
    d.boot();
    let program = Program::<8>::new()
        .then(Step::new(
            Action::Takeoff { alt_m: 2.5 },
            Wait::altitude_m(2.0).timeout_s(60.0),
        ))
        .unwrap()
        .then(Step::new(
            Action::Land,
            Wait::until(Condition::landed()).timeout_s(60.0),
        ))
        .unwrap()
        .then(Step::new(
            Action::None,
            Wait::until(Condition::disarmed()).timeout_s(30.0),
        ))
        .unwrap();
    let now = d.now();
    d.client.start_program(now, program).unwrap();
    d.transmit();
    assert!(d.run_until(120_000, |d| d
        .events
        .iter()
        .any(|(_, e)| matches!(e, Event::ProgramFinished(_)))));
    let steps: Vec<(usize, bool, Reason)> = d
        .events
        .iter()
        .filter_map(|(_, e)| match e {
            Event::Step {
                step,
                passed,
                reason,
            } => Some((*step, *passed, *reason)),
            _ => None,
        })
        .collect();
    assert_eq!(
        steps,
        vec![
            (0, true, Reason::Met),
            (1, true, Reason::Met),
            (2, true, Reason::Met)
        ]
    );
    assert!(d
        .events
        .iter()
        .any(|(_, e)| *e == Event::ProgramFinished(ProgramEnd::Completed)));
    assert!(d.client.program().passed());
    // The Land step's action went out in the tick step 0 was met.
    let met0 = d.client.program().records()[0]
        .result
        .snapshot
        .sim_ms
        .unwrap();
    let land = d
        .mode_commands()
        .into_iter()
        .find(|(_, m)| *m == Mode::Land)
        .unwrap();
    assert_eq!(land.0, met0);
}

#[test]
fn a_step_that_times_out_with_stop_ends_the_program() {
    let mut d = Drive::new();
    d.boot();
    let program = Program::<8>::new()
        .then(
            Step::new(
                Action::None,
                Wait::until(Condition::mode(Mode::Mission)).timeout_s(1.0),
            )
            .on_timeout(OnTimeout::Stop),
        )
        .unwrap()
        .then(Step::new(
            Action::Land,
            Wait::until(Condition::landed()).timeout_s(5.0),
        ))
        .unwrap();
    let now = d.now();
    d.client.start_program(now, program).unwrap();
    assert!(d.run_until(5_000, |d| d
        .events
        .iter()
        .any(|(_, e)| matches!(e, Event::ProgramFinished(_)))));
    assert!(d
        .events
        .iter()
        .any(|(_, e)| *e == Event::ProgramFinished(ProgramEnd::Stopped { step: 0 })));
    assert!(d.mode_commands().is_empty(), "step 1's Land never ran");
}

#[test]
fn died_close_and_cap_end_waits_with_their_reasons() {
    let mut d = Drive::new();
    d.boot();
    let now = d.now();
    let a = d
        .client
        .wait(now, &Wait::altitude_m(100.0).timeout_s(600.0))
        .unwrap();
    let b = d
        .client
        .wait(now, &Wait::until(Condition::text("never")).timeout_s(600.0))
        .unwrap();
    let capped = d.client.cap(now, b).unwrap();
    assert_eq!(capped.reason, Reason::Cap);
    assert_eq!(capped.snapshot_at, SnapshotAt::Return);
    d.client.died(now, "PX4 exited with code 1");
    d.transmit();
    let r = d.settled();
    assert_eq!(r.len(), 1);
    assert_eq!(r[0].1.reason, Reason::Died);
    assert_eq!(
        r[0].1.snapshot.error.as_deref(),
        Some("PX4 exited with code 1")
    );
    let _ = a;
    let c = d
        .client
        .wait(now, &Wait::altitude_m(100.0).timeout_s(600.0))
        .unwrap();
    d.client.close(now);
    d.transmit();
    assert_eq!(d.settled()[1].1.reason, Reason::Closed);
    assert!(d.client.take_result(c).is_err());
}

#[test]
fn an_autopilot_reboot_ends_waits_as_died() {
    let mut d = Drive::new();
    d.boot();
    d.run_until(10_000, |_| false);
    let now = d.now();
    d.client
        .wait(now, &Wait::altitude_m(100.0).timeout_s(600.0))
        .unwrap();
    // time_boot_ms jumps back from 13 s to 0.2 s: the autopilot restarted.
    d.deliver(Msg::SystemTime(mav::SYSTEM_TIME_DATA {
        time_unix_usec: 0,
        time_boot_ms: 200,
    }));
    let r = d.settled();
    assert_eq!(r.len(), 1, "{:?}", d.events);
    assert_eq!(r[0].1.reason, Reason::Died);
    assert_eq!(r[0].1.snapshot.error.as_deref(), Some(REBOOT_ERROR));
}

#[test]
fn a_full_engine_is_an_error_the_caller_sees() {
    let mut d = Drive::new();
    d.boot();
    let now = d.now();
    for _ in 0..8 {
        d.client
            .wait(now, &Wait::altitude_m(100.0).timeout_s(600.0))
            .unwrap();
    }
    let err = d
        .client
        .wait(now, &Wait::altitude_m(100.0).timeout_s(600.0))
        .unwrap_err();
    assert!(err.to_string().contains("full"), "{err}");
}

/// A `param` step waits for PX4's echo of its set (resent when lost) before the next step's
/// action goes out; a PARAM_ERROR aborts the program with PX4's words.
#[cfg(feature = "confirmed-params")]
#[test]
fn a_param_step_waits_for_the_echo_and_a_refusal_aborts_the_program() {
    let set_int = |name: &str, value| Action::ParamInt {
        name: nexus_core::action::param_name(name).unwrap(),
        value,
    };
    let program = |second: &str| {
        Program::<8>::new()
            .then(Step::action_only(set_int("COM_RC_IN_MODE", 4)))
            .unwrap()
            .then(Step::action_only(set_int(second, 3)))
            .unwrap()
            .then(Step::new(
                Action::Land,
                Wait::until(Condition::mode(Mode::Land)).timeout_s(10.0),
            ))
            .unwrap()
    };
    let finished = |d: &Drive| {
        d.events
            .iter()
            .any(|(_, e)| matches!(e, Event::ProgramFinished(_)))
    };
    let param_sets = |d: &Drive| -> Vec<u64> {
        d.sent
            .iter()
            .filter(|(_, m)| matches!(m, mav::MavMessage::PARAM_SET(_)))
            .map(|(t, _)| *t)
            .collect()
    };

    // The first PARAM_SET is lost: the step holds until the resend is echoed.
    let mut d = Drive::new();
    d.boot();
    d.px4.lose_param_sets = 1;
    let now = d.now();
    d.client
        .start_program(now, program("COM_OBL_RC_ACT"))
        .unwrap();
    d.transmit();
    assert!(d.run_until(30_000, finished));
    assert!(
        d.client.program().passed(),
        "{:?}",
        d.client.program().error()
    );
    let sets = param_sets(&d);
    assert_eq!(
        sets.len(),
        3,
        "one lost and resent, then the second step's: {sets:?}"
    );
    let timer_ms = d.client.offboard().retry_timers_ms().0;
    assert!(
        sets[1] - sets[0] >= timer_ms,
        "resent on the timer: {sets:?}"
    );
    let first = &d.client.program().records()[0].result;
    assert!(first.waited_sim_s * 1000.0 >= timer_ms as f32, "{first:?}");
    // The Land of step 2 went out only after both sets were echoed.
    let land = d
        .mode_commands()
        .into_iter()
        .find(|(_, m)| *m == Mode::Land);
    assert!(land.unwrap().0 >= sets[2], "{sets:?}");

    // A name PX4 does not have: the program ends at that step, Land never sent.
    let mut d = Drive::new();
    d.boot();
    d.px4.param_errors = vec![(
        "COM_FOO".into(),
        mav::MavParamError::MAV_PARAM_ERROR_DOES_NOT_EXIST,
    )];
    let now = d.now();
    d.client.start_program(now, program("COM_FOO")).unwrap();
    d.transmit();
    assert!(d.run_until(5_000, finished));
    assert!(d
        .events
        .iter()
        .any(|(_, e)| *e == Event::ProgramFinished(ProgramEnd::Aborted { step: 1 })));
    let rec = &d.client.program().records()[1].result;
    assert_eq!(rec.reason, Reason::Aborted);
    assert_eq!(
        rec.snapshot.error.as_deref(),
        Some("PX4 refused COM_FOO = 3: DOES_NOT_EXIST")
    );
    assert_eq!(
        d.client.program().error(),
        Some("PX4 refused COM_FOO = 3: DOES_NOT_EXIST")
    );
    assert!(d.mode_commands().iter().all(|(_, m)| *m != Mode::Land));
}
