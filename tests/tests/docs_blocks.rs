//! Every code block of README.md and docs/*.md is exercised, by its info string:
//!
//! * `rust`: a doctest of nexus-tests (`tests/src/lib.rs` includes each page that has one, so
//!   `cargo test --doc -p nexus-tests` compiles and runs them); checked here: every such page is
//!   included.
//! * `rust,ignore`: only for code that builds for another target (the firmware); the block must
//!   follow an `<!-- excerpt: PATH -->` line and be, line for line, part of that file.
//! * `toml`: a flight program, read by `nexus run`'s program reader (`ProgramFile::parse`).
//! * `json`: parses as JSON.
//! * `python`: run by the Python package's pytest suite (`python/tests/test_readme.py` reads
//!   the page); checked here: that file names every page with one.
//! * `sh` and `yaml`: every `nexus` command's subcommand and each of its flags exist in that
//!   subcommand's `--help`; every `cargo` command's package, test, example and bench exist;
//!   every script named exists and, where it has `--help`, takes the flags given; a
//!   `nexus run … --check` of files in the repository runs (it reads the program, flies nothing).
//! * `text`: each one is known below by its first line, with the check that fits it (an
//!   example output compared with a real run's, a report's field list with a real report, a
//!   tree with the files). A new text block fails until it gets a check.
//!
//! The flights use SITL instances 180–184 (the doctests 180, 182, 183, 184; this file 181 and 183,
//! at another time: cargo runs doctests after the test binaries).

mod cli_support;

use cli_support::*;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// One fenced code block.
#[derive(Debug, Clone)]
struct Block {
    /// The page, relative to the repository root.
    file: String,
    /// Line of the opening fence (1-based).
    line: usize,
    /// The info string (`sh`, `rust,ignore`, …).
    info: String,
    /// The line before the fence.
    before: String,
    /// The block's text.
    text: String,
}

impl Block {
    fn at(&self) -> String {
        format!("{}:{}", self.file, self.line)
    }
}

/// README.md and every page of docs/.
fn pages() -> Vec<String> {
    let mut pages = vec!["README.md".to_string()];
    let mut docs: Vec<String> = std::fs::read_dir(repo("docs"))
        .expect("docs/")
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".md"))
        .map(|n| format!("docs/{n}"))
        .collect();
    docs.sort();
    pages.extend(docs);
    pages
}

fn blocks() -> Vec<Block> {
    let mut out = Vec::new();
    for file in pages() {
        let text = std::fs::read_to_string(repo(&file)).expect("read page");
        let lines: Vec<&str> = text.lines().collect();
        let mut i = 0;
        while i < lines.len() {
            if let Some(info) = lines[i].strip_prefix("```") {
                let start = i;
                let mut body = Vec::new();
                i += 1;
                while i < lines.len() && !lines[i].starts_with("```") {
                    body.push(lines[i]);
                    i += 1;
                }
                assert!(i < lines.len(), "{file}:{}: unclosed code block", start + 1);
                out.push(Block {
                    file: file.clone(),
                    line: start + 1,
                    info: info.trim().to_string(),
                    before: if start > 0 { lines[start - 1] } else { "" }.to_string(),
                    text: body.join("\n") + "\n",
                });
            }
            i += 1;
        }
    }
    assert!(out.len() > 20, "only {} blocks found", out.len());
    out
}

fn of_kind(kind: &str) -> Vec<Block> {
    blocks().into_iter().filter(|b| b.info == kind).collect()
}

const KINDS: &[&str] = &[
    "rust",
    "rust,ignore",
    "toml",
    "json",
    "python",
    "sh",
    "yaml",
    "text",
];

#[test]
fn every_block_says_what_it_is() {
    for b in blocks() {
        assert!(
            KINDS.contains(&b.info.as_str()),
            "{}: code block with info string {:?}: use one of {KINDS:?} (see this test's docs)",
            b.at(),
            b.info
        );
    }
}

