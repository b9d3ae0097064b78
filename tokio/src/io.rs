//! The links on tokio: a UDP socket under the host's vehicle-address latch, or a byte stream
//! (TCP, serial). What arrives is handed over as bytes; the core's framer does the rest.

use std::io;
use std::net::SocketAddr;

use nexus_host::transport::{ConnString, ForeignTraffic, OpenError, PeerRule};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpStream, UdpSocket};

/// A byte stream's halves.
type Reader = Box<dyn AsyncRead + Unpin + Send>;
type Writer = Box<dyn AsyncWrite + Unpin + Send>;

/// One open link.
pub(crate) enum Io {
    /// A datagram socket: only the latched peer's datagrams reach the client.
    Udp(Udp),
    /// TCP or serial: everything read is the vehicle's.
    Stream { rx: Reader, tx: Writer },
}

pub(crate) struct Udp {
    socket: UdpSocket,
    rule: PeerRule,
    /// Where replies go; fixed once latched (or from the start for `udpout` / a known address).
    peer: Option<SocketAddr>,
    latched: bool,
    pub foreign: ForeignTraffic,
}

impl Io {
    /// A byte stream from its two halves.
    fn stream(
        rx: impl tokio::io::AsyncRead + Send + Unpin + 'static,
        tx: impl tokio::io::AsyncWrite + Send + Unpin + 'static,
    ) -> Io {
        Io::Stream {
            rx: Box::new(rx),
            tx: Box::new(tx),
        }
    }

    /// A connected TCP stream, without Nagle's delay (a frame goes out when it is written).
    fn tcp(s: TcpStream) -> io::Result<Io> {
        s.set_nodelay(true)?;
        let (rx, tx) = s.into_split();
        Ok(Io::stream(rx, tx))
    }

    /// Open `conn`: bind, connect or open the device now, so OS errors surface here, each
    /// saying what was tried. A UDP link latches by `rule` as the threaded pump's links do.
    pub async fn open(conn: &ConnString, rule: PeerRule) -> Result<Io, OpenError> {
        let fail = |what: String| move |e: io::Error| OpenError::new(conn, what, e);
        match conn {
            ConnString::UdpIn { host, port } => {
                let socket = UdpSocket::bind((host.as_str(), *port))
                    .await
                    .map_err(fail(format!("cannot bind UDP {host}:{port}")))?;
                let mut u = Udp {
                    socket,
                    rule,
                    peer: None,
                    latched: false,
                    foreign: ForeignTraffic::default(),
                };
                if let PeerRule::Address(a) = rule {
                    // The vehicle is known: we may speak first (PX4 latches its first client).
                    u.peer = Some(a);
                    u.latched = true;
                }
                Ok(Io::Udp(u))
            }
            ConnString::UdpOut { host, port } => {
                let resolving = format!("cannot resolve host '{host}'");
                let dest = tokio::net::lookup_host((host.as_str(), *port))
                    .await
                    .map_err(fail(resolving.clone()))?
                    .find(SocketAddr::is_ipv4)
                    .ok_or_else(|| {
                        fail(resolving)(io::Error::new(io::ErrorKind::NotFound, "no IPv4 address"))
                    })?;
                let socket = UdpSocket::bind((std::net::Ipv4Addr::UNSPECIFIED, 0))
                    .await
                    .map_err(fail("cannot bind a UDP socket".into()))?;
                Ok(Io::Udp(Udp {
                    socket,
                    rule: PeerRule::Address(dest),
                    peer: Some(dest),
                    latched: true,
                    foreign: ForeignTraffic::default(),
                }))
            }
            ConnString::Tcp { host, port } => {
                let what = format!("cannot connect to TCP {host}:{port}");
                let s = TcpStream::connect((host.as_str(), *port))
                    .await
                    .map_err(fail(what.clone()))?;
                Io::tcp(s).map_err(fail(what))
            }
            ConnString::TcpIn { host, port } => {
                // One peer: the first that connects (the threaded pump's replacement of a
                // stale connection is not offered here).
                let l = tokio::net::TcpListener::bind((host.as_str(), *port))
                    .await
                    .map_err(fail(format!("cannot bind TCP {host}:{port}")))?;
                let what = format!("cannot accept a TCP connection on {host}:{port}");
                let s = l.accept().await.map_err(fail(what.clone()))?.0;
                Io::tcp(s).map_err(fail(what))
            }
            ConnString::Serial { path, baud } => {
                use tokio_serial::SerialPortBuilderExt;
                let port = tokio_serial::new(path, *baud)
                    .open_native_async()
                    .map_err(io::Error::other)
                    .map_err(fail(format!(
                        "cannot open serial port {path} at {baud} baud"
                    )))?;
                let (rx, tx) = tokio::io::split(port);
                Ok(Io::stream(rx, tx))
            }
            other => Err(OpenError::new(
                other,
                "cannot open it",
                io::Error::new(
                    io::ErrorKind::Unsupported,
                    format!("nexus-tokio cannot open {other} yet"),
                ),
            )),
        }
    }

    /// The next bytes from the vehicle; `Ok(0)` for a datagram set aside (foreign). A stream
    /// that ended is an error: the link is gone. Cancel-safe (nothing is read when dropped).
    pub async fn recv(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Io::Udp(u) => {
                let (n, from) = u.socket.recv_from(buf).await?;
                Ok(if u.accepts(from, &buf[..n]) { n } else { 0 })
            }
            Io::Stream { rx, .. } => match rx.read(buf).await? {
                0 => Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the peer closed the stream",
                )),
                n => Ok(n),
            },
        }
    }

    /// Send frames (`out`, split at `ends`): one datagram each, or all in one stream write.
    /// Without a peer yet, UDP frames are dropped, as the pump's are (counted by the caller).
    pub async fn send(&mut self, out: &[u8], ends: &[usize]) -> io::Result<usize> {
        match self {
            Io::Udp(u) => {
                let Some(dest) = u.peer else {
                    return Ok(0);
                };
                let mut start = 0;
                for &end in ends {
                    // An ICMP error from an earlier datagram is no reason to stop the link.
                    let _ = u.socket.send_to(&out[start..end], dest).await;
                    start = end;
                }
                Ok(ends.len())
            }
            Io::Stream { tx, .. } => {
                tx.write_all(out).await?;
                Ok(ends.len())
            }
        }
    }

    /// The UDP link's latched peer.
    pub fn peer(&self) -> Option<SocketAddr> {
        match self {
            Io::Udp(u) => u.peer,
            Io::Stream { .. } => None,
        }
    }

    /// The UDP link's local address.
    pub fn local_addr(&self) -> Option<SocketAddr> {
        match self {
            Io::Udp(u) => u.socket.local_addr().ok(),
            Io::Stream { .. } => None,
        }
    }
}

impl Udp {
    /// The latch of [`nexus_host::transport::PeerRule`]: the peer's datagrams count, the first
    /// datagram the rule takes latches its source for the life of the link, everything else is
    /// recorded as foreign.
    fn accepts(&mut self, from: SocketAddr, datagram: &[u8]) -> bool {
        if !self.rule.latches() {
            self.peer = Some(from);
            return true;
        }
        if self.peer == Some(from) {
            return true;
        }
        if !self.latched && self.rule.takes(from, datagram) {
            self.peer = Some(from);
            self.latched = true;
            self.foreign.latched(from);
            return true;
        }
        self.foreign.record(from, datagram);
        false
    }
}
