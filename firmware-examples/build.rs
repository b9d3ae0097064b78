//! Puts memory.x and device.x where cortex-m-rt's link.x finds them; adds defmt's linker
//! script when the `defmt` feature is on.

use std::{env, fs, path::PathBuf};

fn main() {
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    for file in ["memory.x", "device.x"] {
        fs::copy(file, out.join(file)).expect("copy linker script fragment to OUT_DIR");
        println!("cargo:rerun-if-changed={file}");
    }
    println!("cargo:rustc-link-search={}", out.display());
    if env::var_os("CARGO_FEATURE_DEFMT").is_some() {
        println!("cargo:rustc-link-arg=-Tdefmt.x");
    }
}
