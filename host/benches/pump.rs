//! The pump over real loopback UDP: how fast a reaction leaves, and how many messages one pump
//! thread takes in.
//!
//! `cargo bench -p nexus-host --bench pump` (add `-- --quick` for a short run). Besides
//! criterion's own timings, the run prints the headline figures:
//!
//! * **reaction latency**: a synthetic PX4 sends GLOBAL_POSITION_INT crossing a wait's altitude
//!   threshold; the wait's `then_mode` reaction makes the client send DO_SET_MODE. Measured from
//!   the vehicle's `send_to` to the vehicle's `recv_from` of the command, p50/p99/max over
//!   [`LATENCY_SAMPLES`] rounds (target: p99 < 200 µs);
//! * **throughput**: PX4's stream mix (ATTITUDE 100 Hz, GLOBAL_POSITION_INT 50 Hz, … ~475
//!   messages per simulated second, packed ≤ 1400 bytes per datagram as PX4 does) pre-filled
//!   into the kernel buffers of 1, 10 and 100 links, then drained by one pump thread: messages
//!   per second taken in (each decoded, checked and handed to its link's core client);
//! * **100 vehicles at PX4's rate**: 100 links fed in real time at ~475 messages/s each
//!   (~47 500/s), for a few seconds: the pump thread's CPU share and the loss (target: keeps up).

#![allow(missing_docs)] // criterion's macros generate undocumented items

use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use nexus_core::engine::{SnapshotAt, Wait};
use nexus_core::frame::{Decoder, Encoder};
use nexus_core::mav;
use nexus_core::offboard::wire;
use nexus_core::Mode;
use nexus_host::pump::{LinkConfig, LinkHandle, Pump, Supervision};
use nexus_host::transport::{ConnString, Link, LinkOptions};

/// Rounds of the latency measurement.
const LATENCY_SAMPLES: usize = 2000;

/// `cargo bench` passes `--bench`; `cargo test --all-targets` runs this binary without it, as
/// a smoke test: then every measurement runs small.
fn full_run() -> bool {
    std::env::args().any(|a| a == "--bench")
}
/// Largest datagram the synthetic PX4 sends (as PX4 packs its streams below the MTU).
const DATAGRAM: usize = 1400;

/// A synthetic PX4 (system 1, component 1) on its own UDP socket.
struct Px4 {
    sock: UdpSocket,
    enc: Encoder,
    to: SocketAddr,
    buf: [u8; 280],
    t_ms: u32,
}

impl Px4 {
    fn new(to: SocketAddr) -> Px4 {
        let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
        Px4 {
            sock,
            enc: Encoder::new(1, 1),
            to,
            buf: [0; 280],
            t_ms: 1000,
        }
    }

    fn frame<M: mavlink::MessageData>(&mut self, m: &M) -> Vec<u8> {
        let n = self.enc.encode(m, &mut self.buf).unwrap();
        self.buf[..n].to_vec()
    }

    fn send<M: mavlink::MessageData>(&mut self, m: &M) {
        let f = self.frame(m);
        self.sock.send_to(&f, self.to).unwrap();
    }

    fn heartbeat(&mut self, mode: Mode) -> mav::HEARTBEAT_DATA {
        wire::heartbeat(
            mav::MavType::MAV_TYPE_QUADROTOR,
            mav::MavAutopilot::MAV_AUTOPILOT_PX4,
            mav::MavModeFlag::from_bits_truncate(0x1d),
            mode.custom_mode(),
            mav::MavState::MAV_STATE_STANDBY,
        )
    }

    fn position(&mut self, rel_alt_m: f32) -> mav::GLOBAL_POSITION_INT_DATA {
        self.t_ms += 10;
        mav::GLOBAL_POSITION_INT_DATA {
            time_boot_ms: self.t_ms,
            lat: 473_977_420,
            lon: 85_455_940,
            alt: 488_000 + (rel_alt_m * 1000.0) as i32,
            relative_alt: (rel_alt_m * 1000.0) as i32,
            ..Default::default()
        }
    }

