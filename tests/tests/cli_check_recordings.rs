//! `nexus check` on damaged and oversized recordings: a record whose checksum fails is skipped
//! whole — never searched for the frames its bytes hold, which would be replayed at its time
//! (an "autopilot rebooted" out of nowhere) — and garbage between records is stepped over, so a
//! passing flight still passes, with what was skipped counted on the `recording:` line and in
//! the report; more than the inputs' total limit, or more files than one check reads, is
//! refused (exit 2) before anything is replayed.
//!
//! The flight is the real-PX4 trace of `fixtures/px4-traces/` (its take-off and hover pass):
//! no vehicle, no ports.

mod cli_support;

use cli_support::{json, nexus, repo, Scratch};
use nexus_core::frame::Encoder;
use nexus_core::mav;
use nexus_host::tlog::TlogFrame;
use std::path::{Path, PathBuf};

/// The trace's take-off and hover (what the live PX4 run of the whole program met, and check
/// meets too).
const TAKEOFF_HOVER: &str = r#"
[[step]]
name = "take off"
action = "takeoff"
alt_m = 5
until = { altitude = 4.5, op = ">=", hold_s = 2 }
timeout_s = 60

[[step]]
name = "hover"
until = { time = 10, guards = [{ altitude = 3, op = "<=" }] }
timeout_s = 20
"#;

/// The trace's two links: the offboard link (PX4's clock, heartbeats, position) and the GCS
/// link (ground truth).
fn trace() -> (PathBuf, PathBuf) {
    let dir = repo("fixtures/px4-traces");
    (
        dir.join("takeoff-hover-land-x4.px4-to-nexus.tlog"),
        dir.join("takeoff-hover-land-x4.px4-to-gcs.tlog"),
    )
}

/// A checked MAVLink 2 frame of `msg` from the trace's vehicle (system 6).
fn encode<M: mavlink::MessageData>(msg: &M) -> Vec<u8> {
    let mut buf = [0u8; nexus_core::frame::MAX_FRAME_LEN];
    let n = Encoder::new(6, 1).encode(msg, &mut buf).unwrap();
    buf[..n].to_vec()
}

/// What must never be replayed: the vehicle's clock back at 1 s (a reboot), and a disarmed
/// heartbeat in Land.
fn forged(k: u64) -> Vec<u8> {
    if k % 2 == 0 {
        encode(&mav::SYSTEM_TIME_DATA {
            time_unix_usec: 0,
            time_boot_ms: 1000,
        })
    } else {
        encode(&nexus_core::offboard::wire::heartbeat(
            mav::MavType::MAV_TYPE_QUADROTOR,
            mav::MavAutopilot::MAV_AUTOPILOT_PX4,
            mav::MavModeFlag::MAV_MODE_FLAG_CUSTOM_MODE_ENABLED,
            nexus_core::Mode::Land.custom_mode(),
            mav::MavState::MAV_STATE_STANDBY,
        ))
    }
}

fn record(ts: u64, frame: &[u8]) -> Vec<u8> {
    let mut r = ts.to_be_bytes().to_vec();
    r.extend_from_slice(frame);
    r
}

/// A record at `ts` whose frame (a STATUSTEXT-sized MAVLink 2 header) fails its checksum, its
/// payload a whole record of a checked frame: a forged frame stamped a little later.
fn damaged(ts: u64, inner: &[u8]) -> Vec<u8> {
    let payload = record(ts + 1, inner);
    let mut f = vec![0xFD, payload.len() as u8, 0, 0, 7, 6, 1, 253, 0, 0];
    f.extend_from_slice(&payload);
    f.extend([0xBA, 0xD0]);
    record(ts, &f)
}

/// xorshift64: the same damage for the same seed.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// `src`'s records written to `dst` with a damaged record (holding a forged frame) after every
/// 100th, and garbage (1–40 bytes, a quarter of them start bytes) after 5 % of them, drawn from
/// `seed`; how many damaged records and garbage bytes went in.
fn damage(src: &Path, dst: &Path, seed: u64) -> (u64, u64) {
    let records: Vec<TlogFrame> = nexus_host::tlog::parse(&std::fs::read(src).unwrap());
    let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let (mut out, mut damaged_n, mut garbage) = (Vec::new(), 0, 0);
    for (k, r) in records.iter().enumerate() {
        out.extend(record(r.epoch_us, &r.bytes));
        if k % 100 == 99 {
            out.extend(damaged(r.epoch_us, &forged(k as u64 / 100)));
            damaged_n += 1;
        }
        if rng.next() % 100 < 5 {
            let n = rng.next() % 40 + 1;
            for _ in 0..n {
                let b = rng.next() as u8;
                out.push(if b % 4 == 0 { 0xFD } else { b });
            }
            garbage += n;
        }
    }
    std::fs::write(dst, out).unwrap();
    (damaged_n, garbage)
}

