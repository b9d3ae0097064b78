//! MAVLink links from pymavlink-style connection strings, on mio.
//!
//! A [`ConnString`] (`udpin:0.0.0.0:14540`, `udpout:…`, `tcp:…`, `tcpin:…`, `serial:PATH:BAUD`)
//! opens a [`Link`]. One mio `Poll` holds any number of links; the pump drives each like this:
//!
//! ```no_run
//! use nexus_host::transport::{mio, ConnString, Link, RECV_BUF_LEN};
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let mut poll = mio::Poll::new()?;
//! let conn: ConnString = "udpin:0.0.0.0:14540".parse()?;
//! let mut link = Link::open(&conn)?;
//! link.register(poll.registry(), mio::Token(0))?;
//! let mut events = mio::Events::with_capacity(64);
//! let mut buf = vec![0u8; RECV_BUF_LEN];
//! loop {
//!     poll.poll(&mut events, None)?;
//!     for event in events.iter() {
//!         // Edge-triggered: drain until `Ok(None)`.
//!         while let Some(n) = link.recv(&mut buf)? {
//!             let _bytes = &buf[..n]; // feed the core's Decoder
//!         }
//!         link.flush()?; // stream links: what the kernel could not take earlier
//!         # let _ = event;
//!     }
//! #   break;
//! }
//! # Ok(())
//! # }
//! ```
//!
//! Datagram links (UDP) deliver one datagram per `recv`; stream links (TCP, serial) deliver
//! whatever bytes arrived, and the core's `Decoder` reassembles frames across calls. Links never
//! block, never reconnect by themselves, and never tear a frame: see [`SendOutcome`].

mod conn;
mod discover;
mod error;
mod peer;
mod serial;
mod stream;
mod tcp;
mod udp;

use std::io;
use std::net::SocketAddr;
use std::time::Duration;

pub use conn::{ConnString, ConnStringError, Problem, SCHEMES};
pub use discover::{discover, port_rule_hint};
pub use error::{LinkError, OpenError};
/// The mio version links register with (`Registry`, `Token`, `Poll`, `Waker`).
pub use mio;
pub use peer::{
    find_heartbeat, is_autopilot, scan_frames, ForeignCounts, ForeignSource, ForeignTraffic,
    PeerRule, SystemIds, FOREIGN_SOURCES,
};
pub use stream::OUT_QUEUE_LIMIT_BYTES;
pub use tcp::TCP_CONNECT_TIMEOUT;

use mio::{Interest, Registry, Token};

/// A receive buffer that holds any UDP datagram whole (a shorter one truncates big datagrams;
/// the MAVLink CRC then rejects the cut frame).
pub const RECV_BUF_LEN: usize = 65_536;

/// The UDP receive buffer asked for by default. PX4 at 10× speed sends ~5000 messages/s; 4 MiB
/// holds well over a second of them should the pump fall behind.
pub const DEFAULT_RECV_BUFFER_BYTES: usize = 4 * 1024 * 1024;

/// How a link is opened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkOptions {
    /// `SO_RCVBUF` to request on UDP sockets, in bytes (see [`Link::recv_buffer`]).
    pub recv_buffer_bytes: usize,
    /// How long `tcp:` waits at open for the server to accept.
    pub tcp_connect_timeout: Duration,
    /// UDP: which source is the peer (see [`PeerRule`]); stream links have one peer and
    /// ignore it. A vehicle link on the pump never follows the most recent sender: the pump
    /// turns [`PeerRule::MostRecent`] into the first autopilot heartbeat of its system.
    pub peer: PeerRule,
    /// `SO_SNDBUF` to request on TCP connections (`tcp:`, and each `tcpin:` peer), in bytes;
    /// `None`: the kernel's own, which grows with the connection (megabytes on loopback).
    /// A small one keeps a slow reader's backlog in [`Link::pending_bytes`], where the
    /// sender sees it, instead of in the kernel, where it only adds latency.
    pub send_buffer_bytes: Option<usize>,
}

impl Default for LinkOptions {
    fn default() -> Self {
        LinkOptions {
            recv_buffer_bytes: DEFAULT_RECV_BUFFER_BYTES,
            tcp_connect_timeout: TCP_CONNECT_TIMEOUT,
            peer: PeerRule::default(),
            send_buffer_bytes: None,
        }
    }
}

/// Whether one `recv` is one datagram (UDP: whole frames, never joined with the next) or a
/// slice of a byte stream (TCP, serial: frames span calls): the core's own
/// [`nexus_core::link::Framing`], which [`Link::framing`] hands the client with every read.
pub use nexus_core::link::Framing;

/// What happened to one `send`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive] // more variants may come; match with a `_` arm
pub enum SendOutcome {
    /// Handed to the kernel whole.
    Sent,
    /// Stream links: part or all of it waits in the link's queue (bounded by
    /// [`OUT_QUEUE_LIMIT_BYTES`]) and goes out on [`Link::flush`] when the link is writable.
    Queued,
    /// Nobody to send to yet: `udpin` before the first datagram arrived, `tcpin` without a
    /// connected peer. Nothing was sent.
    NoPeer,
    /// The link is congested (UDP send buffer full, stream queue full): the whole frame was
    /// dropped, never a part of it.
    Dropped,
}

