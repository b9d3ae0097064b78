//! A set of programs (`nexus run A B … --jobs N`, `--partition K/N`) takes every option of a
//! single run (issue 29, item 2): `--connect` reaches each program's run (a silent vehicle is a
//! FAIL, never the built-in vehicle's PASS), with `--sysid`, `--compid`, `--real-vehicle`; the
//! set refuses what a single run refuses (`--speed` with `--connect`) and what it cannot do
//! (`--connect` with `--jobs` > 1).
//!
//! SITL instances of these tests: 120–128 (ports 14660–14668 and 14700–14708; 129 is
//! `cli_outputs`').

mod cli_support;

use cli_support::{json, nexus, repo, Bg, Scratch};
use predicates::prelude::*;
use std::net::UdpSocket;
use std::path::{Path, PathBuf};

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// A copy of the example takeoff, hover and land program, as `name` in `dir`.
fn takeoff(dir: &Scratch, name: &str) -> PathBuf {
    dir.file(
        name,
        &std::fs::read_to_string(repo("examples/takeoff-hover-land.toml")).unwrap(),
    )
}

#[test]
fn a_set_refuses_connect_with_several_jobs_and_speed_with_connect() {
    let dir = Scratch::new("sets-refused");
    let (a, b) = (takeoff(&dir, "a.toml"), takeoff(&dir, "b.toml"));
    // One vehicle, two programs at once: refused before anything starts.
    nexus(&[
        "run",
        s(&a),
        s(&b),
        "--jobs",
        "2",
        "--connect",
        "udpout:127.0.0.1:14699",
    ])
    .assert()
    .code(2)
    .stderr(predicate::str::contains(
        "--connect udpout:127.0.0.1:14699 names one vehicle, and --jobs 2",
    ))
    .stderr(predicate::str::contains("PASS").not());
    // What a single run refuses, the set refuses (here with one job, so only the speed is
    // wrong).
    for set in [
        vec![s(&a), s(&b)],
        vec![s(&a), "--partition", "1/1"],
        vec![s(&a), "--jobs", "2", "--sim"],
    ] {
        let mut args = vec!["run"];
        args.extend(set.iter().copied());
        let connect = !args.contains(&"--sim");
        if connect {
            args.extend(["--connect", "udpout:127.0.0.1:14699", "--speed", "20"]);
        } else {
            args.extend(["--speed", "900", "--instance", "120"]);
        }
        let want = if connect {
            "--speed 20 paces a vehicle nexus starts"
        } else {
            "--speed must be a positive number from 0.1 to 500"
        };
        nexus(&args)
            .assert()
            .code(2)
            .stderr(predicate::str::contains(want))
            .stderr(predicate::str::contains("programs,").not());
    }
}

#[test]
fn a_set_connected_to_a_silent_port_fails_and_flies_nothing_else() {
    let dir = Scratch::new("sets-silent");
    let a = takeoff(&dir, "a.toml");
    // Ours, so nothing else answers on it: it takes what is sent and says nothing.
    let silent = UdpSocket::bind("127.0.0.1:0").unwrap();
    let conn = format!("udpout:{}", silent.local_addr().unwrap());
    let report = dir.path("set.json");
    let out = nexus(&[
        "run",
        s(&a),
        "--partition",
        "1/1",
        "--connect",
        &conn,
        "--json",
        s(&report),
    ])
    .assert()
    .code(1)
    .stdout(predicate::str::contains(
        "FAIL: 1 programs: 0 passed, 1 failed",
    ))
    .get_output()
    .clone();
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(!text.contains("PASS"), "{text}");
    let r = json(&std::fs::read(&report).unwrap());
    assert_eq!(r["passed"], false, "{r}");
    let p = &r["reports"][0];
    assert_eq!(p["vehicle"]["kind"], "attached", "{p}");
    assert_eq!(p["vehicle"]["connection"], conn.as_str(), "{p}");
    let verdict = p["verdict"].as_str().unwrap();
    assert!(verdict.contains("no heartbeat"), "{verdict}");
    // The program's run spoke to the port: the link was the one given.
    silent.set_nonblocking(true).unwrap();
    let mut buf = [0u8; 512];
    assert!(
        silent.recv_from(&mut buf).is_ok(),
        "nothing was sent to {conn}"
    );
}

#[test]
fn a_set_passes_connect_sysid_compid_and_real_vehicle_to_each_program() {
    // A vehicle of its own, sending to 14540+N before anyone speaks; the programs of the set
    // fly it one after another, each listening on that port.
    let _vehicle = Bg::nexus(&[
        "sim",
        "--instance",
        "124",
        "--speed",
        "10",
        "--offboard-port-per-instance",
    ]);
    let dir = Scratch::new("sets-connect");
    let (a, b) = (takeoff(&dir, "a.toml"), takeoff(&dir, "b.toml"));
    let report = dir.path("set.json");
    let evidence = dir.path("evidence");
    nexus(&[
        "run",
        s(&a),
        s(&b),
        "--connect",
        "udpin:127.0.0.1:14664",
        "--sysid",
        "125",
        "--compid",
        "1",
        "--real-vehicle",
        "--json",
        s(&report),
        // Both kinds of file in one directory: their names differ by the extension.
        "--tlog",
        s(&evidence),
        "--report",
        s(&evidence),
    ])
    .assert()
    .success()
    .stdout(predicate::str::contains(
        "PASS: 2 programs: 2 passed, 0 failed",
    ));
    let r = json(&std::fs::read(&report).unwrap());
    let reports = r["reports"].as_array().unwrap();
    assert_eq!(reports.len(), 2, "{r}");
    for p in reports {
        let v = &p["vehicle"];
        assert_eq!(v["kind"], "attached", "{v}");
        assert_eq!(v["connection"], "udpin:127.0.0.1:14664", "{v}");
        assert_eq!(v["system_id"], 125, "{v}");
        assert_eq!(v["component_id"], 1, "{v}");
        assert_eq!(p["passed"], true, "{p}");
        let tlog = PathBuf::from(p["link"]["tlog"].as_str().expect("a tlog"));
        assert!(tlog.starts_with(&evidence), "{}", tlog.display());
        assert!(std::fs::metadata(&tlog).unwrap().len() > 0);
    }
    let files = std::fs::read_dir(&evidence).unwrap().count();
    assert_eq!(files, 4, "a .tlog and a .html per program");
    // `--sysid` reaches the programs: another system id is not this vehicle.
    nexus(&[
        "run",
        s(&a),
        "--jobs",
        "1",
        "--partition",
        "1/1",
        "--connect",
        "udpin:127.0.0.1:14664",
        "--sysid",
        "77",
    ])
    .assert()
    .code(1)
    .stderr(predicate::str::contains(
        "no heartbeat of system 77's autopilot",
    ));
}
