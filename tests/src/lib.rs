//! Shared helpers for the end-to-end tests in `tests/tests/`, and the documentation's Rust
//! code as doctests.

/// The `rust` blocks of README.md and docs/ as doctests: `cargo test --doc -p nexus-tests`
/// compiles and runs each one (their flights use SITL instances 180, 182 and 184).
/// `tests/tests/docs_blocks.rs` checks that every page with a `rust` block is included here.
#[cfg(doctest)]
pub mod docs {
    #[doc = include_str!("../../README.md")]
    pub struct Readme;
    #[doc = include_str!("../../docs/library.md")]
    pub struct Library;
}
