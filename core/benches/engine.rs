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
//! * `px4_trace/*`: **real bytes**: PX4's own stream of the `box` flight
//!   (`fixtures/px4-traces/box-x4.px4-to-nexus.tlog`, 27 216 frames, 60 B/frame, PX4's message
//!   mix), fed datagram by datagram (the tlog's records with one timestamp were one datagram).
//!   `nexus_decode` is the skipping `Decoder` (`feed_datagram`, as the pump feeds a UDP link:
//!   PX4 sends one frame per datagram) → `Frame::decode`; `nexus_decode_telemetry_waits_16`
//!   adds `Telemetry::handle` → `Engine::evaluate` with 16 pending waits (`nexus_decode_telemetry`:
//!   with none); `nexus_decode_checking_all`
//!   checks every frame (no skipping, `feed`). The peer, in the same run on the same bytes:
//!   `rust_mavlink_read_any_message` (rust-mavlink 0.21's `MavlinkReader`, full parse of every
//!   frame into `MavMessage`, the no_std reader over `&[u8]`). Compare ratios within one run.
//!   Before the group, a line `px4_trace interleaved, …` gives the ratio least moved by a
//!   loaded machine: the 16-wait path and rust-mavlink alternating, the fastest round of each
//!   (`NEXUS_BENCH_ROUNDS`, default 100).
//! * `synthetic_stream/*`: **synthetic** bytes of 10 s of PX4 traffic at the rates of
//!   docs/px4-wire.md §Streams (34 B/msg, mostly zero fields), including ATTITUDE_QUATERNION
//!   and HIGHRES_IMU (outside the decoded subset, skipped), through the same path.

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
                // Varies as relative_alt does: the height since arming (what telemetry reads
                // first) then changes with every message, as the worst-case bench needs.
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

/// `tel` and an engine holding `waits` (registered at 1 ms), cloned fresh for each batch.
fn loaded(tel: Tel, waits: &[Wait]) -> (Tel, Engine<MAX_WAITS>) {
    let mut engine = Engine::<MAX_WAITS>::new();
    for w in waits {
        engine.register(Instant::from_millis(1), &tel, w).unwrap();
    }
    (tel, engine)
}

