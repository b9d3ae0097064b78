//! `nexus fly` on a terminal: a progress bar redrawn in place, one terminal line wide, with the
//! step lines and the verdict printed above it. Run in a pseudo-terminal by util-linux's
//! `script` (Debian's essential bsdutils), 80 columns wide.

mod cli_support;

use cli_support::{nexus_exe, root};
use std::process::Command;
use std::time::{Duration, Instant};

/// The text with ANSI escape sequences (CSI: ESC [ params letter) removed: colours vanish,
/// cursor moves and erasures become line breaks (each starts a new drawing).
fn strip_ansi(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' && chars.peek() == Some(&'[') {
            chars.next();
            for d in chars.by_ref() {
                if d.is_ascii_alphabetic() {
                    if d != 'm' {
                        out.push('\n');
                    }
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[test]
fn on_a_terminal_fly_draws_one_bar_line_that_fits_the_width() {
    // `script` gives the binary a terminal of 80 columns.
    let exe = nexus_exe();
    let inner = format!(
        "stty cols 80 rows 24; exec '{}' fly examples/box.plan --speed 20 --instance 153",
        exe.display()
    );
    let started = Instant::now();
    let out = Command::new("script")
        .args(["--quiet", "--return", "--command", &inner, "/dev/null"])
        .current_dir(root())
        .env_remove("NEXUS_PX4_BUILD")
        .output()
        .expect("util-linux `script` runs (it gives the flight a pseudo-terminal)");
    assert!(
        started.elapsed() < Duration::from_secs(120),
        "took too long"
    );
    let raw = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "exit {:?}:\n{raw}", out.status);
    let text = strip_ansi(&raw);
    assert!(
        text.contains("PASS: mission complete: 6 items flown"),
        "{text}"
    );
    assert!(text.contains("ok   step 4/4: met"), "{text}");
    // The bar: drawn with block glyphs, counting mission items up to 6 of 6.
    // (A line printed above the bar is padded to the full width, so the bar that follows it
    // starts on the next row by the terminal's own wrap: a bar is from its first glyph on.)
    let bars: Vec<&str> = text
        .split(['\r', '\n'])
        .filter_map(|l| l.find(['█', '░']).map(|i| &l[i..]))
        .filter(|b| b.contains('█'))
        .collect();
    assert!(bars.len() > 5, "a bar redrawn as the flight goes: {text}");
    assert!(bars.iter().any(|l| l.contains(" 6/6 ")), "{text}");
    assert!(
        bars.iter().any(|l| l.contains("| Mission | armed |")),
        "{text}"
    );
    // Redrawn in place and never wider than the terminal (a wrapped bar leaves a trail).
    for l in &bars {
        assert!(
            l.trim_end().chars().count() <= 80,
            "wider than 80 columns: {l:?}"
        );
    }
    // On a terminal the plain progress lines are not printed.
    assert!(
        !text.lines().any(|l| l.starts_with("step 2/4 | item")),
        "{text}"
    );
}
