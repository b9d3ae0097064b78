//! Step programs driven the way the Client will: telemetry → engine → events, with
//! `Settled` events fed to the runner and actions applied through an `Actuator`.

mod engine_support;

use engine_support::*;
use nexus_core::engine::{
    Actuator, Condition, EngineError, EngineEvent, OnTimeout, Program, ProgramEnd, ProgramError,
    ProgramRunner, ProgramState, Progress, Reaction, Reason, SpecError, Step, Wait, CLOSED_ERROR,
};
use nexus_core::{Action, Instant, Mode};

/// Applies nothing, logs everything (actions and reactions, in the order they happened).
#[derive(Default)]
struct Log {
    entries: Vec<(u32, String)>,
    fail: Option<Action>,
    sim_ms: u32,
}

impl Actuator for Log {
    type Error = &'static str;
    fn apply(&mut self, _now: Instant, action: &Action) -> Result<(), &'static str> {
        if self.fail.as_ref() == Some(action) {
            return Err("COMMAND_ACK TEMPORARILY_REJECTED");
        }
        self.entries
            .push((self.sim_ms, format!("action {action:?}")));
        Ok(())
    }
}

struct Driver<const N: usize = 8> {
    rig: RigN<N>,
    runner: ProgramRunner<6>,
    log: Log,
    progress: Vec<Progress>,
}

impl<const N: usize> Driver<N> {
    fn new() -> Self {
        let mut rig = RigN::<N>::booted();
        rig.auto_poll = false;
        Driver {
            rig,
            runner: ProgramRunner::new(),
            log: Log::default(),
            progress: Vec::new(),
        }
    }

    fn start(&mut self, p: Program<6>) -> Result<Progress, ProgramError> {
        self.log.sim_ms = self.rig.sim_ms;
        let r = self.runner.start(
            self.rig.now,
            &self.rig.tel,
            &mut self.rig.engine,
            &mut self.log,
            p,
        );
        self.pump();
        r
    }

    /// What the Client does after every message: reactions applied, Settled to the runner.
    fn pump(&mut self) {
        self.log.sim_ms = self.rig.sim_ms;
        while let Some(ev) = self.rig.engine.poll_event() {
            match &ev {
                EngineEvent::Reaction { reaction, .. } => self
                    .log
                    .entries
                    .push((self.rig.sim_ms, format!("reaction {reaction:?}"))),
                EngineEvent::Settled { id, result } => {
                    let p = self.runner.on_settled(
                        self.rig.now,
                        &self.rig.tel,
                        &mut self.rig.engine,
                        &mut self.log,
                        *id,
                        result,
                    );
                    if p != Progress::NotOurs {
                        self.progress.push(p);
                    }
                }
            }
            self.rig.events.push(ev);
        }
    }

    fn feed(&mut self, f: nexus_core::Frame) {
        self.rig.feed(f);
        self.pump();
    }

    fn tick(&mut self, ms: u32) {
        self.rig.tick(ms);
        self.pump();
    }

    fn run(&mut self, ms: u32, step: u32) {
        let mut done = 0;
        while done < ms {
            self.tick(step.min(ms - done));
            done += step.min(ms - done);
        }
    }

    fn alt(&mut self, mm: i32) {
        let ms = self.rig.sim_ms;
        self.feed(position_mm(ms, mm));
    }

    fn actions(&self) -> Vec<&str> {
        self.log.entries.iter().map(|(_, s)| s.as_str()).collect()
    }
}

fn program(steps: Vec<Step>) -> Program<6> {
    let mut p = Program::new();
    for s in steps {
        p.push(s).unwrap();
    }
    p
}