#[test]
fn rust_blocks_are_doctests() {
    let lib = std::fs::read_to_string(repo("tests/src/lib.rs")).unwrap();
    let pages: BTreeSet<String> = of_kind("rust").into_iter().map(|b| b.file).collect();
    assert!(!pages.is_empty());
    for page in pages {
        let include = format!("include_str!(\"../../{page}\")");
        assert!(
            lib.contains(&include),
            "{page} has rust blocks: tests/src/lib.rs must {include} as a doctest"
        );
    }
}

#[test]
fn ignored_rust_blocks_are_excerpts_of_built_code() {
    let blocks = of_kind("rust,ignore");
    assert!(!blocks.is_empty());
    for b in blocks {
        let path = b
            .before
            .strip_prefix("<!-- excerpt: ")
            .and_then(|s| s.strip_suffix(" -->"))
            .unwrap_or_else(|| {
                panic!(
                    "{}: a rust,ignore block must follow <!-- excerpt: PATH -->",
                    b.at()
                )
            });
        let source = std::fs::read_to_string(repo(path))
            .unwrap_or_else(|e| panic!("{}: excerpt of {path}: {e}", b.at()));
        assert!(
            source.contains(&b.text),
            "{}: the block is no longer the code of {path}",
            b.at()
        );
    }
}

#[test]
fn toml_blocks_are_programs_the_reader_takes() {
    let blocks = of_kind("toml");
    assert!(!blocks.is_empty());
    // Relative paths (an upload's plan) resolve against examples/.
    let path = repo("examples/docs-block.toml");
    for b in blocks {
        let program = nexus_cli::program::ProgramFile::parse(&path, &b.text)
            .unwrap_or_else(|e| panic!("{}: not a program nexus runs: {e}", b.at()));
        assert!(!program.steps.is_empty(), "{}: no steps", b.at());
    }
}

#[test]
fn json_blocks_parse() {
    let blocks = of_kind("json");
    assert!(!blocks.is_empty());
    let mut cache = BTreeMap::new();
    for b in blocks {
        let v: Value =
            serde_json::from_str(&b.text).unwrap_or_else(|e| panic!("{}: not JSON: {e}", b.at()));
        // An MCP client configuration: the server's command line is nexus's.
        for server in v["mcpServers"]
            .as_object()
            .into_iter()
            .flat_map(|m| m.values())
        {
            assert_eq!(server["command"], "nexus", "{}", b.at());
            let args: Vec<String> = server["args"]
                .as_array()
                .unwrap()
                .iter()
                .map(|a| a.as_str().unwrap().to_string())
                .collect();
            check_nexus(&b.at(), &args, &mut cache);
        }
    }
}

#[test]
fn python_blocks_are_run_by_pytest() {
    let test = std::fs::read_to_string(repo("python/tests/test_readme.py")).unwrap();
    let pages: BTreeSet<String> = of_kind("python").into_iter().map(|b| b.file).collect();
    assert!(!pages.is_empty());
    for page in pages {
        assert!(
            test.contains(&format!("\"{page}\"")),
            "{page} has python blocks: python/tests/test_readme.py must run them"
        );
    }
}

// ---- shell commands -------------------------------------------------------------------------

