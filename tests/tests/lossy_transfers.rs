//! Mission, geofence and rally transfers over a lossy link, in memory: the core's client
//! against the simulated PX4 (which runs PX4's mission manager: re-asks every ~0.26 s, a single
//! final MISSION_ACK, "Operation timeout" after 5 s of silence), frames lost at random in both
//! directions (seeded, so every run is the same), with a radio's latency. No sockets, no
//! threads, virtual time: a CPU hog beside it changes nothing.
//!
//! What must hold: a transfer resends until it is done — never one send and a stall — and a
//! mission whose final MISSION_ITEM_REACHED is lost still completes.

use nexus_core::engine::Condition;
use nexus_core::frame::Decoder;
use nexus_core::mission::MissionItem;
use nexus_core::offboard::{GeoKind, GeoStatus, OffboardConfig, OffboardEvent};
use nexus_core::prelude::*;
use nexus_core::{Action, GroundTruth, Instant};
use nexus_host::sim::{Vehicle, VehicleConfig};
use std::collections::VecDeque;

type TestClient = Client<4, 16, 32, 4>;

const MISSION_ACK: u32 = 47;
const MISSION_ITEM_REACHED: u32 = 46;
const MISSION_CURRENT: u32 = 42;

/// A small deterministic generator (xorshift64*): the same seed loses the same frames.
struct Rng(u64);

impl Rng {
    fn chance(&mut self, pct: u32) -> bool {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        let x = self.0.wrapping_mul(0x2545_F491_4F6C_DD1D);
        (x >> 33) % 100 < pct as u64
    }
}

/// A settled wait: its result, when (vehicle µs), and the offboard events before it.
type Settled = (WaitResult, u64, Vec<(u64, OffboardEvent)>);

/// What the link does to one frame from the vehicle.
type DownFilter = Box<dyn FnMut(u32, &[u8]) -> bool>;

/// The client and the vehicle joined by a lossy, slow link.
struct Pair {
    vehicle: Vehicle,
    client: TestClient,
    rng: Rng,
    /// Percent of frames lost, vehicle → client and client → vehicle.
    loss_down_pct: u32,
    loss_up_pct: u32,
    /// One-way delay, µs of vehicle time.
    latency_us: u64,
    down: VecDeque<(u64, Vec<u8>)>,
    up: VecDeque<(u64, Vec<u8>)>,
    decoder: Decoder,
    /// Drops chosen frames from the vehicle (message id, payload) on top of the random loss.
    drop_down: Option<DownFilter>,
    /// Frames the vehicle sent of each id, and how many of those were lost.
    sent_down: Vec<(u32, bool)>,
    /// Frames the client sent, by message id.
    sent_up: Vec<u32>,
}

