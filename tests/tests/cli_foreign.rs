//! The verdict is a security boundary: during a `nexus fly` of the box mission, frames that
//! claim the vehicle's system id but come from another address (another port, 127.0.0.2, the
//! vehicle's port on 127.0.0.2) are counted and reported, never applied. Real UDP, the
//! simulated vehicle.
//!
//! SITL instances used here: 216–223.

mod cli_support;

use cli_support::{json, nexus_exe, reasons, root, Scratch, SPEED};
use nexus_core::frame::Encoder;
use nexus_core::mav;
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::net::{SocketAddr, UdpSocket};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// The text an impostor sends; it must never be shown as the vehicle's.
const SPOOFED_TEXT: &str = "spoofed: mission accomplished";

fn encode<M: mavlink::MessageData>(sysid: u8, msg: &M) -> Vec<u8> {
    let mut buf = [0u8; 300];
    let n = Encoder::new(sysid, 1).encode(msg, &mut buf).unwrap();
    buf[..n].to_vec()
}

/// Four datagrams that would forge a PASS if the link did not latch the vehicle: the mission at its
/// last item and reached, the vehicle on the ground, a disarmed autopilot heartbeat.
fn forged(sysid: u8) -> Vec<Vec<u8>> {
    vec![
        encode(
            sysid,
            &mav::MISSION_CURRENT_DATA {
                seq: 5,
                total: 6,
                mission_state: mav::MissionState::MISSION_STATE_COMPLETE,
                ..Default::default()
            },
        ),
        encode(sysid, &mav::MISSION_ITEM_REACHED_DATA { seq: 4 }),
        encode(
            sysid,
            &mav::EXTENDED_SYS_STATE_DATA {
                vtol_state: mav::MavVtolState::MAV_VTOL_STATE_UNDEFINED,
                landed_state: mav::MavLandedState::MAV_LANDED_STATE_ON_GROUND,
            },
        ),
        encode(
            sysid,
            &nexus_core::offboard::wire::heartbeat(
                mav::MavType::MAV_TYPE_QUADROTOR,
                mav::MavAutopilot::MAV_AUTOPILOT_PX4,
                mav::MavModeFlag::MAV_MODE_FLAG_CUSTOM_MODE_ENABLED,
                0,
                mav::MavState::MAV_STATE_STANDBY,
            ),
        ),
    ]
}

fn spoofed_text(sysid: u8) -> Vec<u8> {
    let mut field = [0u8; 50];
    field[..SPOOFED_TEXT.len()].copy_from_slice(SPOOFED_TEXT.as_bytes());
    encode(
        sysid,
        &mav::STATUSTEXT_DATA {
            severity: mav::MavSeverity::MAV_SEVERITY_INFO,
            text: field.into(),
            id: 0,
            chunk_seq: 0,
        },
    )
}

/// A `nexus fly` of the box mission on `instance`, with the JSON report; stdout lines arrive
/// on the channel as they are printed.
struct Fly {
    child: std::process::Child,
    lines: mpsc::Receiver<String>,
    seen: Vec<String>,
    report: std::path::PathBuf,
    _scratch: Scratch,
}

impl Fly {
    fn start(name: &str, instance: u8) -> Fly {
        Fly::start_with(name, instance, &[])
    }

