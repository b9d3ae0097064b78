//! `nexus run A.toml B.toml … --jobs N --partition K/N`: a set of programs.
//!
//! Each program flies in its own `nexus run` process (the same binary), on its own instance:
//! worker `w` of `--jobs N` uses instance `--instance + w`, so no two flights at once share
//! a port. Their verdicts come back as `--json` reports; the set gets one summary, one
//! `--json` (every report, in order), one `--junit` (a testsuite per program) and one exit
//! code: 0 if every program passed, 1 if any failed, else the first other code (2: one could
//! not start). With several programs, `--tlog DIR` and `--report DIR` name directories that
//! get one `NAME.tlog` / `NAME.html` per program.
//!
//! Every option of a single run reaches each program's run ([`child_args`]), and the set checks
//! the same arguments a single run does before anything flies. `--connect` names one vehicle:
//! with `--jobs 1` the programs fly on it one after another; with more, the set is refused
//! (two programs cannot fly one vehicle at once). No output may replace another or a program
//! ([`crate::output::distinct`]).
//!
//! An interrupt (SIGINT, SIGTERM, SIGHUP) reaches each running program's process (each is in
//! a process group of its own, so a terminal's Ctrl-C reaches it once, from here): each ends
//! its flight `aborted` and writes its report; the programs not started are marked `not run`;
//! and the set still writes its summary, `--json`, `--junit` and one `--report` file per
//! program, then exits 128 + the signal's number.
//!
//! `--partition K/N` keeps the programs of part K: the set sorted by path as given, then
//! dealt round-robin (the i-th goes to part `i mod N + 1`), like nextest's `count:K/N`. The
//! split depends only on the paths, so every machine of a CI matrix computes the same one,
//! and every program is in exactly one part.

use super::RunArgs;
use crate::evidence::EvidenceArgs;
use crate::interrupt::Caught;
use crate::output::Named;
use crate::vehicle::VehicleArgs;
use crate::{exit, EXIT_FAILED, EXIT_OK, EXIT_SETUP};
use serde_json::Value;
use std::ffi::OsString;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::str::FromStr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

/// Most programs flown at once.
pub const MAX_JOBS: usize = 64;

/// `--partition K/N`: part K (1-based) of N.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Partition {
    /// The part kept, 1..=`total`.
    pub part: usize,
    /// How many parts.
    pub total: usize,
}

impl FromStr for Partition {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || format!("`{s}` is not K/N with 1 <= K <= N (e.g. 2/4)");
        let s2 = s.strip_prefix("count:").unwrap_or(s);
        let (k, n) = s2.split_once('/').ok_or_else(bad)?;
        let part: usize = k.trim().parse().map_err(|_| bad())?;
        let total: usize = n.trim().parse().map_err(|_| bad())?;
        if part == 0 || total == 0 || part > total {
            return Err(bad());
        }
        Ok(Partition { part, total })
    }
}

/// The programs of `part` of `all`: sorted by path, dealt round-robin (see the module docs).
pub fn partition(all: &[PathBuf], part: Option<Partition>) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = all.to_vec();
    v.sort();
    v.dedup();
    match part {
        None => v,
        Some(p) => v
            .into_iter()
            .enumerate()
            .filter(|(i, _)| i % p.total == p.part - 1)
            .map(|(_, x)| x)
            .collect(),
    }
}

/// What one program's run gave.
struct Outcome {
    program: PathBuf,
    instance: u8,
    code: u8,
    report: Option<Value>,
    output: String,
}

