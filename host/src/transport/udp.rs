//! UDP links: `udpin` (bind, take one peer by its [`PeerRule`], reply to it) and `udpout`
//! (send to a fixed destination, read replies on the same socket). One `recv` is one datagram.
//!
//! Under a latching rule a datagram from any source but the peer is never delivered: it is
//! counted in the link's [`ForeignTraffic`] and the next datagram is read.
//!
//! PX4 latches onto the first client's source address for the life of the process, so a client
//! must send from the port it listens on: `udpin` does, because it replies from its bound socket.
//!
//! No `SO_REUSEADDR` here: on Linux it lets a second UDP socket bind the same port and silently
//! take the datagrams, so two clients on one PX4 port would each see part of the stream. Better
//! that the second one fails with "address in use".

use std::io;
use std::net::{SocketAddr, ToSocketAddrs};

use socket2::{Domain, Protocol, Socket, Type};

use super::peer::{ForeignTraffic, PeerRule};
use super::{ConnString, OpenError, RecvBuffer, SendOutcome};

/// Foreign datagrams set aside in one `recv` before it returns `Ok(Some(0))`, so a flood
/// cannot keep the caller (the pump and its other links) inside one call.
pub(crate) const FOREIGN_BURST: usize = 256;

#[derive(Debug)]
pub(crate) struct UdpLink {
    pub(crate) socket: mio::net::UdpSocket,
    /// Where `send` goes: fixed for `udpout`, the latched peer (or under
    /// [`PeerRule::MostRecent`] the most recent sender) for `udpin`.
    dest: Option<SocketAddr>,
    /// `udpin`: the peer may still change (no latch yet, or no latching rule).
    follow: bool,
    pub(crate) rule: PeerRule,
    pub(crate) epoch: u64,
    pub(crate) recv_buffer: RecvBuffer,
    pub(crate) foreign: ForeignTraffic,
}

impl UdpLink {
    pub(crate) fn open_in(
        conn: &ConnString,
        host: &str,
        port: u16,
        rcvbuf_bytes: usize,
    ) -> Result<Self, OpenError> {
        let addr = resolve(conn, host, port)?;
        let (socket, recv_buffer) = bind(conn, addr, rcvbuf_bytes)?;
        Ok(UdpLink {
            socket,
            dest: None,
            follow: true,
            rule: PeerRule::MostRecent,
            epoch: 0,
            recv_buffer,
            foreign: ForeignTraffic::default(),
        })
    }

    pub(crate) fn open_out(
        conn: &ConnString,
        host: &str,
        port: u16,
        rcvbuf_bytes: usize,
    ) -> Result<Self, OpenError> {
        let dest = resolve(conn, host, port)?;
        let local: SocketAddr = if dest.is_ipv4() {
            (std::net::Ipv4Addr::UNSPECIFIED, 0).into()
        } else {
            (std::net::Ipv6Addr::UNSPECIFIED, 0).into()
        };
        let (socket, recv_buffer) = bind(conn, local, rcvbuf_bytes)?;
        Ok(UdpLink {
            socket,
            dest: Some(dest),
            follow: false,
            rule: PeerRule::MostRecent,
            epoch: 1,
            recv_buffer,
            foreign: ForeignTraffic::default(),
        })
    }

    pub(crate) fn peer(&self) -> Option<SocketAddr> {
        self.dest
    }

    /// Set how the peer is chosen. A `udpout` link keeps its destination; under a latching
    /// rule it then takes datagrams only from there.
    pub(crate) fn set_rule(&mut self, mut rule: PeerRule) {
        // An IPv6 socket (`udpin:[::]:…`) sees IPv4 senders as v4-mapped addresses and can
        // only send to those: name the vehicle the way the socket will see it.
        if let PeerRule::Address(a) = &mut rule {
            let v6 = self.socket.local_addr().is_ok_and(|l| l.is_ipv6());
            if let (true, SocketAddr::V4(v4)) = (v6, *a) {
                *a = SocketAddr::new(v4.ip().to_ipv6_mapped().into(), v4.port());
            }
        }
        self.rule = rule;
        // A known vehicle is the peer from the start: we may speak first, and PX4, which
        // latches whoever speaks first, latches us (PX4 instances above 9 send elsewhere
        // until a client does).
        if let (PeerRule::Address(a), true) = (rule, self.follow) {
            self.dest = Some(a);
            self.follow = false;
            self.epoch += 1;
        }
    }

