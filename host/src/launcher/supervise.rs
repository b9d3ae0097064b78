//! The threads that watch one PX4 process.
//!
//! * The **waiter** spawns PX4 (so `PR_SET_PDEATHSIG`, which follows the spawning *thread*,
//!   is tied to a thread that lives exactly as long as the process), waits for it to exit
//!   without reaping it (`waitid(WNOWAIT)`: the pid, and so the process group id, stays ours),
//!   SIGKILLs whatever is left of its process group and every process carrying the launch's
//!   tag (those that left the group: [`super::sweep`]), lets the readers drain the pipes, then
//!   reaps it and records the exit.
//! * Two **readers** (stdout, stderr) append every line to the console log and scan it:
//!   `PANIC`, "PX4 server already running", "Startup script returned …".

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Command, ExitStatus};
use std::sync::{mpsc, Arc, Mutex};
use std::thread;
use std::time::Duration;

use nix::errno::Errno;
use nix::sys::signal::{killpg, Signal};
use nix::sys::wait::{waitid, Id, WaitPidFlag};
use nix::unistd::Pid;

use super::death::{Shared, OUTPUT_TAIL_LINES};
use super::{sweep, DeathCause};

/// How long the waiter lets the readers drain PX4's output after it exited.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(2);

/// Start `cmd` on a new supervisor thread, its processes marked with `tag`; returns its pid
/// once it runs.
pub(crate) fn spawn(
    mut cmd: Command,
    shared: Arc<Shared>,
    log: File,
    instance: u8,
    tag: String,
) -> io::Result<(u32, thread::JoinHandle<()>)> {
    cmd.process_group(0);
    cmd.env(sweep::TAG_ENV, &tag);
    die_with_parent(&mut cmd);
    let (tx, rx) = mpsc::channel();
    let handle = thread::Builder::new()
        .name(format!("px4-{instance}-waiter"))
        .spawn(move || waiter(cmd, shared, log, instance, &tag, tx))?;
    match rx.recv() {
        Ok(Ok(pid)) => Ok((pid, handle)),
        Ok(Err(e)) => {
            let _ = handle.join();
            Err(e)
        }
        Err(_) => {
            let _ = handle.join();
            Err(io::Error::other(
                "the PX4 supervisor thread ended before starting PX4",
            ))
        }
    }
}

fn waiter(
    mut cmd: Command,
    shared: Arc<Shared>,
    log: File,
    instance: u8,
    tag: &str,
    started: mpsc::Sender<io::Result<u32>>,
) {
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            let _ = started.send(Err(e));
            return;
        }
    };
    let pid = child.id();
    sweep::register(pid, tag);
    let _ = started.send(Ok(pid));

    let log = Arc::new(Mutex::new(log));
    let (done_tx, done_rx) = mpsc::channel::<()>();
    let mut readers = 0;
    if let Some(out) = child.stdout.take() {
        readers += start_reader(out, "out", &shared, &log, instance, done_tx.clone());
    }
    if let Some(err) = child.stderr.take() {
        readers += start_reader(err, "err", &shared, &log, instance, done_tx.clone());
    }
    drop(done_tx);

    // Wait for the exit but leave the zombie in place, so the group id cannot be reused yet.
    let pgid = Pid::from_raw(pid as i32);
    while let Err(Errno::EINTR) = waitid(Id::Pid(pgid), WaitPidFlag::WEXITED | WaitPidFlag::WNOWAIT)
    {
    }
    // Anything PX4 left behind in its group (helpers, a shell) goes with it, and so does what
    // it started that left the group (setsid, a double fork).
    let _ = killpg(pgid, Signal::SIGKILL);
    sweep::kill_tagged(tag);
    for _ in 0..readers {
        if done_rx.recv_timeout(DRAIN_TIMEOUT).is_err() {
            break;
        }
    }

    shared.lock().reaped = true;
    let status = child.wait();
    let mut state = shared.lock();
    if let Ok(status) = status {
        state.exit = Some(status);
        let cause = if state.close_requested {
            DeathCause::Closed
        } else {
            classify(status)
        };
        state.record(cause);
    } else {
        state.record(DeathCause::Exited { code: -1 });
    }
    state.finished = true;
    drop(state);
    shared.notify();
}

/// The cause an exit status stands for.
pub(crate) fn classify(status: ExitStatus) -> DeathCause {
    match (status.code(), status.signal()) {
        (Some(code), _) => DeathCause::Exited { code },
        (None, Some(signal)) => DeathCause::Signaled {
            signal,
            core_dumped: status.core_dumped(),
        },
        (None, None) => DeathCause::Exited { code: -1 },
    }
}

