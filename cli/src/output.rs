//! Where a command's output goes: human lines to stdout, or to stderr when the JSON report
//! takes stdout (so `nexus run p.toml --json | jq` sees only JSON).

use serde::Serialize;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};

/// `--json [FILE]`: `-` (or the flag alone) is stdout.
pub const STDOUT: &str = "-";

/// `s` as a terminal or a log may show it: [`nexus_core::escape::Escaped`], without a copy when
/// nothing in it needs escaping.
pub fn shown(s: &str) -> std::borrow::Cow<'_, str> {
    if nexus_core::escape::needs_escaping(s) {
        std::borrow::Cow::Owned(nexus_core::escape::Escaped(s).to_string())
    } else {
        std::borrow::Cow::Borrowed(s)
    }
}

/// The human side of a command's output.
#[derive(Debug, Clone)]
pub struct Out {
    to_stderr: bool,
    tty: bool,
    json: Option<PathBuf>,
}

impl Out {
    /// Output for a command given `--json` = `json`.
    pub fn new(json: Option<&Path>) -> Out {
        let to_stderr = json.is_some_and(|p| p == Path::new(STDOUT));
        let tty = if to_stderr {
            std::io::stderr().is_terminal()
        } else {
            std::io::stdout().is_terminal()
        };
        Out {
            to_stderr,
            tty,
            json: json.map(Path::to_path_buf),
        }
    }

    /// Whether human output goes to stderr.
    pub fn to_stderr(&self) -> bool {
        self.to_stderr
    }

    /// Whether human output goes to a terminal (progress bar) or a pipe or file (plain lines).
    pub fn is_tty(&self) -> bool {
        self.tty
    }

    /// Print one line for a person. Whatever it holds, it stays one line: a control character,
    /// a line break or a bidi control in it (a vehicle's text quoted in it) is written as an
    /// escape ([`nexus_core::escape`]), so nothing a vehicle sent can start a line of its own
    /// (a forged `PASS:`) or move the cursor over nexus's.
    pub fn line(&self, s: &str) {
        let s = shown(s);
        if self.to_stderr {
            eprintln!("{s}");
        } else {
            println!("{s}");
            let _ = std::io::stdout().flush();
        }
    }

    /// Write the report where `--json` said, if it said; an error names the file.
    pub fn write_json<T: Serialize>(&self, report: &T) -> Result<(), String> {
        let Some(dest) = &self.json else {
            return Ok(());
        };
        let text = serde_json::to_string_pretty(report)
            .map_err(|e| format!("cannot encode the JSON report: {e}"))?;
        if dest == Path::new(STDOUT) {
            let mut out = std::io::stdout().lock();
            writeln!(out, "{text}")
                .and_then(|()| out.flush())
                .map_err(|e| format!("cannot write the JSON report to stdout: {e}"))
        } else {
            std::fs::write(dest, text + "\n")
                .map_err(|e| format!("cannot write the JSON report to {}: {e}", dest.display()))
        }
    }
}

/// What a file named on the command line is to the command: what [`distinct`] compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// A file the command writes (`--json`, `--junit`, `--report`, `--tlog` of a flight).
    Output,
    /// A directory a set of programs writes one file per program into (`--tlog DIR`,
    /// `--report DIR`): two of them may be the same (their files' names differ), a file may not
    /// be one of them.
    OutputDir,
    /// A file the command reads (the program, the `.plan`, `nexus check`'s recordings): no
    /// output may replace it.
    Input,
}

/// One file named on the command line: the option that named it, the path, what it is.
#[derive(Debug, Clone, Copy)]
pub struct Named<'a> {
    /// `--json`, `--tlog`, `the program`, …
    pub what: &'a str,
    /// As given.
    pub path: &'a Path,
    /// Written or read.
    pub role: Role,
}

impl<'a> Named<'a> {
    /// A file written.
    pub fn output(what: &'a str, path: &'a Path) -> Named<'a> {
        Named {
            what,
            path,
            role: Role::Output,
        }
    }

    /// A directory written into.
    pub fn output_dir(what: &'a str, path: &'a Path) -> Named<'a> {
        Named {
            what,
            path,
            role: Role::OutputDir,
        }
    }

    /// A file read.
    pub fn input(what: &'a str, path: &'a Path) -> Named<'a> {
        Named {
            what,
            path,
            role: Role::Input,
        }
    }
}

