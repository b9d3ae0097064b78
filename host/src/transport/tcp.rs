//! TCP links: `tcp` (client) and `tcpin` (server). They carry a byte stream; the core's
//! `Decoder` reassembles frames across `recv` calls.
//!
//! * **Client** (`tcp:`): connects at open (blocking, at most the connect timeout, so a refused
//!   or unreachable server is an [`OpenError`] the caller sees at once), then non-blocking with
//!   `TCP_NODELAY`. **No reconnect**: when the server closes or resets the connection `recv`
//!   returns an error (and keeps returning it), and the pump reports the link lost. Re-opening
//!   is a decision for the caller, who knows whether the vehicle state still holds.
//! * **Server** (`tcpin:`): `SO_REUSEADDR` (a restarted program can take its port back while old
//!   connections sit in `TIME_WAIT`); one peer at a time, and **the latest connection wins**: a
//!   new connection replaces the current one, which is closed. This is what a router or an
//!   autopilot that restarts and reconnects needs (a half-open old connection never locks it
//!   out), and a byte stream cannot merge two MAVLink peers anyway. When the peer leaves, the
//!   link waits for the next one; `send` reports [`SendOutcome::NoPeer`] meanwhile.
//!   [`super::Link::peer_epoch`] changes on every new peer, so the pump can reset its decoder.

use std::io::{self, Read};
use std::net::SocketAddr;
use std::time::Duration;

use mio::{Interest, Registry, Token};
use socket2::{Domain, Protocol, Socket, Type};

use super::stream::OutQueue;
use super::udp::resolve;
use super::{ConnString, OpenError, SendOutcome};

/// How long `tcp:` waits for the server to accept the connection at open.
pub const TCP_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

const STREAM_INTEREST: Interest = Interest::READABLE.add(Interest::WRITABLE);

/// Ask for `SO_SNDBUF` = `bytes` on `stream` (nothing when `None`).
fn set_send_buffer(stream: &impl std::os::fd::AsFd, bytes: Option<usize>) -> io::Result<()> {
    match bytes {
        Some(n) => socket2::SockRef::from(stream).set_send_buffer_size(n),
        None => Ok(()),
    }
}

#[derive(Debug)]
pub(crate) struct TcpClient {
    pub(crate) stream: mio::net::TcpStream,
    out: OutQueue,
    peer: SocketAddr,
    lost: Option<io::ErrorKind>,
}

impl TcpClient {
    pub(crate) fn open(
        conn: &ConnString,
        host: &str,
        port: u16,
        timeout: Duration,
        send_buffer_bytes: Option<usize>,
    ) -> Result<Self, OpenError> {
        let peer = resolve(conn, host, port)?;
        let std_stream = std::net::TcpStream::connect_timeout(&peer, timeout)
            .map_err(|e| OpenError::new(conn, format!("cannot connect to TCP {peer}"), e))?;
        let setup = |s: &std::net::TcpStream| -> io::Result<()> {
            s.set_nodelay(true)?;
            set_send_buffer(s, send_buffer_bytes)?;
            s.set_nonblocking(true)
        };
        setup(&std_stream)
            .map_err(|e| OpenError::new(conn, "cannot configure the TCP connection", e))?;
        Ok(TcpClient {
            stream: mio::net::TcpStream::from_std(std_stream),
            out: OutQueue::default(),
            peer,
            lost: None,
        })
    }

    pub(crate) fn peer(&self) -> SocketAddr {
        self.peer
    }

    pub(crate) fn pending_bytes(&self) -> usize {
        self.out.len()
    }

    fn lost_error(&self) -> Option<io::Error> {
        self.lost.map(|kind| {
            io::Error::new(
                kind,
                format!(
                    "TCP connection to {} lost; this link does not reconnect",
                    self.peer
                ),
            )
        })
    }

    fn lose(&mut self, e: io::Error) -> io::Error {
        self.lost = Some(e.kind());
        e
    }

    pub(crate) fn recv(&mut self, buf: &mut [u8]) -> io::Result<Option<usize>> {
        if let Some(e) = self.lost_error() {
            return Err(e);
        }
        loop {
            return match self.stream.read(buf) {
                Ok(0) => {
                    self.lost = Some(io::ErrorKind::ConnectionAborted);
                    Err(io::Error::new(
                        io::ErrorKind::ConnectionAborted,
                        format!("TCP peer {} closed the connection", self.peer),
                    ))
                }
                Ok(n) => Ok(Some(n)),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(None),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => Err(self.lose(e)),
            };
        }
    }

    pub(crate) fn send(&mut self, frame: &[u8]) -> io::Result<SendOutcome> {
        if let Some(e) = self.lost_error() {
            return Err(e);
        }
        self.out
            .send(&mut self.stream, frame)
            .inspect_err(|e| self.lost = Some(e.kind()))
    }

    pub(crate) fn flush(&mut self) -> io::Result<()> {
        if let Some(e) = self.lost_error() {
            return Err(e);
        }
        self.out
            .flush(&mut self.stream)
            .inspect_err(|e| self.lost = Some(e.kind()))
    }

