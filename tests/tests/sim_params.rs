//! pymavlink against the simulated PX4's parameters (issues 18 and 23): PARAM_REQUEST_LIST gives
//! PX4's `_HASH_CHECK` and then every parameter real PX4 SITL lists for the SIH quadrotor
//! (`sim/data/sih-quadx.tsv`) once, with PX4's types and values; reads by name and by index;
//! sets of the right type, INT32 bytewise; and the parameters QGroundControl, MAVSDK and PX4's
//! mavsdk_tests touch that PX4 has are there with PX4's type. Instance 175.

mod sim_support;

use nexus_host::sim::params::{ParamKind, TABLE};
use nexus_host::sim::{SimConfig, SimHandle};
use serde_json::json;
use sim_support::*;
use std::time::Duration;

/// The parameters QGroundControl (PX4 firmware plugin and vehicle setup pages: airframe, radio,
/// flight modes, sensors, power, safety, actuators), MAVSDK (action, telemetry health, param)
/// and PX4's test/mavsdk_tests read or set, with the type PX4 SITL lists them with (RCn_REV is
/// REAL32 on PX4). Some they touch PX4 SITL does not have for this airframe (TRIM_*,
/// BAT1_V_LOAD_DROP, MIS_DIST_1WP): see `NOT_ON_PX4`.
const CLIENTS: &[(&str, ParamKind)] = {
    use ParamKind::{Int32 as I, Real32 as R};
    &[
        // Airframe, system, sensors.
        ("SYS_AUTOSTART", I),
        ("SYS_AUTOCONFIG", I),
        ("SYS_HITL", I),
        ("SYS_HAS_MAG", I),
        ("SYS_HAS_BARO", I),
        ("SYS_HAS_GPS", I),
        ("MAV_SYS_ID", I),
        ("MAV_TYPE", I),
        ("CA_AIRFRAME", I),
        ("CA_ROTOR_COUNT", I),
        ("CAL_ACC0_ID", I),
        ("CAL_GYRO0_ID", I),
        ("CAL_MAG0_ID", I),
        ("CAL_MAG0_ROT", I),
        ("SENS_BOARD_ROT", I),
        ("SENS_BOARD_X_OFF", R),
        ("SENS_BOARD_Y_OFF", R),
        ("SENS_BOARD_Z_OFF", R),
        ("SENS_DPRES_OFF", R),
        ("CBRK_SUPPLY_CHK", I),
        // Arming and pre-arm.
        ("COM_ARM_WO_GPS", I),
        ("COM_ARM_CHK_ESCS", I),
        ("COM_PREARM_MODE", I),
        ("COM_DISARM_LAND", R),
        ("COM_DISARM_PRFLT", R),
        // Radio, flight modes, manual control.
        ("COM_RC_IN_MODE", I),
        ("COM_RC_LOSS_T", R),
        ("RC_CHAN_CNT", I),
        ("RC1_MIN", R),
        ("RC1_MAX", R),
        ("RC1_TRIM", R),
        ("RC1_REV", R),
        ("RC_MAP_ROLL", I),
        ("RC_MAP_PITCH", I),
        ("RC_MAP_YAW", I),
        ("RC_MAP_THROTTLE", I),
        ("RC_MAP_FLTMODE", I),
        ("RC_MAP_RETURN_SW", I),
        ("RC_MAP_KILL_SW", I),
        ("RC_MAP_OFFB_SW", I),
        ("RC_MAP_LOITER_SW", I),
        ("RC_MAP_ARM_SW", I),
        ("COM_FLTMODE1", I),
        ("COM_FLTMODE2", I),
        ("COM_FLTMODE3", I),
        ("COM_FLTMODE4", I),
        ("COM_FLTMODE5", I),
        ("COM_FLTMODE6", I),
        // Safety: failsafes, geofence, return.
        ("NAV_RCL_ACT", I),
        ("NAV_DLL_ACT", I),
        ("COM_DL_LOSS_T", I),
        ("COM_LOW_BAT_ACT", I),
        ("COM_OBL_RC_ACT", I),
        ("COM_OF_LOSS_T", R),
        ("GF_ACTION", I),
        ("GF_MAX_HOR_DIST", R),
        ("GF_MAX_VER_DIST", R),
        ("RTL_RETURN_ALT", R),
        ("RTL_DESCEND_ALT", R),
        ("RTL_LAND_DELAY", R),
        // Power.
        ("BAT_LOW_THR", R),
        ("BAT_CRIT_THR", R),
        ("BAT_EMERGEN_THR", R),
        ("BAT1_N_CELLS", I),
        ("BAT1_SOURCE", I),
        ("BAT1_V_EMPTY", R),
        ("BAT1_V_CHARGED", R),
        ("BAT1_R_INTERNAL", R),
        ("BAT1_CAPACITY", R),
        // Missions, takeoff, speeds (QGC plan view and guided actions, MAVSDK Action).
        ("MIS_TAKEOFF_ALT", R),
        ("NAV_ACC_RAD", R),
        ("MPC_XY_CRUISE", R),
        ("MPC_XY_VEL_MAX", R),
        ("MPC_Z_VEL_MAX_UP", R),
        ("MPC_Z_VEL_MAX_DN", R),
        ("MPC_LAND_SPEED", R),
        ("MPC_TKO_SPEED", R),
        ("MPC_MAN_Y_MAX", R),
        ("MPC_YAWRAUTO_MAX", R),
        // PX4's mavsdk_tests (autopilot_tester: failure injection, height source, RC loss
        // exceptions).
        ("SYS_FAILURE_EN", I),
        ("EKF2_HGT_REF", I),
        ("COM_RCL_EXCEPT", I),
    ]
};