/// The commands of a `sh` or `yaml` block: continuation lines joined, comments dropped, `&&`
/// and `;` split, a yaml `run: >` folded block joined.
fn commands(b: &Block) -> Vec<Vec<String>> {
    let mut logical = Vec::new();
    let mut cur = String::new();
    let mut folding = false;
    for raw in b.text.lines() {
        let mut line = raw.trim().to_string();
        if b.info == "yaml" {
            if folding && !line.is_empty() && raw.starts_with("          ") {
                cur.push(' ');
                cur.push_str(&line);
                continue;
            }
            if folding {
                logical.push(std::mem::take(&mut cur));
                folding = false;
            }
            match line.strip_prefix("- run:") {
                Some(">") | Some(" >") => {
                    folding = true;
                    continue;
                }
                Some(rest) => line = rest.trim().to_string(),
                None => continue,
            }
        }
        if line.starts_with('#') {
            continue;
        }
        if let Some(i) = line.find(" #") {
            line.truncate(i);
        }
        if let Some(l) = line.strip_suffix('\\') {
            cur.push_str(l);
            cur.push(' ');
            continue;
        }
        cur.push_str(&line);
        logical.push(std::mem::take(&mut cur));
    }
    if !cur.is_empty() {
        logical.push(cur);
    }
    logical
        .iter()
        .flat_map(|l| l.split("&&").flat_map(|p| p.split(';')))
        .map(|c| {
            c.trim()
                .trim_end_matches('&')
                .split_whitespace()
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .filter(|c| !c.is_empty())
        .collect()
}

/// `nexus …` (also `target/release/nexus` and `cargo run … --bin nexus -- …`): the arguments.
fn nexus_args(cmd: &[String]) -> Option<Vec<String>> {
    if cmd[0] == "nexus" || cmd[0].ends_with("/nexus") {
        return Some(cmd[1..].to_vec());
    }
    if cmd[0] == "cargo" && cmd.get(1).map(String::as_str) == Some("run") {
        let dd = cmd.iter().position(|a| a == "--")?;
        if cmd[..dd]
            .windows(2)
            .any(|w| w[0] == "--bin" && w[1] == "nexus")
        {
            return Some(cmd[dd + 1..].to_vec());
        }
    }
    None
}

/// `nexus ARGS --help`, once per subcommand.
fn help(cache: &mut BTreeMap<Vec<String>, String>, args: &[&str]) -> String {
    let key: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    cache
        .entry(key)
        .or_insert_with(|| {
            let mut all = args.to_vec();
            all.push("--help");
            let out = nexus(&all).output().expect("nexus --help");
            assert!(out.status.success(), "nexus {args:?} --help failed");
            String::from_utf8_lossy(&out.stdout).into_owned()
        })
        .clone()
}

/// The subcommands a `--help` lists under "Commands:".
fn subcommands(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .filter(|c| c != "help")
        .collect()
}

/// Flags (`--x`, `-x`) in a `--help` text.
fn flags(help: &str) -> BTreeSet<String> {
    help.split(|c: char| c.is_whitespace() || c == ',' || c == '[' || c == ']' || c == '=')
        .filter(|w| w.starts_with('-') && w.len() > 1)
        .map(|w| {
            w.trim_end_matches(|c: char| !c.is_alphanumeric())
                .to_string()
        })
        .collect()
}

fn check_nexus(at: &str, args: &[String], cache: &mut BTreeMap<Vec<String>, String>) {
    let top = help(cache, &[]);
    let sub = &args[0];
    assert!(
        subcommands(&top).contains(sub),
        "{at}: `nexus {sub}` is not a subcommand (nexus --help lists {:?})",
        subcommands(&top)
    );
    let mut path = vec![sub.as_str()];
    let mut h = help(cache, &path);
    if let Some(next) = args.get(1) {
        if subcommands(&h).contains(next) {
            path.push(next);
            h = help(cache, &path);
        }
    }
    let known = flags(&h);
    for a in args.iter().filter(|a| a.starts_with('-')) {
        let flag = a.split('=').next().unwrap();
        assert!(
            known.contains(flag),
            "{at}: `nexus {}` has no option {flag} (see `nexus {} --help`)",
            path.join(" "),
            path.join(" ")
        );
    }
}

/// Packages of the workspaces: name → directory.
fn packages() -> BTreeMap<String, PathBuf> {
    let mut out = BTreeMap::new();
    for dir in [
        "core",
        "host",
        "sim",
        "cli",
        "tests",
        "tests/coexist",
        "tokio",
        "python",
        "firmware-examples",
    ] {
        let manifest = std::fs::read_to_string(repo(dir).join("Cargo.toml")).unwrap();
        let name = manifest
            .lines()
            .find_map(|l| l.strip_prefix("name = \""))
            .and_then(|l| l.strip_suffix('"'))
            .unwrap_or_else(|| panic!("{dir}/Cargo.toml: no name"));
        out.insert(name.to_string(), repo(dir));
    }
    out
}

fn check_cargo(at: &str, cmd: &[String], cwd: &Path) {
    let packages = packages();
    let pkg_dir = match cmd.iter().position(|a| a == "-p") {
        Some(i) => {
            let name = &cmd[i + 1];
            packages
                .get(name)
                .unwrap_or_else(|| panic!("{at}: no package {name} in the repository"))
                .clone()
        }
        None => cwd.to_path_buf(),
    };
    for (flag, dir) in [
        ("--test", "tests"),
        ("--example", "examples"),
        ("--bench", "benches"),
    ] {
        if let Some(i) = cmd.iter().position(|a| a == flag) {
            let name = &cmd[i + 1];
            let file = pkg_dir.join(dir).join(format!("{name}.rs"));
            assert!(file.exists(), "{at}: {flag} {name}: no {}", file.display());
        }
    }
    if let Some(i) = cmd.iter().position(|a| a == "--bin") {
        let name = &cmd[i + 1];
        let main = pkg_dir.join("src/main.rs");
        let bin = pkg_dir.join(format!("src/bin/{name}.rs"));
        assert!(
            main.exists() || bin.exists(),
            "{at}: --bin {name}: no binary"
        );
    }
}

/// Scripts whose `--help` lists their options (the others are only checked to exist: running
/// one, even with `--help`, may build or fly).
const SCRIPTS_WITH_HELP: &[&str] = &["scripts/px4-check"];

fn check_script(at: &str, cmd: &[String], cwd: &Path) {
    let script = cwd.join(&cmd[0]);
    assert!(script.is_file(), "{at}: no script {}", script.display());
    if !SCRIPTS_WITH_HELP.contains(&cmd[0].as_str()) {
        return;
    }
    let out = std::process::Command::new(&script)
        .arg("--help")
        .current_dir(cwd)
        .output()
        .unwrap_or_else(|e| panic!("{at}: run {} --help: {e}", script.display()));
    assert!(out.status.success(), "{at}: {} --help failed", cmd[0]);
    let known = flags(&String::from_utf8_lossy(&out.stdout));
    for a in cmd[1..].iter().filter(|a| a.starts_with("--")) {
        assert!(
            known.contains(a.as_str()),
            "{at}: {} has no option {a}",
            cmd[0]
        );
    }
}

/// Commands shown that are not the project's (the shell's, other tools').
const OTHER_TOOLS: &[&str] = &["export", "socat", "pip", "maturin", "time", "/usr/bin/time"];

#[test]
fn shell_commands_exist_as_written() {
    let mut cache = BTreeMap::new();
    let mut seen = 0;
    let mut checked_runs = 0;
    for b in blocks()
        .into_iter()
        .filter(|b| b.info == "sh" || b.info == "yaml")
    {
        let mut cwd = root();
        for cmd in commands(&b) {
            let at = format!("{} `{}`", b.at(), cmd.join(" "));
            seen += 1;
            if cmd[0] == "cd" {
                cwd = cwd.join(&cmd[1]);
                assert!(cwd.is_dir(), "{at}: no directory");
                continue;
            }
            if let Some(args) = nexus_args(&cmd) {
                check_nexus(&at, &args, &mut cache);
                // `--check` reads a program without flying: run those whose files are here.
                let files_here = args[1..]
                    .iter()
                    .filter(|a| a.ends_with(".toml") || a.ends_with(".plan"))
                    .all(|a| repo(a).is_file());
                if args.iter().any(|a| a == "--check") && files_here {
                    let args: Vec<&str> = args.iter().map(String::as_str).collect();
                    let out = nexus(&args).output().unwrap();
                    assert!(out.status.success(), "{at}: {out:?}");
                    checked_runs += 1;
                }
            }
            if cmd[0] == "cargo" {
                check_cargo(&at, &cmd, &cwd);
            } else if cmd[0] == "nexus" || cmd[0].ends_with("/nexus") {
                // checked above
            } else if cmd[0].contains('/') {
                check_script(&at, &cmd, &cwd);
            } else {
                assert!(
                    OTHER_TOOLS.contains(&cmd[0].as_str()),
                    "{at}: unknown command {}: add a check",
                    cmd[0]
                );
            }
        }
    }
    assert!(seen > 20, "only {seen} commands found");
    assert!(checked_runs > 0, "no `nexus run … --check` ran");
}

// ---- text blocks ----------------------------------------------------------------------------

/// The text blocks, by the start of their first line, and what checks each.
/// What checks a text block.
type TextCheck = fn(&Block);

const TEXT_BLOCKS: &[(&str, TextCheck)] = &[
    (
        "nexus fly: examples/box.plan",
        fly_output_is_what_nexus_prints,
    ),
    (
        "nexus run: prog.toml:3:1:",
        program_error_is_what_nexus_prints,
    ),
    ("command, file, name, vehicle", report_fields_exist),
    ("→ start_session", mcp_tools_exist),
    ("Cargo.toml            workspace", layout_paths_exist),
    ("client.handle(now, &frame)", client_methods_exist),
    ("PX4_SIMULATOR=sihsim", launcher_sets_px4s_command_line),
];

#[test]
fn every_text_block_is_checked() {
    let blocks = of_kind("text");
    assert!(!blocks.is_empty());
    for b in blocks {
        let first = b.text.lines().next().unwrap_or("");
        let Some((_, check)) = TEXT_BLOCKS.iter().find(|(p, _)| first.starts_with(p)) else {
            panic!(
                "{}: text block {first:?} has no check: add one to TEXT_BLOCKS",
                b.at()
            );
        };
        check(&b);
    }
}

/// The example output of `nexus fly`: each line's words up to its first number are how a line
/// of a real run starts (numbers, times and the speed vary from run to run).
fn fly_output_is_what_nexus_prints(b: &Block) {
    let out = nexus(&[
        "fly",
        "examples/box.plan",
        "--speed",
        "max",
        "--instance",
        "181",
    ])
    .output()
    .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}: nexus fly failed:\n{text}",
        b.at()
    );
    let real: Vec<&str> = text.lines().map(str::trim).collect();
    for line in b.text.lines().map(str::trim) {
        if line == "…" || line.is_empty() {
            continue;
        }
        let stem = &line[..line
            .find(|c: char| c.is_ascii_digit())
            .unwrap_or(line.len())];
        // The progress bar is drawn only on a terminal; PX4's texts depend on the run.
        if stem.starts_with("step ") && line.contains(" | ") || stem.starts_with("PX4 [") {
            continue;
        }
        assert!(
            real.iter().any(|r| r.starts_with(stem)),
            "{}: no line of a real `nexus fly` starts like {line:?}:\n{text}",
            b.at()
        );
    }
}