/// Run `nexus run` on a set of programs.
pub fn main(args: &RunArgs) -> ExitCode {
    let mut all = vec![args.program.clone()];
    all.extend(args.more.iter().cloned());
    let set = partition(&all, args.partition);
    let jobs = args.jobs;
    if !(1..=MAX_JOBS).contains(&jobs) {
        eprintln!("nexus run: --jobs must be 1 to {MAX_JOBS}, got {jobs}");
        return exit(EXIT_SETUP);
    }
    if args.check {
        return check_only(args, &set);
    }
    if let Err(e) = check_set(args, &all, &set) {
        eprintln!("nexus run: {e}");
        return exit(EXIT_SETUP);
    }
    let part = args
        .partition
        .map_or(String::new(), |p| format!(", part {}/{}", p.part, p.total));
    eprintln!("nexus run: {} programs{part}, {jobs} at once", set.len());
    if let Some(conn) = &args.vehicle.connect {
        let udpout = matches!(
            conn.parse::<nexus_host::transport::ConnString>(),
            Ok(nexus_host::transport::ConnString::UdpOut { .. })
        );
        if udpout && set.len() > 1 {
            eprintln!(
                "nexus run: note: over udpout each program's run speaks from a port of its own, \
                 and PX4 (like nexus sim) answers only the first client it heard: programs \
                 after the first may hear nothing; a link on the port the vehicle sends to \
                 (udpin:), tcp: or serial: carries the whole set"
            );
        }
    }
    let exe = match std::env::current_exe() {
        Ok(e) => e,
        Err(e) => {
            eprintln!("nexus run: cannot find this program to run again: {e}");
            return exit(EXIT_SETUP);
        }
    };
    let tmp = match tempfile::tempdir() {
        Ok(t) => t,
        Err(e) => {
            eprintln!("nexus run: no temporary directory: {e}");
            return exit(EXIT_SETUP);
        }
    };
    // From here a signal is ours to act on: it is passed to the running programs, and the set
    // ends with its reports (module docs).
    let _interrupts = crate::interrupt::handle();
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<Outcome>>> = Mutex::new((0..set.len()).map(|_| None).collect());
    std::thread::scope(|s| {
        for w in 0..jobs.min(set.len()) {
            let (next, results, set, exe, tmp) = (&next, &results, &set, &exe, tmp.path());
            s.spawn(move || loop {
                if crate::interrupt::caught().is_some() {
                    break;
                }
                let i = next.fetch_add(1, Ordering::SeqCst);
                let Some(p) = set.get(i) else { break };
                let o = run_one(exe, args, p, w, tmp, i);
                let line = match o.report.as_ref().and_then(|r| r.get("verdict")) {
                    Some(Value::String(v)) => v.clone(),
                    _ => format!("exit {}: {}", o.code, last_line(&o.output)),
                };
                eprintln!("  {} (instance {}): {line}", p.display(), o.instance);
                // A worker that panicked leaves the other slots as they were: still used.
                results.lock().unwrap_or_else(PoisonError::into_inner)[i] = Some(o);
            });
        }
    });
    let results = results.into_inner().unwrap_or_else(PoisonError::into_inner);
    summarize(args, &set, results)
}

/// What a set checks before anything flies (past `--jobs`): the instances the workers use, the same
/// vehicle arguments as a single run (`--speed` with `--connect`, the speed's range, the
/// connection string), `--connect` with one worker, every output distinct from the others and
/// from the programs, and the outputs writable (the directories made).
fn check_set(args: &RunArgs, all: &[PathBuf], set: &[PathBuf]) -> Result<(), String> {
    let jobs = args.jobs;
    if let Some(conn) = &args.vehicle.connect {
        if jobs > 1 {
            return Err(format!(
                "--connect {conn} names one vehicle, and --jobs {jobs} would fly up to {jobs} \
                 programs on it at once; with --jobs 1 the set flies on it one program after \
                 another"
            ));
        }
    }
    let top = args.vehicle.instance as usize + jobs - 1;
    if top > crate::limits::INSTANCE_MAX as usize {
        return Err(format!(
            "--instance {} with --jobs {jobs} needs instances up to {top}, past {}",
            args.vehicle.instance,
            crate::limits::INSTANCE_MAX
        ));
    }
    crate::vehicle::before_flight(&args.vehicle, None)?;
    // Every file the set writes: its own, and each program's in the directories.
    let per_program: Vec<(&str, PathBuf)> = [
        ("--tlog", &args.evidence.tlog, "tlog"),
        ("--report", &args.evidence.html, "html"),
        ("--ulog", &args.evidence.ulog, "ulg"),
    ]
    .into_iter()
    .filter_map(|(what, dir, ext)| dir.as_ref().map(|d| (what, d, ext)))
    .flat_map(|(what, d, ext)| set.iter().map(move |p| (what, d.join(out_name(p, ext)))))
    .collect();
    let mut named: Vec<Named<'_>> = all.iter().map(|p| Named::input("the program", p)).collect();
    if let Some(j) = &args.json {
        named.push(Named::output("--json", j));
    }
    if let Some(j) = &args.evidence.junit {
        named.push(Named::output("--junit", j));
    }
    if let Some(d) = &args.evidence.tlog {
        named.push(Named::output_dir("--tlog", d));
    }
    if let Some(d) = &args.evidence.html {
        named.push(Named::output_dir("--report", d));
    }
    if let Some(d) = &args.evidence.ulog {
        named.push(Named::output_dir("--ulog", d));
    }
    named.extend(per_program.iter().map(|(w, p)| Named::output(w, p)));
    named.extend(args.vehicle.signing.named());
    crate::output::distinct(&named)?;
    check_outputs(args)
}