/// The UDP receive buffer: what was asked for and what the OS granted, in bytes.
///
/// Linux caps `SO_RCVBUF` at `net.core.rmem_max` (often 208 KiB); the link then tries
/// `SO_RCVBUFFORCE`, which needs `CAP_NET_ADMIN`. When `granted_bytes < requested_bytes`, raise
/// the limit (`sysctl -w net.core.rmem_max=8388608`) or expect loss at high speed factors.
/// Linux's own report is twice the value set (bookkeeping allowance); this is halved to match.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive] // more fields may come
pub struct RecvBuffer {
    /// Bytes requested.
    pub requested_bytes: usize,
    /// Bytes in effect, in the same unit as `requested_bytes`.
    pub granted_bytes: usize,
}

/// One open MAVLink link, ready to be registered with a mio [`Registry`].
///
/// All calls are non-blocking. The link is `Send`: open it anywhere, move it to the pump.
#[derive(Debug)]
pub struct Link {
    conn: ConnString,
    inner: Inner,
}

#[derive(Debug)]
enum Inner {
    Udp(udp::UdpLink),
    Tcp(tcp::TcpClient),
    TcpIn(tcp::TcpServer),
    Serial(serial::SerialLink),
}

impl Link {
    /// Open a link with the default [`LinkOptions`].
    pub fn open(conn: &ConnString) -> Result<Link, OpenError> {
        Link::open_with(conn, &LinkOptions::default())
    }

    /// Parse `conn` and open it with the default options.
    pub fn open_str(conn: &str) -> Result<Link, LinkError> {
        Ok(Link::open(&conn.parse()?)?)
    }

    /// Open a link: bind, connect or open the device now, so every OS error surfaces here.
    pub fn open_with(conn: &ConnString, options: &LinkOptions) -> Result<Link, OpenError> {
        let rcvbuf = options.recv_buffer_bytes;
        let inner = match conn {
            ConnString::UdpIn { host, port } => {
                let mut u = udp::UdpLink::open_in(conn, host, *port, rcvbuf)?;
                u.set_rule(options.peer);
                Inner::Udp(u)
            }
            ConnString::UdpOut { host, port } => {
                let mut u = udp::UdpLink::open_out(conn, host, *port, rcvbuf)?;
                u.set_rule(options.peer);
                Inner::Udp(u)
            }
            ConnString::Tcp { host, port } => Inner::Tcp(tcp::TcpClient::open(
                conn,
                host,
                *port,
                options.tcp_connect_timeout,
                options.send_buffer_bytes,
            )?),
            ConnString::TcpIn { host, port } => Inner::TcpIn(tcp::TcpServer::open(
                conn,
                host,
                *port,
                options.send_buffer_bytes,
            )?),
            ConnString::Serial { path, baud } => {
                Inner::Serial(serial::SerialLink::open(conn, path, *baud)?)
            }
        };
        Ok(Link {
            conn: conn.clone(),
            inner,
        })
    }

    /// The connection string this link was opened from.
    pub fn conn(&self) -> &ConnString {
        &self.conn
    }

    /// Datagram (UDP) or byte stream (TCP, serial).
    pub fn framing(&self) -> Framing {
        match self.inner {
            Inner::Udp(_) => Framing::Datagram,
            _ => Framing::Stream,
        }
    }

    /// Register with a poll under `token`: readable, and writable for stream links. On a
    /// readiness event the pump calls [`Link::recv`] until `Ok(None)`, then [`Link::flush`].
    /// A `tcpin` link keeps a clone of `registry` to register the peers it accepts later.
    pub fn register(&mut self, registry: &Registry, token: Token) -> io::Result<()> {
        match &mut self.inner {
            Inner::Udp(u) => registry.register(&mut u.socket, token, Interest::READABLE),
            Inner::Tcp(t) => t.register(registry, token),
            Inner::TcpIn(s) => s.register(registry, token),
            Inner::Serial(s) => s.register(registry, token),
        }
    }

    /// Remove the link from the poll it was registered with.
    pub fn deregister(&mut self, registry: &Registry) -> io::Result<()> {
        match &mut self.inner {
            Inner::Udp(u) => registry.deregister(&mut u.socket),
            Inner::Tcp(t) => registry.deregister(&mut t.stream),
            Inner::TcpIn(s) => s.deregister(registry),
            Inner::Serial(s) => s.deregister(registry),
        }
    }

