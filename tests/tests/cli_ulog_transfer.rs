//! PX4's log without PX4's working directory: fetched over MAVLink's log transfer from a
//! vehicle nexus attached to (`run --connect … --ulog FILE`), byte for byte the file the
//! vehicle wrote, also over a link that loses a fifth of its frames; and `check PROGRAM --ulog
//! FILE` against a ULog alone, which passes a flight the log shows, fails one it contradicts
//! with the explanation, and never passes a condition the log has no topic for. A library
//! fetch ends when its caller's cancellation check says so, leaving no file, and the vehicle
//! serves the next one.
//!
//! Instances 190, 191 and 192 (ports 14730/14770, 14731/14771 and 14732/14772). Python is `NEXUS_PYTHON`
//! (default the repository's `.venv`, made by `scripts/env.sh`, with pyulog); a missing one
//! fails the test.

mod cli_support;

use cli_support::{json, nexus, pyulog_topics, repo, Bg, Scratch, SPEED};
use std::path::Path;
use std::time::Duration;

fn s(p: &Path) -> String {
    p.to_str().unwrap().to_string()
}

/// `nexus run PROGRAM --connect CONN --ulog ULG --json REPORT`: its report.
fn run_attached(program: &str, conn: &str, ulg: &Path, report: &Path) -> serde_json::Value {
    let out = nexus(&[
        "run",
        program,
        "--connect",
        conn,
        "--ulog",
        &s(ulg),
        "--json",
        &s(report),
    ])
    .timeout(Duration::from_secs(300))
    .output()
    .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "exit {:?}: {text}{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("fetching the vehicle's log over MAVLink"),
        "{text}"
    );
    json(&std::fs::read(report).unwrap())
}

