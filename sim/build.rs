//! Turns `data/sih-quadx.tsv` and `data/sih-airplane.tsv` (PX4 SITL's parameter lists for the SIH
//! quadrotor and airplane, as PX4 lists them) into the parameter tables the simulated vehicle
//! serves: `$OUT_DIR/px4_table.rs` and `$OUT_DIR/px4_table_airplane.rs`, slice literals of
//! `(name, ParamKind, value)` sorted by name (byte order, as PX4 indexes them).
//! A malformed row fails the build with its line number. `_HASH_CHECK`, which PX4 sends ahead
//! of the list (a checksum of the values, not a parameter), is left out.

use std::fmt::Write as _;
use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    table("data/sih-quadx.tsv", "px4_table.rs");
    table("data/sih-airplane.tsv", "px4_table_airplane.rs");
}

fn table(tsv: &str, out_name: &str) {
    let src = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap()).join(tsv);
    println!("cargo:rerun-if-changed={}", src.display());
    let text = std::fs::read_to_string(&src).unwrap_or_else(|e| panic!("{}: {e}", src.display()));
    let mut rows: Vec<(String, &str, f64)> = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim_end();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let bad = |why: &str| -> ! { panic!("{}:{}: {why}: {line:?}", src.display(), n + 1) };
        if line.starts_with("_HASH_CHECK\t") {
            continue;
        }
        let mut cols = line.split('\t');
        let (Some(name), Some(ty), Some(value), None) =
            (cols.next(), cols.next(), cols.next(), cols.next())
        else {
            bad("expected name, type and value separated by tabs")
        };
        if name.is_empty()
            || name.len() > 16
            || !name
                .bytes()
                .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
        {
            bad("a parameter name is 1 to 16 of A-Z, 0-9 and _");
        }
        let kind = match ty {
            "INT32" => "Int32",
            "REAL32" => "Real32",
            _ => bad("the type is INT32 or REAL32"),
        };
        let v: f64 = value
            .parse()
            .unwrap_or_else(|_| bad("the value is a number"));
        if !v.is_finite() || (kind == "Int32" && (v.fract() != 0.0 || v.abs() > i32::MAX as f64)) {
            bad("the value fits its type");
        }
        rows.push((name.to_owned(), kind, v));
    }
    rows.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
    if let Some(w) = rows.windows(2).find(|w| w[0].0 == w[1].0) {
        panic!("{}: {} is listed twice", src.display(), w[0].0);
    }
    let mut out = String::from("&[\n");
    for (name, kind, v) in &rows {
        // `{:?}` of an f64 round-trips exactly and always has a decimal point or exponent.
        writeln!(out, "    ({name:?}, ParamKind::{kind}, {v:?}),").unwrap();
    }
    out.push_str("]\n");
    let dst = PathBuf::from(std::env::var("OUT_DIR").unwrap()).join(out_name);
    std::fs::write(&dst, out).unwrap_or_else(|e| panic!("{}: {e}", dst.display()));
}
