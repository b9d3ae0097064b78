//! The driver's monotonic clock: SysTick at 1 kHz, counted in the exception handler.
//!
//! nexus-core never reads a clock; the firmware passes [`now`] into every call. SysTick runs
//! from the 25 MHz core clock (QEMU models it in real time), so a millisecond is 25 000
//! cycles. The count is 64-bit: it does not wrap in the life of the universe.

use core::cell::Cell;

use cortex_m::peripheral::syst::SystClkSource;
use cortex_m::peripheral::SYST;
use cortex_m_rt::exception;
use critical_section::Mutex;
use nexus_core::Instant;

use crate::board::SYSCLK_HZ;

static MILLIS: Mutex<Cell<u64>> = Mutex::new(Cell::new(0));

/// Start the millisecond tick. Takes SysTick for good.
pub fn start(mut syst: SYST) {
    syst.set_clock_source(SystClkSource::Core);
    syst.set_reload(SYSCLK_HZ / 1000 - 1);
    syst.clear_current();
    syst.enable_interrupt();
    syst.enable_counter();
}

/// Milliseconds since [`start`].
pub fn millis() -> u64 {
    critical_section::with(|cs| MILLIS.borrow(cs).get())
}

/// Now, on the driver's clock (ms resolution).
pub fn now() -> Instant {
    Instant::from_millis(millis())
}

/// Sleep until the next interrupt (at most a tick) unless `ready()` already holds.
///
/// `ready` is checked with interrupts masked, so an interrupt that makes it true cannot slip
/// in between the check and the sleep: WFI still wakes on it, and it runs on unmasking.
pub fn sleep_unless(ready: impl FnOnce() -> bool) {
    cortex_m::interrupt::free(|_| {
        if !ready() {
            cortex_m::asm::wfi();
        }
    });
}

/// The async driver's timer ([`sleep_until`]): its deadline, µs, and its task. (Compared as
/// ms × 1000, never divided: a u64 division would link 0.9 KB of compiler builtins.) A `Cell`
/// taken and put back, not a `RefCell`: a `RefCell`'s borrow panic keeps its message's
/// `Display` impl in flash.
static TIMER: Mutex<Cell<Option<(u64, core::task::Waker)>>> = Mutex::new(Cell::new(None));

/// Sleep (the task, not the core: other tasks run) until [`now`] reaches `at`. One timer:
/// the async driver's loop is the only user. Cancel-safe.
pub async fn sleep_until(at: Instant) {
    let at_us = at.total_micros();
    core::future::poll_fn(|cx| {
        critical_section::with(|cs| {
            if MILLIS.borrow(cs).get() * 1000 >= at_us {
                return core::task::Poll::Ready(());
            }
            TIMER.borrow(cs).set(Some((at_us, cx.waker().clone())));
            core::task::Poll::Pending
        })
    })
    .await
}

#[exception]
fn SysTick() {
    let due = critical_section::with(|cs| {
        let ms = MILLIS.borrow(cs);
        ms.set(ms.get() + 1);
        let timer = TIMER.borrow(cs);
        match timer.take() {
            Some((at_us, w)) if at_us <= ms.get() * 1000 => Some(w),
            pending => {
                timer.set(pending);
                None
            }
        }
    });
    if let Some(w) = due {
        w.wake();
    }
}
