//! The mission firmware: nexus-core flies the QGroundControl box mission stored in flash.
//!
//! At reset it parses the `.plan` bytes kept in flash (the repository's
//! `fixtures/plans/MC_mission_box.plan`, [`nexus_firmware::mission::PLAN`]) with the core's
//! plan reader, then drives the core `Client` over UART0 ([`nexus_firmware::mission`] has the
//! phases): it waits for the autopilot, uploads the mission, starts it, and waits until the
//! mission is complete and the vehicle has landed (a `landed` wait whose reaction commands
//! Hold), then disarmed. It exits through semihosting: 0 when the flight is confirmed, 1 with a
//! logged reason otherwise.

#![no_std]
#![no_main]

use cortex_m_rt::entry;
use nexus_core::Duration;
use nexus_firmware::mission::{MissionFlight, RUN_CAP_MS};
use nexus_firmware::pump::{self, Pump};
use nexus_firmware::uart::Uart0;
use nexus_firmware::{board, clock, info};

#[entry]
fn main() -> ! {
    let uart = board::bring_up();
    let mut node = MissionFlight::new(clock::now());
    node.load_stored_plan("blocking loop");
    fly(&mut node, uart)
}

/// The flight loop, in its own frame: only the flight itself lives in `main`'s.
#[inline(never)]
fn fly(node: &mut MissionFlight, uart: Uart0) -> ! {
    let mut pump = Pump::new(uart);
    let outcome = pump.run(node, Duration::from_millis(RUN_CAP_MS));
    info!("frames accepted from the autopilot: {}", node.accepted());
    pump::finish(outcome, &pump, node)
}