    /// One simulated second of PX4's offboard-link streams (docs/px4-wire.md §Streams), packed
    /// into datagrams of at most [`DATAGRAM`] bytes. Returns the datagrams and the frame count.
    fn one_second(&mut self) -> (Vec<Vec<u8>>, usize) {
        type Make = fn(&mut Px4, u32) -> Vec<u8>;
        let streams: [(u32, Make); 28] = [
            (100, |p, t| {
                p.frame(&mav::ATTITUDE_DATA {
                    time_boot_ms: t,
                    yaw: 0.1,
                    ..Default::default()
                })
            }),
            (50, |p, t| {
                p.frame(&mav::ATTITUDE_QUATERNION_DATA {
                    time_boot_ms: t,
                    q1: 1.0,
                    ..Default::default()
                })
            }),
            (50, |p, t| {
                let mut g = p.position(2.0);
                g.time_boot_ms = t;
                p.frame(&g)
            }),
            (50, |p, t| {
                p.frame(&mav::HIGHRES_IMU_DATA {
                    time_usec: t as u64 * 1000,
                    zacc: -9.81,
                    ..Default::default()
                })
            }),
            (30, |p, t| {
                p.frame(&mav::LOCAL_POSITION_NED_DATA {
                    time_boot_ms: t,
                    z: -2.0,
                    ..Default::default()
                })
            }),
            (30, |p, t| {
                p.frame(&mav::ODOMETRY_DATA {
                    time_usec: t as u64 * 1000,
                    ..Default::default()
                })
            }),
            (10, |p, _| {
                p.frame(&mav::VFR_HUD_DATA {
                    alt: 490.0,
                    ..Default::default()
                })
            }),
            (10, |p, t| {
                p.frame(&mav::ALTITUDE_DATA {
                    time_usec: t as u64 * 1000,
                    ..Default::default()
                })
            }),
            (10, |p, t| {
                p.frame(&mav::TIMESYNC_DATA {
                    ts1: t as i64,
                    ..Default::default()
                })
            }),
            (8, |p, t| {
                p.frame(&mav::GPS_RAW_INT_DATA {
                    time_usec: t as u64 * 1000,
                    ..Default::default()
                })
            }),
            (5, |p, _| {
                p.frame(&mav::SYS_STATUS_DATA {
                    load: 300,
                    ..Default::default()
                })
            }),
            (5, |p, _| {
                p.frame(&mav::EXTENDED_SYS_STATE_DATA {
                    landed_state: mav::MavLandedState::MAV_LANDED_STATE_ON_GROUND,
                    ..Default::default()
                })
            }),
            (1, |p, _| {
                let hb = p.heartbeat(Mode::Hold);
                p.frame(&hb)
            }),
            (1, |p, t| {
                p.frame(&mav::SYSTEM_TIME_DATA {
                    time_boot_ms: t,
                    ..Default::default()
                })
            }),
            (1, |p, _| {
                p.frame(&mav::MISSION_CURRENT_DATA {
                    seq: 0,
                    total: 0,
                    ..Default::default()
                })
            }),
            // "… and others 10": streams nothing here decodes, skipped after the checksum.
            (10, |p, _| p.frame(&mav::ESTIMATOR_STATUS_DATA::default())),
            (10, |p, _| p.frame(&mav::VIBRATION_DATA::default())),
            (10, |p, _| {
                p.frame(&mav::NAV_CONTROLLER_OUTPUT_DATA::default())
            }),
            (10, |p, t| {
                p.frame(&mav::ATTITUDE_TARGET_DATA {
                    time_boot_ms: t,
                    ..Default::default()
                })
            }),
            (10, |p, t| {
                p.frame(&mav::POSITION_TARGET_LOCAL_NED_DATA {
                    time_boot_ms: t,
                    ..Default::default()
                })
            }),
            (10, |p, t| {
                p.frame(&mav::POSITION_TARGET_GLOBAL_INT_DATA {
                    time_boot_ms: t,
                    ..Default::default()
                })
            }),
            (10, |p, _| p.frame(&mav::SERVO_OUTPUT_RAW_DATA::default())),
            (10, |p, t| {
                p.frame(&mav::SCALED_PRESSURE_DATA {
                    time_boot_ms: t,
                    ..Default::default()
                })
            }),
            (10, |p, t| {
                p.frame(&mav::RC_CHANNELS_DATA {
                    time_boot_ms: t,
                    ..Default::default()
                })
            }),
            (10, |p, _| {
                p.frame(&mav::UTM_GLOBAL_POSITION_DATA::default())
            }),
            (10, |p, _| p.frame(&mav::WIND_COV_DATA::default())),
            (1, |p, _| p.frame(&mav::HOME_POSITION_DATA::default())),
            (1, |p, _| p.frame(&mav::BATTERY_STATUS_DATA::default())),
        ];
        let t0 = self.t_ms;
        let mut frames: Vec<(u32, Vec<u8>)> = Vec::new();
        for (hz, make) in streams {
            for k in 0..hz {
                let t = t0 + k * 1000 / hz;
                frames.push((t, make(self, t)));
            }
        }
        self.t_ms = t0 + 1000;
        frames.sort_by_key(|(t, _)| *t);
        let count = frames.len();
        let mut out = Vec::new();
        let mut cur: Vec<u8> = Vec::with_capacity(DATAGRAM);
        for (_, f) in frames {
            if cur.len() + f.len() > DATAGRAM {
                out.push(std::mem::take(&mut cur));
            }
            cur.extend_from_slice(&f);
        }
        if !cur.is_empty() {
            out.push(cur);
        }
        (out, count)
    }
}

