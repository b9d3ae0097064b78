//! Shared plumbing of the `firmware_*` tests: build the firmware, start QEMU's mps2-an386 with
//! UART0 on a TCP socket, collect its semihosting output, kill it on drop.
//!
//! QEMU's UART takes a byte per main-loop turn, a rate that falls with the host's load. A real
//! UART cannot queue what its reader has not taken; a TCP socket can, up to its receive buffer
//! (128 KiB by default, growing): at a few KB/s, tens of seconds of stale telemetry. So the
//! harness opens UART0's socket itself, with the smallest receive buffer the kernel allows,
//! and hands it to QEMU (`-chardev socket,fd=N`): a reader that falls behind then pushes back
//! at once, and the paced bridge's flow control drops frames instead of delaying them.
//!
//! Needs `qemu-system-arm` and the `thumbv7em-none-eabihf` Rust target (`scripts/env.sh`
//! installs both); a missing one fails the test with a message saying so.
//!
//! Ports: the firmware tests bind TCP ports the OS picks, and the mission tests' simulated
//! vehicles UDP 14701–14709 (vehicle) and 14711–14719 (where it sends before a client speaks),
//! clear of the `sim_*` tests' 14540–14671.

#![allow(dead_code)]

use std::io::Read;
use std::net::SocketAddr;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread;
use std::time::{Duration, Instant};

/// The workspace root.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ has a parent")
        .to_path_buf()
}