/// `--check` with a set: read and check each program of the part, fly none; the programs kept
/// are listed (on stdout, or as `--json`'s `programs`), so a CI job can show its share.
fn check_only(args: &RunArgs, set: &[PathBuf]) -> ExitCode {
    let out = crate::output::Out::new(args.json.as_deref());
    let mut bad = 0;
    let mut listed = Vec::new();
    for p in set {
        match crate::program::ProgramFile::load(p) {
            Ok(prog) => {
                out.line(&format!(
                    "{}: program OK, {} steps",
                    p.display(),
                    prog.steps.len()
                ));
                listed.push(serde_json::json!({"program": p.display().to_string(), "ok": true}));
            }
            Err(e) => {
                bad += 1;
                out.line(&format!("{}: {e}", p.display()));
                listed.push(
                    serde_json::json!({"program": p.display().to_string(), "ok": false,
                    "error": e.to_string()}),
                );
            }
        }
    }
    let code = if bad == 0 { EXIT_OK } else { EXIT_SETUP };
    if let Err(e) = out.write_json(&serde_json::json!({"command": "run", "check": true,
        "partition": args.partition.map(|p| format!("{}/{}", p.part, p.total)),
        "programs": listed}))
    {
        eprintln!("nexus run: {e}");
        return exit(EXIT_SETUP);
    }
    exit(code)
}

fn last_line(s: &str) -> &str {
    s.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("")
}

/// With several programs, `--tlog`, `--report` and `--ulog` are directories (made if absent).
fn check_outputs(args: &RunArgs) -> Result<(), String> {
    for (what, p) in [
        ("--tlog", &args.evidence.tlog),
        ("--report", &args.evidence.html),
        ("--ulog", &args.evidence.ulog),
    ] {
        if let Some(d) = p {
            std::fs::create_dir_all(d).map_err(|e| {
                format!(
                    "{what} {}: with several programs this is a directory: {e}",
                    d.display()
                )
            })?;
        }
    }
    if let Some(j) = &args.evidence.junit {
        crate::limits::check_output("--junit", j)?;
    }
    match &args.json {
        Some(p) if p != Path::new(crate::output::STDOUT) => {
            crate::limits::check_output("--json", p)
        }
        _ => Ok(()),
    }
}

/// One file name per program in an output directory: its stem, and its place in the set when
/// two programs share a stem.
fn out_name(p: &Path, ext: &str) -> String {
    let stem = p
        .file_stem()
        .map_or("program".into(), |s| s.to_string_lossy().into_owned());
    let hash = p
        .to_string_lossy()
        .bytes()
        .fold(2166136261u32, |a, b| (a ^ b as u32).wrapping_mul(16777619));
    format!("{stem}-{hash:08x}.{ext}")
}