/// The example error: the program it describes gives exactly that message.
fn program_error_is_what_nexus_prints(b: &Block) {
    let scratch = Scratch::new("docs-error");
    let prog = scratch.file("prog.toml", "[[step]]\naction = \"takeoff\"\nalt = 5\n");
    let out = nexus(&["run", prog.to_str().unwrap(), "--check"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", b.at());
    let stderr = String::from_utf8_lossy(&out.stderr).replace(prog.to_str().unwrap(), "prog.toml");
    for line in b.text.lines() {
        assert!(
            stderr.lines().any(|l| l.trim_end() == line.trim_end()),
            "{}: nexus says otherwise; {line:?} is not in:\n{stderr}",
            b.at()
        );
    }
}

fn keys(v: &Value, out: &mut BTreeSet<String>) {
    match v {
        Value::Object(m) => {
            for (k, v) in m {
                out.insert(k.clone());
                keys(v, out);
            }
        }
        Value::Array(a) => a.iter().for_each(|v| keys(v, out)),
        _ => {}
    }
}

/// The JSON report's field list: every name in it is a field of a real report (a flight's and
/// a `check`'s, which has `recording`).
fn report_fields_exist(b: &Block) {
    let scratch = Scratch::new("docs-report");
    let fly = scratch.path("fly.json");
    let out = nexus(&[
        "run",
        "examples/box-mission.toml",
        "--speed",
        "max",
        "--instance",
        "183",
        "--json",
        fly.to_str().unwrap(),
    ])
    .output()
    .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}: {out:?}", b.at());
    let check = scratch.path("check.json");
    let out = nexus(&[
        "check",
        "examples/takeoff-hover-land.toml",
        "--tlog",
        "fixtures/px4-traces/takeoff-hover-land-x4.px4-to-nexus.tlog",
        "--tlog",
        "fixtures/px4-traces/takeoff-hover-land-x4.px4-to-gcs.tlog",
        "--json",
        check.to_str().unwrap(),
    ])
    .output()
    .unwrap();
    assert!(check.exists(), "{}: no check report: {out:?}", b.at());
    let mut real = BTreeSet::new();
    for f in [&fly, &check] {
        keys(&json(&std::fs::read(f).unwrap()), &mut real);
    }
    // Names in the list: identifiers before `{`, `[`, `,`, `}` or the end, outside parentheses.
    let mut depth = 0;
    let mut cleaned = String::new();
    for c in b.text.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            _ if depth == 0 => cleaned.push(c),
            _ => {}
        }
    }
    let named: BTreeSet<String> = cleaned
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '.'))
        .filter(|w| !w.is_empty() && !w.starts_with('.') && !w.starts_with("…"))
        .map(str::to_string)
        .collect();
    assert!(named.len() > 50, "{}: only {} names", b.at(), named.len());
    let missing: Vec<&String> = named.iter().filter(|n| !real.contains(*n)).collect();
    assert!(
        missing.is_empty(),
        "{}: fields listed that no report has: {missing:?}",
        b.at()
    );
}

