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
//! `--partition K/N` keeps the programs of part K: the set sorted by path as given, then
//! dealt round-robin (the i-th goes to part `i mod N + 1`), like nextest's `count:K/N`. The
//! split depends only on the paths, so every machine of a CI matrix computes the same one,
//! and every program is in exactly one part.

use super::run::RunArgs;
use super::{exit, EXIT_FAILED, EXIT_OK, EXIT_SETUP};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::str::FromStr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

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
        eprintln!("nexus run: --jobs must be 1 to {MAX_JOBS}");
        return exit(EXIT_SETUP);
    }
    let top = args.vehicle.instance as usize + jobs - 1;
    if top > super::limits::INSTANCE_MAX as usize {
        eprintln!(
            "nexus run: --instance {} with --jobs {jobs} needs instances up to {top}, past {}",
            args.vehicle.instance,
            super::limits::INSTANCE_MAX
        );
        return exit(EXIT_SETUP);
    }
    if args.check {
        return check_only(args, &set);
    }
    if let Err(e) = check_outputs(args) {
        eprintln!("nexus run: {e}");
        return exit(EXIT_SETUP);
    }
    let part = args
        .partition
        .map_or(String::new(), |p| format!(", part {}/{}", p.part, p.total));
    eprintln!("nexus run: {} programs{part}, {jobs} at once", set.len());
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
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<Outcome>>> = Mutex::new((0..set.len()).map(|_| None).collect());
    std::thread::scope(|s| {
        for w in 0..jobs.min(set.len()) {
            let (next, results, set, exe, tmp) = (&next, &results, &set, &exe, tmp.path());
            s.spawn(move || loop {
                let i = next.fetch_add(1, Ordering::SeqCst);
                let Some(p) = set.get(i) else { break };
                if nexus_host::interrupt::caught().is_some() {
                    break;
                }
                let instance = args.vehicle.instance + w as u8;
                let o = run_one(exe, args, p, instance, &tmp.join(format!("{i}.json")));
                let line = match o.report.as_ref().and_then(|r| r.get("verdict")) {
                    Some(Value::String(v)) => v.clone(),
                    _ => format!("exit {}: {}", o.code, last_line(&o.output)),
                };
                eprintln!("  {} (instance {instance}): {line}", p.display());
                nexus_host::sync::lock(results)[i] = Some(o);
            });
        }
    });
    let results = nexus_host::sync::into_inner(results);
    summarize(args, &set, results)
}

/// `--check` with a set: read and check each program of the part, fly none; the programs kept
/// are listed (on stdout, or as `--json`'s `programs`), so a CI job can show its share.
fn check_only(args: &RunArgs, set: &[PathBuf]) -> ExitCode {
    let out = super::output::Out::new(args.json.as_deref());
    let mut bad = 0;
    let mut listed = Vec::new();
    for p in set {
        match super::program::ProgramFile::load(p) {
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

/// With several programs, `--tlog` and `--report` are directories (made if absent).
fn check_outputs(args: &RunArgs) -> Result<(), String> {
    for (what, p) in [
        ("--tlog", &args.evidence.tlog),
        ("--report", &args.evidence.html),
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
        super::limits::check_output("--junit", j)?;
    }
    match &args.json {
        Some(p) if p != Path::new(super::output::STDOUT) => {
            super::limits::check_output("--json", p)
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

fn run_one(exe: &Path, args: &RunArgs, program: &Path, instance: u8, json: &Path) -> Outcome {
    let mut c = Command::new(exe);
    c.arg("run").arg(program);
    c.arg("--instance").arg(instance.to_string());
    c.arg("--speed").arg(args.vehicle.speed.to_string());
    c.arg("--listen").arg(args.vehicle.listen.to_string());
    if let Some(px4) = &args.vehicle.px4 {
        c.arg("--px4").arg(px4);
    } else if args.vehicle.sim {
        c.arg("--sim");
    }
    c.arg("--json").arg(json);
    if let Some(d) = &args.evidence.tlog {
        c.arg("--tlog").arg(d.join(out_name(program, "tlog")));
    }
    if let Some(d) = &args.evidence.html {
        c.arg("--report").arg(d.join(out_name(program, "html")));
    }
    c.stdin(Stdio::null());
    let (code, output) = match c.output() {
        Ok(o) => {
            let code = o
                .status
                .code()
                .map_or(EXIT_FAILED, |c| c.clamp(0, 255) as u8);
            let mut text = String::from_utf8_lossy(&o.stdout).into_owned();
            text.push_str(&String::from_utf8_lossy(&o.stderr));
            (code, text)
        }
        Err(e) => (EXIT_SETUP, format!("cannot start nexus run: {e}")),
    };
    let report = std::fs::read(json)
        .ok()
        .and_then(|b| serde_json::from_slice::<Value>(&b).ok());
    Outcome {
        program: program.to_path_buf(),
        code,
        report,
        output,
    }
}

fn summarize(args: &RunArgs, set: &[PathBuf], results: Vec<Option<Outcome>>) -> ExitCode {
    let mut reports = Vec::new();
    let mut summary = Vec::new();
    let (mut passed, mut failed, mut other) = (0, 0, None);
    for (i, r) in results.into_iter().enumerate() {
        let Some(o) = r else {
            summary.push(serde_json::json!({"program": set[i].display().to_string(),
                "exit_code": null, "verdict": "not run (interrupted)"}));
            other.get_or_insert(
                nexus_host::interrupt::caught().map_or(EXIT_FAILED, |c| c.exit_code()),
            );
            continue;
        };
        match o.code {
            EXIT_OK => passed += 1,
            EXIT_FAILED => failed += 1,
            c => {
                other.get_or_insert(c);
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
            "exit_code": o.code, "verdict": verdict}),
        );
        match o.report {
            Some(r) => reports.push(r),
            // A program that could not start still shows in the JUnit file, as a failure.
            None => reports.push(serde_json::json!({
                "file": o.program.display().to_string(), "passed": false,
                "verdict": format!("FAIL: {}", last_line(&o.output)), "steps": [],
                "steps_total": 0, "wall_s": 0.0})),
        }
    }
    let code = if failed > 0 {
        EXIT_FAILED
    } else {
        other.unwrap_or(EXIT_OK)
    };
    let line = format!(
        "{} programs: {passed} passed, {failed} failed{}",
        set.len(),
        match set.len() - passed - failed {
            0 => String::new(),
            n => format!(", {n} did not run to a verdict"),
        }
    );
    let out = super::output::Out::new(args.json.as_deref());
    out.line(&if code == EXIT_OK {
        format!("PASS: {line}")
    } else {
        format!("FAIL: {line}")
    });
    let all = serde_json::json!({"format": super::report::FORMAT, "command": "run",
        "passed": code == EXIT_OK, "exit_code": code, "summary": line,
        "programs": summary, "reports": reports});
    let mut result = out.write_json(&all);
    if let Some(j) = &args.evidence.junit {
        result = result.and_then(|()| {
            super::evidence::write_file(j, &super::evidence::junit::render(&reports))
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
