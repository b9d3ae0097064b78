//! What PX4's own log has that the link does not, drawn in the HTML report (`--ulog`): the
//! estimator's height against the simulator's true height, the position controller's setpoint
//! against the estimated position, and the battery. The link carries only the estimate, at the
//! stream's rate; PX4's log has the setpoints and, in SITL, the ground truth, at the
//! controller's rate.
//!
//! Each chart is drawn only from topics the log has; a missing topic is named under the charts
//! (the built-in vehicle's log has no setpoint or ground-truth topics), never drawn as zero.

use super::junit::escape;
use nexus_host::ulog::facts::Facts;
use nexus_host::ulog::Ulog;
use std::fmt::Write;

/// A chart's width in SVG units (the report's width).
const W: f64 = 800.0;
/// Margin around a chart's plot area.
const PAD: f64 = 40.0;
/// Points kept per line: one per SVG unit of width is all a reader can see.
const MAX_POINTS: usize = 800;

/// PX4's topics the charts read, and the chart each feeds.
const TOPICS: &[(&str, &str)] = &[
    ("vehicle_local_position", "the estimated position"),
    (
        "vehicle_local_position_groundtruth",
        "the simulator's true position",
    ),
    ("vehicle_local_position_setpoint", "the position setpoint"),
    ("battery_status", "the battery"),
];

/// One line of a chart: (sim s, value) in the chart's unit.
#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    /// The polyline's `id` in the SVG (tests and readers find it by this).
    pub id: &'static str,
    /// The legend's words.
    pub label: &'static str,
    /// The stroke colour.
    pub colour: &'static str,
    /// Drawn dashed (a setpoint, a second witness) rather than solid.
    pub dashed: bool,
    /// (sim s, value), time-ordered, finite.
    pub points: Vec<(f64, f64)>,
}

/// A chart: its lines against PX4's clock.
#[derive(Debug, Clone, PartialEq)]
pub struct Chart {
    /// The SVG's `id`.
    pub id: &'static str,
    /// The heading.
    pub title: &'static str,
    /// The value axis' unit (`m`, `%`, `V`).
    pub unit: &'static str,
    /// The lines drawn; a chart with none is not drawn.
    pub lines: Vec<Line>,
    /// One sentence under the chart: what the lines say (the largest gap between them).
    pub caption: String,
}

/// The charts PX4's log can draw beyond the link, and the topics it lacks for the rest.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct UlogPlots {
    /// Charts with at least one line.
    pub charts: Vec<Chart>,
    /// The topics the log lacks, with what each would have drawn.
    pub missing: Vec<(&'static str, &'static str)>,
}

/// `topic.field` as (sim s, value), finite values only, `f` applied.
fn series(log: &Ulog, topic: &str, field: &str, f: impl Fn(f64) -> f64) -> Vec<(f64, f64)> {
    log.series(topic, field)
        .into_iter()
        .filter(|(_, v)| v.is_finite())
        .map(|(t, v)| (t as f64 / 1e6, f(v)))
        .filter(|(_, v)| v.is_finite())
        .collect()
}

/// The value of `s` at `t_s` (the last sample at or before it, else the first).
fn at(s: &[(f64, f64)], t_s: f64) -> Option<f64> {
    s.iter()
        .take_while(|p| p.0 <= t_s)
        .last()
        .or(s.first())
        .map(|p| p.1)
}

/// The largest |a − b| over `a`'s samples, `b` read at each of `a`'s times; (gap, sim s).
fn largest_gap(a: &[(f64, f64)], b: &[(f64, f64)]) -> Option<(f64, f64)> {
    let mut j = 0;
    let mut best: Option<(f64, f64)> = None;
    for &(t, va) in a {
        while j + 1 < b.len() && b[j + 1].0 <= t {
            j += 1;
        }
        let Some(&(tb, vb)) = b.get(j) else { break };
        if tb > t {
            continue;
        }
        let gap = (va - vb).abs();
        if best.is_none_or(|(g, _)| gap > g) {
            best = Some((gap, t));
        }
    }
    best
}

/// At most [`MAX_POINTS`] of `points`, evenly spaced in the sequence.
fn thin(points: Vec<(f64, f64)>) -> Vec<(f64, f64)> {
    if points.len() <= MAX_POINTS {
        return points;
    }
    let step = points.len().div_ceil(MAX_POINTS);
    let last = *points.last().expect("more than MAX_POINTS points");
    let mut out: Vec<(f64, f64)> = points.into_iter().step_by(step).collect();
    if out.last() != Some(&last) {
        out.push(last);
    }
    out
}

fn line(
    id: &'static str,
    label: &'static str,
    colour: &'static str,
    dashed: bool,
    points: Vec<(f64, f64)>,
) -> Line {
    Line {
        id,
        label,
        colour,
        dashed,
        points: thin(points),
    }
}

