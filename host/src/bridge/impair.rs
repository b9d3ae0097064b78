//! Link impairment: what a telemetry radio does to MAVLink, applied by the bridge to every frame
//! or datagram it forwards, so tests (and users rehearsing a radio) meet loss, latency, jitter,
//! duplication, reordering and a byte-rate limit on purpose.
//!
//! Every decision comes from a small pseudo-random generator (SplitMix64) started from
//! [`Impairment::sequence`]: the same number gives the same drops, delays and duplicates for the
//! same traffic, so a failure seen once can be replayed. Each direction of a bridge draws from
//! its own generator (the number, and the number + 1).
//!
//! The byte-rate limit is [`super::throttle`]'s line pacing, on any side (a UDP side too): a
//! 57 600 baud radio moves 5 760 bytes a second, less than PX4's streams need.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use super::DirectionStats;

/// Extra delay of a frame chosen for reordering: later frames overtake it.
pub const REORDER_DELAY_MS: u64 = 30;

/// The longest latency or jitter an [`Impairment`] takes.
const MAX_DELAY: Duration = Duration::from_secs(60);

/// What to do to the frames of each direction. [`Impairment::default`] does nothing.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Impairment {
    /// Chance a frame is dropped, percent (0–100).
    pub loss_pct: f64,
    /// Delay of every frame (wall time).
    pub latency: Duration,
    /// Each frame's delay varies by up to this much either way (uniform; never below 0).
    pub jitter: Duration,
    /// Chance a frame is delivered twice, percent (0–100).
    pub duplicate_pct: f64,
    /// Chance a frame is held back [`REORDER_DELAY_MS`] longer, so later ones overtake it,
    /// percent (0–100).
    pub reorder_pct: f64,
    /// Pace every side like a serial line of this many bits/s (8N1: ten bits a byte); `None`:
    /// no limit beyond the links' own.
    pub rate_baud: Option<u32>,
    /// Which pseudo-random sequence decides (the same number repeats the same run).
    pub sequence: u64,
}

impl Impairment {
    /// Whether it changes anything at all.
    pub fn is_active(&self) -> bool {
        *self
            != Impairment {
                sequence: self.sequence,
                ..Impairment::default()
            }
    }

    /// Why it is out of range, if it is.
    pub fn check(&self) -> Result<(), &'static str> {
        let pct = |p: f64| p.is_finite() && (0.0..=100.0).contains(&p);
        if !pct(self.loss_pct) || !pct(self.duplicate_pct) || !pct(self.reorder_pct) {
            return Err("loss, duplication and reordering are percentages, 0 to 100");
        }
        if self.latency > MAX_DELAY || self.jitter > MAX_DELAY {
            return Err("latency and jitter are at most 60 000 ms");
        }
        if self.rate_baud == Some(0) {
            return Err("the rate limit must be above 0 baud");
        }
        Ok(())
    }
}

/// SplitMix64: tiny, fast, and the same everywhere.
#[derive(Debug, Clone)]
struct Rng(u64);

impl Rng {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    fn chance(&mut self, pct: f64) -> bool {
        pct > 0.0 && self.unit() * 100.0 < pct
    }
}

/// One direction's impairment: the decisions, and the frames delayed.
#[derive(Debug)]
pub(crate) struct Impairer {
    cfg: Impairment,
    rng: Rng,
    /// (due, arrival order, frame), kept sorted by due then order.
    held: VecDeque<(Instant, u64, Vec<u8>)>,
    order: u64,
}

impl Impairer {
    /// Direction `direction` (0 forward, 1 backward) of `cfg`.
    pub(crate) fn new(cfg: Impairment, direction: u64) -> Impairer {
        Impairer {
            cfg,
            rng: Rng(cfg.sequence.wrapping_add(direction)),
            held: VecDeque::new(),
            order: 0,
        }
    }

    /// Take a frame arriving at `now`: dropped, or held (once or twice) until its time.
    pub(crate) fn offer(&mut self, frame: &[u8], now: Instant, st: &mut DirectionStats) {
        if self.rng.chance(self.cfg.loss_pct) {
            st.impair_lost += 1;
            return;
        }
        let copies = if self.rng.chance(self.cfg.duplicate_pct) {
            st.impair_duplicated += 1;
            2
        } else {
            1
        };
        for _ in 0..copies {
            let mut delay_ms = self.cfg.latency.as_secs_f64() * 1000.0;
            if !self.cfg.jitter.is_zero() {
                delay_ms += (self.rng.unit() * 2.0 - 1.0) * self.cfg.jitter.as_secs_f64() * 1000.0;
            }
            if self.rng.chance(self.cfg.reorder_pct) {
                st.impair_reordered += 1;
                delay_ms += REORDER_DELAY_MS as f64;
            }
            let due = now + Duration::from_secs_f64(delay_ms.max(0.0) / 1000.0);
            self.order += 1;
            let at = self
                .held
                .partition_point(|(d, o, _)| (*d, *o) <= (due, self.order));
            self.held.insert(at, (due, self.order, frame.to_vec()));
        }
    }

