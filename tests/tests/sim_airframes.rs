//! The built-in vehicle's hexarotor and airplane fly their examples in PX4 SIH's sim time.
//!
//! The PX4 figures were measured on PX4 main of 2026-03-02 (02e73e3b6f), `px4_sitl_default`,
//! SIH, `PX4_SIM_SPEED_FACTOR=4`, with `nexus fly FILE --px4 BUILD --model M --speed 4 --tlog
//! … --json …` on instances 71 and 72 (the recordings, cut, are
//! `fixtures/px4-traces/plane-mission-x4.px4.tlog` and `hex-box-x4.px4.tlog`; their README
//! has the rest). Two figures per flight, both sim seconds:
//! * `sim_s` of the JSON report (first heartbeat to the verdict);
//! * arming to disarming ("Armed by external command" to "Disarmed by landing"), the flight
//!   itself. PX4's boot to armable stretches with the machine's load (its startup script runs
//!   while SIH's clock goes on: the first heartbeat came 16.5 s and 22.4 s into those runs,
//!   1.24 s on an idle machine), so the flight is the figure the model answers for.
//!
//! Instances 173, 174 and 172 (`tokio_flight` has them too; cargo runs test binaries one at a time).

mod cli_support;

use cli_support::{json, nexus};

/// `nexus fly PLAN` (or `run PROGRAM`) `--sim --model MODEL --speed max`: the JSON report.
fn fly_sim(plan: &str, model: &str, instance: &str) -> serde_json::Value {
    let verb = if plan.ends_with(".toml") { "run" } else { "fly" };
    let out = nexus(&[
        verb,
        plan,
        "--sim",
        "--model",
        model,
        "--instance",
        instance,
        "--speed",
        "max",
        "--json",
        "-",
    ])
    .output()
    .expect("run nexus");
    json(&out.stdout)
}

/// The sim time of the first text that starts with `prefix`, s.
fn text_at(r: &serde_json::Value, prefix: &str) -> f64 {
    r["texts"]
        .as_array()
        .and_then(|t| {
            t.iter()
                .find(|t| t["text"].as_str().is_some_and(|s| s.starts_with(prefix)))
        })
        .and_then(|t| t["t_sim_s"].as_f64())
        .unwrap_or_else(|| panic!("no text {prefix:?} in {r}"))
}

/// `got` within ±15 % of PX4's `px4`.
fn within_15_percent(what: &str, got: f64, px4: f64) {
    let ratio = got / px4;
    assert!(
        (0.85..=1.15).contains(&ratio),
        "{what}: built-in {got:.1} s vs PX4 {px4:.1} s (ratio {ratio:.2})"
    );
}

#[test]
fn the_airplane_flies_the_plane_mission_in_px4s_time() {
    // PX4 (plane-mission-x4): PASS, 5 items, runway takeoff to the east, loiter-to-altitude,
    // landing approach from the south; sim_s 136.0; armed at 21.54 s, "Disarmed by landing"
    // at 151.54 s: 130.0 s.
    let r = fly_sim("examples/plane-mission.plan", "airplane", "173");
    assert_eq!(r["passed"], true, "{r}");
    assert_eq!(r["vehicle"]["model"], "airplane");
    within_15_percent("sim_s", r["sim_s"].as_f64().unwrap(), 136.0);
    let flight = text_at(&r, "Disarmed by landing") - text_at(&r, "Armed by external command");
    within_15_percent("arming to disarming", flight, 130.0);
    // PX4's land detector: the takeoff on the roll, the landing ~2 s after touchdown, then
    // COM_DISARM_LAND.
    let takeoff = text_at(&r, "Takeoff detected") - text_at(&r, "Armed by external command");
    assert!(
        (1.5..=3.0).contains(&takeoff),
        "takeoff detected {takeoff} s after arming"
    );
    let disarm = text_at(&r, "Disarmed by landing") - text_at(&r, "Landing detected");
    assert!(
        (1.8..=2.6).contains(&disarm),
        "disarmed {disarm} s after landing"
    );
}

#[test]
fn the_hexarotor_flies_the_box_in_px4s_time() {
    // PX4 (hex-box-x4): PASS, 6 items; sim_s 71.2 (boot stretched to 20 s by load: see
    // above); armed at 42.43 s, "Disarmed by landing" at 92.43 s: 50.0 s.
    let r = fly_sim("examples/box.plan", "hex", "174");
    assert_eq!(r["passed"], true, "{r}");
    assert_eq!(r["vehicle"]["model"], "hex");
    within_15_percent("sim_s", r["sim_s"].as_f64().unwrap(), 71.2);
    let flight = text_at(&r, "Disarmed by landing") - text_at(&r, "Armed by external command");
    within_15_percent("arming to disarming", flight, 50.0);
}

#[test]
fn the_airplane_takes_off_loiters_at_the_goto_and_lands_in_px4s_time() {
    // PX4 (plane-loiter-x4): PASS, 7 steps; the goto a clockwise circle of NAV_LOITER_RAD
    // (80 m) around the point; armed at 34.77 s, "Disarmed by landing" at 128.80 s: 94.0 s
    // (its sim_s, 100.8, has a boot stretched by load).
    let r = fly_sim("examples/plane-loiter.toml", "airplane", "172");
    assert_eq!(r["passed"], true, "{r}");
    let flight = text_at(&r, "Disarmed by landing") - text_at(&r, "Armed by external command");
    within_15_percent("arming to disarming", flight, 94.0);
}
