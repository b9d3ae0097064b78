//! `--report FILE.html`: the flight drawn, in one self-contained file (inline SVG and CSS, no
//! script, nothing fetched), readable on a phone (the plots scale to the width) and in print.
//!
//! * the verdict, and the explanation of every step that failed;
//! * `#track`: the ground track, the plan's items (numbered) against the flown path, in metres
//!   north and east of the first position (an equirectangular projection: exact enough over a
//!   mission's few kilometres);
//! * `#height`: height above the pad against sim time, each step's span shaded by its result
//!   (green met, red not), PX4's texts as ticks on the time axis;
//! * `#timeline`: mode, armed and landed state against the same time axis;
//! * with PX4's log (`--ulog`), what only it has: the estimate against the true height, the
//!   position setpoint against the position, the battery ([`super::ulog_plots`]);
//! * the steps and PX4's texts as tables.

use super::junit::escape;
use super::ulog_plots::UlogPlots;
use super::Sample;
use crate::report::Report;
use nexus_host::ulog::Ulog;
use std::fmt::Write;

const W: f64 = 800.0;
const PAD: f64 = 40.0;

/// The HTML of a report and the samples of its flight.
pub fn render(report: &Report, trace: &[Sample]) -> String {
    render_with_ulog(report, trace, None)
}

/// [`render`], with PX4's own log (`--ulog`) drawn too: its height beside the link's (at its
/// own rate, usually more often than the link), and the charts only the log can draw.
pub fn render_with_ulog(report: &Report, trace: &[Sample], log: Option<&Ulog>) -> String {
    let ulog_height: Vec<(f64, f64)> = log
        .map(crate::witness::ulog_heights)
        .unwrap_or_default()
        .into_iter()
        .map(|(t, m)| (t as f64 / 1e6, m as f64))
        .collect();
    let title = report.name.clone().unwrap_or_else(|| report.file.clone());
    let mut h = String::new();
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>nexus {} — {}</title><style>{CSS}</style></head><body>\n",
        report.command,
        escape(&title)
    );
    let what = if report.vehicle.kind == "tlog" {
        format!(
            "a recorded flight of system {}, checked · {:.1} s recorded",
            report.vehicle.system_id, report.wall_s
        )
    } else if report.vehicle.kind == "attached" {
        // No instance of ours: the vehicle is where the connection string says.
        format!(
            "attached vehicle, system {} on {} · {:.1} s wall",
            report.vehicle.system_id,
            escape(report.vehicle.connection.as_deref().unwrap_or("?")),
            report.wall_s
        )
    } else {
        format!(
            "{} vehicle, instance {}, ×{} · {:.1} s wall",
            report.vehicle.kind, report.vehicle.instance, report.vehicle.speed, report.wall_s
        )
    };
    let _ = writeln!(
        h,
        "<h1>nexus {} — {}</h1><p class=\"meta\">{what}</p>",
        report.command,
        escape(&title)
    );
    let class = if report.passed { "pass" } else { "fail" };
    let _ = writeln!(
        h,
        "<section id=\"verdict\" class=\"{class}\"><h2>Verdict</h2><p>{}</p>",
        escape(&report.verdict)
    );
    for st in report.steps.iter().filter(|s| !s.passed) {
        let _ = writeln!(
            h,
            "<p class=\"why\"><b>step {} ({}):</b> {}</p>",
            st.index,
            escape(&st.until),
            escape(st.explanation.as_deref().unwrap_or(st.reason))
        );
    }
    h.push_str("</section>\n");
    track(&mut h, report, trace);
    let (t0, t1) = time_span(report, trace);
    height(&mut h, report, trace, &ulog_height, t0, t1);
    timeline(&mut h, trace, t0, t1);
    if let Some(log) = log {
        UlogPlots::of(log, (t0, t1)).render(&mut h, t0, t1);
    }
    tables(&mut h, report);
    h.push_str("</body></html>\n");
    h
}

const CSS: &str = "body{font-family:system-ui,sans-serif;margin:0 auto;max-width:60rem;\
padding:0.5rem;color:#111}svg{width:100%;height:auto;background:#fafafa;border:1px solid #ccc}\
#track{max-width:32rem;display:block;margin:auto}\
h1{font-size:1.3rem}h2{font-size:1.1rem}.meta{color:#555}.pass{border-left:6px solid #2a2}\
.fail{border-left:6px solid #c22}#verdict{padding:0 0.6rem}table{border-collapse:collapse;\
width:100%;font-size:0.85rem}td,th{border:1px solid #ccc;padding:2px 4px;text-align:left}\
.ok{color:#161}.bad{color:#a11}@media print{body{max-width:none}section{break-inside:avoid}}";