/// The arguments of the `nexus run` that flies `program` for worker `worker` of a set, its
/// report to `json`: every option of a single run the set was given, as given, but the
/// instance (`--instance` + `worker`: one per worker) and the per-program outputs (`--json`
/// to read back, `--tlog` and `--report` as files in their directories). The set's own options
/// (`--jobs`, `--partition`, the other programs, `--junit`, `--check`) stay with the set.
///
/// Every field is named here, so an option added to [`RunArgs`], [`VehicleArgs`] or
/// [`EvidenceArgs`] does not compile until it is passed on or said to be the set's.
pub fn child_args(args: &RunArgs, program: &Path, worker: usize, json: &Path) -> Vec<OsString> {
    let RunArgs {
        // Replaced by this program.
        program: _,
        vehicle,
        // The set answers `--check` itself (`check_only`): a program's run never gets it.
        check: _,
        // Replaced by this program's report, which the set reads back.
        json: _,
        evidence,
        // The set's.
        more: _,
        jobs: _,
        partition: _,
    } = args;
    let VehicleArgs {
        px4,
        sim,
        connect,
        sysid,
        compid,
        real_vehicle,
        link_rate_baud,
        speed,
        instance,
        listen,
        signing,
        model,
    } = vehicle;
    let crate::signing::SigningArgs {
        signing_key,
        require_signed,
    } = signing;
    let EvidenceArgs {
        tlog,
        html,
        ulog,
        // The set writes one JUnit file of every program's report.
        junit: _,
    } = evidence;
    let mut a: Vec<OsString> = vec!["run".into(), program.into()];
    let mut opt = |name: &str, value: OsString| {
        a.push(name.into());
        a.push(value);
    };
    // Checked against INSTANCE_MAX with --jobs before anything starts.
    let instance = (*instance as usize + worker).min(u8::MAX as usize);
    opt("--instance", instance.to_string().into());
    opt("--speed", speed.to_string().into());
    opt("--listen", listen.to_string().into());
    if let Some(p) = px4 {
        opt("--px4", p.into());
    }
    if let Some(c) = connect {
        opt("--connect", c.into());
    }
    if let Some(m) = model {
        opt("--model", m.name().into());
    }
    if let Some(id) = sysid {
        opt("--sysid", id.to_string().into());
    }
    if let Some(id) = compid {
        opt("--compid", id.to_string().into());
    }
    if let Some(b) = link_rate_baud {
        opt("--link-rate-baud", b.to_string().into());
    }
    if let Some(k) = signing_key {
        opt("--signing-key", k.into());
    }
    opt("--json", json.into());
    if let Some(d) = tlog {
        opt("--tlog", d.join(out_name(program, "tlog")).into());
    }
    if let Some(d) = html {
        opt("--report", d.join(out_name(program, "html")).into());
    }
    if let Some(d) = ulog {
        opt("--ulog", d.join(out_name(program, "ulg")).into());
    }
    if *sim {
        a.push("--sim".into());
    }
    if *real_vehicle {
        a.push("--real-vehicle".into());
    }
    if *require_signed {
        a.push("--require-signed".into());
    }
    a
}

/// How often a worker looks at its program's process (and at whether a signal came).
const POLL: Duration = Duration::from_millis(20);

/// Fly `program` (the `index`-th of the set) in its own `nexus run` for worker `worker`: its
/// report and output in `tmp`, the first signal the set receives passed on to it.
fn run_one(
    exe: &Path,
    args: &RunArgs,
    program: &Path,
    worker: usize,
    tmp: &Path,
    index: usize,
) -> Outcome {
    let json = tmp.join(format!("{index}.json"));
    let log = tmp.join(format!("{index}.log"));
    let instance = args.vehicle.instance.saturating_add(worker as u8);
    let outcome = |code, output| Outcome {
        program: program.to_path_buf(),
        instance,
        code,
        report: std::fs::read(&json)
            .ok()
            .and_then(|b| serde_json::from_slice::<Value>(&b).ok()),
        output,
    };
    let files = std::fs::File::create(&log).and_then(|f| Ok((f.try_clone()?, f)));
    let (stdout, stderr) = match files {
        Ok(f) => f,
        Err(e) => {
            return outcome(
                EXIT_SETUP,
                format!("cannot make {} for its output: {e}", log.display()),
            )
        }
    };
    let mut c = Command::new(exe);
    c.args(child_args(args, program, worker, &json))
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(stderr)
        // Its own group: a terminal's Ctrl-C reaches only the set, which passes it on once
        // (a second signal would end the program at once, without its report).
        .process_group(0);
    let mut child = match c.spawn() {
        Ok(ch) => ch,
        Err(e) => return outcome(EXIT_SETUP, format!("cannot start nexus run: {e}")),
    };
    let mut passed_on = false;
    let status = loop {
        match child.try_wait() {
            Ok(Some(st)) => break Ok(st),
            Ok(None) => {}
            Err(e) => break Err(e),
        }
        // Not reaped yet, so the pid is still this child's.
        if !passed_on {
            if let Some(sig) = crate::interrupt::caught() {
                pass_on(child.id(), sig);
                passed_on = true;
            }
        }
        std::thread::sleep(POLL);
    };
    let text = String::from_utf8_lossy(&std::fs::read(&log).unwrap_or_default()).into_owned();
    match status {
        Ok(st) => {
            let code = match (st.code(), st.signal()) {
                (Some(c), _) => c.clamp(0, 255) as u8,
                // Ended by a signal before it could act on it: the shell's 128 + n.
                (None, Some(sig)) => Caught { signal: sig }.exit_code(),
                (None, None) => EXIT_FAILED,
            };
            outcome(code, text)
        }
        Err(e) => outcome(EXIT_SETUP, format!("{text}cannot wait for nexus run: {e}")),
    }
}

