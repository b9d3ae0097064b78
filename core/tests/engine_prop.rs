//! Property: for random message streams and random waits, every registered wait settles
//! exactly once, in the very message where a reference evaluation (written here from the spec,
//! independently of the engine: no text cursor, no cached readings, no bitmasks) says its
//! condition first held for `hold_s`, a guard fired, or its timeout passed — never before,
//! never after — with reactions only on met and before the result.

mod engine_support;

use engine_support::*;
use nexus_core::engine::{
    Condition, Engine, EngineError, EngineEvent, Op, Reason, SpecError, Wait, WaitId,
};
use nexus_core::telemetry::LinkIds;
use nexus_core::{mav, Duration, Frame, Instant, Mode, Telemetry};
use proptest::prelude::*;

const MODES: [Mode; 6] = [
    Mode::Hold,
    Mode::Takeoff,
    Mode::Land,
    Mode::Mission,
    Mode::Rtl,
    Mode::Position,
];
const TEXTS: [&str; 5] = [
    "Takeoff detected",
    "Landing detected",
    "Armed by external command",
    "Disarmed by landing",
    "Failsafe activated",
];
const NEEDLES: [&str; 5] = ["Takeoff", "detected", "Failsafe", "Disarmed by", "nowhere"];
const WAITS: usize = 16;

#[derive(Debug, Clone, Copy)]
enum Cmp {
    Ge,
    Le,
    Eq,
    Within(f32),
}

#[derive(Debug, Clone)]
enum C {
    Alt(Cmp, f32),
    Air(Cmp, f32),
    Wp(Cmp, u16),
    SimTime(Cmp, f32, bool),
    Time(f32),
    Mode(u8),
    Text(u8, u8),
    Armed,
    Disarmed,
    Landed,
}

#[derive(Debug, Clone)]
struct Spec {
    cond: C,
    timeout_s: f32,
    hold_s: f32,
    guard: Option<C>,
    react: bool,
}

#[derive(Debug, Clone)]
enum Ev {
    Tick(u32),
    Alt(i32),
    Air(u8),
    Hb(bool, u8),
    Wp(u16),
    Landed(u8),
    Text(u8),
    Register(Spec),
    Cap(u8),
}

fn cmp() -> impl Strategy<Value = Cmp> {
    prop_oneof![
        3 => Just(Cmp::Ge),
        2 => Just(Cmp::Le),
        1 => Just(Cmp::Eq),
        2 => prop::sample::select(vec![0.0f32, 0.25, 1.0]).prop_map(Cmp::Within),
    ]
}

fn cond() -> impl Strategy<Value = C> {
    prop_oneof![
        (
            cmp(),
            prop::sample::select(vec![0.0f32, 0.3, 2.5, 5.0, 10.0])
        )
            .prop_map(|(c, v)| C::Alt(c, v)),
        (cmp(), prop::sample::select(vec![0.0f32, 3.0, 7.5, 12.0])).prop_map(|(c, v)| C::Air(c, v)),
        (cmp(), 0u16..6).prop_map(|(c, v)| C::Wp(c, v)),
        (
            cmp(),
            prop::sample::select(vec![0.0f32, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0]),
            any::<bool>()
        )
            .prop_map(|(c, v, r)| C::SimTime(c, v, r)),
        prop::sample::select(vec![0.0f32, 0.5, 1.0, 3.0]).prop_map(C::Time),
        (0u8..6).prop_map(C::Mode),
        (0u8..5, prop_oneof![3 => Just(0u8), 1 => 1u8..4]).prop_map(|(n, b)| C::Text(n, b)),
        Just(C::Armed),
        Just(C::Disarmed),
        Just(C::Landed),
    ]
}

fn spec() -> impl Strategy<Value = Spec> {
    (
        cond(),
        prop::sample::select(vec![0.0f32, 0.5, 1.0, 2.0, 5.0, 10.0]),
        prop::sample::select(vec![0.0f32, 0.0, 0.0, 0.2, 1.0]),
        prop::option::weighted(0.3, cond()),
        any::<bool>(),
    )
        .prop_map(|(cond, timeout_s, hold_s, guard, react)| Spec {
            cond,
            timeout_s,
            hold_s,
            guard,
            react,
        })
}