/// First and last sim second to plot.
fn time_span(report: &Report, trace: &[Sample]) -> (f64, f64) {
    let mut t0 = f64::INFINITY;
    let mut t1 = f64::NEG_INFINITY;
    for s in trace {
        let t = s.sim_ms as f64 / 1e3;
        t0 = t0.min(t);
        t1 = t1.max(t);
    }
    for st in &report.steps {
        if let Some(t) = st.snapshot.t_sim_s {
            t0 = t0.min(t - st.waited_sim_s as f64);
            t1 = t1.max(t);
        }
    }
    if !t0.is_finite() || !t1.is_finite() {
        return (0.0, 1.0);
    }
    if t1 - t0 < 1e-3 {
        t1 = t0 + 1.0;
    }
    (t0, t1)
}

fn track(h: &mut String, report: &Report, trace: &[Sample]) {
    let flown: Vec<(f64, f64)> = trace.iter().filter_map(|s| s.position_deg).collect();
    let planned: Vec<(u16, f64, f64)> = report
        .mission
        .iter()
        .flat_map(|m| m.items.iter())
        .filter(|i| i.lat_deg != 0.0 || i.lon_deg != 0.0)
        .map(|i| (i.seq, i.lat_deg, i.lon_deg))
        .collect();
    h.push_str("<section><h2>Ground track</h2>");
    let origin = flown
        .first()
        .copied()
        .or_else(|| planned.first().map(|p| (p.1, p.2)));
    let Some((lat0, lon0)) = origin else {
        h.push_str("<svg id=\"track\" viewBox=\"0 0 800 60\"><text x=\"20\" y=\"35\">no position was received</text></svg></section>\n");
        return;
    };
    // Metres east (x) and north (y) of the origin.
    let k = 6_371_000.0_f64.to_radians();
    let en = |lat: f64, lon: f64| ((lon - lon0) * k * lat0.to_radians().cos(), (lat - lat0) * k);
    let pts: Vec<(f64, f64)> = flown.iter().map(|p| en(p.0, p.1)).collect();
    let items: Vec<(u16, (f64, f64))> = planned.iter().map(|p| (p.0, en(p.1, p.2))).collect();
    let all = pts.iter().chain(items.iter().map(|i| &i.1));
    let (mut x0, mut x1, mut y0, mut y1) = (0.0f64, 0.0f64, 0.0f64, 0.0f64);
    for p in all {
        x0 = x0.min(p.0);
        x1 = x1.max(p.0);
        y0 = y0.min(p.1);
        y1 = y1.max(p.1);
    }
    let span = (x1 - x0).max(y1 - y0).max(10.0);
    let size = 500.0;
    let sc = (size - 2.0 * PAD) / span;
    // Centred: a track smaller than the smallest span sits in the middle, not a corner.
    let (cx, cy) = ((x0 + x1) / 2.0, (y0 + y1) / 2.0);
    let px = |p: (f64, f64)| (size / 2.0 + (p.0 - cx) * sc, size / 2.0 - (p.1 - cy) * sc);
    let _ = write!(
        h,
        "<svg id=\"track\" viewBox=\"0 0 {size} {size}\" role=\"img\" aria-label=\"ground track\">"
    );
    if items.len() > 1 {
        let path: Vec<String> = items
            .iter()
            .map(|i| {
                let p = px(i.1);
                format!("{:.1},{:.1}", p.0, p.1)
            })
            .collect();
        let _ = write!(
            h,
            "<polyline class=\"planned\" points=\"{}\" fill=\"none\" stroke=\"#888\" \
             stroke-dasharray=\"6 4\"/>",
            path.join(" ")
        );
    }
    if !pts.is_empty() {
        let path: Vec<String> = pts
            .iter()
            .map(|p| {
                let p = px(*p);
                format!("{:.1},{:.1}", p.0, p.1)
            })
            .collect();
        let _ = write!(
            h,
            "<polyline id=\"flown\" points=\"{}\" fill=\"none\" stroke=\"#06c\" stroke-width=\"2\"/>",
            path.join(" ")
        );
    }
    for (seq, p) in &items {
        let p = px(*p);
        let _ = write!(
            h,
            "<circle class=\"item\" cx=\"{:.1}\" cy=\"{:.1}\" r=\"5\" fill=\"#f90\"/>\
             <text x=\"{:.1}\" y=\"{:.1}\" font-size=\"12\">{seq}</text>",
            p.0,
            p.1,
            p.0 + 7.0,
            p.1 - 7.0
        );
    }
    let _ = write!(
        h,
        "<text x=\"{PAD}\" y=\"{}\" font-size=\"12\">{:.0} m across · dashed: planned, blue: \
         flown</text></svg></section>",
        size - 10.0,
        span
    );
}