#[test]
fn steps_run_in_order_each_action_in_the_tick_the_previous_step_settled() {
    let mut d: Driver = Driver::new();
    let p = program(vec![
        Step::new(
            Action::Takeoff { alt_m: 5.0 },
            Wait::altitude_m(4.5).hold_s(1.0).then_mode(Mode::Hold),
        )
        .timeout_s(30.0),
        Step::new(Action::Land, Wait::landed()).timeout_s(60.0),
        Step::action_only(Action::None),
    ]);
    assert_eq!(d.start(p), Ok(Progress::Running { step: 0 }));
    assert_eq!(d.actions(), vec!["action Takeoff { alt_m: 5.0 }"]);
    d.feed(heartbeat(true, Mode::Takeoff));
    d.feed(landed_state(
        nexus_core::mav::MavLandedState::MAV_LANDED_STATE_IN_AIR,
    ));
    d.alt(4_600); // holding from 1.0
    d.tick(999);
    assert_eq!(d.runner.state(), ProgramState::Running { step: 0 });
    d.tick(1); // 2.0: held 1 s
    assert_eq!(d.runner.state(), ProgramState::Running { step: 1 });
    // The reaction came before the next step's action, both at 2.0.
    assert_eq!(
        d.log.entries[1..],
        [
            (2000, "reaction Mode(Hold)".to_string()),
            (2000, "action Land".to_string())
        ]
    );
    d.tick(3_000);
    d.feed(landed_state(
        nexus_core::mav::MavLandedState::MAV_LANDED_STATE_ON_GROUND,
    ));
    assert_eq!(
        d.runner.state(),
        ProgramState::Finished(ProgramEnd::Completed)
    );
    assert_eq!(
        d.progress.last(),
        Some(&Progress::Finished(ProgramEnd::Completed))
    );
    assert!(d.runner.passed());
    assert_eq!(d.runner.error(), None);
    let recs = d.runner.records();
    assert_eq!(recs.len(), 3);
    assert!(recs
        .iter()
        .all(|r| r.passed && r.result.reason == Reason::Met));
    assert_eq!(recs[0].result.waited_sim_s, 1.0);
    assert_eq!(recs[1].result.waited_sim_s, 3.0);
    assert_eq!(d.actions().len(), 3, "Action::None is not applied");
    // Step results went to the runner; the engine is empty again.
    assert_eq!(d.rig.engine.pending_count(), 0);
    assert!(!d.rig.engine.has_events());
}

#[test]
fn a_timeout_with_stop_fails_the_program() {
    let mut d: Driver = Driver::new();
    let p = program(vec![
        Step::new(Action::Arm, Wait::armed()).timeout_s(2.0),
        Step::new(Action::Takeoff { alt_m: 3.0 }, Wait::altitude_m(2.5)).timeout_s(30.0),
    ]);
    d.start(p).unwrap();
    d.run(2_000, 100);
    assert_eq!(
        d.runner.state(),
        ProgramState::Finished(ProgramEnd::Stopped { step: 0 })
    );
    assert_eq!(d.runner.records().len(), 1);
    assert_eq!(d.runner.records()[0].result.reason, Reason::Timeout);
    assert!(!d.runner.records()[0].passed);
    assert_eq!(d.actions(), vec!["action Arm"], "step 1 never started");
    assert!(d.runner.error().unwrap().contains("timeout"));
    assert!(!d.runner.passed());
}

#[test]
fn a_timeout_with_continue_starts_the_next_step() {
    let mut d: Driver = Driver::new();
    let p = program(vec![
        Step::new(Action::Arm, Wait::armed())
            .timeout_s(2.0)
            .on_timeout(OnTimeout::Continue),
        Step::new(Action::Disarm, Wait::disarmed()).timeout_s(5.0),
    ]);
    d.start(p).unwrap();
    d.run(2_000, 100);
    assert_eq!(
        d.runner.state(),
        ProgramState::Finished(ProgramEnd::Completed)
    );
    let recs = d.runner.records();
    assert_eq!(
        recs.iter()
            .map(|r| (r.result.reason, r.passed))
            .collect::<Vec<_>>(),
        vec![(Reason::Timeout, false), (Reason::Met, true)]
    );
    assert!(!d.runner.passed(), "completed, but not every step passed");
}

#[test]
fn abort_ends_the_program_and_its_wait() {
    let mut d: Driver = Driver::new();
    let p = program(vec![
        Step::new(Action::Arm, Wait::armed()).timeout_s(20.0),
        Step::new(Action::Land, Wait::landed()).timeout_s(20.0),
    ]);
    d.start(p).unwrap();
    d.tick(500);
    let wait = d.runner.current_wait().unwrap();
    let p = d
        .runner
        .abort(d.rig.now, &d.rig.tel, &mut d.rig.engine)
        .unwrap();
    assert_eq!(p, Progress::Finished(ProgramEnd::Aborted { step: 0 }));
    assert_eq!(d.runner.records()[0].result.reason, Reason::Aborted);
    assert_eq!(d.runner.error(), Some("aborted"));
    assert!(!d.rig.engine.is_pending(wait));
    assert_eq!(d.rig.engine.pending_count(), 0);
    d.pump();
    assert!(
        d.rig.events.is_empty(),
        "the aborted step's result went to the runner only"
    );
    assert_eq!(
        d.runner.abort(d.rig.now, &d.rig.tel, &mut d.rig.engine),
        Err(ProgramError::NotRunning)
    );
}

