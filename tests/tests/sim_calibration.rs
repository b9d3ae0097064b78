//! The built-in vehicle flies the box mission in PX4's time: each phase of
//! `fixtures/calibration/box-x4.tsv` (extracted from the real PX4 trace by
//! `scripts/trace-phases`) within ±15 %, the whole flight within ±10 %.

mod cli_support;

use cli_support::{json, nexus, repo, Scratch};

fn px4_phases() -> Vec<(String, f64)> {
    let text = std::fs::read_to_string(repo("fixtures/calibration/box-x4.tsv")).unwrap();
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let mut f = l.split('\t');
            let name = f.next().unwrap().to_owned();
            (name, f.next().unwrap().parse().unwrap())
        })
        .collect()
}

#[test]
fn the_box_mission_flies_in_px4s_phase_times() {
    let s = Scratch::new("calibration-box");
    std::fs::copy(repo("examples/box.plan"), s.path("box.plan")).unwrap();
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
    let out = nexus(&[
        "run",
        file.to_str().unwrap(),
        "--speed",
        "20",
        "--instance",
        "192",
        "--json",
    ])
    .assert()
    .success()
    .get_output()
    .clone();
    let r = json(&out.stdout);
    let armed = r["texts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["text"].as_str().unwrap().contains("Armed by"))
        .unwrap()["t_sim_s"]
        .as_f64()
        .unwrap();
    let at = |i: usize| r["steps"][i]["snapshot"]["t_sim_s"].as_f64().unwrap();
    // Steps: 0 upload, 1 armed, 2..=6 MISSION_CURRENT 1..=5, 7 landed, 8 disarmed.
    let sim = [
        at(2) - armed,
        at(3) - at(2),
        at(4) - at(3),
        at(5) - at(4),
        at(6) - at(5),
        at(7) - at(6),
        at(8),
    ];
    let px4 = px4_phases();
    assert_eq!(px4.len(), sim.len());
    let mut bad = Vec::new();
    for ((name, p), s) in px4.iter().zip(sim) {
        let ratio = s / p;
        let tol = if name == "total" { 0.10 } else { 0.15 };
        eprintln!("{name}: sim {s:.2} s, PX4 {p:.2} s, ratio {ratio:.2}");
        if (ratio - 1.0).abs() > tol {
            bad.push(format!("{name}: sim {s:.2} s vs PX4 {p:.2} s ({ratio:.2})"));
        }
    }
    assert!(bad.is_empty(), "phases off PX4's: {bad:?}");
}