fn start_reader<R: Read + Send + 'static>(
    stream: R,
    which: &str,
    shared: &Arc<Shared>,
    log: &Arc<Mutex<File>>,
    instance: u8,
    done: mpsc::Sender<()>,
) -> usize {
    let shared = Arc::clone(shared);
    let log = Arc::clone(log);
    thread::Builder::new()
        .name(format!("px4-{instance}-{which}"))
        .spawn(move || {
            read_lines(stream, &shared, &log, instance);
            let _ = done.send(());
        })
        .map(|_| 1)
        .unwrap_or(0)
}

fn read_lines<R: Read>(stream: R, shared: &Shared, log: &Mutex<File>, instance: u8) {
    let mut reader = BufReader::new(stream);
    let mut raw = Vec::with_capacity(256);
    loop {
        raw.clear();
        match reader.read_until(b'\n', &mut raw) {
            Ok(0) => return,
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => return,
        }
        if let Ok(mut f) = log.lock() {
            let _ = f.write_all(&raw);
            if !raw.ends_with(b"\n") {
                let _ = f.write_all(b"\n");
            }
        }
        let line = strip_ansi(String::from_utf8_lossy(&raw).trim_end());
        observe(shared, &line, instance);
    }
}

/// What one line of PX4 output tells the supervisor.
pub(crate) fn observe(shared: &Shared, line: &str, instance: u8) {
    let mut state = shared.lock();
    if line.contains("PANIC") {
        state.record(DeathCause::Panic {
            line: line.to_string(),
        });
    }
    if line.contains("PX4 server already running") {
        state.record(DeathCause::AlreadyRunning {
            instance,
            line: line.to_string(),
        });
    }
    if line.contains("Startup script returned successfully") {
        state.ready = true;
    }
    if line.contains("Startup script returned with return value") && state.startup_failed.is_none()
    {
        state.startup_failed = Some(line.to_string());
    }
    if state.tail.len() == OUTPUT_TAIL_LINES {
        state.tail.pop_front();
    }
    state.tail.push_back(line.to_string());
    drop(state);
    shared.notify();
}

/// Drop ANSI colour sequences (`ESC [ … letter`), which PX4 prints on a terminal.
fn strip_ansi(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            if chars.clone().next() == Some('[') {
                chars.next();
                for d in chars.by_ref() {
                    if d.is_ascii_alphabetic() {
                        break;
                    }
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Make the kernel SIGKILL PX4 if the thread that started it dies (our process crashing or
/// being killed without running `Drop`), so it never outlives us as an orphan.
#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
fn die_with_parent(cmd: &mut Command) {
    let parent = std::process::id();
    // SAFETY: the closure runs in the forked child before exec. It only calls prctl(2) and
    // getppid(2), both async-signal-safe, touches no locks and allocates nothing (the errors
    // are built from raw OS error numbers).
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(
                libc::PR_SET_PDEATHSIG,
                libc::SIGKILL as libc::c_ulong,
                0,
                0,
                0,
            ) != 0
            {
                return Err(io::Error::last_os_error());
            }
            // Our process may have died between fork and prctl: then no signal would come.
            if libc::getppid() as u32 != parent {
                return Err(io::Error::from_raw_os_error(libc::ESRCH));
            }
            Ok(())
        });
    }
}

#[cfg(not(target_os = "linux"))]
fn die_with_parent(_cmd: &mut Command) {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ansi_colours_are_stripped() {
        assert_eq!(
            strip_ansi("\x1b[31mERROR \x1b[37m[px4] \x1b[31mPANIC: x\x1b[0m"),
            "ERROR [px4] PANIC: x"
        );
        assert_eq!(strip_ansi("plain"), "plain");
    }

    #[test]
    fn lines_set_causes_and_readiness_and_the_first_cause_stays() {
        let shared = Shared::default();
        observe(
            &shared,
            "INFO  [px4] Startup script returned successfully",
            0,
        );
        assert!(shared.lock().ready);
        assert_eq!(shared.lock().cause, None);
        observe(&shared, "ERROR [commander] PANIC: one", 0);
        observe(&shared, "ERROR [commander] PANIC: two", 0);
        assert_eq!(
            shared.lock().cause,
            Some(DeathCause::Panic {
                line: "ERROR [commander] PANIC: one".into()
            })
        );
        assert_eq!(shared.lock().tail.len(), 3);
    }
}
