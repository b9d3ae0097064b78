//! `nexus watch CONN`: live telemetry from any MAVLink link — mode, armed, altitude, position,
//! landed state and every STATUSTEXT — until `--count` lines or `--duration` seconds.
//!
//! It runs the same core client as `fly` and `run` (so it sends a GCS heartbeat once a second,
//! which is what makes PX4 stream its STATUSTEXTs) but commands nothing.

use super::driver::Driver;
use super::exec::severity_name;
use super::limits;
use super::{exit, EXIT_FAILED, EXIT_OK, EXIT_SETUP};
use nexus_core::telemetry::LinkIds;
use nexus_host::transport::{ConnString, Link, LinkOptions, PeerRule};
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// Arguments of `nexus watch`.
#[derive(Debug, Clone, clap::Args)]
pub struct WatchArgs {
    /// Connection string: udpin:0.0.0.0:14540 (PX4 SITL instance 0), udpout:HOST:PORT,
    /// tcp:HOST:PORT, tcpin:HOST:PORT, serial:/dev/ttyACM0:57600.
    pub conn: String,
    /// System id of the autopilot to watch (default: the first autopilot heard).
    #[arg(long, value_name = "ID")]
    pub sysid: Option<u8>,
    /// Stop after this many status lines.
    #[arg(long, short = 'n', value_name = "N")]
    pub count: Option<u64>,
    /// Stop after this many seconds (wall), at most 1e6.
    #[arg(long, short = 'd', value_name = "SECONDS")]
    pub duration: Option<f64>,
    /// Seconds (wall) between status lines, above 0 and at most 1e6.
    #[arg(long, default_value_t = 1.0, value_name = "SECONDS")]
    pub interval: f64,
    /// Record every frame of the link, both directions, to FILE (.tlog), from the moment the
    /// vehicle is found.
    #[arg(long, value_name = "FILE")]
    pub tlog: Option<std::path::PathBuf>,
    /// `--signing-key FILE`, `--require-signed`: sign our heartbeats, verify the vehicle's
    /// frames; rejected frames are counted and shown, never applied.
    #[command(flatten)]
    pub signing: super::signing::SigningArgs,
}

/// Run `nexus watch`.
pub fn main(args: &WatchArgs) -> ExitCode {
    let conn: ConnString = match args.conn.parse() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("nexus watch: {e}");
            return exit(EXIT_SETUP);
        }
    };
    let interval = match limits::duration_s("--interval", args.interval) {
        Ok(s) if s > 0.0 => Duration::from_secs_f64(s),
        Ok(_) => {
            eprintln!("nexus watch: --interval must be above 0 seconds");
            return exit(EXIT_SETUP);
        }
        Err(e) => {
            eprintln!("nexus watch: {e}");
            return exit(EXIT_SETUP);
        }
    };
    let deadline = match args.duration.map(|d| limits::duration_s("--duration", d)) {
        Some(Ok(d)) => Some(Instant::now() + Duration::from_secs_f64(d)),
        Some(Err(e)) => {
            eprintln!("nexus watch: {e}");
            return exit(EXIT_SETUP);
        }
        None => None,
    };
    let signing = match args.signing.signing() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("nexus watch: {e}");
            return exit(EXIT_SETUP);
        }
    };
    let tlog = match &args.tlog {
        None => None,
        Some(p) => match limits::check_output("--tlog", p).and_then(|()| {
            nexus_host::tlog::Tlog::create(p).map_err(|e| format!("--tlog {}: {e}", p.display()))
        }) {
            Ok(t) => Some(t),
            Err(e) => {
                eprintln!("nexus watch: {e}");
                return exit(EXIT_SETUP);
            }
        },
    };
    // Only the watched vehicle's address counts, latched at its first autopilot heartbeat
    // (of `--sysid` if given); what others send is counted and reported, never shown as its.
    let options = LinkOptions {
        peer: PeerRule::FirstAutopilot { sysid: args.sysid },
        ..LinkOptions::default()
    };
    let link = match Link::open_with(&conn, &options) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("nexus watch: {e}");
            return exit(EXIT_SETUP);
        }
    };
    println!("nexus watch: listening on {conn}");
    // A signed link's clock starts here: its verifier judges the frames read while looking
    // for the vehicle too (counted with the rest).
    let origin = Instant::now();
    let mut link_signing = signing
        .as_ref()
        .map(|s| nexus_host::signing::LinkSigning::new(s, nexus_core::Instant::ZERO));
    let (link, sysid) = match (args.sysid, &mut link_signing) {
        (Some(id), None) => (link, id),
        (sysid, judge) => match nexus_host::transport::discover(
            link,
            deadline,
            sysid,
            None,
            judge.as_mut().map(|s| (s, origin)),
        ) {
            Ok(Some((link, sysid, _))) => (link, sysid),
            Ok(None) => {
                println!("no autopilot heartbeat on {conn} within the duration");
                return exit(EXIT_FAILED);
            }
            Err(e) => {
                eprintln!("nexus watch: {e}");
                return exit(EXIT_FAILED);
            }
        },
    };
    let ids = LinkIds {
        target_sysid: sysid,
        ..LinkIds::default()
    };
    let mut driver = match Driver::from_link_since(link, ids, origin) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("nexus watch: {e}");
            return exit(EXIT_SETUP);
        }
    };
    driver.tlog = tlog;
    driver.signing = link_signing;
    let mut rejected_shown = 0;
    println!("nexus watch: system {sysid}");
    let mut lines = 0u64;
    let mut next_line = Instant::now() + interval.min(Duration::from_millis(500));
    let mut texts_shown = 0;
    let mut ignored_shown = Vec::new();
    loop {
        if deadline.is_some_and(|d| Instant::now() >= d) || args.count.is_some_and(|c| lines >= c) {
            break;
        }
        if let Err(e) = driver.step(Duration::from_millis(50)) {
            eprintln!("nexus watch: {e}");
            return exit(EXIT_FAILED);
        }
        let texts = driver.texts();
        for t in &texts[texts_shown.min(texts.len())..] {
            // The vehicle's words, escaped: its text cannot start a line of its own.
            println!(
                "  text #{} [{}] {}",
                t.seq,
                severity_name(t.severity),
                nexus_core::escape::Escaped(&t.text)
            );
        }
        texts_shown = texts.len();
        announce_ignored(&driver, &mut ignored_shown);
        if let Some(s) = driver.signing.as_ref().map(|s| s.stats()) {
            // A line each time the count of rejected frames doubles (1, 2, 4, ...).
            if s.rejected() > 0 && s.rejected() >= 2 * rejected_shown {
                rejected_shown = s.rejected();
                if let Some(l) = nexus_host::signing::rejected_line(&s) {
                    println!("{l} so far");
                }
            }
        }
        let now = Instant::now();
        if now >= next_line {
            // One line per interval from now: a watch stopped for a while (SIGSTOP) does not
            // print the lines it missed, all alike, at once.
            next_line += interval;
            if next_line <= now {
                next_line = now + interval;
            }
            if driver.client().telemetry().connected() {
                println!("{}", status_line(&driver));
                lines += 1;
            } else {
                println!("(no heartbeat from system {sysid} yet)");
            }
        }
    }
    for l in driver
        .link()
        .foreign()
        .map(|f| f.lines())
        .unwrap_or_default()
    {
        println!("{l}");
    }
    if let Some(s) = driver.signing.as_ref().map(|s| s.stats()) {
        println!(
            "signing: {} signed frames applied, {} unsigned applied, {} rejected",
            s.signed,
            s.unsigned_accepted,
            s.rejected()
        );
        if let Some(l) = nexus_host::signing::rejected_line(&s) {
            println!("{l}");
        }
    }
    if let Some(t) = &driver.tlog {
        let n = t.counts();
        match t.flush() {
            Ok(()) => println!("tlog: {} frames received, {} sent", n.received, n.sent),
            Err(e) => eprintln!("nexus watch: --tlog: recording stopped: {e}"),
        }
    }
    if driver.client().telemetry().connected() {
        exit(EXIT_OK)
    } else {
        println!("no heartbeat from system {sysid} on {conn}");
        exit(EXIT_FAILED)
    }
}

