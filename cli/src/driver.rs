//! A small single-threaded loop around one link, for `nexus watch`: the transport [`Link`], the
//! core [`Decoder`] and a core client, driven the way the core asks (handle every frame, send
//! what is due, wake at the next deadline), plus a copy of every STATUSTEXT.
//!
//! `fly` and `run` fly on the host pump instead (through a [`nexus_host::run::Run`]), which adds the
//! run's supervision; a watcher commands nothing and needs none of it.

use super::CliClient;
use nexus_core::client::ClientConfig;
use nexus_core::frame::{Decoder, MAX_FRAME_LEN};
use nexus_core::telemetry::LinkIds;
use nexus_core::{Frame, Instant};
use nexus_host::transport::{mio, Link, OpenError, RECV_BUF_LEN};
use std::io;
use std::time::Duration;

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
    texts: Vec<TextRecord>,
    epoch: u64,
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
        mut link: Link,
        ids: LinkIds,
        origin: std::time::Instant,
    ) -> Result<Driver, OpenError> {
        let conn = link.conn().clone();
        let poll =
            mio::Poll::new().map_err(|e| OpenError::new(&conn, "cannot create the I/O poll", e))?;
        link.register(poll.registry(), mio::Token(0))
            .map_err(|e| OpenError::new(&conn, "cannot register the link with the I/O poll", e))?;
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
            origin,
            texts: Vec::new(),
            epoch: 0,
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

    /// Every STATUSTEXT so far.
    pub fn texts(&self) -> &[TextRecord] {
        &self.texts
    }

    /// Run the loop until something arrives or `max` passes (at most 50 ms): read and handle
    /// every frame, send what is due (our heartbeat), copy new texts, drop the core's events
    /// (a watcher registers no waits). Errors are the link's: it is lost.
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
        while self.client.poll_event().is_some() {}
        Ok(())
    }

    fn read_all(&mut self) -> io::Result<()> {
        while let Some(n) = self.link.recv(&mut self.rx)? {
            let epoch = self.link.peer_epoch();
            if epoch != self.epoch {
                // A new peer starts a new byte stream.
                self.epoch = epoch;
                self.decoder = Decoder::new();
            }
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
                if let Some(t) = &self.tlog {
                    t.record(nexus_host::tlog::Direction::Received, raw.bytes);
                }
                let now = Instant::from_micros(self.origin.elapsed().as_micros() as u64);
                if let Some(s) = &mut self.signing {
                    if !s.check(now, &raw).accepted() {
                        continue;
                    }
                }
                let Ok(Some(frame)) = Frame::decode(&raw) else {
                    continue;
                };
                self.client.handle(now, &frame);
                while let Some(len) = self.client.poll_transmit(now, &mut self.tx) {
                    let len = sign(self.signing.as_mut(), now, &mut self.tx, len);
                    send(&mut self.link, &self.tx[..len], self.tlog.as_ref());
                }
            }
            self.copy_texts();
        }
        self.link.flush()
    }

    fn transmit(&mut self) {
        let now = self.now();
        while let Some(len) = self.client.poll_transmit(now, &mut self.tx) {
            let len = sign(self.signing.as_mut(), now, &mut self.tx, len);
            send(&mut self.link, &self.tx[..len], self.tlog.as_ref());
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
