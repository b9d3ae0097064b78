//! UART0 driver self-test: receive back-pressure, both read forms, transmit.
//!
//! Protocol with the peer on the other end of UART0:
//! 1. the firmware sends `READY\n`;
//! 2. the peer sends [`LEN`] bytes, byte `i` being [`pattern`]`(i)`;
//! 3. the firmware does not read for [`STALL_MS`] after the first byte arrives, so the receive
//!    queue fills and the interrupt handler has to pause reception; then it reads everything,
//!    the first [`NB_BYTES`] through the `nb` trait and the rest through `embedded_io::Read`;
//! 4. it sends `OK <len>\n` and exits 0 if every byte arrived in order, the queue was seen full
//!    (the pause happened) and the hardware reported no overrun; else `FAIL\n` and exit 1.
//!
//! Everything must finish within [`TIMEOUT_MS`].

#![no_std]
#![no_main]

use cortex_m_rt::entry;
use embedded_io::{Read, ReadReady, Write};
use nexus_firmware::uart::{Uart0, RX_QUEUE_LEN};
use nexus_firmware::{board, clock, error, exit, info};

/// Bytes the peer sends: many times the queue.
const LEN: usize = 8 * RX_QUEUE_LEN;
/// How long reading stalls after the first byte, ms.
const STALL_MS: u64 = 200;
/// Bytes read one at a time through `embedded_hal_nb::serial::Read`.
const NB_BYTES: usize = 100;
/// The whole test, ms.
const TIMEOUT_MS: u64 = 5000;

/// Byte `i` of the peer's stream (the test in tests/tests/firmware_link.rs uses the same).
fn pattern(i: usize) -> u8 {
    (i.wrapping_mul(7).wrapping_add(i >> 8)) as u8
}

fn fail(uart: &mut Uart0, why: &str) -> ! {
    let _ = uart.write_all(b"FAIL\n");
    let _ = uart.flush();
    error!("uart_selftest: {}", why);
    exit::failure()
}

#[entry]
fn main() -> ! {
    let mut uart = board::bring_up();
    let deadline = clock::millis() + TIMEOUT_MS;
    let _ = uart.write_all(b"READY\n");

    // Stall: let the queue fill while the peer keeps sending.
    while uart.rx_queued() == 0 {
        if clock::millis() > deadline {
            fail(&mut uart, "no data");
        }
        clock::sleep_unless(|| false);
    }
    let stall_end = clock::millis() + STALL_MS;
    while clock::millis() < stall_end {
        clock::sleep_unless(|| false);
    }
    let queued_at_stall = uart.rx_queued();

    let mut got = 0usize;
    while got < NB_BYTES {
        let b = match embedded_hal_nb::serial::Read::read(&mut uart) {
            Ok(b) => b,
            Err(nb::Error::WouldBlock) => {
                if clock::millis() > deadline {
                    fail(&mut uart, "timed out (nb)");
                }
                continue;
            }
            Err(nb::Error::Other(e)) => match e {},
        };
        if b != pattern(got) {
            fail(&mut uart, "wrong byte (nb)");
        }
        got += 1;
    }
    let mut buf = [0u8; 64];
    while got < LEN {
        if clock::millis() > deadline {
            fail(&mut uart, "timed out");
        }
        if !uart.read_ready().unwrap_or(false) {
            clock::sleep_unless(|| false);
            continue;
        }
        let want = buf.len().min(LEN - got);
        let Ok(n) = uart.read(&mut buf[..want]);
        for &b in &buf[..n] {
            if b != pattern(got) {
                fail(&mut uart, "wrong byte");
            }
            got += 1;
        }
    }

    let stats = uart.stats();
    info!(
        "uart_selftest: {} bytes, {} queued at stall, {} throttles, {} overruns",
        got, queued_at_stall, stats.rx_throttles, stats.rx_overruns
    );
    if queued_at_stall != RX_QUEUE_LEN - 1 || stats.rx_throttles == 0 {
        fail(&mut uart, "the queue never filled: back-pressure untested");
    }
    if stats.rx_overruns != 0 {
        fail(&mut uart, "hardware overrun");
    }
    let _ = writeln!(uart, "OK {}", got);
    let _ = uart.flush();
    info!(
        "stack: high-water mark {} of {} bytes",
        nexus_firmware::stack::usage().used_bytes,
        nexus_firmware::stack::usage().size_bytes
    );
    exit::success()
}
