//! One vehicle link driven on the command's own thread: the transport [`Link`], the core
//! [`Decoder`] and the core client, in the loop the core asks for (handle every frame, send
//! what is due, wake at the next deadline), plus the supervision a flight needs (the vehicle
//! exiting, the link going silent, the autopilot clock stopping), and a copy of every
//! STATUSTEXT for the report.
//!
//! A command drives one vehicle and does nothing else while it flies, so a single thread that
//! alternates between this loop and its own display is all it needs; reactions are still
//! applied by the core inside the `handle` call that meets their condition, and their frames
//! are sent before the next datagram is read.

use super::vehicle::Vehicle;
use super::CliClient;
use crate::launcher::DeathCause;
use crate::transport::{mio, ConnString, Link, OpenError, RECV_BUF_LEN};
use nexus_core::client::{ClientConfig, Event};
use nexus_core::frame::{Decoder, MAX_FRAME_LEN};
use nexus_core::telemetry::LinkIds;
use nexus_core::{Frame, Instant};
use std::collections::VecDeque;
use std::io;
use std::time::Duration;

/// Silence from the vehicle (or a stopped autopilot clock while messages flow) after which it
/// counts as dead, wall seconds.
pub const DEFAULT_STALL: Duration = Duration::from_secs(10);

/// Longest single sleep, so the caller's display stays live.
const MAX_SLEEP: Duration = Duration::from_millis(50);

/// A STATUSTEXT the vehicle sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextRecord {
    /// Sequence number (from 1).
    pub seq: u32,
    /// MAV_SEVERITY (0 emergency … 7 debug).
    pub severity: u8,
    /// Autopilot clock when it completed, ms.
    pub sim_ms: Option<u64>,
    /// The text.
    pub text: String,
}

/// The loop around one link.
pub struct Driver {
    poll: mio::Poll,
    events: mio::Events,
    link: Link,
    decoder: Decoder,
    rx: Vec<u8>,
    tx: [u8; MAX_FRAME_LEN],
    client: Box<CliClient>,
    origin: std::time::Instant,
    vehicle: Option<Vehicle>,
    queue: VecDeque<Event>,
    texts: Vec<TextRecord>,
    epoch: u64,
    last_rx: Option<std::time::Instant>,
    clock_seen: Option<(u64, std::time::Instant)>,
    stall: Option<Duration>,
    died: Option<String>,
    notes: Vec<String>,
    speed: Option<f64>,
}

impl Driver {
    /// Open `conn` for a vehicle with `ids`; `vehicle` (when we started it) is supervised.
    pub fn open(
        conn: &ConnString,
        ids: LinkIds,
        vehicle: Option<Vehicle>,
    ) -> Result<Driver, OpenError> {
        let link = Link::open(conn)?;
        Self::from_link(link, ids, vehicle)
    }

    /// Drive an already open `link` (not registered with any poll).
    pub fn from_link(
        mut link: Link,
        ids: LinkIds,
        vehicle: Option<Vehicle>,
    ) -> Result<Driver, OpenError> {
        let conn = link.conn().clone();
        let conn = &conn;
        let poll =
            mio::Poll::new().map_err(|e| OpenError::new(conn, "cannot create the I/O poll", e))?;
        link.register(poll.registry(), mio::Token(0))
            .map_err(|e| OpenError::new(conn, "cannot register the link with the I/O poll", e))?;
        let client = Box::new(CliClient::new(ClientConfig {
            ids,
            ..ClientConfig::default()
        }));
        Ok(Driver {
            poll,
            events: mio::Events::with_capacity(64),
            link,
            decoder: Decoder::new(),
            rx: vec![0u8; RECV_BUF_LEN],
            tx: [0u8; MAX_FRAME_LEN],
            client,
            origin: std::time::Instant::now(),
            vehicle,
            queue: VecDeque::new(),
            texts: Vec::new(),
            epoch: 0,
            last_rx: None,
            clock_seen: None,
            stall: Some(DEFAULT_STALL),
            died: None,
            notes: Vec::new(),
            speed: None,
        })
    }

    /// Count the vehicle dead after this much silence (or a stopped clock), wall; `None`:
    /// never (a watcher that only reports).
    pub fn set_stall(&mut self, stall: Option<Duration>) {
        self.stall = stall;
    }

    /// The driver's clock, as the core counts it.
    pub fn now(&self) -> Instant {
        Instant::from_micros(self.origin.elapsed().as_micros() as u64)
    }

    /// The core client (queries; verbs through [`Driver::client_mut`]).
    pub fn client(&self) -> &CliClient {
        &self.client
    }

    /// The core client, to call verbs, register waits, start programs. Call
    /// [`Driver::step`] afterwards: it sends what they queued.
    pub fn client_mut(&mut self) -> &mut CliClient {
        &mut self.client
    }

    /// The vehicle we supervise, if we started it.
    pub fn vehicle(&self) -> Option<&Vehicle> {
        self.vehicle.as_ref()
    }

    /// Every STATUSTEXT so far.
    pub fn texts(&self) -> &[TextRecord] {
        &self.texts
    }

    /// Why the vehicle died, once it has.
    pub fn died(&self) -> Option<&str> {
        self.died.as_deref()
    }

    /// Things that happened that the report should mention (a speed-up the vehicle could not
    /// take, …).
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// The speed factor last applied by a speed-up, if any.
    pub fn speed_applied(&self) -> Option<f64> {
        self.speed
    }

    /// The next event the core reported (speed-ups were already applied to the vehicle).
    pub fn next_event(&mut self) -> Option<Event> {
        self.queue.pop_front()
    }