fn link_config() -> LinkConfig {
    LinkConfig {
        supervision: Supervision::default(),
        ..LinkConfig::default()
    }
}

/// A pump link listening on an ephemeral port, and a synthetic PX4 that has spoken to it.
fn connected_pair(pump: &Pump) -> (LinkHandle, Px4) {
    let link = pump
        .open_link(&"udpin:127.0.0.1:0".parse().unwrap(), link_config())
        .unwrap();
    let mut px4 = Px4::new(link.local_addr().unwrap());
    let hb = px4.heartbeat(Mode::Hold);
    px4.send(&hb);
    let g = px4.position(0.0);
    px4.send(&g);
    let t0 = Instant::now();
    while !link.with_status(|s| s.connected) {
        assert!(t0.elapsed() < Duration::from_secs(5), "no connection");
        std::thread::sleep(Duration::from_millis(1));
    }
    px4.sock
        .set_read_timeout(Some(Duration::from_secs(2)))
        .unwrap();
    (link, px4)
}

/// One round: register a wait whose reaction is a mode change, cross its threshold, and time
/// the vehicle's send to the vehicle's receipt of the DO_SET_MODE.
fn reaction_round(link: &LinkHandle, px4: &mut Px4, round: usize, dec: &mut Decoder) -> Duration {
    // Alternate the mode so every round's command is new (a repeat would be a retry).
    let mode = if round % 2 == 0 {
        Mode::Land
    } else {
        Mode::Rtl
    };
    let (main, sub) = mode.main_sub();
    let low = px4.position(0.0);
    px4.send(&low);
    // The wait must be decided by the crossing, not at registration: let the pump see "low".
    while link.with_status(|s| s.relative_alt_m.is_none_or(|a| a > 1.0)) {
        std::hint::spin_loop();
    }
    let pending = link
        .register(&Wait::altitude_m(5.0).timeout_s(1e6).then_mode(mode))
        .unwrap();
    let high = px4.position(10.0);
    let f = px4.frame(&high);
    let mut buf = [0u8; 2048];
    let t0 = Instant::now();
    px4.sock.send_to(&f, px4.to).unwrap();
    loop {
        let (n, _) = px4
            .sock
            .recv_from(&mut buf)
            .expect("the reaction's command");
        let elapsed = t0.elapsed();
        let mut rest = &buf[..n];
        loop {
            let (used, raw) = dec.feed(rest);
            rest = &rest[used..];
            let Some(raw) = raw else { break };
            if raw.header.msgid == <mav::COMMAND_LONG_DATA as mavlink::MessageData>::ID {
                let cmd = <mav::COMMAND_LONG_DATA as mavlink::MessageData>::deser(
                    mavlink::MavlinkVersion::V2,
                    raw.payload,
                )
                .unwrap();
                if cmd.command == mav::MavCmd::MAV_CMD_DO_SET_MODE
                    && cmd.param2 == main as f32
                    && cmd.param3 == sub as f32
                {
                    let r = pending.join(Some(Duration::from_secs(2)));
                    assert!(r.satisfied, "{r:?}");
                    assert_eq!(r.snapshot_at, SnapshotAt::Settle, "met by the crossing");
                    return elapsed;
                }
            }
        }
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn reaction_latency(c: &mut Criterion) {
    let pump = Pump::start().unwrap();
    let (link, mut px4) = connected_pair(&pump);
    let mut dec = Decoder::new();
    let rounds = if full_run() { LATENCY_SAMPLES } else { 50 };
    let mut lat: Vec<Duration> = (0..rounds)
        .map(|i| reaction_round(&link, &mut px4, i, &mut dec))
        .collect();
    lat.sort();
    println!(
        "\nreaction latency over loopback UDP (message in → reaction frame out), {} rounds: \
         p50 {:.1} µs, p99 {:.1} µs, max {:.1} µs",
        lat.len(),
        percentile(&lat, 0.5).as_secs_f64() * 1e6,
        percentile(&lat, 0.99).as_secs_f64() * 1e6,
        lat.last().unwrap().as_secs_f64() * 1e6
    );
    let mut round = rounds;
    c.bench_function("reaction_latency", |b| {
        b.iter_custom(|iters| {
            (0..iters)
                .map(|_| {
                    round += 1;
                    reaction_round(&link, &mut px4, round, &mut dec)
                })
                .sum()
        })
    });
}

/// Open `n` links (not yet on the pump), fill each one's kernel buffer with `seconds` of PX4's
/// streams from its own synthetic PX4; the links and the frame total.
fn prefilled(n: usize, seconds: usize) -> (Vec<Link>, Vec<Px4>, u64) {
    let opts = LinkOptions {
        recv_buffer_bytes: 4 << 20,
        ..LinkOptions::default()
    };
    let conn: ConnString = "udpin:127.0.0.1:0".parse().unwrap();
    let mut links = Vec::new();
    let mut px4s = Vec::new();
    let mut total = 0u64;
    for _ in 0..n {
        let link = Link::open_with(&conn, &opts).unwrap();
        let mut px4 = Px4::new(link.local_addr().unwrap());
        for _ in 0..seconds {
            let (dgrams, count) = px4.one_second();
            for d in &dgrams {
                px4.sock.send_to(d, px4.to).unwrap();
            }
            total += count as u64;
        }
        links.push(link);
        px4s.push(px4);
    }
    (links, px4s, total)
}

/// Hand `links` to `pump` and time until it has taken in `total` frames.
fn drain(pump: &Pump, links: Vec<Link>, total: u64) -> Duration {
    let t0 = Instant::now();
    let handles: Vec<LinkHandle> = links
        .into_iter()
        .map(|l| {
            pump.add_link(l, link_config().client, Supervision::default())
                .unwrap()
        })
        .collect();
    let mut seen = pump.news();
    loop {
        let got: u64 = handles
            .iter()
            .map(|h| h.with_status(|s| s.counters.frames))
            .sum();
        if got >= total {
            let took = t0.elapsed();
            for h in &handles {
                h.close();
            }
            return took;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "{got}/{total}: datagrams lost?"
        );
        seen = pump.wait_news(seen, Duration::from_millis(1));
    }
}

fn throughput(c: &mut Criterion) {
    let pump = Pump::start().unwrap();
    let mut group = c.benchmark_group("pump_throughput");
    group.sample_size(10);
    // Simulated seconds of PX4 streams per link, so every case drains ~60 000 messages.
    let scale = if full_run() { 1 } else { 10 };
    for (n, seconds) in [(1usize, 120 / scale), (10, 12 / scale), (100, 1)] {
        // One measurement for the headline figure.
        let (links, _px4s, total) = prefilled(n, seconds);
        let took = drain(&pump, links, total);
        println!(
            "throughput, {n:3} link(s): {total} messages in {:.1} ms = {:.0} messages/s on one pump thread",
            took.as_secs_f64() * 1e3,
            total as f64 / took.as_secs_f64()
        );
        group.throughput(Throughput::Elements(total));
        group.bench_function(format!("{n}_links"), |b| {
            b.iter_custom(|iters| {
                (0..iters)
                    .map(|_| {
                        let (links, _px4s, total) = prefilled(n, seconds);
                        drain(&pump, links, total)
                    })
                    .sum()
            })
        });
    }
    group.finish();
}

/// CPU time of the thread named `name` (/proc/self/task/*/schedstat: nanoseconds on a CPU).
fn thread_cpu(name: &str) -> Option<Duration> {
    for e in std::fs::read_dir("/proc/self/task").ok()?.flatten() {
        let comm = std::fs::read_to_string(e.path().join("comm")).unwrap_or_default();
        if comm.trim() == name {
            let stat = std::fs::read_to_string(e.path().join("schedstat")).ok()?;
            let ns: u64 = stat.split_whitespace().next()?.parse().ok()?;
            return Some(Duration::from_nanos(ns));
        }
    }
    None
}

/// 100 links fed at PX4's real rate for a few seconds: does one pump thread keep up?
fn hundred_vehicles_in_real_time(_c: &mut Criterion) {
    let pump = Pump::start().unwrap();
    let n = 100;
    let seconds = if full_run() { 4 } else { 1 };
    let conn: ConnString = "udpin:127.0.0.1:0".parse().unwrap();
    let mut handles = Vec::new();
    let mut px4s = Vec::new();
    let mut waits = Vec::new();
    for _ in 0..n {
        let h = pump.open_link(&conn, link_config()).unwrap();
        px4s.push(Px4::new(h.local_addr().unwrap()));
        // Work for the engine, as a flight program gives it: four waits pending per link.
        for w in [
            Wait::altitude_m(50.0),
            Wait::text("Takeoff detected"),
            Wait::mode(Mode::Mission),
            Wait::sim_time_s(1e6),
        ] {
            waits.push(h.register(&w.timeout_s(1e6)).unwrap());
        }
        handles.push(h);
    }
    // Each vehicle's second, cut into 50 slices of 20 ms, sent on the wall clock.
    let mut plan: Vec<Vec<Vec<u8>>> = Vec::new(); // per vehicle: datagrams of all seconds
    let mut total = 0u64;
    for p in px4s.iter_mut() {
        let mut all = Vec::new();
        for _ in 0..seconds {
            let (d, c) = p.one_second();
            all.extend(d);
            total += c as u64;
        }
        plan.push(all);
    }
    let slices = seconds * 50;
    let cpu0 = thread_cpu("nexus-pump").unwrap_or_default();
    let t0 = Instant::now();
    for k in 0..slices {
        for (v, dgrams) in plan.iter().enumerate() {
            let from = dgrams.len() * k / slices;
            let to = dgrams.len() * (k + 1) / slices;
            for d in &dgrams[from..to] {
                px4s[v].sock.send_to(d, px4s[v].to).unwrap();
            }
        }
        let due = Duration::from_millis(20 * (k as u64 + 1));
        if let Some(w) = due.checked_sub(t0.elapsed()) {
            std::thread::sleep(w);
        }
    }
    let sent_in = t0.elapsed();
    let deadline = Instant::now() + Duration::from_secs(5);
    let got = loop {
        let got: u64 = handles
            .iter()
            .map(|h| h.with_status(|s| s.counters.frames))
            .sum();
        if got >= total || Instant::now() > deadline {
            break got;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let cpu = thread_cpu("nexus-pump").unwrap_or_default() - cpu0;
    assert!(waits.iter_mut().all(|w| w.try_result().is_none()));
    println!(
        "100 vehicles at PX4's rate, 4 waits pending on each: {total} messages in {:.2} s ({:.0}/s), {got} taken in \
         ({} lost); the pump thread used {:.2} s of CPU = {:.0} % of one core",
        sent_in.as_secs_f64(),
        total as f64 / sent_in.as_secs_f64(),
        total - got.min(total),
        cpu.as_secs_f64(),
        100.0 * cpu.as_secs_f64() / sent_in.as_secs_f64()
    );
}

criterion_group!(
    benches,
    reaction_latency,
    throughput,
    hundred_vehicles_in_real_time
);
criterion_main!(benches);
