//! Mission truth: `mission_complete` means PX4 reported the last reachable item of this start
//! reached, for every plan shape; `reached` is never met before its message; a COMPLETE state
//! left over from an earlier flight never finishes a new one. Scripted PX4 frames through the
//! core Client (the same wiring a driver uses).

mod offboard_rig;

use nexus_core::client::{Client, ClientConfig, Event};
use nexus_core::engine::{Condition, Op, Reason, Wait, WaitId, WaitResult};
use nexus_core::mav;
use nexus_core::mission::{
    last_reachable, unreachable_items, MissionItem, NAV_LAND, NAV_RETURN_TO_LAUNCH, NAV_TAKEOFF,
    NAV_WAYPOINT,
};
use nexus_core::msg::{Frame, Msg};
use nexus_core::Instant;
use offboard_rig::{item, FakePx4};

type TestClient = Client<8, 16, 1024, 4>;

fn plan(commands: &[u16]) -> Vec<MissionItem> {
    commands
        .iter()
        .enumerate()
        .map(|(i, c)| item(i as u16, *c, 47.3977 + i as f64 * 1e-4, 8.5456, 10.0))
        .collect()
}

/// A client holding `items`, connected to a scripted PX4 (frames delivered by hand).
struct Scripted {
    client: TestClient,
    t_ms: u64,
}

impl Scripted {
    fn new(items: &[MissionItem]) -> Scripted {
        let mut s = Scripted {
            client: Client::new(ClientConfig::default()),
            t_ms: 1_000,
        };
        let px4 = FakePx4::default();
        s.deliver(px4.heartbeat(1_000));
        s.deliver(Msg::SystemTime(mav::SYSTEM_TIME_DATA {
            time_unix_usec: 0,
            time_boot_ms: 1_000,
        }));
        s.client.lodge_mission(items).unwrap();
        s
    }

    fn now(&self) -> Instant {
        Instant::from_millis(self.t_ms)
    }

    fn deliver(&mut self, msg: Msg) {
        self.t_ms += 10;
        let now = self.now();
        self.client.handle(
            now,
            &Frame::from_msg(
                1,
                1,
                Msg::SystemTime(mav::SYSTEM_TIME_DATA {
                    time_unix_usec: 0,
                    time_boot_ms: self.t_ms as u32,
                }),
            ),
        );
        self.client.handle(now, &Frame::from_msg(1, 1, msg));
    }

    fn current(&mut self, seq: u16, state: mav::MissionState) {
        self.deliver(Msg::MissionCurrent(mav::MISSION_CURRENT_DATA {
            seq,
            total: self.client.offboard().mission_count() as u16,
            mission_state: state,
            ..mav::MISSION_CURRENT_DATA::DEFAULT
        }));
    }

    fn reached(&mut self, seq: u16) {
        self.deliver(Msg::MissionItemReached(mav::MISSION_ITEM_REACHED_DATA {
            seq,
        }));
    }

    fn start(&mut self) {
        let now = self.now();
        self.client.start_mission(now);
    }

    fn wait(&mut self, w: Wait) -> WaitId {
        let now = self.now();
        self.client.wait(now, &w).unwrap()
    }

    /// The result of `id`, if it settled.
    fn result(&mut self, id: WaitId) -> Option<WaitResult> {
        while let Some(e) = self.client.poll_event() {
            if let Event::Settled { id: i, result } = e {
                if i == id {
                    return Some(result);
                }
            }
        }
        None
    }

    fn complete(&self) -> bool {
        self.client.offboard().mission_complete()
    }
}

use mav::MissionState::{
    MISSION_STATE_ACTIVE as ACTIVE, MISSION_STATE_COMPLETE as COMPLETE,
    MISSION_STATE_NOT_STARTED as NOT_STARTED,
};