impl UlogPlots {
    /// The charts of `log` over sim seconds `span_s` (the report's; PX4's log starts at boot,
    /// where the estimator is still converging). Heights are above the pad: each series' own
    /// value when the vehicle first armed (or its first value) is zero, so the estimate and the
    /// truth start level.
    pub fn of(log: &Ulog, span_s: (f64, f64)) -> UlogPlots {
        let within = |s: Vec<(f64, f64)>| -> Vec<(f64, f64)> {
            s.into_iter()
                .filter(|p| p.0 >= span_s.0 && p.0 <= span_s.1)
                .collect()
        };
        let missing: Vec<(&'static str, &'static str)> = TOPICS
            .iter()
            .copied()
            .filter(|(t, _)| !log.has_topic(t))
            .collect();
        let arm_s = Facts::of(log).arms.first().map(|&t| t as f64 / 1e6);
        let level = |s: Vec<(f64, f64)>| -> Vec<(f64, f64)> {
            let Some(z0) = at(&s, arm_s.unwrap_or(f64::NEG_INFINITY)) else {
                return s;
            };
            s.into_iter().map(|(t, z)| (t, -(z - z0))).collect()
        };
        let est_z = series(log, "vehicle_local_position", "z", |v| v);
        let z0 = at(&est_z, arm_s.unwrap_or(f64::NEG_INFINITY));
        let est_h = within(level(est_z));
        let true_h = within(level(series(
            log,
            "vehicle_local_position_groundtruth",
            "z",
            |v| v,
        )));
        // The setpoint is in the estimator's frame: levelled by the estimate's zero.
        let sp_h: Vec<(f64, f64)> = z0.map_or_else(Vec::new, |z0| {
            within(series(log, "vehicle_local_position_setpoint", "z", |z| {
                -(z - z0)
            }))
        });
        let mut charts = Vec::new();

        if !true_h.is_empty() && !est_h.is_empty() {
            let caption = match largest_gap(&est_h, &true_h) {
                Some((g, t)) => {
                    format!("The estimate was at most {g:.2} m from the true height (at {t:.1} s).")
                }
                None => "The estimate and the truth do not overlap in time.".into(),
            };
            charts.push(Chart {
                id: "ulog-estimate",
                title: "PX4's log: estimated and true height",
                unit: "m",
                lines: vec![
                    line(
                        "ulog-true-height",
                        "true (ground truth)",
                        "#444",
                        false,
                        true_h,
                    ),
                    line("ulog-est-height", "estimated", "#06c", true, est_h.clone()),
                ],
                caption,
            });
        }

        let axes = [
            ("x", "north", "ulog-setpoint-north", "ulog-position-north"),
            ("y", "east", "ulog-setpoint-east", "ulog-position-east"),
        ];
        let mut sp_lines = Vec::new();
        let mut gaps = Vec::new();
        if !sp_h.is_empty() && !est_h.is_empty() {
            if let Some((g, t)) = largest_gap(&est_h, &sp_h) {
                gaps.push(format!("height {g:.1} m (at {t:.1} s)"));
            }
            sp_lines.push(line("ulog-position-height", "height", "#06c", false, est_h));
            sp_lines.push(line(
                "ulog-setpoint-height",
                "height setpoint",
                "#06c",
                true,
                sp_h,
            ));
        }
        for (field, name, sp_id, pos_id) in axes {
            let sp = within(series(log, "vehicle_local_position_setpoint", field, |v| v));
            let pos = within(series(log, "vehicle_local_position", field, |v| v));
            if sp.is_empty() || pos.is_empty() {
                continue;
            }
            if let Some((g, t)) = largest_gap(&pos, &sp) {
                gaps.push(format!("{name} {g:.1} m (at {t:.1} s)"));
            }
            let colour = if field == "x" { "#c40" } else { "#2a2" };
            let (pl, sl) = if field == "x" {
                ("north", "north setpoint")
            } else {
                ("east", "east setpoint")
            };
            sp_lines.push(line(pos_id, pl, colour, false, pos));
            sp_lines.push(line(sp_id, sl, colour, true, sp));
        }
        if !sp_lines.is_empty() {
            charts.push(Chart {
                id: "ulog-setpoints",
                title: "PX4's log: position setpoint and position",
                unit: "m",
                lines: sp_lines,
                caption: format!(
                    "Solid: the estimated position; dashed: the position controller's setpoint. \
                     Largest lag: {}.",
                    if gaps.is_empty() {
                        "none measured".to_string()
                    } else {
                        gaps.join(", ")
                    }
                ),
            });
        }

        let remaining = within(series(log, "battery_status", "remaining", |r| r * 100.0));
        let remaining: Vec<(f64, f64)> = remaining.into_iter().filter(|p| p.1 >= 0.0).collect();
        let volts = within(series(log, "battery_status", "voltage_v", |v| v));
        let volts: Vec<(f64, f64)> = volts.into_iter().filter(|p| p.1 > 0.0).collect();
        if !remaining.is_empty() {
            let first = remaining.first().map_or(0.0, |p| p.1);
            let last = remaining.last().map_or(0.0, |p| p.1);
            let v = match (volts.first(), volts.last()) {
                (Some(a), Some(b)) => format!("; {:.2} V to {:.2} V", a.1, b.1),
                _ => String::new(),
            };
            charts.push(Chart {
                id: "ulog-battery",
                title: "PX4's log: battery remaining",
                unit: "%",
                lines: vec![line(
                    "ulog-battery-remaining",
                    "remaining",
                    "#a0a",
                    false,
                    remaining,
                )],
                caption: format!("{first:.0} % to {last:.0} %{v}."),
            });
        }
        UlogPlots { charts, missing }
    }

