//! The vehicle's newest log fetched over MAVLink's log protocol on a link
//! ([`nexus_core::log_transfer`]: LOG_REQUEST_LIST, LOG_REQUEST_DATA, LOG_REQUEST_END): what
//! `--ulog` keeps of a vehicle nexus attached to.
//!
//! The core's [`LogTransfer`] runs on the caller's thread, fed by a subscription to the
//! link's LOG_ENTRY and LOG_DATA; its requests go out through the link
//! ([`LinkHandle::send`]); each chunk it hands out is written to the file at its offset. The
//! log chosen is the newest the vehicle lists ([`LogEntry::is_newer_than`]), listed twice
//! [`RELIST_WALL`] apart until its size holds still (PX4's logger closes the log just after
//! the disarm; a log still growing would come back cut short). The file is written under
//! its own name only when every byte came; a download that fails leaves no file.
//!
//! ```no_run
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let link: nexus_host::pump::LinkHandle = todo!();
//! let got = nexus_host::ulog::fetch::fetch_newest(&link, "flight.ulg".as_ref(),
//!     &nexus_host::ulog::fetch::FetchOptions::default())?;
//! println!("{} bytes, {} re-requests", got.entry.size_bytes, got.stats.re_requests);
//! # Ok(())
//! # }
//! ```

use std::io::{Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::mpsc::RecvTimeoutError;
use std::sync::Arc;
use std::time::{Duration, Instant as WallInstant};

use mavlink::MessageData;
use nexus_core::log_transfer::{
    LogConfig, LogEntry, LogError, LogEvent, LogMessage, LogRequest, LogStats, LogTransfer,
};
use nexus_core::mav;
use nexus_core::offboard::wire::Addr;
use nexus_core::Instant;

use crate::pump::{LinkHandle, PumpError, SendError};

/// Time between the two listings that must agree on the newest log's size, wall.
pub const RELIST_WALL: Duration = Duration::from_millis(500);
/// Listings made at most while the newest log's size keeps changing.
pub const MAX_LISTINGS: u32 = 6;

/// How a fetch is bounded, and what may cancel it.
#[derive(Clone)]
pub struct FetchOptions {
    /// The largest log fetched, bytes (default: what [`super::Ulog`] reads,
    /// [`super::MAX_ULOG_BYTES`]); a larger one is refused before anything is asked.
    pub max_bytes: u32,
    /// The whole fetch's limit, wall (listings and download).
    pub wall_cap: Duration,
    /// The core machine's retry floor and give-up.
    pub transfer: LogConfig,
    /// The caller's cancellation check, asked between two looks at the link (at least every
    /// 100 ms, wall): `Some(why)` ends the fetch (the vehicle is told, LOG_REQUEST_END) with
    /// [`FetchError::Interrupted`]`(why)`, where `why` completes "the log transfer was …" (the
    /// `nexus` command gives "interrupted by SIGINT" once a signal came). `None` (the
    /// default): only the link, the transfer and [`FetchOptions::wall_cap`] end it. Set it
    /// with [`FetchOptions::cancel_when`].
    pub cancel: Option<Arc<dyn Fn() -> Option<String> + Send + Sync>>,
}

impl FetchOptions {
    /// These options, cancelled once `check` returns `Some(why)` ([`FetchOptions::cancel`]).
    ///
    /// ```
    /// use std::sync::atomic::{AtomicBool, Ordering};
    /// use std::sync::Arc;
    /// use nexus_host::ulog::fetch::FetchOptions;
    /// let stop = Arc::new(AtomicBool::new(false));
    /// let flag = stop.clone();
    /// let opts = FetchOptions::default()
    ///     .cancel_when(move || flag.load(Ordering::SeqCst).then(|| "cancelled".to_owned()));
    /// stop.store(true, Ordering::SeqCst); // from any thread: the fetch ends on its next look
    /// assert_eq!(opts.cancel.as_ref().and_then(|c| c()), Some("cancelled".to_owned()));
    /// ```
    pub fn cancel_when(
        mut self,
        check: impl Fn() -> Option<String> + Send + Sync + 'static,
    ) -> Self {
        self.cancel = Some(Arc::new(check));
        self
    }
}

impl Default for FetchOptions {
    fn default() -> Self {
        FetchOptions {
            max_bytes: super::MAX_ULOG_BYTES.min(u32::MAX as u64) as u32,
            wall_cap: Duration::from_secs(600),
            transfer: LogConfig::default(),
            cancel: None,
        }
    }
}

impl std::fmt::Debug for FetchOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FetchOptions")
            .field("max_bytes", &self.max_bytes)
            .field("wall_cap", &self.wall_cap)
            .field("transfer", &self.transfer)
            .field("cancel", &self.cancel.as_ref().map(|_| "Fn"))
            .finish()
    }
}

/// A log fetched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fetched {
    /// The log as the vehicle listed it.
    pub entry: LogEntry,
    /// How many logs the vehicle listed.
    pub listed: u16,
    /// Listings made (the newest's size compared between them).
    pub listings: u32,
    /// What the download took: requests, re-requests, timeouts, duplicates.
    pub stats: LogStats,
    /// The download's wall time (listings excluded).
    pub download_wall: Duration,
    /// The file written.
    pub path: PathBuf,
}

