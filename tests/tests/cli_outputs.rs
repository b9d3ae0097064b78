//! Outputs that would replace each other or the evidence (the evidence must never be overwritten):
//! every `--json`, `--junit`, `--report` and `--tlog` of `run` (one program or a set), `fly` and
//! `check` must name a file of its own, after links are resolved, and none may be a file the
//! command reads (the program, the plan, `check`'s recordings). A clash is exit 2 before anything
//! flies, its message naming both options; the file is left as it was.
//!
//! Nothing flies here when the check works; should it not, the flights use SITL instance 34
//! (this file's own; `cli_sets` has 27–33).

mod cli_support;

use cli_support::{nexus, repo, Scratch, SPEED};
use predicates::prelude::*;
use std::path::Path;

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// What a clash of `first` and `second` is refused with.
fn refused(args: &[&str], first: &str, second: &str) {
    nexus(args)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("are the same file"))
        .stderr(predicate::str::contains(format!("{first} ")))
        .stderr(predicate::str::contains(format!("and {second} ")))
        .stderr(predicate::str::contains("nothing was flown"))
        .stderr(predicate::str::contains("PASS").not());
}

/// The option pairs of the four outputs of `fly` and `run`.
const PAIRS: [(&str, &str); 6] = [
    ("--json", "--junit"),
    ("--json", "--tlog"),
    ("--json", "--report"),
    ("--tlog", "--report"),
    ("--tlog", "--junit"),
    ("--report", "--junit"),
];

/// In the order the commands list them (`--json`, `--tlog`, `--report`, `--junit`).
fn ordered<'a>(a: &'a str, b: &'a str) -> (&'a str, &'a str) {
    let rank = |o: &str| {
        ["--json", "--tlog", "--report", "--junit"]
            .iter()
            .position(|x| *x == o)
    };
    if rank(a) <= rank(b) {
        (a, b)
    } else {
        (b, a)
    }
}

#[test]
fn run_refuses_every_pair_of_outputs_naming_one_file() {
    let dir = Scratch::new("outputs-run");
    let f = dir.path("out");
    for (a, b) in PAIRS {
        let args = [
            "run",
            "examples/takeoff-hover-land.toml",
            "--instance",
            "34",
            "--speed",
            SPEED,
            a,
            s(&f),
            b,
            s(&f),
        ];
        let (first, second) = ordered(a, b);
        refused(&args, first, second);
        assert!(!f.exists(), "{a} {b}: something was written");
    }
}

#[test]
fn fly_refuses_every_pair_of_outputs_naming_one_file() {
    let dir = Scratch::new("outputs-fly");
    let f = dir.path("out");
    for (a, b) in PAIRS {
        let args = [
            "fly",
            "examples/box.plan",
            "--instance",
            "34",
            "--speed",
            SPEED,
            a,
            s(&f),
            b,
            s(&f),
        ];
        let (first, second) = ordered(a, b);
        refused(&args, first, second);
        assert!(!f.exists(), "{a} {b}: something was written");
    }
}

#[test]
fn a_symbolic_link_to_an_output_is_the_same_file() {
    let dir = Scratch::new("outputs-link");
    let f = dir.file("report.json", "kept");
    let link = dir.path("link.tlog");
    std::os::unix::fs::symlink(&f, &link).unwrap();
    refused(
        &[
            "run",
            "examples/takeoff-hover-land.toml",
            "--instance",
            "34",
            "--speed",
            SPEED,
            "--json",
            s(&f),
            "--tlog",
            s(&link),
        ],
        "--json",
        "--tlog",
    );
    // A link to a file not written yet: what writing through it would create.
    let later = dir.path("later.html");
    let dangling = dir.path("dangling.xml");
    std::os::unix::fs::symlink(&later, &dangling).unwrap();
    refused(
        &[
            "fly",
            "examples/box.plan",
            "--instance",
            "34",
            "--speed",
            SPEED,
            "--report",
            s(&later),
            "--junit",
            s(&dangling),
        ],
        "--report",
        "--junit",
    );
    assert_eq!(std::fs::read_to_string(&f).unwrap(), "kept");
    assert!(!later.exists());
}

