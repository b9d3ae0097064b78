//! The `nexus` command.
fn main() {}
