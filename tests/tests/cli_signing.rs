//! Signed links (MAVLink 2 signing), end to end: the box mission on a signed link to the
//! built-in vehicle, and pymavlink's own signing as the independent peer of the built-in
//! vehicle in PX4's "always" mode (frames it signs verify in pymavlink, frames pymavlink signs
//! verify in it, an unsigned COMMAND_LONG is refused).
//!
//! With `--require-signed`, forged frames from the vehicle's own address (a relay between the
//! vehicle and nexus injects them: unsigned, wrongly keyed, replayed, stale; made by
//! nexus-core's signer, and made by pymavlink's) are rejected, counted by cause in the JSON
//! report and the human output, and change no verdict, nor the link's loss figures (sequence
//! gaps count only frames that passed the check). `nexus bridge --sign-side` signs for an
//! unsigned client and drops what fails the check on its signed side; `nexus watch` counts
//! and shows rejected frames, and latches the vehicle's address only on a frame that passed
//! the check; `nexus serve` signs every session it opens. No key shows in an output, a report,
//! a file name or an error.
//!
//! Instances 160–167 reserved (ports 14540+N, 14580+N): 160, 161 and 162 (`serve`) used; the
//! rest of the vehicles run in-process on ports the system picks. Python is `NEXUS_PYTHON`
//! (default the repo's `.venv`).

mod cli_support;

use cli_support::{json, nexus, python, root, Bg, Scratch, SPEED};
use std::path::PathBuf;
use std::process::Command;

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
    // Forged frames carry the vehicle's ids and their own sequence numbers: counted in the
    // sequence gaps they would make the loopback link look lossy (and its streams reduced).
    assert!(
        !stderr.contains("lossy link"),
        "forged frames made the link look lossy: {stderr}"
    );
    assert!(
        !r["events"].to_string().contains("lossy link"),
        "{}",
        r["events"]
    );
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

// ---------------------------------------------------------------------------------------------
// The same forgeries made by another implementation: pymavlink's signing, in a relay written
// in Python.

/// A relay between the vehicle and nexus (on `argv[1]`), in Python: every frame forwarded,
/// and every 250 ms forgeries sent from the relay's address (the vehicle's as nexus sees it):
/// unsigned, signed with another key, the vehicle's own first signed HEARTBEAT again
/// (replayed), and signed with the key on a new stream ten minutes behind (stale). Prints the
/// port the vehicle is to send to, and what it sent (JSON) when its stdin closes.
const PY_FORGER: &str = r#"
import os, sys, socket, threading, time, json, select
os.environ["MAVLINK20"] = "1"
from pymavlink.dialects.v20 import common as mav2

nexus_port = int(sys.argv[1])
key = bytes.fromhex(open(sys.argv[2]).read().strip())
v = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
v.bind(("127.0.0.1", 0))
n = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
n.bind(("127.0.0.1", 0))
n.connect(("127.0.0.1", nexus_port))
print(v.getsockname()[1], flush=True)
stop = False
vehicle = None
captured = []
sent = {"unsigned": 0, "bad_signature": 0, "replay": 0, "stale": 0}

def from_vehicle():
    global vehicle
    v.settimeout(0.05)
    while not stop:
        try:
            data, addr = v.recvfrom(2048)
        except socket.timeout:
            continue
        vehicle = addr
        # The vehicle's first signed HEARTBEAT (a datagram's first frame), replayed later.
        if (len(captured) < 1 and len(data) > 12 and data[0] == 0xFD and data[2] & 1
                and data[7:10] == b"\0\0\0" and len(data) >= 12 + data[1] + 13):
            captured.append(data[:12 + data[1] + 13])
        try:
            n.send(data)
        except OSError:
            pass

def to_vehicle():
    n.settimeout(0.05)
    while not stop:
        try:
            data = n.recv(2048)
        except (socket.timeout, OSError):
            continue
        if vehicle is not None:
            v.sendto(data, vehicle)

class Sink:
    def write(self, b):
        pass

