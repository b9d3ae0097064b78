use super::*;
use nexus_core::engine::{Condition, OnTimeout, Op, Step, Wait};
use nexus_core::{Action, Mode, RcSticks};

fn parse(text: &str) -> Result<ProgramFile, FileError> {
    ProgramFile::parse(Path::new("prog.toml"), text)
}

/// The error's location and message, or a panic naming what parsed instead.
fn err(text: &str) -> (usize, usize, Option<String>, String) {
    match parse(text) {
        Ok(p) => panic!("expected an error, got {} steps", p.steps.len()),
        Err(FileError::Source(e)) => (e.line, e.col, e.key.clone(), e.to_string()),
        Err(e) => panic!("expected a source error, got {e}"),
    }
}

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples")
}

#[test]
fn the_examples_load() {
    for name in [
        "takeoff-hover-land.toml",
        "box-mission.toml",
        "wait-for-text-with-reaction.toml",
        "goto-and-check.toml",
        "offboard-square.toml",
    ] {
        let p = ProgramFile::load(&examples().join(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(!p.steps.is_empty(), "{name}");
        p.to_program().validate().unwrap();
    }
    let boxp = ProgramFile::load(&examples().join("box-mission.toml")).unwrap();
    assert_eq!(boxp.plan.as_ref().map(|p| p.plan.items.len()), Some(6));
}

#[test]
fn a_step_becomes_the_core_step_it_says() {
    let p = parse(
        r#"
[[step]]
action = "takeoff"
alt_m = 5
until = { altitude = 4.5, op = ">=", hold_s = 2, then_mode = "hold", then_speedup = 2 }
timeout_s = 60
on_timeout = "continue"

[[step]]
action = "rc"
sticks = { pitch = 0.3 }
until = { text = "Landing", since_seq = 3, guards = ["disarmed", { altitude = 1, op = "<=" }] }
timeout_s = 30

[[step]]
action = "param"
param = "MIS_TAKEOFF_ALT"
real = 7

[[step]]
action = "goto"
x_m = 10
y_m = -5
z_m = 8
yaw_deg = 90
until = { sim_time = 4, relative = true, within = 0.5 }
timeout_s = 10
"#,
    )
    .unwrap();
    let steps = p.to_program();
    let steps = steps.steps();
    assert_eq!(
        steps[0],
        Step::new(
            Action::Takeoff { alt_m: 5.0 },
            Wait::altitude_m(4.5)
                .op(Op::Ge)
                .hold_s(2.0)
                .then_mode(Mode::Hold)
                .then_speedup(2.0)
                .timeout_s(60.0)
        )
        .on_timeout(OnTimeout::Continue)
    );
    assert_eq!(
        steps[1],
        Step::new(
            Action::Rc(RcSticks {
                pitch: 0.3,
                ..RcSticks::NEUTRAL
            }),
            Wait::text("Landing")
                .since_seq(3)
                .guard(Condition::disarmed())
                .guard(Condition::altitude_m(1.0).op(Op::Le))
                .timeout_s(30.0)
        )
    );
    assert_eq!(
        steps[2],
        Step::action_only(Action::ParamReal {
            name: nexus_core::action::param_name("MIS_TAKEOFF_ALT").unwrap(),
            value: 7.0
        })
    );
    assert_eq!(
        steps[3].action,
        Action::Goto {
            x_m: 10.0,
            y_m: -5.0,
            z_m: 8.0,
            yaw_rad: Some(90f32.to_radians())
        }
    );
    assert_eq!(
        steps[3].until,
        Wait::sim_time_s(4.0).relative().within(0.5).timeout_s(10.0)
    );
    assert_eq!(p.steps[0].line, 2);
    assert!(
        p.steps[0].until_text.contains("altitude >= 4.5 m for 2 s"),
        "{}",
        p.steps[0].until_text
    );
}

#[test]
fn a_misspelt_key_is_named_with_its_position_and_the_fix() {
    let (line, col, key, msg) = err("[[step]]\naction = \"takeoff\"\nalt = 5\n");
    assert_eq!((line, col, key.as_deref()), (3, 1, Some("alt")));
    assert!(
        msg.starts_with("prog.toml:3:1: unknown key `alt` in step 1"),
        "{msg}"
    );
    assert!(msg.contains("did you mean `alt_m`?"), "{msg}");
}

#[test]
fn a_key_of_another_action_says_whose_it_is() {
    let (line, _, key, msg) = err("[[step]]\naction = \"land\"\nalt_m = 5\n");
    assert_eq!((line, key.as_deref()), (3, Some("alt_m")));
    assert!(msg.contains("belongs to \"takeoff\""), "{msg}");
}

#[test]
fn wrong_types_and_values_point_at_the_value() {
    let (line, col, _, msg) = err("[[step]]\naction = \"takeoff\"\nalt_m = \"five\"\n");
    assert_eq!((line, col), (3, 9));
    assert!(msg.contains("must be a number, found a string"), "{msg}");

    let (_, _, key, msg) =
        err("[[step]]\naction = \"takeoff\"\nalt_m = 5\nuntil = { altitude = 4, op = \">\" }\ntimeout_s = 9\n");
    assert_eq!(key.as_deref(), Some("until.op"));
    assert!(msg.contains("expected \">=\", \"<=\" or \"==\""), "{msg}");

    let (_, _, _, msg) = err("[[step]]\naction = \"teleport\"\n");
    assert!(msg.contains("unknown action \"teleport\""), "{msg}");
}

#[test]
fn an_unknown_mode_lists_the_known_ones() {
    let (line, col, key, msg) = err("[[step]]\naction = \"mode\"\nmode = \"Hover\"\n");
    assert_eq!((line, col, key.as_deref()), (3, 8, Some("mode")));
    assert!(
        msg.contains("known: Manual") && msg.contains("Mission"),
        "{msg}"
    );
}

#[test]
fn waits_that_cannot_work_are_refused_at_load() {
    // No timeout.
    let (_, _, key, msg) = err("[[step]]\nuntil = \"landed\"\n");
    assert_eq!(key.as_deref(), Some("timeout_s"));
    assert!(msg.contains("needs `timeout_s`"), "{msg}");
    // op on a condition without one.
    let (_, _, key, _) = err("[[step]]\nuntil = { mode = \"Hold\", op = \"<=\" }\ntimeout_s = 5\n");
    assert_eq!(key.as_deref(), Some("until.op"));
    // Two conditions.
    let (line, _, key, msg) =
        err("[[step]]\nuntil = { armed = true,\n  landed = true }\ntimeout_s = 5\n");
    assert_eq!((line, key.as_deref()), (3, Some("until.landed")));
    assert!(msg.contains("has two conditions"), "{msg}");
    // hold_s not below the timeout: the engine's own check, at the until.
    let (line, _, key, msg) =
        err("[[step]]\nuntil = { altitude = 1, hold_s = 5 }\ntimeout_s = 5\n");
    assert_eq!((line, key.as_deref()), (2, Some("until")));
    assert!(msg.contains("hold_s must be below timeout_s"), "{msg}");
    // A timeout with nothing to time out.
    let (_, _, key, _) = err("[[step]]\naction = \"land\"\ntimeout_s = 5\n");
    assert_eq!(key.as_deref(), Some("timeout_s"));
    // landed = false.
    let (_, _, _, msg) = err("[[step]]\nuntil = { landed = false }\ntimeout_s = 5\n");
    assert!(msg.contains("can only be true"), "{msg}");
    // A guard's own mistake names the guard.
    let (_, _, key, _) =
        err("[[step]]\nuntil = { time = 1, guards = [{ altitude = 1, opp = \"<=\" }] }\ntimeout_s = 5\n");
    assert_eq!(key.as_deref(), Some("until.guards[0].opp"));
}

#[test]
fn params_need_their_type() {
    let (_, _, _, msg) = err("[[step]]\naction = \"param\"\nparam = \"MIS_TAKEOFF_ALT\"\n");
    assert!(
        msg.contains("`real = …`") && msg.contains("`int = …`"),
        "{msg}"
    );
    let (_, _, _, msg) = err("[[step]]\naction = \"param\"\nparam = \"A\"\nreal = 1\nint = 1\n");
    assert!(msg.contains("both `real` and `int`"), "{msg}");
    let (_, _, key, _) =
        err("[[step]]\naction = \"param\"\nparam = \"A_NAME_LONGER_THAN_16\"\nint = 1\n");
    assert_eq!(key.as_deref(), Some("param"));
}

#[test]
fn toml_syntax_errors_have_a_position() {
    let (line, col, _, msg) = err("[[step]]\naction = \"land\nuntil = 3\n");
    assert_eq!(line, 2, "{msg}");
    assert!(col >= 10, "{msg}");
    assert!(msg.contains("not valid TOML"), "{msg}");
}

#[test]
fn no_steps_and_too_many_steps_are_errors() {
    let (_, _, _, msg) = err("name = \"empty\"\n");
    assert!(msg.contains("no steps"), "{msg}");
    let many = "[[step]]\naction = \"hold\"\n".repeat(STEPS + 1);
    let (line, _, _, msg) = err(&many);
    assert_eq!(line, 2 * STEPS + 1, "{msg}");
    assert!(msg.contains("at most 64"), "{msg}");
}

#[test]
fn a_program_uploads_one_plan() {
    let dir = examples();
    let text = "[[step]]\naction = \"upload\"\nplan = \"box.plan\"\n\n[[step]]\naction = \"upload\"\nplan = \"other.plan\"\n";
    let e = ProgramFile::parse(&dir.join("p.toml"), text).unwrap_err();
    let FileError::Source(e) = e else {
        panic!("{e}")
    };
    assert_eq!((e.line, e.key.as_deref()), (7, Some("plan")));
    // A missing plan is reported at the `plan` key of the program.
    let text = "[[step]]\naction = \"upload\"\nplan = \"nope.plan\"\n";
    let e = ProgramFile::parse(&dir.join("p.toml"), text).unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.contains("p.toml:3:8") && msg.contains("nope.plan"),
        "{msg}"
    );
}

#[test]
fn a_bad_plan_names_its_own_line_and_column() {
    let dir = std::env::temp_dir().join(format!("nexus-cli-plan-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let plan = dir.join("bad.plan");
    std::fs::write(
        &plan,
        "{\"fileType\": \"Plan\",\n \"mission\": {\"items\": [\n  {\"type\": \"ComplexItem\"}\n ]}}\n",
    )
    .unwrap();
    let e = PlanFile::load(&plan).unwrap_err().to_string();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(e.contains("bad.plan:3:3:"), "{e}");
    assert!(e.contains("ComplexItem"), "{e}");
}

#[test]
fn mission_progress_conditions_read_as_the_core_conditions() {
    let p = parse(
        r#"
[[step]]
until = { reached = 3, op = "<=" }
timeout_s = 60

[[step]]
until = { mission_complete = true, guards = ["disarmed", { reached = 2, within = 0 }] }
timeout_s = 600

[[step]]
until = "mission_complete"
timeout_s = 5
"#,
    )
    .unwrap();
    let program = p.to_program();
    let steps = program.steps();
    assert_eq!(steps[0].until, Wait::reached(3).op(Op::Le).timeout_s(60.0));
    assert_eq!(
        steps[1].until,
        Wait::mission_complete()
            .guard(Condition::disarmed())
            .guard(Condition::reached(2).within(0.0))
            .timeout_s(600.0)
    );
    assert_eq!(steps[2].until, Wait::mission_complete().timeout_s(5.0));
    assert!(
        p.steps[0].until_text.contains("reached <= 3"),
        "{}",
        p.steps[0].until_text
    );
    assert!(
        p.steps[1]
            .until_text
            .starts_with("mission_complete, failing if disarmed"),
        "{}",
        p.steps[1].until_text
    );
}

#[test]
fn mission_progress_conditions_refuse_what_does_not_apply() {
    let (_, _, key, msg) =
        err("[[step]]\nuntil = { mission_complete = true, op = \">=\" }\ntimeout_s = 5\n");
    assert_eq!(key.as_deref(), Some("until.op"));
    assert!(
        msg.contains("does not apply to `mission_complete`"),
        "{msg}"
    );
    let (_, _, _, msg) = err("[[step]]\nuntil = { mission_complete = false }\ntimeout_s = 5\n");
    assert!(msg.contains("can only be true"), "{msg}");
    let (_, _, key, _) = err("[[step]]\nuntil = { reached = -1 }\ntimeout_s = 5\n");
    assert_eq!(key.as_deref(), Some("until.reached"));
    let (_, _, key, _) = err("[[step]]\nuntil = { reached = 2, relative = true }\ntimeout_s = 5\n");
    assert_eq!(key.as_deref(), Some("until.relative"));
}

#[test]
fn the_extra_conditions_read_as_the_core_conditions() {
    use nexus_core::engine::Place;
    use nexus_core::telemetry::GpsFix;
    use nexus_core::LandedState;
    let p = parse(
        r#"
[[step]]
until = { distance = 2, op = "<=", to = "home" }
timeout_s = 60

[[step]]
until = { distance = 1.5, op = "<=", to = { lat = 47.3977419, lon = 8.5455938 } }
timeout_s = 60

[[step]]
until = { distance = 0.5, op = "<=", to = { x = 10, y = -2, z = 5 } }
timeout_s = 60

[[step]]
until = { groundspeed = 0.5, op = "<=", hold_s = 2 }
timeout_s = 60

[[step]]
until = { climb_rate = 0, within = 0.2 }
timeout_s = 60

[[step]]
until = { heading = 90, within = 5 }
timeout_s = 60

[[step]]
until = { time = 30, guards = [{ battery_remaining = 30, op = "<=" }, { battery_voltage = 14.2, op = "<=" }] }
timeout_s = 60

[[step]]
until = { gps_fix = "3d" }
timeout_s = 60

[[step]]
until = { satellites = 10, op = "==" }
timeout_s = 60

[[step]]
until = { landed_state = ["TAKING_OFF", "IN_AIR"] }
timeout_s = 60

[[step]]
action = "goto"
x_m = 5
y_m = 0
z_m = 5
until = "at_target"
timeout_s = 60

[[step]]
until = { gps_fix = 6 }
timeout_s = 60
"#,
    )
    .unwrap();
    let program = p.to_program();
    let s = program.steps();
    let w = |c: Condition| Wait::until(c).timeout_s(60.0);
    assert_eq!(
        s[0].until,
        w(Condition::distance_m(2.0, Place::Home).op(Op::Le))
    );
    assert_eq!(
        s[1].until,
        w(Condition::distance_m(
            1.5,
            Place::LatLon {
                lat_deg: 47.3977419,
                lon_deg: 8.5455938
            }
        )
        .op(Op::Le))
    );
    assert_eq!(
        s[2].until,
        w(Condition::distance_m(
            0.5,
            Place::World {
                x_m: 10.0,
                y_m: -2.0,
                z_m: 5.0
            }
        )
        .op(Op::Le))
    );
    assert_eq!(
        s[3].until,
        w(Condition::groundspeed_m_s(0.5).op(Op::Le)).hold_s(2.0)
    );
    assert_eq!(s[4].until, w(Condition::climb_rate_m_s(0.0).within(0.2)));
    assert_eq!(s[5].until, w(Condition::heading_deg(90.0).within(5.0)));
    assert_eq!(
        s[6].until,
        Wait::time_s(30.0)
            .guard(Condition::battery_remaining_pct(30.0).op(Op::Le))
            .guard(Condition::battery_voltage_v(14.2).op(Op::Le))
            .timeout_s(60.0)
    );
    assert_eq!(s[7].until, w(Condition::gps_fix(GpsFix::Fix3d)));
    assert_eq!(s[8].until, w(Condition::satellites(10).op(Op::Eq)));
    assert_eq!(
        s[9].until,
        w(Condition::landed_state(&[
            LandedState::TakingOff,
            LandedState::InAir
        ]))
    );
    assert_eq!(s[10].until, w(Condition::at_target()));
    assert_eq!(s[11].until, w(Condition::gps_fix(GpsFix::RtkFixed)));
    for (i, want) in [
        (0, "distance to home <= 2 m"),
        (5, "heading within 5° of 90°"),
        (9, "landed_state IN_AIR | TAKING_OFF"),
        (10, "at_target"),
    ] {
        assert!(
            p.steps[i].until_text.contains(want),
            "{}: {}",
            i,
            p.steps[i].until_text
        );
    }
}

#[test]
fn the_extra_conditions_refuse_what_does_not_apply() {
    let e = |t: &str| err(&format!("[[step]]\nuntil = {t}\ntimeout_s = 5\n"));
    let (_, _, key, msg) = e("{ distance = 2 }");
    assert_eq!(key.as_deref(), Some("until.to"), "{msg}");
    let (_, _, key, _) = e("{ distance = 2, to = \"homw\" }");
    assert_eq!(key.as_deref(), Some("until.to"));
    let (_, _, key, _) = e("{ distance = 2, to = { lat = 91, lon = 0 } }");
    assert_eq!(key.as_deref(), Some("until.to.lat"));
    let (_, _, key, _) = e("{ distance = 2, to = { lat = 47 } }");
    assert_eq!(key.as_deref(), Some("until.to.lon"));
    let (_, _, key, _) = e("{ distance = 2, to = { x = 1, w = 2 } }");
    assert_eq!(key.as_deref(), Some("until.to.w"));
    let (_, _, key, _) = e("{ altitude = 2, to = \"home\" }");
    assert_eq!(key.as_deref(), Some("until.to"));
    let (_, _, key, _) = e("{ heading = 400 }");
    assert_eq!(key.as_deref(), Some("until.heading"));
    let (_, _, key, _) = e("{ battery_remaining = 120 }");
    assert_eq!(key.as_deref(), Some("until.battery_remaining"));
    let (_, _, key, msg) = e("{ gps_fix = \"4d\" }");
    assert_eq!(key.as_deref(), Some("until.gps_fix"));
    assert!(msg.contains("rtk_fixed"), "{msg}");
    let (_, _, key, _) = e("{ gps_fix = 9 }");
    assert_eq!(key.as_deref(), Some("until.gps_fix"));
    let (_, _, key, _) = e("{ landed_state = [] }");
    assert_eq!(key.as_deref(), Some("until.landed_state"));
    let (_, _, key, msg) = e("{ landed_state = \"FLYING\" }");
    assert_eq!(key.as_deref(), Some("until.landed_state"));
    assert!(msg.contains("IN_AIR"), "{msg}");
    let (_, _, key, msg) = e("{ landed_state = \"IN_AIR\", op = \">=\" }");
    assert_eq!(key.as_deref(), Some("until.op"));
    assert!(msg.contains("groundspeed"), "{msg}");
    let (_, _, _, msg) = e("{ at_target = false }");
    assert!(msg.contains("can only be true"), "{msg}");
}

#[test]
fn the_offboard_action_reads_a_position_or_a_velocity() {
    use nexus_core::offboard::{Setpoint, Yaw};
    let p = parse(
        r#"
[[step]]
action = "offboard"
north_m = 10
east_m = -2
down_m = -5
yaw_deg = 90
until = "at_target"
timeout_s = 60

[[step]]
action = "offboard"
v_north_m_s = 1
v_east_m_s = 0
v_down_m_s = -0.5
until = { time = 3 }
timeout_s = 5

[[step]]
action = "stop_offboard"
until = { mode = "Hold" }
timeout_s = 5
"#,
    )
    .unwrap();
    let program = p.to_program();
    let s = program.steps();
    assert_eq!(
        s[0].action,
        Action::Offboard(Setpoint::PositionNed {
            north_m: 10.0,
            east_m: -2.0,
            down_m: -5.0,
            yaw_rad: Some(90f32.to_radians())
        })
    );
    assert_eq!(
        s[1].action,
        Action::Offboard(Setpoint::VelocityNed {
            v_north_m_s: 1.0,
            v_east_m_s: 0.0,
            v_down_m_s: -0.5,
            yaw: Yaw::Free
        })
    );
    assert_eq!(s[2].action, Action::StopOffboard);
    let e = |t: &str| {
        err(&format!(
            "[[step]]\naction = \"offboard\"\n{t}\nuntil = \"at_target\"\ntimeout_s = 5\n"
        ))
    };
    let (_, _, key, msg) = e("north_m = 1\nv_east_m_s = 1");
    assert_eq!(key.as_deref(), Some("v_north_m_s"), "{msg}");
    let (_, _, key, _) = e("north_m = 1\neast_m = 1");
    assert_eq!(key.as_deref(), Some("down_m"));
    let (_, _, key, _) = e("yaw_deg = 3");
    assert_eq!(key.as_deref(), Some("north_m"));
    let (_, _, key, _) = e("v_north_m_s = 100\nv_east_m_s = 0\nv_down_m_s = 0");
    assert_eq!(key.as_deref(), Some("v_north_m_s"));
}

#[test]
fn each_modifier_is_refused_where_it_does_not_apply() {
    let cases = [
        // No condition at all.
        ("until = { hold_s = 1 }", None, "names no condition"),
        (
            "until = { armed = true, within = 1 }",
            Some("until.within"),
            "does not apply to `armed`",
        ),
        (
            "until = { altitude = 5, op = \"<=\", within = 1 }",
            Some("until.within"),
            "cannot go with `op`",
        ),
        (
            "until = { altitude = 5, within = -1 }",
            Some("until.within"),
            "must not be negative",
        ),
        (
            "until = { altitude = 5, op = \"<\" }",
            Some("until.op"),
            "expected \">=\"",
        ),
        (
            "until = { armed = true, since_seq = 3 }",
            Some("until.since_seq"),
            "only applies to `text`",
        ),
        (
            "until = { time = 5, relative = true }",
            Some("until.relative"),
            "only applies to `sim_time`",
        ),
        (
            "until = { altitude = 5, to = \"home\" }",
            Some("until.to"),
            "only applies to `distance`",
        ),
    ];
    for (until, want_key, want) in cases {
        let (line, _, key, msg) = err(&format!("[[step]]\n{until}\ntimeout_s = 10\n"));
        assert_eq!(line, 2, "{until}: {msg}");
        if want_key.is_some() {
            assert_eq!(key.as_deref(), want_key, "{until}: {msg}");
        }
        assert!(msg.contains(want), "{until}: {msg}");
    }
    // What is allowed reads as the core condition: relative sim time, since_seq on a text.
    let p = parse(
        "[[step]]\nuntil = { sim_time = 5, relative = true }\ntimeout_s = 10\n\n\
         [[step]]\nuntil = { text = \"Takeoff\", since_seq = 2 }\ntimeout_s = 10\n",
    )
    .unwrap();
    assert_eq!(
        p.steps[0].until_text,
        "sim_time >= 5 s from the step's start (timeout 10 s, then stop)"
    );
    assert_eq!(
        p.steps[1].until_text,
        "text 'Takeoff' after text #2 (timeout 10 s, then stop)"
    );
}

/// `verify_mission` waits for its own verdict by default (`mission_verified`, the default
/// timeout), takes a `timeout_s` of its own, and no arguments.
#[test]
fn verify_mission_waits_for_the_verdict_by_default() {
    let p = parse(
        "[[step]]\naction = \"verify_mission\"\n\n[[step]]\naction = \"verify_mission\"\n\
         timeout_s = 30\n\n[[step]]\naction = \"none\"\nuntil = \"mission_verified\"\n\
         timeout_s = 5\n",
    )
    .unwrap();
    let s: Vec<Step> = p.steps.iter().map(|s| s.step.clone()).collect();
    let want = |t: f32| Wait::until(Condition::mission_verified()).timeout_s(t);
    assert_eq!(
        s[0],
        Step::new(Action::VerifyMission, want(VERIFY_TIMEOUT_S))
    );
    assert_eq!(s[1], Step::new(Action::VerifyMission, want(30.0)));
    assert_eq!(s[2], Step::new(Action::None, want(5.0)));
    assert!(p.steps[0].until_text.starts_with("mission_verified"));
    let (_, _, key, _) = err("[[step]]\naction = \"verify_mission\"\nplan = \"x.plan\"\n");
    assert_eq!(key.as_deref(), Some("plan"));
}

#[test]
fn inject_failure_names_its_unit_and_kind() {
    let p = parse(
        r#"
[[step]]
action = "inject_failure"
unit = "battery"
failure = "off"
until = { mode = "Land" }
timeout_s = 60
"#,
    )
    .unwrap();
    assert_eq!(
        p.steps[0].step.action,
        Action::InjectFailure {
            unit: 100,
            kind: 1,
            instance: 0
        }
    );
    let p = parse(
        "[[step]]\naction = \"inject_failure\"\nunit = \"gps\"\nfailure = \"stuck\"\ninstance = 2\n",
    )
    .unwrap();
    assert_eq!(
        p.steps[0].step.action,
        Action::InjectFailure {
            unit: 4,
            kind: 2,
            instance: 2
        }
    );
    let (line, _, key, msg) =
        err("[[step]]\naction = \"inject_failure\"\nunit = \"batery\"\nfailure = \"off\"\n");
    assert_eq!((line, key.as_deref()), (3, Some("unit")));
    assert!(msg.contains("did you mean \"battery\"?"), "{msg}");
    let (_, _, key, msg) = err("[[step]]\naction = \"inject_failure\"\nunit = \"gps\"\n");
    assert_eq!(key.as_deref(), Some("failure"), "{msg}");
    let (_, _, key, _) = err(
        "[[step]]\naction = \"inject_failure\"\nunit = \"gps\"\nfailure = \"off\"\ninstance = 300\n",
    );
    assert_eq!(key.as_deref(), Some("instance"));
}