/// Send `sig` to the process `pid` (a program of the set).
fn pass_on(pid: u32, sig: Caught) {
    use nix::sys::signal::{kill, Signal};
    use nix::unistd::Pid;
    if let (Ok(pid), Ok(signal)) = (i32::try_from(pid), Signal::try_from(sig.signal)) {
        // It may have just exited: nothing to do then.
        let _ = kill(Pid::from_raw(pid), signal);
    }
}

/// How one program of the set ended.
fn program_status(code: u8) -> &'static str {
    match code {
        EXIT_OK => "passed",
        EXIT_FAILED => "failed",
        // 128 + the signal's number.
        129..=255 => "interrupted",
        _ => "error",
    }
}

/// The report of a program the set did not start, because `sig` came first: every step
/// `not run`; its HTML written into the `--report` directory, as the programs that ran write
/// theirs.
fn not_run(args: &RunArgs, program: &Path, sig: Option<Caught>) -> Value {
    let why = match sig {
        Some(c) => format!("not run: the set was {}", c.reason()),
        None => "not run".to_string(),
    };
    let prog = crate::program::ProgramFile::load(program).ok();
    let mut report = crate::report::Report::new(
        "run",
        program.display().to_string(),
        prog.as_ref().and_then(|p| p.name.clone()),
        args.vehicle.report(),
        prog.as_ref().map_or(0, |p| p.steps.len()),
    );
    report.verdict = format!("FAIL: {why}");
    report.exit_code = sig.map_or(EXIT_FAILED, |c| c.exit_code());
    report.events.push(why.clone());
    if let Some(d) = &args.evidence.html {
        let path = d.join(out_name(program, "html"));
        let html = crate::evidence::html::render(&report, &[]);
        if let Err(e) = crate::evidence::write_file(&path, &html) {
            eprintln!("nexus run: {e}");
        }
    }
    let mut v = serde_json::to_value(&report).unwrap_or(Value::Null);
    if let Some(o) = v.as_object_mut() {
        // What `--junit` marks skipped.
        o.insert("not_run".into(), Value::String(why));
    }
    v
}

