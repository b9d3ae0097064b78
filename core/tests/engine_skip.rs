//! Property: `Engine::evaluate` skips waits whose readings did not change and whose wake time
//! is not due, and reads only the telemetry some pending wait depends on; none of that may
//! change an outcome. Two engines get the same registrations and the same telemetry, one
//! evaluated with `evaluate`, the other with `evaluate_every_wait` (every pending wait looked
//! at against every reading, nothing skipped), and must give the same events in the same
//! frame: on PX4's recorded box flight and on random telemetry.

mod engine_support;

use engine_support::*;
use nexus_core::engine::{Condition, Engine, Op, Wait, WaitId};
use nexus_core::frame::Decoder;
use nexus_core::mission::MissionProgress;
use nexus_core::telemetry::LinkIds;
#[cfg(feature = "extra-conditions")]
use nexus_core::{engine::Place, telemetry::GpsFix, telemetry::LandedState};
use nexus_core::{mav, Frame, Instant, Mode, Msg, Telemetry};
use proptest::prelude::*;

const SLOTS: usize = 24;

/// Waits of every kind, many of which settle in the box flight (met, guard, timeout), with
/// short timeouts so the slots keep turning over.
fn specs() -> Vec<Wait> {
    let t = 25.0;
    #[allow(unused_mut)]
    let mut v = vec![
        Wait::altitude_m(2.0),
        Wait::altitude_m(5.0).hold_s(1.0),
        Wait::altitude_m(1.0).op(Op::Le),
        Wait::altitude_m(3.0).within(0.5),
        Wait::altitude_m(3.0).guard(Condition::mode(Mode::Land)),
        Wait::airspeed_m_s(1.0),
        Wait::airspeed_m_s(100.0).op(Op::Le),
        Wait::waypoint(1),
        Wait::waypoint(3).guard(Condition::text("Landing")),
        Wait::sim_time_s(5.0).relative(),
        Wait::sim_time_s(2.0).op(Op::Le).relative().hold_s(0.5),
        Wait::time_s(3.0),
        Wait::mode(Mode::Mission),
        Wait::mode(Mode::Land).guard(Condition::altitude_m(8.0)),
        Wait::mode_named("Hold"),
        Wait::text("Takeoff detected"),
        Wait::text("detected").guard(Condition::time_s(4.0)),
        Wait::armed(),
        Wait::disarmed(),
        Wait::landed().hold_s(0.5),
        Wait::reached(1),
        Wait::reached(3).op(Op::Ge),
        Wait::mission_complete(),
        Wait::until(Condition::mission_verified()),
    ];
    #[cfg(feature = "extra-conditions")]
    v.extend([
        Wait::until(Condition::groundspeed_m_s(2.0)),
        Wait::until(Condition::climb_rate_m_s(0.5)).hold_s(0.5),
        Wait::until(Condition::climb_rate_m_s(-0.5).op(Op::Le)),
        Wait::until(Condition::heading_deg(90.0).within(20.0)),
        Wait::until(Condition::heading_deg(180.0)),
        Wait::until(Condition::battery_remaining_pct(95.0).op(Op::Le)),
        Wait::until(Condition::battery_voltage_v(10.0)),
        Wait::until(Condition::gps_fix(GpsFix::Fix3d)),
        Wait::until(Condition::satellites(10)),
        Wait::until(Condition::landed_state(&[LandedState::InAir])),
        Wait::until(Condition::distance_m(5.0, Place::Home)),
        Wait::until(
            Condition::distance_m(
                3.0,
                Place::World {
                    x_m: 10.0,
                    y_m: 0.0,
                    z_m: 5.0,
                },
            )
            .op(Op::Le),
        ),
        Wait::until(Condition::distance_m(
            20.0,
            Place::LatLon {
                lat_deg: 47.397742,
                lon_deg: 8.545594,
            },
        )),
        Wait::until(Condition::at_target()),
        Wait::altitude_m(4.0).guard(Condition::groundspeed_m_s(3.0)),
    ]);
    v.into_iter().map(|w| w.timeout_s(t)).collect()
}

/// The engine under test and the reference, fed the same registrations and telemetry.
struct Pair {
    fast: Engine<SLOTS>,
    every: Engine<SLOTS>,
    specs: Vec<Wait>,
    next: usize,
    settled: usize,
    met: usize,
}