#[test]
fn the_last_reachable_item_of_each_plan_shape() {
    // LAND-only: the first landing ends the mission; the rest is never flown.
    let lands = plan(&[NAV_LAND; 999]);
    assert_eq!(last_reachable(&lands), Some(0));
    assert_eq!(unreachable_items(&lands), 998);
    assert_eq!(last_reachable(&plan(&[NAV_LAND])), Some(0));
    // One item.
    assert_eq!(last_reachable(&plan(&[NAV_WAYPOINT])), Some(0));
    assert_eq!(unreachable_items(&plan(&[NAV_WAYPOINT])), 0);
    // Takeoff + land.
    let tl = plan(&[NAV_TAKEOFF, NAV_LAND]);
    assert_eq!(last_reachable(&tl), Some(1));
    assert_eq!(unreachable_items(&tl), 0);
    // Ending in RTL: PX4 hands over to RTL mode and never reports the RTL item reached.
    let rtl = plan(&[NAV_TAKEOFF, NAV_WAYPOINT, NAV_RETURN_TO_LAUNCH]);
    assert_eq!(last_reachable(&rtl), Some(1));
    assert_eq!(unreachable_items(&rtl), 0);
    // An RTL in the middle: what follows it is never flown.
    let mid = plan(&[NAV_TAKEOFF, NAV_RETURN_TO_LAUNCH, NAV_WAYPOINT]);
    assert_eq!(last_reachable(&mid), Some(0));
    assert_eq!(unreachable_items(&mid), 1);
    // A lone RTL: nothing is ever reported reached, but the RTL itself is flown.
    assert_eq!(last_reachable(&plan(&[NAV_RETURN_TO_LAUNCH])), None);
    assert_eq!(unreachable_items(&plan(&[NAV_RETURN_TO_LAUNCH])), 0);
    assert_eq!(last_reachable(&[]), None);
}

#[test]
fn a_single_item_plan_is_not_complete_while_its_item_is_current() {
    // The old bug: MISSION_CURRENT reaches "the last seq" (0) at once on the ground.
    let mut s = Scripted::new(&plan(&[NAV_WAYPOINT]));
    s.start();
    let id = s.wait(Wait::mission_complete().timeout_s(600.0));
    s.current(0, NOT_STARTED);
    s.current(0, ACTIVE);
    assert!(
        s.result(id).is_none(),
        "item 0 current is not item 0 reached"
    );
    assert!(!s.complete());
    s.reached(0);
    let r = s.result(id).expect("met on MISSION_ITEM_REACHED 0");
    assert_eq!(r.reason, Reason::Met);
}

#[test]
fn land_only_takeoff_land_and_rtl_plans_complete_on_their_last_reachable_item() {
    // LAND-only: 999 landing items complete when the first is reached (the fly verdict then
    // counts 998 items never flown).
    let mut s = Scripted::new(&plan(&[NAV_LAND; 999]));
    s.start();
    s.current(0, NOT_STARTED);
    s.current(0, ACTIVE);
    assert!(!s.complete());
    s.reached(0);
    assert!(s.complete());
    assert_eq!(s.client.offboard().mission_reached(), Some(0));

    // Takeoff + land: the takeoff is not the end.
    let mut s = Scripted::new(&plan(&[NAV_TAKEOFF, NAV_LAND]));
    s.start();
    s.current(0, ACTIVE);
    s.reached(0);
    s.current(1, ACTIVE);
    assert!(!s.complete());
    s.reached(1);
    assert!(s.complete());

    // Ending in RTL: complete on the item before the RTL; MISSION_CURRENT then shows the RTL.
    let mut s = Scripted::new(&plan(&[NAV_TAKEOFF, NAV_WAYPOINT, NAV_RETURN_TO_LAUNCH]));
    s.start();
    let id = s.wait(Wait::mission_complete().timeout_s(600.0));
    s.current(0, ACTIVE);
    s.reached(0);
    s.current(1, ACTIVE);
    assert!(s.result(id).is_none());
    s.reached(1);
    assert_eq!(s.result(id).unwrap().reason, Reason::Met);
}

#[test]
fn a_fresh_complete_state_at_the_last_item_counts_without_item_reached() {
    let mut s = Scripted::new(&plan(&[NAV_TAKEOFF, NAV_WAYPOINT]));
    s.start();
    let id = s.wait(Wait::mission_complete().timeout_s(600.0));
    s.current(0, ACTIVE);
    s.current(1, ACTIVE);
    assert!(s.result(id).is_none());
    s.current(1, COMPLETE);
    assert_eq!(s.result(id).unwrap().reason, Reason::Met);
}

