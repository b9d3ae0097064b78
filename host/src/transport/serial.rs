//! Serial links (`serial:PATH:BAUD`): 8N1, no flow control, raw mode, opened exclusively.
//!
//! `serialport` opens and configures the device; the descriptor is then switched to
//! `O_NONBLOCK` and registered with mio through its raw fd ([`mio::unix::SourceFd`]), so a
//! serial link sits in the same poll as the sockets. Reads and writes go straight to the
//! descriptor. A hang-up (the USB adapter unplugged, the pty's other side closed) is an error
//! from `recv`, and stays one: like `tcp:`, a serial link does not reopen itself.

use std::io::{self, Write};
use std::os::fd::{AsRawFd, RawFd};
use std::time::Duration;

use mio::unix::SourceFd;
use mio::{Interest, Registry, Token};
use nix::errno::Errno;
use nix::fcntl::{fcntl, FcntlArg, OFlag};
use serialport::TTYPort;

use super::stream::OutQueue;
use super::{ConnString, OpenError, SendOutcome};

pub(crate) struct SerialLink {
    port: TTYPort,
    path: String,
    out: OutQueue,
    lost: Option<io::ErrorKind>,
}

impl std::fmt::Debug for SerialLink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SerialLink")
            .field("path", &self.path)
            .field("fd", &self.port.as_raw_fd())
            .finish()
    }
}

/// The descriptor as a `Write`, so the shared [`OutQueue`] can drive it.
struct Fd(RawFd);

impl Write for Fd {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        nix::unistd::write(self.0, buf).map_err(errno_to_io)
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

fn errno_to_io(e: Errno) -> io::Error {
    io::Error::from_raw_os_error(e as i32)
}

impl SerialLink {
    pub(crate) fn open(conn: &ConnString, path: &str, baud: u32) -> Result<Self, OpenError> {
        let port = serialport::new(path, baud)
            .timeout(Duration::ZERO)
            .open_native()
            .map_err(|e| {
                let io_err: io::Error = e.into();
                OpenError::new(
                    conn,
                    format!("cannot open serial port {path} at {baud} baud"),
                    io_err,
                )
            })?;
        let fd = port.as_raw_fd();
        let set_nonblocking = || -> nix::Result<()> {
            let flags = OFlag::from_bits_truncate(fcntl(fd, FcntlArg::F_GETFL)?);
            fcntl(fd, FcntlArg::F_SETFL(flags | OFlag::O_NONBLOCK))?;
            Ok(())
        };
        set_nonblocking().map_err(|e| {
            OpenError::new(
                conn,
                format!("cannot make serial port {path} non-blocking"),
                errno_to_io(e),
            )
        })?;
        Ok(SerialLink {
            port,
            path: path.to_string(),
            out: OutQueue::default(),
            lost: None,
        })
    }

    pub(crate) fn pending_bytes(&self) -> usize {
        self.out.len()
    }

    pub(crate) fn register(&mut self, registry: &Registry, token: Token) -> io::Result<()> {
        let fd = self.port.as_raw_fd();
        registry.register(
            &mut SourceFd(&fd),
            token,
            Interest::READABLE.add(Interest::WRITABLE),
        )
    }

    pub(crate) fn deregister(&mut self, registry: &Registry) -> io::Result<()> {
        let fd = self.port.as_raw_fd();
        registry.deregister(&mut SourceFd(&fd))
    }

    fn lost_error(&self) -> Option<io::Error> {
        self.lost.map(|kind| {
            io::Error::new(
                kind,
                format!(
                    "serial port {} hung up; this link does not reopen",
                    self.path
                ),
            )
        })
    }

    pub(crate) fn recv(&mut self, buf: &mut [u8]) -> io::Result<Option<usize>> {
        if let Some(e) = self.lost_error() {
            return Err(e);
        }
        loop {
            return match nix::unistd::read(self.port.as_raw_fd(), buf) {
                Ok(0) => {
                    self.lost = Some(io::ErrorKind::BrokenPipe);
                    Err(self
                        .lost_error()
                        .unwrap_or_else(|| io::ErrorKind::BrokenPipe.into()))
                }
                Ok(n) => Ok(Some(n)),
                Err(Errno::EAGAIN) => Ok(None),
                Err(Errno::EINTR) => continue,
                Err(e) => {
                    let err = errno_to_io(e);
                    self.lost = Some(err.kind());
                    Err(io::Error::new(
                        err.kind(),
                        format!(
                            "serial port {} failed: {err}; this link does not reopen",
                            self.path
                        ),
                    ))
                }
            };
        }
    }