#[test]
fn a_damaged_recording_still_passes_and_says_what_was_skipped() {
    let work = Scratch::new("check-damaged");
    let program = work.file("takeoff-hover.toml", TAKEOFF_HOVER);
    let (offboard, gcs) = trace();
    // Undamaged, it passes: nothing skipped.
    let out = nexus(&[
        "check",
        program.to_str().unwrap(),
        "--tlog",
        offboard.to_str().unwrap(),
        "--tlog",
        gcs.to_str().unwrap(),
        "--json",
    ])
    .output()
    .expect("run nexus check");
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let clean = json(&out.stdout);
    assert_eq!(
        clean["recording"]["damaged_records"], 0,
        "{}",
        clean["recording"]
    );
    assert_eq!(
        clean["recording"]["garbage_bytes"], 0,
        "{}",
        clean["recording"]
    );
    for seed in 1..=4u64 {
        let a = work.path(&format!("offboard-{seed}.tlog"));
        let b = work.path(&format!("gcs-{seed}.tlog"));
        let (da, ga) = damage(&offboard, &a, seed);
        let (db, gb) = damage(&gcs, &b, seed + 100);
        let out = nexus(&[
            "check",
            program.to_str().unwrap(),
            "--tlog",
            a.to_str().unwrap(),
            "--tlog",
            b.to_str().unwrap(),
            "--json",
        ])
        .output()
        .expect("run nexus check");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "seed {seed}:\n{stderr}");
        let r = json(&out.stdout);
        assert_eq!(r["passed"], true, "seed {seed}: {}", r["verdict"]);
        // The same steps, met at the same moments as on the clean recording.
        for i in 0..2 {
            assert_eq!(
                r["steps"][i]["snapshot"]["t_sim_s"], clean["steps"][i]["snapshot"]["t_sim_s"],
                "seed {seed}, step {i}"
            );
        }
        let rec = &r["recording"];
        assert_eq!(
            rec["records"], clean["recording"]["records"],
            "seed {seed}: {rec}"
        );
        assert_eq!(rec["damaged_records"], da + db, "seed {seed}: {rec}");
        assert_eq!(rec["garbage_bytes"], ga + gb, "seed {seed}: {rec}");
        assert_eq!(rec["files"][0]["damaged_records"], da, "seed {seed}: {rec}");
        assert_eq!(rec["files"][1]["garbage_bytes"], gb, "seed {seed}: {rec}");
        // Said on the terminal too (stderr: the JSON has stdout).
        let line = format!(
            "skipped {} damaged records whole (checksum failed: never searched for frames) and \
             {} bytes that began no record",
            da + db,
            ga + gb
        );
        assert!(stderr.contains(&line), "seed {seed}:\n{stderr}");
    }
}

#[test]
fn more_recording_than_one_check_reads_is_refused_before_anything_is_replayed() {
    let work = Scratch::new("check-too-much");
    let program = work.file("takeoff-hover.toml", TAKEOFF_HOVER);
    let (offboard, _) = trace();
    // Three files of 100 MiB each (sparse: nothing is written): 300 MiB together, past the
    // 256 MiB the inputs of one check may hold, though each file alone is within its own bound.
    let mut args: Vec<String> = vec!["check".into(), program.to_str().unwrap().into()];
    for k in 0..3 {
        let p = work.path(&format!("big-{k}.tlog"));
        std::fs::File::create(&p)
            .unwrap()
            .set_len(100 << 20)
            .unwrap();
        args.extend(["--tlog".into(), p.to_str().unwrap().into()]);
    }
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = nexus(&refs).output().expect("run nexus check");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(
            "the --tlog files hold more than 268435456 bytes together (256 MiB, the limit of \
             one check)"
        ),
        "{stderr}"
    );
    assert!(stderr.contains("big-2.tlog"), "{stderr}");
    // Refused from the sizes (the message is the size check's), before anything was replayed.
    assert!(out.stdout.is_empty(), "nothing was replayed: {out:?}");
    // More files than one check reads, however small.
    let mut args: Vec<String> = vec!["check".into(), program.to_str().unwrap().into()];
    for _ in 0..17 {
        args.extend(["--tlog".into(), offboard.to_str().unwrap().into()]);
    }
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = nexus(&refs).output().expect("run nexus check");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("17 --tlog files: at most 16 are read"),
        "{stderr}"
    );
}