/// The MCP exchange: every tool called is one `nexus serve` serves.
fn mcp_tools_exist(b: &Block) {
    let tools = std::fs::read_to_string(repo("cli/src/serve/tools.rs")).unwrap()
        + &std::fs::read_to_string(repo("cli/src/serve/mod.rs")).unwrap();
    let mut n = 0;
    for line in b.text.lines() {
        if let Some(rest) = line.trim_start().strip_prefix("→ ") {
            let tool = rest.split_whitespace().next().unwrap();
            n += 1;
            assert!(
                tools.contains(&format!("async fn {tool}(")),
                "{}: `nexus serve` has no tool {tool}",
                b.at()
            );
        }
    }
    assert!(n > 3, "{}", b.at());
}

/// The crate layout: every path in the first column exists.
fn layout_paths_exist(b: &Block) {
    let mut dir = PathBuf::new();
    for line in b.text.lines() {
        let indented = line.starts_with("  ");
        let first = line.split_whitespace().next().unwrap_or("");
        if first.is_empty() || !(first.contains('/') || first.contains('.')) {
            continue;
        }
        for path in first.trim_end_matches(',').split(',') {
            let p = if indented {
                dir.join(path)
            } else {
                PathBuf::from(path)
            };
            assert!(
                repo(p.to_str().unwrap()).exists(),
                "{}: {} does not exist",
                b.at(),
                p.display()
            );
        }
        if !indented && first.ends_with('/') {
            dir = PathBuf::from(first);
        }
    }
}

