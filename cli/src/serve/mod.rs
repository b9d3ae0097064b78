//! `nexus serve`: the session service (wait engine, verbs, step programs) as an MCP server, on
//! the official Rust SDK (`rmcp`), over stdio (the default) or streamable HTTP (`--http ADDR`,
//! a bearer token required).
//!
//! Every tool is one call of the session service ([`nexus_host::session`]): `start_session`,
//! `wait_until` (the wait engine's `WaitResult`, capped in wall time and continued with
//! `since_seq`), `run_steps` / `abort_steps`, `snapshot`, `texts`, the verbs (arm, takeoff,
//! goto, land, …), `upload_plan` (a `.plan` inside `--root`, or inline JSON), `close_sitl`,
//! `kill_instance`, `list_sessions`. Errors are MCP tool errors with the words the `nexus`
//! command uses; nothing a client sends ends the server.
//!
//! Every vehicle the server started is closed when it ends: stdin closed (stdio), SIGINT or
//! SIGTERM, the HTTP server stopped. `start_session` starts the built-in simulated PX4 or PX4
//! SITL, or attaches to a running vehicle (`connect`, as `nexus run --connect`); a vehicle
//! that does not identify as a simulator is refused every verb, program and reaction that can
//! arm, move or reconfigure it ([`crate::guard`] judges them) unless the server runs with
//! `--real-vehicle`. Each session's live report is the resource `nexus://session/ID/report`;
//! its tlog (`nexus://session/ID/tlog`) and, once it closed, its HTML report
//! (`nexus://session/ID/report.html`) are kept in the records directory ([`records`]).

mod answers;
mod http;
mod inputs;
pub mod records;
mod resources;
mod server;
mod tools;

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use nexus_host::session::Sessions;

pub use server::NexusServer;

/// Longest idle limit, s (a day).
pub const IDLE_MAX_S: f64 = 86_400.0;
/// Most sessions one server may hold.
pub const SESSIONS_MAX: usize = 64;

/// `nexus serve` options.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Serve over streamable HTTP at ADDR (`PORT` or `IP:PORT`; a bare port is 127.0.0.1;
    /// port 0 picks a free one, printed to stderr) instead of stdio. Requests need
    /// `Authorization: Bearer TOKEN`.
    #[arg(long, value_name = "ADDR")]
    pub http: Option<String>,
    /// The bearer token HTTP clients must send (default: a random one, printed to stderr).
    #[arg(long, value_name = "TOKEN", requires = "http")]
    pub token: Option<String>,
    /// Close a session unused for this many wall seconds (its waits end `closed`); 0: never.
    #[arg(long, value_name = "S", default_value_t = 600.0)]
    pub idle_s: f64,
    /// Most sessions open at once.
    #[arg(long, value_name = "N", default_value_t = 8)]
    pub max_sessions: usize,
    /// The directory files (`.plan`s) are read from; no path outside it is read (default:
    /// the working directory).
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,
    /// `--signing-key FILE`, `--require-signed`: every session's link signs and verifies, as
    /// `fly`'s do (the built-in vehicle gets the key, in PX4's "always" mode).
    #[command(flatten)]
    pub signing: crate::signing::SigningArgs,
    /// Allow the verbs that can arm, move or reconfigure a vehicle attached with
    /// `start_session`'s `connect` that does not identify as a simulator — a real aircraft.
    #[arg(long)]
    pub real_vehicle: bool,
    /// Keep each session's tlog and HTML report in DIR (made if missing), after the server
    /// ends too (default: a private directory in the system's temporary directory, removed
    /// when the server ends).
    #[arg(long, value_name = "DIR")]
    pub records: Option<PathBuf>,
    /// Closed sessions whose tlog and HTML report are kept (and served as resources); an
    /// older one's files are deleted. 0 to 1000.
    #[arg(long, value_name = "N", default_value_t = records::KEEP_CLOSED_DEFAULT)]
    pub keep_closed: usize,
}

/// The server's settings, checked.
#[derive(Debug, Clone)]
pub struct Config {
    /// Canonical root directory.
    pub root: PathBuf,
    /// Most sessions at once.
    pub max_sessions: usize,
    /// The signing every session's link takes (applied as `fly` applies it).
    pub signing: crate::signing::SigningArgs,
    /// `--real-vehicle`.
    pub real_vehicle: bool,
}

/// Run `nexus serve`.
pub fn main(args: &ServeArgs) -> ExitCode {
    match serve(args) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("nexus serve: {e}");
            crate::exit(crate::EXIT_SETUP)
        }
    }
}

