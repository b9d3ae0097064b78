//! QEMU's `mps2-an386` board: clock, peripheral addresses, interrupt numbers, and the interrupt
//! half of the vector table.
//!
//! The AN386 FPGA image is the AN385 one with a Cortex-M4F; QEMU models both the same way
//! (hw/arm/mps2.c): CMSDK APB UARTs at 0x4000_4000 + 0x1000·n, each with its RX interrupt on an
//! even line and TX on the next one (UART0: 0 and 1), all clocked from the 25 MHz system clock.
//!
//! There is no peripheral-access crate for this board on crates.io, so the few definitions the
//! firmware needs live here. The vector table refers to its handlers directly instead of by
//! symbol name, so a handler can never silently fall back to the default one.

use cortex_m::interrupt::InterruptNumber;

/// System (and peripheral) clock of the AN385/AN386 images, Hz.
pub const SYSCLK_HZ: u32 = 25_000_000;

/// Base address of CMSDK APB UART0.
pub const UART0_BASE: usize = 0x4000_4000;

/// Number of external interrupt lines QEMU gives the AN385/AN386 NVIC.
pub const IRQ_COUNT: usize = 32;

/// The external interrupts this firmware uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u16)]
pub enum Irq {
    /// UART0 receive: a byte is in the RX buffer.
    Uart0Rx = 0,
}

// SAFETY: `number()` returns the enum's discriminant, and every discriminant is a valid interrupt
// line of this board (< IRQ_COUNT), as `InterruptNumber` requires.
#[allow(unsafe_code)]
unsafe impl InterruptNumber for Irq {
    fn number(self) -> u16 {
        self as u16
    }
}

extern "C" {
    /// cortex-m-rt's catch-all exception handler (overridden in `exit.rs`).
    fn DefaultHandler();
}

/// The interrupt half of the vector table, placed right after cortex-m-rt's exception half.
///
/// cortex-m-rt's `device` feature leaves this table to the device crate; this is it.
#[allow(unsafe_code)]
// SAFETY (attributes): `__INTERRUPTS` is the one symbol of this name in the image (cortex-m-rt
// defines none with the `device` feature), and `.vector_table.interrupts` is where its linker
// script expects exactly this array of handler addresses.
#[link_section = ".vector_table.interrupts"]
#[no_mangle]
pub static __INTERRUPTS: [unsafe extern "C" fn(); IRQ_COUNT] = {
    let mut table: [unsafe extern "C" fn(); IRQ_COUNT] = [DefaultHandler; IRQ_COUNT];
    table[Irq::Uart0Rx as usize] = crate::uart::uart0_rx_isr;
    table
};

/// UART0 rate of the link to the autopilot (QEMU does not limit it; a bench rig's flight
/// controller would use this).
pub const LINK_BAUD: u32 = 921_600;

/// Bring the board up for a firmware on the serial link: take the core peripherals, start the
/// SysTick clock ([`crate::clock`]), and take UART0 at [`LINK_BAUD`]. Exits with status 1 if
/// either was taken already (a second call).
pub fn bring_up() -> crate::uart::Uart0 {
    let Some(core) = cortex_m::Peripherals::take() else {
        crate::exit::failure()
    };
    crate::clock::start(core.SYST);
    let Some(uart) = crate::uart::Uart0::take(LINK_BAUD) else {
        crate::exit::failure()
    };
    uart
}
