//! The UDP server around a [`Vehicle`]: PX4 SITL instance N's offboard link on real sockets,
//! one thread per instance, and the handle the host drives it with.
//!
//! Like PX4: bind `bind_ip:14580+N`, send to `remote_ip:14540+N` until a client speaks, then
//! latch onto the first client's source address and port for the life of the vehicle. Instances
//! above 9 send to 14549 instead until then, as PX4's `px4-rc.mavlink` does ("to avoid port
//! overlaps"): their client must speak first to 14580+N (unless
//! [`SimConfig::offboard_port_per_instance`] keeps 14540+N for every instance). Several
//! frames share a datagram. Real-time mode paces sim time at `speed` × wall; lockstep mode
//! advances it only in [`SimHandle::step`], as fast as the CPU allows, handling inbound
//! datagrams every [`LOCKSTEP_IO_US`] of sim time. Dropping the handle (or [`SimHandle::stop`])
//! stops the thread and closes the socket; nothing outlives it.

use super::clock::{ClockMode, Pacer};
use super::config::VehicleConfig;
use super::faults::{ExitStatus, Fault};
use super::vehicle::{Vehicle, VehicleSnapshot};
use std::collections::VecDeque;
use std::io::ErrorKind;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, UdpSocket};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender, SyncSender};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Sim time between socket services in lockstep, µs.
pub const LOCKSTEP_IO_US: u64 = 10_000;
/// Datagram payload the vehicle fills (frames never split; below a 1500-byte MTU).
pub const DATAGRAM_LEN: usize = 1400;
/// Socket buffer sizes requested (a fast sim outruns a slow reader otherwise), bytes.
pub const SOCKET_BUFFER: usize = 4 << 20;
/// Real time: the longest sleep between two looks at the socket while the next tick is not
/// due (what a datagram may wait, wall).
pub const POLL_WALL: Duration = Duration::from_micros(500);
/// Console lines kept in the handle's log.
pub const LOG_CAP: usize = 20_000;

/// How to run one simulated vehicle on the network.
#[derive(Debug, Clone, PartialEq)]
pub struct SimConfig {
    /// The vehicle (instance N, location, fidelity switches).
    pub vehicle: VehicleConfig,
    /// Address to bind (PX4: all interfaces; default here: loopback).
    pub bind_ip: IpAddr,
    /// Where to send before a client has spoken.
    pub remote_ip: IpAddr,
    /// Local port of instance 0 (PX4: 14580).
    pub local_port_base: u16,
    /// Remote port of instance 0 (PX4: 14540).
    pub remote_port_base: u16,
    /// Real time with a speed factor, or lockstep.
    pub clock: ClockMode,
    /// Send to `remote_port_base + N` before a client speaks for every instance N, not only
    /// up to 9. Off by default: like PX4 (`px4-rc.mavlink`), an instance above 9 sends to
    /// `remote_port_base + 9` (14549) until a client speaks first to its 14580+N. On, a
    /// client that only listens on 14540+N hears any instance (not what PX4 does).
    pub offboard_port_per_instance: bool,
    /// Write the vehicle's own log of its flight here (PX4's ULog format, PX4's topic names:
    /// [`crate::ulog::FlightLog`]), from boot until its first disarm after an arming, or
    /// until it stops ([`crate::logger`]); the same bytes are served over MAVLink's log
    /// protocol. `None`: no log.
    pub ulog: Option<std::path::PathBuf>,
}

impl SimConfig {
    /// Instance `n` in real time at `speed`.
    pub fn realtime(n: u8, speed: f64) -> Self {
        SimConfig {
            vehicle: VehicleConfig::instance(n),
            bind_ip: IpAddr::V4(Ipv4Addr::LOCALHOST),
            remote_ip: IpAddr::V4(Ipv4Addr::LOCALHOST),
            local_port_base: 14580,
            remote_port_base: 14540,
            clock: ClockMode::RealTime { speed },
            offboard_port_per_instance: false,
            ulog: None,
        }
    }