/// Names clients use that PX4 SITL (SIH quadrotor, PX4 main of 2026-03) does not list.
const NOT_ON_PX4: &[&str] = &[
    "COM_OBL_ACT",
    "COM_RC_ARM_HYST",
    "LNDMC_TRIG_TIME",
    "TRIM_ROLL",
    "TRIM_PITCH",
    "TRIM_YAW",
    "BAT1_V_LOAD_DROP",
    "MIS_DIST_1WP",
    "BAT2_SOURCE",
];

/// PX4 SITL's list as the vehicle's data file holds it: name, wire type, value (INT32 as an
/// integer), the per-instance MAV_SYS_ID and UXRCE_DDS_KEY set to `sysid`.
fn px4_list(sysid: u8) -> Vec<(String, u64, f64)> {
    let tsv = std::fs::read_to_string(root().join("sim/data/sih-quadx.tsv")).unwrap();
    tsv.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty() && !l.starts_with("_HASH_CHECK"))
        .map(|l| {
            let c: Vec<&str> = l.split('\t').collect();
            let ty = if c[1] == "INT32" { 6 } else { 9 };
            let v = match c[0] {
                "MAV_SYS_ID" | "UXRCE_DDS_KEY" => sysid as f64,
                _ if ty == 9 => c[2].parse::<f64>().unwrap() as f32 as f64,
                _ => c[2].parse().unwrap(),
            };
            (c[0].to_owned(), ty, v)
        })
        .collect()
}

fn root() -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn wire_type(kind: ParamKind) -> u64 {
    match kind {
        ParamKind::Real32 => 9,
        ParamKind::Int32 => 6,
    }
}

fn row(name: &str) -> Option<(ParamKind, f64)> {
    TABLE
        .iter()
        .find(|(n, _, _)| *n == name)
        .map(|(_, kind, v)| (*kind, *v))
}

#[test]
fn what_clients_touch_is_in_px4s_table_with_px4s_types() {
    let missing: Vec<&str> = CLIENTS
        .iter()
        .filter(|(name, _)| row(name).is_none())
        .map(|(name, _)| *name)
        .collect();
    assert!(missing.is_empty(), "missing from the table: {missing:?}");
    for (name, kind) in CLIENTS {
        assert_eq!(row(name).map(|r| r.0), Some(*kind), "{name}");
    }
    // PX4 SITL's values for the SIH quadrotor where they differ from the definitions'
    // defaults (its startup scripts rcS and rc.mc_defaults, the airframe).
    for (name, v) in [
        ("BAT1_N_CELLS", 4.0),
        ("CBRK_SUPPLY_CHK", 0.0),
        ("COM_LOW_BAT_ACT", 3.0),
        ("SYS_FAILURE_EN", 1.0),
        ("SIM_BAT_ENABLE", 1.0),
        ("COM_RC_IN_MODE", 1.0),
        ("MAV_TYPE", 2.0),
        ("NAV_ACC_RAD", 2.0),
        ("RTL_RETURN_ALT", 30.0),
        ("CAL_ACC0_ID", 1310988.0),
    ] {
        assert_eq!(row(name).map(|r| r.1), Some(v), "{name}");
    }
    // Gone from PX4 main, or not run for this airframe (answered PARAM_ERROR like any unknown
    // name).
    for gone in NOT_ON_PX4 {
        assert!(row(gone).is_none(), "{gone}");
    }
    // Sorted by name, as PX4 indexes them, each name once; every name fits PARAM_VALUE's
    // 16-byte param_id.
    for w in TABLE.windows(2) {
        assert!(w[0].0 < w[1].0, "{} !< {}", w[0].0, w[1].0);
    }
    for (name, _, _) in TABLE {
        assert!(!name.is_empty() && name.len() <= 16, "{name}");
    }
}

