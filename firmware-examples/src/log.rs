//! Logging: defmt over semihosting with the `defmt` feature, else plain semihosting lines.
//!
//! Format strings must use only what both accept: `{}` with integers and `&str`. Values with a
//! `Display` impl are not logged as such: each impl called stays in flash with the `core::fmt`
//! paths it drives ([`crate::report`] names failures in words and numbers instead). Without the
//! feature each line costs a semihosting call and `core::fmt`'s integer formatting; the firmware
//! logs only at start, on progress, on failure and at exit.

#[cfg(feature = "defmt")]
use defmt_semihosting as _; // the global defmt logger

/// Log a line at info level.
#[macro_export]
macro_rules! info {
    ($fmt:literal $(, $arg:expr)* $(,)?) => {{
        #[cfg(feature = "defmt")]
        ::defmt::info!($fmt $(, $arg)*);
        #[cfg(not(feature = "defmt"))]
        ::cortex_m_semihosting::hprintln!(concat!("INFO  ", $fmt) $(, $arg)*);
    }};
}

/// Log a line at error level.
#[macro_export]
macro_rules! error {
    ($fmt:literal $(, $arg:expr)* $(,)?) => {{
        #[cfg(feature = "defmt")]
        ::defmt::error!($fmt $(, $arg)*);
        #[cfg(not(feature = "defmt"))]
        ::cortex_m_semihosting::hprintln!(concat!("ERROR ", $fmt) $(, $arg)*);
    }};
}
