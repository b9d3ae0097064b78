//! The PX4 SITL launcher against a fake PX4 build (`tests/fixtures/fake-px4`): the exact command
//! line and environment, the console log, every death cause, and that close, `Drop` and a
//! panicking owner leave no process behind, and that PX4's ULog is kept after PX4 stopped. Each
//! test uses its own instance number (200+: 201–216), so
//! they run in parallel without sharing ports.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use nexus_host::launcher::{
    DeathCause, LaunchError, LaunchOptions, Px4Build, Px4Process, CONSOLE_LOG,
};
use nexus_host::transport::mio;

const READY: Duration = Duration::from_secs(10);

fn fake_build() -> Px4Build {
    Px4Build::new(Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/fake-px4"))
        .expect("the fake PX4 fixture is a valid build")
}

fn opts(instance: u8, mode: &str) -> LaunchOptions {
    LaunchOptions::new(instance).env("FAKE_PX4_MODE", mode)
}

/// A scratch directory of our own under the system temp dir.
fn scratch(name: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("nexus-launcher-test-{}-{name}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    dir
}

/// Whether `pid` is a live process (a zombie counts as dead).
fn alive(pid: u32) -> bool {
    match fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            let state = stat
                .rsplit_once(')')
                .map(|(_, rest)| rest.trim_start().chars().next());
            !matches!(state, Some(Some('Z')) | Some(Some('X')))
        }
        Err(_) => false,
    }
}