/// Build the firmware binaries once per test process (release, in their own workspace and
/// target dir: `NEXUS_FIRMWARE_TARGET_DIR`, default `target/firmware-examples`); the path of
/// `bin`.
pub fn firmware(bin: &str) -> PathBuf {
    static BIN_DIR: OnceLock<PathBuf> = OnceLock::new();
    BIN_DIR
        .get_or_init(|| {
            let dir = repo_root().join("firmware-examples");
            let target_dir = std::env::var_os("NEXUS_FIRMWARE_TARGET_DIR")
                .map(PathBuf::from)
                .unwrap_or_else(|| repo_root().join("target").join("firmware-examples"));
            let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
            let out = Command::new(cargo)
                .current_dir(&dir)
                .args(["build", "--release", "--bins"])
                .args(["--target", "thumbv7em-none-eabihf"])
                .env("CARGO_TARGET_DIR", &target_dir)
                // Host settings must not leak into the MCU build.
                .env_remove("RUSTFLAGS")
                .env_remove("CARGO_ENCODED_RUSTFLAGS")
                .env_remove("CARGO_BUILD_TARGET")
                .output()
                .expect("run cargo to build the firmware");
            assert!(
                out.status.success(),
                "building firmware-examples failed (is the thumbv7em-none-eabihf target \
                 installed? scripts/env.sh adds it):\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
            target_dir.join("thumbv7em-none-eabihf/release")
        })
        .join(bin)
}

/// Fail with a helpful message when QEMU is missing.
pub fn require_qemu() {
    let found = Command::new("qemu-system-arm")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    assert!(
        found,
        "qemu-system-arm is not installed; the firmware tests need it \
         (scripts/env.sh installs it: apt-get install --no-install-recommends qemu-system-arm)"
    );
}

/// A running QEMU with the firmware, killed on drop.
pub struct Qemu {
    child: Child,
    stdout: Arc<Mutex<String>>,
}

impl Qemu {
    /// Start QEMU with UART0 connected to `127.0.0.1:port` (something must listen there),
    /// over a socket with a small receive buffer (the module's note).
    pub fn start(elf: &Path, port: u16) -> Qemu {
        let uart = small_window_connect(port);
        let fd = uart.as_raw_fd();
        let mut cmd = Command::new("qemu-system-arm");
        cmd.args(["-machine", "mps2-an386", "-cpu", "cortex-m4"])
            .args(["-display", "none", "-monitor", "none"])
            .arg("-chardev")
            .arg(format!("socket,id=uart0,fd={fd}"))
            .args(["-serial", "chardev:uart0"])
            .args(["-semihosting-config", "enable=on,target=native"])
            .arg("-kernel")
            .arg(elf)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = spawn_with_fd(&mut cmd, fd);
        // QEMU holds the socket now; this process's copy would keep it open after QEMU exits.
        drop(uart);
        let stdout = Arc::new(Mutex::new(String::new()));
        for pipe in [
            child
                .stdout
                .take()
                .map(|p| Box::new(p) as Box<dyn Read + Send>),
            child
                .stderr
                .take()
                .map(|p| Box::new(p) as Box<dyn Read + Send>),
        ]
        .into_iter()
        .flatten()
        {
            let sink = Arc::clone(&stdout);
            // Ends when QEMU closes the pipe (it exits, or is killed on drop).
            thread::spawn(move || {
                let mut pipe = pipe;
                let mut buf = [0u8; 1024];
                while let Ok(n) = pipe.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    sink.lock()
                        .unwrap()
                        .push_str(&String::from_utf8_lossy(&buf[..n]));
                }
            });
        }
        Qemu { child, stdout }
    }

    /// The exit status once QEMU has exited.
    pub fn exited(&mut self) -> Option<ExitStatus> {
        self.child.try_wait().expect("poll qemu")
    }

    /// What the firmware (and QEMU) printed so far.
    pub fn output(&self) -> String {
        self.stdout.lock().unwrap().clone()
    }

    /// Wait for QEMU to exit, at most until `deadline`.
    pub fn wait_until(&mut self, deadline: Instant) -> Option<ExitStatus> {
        loop {
            if let Some(status) = self.exited() {
                // Let the reader threads drain the last lines.
                thread::sleep(Duration::from_millis(50));
                return Some(status);
            }
            if Instant::now() >= deadline {
                return None;
            }
            thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Qemu {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }
}

/// Receive buffer asked for on UART0's socket (and on the hops of a proxy in front of it),
/// bytes (Linux doubles it and keeps a floor of about 2.3 KB).
pub const UART_RECV_BUFFER_BYTES: usize = 1024;

/// A TCP connection to `127.0.0.1:port`, no-delay, whose receive buffer
/// ([`UART_RECV_BUFFER_BYTES`]) is set before it connects (so the window it advertises is
/// small from the start).
pub fn small_window_connect(port: u16) -> socket2::Socket {
    use socket2::{Domain, Protocol, Socket, Type};
    let s = Socket::new(Domain::IPV4, Type::STREAM, Some(Protocol::TCP)).expect("a TCP socket");
    s.set_recv_buffer_size(UART_RECV_BUFFER_BYTES)
        .expect("set the receive buffer");
    s.set_tcp_nodelay(true).expect("set TCP_NODELAY");
    let addr: SocketAddr = ([127, 0, 0, 1], port).into();
    s.connect(&addr.into())
        .unwrap_or_else(|e| panic!("connect to 127.0.0.1:{port}: {e}"));
    s
}

/// Spawn `cmd` with `fd` inherited (every other descriptor is close-on-exec, as std opens
/// them). The flag is cleared only while spawning, under a lock, so no other QEMU this
/// process starts takes this one's socket too.
fn spawn_with_fd(cmd: &mut Command, fd: std::os::fd::RawFd) -> Child {
    use nix::fcntl::{fcntl, FcntlArg, FdFlag};
    static SPAWN: Mutex<()> = Mutex::new(());
    let _one_at_a_time = SPAWN.lock().unwrap_or_else(|e| e.into_inner());
    fcntl(fd, FcntlArg::F_SETFD(FdFlag::empty())).expect("let QEMU inherit UART0's socket");
    let child = cmd.spawn();
    fcntl(fd, FcntlArg::F_SETFD(FdFlag::FD_CLOEXEC)).expect("close-on-exec again");
    child.expect("start qemu-system-arm")
}

/// A counter from the firmware's exit report line `link: frames N handled N …`.
pub fn link_counter(out: &str, name: &str) -> u32 {
    let line = out
        .lines()
        .find(|l| l.contains("link: frames"))
        .unwrap_or_else(|| panic!("no link report in:\n{out}"));
    let mut words = line.split_whitespace();
    words
        .find(|w| *w == name)
        .unwrap_or_else(|| panic!("no {name} in {line}"));
    words
        .next()
        .and_then(|w| w.parse().ok())
        .unwrap_or_else(|| panic!("bad {name} in {line}"))
}

/// The stack high-water mark the firmware reported at exit, bytes.
pub fn stack_high_water(out: &str) -> Option<u32> {
    out.lines()
        .find_map(|l| l.split("stack: high-water mark ").nth(1))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
}

/// Line noise with false start bytes in it (deterministic).
pub fn garbage(len: usize, start: u32) -> Vec<u8> {
    let mut x = start.max(1);
    (0..len)
        .map(|i| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            match i % 7 {
                0 => 0xFD,
                3 => 0xFE,
                _ => x as u8,
            }
        })
        .collect()
}