impl Pair {
    fn new() -> Self {
        Pair {
            fast: Engine::new(),
            every: Engine::new(),
            specs: specs(),
            next: 0,
            settled: 0,
            met: 0,
        }
    }

    /// Register spec `k` on both (the reference brought up to date first: a registration
    /// evaluates the other waits, and the reference must have looked at them all).
    fn register<const T: usize>(
        &mut self,
        now: Instant,
        tel: &Telemetry<T>,
        k: usize,
    ) -> Option<WaitId> {
        let w = &self.specs[k % self.specs.len()];
        self.every.evaluate_every_wait(now, tel);
        let a = self.fast.register(now, tel, w);
        let b = self.every.register(now, tel, w);
        assert_eq!(format!("{a:?}"), format!("{b:?}"), "registering {w:?}");
        a.ok()
    }

    fn supply(&mut self, mission: Option<MissionProgress>, at_target: Option<bool>) {
        for e in [&mut self.fast, &mut self.every] {
            e.set_mission_progress(mission);
            #[cfg(feature = "extra-conditions")]
            e.set_at_target(at_target);
        }
        let _ = at_target;
    }

    /// Evaluate both and compare every event (Debug text: a NaN reading in a snapshot is
    /// the same NaN on both sides). Returns how many waits settled.
    fn step<const T: usize>(&mut self, now: Instant, tel: &Telemetry<T>, what: &str) -> usize {
        self.fast.evaluate(now, tel);
        self.every.evaluate_every_wait(now, tel);
        let mut n = 0;
        loop {
            let (a, b) = (self.fast.poll_event(), self.every.poll_event());
            assert_eq!(
                format!("{a:?}"),
                format!("{b:?}"),
                "after {what}: the skipping engine and the reference differ"
            );
            let Some(e) = a else { break };
            if let nexus_core::engine::EngineEvent::Settled { result, .. } = e {
                n += 1;
                self.settled += 1;
                self.met += result.satisfied as usize;
            }
        }
        assert_eq!(self.fast.pending_count(), self.every.pending_count());
        n
    }

    /// Keep every slot busy: one new wait per free slot, cycling through the specs.
    fn refill<const T: usize>(&mut self, now: Instant, tel: &Telemetry<T>) -> Vec<WaitId> {
        let mut ids = Vec::new();
        while self.fast.free_slots() > 0 {
            ids.extend(self.register(now, tel, self.next));
            self.next += 1;
            self.step(now, tel, "a registration");
        }
        ids
    }
}

/// The recorded tlog's frames with their timestamps (µs).
fn trace() -> Vec<(u64, Frame)> {
    let tlog = include_bytes!("../../fixtures/px4-traces/box-x4.px4-to-nexus.tlog");
    let mut dec = Decoder::new();
    let mut out = Vec::new();
    let mut i = 0;
    while i + 8 < tlog.len() {
        let ts = u64::from_be_bytes(tlog[i..i + 8].try_into().unwrap());
        let f = &tlog[i + 8..];
        let len = match f[0] {
            0xFD => 10 + f[1] as usize + 2 + if f[2] & 1 != 0 { 13 } else { 0 },
            0xFE => 6 + f[1] as usize + 2,
            b => panic!("tlog record at {i} starts with {b:#x}, not a frame"),
        };
        let mut input = &f[..len];
        while !input.is_empty() {
            let (used, raw) = dec.feed(input);
            input = &input[used..];
            if let Some(Ok(Some(frame))) = raw.map(|r| Frame::decode(&r)) {
                out.push((ts, frame));
            }
        }
        i += 8 + len;
    }
    out
}

