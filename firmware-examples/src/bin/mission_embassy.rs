//! The mission firmware on embassy: the same flight as `mission` (the box mission stored in
//! flash, flown by the nexus-core `Client`), driven by one embassy-executor task over the
//! `embedded-io-async` UART ([`nexus_firmware::apump`]). Exits 0 when the flight is confirmed,
//! 1 with a logged reason otherwise.

#![no_std]
#![no_main]

use cortex_m_rt::entry;
use embassy_executor::Spawner;
use nexus_core::Duration;
use nexus_firmware::mission::{MissionFlight, RUN_CAP_MS};
use nexus_firmware::pump::{self, Pump};
use nexus_firmware::{board, clock, exit};

#[entry]
fn main() -> ! {
    nexus_firmware::executor::run(|spawner| match flight(spawner) {
        Ok(token) => token,
        Err(_) => exit::failure(),
    });
    exit::failure()
}

/// The flight, the executor's one task.
#[embassy_executor::task]
async fn flight(_spawner: Spawner) {
    let uart = board::bring_up();
    // The flight's state (the core client) is held across awaits: it lives in the task's
    // future, which embassy keeps in a static (.bss), not on the stack.
    let mut node = MissionFlight::new(clock::now());
    node.load_stored_plan("embassy task, async UART");
    let mut pump = Pump::new(uart);
    let outcome = pump
        .run_async(&mut node, Duration::from_millis(RUN_CAP_MS))
        .await;
    pump::finish(outcome, &pump, &node)
}
