//! Every way out of the firmware ends in a semihosting exit: 0 for success, 1 for anything
//! else (a failed check, a panic, a fault, an unexpected interrupt), which QEMU returns as its
//! own exit status.
//!
//! Semihosting needs a debugger or QEMU's `-semihosting-config enable=on`; without one the
//! BKPT instruction faults, and a board would then sit in the fault loop below.

use cortex_m_rt::{exception, ExceptionFrame};
use cortex_m_semihosting::debug;

/// Exit with status 0.
pub fn success() -> ! {
    debug::exit(debug::EXIT_SUCCESS);
    park()
}

/// Exit with status 1.
pub fn failure() -> ! {
    debug::exit(debug::EXIT_FAILURE);
    park()
}

/// Where execution ends if the host lets the program continue after an exit request.
fn park() -> ! {
    loop {
        cortex_m::asm::wfi();
    }
}

/// Logs where the panic happened, not its message: formatting the message would keep every
/// panic site's `Debug` impls (string escaping, Unicode tables: kilobytes of flash) in the
/// image. The file and line lead to the message.
#[panic_handler]
fn panic(info: &core::panic::PanicInfo<'_>) -> ! {
    match info.location() {
        Some(at) => crate::error!("panic at {}:{}", at.file(), at.line()),
        None => crate::error!("panic"),
    }
    failure()
}

// SAFETY (definition): cortex-m-rt requires `unsafe fn` for the HardFault handler because it
// runs in any state; this one only reads the frame it is given and exits.
#[allow(unsafe_code)]
#[exception]
unsafe fn HardFault(frame: &ExceptionFrame) -> ! {
    crate::error!("HardFault at pc {}", frame.pc());
    failure()
}

// SAFETY (definition): as for HardFault; an interrupt nobody enabled is a bug, so stop.
#[allow(unsafe_code)]
#[exception]
unsafe fn DefaultHandler(irqn: i16) {
    crate::error!("unexpected exception or interrupt {}", i32::from(irqn));
    failure()
}