impl Pair {
    fn new(seed: u64, loss_pct: u32, latency_ms: u64) -> Pair {
        // What the host sets on a link found slow (a radio): more patience than loopback.
        let offboard = OffboardConfig {
            mission_retries: 12,
            mission_timeout_s: 15.0,
            ..OffboardConfig::default()
        };
        let config = ClientConfig {
            ids: Default::default(),
            offboard,
            ground_truth: GroundTruth::Always,
            target_compid: None,
            stall: None,
        };
        Pair {
            vehicle: Vehicle::new(VehicleConfig::instance(0)),
            client: TestClient::new(config),
            rng: Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1),
            loss_down_pct: loss_pct,
            loss_up_pct: loss_pct,
            latency_us: latency_ms * 1000,
            down: VecDeque::new(),
            up: VecDeque::new(),
            decoder: Decoder::new(),
            drop_down: None,
            sent_down: Vec::new(),
            sent_up: Vec::new(),
        }
    }

    fn now(&self) -> Instant {
        Instant::from_micros(self.vehicle.now_us())
    }

    /// 10 ms of vehicle time: both directions carried, both sides polled.
    fn step(&mut self) {
        self.vehicle.step(10_000);
        let t = self.vehicle.now_us();
        let mut buf = [0u8; 4096];
        while let Some(n) = self.vehicle.poll_transmit(&mut buf) {
            let mut rest = &buf[..n];
            while !rest.is_empty() {
                let (used, raw) = self.decoder.feed(rest);
                if let Some(raw) = raw {
                    let id = raw.header.msgid;
                    let chosen = self.drop_down.as_mut().is_some_and(|f| f(id, raw.payload));
                    let lost = chosen || self.rng.chance(self.loss_down_pct);
                    self.sent_down.push((id, lost));
                    if !lost {
                        self.down
                            .push_back((t + self.latency_us, raw.bytes.to_vec()));
                    }
                }
                rest = &rest[used..];
            }
        }
        let now = self.now();
        while self.down.front().is_some_and(|(at, _)| *at <= t) {
            let (_, bytes) = self.down.pop_front().unwrap();
            let mut d = Decoder::new();
            if let (_, Some(raw)) = d.feed(&bytes) {
                let _ = self.client.handle_raw(now, &raw);
            }
        }
        self.poll_client();
        while self.up.front().is_some_and(|(at, _)| *at <= t) {
            let (_, bytes) = self.up.pop_front().unwrap();
            self.vehicle.handle_datagram(&bytes);
        }
    }

    fn poll_client(&mut self) {
        let now = self.now();
        let t = self.vehicle.now_us();
        let mut out = [0u8; 300];
        while let Some(n) = self.client.poll_transmit(now, &mut out) {
            let mut d = Decoder::new();
            if let (_, Some(raw)) = d.feed(&out[..n]) {
                self.sent_up.push(raw.header.msgid);
            }
            if !self.rng.chance(self.loss_up_pct) {
                self.up.push_back((t + self.latency_us, out[..n].to_vec()));
            }
        }
    }

    /// Step until `done` or `limit_s` of vehicle time; the events seen meanwhile.
    fn run_until(
        &mut self,
        limit_s: f64,
        mut done: impl FnMut(&TestClient, &[OffboardEvent]) -> bool,
    ) -> (bool, Vec<OffboardEvent>) {
        let end = self.vehicle.now_us() + (limit_s * 1e6) as u64;
        let mut events = Vec::new();
        while self.vehicle.now_us() < end {
            self.step();
            while let Some(e) = self.client.poll_event() {
                if let Event::Offboard(e) = e {
                    events.push(e);
                }
            }
            if done(&self.client, &events) {
                return (true, events);
            }
        }
        (false, events)
    }

    fn boot(&mut self) {
        let (ok, _) = self.run_until(30.0, |c, _| c.snapshot().mode.is_some());
        assert!(ok, "no heartbeat through the lossy link in 30 s");
    }

    /// Upload `items` as the mission and step until PX4 accepted it.
    fn upload(&mut self, items: &[MissionItem]) {
        self.client.upload_mission_items(items).unwrap();
        let (ok, events) = self.run_until(60.0, |c, _| c.offboard().mission_uploaded());
        assert!(ok, "not uploaded in 60 s: {events:?}");
    }

    /// Register `wait` and step until it settles: its result, the vehicle time it settled at
    /// (µs), and the offboard events meanwhile with their times.
    fn settle(&mut self, wait: &Wait, limit_s: f64) -> Settled {
        let id = self.client.wait(self.now(), wait).unwrap();
        let end = self.vehicle.now_us() + (limit_s * 1e6) as u64;
        let mut events = Vec::new();
        while self.vehicle.now_us() < end {
            self.step();
            while let Some(e) = self.client.poll_event() {
                match e {
                    Event::Offboard(e) => events.push((self.vehicle.now_us(), e)),
                    Event::Settled { id: got, result } if got == id => {
                        return (result, self.vehicle.now_us(), events);
                    }
                    _ => {}
                }
            }
        }
        panic!("the wait did not settle in {limit_s} s: {events:?}");
    }

    fn lost(&self, id: u32) -> usize {
        self.sent_down
            .iter()
            .filter(|&&(i, l)| i == id && l)
            .count()
    }
}

fn box_mission() -> Vec<MissionItem> {
    let src = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/box.plan")).unwrap();
    let plan = nexus_core::plan::read_plan::<32>(&src).expect("examples/box.plan reads");
    plan.items.iter().copied().collect()
}