def encoder(secret=None, link_id=0, timestamp=0):
    m = mav2.MAVLink(Sink(), srcSystem=1, srcComponent=1)
    if secret is not None:
        m.signing.secret_key = secret
        m.signing.link_id = link_id
        m.signing.timestamp = timestamp
        m.signing.sign_outgoing = True
    return m

def now_ts():
    # 10 us units since 2015-01-01 00:00 GMT (the signing timestamp).
    return int((time.time() - 1420070400) * 100000)

def lies(m, what):
    out = []
    for msg in (
        m.heartbeat_encode(2, 12, 1, 0x10000, 3),  # disarmed, manual
        m.statustext_encode(2, ("PASS forged %s" % what).encode()),
        m.mission_item_reached_encode(5),
    ):
        out.append(msg.pack(m))
        m.seq = (m.seq + 1) % 256
    return out

unsigned = encoder()
wrong = encoder(b"\xee" * 32, 0, now_ts())
# The right key on a new stream (link id 9), ten minutes behind: stale.
stale = encoder(key, 9, now_ts() - 600 * 100000)
threading.Thread(target=from_vehicle, daemon=True).start()
threading.Thread(target=to_vehicle, daemon=True).start()
while True:
    r, _, _ = select.select([sys.stdin], [], [], 0.25)
    if r and not sys.stdin.readline():
        break
    if vehicle is None:
        continue
    for f in lies(unsigned, "unsigned"):
        n.send(f); sent["unsigned"] += 1
    for f in lies(wrong, "bad key"):
        n.send(f); sent["bad_signature"] += 1
    # A stale stream stays stale: its timestamps rise by one per frame only.
    for f in lies(stale, "stale"):
        n.send(f); sent["stale"] += 1
    for f in captured:
        n.send(f); sent["replay"] += 1
stop = True
print(json.dumps(sent), flush=True)
"#;

/// The Python relay, started: it and the port the vehicle is to send to.
fn py_forger(nexus_port: u16, key: &std::path::Path) -> (std::process::Child, u16) {
    use std::io::BufRead;
    let mut child = Command::new(python())
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .arg("-c")
        .arg(PY_FORGER)
        .arg(nexus_port.to_string())
        .arg(key)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("run python");
    let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    let port = line
        .trim()
        .parse()
        .unwrap_or_else(|_| panic!("no port: {line:?}"));
    child.stdout = Some(out.into_inner());
    (child, port)
}