/// Why no log was fetched.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive] // more variants may come; match with a `_` arm
pub enum FetchError {
    /// The link or its pump is gone.
    #[error("the link is gone: {0}")]
    Pump(#[from] PumpError),
    /// A request could not be sent.
    #[error("a log request could not be sent: {0}")]
    Send(#[from] SendError),
    /// The file could not be written.
    #[error("cannot write {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The transfer could not start or did not finish.
    #[error("{0}")]
    Transfer(#[from] LogError),
    /// The vehicle lists no log.
    #[error("the vehicle lists no log")]
    NoLog,
    /// The link died (or closed) during the fetch.
    #[error("the link died during the log transfer: {0}")]
    Died(String),
    /// The fetch took longer than [`FetchOptions::wall_cap`].
    #[error("the log transfer took longer than {} s", .0.as_secs())]
    WallCap(Duration),
    /// The caller cancelled the fetch ([`FetchOptions::cancel`]), saying why.
    #[error("the log transfer was {0}")]
    Interrupted(String),
}

/// The caller's clock for the machine: µs since the fetch began.
struct Clock(WallInstant);

impl Clock {
    fn now(&self) -> Instant {
        Instant::from_micros(self.0.elapsed().as_micros() as u64)
    }
}

/// Where chunks go: the file being written, positioned as it goes.
struct Sink {
    file: std::io::BufWriter<std::fs::File>,
    pos: u64,
    path: PathBuf,
}

impl Sink {
    fn write(&mut self, ofs: u32, bytes: &[u8]) -> Result<(), FetchError> {
        let io = |source| FetchError::Io {
            path: self.path.clone(),
            source,
        };
        if u64::from(ofs) != self.pos {
            self.file.seek(SeekFrom::Start(ofs.into())).map_err(io)?;
        }
        self.file.write_all(bytes).map_err(io)?;
        self.pos = u64::from(ofs) + bytes.len() as u64;
        Ok(())
    }
}

/// The machine on a link, its messages from a subscription.
struct Driver<'a> {
    link: &'a LinkHandle,
    rx: std::sync::mpsc::Receiver<mav::MavMessage>,
    m: LogTransfer,
    clock: Clock,
    deadline: WallInstant,
    cap: Duration,
    cancel: Option<&'a (dyn Fn() -> Option<String> + Send + Sync)>,
}

impl Driver<'_> {
    fn send(&self, r: LogRequest, to: Addr) -> Result<(), FetchError> {
        let (target_system, target_component) = (to.system, to.component);
        let msg = match r {
            LogRequest::List { start, end } => {
                mav::MavMessage::LOG_REQUEST_LIST(mav::LOG_REQUEST_LIST_DATA {
                    start,
                    end,
                    target_system,
                    target_component,
                })
            }
            LogRequest::Data { id, ofs, count } => {
                mav::MavMessage::LOG_REQUEST_DATA(mav::LOG_REQUEST_DATA_DATA {
                    ofs,
                    count,
                    id,
                    target_system,
                    target_component,
                })
            }
            LogRequest::End => mav::MavMessage::LOG_REQUEST_END(mav::LOG_REQUEST_END_DATA {
                target_system,
                target_component,
            }),
        };
        self.link.send(&msg)?;
        Ok(())
    }

    /// Send what the machine asks and hand its events to `on`; the transfer's end, once it
    /// came (the LOG_REQUEST_END a download owes sent with it).
    fn turn(
        &mut self,
        to: Addr,
        on: &mut impl FnMut(&LogEvent) -> Result<(), FetchError>,
    ) -> Result<Option<LogEvent>, FetchError> {
        while let Some(r) = self.m.poll_request(self.clock.now()) {
            self.send(r, to)?;
        }
        while let Some(e) = self.m.poll_event() {
            on(&e)?;
            if matches!(
                e,
                LogEvent::Listed { .. } | LogEvent::Downloaded { .. } | LogEvent::Failed(_)
            ) {
                while let Some(r) = self.m.poll_request(self.clock.now()) {
                    self.send(r, to)?;
                }
                return Ok(Some(e));
            }
        }
        Ok(None)
    }

    /// Run the machine until its transfer ends; every event on the way goes to `on`.
    fn run(
        &mut self,
        to: Addr,
        mut on: impl FnMut(&LogEvent) -> Result<(), FetchError>,
    ) -> Result<LogEvent, FetchError> {
        loop {
            if let Some(end) = self.turn(to, &mut on)? {
                return Ok(end);
            }
            if let Some(why) = self
                .link
                .with_status(|s| s.died.as_ref().map(|d| d.to_string()))
            {
                return Err(FetchError::Died(why));
            }
            if self.link.is_closed() {
                return Err(FetchError::Died("the link was closed".into()));
            }
            if WallInstant::now() >= self.deadline {
                return Err(FetchError::WallCap(self.cap));
            }
            if let Some(why) = self.cancel.and_then(|c| c()) {
                self.m.cancel();
                while let Some(r) = self.m.poll_request(self.clock.now()) {
                    self.send(r, to)?;
                }
                return Err(FetchError::Interrupted(why));
            }
            // Sleep until a message or the machine's deadline (at most 100 ms: the link's
            // death and the wall cap are looked at in between).
            let wait = match self.m.next_deadline() {
                Some(d) => Duration::from_micros(
                    d.total_micros()
                        .saturating_sub(self.clock.now().total_micros()),
                ),
                None => Duration::from_millis(100),
            }
            .min(Duration::from_millis(100));
            match self.rx.recv_timeout(wait) {
                Ok(msg) => self.take(msg),
                Err(RecvTimeoutError::Timeout) => continue,
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(FetchError::Died("the link was closed".into()))
                }
            }
            // Everything else already waiting, each message's events handed on before the
            // next is taken (the machine holds only a few).
            loop {
                if let Some(end) = self.turn(to, &mut on)? {
                    return Ok(end);
                }
                match self.rx.try_recv() {
                    Ok(msg) => self.take(msg),
                    Err(_) => break,
                }
            }
        }
    }