    /// Whether a datagram from `from` is the peer's (latching it if the rule says so).
    fn accepts(&mut self, from: SocketAddr, datagram: &[u8]) -> bool {
        if !self.rule.latches() {
            if self.follow && self.dest != Some(from) {
                self.dest = Some(from);
                self.epoch += 1;
            }
            return true;
        }
        if self.dest == Some(from) {
            return true;
        }
        if !self.follow || !self.rule.takes(from, datagram) {
            return false;
        }
        self.dest = Some(from);
        self.follow = false;
        self.epoch += 1;
        self.foreign.latched(from);
        true
    }

    pub(crate) fn recv(&mut self, buf: &mut [u8]) -> io::Result<Option<usize>> {
        let mut set_aside = 0;
        loop {
            match self.socket.recv_from(buf) {
                Ok((n, from)) => {
                    if self.accepts(from, &buf[..n]) {
                        return Ok(Some(n));
                    }
                    self.foreign.record(from, &buf[..n]);
                    set_aside += 1;
                    if set_aside >= FOREIGN_BURST {
                        return Ok(Some(0));
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(None),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }

    pub(crate) fn send(&mut self, datagram: &[u8]) -> io::Result<SendOutcome> {
        let Some(dest) = self.dest else {
            return Ok(SendOutcome::NoPeer);
        };
        loop {
            match self.socket.send_to(datagram, dest) {
                Ok(_) => return Ok(SendOutcome::Sent),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(SendOutcome::Dropped),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }
}

/// Resolve `host:port`, preferring IPv4 (PX4 SITL talks to 127.0.0.1).
pub(crate) fn resolve(conn: &ConnString, host: &str, port: u16) -> Result<SocketAddr, OpenError> {
    let addrs: Vec<SocketAddr> = (host, port)
        .to_socket_addrs()
        .map_err(|e| OpenError::new(conn, format!("cannot resolve host '{host}'"), e))?
        .collect();
    addrs
        .iter()
        .find(|a| a.is_ipv4())
        .or_else(|| addrs.first())
        .copied()
        .ok_or_else(|| {
            OpenError::new(
                conn,
                format!("cannot resolve host '{host}'"),
                io::Error::new(io::ErrorKind::NotFound, "no address"),
            )
        })
}

fn bind(
    conn: &ConnString,
    addr: SocketAddr,
    rcvbuf_bytes: usize,
) -> Result<(mio::net::UdpSocket, RecvBuffer), OpenError> {
    let fail = |what: String| move |e: io::Error| OpenError::new(conn, what, e);
    let socket = Socket::new(Domain::for_address(addr), Type::DGRAM, Some(Protocol::UDP))
        .map_err(fail("cannot create a UDP socket".into()))?;
    let recv_buffer = grow_recv_buffer(&socket, rcvbuf_bytes);
    socket
        .set_nonblocking(true)
        .map_err(fail("cannot make the UDP socket non-blocking".into()))?;
    socket
        .bind(&addr.into())
        .map_err(fail(format!("cannot bind UDP {addr}")))?;
    let std_socket: std::net::UdpSocket = socket.into();
    Ok((mio::net::UdpSocket::from_std(std_socket), recv_buffer))
}

/// Ask for `want` bytes of receive buffer; if the OS caps it (Linux: `net.core.rmem_max`), try
/// `SO_RCVBUFFORCE`, which a process with `CAP_NET_ADMIN` may use. Report what took effect.
fn grow_recv_buffer(socket: &Socket, want: usize) -> RecvBuffer {
    let _ = socket.set_recv_buffer_size(want);
    let mut granted = effective_recv_buffer(socket);
    if granted < want {
        #[cfg(target_os = "linux")]
        {
            use nix::sys::socket::{setsockopt, sockopt::RcvBufForce};
            use std::os::fd::AsRawFd;
            if setsockopt(socket.as_raw_fd(), RcvBufForce, &want).is_ok() {
                granted = effective_recv_buffer(socket);
            }
        }
    }
    RecvBuffer {
        requested_bytes: want,
        granted_bytes: granted,
    }
}

/// The receive buffer in the unit it was requested in. Linux reports twice the value set (the
/// other half is its allowance for bookkeeping), so halve it there.
fn effective_recv_buffer(socket: &Socket) -> usize {
    let reported = socket.recv_buffer_size().unwrap_or(0);
    if cfg!(target_os = "linux") {
        reported / 2
    } else {
        reported
    }
}