#[test]
fn pymavlink_fetches_px4s_whole_table_and_reads_and_sets() {
    let cfg = SimConfig::realtime(175, speed());
    let mut run = Scenario::spawn(
        "sim_params.py",
        &[
            cfg.remote_port().to_string(),
            cfg.vehicle.sysid().to_string(),
        ],
    );
    run.wait_event("listening", Duration::from_secs(30));
    let sysid = cfg.vehicle.sysid();
    let _sim = SimHandle::start(cfg).expect("start sim");
    let ev = run.finish(Duration::from_secs(120));
    assert!(
        find(&ev, 0, &json!({"ev": "done"})).is_some(),
        "{}",
        dump(&ev)
    );

    let list = get(&ev, 0, &json!({"ev": "param_list"}));
    assert_eq!(list["count"], json!([TABLE.len()]), "param_count");
    assert_eq!(list["received"], TABLE.len());
    assert_eq!(list["indices"], json!([0, TABLE.len() - 1]));
    let names: Vec<&str> = list["names"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    let table: Vec<&str> = TABLE.iter().map(|(n, _, _)| *n).collect();
    assert_eq!(names, table, "indexed as the table, sorted by name");
    for (name, kind, _) in TABLE {
        assert_eq!(list["types"][name], wire_type(*kind), "{name}");
    }
    // PX4's checksum came first, once, as PX4 sends it; then real PX4's list, name for name,
    // type for type, value for value.
    assert_eq!(list["first"], "_HASH_CHECK");
    assert_eq!(
        list["hash"],
        json!([{"name": "_HASH_CHECK", "type": 5, "count": TABLE.len()}])
    );
    let px4 = px4_list(sysid);
    assert_eq!(names.len(), px4.len(), "as many as PX4 lists");
    for (name, ty, v) in &px4 {
        assert_eq!(list["types"][name], *ty, "{name}");
        let got = list["values"][name].as_f64().unwrap_or(f64::NAN);
        let ok = if *ty == 6 {
            got == *v
        } else {
            (got as f32).to_bits() == (*v as f32).to_bits()
        };
        assert!(ok, "{name}: {got} here, {v} on PX4");
    }
    // What clients look for arrives on the wire with PX4's type.
    for (name, kind) in CLIENTS {
        assert_eq!(list["types"][name], wire_type(*kind), "{name} on the wire");
    }

    for (name, ty, value) in [
        ("NAV_RCL_ACT", 6, 2.0),
        ("GF_ACTION", 6, 2.0),
        ("BAT_LOW_THR", 9, 0.15),
        ("NAV_DLL_ACT", 6, 0.0),
    ] {
        let r = get(&ev, 0, &json!({"ev": "param_read", "name": name}));
        assert_eq!(r["type"], ty, "{r}");
        assert!((r["value"].as_f64().unwrap() - value).abs() < 1e-6, "{r}");
    }
    let by_index = get(&ev, 0, &json!({"ev": "param_by_index"}));
    assert_eq!(by_index["name"], TABLE[7].0);

    let set = get(&ev, 0, &json!({"ev": "param_set", "name": "GF_ACTION"}));
    assert_eq!(
        (set["type"].as_u64(), set["value"].as_i64()),
        (Some(6), Some(3))
    );
    let set = get(&ev, 0, &json!({"ev": "param_set", "name": "BAT_LOW_THR"}));
    assert_eq!(set["type"], 9);
    assert!((set["value"].as_f64().unwrap() - 0.2).abs() < 1e-6, "{set}");
    let back = get(&ev, 0, &json!({"ev": "param_readback"}));
    assert_eq!(back["value"], 3);
}
