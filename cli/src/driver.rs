//! A small single-threaded loop around one link, for `nexus watch`: the transport [`Link`] and
//! a core client, the loop only moving bytes (each read to the client as the transport read
//! it, what it gives sent, a sleep until its deadline), plus a copy of every STATUSTEXT.
//!
//! `fly` and `run` fly on the host pump instead (through a [`nexus_host::run::Run`]), which adds the
//! run's supervision; a watcher commands nothing and needs none of it.

use super::CliClient;
use nexus_core::client::ClientConfig;
use nexus_core::frame::{RawFrame, MAX_FRAME_LEN};
use nexus_core::link::{Reads, Tap};
use nexus_core::telemetry::LinkIds;
use nexus_core::Instant;
use nexus_host::transport::{mio, Link, OpenError, RECV_BUF_LEN};
use std::io;
use std::time::Duration;

/// Longest single sleep, so the caller's display stays live.
const MAX_SLEEP: Duration = Duration::from_millis(50);

/// Silence after which the status line says so (the core's supervision of the link).
pub const SILENT_AFTER: nexus_core::Duration = nexus_core::Duration::from_millis(2000);

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
    rx: Vec<u8>,
    tx: [u8; MAX_FRAME_LEN],
    client: Box<CliClient>,
    origin: std::time::Instant,
    texts: Vec<TextRecord>,
    epoch: u64,
    /// Times the loop woke for the client's deadline (nothing arrived before it).
    wakes: u64,
    /// Notices a loop that was not running (`nexus watch` stopped and continued).
    pause: nexus_host::pump::PauseDetector,
    /// Where every frame received and sent is recorded (`watch --tlog`).
    pub tlog: Option<nexus_host::tlog::Tlog>,
    /// Sign what is sent and verify what is received (`watch --signing-key`): a frame failing
    /// the check is recorded in the tlog and counted, never handled.
    pub signing: Option<nexus_host::signing::LinkSigning>,
}

impl Driver {
    /// Drive an open `link` (not registered with any poll) for the vehicle `ids` names.
    pub fn from_link(link: Link, ids: LinkIds) -> Result<Driver, OpenError> {
        Self::from_link_since(link, ids, std::time::Instant::now())
    }

    /// [`Driver::from_link`] whose clock reads zero at `origin` (the zero of a signing clock
    /// made before the driver).
    pub fn from_link_since(
        link: Link,
        ids: LinkIds,
        origin: std::time::Instant,
    ) -> Result<Driver, OpenError> {
        Self::with_stall(link, ids, origin, SILENT_AFTER)
    }

    /// [`Driver::from_link_since`] reporting silence after `stall` (driver time) instead of
    /// [`SILENT_AFTER`].
    pub fn with_stall(
        mut link: Link,
        ids: LinkIds,
        origin: std::time::Instant,
        stall: nexus_core::Duration,
    ) -> Result<Driver, OpenError> {
        let conn = link.conn().clone();
        let poll =
            mio::Poll::new().map_err(|e| OpenError::new(&conn, "cannot create the I/O poll", e))?;
        link.register(poll.registry(), mio::Token(0))
            .map_err(|e| OpenError::new(&conn, "cannot register the link with the I/O poll", e))?;
        let mut client = Box::new(CliClient::new(ClientConfig {
            ids,
            stall: Some(stall),
            ..ClientConfig::default()
        }));
        // A tlog holds every frame the vehicle sent.
        client.set_reads(Reads::All);
        Ok(Driver {
            poll,
            events: mio::Events::with_capacity(64),
            link,
            rx: vec![0u8; RECV_BUF_LEN],
            tx: [0u8; MAX_FRAME_LEN],
            client,
            origin,
            texts: Vec::new(),
            epoch: 0,
            wakes: 0,
            pause: Default::default(),
            tlog: None,
            signing: None,
        })
    }

    /// The driver's clock, as the core counts it.
    pub fn now(&self) -> Instant {
        Instant::from_micros(self.origin.elapsed().as_micros() as u64)
    }

    /// The core client (telemetry and queries).
    pub fn client(&self) -> &CliClient {
        &self.client
    }

    /// The link (its peer, and what sources other than the vehicle sent).
    pub fn link(&self) -> &Link {
        &self.link
    }

