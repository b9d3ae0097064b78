//! Flight evidence: `--tlog` read back by pymavlink, `--report` rendered by headless
//! Chromium, `--junit` structure, `nexus check` against a recorded flight (the simulated
//! vehicle's and real PX4's), and `nexus run A B … --jobs 4`.
//!
//! Instances 176–189 (ports 14540+N, 14580+N). Python is `NEXUS_PYTHON` (default the
//! repository's `.venv`, made by `scripts/env.sh`); Chromium is Debian's `chromium`
//! (installed by `scripts/env.sh`). A missing one fails the test.

mod cli_support;

use cli_support::{json, nexus, python, reasons, repo, Scratch, SPEED};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Run a Python snippet with `args`; its stdout as JSON.
fn py(code: &str, args: &[&Path]) -> Value {
    let out = Command::new(python())
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .arg("-c")
        .arg(code)
        .args(args)
        .output()
        .expect("run python");
    assert!(
        out.status.success(),
        "python failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    json(&out.stdout)
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Fly `program` on `instance` with every output; the JSON report.
fn run(program: &str, instance: &str, extra: &[&str], scratch: &Scratch, ok: bool) -> Value {
    let report = scratch.path("report.json");
    let mut args = vec![
        "run",
        program,
        "--speed",
        SPEED,
        "--instance",
        instance,
        "--json",
        s(&report),
    ];
    args.extend_from_slice(extra);
    let a = nexus(&args).assert();
    let a = if ok { a.success() } else { a.code(1) };
    let out = a.get_output().clone();
    let r = json(&std::fs::read(&report).expect("the report"));
    assert_eq!(r["passed"], ok, "{}", String::from_utf8_lossy(&out.stdout));
    r
}

const COUNT_TLOG: &str = r#"
import json, sys
from pymavlink import mavutil
m = mavutil.mavlink_connection(sys.argv[1])
by_sys = {}
bad = 0
while True:
    x = m.recv_match()
    if x is None:
        break
    if x.get_type() == "BAD_DATA":
        bad += 1
        continue
    # Messages outside pymavlink's dialect (LINK_NODE_STATUS, …) come back as UNKNOWN_n with
    # no header: read the sender from the frame's own bytes.
    buf = bytes(x.get_msgbuf())
    k = str(buf[5] if buf[:1] == b"\xfd" else buf[3])
    by_sys[k] = by_sys.get(k, 0) + 1
print(json.dumps({"by_sys": by_sys, "bad": bad}))
"#;

#[test]
fn tlog_of_the_box_mission_reads_back_in_pymavlink_with_the_reports_counts() {
    let scratch = Scratch::new("ev-tlog");
    let tlog = scratch.path("flight.tlog");
    let r = run(
        "examples/box-mission.toml",
        "176",
        &["--tlog", s(&tlog)],
        &scratch,
        true,
    );
    let link = &r["link"];
    let (rx, tx) = (
        link["rx_frames"].as_u64().unwrap(),
        link["tx_frames"].as_u64().unwrap(),
    );
    assert!(rx > 1000 && tx > 10, "{link}");
    assert_eq!(link["tlog_received"], rx, "{link}");
    assert_eq!(link["tlog_sent"], tx, "{link}");
    let c = py(COUNT_TLOG, &[&tlog]);
    assert_eq!(c["bad"], 0, "{c}");
    // The vehicle is system instance + 1; we are 255.
    assert_eq!(c["by_sys"]["177"].as_u64(), Some(rx), "{c}");
    assert_eq!(c["by_sys"]["255"].as_u64(), Some(tx), "{c}");
    assert_eq!(c["by_sys"].as_object().unwrap().len(), 2, "{c}");
}

const PNG_STATS: &str = r#"
import json, struct, sys, zlib
d = open(sys.argv[1], "rb").read()
assert d[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
i, idat, w, h, ct = 8, b"", 0, 0, 0
while i < len(d):
    n, = struct.unpack(">I", d[i:i+4]); t = d[i+4:i+8]; c = d[i+8:i+8+n]
    if t == b"IHDR":
        w, h, depth, ct = struct.unpack(">IIBB", c[:10])
    elif t == b"IDAT":
        idat += c
    i += 12 + n
raw = zlib.decompress(idat)
bpp = {2: 3, 6: 4}[ct]
stride = w * bpp
prev = bytearray(stride)
colours = set()
rows = min(h, 700)
pos = 0
for y in range(rows):
    f = raw[pos]; line = bytearray(raw[pos+1:pos+1+stride]); pos += 1 + stride
    for x in range(stride):
        a = line[x-bpp] if x >= bpp else 0
        b = prev[x]
        c = prev[x-bpp] if x >= bpp else 0
        if f == 1: line[x] = (line[x] + a) & 255
        elif f == 2: line[x] = (line[x] + b) & 255
        elif f == 3: line[x] = (line[x] + (a + b) // 2) & 255
        elif f == 4:
            p = a + b - c; pa, pb, pc = abs(p-a), abs(p-b), abs(p-c)
            line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    if y % 4 == 0:
        for x in range(0, stride, bpp * 4):
            colours.add(bytes(line[x:x+3]))
    prev = line
print(json.dumps({"w": w, "h": h, "colours": len(colours)}))
"#;

const DOM_CHECK: &str = r#"
import json, sys
from html.parser import HTMLParser
class P(HTMLParser):
    def __init__(self):
        super().__init__(); self.ids = {}; self.classes = {}; self.text = []
    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if "id" in a: self.ids[a["id"]] = tag
        for c in (a.get("class") or "").split():
            self.classes[c] = self.classes.get(c, 0) + 1
    def handle_data(self, d): self.text.append(d)
p = P(); p.feed(open(sys.argv[1]).read())
print(json.dumps({"ids": p.ids, "classes": p.classes, "text": " ".join(p.text)}))
"#;

#[test]
fn the_html_report_renders_in_headless_chromium_with_track_height_timeline_and_verdict() {
    let scratch = Scratch::new("ev-html");
    let html = scratch.path("flight.html");
    let r = run(
        "examples/box-mission.toml",
        "177",
        &["--report", s(&html)],
        &scratch,
        true,
    );
    let text = std::fs::read_to_string(&html).unwrap();
    // Self-contained: nothing fetched, no script.
    for bad in ["<script", "http://", "https://", "src="] {
        assert!(!text.contains(bad), "the report holds {bad}");
    }
    let png = scratch.path("flight.png");
    let dom = scratch.path("dom.html");
    let profile = scratch.path("chromium-profile");
    let chromium = |extra: &[&str]| {
        let out = Command::new("chromium")
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                &format!("--user-data-dir={}", profile.display()),
                "--window-size=800,1400",
            ])
            .args(extra)
            .arg(format!("file://{}", html.display()))
            .output()
            .expect("chromium (Debian's, installed by scripts/env.sh)");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        out.stdout
    };
    chromium(&[&format!("--screenshot={}", png.display())]);
    let st = py(PNG_STATS, &[&png]);
    assert_eq!(
        (st["w"].as_u64(), st["h"].as_u64()),
        (Some(800), Some(1400)),
        "{st}"
    );
    // A real picture: the track, the plots, text — many colours, not a blank page.
    assert!(st["colours"].as_u64().unwrap() > 20, "{st}");
    // The DOM as Chromium built it.
    std::fs::write(&dom, chromium(&["--dump-dom"])).unwrap();
    let d = py(DOM_CHECK, &[&dom]);
    for id in [
        "verdict",
        "track",
        "flown",
        "height",
        "height-line",
        "timeline",
    ] {
        assert!(
            d["ids"].get(id).is_some(),
            "no #{id} in the DOM: {}",
            d["ids"]
        );
    }
    // The plan's 6 items on the track, the 5 steps on the height plot, all met.
    assert_eq!(d["classes"]["item"], 6, "{}", d["classes"]);
    assert_eq!(d["classes"]["met"], 5, "{}", d["classes"]);
    assert!(d["classes"]["seg"].as_u64().unwrap() >= 3);
    let verdict = r["verdict"].as_str().unwrap();
    assert!(d["text"].as_str().unwrap().contains(verdict), "{verdict}");
}

#[test]
fn junit_has_a_suite_per_program_a_case_per_step_and_the_explanation_as_failure() {
    let scratch = Scratch::new("ev-junit");
    let program = scratch.file(
        "high.toml",
        r#"
name = "too high"
[[step]]
name = "take off"
action = "takeoff"
alt_m = 5
until = { altitude = 50 }
timeout_s = 15
[[step]]
name = "land"
action = "land"
until = "landed"
timeout_s = 60
"#,
    );
    let junit = scratch.path("j.xml");
    let r = run(s(&program), "178", &["--junit", s(&junit)], &scratch, false);
    assert_eq!(reasons(&r), ["timeout"]);
    let explanation = r["steps"][0]["explanation"].as_str().expect("explained");
    let j = py(
        r#"
import json, sys
import xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
out = {"root": root.tag, "tests": root.get("tests"), "failures": root.get("failures"),
       "suites": []}
for s in root.findall("testsuite"):
    cases = []
    for c in s.findall("testcase"):
        f = c.find("failure")
        cases.append({"name": c.get("name"), "time": float(c.get("time")),
                      "failure": None if f is None else f.get("message"),
                      "skipped": c.find("skipped") is not None,
                      "sim_s": [p.get("value") for p in c.iter("property") if p.get("name") == "sim_s"]})
    out["suites"].append({"name": s.get("name"), "tests": s.get("tests"),
                          "failures": s.get("failures"), "skipped": s.get("skipped"), "cases": cases})
print(json.dumps(out))
"#,
        &[&junit],
    );
    assert_eq!(j["root"], "testsuites");
    assert_eq!(
        (j["tests"].as_str(), j["failures"].as_str()),
        (Some("2"), Some("1")),
        "{j}"
    );
    let suite = &j["suites"][0];
    assert_eq!(j["suites"].as_array().unwrap().len(), 1);
    assert_eq!(suite["name"], "too high");
    assert_eq!(suite["skipped"], "1");
    let cases = suite["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 2);
    assert_eq!(cases[0]["name"], "step 1 take off");
    assert_eq!(cases[0]["failure"], explanation);
    assert!(cases[0]["time"].as_f64().unwrap() > 0.0);
    let sim: f64 = cases[0]["sim_s"][0].as_str().unwrap().parse().unwrap();
    assert!((sim - 15.0).abs() < 0.5, "{sim}");
    assert_eq!(cases[1]["skipped"], true);
}

#[test]
fn check_gives_a_recorded_sim_flight_the_live_verdicts() {
    let scratch = Scratch::new("ev-check-sim");
    let tlog = scratch.path("flight.tlog");
    let live = run(
        "examples/box-mission.toml",
        "179",
        &["--tlog", s(&tlog)],
        &scratch,
        true,
    );
    let checked = scratch.path("check.json");
    nexus(&[
        "check",
        "examples/box-mission.toml",
        "--tlog",
        s(&tlog),
        "--json",
        s(&checked),
    ])
    .assert()
    .success();
    let c = json(&std::fs::read(&checked).unwrap());
    assert_eq!(c["command"], "check");
    assert_eq!(c["passed"], true, "{}", c["verdict"]);
    assert_eq!(reasons(&c), reasons(&live));
    // Same data, same moments: the steps that wait on the vehicle settle at the same sim time
    // (the first starts at the recording's first heartbeat, not at the live connect).
    for i in 1..5 {
        let (a, b) = (&live["steps"][i]["snapshot"], &c["steps"][i]["snapshot"]);
        let (ta, tb) = (
            a["t_sim_s"].as_f64().unwrap(),
            b["t_sim_s"].as_f64().unwrap(),
        );
        assert!(
            (ta - tb).abs() < 0.3,
            "step {}: live {ta} s, check {tb} s",
            i + 1
        );
        assert_eq!(a["landed_state"], b["landed_state"]);
        assert_eq!(a["armed"], b["armed"]);
    }
    assert_eq!(c["mission"]["complete"], true);

    // A condition the flight never met fails the same way, with its explanation.
    let high = scratch.file(
        "high.toml",
        "[[step]]\naction = \"takeoff\"\nalt_m = 5\nuntil = { altitude = 50 }\ntimeout_s = 20\n",
    );
    let out = nexus(&["check", s(&high), "--tlog", s(&tlog), "--json"])
        .assert()
        .code(1)
        .get_output()
        .clone();
    let h = json(&out.stdout);
    assert_eq!(reasons(&h), ["timeout"]);
    assert!(h["steps"][0]["explanation"].as_str().is_some(), "{h}");
}

#[test]
fn check_on_a_real_px4_trace_reads_the_height_the_live_run_did_not() {
    // The live PX4 run of this program FAILED at "hover": its guard read relative_alt
    // (fixtures/px4-traces/README.md). The core now reads ground truth (here from the GCS
    // link's HIL_STATE_QUATERNION) or the AMSL estimate since arming: the documented
    // difference — the hover is met, and the landing, which the live run never flew, ends
    // with the recording.
    let dir = repo("fixtures/px4-traces");
    let nexus_link = dir.join("takeoff-hover-land-x4.px4-to-nexus.tlog");
    let gcs_link = dir.join("takeoff-hover-land-x4.px4-to-gcs.tlog");
    let live = json(&std::fs::read(dir.join("takeoff-hover-land-x4.report.json")).unwrap());
    assert_eq!(reasons(&live), ["met", "guard"]);
    for (links, source) in [
        (vec![&nexus_link, &gcs_link], "ground_truth"),
        (vec![&nexus_link], "amsl_since_arm"),
    ] {
        let mut args = vec!["check", "examples/takeoff-hover-land.toml", "--json"];
        for l in &links {
            args.extend(["--tlog", s(l)]);
        }
        let out = nexus(&args).assert().code(1).get_output().clone();
        let c = json(&out.stdout);
        assert_eq!(reasons(&c), ["met", "met", "aborted"], "{}", c["verdict"]);
        assert_eq!(c["vehicle"]["system_id"], 6);
        assert_eq!(c["steps"][1]["snapshot"]["height_source"], source);
        let h = c["steps"][1]["snapshot"]["height_m"].as_f64().unwrap();
        assert!(h > 4.0, "hover height {h}");
        assert!(
            c["verdict"]
                .as_str()
                .unwrap()
                .contains("the recording ended"),
            "{}",
            c["verdict"]
        );
    }
}

#[test]
fn jobs_4_flies_four_programs_at_once_with_their_own_verdicts() {
    let scratch = Scratch::new("ev-jobs");
    let fail = |name: &str| {
        scratch.file(
            name,
            "[[step]]\naction = \"takeoff\"\nalt_m = 3\nuntil = { altitude = 40 }\ntimeout_s = 12\n",
        )
    };
    let (f1, f2) = (fail("fail-a.toml"), fail("fail-b.toml"));
    let junit = scratch.path("all.xml");
    let report = scratch.path("all.json");
    let started = std::time::Instant::now();
    nexus(&[
        "run",
        "examples/takeoff-hover-land.toml",
        s(&f1),
        "examples/box-mission.toml",
        s(&f2),
        "--jobs",
        "4",
        "--instance",
        "180",
        "--speed",
        SPEED,
        "--json",
        s(&report),
        "--junit",
        s(&junit),
    ])
    .assert()
    .code(1);
    let wall = started.elapsed().as_secs_f64();
    let r = json(&std::fs::read(&report).unwrap());
    let verdict = |p: &str| -> (u64, String) {
        let e = r["programs"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["program"].as_str().unwrap().ends_with(p))
            .unwrap_or_else(|| panic!("{p} not in {r}"));
        (
            e["exit_code"].as_u64().unwrap(),
            e["verdict"].as_str().unwrap().to_string(),
        )
    };
    assert_eq!(verdict("takeoff-hover-land.toml").0, 0);
    assert_eq!(verdict("box-mission.toml").0, 0);
    assert_eq!(verdict("fail-a.toml").0, 1);
    assert!(
        verdict("fail-b.toml").1.contains("timeout"),
        "{}",
        verdict("fail-b.toml").1
    );
    assert_eq!(r["summary"], "4 programs: 2 passed, 2 failed");
    // Four flights on four instances: every vehicle's system id is distinct.
    let mut ids: Vec<u64> = r["reports"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["vehicle"]["system_id"].as_u64().unwrap())
        .collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 4, "{ids:?}");
    let x = std::fs::read_to_string(&junit).unwrap();
    assert_eq!(x.matches("<testsuite ").count(), 4, "{x}");
    eprintln!("4 programs, --jobs 4: {wall:.1} s wall");
}

/// `tlog: R frames received, S sent` (watch) from the output.
fn tlog_line(out: &str) -> (u64, u64) {
    let l = out
        .lines()
        .find(|l| l.starts_with("tlog: "))
        .unwrap_or_else(|| panic!("no tlog line in {out}"));
    let n: Vec<u64> = l
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect();
    (n[0], n[1])
}

#[test]
fn watch_records_its_link_in_a_tlog_pymavlink_reads() {
    use nexus_host::sim::{SimConfig, SimHandle};
    let scratch = Scratch::new("ev-watch");
    let tlog = scratch.path("watch.tlog");
    let watch = nexus(&[
        "watch",
        // Instance 184's own port: it sends to 14549 until a client speaks there (PX4's rule).
        "udpout:127.0.0.1:14764",
        "--count",
        "4",
        "--interval",
        "0.5",
        "--duration",
        "60",
        "--tlog",
        s(&tlog),
    ]);
    let sim = SimHandle::start(SimConfig::realtime(184, 2.0)).expect("the simulated vehicle");
    let mut watch = watch;
    let out = watch.assert().success().get_output().clone();
    drop(sim);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let (rx, tx) = tlog_line(&stdout);
    assert!(rx > 50 && tx >= 1, "{stdout}");
    let c = py(COUNT_TLOG, &[&tlog]);
    assert_eq!(c["bad"], 0, "{c}");
    assert_eq!(c["by_sys"]["185"].as_u64(), Some(rx), "{c}");
    assert_eq!(c["by_sys"]["255"].as_u64(), Some(tx), "{c}");
}

#[test]
fn bridge_records_both_directions_in_a_tlog() {
    use nexus_host::sim::{SimConfig, SimHandle};
    let scratch = Scratch::new("ev-bridge");
    let tlog = scratch.path("bridge.tlog");
    // `watch` speaks first to 14726, where the bridge listens; the bridge forwards to the
    // vehicle's own port (instance 185: 14765), which latches it (PX4 above instance 9 sends
    // elsewhere until a client speaks), and the vehicle's frames come back through it.
    let bridge = std::process::Command::new(cli_support::nexus_exe())
        .args([
            "bridge",
            "udpout:127.0.0.1:14765",
            "udpin:127.0.0.1:14726",
            "--stats-s",
            "0",
            "--tlog",
            s(&tlog),
        ])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("nexus bridge");
    let mut watch = nexus(&[
        "watch",
        "udpout:127.0.0.1:14726",
        "--count",
        "3",
        "--interval",
        "0.5",
        "--duration",
        "60",
    ]);
    let sim = SimHandle::start(SimConfig::realtime(185, 2.0)).expect("the simulated vehicle");
    watch.assert().success();
    drop(sim);
    let st = Command::new("kill")
        .args(["-INT", &bridge.id().to_string()])
        .status()
        .unwrap();
    assert!(st.success());
    let out = bridge.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    let l = err
        .lines()
        .find(|l| l.contains("tlog: "))
        .unwrap_or_else(|| panic!("{err}"));
    let n: Vec<u64> = l
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect();
    let c = py(COUNT_TLOG, &[&tlog]);
    assert_eq!(c["bad"], 0, "{c}");
    assert!(n[0] > 50 && n[1] >= 1, "{l}");
    assert_eq!(c["by_sys"]["186"].as_u64(), Some(n[0]), "{c} {l}");
    assert_eq!(c["by_sys"]["255"].as_u64(), Some(n[1]), "{c} {l}");
}

#[test]
fn partition_is_the_same_whatever_the_order_and_covers_every_program_once() {
    let scratch = Scratch::new("ev-partition");
    let progs: Vec<PathBuf> = (0..7)
        .map(|i| {
            scratch.file(
                &format!("p{i}.toml"),
                "[[step]]\naction = \"arm\"\nuntil = \"armed\"\ntimeout_s = 5\n",
            )
        })
        .collect();
    let names: Vec<&str> = progs.iter().map(|p| s(p)).collect();
    let part = |k: usize, n: usize, order: &[&str]| -> Vec<String> {
        let spec = format!("{k}/{n}");
        let mut args = vec!["run"];
        args.extend_from_slice(order);
        args.extend(["--partition", &spec, "--check", "--json"]);
        let out = nexus(&args).assert().success().get_output().clone();
        let r = json(&out.stdout);
        r["programs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["program"].as_str().unwrap().to_string())
            .collect()
    };
    let mut reversed = names.clone();
    reversed.reverse();
    for n in [1, 2, 3] {
        let mut all = Vec::new();
        for k in 1..=n {
            let a = part(k, n, &names);
            assert_eq!(
                a,
                part(k, n, &reversed),
                "part {k}/{n} depends on the order"
            );
            assert!(a.len() == 7 / n || a.len() == 7 / n + 1, "{a:?}");
            all.extend(a);
        }
        all.sort();
        let mut want: Vec<String> = names.iter().map(|s| s.to_string()).collect();
        want.sort();
        assert_eq!(all, want, "{n} parts");
    }
    nexus(&["run", names[0], "--partition", "4/3"])
        .assert()
        .code(2);
}
