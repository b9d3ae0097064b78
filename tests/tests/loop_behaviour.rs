//! The loop-behaviour suite, written once and run against every driver of the core client:
//! the core itself (as a driver in virtual time, both framings), the firmware's loop (the core
//! with the firmware's capacities, fed as its UART loop feeds it: 64-byte chunks and single
//! bytes), the threaded pump (UDP and TCP), nexus-tokio (UDP and TCP), `nexus watch`'s
//! single-threaded loop (UDP and TCP) and the replay of a recording (`nexus check`'s driver).
//!
//! Each scenario plays a vehicle that hands the driver bytes as its transport would receive
//! them, lets time pass, and reads what the driver made of it:
//! * a frame cut across two reads is dropped on a datagram link (never joined with the next
//!   datagram) and completed on a byte stream;
//! * a chunk of garbage is counted and what follows it is still read;
//! * silence before the vehicle's first frame is nothing; a vehicle that stops is reported
//!   silent after the stall limit (a death on the host drivers), and one that speaks again is
//!   reported resumed where the driver reports it;
//! * a wall-clock driver that was itself not running for longer than the stall limit (its
//!   process stopped) does not take its own absence for the vehicle's silence;
//! * a driver never spins: with requests outstanding that the vehicle never answers, it wakes
//!   only at the core's deadlines, and the core never reports one that is already due.
//!
//! The wall-clock drivers run on loopback sockets bound to port 0 (no instance numbers); their
//! checks wait for an outcome with a generous cap and never assert how long anything took.

use nexus_host::groups::ActionApi;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream, UdpSocket};
use std::time::Duration;

use nexus_core::client::ClientConfig;
use nexus_core::frame::Encoder;
use nexus_core::link::Framing;
use nexus_core::telemetry::LinkIds;
use nexus_core::{mav, Action, Client, Event, Instant, Mode};

/// The stall limit every driver runs with here, ms.
const STALL_MS: u64 = 1000;
/// How long a wall-clock driver is given to show an outcome.
const CAP: Duration = Duration::from_secs(15);

const IDS: LinkIds = LinkIds {
    target_sysid: 1,
    own_sysid: 255,
    own_compid: 190,
};

fn config() -> ClientConfig {
    ClientConfig {
        ids: IDS,
        stall: Some(nexus_core::Duration::from_millis(STALL_MS)),
        ..ClientConfig::default()
    }
}

// --- the vehicle's frames ---------------------------------------------------------------

/// The vehicle's frames, numbered in sequence.
struct Vehicle {
    enc: Encoder,
    clock_ms: u32,
}

impl Vehicle {
    fn new() -> Self {
        Vehicle {
            enc: Encoder::new(1, 1),
            clock_ms: 1000,
        }
    }

    fn frame<M: mavlink::MessageData>(&mut self, msg: &M) -> Vec<u8> {
        let mut buf = [0u8; 300];
        let n = self.enc.encode(msg, &mut buf).unwrap();
        buf[..n].to_vec()
    }

    fn heartbeat(&mut self) -> Vec<u8> {
        let hb = nexus_core::offboard::wire::heartbeat(
            mav::MavType::MAV_TYPE_QUADROTOR,
            mav::MavAutopilot::MAV_AUTOPILOT_PX4,
            mav::MavModeFlag::MAV_MODE_FLAG_CUSTOM_MODE_ENABLED,
            Mode::Hold.custom_mode(),
            mav::MavState::MAV_STATE_STANDBY,
        );
        self.frame(&hb)
    }

    /// SYSTEM_TIME, the autopilot clock 100 ms on.
    fn clock(&mut self) -> Vec<u8> {
        self.clock_ms += 100;
        let t = mav::SYSTEM_TIME_DATA {
            time_unix_usec: 0,
            time_boot_ms: self.clock_ms,
        };
        self.frame(&t)
    }

    fn text(&mut self, s: &str) -> Vec<u8> {
        let mut field = [0u8; 50];
        field[..s.len()].copy_from_slice(s.as_bytes());
        let t = mav::STATUSTEXT_DATA {
            severity: mav::MavSeverity::MAV_SEVERITY_INFO,
            text: field.into(),
            id: 0,
            chunk_seq: 0,
        };
        self.frame(&t)
    }
}