fn height(
    h: &mut String,
    report: &Report,
    trace: &[Sample],
    ulog: &[(f64, f64)],
    t0: f64,
    t1: f64,
) {
    let hh = 260.0;
    let hs: Vec<(f64, f64)> = trace
        .iter()
        .filter_map(|s| s.height_m.map(|m| (s.sim_ms as f64 / 1e3, m as f64)))
        .collect();
    // PX4's log over the span drawn (it starts at boot, the link at connection).
    let ulog: Vec<(f64, f64)> = ulog
        .iter()
        .copied()
        .filter(|&(t, _)| t >= t0 && t <= t1)
        .collect();
    let top = hs.iter().chain(&ulog).map(|p| p.1).fold(1.0f64, f64::max) * 1.1;
    let bottom = hs.iter().chain(&ulog).map(|p| p.1).fold(0.0f64, f64::min);
    let x = |t: f64| PAD + (t - t0) / (t1 - t0) * (W - 2.0 * PAD);
    let y = |m: f64| hh - PAD - (m - bottom) / (top - bottom) * (hh - 2.0 * PAD);
    let _ = write!(
        h,
        "<section><h2>Height above the pad</h2><svg id=\"height\" viewBox=\"0 0 {W} {hh}\" \
         role=\"img\" aria-label=\"height against sim time\">"
    );
    for st in &report.steps {
        let Some(end) = st.snapshot.t_sim_s else {
            continue;
        };
        let start = end - st.waited_sim_s as f64;
        let colour = if st.passed { "#cfc" } else { "#fcc" };
        let _ = write!(
            h,
            "<rect class=\"step {}\" x=\"{:.1}\" y=\"{PAD}\" width=\"{:.1}\" height=\"{:.1}\" \
             fill=\"{colour}\"><title>step {}: {}</title></rect>\
             <text x=\"{:.1}\" y=\"{}\" font-size=\"10\">{}</text>",
            if st.passed { "met" } else { "failed" },
            x(start),
            (x(end) - x(start)).max(1.0),
            hh - 2.0 * PAD,
            st.index,
            escape(&st.until),
            x(start) + 2.0,
            PAD - 4.0,
            st.index
        );
    }
    let _ = write!(
        h,
        "<line x1=\"{PAD}\" y1=\"{b:.1}\" x2=\"{:.1}\" y2=\"{b:.1}\" stroke=\"#444\"/>\
         <line x1=\"{PAD}\" y1=\"{PAD}\" x2=\"{PAD}\" y2=\"{b:.1}\" stroke=\"#444\"/>",
        W - PAD,
        b = hh - PAD
    );
    if !hs.is_empty() {
        let pts: Vec<String> = hs
            .iter()
            .map(|p| format!("{:.1},{:.1}", x(p.0), y(p.1)))
            .collect();
        let _ = write!(
            h,
            "<polyline id=\"height-line\" points=\"{}\" fill=\"none\" stroke=\"#06c\" \
             stroke-width=\"2\"/>",
            pts.join(" ")
        );
    }
    if !ulog.is_empty() {
        let pts: Vec<String> = ulog
            .iter()
            .map(|p| format!("{:.1},{:.1}", x(p.0), y(p.1)))
            .collect();
        let _ = write!(
            h,
            "<polyline id=\"ulog-height-line\" points=\"{}\" fill=\"none\" stroke=\"#e80\" \
             stroke-width=\"1.5\" stroke-dasharray=\"4 2\"><title>PX4's log \
             (vehicle_local_position.z, {} samples)</title></polyline>\
             <text x=\"{:.1}\" y=\"{:.1}\" font-size=\"10\" fill=\"#e80\" \
             text-anchor=\"end\">- - PX4's log</text>",
            pts.join(" "),
            ulog.len(),
            W - PAD,
            PAD + 10.0
        );
    }
    for t in &report.texts {
        let Some(ts) = t.t_sim_s else { continue };
        let _ = write!(
            h,
            "<line class=\"text\" x1=\"{x:.1}\" y1=\"{:.1}\" x2=\"{x:.1}\" y2=\"{:.1}\" \
             stroke=\"#a50\"><title>{:.1} s: {}</title></line>",
            hh - PAD,
            hh - PAD + 8.0,
            ts,
            escape(&t.text),
            x = x(ts)
        );
    }
    let _ = write!(
        h,
        "<text x=\"{PAD}\" y=\"{}\" font-size=\"11\">{t0:.0} s</text>\
         <text x=\"{:.1}\" y=\"{}\" font-size=\"11\" text-anchor=\"end\">{t1:.0} s sim</text>\
         <text x=\"2\" y=\"{:.1}\" font-size=\"11\">{top:.0} m</text></svg></section>",
        hh - 12.0,
        W - PAD,
        hh - 12.0,
        PAD + 4.0
    );
}