#[test]
fn skipping_gives_the_reference_outcome_on_the_recorded_px4_flight() {
    let frames = trace();
    assert!(frames.len() > 10_000, "{} frames", frames.len());
    // The recording is PX4 SITL instance 5: system id 6.
    let mut tel = Telemetry::<16>::new(LinkIds {
        target_sysid: 6,
        ..LinkIds::default()
    });
    let mut pair = Pair::new();
    let mut progress: Option<MissionProgress> = None;
    let start = frames[0].0;
    for (k, (ts, frame)) in frames.iter().enumerate() {
        let now = Instant::from_micros(ts - start + 1_000);
        if k == 0 {
            pair.refill(now, &tel);
        }
        if !tel.handle(now, frame) {
            continue;
        }
        if let Msg::MissionItemReached(m) = &frame.msg {
            let p = progress.get_or_insert(MissionProgress {
                reached: None,
                complete: false,
                verified: false,
                settling: false,
            });
            p.reached = Some(p.reached.map_or(m.seq, |r| r.max(m.seq)));
            p.complete = m.seq >= 4;
            p.verified = m.seq >= 2;
        }
        let at_target = tel.height_m().map(|h| h > 4.0);
        pair.supply(progress, at_target);
        if pair.step(now, &tel, &format!("frame {k} ({})", frame.msg.name())) > 0 {
            pair.refill(now, &tel);
        }
    }
    // The flight must have exercised the engine: many waits met, not only timeouts.
    assert!(
        pair.settled > 100 && pair.met > 50,
        "{} settled, {} met",
        pair.settled,
        pair.met
    );
}

/// One step of random telemetry.
#[derive(Debug, Clone)]
enum Ev {
    Tick(u16),
    Alt(i8),
    Truth(i8),
    Hud(u8, i8),
    Hb(bool, u8),
    Wp(u8),
    Landed(u8),
    Text(u8),
    Attitude(i8),
    Battery(i8, u8),
    Gps(u8, u8),
    Local(i8, i8),
    Home(i8),
    Progress(Option<u8>, bool),
    AtTarget(Option<bool>),
    Register(u8),
    Cap(u8),
}

fn event() -> impl Strategy<Value = Ev> {
    prop_oneof![
        4 => (1u16..1500).prop_map(Ev::Tick),
        3 => (-3i8..12).prop_map(Ev::Alt),
        1 => (-3i8..12).prop_map(Ev::Truth),
        2 => (0u8..6, -3i8..4).prop_map(|(a, c)| Ev::Hud(a, c)),
        2 => (any::<bool>(), 0u8..4).prop_map(|(a, m)| Ev::Hb(a, m)),
        1 => (0u8..5).prop_map(Ev::Wp),
        1 => (0u8..5).prop_map(Ev::Landed),
        1 => (0u8..4).prop_map(Ev::Text),
        2 => (-4i8..4).prop_map(Ev::Attitude),
        1 => (-2i8..100, 0u8..3).prop_map(|(p, v)| Ev::Battery(p, v)),
        1 => (0u8..5, 0u8..3).prop_map(|(f, s)| Ev::Gps(f, s)),
        1 => (-3i8..12, -3i8..3).prop_map(|(x, z)| Ev::Local(x, z)),
        1 => (-2i8..2).prop_map(Ev::Home),
        1 => (prop::option::of(0u8..5), any::<bool>()).prop_map(|(r, c)| Ev::Progress(r, c)),
        1 => prop::option::of(any::<bool>()).prop_map(Ev::AtTarget),
        2 => any::<u8>().prop_map(Ev::Register),
        1 => any::<u8>().prop_map(Ev::Cap),
    ]
}

const MODES: [Mode; 4] = [Mode::Hold, Mode::Mission, Mode::Land, Mode::Takeoff];
const TEXTS: [&str; 4] = [
    "Takeoff detected",
    "Landing detected",
    "Failsafe",
    "Mission finished",
];

