//! Outgoing bytes for stream links (TCP, serial) that the kernel could not take at once.
//!
//! A non-blocking write may take part of a frame. The rest waits here and goes out when the
//! link is writable again ([`super::Link::flush`]). A frame is queued whole or not at all, so the
//! peer never sees a torn frame; past [`OUT_QUEUE_LIMIT_BYTES`] new frames are dropped (MAVLink
//! tolerates loss, a stalled serial line must not grow memory without bound).

use std::io::{self, Write};

use super::SendOutcome;

/// Most bytes a stream link holds back while the peer is not reading (about 230 full frames).
pub const OUT_QUEUE_LIMIT_BYTES: usize = 64 * 1024;

#[derive(Debug, Default)]
pub(crate) struct OutQueue {
    buf: Vec<u8>,
}

impl OutQueue {
    pub(crate) fn len(&self) -> usize {
        self.buf.len()
    }

    pub(crate) fn clear(&mut self) {
        self.buf.clear();
    }

    /// Write `frame` after whatever is already queued.
    pub(crate) fn send<W: Write>(&mut self, w: &mut W, frame: &[u8]) -> io::Result<SendOutcome> {
        if frame.is_empty() {
            return Ok(SendOutcome::Sent);
        }
        self.flush(w)?;
        if !self.buf.is_empty() {
            return Ok(self.enqueue(frame));
        }
        loop {
            return match w.write(frame) {
                Ok(n) if n == frame.len() => Ok(SendOutcome::Sent),
                Ok(0) => Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => {
                    // The head of the frame is on the wire: the tail must follow, whatever the limit.
                    self.buf.extend_from_slice(&frame[n..]);
                    Ok(SendOutcome::Queued)
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(self.enqueue(frame)),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => Err(e),
            };
        }
    }

    fn enqueue(&mut self, frame: &[u8]) -> SendOutcome {
        if self.buf.len() + frame.len() > OUT_QUEUE_LIMIT_BYTES {
            SendOutcome::Dropped
        } else {
            self.buf.extend_from_slice(frame);
            SendOutcome::Queued
        }
    }

    /// Write as much of the queue as the kernel takes now.
    pub(crate) fn flush<W: Write>(&mut self, w: &mut W) -> io::Result<()> {
        while !self.buf.is_empty() {
            match w.write(&self.buf) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => {
                    self.buf.drain(..n);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Takes `room` bytes, then says WouldBlock.
    struct Tight {
        room: usize,
        got: Vec<u8>,
    }

    impl Write for Tight {
        fn write(&mut self, b: &[u8]) -> io::Result<usize> {
            if self.room == 0 {
                return Err(io::ErrorKind::WouldBlock.into());
            }
            let n = b.len().min(self.room);
            self.room -= n;
            self.got.extend_from_slice(&b[..n]);
            Ok(n)
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn partial_write_queues_the_tail_and_flush_sends_it_in_order() {
        let mut w = Tight {
            room: 3,
            got: vec![],
        };
        let mut q = OutQueue::default();
        assert_eq!(q.send(&mut w, b"abcdef").unwrap(), SendOutcome::Queued);
        assert_eq!(q.send(&mut w, b"gh").unwrap(), SendOutcome::Queued);
        assert_eq!(q.len(), 5);
        w.room = 100;
        q.flush(&mut w).unwrap();
        assert_eq!(q.len(), 0);
        assert_eq!(w.got, b"abcdefgh");
    }

    #[test]
    fn a_full_queue_drops_whole_frames() {
        let mut w = Tight {
            room: 0,
            got: vec![],
        };
        let mut q = OutQueue::default();
        let frame = [7u8; 280];
        let mut queued = 0;
        loop {
            match q.send(&mut w, &frame).unwrap() {
                SendOutcome::Queued => queued += 1,
                SendOutcome::Dropped => break,
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(queued, OUT_QUEUE_LIMIT_BYTES / 280);
        assert_eq!(q.len(), queued * 280);
    }
}