fn fenced_geo() -> (Vec<MissionItem>, Vec<MissionItem>, Vec<MissionItem>) {
    let src = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../examples/fenced.plan"
    ))
    .unwrap();
    let plan = nexus_core::plan::read_plan::<32>(&src).expect("examples/fenced.plan reads");
    let geo = nexus_core::plan::read_geo::<16, 16>(&src).expect("its fence and rally read");
    (
        plan.items.iter().copied().collect(),
        geo.fence.iter().copied().collect(),
        geo.rally.iter().copied().collect(),
    )
}

fn uploaded(events: &[OffboardEvent]) -> bool {
    events
        .iter()
        .any(|e| matches!(e, OffboardEvent::MissionUploaded { .. }))
}

fn upload_failed(events: &[OffboardEvent]) -> Option<&OffboardEvent> {
    events
        .iter()
        .find(|e| matches!(e, OffboardEvent::MissionUploadFailed(_)))
}

/// The transfer that stalled CI: PX4 took every item and sent its one MISSION_ACK, and the
/// radio lost it. The client nudges with the last item again; PX4 acks the repeat.
#[test]
fn a_lost_final_mission_ack_is_recovered() {
    let mut pair = Pair::new(1, 0, 50);
    pair.boot();
    let mut dropped = false;
    pair.drop_down = Some(Box::new(move |id, _| {
        if id == MISSION_ACK && !dropped {
            dropped = true;
            return true;
        }
        false
    }));
    let mission = box_mission();
    pair.client.upload_mission_items(&mission).unwrap();
    let (ok, events) = pair.run_until(60.0, |_, ev| uploaded(ev) || upload_failed(ev).is_some());
    assert!(ok, "neither uploaded nor failed in 60 s: {events:?}");
    assert_eq!(upload_failed(&events), None, "{events:?}");
    assert_eq!(pair.lost(MISSION_ACK), 1, "the first ack was the one lost");
    assert!(pair.client.offboard().mission_uploaded());
    // The last item went out again (the nudge) after the ack was lost.
    let items = pair.sent_up.iter().filter(|&&id| id == 73).count();
    assert!(
        items > mission.len(),
        "{items} items sent for {}",
        mission.len()
    );
}

/// Mission, fence and rally uploads and a verifying download at 30 % loss each way with 200 ms
/// of latency, over many seeds: every transfer completes, none fails.
#[test]
fn transfers_complete_at_30_pct_loss_every_seed() {
    let (mission, fence, rally) = fenced_geo();
    for seed in 0..24 {
        let mut pair = Pair::new(seed, 30, 200);
        pair.boot();
        {
            let c = &mut pair.client;
            c.lodge_geo(GeoKind::Fence, &fence).unwrap();
            c.lodge_geo(GeoKind::Rally, &rally).unwrap();
            c.upload_mission_items(&mission).unwrap();
        }
        let settled = |s: GeoStatus| matches!(s, GeoStatus::Uploaded { .. } | GeoStatus::Failed(_));
        let (ok, events) = pair.run_until(300.0, |c, ev| {
            let ob = c.offboard();
            upload_failed(ev).is_some()
                || (uploaded(ev)
                    && settled(ob.geo_status(GeoKind::Fence))
                    && settled(ob.geo_status(GeoKind::Rally)))
        });
        assert!(
            ok,
            "seed {seed}: transfers still running after 300 s: {events:?}"
        );
        assert_eq!(upload_failed(&events), None, "seed {seed}: {events:?}");
        let ob = pair.client.offboard();
        let want = |items: &[MissionItem]| GeoStatus::Uploaded {
            count: items.len() as u16,
        };
        assert_eq!(ob.geo_status(GeoKind::Fence), want(&fence), "seed {seed}");
        assert_eq!(ob.geo_status(GeoKind::Rally), want(&rally), "seed {seed}");
        // And the vehicle's copy compares equal, item for item.
        pair.client.verify_mission();
        let (ok, events) = pair.run_until(300.0, |_, ev| {
            ev.iter().any(|e| {
                matches!(
                    e,
                    OffboardEvent::MissionVerified { .. }
                        | OffboardEvent::MissionMismatch(_)
                        | OffboardEvent::MissionDownloadFailed(_)
                )
            })
        });
        assert!(ok, "seed {seed}: verification still running after 300 s");
        assert!(
            events
                .iter()
                .any(|e| matches!(e, OffboardEvent::MissionVerified { .. })),
            "seed {seed}: {events:?}"
        );
    }
}

