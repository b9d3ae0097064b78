//! Builds only if nexus-host and rust-mavlink with its default `std` features coexist in one
//! crate graph (cargo unifies mavlink's features; `std` with `embedded` would not compile).
//! The tests in `tests/` exchange frames between the two in both directions.
