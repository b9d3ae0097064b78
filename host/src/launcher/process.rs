//! One running PX4 SITL instance: start it, watch it, end it.

use std::fs::File;
use std::io::Write;
use std::net::UdpSocket;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use tempfile::TempDir;

use super::death::Shared;
use super::options::is_owned_env;
use super::{
    supervise, sweep, DeathCause, DeathWatch, LaunchError, LaunchOptions, PortMap, Px4Build,
};

/// The console log's file name inside the working directory.
pub const CONSOLE_LOG: &str = "console.log";

/// How long close waits for PX4 to be reaped after SIGKILL before giving up.
const KILL_WAIT: Duration = Duration::from_secs(5);

/// A PX4 SITL process started by [`Px4Process::spawn`] and supervised until it is closed.
///
/// Dropping it closes it: SIGTERM to its process group, SIGKILL after the grace period, every
/// process it started SIGKILLed wherever it went (the launch's tag, see `sweep`), the working
/// directory removed unless kept. If our own process dies without unwinding, the
/// kernel SIGKILLs PX4 (`PR_SET_PDEATHSIG`).
#[derive(Debug)]
pub struct Px4Process {
    shared: Arc<Shared>,
    pid: u32,
    instance: u8,
    ports: PortMap,
    workdir: Option<TempDir>,
    workdir_path: PathBuf,
    log_path: PathBuf,
    command_line: Vec<String>,
    px4_env: Vec<(String, String)>,
    keep_workdir: bool,
    keep_ulog: Option<PathBuf>,
    kept_ulog: Option<PathBuf>,
    kill_grace: Duration,
    waiter: Option<JoinHandle<()>>,
    tag: String,
    closed: bool,
}

impl Px4Process {
    /// Start instance `options.instance` of `build` with its SIH airframe (the quadrotor by
    /// default): `PX4_SIMULATOR=sihsim PX4_SIM_MODEL=sihsim_quadx [PX4_SIM_SPEED_FACTOR=F]
    /// [PX4_PARAM_<NAME>=v] <build>/bin/px4 -i N -d -w <fresh workdir> <build>/etc`.
    ///
    /// Returns as soon as the process runs; [`Px4Process::wait_ready`] waits for its startup
    /// script, and [`Px4Process::died`] reports its end.
    pub fn spawn(build: &Px4Build, options: &LaunchOptions) -> Result<Px4Process, LaunchError> {
        let px4_env = options.px4_env()?;
        let instance = options.instance;
        let ports = PortMap::for_instance(instance);
        if options.check_ports {
            check_port_free(instance, ports.offboard.px4_port)?;
        }

        let parent = options
            .workdir_parent
            .clone()
            .unwrap_or_else(std::env::temp_dir);
        let workdir = tempfile::Builder::new()
            .prefix(&format!("nexus-px4-i{instance}-"))
            .tempdir_in(&parent)
            .map_err(|source| LaunchError::Workdir { parent, source })?;
        let workdir_path = workdir.path().to_path_buf();
        let log_path = workdir_path.join(CONSOLE_LOG);
        let mut log = File::create(&log_path).map_err(|source| LaunchError::LogFile {
            path: log_path.clone(),
            source,
        })?;

        let program = build.px4_binary();
        let args = [
            "-i".to_string(),
            instance.to_string(),
            "-d".to_string(),
            "-w".to_string(),
            workdir_path.display().to_string(),
            build.etc_dir().display().to_string(),
        ];
        let mut command_line = vec![program.display().to_string()];
        command_line.extend(args.iter().cloned());

        let mut cmd = Command::new(&program);
        cmd.args(&args)
            .current_dir(&workdir_path)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (key, _) in std::env::vars_os() {
            if key.to_str().is_some_and(is_owned_env) {
                cmd.env_remove(&key);
            }
        }
        cmd.envs(px4_env.iter().map(|(k, v)| (k, v)));
        cmd.envs(options.extra_env.iter().map(|(k, v)| (k, v)));

        // The first line of the console log says exactly what was run.
        let env_text: Vec<String> = px4_env
            .iter()
            .chain(options.extra_env.iter())
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        let _ = writeln!(
            log,
            "# nexus launcher: {} {}",
            env_text.join(" "),
            command_line.join(" ")
        );

        let shared = Arc::new(Shared::default());
        let tag = sweep::new_tag(instance);
        let (pid, waiter) = supervise::spawn(cmd, Arc::clone(&shared), log, instance, tag.clone())
            .map_err(|source| LaunchError::Spawn { program, source })?;
        Ok(Px4Process {
            shared,
            pid,
            instance,
            ports,
            workdir: Some(workdir),
            workdir_path,
            log_path,
            command_line,
            px4_env,
            keep_workdir: options.keep_workdir,
            keep_ulog: options.keep_ulog.clone(),
            kept_ulog: None,
            kill_grace: options.kill_grace,
            waiter: Some(waiter),
            tag,
            closed: false,
        })
    }