fn event() -> impl Strategy<Value = Ev> {
    prop_oneof![
        6 => (1u32..1500).prop_map(Ev::Tick),
        3 => prop_oneof![-1000i32..12000, prop::sample::select(vec![0, 300, 2500, 5000, 10000])].prop_map(Ev::Alt),
        2 => (0u8..30).prop_map(Ev::Air),
        3 => (any::<bool>(), 0u8..6).prop_map(|(a, m)| Ev::Hb(a, m)),
        2 => (0u16..6).prop_map(Ev::Wp),
        1 => (0u8..5).prop_map(Ev::Landed),
        2 => (0u8..5).prop_map(Ev::Text),
        4 => spec().prop_map(Ev::Register),
        1 => any::<u8>().prop_map(Ev::Cap),
    ]
}

// --- building the engine's wait ---------------------------------------------------------------

fn condition(c: &C, texts_seen: u32) -> Condition {
    fn with(cond: Condition, c: Cmp) -> Condition {
        match c {
            Cmp::Ge => cond.op(Op::Ge),
            Cmp::Le => cond.op(Op::Le),
            Cmp::Eq => cond.op(Op::Eq),
            Cmp::Within(t) => cond.within(t),
        }
    }
    match *c {
        C::Alt(o, v) => with(Condition::altitude_m(v), o),
        C::Air(o, v) => with(Condition::airspeed_m_s(v), o),
        C::Wp(o, v) => with(Condition::waypoint(v), o),
        C::SimTime(o, v, rel) => {
            let c = with(Condition::sim_time_s(v), o);
            if rel {
                c.relative()
            } else {
                c
            }
        }
        C::Time(v) => Condition::time_s(v),
        C::Mode(m) => Condition::mode(MODES[m as usize]),
        C::Text(n, back) => {
            let c = Condition::text(NEEDLES[n as usize]);
            if back > 0 {
                c.since_seq(texts_seen.saturating_sub(back as u32))
            } else {
                c
            }
        }
        C::Armed => Condition::armed(),
        C::Disarmed => Condition::disarmed(),
        C::Landed => Condition::landed(),
    }
}

fn wait(s: &Spec, texts_seen: u32) -> Wait {
    let mut w = Wait::until(condition(&s.cond, texts_seen))
        .timeout_s(s.timeout_s)
        .hold_s(s.hold_s);
    if let Some(g) = &s.guard {
        w = w.guard(condition(g, texts_seen));
    }
    if s.react {
        w = w.then_mode(Mode::Rtl);
    }
    w
}

// --- the reference ------------------------------------------------------------------------------

#[derive(Default)]
struct Model {
    sim: Option<u64>,
    /// GLOBAL_POSITION_INT.alt above the fixtures' 488 m, mm (position_mm's relative_alt).
    alt_mm: Option<i32>,
    /// The pad: the first position, latched again at every disarmed→armed edge.
    pad_mm: Option<i32>,
    airspeed: Option<f32>,
    armed: Option<bool>,
    mode: Option<Mode>,
    wp: Option<u16>,
    landed_state: Option<u8>,
    texts: Vec<(u32, &'static str)>,
    last_settle: Option<Option<u64>>,
}

fn ms(s: f32) -> u64 {
    (s as f64 * 1000.0).round() as u64
}

fn test_f(c: Cmp, v: f32, t: f32) -> bool {
    match c {
        Cmp::Ge => v >= t,
        Cmp::Le => v <= t,
        Cmp::Eq => v == t,
        Cmp::Within(tol) => (v - t).abs() <= tol,
    }
}

fn test_ms(c: Cmp, v: u64, t: u64) -> bool {
    match c {
        Cmp::Ge => v >= t,
        Cmp::Le => v <= t,
        Cmp::Eq => v == t,
        Cmp::Within(tol) => v.abs_diff(t) <= ms(tol),
    }
}

impl Model {
    /// AMSL since arm (no ground truth streams here).
    fn height(&self) -> Option<f32> {
        Some((self.alt_mm? - self.pad_mm?) as f32 / 1000.0)
    }

