//! Engine cost per message, and decode + evaluate throughput on a realistic PX4 stream.
//!
//! `cargo bench -p nexus-core --bench engine` (add `-- --quick` for a short run).
//!
//! * `per_message/*`: `Telemetry::handle` of the next frame of a PX4 stream, then
//!   `Engine::evaluate` with 1, 16 and `MAX_WAITS` pending waits of every kind (none ever
//!   settles); `telemetry_only` is the same without waits. The engine's cost per message is
//!   the difference.
//! * `per_message_all_dirty/*`: the worst case, a stream in which every message changes the
//!   input of every wait (GLOBAL_POSITION_INT with altitude waits), so none can be skipped.
//! * `stream/*`: bytes of 10 s of PX4 traffic at the rates of PX4-WIRE.md, including
//!   ATTITUDE_QUATERNION and HIGHRES_IMU (outside the decoded subset, skipped), through
//!   `Decoder` → `Frame::decode` → `Telemetry::handle` → `Engine::evaluate` (16 waits).

// criterion_group!/criterion_main! generate undocumented functions.
#![allow(missing_docs)]

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use nexus_core::engine::{Condition, Engine, Op, Wait, MAX_WAITS};
use nexus_core::frame::{Decoder, Encoder, MAX_FRAME_LEN};
use nexus_core::telemetry::LinkIds;
use nexus_core::{mav, Frame, Instant, Mode, Telemetry};
use std::hint::black_box;
use std::time::Duration;

type Tel = Telemetry<32>;

/// 10 s of PX4's offboard-link traffic, encoded as PX4 (sysid 1, compid 1) sends it.
fn px4_stream(seconds: u32) -> (Vec<u8>, usize) {
    let mut enc = Encoder::new(1, 1);
    let mut out = Vec::new();
    let mut n = 0;
    let mut buf = [0u8; MAX_FRAME_LEN];
    macro_rules! put {
        ($m:expr) => {{
            let len = enc.encode(&$m, &mut buf).unwrap();
            out.extend_from_slice(&buf[..len]);
            n += 1;
        }};
    }
    // One tick per ms; each stream fires at its rate.
    for ms in 0..seconds * 1000 {
        let t = 10_000 + ms;
        let every = |hz: u32| ms % (1000 / hz) == 0;
        if every(100) {
            put!(mav::ATTITUDE_DATA {
                time_boot_ms: t,
                roll: 0.01,
                pitch: -0.02,
                yaw: 1.5,
                ..Default::default()
            });
        }
        if every(50) {
            put!(mav::GLOBAL_POSITION_INT_DATA {
                time_boot_ms: t,
                lat: 473_977_420,
                lon: 85_455_940,
                alt: 493_000 + (ms % 300) as i32,
                relative_alt: 5_000 + (ms % 300) as i32,
                ..Default::default()
            });
            put!(mav::ATTITUDE_QUATERNION_DATA {
                time_boot_ms: t,
                q1: 1.0,
                ..Default::default()
            });
            put!(mav::HIGHRES_IMU_DATA {
                time_usec: t as u64 * 1000,
                zacc: -9.81,
                ..Default::default()
            });
        }
        if every(30) {
            put!(mav::LOCAL_POSITION_NED_DATA {
                time_boot_ms: t,
                z: -5.0,
                ..Default::default()
            });
        }
        if every(10) {
            put!(mav::VFR_HUD_DATA {
                airspeed: 3.0,
                groundspeed: 3.0,
                alt: 493.0,
                ..Default::default()
            });
        }
        if every(5) {
            put!(mav::SYS_STATUS_DATA::default());
            put!(mav::EXTENDED_SYS_STATE_DATA {
                vtol_state: mav::MavVtolState::MAV_VTOL_STATE_MC,
                landed_state: mav::MavLandedState::MAV_LANDED_STATE_IN_AIR,
            });
        }
        if every(1) {
            put!(heartbeat());
            put!(mav::SYSTEM_TIME_DATA {
                time_unix_usec: 0,
                time_boot_ms: t
            });
            put!(mav::MISSION_CURRENT_DATA {
                seq: 1,
                total: 5,
                ..Default::default()
            });
        }
        if ms % 2500 == 1234 {
            put!(mav::STATUSTEXT_DATA {
                severity: mav::MavSeverity::MAV_SEVERITY_INFO,
                text: "Takeoff detected".into(),
                id: 0,
                chunk_seq: 0,
            });
        }
    }
    (out, n)
}