fn timeline(h: &mut String, trace: &[Sample], t0: f64, t1: f64) {
    let row = 26.0;
    let th = PAD + 3.0 * row + 20.0;
    let x = |t: f64| PAD + 50.0 + (t - t0) / (t1 - t0) * (W - 2.0 * PAD - 50.0);
    let _ = write!(
        h,
        "<section><h2>Mode, armed, landed</h2><svg id=\"timeline\" viewBox=\"0 0 {W} {th}\" \
         role=\"img\" aria-label=\"mode armed landed timeline\">"
    );
    type Row = (&'static str, fn(&Sample) -> String);
    let rows: [Row; 3] = [
        ("mode", |s| s.mode.clone()),
        ("armed", |s| {
            if s.armed { "armed" } else { "disarmed" }.into()
        }),
        ("landed", |s| s.landed.to_string()),
    ];
    for (r, (name, get)) in rows.iter().enumerate() {
        let y = PAD / 2.0 + r as f64 * row;
        let _ = write!(
            h,
            "<text x=\"2\" y=\"{:.1}\" font-size=\"11\">{name}</text>",
            y + 15.0
        );
        let mut i = 0;
        while i < trace.len() {
            let v = get(&trace[i]);
            let mut j = i + 1;
            while j < trace.len() && get(&trace[j]) == v {
                j += 1;
            }
            let a = trace[i].sim_ms as f64 / 1e3;
            let b = trace.get(j).map_or(t1, |s| s.sim_ms as f64 / 1e3);
            let colour = colour_of(&v);
            let _ = write!(
                h,
                "<rect class=\"seg\" x=\"{:.1}\" y=\"{y:.1}\" width=\"{:.1}\" height=\"{:.1}\" \
                 fill=\"{colour}\" stroke=\"#fff\"><title>{name} {}: {a:.1}–{b:.1} s</title></rect>",
                x(a),
                (x(b) - x(a)).max(0.5),
                row - 4.0,
                escape(&v)
            );
            if x(b) - x(a) > 8.0 * v.len() as f64 {
                let _ = write!(
                    h,
                    "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"10\">{}</text>",
                    x(a) + 2.0,
                    y + 15.0,
                    escape(&v)
                );
            }
            i = j;
        }
    }
    h.push_str("</svg></section>\n");
}

/// A stable, light colour per value.
fn colour_of(v: &str) -> String {
    let hash = v
        .bytes()
        .fold(2166136261u32, |a, b| (a ^ b as u32).wrapping_mul(16777619));
    format!("hsl({}, 60%, 78%)", hash % 360)
}

fn tables(h: &mut String, report: &Report) {
    h.push_str(
        "<section><h2>Steps</h2><table><tr><th>#</th><th>action</th><th>until</th>\
         <th>result</th><th>sim s</th><th>wall s</th><th>height source</th></tr>",
    );
    for st in &report.steps {
        let _ = write!(
            h,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td class=\"{}\">{}</td><td>{:.1}</td>\
             <td>{:.1}</td><td>{}</td></tr>",
            st.index,
            escape(&st.action_text),
            escape(&st.until),
            if st.passed { "ok" } else { "bad" },
            st.reason,
            st.waited_sim_s,
            st.waited_wall_s,
            st.snapshot.height_source.unwrap_or("—")
        );
    }
    h.push_str("</table></section>\n<section><h2>PX4's texts</h2><table>");
    for t in &report.texts {
        let _ = write!(
            h,
            "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
            t.t_sim_s.map_or(String::new(), |s| format!("{s:.1} s")),
            crate::exec::severity_name(t.severity),
            escape(&t.text)
        );
    }
    h.push_str("</table></section>\n");
    if let Some(w) = &report.second_witness {
        witness(h, w);
    }
}

fn witness(h: &mut String, w: &crate::witness::WitnessReport) {
    let _ = write!(
        h,
        "<section id=\"second-witness\" class=\"{}\"><h2>Second witness: PX4's log</h2>\
         <p class=\"meta\">{} · times within {} s of the link's, heights within {} m or {:.0} %</p>",
        if w.agrees { "pass" } else { "fail" },
        escape(&w.ulog),
        w.tolerance.time_s,
        w.tolerance.height_m,
        w.tolerance.height_fraction * 100.0
    );
    if let Some(e) = &w.error {
        let _ = write!(h, "<p class=\"bad\">{}</p>", escape(e));
    }
    h.push_str("<table><tr><th>fact</th><th>the link</th><th>PX4's log</th><th></th></tr>");
    for f in &w.facts {
        let class = match f.verdict {
            "agree" => "ok",
            "disagree" => "bad",
            _ => "",
        };
        let _ = write!(
            h,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td class=\"{class}\">{}</td></tr>",
            f.fact,
            escape(&f.link),
            escape(&f.ulog),
            f.verdict
        );
    }
    h.push_str("</table>");
    for d in &w.disagreements {
        let _ = write!(h, "<p class=\"why\">{}</p>", escape(d));
    }
    h.push_str("</section>\n");
}
