//! Ending everything a PX4 started, wherever it went.
//!
//! PX4 runs in its own process group, but what it starts need not stay there: a helper that
//! calls `setsid`, or a daemon that forks twice and is adopted by init, leaves the group and
//! would keep running (and holding its UDP ports) after `killpg`. So every PX4 is started
//! with a tag in its environment ([`TAG_ENV`]`=<our pid>-<instance>-<n>`), which every process
//! it starts inherits, wherever it moves in the process tree. Closing PX4, and PX4 exiting by
//! itself, SIGKILL every process whose environment still carries the tag and wait until each
//! is gone (or a zombie: its sockets are closed by then), so the ports are free on return.
//! (A process that rewrites its own environment escapes the sweep; PX4 and its helpers do not.)
//!
//! The running launches are also listed process-wide, so an exit that cannot wait for the
//! owners to close them (the `nexus` command's, on a second interrupt) can end them all at
//! once ([`end_all_now`]).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, killpg, Signal};
use nix::unistd::Pid;

/// The environment variable that marks every process of one launch.
pub const TAG_ENV: &str = "NEXUS_LAUNCH_TAG";

/// How long a sweep waits for what it killed to be gone.
const SWEEP_WAIT: Duration = Duration::from_secs(2);

/// Between two looks at the process table during a sweep.
const SWEEP_POLL: Duration = Duration::from_millis(5);

/// Launches started by this process so far (part of each tag).
static LAUNCHES: AtomicU64 = AtomicU64::new(0);

/// Running launches: (PX4's pid = its process group id, tag).
static LIVE: Mutex<Vec<(u32, String)>> = Mutex::new(Vec::new());

/// A tag no other launch of any process shares.
pub(crate) fn new_tag(instance: u8) -> String {
    let n = LAUNCHES.fetch_add(1, Ordering::Relaxed);
    format!("{}-{instance}-{n}", std::process::id())
}

/// List a running launch (for [`end_all_now`]).
pub(crate) fn register(pid: u32, tag: &str) {
    if let Ok(mut live) = LIVE.lock() {
        live.push((pid, tag.to_string()));
    }
}

/// The launch of `pid` is closed: no longer listed.
pub(crate) fn unregister(pid: u32) {
    if let Ok(mut live) = LIVE.lock() {
        live.retain(|(p, _)| *p != pid);
    }
}

/// SIGKILL every running launch's process group and every process carrying its tag, without
/// waiting for owners to close them: for an exit that cannot wait. Returns how many launches
/// there were.
pub fn end_all_now() -> usize {
    let live: Vec<(u32, String)> = match LIVE.try_lock() {
        Ok(live) => live.clone(),
        // Whoever holds the list only adds or removes one entry: wait for it.
        Err(_) => LIVE.lock().map(|l| l.clone()).unwrap_or_default(),
    };
    for (pid, tag) in &live {
        let _ = killpg(Pid::from_raw(*pid as i32), Signal::SIGKILL);
        kill_tagged(tag);
    }
    live.len()
}

/// SIGKILL every process whose environment carries `TAG_ENV=tag` (never our own) and wait
/// until each is gone or a zombie, at most [`SWEEP_WAIT`]. Returns how many were killed.
pub(crate) fn kill_tagged(tag: &str) -> usize {
    let needle = format!("{TAG_ENV}={tag}");
    let start = Instant::now();
    let mut killed: Vec<i32> = Vec::new();
    loop {
        // Rounds until a look finds nothing alive: one may fork while we kill its parent.
        let found = tagged(&needle);
        for &pid in &found {
            let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
            if !killed.contains(&pid) {
                killed.push(pid);
            }
        }
        let alive = killed.iter().any(|&pid| is_alive(pid));
        if (found.is_empty() && !alive) || start.elapsed() > SWEEP_WAIT {
            return killed.len();
        }
        std::thread::sleep(SWEEP_POLL);
    }
}

/// Pids of the processes whose environment holds `needle` as one whole entry.
fn tagged(needle: &str) -> Vec<i32> {
    let me = std::process::id() as i32;
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&pid| pid != me)
        .filter(|&pid| {
            // Unreadable (not ours, gone) or empty (a zombie): not a process to end.
            std::fs::read(format!("/proc/{pid}/environ")).is_ok_and(|env| {
                env.split(|&b| b == 0)
                    .any(|entry| entry == needle.as_bytes())
            })
        })
        .collect()
}

/// Whether `pid` still runs: it exists and is not a zombie (`/proc/<pid>/stat` state `Z`/`X`).
pub(crate) fn is_alive(pid: i32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    // "pid (comm) S …": the state follows the last ')' (comm may hold anything).
    let state = stat
        .rfind(')')
        .and_then(|i| stat[i + 1..].split_whitespace().next());
    !matches!(state, Some("Z") | Some("X") | None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::{Command, Stdio};

    #[test]
    fn tags_are_unique() {
        assert_ne!(new_tag(3), new_tag(3));
        assert!(new_tag(7).starts_with(&format!("{}-7-", std::process::id())));
    }

    #[test]
    fn a_tagged_process_that_left_the_group_is_ended_and_others_are_not() {
        let tag = new_tag(200);
        // `setsid` puts the sleeper in a session (and group) of its own.
        let mut tagged_child = Command::new("setsid")
            .args(["sleep", "30"])
            .env(TAG_ENV, &tag)
            .stdin(Stdio::null())
            .spawn()
            .expect("setsid sleep");
        let mut other = Command::new("sleep")
            .arg("30")
            .env(TAG_ENV, format!("{tag}0"))
            .spawn()
            .expect("sleep");
        // Wait for setsid to exec into the tagged sleep.
        let t0 = Instant::now();
        while tagged(&format!("{TAG_ENV}={tag}")).is_empty() && t0.elapsed() < SWEEP_WAIT {
            std::thread::sleep(SWEEP_POLL);
        }
        assert_eq!(kill_tagged(&tag), 1);
        let _ = tagged_child.wait();
        assert!(!is_alive(tagged_child.id() as i32));
        assert!(is_alive(other.id() as i32), "a different tag is left alone");
        let _ = other.kill();
        let _ = other.wait();
        assert!(!is_alive(other.id() as i32));
        assert_eq!(kill_tagged(&tag), 0, "nothing left");
    }
}
