//! `--ulog`: the vehicle's own log kept and read as a second witness. A good flight on the
//! built-in vehicle writes a ULog pyulog reads with the topics it claims, and its witness agrees
//! in the JSON, the HTML and the JUnit; a tlog of that flight doctored to claim a landing that
//! the ULog lacks passes `nexus check` alone and fails it with `--ulog`, both readings in the
//! verdict; PX4's own log of a real SITL flight (`fixtures/px4-ulog/`) reads as PX4 flew it.
//!
//! Instance 186 (ports 14726, 14766). Python is `NEXUS_PYTHON` (default the repository's
//! `.venv`, made by `scripts/env.sh`, with pyulog); a missing one fails the test.

mod cli_support;

use cli_support::{json, nexus, pyulog_topics, repo, Scratch, SPEED};
use nexus_core::frame::Encoder;
use nexus_core::mav;
use nexus_host::tlog::TlogReader;
use nexus_host::ulog::facts::Facts;
use nexus_host::ulog::Ulog;
use std::path::Path;

/// Take off and hover: the vehicle is still in the air when the program (and the recording)
/// ends.
const TAKEOFF_HOVER: &str = r#"
[[step]]
name = "take off"
action = "takeoff"
alt_m = 5
until = { altitude = 4.5, op = ">=", hold_s = 1 }
timeout_s = 60

[[step]]
name = "hover"
until = { time = 6 }
timeout_s = 20
"#;

/// What the doctored recording claims: a landing after the take-off.
const TAKEOFF_LAND: &str = r#"
[[step]]
name = "take off"
action = "takeoff"
alt_m = 5
until = { altitude = 4.5, op = ">=", hold_s = 1 }
timeout_s = 60

[[step]]
name = "land"
until = "landed"
timeout_s = 60
"#;

/// Copy `src` to `dst` with its last tenth of EXTENDED_SYS_STATE frames (the hover's end)
/// saying ON_GROUND, re-encoded with their checksums: a well-formed lie. How many it changed.
fn doctor(src: &Path, dst: &Path) -> usize {
    let records: Vec<_> = TlogReader::open(src)
        .unwrap()
        .0
        .map(|r| r.unwrap())
        .collect();
    let id = |b: &[u8]| b[7] as u32 | (b[8] as u32) << 8 | (b[9] as u32) << 16;
    let is_ess = |b: &[u8]| b.len() > 10 && b[0] == 0xFD && id(b) == 245;
    let n = records.iter().filter(|r| is_ess(&r.bytes)).count();
    let from = n - (n / 10).max(1);
    let mut out = Vec::new();
    let mut seen = 0;
    let mut changed = 0;
    for r in records {
        let mut bytes = r.bytes.clone();
        if is_ess(&bytes) {
            if seen >= from {
                let mut enc = Encoder::new(bytes[5], bytes[6]);
                enc.set_next_seq(bytes[4]);
                let mut buf = [0u8; nexus_core::frame::MAX_FRAME_LEN];
                let msg = mav::EXTENDED_SYS_STATE_DATA {
                    vtol_state: mav::MavVtolState::MAV_VTOL_STATE_UNDEFINED,
                    landed_state: mav::MavLandedState::MAV_LANDED_STATE_ON_GROUND,
                };
                let len = enc.encode(&msg, &mut buf).unwrap();
                bytes = buf[..len].to_vec();
                changed += 1;
            }
            seen += 1;
        }
        out.extend_from_slice(&r.epoch_us.to_be_bytes());
        out.extend_from_slice(&bytes);
    }
    std::fs::write(dst, out).unwrap();
    changed
}