/// Bytes that are no frame: pseudo-random, rich in start bytes (a false start claims a length
/// and a checksum that fails).
fn garbage() -> Vec<u8> {
    let mut x: u32 = 0x9E37_79B9;
    (0..300)
        .map(|i| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            match i % 23 {
                0 => 0xFD,
                11 => 0xFE,
                _ => x as u8,
            }
        })
        .collect()
}

// --- what a driver shows ----------------------------------------------------------------

/// What a driver made of what it received.
#[derive(Debug, Clone, Default)]
struct Seen {
    /// The vehicle's heartbeat was taken.
    connected: bool,
    /// The vehicle's texts, in order.
    texts: Vec<String>,
    /// The link was reported silent (the host drivers: their waits died of it).
    silent: bool,
    /// The link was reported resumed after that; `None`: the driver does not report it (a
    /// death is final there).
    resumed: Option<bool>,
    /// Bytes the driver dropped as no frame (or records skipped as damaged or garbage).
    dropped: u64,
    /// Times the driver woke for the core's deadlines.
    wakes: u64,
}

/// One driver under test.
trait Harness {
    fn name(&self) -> String;
    /// How its transport frames what it reads.
    fn framing(&self) -> Framing;
    /// Whether time is the driver's own (exact) or the wall's.
    fn virtual_time(&self) -> bool;
    /// The vehicle's transport delivers `bytes`: one datagram, or one chunk of the stream.
    fn receive(&mut self, bytes: &[u8]);
    /// `ms` of time pass.
    fn pass(&mut self, ms: u64);
    /// Ask the vehicle to arm and to hold (requests it will never answer).
    fn request(&mut self);
    fn seen(&mut self) -> Seen;
    /// Stop the driver itself for `ms` of wall time, as a stopped process is (SIGSTOP), and
    /// return once it runs again; `false` for a driver whose time is not the wall's.
    fn stop_driver(&mut self, _ms: u64) -> bool {
        false
    }
}