fn eventually(what: &str, timeout: Duration, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for: {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn log_text(px4: &Px4Process) -> String {
    fs::read_to_string(px4.log_path()).expect("console log")
}

/// The pid the fake prints for its child (`FAKE_PX4_MODE=child`).
fn child_pid(px4: &Px4Process) -> u32 {
    let log = log_text(px4);
    let line = log
        .lines()
        .find_map(|l| l.strip_prefix("fake-px4: child pid: "))
        .unwrap_or_else(|| panic!("no child pid in:\n{log}"));
    line.trim().parse().unwrap()
}

#[test]
fn runs_exactly_the_px4_command_line_in_a_fresh_workdir() {
    let build = fake_build();
    let options = LaunchOptions::new(201)
        .speed_factor(4.0)
        .param("MIS_TAKEOFF_ALT", 5.5f32)
        .param("COM_DISARM_PRFLT", 10);
    let mut px4 = Px4Process::spawn(&build, &options).unwrap();
    px4.wait_ready(READY).unwrap();
    let workdir = px4.workdir().to_path_buf();
    assert!(workdir.is_dir());
    assert_eq!(px4.log_path(), workdir.join(CONSOLE_LOG));

    let root = build.root().display().to_string();
    let want_cmd = [
        format!("{root}/bin/px4"),
        "-i".into(),
        "201".into(),
        "-d".into(),
        "-w".into(),
        workdir.display().to_string(),
        format!("{root}/etc"),
    ];
    assert_eq!(px4.command_line(), want_cmd);

    let log = log_text(&px4);
    // What the process itself saw.
    assert!(
        log.contains(&format!(
            "fake-px4: argv: -i 201 -d -w {} {root}/etc\n",
            workdir.display()
        )),
        "{log}"
    );
    assert!(
        log.contains(&format!("fake-px4: cwd: {}\n", workdir.display())),
        "{log}"
    );
    let env: Vec<&str> = log
        .lines()
        .filter_map(|l| l.strip_prefix("fake-px4: env: "))
        .collect();
    assert_eq!(
        env,
        [
            "PX4_PARAM_COM_DISARM_PRFLT=10",
            "PX4_PARAM_MIS_TAKEOFF_ALT=5.5",
            "PX4_SIMULATOR=sihsim",
            "PX4_SIM_MODEL=sihsim_quadx",
            "PX4_SIM_SPEED_FACTOR=4",
        ]
    );
    // The header says what ran; stdout and stderr both land in the log.
    assert!(log.starts_with("# nexus launcher: PX4_SIMULATOR=sihsim PX4_SIM_MODEL=sihsim_quadx PX4_SIM_SPEED_FACTOR=4 "), "{log}");
    assert!(log.contains("INFO  [px4] Startup script returned successfully\n"));
    eventually("the stderr line in the log", Duration::from_secs(2), || {
        log_text(&px4).contains("WARN  [fake] this line goes to stderr\n")
    });

    let offboard = px4.ports().offboard;
    assert_eq!(
        (offboard.port, offboard.px4_port, offboard.system_id),
        (14741, 14781, 202)
    );
    assert_eq!(px4.died(), None);
    let pid = px4.pid();
    assert!(alive(pid));

    px4.close().unwrap();
    assert!(!alive(pid));
    assert_eq!(px4.died(), Some(DeathCause::Closed));
    assert!(
        !workdir.exists(),
        "the working directory is removed on close"
    );
    px4.close().unwrap(); // idempotent
}

#[test]
fn exit_is_reported_with_its_code_and_the_log_survives_until_close() {
    let mut px4 = Px4Process::spawn(&fake_build(), &opts(202, "exit:7")).unwrap();
    assert_eq!(px4.wait_died(READY), Some(DeathCause::Exited { code: 7 }));
    let err = px4.wait_ready(READY).unwrap_err().to_string();
    assert_eq!(
        err,
        format!(
            "PX4 died before it was ready: PX4 exited with code 7 (console log: {})",
            px4.log_path().display()
        )
    );
    assert!(log_text(&px4).contains("fake-px4: exiting with code 7"));
    assert_eq!(px4.exit_status().unwrap().code(), Some(7));
    px4.close().unwrap();
    assert_eq!(
        px4.died(),
        Some(DeathCause::Exited { code: 7 }),
        "close does not rewrite history"
    );
}

#[test]
fn a_panic_line_is_the_cause_even_while_px4_still_runs() {
    let mut px4 = Px4Process::spawn(&fake_build(), &opts(203, "panic")).unwrap();
    let cause = px4.wait_died(READY).unwrap();
    assert_eq!(
        cause,
        DeathCause::Panic {
            line: "ERROR [commander] PANIC: fake-px4 was told to panic".into()
        }
    );
    assert_eq!(
        cause.to_string(),
        "PX4 panicked: ERROR [commander] PANIC: fake-px4 was told to panic"
    );
    assert!(
        alive(px4.pid()),
        "the launcher reports; the owner decides when to close"
    );
    let pid = px4.pid();
    px4.close().unwrap();
    assert!(!alive(pid));
    assert!(matches!(px4.died(), Some(DeathCause::Panic { .. })));
}

#[test]
fn a_signal_death_names_the_signal() {
    let px4 = Px4Process::spawn(&fake_build(), &opts(204, "abort")).unwrap();
    match px4.wait_died(READY) {
        Some(cause @ DeathCause::Signaled { signal: 6, .. }) => {
            assert!(
                cause
                    .to_string()
                    .starts_with("PX4 was killed by signal 6 (SIGABRT)"),
                "{cause}"
            );
        }
        other => panic!("expected SIGABRT, got {other:?}"),
    }
}

#[test]
fn close_kills_px4_and_the_child_it_started() {
    let mut px4 = Px4Process::spawn(&fake_build(), &opts(205, "child")).unwrap();
    px4.wait_ready(READY).unwrap();
    let (pid, child) = (px4.pid(), child_pid(&px4));
    assert!(alive(pid) && alive(child));
    px4.close().unwrap();
    assert!(!alive(pid));
    // The child ignores SIGTERM: only the group SIGKILL ends it.
    eventually("the child to die", Duration::from_secs(2), || !alive(child));
    assert_eq!(px4.died(), Some(DeathCause::Closed));
}

#[test]
fn sigterm_is_followed_by_sigkill_after_the_grace_period() {
    let mut options = opts(206, "hang");
    options.kill_grace = Duration::from_millis(300);
    let mut px4 = Px4Process::spawn(&fake_build(), &options).unwrap();
    px4.wait_ready(READY).unwrap();
    let pid = px4.pid();
    let t0 = Instant::now();
    px4.close().unwrap();
    let took = t0.elapsed();
    assert!(
        took >= Duration::from_millis(300) && took < Duration::from_secs(3),
        "{took:?}"
    );
    assert!(!alive(pid));
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(px4.exit_status().unwrap().signal(), Some(9));
}

#[test]
fn drop_kills_px4_and_its_child_and_removes_the_workdir() {
    let px4 = Px4Process::spawn(&fake_build(), &opts(207, "child")).unwrap();
    px4.wait_ready(READY).unwrap();
    let (pid, child, workdir) = (px4.pid(), child_pid(&px4), px4.workdir().to_path_buf());
    drop(px4);
    assert!(!alive(pid));
    eventually("the child to die", Duration::from_secs(2), || !alive(child));
    assert!(!workdir.exists());
}

#[test]
fn an_owner_that_panics_leaves_no_process_behind() {
    let (tx, rx) = std::sync::mpsc::channel();
    let owner = std::thread::spawn(move || {
        let px4 = Px4Process::spawn(&fake_build(), &opts(208, "child")).unwrap();
        px4.wait_ready(READY).unwrap();
        tx.send((px4.pid(), child_pid(&px4))).unwrap();
        panic!("the test owner panics while PX4 runs");
    });
    let (pid, child) = rx.recv().unwrap();
    assert!(owner.join().is_err());
    assert!(!alive(pid));
    eventually("the child to die", Duration::from_secs(2), || !alive(child));
}

#[test]
fn a_kept_workdir_outlives_close() {
    let mut px4 = Px4Process::spawn(&fake_build(), &opts(209, "run").keep_workdir(true)).unwrap();
    px4.wait_ready(READY).unwrap();
    let workdir = px4.workdir().to_path_buf();
    px4.close().unwrap();
    let log = fs::read_to_string(workdir.join(CONSOLE_LOG)).unwrap();
    assert!(log.contains("Startup script returned successfully"));
    fs::remove_dir_all(workdir).unwrap();
}

#[test]
fn a_second_px4_on_the_same_instance_says_so() {
    let locks = scratch("locks");
    let lock_dir = locks.display().to_string();
    let first = Px4Process::spawn(
        &fake_build(),
        &opts(210, "run").env("FAKE_PX4_LOCK_DIR", &lock_dir),
    )
    .unwrap();
    first.wait_ready(READY).unwrap();
    let second = Px4Process::spawn(
        &fake_build(),
        &opts(210, "run").env("FAKE_PX4_LOCK_DIR", &lock_dir),
    )
    .unwrap();
    let err = second.wait_ready(READY).unwrap_err();
    let LaunchError::Died {
        cause: DeathCause::AlreadyRunning { instance: 210, .. },
        ..
    } = &err
    else {
        panic!("expected AlreadyRunning, got {err:?}");
    };
    assert!(
        err.to_string().starts_with(
            "PX4 died before it was ready: PX4 server already running for instance 210: another PX4 started with -i 210 is still alive; stop it or use another instance (PX4 said: INFO  [px4] PX4 server already running for instance 210)"
        ),
        "{err}"
    );
    assert!(first.died().is_none(), "the first instance is unaffected");
    drop(second);
    drop(first);
    fs::remove_dir_all(locks).unwrap();
}

#[test]
fn a_taken_offboard_port_is_refused_before_starting() {
    let _holder = std::net::UdpSocket::bind("0.0.0.0:14791").unwrap(); // 14580 + 211
    let err = Px4Process::spawn(&fake_build(), &opts(211, "run")).unwrap_err();
    assert!(
        err.to_string().starts_with(
            "UDP port 14791 is in use, and PX4 instance 211 binds it for its offboard link: is PX4 server already running for instance 211"
        ),
        "{err}"
    );
}

#[test]
fn a_failing_startup_script_is_an_error() {
    let px4 = Px4Process::spawn(&fake_build(), &opts(212, "startup-failed")).unwrap();
    let err = px4.wait_ready(READY).unwrap_err().to_string();
    assert!(
        err.starts_with("PX4's startup script failed: ERROR [px4] Startup script returned with return value: 256"),
        "{err}"
    );
}

#[test]
fn the_pump_declares_telemetry_deaths_on_the_same_channel_and_is_woken() {
    let mut px4 = Px4Process::spawn(&fake_build(), &opts(213, "run")).unwrap();
    px4.wait_ready(READY).unwrap();
    let mut poll = mio::Poll::new().unwrap();
    let waker = Arc::new(mio::Waker::new(poll.registry(), mio::Token(9)).unwrap());
    let watch = px4.watch();
    watch.add_waker(waker);
    let pump = std::thread::spawn(move || {
        watch.declare_dead(DeathCause::LinkSilent {
            silent: Duration::from_secs(5),
        })
    });
    let mut events = mio::Events::with_capacity(4);
    poll.poll(&mut events, Some(Duration::from_secs(5)))
        .unwrap();
    assert!(
        events.iter().any(|e| e.token() == mio::Token(9)),
        "the waker fired"
    );
    assert!(pump.join().unwrap());
    let cause = px4.died().unwrap();
    assert_eq!(
        cause.to_string(),
        "link silent for 5.0 s: no MAVLink message from PX4"
    );
    // The first cause stays.
    assert!(!px4.declare_dead(DeathCause::ClockStalled {
        stalled: Duration::from_secs(3),
    }));
    px4.close().unwrap();
    assert_eq!(
        px4.died(),
        Some(DeathCause::LinkSilent {
            silent: Duration::from_secs(5),
        })
    );
    assert_eq!(
        DeathCause::ClockStalled {
            stalled: Duration::from_secs(3),
        }
        .to_string(),
        "SYSTEM_TIME stopped: PX4's clock did not advance for 3.0 s"
    );
}

#[test]
fn a_missing_build_says_what_was_looked_for() {
    let err = Px4Build::new("/nonexistent/nexus-px4")
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        "no PX4 build at /nonexistent/nexus-px4: expected /nonexistent/nexus-px4/bin/px4 and /nonexistent/nexus-px4/etc (the directory does not exist)"
    );
    let empty = scratch("empty-build");
    let err = Px4Build::new(&empty).unwrap_err().to_string();
    let e = empty.display();
    assert_eq!(
        err,
        format!("no PX4 build at {e}: expected {e}/bin/px4 and {e}/etc ({e}/bin/px4 is missing, {e}/etc is missing)")
    );
    fs::remove_dir_all(empty).unwrap();
    assert_eq!(
        LaunchError::NoBuildGiven.to_string(),
        "no PX4 build given: pass the build directory (e.g. PX4-Autopilot/build/px4_sitl_default) or set NEXUS_PX4_BUILD"
    );
}

#[test]
fn a_binary_the_os_cannot_run_is_a_spawn_error() {
    use std::os::unix::fs::PermissionsExt;
    let root = scratch("bad-binary");
    fs::create_dir_all(root.join("bin")).unwrap();
    fs::create_dir_all(root.join("etc")).unwrap();
    let bin = root.join("bin/px4");
    // A script whose interpreter does not exist: exec fails with ENOENT.
    fs::write(&bin, b"#!/nonexistent/nexus-interpreter\n").unwrap();
    fs::set_permissions(&bin, fs::Permissions::from_mode(0o644)).unwrap();
    let err = Px4Build::new(&root).unwrap_err().to_string();
    assert_eq!(
        err,
        format!(
            "{} is not executable (chmod +x it, or rebuild PX4)",
            bin.display()
        )
    );

    fs::set_permissions(&bin, fs::Permissions::from_mode(0o755)).unwrap();
    let build = Px4Build::new(&root).unwrap();
    let err = Px4Process::spawn(&build, &LaunchOptions::new(214))
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with(&format!(
            "cannot start {}/bin/px4: ",
            build.root().display()
        )) && err.contains("(os error 2)"),
        "{err}"
    );
    fs::remove_dir_all(root).unwrap();
}