    pub(crate) fn send(&mut self, frame: &[u8]) -> io::Result<SendOutcome> {
        if let Some(e) = self.lost_error() {
            return Err(e);
        }
        let mut fd = Fd(self.port.as_raw_fd());
        self.out.send(&mut fd, frame).inspect_err(|e| {
            self.lost = Some(e.kind());
        })
    }

    pub(crate) fn flush(&mut self) -> io::Result<()> {
        if let Some(e) = self.lost_error() {
            return Err(e);
        }
        let mut fd = Fd(self.port.as_raw_fd());
        self.out.flush(&mut fd).inspect_err(|e| {
            self.lost = Some(e.kind());
        })
    }
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};
    use std::time::{Duration, Instant};

    use serialport::{SerialPort, TTYPort};

    use crate::transport::{mio, ConnString, Framing, Link, SendOutcome};

    /// Poll `link` until `want` bytes arrived or 5 s passed.
    fn read_bytes(poll: &mut mio::Poll, link: &mut Link, want: usize) -> std::io::Result<Vec<u8>> {
        let mut events = mio::Events::with_capacity(8);
        let mut buf = [0u8; 512];
        let mut got = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(5);
        while got.len() < want && Instant::now() < deadline {
            poll.poll(&mut events, Some(Duration::from_millis(50)))?;
            while let Some(n) = link.recv(&mut buf)? {
                got.extend_from_slice(&buf[..n]);
            }
        }
        Ok(got)
    }

    #[test]
    fn pty_round_trip_through_poll_then_hang_up() {
        let (mut master, slave) = TTYPort::pair().expect("openpty");
        let name = slave.name().expect("pty has a name");
        drop(slave);
        let conn: ConnString = format!("serial:{name}:57600").parse().unwrap();
        let mut link = Link::open(&conn).expect("open the pty's slave side");
        assert_eq!(link.framing(), Framing::Stream);
        let mut poll = mio::Poll::new().unwrap();
        link.register(poll.registry(), mio::Token(3)).unwrap();

        // Device → link, arriving through the poll; binary bytes pass untouched (raw mode).
        let frame: Vec<u8> = (0u8..=255)
            .chain([0xfd, b'\n', b'\r', 0x03, 0x11])
            .collect();
        master.write_all(&frame).unwrap();
        assert_eq!(
            read_bytes(&mut poll, &mut link, frame.len()).unwrap(),
            frame
        );

        // Link → device.
        assert_eq!(link.send(b"\xfd\x09pong\r\n").unwrap(), SendOutcome::Sent);
        master.set_timeout(Duration::from_secs(2)).unwrap();
        let mut back = [0u8; 8];
        master.read_exact(&mut back).unwrap();
        assert_eq!(&back, b"\xfd\x09pong\r\n");

        // The other side goes away: recv reports it, and keeps reporting it.
        drop(master);
        let err = read_bytes(&mut poll, &mut link, usize::MAX).unwrap_err();
        assert!(err.to_string().contains(&name), "{err}");
        let again = link.recv(&mut [0u8; 16]).unwrap_err();
        assert!(again.to_string().contains("does not reopen"), "{again}");
        assert!(link.send(b"x").is_err());
    }

    #[test]
    fn a_missing_device_says_which_path_and_why() {
        let err = Link::open_str("serial:/dev/nexus-no-such-tty:57600").unwrap_err();
        let text = err.to_string();
        assert!(
            text.starts_with(
                "serial:/dev/nexus-no-such-tty:57600 — cannot open serial port /dev/nexus-no-such-tty at 57600 baud: "
            ),
            "{text}"
        );
        assert!(text.contains("No such file or directory"), "{text}");
    }

    #[test]
    fn a_device_opened_twice_is_refused() {
        let (_master, slave) = TTYPort::pair().expect("openpty");
        let name = slave.name().unwrap();
        drop(slave);
        let _first = Link::open_str(&format!("serial:{name}:115200")).unwrap();
        let err = Link::open_str(&format!("serial:{name}:115200")).unwrap_err();
        assert!(
            err.to_string()
                .contains(&format!("cannot open serial port {name}")),
            "{err}"
        );
    }
}
