//! The examples that show what real PX4 does (measured on PX4 SITL, and passed there by
//! `scripts/px4-check`) pass on the built-in vehicle the same way: a reposition out of the
//! geofence refused in PX4's words, and a battery failure that ends in PX4's landing.

mod cli_support;

use cli_support::{json, nexus};
use predicates::prelude::*;

fn reasons(r: &serde_json::Value) -> Vec<String> {
    r["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["reason"].as_str().unwrap_or("").to_string())
        .collect()
}

#[test]
fn a_reposition_out_of_the_fence_is_refused_and_the_vehicle_lands_inside() {
    let out = nexus(&[
        "run",
        "examples/fence-refusal.toml",
        "--speed",
        "20",
        "--instance",
        "62",
        "--json",
    ])
    .assert()
    .success()
    .stderr(predicate::str::contains("PASS: all 5 steps met"))
    .get_output()
    .clone();
    let r = json(&out.stdout);
    assert_eq!(reasons(&r), ["met"; 5]);
    let events = r["events"].to_string();
    assert!(
        events.contains("Reposition is outside geofence"),
        "{events}"
    );
    // It held where it was: never breached the fence.
    let texts = r["texts"].to_string();
    assert!(!texts.contains("Geofence violation"), "{texts}");
    assert_eq!(r["final"]["landed_state"], "ON_GROUND");
}

#[test]
fn a_battery_failure_at_20_m_ends_in_pxs_landing() {
    let out = nexus(&[
        "run",
        "examples/battery-failure.toml",
        "--speed",
        "20",
        "--instance",
        "63",
        "--json",
    ])
    .assert()
    .success()
    .stderr(predicate::str::contains("PASS: all 3 steps met"))
    .get_output()
    .clone();
    let r = json(&out.stdout);
    assert_eq!(reasons(&r), ["met"; 3]);
    let texts = r["texts"].to_string();
    for said in [
        "Low battery",
        "Emergency battery level",
        "Failsafe activated",
    ] {
        assert!(texts.contains(said), "{said} not in {texts}");
    }
    assert_eq!(r["steps"][1]["snapshot"]["mode"], "Land");
    assert_eq!(r["final"]["armed"], false);
}

#[test]
fn rtl_comes_down_at_the_closest_rally_point() {
    let out = nexus(&[
        "run",
        "examples/rally-return.toml",
        "--speed",
        "20",
        "--instance",
        "64",
        "--json",
    ])
    .assert()
    .success()
    .stderr(predicate::str::contains("PASS: all 5 steps met"))
    .get_output()
    .clone();
    let r = json(&out.stdout);
    assert_eq!(reasons(&r), ["met"; 5]);
    assert_eq!(r["final"]["armed"], false);
}