    fn start_with(name: &str, instance: u8, extra: &[&str]) -> Fly {
        let scratch = Scratch::new(name);
        let report = scratch.path("report.json");
        let mut child = Command::new(nexus_exe())
            .current_dir(root())
            .env_remove("NEXUS_PX4_BUILD")
            .args(["fly", "examples/box.plan", "--speed", SPEED, "--instance"])
            .arg(instance.to_string())
            .arg("--json")
            .arg(&report)
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("run nexus fly");
        let out = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for l in BufReader::new(out).lines().map_while(Result::ok) {
                if tx.send(l).is_err() {
                    break;
                }
            }
        });
        Fly {
            child,
            lines,
            seen: Vec::new(),
            report,
            _scratch: scratch,
        }
    }

    /// Read lines until one contains `what` (the flight is then at that point).
    fn until_line(&mut self, what: &str) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline {
            match self.lines.recv_timeout(Duration::from_millis(200)) {
                Ok(l) => {
                    let hit = l.contains(what);
                    self.seen.push(l);
                    if hit {
                        return;
                    }
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            }
        }
        panic!("no line with {what:?}:\n{}", self.seen.join("\n"));
    }

    /// Wait for the end: the exit code, every line, the report.
    fn finish(mut self) -> (i32, String, Value) {
        let deadline = Instant::now() + Duration::from_secs(120);
        let code = loop {
            if let Some(st) = self.child.try_wait().unwrap() {
                break st.code().unwrap_or(-1);
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!("nexus fly hung:\n{}", self.seen.join("\n"));
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        while let Ok(l) = self.lines.recv_timeout(Duration::from_secs(2)) {
            self.seen.push(l);
        }
        let stdout = self.seen.join("\n");
        let r = json(&std::fs::read(&self.report).expect("the report file"));
        (code, stdout, r)
    }
}

fn ports(instance: u8) -> (SocketAddr, u16) {
    let ours = SocketAddr::from(([127, 0, 0, 1], 14540 + u16::from(instance)));
    (ours, 14580 + u16::from(instance))
}

/// What an honest flight of the box looks like in its report (as in cli_fly): every step
/// met, PX4 through all six items in order on its own clock, landed and disarmed after the
/// usual ~48 s of sim time.
fn assert_flown_honestly(r: &Value, stdout: &str) {
    assert_eq!(r["passed"], true, "{stdout}");
    assert_eq!(reasons(r), ["met", "met", "met", "met"], "{stdout}");
    let progress: Vec<(u64, f64)> = r["mission"]["progress"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["item"].as_u64().unwrap(), p["t_sim_s"].as_f64().unwrap()))
        .collect();
    let items: Vec<u64> = progress.iter().map(|p| p.0).collect();
    assert_eq!(items, [0, 1, 2, 3, 4, 5], "{stdout}");
    assert!(
        progress.windows(2).all(|w| w[1].1 > w[0].1 + 1.0),
        "{progress:?}"
    );
    let t = r["final"]["t_sim_s"].as_f64().unwrap();
    assert!(
        t > 40.0,
        "the flight ended after {t} s sim: too soon to be real"
    );
    // The mission step ends at the LAND's touchdown, PX4's own report, after the whole box;
    // the landed step settles on the vehicle's ON_GROUND then, not on a forged one mid-flight.
    assert!(
        r["steps"][1]["waited_sim_s"].as_f64().unwrap() > 25.0,
        "{}",
        r["steps"][1]
    );
    assert!(
        r["steps"][2]["snapshot"]["t_sim_s"].as_f64().unwrap() > 40.0,
        "{}",
        r["steps"][2]
    );
    assert_eq!(r["final"]["armed"], false);
}

