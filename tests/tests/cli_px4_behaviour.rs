//! The examples that show what real PX4 does (measured on PX4 SITL, and passed there by
//! `scripts/px4-check`) pass on the built-in vehicle the same way: a reposition out of the
//! geofence refused in PX4's words, and a battery failure that ends in PX4's landing.

mod cli_support;

use cli_support::{json, nexus};
use predicates::prelude::*;

/// Run `example` on the built-in vehicle at ×20 on `instance`: it must pass with every one of
/// its `steps` met; its JSON report.
fn passes(example: &str, instance: &str, steps: usize) -> serde_json::Value {
    let out = nexus(&[
        "run",
        example,
        "--speed",
        "20",
        "--instance",
        instance,
        "--json",
    ])
    .assert()
    .success()
    .stderr(predicate::str::contains(format!(
        "PASS: all {steps} steps met"
    )))
    .get_output()
    .clone();
    let r = json(&out.stdout);
    assert_eq!(reasons(&r), vec!["met"; steps], "{r}");
    r
}

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
    let r = passes("examples/fence-refusal.toml", "62", 5);
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
    let r = passes("examples/battery-failure.toml", "63", 3);
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
    let r = passes("examples/rally-return.toml", "64", 5);
    assert_eq!(r["final"]["armed"], false);
}

#[test]
fn a_battery_run_low_warns_returns_and_lands() {
    let r = passes("examples/battery-low.toml", "66", 5);
    let texts = r["texts"].to_string();
    assert!(texts.contains("Low battery"), "{texts}");
    assert_eq!(r["final"]["armed"], false);
}