/// `f` holds for what `h` shows: at once in virtual time, within [`CAP`] on the wall.
fn until(h: &mut dyn Harness, what: &str, f: impl Fn(&Seen) -> bool) -> Seen {
    let t0 = std::time::Instant::now();
    loop {
        let s = h.seen();
        if f(&s) {
            return s;
        }
        assert!(
            !h.virtual_time() && t0.elapsed() < CAP,
            "{}: never {what}: {s:?}",
            h.name()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// The vehicle speaks: heartbeat and clock.
fn connect(h: &mut dyn Harness, v: &mut Vehicle) {
    h.receive(&v.heartbeat());
    h.receive(&v.clock());
    until(h, "connected", |s| s.connected);
}

// --- the scenarios ----------------------------------------------------------------------

fn a_frame_cut_across_two_reads(h: &mut dyn Harness) {
    let mut v = Vehicle::new();
    connect(h, &mut v);
    let cut = v.text("cut in two");
    h.receive(&cut[..12]);
    h.receive(&cut[12..]);
    h.receive(&v.text("after"));
    let s = until(h, "the text after the cut one", |s| {
        s.texts.iter().any(|t| t == "after")
    });
    match h.framing() {
        Framing::Datagram => {
            assert_eq!(
                s.texts,
                ["after"],
                "{}: a datagram is never joined",
                h.name()
            );
            assert!(s.dropped > 0, "{}: the halves are counted: {s:?}", h.name());
        }
        _ => assert_eq!(s.texts, ["cut in two", "after"], "{}", h.name()),
    }
}

fn a_garbage_chunk(h: &mut dyn Harness) {
    let mut v = Vehicle::new();
    connect(h, &mut v);
    h.receive(&garbage());
    h.receive(&v.text("after the garbage"));
    // A stream's false start may hold the text back until enough bytes follow to judge it.
    for _ in 0..20 {
        h.receive(&v.heartbeat());
    }
    let s = until(h, "the text after the garbage", |s| !s.texts.is_empty());
    assert_eq!(
        s.texts,
        ["after the garbage"],
        "{}: nothing false taken",
        h.name()
    );
    assert!(s.dropped > 0, "{}: the garbage is counted: {s:?}", h.name());
}

fn silence_and_a_vehicle_that_stops(h: &mut dyn Harness) {
    // Nothing heard yet: not watched.
    h.pass(3 * STALL_MS);
    assert!(
        !h.seen().silent,
        "{}: silent before the first frame",
        h.name()
    );
    let mut v = Vehicle::new();
    connect(h, &mut v);
    if h.virtual_time() {
        h.pass(STALL_MS / 2);
        assert!(!h.seen().silent, "{}: silent too early", h.name());
        h.pass(STALL_MS / 2);
    } else {
        h.pass(STALL_MS);
    }
    until(h, "silent", |s| s.silent);
    // It speaks again.
    h.receive(&v.heartbeat());
    h.receive(&v.clock());
    let s = h.seen();
    if s.resumed.is_some() {
        until(h, "resumed", |s| s.resumed == Some(true));
    }
}

fn due_deadlines_do_not_spin(h: &mut dyn Harness) {
    let mut v = Vehicle::new();
    connect(h, &mut v);
    h.request();
    let before = h.seen().wakes;
    // Quiet with requests outstanding, past the stall limit: the core's deadlines are its
    // streams (a heartbeat a second), its retries and its supervision (silence, once).
    let quiet_ms = 5 * STALL_MS / 2;
    h.pass(quiet_ms);
    let woke = h.seen().wakes - before;
    eprintln!("{}: {woke} wake-ups in {quiet_ms} ms", h.name());
    assert!(woke <= 40, "{}: {woke} wake-ups in {quiet_ms} ms", h.name());
}

/// A driver that was itself not running for longer than the stall limit (its process
/// stopped) does not take its own absence for the vehicle's silence: its supervision starts
/// over when it runs again, and a vehicle heard within the stall limit of that is alive.
fn a_driver_that_was_not_running(h: &mut dyn Harness) {
    let mut v = Vehicle::new();
    connect(h, &mut v);
    if !h.stop_driver(3 * STALL_MS) {
        return;
    }
    for _ in 0..2 {
        h.pass(STALL_MS / 2);
        h.receive(&v.heartbeat());
        h.receive(&v.clock());
    }
    let s = h.seen();
    assert!(
        !s.silent,
        "{}: its own pause was taken for the vehicle's silence",
        h.name()
    );
    assert!(s.connected, "{}", h.name());
}

fn every_scenario(make: &dyn Fn() -> Box<dyn Harness>) {
    a_frame_cut_across_two_reads(&mut *make());
    a_garbage_chunk(&mut *make());
    silence_and_a_vehicle_that_stops(&mut *make());
    due_deadlines_do_not_spin(&mut *make());
    a_driver_that_was_not_running(&mut *make());
}

// --- the core as a driver, in virtual time ----------------------------------------------

/// The core driven as every driver drives it, in virtual time: hand over, send, jump to the
/// next deadline (asserting it is never one already due).
struct Core<const W: usize, const T: usize, const I: usize, const S: usize> {
    name: &'static str,
    client: Box<Client<W, T, I, S>>,
    framing: Framing,
    /// Bytes per read on a stream (a UART read takes what its queue holds).
    chunk: usize,
    now: Instant,
    wakes: u64,
    silent: bool,
    resumed: bool,
}

impl<const W: usize, const T: usize, const I: usize, const S: usize> Core<W, T, I, S> {
    fn new(name: &'static str, framing: Framing, chunk: usize) -> Self {
        Core {
            name,
            client: Box::new(Client::new(config())),
            framing,
            chunk,
            now: Instant::from_millis(1),
            wakes: 0,
            silent: false,
            resumed: false,
        }
    }

    /// Send what is due, take the events, and check the deadline's promise.
    fn service(&mut self) {
        let mut buf = [0u8; nexus_core::frame::MAX_FRAME_LEN];
        while self.client.poll_transmit(self.now, &mut buf).is_some() {}
        while let Some(e) = self.client.poll_event() {
            match e {
                Event::Silent { .. } => self.silent = true,
                Event::Resumed => self.resumed = true,
                _ => {}
            }
        }
        if let Some(d) = self.client.next_deadline() {
            assert!(
                d > self.now,
                "{}: a deadline still due after the sends",
                self.name
            );
        }
    }
}

impl<const W: usize, const T: usize, const I: usize, const S: usize> Harness for Core<W, T, I, S> {
    fn name(&self) -> String {
        format!(
            "{} ({:?}, {}-byte reads)",
            self.name, self.framing, self.chunk
        )
    }
    fn framing(&self) -> Framing {
        self.framing
    }
    fn virtual_time(&self) -> bool {
        true
    }
    fn receive(&mut self, bytes: &[u8]) {
        match self.framing {
            Framing::Datagram => {
                self.client.handle_datagram(self.now, bytes);
            }
            _ => {
                for c in bytes.chunks(self.chunk) {
                    self.client.handle_stream_bytes(self.now, c);
                }
            }
        }
        self.service();
        self.now = self.now + nexus_core::Duration::from_millis(1);
    }
    fn pass(&mut self, ms: u64) {
        let end = self.now + nexus_core::Duration::from_millis(ms);
        self.service();
        while let Some(d) = self.client.next_deadline().filter(|&d| d <= end) {
            self.now = d;
            self.wakes += 1;
            self.service();
        }
        self.now = end;
        self.service();
    }
    fn request(&mut self) {
        self.client.apply(self.now, &Action::Arm).unwrap();
        self.client
            .apply(self.now, &Action::SetMode(Mode::Mission))
            .unwrap();
        self.service();
    }
    fn seen(&mut self) -> Seen {
        let tel = self.client.telemetry();
        let rx = self.client.rx_stats();
        Seen {
            connected: tel.connected(),
            texts: tel
                .texts()
                .after(0)
                .map(|t| t.text.as_str().to_string())
                .collect(),
            silent: self.silent,
            resumed: Some(self.resumed),
            dropped: u64::from(rx.framer.dropped_bytes),
            wakes: self.wakes,
        }
    }
}

/// The host's capacities.
type HostCore = Core<32, 64, 1000, 64>;
/// The mission firmware's (`firmware-examples/src/mission.rs`).
type FirmwareCore = Core<2, 4, 16, 0>;

#[test]
fn the_core_on_datagrams() {
    every_scenario(&|| Box::new(HostCore::new("core", Framing::Datagram, 0)));
}

#[test]
fn the_core_on_a_byte_stream() {
    every_scenario(&|| Box::new(HostCore::new("core", Framing::Stream, 4096)));
}

#[test]
fn the_firmware_loop_on_its_uart() {
    // The firmware's loops read at most 64 bytes at a time (pump.rs READ_CHUNK); an
    // interrupt-paced UART may deliver a byte at a time.
    every_scenario(&|| Box::new(FirmwareCore::new("firmware", Framing::Stream, 64)));
    every_scenario(&|| Box::new(FirmwareCore::new("firmware", Framing::Stream, 1)));
}

// --- the wall-clock drivers -------------------------------------------------------------

/// The vehicle's end of a loopback link.
enum Peer {
    Udp(UdpSocket, std::net::SocketAddr),
    Tcp(TcpStream),
}

impl Peer {
    fn send(&mut self, bytes: &[u8]) {
        match self {
            Peer::Udp(s, to) => {
                s.send_to(bytes, *to).unwrap();
            }
            Peer::Tcp(s) => {
                s.write_all(bytes).unwrap();
                s.flush().unwrap();
            }
        }
    }

    /// Drain what the driver sent us (so its socket never fills).
    fn drain(&mut self) {
        let mut buf = [0u8; 2048];
        match self {
            Peer::Udp(s, _) => while s.recv(&mut buf).is_ok() {},
            Peer::Tcp(s) => while matches!(s.read(&mut buf), Ok(n) if n > 0) {},
        }
    }
}

/// A loopback peer for `framing`: the connection string the driver opens, and a function that
/// gives the vehicle's end once the driver's end exists (its local address, for UDP).
fn loopback(framing: Framing) -> (String, Option<TcpListener>) {
    match framing {
        Framing::Datagram => ("udpin:127.0.0.1:0".into(), None),
        _ => {
            let l = TcpListener::bind("127.0.0.1:0").unwrap();
            let port = l.local_addr().unwrap().port();
            (format!("tcp:127.0.0.1:{port}"), Some(l))
        }
    }
}

fn peer_of(listener: Option<TcpListener>, local: Option<std::net::SocketAddr>) -> Peer {
    match listener {
        None => {
            let s = UdpSocket::bind("127.0.0.1:0").unwrap();
            s.set_nonblocking(true).unwrap();
            Peer::Udp(s, local.expect("a UDP link's address"))
        }
        Some(l) => {
            let (s, _) = l.accept().unwrap();
            s.set_nonblocking(true).unwrap();
            Peer::Tcp(s)
        }
    }
}

/// A driver on the wall clock, fed by a loopback peer ([`OnWall`]).
trait WallDriver {
    fn name(&self) -> &'static str;
    /// Ask the vehicle to arm and to hold (requests it will never answer).
    fn request(&mut self);
    fn seen(&mut self) -> Seen;
    /// Let `ms` of wall time pass (a driver with a thread of its own runs meanwhile).
    fn pass(&mut self, ms: u64) {
        std::thread::sleep(Duration::from_millis(ms));
    }
    /// Keep the driver from running for `ms` of wall time; return once it runs again.
    fn stop(&mut self, ms: u64);
}

/// A wall-clock driver and the vehicle's end of its transport.
struct OnWall<D> {
    framing: Framing,
    peer: Peer,
    driver: D,
}

impl<D: WallDriver> Harness for OnWall<D> {
    fn name(&self) -> String {
        format!("{} ({:?})", self.driver.name(), self.framing)
    }
    fn framing(&self) -> Framing {
        self.framing
    }
    fn virtual_time(&self) -> bool {
        false
    }
    fn receive(&mut self, bytes: &[u8]) {
        self.peer.send(bytes);
        // One read each: a UDP datagram is one anyway; a stream's reads may still merge.
        self.driver.pass(2);
    }
    fn pass(&mut self, ms: u64) {
        self.driver.pass(ms);
        self.peer.drain();
    }
    fn request(&mut self) {
        self.driver.request();
    }
    fn seen(&mut self) -> Seen {
        self.driver.seen()
    }
    fn stop_driver(&mut self, ms: u64) -> bool {
        self.driver.stop(ms);
        true
    }
}

/// The threaded pump.
struct PumpDriver {
    link: nexus_host::pump::LinkHandle,
}

fn the_pump(framing: Framing) -> OnWall<PumpDriver> {
    use nexus_host::pump::{LinkConfig, Pump, Supervision};
    let (conn, listener) = loopback(framing);
    let mut supervision = Supervision::default();
    supervision.stall = Some(Duration::from_millis(STALL_MS));
    let config = LinkConfig {
        client: ClientConfig {
            stall: None,
            ..config()
        },
        supervision,
        ..LinkConfig::default()
    };
    let pump = Pump::start().unwrap();
    let link = pump.open_link(&conn.parse().unwrap(), config).unwrap();
    let peer = peer_of(listener, link.local_addr());
    OnWall {
        framing,
        peer,
        driver: PumpDriver { link },
    }
}

impl WallDriver for PumpDriver {
    fn name(&self) -> &'static str {
        "the threaded pump"
    }
    /// The pump's own thread sleeps in a call.
    fn stop(&mut self, ms: u64) {
        self.link
            .call(move |_| std::thread::sleep(Duration::from_millis(ms)))
            .unwrap();
    }
    fn request(&mut self) {
        self.link
            .call(|ctx| {
                let now = ctx.now();
                let c = ctx.client();
                c.apply(now, &Action::Arm).unwrap();
                c.apply(now, &Action::SetMode(Mode::Mission)).unwrap();
            })
            .unwrap();
    }
    fn seen(&mut self) -> Seen {
        let texts = self
            .link
            .call(|ctx| {
                let tel = ctx.client().telemetry();
                tel.texts()
                    .after(0)
                    .map(|t| t.text.as_str().to_string())
                    .collect::<Vec<_>>()
            })
            .unwrap();
        let s = self.link.status();
        Seen {
            connected: s.connected,
            texts,
            silent: matches!(
                s.died,
                Some(nexus_host::launcher::DeathCause::LinkSilent { .. })
            ),
            resumed: None,
            dropped: s.counters.dropped_bytes,
            wakes: s.counters.timer_wakes,
        }
    }
}

/// nexus-tokio, on a runtime of its own.
struct TokioDriver {
    rt: tokio::runtime::Runtime,
    op: Option<nexus_tokio::AsyncClient>,
}

fn tokio_client(framing: Framing) -> OnWall<TokioDriver> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let (conn, listener) = loopback(framing);
    let options = nexus_host::offboard_client::OffboardOptions {
        stall: Some(Duration::from_millis(STALL_MS)),
        ..Default::default()
    };
    let op = rt
        .block_on(nexus_tokio::AsyncClient::open(&conn, options))
        .unwrap();
    let peer = peer_of(listener, op.local_addr());
    OnWall {
        framing,
        peer,
        driver: TokioDriver { rt, op: Some(op) },
    }
}

impl TokioDriver {
    fn op(&self) -> &nexus_tokio::AsyncClient {
        self.op.as_ref().unwrap()
    }
}

impl Drop for TokioDriver {
    fn drop(&mut self) {
        // Close inside the runtime, then let it go.
        let op = self.op.take();
        self.rt.block_on(async move { drop(op) });
    }
}

impl WallDriver for TokioDriver {
    fn name(&self) -> &'static str {
        "nexus-tokio"
    }
    /// The runtime's only worker sleeps in a task: the link's task cannot run.
    fn stop(&mut self, ms: u64) {
        let blocker = self
            .rt
            .spawn(async move { std::thread::sleep(Duration::from_millis(ms)) });
        self.rt.block_on(blocker).unwrap();
    }
    fn request(&mut self) {
        let _guard = self.rt.enter();
        self.op().arm().unwrap();
        self.op().set_mode(Mode::Mission).unwrap();
    }
    fn seen(&mut self) -> Seen {
        let op = self.op();
        let (connected, texts, dropped) = op.with(|c| {
            let tel = c.telemetry();
            let texts = tel
                .texts()
                .after(0)
                .map(|t| t.text.as_str().to_string())
                .collect();
            let dropped = u64::from(c.rx_stats().framer.dropped_bytes);
            (tel.connected(), texts, dropped)
        });
        Seen {
            connected,
            texts,
            silent: matches!(
                op.death(),
                Some(nexus_host::launcher::DeathCause::LinkSilent { .. })
            ),
            resumed: None,
            dropped,
            wakes: op.wakes(),
        }
    }
}