fn texts(r: &Value) -> Vec<String> {
    r["texts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["text"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn forged_frames_from_other_addresses_leave_the_verdict_alone_and_are_reported() {
    let instance = 216;
    let (to, vehicle_port) = ports(instance);
    let sysid = instance + 1;
    let other_port = UdpSocket::bind("127.0.0.1:0").unwrap();
    let other_host = UdpSocket::bind("127.0.0.2:0").unwrap();
    // The vehicle's own port number, on another address.
    let vehicle_port_elsewhere = UdpSocket::bind(("127.0.0.2", vehicle_port)).unwrap();

    let mut fly = Fly::start("foreign-four", instance);
    // In the air, flying the box.
    fly.until_line("item 3/6");
    for s in [&other_port, &other_host, &vehicle_port_elsewhere] {
        for d in forged(sysid) {
            s.send_to(&d, to).unwrap();
        }
    }
    vehicle_port_elsewhere
        .send_to(&spoofed_text(sysid), to)
        .unwrap();
    let (code, stdout, r) = fly.finish();

    assert_eq!(code, 0, "{stdout}");
    assert!(
        stdout.contains("PASS: mission complete: 6 items flown"),
        "{stdout}"
    );
    assert_flown_honestly(&r, &stdout);
    let a = other_port.local_addr().unwrap();
    let b = other_host.local_addr().unwrap();
    let c = vehicle_port_elsewhere.local_addr().unwrap();
    // On the terminal: when it first happens, and in the summary.
    for addr in [a, b, c] {
        assert!(
            stdout.contains(&format!("ignoring UDP from {addr}: not the vehicle")),
            "{addr}:\n{stdout}"
        );
    }
    for want in [
        format!("ignored 4 frames from {a} claiming system {sysid}"),
        format!("ignored 4 frames from {b} claiming system {sysid}"),
        format!("ignored 5 frames from {c} claiming system {sysid}"),
    ] {
        assert!(stdout.contains(&want), "{want}:\n{stdout}");
    }
    // The spoofed text is nowhere as the vehicle's.
    assert!(!stdout.contains(SPOOFED_TEXT), "{stdout}");
    assert!(!texts(&r).iter().any(|t| t.contains(SPOOFED_TEXT)));
    // In the JSON, with the source.
    let ig = &r["ignored"];
    assert_eq!(ig["frames"], 13, "{ig}");
    assert_eq!(ig["datagrams"], 13, "{ig}");
    let sources = ig["sources"].as_array().unwrap();
    let from: Vec<&str> = sources
        .iter()
        .map(|s| s["from"].as_str().unwrap())
        .collect();
    assert_eq!(from, [a.to_string(), b.to_string(), c.to_string()], "{ig}");
    for s in sources {
        assert_eq!(s["systems"], serde_json::json!([sysid]), "{s}");
    }
    assert_eq!(ig["lines"].as_array().unwrap().len(), 3, "{ig}");
}

#[test]
fn twenty_thousand_foreign_datagrams_are_counted_in_bounded_memory_and_change_nothing() {
    let instance = 217;
    let (to, _) = ports(instance);
    let sysid = instance + 1;
    // 40 senders (past the first FOREIGN_SOURCES, which are kept in detail), on two addresses.
    let senders: Vec<UdpSocket> = (0..40)
        .map(|i| {
            let host = if i % 2 == 0 { "127.0.0.1" } else { "127.0.0.2" };
            UdpSocket::bind((host, 0)).unwrap()
        })
        .collect();
    let mut payloads = forged(sysid);
    payloads.push(spoofed_text(sysid));

    let mut fly = Fly::start("foreign-flood", instance);
    fly.until_line("item 2/6");
    const TOTAL: usize = 20_000;
    let t0 = Instant::now();
    for i in 0..TOTAL {
        let s = &senders[i % senders.len()];
        s.send_to(&payloads[i % payloads.len()], to).unwrap();
        // Spread over ~0.4 s of the mission, as a flood during the flight.
        if i % 500 == 499 {
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    let sent_in = t0.elapsed();
    let (code, stdout, r) = fly.finish();

    assert_eq!(code, 0, "{stdout}");
    assert_flown_honestly(&r, &stdout);
    assert!(!stdout.contains(SPOOFED_TEXT), "{stdout}");
    assert!(!texts(&r).iter().any(|t| t.contains(SPOOFED_TEXT)));
    let ig = &r["ignored"];
    let datagrams = ig["datagrams"].as_u64().unwrap();
    // Loopback may drop some under load when the receive buffer fills; every one that
    // arrived is counted, none applied.
    assert!(
        datagrams > TOTAL as u64 / 2 && datagrams <= TOTAL as u64,
        "{datagrams} of {TOTAL} counted (sent in {sent_in:?})"
    );
    let sources = ig["sources"].as_array().unwrap();
    assert_eq!(
        sources.len(),
        nexus_host::transport::FOREIGN_SOURCES,
        "only the first sources are kept in detail"
    );
    let others = ig["others"]["datagrams"].as_u64().unwrap();
    assert!(others > 0, "{ig}");
    assert_eq!(ig["others"]["systems"], serde_json::json!([sysid]));
    assert!(
        stdout.contains("from further sources (only the first 8 are listed)"),
        "{stdout}"
    );
    eprintln!(
        "flood: {datagrams} of {TOTAL} foreign datagrams counted ({others} past the first \
         sources), sent in {sent_in:?}, flight wall {:.1} s",
        r["wall_s"].as_f64().unwrap()
    );
}

#[test]
fn watch_latches_the_vehicle_and_never_shows_an_impostors_texts() {
    use nexus_host::sim::{SimConfig, SimHandle};
    let instance = 219u8;
    let sysid = instance + 1;
    let (to, _) = ports(instance);
    let mut child = Command::new(nexus_exe())
        .current_dir(root())
        .args(["watch", &format!("udpin:{to}"), "--count", "6"])
        .args(["--interval", "0.5", "--duration", "60"])
        .stdout(Stdio::piped())
        .spawn()
        .expect("run nexus watch");
    let out = child.stdout.take().unwrap();
    let (tx, lines) = mpsc::channel();
    std::thread::spawn(move || {
        for l in BufReader::new(out).lines().map_while(Result::ok) {
            if tx.send(l).is_err() {
                break;
            }
        }
    });
    let mut seen = Vec::new();
    let until = |what: &str, seen: &mut Vec<String>| {
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if let Ok(l) = lines.recv_timeout(Duration::from_millis(100)) {
                let hit = l.contains(what);
                seen.push(l);
                if hit {
                    return;
                }
            }
        }
        panic!("no line with {what:?}:\n{}", seen.join("\n"));
    };
    until("listening on", &mut seen);
    // Before the vehicle: a text claiming its system id (no autopilot heartbeat: no latch).
    let early = UdpSocket::bind("127.0.0.1:0").unwrap();
    early.send_to(&spoofed_text(sysid), to).unwrap();
    // The latch of a listening watch is the subject: the vehicle sends to 14540+N before
    // anyone speaks (PX4 does so up to instance 9).
    let mut cfg = SimConfig::realtime(instance, 1.0);
    cfg.offboard_port_per_instance = true;
    let sim = SimHandle::start(cfg).expect("start the vehicle");
    until(&format!("nexus watch: system {sysid}"), &mut seen);
    // After: an impostor on 127.0.0.2 repeats the forgery and an armed heartbeat.
    let impostor = UdpSocket::bind("127.0.0.2:0").unwrap();
    let armed = encode(
        sysid,
        &nexus_core::offboard::wire::heartbeat(
            mav::MavType::MAV_TYPE_QUADROTOR,
            mav::MavAutopilot::MAV_AUTOPILOT_PX4,
            mav::MavModeFlag::MAV_MODE_FLAG_SAFETY_ARMED,
            0,
            mav::MavState::MAV_STATE_ACTIVE,
        ),
    );
    for _ in 0..5 {
        impostor.send_to(&spoofed_text(sysid), to).unwrap();
        impostor.send_to(&armed, to).unwrap();
        std::thread::sleep(Duration::from_millis(100));
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        assert!(
            Instant::now() < deadline,
            "watch hung:\n{}",
            seen.join("\n")
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    while let Ok(l) = lines.recv_timeout(Duration::from_secs(2)) {
        seen.push(l);
    }
    drop(sim);
    let stdout = seen.join("\n");
    assert!(status.success(), "{stdout}");
    assert!(!stdout.contains(SPOOFED_TEXT), "{stdout}");
    assert!(!stdout.contains("armed=yes"), "{stdout}");
    assert!(stdout.contains("mode="), "{stdout}");
    let (e, i) = (early.local_addr().unwrap(), impostor.local_addr().unwrap());
    for addr in [e, i] {
        assert!(
            stdout.contains(&format!("ignoring UDP from {addr}: not the vehicle")),
            "{addr}:\n{stdout}"
        );
    }
    assert!(
        stdout.contains(&format!("ignored 1 frame from {e} claiming system {sysid}")),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!(
            "ignored 10 frames from {i} claiming system {sysid}"
        )),
        "{stdout}"
    );
}

/// `--listen ::` opens a dual-stack socket, which sees the vehicle as a v4-mapped address: it
/// is still the only source that counts, and an impostor is still named.
#[test]
fn listening_on_every_address_still_takes_only_the_vehicle() {
    let instance = 220;
    let (to, _) = ports(instance);
    let sysid = instance + 1;
    let impostor = UdpSocket::bind("127.0.0.2:0").unwrap();
    let mut fly = Fly::start_with("foreign-listen", instance, &["--listen", "::"]);
    fly.until_line("item 3/6");
    for d in forged(sysid) {
        impostor.send_to(&d, to).unwrap();
    }
    let (code, stdout, r) = fly.finish();
    assert_eq!(code, 0, "{stdout}");
    assert_flown_honestly(&r, &stdout);
    let port = impostor.local_addr().unwrap().port();
    let want = format!("ignored 4 frames from [::ffff:127.0.0.2]:{port} claiming system {sysid}");
    assert!(stdout.contains(&want), "{want}:\n{stdout}");
}