/// The sans-IO sketch: each method it calls is the core client's.
fn client_methods_exist(b: &Block) {
    let client = std::fs::read_to_string(repo("core/src/client.rs")).unwrap();
    for line in b.text.lines() {
        let call = line.trim().strip_prefix("client.").unwrap();
        let name = &call[..call.find('(').unwrap()];
        assert!(
            client.contains(&format!("pub fn {name}(")),
            "{}: Client has no method {name}",
            b.at()
        );
    }
}

/// PX4's SITL command line: the launcher sets each variable and flag it shows.
fn launcher_sets_px4s_command_line(b: &Block) {
    let launcher = ["options.rs", "process.rs"]
        .iter()
        .map(|p| std::fs::read_to_string(repo("host/src/launcher").join(p)).unwrap())
        .collect::<String>();
    for word in [
        "PX4_SIMULATOR",
        "sihsim",
        "PX4_SIM_MODEL",
        "sihsim_quadx",
        "PX4_SIM_SPEED_FACTOR",
        "PX4_PARAM_",
        "\"-i\".to_string()",
        "\"-d\".to_string()",
        "\"-w\".to_string()",
    ] {
        assert!(
            launcher.contains(word),
            "{}: the launcher does not set {word}",
            b.at()
        );
    }
}

/// README's first command, as written but on instance 181 at `--speed max`: the main job passes
/// on the built-in vehicle (`fly_output_is_what_nexus_prints` runs it).
#[test]
fn readme_starts_with_the_two_commands() {
    let readme = std::fs::read_to_string(repo("README.md")).unwrap();
    let first = blocks().into_iter().next().unwrap();
    assert_eq!(first.file, "README.md");
    let cmds = commands(&first);
    assert_eq!(cmds.len(), 2, "README's first block: the two commands");
    assert_eq!(
        nexus_args(&cmds[0]).unwrap()[..2],
        ["fly".to_string(), "examples/box.plan".to_string()]
    );
    assert_eq!(cmds[1], ["./scripts/test"]);
    assert!(
        readme.len() <= 15 * 1024,
        "README.md is {} bytes: move detail to docs/",
        readme.len()
    );
}