fn heartbeat() -> mav::HEARTBEAT_DATA {
    mav::HEARTBEAT_DATA {
        custom_mode: Mode::Hold.custom_mode(),
        mavtype: mav::MavType::MAV_TYPE_QUADROTOR,
        autopilot: mav::MavAutopilot::MAV_AUTOPILOT_PX4,
        base_mode: mav::MavModeFlag::MAV_MODE_FLAG_CUSTOM_MODE_ENABLED
            | mav::MavModeFlag::MAV_MODE_FLAG_SAFETY_ARMED,
        system_status: mav::MavState::MAV_STATE_ACTIVE,
        mavlink_version: 3,
    }
}

/// The vehicle disarmed on its pad (488 m AMSL), then armed, before the stream: the telemetry
/// latches the pad there, so the stream's vehicle (armed, 493 m) is ~5 m above it, as its waits assume.
fn on_the_pad() -> Vec<Frame> {
    let mut enc = Encoder::new(1, 1);
    let mut buf = [0u8; MAX_FRAME_LEN];
    let mut bytes = Vec::new();
    let mut hb = heartbeat();
    hb.base_mode = mav::MavModeFlag::MAV_MODE_FLAG_CUSTOM_MODE_ENABLED;
    hb.system_status = mav::MavState::MAV_STATE_STANDBY;
    let len = enc.encode(&hb, &mut buf).unwrap();
    bytes.extend_from_slice(&buf[..len]);
    let pad = mav::GLOBAL_POSITION_INT_DATA {
        time_boot_ms: 9_000,
        lat: 473_977_420,
        lon: 85_455_940,
        alt: 488_000,
        ..Default::default()
    };
    let len = enc.encode(&pad, &mut buf).unwrap();
    bytes.extend_from_slice(&buf[..len]);
    // Armed there: the pad is latched at arming.
    let len = enc.encode(&heartbeat(), &mut buf).unwrap();
    bytes.extend_from_slice(&buf[..len]);
    frames(&bytes)
}

/// The stream's frames, decoded once (for the per-message benches).
fn frames(bytes: &[u8]) -> Vec<Frame> {
    let mut dec = Decoder::new();
    let mut out = Vec::new();
    let mut input = bytes;
    while !input.is_empty() {
        let (used, raw) = dec.feed(input);
        if let Some(raw) = raw {
            if let Ok(Some(f)) = Frame::decode(&raw) {
                out.push(f);
            }
        }
        input = &input[used..];
    }
    out
}

/// `k` waits of mixed kinds that stay pending on the benchmark stream (armed, in the air at
/// ~5 m, Hold, waypoint 1): every kind of condition, some with hold_s and guards.
fn waits(k: usize) -> Vec<Wait> {
    let t = 1.0e7;
    let kinds: [fn() -> Wait; 12] = [
        || Wait::altitude_m(50.0),
        || Wait::altitude_m(1.0).op(Op::Le).hold_s(2.0),
        || Wait::airspeed_m_s(15.0).guard(Condition::disarmed()),
        || {
            Wait::waypoint(4)
                .guard(Condition::disarmed())
                .guard(Condition::text("Failsafe"))
        },
        || Wait::mode(Mode::Land),
        || Wait::text("Mission finished"),
        || Wait::disarmed(),
        || Wait::landed().hold_s(1.0),
        || Wait::sim_time_s(9.0e6),
        || Wait::time_s(9.0e6),
        || Wait::altitude_m(20.0).within(0.5),
        || Wait::mode_named("RTL").guard(Condition::landed()),
    ];
    (0..k)
        .map(|i| kinds[i % kinds.len()]().timeout_s(t))
        .collect()
}