/// Check that no output replaces another output or a file the command reads: every `--json`,
/// `--junit`, `--report` and `--tlog` file names a file of its own, after links are resolved (a
/// symbolic link to a file is that file; so is a hard link), and none is one of the inputs.
/// Files that do not exist yet are compared by their resolved directory and their name. `-`
/// (stdout) and character devices (`/dev/null`) are never a clash. Two inputs may be the same
/// (reading a file twice replaces nothing); two output directories too. The error names both
/// options and the file (the caller exits 2, before anything flies).
pub fn distinct(files: &[Named<'_>]) -> Result<(), String> {
    let resolved: Vec<Option<Resolved>> = files
        .iter()
        .map(|f| {
            if f.path == Path::new(STDOUT) && f.role == Role::Output {
                return None;
            }
            let p = resolve(f.path, 0);
            let meta = std::fs::metadata(&p).ok();
            if meta
                .as_ref()
                .is_some_and(|m| std::os::unix::fs::FileTypeExt::is_char_device(&m.file_type()))
            {
                return None;
            }
            let id = meta.map(|m| {
                use std::os::unix::fs::MetadataExt;
                (m.dev(), m.ino())
            });
            Some((p, id))
        })
        .collect();
    for (i, a) in files.iter().enumerate() {
        for (j, b) in files.iter().enumerate().skip(i + 1) {
            let (Some((pa, ia)), Some((pb, ib))) = (&resolved[i], &resolved[j]) else {
                continue;
            };
            let same = pa == pb || (ia.is_some() && ia == ib);
            let harmless = matches!(
                (a.role, b.role),
                (Role::Input, Role::Input) | (Role::OutputDir, Role::OutputDir)
            );
            if same && !harmless {
                let shown = |n: &Named<'_>| format!("{} {}", n.what, n.path.display());
                let why = match (a.role, b.role) {
                    (Role::Input, _) | (_, Role::Input) => "an output would replace what is read",
                    (Role::OutputDir, _) | (_, Role::OutputDir) => {
                        "a file cannot also be the directory of the set's files"
                    }
                    _ => "one would replace the other",
                };
                return Err(format!(
                    "{} and {} are the same file ({}): {why}; give each its own (nothing was \
                     flown)",
                    shown(a),
                    shown(b),
                    pa.display()
                ));
            }
        }
    }
    Ok(())
}

/// A file named, resolved: its path, and its device and inode when it exists.
type Resolved = (PathBuf, Option<(u64, u64)>);

/// Most symbolic links followed from one name (as Linux's `MAXSYMLINKS`).
const MAX_LINKS: usize = 40;

/// `path` with every symbolic link resolved, absolute: an existing file canonical; a link to
/// a file that does not exist yet, that file; an absent file, its resolved directory joined
/// with its name (output files may not exist before the command writes them).
fn resolve(path: &Path, depth: usize) -> PathBuf {
    let abs = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir().map_or_else(|_| path.to_path_buf(), |d| d.join(path))
    };
    if let Ok(c) = std::fs::canonicalize(&abs) {
        return c;
    }
    let is_link = std::fs::symlink_metadata(&abs).is_ok_and(|m| m.file_type().is_symlink());
    if is_link && depth < MAX_LINKS {
        // A dangling link: what writing through it would create.
        if let Ok(target) = std::fs::read_link(&abs) {
            let base = abs.parent().unwrap_or(Path::new("/"));
            return resolve(&base.join(target), depth + 1);
        }
    }
    match (abs.parent(), abs.file_name()) {
        (Some(dir), Some(name)) => resolve(dir, depth).join(name),
        _ => abs,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outputs_must_be_distinct_after_links_are_resolved() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let (f, g) = (d.join("f.json"), d.join("g.xml"));
        std::fs::write(&f, "old").unwrap();
        fn out<'a>(what: &'a str, path: &'a Path) -> Named<'a> {
            Named::output(what, path)
        }
        assert_eq!(distinct(&[out("--json", &f), out("--junit", &g)]), Ok(()));
        let e = distinct(&[out("--json", &f), out("--junit", &f)]).unwrap_err();
        assert!(e.contains("--json") && e.contains("--junit"), "{e}");
        // A symbolic link to the file, a hard link, a path through `..`: the same file.
        let sym = d.join("sym");
        std::os::unix::fs::symlink(&f, &sym).unwrap();
        let hard = d.join("hard");
        std::fs::hard_link(&f, &hard).unwrap();
        std::fs::create_dir(d.join("sub")).unwrap();
        let dotted = d.join("sub/../f.json");
        for other in [&sym, &hard, &dotted] {
            assert!(
                distinct(&[out("--json", &f), out("--tlog", other)]).is_err(),
                "{}",
                other.display()
            );
        }
        // Files not written yet: a dangling link is the file it would create; a file in a
        // directory not made yet is compared by name.
        let absent = d.join("later.tlog");
        let dangling = d.join("dangling");
        std::os::unix::fs::symlink(&absent, &dangling).unwrap();
        assert!(distinct(&[out("--tlog", &absent), out("--report", &dangling)]).is_err());
        let deep = d.join("no/such/r.json");
        assert!(distinct(&[out("--json", &deep), out("--junit", &deep)]).is_err());
        assert_eq!(
            distinct(&[
                out("--json", &deep),
                out("--junit", &d.join("no/such/j.xml"))
            ]),
            Ok(())
        );
        // A relative name and its absolute one.
        let cwd = std::env::current_dir().unwrap();
        let rel = Path::new("Cargo.toml");
        assert!(distinct(&[
            Named::input("the program", rel),
            out("--json", &cwd.join(rel))
        ])
        .is_err());
    }

    #[test]
    fn inputs_directories_stdout_and_devices() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let rec = d.join("f.tlog");
        std::fs::write(&rec, "").unwrap();
        // An output replacing a file read.
        let e =
            distinct(&[Named::input("--tlog", &rec), Named::output("--json", &rec)]).unwrap_err();
        assert!(
            e.contains("--tlog") && e.contains("--json") && e.contains("read"),
            "{e}"
        );
        // Reading a file twice replaces nothing.
        assert_eq!(
            distinct(&[Named::input("--tlog", &rec), Named::input("--tlog", &rec)]),
            Ok(())
        );
        // Two directories of a set's files may be one; a file may not be one of them.
        let out = d.join("out");
        assert_eq!(
            distinct(&[
                Named::output_dir("--tlog", &out),
                Named::output_dir("--report", &out)
            ]),
            Ok(())
        );
        let e = distinct(&[
            Named::output_dir("--report", &out),
            Named::output("--json", &out),
        ])
        .unwrap_err();
        assert!(e.contains("directory"), "{e}");
        // stdout and /dev/null take any number of outputs.
        let (stdout, null) = (Path::new(STDOUT), Path::new("/dev/null"));
        assert_eq!(
            distinct(&[
                Named::output("--json", stdout),
                Named::output("--junit", null),
                Named::output("--report", null),
            ]),
            Ok(())
        );
    }
}
