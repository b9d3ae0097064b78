//! UDP links: `udpin` (bind, reply to the most recent sender) and `udpout` (send to a fixed
//! destination, read replies on the same socket). One `recv` is one datagram.
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

use super::{ConnString, OpenError, RecvBuffer, SendOutcome};

#[derive(Debug)]
pub(crate) struct UdpLink {
    pub(crate) socket: mio::net::UdpSocket,
    /// Where `send` goes: fixed for `udpout`, the most recent sender for `udpin`.
    dest: Option<SocketAddr>,
    latch: bool,
    pub(crate) epoch: u64,
    pub(crate) recv_buffer: RecvBuffer,
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
            latch: true,
            epoch: 0,
            recv_buffer,
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
            latch: false,
            epoch: 1,
            recv_buffer,
        })
    }

    pub(crate) fn peer(&self) -> Option<SocketAddr> {
        self.dest
    }

    pub(crate) fn recv(&mut self, buf: &mut [u8]) -> io::Result<Option<usize>> {
        loop {
            match self.socket.recv_from(buf) {
                Ok((n, from)) => {
                    if self.latch && self.dest != Some(from) {
                        self.dest = Some(from);
                        self.epoch += 1;
                    }
                    return Ok(Some(n));
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