    /// Read what has arrived: `Ok(Some(n))` bytes in `buf[..n]` (one datagram for UDP),
    /// `Ok(None)` when nothing is left (the poll will say when more comes).
    ///
    /// A UDP link under a latching [`PeerRule`] delivers only its peer's datagrams; others are
    /// counted in [`Link::foreign`]. After setting aside many in one call it returns
    /// `Ok(Some(0))` (nothing for the caller, more may be waiting: call again), so a flood
    /// never holds the caller inside one call.
    ///
    /// Errors mean the link is lost: a `tcp:` server closed or reset the connection, a serial
    /// device hung up. They repeat on every later call; the link does not reconnect. A `tcpin`
    /// peer leaving is not an error: the link waits for the next one.
    pub fn recv(&mut self, buf: &mut [u8]) -> io::Result<Option<usize>> {
        if buf.is_empty() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "Link::recv needs a non-empty buffer",
            ));
        }
        match &mut self.inner {
            Inner::Udp(u) => u.recv(buf),
            Inner::Tcp(t) => t.recv(buf),
            Inner::TcpIn(s) => s.recv(buf),
            Inner::Serial(s) => s.recv(buf),
        }
    }

    /// Send one frame (or datagram). Never blocks and never sends part of a frame without the
    /// rest following; see [`SendOutcome`].
    pub fn send(&mut self, frame: &[u8]) -> io::Result<SendOutcome> {
        match &mut self.inner {
            Inner::Udp(u) => u.send(frame),
            Inner::Tcp(t) => t.send(frame),
            Inner::TcpIn(s) => s.send(frame),
            Inner::Serial(s) => s.send(frame),
        }
    }

    /// Stream links: write queued bytes the kernel can take now (call on writable readiness;
    /// harmless at any time). Datagram links queue nothing.
    pub fn flush(&mut self) -> io::Result<()> {
        match &mut self.inner {
            Inner::Udp(_) => Ok(()),
            Inner::Tcp(t) => t.flush(),
            Inner::TcpIn(s) => s.flush(),
            Inner::Serial(s) => s.flush(),
        }
    }

    /// Bytes waiting in the outgoing queue of a stream link (0 for UDP).
    pub fn pending_bytes(&self) -> usize {
        match &self.inner {
            Inner::Udp(_) => 0,
            Inner::Tcp(t) => t.pending_bytes(),
            Inner::TcpIn(s) => s.pending_bytes(),
            Inner::Serial(s) => s.pending_bytes(),
        }
    }

    /// Where `send` goes now: the `udpin` peer (latched, or the most recent sender under
    /// [`PeerRule::MostRecent`]), the `udpout` or `tcp`
    /// destination, the connected `tcpin` peer; `None` for serial or before there is a peer.
    pub fn peer(&self) -> Option<SocketAddr> {
        match &self.inner {
            Inner::Udp(u) => u.peer(),
            Inner::Tcp(t) => Some(t.peer()),
            Inner::TcpIn(s) => s.peer(),
            Inner::Serial(_) => None,
        }
    }

    /// How this link picks its peer ([`PeerRule::MostRecent`] for stream links, which have
    /// one peer by construction).
    pub fn peer_rule(&self) -> PeerRule {
        match &self.inner {
            Inner::Udp(u) => u.rule,
            _ => PeerRule::MostRecent,
        }
    }

    /// Change how a UDP link picks its peer (before its first `recv`, or it may have taken a
    /// peer the new rule would not); stream links ignore it.
    pub fn set_peer_rule(&mut self, rule: PeerRule) {
        if let Inner::Udp(u) = &mut self.inner {
            u.set_rule(rule);
        }
    }

    /// What a UDP link received from sources other than its peer and did not deliver;
    /// `None` for stream links.
    pub fn foreign(&self) -> Option<&ForeignTraffic> {
        match &self.inner {
            Inner::Udp(u) => Some(&u.foreign),
            _ => None,
        }
    }

    /// Counts peer changes: a new `udpin` sender, a new `tcpin` connection. A stream link's new
    /// peer starts a new byte stream, so the pump resets its decoder when this changes.
    pub fn peer_epoch(&self) -> u64 {
        match &self.inner {
            Inner::Udp(u) => u.epoch,
            Inner::TcpIn(s) => s.epoch,
            Inner::Tcp(_) | Inner::Serial(_) => 1,
        }
    }

    /// The bound local address of a socket link (with the OS-chosen port when 0 was asked).
    pub fn local_addr(&self) -> Option<SocketAddr> {
        match &self.inner {
            Inner::Udp(u) => u.socket.local_addr().ok(),
            Inner::Tcp(t) => t.stream.local_addr().ok(),
            Inner::TcpIn(s) => s.listener.local_addr().ok(),
            Inner::Serial(_) => None,
        }
    }

    /// The UDP receive buffer requested and granted; `None` for other links.
    pub fn recv_buffer(&self) -> Option<RecvBuffer> {
        match &self.inner {
            Inner::Udp(u) => Some(u.recv_buffer),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    /// The pump opens links on a user thread and moves them to its own.
    #[test]
    fn links_can_move_between_threads() {
        fn send<T: Send>() {}
        send::<super::Link>();
        send::<super::OpenError>();
    }
}
