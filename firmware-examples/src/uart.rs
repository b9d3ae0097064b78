//! CMSDK APB UART0 of mps2-an386: polled transmit, interrupt-driven receive into an SPSC queue.
//!
//! The UART has a one-byte buffer in each direction and no FIFO. Receive: the RX interrupt
//! (IRQ 0) moves each byte into a [`heapless::spsc::Queue`] of [`RX_QUEUE_LEN`] bytes; the main
//! loop takes them out through [`embedded_io::Read`] / [`embedded_io::ReadReady`] (what
//! `nexus_core::frame::Decoder::poll_read` needs) or the `nb` form
//! ([`embedded_hal_nb::serial::Read`]). Transmit: bytes go out by polling `TXFULL`.
//!
//! Two details of this UART matter (ARM DDI0479C, and QEMU's hw/char/cmsdk-apb-uart.c):
//! * the RX interrupt status bit is sticky: the handler must clear it by writing `INTCLEAR`,
//!   and it does so *before* draining `DATA`, so a byte that lands meanwhile re-raises it;
//! * transmit must be enabled in `CTRL`, with a valid `BAUDDIV` (≥ 16).
//!
//! When the queue is full the handler leaves the byte in the UART, masks its interrupt and
//! sets a flag; the next read re-enables it once there is room. On QEMU that is lossless flow
//! control (the emulated UART takes no new byte while one is pending); on hardware the bytes
//! that arrive meanwhile overrun and are counted in [`UartStats::rx_overruns`]. The MAVLink
//! decoder resynchronises either way.

use core::cell::Cell;
use core::convert::Infallible;
use core::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use cortex_m::peripheral::NVIC;
use critical_section::Mutex;
use heapless::spsc::{Consumer, Producer, Queue};

use crate::board::{Irq, SYSCLK_HZ, UART0_BASE};

/// Slots of the receive queue (it holds one byte less): about two maximum-size MAVLink frames.
pub const RX_QUEUE_LEN: usize = 512;

/// Register offsets and bits (CMSDK APB UART, ARM DDI0479C §4.3).
mod reg {
    pub const DATA: usize = 0x00;
    pub const STATE: usize = 0x04;
    pub const CTRL: usize = 0x08;
    pub const INTSTATUS: usize = 0x0C; // INTCLEAR on write
    pub const BAUDDIV: usize = 0x10;

    pub const STATE_TX_FULL: u32 = 1 << 0;
    pub const STATE_RX_FULL: u32 = 1 << 1;
    pub const STATE_RX_OVERRUN: u32 = 1 << 3;

    pub const CTRL_TX_EN: u32 = 1 << 0;
    pub const CTRL_RX_EN: u32 = 1 << 1;
    pub const CTRL_RX_INT_EN: u32 = 1 << 3;

    pub const INT_RX: u32 = 1 << 1;
}

/// Read a UART0 register.
fn read_reg(offset: usize) -> u32 {
    // SAFETY: UART0_BASE + offset is one of the UART0 registers listed in `reg`, a 32-bit
    // aligned MMIO location that is always mapped on this board; reading it has no effect
    // on memory Rust knows about (reading DATA pops the UART's own RX buffer, which is what
    // the callers intend).
    #[allow(unsafe_code)]
    unsafe {
        core::ptr::read_volatile((UART0_BASE + offset) as *const u32)
    }
}

/// Write a UART0 register.
fn write_reg(offset: usize, value: u32) {
    // SAFETY: as in `read_reg`; writes reach only the UART's registers.
    #[allow(unsafe_code)]
    unsafe {
        core::ptr::write_volatile((UART0_BASE + offset) as *mut u32, value)
    }
}

/// The interrupt handler's half of the receive queue, handed over by [`Uart0::take`]. Shared
/// state here is a `Cell` taken and put back, not a `RefCell`: a `RefCell`'s borrow panic keeps
/// its message's `Display` impl in flash.
static RX_PRODUCER: Mutex<Cell<Option<Producer<'static, u8>>>> = Mutex::new(Cell::new(None));
/// Set by the handler when it stopped with a byte left in the UART because the queue was full.
static RX_THROTTLED: AtomicBool = AtomicBool::new(false);
/// Receive overruns reported by the hardware (bytes lost before the handler could read them).
static RX_OVERRUNS: AtomicU32 = AtomicU32::new(0);
/// Times the handler had to stop because the queue was full.
static RX_THROTTLES: AtomicU32 = AtomicU32::new(0);

/// The task waiting for a byte (the async driver's, [`crate::apump`]); woken by the handler.
static RX_WAKER: Mutex<Cell<Option<core::task::Waker>>> = Mutex::new(Cell::new(None));

/// Wake the async reader, if one waits.
fn wake_rx() {
    if let Some(w) = critical_section::with(|cs| RX_WAKER.borrow(cs).take()) {
        w.wake();
    }
}

