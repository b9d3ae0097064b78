//! The mission firmware on embassy: the same flight as `mission` (the box mission stored in
//! flash, flown by the nexus-core `Client`), driven by one embassy-executor task over the
//! `embedded-io-async` UART ([`nexus_firmware::apump`]). Exits 0 when the flight is confirmed,
//! 1 with a logged reason otherwise.

#![no_std]
#![no_main]

use cortex_m_rt::entry;
use embassy_executor::Spawner;
use nexus_core::Duration;
use nexus_firmware::apump::AsyncPump;
use nexus_firmware::mission::{MissionFlight, FLIGHT_WALL_MS};
use nexus_firmware::pump;
use nexus_firmware::uart::Uart0;
use nexus_firmware::{clock, error, exit, info};

/// UART0 rate (QEMU ignores it).
const BAUD: u32 = 921_600;

/// The repository's box mission, as the `mission` firmware stores it.
static PLAN: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/MC_mission_box.plan"));

/// Backstop for the whole run, ms of driver time.
const RUN_CAP_MS: u64 = FLIGHT_WALL_MS + 120_000;

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
    let Some(core) = cortex_m::Peripherals::take() else {
        exit::failure()
    };
    clock::start(core.SYST);
    let Some(uart) = Uart0::take(BAUD) else {
        exit::failure()
    };
    // The flight's state (the core client) is held across awaits: it lives in the task's
    // future, which embassy keeps in a static (.bss), not on the stack.
    let mut node = MissionFlight::new(clock::now());
    match node.load_plan(PLAN) {
        Ok(n) => info!("mission: {} items; embassy task, async UART", n),
        Err(why) => {
            error!("result: failure: {}", why);
            exit::failure()
        }
    }
    let mut pump = AsyncPump::new(uart);
    let outcome = pump.run(&mut node, Duration::from_millis(RUN_CAP_MS)).await;
    pump::finish_with(outcome, pump.stats(), pump.io().stats())
}