#[test]
fn pymavlink_forgeries_are_rejected_counted_by_cause_and_shown_and_change_no_verdict() {
    let scratch = Scratch::new("sign-py-forged");
    let key_path = key_file(&scratch, "key.hex", 0x47);
    let report = scratch.path("report.json");
    let tlog = scratch.path("flight.tlog");
    let nexus_port = free_port();
    let (mut forger, vehicle_side) = py_forger(nexus_port, &key_path);
    let conn = format!("udpin:127.0.0.1:{nexus_port}");
    let fly = Command::new(cli_support::nexus_exe())
        .current_dir(root())
        .env_remove("NEXUS_PX4_BUILD")
        .args([
            "fly",
            "examples/box.plan",
            "--connect",
            &conn,
            "--signing-key",
        ])
        .arg(&key_path)
        .args(["--require-signed", "--tlog"])
        .arg(&tlog)
        .arg("--json")
        .arg(&report)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run nexus");
    std::thread::sleep(Duration::from_millis(300));
    let mut cfg = SimConfig::realtime(0, 5.0);
    cfg.local_port_base = free_port();
    cfg.remote_port_base = vehicle_side;
    cfg.vehicle.signing = Some(nexus_host::sim::signing::SigningConfig {
        key: Some(SigningKey::new([0x47; 32])),
        mode: nexus_host::sim::signing::SignMode::Always,
        ..Default::default()
    });
    let vehicle = SimHandle::start(cfg).expect("start the simulated vehicle");
    let out = fly.wait_with_output().expect("run nexus");
    drop(vehicle);
    drop(forger.stdin.take());
    let sent = forger.wait_with_output().expect("python relay");
    let sent = json(&sent.stdout);
    let printed =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    let r = json(&std::fs::read(&report).unwrap_or_else(|e| panic!("no report ({e}): {printed}")));
    no_forgery_applied(out.status.success(), &printed, &r);
    let s = &r["ignored"]["signing"];
    for cause in ["unsigned", "bad_signature", "replay", "stale"] {
        assert!(sent[cause].as_u64().unwrap() >= 3, "{sent}");
        assert!(
            s[cause].as_u64().unwrap() >= 1,
            "no {cause} counted: {s} (sent {sent})"
        );
    }
    assert_eq!(s["unsigned_accepted"], 0, "{s}");
    // The human output says it too, by cause.
    let line = printed
        .lines()
        .find(|l| l.contains("frames failing the signing check"))
        .unwrap_or_else(|| panic!("no rejected line in the output: {printed}"));
    for what in [
        "unsigned",
        "bad signature",
        "replayed or old timestamp",
        "stale timestamp",
    ] {
        assert!(line.contains(what), "{what} missing: {line}");
    }
    // No key anywhere: output, report, tlog name.
    let hex = "47".repeat(32);
    assert!(!printed.contains(&hex), "the key was printed");
    assert!(!std::fs::read_to_string(&report).unwrap().contains(&hex));
    for e in std::fs::read_dir(&scratch.0).unwrap() {
        let name = e.unwrap().file_name().to_string_lossy().into_owned();
        assert!(!name.contains(&hex), "{name}");
    }
}

// ---------------------------------------------------------------------------------------------
// nexus bridge --sign-side: the signed radio side behind an unsigned local side.

/// `nexus bridge args…`, its stderr kept (the counters it prints when it stops).
struct Bridge(std::process::Child);

impl Bridge {
    fn start(args: &[&str]) -> Bridge {
        let child = Command::new(cli_support::nexus_exe())
            .arg("bridge")
            .args(args)
            .args(["--stats-s", "0"])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("start nexus bridge");
        // Its links open before anyone speaks to them.
        std::thread::sleep(Duration::from_millis(500));
        Bridge(child)
    }

    /// Interrupt it (it prints its last counters and exits); what it printed.
    fn stop(mut self) -> String {
        let _ = Command::new("kill")
            .args(["-INT", &self.0.id().to_string()])
            .status();
        let out = std::mem::replace(
            &mut self.0,
            Command::new("true").spawn().expect("a placeholder"),
        )
        .wait_with_output()
        .expect("nexus bridge");
        String::from_utf8_lossy(&out.stderr).into_owned()
    }
}