    /// Run the loop until something arrives or `max` passes (at most 50 ms): read and handle
    /// every frame, send what is due, collect events and texts, supervise the vehicle.
    pub fn step(&mut self, max: Duration) -> io::Result<()> {
        self.transmit();
        let now = self.now();
        let mut sleep = max.min(MAX_SLEEP);
        if let Some(d) = self.client.next_deadline() {
            let until = d.total_micros().saturating_sub(now.total_micros());
            sleep = sleep.min(Duration::from_micros(until));
        }
        match self.poll.poll(&mut self.events, Some(sleep)) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
        if !self.events.is_empty() {
            self.read_all()?;
        }
        self.transmit();
        self.collect();
        self.supervise();
        self.collect();
        Ok(())
    }

    /// Step until the vehicle's heartbeat and clock are known, or `timeout` (wall) passes.
    pub fn wait_connected(&mut self, timeout: Duration) -> io::Result<bool> {
        let start = std::time::Instant::now();
        while start.elapsed() < timeout {
            self.step(timeout.saturating_sub(start.elapsed()))?;
            let tel = self.client.telemetry();
            if tel.connected() && tel.sim_ms().is_some() {
                return Ok(true);
            }
            if self.died.is_some() {
                return Ok(false);
            }
        }
        Ok(false)
    }

    fn read_all(&mut self) -> io::Result<()> {
        loop {
            let n = match self.link.recv(&mut self.rx) {
                Ok(Some(n)) => n,
                Ok(None) => break,
                Err(e) => {
                    let why = format!("the link to the vehicle failed: {e}");
                    self.die(why);
                    return Ok(());
                }
            };
            let epoch = self.link.peer_epoch();
            if epoch != self.epoch {
                // A new peer starts a new byte stream.
                self.epoch = epoch;
                self.decoder = Decoder::new();
            }
            let height = self.vehicle.as_ref().and_then(Vehicle::true_height_m);
            self.client.set_true_height_m(height);
            let mut input = &self.rx[..n];
            while !input.is_empty() {
                let (used, raw) = self.decoder.feed(input);
                input = &input[used..];
                let Some(raw) = raw else {
                    if used == 0 {
                        break;
                    }
                    continue;
                };
                let Ok(Some(frame)) = Frame::decode(&raw) else {
                    continue;
                };
                let now = Instant::from_micros(self.origin.elapsed().as_micros() as u64);
                if self.client.handle(now, &frame) {
                    self.last_rx = Some(std::time::Instant::now());
                }
                // Reaction frames go out before the next frame is read.
                while let Some(len) = self.client.poll_transmit(now, &mut self.tx) {
                    let _ = self.link.send(&self.tx[..len]);
                }
            }
            self.copy_texts();
        }
        self.link.flush()
    }

    fn transmit(&mut self) {
        let now = self.now();
        while let Some(len) = self.client.poll_transmit(now, &mut self.tx) {
            let _ = self.link.send(&self.tx[..len]);
        }
        let _ = self.link.flush();
    }

    fn copy_texts(&mut self) {
        let last = self.texts.last().map_or(0, |t| t.seq);
        for t in self.client.telemetry().texts().after(last) {
            self.texts.push(TextRecord {
                seq: t.seq,
                severity: t.severity,
                sim_ms: t.sim_ms,
                text: t.text.as_str().to_string(),
            });
        }
    }

    fn collect(&mut self) {
        while let Some(ev) = self.client.poll_event() {
            if let Event::Speedup(f) = ev {
                let f = f as f64;
                match self.vehicle.as_ref().map(|v| v.set_speed(f)) {
                    Some(Ok(())) => self.speed = Some(f),
                    Some(Err(e)) => self.notes.push(format!("speed-up ×{f} not applied: {e}")),
                    None => self.notes.push(format!(
                        "speed-up ×{f} not applied: no simulator to speed up"
                    )),
                }
            }
            self.queue.push_back(ev);
        }
    }

    fn supervise(&mut self) {
        if self.died.is_some() {
            return;
        }
        if let Some(why) = self.vehicle.as_ref().and_then(Vehicle::death) {
            self.die(why);
            return;
        }
        let (Some(last_rx), Some(stall)) = (self.last_rx, self.stall) else {
            return;
        };
        let silent = last_rx.elapsed();
        if silent >= stall {
            let cause = DeathCause::LinkSilent {
                silent_s: silent.as_secs_f32(),
            };
            let why = match &self.vehicle {
                Some(v) => v.declare_dead(cause),
                None => format!(
                    "link silent for {:.1} s: no MAVLink from the vehicle",
                    silent.as_secs_f32()
                ),
            };
            self.die(why);
            return;
        }
        let Some(sim) = self.client.telemetry().sim_ms() else {
            return;
        };
        match self.clock_seen {
            Some((ms, since)) if ms == sim => {
                let stalled = since.elapsed();
                if stalled >= stall {
                    let cause = DeathCause::ClockStalled {
                        stalled_s: stalled.as_secs_f32(),
                    };
                    let why = match &self.vehicle {
                        Some(v) => v.declare_dead(cause),
                        None => cause.to_string(),
                    };
                    self.die(why);
                }
            }
            _ => self.clock_seen = Some((sim, std::time::Instant::now())),
        }
    }

    /// End every wait with `died` and `why` (an I/O error the caller saw, …).
    pub fn declare_died(&mut self, why: String) {
        self.die(why);
    }

    fn die(&mut self, why: String) {
        if self.died.is_none() {
            let now = self.now();
            self.client.died(now, &why);
            self.died = Some(why);
        }
    }
}