    /// Hand every frame due by `now` to `send`, in due order.
    pub(crate) fn release(&mut self, now: Instant, mut send: impl FnMut(&[u8])) {
        while self.held.front().is_some_and(|(d, _, _)| *d <= now) {
            if let Some((_, _, f)) = self.held.pop_front() {
                send(&f);
            }
        }
    }

    /// How long until the next held frame is due; `None` when nothing is held.
    pub(crate) fn next_release(&self, now: Instant) -> Option<Duration> {
        self.held
            .front()
            .map(|(d, _, _)| d.saturating_duration_since(now))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(cfg: Impairment, n: usize) -> (Vec<u8>, DirectionStats) {
        let mut imp = Impairer::new(cfg, 0);
        let mut st = DirectionStats::default();
        let t0 = Instant::now();
        let mut out = Vec::new();
        for i in 0..n {
            let now = t0 + Duration::from_millis(i as u64);
            imp.offer(&[i as u8], now, &mut st);
            imp.release(now, |f| out.push(f[0]));
        }
        imp.release(t0 + Duration::from_secs(100), |f| out.push(f[0]));
        (out, st)
    }

    #[test]
    fn loss_drops_about_the_share_asked_and_the_same_number_repeats_the_run() {
        let cfg = Impairment {
            loss_pct: 20.0,
            sequence: 7,
            ..Impairment::default()
        };
        let (a, st) = run(cfg, 2000);
        assert_eq!(a.len() as u64 + st.impair_lost, 2000);
        assert!((300..500).contains(&st.impair_lost), "{st:?}");
        assert_eq!(run(cfg, 2000).0, a, "deterministic");
        let other = run(Impairment { sequence: 8, ..cfg }, 2000);
        assert_ne!(other.0, a, "another sequence, other drops");
    }

    #[test]
    fn latency_holds_every_frame_and_keeps_their_order() {
        let mut imp = Impairer::new(
            Impairment {
                latency: Duration::from_millis(200),
                ..Impairment::default()
            },
            0,
        );
        let mut st = DirectionStats::default();
        let t0 = Instant::now();
        imp.offer(b"a", t0, &mut st);
        imp.offer(b"b", t0 + Duration::from_millis(1), &mut st);
        let mut out = Vec::new();
        imp.release(t0 + Duration::from_millis(199), |f| out.push(f.to_vec()));
        assert!(out.is_empty());
        assert_eq!(
            imp.next_release(t0 + Duration::from_millis(150)),
            Some(Duration::from_millis(50))
        );
        imp.release(t0 + Duration::from_millis(201), |f| out.push(f.to_vec()));
        assert_eq!(out, [b"a".to_vec(), b"b".to_vec()]);
        assert_eq!(imp.next_release(t0), None);
    }

    #[test]
    fn duplication_and_reordering_happen_and_are_counted() {
        let (out, st) = run(
            Impairment {
                duplicate_pct: 10.0,
                reorder_pct: 10.0,
                sequence: 3,
                ..Impairment::default()
            },
            250,
        );
        assert_eq!(out.len() as u64, 250 + st.impair_duplicated);
        assert!(st.impair_duplicated > 10, "{st:?}");
        assert!(st.impair_reordered > 10, "{st:?}");
        assert!(out.windows(2).any(|w| w[0] > w[1]), "some overtaken");
    }

    #[test]
    fn out_of_range_settings_are_refused() {
        let bad = Impairment {
            loss_pct: 101.0,
            ..Impairment::default()
        };
        assert!(bad.check().is_err());
        let nan = Impairment {
            jitter: Duration::ZERO,
            duplicate_pct: f64::NAN,
            ..Impairment::default()
        };
        assert!(nan.check().is_err());
        assert!(Impairment {
            rate_baud: Some(0),
            ..Impairment::default()
        }
        .check()
        .is_err());
        assert!(Impairment::default().check().is_ok());
        assert!(!Impairment::default().is_active());
    }
}
