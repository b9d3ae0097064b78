//! The built-in vehicle flies the four recorded PX4 flights in PX4's time: every phase of
//! `fixtures/calibration/px4-phases.tsv` (from the real PX4 traces, `scripts/trace-phases`)
//! within ±15 %, each flight's total within ±10 %. The flights run through `nexus` as a user
//! runs them, on instances 193-196 at speed 20 (a few wall seconds each).

mod cli_support;

use cli_support::{json, nexus, repo, Scratch};
use serde_json::Value;

/// PX4's phases of `flight`, in the fixture's order.
fn px4(flight: &str) -> Vec<(String, f64)> {
    let text = std::fs::read_to_string(repo("fixtures/calibration/px4-phases.tsv")).unwrap();
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .filter_map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            (f[0] == flight).then(|| (f[1].to_owned(), f[2].parse().unwrap()))
        })
        .collect()
}

fn run(args: &[&str], instance: &str) -> Value {
    let mut all = args.to_vec();
    all.extend(["--speed", "20", "--instance", instance, "--json"]);
    let out = nexus(&all).assert().success().get_output().clone();
    json(&out.stdout)
}

/// Sim time of the first text containing `needle`.
fn text_t(r: &Value, needle: &str) -> f64 {
    r["texts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["text"].as_str().unwrap().contains(needle))
        .unwrap_or_else(|| panic!("no text {needle:?} in {}", r["texts"]))["t_sim_s"]
        .as_f64()
        .unwrap()
}

/// Sim time at which step `i` (0-based) was met.
fn step_t(r: &Value, i: usize) -> f64 {
    r["steps"][i]["snapshot"]["t_sim_s"].as_f64().unwrap()
}

/// The flight's sim seconds as its verdict states them ("… after 63.5 s sim …").
fn total(r: &Value) -> f64 {
    let v = r["verdict"].as_str().unwrap();
    let head = &v[..v.find(" s sim").unwrap_or_else(|| panic!("{v}"))];
    head.rsplit(' ').next().unwrap().parse().unwrap()
}

/// Compare the simulated phases with PX4's; print the ratios; fail naming every phase off.
fn compare(flight: &str, sim: &[f64]) {
    let px4 = px4(flight);
    assert_eq!(px4.len(), sim.len(), "{flight}: phases in the fixture");
    let mut bad = Vec::new();
    for ((name, p), s) in px4.iter().zip(sim) {
        let ratio = s / p;
        let tol = if name == "total" { 0.10 } else { 0.15 };
        eprintln!("{flight} {name}: sim {s:.2} s, PX4 {p:.2} s, ratio {ratio:.2}");
        if (ratio - 1.0).abs() > tol {
            bad.push(format!("{name}: sim {s:.2} s vs PX4 {p:.2} s ({ratio:.2})"));
        }
    }
    assert!(bad.is_empty(), "{flight}: phases off PX4's: {bad:?}");
}

#[test]
fn nexus_fly_box_plan_in_px4s_time() {
    let r = run(&["fly", "examples/box.plan"], "193");
    // Steps: 0 start (armed), 1 mission complete (the LAND reached at touchdown), 2 landed,
    // 3 disarmed. PX4's phases split at MISSION_CURRENT 5 (flying to the LAND item), which
    // the report's mission progress records.
    let armed = text_t(&r, "Armed by");
    let to_last = r["mission"]["progress"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["item"] == 5)
        .unwrap_or_else(|| panic!("no progress to item 5: {}", r["mission"]))["t_sim_s"]
        .as_f64()
        .unwrap();
    compare(
        "fly-box",
        &[to_last - armed, step_t(&r, 2) - to_last, total(&r)],
    );
    // A mission that ends landed disarms at once (box-x4: 0.1 s after "Landing detected").
    let after = text_t(&r, "Disarmed by landing") - text_t(&r, "Landing detected");
    assert!(
        (0.0..=0.3).contains(&after),
        "disarmed {after} s after landing"
    );
}

#[test]
fn box_mission_item_by_item_in_px4s_time() {
    let s = Scratch::new("calibration-box");
    std::fs::copy(repo("examples/box.plan"), s.path("box.plan")).unwrap();
    // examples/box-mission.toml with a step per MISSION_CURRENT change, to time each leg.
    let mut prog = String::from(
        "name = \"box phases\"\n[[step]]\naction = \"upload\"\nplan = \"box.plan\"\n\
         [[step]]\naction = \"start\"\nuntil = \"armed\"\ntimeout_s = 60\n",
    );
    for n in 1..=5 {
        prog += &format!("[[step]]\nuntil = {{ waypoint = {n} }}\ntimeout_s = 120\n");
    }
    prog += "[[step]]\nuntil = \"landed\"\ntimeout_s = 120\n\
             [[step]]\nuntil = \"disarmed\"\ntimeout_s = 60\n";
    let file = s.file("box-phases.toml", &prog);
    let r = run(&["run", file.to_str().unwrap()], "194");
    let armed = text_t(&r, "Armed by");
    // Steps: 0 upload, 1 armed, 2..=6 MISSION_CURRENT 1..=5, 7 landed, 8 disarmed.
    compare(
        "box-mission",
        &[
            text_t(&r, "Takeoff detected") - armed,
            step_t(&r, 2) - armed,
            step_t(&r, 3) - step_t(&r, 2),
            step_t(&r, 4) - step_t(&r, 3),
            step_t(&r, 5) - step_t(&r, 4),
            step_t(&r, 6) - step_t(&r, 5),
            step_t(&r, 7) - step_t(&r, 6),
            total(&r),
        ],
    );
}

#[test]
fn takeoff_hover_land_in_px4s_time() {
    let r = run(&["run", "examples/takeoff-hover-land.toml"], "195");
    let armed = text_t(&r, "Armed by");
    // Steps: 0 take off (4.5 m held 2 s), 1 hover 10 s, 2 landed, 3 disarmed.
    compare(
        "takeoff-hover-land",
        &[
            text_t(&r, "Takeoff detected") - armed,
            step_t(&r, 0) - armed,
            step_t(&r, 2) - step_t(&r, 1),
            text_t(&r, "Disarmed by landing") - text_t(&r, "Landing detected"),
            total(&r),
        ],
    );
}

#[test]
fn wait_for_text_with_reaction_in_px4s_time() {
    let r = run(&["run", "examples/wait-for-text-with-reaction.toml"], "196");
    let armed = text_t(&r, "Armed by");
    // Steps: 0 takeoff until "Takeoff detected" (then Hold), 1 in Hold, 2 holding 5 s, 3 land.
    compare(
        "wait-for-text",
        &[
            text_t(&r, "Takeoff detected") - armed,
            step_t(&r, 2) - step_t(&r, 0),
            step_t(&r, 3) - step_t(&r, 2),
            total(&r),
        ],
    );
}
