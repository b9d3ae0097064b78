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

// ---------------------------------------------------------------------------------------------
// Forged frames from the vehicle's own address: a relay between the vehicle and nexus forwards
// every frame and injects forgeries (unsigned, signed with another key, replayed, stale).

use nexus_core::frame::signing::{Signer, SigningClock, SigningKey};
use nexus_core::frame::{Encoder, MAX_FRAME_LEN};
use nexus_core::mav;
use nexus_host::sim::server::{SimConfig, SimHandle};
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What the relay injects.
#[derive(Clone, Copy)]
struct Forge {
    unsigned: bool,
    bad_signature: bool,
    replay: bool,
    stale: bool,
}

/// A UDP port nobody holds now.
fn free_port() -> u16 {
    UdpSocket::bind("127.0.0.1:0")
        .and_then(|s| s.local_addr())
        .expect("a free port")
        .port()
}

fn unix_micros() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_micros() as u64
}

/// The lies: a disarmed HEARTBEAT in another mode, a STATUSTEXT, the last item reached.
fn forgeries(enc: &mut Encoder, what: &str) -> Vec<Vec<u8>> {
    let mut text = [0u8; 50];
    let t = format!("PASS forged {what}");
    text[..t.len()].copy_from_slice(t.as_bytes());
    let mut out = Vec::new();
    let mut push = |n: usize, buf: &[u8]| out.push(buf[..n].to_vec());
    let mut buf = [0u8; MAX_FRAME_LEN];
    let n = enc
        .encode(
            &mav::HEARTBEAT_DATA {
                custom_mode: 0x0001_0000, // manual
                mavtype: mav::MavType::MAV_TYPE_QUADROTOR,
                autopilot: mav::MavAutopilot::MAV_AUTOPILOT_PX4,
                base_mode: mav::MavModeFlag::MAV_MODE_FLAG_CUSTOM_MODE_ENABLED,
                system_status: mav::MavState::MAV_STATE_STANDBY,
                mavlink_version: 3,
            },
            &mut buf,
        )
        .unwrap();
    push(n, &buf);
    let n = enc
        .encode(
            &mav::STATUSTEXT_DATA {
                severity: mav::MavSeverity::MAV_SEVERITY_CRITICAL,
                text: text.into(),
                id: 0,
                chunk_seq: 0,
            },
            &mut buf,
        )
        .unwrap();
    push(n, &buf);
    let n = enc
        .encode(&mav::MISSION_ITEM_REACHED_DATA { seq: 5 }, &mut buf)
        .unwrap();
    push(n, &buf);
    out
}

fn sign_all(frames: Vec<Vec<u8>>, signer: &mut Signer, now: nexus_core::Instant) -> Vec<Vec<u8>> {
    frames
        .into_iter()
        .map(|f| {
            let mut buf = [0u8; MAX_FRAME_LEN];
            buf[..f.len()].copy_from_slice(&f);
            let n = signer.sign(now, &mut buf, f.len()).expect("signable");
            buf[..n].to_vec()
        })
        .collect()
}

/// A relay between the vehicle (it sends to `vehicle_side`) and nexus (listening on
/// `nexus_port`): every frame forwarded as it is, and every 250 ms `forge`'s forgeries sent
/// to nexus from the relay's own address — the address nexus knows as the vehicle's.
struct Relay {
    stop: Arc<AtomicBool>,
    threads: Vec<std::thread::JoinHandle<()>>,
    vehicle_side_port: u16,
}

