//! The mission firmware: nexus-core flies the QGroundControl box mission stored in flash.
//!
//! At reset it parses the `.plan` bytes kept in flash (the repository's
//! `fixtures/plans/MC_mission_box.plan`) with the core's plan reader, then drives the core
//! `Client` over UART0 ([`nexus_firmware::mission`] has the phases): it waits for the
//! autopilot, uploads the mission, starts it, and waits until the mission is complete and the
//! vehicle has landed (a `landed` wait whose reaction commands Hold), then disarmed. It exits
//! through semihosting: 0 when the flight is confirmed, 1 with a logged reason otherwise.

#![no_std]
#![no_main]

use cortex_m_rt::entry;
use nexus_core::Duration;
use nexus_firmware::mission::{MissionClient, MissionFlight, FLIGHT_WALL_MS, IDS};
use nexus_firmware::pump::{self, Outcome, Pump};
use nexus_firmware::uart::Uart0;
use nexus_firmware::{clock, error, exit, info};

/// UART0 rate (QEMU does not limit it; a bench rig's flight controller would use this).
const BAUD: u32 = 921_600;

/// The mission: the repository's `fixtures/plans/MC_mission_box.plan` as QGroundControl saved
/// it, its indentation removed by build.rs (the same JSON document, 1476 bytes instead of 3845).
static PLAN: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/MC_mission_box.plan"));

/// Backstop for the whole run, ms of driver time (each phase has its own, shorter limits).
const RUN_CAP_MS: u64 = FLIGHT_WALL_MS + 120_000;

#[entry]
fn main() -> ! {
    let Some(core) = cortex_m::Peripherals::take() else {
        exit::failure()
    };
    clock::start(core.SYST);
    let Some(uart) = Uart0::take(BAUD) else {
        exit::failure()
    };
    let mut node = MissionFlight::new(clock::now());
    match node.load_plan(PLAN) {
        Ok(n) => info!(
            "mission: {} items from a {}-byte .plan; core client {} bytes; waiting for system {}",
            n,
            PLAN.len(),
            core::mem::size_of::<MissionClient>(),
            u32::from(IDS.target_sysid)
        ),
        Err(why) => {
            error!("result: failure: {}", why);
            exit::failure()
        }
    }
    fly(&mut node, uart)
}

/// The flight loop, in its own frame: only the flight itself lives in `main`'s.
#[inline(never)]
fn fly(node: &mut MissionFlight, uart: Uart0) -> ! {
    let mut pump = Pump::new(uart);
    let outcome = pump.run(node, Duration::from_millis(RUN_CAP_MS));
    info!("frames accepted from the autopilot: {}", node.accepted());
    if let Outcome::Failure(_) | Outcome::WallCap = outcome {
        info!("mission: flight not confirmed");
    }
    pump::finish(outcome, &pump)
}