impl Drop for Bridge {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The largest `… {what} N` count on the bridge's counter lines.
fn bridge_count(stderr: &str, what: &str) -> u64 {
    stderr
        .lines()
        .filter_map(|l| l.split(what).nth(1))
        .filter_map(|rest| {
            rest.trim_start()
                .split(|c: char| !c.is_ascii_digit())
                .next()
        })
        .filter_map(|n| n.parse().ok())
        .max()
        .unwrap_or(0)
}

#[test]
fn bridge_signs_for_an_unsigned_client_and_drops_forgeries_from_its_signed_side() {
    let scratch = Scratch::new("sign-bridge-flight");
    let key_path = key_file(&scratch, "key.hex", 0x52);
    let key = SigningKey::new([0x52; 32]);
    let report = scratch.path("report.json");
    let (local, radio) = (free_port(), free_port());
    let bridge = Bridge::start(&[
        &format!("udpin:127.0.0.1:{local}"),
        &format!("udpin:127.0.0.1:{radio}"),
        "--signing-key",
        key_path.to_str().unwrap(),
        "--sign-side",
        "B",
        "--require-signed",
    ]);
    // Forgeries on the radio side, from the vehicle's address.
    let all = Forge {
        unsigned: true,
        bad_signature: true,
        replay: true,
        stale: true,
    };
    let relay = Relay::start(radio, key.clone(), all);
    // The client has no key: it speaks unsigned to the bridge.
    let conn = format!("udpout:127.0.0.1:{local}");
    let fly = Command::new(cli_support::nexus_exe())
        .current_dir(root())
        .env_remove("NEXUS_PX4_BUILD")
        .args(["fly", "examples/box.plan", "--connect", &conn, "--json"])
        .arg(&report)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run nexus");
    let mut cfg = SimConfig::realtime(0, 5.0);
    cfg.local_port_base = free_port();
    cfg.remote_port_base = relay.vehicle_side_port;
    // PX4's "always": an unsigned command is refused, so the flight needs the bridge's
    // signatures.
    cfg.vehicle.signing = Some(nexus_host::sim::signing::SigningConfig {
        key: Some(key),
        mode: nexus_host::sim::signing::SignMode::Always,
        ..Default::default()
    });
    let vehicle = SimHandle::start(cfg).expect("start the simulated vehicle");
    let out = fly.wait_with_output().expect("run nexus");
    drop(vehicle);
    drop(relay);
    let counters = bridge.stop();
    let printed =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    let r = json(&std::fs::read(&report).unwrap_or_else(|e| panic!("no report ({e}): {printed}")));
    no_forgery_applied(out.status.success(), &printed, &r);
    assert!(
        bridge_count(&counters, "signed") >= 20,
        "the bridge signed nothing: {counters}"
    );
    assert!(
        bridge_count(&counters, "failed the signing check") >= 4,
        "no forgery dropped: {counters}"
    );
}

/// An unsigned pymavlink ground station on `udpout:127.0.0.1:PORT`: finds the autopilot, asks
/// for AUTOPILOT_VERSION (COMMAND_LONG 512) unsigned; prints the ack's result (null: none).
const UNSIGNED_GCS: &str = r#"
import os, sys, time, json
os.environ["MAVLINK20"] = "1"
from pymavlink import mavutil
m = mavutil.mavlink_connection('udpout:127.0.0.1:%d' % int(sys.argv[1]), source_system=255, source_component=190)
hb = None
for _ in range(40):
    m.mav.heartbeat_send(6, 8, 0, 0, 0)
    hb = m.recv_match(type='HEARTBEAT', blocking=True, timeout=0.5)
    if hb is not None and hb.get_srcComponent() == 1:
        break
out = {'heartbeat': hb is not None, 'ack': None}
t0 = time.time()
next_send = 0
while time.time() - t0 < 4 and out['ack'] is None:
    if time.time() >= next_send:
        m.mav.command_long_send(hb.get_srcSystem(), 1, 512, 0, 148, 0, 0, 0, 0, 0, 0)
        next_send = time.time() + 1
    a = m.recv_match(type='COMMAND_ACK', blocking=True, timeout=0.2)
    if a is not None and a.command == 512:
        out['ack'] = a.result
print(json.dumps(out))
"#;

/// A vehicle in PX4's "always" mode behind `nexus bridge VEHICLE LOCAL` (the vehicle on the
/// first link: `--sign-side A`), `bridge_signing` its signing options; what an unsigned
/// pymavlink command through it got, and the bridge's counters.
fn unsigned_command_through_bridge(
    key: u8,
    bridge_signing: &[&str],
) -> (serde_json::Value, String) {
    let (vehicle_side, local) = (free_port(), free_port());
    let mut args = vec![
        format!("udpin:127.0.0.1:{vehicle_side}"),
        format!("udpin:127.0.0.1:{local}"),
    ];
    args.extend(bridge_signing.iter().map(|s| s.to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let bridge = Bridge::start(&args);
    let mut cfg = SimConfig::realtime(0, 1.0);
    cfg.local_port_base = free_port();
    cfg.remote_port_base = vehicle_side;
    cfg.vehicle.signing = Some(nexus_host::sim::signing::SigningConfig {
        key: Some(SigningKey::new([key; 32])),
        mode: nexus_host::sim::signing::SignMode::Always,
        ..Default::default()
    });
    let vehicle = SimHandle::start(cfg).expect("start the simulated vehicle");
    let out = Command::new(python())
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .arg("-c")
        .arg(UNSIGNED_GCS)
        .arg(local.to_string())
        .output()
        .expect("run python");
    drop(vehicle);
    let counters = bridge.stop();
    assert!(
        out.status.success(),
        "python failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    (json(&out.stdout), counters)
}

#[test]
fn bridge_sign_side_a_signs_an_unsigned_gcs_command_the_vehicle_otherwise_refuses() {
    let scratch = Scratch::new("sign-bridge-a");
    let key_path = key_file(&scratch, "key.hex", 0x1f);
    // Without a key on the bridge the vehicle ("always") refuses the unsigned command.
    let (v, _) = unsigned_command_through_bridge(0x1f, &[]);
    assert_eq!(v["heartbeat"], true, "{v}");
    assert_eq!(v["ack"], serde_json::Value::Null, "answered unsigned: {v}");
    // With it, the bridge signs the command on its way to side A and the vehicle accepts it.
    let (v, counters) = unsigned_command_through_bridge(
        0x1f,
        &[
            "--signing-key",
            key_path.to_str().unwrap(),
            "--sign-side",
            "A",
            "--require-signed",
        ],
    );
    assert_eq!(
        v["ack"], 0,
        "the signed command was not accepted: {v}\n{counters}"
    );
    assert!(bridge_count(&counters, "signed") >= 2, "{counters}");
    assert_eq!(
        bridge_count(&counters, "failed the signing check"),
        0,
        "the vehicle's own frames failed: {counters}"
    );
}

// ---------------------------------------------------------------------------------------------
// nexus watch on a signed link.

/// `nexus watch CONN --signing-key KEY --require-signed --duration S`: exit status and stdout.
fn watch_signed(conn: &str, key: &std::path::Path, seconds: &str) -> std::process::Child {
    Command::new(cli_support::nexus_exe())
        .current_dir(root())
        .args(["watch", conn, "--signing-key"])
        .arg(key)
        .args([
            "--require-signed",
            "--duration",
            seconds,
            "--interval",
            "0.5",
        ])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run nexus watch")
}

fn signed_vehicle(key: u8, remote_port: u16) -> SimHandle {
    let mut cfg = SimConfig::realtime(0, 1.0);
    cfg.local_port_base = free_port();
    cfg.remote_port_base = remote_port;
    cfg.vehicle.signing = Some(nexus_host::sim::signing::SigningConfig {
        key: Some(SigningKey::new([key; 32])),
        mode: nexus_host::sim::signing::SignMode::Always,
        ..Default::default()
    });
    SimHandle::start(cfg).expect("start the simulated vehicle")
}

#[test]
fn watch_require_signed_counts_and_shows_every_kind_of_rejected_frame() {
    let scratch = Scratch::new("sign-watch-forged");
    let key_path = key_file(&scratch, "key.hex", 0x6b);
    let nexus_port = free_port();
    let all = Forge {
        unsigned: true,
        bad_signature: true,
        replay: true,
        stale: true,
    };
    let relay = Relay::start(nexus_port, SigningKey::new([0x6b; 32]), all);
    let watch = watch_signed(&format!("udpin:127.0.0.1:{nexus_port}"), &key_path, "8");
    let vehicle = signed_vehicle(0x6b, relay.vehicle_side_port);
    let out = watch.wait_with_output().expect("nexus watch");
    drop(vehicle);
    drop(relay);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("nexus watch: system 1"), "{stdout}");
    assert!(stdout.contains("armed=no"), "no status line: {stdout}");
    assert!(
        !stdout.contains("forged"),
        "a forged text was shown: {stdout}"
    );
    assert!(
        !stdout.contains("mode=Manual"),
        "a forged mode was shown: {stdout}"
    );
    let summary = stdout
        .lines()
        .find(|l| l.starts_with("signing: "))
        .unwrap_or_else(|| panic!("no signing summary: {stdout}"));
    assert!(summary.contains(", 0 unsigned applied,"), "{summary}");
    let last = stdout
        .lines()
        .rfind(|l| l.starts_with("ignored ") && l.contains("failing the signing check"))
        .unwrap_or_else(|| panic!("no rejected line: {stdout}"));
    for what in [
        "unsigned",
        "bad signature",
        "replayed or old timestamp",
        "stale timestamp",
    ] {
        assert!(last.contains(what), "{what} missing: {last}");
    }
    assert!(!stdout.contains(&"6b".repeat(32)), "the key was printed");
}

#[test]
fn watch_on_a_signed_link_latches_the_vehicle_not_a_forger_who_speaks_first() {
    let scratch = Scratch::new("sign-watch-latch");
    let key_path = key_file(&scratch, "key.hex", 0x33);
    let nexus_port = free_port();
    let watch = watch_signed(&format!("udpin:127.0.0.1:{nexus_port}"), &key_path, "9");
    // A forger on another port claims the vehicle's system id, unsigned and with a wrong key,
    // from before the vehicle is up.
    let stop = Arc::new(AtomicBool::new(false));
    let forger = UdpSocket::bind("127.0.0.1:0").unwrap();
    let forger_addr = forger.local_addr().unwrap();
    let t = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut enc = Encoder::new(1, 1);
            let mut bad = Signer::new(
                SigningKey::new([0xEE; 32]),
                0,
                SigningClock::from_unix_micros(unix_micros()),
            );
            let t0 = std::time::Instant::now();
            while !stop.load(Ordering::SeqCst) {
                let now = nexus_core::Instant::from_micros(t0.elapsed().as_micros() as u64);
                let mut out = forgeries(&mut enc, "unsigned");
                out.extend(sign_all(forgeries(&mut enc, "bad key"), &mut bad, now));
                for f in out {
                    let _ = forger.send_to(&f, ("127.0.0.1", nexus_port));
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        })
    };
    std::thread::sleep(Duration::from_millis(1500));
    let vehicle = signed_vehicle(0x33, nexus_port);
    let out = watch.wait_with_output().expect("nexus watch");
    stop.store(true, Ordering::SeqCst);
    let _ = t.join();
    drop(vehicle);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "the vehicle was not watched: {stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("armed=no"), "no status line: {stdout}");
    assert!(!stdout.contains("forged"), "{stdout}");
    assert!(!stdout.contains("mode=Manual"), "{stdout}");
    // The forger is not the vehicle: ignored as another source once the vehicle is latched.
    assert!(
        stdout.contains(&format!("ignoring UDP from {forger_addr}")),
        "{stdout}"
    );
    // What it sent while the vehicle was being looked for failed the check, counted.
    let last = stdout
        .lines()
        .rfind(|l| l.starts_with("ignored ") && l.contains("failing the signing check"))
        .unwrap_or_else(|| panic!("no rejected line: {stdout}"));
    assert!(
        last.contains("unsigned") && last.contains("bad signature"),
        "{last}"
    );
}

// ---------------------------------------------------------------------------------------------
// nexus serve: the same options, applied to every session it opens.

#[test]
fn serve_with_require_signed_opens_sessions_on_signed_links() {
    use std::io::{BufRead, BufReader, Write};
    let scratch = Scratch::new("sign-serve");
    let key_path = key_file(&scratch, "key.hex", 0x29);
    let instance = 162;
    let mut server = Command::new(cli_support::nexus_exe())
        .args(["serve", "--root"])
        .arg(&scratch.0)
        .arg("--signing-key")
        .arg(&key_path)
        .arg("--require-signed")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start nexus serve");
    let mut input = server.stdin.take().unwrap();
    let mut out = BufReader::new(server.stdout.take().unwrap());
    let mut call = |id: u32, body: String| -> serde_json::Value {
        writeln!(input, "{body}").unwrap();
        input.flush().unwrap();
        let mut line = String::new();
        loop {
            line.clear();
            assert!(out.read_line(&mut line).unwrap() > 0, "nexus serve ended");
            let v = json(line.as_bytes());
            if v["id"] == id {
                return v;
            }
        }
    };
    call(1, r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"cli_signing","version":"1"}}}"#.into());
    let tool = |id: u32, name: &str, args: String| {
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{name}","arguments":{args}}}}}"#
        )
    };
    let text = |v: &serde_json::Value| -> serde_json::Value {
        assert_ne!(v["result"]["isError"], true, "{v}");
        json(
            v["result"]["content"][0]["text"]
                .as_str()
                .expect("text")
                .as_bytes(),
        )
    };
    // With --require-signed, the session connects only if the vehicle signs with the key.
    // (The client's "initialized" notification first, on a line of its own.)
    let started = text(&call(
        2,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_string()
            + "\n"
            + &tool(
                2,
                "start_session",
                format!(r#"{{"instance":{instance},"speed":5}}"#),
            ),
    ));
    let session = started["session"].as_u64().expect("a session id");
    // A parameter read is answered only if the vehicle (PX4's "always") took our signed
    // request.
    let got = text(&call(
        3,
        tool(
            3,
            "param_get",
            format!(r#"{{"session":{session},"name":"NAV_DLL_ACT","timeout_s":10}}"#),
        ),
    ));
    assert_eq!(got["name"], "NAV_DLL_ACT", "{got}");
    drop(input);
    let status = server.wait().expect("nexus serve");
    assert!(status.success(), "{status:?}");
    let mut err = String::new();
    std::io::Read::read_to_string(server.stderr.as_mut().unwrap(), &mut err).unwrap();
    assert!(
        !err.contains(&"29".repeat(32)),
        "the key was printed: {err}"
    );
}

#[test]
fn serve_refuses_a_key_file_it_cannot_read_before_it_serves() {
    let scratch = Scratch::new("sign-serve-bad");
    let out = nexus(&[
        "serve",
        "--signing-key",
        scratch.path("missing.key").to_str().unwrap(),
    ])
    .output()
    .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--signing-key") && err.contains("missing.key"),
        "{err}"
    );
}

