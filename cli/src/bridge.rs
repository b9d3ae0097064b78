//! `nexus bridge FROM TO`: forward MAVLink between two links until interrupted.
//!
//! ```text
//! nexus bridge serial:/dev/ttyUSB0:921600 udpin:0.0.0.0:14540     # a flight controller's UART
//! nexus bridge tcpin:127.0.0.1:5760 udpout:127.0.0.1:14580 \
//!     --baud 230400 --core-only                                    # QEMU's UART → sim instance 0
//! ```
//!
//! Impairment (both directions, deterministic for a given `--impair-sequence`), to rehearse a
//! telemetry radio:
//!
//! ```text
//! nexus bridge serial:/dev/pts/3:57600 udpout:127.0.0.1:14580 \
//!     --loss-pct 20 --latency-ms 200 --jitter-ms 50 --duplicate-pct 1 --reorder-pct 1 \
//!     --rate-baud 57600
//! ```
//!
//! Counters go to stderr every `--stats-s` seconds and at the end. Exit status (the `nexus`
//! convention): 1 when a link is lost while bridging, 2 when the bridge cannot start (a link
//! that does not open, a port in use, bad arguments).

use std::process::ExitCode;
use std::time::{Duration, Instant};

use nexus_host::bridge::impair::Impairment;
use nexus_host::bridge::{
    bridge, BridgeOptions, BridgeStats, DirectionStats, MsgFilter, DEFAULT_BACKLOG_BYTES,
};
use nexus_host::transport::ConnString;

/// Arguments of `nexus bridge`.
#[derive(Debug, Clone, clap::Args)]
pub struct BridgeArgs {
    /// First link, e.g. `serial:/dev/ttyUSB0:921600` or `tcpin:127.0.0.1:5760`.
    pub from: ConnString,
    /// Second link, e.g. `udpin:0.0.0.0:14540` or `udpout:127.0.0.1:14580`.
    pub to: ConnString,
    /// Pace bytes written to a TCP or serial side like a UART at this baud (8N1). For a TCP
    /// stream standing in for a UART (QEMU), which otherwise queues without limit. The line is
    /// flow-controlled: a reader slower than the baud loses frames, it does not lag.
    #[arg(long)]
    pub baud: Option<u32>,
    /// With --baud: most bytes held back (while the line or its reader is busy) before frames
    /// are dropped: telemetry first, a reply (mission, command, parameter) only when replies
    /// fill it.
    #[arg(long, default_value_t = DEFAULT_BACKLOG_BYTES)]
    pub backlog: usize,
    /// Write to a TCP or serial side only the messages nexus-core decodes.
    #[arg(long, conflicts_with = "ids")]
    pub core_only: bool,
    /// Write to a TCP or serial side only these message ids (comma-separated).
    #[arg(long, value_delimiter = ',')]
    pub ids: Vec<u32>,
    /// Print the counters every this many seconds (0: only at the end; at most 1e6).
    #[arg(long, default_value_t = 5.0)]
    pub stats_s: f64,
    /// Record every frame the bridge receives, from both links, to FILE (.tlog).
    #[arg(long, value_name = "FILE")]
    pub tlog: Option<std::path::PathBuf>,
    /// Impairment: drop this percentage of frames (each direction).
    #[arg(long, default_value_t = 0.0, value_name = "PCT")]
    pub loss_pct: f64,
    /// Impairment: delay every frame this long.
    #[arg(long, default_value_t = 0, value_name = "MS")]
    pub latency_ms: u64,
    /// Impairment: vary each frame's delay by up to this much either way.
    #[arg(long, default_value_t = 0, value_name = "MS")]
    pub jitter_ms: u64,
    /// Impairment: send this percentage of frames twice.
    #[arg(long, default_value_t = 0.0, value_name = "PCT")]
    pub duplicate_pct: f64,
    /// Impairment: hold back this percentage of frames so later ones overtake them.
    #[arg(long, default_value_t = 0.0, value_name = "PCT")]
    pub reorder_pct: f64,
    /// Impairment: limit every side to a serial line's byte rate at this baud (8N1), a UDP
    /// side too (a radio's air rate).
    #[arg(long, value_name = "BAUD")]
    pub rate_baud: Option<u32>,
    /// Impairment: which pseudo-random sequence decides; the same number repeats the run.
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub impair_sequence: u64,
    /// `--signing-key FILE` (with `--sign-side`), `--require-signed`. Without them every
    /// frame crosses as it came, signed or not.
    #[command(flatten)]
    pub signing: super::signing::SigningArgs,
    /// The signed side (A: the first link, B: the second): frames written to it are signed
    /// with `--signing-key` (those signed already pass intact), frames from it are verified
    /// and dropped when they fail (unsigned ones too with `--require-signed`).
    #[arg(long, value_enum, requires = "signing_key", value_name = "A|B")]
    pub sign_side: Option<SignSide>,
}