#[test]
fn a_stale_complete_state_from_an_earlier_flight_does_not_finish_a_new_start() {
    let items = plan(&[NAV_TAKEOFF, NAV_WAYPOINT, NAV_LAND]);
    let mut s = Scripted::new(&items);
    // A first flight to the end: PX4 keeps COMPLETE at the last seq, and repeats its last
    // MISSION_ITEM_REACHED.
    s.start();
    s.current(0, ACTIVE);
    for i in 0..3 {
        s.current(i, ACTIVE);
        s.reached(i);
    }
    s.current(2, COMPLETE);
    assert!(s.complete());
    // A new start: until PX4 shows this run, state 5 and the repeats are the old flight's.
    s.start();
    assert!(!s.complete());
    let id = s.wait(Wait::mission_complete().timeout_s(600.0));
    let reached = s.wait(Wait::reached(0).timeout_s(600.0));
    for _ in 0..5 {
        s.current(2, COMPLETE);
        s.reached(2);
    }
    assert!(
        s.result(id).is_none(),
        "stale COMPLETE and repeats do not count"
    );
    assert!(!s.complete());
    assert_eq!(s.client.offboard().mission_reached(), None);
    // MISSION_SET_CURRENT 0 lands: NOT_STARTED at item 0. A stale repeat of item 2 is ignored
    // (not yet current).
    s.current(0, NOT_STARTED);
    s.reached(2);
    assert!(s.result(id).is_none());
    assert!(s.result(reached).is_none());
    s.current(0, ACTIVE);
    s.reached(0);
    assert_eq!(s.result(reached).unwrap().reason, Reason::Met);
    for i in 1..3 {
        s.current(i, ACTIVE);
        s.reached(i);
    }
    assert_eq!(s.result(id).unwrap().reason, Reason::Met);
}

#[test]
fn reached_is_never_met_before_its_message_and_compares_with_its_op() {
    let mut s = Scripted::new(&plan(&[NAV_TAKEOFF, NAV_WAYPOINT, NAV_WAYPOINT, NAV_LAND]));
    s.start();
    // "Reached <= 3" would hold for "nothing reached" if that read as -1: it must not.
    let le = s.wait(Wait::reached(3).op(Op::Le).timeout_s(600.0));
    let within = s.wait(Wait::reached(2).within(0.0).timeout_s(600.0));
    let complete = s.wait(Wait::mission_complete().timeout_s(600.0));
    let ge = s.wait(Wait::reached(1).timeout_s(600.0));
    s.current(0, ACTIVE);
    assert!(
        s.result(le).is_none(),
        "never met before a MISSION_ITEM_REACHED"
    );
    s.reached(0);
    assert_eq!(s.result(le).unwrap().reason, Reason::Met);
    assert!(s.result(ge).is_none());
    s.current(1, ACTIVE);
    s.reached(1);
    assert_eq!(s.result(ge).unwrap().reason, Reason::Met);
    assert!(s.result(within).is_none());
    s.current(2, ACTIVE);
    s.reached(2);
    assert_eq!(s.result(within).unwrap().reason, Reason::Met);
    assert!(s.result(complete).is_none());
}

#[test]
fn mission_conditions_with_modifiers_that_do_not_apply_are_errors() {
    assert!(Condition::mission_complete().op(Op::Ge).validate().is_err());
    assert!(Condition::mission_complete()
        .within(1.0)
        .validate()
        .is_err());
    assert!(Condition::reached(2).op(Op::Eq).validate().is_ok());
    assert!(Condition::reached(2).relative().validate().is_err());
    assert!(Condition::reached(2).since_seq(3).validate().is_err());
}