/// The frame an event sends (`None`: not a frame). Values come from small sets so that
/// readings repeat (unchanged) as often as they change, NaN included.
fn event_frame(ev: &Ev, sim_ms: u32) -> Option<Frame> {
    Some(match *ev {
        Ev::Alt(m) => position_mm(sim_ms, m as i32 * 500),
        Ev::Truth(m) => ground_truth_mm(sim_ms, 488_000 + m as i32 * 500),
        Ev::Hud(a, c) => frame(Msg::VfrHud(mav::VFR_HUD_DATA {
            airspeed: if a == 0 { f32::NAN } else { a as f32 },
            groundspeed: a as f32 * 0.75,
            climb: if c == 3 { f32::NAN } else { c as f32 * 0.5 },
            ..Default::default()
        })),
        Ev::Hb(armed, m) => heartbeat(armed, MODES[m as usize]),
        Ev::Wp(s) => mission_current(s as u16),
        Ev::Landed(s) => landed_state(match s {
            0 => mav::MavLandedState::MAV_LANDED_STATE_UNDEFINED,
            1 => mav::MavLandedState::MAV_LANDED_STATE_ON_GROUND,
            2 => mav::MavLandedState::MAV_LANDED_STATE_IN_AIR,
            3 => mav::MavLandedState::MAV_LANDED_STATE_TAKEOFF,
            _ => mav::MavLandedState::MAV_LANDED_STATE_LANDING,
        }),
        Ev::Text(t) => statustext(TEXTS[t as usize]),
        Ev::Attitude(y) => frame(Msg::Attitude(mav::ATTITUDE_DATA {
            time_boot_ms: sim_ms,
            yaw: if y == 3 { f32::NAN } else { y as f32 * 0.8 },
            ..Default::default()
        })),
        Ev::Battery(p, v) => frame(Msg::SysStatus(mav::SYS_STATUS_DATA {
            battery_remaining: p,
            voltage_battery: [u16::MAX, 10_500, 12_600][v as usize],
            ..Default::default()
        })),
        #[cfg(feature = "extra-conditions")]
        Ev::Gps(f, s) => frame(Msg::GpsRawInt(mav::GPS_RAW_INT_DATA {
            fix_type: [
                mav::GpsFixType::GPS_FIX_TYPE_NO_GPS,
                mav::GpsFixType::GPS_FIX_TYPE_NO_FIX,
                mav::GpsFixType::GPS_FIX_TYPE_2D_FIX,
                mav::GpsFixType::GPS_FIX_TYPE_3D_FIX,
                mav::GpsFixType::GPS_FIX_TYPE_RTK_FIXED,
            ][f as usize],
            satellites_visible: [4, 12, u8::MAX][s as usize],
            ..Default::default()
        })),
        Ev::Local(x, z) => frame(Msg::LocalPositionNed(mav::LOCAL_POSITION_NED_DATA {
            time_boot_ms: sim_ms,
            x: x as f32,
            y: 0.0,
            z: -(z as f32) * 2.0,
            ..Default::default()
        })),
        Ev::Home(d) => frame(Msg::HomePosition(mav::HOME_POSITION_DATA {
            latitude: 473_977_420 + d as i32 * 300,
            longitude: 85_455_940,
            ..Default::default()
        })),
        _ => return None,
    })
}

fn run(events: Vec<Ev>) {
    let mut tel = Telemetry::<16>::new(LinkIds::default());
    let mut pair = Pair::new();
    let mut sim_ms = 10_000u32;
    let mut now = Instant::from_millis(1);
    let mut mission = None;
    let mut at_target = None;
    let mut ids: Vec<WaitId> = pair.refill(now, &tel);
    for (k, ev) in events.iter().enumerate() {
        let what = format!("event {k} {ev:?}");
        match *ev {
            Ev::Tick(dt) => {
                sim_ms += dt as u32;
                now = Instant::from_millis(sim_ms as u64 - 9_000);
                tel.handle(now, &system_time(sim_ms));
            }
            Ev::Progress(r, complete) => {
                mission = Some(MissionProgress {
                    reached: r.map(u16::from),
                    complete,
                    // Verified on its own schedule: every other item reached.
                    verified: r.is_some_and(|x| x % 2 == 0),
                    settling: false,
                });
            }
            Ev::AtTarget(a) => at_target = a,
            Ev::Register(s) => {
                if pair.fast.free_slots() > 0 {
                    ids.extend(pair.register(now, &tel, s as usize));
                }
            }
            Ev::Cap(i) => {
                if let Some(&id) = ids.get(i as usize % ids.len().max(1)) {
                    pair.every.evaluate_every_wait(now, &tel);
                    let a = pair.fast.cap(now, &tel, id);
                    let b = pair.every.cap(now, &tel, id);
                    assert_eq!(format!("{a:?}"), format!("{b:?}"), "{what}");
                }
            }
            _ => {
                if let Some(f) = event_frame(ev, sim_ms) {
                    tel.handle(now, &f);
                }
            }
        }
        pair.supply(mission, at_target);
        pair.step(now, &tel, &what);
        if k % 7 == 0 {
            let more = pair.refill(now, &tel);
            ids.extend(more);
        }
        // Ids of waits still pending, for caps.
        ids.retain(|&id| pair.fast.is_pending(id));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn skipping_gives_the_reference_outcome_on_random_telemetry(
        events in prop::collection::vec(event(), 1..300)
    ) {
        run(events);
    }
}
