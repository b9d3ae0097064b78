//! `nexus serve` with a real MCP client, the official MCP Python SDK
//! (tests/py/mcp_client.py): over stdio and over streamable HTTP (a free loopback port, a
//! bearer token), a flight on the built-in vehicle at ×15 with waits capped short enough to
//! end `cap` and continued with `since_seq` (no text missed), concurrent waits, a step program,
//! the box mission (examples/box.plan uploaded by path inside --root over stdio, inline over
//! HTTP, verified, flown, landed), `kill_instance` during a wait (`closed`), bad inputs refused
//! while the server keeps serving, a missing or wrong token refused with HTTP 401; four
//! sessions started by concurrent calls flying at once, step programs with uploads confined to
//! the root and continued after `cap`, the live report resource, an attached vehicle that says
//! it is hardware refused every verb that arms or moves it (and listed honestly: no instance,
//! its own system id); the idle reaper (the reaped sessions' records readable, the temporary
//! records directory removed when the server ends); each session's tlog and HTML report as
//! resources (read back by pymavlink, the verdict and timeline in the HTML, kept for the last
//! `--keep-closed` sessions, written for a session still open when the server ends), failed
//! program steps with `nexus run`'s explanation; and ending the server (stdin closed, SIGTERM)
//! leaves no vehicle running: its UDP ports free again, and no process of a PX4 SITL session
//! (the stand-in PX4 of `tests/fixtures/fake-px4`, whose vehicle is a process of its own).
//!
//! SITL instances used here: 21–29, 35–39 and 240–246 (ports 14540+N and 14580+N; no N and
//! N ± 40 both). Python is `NEXUS_PYTHON` (default the repository's `.venv`, made by
//! `scripts/env.sh`).

mod cli_support;

use cli_support::{nexus_exe, python, root, Scratch};
use std::io::{BufRead, BufReader, Write};
use std::net::UdpSocket;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn client() -> PathBuf {
    root().join("tests/py/mcp_client.py")
}

/// A served root with the box mission, a program uploading it, and a symlink pointing out.
fn served_root(name: &str) -> Scratch {
    let s = Scratch::new(name);
    std::os::unix::fs::symlink("/etc/hostname", s.path("escape.plan")).unwrap();
    for plan in ["box.plan", "fenced.plan"] {
        std::fs::copy(root().join("examples").join(plan), s.path(plan)).unwrap();
    }
    std::fs::write(
        s.path("upload-verify.toml"),
        "[[step]]\naction = \"upload\"\nplan = \"box.plan\"\n\n[[step]]\naction = \"verify_mission\"\n",
    )
    .unwrap();
    s
}

/// Whether instance `n`'s UDP ports are free (no vehicle holds them).
fn ports_free(n: u16) -> bool {
    [14540 + n, 14580 + n]
        .iter()
        .all(|p| UdpSocket::bind(("127.0.0.1", *p)).is_ok())
}