#[test]
fn abort_after_the_step_settled_but_before_it_was_fed_back() {
    let mut d: Driver = Driver::new();
    let p = program(vec![
        Step::new(Action::Arm, Wait::armed()).timeout_s(20.0),
        Step::new(Action::Land, Wait::landed()).timeout_s(20.0),
    ]);
    d.start(p).unwrap();
    d.rig.feed(heartbeat(true, Mode::Hold)); // settles; not pumped yet
    let p = d
        .runner
        .abort(d.rig.now, &d.rig.tel, &mut d.rig.engine)
        .unwrap();
    assert_eq!(p, Progress::Running { step: 0 });
    d.pump();
    assert_eq!(
        d.runner.state(),
        ProgramState::Finished(ProgramEnd::Aborted { step: 0 })
    );
    assert_eq!(d.runner.records().len(), 1);
    assert_eq!(
        d.actions(),
        vec!["action Arm"],
        "the next step did not start"
    );
}

#[test]
fn relative_sim_time_in_a_step_counts_from_the_step_start() {
    let mut d: Driver = Driver::new();
    // A plain wait settles at 1.0: a relative wait_until would count from there.
    let w = d.rig.register(&Wait::time_s(0.0).timeout_s(1.0)).unwrap();
    d.pump();
    assert!(d.rig.result(w).is_some());
    d.run(2_000, 100); // 3.0
    let p = program(vec![
        Step::new(Action::None, Wait::sim_time_s(1.0).relative()).timeout_s(5.0),
        Step::new(Action::None, Wait::sim_time_s(0.5).relative()).timeout_s(5.0),
    ]);
    d.start(p).unwrap();
    assert_eq!(d.runner.state(), ProgramState::Running { step: 0 });
    d.run(900, 100);
    assert_eq!(d.runner.state(), ProgramState::Running { step: 0 });
    d.tick(100); // 4.0: step 0 done, step 1 starts at 4.0
    assert_eq!(d.runner.state(), ProgramState::Running { step: 1 });
    d.run(400, 100);
    assert_eq!(d.runner.state(), ProgramState::Running { step: 1 });
    d.tick(100); // 4.5
    assert_eq!(
        d.runner.state(),
        ProgramState::Finished(ProgramEnd::Completed)
    );
    let t: Vec<_> = d
        .runner
        .records()
        .iter()
        .map(|r| r.result.snapshot.sim_ms)
        .collect();
    assert_eq!(t, vec![Some(4_000), Some(4_500)]);
}

#[test]
fn a_failed_action_aborts_the_program_and_names_the_error() {
    let mut d: Driver = Driver::new();
    d.log.fail = Some(Action::Land);
    let p = program(vec![
        Step::action_only(Action::Arm),
        Step::new(Action::Land, Wait::landed()).timeout_s(20.0),
        Step::new(Action::Disarm, Wait::disarmed()).timeout_s(20.0),
    ]);
    d.start(p).unwrap();
    assert_eq!(
        d.runner.state(),
        ProgramState::Finished(ProgramEnd::Aborted { step: 1 })
    );
    let err = d.runner.error().unwrap();
    assert!(
        err.contains("step 1") && err.contains("TEMPORARILY_REJECTED"),
        "{err}"
    );
    let rec = &d.runner.records()[1];
    assert_eq!(rec.result.reason, Reason::Aborted);
    assert_eq!(rec.result.snapshot.error.as_deref(), Some(err));
    assert_eq!(d.actions(), vec!["action Arm"]);
    assert_eq!(d.rig.engine.pending_count(), 0, "no wait left behind");
}

#[test]
fn close_aborts_a_running_program_and_closes_plain_waits() {
    let mut d: Driver = Driver::new();
    let plain = d.rig.register(&Wait::armed().timeout_s(20.0)).unwrap();
    d.start(program(vec![
        Step::new(Action::Arm, Wait::armed()).timeout_s(20.0)
    ]))
    .unwrap();
    d.tick(100);
    assert_eq!(d.rig.engine.close(d.rig.now, &d.rig.tel), 2);
    d.pump();
    assert_eq!(d.rig.result(plain).unwrap().reason, Reason::Closed);
    assert_eq!(
        d.runner.state(),
        ProgramState::Finished(ProgramEnd::Aborted { step: 0 })
    );
    assert_eq!(d.runner.records()[0].result.reason, Reason::Aborted);
    assert_eq!(d.runner.error(), Some(CLOSED_ERROR));
}

#[test]
fn died_ends_the_program_with_the_error() {
    let mut d: Driver = Driver::new();
    d.start(program(vec![
        Step::new(Action::Arm, Wait::armed()).timeout_s(20.0)
    ]))
    .unwrap();
    let step_wait = d.runner.current_wait().unwrap();
    assert_eq!(
        d.rig.engine.cap(d.rig.now, &d.rig.tel, step_wait),
        Err(EngineError::NotCappable),
        "cap is for wait_until only"
    );
    d.rig.engine.died(d.rig.now, &d.rig.tel, "PX4 PANIC");
    d.pump();
    assert_eq!(
        d.runner.state(),
        ProgramState::Finished(ProgramEnd::Died { step: 0 })
    );
    assert_eq!(d.runner.error(), Some("PX4 PANIC"));
}

