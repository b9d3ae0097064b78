//! The failsafes PX4 SITL has on by default, as measured on PX4 main of 2026-03 (SIH quadrotor):
//! the simulated battery (SIM_BAT_DRAIN, SIM_BAT_MIN_PCT) and COM_LOW_BAT_ACT, the ground
//! station link (NAV_DLL_ACT, COM_DL_LOSS_T), and MAV_CMD_INJECT_FAILURE's answers.

use super::*;
use mav::MavCmd::*;

fn set_int(g: &mut Gcs, name: &str, v: i32) {
    g.param_set(
        name,
        f32::from_bits(v as u32),
        mav::MavParamType::MAV_PARAM_TYPE_INT32,
    );
}

fn set_real(g: &mut Gcs, name: &str, v: f32) {
    g.param_set(name, v, mav::MavParamType::MAV_PARAM_TYPE_REAL32);
}

/// Times (ms) of text `s` from event `from` on, and its severities.
fn seen(g: &Gcs, from: usize, s: &str) -> Vec<(u64, u8)> {
    g.log[from..]
        .iter()
        .filter_map(|(t, e)| match e {
            Ev::Text { text, sev } if text == s => Some((*t, *sev)),
            _ => None,
        })
        .collect()
}

fn remaining(g: &Gcs) -> f32 {
    g.v.battery.remaining(&g.v.params)
}

#[test]
fn the_battery_drains_to_sim_bat_min_pct_and_stays_there_by_default() {
    let mut g = Gcs::airborne(5.0);
    g.run(40_000);
    // PX4 SITL: full to empty in SIM_BAT_DRAIN 60 s, never below SIM_BAT_MIN_PCT 50 %.
    assert!((remaining(&g) - 0.5).abs() < 0.02, "{}", remaining(&g));
    assert!(!g.texts().iter().any(|t| t.contains("battery")));
    assert_eq!(g.mode(), Some(Mode::Hold));
}

#[test]
fn a_low_battery_warns_then_returns_then_lands_as_com_low_bat_act_3() {
    let mut g = Gcs::booted();
    set_real(&mut g, "SIM_BAT_MIN_PCT", 2.0);
    set_real(&mut g, "MIS_TAKEOFF_ALT", 5.0);
    g.set_mode(Mode::Takeoff);
    let from = g.log.len();
    g.arm();
    assert!(g.run_until(3_000, |g| g.armed()));
    assert!(g.run_until(120_000, |g| !g.armed()), "landed and disarmed");
    let low = seen(&g, from, "Low battery");
    let crit = seen(&g, from, "Critical battery");
    let hold = seen(&g, from, "Failsafe activated: entering Hold for 5 seconds");
    let shutdown = seen(&g, from, "System does not support shutdown");
    let emerg = seen(&g, from, "Emergency battery level");
    let fs = seen(&g, from, "Failsafe activated");
    assert_eq!(
        (
            low.len(),
            crit.len(),
            hold.len(),
            shutdown.len(),
            emerg.len(),
            fs.len()
        ),
        (1, 1, 1, 1, 1, 1),
        "{:?}",
        g.texts()
    );
    assert_eq!(
        (low[0].1, crit[0].1, shutdown[0].1, emerg[0].1, fs[0].1),
        (2, 2, 2, 0, 2)
    );
    // ~15 %, ~7 % and ~5 % of a 60 s drain after arming; the Land at the hold's end.
    let armed_at = g.when(|e| *e == Ev::Armed(true)).unwrap();
    let at = |t: u64| (t - armed_at) as f64 / 1000.0;
    assert!(
        (48.0..54.0).contains(&at(low[0].0)),
        "low at {}",
        at(low[0].0)
    );
    assert!(
        (53.0..58.0).contains(&at(crit[0].0)),
        "critical at {}",
        at(crit[0].0)
    );
    assert!(
        emerg[0].0 >= crit[0].0 + 2_000,
        "the report at most every 2 s"
    );
    assert!((5_000..5_300).contains(&(fs[0].0 - hold[0].0)));
    // Land, not Return: EMERGENCY came during the hold.
    let modes: Vec<Mode> = g.log[from..]
        .iter()
        .filter_map(|(_, e)| match e {
            Ev::Mode(m) => Some(*m),
            _ => None,
        })
        .collect();
    assert!(
        modes.contains(&Mode::Land) && !modes.contains(&Mode::Rtl),
        "{modes:?}"
    );
    assert!(g.texts().iter().any(|t| t == "Disarmed by landing"));
}

