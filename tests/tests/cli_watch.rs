//! `nexus watch`: live telemetry of a running simulated vehicle.

mod cli_support;

use cli_support::nexus;
use nexus_host::sim::{SimConfig, SimHandle};
use predicates::prelude::*;

#[test]
fn watch_prints_mode_altitude_and_position_of_a_running_sim() {
    // Build the command first: the vehicle's boot texts are only kept 5 s (as PX4's queue).
    let mut watch = nexus(&[
        "watch",
        // Instance 159 sends to 14549 until a client speaks to its 14580+N (PX4's rule).
        "udpout:127.0.0.1:14739",
        "--count",
        "8",
        "--interval",
        "0.5",
        "--duration",
        "60",
    ]);
    let sim = SimHandle::start(SimConfig::realtime(159, 1.0)).expect("start the simulated vehicle");
    let out = watch
        .assert()
        .success()
        .stdout(predicate::str::contains("nexus watch: system 160"))
        .stdout(
            predicate::str::is_match(r"mode=Hold armed=no alt=-?\d+\.\d m pos=47\.39\d+,8\.54\d+")
                .unwrap(),
        )
        .stdout(predicate::str::contains("landed=ON_GROUND"))
        .get_output()
        .clone();
    let stdout = String::from_utf8_lossy(&out.stdout);
    // One line per 0.5 s from the first heartbeat (1.5 s after boot) to 5.5 s: the position
    // (3 s) and the boot texts (from 2.7 s) arrive in between.
    assert_eq!(stdout.matches(" mode=").count(), 8, "{stdout}");
    // The watcher's heartbeat makes PX4 stream its texts.
    assert!(stdout.contains("text #1 ["), "{stdout}");
    drop(sim);
}

#[test]
fn watch_without_a_vehicle_says_so() {
    nexus(&["watch", "udpin:127.0.0.1:14695", "--duration", "1"])
        .assert()
        .code(1)
        .stdout(predicate::str::contains(
            "no autopilot heartbeat on udpin:127.0.0.1:14695",
        ));
}