    /// Instance `n` in lockstep.
    pub fn lockstep(n: u8) -> Self {
        SimConfig {
            clock: ClockMode::Lockstep,
            ..SimConfig::realtime(n, 1.0)
        }
    }

    /// The UDP port the vehicle binds (14580 + N).
    pub fn local_port(&self) -> u16 {
        self.local_port_base
            .wrapping_add(self.vehicle.instance as u16)
    }

    /// The UDP port a client of this instance listens on (14540 + N).
    pub fn remote_port(&self) -> u16 {
        self.remote_port_base
            .wrapping_add(self.vehicle.instance as u16)
    }

    /// The UDP port the vehicle sends to until a client speaks: [`SimConfig::remote_port`] up
    /// to instance 9, above it `remote_port_base + 9` (14549) as PX4 — unless
    /// [`SimConfig::offboard_port_per_instance`].
    pub fn first_remote_port(&self) -> u16 {
        if !self.offboard_port_per_instance && self.vehicle.instance > 9 {
            self.remote_port_base.wrapping_add(9)
        } else {
            self.remote_port()
        }
    }
}

/// The offboard link a client connects to (the Python client's `sim.ports["offboard"]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OffboardLink {
    /// UDP port the client listens on (14540 + N).
    pub port: u16,
    /// PX4's system id (N + 1).
    pub system_id: u8,
}

/// The run's port map.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ports {
    /// The offboard/API link.
    pub offboard: OffboardLink,
    /// The UDP port the vehicle itself is bound to (14580 + N).
    pub vehicle_port: u16,
}

/// What can go wrong driving a simulated vehicle.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// The vehicle's port could not be bound (another instance N running?).
    #[error("cannot bind UDP {addr} for the simulated vehicle: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// The OS error.
        source: std::io::Error,
    },
    /// The vehicle exited (exit or panic fault).
    #[error("the simulated vehicle has exited ({0})")]
    Exited(ExitStatus),
    /// The vehicle was stopped.
    #[error("the simulated vehicle was stopped")]
    Stopped,
    /// A lockstep operation on a real-time vehicle.
    #[error("step() needs a lockstep vehicle; this one runs in real time")]
    NotLockstep,
    /// A real-time operation on a lockstep vehicle.
    #[error("set_speed() needs a real-time vehicle; this one is in lockstep")]
    NotRealTime,
    /// A speed factor that is not a positive finite number.
    #[error("speed factor must be positive and finite, got {0}")]
    InvalidSpeed(f64),
    /// The vehicle's log (`SimConfig::ulog`) could not be created.
    #[error("cannot create the vehicle's ULog {path}: {source}")]
    Ulog {
        /// The file.
        path: std::path::PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
}

enum Ctl {
    Step(u64, SyncSender<Result<u64, SimError>>),
    SetSpeed(f64),
    Inject(Fault),
    ClearFaults,
    Stop,
}

#[derive(Debug)]
struct Shared {
    snapshot: VehicleSnapshot,
    new_lines: VecDeque<String>,
    log: VecDeque<String>,
    exit: Option<ExitStatus>,
    running: bool,
    client: Option<SocketAddr>,
    frames_sent: u64,
}

/// A running simulated vehicle. Dropping it stops the vehicle and closes its socket.
#[derive(Debug)]
pub struct SimHandle {
    shared: Arc<Mutex<Shared>>,
    tx: Sender<Ctl>,
    thread: Option<JoinHandle<()>>,
    ports: Ports,
    instance: u8,
    clock: ClockMode,
}