    /// The charts as HTML sections over sim seconds `t0`..`t1` (the report's span).
    pub fn render(&self, h: &mut String, t0: f64, t1: f64) {
        for c in &self.charts {
            chart(h, c, t0, t1);
        }
        if !self.missing.is_empty() {
            let names: Vec<String> = self
                .missing
                .iter()
                .map(|(t, what)| format!("{t} ({what})"))
                .collect();
            let _ = writeln!(
                h,
                "<p class=\"meta\" id=\"ulog-missing\">Not drawn: PX4's log has no {}.</p>",
                escape(&names.join(", "))
            );
        }
    }
}

/// One chart as an SVG section.
fn chart(h: &mut String, c: &Chart, t0: f64, t1: f64) {
    let hh = 220.0;
    let inside = |p: &&(f64, f64)| p.0 >= t0 && p.0 <= t1;
    let values = || {
        c.lines
            .iter()
            .flat_map(|l| l.points.iter().filter(inside).map(|p| p.1))
    };
    let lo = values().fold(f64::INFINITY, f64::min);
    let hi = values().fold(f64::NEG_INFINITY, f64::max);
    if !lo.is_finite() || !hi.is_finite() {
        return;
    }
    let (lo, hi) = if hi - lo < 1e-3 {
        (lo - 0.5, hi + 0.5)
    } else {
        let m = (hi - lo) * 0.05;
        (lo - m, hi + m)
    };
    let x = |t: f64| PAD + (t - t0) / (t1 - t0) * (W - 2.0 * PAD);
    let y = |v: f64| hh - PAD - (v - lo) / (hi - lo) * (hh - 2.0 * PAD);
    let _ = write!(
        h,
        "<section><h2>{}</h2><svg id=\"{}\" viewBox=\"0 0 {W} {hh}\" role=\"img\" \
         aria-label=\"{}\"><line x1=\"{PAD}\" y1=\"{b:.1}\" x2=\"{:.1}\" y2=\"{b:.1}\" \
         stroke=\"#444\"/><line x1=\"{PAD}\" y1=\"{PAD}\" x2=\"{PAD}\" y2=\"{b:.1}\" \
         stroke=\"#444\"/>",
        escape(c.title),
        c.id,
        escape(c.title),
        W - PAD,
        b = hh - PAD
    );
    for (i, l) in c.lines.iter().enumerate() {
        let pts: Vec<String> = l
            .points
            .iter()
            .filter(inside)
            .map(|p| format!("{:.1},{:.1}", x(p.0), y(p.1)))
            .collect();
        let dash = if l.dashed {
            " stroke-dasharray=\"5 3\""
        } else {
            ""
        };
        let _ = write!(
            h,
            "<polyline id=\"{}\" points=\"{}\" fill=\"none\" stroke=\"{}\" \
             stroke-width=\"1.5\"{dash}><title>{} ({} points)</title></polyline>\
             <text x=\"{:.1}\" y=\"{:.1}\" font-size=\"10\" fill=\"{}\" text-anchor=\"end\">\
             {}{}</text>",
            l.id,
            pts.join(" "),
            l.colour,
            escape(l.label),
            pts.len(),
            W - PAD,
            PAD + 10.0 + 12.0 * i as f64,
            l.colour,
            if l.dashed { "- - " } else { "— " },
            escape(l.label)
        );
    }
    let _ = writeln!(
        h,
        "<text x=\"{PAD}\" y=\"{}\" font-size=\"11\">{t0:.0} s</text>\
         <text x=\"{:.1}\" y=\"{}\" font-size=\"11\" text-anchor=\"end\">{t1:.0} s sim</text>\
         <text x=\"2\" y=\"{:.1}\" font-size=\"11\">{hi:.1} {u}</text>\
         <text x=\"2\" y=\"{:.1}\" font-size=\"11\">{lo:.1} {u}</text></svg>\
         <p class=\"meta\">{}</p></section>",
        hh - 12.0,
        W - PAD,
        hh - 12.0,
        PAD + 4.0,
        hh - PAD,
        escape(&c.caption),
        u = c.unit
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> Ulog {
        let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../fixtures/px4-ulog")
            .join(name);
        Ulog::open(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
    }

    /// PX4's log of a real SITL box flight: the estimate stays near the truth, the position
    /// follows the setpoint, the battery drains; every chart is drawn from the log's samples.
    #[test]
    fn real_px4_log_draws_estimate_setpoints_and_battery() {
        let log = fixture("box-x4.plots.ulg");
        // The report's span: the flight, from before arming (9.0 s) to after disarming (63.4 s).
        let p = UlogPlots::of(&log, (8.0, 64.0));
        assert!(p.missing.is_empty(), "{:?}", p.missing);
        let ids: Vec<&str> = p.charts.iter().map(|c| c.id).collect();
        assert_eq!(ids, ["ulog-estimate", "ulog-setpoints", "ulog-battery"]);
        let est = &p.charts[0];
        let top = |l: &Line| l.points.iter().map(|q| q.1).fold(f64::MIN, f64::max);
        // The box flies at 10 m: both heights reach it, within a metre of each other.
        let (t, e) = (top(&est.lines[0]), top(&est.lines[1]));
        assert!((8.0..14.0).contains(&t) && (t - e).abs() < 1.0, "{t} {e}");
        // Over the flight PX4's estimate stayed within about half a metre of SIH's truth.
        assert!(
            est.caption.starts_with("The estimate was at most 0.5"),
            "{}",
            est.caption
        );
        // The setpoint chart has height, north and east, each position beside its setpoint.
        let sp: Vec<&str> = p.charts[1].lines.iter().map(|l| l.id).collect();
        assert_eq!(
            sp,
            [
                "ulog-position-height",
                "ulog-setpoint-height",
                "ulog-position-north",
                "ulog-setpoint-north",
                "ulog-position-east",
                "ulog-setpoint-east"
            ]
        );
        // The box's legs go 14 to 20 m north and east of the pad, setpoint and position alike.
        let span = |l: &Line| top(l) - l.points.iter().map(|q| q.1).fold(f64::MAX, f64::min);
        for l in &p.charts[1].lines[2..] {
            assert!((10.0..25.0).contains(&span(l)), "{}: {}", l.id, span(l));
        }
        // The battery only drains.
        let b = &p.charts[2].lines[0].points;
        assert!(b.first().unwrap().1 > b.last().unwrap().1, "{b:?}");
        assert!(b.iter().all(|q| (0.0..=100.0).contains(&q.1)));
        // Drawn: one polyline per line, each with the log's points inside the span.
        let mut h = String::new();
        let (t0, t1) = (0.0, 80.0);
        p.render(&mut h, t0, t1);
        for c in &p.charts {
            assert!(h.contains(&format!("<svg id=\"{}\"", c.id)), "{}", c.id);
            for l in &c.lines {
                assert!(
                    h.contains(&format!("<polyline id=\"{}\"", l.id)),
                    "{}",
                    l.id
                );
            }
        }
        assert!(!h.contains("ulog-missing"));
        assert!(!h.contains("NaN"));
    }

    /// A log with only the witness facts' topics draws no chart it cannot, and says which
    /// topics are missing.
    #[test]
    fn a_log_without_the_topics_names_them() {
        let p = UlogPlots::of(&fixture("box-x4.facts.ulg"), (0.0, 80.0));
        assert!(p.charts.is_empty(), "{:?}", p.charts);
        let names: Vec<&str> = p.missing.iter().map(|m| m.0).collect();
        assert_eq!(
            names,
            [
                "vehicle_local_position_groundtruth",
                "vehicle_local_position_setpoint",
                "battery_status"
            ]
        );
        let mut h = String::new();
        p.render(&mut h, 0.0, 80.0);
        assert!(h.contains("Not drawn: PX4's log has no vehicle_local_position_groundtruth"));
        assert!(!h.contains("<svg"));
    }

    #[test]
    fn the_largest_gap_reads_the_other_series_at_each_time() {
        let a = [(0.0, 0.0), (1.0, 5.0), (2.0, 10.0)];
        let b = [(0.5, 1.0), (1.5, 9.0)];
        // At 0.0 b has no sample yet; at 1.0 it is 1.0 (gap 4); at 2.0 it is 9.0 (gap 1).
        assert_eq!(largest_gap(&a, &b), Some((4.0, 1.0)));
        assert_eq!(largest_gap(&a, &[]), None);
        assert_eq!(
            thin((0..2000).map(|i| (i as f64, 0.0)).collect()).len(),
            668
        );
    }
}