// ---------------------------------------------------------------------------------------------
// Keys never show.

#[test]
fn no_error_message_quotes_a_key_file() {
    let scratch = Scratch::new("sign-key-errors");
    // 31 bytes that are not text: not a key in any form. The error names the file, never
    // the bytes.
    let bad = scratch.path("bad.key");
    std::fs::write(&bad, &[0xC3u8, 0x28, 0xA0, 0xA1].repeat(8)[..31]).unwrap();
    let out = nexus(&[
        "fly",
        "examples/box.plan",
        "--signing-key",
        bad.to_str().unwrap(),
    ])
    .output()
    .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err =
        String::from_utf8_lossy(&out.stderr).into_owned() + &String::from_utf8_lossy(&out.stdout);
    assert!(err.contains("bad.key"), "{err}");
    assert!(!err.to_lowercase().contains("c328a0a1"), "{err}");
    assert!(
        !err.contains('\u{FFFD}'),
        "bytes of the key file were printed: {err}"
    );
    // A passphrase: no vehicle answers, and the words never show.
    let pass = scratch.file("pass.txt", "correct horse battery staple\n");
    let out = nexus(&[
        "sign",
        "setup",
        &format!("udpout:127.0.0.1:{}", free_port()),
        "--signing-key",
        pass.to_str().unwrap(),
        "--timeout",
        "1",
    ])
    .output()
    .unwrap();
    assert!(!out.status.success());
    let all =
        String::from_utf8_lossy(&out.stderr).into_owned() + &String::from_utf8_lossy(&out.stdout);
    assert!(all.contains("no autopilot heartbeat"), "{all}");
    assert!(!all.contains("horse"), "the passphrase was printed: {all}");
}
