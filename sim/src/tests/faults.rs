//! Injected faults, each visible the way the real failure would be.

use super::*;
use crate::{ExitStatus, Fault};

#[test]
fn stalled_clock_freezes_time_boot_ms_but_heartbeats_continue() {
    let mut g = Gcs::booted();
    g.v.inject(Fault::StallClock);
    g.run(300);
    let t = g.last_time_boot_ms.unwrap();
    let hb = g.counts[&0];
    g.arm();
    g.run(3_000);
    assert_eq!(g.last_time_boot_ms.unwrap(), t, "clock frozen");
    assert!(g.counts[&0] >= hb + 2, "heartbeats keep flowing");
    assert!(
        !g.log
            .iter()
            .any(|(_, e)| matches!(e, Ev::Ack { cmd: 400, .. })),
        "commander frozen: no ack"
    );
    assert!(g.v.snapshot().stalled);
    g.v.clear_faults();
    g.run(1_500);
    assert!(g.last_time_boot_ms.unwrap() > t);
    assert!(
        g.log.iter().any(|(_, e)| matches!(
            e,
            Ev::Ack {
                cmd: 400,
                result: 0
            }
        )),
        "queued command ran"
    );
}

#[test]
fn silence_sends_nothing_but_the_vehicle_runs() {
    let mut g = Gcs::booted();
    g.v.inject(Fault::Silence);
    g.drain();
    let n: u32 = g.counts.values().sum();
    let t = g.v.now_us();
    g.run(2_000);
    assert_eq!(g.counts.values().sum::<u32>(), n);
    assert!(g.v.now_us() > t);
}

#[test]
fn garbage_is_interleaved_and_frames_survive() {
    let mut g = Gcs::booted();
    g.v.inject(Fault::Garbage);
    let hb = g.counts[&0];
    let att = g.counts[&30];
    g.run(2_000);
    assert!(g.garbage_bytes > 300, "{} garbage bytes", g.garbage_bytes);
    assert!(g.counts[&0] >= hb + 2);
    assert!(g.counts[&30] >= att + 190);
}

#[test]
fn refused_arming_says_why() {
    let mut g = Gcs::booted();
    g.v.inject(Fault::RefuseArming {
        text: "Arming denied: hardware fault injected".into(),
    });
    g.run(1_200);
    assert_eq!(g.hb.as_ref().unwrap().system_status as u8, 0);
    assert!(g.prearm_since_ms.is_none());
    let from = g.log.len();
    g.arm();
    g.run(200);
    assert_subsequence(
        &g.events(from),
        &[
            Ev::Ack {
                cmd: 400,
                result: 1,
            },
            Ev::Text {
                sev: 2,
                text: "Arming denied: hardware fault injected".into(),
            },
        ],
    );
}

#[test]
fn exit_and_panic_stop_the_vehicle_with_a_status() {
    let mut g = Gcs::booted();
    g.v.inject(Fault::Exit { code: 3 });
    assert_eq!(g.v.exit_status(), Some(ExitStatus::Code(3)));
    let n: u32 = g.counts.values().sum();
    g.run(1_000);
    assert_eq!(g.counts.values().sum::<u32>(), n);
    assert!(g
        .v
        .take_console()
        .iter()
        .any(|l| l.contains("Exiting NOW.")));

    let mut g = Gcs::booted();
    g.v.inject(Fault::Panic {
        module: "commander".into(),
        message: "stack overflow".into(),
    });
    assert_eq!(g.v.exit_status(), Some(ExitStatus::Signal(6)));
    assert!(g
        .v
        .take_console()
        .iter()
        .any(|l| l == "PANIC [commander] stack overflow"));
}

#[test]
fn deterministic_under_the_same_inputs() {
    let run = || {
        let mut g = Gcs::airborne(5.0);
        g.run(3_000);
        (g.v.snapshot(), g.log.len(), g.counts.get(&33).copied())
    };
    assert_eq!(run(), run());
}

#[test]
fn a_fifty_character_text_is_one_unterminated_chunk() {
    let mut g = Gcs::booted();
    g.v.inject(Fault::RefuseArming {
        text: "Arming denied: sensors need calibration (injected)".into(),
    });
    g.run(200);
    let n = g.raw_texts.len();
    g.arm();
    g.run(200);
    // Exactly 50 characters: one chunk, no terminator (PX4 STATUSTEXT.hpp).
    assert_eq!(g.raw_texts.len() - n, 1, "{:?}", &g.raw_texts[n..]);
    assert!(!g.raw_texts[n].text.contains(&0));
}