#[test]
fn the_second_witness_agrees_on_a_good_flight_and_fails_a_doctored_tlog() {
    let scratch = Scratch::new("ulog-witness");
    let program = scratch.file("takeoff-hover.toml", TAKEOFF_HOVER);
    let (ulg, tlog, report, html, junit) = (
        scratch.path("flight.ulg"),
        scratch.path("flight.tlog"),
        scratch.path("flight.json"),
        scratch.path("flight.html"),
        scratch.path("flight.xml"),
    );
    let s = |p: &Path| p.to_str().unwrap().to_string();
    let out = nexus(&[
        "run",
        &s(&program),
        "--instance",
        "186",
        "--speed",
        SPEED,
        "--ulog",
        &s(&ulg),
        "--tlog",
        &s(&tlog),
        "--json",
        &s(&report),
        "--report",
        &s(&html),
        "--junit",
        &s(&junit),
    ])
    .output()
    .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("second witness (PX4's log"), "{text}");

    // The JSON: every compared fact agrees; the take-off is in both, no landing in either.
    let r = json(&std::fs::read(&report).unwrap());
    let w = &r["second_witness"];
    assert_eq!(w["agrees"], true, "{w}");
    assert_eq!(w["tolerance"]["time_s"], 2.0, "{w}");
    let fact = |name: &str| {
        w["facts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["fact"] == name)
            .unwrap_or_else(|| panic!("no {name} in {w}"))
            .clone()
    };
    assert_eq!(fact("armed")["verdict"], "agree", "{w}");
    assert_eq!(fact("landed")["verdict"], "agree", "{w}");
    assert_eq!(fact("landed")["ulog"], "never landed", "{w}");
    assert_eq!(fact("max_height")["verdict"], "agree", "{w}");
    assert_eq!(w["read"]["missing_topics"], serde_json::json!([]), "{w}");
    // The HTML: the witness's table and PX4's height; the JUnit: a passing case of its own.
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("id=\"second-witness\""), "no witness section");
    assert!(
        page.contains("id=\"ulog-height-line\""),
        "no height from the log"
    );
    // What only the log has: the built-in vehicle logs its battery, drawn; it has no ground
    // truth or setpoint topics, and the page names them instead of drawing zeros.
    assert!(
        page.contains("<svg id=\"ulog-battery\""),
        "no battery chart"
    );
    assert!(page.contains("<polyline id=\"ulog-battery-remaining\""));
    assert!(!page.contains("<svg id=\"ulog-setpoints\""));
    assert!(
        page.contains("Not drawn: PX4's log has no vehicle_local_position_groundtruth")
            && page.contains("vehicle_local_position_setpoint"),
        "missing topics not named"
    );
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(xml.contains("second witness: PX4's log"), "{xml}");
    assert!(!xml.contains("<failure"), "{xml}");

    // pyulog reads the built-in vehicle's log with the topics it claims, at 10 Hz.
    let topics = pyulog_topics(&ulg);
    for t in [
        "vehicle_status",
        "vehicle_land_detected",
        "vehicle_local_position",
        "vehicle_global_position",
        "mission_result",
        "battery_status",
    ] {
        let n = topics[t].as_u64().unwrap_or(0);
        assert!(n > 50, "pyulog reads {n} samples of {t}: {topics}");
    }

    // The recording alone, checked: agrees with the log too.
    let out = nexus(&[
        "check",
        &s(&program),
        "--tlog",
        &s(&tlog),
        "--ulog",
        &s(&ulg),
    ])
    .output()
    .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );

    // Doctored: the tlog now claims a landing at the hover's end. Alone it passes…
    let lie = scratch.path("doctored.tlog");
    assert!(doctor(&tlog, &lie) > 0, "no EXTENDED_SYS_STATE to doctor");
    let landing = scratch.file("takeoff-land.toml", TAKEOFF_LAND);
    let out = nexus(&["check", &s(&landing), "--tlog", &s(&lie)])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "the doctored tlog alone should pass: {text}"
    );
    // …and PX4's log, the second witness, fails it with both readings.
    let witnessed = scratch.path("witnessed.json");
    let out = nexus(&[
        "check",
        &s(&landing),
        "--tlog",
        &s(&lie),
        "--ulog",
        &s(&ulg),
        "--json",
        &s(&witnessed),
        "--junit",
        &s(&junit),
    ])
    .output()
    .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert_eq!(out.status.code(), Some(1), "{text}");
    let r = json(&std::fs::read(&witnessed).unwrap());
    let verdict = r["verdict"].as_str().unwrap();
    assert!(verdict.starts_with("FAIL: second witness"), "{verdict}");
    assert!(verdict.contains("the link said landed at"), "{verdict}");
    assert!(verdict.contains("PX4's log never landed"), "{verdict}");
    assert_eq!(r["second_witness"]["agrees"], false);
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(
        xml.contains("type=\"second_witness\"") && xml.contains("never landed"),
        "{xml}"
    );
}

/// PX4's own log of a real SITL box flight (cut to the facts' topics, `fixtures/px4-ulog/`):
/// what the reader finds is what PX4 flew, and pyulog reads the same file.
#[test]
fn px4s_own_log_of_a_real_flight_reads_as_it_flew() {
    let path = repo("fixtures/px4-ulog/box-x4.facts.ulg");
    let log = Ulog::open(&path).unwrap();
    assert_eq!(log.damaged, 0);
    assert_eq!(log.truncated_at, None);
    let f = Facts::of(&log);
    assert!(f.missing_topics.is_empty(), "{:?}", f.missing_topics);
    let s = |us: u64| us as f64 / 1e6;
    assert_eq!(f.arms.len(), 1, "{:?}", f.arms);
    assert!((s(f.arms[0]) - 9.1).abs() < 0.1, "{:?}", f.arms);
    assert_eq!(f.landings().len(), 1);
    assert!((s(f.landings()[0]) - 64.2).abs() < 0.1, "{:?}", f.landed);
    let (h, _) = f.max_height_m.unwrap();
    assert!((h - 11.4).abs() < 0.1, "{h}");
    let modes: Vec<String> = f.modes.iter().map(|(_, m)| m.to_string()).collect();
    assert_eq!(modes, ["Hold", "Mission"]);
    assert!(f.mission_finished_us.is_some());
    assert!(!f.had_failsafe());
    let topics = pyulog_topics(&path);
    assert_eq!(
        topics["vehicle_status"].as_u64(),
        Some(log.samples("vehicle_status", 0) as u64),
        "{topics}"
    );
}