    /// Times the loop woke for the client's deadline, nothing having arrived before it (a
    /// loop that never spins wakes only as often as the client has something to do).
    pub fn wakes(&self) -> u64 {
        self.wakes
    }

    /// Every STATUSTEXT so far.
    pub fn texts(&self) -> &[TextRecord] {
        &self.texts
    }

    /// Run the loop until something arrives or `max` passes (at most 50 ms): hand every read
    /// to the client, send what is due (our heartbeat), copy new texts, drop the core's events
    /// (a watcher registers no waits; silence shows in the status line). Errors are the
    /// link's: it is lost.
    pub fn step(&mut self, max: Duration) -> io::Result<()> {
        let now = self.now();
        self.paused(now);
        let mut sleep = max.min(MAX_SLEEP);
        let mut for_deadline = false;
        if let Some(d) = self.client.next_deadline() {
            let until = Duration::from_micros(d.saturating_since(now).total_micros());
            for_deadline = until <= sleep;
            sleep = sleep.min(until);
        }
        let sleep = self.pause.sleep(now, Some(sleep)).unwrap_or(sleep);
        match self.poll.poll(&mut self.events, Some(sleep)) {
            Ok(()) => {
                if for_deadline && self.events.is_empty() {
                    self.wakes += 1;
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
        self.paused(self.now());
        while let Some(n) = self.link.recv(&mut self.rx)? {
            let epoch = self.link.peer_epoch();
            if epoch != self.epoch {
                self.epoch = epoch;
                self.client.restart_framer();
            }
            let (now, framing) = (self.now(), self.link.framing());
            let mut tap = WatchTap {
                tlog: self.tlog.as_ref(),
                signing: self.signing.as_mut(),
            };
            self.client
                .handle_bytes(now, &self.rx[..n], framing, &mut tap);
            self.transmit();
        }
        self.transmit();
        while self.client.poll_event().is_some() {}
        self.copy_texts();
        // The caller steps again at once: a step that comes much later means it was stopped.
        self.pause.sleep(self.now(), Some(Duration::ZERO));
        self.link.flush()
    }

    /// Back much later than planned, the loop was not running (the process was stopped, in
    /// its sleep or between steps): its own absence is not the vehicle's silence.
    fn paused(&mut self, now: Instant) {
        if let Some(late_us) = self.pause.late_us(now) {
            self.client
                .after_pause(now, nexus_core::Duration::from_micros(late_us));
        }
    }

    fn transmit(&mut self) {
        let now = self.now();
        while let Some(len) = self.client.poll_transmit(now, &mut self.tx) {
            let len = sign(self.signing.as_mut(), now, &mut self.tx, len);
            send(&mut self.link, &self.tx[..len], self.tlog.as_ref());
        }
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
}

/// What the watcher does with each frame on its way in: the tlog records it, the signature
/// check (`--signing-key`) admits it or not (a refused frame is recorded and counted, never
/// handled).
struct WatchTap<'a> {
    tlog: Option<&'a nexus_host::tlog::Tlog>,
    signing: Option<&'a mut nexus_host::signing::LinkSigning>,
}

impl Tap for WatchTap<'_> {
    fn admit(&mut self, now: Instant, raw: &RawFrame<'_>) -> bool {
        if let Some(t) = self.tlog {
            t.record(nexus_host::tlog::Direction::Received, raw.bytes);
        }
        self.signing
            .as_mut()
            .is_none_or(|s| s.check(now, raw).accepted())
    }
}

/// `tx[..len]` signed in place when the link signs; its length.
fn sign(
    signing: Option<&mut nexus_host::signing::LinkSigning>,
    now: Instant,
    tx: &mut [u8],
    len: usize,
) -> usize {
    signing.map_or(len, |s| s.sign(now, tx, len))
}

/// Send `frame` on `link`, recorded in `tlog` when the link took it.
fn send(link: &mut Link, frame: &[u8], tlog: Option<&nexus_host::tlog::Tlog>) {
    use nexus_host::transport::SendOutcome;
    let sent = matches!(
        link.send(frame),
        Ok(SendOutcome::Sent | SendOutcome::Queued)
    );
    if let (true, Some(t)) = (sent, tlog) {
        t.record(nexus_host::tlog::Direction::Sent, frame);
    }
}