#[test]
fn inject_failure_battery_off_is_accepted_and_gps_and_rc_get_no_ack() {
    let mut g = Gcs::booted();
    let inject = |g: &mut Gcs, unit: f32, ty: f32| {
        let from = g.log.len();
        g.cmd_long(MAV_CMD_INJECT_FAILURE, [unit, ty, 0.0, 0.0, 0.0, 0.0, 0.0]);
        g.run(5_000);
        g.events(from)
            .into_iter()
            .filter_map(|e| match e {
                Ev::Ack { cmd: 420, result } => Some(result),
                _ => None,
            })
            .collect::<Vec<_>>()
    };
    // GPS (unit 4) and RC signal (unit 104) off: nobody answers on PX4 SITL.
    assert_eq!(inject(&mut g, 4.0, 1.0), Vec::<u8>::new());
    assert_eq!(inject(&mut g, 104.0, 1.0), Vec::<u8>::new());
    // SYS_FAILURE_EN 0: refused.
    set_int(&mut g, "SYS_FAILURE_EN", 0);
    assert_eq!(inject(&mut g, 100.0, 1.0), vec![2], "DENIED");
    set_int(&mut g, "SYS_FAILURE_EN", 1);
    // The battery off: ACCEPTED (by the battery simulator); it reads empty. On the pad that
    // makes commander ask for a power-off in 60 s and wait for it (measured on PX4 SITL): it
    // answers nothing more, the vehicle is not armable, and the process ends.
    let from = g.log.len();
    assert_eq!(inject(&mut g, 100.0, 1.0), vec![0]);
    assert!(remaining(&g) < 0.01);
    assert!(g
        .v
        .take_console()
        .iter()
        .any(|l| l.contains("battery empty")));
    assert_eq!(seen(&g, from, "Low battery").len(), 1);
    assert_eq!(
        seen(
            &g,
            from,
            "Dangerously low battery! Shutting system down in 60 seconds"
        )
        .len(),
        1
    );
    let from = g.log.len();
    g.arm();
    g.run(3_000);
    assert!(!g.armed());
    assert!(!g
        .events(from)
        .iter()
        .any(|e| matches!(e, Ev::Ack { cmd: 400, .. })));
    assert_eq!(g.hb.as_ref().unwrap().system_status as u8, 0, "UNINIT");
    // The battery simulator still answers; commander does not recover.
    assert_eq!(inject(&mut g, 100.0, 0.0), vec![0]);
    g.run(60_000);
    assert_eq!(g.v.exit_status(), Some(crate::ExitStatus::Code(0)));
}

#[test]
fn the_data_link_loss_says_so_and_nav_dll_act_acts() {
    // PX4 SITL's NAV_DLL_ACT 0: the words only.
    let mut g = Gcs::airborne(5.0);
    g.v.take_console();
    g.send_heartbeats = false;
    g.run(12_000);
    let console = g.v.take_console();
    assert!(
        console
            .iter()
            .any(|l| l.contains("Connection to ground station lost")),
        "{console:?}"
    );
    assert_eq!(g.mode(), Some(Mode::Hold));
    g.send_heartbeats = true;
    g.run(2_000);
    assert!(g.texts().iter().any(|t| t == "GCS connection regained"));

    // NAV_DLL_ACT 2: Return after COM_FAIL_ACT_T's hold; the link back ends it.
    let mut g = Gcs::airborne(5.0);
    set_int(&mut g, "NAV_DLL_ACT", 2);
    g.run(100);
    g.send_heartbeats = false;
    assert!(g.run_until(20_000, |g| g.mode() == Some(Mode::Rtl)));
    let lost =
        g.v.take_console()
            .iter()
            .any(|l| l.contains("Connection to ground station lost"));
    assert!(lost);
    g.send_heartbeats = true;
    assert!(
        g.run_until(5_000, |g| g.mode() == Some(Mode::Hold)),
        "back to Hold"
    );
    assert!(g.texts().iter().any(|t| t == "GCS connection regained"));
}