/// The box mission flown with `mission_complete` guarded by `disarmed`, every
/// MISSION_ITEM_REACHED of the final LAND item lost and the MISSION_CURRENT reports lost from
/// the landing until the disarm: PX4 completed the mission, and the wait must say so.
#[test]
fn a_lost_final_reached_still_completes_the_mission() {
    let mut pair = Pair::new(7, 0, 20);
    pair.boot();
    let mission = box_mission();
    let last = nexus_core::mission::last_reachable(&mission).unwrap();
    pair.upload(&mission);
    // From now on the link loses every report of the last item's arrival, and every
    // MISSION_CURRENT from the moment PX4 made the LAND item current until it disarms.
    let mut blackout = false;
    let mut last_current_seen = false;
    let mut armed_seen = false;
    let mut ended = false;
    pair.drop_down = Some(Box::new(move |id, payload| {
        match id {
            MISSION_ITEM_REACHED => payload.first().copied() == Some(last as u8),
            MISSION_CURRENT => {
                // seq is the first field (u16 LE).
                let seq = u16::from_le_bytes([
                    payload.first().copied().unwrap_or(0),
                    payload.get(1).copied().unwrap_or(0),
                ]);
                // The first report of the LAND item as current gets through (the client
                // knows what PX4 flies); from then on until the disarm, none does.
                if seq == last && !last_current_seen {
                    last_current_seen = true;
                    return false;
                }
                if seq == last && !ended {
                    blackout = true;
                }
                blackout
            }
            0 => {
                // HEARTBEAT: base_mode at payload offset 6; once disarmed after the flight,
                // the blackout ends (PX4's next MISSION_CURRENT then gets through).
                let armed = payload.get(6).is_some_and(|b| b & 0x80 != 0);
                armed_seen |= armed;
                if armed_seen && !armed && blackout {
                    blackout = false;
                    ended = true;
                }
                false
            }
            _ => false,
        }
    }));
    let now = pair.now();
    pair.client.apply(now, &Action::StartMission).unwrap();
    let (ok, _) = pair.run_until(60.0, |c, _| c.snapshot().armed);
    assert!(ok, "the mission start armed the vehicle");
    let wait = Wait::mission_complete()
        .guard(Condition::disarmed())
        .timeout_s(600.0);
    let (result, _, _) = pair.settle(&wait, 600.0);
    assert!(
        pair.lost(MISSION_ITEM_REACHED) >= 1,
        "the final reached was lost"
    );
    assert_eq!(result.reason, Reason::Met, "{result:?}");
    assert!(pair.client.offboard().mission_complete());
}

/// `mission_verified` against a vehicle that never sends MISSION_CURRENT: met in the tick the
/// verifying download's last item compares equal, not at a progress report that never comes.
#[test]
fn mission_verified_needs_no_mission_current() {
    let mut pair = Pair::new(3, 0, 20);
    pair.drop_down = Some(Box::new(|id, _| id == MISSION_CURRENT));
    pair.boot();
    let mission = box_mission();
    pair.upload(&mission);
    let now = pair.now();
    pair.client.apply(now, &Action::VerifyMission).unwrap();
    let wait = Wait::until(Condition::mission_verified()).timeout_s(60.0);
    let (result, at, events) = pair.settle(&wait, 60.0);
    let verified_at = events
        .iter()
        .find(|(_, e)| matches!(e, OffboardEvent::MissionVerified { .. }))
        .map(|(t, _)| *t);
    assert_eq!(
        pair.lost(MISSION_CURRENT),
        pair.sent_down
            .iter()
            .filter(|x| x.0 == MISSION_CURRENT)
            .count()
    );
    assert_eq!(result.reason, Reason::Met, "{result:?}");
    assert_eq!(
        Some(at),
        verified_at,
        "met in the step the comparison completed"
    );
}