/// `--sign-side`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SignSide {
    /// The first link.
    #[value(name = "A", alias = "a")]
    A,
    /// The second link.
    #[value(name = "B", alias = "b")]
    B,
}

impl BridgeArgs {
    /// The signing these arguments ask for (`--signing-key` needs `--sign-side`).
    pub fn signing(&self) -> Result<Option<nexus_host::bridge::BridgeSigning>, String> {
        use nexus_host::bridge::{BridgeSide, BridgeSigning};
        let Some(signing) = self.signing.signing()? else {
            return Ok(None);
        };
        let side = match self.sign_side {
            Some(SignSide::A) => BridgeSide::A,
            Some(SignSide::B) => BridgeSide::B,
            None => {
                return Err(
                    "--signing-key needs --sign-side A|B: the side that is the signed \
                            link (signed frames cross intact without a key)"
                        .into(),
                )
            }
        };
        Ok(Some(BridgeSigning { side, signing }))
    }
}

impl BridgeArgs {
    /// The bridge options these arguments ask for.
    pub fn options(&self) -> BridgeOptions {
        let stream_filter = if self.core_only {
            MsgFilter::CoreSubset
        } else if !self.ids.is_empty() {
            MsgFilter::Ids(self.ids.clone())
        } else {
            MsgFilter::All
        };
        BridgeOptions {
            stream_baud: self.baud,
            stream_backlog_bytes: self.backlog,
            stream_filter,
            impair: Impairment {
                loss_pct: self.loss_pct,
                latency: Duration::from_millis(self.latency_ms),
                jitter: Duration::from_millis(self.jitter_ms),
                duplicate_pct: self.duplicate_pct,
                reorder_pct: self.reorder_pct,
                rate_baud: self.rate_baud,
                sequence: self.impair_sequence,
            },
            ..BridgeOptions::default()
        }
    }
}

fn line(name: &str, d: &DirectionStats) -> String {
    format!(
        "{name}: in {} B / {} units, out {} B / {} units, filtered {}, paced-out {}, congested {}, \
         no peer {}, garbage {} B, bad frames {}, backlog {} B, ignored {} datagrams, \
         impaired: lost {}, duplicated {}, reordered {}",
        d.bytes_in,
        d.units_in,
        d.bytes_out,
        d.units_out,
        d.filtered,
        d.throttled,
        d.congested,
        d.no_peer,
        d.garbage_bytes,
        d.bad_frames,
        d.backlog_bytes,
        d.ignored,
        d.impair_lost,
        d.impair_duplicated,
        d.impair_reordered
    ) + &if d.signed_out + d.signing_rejected > 0 {
        format!(
            ", signed {}, failed the signing check {}",
            d.signed_out, d.signing_rejected
        )
    } else {
        String::new()
    }
}

fn report(args: &BridgeArgs, s: &BridgeStats) {
    eprintln!(
        "{}",
        line(&format!("{} → {}", args.from, args.to), &s.forward)
    );
    eprintln!(
        "{}",
        line(&format!("{} → {}", args.to, args.from), &s.backward)
    );
}