/// The witness agreed, and what it fetched is the vehicle's own file, whole.
fn assert_fetched_whole(r: &serde_json::Value, fetched: &Path, written: &Path) {
    let w = &r["second_witness"];
    assert_eq!(w["agrees"], true, "{w}");
    assert_eq!(w["error"], serde_json::Value::Null, "{w}");
    for fact in ["armed", "disarmed", "landed", "max_height", "modes"] {
        let f = w["facts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["fact"] == fact)
            .unwrap_or_else(|| panic!("no {fact} in {w}"));
        assert_eq!(f["verdict"], "agree", "{f}");
    }
    let got = std::fs::read(fetched).unwrap();
    let own = std::fs::read(written).unwrap();
    assert!(got.len() > 20_000, "{} bytes", got.len());
    assert!(got == own, "the fetched log is not the vehicle's file");
    let t = &w["transfer"];
    assert_eq!(t["bytes"].as_u64(), Some(got.len() as u64), "{t}");
    assert_eq!(t["log_id"], 0, "{t}");
    assert_eq!(t["logs_listed"], 1, "{t}");
    assert!(!fetched.with_extension("ulg.part").exists());
}

#[test]
fn run_connect_fetches_the_vehicles_own_log_byte_for_byte() {
    let scratch = Scratch::new("ulog-fetch");
    let (written, fetched, report) = (
        scratch.path("vehicle.ulg"),
        scratch.path("fetched.ulg"),
        scratch.path("run.json"),
    );
    let _vehicle = Bg::nexus(&[
        "sim",
        "--instance",
        "190",
        "--speed",
        SPEED,
        "--offboard-port-per-instance",
        "--ulog",
        &s(&written),
    ]);
    let box_mission = s(&repo("examples/box-mission.toml"));
    let r = run_attached(&box_mission, "udpin:127.0.0.1:14730", &fetched, &report);
    assert_eq!(r["vehicle"]["kind"], "attached", "{}", r["vehicle"]);
    assert_fetched_whole(&r, &fetched, &written);
    let t = &r["second_witness"]["transfer"];
    assert_eq!(t["re_requests"], 0, "a clean link asks once a window: {t}");
    // pyulog reads what came, with the topics the vehicle logs.
    let topics = pyulog_topics(&fetched);
    for t in ["vehicle_status", "vehicle_land_detected", "mission_result"] {
        assert!(topics[t].as_u64().unwrap_or(0) > 50, "{t}: {topics}");
    }
    // The vehicle's own log, alone, passes the program it flew.
    let out = nexus(&["check", &box_mission, "--ulog", &s(&written)])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(out.status.success(), "{text}");
    assert!(text.contains("PASS: all 5 steps met"), "{text}");
}

#[test]
fn the_log_comes_whole_over_a_link_losing_a_fifth_of_its_frames() {
    let scratch = Scratch::new("ulog-fetch-lossy");
    let (written, fetched, report) = (
        scratch.path("vehicle.ulg"),
        scratch.path("fetched.ulg"),
        scratch.path("run.json"),
    );
    // Above instance 9 the vehicle sends to 14549 until the bridge speaks to its 14772; the
    // run speaks to the bridge on instance 192's client port, which no vehicle uses.
    let _vehicle = Bg::nexus(&[
        "sim",
        "--instance",
        "192",
        "--speed",
        "4",
        "--ulog",
        &s(&written),
    ]);
    let _bridge = Bg::nexus(&[
        "bridge",
        "udpin:127.0.0.1:14732",
        "udpout:127.0.0.1:14772",
        "--loss-pct",
        "20",
        "--impair-sequence",
        "27",
    ]);
    let program = scratch.file(
        "hop.toml",
        r#"name = "hop"

[[step]]
name = "take off"
action = "takeoff"
alt_m = 5
until = { altitude = 4.5, op = ">=" }
timeout_s = 120

[[step]]
name = "land"
action = "land"
until = "landed"
timeout_s = 120

[[step]]
name = "disarm"
until = "disarmed"
timeout_s = 60
"#,
    );
    let r = run_attached(&s(&program), "udpout:127.0.0.1:14732", &fetched, &report);
    assert_fetched_whole(&r, &fetched, &written);
    let t = &r["second_witness"]["transfer"];
    eprintln!("log transfer at 20 % loss: {t}");
    assert!(t["re_requests"].as_u64().unwrap() > 0, "{t}");
}

/// Armed, then the airspeed: the fixture keeps no `airspeed_validated`.
const BEYOND: &str = r#"name = "beyond the log"

[[step]]
name = "armed"
until = "armed"
timeout_s = 60

[[step]]
name = "fast"
until = { airspeed = 5 }
timeout_s = 300
"#;

/// Armed, then 20 m of height before the disarm: the box flew at 10 m.
const TOO_HIGH: &str = r#"name = "too high"

[[step]]
name = "armed"
until = "armed"
timeout_s = 60

[[step]]
name = "climb to 20 m"
until = { altitude = 20, guards = ["disarmed"] }
timeout_s = 300
"#;

#[test]
fn check_against_px4s_own_log_alone() {
    let scratch = Scratch::new("ulog-check");
    let px4 = s(&repo("fixtures/px4-ulog/box-x4.facts.ulg"));
    let (report, junit) = (scratch.path("check.json"), scratch.path("check.xml"));
    // PX4's log of a real box flight passes the box program.
    let out = nexus(&[
        "check",
        &s(&repo("examples/box-mission.toml")),
        "--ulog",
        &px4,
        "--json",
        &s(&report),
    ])
    .output()
    .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(out.status.success(), "{text}");
    let r = json(&std::fs::read(&report).unwrap());
    assert_eq!(r["passed"], true, "{r}");
    assert_eq!(r["vehicle"]["kind"], "ulog");
    assert_eq!(r["steps"].as_array().unwrap().len(), 5);
    assert_eq!(r["mission"]["complete"], true, "{}", r["mission"]);
    // Armed at 9.1 s, landed and disarmed at 64.2 s: the log's times.
    let sim = |i: usize| r["steps"][i]["snapshot"]["t_sim_s"].as_f64().unwrap();
    assert!((sim(1) - 9.1).abs() < 0.2, "{}", sim(1));
    assert!((sim(4) - 64.2).abs() < 0.2, "{}", sim(4));

    // A program the log contradicts fails, with the log's reading.
    let high = scratch.file("high.toml", TOO_HIGH);
    let out = nexus(&["check", &s(&high), "--ulog", &px4, "--json", &s(&report)])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let r = json(&std::fs::read(&report).unwrap());
    assert_eq!(r["steps"][1]["reason"], "guard", "{}", r["steps"][1]);
    let why = r["steps"][1]["explanation"].as_str().unwrap();
    assert!(why.contains("guard `disarmed` fired"), "{why}");
    assert!(r["verdict"].as_str().unwrap().starts_with("FAIL: step 2/2"));

    // A condition the log cannot answer ends the step aborted, naming what is missing; the
    // steps after it are not run.
    let beyond = scratch.file("beyond.toml", BEYOND);
    let out = nexus(&[
        "check",
        &s(&beyond),
        "--ulog",
        &px4,
        "--json",
        &s(&report),
        "--junit",
        &s(&junit),
    ])
    .output()
    .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let r = json(&std::fs::read(&report).unwrap());
    assert_eq!(r["steps"][0]["reason"], "met");
    assert_eq!(r["steps"][1]["reason"], "aborted", "{}", r["steps"][1]);
    let why = r["steps"][1]["explanation"].as_str().unwrap();
    assert_eq!(
        why,
        "PX4's log cannot answer `airspeed >= 5 m/s`: PX4's log has no airspeed_validated"
    );
    assert!(
        r["verdict"].as_str().unwrap().contains(why),
        "{}",
        r["verdict"]
    );
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(xml.contains("has no airspeed_validated"), "{xml}");
}

#[test]
fn a_fetch_ends_when_its_caller_cancels_it_and_leaves_no_file() {
    use nexus_host::offboard_client::OffboardClient;
    use nexus_host::run::{Run, RunOptions};
    use nexus_host::ulog::fetch::{fetch_newest, FetchError, FetchOptions};
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    let scratch = Scratch::new("ulog-fetch-cancel");
    let path = scratch.path("fetched.ulg");
    // The built-in vehicle serves the log it writes.
    let options = RunOptions::simulated(191)
        .speed(10.0)
        .ulog(scratch.path("vehicle.ulg"));
    let sim = Run::started(options).expect("start the vehicle");
    let op = OffboardClient::connect(&sim, 60.0).expect("connect");
    let link = op.link().expect("the client's link");
    // Cancelled by its caller: the error says why, in the caller's words; nothing is written.
    let opts = FetchOptions::default().cancel_when(|| Some("cancelled by its caller".into()));
    let t0 = std::time::Instant::now();
    match fetch_newest(&link, &path, &opts) {
        Err(e @ FetchError::Interrupted(_)) => {
            assert_eq!(
                e.to_string(),
                "the log transfer was cancelled by its caller"
            )
        }
        other => panic!("{other:?}"),
    }
    assert!(t0.elapsed() < Duration::from_secs(2), "{:?}", t0.elapsed());
    assert!(!path.exists() && !path.with_extension("ulg.part").exists());
    // A check that never fires leaves the fetch to the vehicle: its log comes whole.
    let cancel = Arc::new(AtomicBool::new(false));
    let flag = cancel.clone();
    let opts = FetchOptions::default()
        .cancel_when(move || flag.load(Ordering::SeqCst).then(|| "cancelled".to_owned()));
    let got = fetch_newest(&link, &path, &opts).expect("the log fetched");
    assert!(got.entry.size_bytes > 0, "{got:?}");
    assert_eq!(
        std::fs::metadata(&path).unwrap().len(),
        u64::from(got.entry.size_bytes)
    );
}
