//! Logging: defmt over semihosting with the `defmt` feature, else plain semihosting lines.
//!
//! Format strings must use only what both accept: `{}` with integers, `&str` and
//! [`display`]-wrapped values. Without the feature each line costs a semihosting call and
//! `core::fmt`; the firmware logs only at start, on failure and at exit.

#[cfg(feature = "defmt")]
use defmt_semihosting as _; // the global defmt logger

/// Wrap a `Display` value so both back ends can print it.
#[cfg(feature = "defmt")]
pub fn display<T: core::fmt::Display + ?Sized>(value: &T) -> defmt::Display2Format<'_, T> {
    defmt::Display2Format(value)
}

/// Wrap a `Display` value so both back ends can print it.
#[cfg(not(feature = "defmt"))]
pub fn display<T: core::fmt::Display + ?Sized>(value: &T) -> &T {
    value
}

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