/// The vehicle's own log downloaded over the lossy link: the core's log machine
/// (`nexus_core::log_transfer`) against the simulated PX4's log handler, 20 % of the frames
/// lost each way, 50 ms each way. The log is listed while the vehicle still writes it (as PX4
/// lists a log being written, at its size then), so what comes is exactly that many of its
/// first bytes, and every missing chunk was asked for again.
#[test]
fn the_vehicles_log_downloads_whole_over_a_lossy_link() {
    use nexus_core::log_transfer::{LogConfig, LogEvent, LogTransfer};
    use nexus_core::offboard::wire::Addr;
    let mut vehicle = Vehicle::new(VehicleConfig::instance(0));
    vehicle.start_flight_log().unwrap();
    // A minute of the vehicle on the pad: its log holds ~100 KB.
    vehicle.step(60_000_000);
    let to = Addr {
        system: vehicle.sysid(),
        component: 1,
    };
    let mut m = LogTransfer::new(LogConfig::default(), to);
    let mut rng = Rng(0x1065 | 1);
    let latency_us = 50_000;
    let mut up: VecDeque<(u64, Vec<u8>)> = VecDeque::new();
    let mut down: VecDeque<(u64, Vec<u8>)> = VecDeque::new();
    let mut enc = nexus_core::frame::Encoder::new(255, 190);
    let mut decoder = Decoder::new();
    let mut file: Vec<u8> = Vec::new();
    let mut listed = None;
    let mut done = None;
    let (mut lost_down, mut lost_up) = (0u32, 0u32);
    m.list(Instant::from_micros(vehicle.now_us())).unwrap();
    let end = vehicle.now_us() + 600_000_000;
    while vehicle.now_us() < end && done.is_none() {
        vehicle.step(10_000);
        let t = vehicle.now_us();
        let now = Instant::from_micros(t);
        let mut buf = [0u8; 1400];
        while let Some(n) = vehicle.poll_transmit(&mut buf) {
            let mut rest = &buf[..n];
            while !rest.is_empty() {
                let (used, raw) = decoder.feed(rest);
                if let Some(raw) = raw {
                    if rng.chance(20) {
                        lost_down += 1;
                    } else {
                        down.push_back((t + latency_us, raw.bytes.to_vec()));
                    }
                }
                rest = &rest[used..];
            }
        }
        while down.front().is_some_and(|(at, _)| *at <= t) {
            let (_, bytes) = down.pop_front().unwrap();
            let mut d = Decoder::new();
            let (_, raw) = d.feed(&bytes);
            let raw = raw.unwrap();
            m.handle_frame(now, &raw);
            while let Some(e) = m.poll_event() {
                match e {
                    LogEvent::Data { ofs, len, data } => {
                        let (ofs, len) = (ofs as usize, len as usize);
                        if file.len() < ofs + len {
                            file.resize(ofs + len, 0);
                        }
                        file[ofs..ofs + len].copy_from_slice(&data[..len]);
                    }
                    LogEvent::Listed { newest, .. } => listed = newest,
                    LogEvent::Downloaded { stats, .. } => done = Some(stats),
                    LogEvent::Failed(e) => panic!("{e}"),
                    LogEvent::Entry(_) => {}
                }
            }
        }
        if let (Some(entry), false) = (listed.take(), m.is_busy()) {
            m.download(now, entry).unwrap();
        }
        let mut out = [0u8; 300];
        while let Some(n) = m.poll_transmit(now, &mut enc, &mut out) {
            if rng.chance(20) {
                lost_up += 1;
            } else {
                up.push_back((t + latency_us, out[..n].to_vec()));
            }
        }
        while up.front().is_some_and(|(at, _)| *at <= t) {
            let (_, bytes) = up.pop_front().unwrap();
            vehicle.handle_datagram(&bytes);
        }
    }
    let stats = done.expect("the download did not finish in 600 s");
    let log = vehicle.flight_log().unwrap();
    assert!(vehicle.flight_log_open(), "still being written");
    assert!(file.len() > 50_000, "{} bytes", file.len());
    assert!(log.len() > file.len(), "the log grew after its listing");
    assert_eq!(&log[..file.len()], &file[..], "the first bytes, exactly");
    assert!(lost_down > 100 && lost_up > 0, "{lost_down} {lost_up}");
    assert!(stats.re_requests > 0, "{stats:?}");
}