    /// The instance number `N`.
    pub fn instance(&self) -> u8 {
        self.instance
    }

    /// PX4's pid, which is also its process group id.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Where clients reach this PX4 (offboard UDP `14540 + N`, system id `N + 1`).
    pub fn ports(&self) -> PortMap {
        self.ports
    }

    /// PX4's working directory (`-w`): parameters, dataman, logs, the console log.
    pub fn workdir(&self) -> &Path {
        &self.workdir_path
    }

    /// PX4's stdout and stderr, line by line, after a `# nexus launcher:` header.
    pub fn log_path(&self) -> &Path {
        &self.log_path
    }

    /// The program and arguments run.
    pub fn command_line(&self) -> &[String] {
        &self.command_line
    }

    /// The `PX4_*` variables the launcher set (extra environment not included).
    pub fn px4_env(&self) -> &[(String, String)] {
        &self.px4_env
    }

    /// A handle the pump keeps: `died()`, `wait()`, `declare_dead()`, wakers.
    pub fn watch(&self) -> DeathWatch {
        DeathWatch {
            shared: Arc::clone(&self.shared),
        }
    }

    /// Why PX4 is dead, once it is (every cause: exit, signal, PANIC, declared by the pump).
    pub fn died(&self) -> Option<DeathCause> {
        self.shared.lock().cause.clone()
    }

    /// Block until PX4 dies or `timeout` (wall time) passes.
    pub fn wait_died(&self, timeout: Duration) -> Option<DeathCause> {
        self.watch().wait(timeout)
    }

    /// Record a cause only telemetry can see; see [`DeathWatch::declare_dead`].
    pub fn declare_dead(&self, cause: DeathCause) -> bool {
        self.watch().declare_dead(cause)
    }

    /// The exit status, once the process has been reaped.
    pub fn exit_status(&self) -> Option<ExitStatus> {
        self.shared.lock().exit
    }

    /// Whether PX4 printed "Startup script returned successfully".
    pub fn is_ready(&self) -> bool {
        self.shared.lock().ready
    }

    /// The last lines PX4 printed (at most [`super::OUTPUT_TAIL_LINES`]).
    pub fn output_tail(&self) -> Vec<String> {
        self.shared.lock().tail.iter().cloned().collect()
    }

    /// Wait (wall time) until PX4's startup script has run. Fails at once if PX4 dies or its
    /// startup script reports an error; the error names the console log.
    pub fn wait_ready(&self, timeout: Duration) -> Result<(), LaunchError> {
        let log = self.log_path.clone();
        let outcome = self.shared.wait_for(timeout, |s| {
            if let Some(cause) = &s.cause {
                Some(Err(LaunchError::Died {
                    cause: cause.clone(),
                    log: log.clone(),
                }))
            } else if let Some(line) = &s.startup_failed {
                Some(Err(LaunchError::StartupFailed {
                    line: line.clone(),
                    log: log.clone(),
                }))
            } else if s.ready {
                Some(Ok(()))
            } else {
                None
            }
        });
        outcome.unwrap_or(Err(LaunchError::NotReady {
            timeout_s: timeout.as_secs_f32(),
            log,
        }))
    }

    /// Keep (or not) the working directory when closing.
    pub fn set_keep_workdir(&mut self, keep: bool) {
        self.keep_workdir = keep;
    }