/// `k` waits of mixed kinds that stay pending on the benchmark stream (armed, in the air,
/// 0–0.3 m above the arming altitude, Hold, waypoint 1): every kind of condition, some with
/// hold_s and guards.
fn waits(k: usize) -> Vec<Wait> {
    let t = 1.0e7;
    let kinds: [fn() -> Wait; 12] = [
        || Wait::altitude_m(50.0),
        || Wait::altitude_m(-50.0).op(Op::Le).hold_s(2.0),
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
        || Wait::altitude_m(-50.0).op(Op::Le).hold_s(2.0),
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
    for f in frames.iter().take(400) {
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

/// PX4's recorded stream as the datagrams it came in: records of one timestamp are one datagram.
fn px4_trace_datagrams() -> Vec<Vec<u8>> {
    let tlog = include_bytes!("../../fixtures/px4-traces/box-x4.px4-to-nexus.tlog");
    let mut out: Vec<Vec<u8>> = Vec::new();
    let mut last_ts = None;
    let mut i = 0;
    while i + 8 < tlog.len() {
        let ts = u64::from_be_bytes(tlog[i..i + 8].try_into().unwrap());
        let f = &tlog[i + 8..];
        let len = match f[0] {
            0xFD => 10 + f[1] as usize + 2 + if f[2] & 1 != 0 { 13 } else { 0 },
            0xFE => 6 + f[1] as usize + 2,
            b => panic!("tlog record at {i} starts with {b:#x}, not a frame"),
        };
        if last_ts != Some(ts) {
            out.push(Vec::new());
            last_ts = Some(ts);
        }
        out.last_mut().unwrap().extend_from_slice(&f[..len]);
        i += 8 + len;
    }
    out
}

/// Waits that stay pending through the whole recorded box flight (no guard ever fires): every
/// kind of condition, the mix of [`waits`] (a few with guards, some with hold_s), with targets
/// the flight never reaches.
fn trace_waits(k: usize) -> Vec<Wait> {
    let kinds: [fn() -> Wait; 12] = [
        || Wait::altitude_m(500.0),
        || Wait::altitude_m(-50.0).op(Op::Le).hold_s(2.0),
        || Wait::airspeed_m_s(150.0).guard(Condition::mode(Mode::Acro)),
        || {
            Wait::waypoint(400)
                .guard(Condition::mode(Mode::Acro))
                .guard(Condition::text("Failsafe"))
        },
        || Wait::mode(Mode::Acro),
        || Wait::text("Mission finished twice"),
        || Wait::airspeed_m_s(200.0),
        || Wait::waypoint(500).hold_s(1.0),
        || Wait::sim_time_s(9.0e6),
        || Wait::time_s(9.0e6),
        || Wait::altitude_m(300.0).within(0.5),
        || Wait::mode_named("ACRO").guard(Condition::altitude_m(800.0)),
    ];
    (0..k)
        .map(|i| kinds[i % kinds.len()]().timeout_s(1.0e7))
        .collect()
}

/// The nexus path over the recorded datagrams: the skipping decoder fed as the pump feeds a
/// UDP link (or the checking one, `skip` false), `Frame::decode`, and with `evaluate`
/// `Telemetry::handle` → `Engine::evaluate`. Returns how many frames telemetry accepted.
fn nexus_pass(
    datagrams: &[Vec<u8>],
    tel: &mut Tel,
    engine: &mut Engine<MAX_WAITS>,
    evaluate: bool,
    skip: bool,
) -> usize {
    let mut dec = if skip {
        Decoder::skipping(nexus_core::msg::is_decoded)
    } else {
        Decoder::new()
    };
    let mut now = Instant::from_millis(2);
    let mut handled = 0;
    for d in datagrams {
        let mut input = &d[..];
        while !input.is_empty() {
            // As the pump feeds a UDP link: one datagram at a time.
            let (used, raw) = if skip {
                dec.feed_datagram(input)
            } else {
                dec.feed(input)
            };
            input = &input[used..];
            let Some(raw) = raw else { continue };
            if let Ok(Some(f)) = Frame::decode(&raw) {
                if evaluate {
                    now = now + nexus_core::Duration::from_micros(300);
                    if tel.handle(now, &f) {
                        handled += 1;
                        engine.evaluate(now, tel);
                    }
                } else {
                    black_box(&f);
                }
            }
        }
    }
    handled
}

/// rust-mavlink 0.21's full parse of the same bytes (`MavlinkReader::read_any_message`, the
/// no_std reader over `&[u8]`); returns the frames parsed.
fn rust_mavlink_pass(bytes: &[u8]) -> usize {
    let mut reader = mavlink::MavlinkReader::new(black_box(bytes));
    let mut n = 0;
    while let Ok((h, m)) = reader.read_any_message::<mav::MavMessage>() {
        black_box((h, &m));
        n += 1;
    }
    n
}

/// Whether the bench's command line selects the px4_trace benches (no filter, or one that
/// matches their names).
fn px4_trace_selected() -> bool {
    let filters: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    filters.is_empty()
        || filters
            .iter()
            .any(|f| f.contains("px4_trace") || "px4_trace/".contains(f.as_str()))
}

/// The ratio on a shared machine: criterion's means move with the load (another process
/// preempting one sample shifts a mean by milliseconds), so this also runs the whole nexus
/// path (16 waits) and rust-mavlink's parse in alternation, round after round, and prints each
/// one's fastest round: the run least disturbed by the load, both under the same conditions.
/// `NEXUS_BENCH_ROUNDS` rounds (default 100).
fn px4_trace_interleaved(datagrams: &[Vec<u8>], bytes: &[u8], n_frames: usize) {
    let rounds: usize = std::env::var("NEXUS_BENCH_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(100);
    let tel = Tel::new(LinkIds {
        target_sysid: 6,
        ..LinkIds::default()
    });
    let mut engine = Engine::<MAX_WAITS>::new();
    for w in trace_waits(16) {
        engine.register(Instant::from_millis(1), &tel, &w).unwrap();
    }
    let fresh = (tel, engine);
    let (mut nexus, mut peer) = (Duration::MAX, Duration::MAX);
    for _ in 0..rounds {
        let (mut tel, mut engine) = fresh.clone();
        let t = std::time::Instant::now();
        nexus_pass(datagrams, &mut tel, &mut engine, true, true);
        nexus = nexus.min(t.elapsed());
        assert_eq!(engine.pending_count(), 16, "a bench wait settled");
        let t = std::time::Instant::now();
        assert_eq!(rust_mavlink_pass(bytes), n_frames);
        peer = peer.min(t.elapsed());
    }
    let per = |d: Duration| d.as_nanos() as f64 / n_frames as f64;
    println!(
        "px4_trace interleaved, fastest of {rounds} rounds: nexus decode + telemetry + 16 waits \
         {:.3} ms ({:.1} ns/frame), rust-mavlink read_any_message {:.3} ms ({:.1} ns/frame): \
         nexus {:.2}x faster",
        nexus.as_secs_f64() * 1e3,
        per(nexus),
        peer.as_secs_f64() * 1e3,
        per(peer),
        peer.as_secs_f64() / nexus.as_secs_f64()
    );
}

fn px4_trace(c: &mut Criterion) {
    let datagrams = px4_trace_datagrams();
    let bytes: Vec<u8> = datagrams.concat();
    // Every frame of the recording, counted by the checking decoder (outside the timing).
    let n_frames = {
        let mut dec = Decoder::new();
        for d in &datagrams {
            let mut input = &d[..];
            while !input.is_empty() {
                let (used, _) = dec.feed(input);
                input = &input[used..];
            }
        }
        let s = dec.stats();
        assert_eq!((s.crc_errors, s.unknown_ids, s.dropped_bytes), (0, 0, 0));
        s.frames as usize
    };
    if px4_trace_selected() {
        px4_trace_interleaved(&datagrams, &bytes, n_frames);
    }
    let mut g = c.benchmark_group("px4_trace");
    g.throughput(Throughput::Elements(n_frames as u64));
    for (name, k, evaluate, skip) in [
        ("nexus_decode", 0, false, true),
        ("nexus_decode_checking_all", 0, false, false),
        ("nexus_decode_telemetry", 0, true, true),
        ("nexus_decode_telemetry_waits_16", 16, true, true),
    ] {
        // The recording is PX4 SITL instance 5: system id 6.
        let tel = Tel::new(LinkIds {
            target_sysid: 6,
            ..LinkIds::default()
        });
        let fresh = loaded(tel, &trace_waits(k));
        g.bench_function(name, |b| {
            b.iter_batched(
                || fresh.clone(),
                |(mut tel, mut engine)| {
                    let handled = nexus_pass(&datagrams, &mut tel, &mut engine, evaluate, skip);
                    assert_eq!(engine.pending_count(), k, "a bench wait settled");
                    // The vehicle's messages reach telemetry and the engine (not filtered out).
                    assert!(
                        !evaluate || handled > n_frames / 3,
                        "{handled} of {n_frames}"
                    );
                    (tel, engine)
                },
                BatchSize::LargeInput,
            )
        });
    }
    g.bench_function("rust_mavlink_read_any_message", |b| {
        b.iter(|| assert_eq!(rust_mavlink_pass(&bytes), n_frames))
    });
    g.finish();
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
    // GLOBAL_POSITION_INT with a different relative_alt each time).
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

    let mut g = c.benchmark_group("synthetic_stream");
    g.throughput(Throughput::Elements(n_msgs as u64));
    for (name, k, evaluate) in [
        ("decode_only", 0, false),
        ("decode_handle_evaluate_16", 16, true),
    ] {
        let tel = Tel::new(LinkIds::default());
        let fresh = loaded(tel, &waits(k));
        g.bench_function(name, |b| {
            b.iter_batched(
                || fresh.clone(),
                |(mut tel, mut engine)| {
                    let mut dec = Decoder::skipping(nexus_core::msg::is_decoded);
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
    targets = px4_trace, bench
}
criterion_main!(benches);