/// UART0 receive interrupt (IRQ 0): move every received byte into the queue.
pub(crate) extern "C" fn uart0_rx_isr() {
    uart0_rx_drain();
    wake_rx();
}

fn uart0_rx_drain() {
    // Clear first: a byte arriving after this point sets the bit again and re-enters.
    write_reg(reg::INTSTATUS, reg::INT_RX);
    let state = read_reg(reg::STATE);
    if state & reg::STATE_RX_OVERRUN != 0 {
        write_reg(reg::STATE, reg::STATE_RX_OVERRUN); // write-one-to-clear
        RX_OVERRUNS.fetch_add(1, Ordering::Relaxed);
    }
    critical_section::with(|cs| {
        let slot = RX_PRODUCER.borrow(cs);
        let Some(mut producer) = slot.take() else {
            // Not taken yet: nobody wants the bytes, and the interrupt is masked until then.
            return;
        };
        while read_reg(reg::STATE) & reg::STATE_RX_FULL != 0 {
            if !producer.ready() {
                RX_THROTTLES.fetch_add(1, Ordering::Relaxed);
                RX_THROTTLED.store(true, Ordering::Release);
                NVIC::mask(Irq::Uart0Rx);
                break;
            }
            // `ready()` was true, so this cannot fail; a byte is never dropped here.
            let _ = producer.enqueue(read_reg(reg::DATA) as u8);
        }
        slot.set(Some(producer));
    });
}

/// Counters of the receive path.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct UartStats {
    /// Bytes lost in the hardware because the handler was late (never on QEMU).
    pub rx_overruns: u32,
    /// Times the receive queue filled up and reception paused until the next read.
    pub rx_throttles: u32,
}

/// UART0, owned: the receive queue's consumer end and the transmitter.
///
/// Implements [`embedded_io::Read`], [`embedded_io::ReadReady`], [`embedded_io::Write`],
/// [`embedded_io::WriteReady`] and the `nb` traits of [`embedded_hal_nb::serial`]. No operation
/// can fail, so the error type is [`Infallible`].
pub struct Uart0 {
    rx: Consumer<'static, u8>,
}

impl Uart0 {
    /// Configure UART0 at `baud` (8N1), enable transmit and interrupt-driven receive.
    ///
    /// Returns `None` if UART0 was already taken. `baud` is clamped so that the divider stays
    /// within the UART's range (16 ..= 2^20 − 1); QEMU ignores the rate.
    pub fn take(baud: u32) -> Option<Uart0> {
        let queue: &'static mut Queue<u8, RX_QUEUE_LEN> =
            cortex_m::singleton!(: Queue<u8, RX_QUEUE_LEN> = Queue::new())?;
        let (producer, consumer) = queue.split();
        critical_section::with(|cs| RX_PRODUCER.borrow(cs).set(Some(producer)));

        let div = (SYSCLK_HZ / baud.max(1)).clamp(16, 0xF_FFFF);
        write_reg(reg::CTRL, 0);
        write_reg(reg::BAUDDIV, div);
        write_reg(reg::INTSTATUS, 0xF); // clear anything stale
        write_reg(
            reg::CTRL,
            reg::CTRL_TX_EN | reg::CTRL_RX_EN | reg::CTRL_RX_INT_EN,
        );
        // SAFETY: unmasking can break a critical section that relies on this interrupt being
        // masked; none does (the handler's shared state is guarded by critical_section), and
        // the producer it needs is in place.
        #[allow(unsafe_code)]
        unsafe {
            NVIC::unmask(Irq::Uart0Rx)
        };
        Some(Uart0 { rx: consumer })
    }

    /// Receive-path counters since start.
    pub fn stats(&self) -> UartStats {
        UartStats {
            rx_overruns: RX_OVERRUNS.load(Ordering::Relaxed),
            rx_throttles: RX_THROTTLES.load(Ordering::Relaxed),
        }
    }

    /// Bytes waiting in the receive queue.
    pub fn rx_queued(&self) -> usize {
        self.rx.len()
    }

    /// Take one received byte, if any.
    pub fn try_read_byte(&mut self) -> Option<u8> {
        let byte = self.rx.dequeue()?;
        self.resume_rx();
        Some(byte)
    }

    /// Whether the transmitter can take a byte now.
    pub fn tx_ready(&self) -> bool {
        read_reg(reg::STATE) & reg::STATE_TX_FULL == 0
    }

    /// Send one byte, waiting for the transmitter.
    pub fn write_byte(&mut self, byte: u8) {
        while !self.tx_ready() {
            core::hint::spin_loop();
        }
        write_reg(reg::DATA, byte as u32);
    }

    /// Wait until the last byte has left the transmit buffer.
    pub fn flush_tx(&mut self) {
        while !self.tx_ready() {
            core::hint::spin_loop();
        }
    }

