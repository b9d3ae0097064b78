//! Shared plumbing of the `cli_*` tests: the `nexus` binary, the repository's files, scratch
//! files, and the JSON report.
//!
//! SITL instance numbers used by these tests (ports 14540+N / 14580+N): 150–159. Other tests
//! should stay clear of them (the sim tests use 40–61, the bench 90–91, the host tests 101–108).

#![allow(dead_code)]

use assert_cmd::Command;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::Once;
use std::time::SystemTime;

/// Sim speed factor for the flights (fast, but with margin for a loaded CI machine).
pub const SPEED: &str = "20";

/// The workspace root.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// A file of the repository.
pub fn repo(path: &str) -> PathBuf {
    root().join(path)
}

static BUILD: Once = Once::new();

/// The newest modification time of the files under `path`.
fn newest(path: &Path) -> Option<SystemTime> {
    let meta = std::fs::metadata(path).ok()?;
    if !meta.is_dir() {
        return meta.modified().ok();
    }
    std::fs::read_dir(path)
        .ok()?
        .filter_map(Result::ok)
        .filter_map(|e| newest(&e.path()))
        .max()
}

/// Build the `nexus` binary when it is missing or older than the sources it is made of, into
/// the target directory and profile these tests run from. nexus-cli's binary is not something
/// cargo builds for this crate's tests by itself; `cargo test --workspace --all-targets` has
/// built it already, and then nothing is done here (a nested `cargo build` would resolve other
/// features and build everything a second time).
fn build() {
    BUILD.call_once(|| {
        let exe = std::env::current_exe().expect("test executable path");
        // target/<profile>/deps/<test>
        let profile_dir = exe
            .parent()
            .and_then(Path::parent)
            .expect("target/<profile>");
        let built = std::fs::metadata(profile_dir.join("nexus"))
            .and_then(|m| m.modified())
            .ok();
        let sources = [
            "cli/src",
            "cli/Cargo.toml",
            "host/src",
            "host/Cargo.toml",
            "sim/src",
            "sim/Cargo.toml",
            "core/src",
            "core/Cargo.toml",
            "Cargo.lock",
        ]
        .iter()
        .filter_map(|p| newest(&root().join(p)))
        .max();
        if let (Some(b), Some(s)) = (built, sources) {
            if b >= s {
                return;
            }
        }
        let target_dir = profile_dir.parent().expect("target dir");
        let profile = profile_dir
            .file_name()
            .and_then(|n| n.to_str())
            .expect("profile name");
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let mut cmd = std::process::Command::new(cargo);
        cmd.current_dir(root())
            .args(["build", "--quiet", "-p", "nexus-cli", "--bin", "nexus"])
            .env("CARGO_TARGET_DIR", target_dir);
        match profile {
            "debug" => {}
            "release" => {
                cmd.arg("--release");
            }
            other => {
                cmd.args(["--profile", other]);
            }
        }
        let status = cmd.status().expect("run cargo build for the nexus binary");
        assert!(
            status.success(),
            "cargo build -p nexus-cli --bin nexus failed"
        );
    });
}

/// The `nexus` binary's path, built first when stale (for a test that runs it through another
/// program: a pseudo-terminal, a stand-in PX4).
pub fn nexus_exe() -> PathBuf {
    build();
    assert_cmd::cargo::cargo_bin("nexus")
}

/// `nexus` with `args`, run from the repository root, NEXUS_PX4_BUILD unset (the simulated
/// vehicle), with a wall-clock limit so a hang fails the test.
pub fn nexus(args: &[&str]) -> Command {
    build();
    let mut cmd = Command::cargo_bin("nexus").expect("the nexus binary");
    cmd.current_dir(root())
        .env_remove("NEXUS_PX4_BUILD")
        .timeout(std::time::Duration::from_secs(120))
        .args(args);
    cmd
}

/// A scratch directory for one test, removed when dropped.
pub struct Scratch(pub PathBuf);

impl Scratch {
    /// A fresh directory named after `name`.
    pub fn new(name: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("nexus-cli-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("scratch dir");
        Scratch(dir)
    }

    /// Write `text` to `name` in the directory; its path.
    pub fn file(&self, name: &str, text: &str) -> PathBuf {
        let p = self.0.join(name);
        std::fs::write(&p, text).expect("write scratch file");
        p
    }

    /// A path in the directory.
    pub fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Parse a JSON report.
pub fn json(text: &[u8]) -> Value {
    serde_json::from_slice(text).unwrap_or_else(|e| {
        panic!(
            "the report is not JSON ({e}):\n{}",
            String::from_utf8_lossy(text)
        )
    })
}

/// The Python with the test peers (pymavlink, mavsdk, pyulog, mcp): `$NEXUS_PYTHON`, else the
/// repository's `.venv` (scripts/env.sh makes it).
pub fn python() -> PathBuf {
    let p = std::env::var_os("NEXUS_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join(".venv/bin/python"));
    assert!(
        p.exists(),
        "no Python at {} (set NEXUS_PYTHON)",
        p.display()
    );
    p
}

/// The topics pyulog reads in the ULog `ulg`, with their sample counts: {topic: samples}.
pub fn pyulog_topics(ulg: &Path) -> Value {
    pyulog_json(
        ulg,
        "import json, sys, pyulog\n\
         u = pyulog.ULog(sys.argv[1])\n\
         print(json.dumps({d.name: len(d.data['timestamp']) for d in u.data_list}))",
    )
}

/// What the Python snippet `code` prints as JSON with the ULog `ulg` as its `sys.argv[1]`.
pub fn pyulog_json(ulg: &Path, code: &str) -> Value {
    let out = std::process::Command::new(python())
        .args(["-c", code])
        .arg(ulg)
        .output()
        .expect("python runs");
    assert!(
        out.status.success(),
        "pyulog failed on {}: {}",
        ulg.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    json(&out.stdout)
}

/// The `reason` of every step in a report.
pub fn reasons(report: &Value) -> Vec<String> {
    report["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .map(|s| s["reason"].as_str().expect("reason").to_string())
        .collect()
}

/// A background `nexus` (a vehicle, a bridge), its process group ended when dropped.
pub struct Bg(pub std::process::Child);

impl Bg {
    /// Start `nexus args…` in its own process group, its output discarded.
    pub fn nexus(args: &[&str]) -> Bg {
        use std::os::unix::process::CommandExt;
        use std::process::Stdio;
        let mut cmd = std::process::Command::new(nexus_exe());
        cmd.args(args)
            .process_group(0)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        Bg(cmd.spawn().expect("start nexus"))
    }
}

impl Drop for Bg {
    fn drop(&mut self) {
        let _ = std::process::Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", self.0.id())])
            .status();
        let _ = self.0.wait();
    }
}
