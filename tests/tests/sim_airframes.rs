//! The built-in vehicle's hexarotor and airplane fly their examples in PX4 SIH's sim time, and
//! write a ULog pyulog reads as the airframe's.
//!
//! Each example was flown on real PX4 SITL (SIH, `PX4_SIM_SPEED_FACTOR=4`) with
//! `scripts/px4-check --speed 4 --model M FILE --keep DIR`; the recording is kept as
//! `fixtures/px4-traces/NAME-x4.px4.tlog` (cut to the messages read here) and nexus's report of
//! that flight as `NAME-x4.report.json` (their README has the rest). The test flies the same
//! example on the built-in vehicle and holds two figures, both sim seconds, within ±15 % of
//! the recording's:
//! * `sim_s` of the JSON report (first heartbeat to the verdict), what `scripts/px4-check`
//!   compares;
//! * arming to disarming: read from each flight's tlog the same way (the HEARTBEAT's armed
//!   flag, on the vehicle's clock: the `time_boot_ms` of its SYSTEM_TIME and
//!   LOCAL_POSITION_NED), the flight itself, which PX4's boot time under load does not stretch.
//!
//! Instances 172, 173 and 174 (`tokio_flight` has them too; cargo runs test binaries one at a
//! time). Python is `NEXUS_PYTHON` (default the repository's `.venv`, with pyulog).

mod cli_support;

use cli_support::{json, nexus, pyulog_json, repo, Scratch};
use std::path::{Path, PathBuf};

/// What a flight's tlog says, on the vehicle's clock.
#[derive(Debug)]
struct Flight {
    /// HEARTBEAT.type of the vehicle.
    mav_type: u8,
    /// Sim seconds of the first armed and the first disarmed heartbeat after it.
    armed_s: f64,
    disarmed_s: f64,
    /// The vehicle's texts, in order.
    texts: Vec<String>,
}

impl Flight {
    fn flight_s(&self) -> f64 {
        self.disarmed_s - self.armed_s
    }
}