#[test]
fn no_output_replaces_the_program_or_the_plan() {
    let dir = Scratch::new("outputs-input");
    let program = dir.file(
        "p.toml",
        &std::fs::read_to_string(repo("examples/takeoff-hover-land.toml")).unwrap(),
    );
    let before = std::fs::read(&program).unwrap();
    refused(
        &[
            "run",
            s(&program),
            "--instance",
            "34",
            "--json",
            s(&program),
        ],
        "the program",
        "--json",
    );
    let plan = dir.file(
        "box.plan",
        &std::fs::read_to_string(repo("examples/box.plan")).unwrap(),
    );
    refused(
        &["fly", s(&plan), "--instance", "34", "--report", s(&plan)],
        "the plan",
        "--report",
    );
    assert_eq!(std::fs::read(&program).unwrap(), before);
    // Nor the signing key: a report over it would put the secret's file out of use (and the
    // report where a key is looked for).
    let key = dir.file("link.key", "a passphrase for the link");
    refused(
        &[
            "run",
            s(&program),
            "--instance",
            "34",
            "--signing-key",
            s(&key),
            "--json",
            s(&key),
        ],
        "--json",
        "--signing-key",
    );
    assert_eq!(
        std::fs::read_to_string(&key).unwrap(),
        "a passphrase for the link"
    );
}

#[test]
fn check_refuses_an_output_over_its_recording() {
    let dir = Scratch::new("outputs-check");
    let original = std::fs::read(repo("fixtures/px4-traces/box-x4.px4-to-nexus.tlog")).unwrap();
    let rec = dir.path("flight.tlog");
    std::fs::write(&rec, &original).unwrap();
    let link = dir.path("flight-link.json");
    std::os::unix::fs::symlink(&rec, &link).unwrap();
    for (opt, path) in [
        ("--json", &rec),
        ("--report", &rec),
        ("--junit", &rec),
        ("--json", &link),
    ] {
        refused(
            &[
                "check",
                "examples/takeoff-hover-land.toml",
                "--tlog",
                s(&rec),
                opt,
                s(path),
            ],
            "--tlog",
            opt,
        );
    }
    // And two of its outputs on one file.
    let out = dir.path("out");
    refused(
        &[
            "check",
            "examples/takeoff-hover-land.toml",
            "--tlog",
            s(&rec),
            "--json",
            s(&out),
            "--junit",
            s(&out),
        ],
        "--json",
        "--junit",
    );
    assert_eq!(
        std::fs::read(&rec).unwrap(),
        original,
        "the recording changed"
    );
    assert!(!out.exists());
}

#[test]
fn a_set_checks_its_files_and_directories() {
    let dir = Scratch::new("outputs-set");
    let out = dir.path("out");
    let two = [
        "run",
        "examples/takeoff-hover-land.toml",
        "examples/box-mission.toml",
        "--instance",
        "34",
        "--speed",
        SPEED,
    ];
    // A file that is also the directory of the programs' files.
    let mut args = two.to_vec();
    args.extend(["--report", s(&out), "--json", s(&out)]);
    refused(&args, "--json", "--report");
    let mut args = two.to_vec();
    args.extend(["--tlog", s(&out), "--junit", s(&out)]);
    refused(&args, "--junit", "--tlog");
    // The set's own two files, through a link.
    let j = dir.file("all.json", "kept");
    let link = dir.path("all.xml");
    std::os::unix::fs::symlink(&j, &link).unwrap();
    let mut args = two.to_vec();
    args.extend(["--json", s(&j), "--junit", s(&link)]);
    refused(&args, "--json", "--junit");
    // A program of the set as an output.
    let mut args = two.to_vec();
    args.extend(["--junit", "examples/box-mission.toml"]);
    refused(&args, "the program", "--junit");
    assert_eq!(std::fs::read_to_string(&j).unwrap(), "kept");
    assert!(!out.exists(), "the directory was made before the check");
}
