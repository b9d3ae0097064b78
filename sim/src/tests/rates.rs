//! PX4's stream set and rates on the offboard link, replayed against the vehicle: every message
//! PX4 streamed in the box flight (`fixtures/calibration/px4-rates.tsv`, from the px4-traces by
//! `scripts/trace-phases --rates`) comes at PX4's rate ±20 %, in flight.

use super::*;

const PX4_RATES: &str = include_str!("../../../fixtures/calibration/px4-rates.tsv");

#[test]
fn every_px4_stream_at_px4s_rate() {
    let mut g = Gcs::airborne(5.0);
    g.counts.clear();
    let span_ms = 20_000;
    g.run(span_ms);
    let mut bad = Vec::new();
    let mut n = 0;
    for line in PX4_RATES.lines().filter(|l| !l.starts_with('#')) {
        let f: Vec<&str> = line.split('\t').collect();
        let (id, name, px4): (u32, &str, f64) =
            (f[0].parse().unwrap(), f[1], f[2].parse().unwrap());
        let sim = *g.counts.get(&id).unwrap_or(&0) as f64 / (span_ms as f64 / 1000.0);
        n += 1;
        if (sim / px4 - 1.0).abs() > 0.2 {
            bad.push(format!("{name} ({id}): {sim:.2} Hz, PX4 {px4:.2} Hz"));
        }
    }
    assert!(n >= 30, "the table lists PX4's streams ({n})");
    assert!(bad.is_empty(), "streams off PX4's rates: {bad:#?}");
}