    /// Move what is queued into `buf` (as much as fits), then let reception resume; how many
    /// bytes were moved.
    fn take_queued(&mut self, buf: &mut [u8]) -> usize {
        let mut n = 0;
        for slot in buf.iter_mut() {
            let Some(b) = self.rx.dequeue() else {
                break;
            };
            *slot = b;
            n += 1;
        }
        self.resume_rx();
        n
    }

    /// After a read made room: let the handler collect the byte it had to leave behind.
    fn resume_rx(&mut self) {
        if RX_THROTTLED.swap(false, Ordering::AcqRel) {
            // SAFETY: as in `take`.
            #[allow(unsafe_code)]
            unsafe {
                NVIC::unmask(Irq::Uart0Rx)
            };
            // The UART's status bit was cleared before the handler stopped: pend by hand.
            NVIC::pend(Irq::Uart0Rx);
        }
    }
}

impl Uart0 {
    /// Copy out what is queued, at least one byte; while nothing is queued, register `cx`'s
    /// waker for the receive interrupt (checked again after, so no byte slips past).
    fn poll_read(
        &mut self,
        cx: &mut core::task::Context<'_>,
        buf: &mut [u8],
    ) -> core::task::Poll<usize> {
        if buf.is_empty() {
            return core::task::Poll::Ready(0);
        }
        if !self.rx.ready() {
            critical_section::with(|cs| RX_WAKER.borrow(cs).set(Some(cx.waker().clone())));
            if !self.rx.ready() {
                return core::task::Poll::Pending;
            }
        }
        core::task::Poll::Ready(self.take_queued(buf))
    }
}

impl embedded_io_async::Read for Uart0 {
    /// Wait (the task sleeps; the receive interrupt wakes it) for at least one byte.
    /// Cancel-safe: nothing is taken from the queue unless the future completes.
    async fn read(&mut self, buf: &mut [u8]) -> Result<usize, Infallible> {
        Ok(core::future::poll_fn(|cx| self.poll_read(cx, buf)).await)
    }
}

impl embedded_io_async::Write for Uart0 {
    /// The transmitter takes a byte per bit time and has no interrupt wired here: bytes are
    /// written as the blocking path does (on QEMU the wait is nil).
    async fn write(&mut self, buf: &[u8]) -> Result<usize, Infallible> {
        embedded_io::Write::write(self, buf)
    }

    async fn flush(&mut self) -> Result<(), Infallible> {
        self.flush_tx();
        Ok(())
    }
}

impl embedded_io::ErrorType for Uart0 {
    type Error = Infallible;
}

impl embedded_io::ReadReady for Uart0 {
    fn read_ready(&mut self) -> Result<bool, Infallible> {
        Ok(self.rx.ready())
    }
}

impl embedded_io::Read for Uart0 {
    /// Copy out what is queued, at least one byte: waits (WFI) while the queue is empty.
    fn read(&mut self, buf: &mut [u8]) -> Result<usize, Infallible> {
        if buf.is_empty() {
            return Ok(0);
        }
        while !self.rx.ready() {
            crate::clock::sleep_unless(|| self.rx.ready());
        }
        Ok(self.take_queued(buf))
    }
}

impl embedded_io::WriteReady for Uart0 {
    fn write_ready(&mut self) -> Result<bool, Infallible> {
        Ok(self.tx_ready())
    }
}

impl embedded_io::Write for Uart0 {
    /// Write as many bytes as the transmitter takes without waiting, at least one.
    fn write(&mut self, buf: &[u8]) -> Result<usize, Infallible> {
        let Some((&first, rest)) = buf.split_first() else {
            return Ok(0);
        };
        self.write_byte(first);
        let mut n = 1;
        for &b in rest {
            if !self.tx_ready() {
                break;
            }
            write_reg(reg::DATA, b as u32);
            n += 1;
        }
        Ok(n)
    }

    /// Write every byte, waiting for the transmitter as needed.
    fn write_all(&mut self, buf: &[u8]) -> Result<(), Infallible> {
        for &b in buf {
            self.write_byte(b);
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), Infallible> {
        self.flush_tx();
        Ok(())
    }
}

impl embedded_hal_nb::serial::ErrorType for Uart0 {
    type Error = Infallible;
}

impl embedded_hal_nb::serial::Read<u8> for Uart0 {
    fn read(&mut self) -> nb::Result<u8, Infallible> {
        self.try_read_byte().ok_or(nb::Error::WouldBlock)
    }
}

impl embedded_hal_nb::serial::Write<u8> for Uart0 {
    fn write(&mut self, byte: u8) -> nb::Result<(), Infallible> {
        if !self.tx_ready() {
            return Err(nb::Error::WouldBlock);
        }
        write_reg(reg::DATA, byte as u32);
        Ok(())
    }

    fn flush(&mut self) -> nb::Result<(), Infallible> {
        if self.tx_ready() {
            Ok(())
        } else {
            Err(nb::Error::WouldBlock)
        }
    }
}