impl Relay {
    fn start(nexus_port: u16, key: SigningKey, forge: Forge) -> Relay {
        let v = UdpSocket::bind("127.0.0.1:0").unwrap();
        let vehicle_side_port = v.local_addr().unwrap().port();
        let n = UdpSocket::bind("127.0.0.1:0").unwrap();
        n.connect(("127.0.0.1", nexus_port)).unwrap();
        for s in [&v, &n] {
            s.set_read_timeout(Some(Duration::from_millis(50))).unwrap();
        }
        let stop = Arc::new(AtomicBool::new(false));
        let vehicle: Arc<Mutex<Option<SocketAddr>>> = Arc::default();
        // The vehicle's first signed HEARTBEAT (before it armed), replayed later.
        let captured: Arc<Mutex<Option<Vec<u8>>>> = Arc::default();
        let mut threads = Vec::new();
        {
            let (v, n, stop, vehicle, captured) = (
                v.try_clone().unwrap(),
                n.try_clone().unwrap(),
                stop.clone(),
                vehicle.clone(),
                captured.clone(),
            );
            threads.push(std::thread::spawn(move || {
                let mut buf = [0u8; 2048];
                while !stop.load(Ordering::SeqCst) {
                    let Ok((got, from)) = v.recv_from(&mut buf) else {
                        continue;
                    };
                    *vehicle.lock().unwrap() = Some(from);
                    let f = &buf[..got];
                    // One frame per datagram from the vehicle is not promised: capture only a
                    // datagram that is exactly one signed HEARTBEAT.
                    if f.len() > 12 && f[0] == 0xFD && f[2] & 1 == 1 && f[7..10] == [0, 0, 0] {
                        let len = 12 + f[1] as usize + 13;
                        let mut c = captured.lock().unwrap();
                        if c.is_none() && f.len() >= len {
                            *c = Some(f[..len].to_vec());
                        }
                    }
                    let _ = n.send(f);
                }
            }));
        }
        {
            let (v, n, stop, vehicle) = (
                v.try_clone().unwrap(),
                n.try_clone().unwrap(),
                stop.clone(),
                vehicle.clone(),
            );
            threads.push(std::thread::spawn(move || {
                let mut buf = [0u8; 2048];
                while !stop.load(Ordering::SeqCst) {
                    let Ok(got) = n.recv(&mut buf) else { continue };
                    if let Some(to) = *vehicle.lock().unwrap() {
                        let _ = v.send_to(&buf[..got], to);
                    }
                }
            }));
        }
        {
            let (n, stop, vehicle) = (n, stop.clone(), vehicle);
            threads.push(std::thread::spawn(move || {
                let mut enc = Encoder::new(1, 1);
                let wrong = SigningKey::new([0xEE; 32]);
                let mut bad = Signer::new(wrong, 0, SigningClock::from_unix_micros(unix_micros()));
                // The right key on a new stream (link id 7), ten minutes behind.
                let mut old = Signer::new(
                    key,
                    7,
                    SigningClock::from_unix_micros(unix_micros() - 600_000_000),
                );
                let t0 = std::time::Instant::now();
                while !stop.load(Ordering::SeqCst) {
                    std::thread::sleep(Duration::from_millis(250));
                    if vehicle.lock().unwrap().is_none() {
                        continue;
                    }
                    let now = nexus_core::Instant::from_micros(t0.elapsed().as_micros() as u64);
                    let mut out = Vec::new();
                    if forge.unsigned {
                        out.extend(forgeries(&mut enc, "unsigned"));
                    }
                    if forge.bad_signature {
                        out.extend(sign_all(forgeries(&mut enc, "bad key"), &mut bad, now));
                    }
                    if forge.stale {
                        out.extend(sign_all(forgeries(&mut enc, "stale"), &mut old, now));
                    }
                    if forge.replay {
                        out.extend(captured.lock().unwrap().clone());
                    }
                    for f in out {
                        let _ = n.send(&f);
                    }
                }
            }));
        }
        Relay {
            stop,
            threads,
            vehicle_side_port,
        }
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// Fly the box mission through the relay to a signed built-in vehicle ("always" mode) at ×5;
/// the exit status, what it printed and its report.
fn fly_through_forger(
    name: &str,
    forge: Forge,
    require_signed: bool,
) -> (bool, String, serde_json::Value) {
    let scratch = Scratch::new(name);
    let key_path = key_file(&scratch, "key.hex", 0x61);
    let key = SigningKey::new([0x61; 32]);
    let report = scratch.path("report.json");
    let nexus_port = free_port();
    let relay = Relay::start(nexus_port, key.clone(), forge);
    let conn = format!("udpin:127.0.0.1:{nexus_port}");
    let mut args = vec![
        "fly",
        "examples/box.plan",
        "--connect",
        &conn,
        "--signing-key",
        key_path.to_str().unwrap(),
        "--json",
        report.to_str().unwrap(),
    ];
    if require_signed {
        args.push("--require-signed");
    }
    let fly = std::process::Command::new(cli_support::nexus_exe())
        .current_dir(root())
        .env_remove("NEXUS_PX4_BUILD")
        .args(&args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run nexus");
    std::thread::sleep(Duration::from_millis(300));
    let mut cfg = SimConfig::realtime(0, 5.0);
    cfg.local_port_base = free_port();
    cfg.remote_port_base = relay.vehicle_side_port;
    cfg.vehicle.signing = Some(nexus_host::sim::signing::SigningConfig {
        key: Some(key),
        mode: nexus_host::sim::signing::SignMode::Always,
        ..Default::default()
    });
    let vehicle = SimHandle::start(cfg).expect("start the simulated vehicle");
    let out = fly.wait_with_output().expect("run nexus");
    drop(vehicle);
    drop(relay);
    // Human output (on stdout with `--json FILE`) and errors, together.
    let stderr =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    let r = json(&std::fs::read(&report).unwrap_or_else(|e| panic!("no report ({e}): {stderr}")));
    (out.status.success(), stderr, r)
}

/// No forged word in what nexus printed or reported.
fn no_forgery_applied(ok: bool, stderr: &str, r: &serde_json::Value) {
    assert!(ok, "{stderr:?}\n{r}");
    assert_eq!(r["passed"], true, "{r}");
    assert!(
        stderr.contains("PASS: mission complete: 6 items flown"),
        "{stderr}"
    );
    assert!(
        !stderr.contains("forged"),
        "a forged text was shown: {stderr}"
    );
    for t in r["texts"].as_array().unwrap() {
        assert!(!t["text"].as_str().unwrap().contains("forged"), "{t}");
    }
}

#[test]
fn require_signed_ignores_unsigned_badly_signed_replayed_and_stale_frames_from_the_vehicles_address(
) {
    let all = Forge {
        unsigned: true,
        bad_signature: true,
        replay: true,
        stale: true,
    };
    let (ok, stderr, r) = fly_through_forger("sign-forged-required", all, true);
    no_forgery_applied(ok, &stderr, &r);
    let s = &r["ignored"]["signing"];
    for cause in ["unsigned", "bad_signature", "replay", "stale"] {
        assert!(s[cause].as_u64().unwrap() >= 1, "no {cause} counted: {s}");
    }
    assert_eq!(s["unsigned_accepted"], 0, "{s}");
    let lines = r["ignored"]["lines"].to_string();
    assert!(
        lines.contains("frames failing the signing check"),
        "{lines}"
    );
}

#[test]
fn without_require_signed_a_frame_signed_with_another_key_is_still_never_applied() {
    let bad_only = Forge {
        unsigned: false,
        bad_signature: true,
        replay: false,
        stale: false,
    };
    let (ok, stderr, r) = fly_through_forger("sign-forged-optional", bad_only, false);
    no_forgery_applied(ok, &stderr, &r);
    let s = &r["ignored"]["signing"];
    assert!(s["bad_signature"].as_u64().unwrap() >= 1, "{s}");
}

#[test]
fn sign_setup_installs_a_key_and_the_vehicles_heartbeats_are_signed_with_it() {
    let scratch = Scratch::new("sign-setup");
    let key_path = key_file(&scratch, "new.hex", 0x2d);
    let store = scratch.path("px4-key.bin");
    // A vehicle with no key yet (PX4's default: signing off, everything accepted), keeping
    // its key file as PX4 does; on ports the system picks.
    let mut cfg = SimConfig::realtime(0, 1.0);
    cfg.local_port_base = free_port();
    cfg.remote_port_base = free_port();
    cfg.vehicle.signing = Some(nexus_host::sim::signing::SigningConfig {
        key: None,
        key_file: Some(store.clone()),
        mode: nexus_host::sim::signing::SignMode::Optional,
        ..Default::default()
    });
    let port = cfg.local_port();
    let _vehicle = SimHandle::start(cfg).expect("start the simulated vehicle");
    let conn = format!("udpout:127.0.0.1:{port}");
    let out = nexus(&[
        "sign",
        "setup",
        &conn,
        "--signing-key",
        key_path.to_str().unwrap(),
    ])
    .timeout(Duration::from_secs(60))
    .output()
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("key installed"), "{stdout}");
    assert!(!stdout.contains(&"2d".repeat(32)), "the key was printed");
    // PX4's key file: the 32 key bytes, then the 8-byte timestamp.
    let stored = std::fs::read(&store).expect("the vehicle stored the key");
    assert_eq!(stored.len(), 40);
    assert_eq!(stored[..32], [0x2d; 32]);
}