#[test]
fn a_guard_stops_the_program() {
    let mut d: Driver = Driver::new();
    d.feed(heartbeat(true, Mode::Mission));
    let p = program(vec![
        Step::new(
            Action::StartMission,
            Wait::waypoint(3).guard(Condition::disarmed()),
        )
        .timeout_s(100.0)
        .on_timeout(OnTimeout::Continue),
        Step::new(Action::Land, Wait::landed()).timeout_s(20.0),
    ]);
    d.start(p).unwrap();
    d.feed(mission_current(1));
    d.feed(heartbeat(false, Mode::Hold));
    assert_eq!(
        d.runner.state(),
        ProgramState::Finished(ProgramEnd::Stopped { step: 0 })
    );
    assert_eq!(d.runner.records()[0].result.guard, Some(0));
    assert!(d.runner.error().unwrap().contains("guard 0"));
}

#[test]
fn a_full_engine_at_a_later_step_aborts_with_the_reason() {
    let mut d: Driver<2> = Driver::new();
    d.start(program(vec![
        Step::new(Action::Arm, Wait::armed()).timeout_s(20.0),
        Step::new(Action::Land, Wait::landed()).timeout_s(20.0),
    ]))
    .unwrap();
    // Two slots: the step's and this one.
    let other = d
        .rig
        .register(&Wait::altitude_m(99.0).timeout_s(60.0))
        .unwrap();
    // Step 0 settles; while its Settled event is handled, another wait takes the freed slot
    // before the runner registers step 1 (simulated by registering before feeding back).
    d.rig.feed(heartbeat(true, Mode::Hold));
    let (id, result) = loop {
        match d.rig.engine.poll_event().unwrap() {
            EngineEvent::Settled { id, result } => break (id, result),
            EngineEvent::Reaction { .. } => {}
        }
    };
    let squatter = d
        .rig
        .register(&Wait::altitude_m(98.0).timeout_s(60.0))
        .unwrap();
    let p = d.runner.on_settled(
        d.rig.now,
        &d.rig.tel,
        &mut d.rig.engine,
        &mut d.log,
        id,
        &result,
    );
    assert_eq!(p, Progress::Finished(ProgramEnd::Aborted { step: 1 }));
    assert!(
        d.runner.error().unwrap().contains("full"),
        "{:?}",
        d.runner.error()
    );
    assert!(d.rig.engine.is_pending(other) && d.rig.engine.is_pending(squatter));
    assert_eq!(
        d.actions(),
        vec!["action Arm"],
        "no action applied without its wait"
    );
}

#[test]
fn programs_are_validated_before_anything_is_applied() {
    let mut d: Driver = Driver::new();
    let p = program(vec![
        Step::new(Action::Arm, Wait::armed()).timeout_s(20.0),
        Step::new(Action::Land, Wait::landed()), // no timeout
    ]);
    assert_eq!(
        d.start(p),
        Err(ProgramError::Spec {
            step: 1,
            error: SpecError::MissingTimeout
        })
    );
    assert!(d.actions().is_empty());
    assert_eq!(d.runner.state(), ProgramState::Idle);

    let mut full: Program<6> = Program::new();
    for _ in 0..6 {
        full.push(Step::action_only(Action::None)).unwrap();
    }
    assert_eq!(
        full.push(Step::action_only(Action::None)),
        Err(ProgramError::Full)
    );

    d.start(program(vec![
        Step::new(Action::Arm, Wait::armed()).timeout_s(20.0)
    ]))
    .unwrap();
    assert_eq!(d.start(program(vec![])), Err(ProgramError::AlreadyRunning));
}

#[test]
fn an_empty_program_completes_at_once_and_a_finished_runner_can_start_again() {
    let mut d: Driver = Driver::new();
    assert_eq!(
        d.start(program(vec![])),
        Ok(Progress::Finished(ProgramEnd::Completed))
    );
    assert!(d.runner.passed());
    let p = Program::new()
        .then(Step::new(Action::Arm, Wait::armed().then_speedup(2.0)).timeout_s(5.0))
        .unwrap();
    d.start(p).unwrap();
    d.feed(heartbeat(true, Mode::Hold));
    assert!(d.runner.passed());
    assert!(d
        .log
        .entries
        .iter()
        .any(|(_, s)| s == &format!("reaction {:?}", Reaction::Speedup(2.0))));
}