/// `nexus watch`'s loop, stepped by the harness (it has no thread of its own).
struct WatchDriver {
    driver: nexus_cli::driver::Driver,
    /// Silence was reported at some point.
    was_silent: bool,
}

fn the_watch(framing: Framing) -> OnWall<WatchDriver> {
    let (conn, listener) = loopback(framing);
    let conn: nexus_host::transport::ConnString = conn.parse().unwrap();
    let link = nexus_host::transport::Link::open(&conn).unwrap();
    let local = link.local_addr();
    let driver = nexus_cli::driver::Driver::with_stall(
        link,
        IDS,
        std::time::Instant::now(),
        nexus_core::Duration::from_millis(STALL_MS),
    )
    .unwrap();
    let peer = peer_of(listener, local);
    OnWall {
        framing,
        peer,
        driver: WatchDriver {
            driver,
            was_silent: false,
        },
    }
}

impl WallDriver for WatchDriver {
    fn name(&self) -> &'static str {
        "nexus watch's loop"
    }
    /// The loop is not stepped.
    fn stop(&mut self, ms: u64) {
        std::thread::sleep(Duration::from_millis(ms));
    }
    fn request(&mut self) {
        // A watcher commands nothing: its only deadlines are its heartbeat and the silence.
    }
    /// Run the loop for `ms` of wall time.
    fn pass(&mut self, ms: u64) {
        let end = std::time::Instant::now() + Duration::from_millis(ms);
        loop {
            let left = end.saturating_duration_since(std::time::Instant::now());
            self.driver.step(left).unwrap();
            self.was_silent |= self.driver.client().is_silent();
            if left.is_zero() {
                return;
            }
        }
    }
    fn seen(&mut self) -> Seen {
        self.pass(1);
        let c = self.driver.client();
        let silent = c.is_silent();
        Seen {
            connected: c.telemetry().connected(),
            texts: self.driver.texts().iter().map(|t| t.text.clone()).collect(),
            silent: silent || self.was_silent,
            resumed: Some(self.was_silent && !silent),
            dropped: u64::from(c.rx_stats().framer.dropped_bytes),
            wakes: self.driver.wakes(),
        }
    }
}