    fn landed(&self) -> Option<bool> {
        match self.landed_state {
            Some(s) => Some(s == 1),
            None => Some(!self.armed? && self.height()?.abs() <= 0.3),
        }
    }

    fn holds(&self, c: &C, start: Option<u64>, base: Option<u64>, since: u32) -> bool {
        match *c {
            C::Alt(o, t) => self.height().is_some_and(|v| test_f(o, v, t)),
            C::Air(o, t) => self.airspeed.is_some_and(|v| test_f(o, v, t)),
            C::Wp(o, t) => self.wp.is_some_and(|v| test_f(o, v as f32, t as f32)),
            C::SimTime(o, t, false) => self.sim.is_some_and(|v| test_ms(o, v, ms(t))),
            C::SimTime(o, t, true) => match (self.sim, base) {
                (Some(v), Some(b)) => test_ms(o, v - b, ms(t)),
                _ => false,
            },
            C::Time(t) => match (self.sim, start) {
                (Some(v), Some(s)) => v - s >= ms(t),
                _ => false,
            },
            C::Mode(m) => self.mode == Some(MODES[m as usize]),
            C::Text(n, _) => self
                .texts
                .iter()
                .any(|(seq, t)| *seq > since && t.contains(NEEDLES[n as usize])),
            C::Armed => self.armed == Some(true),
            C::Disarmed => self.armed == Some(false),
            C::Landed => self.landed() == Some(true),
        }
    }
}

struct RefWait {
    spec: Spec,
    id: WaitId,
    start: Option<u64>,
    base: Option<u64>,
    holding: Option<u64>,
    since: u32,
    guard_since: u32,
    /// (event index, reason, guard)
    expected: Option<(usize, Reason, Option<u8>)>,
}

impl RefWait {
    fn verdict(&mut self, m: &Model) -> Option<(Reason, Option<u8>)> {
        if let Some(t) = m.sim {
            self.start.get_or_insert(t);
            self.base.get_or_insert(t);
        }
        let hold = ms(self.spec.hold_s);
        if m.holds(&self.spec.cond, self.start, self.base, self.since) {
            if hold == 0 {
                return Some((Reason::Met, None));
            }
            if let Some(t) = m.sim {
                if t - *self.holding.get_or_insert(t) >= hold {
                    return Some((Reason::Met, None));
                }
            }
        } else {
            self.holding = None;
        }
        if let Some(g) = &self.spec.guard {
            if m.holds(g, self.start, self.base, self.guard_since) {
                return Some((Reason::Guard, Some(0)));
            }
        }
        match (m.sim, self.start) {
            (Some(t), Some(s)) if t - s >= ms(self.spec.timeout_s) => Some((Reason::Timeout, None)),
            _ => None,
        }
    }
}

fn uses_relative(s: &Spec) -> bool {
    let rel = |c: &C| matches!(c, C::SimTime(_, _, true));
    rel(&s.cond) || s.guard.as_ref().is_some_and(rel)
}

fn text_since(c: &C, last_seq: u32) -> u32 {
    match c {
        C::Text(_, back) if *back > 0 => last_seq.saturating_sub(*back as u32),
        _ => last_seq,
    }
}

// --- the run ------------------------------------------------------------------------------------

fn landed_state(v: u8) -> mav::MavLandedState {
    use mav::MavLandedState::*;
    [
        MAV_LANDED_STATE_UNDEFINED,
        MAV_LANDED_STATE_ON_GROUND,
        MAV_LANDED_STATE_IN_AIR,
        MAV_LANDED_STATE_TAKEOFF,
        MAV_LANDED_STATE_LANDING,
    ][v as usize]
}

fn run(events: Vec<Ev>) -> Result<(), TestCaseError> {
    let mut tel: Telemetry<64> = Telemetry::new(LinkIds::default());
    let mut engine: Engine<WAITS> = Engine::new();
    let mut now = Instant::from_millis(1);
    let mut stamp: u32 = 0;
    let mut m = Model::default();
    let mut refs: Vec<RefWait> = Vec::new();
    // (event index, event) for every engine event
    let mut seen: Vec<(usize, EngineEvent)> = Vec::new();

    for (k, ev) in events.iter().enumerate() {
        let frame: Option<Frame> = match ev {
            Ev::Tick(d) => {
                stamp += d;
                now = now + Duration::from_millis(*d as u64);
                m.sim = Some(stamp as u64);
                Some(system_time(stamp))
            }
            Ev::Alt(mm) => {
                m.sim = Some(stamp as u64);
                m.alt_mm = Some(*mm);
                m.pad_mm = m.pad_mm.or(Some(*mm));
                Some(position_mm(stamp, *mm))
            }
            Ev::Air(v) => {
                m.airspeed = Some(*v as f32 * 0.5);
                Some(vfr_hud(*v as f32 * 0.5))
            }
            Ev::Hb(a, md) => {
                if *a && m.armed != Some(true) && m.alt_mm.is_some() {
                    m.pad_mm = m.alt_mm;
                }
                m.armed = Some(*a);
                m.mode = Some(MODES[*md as usize]);
                Some(heartbeat(*a, MODES[*md as usize]))
            }
            Ev::Wp(s) => {
                m.wp = Some(*s);
                Some(mission_current(*s))
            }
            Ev::Landed(v) => {
                m.landed_state = Some(*v); // UNDEFINED still counts as arrived (the spec)
                Some(engine_support::landed_state(landed_state(*v)))
            }
            Ev::Text(i) => {
                if m.texts.len() >= 60 {
                    None // keep every text in the telemetry ring (64)
                } else {
                    m.texts.push((m.texts.len() as u32 + 1, TEXTS[*i as usize]));
                    Some(statustext(TEXTS[*i as usize]))
                }
            }
            Ev::Register(s) => {
                let last_seq = m.texts.len() as u32;
                let w = wait(s, last_seq);
                let pending = refs.iter().filter(|r| r.expected.is_none()).count();
                let hold_ms = ms(s.hold_s);
                let expect_err = if matches!(s.cond, C::Text(..)) && s.hold_s > 0.0 {
                    Some(EngineError::Spec(SpecError::HoldNotApplicable(
                        nexus_core::engine::ConditionKind::Text,
                    )))
                } else if s.hold_s > 0.0 && (s.hold_s >= s.timeout_s || hold_ms >= ms(s.timeout_s))
                {
                    Some(EngineError::Spec(SpecError::HoldNotShorterThanTimeout))
                } else if uses_relative(s) && m.last_settle.is_none() {
                    Some(EngineError::NoPreviousSettle)
                } else if pending == WAITS {
                    Some(EngineError::Full)
                } else {
                    None
                };
                let got = engine.register(now, &tel, &w);
                match (got, expect_err) {
                    (Err(e), Some(x)) => prop_assert_eq!(e, x),
                    (Ok(id), None) => {
                        let mut r = RefWait {
                            since: text_since(&s.cond, last_seq),
                            guard_since: s
                                .guard
                                .as_ref()
                                .map_or(last_seq, |g| text_since(g, last_seq)),
                            spec: s.clone(),
                            id,
                            start: m.sim,
                            base: if uses_relative(s) {
                                m.last_settle.unwrap()
                            } else {
                                None
                            },
                            holding: None,
                            expected: None,
                        };
                        if let Some((reason, guard)) = r.verdict(&m) {
                            r.expected = Some((k, reason, guard));
                            m.last_settle = Some(m.sim);
                        }
                        refs.push(r);
                    }
                    (got, x) => {
                        prop_assert!(false, "register: got {:?}, expected error {:?}", got, x)
                    }
                }
                None
            }
            Ev::Cap(i) => {
                if !refs.is_empty() {
                    let n = refs.len();
                    let r = &mut refs[*i as usize % n];
                    let got = engine.cap(now, &tel, r.id);
                    if r.expected.is_none() {
                        prop_assert_eq!(got, Ok(()));
                        r.expected = Some((k, Reason::Cap, None));
                        m.last_settle = Some(m.sim);
                    } else {
                        prop_assert_eq!(got, Err(EngineError::StaleId));
                    }
                }
                None
            }
        };
        if let Some(f) = frame {
            prop_assert!(tel.handle(now, &f));
            engine.evaluate(now, &tel);
            let mut settled_any = false;
            for r in refs.iter_mut().filter(|r| r.expected.is_none()) {
                if let Some((reason, guard)) = r.verdict(&m) {
                    r.expected = Some((k, reason, guard));
                    settled_any = true;
                }
            }
            if settled_any {
                m.last_settle = Some(m.sim);
            }
        }
        while let Some(e) = engine.poll_event() {
            seen.push((k, e));
        }
    }
    let end = events.len();
    engine.close(now, &tel);
    for r in refs.iter_mut().filter(|r| r.expected.is_none()) {
        r.expected = Some((end, Reason::Closed, None));
    }
    while let Some(e) = engine.poll_event() {
        seen.push((end, e));
    }

    for r in &refs {
        let settled: Vec<_> = seen
            .iter()
            .enumerate()
            .filter_map(|(pos, (k, e))| match e {
                EngineEvent::Settled { id, result } if *id == r.id => Some((pos, *k, result)),
                _ => None,
            })
            .collect();
        prop_assert_eq!(
            settled.len(),
            1,
            "wait {:?} settled {} times",
            r.spec,
            settled.len()
        );
        let (pos, k, result) = settled[0];
        let (xk, xreason, xguard) = r.expected.unwrap();
        prop_assert_eq!(
            (k, result.reason, result.guard),
            (xk, xreason, xguard),
            "wait {:?}",
            r.spec
        );
        prop_assert_eq!(result.satisfied, xreason == Reason::Met);
        let reactions: Vec<usize> = seen
            .iter()
            .enumerate()
            .filter_map(|(p, (_, e))| match e {
                EngineEvent::Reaction { id, .. } if *id == r.id => Some(p),
                _ => None,
            })
            .collect();
        let want = usize::from(r.spec.react && xreason == Reason::Met);
        prop_assert_eq!(reactions.len(), want, "reactions of {:?}", r.spec);
        if let Some(&p) = reactions.first() {
            prop_assert!(p < pos, "reaction after the result");
            prop_assert_eq!(seen[p].0, k, "reaction not in the settling tick");
        }
    }
    // Nothing settled that was never registered, and the engine is empty.
    let settled_total = seen
        .iter()
        .filter(|(_, e)| matches!(e, EngineEvent::Settled { .. }))
        .count();
    prop_assert_eq!(settled_total, refs.len());
    prop_assert_eq!(engine.pending_count(), 0);
    prop_assert_eq!(engine.free_slots(), WAITS);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn every_wait_settles_exactly_once_when_the_reference_says(events in prop::collection::vec(event(), 1..160)) {
        run(events)?;
    }
}

#[test]
fn the_harness_agrees_on_a_hand_checked_stream() {
    // An altitude wait registered at 1 s is met by the 5.000 m position, not by 4.999 m.
    let evs = vec![
        Ev::Tick(1000),
        Ev::Register(Spec {
            cond: C::Alt(Cmp::Ge, 5.0),
            timeout_s: 10.0,
            hold_s: 0.0,
            guard: None,
            react: true,
        }),
        Ev::Alt(0),
        Ev::Alt(4999),
        Ev::Alt(5000),
    ];
    assert!(run(evs).is_ok());
    let m = Model {
        alt_mm: Some(4999),
        pad_mm: Some(0),
        ..Default::default()
    };
    assert!(!m.holds(&C::Alt(Cmp::Ge, 5.0), None, None, 0));
}
