//! Signed links (MAVLink 2 signing), end to end: the box mission on a signed link to the
//! built-in vehicle, and pymavlink's own signing as the independent peer of the built-in
//! vehicle in PX4's "always" mode (frames it signs verify in pymavlink, frames pymavlink signs
//! verify in it, an unsigned COMMAND_LONG is refused).
//!
//! Instances 160–167 (ports 14540+N, 14580+N). Python is `NEXUS_PYTHON` (default the repo's
//! `.venv`).

mod cli_support;

use cli_support::{json, nexus, root, Bg, Scratch, SPEED};
use std::path::PathBuf;
use std::process::Command;

fn python() -> PathBuf {
    let p = std::env::var_os("NEXUS_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join(".venv/bin/python"));
    assert!(
        p.exists(),
        "no Python at {} (set NEXUS_PYTHON)",
        p.display()
    );
    p
}

/// A key file of 64 hex digits.
fn key_file(scratch: &Scratch, name: &str, byte: u8) -> PathBuf {
    let p = scratch.path(name);
    std::fs::write(&p, format!("{byte:02x}").repeat(32)).unwrap();
    p
}

#[test]
fn the_box_mission_flies_on_a_signed_link_and_the_tlog_keeps_the_signatures() {
    let scratch = Scratch::new("sign-box");
    let key = key_file(&scratch, "key.hex", 0x5a);
    let report = scratch.path("report.json");
    let tlog = scratch.path("flight.tlog");
    nexus(&[
        "fly",
        "examples/box.plan",
        "--speed",
        SPEED,
        "--instance",
        "160",
        "--signing-key",
        key.to_str().unwrap(),
        "--require-signed",
        "--tlog",
        tlog.to_str().unwrap(),
        "--json",
        report.to_str().unwrap(),
    ])
    .assert()
    .success();
    let r = json(&std::fs::read(&report).unwrap());
    assert_eq!(r["passed"], true, "{r}");
    let s = &r["ignored"]["signing"];
    assert_eq!(s["rejected"], 0, "{s}");
    assert!(s["signed"].as_u64().unwrap() > 100, "{s}");
    let text = std::fs::read_to_string(&report).unwrap();
    assert!(!text.contains(&"5a".repeat(32)), "the key is in the report");
    // Every frame of the flight, both directions, is signed and kept whole in the tlog.
    let frames = nexus_host::tlog::read(&tlog).unwrap();
    assert!(frames.len() > 100);
    for f in &frames {
        assert_eq!(f.bytes[0], 0xFD);
        assert_eq!(f.bytes[2] & 1, 1, "an unsigned frame in the tlog");
        assert_eq!(f.bytes.len(), 12 + f.bytes[1] as usize + 13);
    }
}

const PEER: &str = r#"
import os, sys, time, json
os.environ["MAVLINK20"] = "1"
from pymavlink import mavutil
port, key = int(sys.argv[1]), bytes.fromhex(open(sys.argv[2]).read().strip())
m = mavutil.mavlink_connection('udpout:127.0.0.1:%d' % port, source_system=255, source_component=190)
out = {}
m.setup_signing(key, sign_outgoing=True, allow_unsigned_callback=None)
# Speak first (an instance above 9 answers whoever speaks to its 14580+N).
hb = None
for _ in range(40):
    m.mav.heartbeat_send(6, 8, 0, 0, 0)
    hb = m.recv_match(type='HEARTBEAT', blocking=True, timeout=0.5)
    if hb is not None and hb.get_srcComponent() == 1:
        break
out['heartbeat_signed'] = bool(hb is not None and hb._signed)
out['heartbeat_link_id'] = hb._link_id if hb is not None else None
def ack_for(cmd, timeout):
    t0 = time.time()
    while time.time() - t0 < timeout:
        a = m.recv_match(type='COMMAND_ACK', blocking=True, timeout=0.5)
        if a is not None and a.command == cmd:
            return a.result
    return None
# Unsigned first: refused ("always"), so no answer.
m.disable_signing()
for _ in range(3):
    m.mav.command_long_send(hb.get_srcSystem(), hb.get_srcComponent(), 512, 0, 148, 0, 0, 0, 0, 0, 0)
m.setup_signing(key, sign_outgoing=True, allow_unsigned_callback=None)
out['unsigned_ack'] = ack_for(512, 3.0)
m.mav.command_long_send(hb.get_srcSystem(), hb.get_srcComponent(), 512, 0, 148, 0, 0, 0, 0, 0, 0)
out['signed_ack'] = ack_for(512, 5.0)
print(json.dumps(out))
"#;

#[test]
fn pymavlink_and_the_built_in_vehicle_verify_each_others_signatures() {
    let scratch = Scratch::new("sign-pymavlink");
    let key = key_file(&scratch, "key.hex", 0x3c);
    let instance = 161u16;
    let _sim = Bg::nexus(&[
        "sim",
        "--instance",
        &instance.to_string(),
        "--signing-key",
        key.to_str().unwrap(),
        "--sign-mode",
        "2",
    ]);
    let out = Command::new(python())
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .arg("-c")
        .arg(PEER)
        .arg((14580 + instance).to_string())
        .arg(&key)
        .output()
        .expect("run python");
    assert!(
        out.status.success(),
        "python failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = json(&out.stdout);
    assert_eq!(v["heartbeat_signed"], true, "{v}");
    assert_eq!(v["heartbeat_link_id"], 0, "{v}");
    assert_eq!(
        v["unsigned_ack"],
        serde_json::Value::Null,
        "an unsigned command was answered: {v}"
    );
    assert_eq!(
        v["signed_ack"], 0,
        "the signed command was not accepted: {v}"
    );
}