fn lock(m: &Mutex<Shared>) -> MutexGuard<'_, Shared> {
    // A panic in the vehicle thread poisons nothing we cannot read: take the data anyway.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn bind(cfg: &SimConfig) -> Result<UdpSocket, SimError> {
    let addr = SocketAddr::new(cfg.bind_ip, cfg.local_port());
    let err = |source| SimError::Bind { addr, source };
    let domain = if addr.is_ipv4() {
        socket2::Domain::IPV4
    } else {
        socket2::Domain::IPV6
    };
    let s = socket2::Socket::new(domain, socket2::Type::DGRAM, Some(socket2::Protocol::UDP))
        .map_err(err)?;
    // Best effort: a small buffer only costs datagrams at high speed factors.
    let _ = s.set_recv_buffer_size(SOCKET_BUFFER);
    let _ = s.set_send_buffer_size(SOCKET_BUFFER);
    s.bind(&addr.into()).map_err(err)?;
    Ok(s.into())
}

impl SimHandle {
    /// Bind the vehicle's socket and start its thread.
    pub fn start(cfg: SimConfig) -> Result<SimHandle, SimError> {
        if let ClockMode::RealTime { speed } = cfg.clock {
            if !(speed.is_finite() && speed > 0.0) {
                return Err(SimError::InvalidSpeed(speed));
            }
        }
        let socket = bind(&cfg)?;
        let mut vehicle = Vehicle::new(cfg.vehicle.clone());
        let ulog = match &cfg.ulog {
            None => None,
            Some(path) => {
                let err = |source| SimError::Ulog {
                    path: path.clone(),
                    source,
                };
                let file = std::fs::File::create(path).map_err(err)?;
                vehicle
                    .start_flight_log()
                    .map_err(|e| err(std::io::Error::other(e.to_string())))?;
                Some(std::io::BufWriter::new(file))
            }
        };
        let ports = Ports {
            offboard: OffboardLink {
                port: cfg.remote_port(),
                system_id: vehicle.sysid(),
            },
            vehicle_port: cfg.local_port(),
        };
        let shared = Arc::new(Mutex::new(Shared {
            snapshot: vehicle.snapshot(),
            new_lines: VecDeque::new(),
            log: VecDeque::new(),
            exit: None,
            running: true,
            client: None,
            frames_sent: 0,
        }));
        let (tx, rx) = mpsc::channel();
        let remote = SocketAddr::new(cfg.remote_ip, cfg.first_remote_port());
        let clock = cfg.clock;
        let sh = shared.clone();
        let thread = std::thread::Builder::new()
            .name(format!("px4-sim-{}", cfg.vehicle.instance))
            .spawn(move || {
                let mut s = Server {
                    vehicle,
                    socket,
                    remote,
                    latched: false,
                    early: None,
                    shared: sh,
                    buf: vec![0u8; 65_536],
                    out: [0u8; DATAGRAM_LEN],
                    ulog,
                };
                s.run(clock, rx);
            })
            .map_err(|e| SimError::Bind {
                addr: SocketAddr::new(cfg.bind_ip, cfg.local_port()),
                source: e,
            })?;
        Ok(SimHandle {
            shared,
            tx,
            thread: Some(thread),
            ports,
            instance: cfg.vehicle.instance,
            clock,
        })
    }

    /// The port map: `offboard.port` = 14540 + N, `offboard.system_id` = N + 1.
    pub fn ports(&self) -> Ports {
        self.ports
    }

    /// SITL instance N.
    pub fn instance(&self) -> u8 {
        self.instance
    }

    /// The clock mode the vehicle was started with.
    pub fn clock(&self) -> ClockMode {
        self.clock
    }

    /// The vehicle's clock (time_boot_ms), ms.
    pub fn sim_time_ms(&self) -> u64 {
        lock(&self.shared).snapshot.sim_ms
    }

    /// Ground-truth height above the pad, m.
    pub fn true_height_m(&self) -> f32 {
        lock(&self.shared).snapshot.true_height_m
    }

    /// Headline state and ground truth.
    pub fn snapshot(&self) -> VehicleSnapshot {
        lock(&self.shared).snapshot
    }

    /// The client address the vehicle latched onto, once one has spoken.
    pub fn client(&self) -> Option<SocketAddr> {
        lock(&self.shared).client
    }

    /// MAVLink frames sent so far.
    pub fn frames_sent(&self) -> u64 {
        lock(&self.shared).frames_sent
    }

