//! Progress while the vehicle flies: an indicatif bar on a terminal, plain lines (one per
//! second of wall time, and on every change of mission item or mode) otherwise.

use super::output::Out;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use nexus_core::Mode;
use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// How often a plain line is printed when nothing changed, wall.
pub const PLAIN_PERIOD: Duration = Duration::from_secs(1);

/// What the display shows.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Status {
    /// What is going on ("step 2/4", "mission"), for the line's head.
    pub stage: String,
    /// Mission item being flown to (MISSION_CURRENT.seq, shown from 1) and the item count,
    /// when flying one.
    pub item: Option<(u16, usize)>,
    /// Flight mode.
    pub mode: Option<Mode>,
    /// Armed flag.
    pub armed: bool,
    /// Height above the pad, m.
    pub alt_m: Option<f32>,
    /// Horizontal distance to the mission item being flown to, m.
    pub dist_m: Option<f32>,
    /// Autopilot clock, s.
    pub sim_s: Option<f64>,
}

/// The display.
pub struct ProgressView {
    out: Out,
    bar: Option<ProgressBar>,
    last_plain: Option<Instant>,
    last_key: Option<(Option<u16>, Option<Mode>, bool)>,
    samples: VecDeque<(Instant, f64)>,
}

impl ProgressView {
    /// A display on `out`'s stream, `total` mission items (0: no bar length, a spinner).
    pub fn new(out: &Out, total: usize) -> ProgressView {
        let bar = out.is_tty().then(|| {
            let target = if out.to_stderr() {
                ProgressDrawTarget::stderr()
            } else {
                ProgressDrawTarget::stdout()
            };
            let bar = if total > 0 {
                let b = ProgressBar::with_draw_target(Some(total as u64), target);
                b.set_style(
                    ProgressStyle::with_template("{bar:24.cyan/blue} {pos}/{len} {wide_msg}")
                        .unwrap_or_else(|_| ProgressStyle::default_bar()),
                );
                b
            } else {
                let b = ProgressBar::with_draw_target(None, target);
                b.set_style(
                    ProgressStyle::with_template("{spinner} {wide_msg}")
                        .unwrap_or_else(|_| ProgressStyle::default_spinner()),
                );
                b
            };
            b_tick(&bar);
            bar
        });
        ProgressView {
            out: out.clone(),
            bar,
            last_plain: None,
            last_key: None,
            samples: VecDeque::new(),
        }
    }

    /// Show `st` (cheap to call often: plain lines are rate-limited).
    pub fn update(&mut self, st: &Status) {
        let now = Instant::now();
        if let Some(sim) = st.sim_s {
            self.samples.push_back((now, sim));
            while self
                .samples
                .front()
                .is_some_and(|(t, _)| now.duration_since(*t) > Duration::from_secs(3))
            {
                self.samples.pop_front();
            }
        }
        if let Some(bar) = &self.bar {
            // The bar shows the item of total itself.
            let text = self.render(&Status {
                item: None,
                ..st.clone()
            });
            if let Some((cur, _)) = st.item {
                bar.set_position(u64::from(cur) + 1);
            }
            bar.set_message(super::output::shown(&text).into_owned());
            return;
        }
        let text = self.render(st);
        let key = (st.item.map(|(c, _)| c), st.mode, st.armed);
        let due = self
            .last_plain
            .is_none_or(|t| now.duration_since(t) >= PLAIN_PERIOD);
        if due || self.last_key != Some(key) {
            self.out.line(&text);
            self.last_plain = Some(now);
            self.last_key = Some(key);
        }
    }

    /// Sim seconds per wall second over the last few seconds.
    pub fn speedup(&self) -> Option<f64> {
        let (t0, s0) = self.samples.front()?;
        let (t1, s1) = self.samples.back()?;
        let wall = t1.duration_since(*t0).as_secs_f64();
        (wall > 0.5).then(|| (s1 - s0) / wall)
    }

    fn render(&self, st: &Status) -> String {
        let mut parts = vec![st.stage.clone()];
        if let Some((cur, total)) = st.item {
            // PX4 sends MISSION_CURRENT seq 65535 for a moment after a fence or rally upload:
            // an item the mission does not have is shown as unknown, never as 65536.
            if (cur as usize) < total {
                parts.push(format!("item {}/{total}", u32::from(cur) + 1));
            } else {
                parts.push(format!("item ?/{total}"));
            }
        }
        parts.push(st.mode.map_or("mode ?".into(), |m| m.to_string()));
        parts.push(if st.armed { "armed" } else { "disarmed" }.into());
        if let Some(a) = st.alt_m {
            parts.push(format!("alt {} m", one_decimal(a)));
        }
        if let Some(d) = st.dist_m {
            parts.push(format!("{d:.0} m to next"));
        }
        if let Some(s) = st.sim_s {
            let mut t = format!("t {s:.1} s");
            if let Some(x) = self.speedup() {
                t.push_str(&format!(" ×{x:.1}"));
            }
            parts.push(t);
        }
        parts.retain(|p| !p.is_empty());
        parts.join(" | ")
    }

    /// Print a line (a step result, a text) without tearing the bar; escaped as
    /// [`Out::line`] escapes it.
    pub fn line(&self, s: &str) {
        match &self.bar {
            Some(bar) => bar.println(super::output::shown(s)),
            None => self.out.line(s),
        }
    }

    /// Remove the bar.
    pub fn finish(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }
}

impl Drop for ProgressView {
    fn drop(&mut self) {
        self.finish();
    }
}

/// `x` with one decimal, never "-0.0".
pub fn one_decimal(x: f32) -> String {
    let s = format!("{x:.1}");
    if s == "-0.0" {
        "0.0".into()
    } else {
        s
    }
}

fn b_tick(bar: &ProgressBar) {
    bar.enable_steady_tick(Duration::from_millis(200));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain() -> ProgressView {
        // Not a terminal in tests: plain lines, no bar.
        ProgressView {
            out: Out::new(None),
            bar: None,
            last_plain: None,
            last_key: None,
            samples: VecDeque::new(),
        }
    }

    #[test]
    fn a_line_shows_item_from_one_mode_altitude_distance_and_time() {
        let v = plain();
        let st = Status {
            stage: "step 2/4".into(),
            item: Some((2, 6)),
            mode: Some(Mode::Mission),
            armed: true,
            alt_m: Some(-0.04),
            dist_m: Some(14.6),
            sim_s: Some(18.71),
        };
        assert_eq!(
            v.render(&st),
            "step 2/4 | item 3/6 | Mission | armed | alt 0.0 m | 15 m to next | t 18.7 s"
        );
        let bare = Status::default();
        assert_eq!(v.render(&bare), "mode ? | disarmed");
        // PX4's transient MISSION_CURRENT seq 65535 (after a fence or rally upload).
        let odd = Status {
            item: Some((u16::MAX, 4)),
            ..Status::default()
        };
        assert_eq!(v.render(&odd), "item ?/4 | mode ? | disarmed");
    }

    #[test]
    fn the_speedup_is_measured_over_the_last_seconds() {
        let mut v = plain();
        let t0 = Instant::now();
        v.samples.push_back((t0, 10.0));
        assert_eq!(v.speedup(), None);
        v.samples.push_back((t0 + Duration::from_secs(2), 30.0));
        assert_eq!(v.speedup(), Some(10.0));
    }
}
