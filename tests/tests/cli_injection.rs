//! Terminal and CI-log injection: a vehicle whose STATUSTEXTs hold line feeds, carriage
//! returns, escape sequences, BEL, BS, DEL, C1 controls, line separators and bidi overrides —
//! one of them `\nPASS: forged verdict line` — cannot print a line of its own, overwrite one, or
//! move the cursor: `nexus run` (its `PX4 […]` lines, the failed step's explanation, the verdict)
//! and `nexus check` of the flight's recording show every such character as an escape, and the
//! only verdict line is nexus's.
//!
//! The vehicle is the simulated one, in this process, on ports the system picks (not SITL's
//! 14540+N: the test passes while another MAVLink program holds those), attached with
//! `--connect`.

mod cli_support;

use cli_support::{nexus, nexus_exe, root, Scratch};
use nexus_host::sim::server::{SimConfig, SimHandle};
use std::net::UdpSocket;

/// The vehicle's texts: (sim ms, text). All CRITICAL, so a failed step's explanation quotes
/// the last two; each fits one STATUSTEXT (50 bytes).
const TEXTS: [(u64, &str); 4] = [
    (7_000, "ok\rFAIL: gone\x1b[2K\x1b[1A\x07\x08\x7f"),
    (
        7_200,
        "\u{85}NEL\u{2028}LS\u{2029}PS\u{202e}RLO\u{2066}\u{9b}31m",
    ),
    (7_400, "forged done\tTAB"),
    (7_600, "\nPASS: forged verdict line"),
];

/// Waits for the texts (any since the vehicle connected: `since_seq = 0`), then fails: the explanation quotes the last two (the forged verdict
/// line among them).
const FAILS: &str = r#"
[[step]]
until = { text = "forged done", since_seq = 0 }
timeout_s = 60

[[step]]
until = "armed"
timeout_s = 2
"#;

/// Only waits for the texts: passes.
const PASSES: &str = r#"
[[step]]
until = { text = "forged done", since_seq = 0 }
timeout_s = 60
"#;

/// A UDP port nobody holds now.
fn free_port() -> u16 {
    UdpSocket::bind("127.0.0.1:0")
        .and_then(|s| s.local_addr())
        .expect("a free port")
        .port()
}

/// The simulated vehicle (instance 0, system 1) on a port of the system's choosing, sending
/// to `to` and its texts at their times; the port a client listens on is `to`.
fn vehicle(to: u16) -> SimHandle {
    let mut cfg = SimConfig::realtime(0, 2.0);
    cfg.local_port_base = free_port();
    cfg.remote_port_base = to;
    cfg.vehicle.boot_texts = TEXTS.iter().map(|&(ms, t)| (ms, 2, t.to_owned())).collect();
    SimHandle::start(cfg).expect("start the simulated vehicle")
}

/// What a command printed, both streams, checked for raw controls and forged lines; the lines.
fn shown_safely(what: &str, out: &std::process::Output) -> Vec<String> {
    let mut all = out.stdout.clone();
    all.extend_from_slice(&out.stderr);
    let text = String::from_utf8(all).expect("UTF-8 output");
    for c in text.chars() {
        assert!(
            c == '\n' || !nexus_core::escape::is_escaped(c),
            "{what}: a raw {c:?} reached the output:\n{text}"
        );
    }
    let lines: Vec<String> = text.lines().map(str::to_owned).collect();
    for l in &lines {
        assert!(
            !l.trim_start().starts_with("PASS: forged") && !l.starts_with("FAIL: gone"),
            "{what}: the vehicle printed a line of its own: {l:?}"
        );
    }
    lines
}

#[test]
fn a_vehicles_control_characters_never_reach_run_or_check_output_raw() {
    let work = Scratch::new("injection");
    let fails = work.file("fails.toml", FAILS);
    let passes = work.file("passes.toml", PASSES);
    let tlog = work.path("flight.tlog");
    let to = free_port();
    let conn = format!("udpin:127.0.0.1:{to}");
    // The command listens first, then the vehicle starts: its texts (at 7 s of its clock, 3.5 s
    // wall) come after the attach, however long the build or the machine took.
    let run = std::process::Command::new(nexus_exe())
        .current_dir(root())
        .env_remove("NEXUS_PX4_BUILD")
        .args(["run", fails.to_str().unwrap(), "--connect", &conn, "--tlog"])
        .arg(&tlog)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run nexus");
    std::thread::sleep(std::time::Duration::from_millis(300));
    let vehicle = vehicle(to);
    let out = run.wait_with_output().expect("run nexus");
    drop(vehicle);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let lines = shown_safely("run", &out);
    let has = |want: &str| lines.iter().any(|l| l.contains(want));
    // Every text on its `PX4 […]` line, escaped.
    for want in [
        "PX4 [7.0 s critical] ok\\rFAIL: gone\\x1b[2K\\x1b[1A\\x07\\x08\\x7f",
        "PX4 [7.2 s critical] \\u{85}NEL\\u{2028}LS\\u{2029}PS\\u{202e}RLO\\u{2066}\\u{9b}31m",
        "PX4 [7.4 s critical] forged done\\tTAB",
        "PX4 [7.6 s critical] \\nPASS: forged verdict line",
    ] {
        assert!(has(want), "no line with {want:?}:\n{}", lines.join("\n"));
    }
    // One verdict, nexus's, quoting the vehicle's words escaped.
    let verdicts: Vec<&String> = lines
        .iter()
        .filter(|l| l.starts_with("PASS") || l.starts_with("FAIL:"))
        .collect();
    assert_eq!(verdicts.len(), 1, "{}", lines.join("\n"));
    assert!(
        verdicts[0].starts_with("FAIL: step 2/2 failed")
            && verdicts[0].contains("'forged done\\tTAB'; '\\nPASS: forged verdict line'"),
        "{}",
        verdicts[0]
    );

    // The recording holds the same texts: `check` shows them as safely.
    let out = nexus(&[
        "check",
        fails.to_str().unwrap(),
        "--tlog",
        tlog.to_str().unwrap(),
    ])
    .output()
    .expect("run nexus check");
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let lines = shown_safely("check", &out);
    let verdicts: Vec<&String> = lines
        .iter()
        .filter(|l| l.starts_with("PASS") || l.starts_with("FAIL:"))
        .collect();
    assert_eq!(verdicts.len(), 1, "{}", lines.join("\n"));
    assert!(verdicts[0].starts_with("FAIL: step 2/2"), "{}", verdicts[0]);
    assert!(
        lines
            .iter()
            .any(|l| l.contains("'\\nPASS: forged verdict line'")),
        "{}",
        lines.join("\n")
    );
    // And where the program passes, the one PASS line is nexus's.
    let out = nexus(&[
        "check",
        passes.to_str().unwrap(),
        "--tlog",
        tlog.to_str().unwrap(),
    ])
    .output()
    .expect("run nexus check");
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let lines = shown_safely("check", &out);
    let pass: Vec<&String> = lines.iter().filter(|l| l.starts_with("PASS")).collect();
    assert_eq!(pass.len(), 1, "{}", lines.join("\n"));
    assert!(pass[0].starts_with("PASS: all 1 steps met in the recording"));
}