    fn check_alive(&self) -> Result<(), SimError> {
        let s = lock(&self.shared);
        match (s.exit, s.running) {
            (Some(e), _) => Err(SimError::Exited(e)),
            (None, false) => Err(SimError::Stopped),
            _ => Ok(()),
        }
    }

    fn send(&self, c: Ctl) -> Result<(), SimError> {
        self.check_alive()?;
        self.tx.send(c).map_err(|_| SimError::Stopped)
    }

    /// Change the speed factor (real-time mode).
    pub fn set_speed(&self, speed: f64) -> Result<(), SimError> {
        if self.clock == ClockMode::Lockstep {
            return Err(SimError::NotRealTime);
        }
        if !(speed.is_finite() && speed > 0.0) {
            return Err(SimError::InvalidSpeed(speed));
        }
        self.send(Ctl::SetSpeed(speed))
    }

    /// Advance a lockstep vehicle by `dt_ms` of sim time; returns its clock afterwards, ms.
    /// Inbound datagrams are handled every [`LOCKSTEP_IO_US`] of sim time, outbound flushed.
    pub fn step(&self, dt_ms: u64) -> Result<u64, SimError> {
        if self.clock != ClockMode::Lockstep {
            return Err(SimError::NotLockstep);
        }
        let (rtx, rrx) = mpsc::sync_channel(1);
        self.send(Ctl::Step(dt_ms * 1000, rtx))?;
        match rrx.recv() {
            Ok(r) => r,
            Err(_) => Err(self.check_alive().err().unwrap_or(SimError::Stopped)),
        }
    }

    /// Step in `chunk_ms` increments until `pred` holds (true) or `limit_ms` of sim time passed
    /// (false).
    pub fn step_until(
        &self,
        limit_ms: u64,
        chunk_ms: u64,
        mut pred: impl FnMut(&VehicleSnapshot) -> bool,
    ) -> Result<bool, SimError> {
        let chunk = chunk_ms.max(1);
        let mut done = 0;
        loop {
            if pred(&self.snapshot()) {
                return Ok(true);
            }
            if done >= limit_ms {
                return Ok(false);
            }
            let d = chunk.min(limit_ms - done);
            self.step(d)?;
            done += d;
        }
    }

    /// Inject a fault (see [`Fault`]).
    pub fn inject(&self, fault: Fault) -> Result<(), SimError> {
        self.send(Ctl::Inject(fault))
    }

    /// Clear stall, silence, garbage and arming refusal.
    pub fn clear_faults(&self) -> Result<(), SimError> {
        self.send(Ctl::ClearFaults)
    }

    /// Console (stdout) lines printed since the last call.
    pub fn output_lines(&self) -> Vec<String> {
        lock(&self.shared).new_lines.drain(..).collect()
    }

    /// The whole console log so far (last [`LOG_CAP`] lines).
    pub fn output_log(&self) -> Vec<String> {
        lock(&self.shared).log.iter().cloned().collect()
    }

    /// How the vehicle ended, if it did (exit or panic).
    pub fn exit_status(&self) -> Option<ExitStatus> {
        lock(&self.shared).exit
    }

    /// Whether the vehicle thread is still running.
    pub fn is_running(&self) -> bool {
        lock(&self.shared).running
    }

    /// Stop the vehicle, close its socket and join its thread.
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        let _ = self.tx.send(Ctl::Stop);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        lock(&self.shared).running = false;
    }
}

impl Drop for SimHandle {
    fn drop(&mut self) {
        self.shutdown();
    }
}

struct Server {
    vehicle: Vehicle,
    socket: UdpSocket,
    remote: SocketAddr,
    latched: bool,
    /// The first client heard before the mavlink module started: latched when it starts.
    early: Option<SocketAddr>,
    shared: Arc<Mutex<Shared>>,
    buf: Vec<u8>,
    out: [u8; DATAGRAM_LEN],
    /// The file of the vehicle's own log, while it can be written.
    ulog: Option<std::io::BufWriter<std::fs::File>>,
}

