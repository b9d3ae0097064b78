//! Puts the linker script fragments where cortex-m-rt's link.x finds them: device.x for every
//! binary, and each binary's memory map as the `memory.x` that link.x includes:
//! memory-budget.x (64 KiB flash, 16 KiB RAM) for every one of them. No `memory.x` may sit in
//! the package root: the linker looks in its working directory first. Adds defmt's linker
//! script when the `defmt` feature is on. Writes the mission firmware's `.plan` to `OUT_DIR` with the JSON's
//! insignificant whitespace removed (see [`compact_json`]).

use std::{env, fs, path::PathBuf};

/// Binaries and the memory map each links against.
const MEMORY_MAPS: [(&str, &str); 4] = [
    ("link_check", "memory-budget.x"),
    ("uart_selftest", "memory-budget.x"),
    ("mission", "memory-budget.x"),
    ("mission_embassy", "memory-budget.x"),
];

fn main() {
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    fs::copy("device.x", out.join("device.x")).expect("copy device.x to OUT_DIR");
    println!("cargo:rerun-if-changed=device.x");
    println!("cargo:rustc-link-search={}", out.display());
    // link.x says `INCLUDE memory.x`: give each binary a search directory holding its own
    // (and none in the shared directory, where an older build script put one).
    let _ = fs::remove_file(out.join("memory.x"));
    for (bin, map) in MEMORY_MAPS {
        let dir = out.join("memory").join(bin);
        fs::create_dir_all(&dir).expect("create the memory map directory in OUT_DIR");
        fs::copy(map, dir.join("memory.x")).expect("copy the memory map to OUT_DIR");
        println!("cargo:rerun-if-changed={map}");
        println!("cargo:rustc-link-arg-bin={bin}=-L{}", dir.display());
    }
    let plan = "../fixtures/plans/MC_mission_box.plan";
    let text = fs::read(plan).expect("read the mission's .plan");
    fs::write(out.join("MC_mission_box.plan"), compact_json(&text)).expect("write the .plan");
    println!("cargo:rerun-if-changed={plan}");
    if env::var_os("CARGO_FEATURE_DEFMT").is_some() {
        println!("cargo:rustc-link-arg=-Tdefmt.x");
    }
}

/// `json` without the whitespace between its tokens: the same document, value for value (every
/// string and number byte for byte as written), for flash. QGroundControl indents its `.plan`
/// files: the box mission is 3845 bytes as saved and 1476 without the indentation.
fn compact_json(json: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(json.len());
    let (mut in_string, mut escaped) = (false, false);
    for &b in json {
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
        } else if matches!(b, b' ' | b'\t' | b'\n' | b'\r') {
            continue;
        } else {
            in_string = b == b'"';
        }
        out.push(b);
    }
    out
}
