//! `nexus run` with `param` steps: each waits for PX4's answer to its PARAM_SET. A set PX4
//! stores passes with the value echoed; an unknown name fails the run at once naming PX4's
//! DOES_NOT_EXIST, a value of the wrong type naming TYPE_MISMATCH (instances 140–142).

mod cli_support;

use cli_support::{json, nexus, Scratch, SPEED};

/// A program that sets `MPC_XY_CRUISE` (REAL32), then `name` as an INT32, then waits 2 s.
fn program(scratch: &Scratch, name: &str) -> String {
    let text = format!(
        r#"
name = "params"

[[step]]
name = "cruise"
action = "param"
param = "MPC_XY_CRUISE"
real = 7.25

[[step]]
name = "second"
action = "param"
param = "{name}"
int = 3

[[step]]
name = "after"
until = {{ time = 2 }}
timeout_s = 5
"#
    );
    scratch
        .file("params.toml", &text)
        .to_str()
        .unwrap()
        .to_string()
}

fn run(prog: &str, instance: &str) -> (Option<i32>, serde_json::Value, String) {
    let out = nexus(&[
        "run",
        prog,
        "--speed",
        SPEED,
        "--instance",
        instance,
        "--json",
    ])
    .output()
    .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    (out.status.code(), json(&out.stdout), stderr)
}

#[test]
fn sets_px4_stores_pass_with_the_value_echoed() {
    let scratch = Scratch::new("params-ok");
    // COM_RC_IN_MODE is an INT32 on PX4.
    let prog = program(&scratch, "COM_RC_IN_MODE");
    let (code, r, err) = run(&prog, "140");
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(r["passed"], true, "{r}");
    let steps = r["steps"].as_array().unwrap();
    assert_eq!(steps[0]["param"], "PX4 stored MPC_XY_CRUISE = 7.25", "{r}");
    assert_eq!(steps[1]["param"], "PX4 stored COM_RC_IN_MODE = 3", "{r}");
    assert_eq!(steps[0]["until"], "PX4 echoes the value stored");
    assert!(steps[2]["param"].is_null());
    // Each set went out and was echoed once: no resend on a clean link.
    assert_eq!(r["requests"]["param_sets_sent"], 2, "{r}");
}

#[test]
fn an_unknown_parameter_fails_the_run_at_once_with_does_not_exist() {
    let scratch = Scratch::new("params-unknown");
    let prog = program(&scratch, "COM_FOO");
    let (code, r, err) = run(&prog, "141");
    assert_eq!(code, Some(1), "{err}");
    assert_eq!(r["passed"], false);
    let steps = r["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 2, "the run ends at the refused step: {r}");
    assert_eq!(steps[0]["reason"], "met");
    let refused = &steps[1];
    assert_eq!(refused["reason"], "aborted", "{refused}");
    assert_eq!(refused["param"], "PX4 refused COM_FOO = 3: DOES_NOT_EXIST");
    assert_eq!(
        refused["snapshot"]["error"],
        "PX4 refused COM_FOO = 3: DOES_NOT_EXIST"
    );
    // At once: PX4 answers within a round trip, not after a retry timer.
    assert!(refused["waited_sim_s"].as_f64().unwrap() < 0.5, "{refused}");
    let verdict = r["verdict"].as_str().unwrap();
    assert!(
        verdict.contains("step 2/3 (second)")
            && verdict.contains("PX4 refused COM_FOO = 3: DOES_NOT_EXIST"),
        "{verdict}"
    );
    // Refused, so sent once: no resends after PX4's answer.
    assert_eq!(r["requests"]["param_sets_sent"], 2, "{r}");
}

#[test]
fn a_set_of_the_wrong_type_fails_with_type_mismatch() {
    let scratch = Scratch::new("params-type");
    // MPC_XY_VEL_MAX is a REAL32 on PX4: an INT32 set is refused.
    let prog = program(&scratch, "MPC_XY_VEL_MAX");
    let (code, r, err) = run(&prog, "142");
    assert_eq!(code, Some(1), "{err}");
    let steps = r["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 2, "{r}");
    assert_eq!(
        steps[1]["param"],
        "PX4 refused MPC_XY_VEL_MAX = 3: TYPE_MISMATCH"
    );
    assert!(r["verdict"]
        .as_str()
        .unwrap()
        .contains("PX4 refused MPC_XY_VEL_MAX = 3: TYPE_MISMATCH"));
}
