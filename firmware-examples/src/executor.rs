//! The thread-mode loop around embassy-executor's raw executor: poll the woken tasks, then
//! sleep with WFI until an interrupt.
//!
//! embassy's own Cortex-M thread executor sleeps with WFE and is woken by SEV. QEMU does not
//! sleep on WFE (it treats it as a yield): the executor would spin, and the emulated UART, which
//! hands over one byte per QEMU main-loop turn, would slow down under it. WFI sleeps on QEMU
//! and on hardware alike. The pender only sets a flag; the flag is checked with interrupts
//! masked before the WFI, so a wake from an interrupt handler cannot be missed (WFI still
//! returns on the pending interrupt, which runs once unmasked).

use core::sync::atomic::{AtomicBool, Ordering};

use embassy_executor::raw::Executor;
use embassy_executor::{SpawnToken, Spawner};

/// Set by the pender: a task was woken, poll again before sleeping.
static PENDED: AtomicBool = AtomicBool::new(true);

/// embassy-executor calls this (by its link name) when a task of ours is woken, from a task
/// or from an interrupt handler.
#[allow(unsafe_code)]
#[export_name = "__pender"]
fn pender(_context: *mut ()) {
    PENDED.store(true, Ordering::Release);
}

/// Run `task` (and whatever it spawns) forever on the one executor. Returns only if the
/// executor was already taken (a second call).
pub fn run<S>(task: impl FnOnce(Spawner) -> SpawnToken<S>) -> Option<core::convert::Infallible> {
    let executor: &'static Executor =
        cortex_m::singleton!(: Executor = Executor::new(core::ptr::null_mut()))?;
    let spawner = executor.spawner();
    spawner.spawn(task(spawner));
    loop {
        PENDED.store(false, Ordering::Release);
        // SAFETY: `poll` is called only here, from thread mode, never from the pender or an
        // interrupt handler, so never reentrantly.
        #[allow(unsafe_code)]
        unsafe {
            executor.poll()
        };
        cortex_m::interrupt::free(|_| {
            if !PENDED.load(Ordering::Acquire) {
                cortex_m::asm::wfi();
            }
        });
    }
}