#[test]
fn conditions_read_as_written() {
    let rows = [
        (Condition::altitude_m(3.0).op(Op::Le), "altitude <= 3 m"),
        (
            Condition::altitude_m(5.0).within(0.5),
            "altitude within 0.5 m of 5 m",
        ),
        (Condition::airspeed_m_s(12.5), "airspeed >= 12.5 m/s"),
        (Condition::waypoint(4).op(Op::Eq), "waypoint == 4"),
        (Condition::sim_time_s(10.0), "sim_time >= 10 s"),
        (
            Condition::sim_time_s(2.0).relative(),
            "sim_time >= 2 s from the step's start",
        ),
        (Condition::time_s(5.0), "5 s of sim time"),
        (Condition::mode_named("land"), "mode Land"),
        (
            Condition::text("Takeoff detected"),
            "text 'Takeoff detected'",
        ),
        (
            Condition::text("Takeoff").since_seq(2),
            "text 'Takeoff' after text #2",
        ),
        (Condition::armed(), "armed"),
        (Condition::disarmed(), "disarmed"),
        (Condition::landed(), "landed"),
        (Condition::reached(4), "reached >= 4"),
        (Condition::mission_complete(), "mission_complete"),
    ];
    for (c, want) in rows {
        assert_eq!(c.to_string(), want);
    }
}

#[test]
fn a_program_that_starts_the_mission_again_does_not_find_it_complete_at_once() {
    // The second step's action (a new start) resets the run in the same tick the first step
    // settles; its wait must read the new run, not the finished one.
    use nexus_core::action::Action;
    use nexus_core::engine::{Program, ProgramState, Step};
    let mut s = Scripted::new(&plan(&[NAV_TAKEOFF, NAV_LAND]));
    let mut p: Program<4> = Program::new();
    for _ in 0..2 {
        p.push(Step::new(Action::StartMission, Wait::mission_complete()).timeout_s(600.0))
            .unwrap();
    }
    let now = s.now();
    s.client.start_program(now, p).unwrap();
    s.current(0, NOT_STARTED);
    s.current(0, ACTIVE);
    s.reached(0);
    s.current(1, ACTIVE);
    s.reached(1);
    assert_eq!(s.client.program().records().len(), 1);
    assert_eq!(s.client.program().records()[0].result.reason, Reason::Met);
    assert_eq!(
        s.client.program().state(),
        ProgramState::Running { step: 1 },
        "the new start is not complete at once"
    );
    // PX4 still shows the old run until the restart lands.
    s.current(1, COMPLETE);
    s.reached(1);
    assert_eq!(
        s.client.program().state(),
        ProgramState::Running { step: 1 }
    );
    s.current(0, NOT_STARTED);
    s.current(0, ACTIVE);
    s.reached(0);
    s.current(1, ACTIVE);
    s.reached(1);
    assert_eq!(s.client.program().records().len(), 2);
    assert_eq!(s.client.program().records()[1].result.reason, Reason::Met);
}

#[test]
fn a_verb_hands_the_engine_the_machines_progress_at_once() {
    // Client verbs keep the wait engine's mission progress in step with the machine's, as
    // `apply` does: no frame and no wait registration is needed for it to see a verb.
    let items = plan(&[NAV_TAKEOFF, NAV_LAND]);
    let mut s = Scripted::new(&items);
    s.start();
    s.current(0, ACTIVE);
    s.reached(0);
    s.current(1, ACTIVE);
    s.reached(1);
    assert!(s.complete());
    let flown = s
        .client
        .engine()
        .mission_progress()
        .expect("progress known");
    assert!(flown.complete && flown.reached == Some(1), "{flown:?}");
    // A new start resets the machine's progress; the engine sees it in the same call.
    s.start();
    assert_eq!(s.client.offboard().mission_progress(), None);
    assert_eq!(s.client.engine().mission_progress(), None);
    // So does lodging (and uploading) another mission after progress came in.
    s.current(0, NOT_STARTED);
    assert!(s.client.engine().mission_progress().is_some());
    s.client.lodge_mission(&items).unwrap();
    assert_eq!(s.client.engine().mission_progress(), None);
    s.current(0, NOT_STARTED);
    assert!(s.client.engine().mission_progress().is_some());
    s.client.upload_mission().unwrap();
    assert_eq!(s.client.engine().mission_progress(), None);
}