fn parse_addr(s: &str) -> Result<SocketAddr, String> {
    if let Ok(port) = s.parse::<u16>() {
        return Ok(SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port));
    }
    s.parse::<SocketAddr>()
        .map_err(|_| format!("--http must be PORT or IP:PORT (127.0.0.1:8765), got {s:?}"))
}

fn random_token() -> Result<String, String> {
    use std::io::Read;
    let mut b = [0u8; 24];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut b))
        .map_err(|e| format!("cannot make a token (/dev/urandom: {e}); give one with --token"))?;
    Ok(b.iter().map(|x| format!("{x:02x}")).collect())
}

fn serve(args: &ServeArgs) -> Result<ExitCode, String> {
    if !(args.idle_s.is_finite() && (0.0..=IDLE_MAX_S).contains(&args.idle_s)) {
        return Err(format!(
            "--idle-s must be a number of seconds from 0 to {IDLE_MAX_S}, got {}",
            args.idle_s
        ));
    }
    if !(1..=SESSIONS_MAX).contains(&args.max_sessions) {
        return Err(format!(
            "--max-sessions must be 1 to {SESSIONS_MAX}, got {}",
            args.max_sessions
        ));
    }
    let root = match &args.root {
        Some(r) => r.clone(),
        None => std::env::current_dir().map_err(|e| format!("no working directory: {e}"))?,
    };
    let root = root
        .canonicalize()
        .map_err(|e| format!("--root {}: {e}", root.display()))?;
    if !root.is_dir() {
        return Err(format!("--root {}: not a directory", root.display()));
    }
    let http = args.http.as_deref().map(parse_addr).transpose()?;
    if let Some(t) = &args.token {
        if t.len() < 8 || !t.chars().all(|c| c.is_ascii_graphic()) {
            return Err("--token must be at least 8 printable ASCII characters".into());
        }
    }
    // The key file is read now, so a bad one stops the server before it serves.
    args.signing.signing()?;
    if args.keep_closed > records::KEEP_CLOSED_MAX {
        return Err(format!(
            "--keep-closed must be 0 to {}, got {}",
            records::KEEP_CLOSED_MAX,
            args.keep_closed
        ));
    }
    let records = Arc::new(records::Records::new(
        args.records.as_deref(),
        args.keep_closed,
    )?);
    eprintln!(
        "nexus serve: session records (tlog, HTML report) in {}{}",
        records.dir().display(),
        if records.temporary() {
            " (removed when the server ends; keep them with --records DIR)"
        } else {
            ""
        }
    );
    let idle = (args.idle_s > 0.0).then(|| Duration::from_secs_f64(args.idle_s));
    let sessions = Arc::new(Sessions::new(idle));
    let config = Config {
        root,
        max_sessions: args.max_sessions,
        signing: args.signing.clone(),
        real_vehicle: args.real_vehicle,
    };
    // We end on SIGINT / SIGTERM / SIGHUP ourselves (closing every vehicle first).
    let _handling = crate::interrupt::handle();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))?;
    let server = NexusServer::new(Arc::clone(&sessions), config, Arc::clone(&records));
    let result = runtime.block_on(async {
        match http {
            None => stdio(server).await,
            Some(addr) => {
                let token = match &args.token {
                    Some(t) => t.clone(),
                    None => {
                        let t = random_token()?;
                        eprintln!("nexus serve: token {t}");
                        t
                    }
                };
                http::serve(server, addr, token).await
            }
        }
    });
    // Every vehicle this server started stops before it exits; then the reports of the
    // sessions that were open are drawn.
    records.defer();
    sessions.close_all();
    drop(sessions);
    // A read of stdin still blocked cannot be cancelled: do not wait for it.
    runtime.shutdown_timeout(Duration::from_millis(200));
    if let Ok(why) = &result {
        eprintln!("nexus serve: {why}; every vehicle closed");
    }
    records.write_deferred();
    records.end();
    result?;
    Ok(match crate::interrupt::caught() {
        Some(c) => crate::exit(c.exit_code()),
        None => crate::exit(crate::EXIT_OK),
    })
}

/// Resolves when SIGINT, SIGTERM or SIGHUP came (polled: crate::interrupt receives them).
pub(crate) async fn interrupted() -> String {
    loop {
        if let Some(c) = crate::interrupt::caught() {
            return c.reason();
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn stdio(server: NexusServer) -> Result<String, String> {
    use rmcp::ServiceExt;
    let running = server
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|e| format!("MCP over stdio: {e}"))?;
    let token = running.cancellation_token();
    tokio::select! {
        r = running.waiting() => Ok(match r {
            Ok(reason) => format!("the client went ({reason:?})"),
            Err(e) => format!("the service ended: {e}"),
        }),
        why = interrupted() => {
            token.cancel();
            Ok(why)
        }
    }
}
