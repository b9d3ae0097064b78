//! Eight simulated vehicles at once, each on its own ports and system id: a pymavlink client
//! per vehicle sees only its own, odd ones take off to their own altitude, even ones stay put.

mod sim_support;

use nexus_host::sim::{SimConfig, SimHandle};
use sim_support::*;
use std::time::Duration;

const BASE: u8 = 75;
const COUNT: u8 = 8;

#[test]
fn eight_instances_without_cross_talk() {
    let cfg0 = SimConfig::realtime(BASE, 1.0);
    let mut run = Scenario::spawn(
        "sim_multi.py",
        &[
            cfg0.remote_port().to_string(),
            cfg0.vehicle.sysid().to_string(),
            COUNT.to_string(),
        ],
    );
    // All eight clients listen before the vehicles boot.
    run.wait_event("listening", Duration::from_secs(30));
    for _ in 1..COUNT {
        run.wait_event("listening", Duration::from_secs(30));
    }
    let sims: Vec<SimHandle> = (0..COUNT)
        .map(|k| SimHandle::start(SimConfig::realtime(BASE + k, 1.0)).expect("start sim"))
        .collect();
    let ev = run.finish(Duration::from_secs(200));
    let vehicles: Vec<_> = ev.iter().filter(|e| e["ev"] == "vehicle").collect();
    assert_eq!(vehicles.len(), COUNT as usize, "{}", dump(&ev));
    for (k, v) in vehicles.iter().enumerate() {
        let k = k as u8;
        assert_eq!(v["sysid"], (BASE + k + 1) as u64, "{v}");
        assert_eq!(v["foreign"], 0, "client {k} saw another vehicle: {v}");
        assert!(v["heartbeats"].as_u64().unwrap() >= 5, "{v}");
        let sim = &sims[k as usize];
        let h = sim.true_height_m();
        if k % 2 == 1 {
            assert_eq!(v["armed"], true, "{v}");
            assert_eq!(v["mode"], "Hold", "{v}");
            let want = 3.0 + k as f64;
            assert!((v["rel_alt"].as_f64().unwrap() - want).abs() < 0.3, "{v}");
            assert!(
                (h as f64 - want).abs() < 0.3,
                "instance {k}: true height {h}"
            );
        } else {
            assert_eq!(v["armed"], false, "{v}");
            assert_eq!(h, 0.0);
        }
        // Each vehicle latched onto its own client.
        assert_eq!(
            sim.client().map(|a| a.port()),
            Some(sim.ports().offboard.port)
        );
        assert_eq!(sim.ports().offboard.system_id, BASE + k + 1);
    }
}