    fn take(&mut self, msg: mav::MavMessage) {
        let now = self.clock.now();
        match &msg {
            mav::MavMessage::LOG_ENTRY(m) => self.m.handle(now, LogMessage::Entry(m)),
            mav::MavMessage::LOG_DATA(m) => self.m.handle(now, LogMessage::Data(m)),
            _ => {}
        }
    }
}

/// Fetch the newest log the vehicle on `link` lists into `path` (replaced only once every
/// byte came).
pub fn fetch_newest(
    link: &LinkHandle,
    path: &Path,
    opts: &FetchOptions,
) -> Result<Fetched, FetchError> {
    let (system, component) = link.call(|ctx| {
        let t = ctx.client().telemetry();
        (t.ids().target_sysid, t.target_compid())
    })?;
    let to = Addr { system, component };
    let rx = link.subscribe_many(&[mav::LOG_ENTRY_DATA::ID, mav::LOG_DATA_DATA::ID])?;
    let cfg = LogConfig {
        max_bytes: opts.max_bytes,
        ..opts.transfer
    };
    let mut d = Driver {
        link,
        rx,
        m: LogTransfer::new(cfg, to),
        clock: Clock(WallInstant::now()),
        deadline: WallInstant::now() + opts.wall_cap,
        cap: opts.wall_cap,
        cancel: opts.cancel.as_deref(),
    };
    // The newest log, once two listings agree on its size.
    let mut last: Option<LogEntry> = None;
    let mut listings = 0;
    let (entry, listed) = loop {
        d.m.list(d.clock.now())?;
        listings += 1;
        let end = d.run(to, |_| Ok(()))?;
        let (count, newest) = match end {
            LogEvent::Listed { count, newest, .. } => (count, newest),
            LogEvent::Failed(e) => return Err(e.into()),
            _ => (0, None),
        };
        let Some(newest) = newest else {
            return Err(FetchError::NoLog);
        };
        if last == Some(newest) || listings >= MAX_LISTINGS {
            break (newest, count);
        }
        last = Some(newest);
        std::thread::sleep(RELIST_WALL);
    };
    let part = partial_path(path);
    let io = |source| FetchError::Io {
        path: part.clone(),
        source,
    };
    let file = std::fs::File::create(&part).map_err(io)?;
    let mut sink = Sink {
        file: std::io::BufWriter::new(file),
        pos: 0,
        path: part.clone(),
    };
    let t0 = WallInstant::now();
    let result =
        d.m.download(d.clock.now(), entry)
            .map_err(FetchError::from)
            .and_then(|()| {
                d.run(to, |e| match e {
                    LogEvent::Data { ofs, len, data } => sink.write(*ofs, &data[..*len as usize]),
                    _ => Ok(()),
                })
            });
    let finished = match result {
        Ok(LogEvent::Downloaded { stats, .. }) => sink
            .file
            .flush()
            .map_err(io)
            .and_then(|()| {
                sink.file
                    .get_ref()
                    .set_len(entry.size_bytes.into())
                    .map_err(io)
            })
            .map(|()| stats),
        Ok(LogEvent::Failed(e)) => Err(e.into()),
        Ok(_) => Err(FetchError::NoLog),
        Err(e) => Err(e),
    };
    drop(sink);
    let stats = match finished {
        Ok(s) => s,
        Err(e) => {
            let _ = std::fs::remove_file(&part);
            return Err(e);
        }
    };
    std::fs::rename(&part, path).map_err(|source| FetchError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    Ok(Fetched {
        entry,
        listed,
        listings,
        stats,
        download_wall: t0.elapsed(),
        path: path.to_path_buf(),
    })
}

/// The file a download is written to until it is whole: `NAME.part` beside `path`.
fn partial_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".part");
    path.with_file_name(name)
}
