//! `nexus sign setup CONN --signing-key FILE`: install a key on a vehicle with SETUP_SIGNING
//! (message 256). The `--signing-key` options of the other commands are [`crate::signing`]'s.
//!
//! A key file holds 32 raw bytes, or 64 hex digits, or else a passphrase (its SHA-256 is the
//! key, as QGroundControl and MAVProxy derive it). No key ever shows in a message or report.

use nexus_host::signing::load_key;
use nexus_host::transport::{ConnString, Link, LinkOptions, PeerRule};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// Arguments of `nexus sign`.
#[derive(Debug, Clone, clap::Args)]
pub struct SignArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: SignCommand,
}

/// `nexus sign` subcommands.
#[derive(Debug, Clone, clap::Subcommand)]
pub enum SignCommand {
    /// Install the key on the vehicle at CONN with SETUP_SIGNING, then check that it signs.
    Setup(SetupArgs),
}

/// Arguments of `nexus sign setup`.
#[derive(Debug, Clone, clap::Args)]
pub struct SetupArgs {
    /// Connection string (udpin:0.0.0.0:14540, udpout:HOST:PORT, tcp:HOST:PORT,
    /// serial:/dev/ttyACM0:57600).
    pub conn: String,
    /// The key to install (see `--signing-key` of `fly`).
    #[arg(long, value_name = "FILE")]
    pub signing_key: PathBuf,
    /// Sign the SETUP_SIGNING itself with the key in FILE: the vehicle's current key, which a
    /// vehicle in "always" mode asks for.
    #[arg(long, value_name = "FILE")]
    pub current_key: Option<PathBuf>,
    /// System id of the vehicle (default: the first autopilot heard).
    #[arg(long, value_name = "ID")]
    pub sysid: Option<u8>,
    /// Seconds (wall) to find the vehicle and see it sign.
    #[arg(long, default_value_t = 10.0, value_name = "SECONDS")]
    pub timeout: f64,
}

/// Run `nexus sign`.
pub fn main(args: &SignArgs) -> ExitCode {
    match &args.command {
        SignCommand::Setup(a) => match setup(a) {
            Ok(line) => {
                println!("{line}");
                ExitCode::SUCCESS
            }
            Err((code, e)) => {
                eprintln!("nexus sign setup: {e}");
                ExitCode::from(code)
            }
        },
    }
}

fn setup(a: &SetupArgs) -> Result<String, (u8, String)> {
    use nexus_core::frame::signing::{Signer, Verdict, Verifier, VerifyPolicy};
    let setup_err = |e: String| (2u8, e);
    let key = load_key(&a.signing_key).map_err(|e| setup_err(format!("--signing-key: {e}")))?;
    let current = a
        .current_key
        .as_deref()
        .map(load_key)
        .transpose()
        .map_err(|e| setup_err(format!("--current-key: {e}")))?;
    let conn: ConnString = a.conn.parse().map_err(|e| setup_err(format!("{e}")))?;
    let link = Link::open_with(
        &conn,
        &LinkOptions {
            peer: PeerRule::FirstAutopilot { sysid: a.sysid },
            ..LinkOptions::default()
        },
    )
    .map_err(|e| setup_err(e.to_string()))?;
    let deadline = Instant::now() + Duration::from_secs_f64(a.timeout.clamp(0.1, 1e6));
    let (mut link, sysid, compid) =
        match nexus_host::transport::discover(link, Some(deadline), a.sysid, None, None) {
            Ok(Some(f)) => f,
            Ok(None) => return Err((1, format!("no autopilot heartbeat on {conn}"))),
            Err(e) => return Err(setup_err(format!("{conn}: {e}"))),
        };
    let clock = nexus_host::signing::wall_clock(Duration::ZERO);
    let msg = nexus_core::mav::SETUP_SIGNING_DATA {
        initial_timestamp: clock.at(nexus_core::Instant::ZERO),
        target_system: sysid,
        target_component: compid,
        secret_key: *key.bytes(),
    };
    let mut buf = [0u8; nexus_core::frame::MAX_FRAME_LEN];
    let mut enc = nexus_core::frame::Encoder::new(
        nexus_host::offboard_client::OWN_SYSTEM_ID,
        nexus_host::offboard_client::OWN_COMPONENT_ID,
    );
    let mut signer = current.map(|k| Signer::new(k, 0, clock));
    let origin = Instant::now();
    let mut verifier: Verifier<4> = Verifier::new(key, VerifyPolicy::STRICT);
    let mut decoder = nexus_core::frame::Decoder::new();
    let mut rx = vec![0u8; nexus_host::transport::RECV_BUF_LEN];
    let mut next_send = Instant::now();
    let mut sent = 0;
    while Instant::now() < deadline {
        if Instant::now() >= next_send && sent < 5 {
            let mut n = enc
                .encode(&msg, &mut buf)
                .map_err(|e| setup_err(e.to_string()))?;
            if let Some(s) = &mut signer {
                let now = nexus_core::Instant::from_micros(origin.elapsed().as_micros() as u64);
                n = s.sign(now, &mut buf, n).unwrap_or(n);
            }
            let _ = link.send(&buf[..n]);
            let _ = link.flush();
            sent += 1;
            next_send = Instant::now() + Duration::from_millis(500);
        }
        std::thread::sleep(Duration::from_millis(20));
        while let Some(n) = link.recv(&mut rx).map_err(|e| setup_err(e.to_string()))? {
            let mut input = &rx[..n];
            while !input.is_empty() {
                let (used, raw) = decoder.feed(input);
                input = &input[used..];
                let Some(raw) = raw else {
                    if used == 0 {
                        break;
                    }
                    continue;
                };
                let ts = clock.at(nexus_core::Instant::from_micros(
                    origin.elapsed().as_micros() as u64,
                ));
                if raw.header.sysid == sysid
                    && raw.header.msgid == 0
                    && verifier.check(&raw, ts) == Verdict::Signed
                {
                    return Ok(format!(
                        "system {sysid} component {compid} on {conn}: key installed \
                         (SETUP_SIGNING sent {sent}x); its heartbeat is signed with it"
                    ));
                }
            }
        }
    }
    Err((
        1,
        format!(
            "system {sysid} on {conn}: sent SETUP_SIGNING {sent}x, but no heartbeat signed with \
             the key came back (a vehicle in \"always\" mode may want it signed with \
             --current-key)"
        ),
    ))
}
