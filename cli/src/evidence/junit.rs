//! `--junit FILE.xml`: the JUnit XML that CI systems (GitHub, GitLab, Jenkins) read. One
//! `<testsuite>` per program (its file), one `<testcase>` per step; a step that did not pass
//! carries a `<failure>` whose message is the step's explanation (else its reason); a step
//! that never ran is `<skipped>`; so is every step of a program a set never started (an
//! interrupt came first: its report's `not_run` says why). `time` is wall seconds (what CI shows); the sim seconds are
//! a property of each case. Built from `--json` reports, so a set of programs run with
//! `--jobs` gives one file too.

use serde_json::Value;
use std::fmt::Write;

/// Escape text for XML attributes and content.
pub fn escape(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&apos;"),
            // Control characters are not allowed in XML 1.0 (PX4 texts could hold one).
            c if (c as u32) < 0x20 && !matches!(c, '\n' | '\t' | '\r') => o.push(' '),
            c => o.push(c),
        }
    }
    o
}

fn s<'a>(v: &'a Value, k: &str) -> &'a str {
    v.get(k).and_then(Value::as_str).unwrap_or("")
}

fn f(v: &Value, k: &str) -> f64 {
    v.get(k).and_then(Value::as_f64).unwrap_or(0.0)
}

/// The XML of these `--json` reports (each a [`super::super::report::Report`] as JSON).
pub fn render(reports: &[Value]) -> String {
    let mut tests = 0;
    let mut failures = 0;
    let mut wall = 0.0;
    let mut suites = String::new();
    for r in reports {
        let file = s(r, "file");
        let name = r.get("name").and_then(Value::as_str).unwrap_or(file);
        let steps = r
            .get("steps")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let total = r
            .get("steps_total")
            .and_then(Value::as_u64)
            .unwrap_or(steps.len() as u64) as usize;
        let total = total.max(steps.len());
        if let Some(why) = r.get("not_run").and_then(Value::as_str) {
            let n = total.max(1);
            tests += n;
            let _ = writeln!(
                suites,
                "  <testsuite name=\"{}\" tests=\"{n}\" failures=\"0\" errors=\"0\" \
                 skipped=\"{n}\" time=\"0.000\">",
                escape(name)
            );
            let _ = writeln!(
                suites,
                "    <properties><property name=\"file\" value=\"{}\"/><property name=\"verdict\" \
                 value=\"{}\"/></properties>",
                escape(file),
                escape(s(r, "verdict"))
            );
            for i in 0..n {
                let _ = writeln!(
                    suites,
                    "    <testcase name=\"step {}\" classname=\"{}\" time=\"0\"><skipped \
                     message=\"{}\"/></testcase>",
                    i + 1,
                    escape(file),
                    escape(why)
                );
            }
            suites.push_str("  </testsuite>\n");
            continue;
        }
        let passed = r.get("passed").and_then(Value::as_bool).unwrap_or(false);
        let mut suite_fail = steps
            .iter()
            .filter(|st| !st.get("passed").and_then(Value::as_bool).unwrap_or(false))
            .count();
        // A program that failed with every step run passing (an upload refused, a mission not
        // complete) still fails: its verdict is a failure of the suite's last case.
        // `--ulog`: PX4's log as a second witness is a case of its own.
        let witness = r.get("second_witness").filter(|w| !w.is_null());
        let witness_fail =
            witness.is_some_and(|w| !w.get("agrees").and_then(Value::as_bool).unwrap_or(false));
        let verdict_only = !passed && suite_fail == 0 && !witness_fail;
        if verdict_only {
            suite_fail = 1;
        }
        suite_fail += witness_fail as usize;
        let skipped = total - steps.len();
        let suite_wall = f(r, "wall_s");
        let cases = total.max(1) + witness.is_some() as usize;
        tests += cases;
        failures += suite_fail;
        wall += suite_wall;
        let _ = writeln!(
            suites,
            "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{suite_fail}\" errors=\"0\" \
             skipped=\"{skipped}\" time=\"{suite_wall:.3}\">",
            escape(name),
            cases
        );
        let _ = writeln!(
            suites,
            "    <properties><property name=\"file\" value=\"{}\"/><property name=\"verdict\" \
             value=\"{}\"/></properties>",
            escape(file),
            escape(s(r, "verdict"))
        );
        for (i, st) in steps.iter().enumerate() {
            let idx = st
                .get("index")
                .and_then(Value::as_u64)
                .unwrap_or(i as u64 + 1);
            let label = match st.get("name").and_then(Value::as_str) {
                Some(n) => format!("step {idx} {n}"),
                None => format!("step {idx} {}", s(st, "action")),
            };
            let _ = write!(
                suites,
                "    <testcase name=\"{}\" classname=\"{}\" time=\"{:.3}\">\
                 <properties><property name=\"sim_s\" value=\"{:.3}\"/>\
                 <property name=\"until\" value=\"{}\"/></properties>",
                escape(&label),
                escape(file),
                f(st, "waited_wall_s"),
                f(st, "waited_sim_s"),
                escape(s(st, "until"))
            );
            let ok = st.get("passed").and_then(Value::as_bool).unwrap_or(false);
            let last = i + 1 == steps.len();
            if !ok {
                let why = st
                    .get("explanation")
                    .and_then(Value::as_str)
                    .map(str::to_string)
                    .unwrap_or_else(|| format!("{}: {}", s(st, "reason"), s(st, "until")));
                let _ = write!(
                    suites,
                    "<failure message=\"{}\" type=\"{}\">{}</failure>",
                    escape(&why),
                    escape(s(st, "reason")),
                    escape(s(r, "verdict"))
                );
            } else if verdict_only && last {
                let _ = write!(
                    suites,
                    "<failure message=\"{}\" type=\"verdict\"/>",
                    escape(s(r, "verdict"))
                );
            }
            suites.push_str("</testcase>\n");
        }
        if steps.is_empty() && verdict_only {
            let _ = writeln!(
                suites,
                "    <testcase name=\"start\" classname=\"{}\" time=\"{suite_wall:.3}\">\
                 <failure message=\"{}\" type=\"verdict\"/></testcase>",
                escape(file),
                escape(s(r, "verdict"))
            );
        }
        for i in steps.len()..total {
            let _ = writeln!(
                suites,
                "    <testcase name=\"step {}\" classname=\"{}\" time=\"0\"><skipped \
                 message=\"not run: an earlier step ended the program\"/></testcase>",
                i + 1,
                escape(file)
            );
        }
        if let Some(w) = witness {
            let _ = write!(
                suites,
                "    <testcase name=\"second witness: PX4's log\" classname=\"{}\" time=\"0\">\
                 <properties><property name=\"ulog\" value=\"{}\"/></properties>",
                escape(file),
                escape(s(w, "ulog"))
            );
            if witness_fail {
                let why = w
                    .get("error")
                    .and_then(Value::as_str)
                    .map(str::to_string)
                    .unwrap_or_else(|| {
                        w.get("disagreements")
                            .and_then(Value::as_array)
                            .map(|d| {
                                d.iter()
                                    .filter_map(Value::as_str)
                                    .collect::<Vec<_>>()
                                    .join("; ")
                            })
                            .unwrap_or_default()
                    });
                let _ = write!(
                    suites,
                    "<failure message=\"{}\" type=\"second_witness\"/>",
                    escape(&why)
                );
            }
            suites.push_str("</testcase>\n");
        }
        suites.push_str("  </testsuite>\n");
    }
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"nexus\" tests=\"{tests}\" \
         failures=\"{failures}\" errors=\"0\" time=\"{wall:.3}\">\n{suites}</testsuites>\n"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_failures() {
        let r = serde_json::json!({
            "file": "a.toml", "name": null, "passed": false, "verdict": "FAIL: x < y",
            "steps_total": 3, "wall_s": 2.5,
            "steps": [
                {"index": 1, "name": "up", "action": "takeoff", "until": "height > 2",
                 "passed": true, "reason": "met", "waited_sim_s": 4.0, "waited_wall_s": 1.0,
                 "explanation": null},
                {"index": 2, "name": null, "action": "hold", "until": "landed",
                 "passed": false, "reason": "timeout", "waited_sim_s": 9.0,
                 "waited_wall_s": 1.5, "explanation": "never <landed> & \"why\""}
            ]
        });
        let x = render(&[r]);
        assert!(x.contains("tests=\"3\" failures=\"1\""), "{x}");
        assert!(
            x.contains("message=\"never &lt;landed&gt; &amp; &quot;why&quot;\""),
            "{x}"
        );
        assert_eq!(x.matches("<testcase").count(), 3);
        assert_eq!(x.matches("<skipped").count(), 1);
    }

    #[test]
    fn a_program_not_run_is_skipped_with_the_reason() {
        let r = serde_json::json!({
            "file": "b.toml", "name": "second", "passed": false, "steps_total": 2,
            "verdict": "FAIL: not run: the set was interrupted by SIGINT", "steps": [],
            "wall_s": 0.0, "not_run": "not run: the set was interrupted by SIGINT"
        });
        let x = render(&[r]);
        assert!(
            x.contains("name=\"second\" tests=\"2\" failures=\"0\" errors=\"0\" skipped=\"2\""),
            "{x}"
        );
        assert_eq!(
            x.matches("<skipped message=\"not run: the set was interrupted by SIGINT\"/>")
                .count(),
            2,
            "{x}"
        );
        assert!(
            x.contains("<testsuites name=\"nexus\" tests=\"2\" failures=\"0\""),
            "{x}"
        );
    }
}