/// Run the bridge until a link is lost or the process is interrupted.
pub fn run(args: &BridgeArgs) -> ExitCode {
    if let Err(e) = crate::limits::duration_s("--stats-s", args.stats_s) {
        eprintln!("nexus bridge: {e}");
        return ExitCode::from(2);
    }
    // A signal stops the bridge in order (last figures, ports freed) and exits 128 + its
    // number (crate::interrupt).
    let mut options = args.options();
    match args.signing() {
        Ok(s) => options.signing = s,
        Err(e) => {
            eprintln!("nexus bridge: {e}");
            return ExitCode::from(2);
        }
    }
    if let Some(p) = &args.tlog {
        if let Err(e) = crate::limits::check_output("--tlog", p) {
            eprintln!("nexus bridge: {e}");
            return ExitCode::from(2);
        }
        match nexus_host::tlog::Tlog::create(p) {
            Ok(t) => options.tlog = Some(t),
            Err(e) => {
                eprintln!("nexus bridge: --tlog {}: {e}", p.display());
                return ExitCode::from(2);
            }
        }
    }
    let recording = options.tlog.clone();
    let _interrupts = crate::interrupt::handle();
    let b = match bridge(&args.from, &args.to, options) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("nexus bridge: {e}");
            return ExitCode::from(2);
        }
    };
    let bound =
        |a: Option<std::net::SocketAddr>| a.map(|a| format!(" (on {a})")).unwrap_or_default();
    eprintln!(
        "nexus bridge: {}{} ⇄ {}{}",
        args.from,
        bound(b.from_local_addr()),
        args.to,
        bound(b.to_local_addr())
    );
    let every = (args.stats_s > 0.0).then(|| Duration::from_secs_f64(args.stats_s));
    let mut next = every.map(|d| Instant::now() + d);
    while b.is_running() && crate::interrupt::caught().is_none() {
        std::thread::sleep(Duration::from_millis(100));
        if let (Some(t), Some(d)) = (next, every) {
            if Instant::now() >= t {
                report(args, &b.stats());
                next = Some(t + d);
            }
        }
    }
    let last = b.stats();
    report(args, &last);
    if let Some(t) = &recording {
        let n = t.counts();
        match t.flush() {
            Ok(()) => eprintln!(
                "nexus bridge: tlog: {} frames from {}, {} from {}",
                n.received, args.from, n.sent, args.to
            ),
            Err(e) => eprintln!("nexus bridge: --tlog: recording stopped: {e}"),
        }
    }
    let interrupted = crate::interrupt::caught();
    if let Some(c) = interrupted {
        eprintln!("nexus bridge: {}: stopped", c.reason());
    }
    match b.stop() {
        Ok(_) => interrupted.map_or(ExitCode::SUCCESS, |c| ExitCode::from(c.exit_code())),
        Err(e) => {
            eprintln!("nexus bridge: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Cmd {
        #[command(flatten)]
        args: BridgeArgs,
    }

    fn parse(argv: &[&str]) -> Result<BridgeArgs, clap::Error> {
        Cmd::try_parse_from(std::iter::once("bridge").chain(argv.iter().copied())).map(|c| c.args)
    }

    #[test]
    fn arguments_become_options() {
        let a = parse(&[
            "tcpin:127.0.0.1:5760",
            "udpout:127.0.0.1:14580",
            "--baud",
            "230400",
            "--core-only",
        ])
        .unwrap();
        let o = a.options();
        assert_eq!(o.stream_baud, Some(230_400));
        assert_eq!(o.stream_filter, MsgFilter::CoreSubset);
        assert_eq!(o.stream_backlog_bytes, DEFAULT_BACKLOG_BYTES);
        let a = parse(&[
            "serial:/dev/ttyUSB0:921600",
            "udpin:0.0.0.0:14540",
            "--ids",
            "0,253",
        ])
        .unwrap();
        assert_eq!(a.options().stream_filter, MsgFilter::Ids(vec![0, 253]));
        assert!(!a.options().impair.is_active());
        let a = parse(&[
            "serial:/dev/pts/4:57600",
            "udpout:127.0.0.1:14580",
            "--loss-pct",
            "20",
            "--latency-ms",
            "200",
            "--rate-baud",
            "57600",
            "--impair-sequence",
            "9",
        ])
        .unwrap();
        let i = a.options().impair;
        assert_eq!(
            (i.loss_pct, i.latency, i.rate_baud, i.sequence),
            (20.0, Duration::from_millis(200), Some(57_600), 9)
        );
        assert!(i.is_active());
        assert_eq!(a.options().stream_baud, None);
    }

    #[test]
    fn bad_arguments_are_refused() {
        assert!(parse(&["tcpin:127.0.0.1:5760"]).is_err(), "TO missing");
        assert!(parse(&["bogus:1", "udpin:0.0.0.0:14540"]).is_err());
        assert!(parse(&["udpin:0.0.0.0:1", "udpout:127.0.0.1:2", "--loss-pct", "x"]).is_err());
        assert!(parse(&[
            "tcpin:127.0.0.1:5760",
            "udpin:0.0.0.0:14540",
            "--core-only",
            "--ids",
            "0"
        ])
        .is_err());
    }
}