#[test]
fn nexus_watch_on_udp() {
    every_scenario(&|| Box::new(the_watch(Framing::Datagram)));
}

#[test]
fn nexus_watch_on_tcp() {
    every_scenario(&|| Box::new(the_watch(Framing::Stream)));
}

#[test]
fn the_threaded_pump_on_udp() {
    every_scenario(&|| Box::new(the_pump(Framing::Datagram)));
}

#[test]
fn the_threaded_pump_on_tcp() {
    every_scenario(&|| Box::new(the_pump(Framing::Stream)));
}

#[test]
fn nexus_tokio_on_udp() {
    every_scenario(&|| Box::new(tokio_client(Framing::Datagram)));
}

#[test]
fn nexus_tokio_on_tcp() {
    every_scenario(&|| Box::new(tokio_client(Framing::Stream)));
}

// --- the replay of a recording ----------------------------------------------------------

/// `nexus check`'s driver: what the vehicle sent is a recording (one record per read, at its
/// time), replayed from the start at every look, in its recorded time.
struct ReplayHarness {
    /// Each read as a record (timestamp, bytes), and the requests, at their times (ms).
    reads: Vec<(u64, Vec<u8>)>,
    requests: Vec<u64>,
    now_ms: u64,
}

/// The recording's clock at its start, µs since the Unix epoch.
const EPOCH_US: u64 = 1_700_000_000_000_000;