fn summarize(args: &RunArgs, set: &[PathBuf], results: Vec<Option<Outcome>>) -> ExitCode {
    let sig = crate::interrupt::caught();
    let mut reports = Vec::new();
    let mut summary = Vec::new();
    let (mut passed, mut failed, mut interrupted, mut not_started) = (0, 0, 0, 0);
    let mut other = None;
    for (i, r) in results.into_iter().enumerate() {
        let Some(o) = r else {
            not_started += 1;
            let report = not_run(args, &set[i], sig);
            summary.push(serde_json::json!({"program": set[i].display().to_string(),
                "exit_code": null, "status": "not run", "verdict": report["verdict"]}));
            reports.push(report);
            continue;
        };
        match program_status(o.code) {
            "passed" => passed += 1,
            "failed" => failed += 1,
            "interrupted" => {
                interrupted += 1;
                other.get_or_insert(o.code);
            }
            _ => {
                other.get_or_insert(o.code);
                if o.report.is_none() {
                    eprintln!("{}: {}", o.program.display(), o.output.trim_end());
                }
            }
        }
        let verdict = o
            .report
            .as_ref()
            .and_then(|r| r.get("verdict").cloned())
            .unwrap_or_else(|| Value::String(last_line(&o.output).to_string()));
        summary.push(
            serde_json::json!({"program": o.program.display().to_string(),
            "exit_code": o.code, "status": program_status(o.code), "verdict": verdict}),
        );
        match o.report {
            Some(r) => reports.push(r),
            // A program that could not start (or was ended before it could say why) still
            // shows in the JUnit file, as a failure.
            None => {
                let why = match (program_status(o.code), last_line(&o.output)) {
                    ("interrupted", "") => format!(
                        "interrupted (exit {}) before it could write its report",
                        o.code
                    ),
                    (_, line) => line.to_string(),
                };
                reports.push(serde_json::json!({
                    "file": o.program.display().to_string(), "passed": false,
                    "exit_code": o.code, "verdict": format!("FAIL: {why}"), "steps": [],
                    "steps_total": 0, "wall_s": 0.0}));
            }
        }
    }
    // Interrupted: the signal's code, as a single run; else 1 if any failed, else the first
    // other code (2: one could not start; 128 + n: one was ended by a signal of its own).
    let code = match sig {
        Some(c) => c.exit_code(),
        None if failed > 0 => EXIT_FAILED,
        None => other.unwrap_or(EXIT_OK),
    };
    let mut line = format!("{} programs: {passed} passed, {failed} failed", set.len());
    if interrupted > 0 {
        line.push_str(&format!(", {interrupted} interrupted"));
    }
    if not_started > 0 {
        line.push_str(&format!(", {not_started} not run"));
    }
    let errors = set.len() - passed - failed - interrupted - not_started;
    if errors > 0 {
        line.push_str(&format!(", {errors} did not run to a verdict"));
    }
    if let Some(c) = sig {
        line.push_str(&format!(" ({})", c.reason()));
    }
    let out = crate::output::Out::new(args.json.as_deref());
    out.line(&if code == EXIT_OK {
        format!("PASS: {line}")
    } else {
        format!("FAIL: {line}")
    });
    let all = serde_json::json!({"format": crate::report::FORMAT, "command": "run",
        "passed": code == EXIT_OK, "exit_code": code, "summary": line,
        "interrupted": sig.map(|c| c.name()),
        "programs": summary, "reports": reports});
    let mut result = out.write_json(&all);
    if let Some(j) = &args.evidence.junit {
        result = result.and_then(|()| {
            crate::evidence::write_file(j, &crate::evidence::junit::render(&reports))
        });
    }
    if let Err(e) = result {
        eprintln!("nexus run: {e}");
        return exit(EXIT_SETUP);
    }
    exit(code)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    /// `nexus run`'s arguments alone, as the binary parses them.
    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        run: RunArgs,
    }

    fn parse<S: Into<OsString> + Clone>(args: &[S]) -> RunArgs {
        let argv =
            std::iter::once(OsString::from("nexus")).chain(args.iter().cloned().map(Into::into));
        match Cli::try_parse_from(argv) {
            Ok(c) => c.run,
            Err(e) => panic!("{e}"),
        }
    }

    /// The child's arguments for program `b.toml` on worker 2, parsed back as the child does
    /// (without the leading `run`).
    fn child_of(parent: &[&str]) -> RunArgs {
        let mut argv = vec!["a.toml", "b.toml"];
        argv.extend_from_slice(parent);
        let args = parse(&argv);
        let child = child_args(&args, Path::new("b.toml"), 2, Path::new("/tmp/set/1.json"));
        assert_eq!(child[0], OsString::from("run"));
        parse(&child[1..])
    }

    #[test]
    fn every_single_run_option_reaches_the_programs_of_a_set() {
        let conn = "udpout:127.0.0.1:14699";
        let baseline = format!("{:?}", child_of(&[]).vehicle);
        // Each option of a single run, and what the program's run must then have.
        let cases: &[(&[&str], &str)] = &[
            (&["--speed", "7.5"], "speed: Factor(7.5)"),
            (&["--speed", "max"], "speed: Max"),
            (&["-s", "0.25"], "speed: Factor(0.25)"),
            // Worker 2: the instance given + 2.
            (&["--instance", "40"], "instance: 42"),
            (&["--listen", "0.0.0.0"], "listen: 0.0.0.0"),
            (
                &["--px4", "/opt/px4/build"],
                "px4: Some(\"/opt/px4/build\")",
            ),
            (&["--sim"], "sim: true"),
            (
                &["--connect", conn],
                "connect: Some(\"udpout:127.0.0.1:14699\")",
            ),
            (&["--connect", conn, "--sysid", "7"], "sysid: Some(7)"),
            (&["--connect", conn, "--compid", "190"], "compid: Some(190)"),
            (&["--connect", conn, "--real-vehicle"], "real_vehicle: true"),
            (
                &["--connect", conn, "--link-rate-baud", "57600"],
                "link_rate_baud: Some(57600)",
            ),
            (&["--signing-key", "k.key"], "signing_key: Some(\"k.key\")"),
            (
                &["--signing-key", "k.key", "--require-signed"],
                "require_signed: true",
            ),
        ];
        for (given, want) in cases {
            let child = child_of(given);
            let got = format!("{:?}", child.vehicle);
            assert!(got.contains(want), "{given:?}: the child has {got}");
            assert_ne!(got, baseline, "{given:?} changed nothing");
            // Everything else as in the parent (the instance moved by the worker).
            let mut argv = vec!["a.toml"];
            argv.extend_from_slice(given);
            let mut parent = parse(&argv).vehicle;
            parent.instance += 2;
            assert_eq!(got, format!("{parent:?}"), "{given:?}");
        }
    }

    #[test]
    fn a_sets_outputs_reach_each_program_as_its_own_files() {
        let child = child_of(&["--tlog", "logs", "--report", "html", "--junit", "all.xml"]);
        assert_eq!(child.program, PathBuf::from("b.toml"));
        assert_eq!(
            child.evidence.tlog,
            Some(Path::new("logs").join(out_name(Path::new("b.toml"), "tlog")))
        );
        assert_eq!(
            child.evidence.html,
            Some(Path::new("html").join(out_name(Path::new("b.toml"), "html")))
        );
        // The set writes the one JUnit file, and reads each program's JSON report back.
        assert_eq!(child.evidence.junit, None);
        assert_eq!(child.json, Some(PathBuf::from("/tmp/set/1.json")));
        // One program, one worker: the set's own options stay with the set.
        let child = child_of(&["--jobs", "3", "--partition", "1/2", "--json", "r.json"]);
        assert!(child.more.is_empty());
        assert_eq!(child.jobs, 1);
        assert_eq!(child.partition, None);
        assert!(!child.check);
        assert_eq!(child.json, Some(PathBuf::from("/tmp/set/1.json")));
    }

    #[test]
    fn partition_parses() {
        assert_eq!("2/4".parse(), Ok(Partition { part: 2, total: 4 }));
        assert_eq!("count:1/1".parse(), Ok(Partition { part: 1, total: 1 }));
        for bad in ["0/3", "4/3", "1/0", "x", "1/", "/2", "-1/2"] {
            assert!(bad.parse::<Partition>().is_err(), "{bad}");
        }
    }

    #[test]
    fn partition_is_stable_and_covers() {
        let names: Vec<PathBuf> = (0..23)
            .map(|i| PathBuf::from(format!("p{i}.toml")))
            .collect();
        let mut shuffled = names.clone();
        shuffled.reverse();
        shuffled.swap(3, 17);
        for n in 1..=7 {
            let mut seen = Vec::new();
            for k in 1..=n {
                let p = Some(Partition { part: k, total: n });
                let a = partition(&names, p);
                assert_eq!(a, partition(&shuffled, p), "order of the arguments matters");
                assert!(a.len() >= 23 / n && a.len() <= 23 / n + 1);
                seen.extend(a);
            }
            seen.sort();
            let mut want = names.clone();
            want.sort();
            assert_eq!(seen, want);
        }
    }
}
