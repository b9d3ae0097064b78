//! pymavlink against the simulated PX4's parameter table (issue 18): PARAM_REQUEST_LIST gives
//! every parameter of PX4's generated table once, with PX4's types; reads by name and by index;
//! sets of the right type, INT32 bytewise. Instance 248.

mod sim_support;

use nexus_host::sim::params::{ParamKind, TABLE};
use nexus_host::sim::{SimConfig, SimHandle};
use serde_json::json;
use sim_support::*;
use std::time::Duration;

#[test]
fn pymavlink_fetches_px4s_whole_table_and_reads_and_sets() {
    let cfg = SimConfig::realtime(248, speed());
    let mut run = Scenario::spawn(
        "sim_params.py",
        &[
            cfg.remote_port().to_string(),
            cfg.vehicle.sysid().to_string(),
        ],
    );
    run.wait_event("listening", Duration::from_secs(30));
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
        let want = match kind {
            ParamKind::Real32 => 9,
            ParamKind::Int32 => 6,
        };
        assert_eq!(list["types"][name], want, "{name}");
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