/// `keep_ulog`: PX4's log is copied after PX4 stopped, so it holds what PX4 wrote at shutdown
/// (the fake writes its second half only on SIGTERM), and the working directory still goes.
#[test]
fn keep_ulog_copies_the_log_px4_closed_at_shutdown() {
    let dir = scratch("keep-ulog");
    let source = dir.join("source.ulg");
    let bytes: Vec<u8> = (0..10_000u32).map(|i| (i % 251) as u8).collect();
    fs::write(&source, &bytes).unwrap();
    let to = dir.join("kept.ulg");
    let o = opts(215, "run")
        .env("FAKE_PX4_ULOG", source.to_str().unwrap())
        .keep_ulog(&to);
    let mut px4 = Px4Process::spawn(&fake_build(), &o).unwrap();
    px4.wait_ready(READY).unwrap();
    let workdir = px4.workdir().to_path_buf();
    let written = workdir.join("log/2026-12-02/01_52_04.ulg");
    assert_eq!(
        fs::read(&written).unwrap().len(),
        5_000,
        "half while PX4 runs"
    );
    px4.close().unwrap();
    assert_eq!(
        fs::read(&to).unwrap(),
        bytes,
        "the whole log, as PX4 left it"
    );
    assert_eq!(px4.kept_ulog(), Some(to.as_path()));
    assert!(!workdir.exists(), "the working directory is removed");
    let _ = fs::remove_dir_all(&dir);
}

/// A PX4 that wrote no log: close says so, and keeps the working directory (its console log
/// says why) instead of losing it.
#[test]
fn keep_ulog_without_a_log_keeps_the_workdir() {
    let dir = scratch("no-ulog");
    let to = dir.join("kept.ulg");
    let mut px4 = Px4Process::spawn(&fake_build(), &opts(216, "run").keep_ulog(&to)).unwrap();
    px4.wait_ready(READY).unwrap();
    let workdir = px4.workdir().to_path_buf();
    let err = px4.close().unwrap_err();
    assert!(matches!(err, LaunchError::Ulog { .. }), "{err}");
    let text = err.to_string();
    assert!(text.contains("PX4 wrote no .ulg"), "{text}");
    assert!(text.contains(&workdir.display().to_string()), "{text}");
    assert!(
        workdir.join(CONSOLE_LOG).exists(),
        "the working directory is kept"
    );
    assert!(!to.exists());
    let _ = fs::remove_dir_all(&workdir);
    let _ = fs::remove_dir_all(&dir);
}