/// Say once per source that a sender other than the vehicle is ignored (after the vehicle's
/// address is known: before, a source may yet turn out to be it).
fn announce_ignored(driver: &Driver, shown: &mut Vec<std::net::SocketAddr>) {
    let link = driver.link();
    let (Some(f), Some(peer)) = (link.foreign(), link.peer()) else {
        return;
    };
    for s in &f.sources {
        if !shown.contains(&s.addr) {
            shown.push(s.addr);
            println!(
                "ignoring UDP from {}: not the vehicle ({peer}); {} so far",
                s.addr,
                s.counts.describe()
            );
        }
    }
}

/// One status line.
fn status_line(driver: &Driver) -> String {
    let tel = driver.client().telemetry();
    let mut parts = Vec::new();
    if let Some(ms) = tel.sim_ms() {
        parts.push(format!("t {:.1} s", ms as f64 / 1000.0));
    }
    parts.push(format!(
        "mode={}",
        tel.mode().map_or("?".into(), |m| m.to_string())
    ));
    parts.push(format!(
        "armed={}",
        match tel.armed() {
            Some(true) => "yes",
            Some(false) => "no",
            None => "?",
        }
    ));
    parts.push(match tel.height_m() {
        Some(h) => format!("alt={h:.1} m"),
        None => "alt=?".into(),
    });
    parts.push(match tel.global_position() {
        Some(p) => format!(
            "pos={:.7},{:.7} amsl={:.1} m",
            p.lat as f64 / 1e7,
            p.lon as f64 / 1e7,
            p.alt as f64 / 1000.0
        ),
        None => "pos=?".into(),
    });
    parts.push(format!("landed={}", tel.landed_state().name()));
    if let Some(as_) = tel.airspeed_m_s() {
        parts.push(format!("airspeed={as_:.1} m/s"));
    }
    if let Some(wp) = tel.waypoint() {
        parts.push(format!("wp={wp}"));
    }
    // The core's supervision says when the vehicle went silent (`driver::SILENT_AFTER`).
    if let (true, Some(last)) = (driver.client().is_silent(), tel.last_rx()) {
        let age_s = driver.now().saturating_since(last).total_micros() as f64 / 1e6;
        parts.push(format!("SILENT {age_s:.0} s"));
    }
    parts.join(" ")
}