impl Server {
    fn run(&mut self, clock: ClockMode, rx: Receiver<Ctl>) {
        match clock {
            ClockMode::Lockstep => {
                let _ = self.socket.set_nonblocking(true);
                self.run_lockstep(rx);
            }
            ClockMode::RealTime { speed } => self.run_realtime(speed, rx),
        }
        self.publish();
        self.write_log();
        lock(&self.shared).running = false;
    }

    /// Advance the vehicle by `dt_us`.
    fn step(&mut self, dt_us: u64) {
        self.vehicle.step(dt_us);
    }

    /// Append what the vehicle's log gained to its file, flushed (the file is whole at every
    /// moment the log is); a failed write stops the file, and the console says so.
    fn write_log(&mut self) {
        let Some(file) = &mut self.ulog else {
            return;
        };
        let new = self.vehicle.take_flight_log_written();
        if new.is_empty() {
            return;
        }
        use std::io::Write as _;
        if let Err(e) = file.write_all(new).and_then(|()| file.flush()) {
            self.ulog = None;
            let mut s = lock(&self.shared);
            let line = format!("ERROR [logger] the vehicle's ULog file stopped: {e}");
            s.log.push_back(line.clone());
            s.new_lines.push_back(line);
        }
    }

    fn publish(&mut self) {
        let lines = self.vehicle.take_console();
        self.write_log();
        let mut s = lock(&self.shared);
        s.snapshot = self.vehicle.snapshot();
        s.exit = self.vehicle.exit_status();
        for l in lines {
            if s.log.len() == LOG_CAP {
                s.log.pop_front();
            }
            if s.new_lines.len() == LOG_CAP {
                s.new_lines.pop_front();
            }
            s.log.push_back(l.clone());
            s.new_lines.push_back(l);
        }
        s.client = self.latched.then_some(self.remote);
        s.frames_sent = self.vehicle.frames_total();
    }

    /// Receive everything waiting (the socket's mode decides whether the first read blocks).
    ///
    /// A client that spoke before the mavlink module started is latched when it starts, as if
    /// its datagram had waited in the socket (PX4 binds the port only then, so it would hear
    /// the client's next heartbeat, at most a second later): a client that speaks first at
    /// once — the launcher's link — is heard from the first heartbeat on, whatever the speed
    /// factor, and a lockstep run does not boot far ahead of it.
    fn receive(&mut self) {
        self.latch_early();
        loop {
            match self.socket.recv_from(&mut self.buf) {
                Ok((n, from)) => {
                    if !self.latched {
                        if self.vehicle.mavlink_is_up() {
                            self.latch(from);
                        } else if self.early.is_none() {
                            self.early = Some(from);
                        }
                    }
                    let data = &self.buf[..n];
                    self.vehicle.handle_datagram(data);
                    // Subsequent reads never block.
                    let _ = self.socket.set_nonblocking(true);
                }
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => break,
                // ICMP errors (port unreachable) surface here on some platforms: ignore.
                Err(_) => break,
            }
        }
    }

    /// Latch the client heard before the mavlink module started, once it has.
    fn latch_early(&mut self) {
        if let (false, Some(from)) = (self.latched, self.early) {
            if self.vehicle.mavlink_is_up() {
                self.latch(from);
            }
        }
    }

    /// Send to `from` for the life of the vehicle (PX4 latches its first client).
    fn latch(&mut self, from: SocketAddr) {
        self.latched = true;
        self.remote = from;
        self.vehicle.note_partner(from.ip().to_string());
    }

    fn flush(&mut self) {
        // The mavlink module's first frames already go to a client that spoke early.
        self.latch_early();
        while let Some(n) = self.vehicle.poll_transmit(&mut self.out) {
            // UDP: a full buffer or an absent listener loses the datagram, as on PX4.
            let _ = self.socket.send_to(&self.out[..n], self.remote);
        }
    }