fn wait_exit(child: &mut Child, limit: Duration) -> std::process::ExitStatus {
    let t0 = Instant::now();
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return s;
        }
        if t0.elapsed() > limit {
            let _ = child.kill();
            panic!("nexus serve did not end within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// One MCP client's flights at a time: each flies up to four vehicles at ×10–15, and several
/// clients at once on a shared machine's two cores starve the vehicles and their pumps.
static FLIGHTS: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Run the MCP client; its output (it must have ended `ok: done`).
fn run_client(args: &[&str]) -> String {
    let _one = FLIGHTS.lock().unwrap_or_else(|e| e.into_inner());
    let out = Command::new(python())
        .arg(client())
        .args(args)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success() && stdout.contains("ok: done"),
        "the MCP client failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// The rest of the line of `out` after `prefix`.
fn line_after<'a>(out: &'a str, prefix: &str) -> &'a str {
    out.lines()
        .find_map(|l| l.strip_prefix(prefix))
        .unwrap_or_else(|| panic!("no {prefix:?} line in:\n{out}"))
        .trim()
}

/// Wait (at most 10 s) until `cond` holds.
fn eventually(what: &str, mut cond: impl FnMut() -> bool) {
    let t0 = Instant::now();
    while !cond() {
        assert!(t0.elapsed() < Duration::from_secs(10), "{what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn stdio_flight_caps_errors_and_kill() {
    let dir = served_root("serve_mcp_stdio");
    let exe = nexus_exe();
    run_client(&[
        "stdio",
        exe.to_str().unwrap(),
        dir.0.to_str().unwrap(),
        "35",
        "--leave",
    ]);
    // The session left open (instance 37) was closed with the server.
    let t0 = Instant::now();
    while !(ports_free(35) && ports_free(36) && ports_free(37)) {
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "a vehicle is still running"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn http_token_flight_and_sigterm() {
    let dir = served_root("serve_mcp_http");
    let mut server = Command::new(nexus_exe())
        .args([
            "serve",
            "--http",
            "127.0.0.1:0",
            "--token",
            "test-token-2501",
        ])
        .arg("--root")
        .arg(&dir.0)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(server.stderr.take().unwrap());
    let mut line = String::new();
    let url = loop {
        line.clear();
        assert!(err.read_line(&mut line).unwrap() > 0, "nexus serve ended");
        if let Some(at) = line.find("http://") {
            break line[at..].trim().to_string();
        }
    };
    run_client(&[
        "http",
        &url,
        "test-token-2501",
        "21",
        dir.0.to_str().unwrap(),
        "--leave",
    ]);
    // Instance 23 is still open: SIGTERM ends the server and it.
    assert!(!ports_free(23), "the session left open has no vehicle");
    nix_kill(&server, "TERM");
    let status = wait_exit(&mut server, Duration::from_secs(10));
    assert_eq!(status.code(), Some(143), "exit status {status:?}");
    let mut rest = String::new();
    let _ = std::io::Read::read_to_string(&mut err, &mut rest);
    assert!(rest.contains("every vehicle closed"), "stderr: {rest}");
    assert!(ports_free(21) && ports_free(22) && ports_free(23));
}

#[test]
fn four_sessions_programs_resources_and_an_attached_vehicle() {
    let dir = served_root("serve_mcp_many");
    let exe = nexus_exe();
    // A simulated vehicle that says it is a Pixhawk, sending to 14540 + 28.
    let vehicle = Command::new(&exe)
        .args(["sim", "--instance", "28", "--speed", "10"])
        .args(["--identify-as-hardware", "--offboard-port-per-instance"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    struct Reap(Child);
    impl Drop for Reap {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let _vehicle = Reap(vehicle);
    run_client(&[
        "many",
        exe.to_str().unwrap(),
        dir.0.to_str().unwrap(),
        "24",
        "14568",
    ]);
    assert!((24..=27).all(ports_free), "a vehicle outlived its session");
}

#[test]
fn the_idle_reaper_closes_idle_sessions() {
    let dir = served_root("serve_mcp_reaper");
    let exe = nexus_exe();
    let out = run_client(&[
        "reaper",
        exe.to_str().unwrap(),
        dir.0.to_str().unwrap(),
        "29",
    ]);
    assert!(ports_free(29), "the reaped session's vehicle still runs");
    // The server made its records directory in the temp dir: it goes with the server.
    let records = PathBuf::from(line_after(&out, "records dir: "));
    assert!(records.starts_with(std::env::temp_dir()), "{records:?}");
    eventually(
        "the temporary records directory outlived the server",
        || !records.exists(),
    );
}

#[test]
fn session_records_tlog_html_and_explained_steps() {
    let dir = served_root("serve_mcp_records");
    let records = Scratch::new("serve_mcp_records_out");
    let exe = nexus_exe();
    let out = run_client(&[
        "records",
        exe.to_str().unwrap(),
        dir.0.to_str().unwrap(),
        "240",
        records.0.to_str().unwrap(),
    ]);
    // The session left open was closed with the server: its report written then, kept.
    let left = line_after(&out, "left session ");
    let html = records.path(&format!("session-{left}.html"));
    eventually(
        "no report of the session open when the server ended",
        || std::fs::read_to_string(&html).is_ok_and(|h| h.contains("the service closed")),
    );
    assert!(records.path(&format!("session-{left}.tlog")).exists());
    // --keep-closed 2: the ones before it were pushed out, the one before it unrecorded (a
    // report, no tlog); nothing else is left there.
    let mut names: Vec<String> = std::fs::read_dir(&records.0)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let prev = left.parse::<u64>().unwrap() - 1;
    assert_eq!(
        names,
        [
            format!("session-{prev}.html"),
            format!("session-{left}.html"),
            format!("session-{left}.tlog")
        ],
        "records kept"
    );
    assert!(
        (240..=244).all(ports_free),
        "a vehicle outlived its session"
    );
}

fn nix_kill(child: &Child, sig: &str) {
    let ok = Command::new("kill")
        .arg(format!("-{sig}"))
        .arg(child.id().to_string())
        .status()
        .unwrap()
        .success();
    assert!(ok);
}

/// A raw JSON-RPC exchange over stdio: initialize, then start a session on `instance` (the
/// built-in vehicle, or `px4_build` inside `root`), the server's environment with `env`.
fn start_over_stdio(
    instance: u16,
    root: &std::path::Path,
    px4_build: Option<&str>,
    env: &[(&str, String)],
) -> Child {
    let mut server = Command::new(nexus_exe())
        .args(["serve", "--root"])
        .arg(root)
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut input = server.stdin.take().unwrap();
    let build = px4_build.map_or(String::new(), |b| format!(r#","px4_build":"{b}""#));
    let msgs = [
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"serve_mcp","version":"1"}}}"#.to_string(),
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_string(),
        format!(r#"{{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{{"name":"start_session","arguments":{{"instance":{instance},"speed":10{build}}}}}}}"#),
    ];
    for m in &msgs {
        writeln!(input, "{m}").unwrap();
    }
    input.flush().unwrap();
    let mut out = BufReader::new(server.stdout.take().unwrap());
    let mut line = String::new();
    loop {
        line.clear();
        assert!(out.read_line(&mut line).unwrap() > 0, "nexus serve ended");
        if line.contains(r#""id":2"#) {
            assert!(line.contains("system_id"), "start_session: {line}");
            break;
        }
    }
    assert!(!ports_free(instance), "no vehicle on instance {instance}");
    // Keep stdout drained, stdin held.
    std::thread::spawn(move || {
        let mut sink = String::new();
        let _ = std::io::Read::read_to_string(&mut out, &mut sink);
    });
    server.stdin = Some(input);
    server
}

/// Whether `pid` is a live process (a zombie counts as dead).
fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            let state = stat
                .rsplit_once(')')
                .map(|(_, rest)| rest.trim_start().chars().next());
            !matches!(state, Some(Some('Z')) | Some(Some('X')))
        }
        Err(_) => false,
    }
}

/// A PX4 SITL session (the stand-in PX4, copied inside the served root, flying the built-in
/// vehicle as a process of its own) on `instance`; the server, the scratch root, and the
/// vehicle's and PX4's pids.
fn px4_session(instance: u16, name: &str) -> (Child, Scratch, Vec<u32>) {
    let dir = Scratch::new(name);
    let fixture = root().join("tests/fixtures/fake-px4");
    for sub in ["bin", "etc/init.d-posix"] {
        std::fs::create_dir_all(dir.path("px4").join(sub)).unwrap();
    }
    for f in ["bin/px4", "etc/init.d-posix/rcS"] {
        // Permissions (bin/px4's execute bit) come along.
        std::fs::copy(fixture.join(f), dir.path("px4").join(f)).unwrap();
    }
    let pids = dir.path("pids");
    let env = [
        ("FAKE_PX4_MODE", "fly".to_string()),
        ("FAKE_PX4_NEXUS", nexus_exe().display().to_string()),
        ("FAKE_PX4_PIDS", pids.display().to_string()),
    ];
    let server = start_over_stdio(instance, &dir.0, Some("px4"), &env);
    let pids: Vec<u32> = std::fs::read_to_string(&pids)
        .expect("the stand-in PX4 wrote its pids")
        .lines()
        .map(|l| l.trim().parse().unwrap())
        .collect();
    assert_eq!(pids.len(), 2, "{pids:?}");
    assert!(pids.iter().all(|&p| alive(p)), "vehicle and PX4 run");
    (server, dir, pids)
}

#[test]
fn stdin_closed_closes_every_vehicle() {
    let mut server = start_over_stdio(38, &std::env::temp_dir(), None, &[]);
    drop(server.stdin.take());
    let status = wait_exit(&mut server, Duration::from_secs(10));
    assert!(status.success(), "exit status {status:?}");
    assert!(ports_free(38), "the vehicle outlived the server");
}

#[test]
fn sigterm_over_stdio_closes_every_vehicle() {
    let mut server = start_over_stdio(39, &std::env::temp_dir(), None, &[]);
    nix_kill(&server, "TERM");
    let status = wait_exit(&mut server, Duration::from_secs(10));
    assert_eq!(status.code(), Some(143), "exit status {status:?}");
    assert!(ports_free(39), "the vehicle outlived the server");
}

#[test]
fn ending_the_server_leaves_no_px4_process() {
    for (instance, how) in [(245, "TERM"), (246, "stdin")] {
        let (mut server, _dir, pids) = px4_session(instance, &format!("serve_mcp_px4_{how}"));
        match how {
            "TERM" => nix_kill(&server, "TERM"),
            _ => drop(server.stdin.take()),
        }
        let status = wait_exit(&mut server, Duration::from_secs(15));
        let want = if how == "TERM" { Some(143) } else { Some(0) };
        assert_eq!(status.code(), want, "{how}: exit status {status:?}");
        for p in &pids {
            assert!(!alive(*p), "{how}: process {p} outlived the server");
        }
        assert!(ports_free(instance), "{how}: the vehicle's ports are held");
    }
}