    /// End PX4 and everything in its process group: SIGTERM, SIGKILL after the grace period,
    /// reap, SIGKILL whatever it started that left the group (and wait until it is gone, so its
    /// ports are free), join the supervisor, remove the working directory unless kept.
    /// Idempotent.
    /// Afterwards [`Px4Process::died`] is [`DeathCause::Closed`] unless PX4 had died before.
    pub fn close(&mut self) -> Result<(), LaunchError> {
        if self.closed {
            return Ok(());
        }
        self.closed = true;
        self.signal_group(Signal::SIGTERM, true);
        if self.wait_reaped(self.kill_grace).is_none() {
            self.signal_group(Signal::SIGKILL, false);
        }
        let reaped = self.wait_reaped(KILL_WAIT).is_some();
        // The supervisor swept when PX4 exited; whatever forked since goes too.
        sweep::kill_tagged(&self.tag);
        if reaped {
            sweep::unregister(self.pid);
            if let Some(w) = self.waiter.take() {
                let _ = w.join();
            }
        }
        // PX4 has stopped (or is past stopping): its log is closed, or as complete as it gets.
        let ulog = self.keep_ulog();
        if ulog.is_err() {
            self.keep_workdir = true;
        }
        let removed = self.finish_workdir();
        if !reaped {
            return Err(LaunchError::Unkillable { pid: self.pid });
        }
        ulog.and(removed)
    }

    /// Where PX4's ULog was copied on close ([`LaunchOptions::keep_ulog`]), once it was.
    pub fn kept_ulog(&self) -> Option<&Path> {
        self.kept_ulog.as_deref()
    }

    fn keep_ulog(&mut self) -> Result<(), LaunchError> {
        let Some(to) = self.keep_ulog.clone() else {
            return Ok(());
        };
        let fail = |why: String| LaunchError::Ulog {
            to: to.clone(),
            why,
            workdir: self.workdir_path.clone(),
        };
        let from = newest_ulog(&self.workdir_path.join("log")).ok_or_else(|| {
            fail(format!(
                "PX4 wrote no .ulg under {} (its [logger] lines in {} say why)",
                self.workdir_path.join("log").display(),
                self.log_path.display()
            ))
        })?;
        std::fs::copy(&from, &to).map_err(|e| fail(format!("copying {}: {e}", from.display())))?;
        self.kept_ulog = Some(to);
        Ok(())
    }

    fn signal_group(&self, signal: Signal, mark_closing: bool) {
        let mut state = self.shared.lock();
        if mark_closing {
            state.close_requested = true;
        }
        // Holding the lock: the waiter cannot reap in between, so the group is still PX4's.
        if !state.reaped {
            let _ = killpg(Pid::from_raw(self.pid as i32), signal);
        }
    }

    fn wait_reaped(&self, timeout: Duration) -> Option<()> {
        self.shared.wait_for(timeout, |s| s.finished.then_some(()))
    }

    fn finish_workdir(&mut self) -> Result<(), LaunchError> {
        let Some(dir) = self.workdir.take() else {
            return Ok(());
        };
        if self.keep_workdir {
            let _ = dir.keep();
            return Ok(());
        }
        dir.close().map_err(|source| LaunchError::RemoveWorkdir {
            path: self.workdir_path.clone(),
            source,
        })
    }
}

impl Drop for Px4Process {
    fn drop(&mut self) {
        let _ = self.close();
    }
}

/// The newest `.ulg` under `dir` (PX4's `log/<date>/<time>.ulg`; a few levels deep at most),
/// by modification time, then name.
pub(crate) fn newest_ulog(dir: &Path) -> Option<PathBuf> {
    fn walk(dir: &Path, depth: usize, found: &mut Vec<(std::time::SystemTime, PathBuf)>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            let Ok(meta) = e.metadata() else { continue };
            let path = e.path();
            if meta.is_dir() && depth < 3 {
                walk(&path, depth + 1, found);
            } else if meta.is_file() && path.extension().is_some_and(|x| x == "ulg") {
                let at = meta.modified().unwrap_or(std::time::UNIX_EPOCH);
                found.push((at, path));
            }
        }
    }
    let mut found = Vec::new();
    walk(dir, 0, &mut found);
    found.into_iter().max().map(|(_, p)| p)
}

/// Refuse to start when PX4's offboard port is taken: PX4 would fail to bind it and the client
/// would talk to whoever holds it.
fn check_port_free(instance: u8, port: u16) -> Result<(), LaunchError> {
    match UdpSocket::bind(("0.0.0.0", port)) {
        Err(source) if source.kind() == std::io::ErrorKind::AddrInUse => {
            Err(LaunchError::PortInUse {
                instance,
                port,
                source,
            })
        }
        _ => Ok(()),
    }
}