    fn control(&mut self, c: Ctl, pacer: Option<&mut Pacer>) -> bool {
        match c {
            Ctl::Stop => return false,
            Ctl::SetSpeed(s) => {
                if let Some(p) = pacer {
                    p.set_speed(s, Instant::now(), self.vehicle.elapsed_us());
                }
            }
            Ctl::Inject(f) => self.vehicle.inject(f),
            Ctl::ClearFaults => self.vehicle.clear_faults(),
            Ctl::Step(_, reply) => {
                let _ = reply.send(Err(SimError::NotLockstep));
            }
        }
        true
    }

    fn run_realtime(&mut self, speed: f64, rx: Receiver<Ctl>) {
        let tick = self.vehicle.tick_us();
        let mut pacer = Pacer::new(speed, Instant::now(), 0);
        // Never a blocking read: a socket timeout is rounded up to a scheduler tick (~8 ms
        // here even when 100 µs is asked), which at ×100 is most of a second of sim time.
        let _ = self.socket.set_nonblocking(true);
        loop {
            loop {
                match rx.try_recv() {
                    Ok(c) => {
                        if !self.control(c, Some(&mut pacer)) {
                            return;
                        }
                    }
                    Err(mpsc::TryRecvError::Empty) => break,
                    Err(mpsc::TryRecvError::Disconnected) => return,
                }
            }
            let wall = Instant::now();
            pacer.rebase_if_behind(wall, self.vehicle.elapsed_us());
            let target = pacer.target_sim_us(wall);
            // Catching up after a preemption can be seconds of sim at ×500 (10 ms of wall is
            // 5 s): what the client sent meanwhile is taken in between the steps, at most
            // POLL_WALL apart, or a mission transfer would time out on the vehicle (PX4's 5 s
            // protocol timeout) with the client's answer waiting unread in the socket.
            let mut looked = wall;
            while self.vehicle.elapsed_us() + tick <= target && self.vehicle.exit_status().is_none()
            {
                self.step(tick);
                self.flush();
                let now = Instant::now();
                if now >= looked + POLL_WALL {
                    looked = now;
                    self.receive();
                }
            }
            self.publish();
            if self.vehicle.exit_status().is_some() {
                return;
            }
            // Until the next tick is due: take what arrives, sleeping (a precise timer) at
            // most POLL_WALL at a time so a datagram waits no longer than that; 20 ms at most
            // before the control channel is looked at again.
            let next = pacer.wall_at(self.vehicle.elapsed_us() + tick);
            let until = Instant::now()
                + next
                    .saturating_duration_since(Instant::now())
                    .min(Duration::from_millis(20));
            loop {
                self.receive();
                self.flush();
                let now = Instant::now();
                if now >= until {
                    break;
                }
                std::thread::sleep((until - now).min(POLL_WALL));
            }
        }
    }

    fn run_lockstep(&mut self, rx: Receiver<Ctl>) {
        loop {
            let c = match rx.recv_timeout(Duration::from_millis(200)) {
                Ok(c) => c,
                Err(RecvTimeoutError::Timeout) => continue,
                Err(RecvTimeoutError::Disconnected) => return,
            };
            match c {
                Ctl::Step(dt_us, reply) => {
                    let mut left = dt_us;
                    while left > 0 && self.vehicle.exit_status().is_none() {
                        let _ = self.socket.set_nonblocking(true);
                        self.receive();
                        let d = left.min(LOCKSTEP_IO_US);
                        self.step(d);
                        left -= d;
                        self.flush();
                    }
                    self.publish();
                    let r = match self.vehicle.exit_status() {
                        Some(e) => Err(SimError::Exited(e)),
                        None => Ok(self.vehicle.now_us() / 1000),
                    };
                    let _ = reply.send(r);
                    if self.vehicle.exit_status().is_some() {
                        return;
                    }
                }
                other => {
                    if !self.control(other, None) {
                        return;
                    }
                    self.publish();
                    if self.vehicle.exit_status().is_some() {
                        return;
                    }
                }
            }
        }
    }
}