/// Read the vehicle's side of a tlog (MAVLink 2 frames of component 1; nexus is 255).
fn read_flight(path: &Path) -> Flight {
    let frames =
        nexus_host::tlog::read(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    let mut boot_ms: Option<u32> = None;
    let (mut mav_type, mut armed_s, mut disarmed_s) = (None, None, None);
    let mut texts = Vec::new();
    for f in frames {
        let b = &f.bytes;
        if b.len() < 12 || b[0] != 0xFD || b[5] == 255 || b[6] != 1 {
            continue;
        }
        let msgid = u32::from_le_bytes([b[7], b[8], b[9], 0]);
        // MAVLink 2 drops a payload's trailing zeros: put them back.
        let len = b[1] as usize;
        let mut p = b[10..(10 + len).min(b.len())].to_vec();
        p.resize(64, 0);
        let u32_at = |i: usize| u32::from_le_bytes(p[i..i + 4].try_into().unwrap());
        match msgid {
            // SYSTEM_TIME: time_unix_usec, time_boot_ms.
            2 => boot_ms = Some(u32_at(8)),
            // LOCAL_POSITION_NED: time_boot_ms first.
            32 => boot_ms = Some(u32_at(0)),
            // HEARTBEAT: custom_mode, type, autopilot, base_mode (bit 7: armed).
            0 => {
                mav_type.get_or_insert(p[4]);
                let armed = p[6] & 0x80 != 0;
                let now = boot_ms.map(|ms| ms as f64 / 1000.0);
                if armed && armed_s.is_none() {
                    armed_s = now;
                } else if !armed && armed_s.is_some() && disarmed_s.is_none() {
                    disarmed_s = now;
                }
            }
            // STATUSTEXT: severity, text[50].
            253 => {
                let t = &p[1..51];
                let end = t.iter().position(|&c| c == 0).unwrap_or(50);
                texts.push(String::from_utf8_lossy(&t[..end]).into_owned());
            }
            _ => {}
        }
    }
    Flight {
        mav_type: mav_type.expect("no heartbeat"),
        armed_s: armed_s.unwrap_or_else(|| panic!("{}: never armed", path.display())),
        disarmed_s: disarmed_s.unwrap_or_else(|| panic!("{}: never disarmed", path.display())),
        texts,
    }
}

/// `got` within ±15 % of PX4's `px4`; the ratio.
fn within_15_percent(what: &str, got: f64, px4: f64) -> f64 {
    let ratio = got / px4;
    assert!(
        (0.85..=1.15).contains(&ratio),
        "{what}: built-in {got:.1} s vs PX4 {px4:.1} s (ratio {ratio:.2})"
    );
    ratio
}

/// PX4's flight of `name` (fixtures/px4-traces/NAME-x4.*): its report and its tlog.
fn px4_recording(name: &str) -> (serde_json::Value, Flight) {
    let dir = repo("fixtures/px4-traces");
    let report = std::fs::read(dir.join(format!("{name}-x4.report.json")))
        .unwrap_or_else(|e| panic!("{name}-x4.report.json: {e}"));
    (
        json(&report),
        read_flight(&dir.join(format!("{name}-x4.px4.tlog"))),
    )
}

/// `nexus fly PLAN` (or `run PROGRAM`) `--sim --model MODEL --speed max`, recorded: the JSON
/// report and the tlog read back.
fn fly_sim(
    scratch: &Scratch,
    plan: &str,
    model: &str,
    instance: &str,
) -> (serde_json::Value, Flight, PathBuf) {
    let verb = if plan.ends_with(".toml") {
        "run"
    } else {
        "fly"
    };
    let tlog = scratch.path("flight.tlog");
    let ulog = scratch.path("flight.ulg");
    let out = nexus(&[
        verb,
        plan,
        "--sim",
        "--model",
        model,
        "--instance",
        instance,
        "--speed",
        "max",
        "--tlog",
        tlog.to_str().unwrap(),
        "--ulog",
        ulog.to_str().unwrap(),
        "--json",
        "-",
    ])
    .output()
    .expect("run nexus");
    (json(&out.stdout), read_flight(&tlog), ulog)
}

/// Fly `plan` on the built-in `model` and compare it with PX4's recording `name`.
/// The flight is recorded in `scratch`.
fn calibrated(
    scratch: &Scratch,
    name: &str,
    plan: &str,
    model: &str,
    instance: &str,
) -> (Flight, Flight, PathBuf) {
    let (px4_report, px4) = px4_recording(name);
    assert_eq!(px4_report["passed"], true, "PX4's own flight passed");
    assert_eq!(px4_report["vehicle"]["model"], model);
    let (r, sim, ulog) = fly_sim(scratch, plan, model, instance);
    assert_eq!(r["passed"], true, "{r}");
    assert_eq!(r["vehicle"]["model"], model);
    assert_eq!(sim.mav_type, px4.mav_type, "HEARTBEAT.type as PX4 sends it");
    let sim_s = within_15_percent(
        &format!("{name}: sim_s"),
        r["sim_s"].as_f64().unwrap(),
        px4_report["sim_s"].as_f64().unwrap(),
    );
    let flight = within_15_percent(
        &format!("{name}: arming to disarming"),
        sim.flight_s(),
        px4.flight_s(),
    );
    eprintln!("{name}: sim_s ratio {sim_s:.2}, arming to disarming ratio {flight:.2}");
    (sim, px4, ulog)
}

/// What pyulog reads of `ulg`: the airframe's parameters, `vehicle_status`'s types and the
/// samples of each topic.
fn pyulog_reads(ulg: &Path) -> serde_json::Value {
    let code = "import json, sys, pyulog\n\
                u = pyulog.ULog(sys.argv[1])\n\
                s = u.get_dataset('vehicle_status').data\n\
                print(json.dumps({'params': {k: u.initial_parameters[k] \
                  for k in ('SYS_AUTOSTART', 'MAV_TYPE')}, \
                  'vehicle_type': sorted(set(int(v) for v in s['vehicle_type'])), \
                  'system_type': sorted(set(int(v) for v in s['system_type'])), \
                  'samples': {d.name: len(d.data['timestamp']) for d in u.data_list}}))";
    pyulog_json(ulg, code)
}

/// pyulog reads the built-in vehicle's log as the airframe's: PX4's SYS_AUTOSTART and
/// MAV_TYPE, `vehicle_status.vehicle_type` (1 rotary wing, 2 fixed wing), the flight topics.
fn assert_ulog_is(ulg: &Path, autostart: i64, mav_type: i64, vehicle_type: i64) {
    let u = pyulog_reads(ulg);
    assert_eq!(u["params"]["SYS_AUTOSTART"], autostart, "{u}");
    assert_eq!(u["params"]["MAV_TYPE"], mav_type, "{u}");
    assert_eq!(u["vehicle_type"], serde_json::json!([vehicle_type]), "{u}");
    assert_eq!(u["system_type"], serde_json::json!([mav_type]), "{u}");
    for t in [
        "vehicle_status",
        "vehicle_land_detected",
        "vehicle_local_position",
        "vehicle_global_position",
        "mission_result",
        "battery_status",
    ] {
        let n = u["samples"][t].as_u64().unwrap_or(0);
        assert!(n > 50, "pyulog reads {n} samples of {t}: {u}");
    }
}

/// The airplane's mission in PX4's time (`plane-mission-x4.px4.tlog`, 309.0 s: a 170 s
/// NAV_DELAY on the ground, then the runway takeoff, the waypoint, the loiter and the landing;
/// fixtures README), with PX4's land detector and mission texts in PX4's order and a ULog pyulog
/// reads as the airplane's.
#[test]
fn the_airplane_flies_the_plane_mission_in_px4s_time() {
    let scratch = Scratch::new("sim-airframes-plane-mission");
    let (sim, px4, ulog) = calibrated(
        &scratch,
        "plane-mission",
        "examples/plane-mission.plan",
        "airplane",
        "173",
    );
    // HEARTBEAT type 1 (MAV_TYPE_FIXED_WING), as PX4's.
    assert_eq!((sim.mav_type, px4.mav_type), (1, 1));
    for f in [&sim, &px4] {
        let at = |t: &str| {
            f.texts
                .iter()
                .position(|s| s.starts_with(t))
                .unwrap_or_else(|| panic!("no {t:?} in {:?}", f.texts))
        };
        assert!(at("Takeoff detected") < at("Landing detected"));
        assert!(at("Landing detected") <= at("Mission finished, landed"));
        assert!(at("Mission finished, landed") < at("Disarmed by landing"));
    }
    assert_ulog_is(&ulog, 10041, 1, 2);
}

#[test]
fn the_hexarotor_flies_the_box_in_px4s_time() {
    let scratch = Scratch::new("sim-airframes-hex-box");
    let (_, px4, ulog) = calibrated(&scratch, "hex-box", "examples/box.plan", "hex", "174");
    // PX4 sends its MAV_TYPE parameter: rc.mc_defaults sets 2 (quadrotor) for the hex too.
    assert_eq!(px4.mav_type, 2);
    assert_ulog_is(&ulog, 10044, 2, 1);
}

/// The loiter program in PX4's time (`plane-loiter-x4.px4.tlog`: a clean flight since the
/// program's two seconds in Manual reset PX4's TECS; fixtures README).
#[test]
fn the_airplane_takes_off_loiters_at_the_goto_and_lands_in_px4s_time() {
    let scratch = Scratch::new("sim-airframes-plane-loiter");
    let (sim, px4, _) = calibrated(
        &scratch,
        "plane-loiter",
        "examples/plane-loiter.toml",
        "airplane",
        "172",
    );
    assert_eq!((sim.mav_type, px4.mav_type), (1, 1));
    assert!(sim.flight_s() > 60.0, "{sim:?}");
}