// ---- links ----------------------------------------------------------------------------------

/// GitHub's anchor of a heading: lower case, punctuation dropped, spaces as `-`.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

fn anchors(page: &Path) -> BTreeSet<String> {
    let text = std::fs::read_to_string(page).unwrap();
    let mut fence = false;
    let mut out = BTreeSet::new();
    for line in text.lines() {
        if line.starts_with("```") {
            fence = !fence;
        }
        if !fence && line.starts_with('#') {
            out.insert(slug(line.trim_start_matches('#')));
        }
    }
    out
}

/// Every relative link of README.md and docs/ names a file of the repository, and an anchor
/// (`page.md#section`) a heading of that page.
#[test]
fn links_resolve_inside_the_repository() {
    for page in pages() {
        let path = repo(&page);
        let dir = path.parent().unwrap().to_path_buf();
        let text = std::fs::read_to_string(&path).unwrap();
        for (i, _) in text.match_indices("](") {
            let rest = &text[i + 2..];
            let Some(end) = rest.find(')') else { continue };
            let target = &rest[..end];
            if target.starts_with("http://") || target.starts_with("https://") {
                continue;
            }
            let (file, anchor) = match target.split_once('#') {
                Some((f, a)) => (f, Some(a)),
                None => (target, None),
            };
            let file = if file.is_empty() {
                path.clone()
            } else {
                dir.join(file)
            };
            assert!(file.exists(), "{page}: link to {target}: no such file");
            let inside = file.canonicalize().unwrap();
            assert!(
                inside.starts_with(root().canonicalize().unwrap()),
                "{page}: link to {target} leaves the repository"
            );
            if let Some(anchor) = anchor {
                assert!(
                    anchors(&file).contains(anchor),
                    "{page}: link to {target}: no such heading in {}",
                    file.display()
                );
            }
        }
    }
}

/// The repository explains itself: no file names the documents that once lived beside it.
#[test]
fn nothing_names_files_outside_the_repository() {
    let banned = [
        ["PX4-", "WIRE.md"].concat(),
        ["DESIGN", ".md"].concat(),
        ["../", "shared"].concat(),
        ["/work/", "shared"].concat(),
    ];
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap().filter_map(Result::ok) {
            let p = e.path();
            let name = e.file_name();
            if name == ".git" || name == "target" || name == ".venv" || name == "__pycache__" {
                continue;
            }
            if p.is_dir() {
                walk(&p, out);
            } else {
                out.push(p);
            }
        }
    }
    let mut files = Vec::new();
    walk(&root(), &mut files);
    for f in files {
        let Ok(text) = std::fs::read_to_string(&f) else {
            continue; // binary
        };
        for b in &banned {
            assert!(!text.contains(b.as_str()), "{} names {b}", f.display());
        }
    }
}
