//! # nexus-firmware
//!
//! `no_std` firmware pieces for QEMU's `mps2-an386` board (Cortex-M4F), and the binaries built
//! from them: nexus-core driven over a serial MAVLink link, the way a flight controller's
//! companion MCU would run it.
//!
//! * [`board`]: clock, addresses, interrupt numbers, the interrupt vector table;
//! * [`uart`]: the CMSDK APB UART0 driver (embedded-io and `nb`, interrupt-driven receive);
//! * [`clock`]: the SysTick millisecond clock that supplies `now`;
//! * [`pump`]: the main loop around a sans-IO [`pump::Node`], and the exit report;
//!   [`apump`]: the same loop as an async task (embassy-executor, `embedded-io-async`), run by
//!   [`executor`]'s thread-mode loop;
//! * [`mission`]: the mission flight, the nexus-core `Client` as a [`pump::Node`];
//!   [`report`]: its failure reports, in a few words and numbers;
//! * [`stack`]: the stack high-water mark; [`exit`]: semihosting exit, panic and fault
//!   handlers; [`log`]: `info!`/`error!` over defmt or plain semihosting.
//!
//! Binaries: `link_check` (bring-up: proves the serial MAVLink path both ways), `mission`
//! (flies the box mission stored in flash), `mission_embassy` (the same flight as an embassy task
//! over the async UART), `uart_selftest` (the UART driver's own test).
//!
//! Run one with `cargo run --release --bin link_check` (QEMU, UART0 on stdio); the end-to-end
//! test in `tests/tests/firmware_link.rs` plays the autopilot on a TCP socket instead.
#![no_std]

pub mod apump;
pub mod board;
pub mod clock;
pub mod executor;
pub mod exit;
pub mod log;
pub mod mission;
pub mod pump;
pub mod report;
pub mod stack;
pub mod uart;

pub use nexus_core;