    pub(crate) fn register(&mut self, registry: &Registry, token: Token) -> io::Result<()> {
        registry.register(&mut self.stream, token, STREAM_INTEREST)
    }
}

#[derive(Debug)]
pub(crate) struct TcpServer {
    pub(crate) listener: mio::net::TcpListener,
    client: Option<(mio::net::TcpStream, SocketAddr)>,
    out: OutQueue,
    registration: Option<(Registry, Token)>,
    pub(crate) epoch: u64,
    send_buffer_bytes: Option<usize>,
}

impl TcpServer {
    pub(crate) fn open(
        conn: &ConnString,
        host: &str,
        port: u16,
        send_buffer_bytes: Option<usize>,
    ) -> Result<Self, OpenError> {
        let addr = resolve(conn, host, port)?;
        let fail = |what: String| move |e: io::Error| OpenError::new(conn, what, e);
        let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))
            .map_err(fail("cannot create a TCP socket".into()))?;
        socket
            .set_reuse_address(true)
            .map_err(fail("cannot set SO_REUSEADDR".into()))?;
        socket
            .set_nonblocking(true)
            .map_err(fail("cannot make the TCP socket non-blocking".into()))?;
        socket
            .bind(&addr.into())
            .map_err(fail(format!("cannot bind TCP {addr}")))?;
        socket
            .listen(16)
            .map_err(fail(format!("cannot listen on TCP {addr}")))?;
        let std_listener: std::net::TcpListener = socket.into();
        Ok(TcpServer {
            listener: mio::net::TcpListener::from_std(std_listener),
            client: None,
            out: OutQueue::default(),
            registration: None,
            epoch: 0,
            send_buffer_bytes,
        })
    }

    pub(crate) fn peer(&self) -> Option<SocketAddr> {
        self.client.as_ref().map(|(_, a)| *a)
    }

    pub(crate) fn pending_bytes(&self) -> usize {
        self.out.len()
    }

    pub(crate) fn register(&mut self, registry: &Registry, token: Token) -> io::Result<()> {
        registry.register(&mut self.listener, token, Interest::READABLE)?;
        if let Some((stream, _)) = self.client.as_mut() {
            registry.register(stream, token, STREAM_INTEREST)?;
        }
        self.registration = Some((registry.try_clone()?, token));
        Ok(())
    }

    pub(crate) fn deregister(&mut self, registry: &Registry) -> io::Result<()> {
        registry.deregister(&mut self.listener)?;
        if let Some((stream, _)) = self.client.as_mut() {
            registry.deregister(stream)?;
        }
        self.registration = None;
        Ok(())
    }

    /// Accept every pending connection; the last one becomes the peer.
    fn accept_pending(&mut self) -> io::Result<()> {
        loop {
            match self.listener.accept() {
                Ok((mut stream, addr)) => {
                    let _ = stream.set_nodelay(true);
                    // Best effort, as the no-delay: the peer is served with the kernel's
                    // buffer if it refuses.
                    let _ = set_send_buffer(&stream, self.send_buffer_bytes);
                    if let Some((registry, token)) = &self.registration {
                        registry.register(&mut stream, *token, STREAM_INTEREST)?;
                    }
                    self.drop_client();
                    self.client = Some((stream, addr));
                    self.epoch += 1;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                // A peer that gave up while still in the backlog: not the listener's fault.
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::Interrupted
                            | io::ErrorKind::ConnectionAborted
                            | io::ErrorKind::ConnectionReset
                    ) => {}
                Err(e) => return Err(e),
            }
        }
    }

    fn drop_client(&mut self) {
        if let Some((mut stream, _)) = self.client.take() {
            if let Some((registry, _)) = &self.registration {
                let _ = registry.deregister(&mut stream);
            }
        }
        // Bytes meant for the old peer would be a torn frame to the new one.
        self.out.clear();
    }

    pub(crate) fn recv(&mut self, buf: &mut [u8]) -> io::Result<Option<usize>> {
        self.accept_pending()?;
        let Some((stream, _)) = self.client.as_mut() else {
            return Ok(None);
        };
        loop {
            return match stream.read(buf) {
                Ok(0) => {
                    self.drop_client();
                    Ok(None)
                }
                Ok(n) => Ok(Some(n)),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(None),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => {
                    // The peer reset: wait for the next one, as after a clean close.
                    self.drop_client();
                    Ok(None)
                }
            };
        }
    }

    pub(crate) fn send(&mut self, frame: &[u8]) -> io::Result<SendOutcome> {
        self.accept_pending()?;
        let Some((stream, _)) = self.client.as_mut() else {
            return Ok(SendOutcome::NoPeer);
        };
        match self.out.send(stream, frame) {
            Ok(o) => Ok(o),
            Err(_) => {
                self.drop_client();
                Ok(SendOutcome::NoPeer)
            }
        }
    }

    pub(crate) fn flush(&mut self) -> io::Result<()> {
        self.accept_pending()?;
        let Some((stream, _)) = self.client.as_mut() else {
            return Ok(());
        };
        if self.out.flush(stream).is_err() {
            self.drop_client();
        }
        Ok(())
    }
}