/// `k` waits that every GLOBAL_POSITION_INT changes the input of (the worst case: each
/// message makes the engine look at every wait).
fn altitude_waits(k: usize) -> Vec<Wait> {
    let kinds: [fn() -> Wait; 4] = [
        || Wait::altitude_m(50.0),
        || Wait::altitude_m(1.0).op(Op::Le).hold_s(2.0),
        || {
            Wait::altitude_m(20.0)
                .within(0.5)
                .guard(Condition::disarmed())
        },
        || Wait::altitude_m(30.0).guard(Condition::time_s(9.0e6)),
    ];
    (0..k)
        .map(|i| kinds[i % kinds.len()]().timeout_s(1.0e7))
        .collect()
}

/// Handle the next frame and evaluate, per iteration: the cost the pump pays per message.
fn per_message(
    g: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    name: &str,
    frames: &[Frame],
    waits: Vec<Wait>,
) {
    let mut tel = Tel::new(LinkIds::default());
    let mut now = Instant::from_millis(1);
    for f in on_the_pad().iter().chain(frames.iter().take(400)) {
        tel.handle(now, f);
    }
    let mut engine = Engine::<MAX_WAITS>::new();
    let k = waits.len();
    for w in &waits {
        engine.register(now, &tel, w).unwrap();
    }
    assert_eq!(
        engine.pending_count(),
        k,
        "a bench wait settled at registration"
    );
    let mut i = 0;
    g.bench_function(name, |b| {
        b.iter(|| {
            let f = &frames[i % frames.len()];
            i += 1;
            now = now + nexus_core::Duration::from_micros(500);
            if tel.handle(now, black_box(f)) {
                engine.evaluate(now, &tel);
            }
        })
    });
    assert_eq!(engine.pending_count(), k, "a bench wait settled");
}

fn bench(c: &mut Criterion) {
    let (bytes, n_msgs) = px4_stream(10);
    let frames = frames(&bytes);

    // The PX4 stream: engine cost = these minus `telemetry_only`.
    let mut g = c.benchmark_group("per_message");
    per_message(&mut g, "telemetry_only", &frames, vec![]);
    for k in [1, 16, MAX_WAITS] {
        per_message(&mut g, &format!("waits_{k}"), &frames, waits(k));
    }
    g.finish();

    // Worst case: every message changes every wait's input (altitude, 50 Hz stream of
    // GLOBAL_POSITION_INT with a different altitude each time).
    let gpi: Vec<Frame> = frames
        .iter()
        .filter(|f| matches!(f.msg, nexus_core::Msg::GlobalPositionInt(_)))
        .cloned()
        .collect();
    let mut g = c.benchmark_group("per_message_all_dirty");
    per_message(&mut g, "telemetry_only", &gpi, vec![]);
    for k in [16, MAX_WAITS] {
        per_message(&mut g, &format!("waits_{k}"), &gpi, altitude_waits(k));
    }
    g.finish();

    let mut g = c.benchmark_group("stream");
    g.throughput(Throughput::Elements(n_msgs as u64));
    for (name, k, evaluate) in [
        ("decode_only", 0, false),
        ("decode_handle_evaluate_16", 16, true),
    ] {
        let mut tel = Tel::new(LinkIds::default());
        for f in &on_the_pad() {
            tel.handle(Instant::from_millis(1), f);
        }
        let mut engine = Engine::<MAX_WAITS>::new();
        for w in waits(k) {
            engine.register(Instant::from_millis(1), &tel, &w).unwrap();
        }
        let fresh = (tel, engine);
        g.bench_function(name, |b| {
            b.iter_batched(
                || fresh.clone(),
                |(mut tel, mut engine)| {
                    let mut dec = Decoder::new();
                    let mut input = &bytes[..];
                    let mut now = Instant::from_millis(2);
                    while !input.is_empty() {
                        let (used, raw) = dec.feed(input);
                        if let Some(raw) = raw {
                            if let Ok(Some(f)) = Frame::decode(&raw) {
                                if evaluate {
                                    now = now + nexus_core::Duration::from_micros(300);
                                    if tel.handle(now, &f) {
                                        engine.evaluate(now, &tel);
                                    }
                                } else {
                                    black_box(&f);
                                }
                            }
                        }
                        input = &input[used..];
                    }
                    assert_eq!(engine.pending_count(), k);
                    (tel, engine)
                },
                BatchSize::LargeInput,
            )
        });
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    targets = bench
}
criterion_main!(benches);