impl Harness for ReplayHarness {
    fn name(&self) -> String {
        "the replay of a recording".into()
    }
    fn framing(&self) -> Framing {
        // A record holds one frame: a frame cut across two records is two damaged records.
        Framing::Datagram
    }
    fn virtual_time(&self) -> bool {
        true
    }
    fn receive(&mut self, bytes: &[u8]) {
        self.reads.push((self.now_ms, bytes.to_vec()));
        self.now_ms += 1;
    }
    fn pass(&mut self, ms: u64) {
        self.now_ms += ms;
    }
    fn request(&mut self) {
        self.requests.push(self.now_ms);
    }
    fn seen(&mut self) -> Seen {
        use nexus_cli::replay::Replay;
        let mut tlog = Vec::new();
        for (ms, bytes) in &self.reads {
            tlog.extend_from_slice(&(EPOCH_US + ms * 1000).to_be_bytes());
            tlog.extend_from_slice(bytes);
        }
        // The replay's time counts from the first record.
        let first = self.reads.first().map_or(0, |r| r.0);
        let at = |ms: u64| Instant::from_millis(ms.saturating_sub(first));
        let mut reader = nexus_host::tlog::TlogReader::new(&tlog[..]);
        let mut client: Box<Client<32, 64, 1000, 64>> = Box::new(Client::new(config()));
        let mut replay = Replay::default();
        let (mut silent, mut resumed) = (false, false);
        let mut look = |client: &mut Client<32, 64, 1000, 64>| {
            while let Some(e) = client.poll_event() {
                match e {
                    Event::Silent { .. } => silent = true,
                    Event::Resumed => resumed = true,
                    _ => {}
                }
            }
        };
        let mut requests = self.requests.iter().copied().peekable();
        loop {
            let rec = reader.next_record().unwrap();
            let next_ms = rec
                .as_ref()
                .map_or(self.now_ms, |r| (r.epoch_us - EPOCH_US) / 1000);
            while let Some(r) = requests.next_if(|&r| r <= next_ms) {
                replay.pass(&mut client, at(r));
                look(&mut client);
                client.apply(replay.now(), &Action::Arm).unwrap();
                client
                    .apply(replay.now(), &Action::SetMode(Mode::Mission))
                    .unwrap();
            }
            let Some(rec) = rec else { break };
            replay.record(&mut client, &rec);
            look(&mut client);
        }
        replay.pass(&mut client, at(self.now_ms));
        look(&mut client);
        let st = reader.stats();
        let tel = client.telemetry();
        Seen {
            connected: tel.connected(),
            texts: tel
                .texts()
                .after(0)
                .map(|t| t.text.as_str().to_string())
                .collect(),
            silent,
            resumed: Some(resumed),
            dropped: st.garbage_bytes + st.damaged,
            wakes: replay.wakes(),
        }
    }
}

#[test]
fn the_replay_of_a_recording() {
    every_scenario(&|| {
        Box::new(ReplayHarness {
            reads: Vec::new(),
            requests: Vec::new(),
            now_ms: 0,
        })
    });
}
