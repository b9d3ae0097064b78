//! Downloading the vehicle's own logs over MAVLink (the log protocol QGroundControl's log
//! download speaks), sans-IO.
//!
//! ```text
//! list:      LOG_REQUEST_LIST(0, 0xffff) ──▶            ◀── LOG_ENTRY(id, time_utc, size, num_logs) …
//! download:  LOG_REQUEST_DATA(id, ofs, count) ──▶       ◀── LOG_DATA(id, ofs, 90 bytes) …
//!            (missing ranges re-requested)               at the end: LOG_REQUEST_END ──▶
//! ```
//!
//! [`LogTransfer`] is driven like the other machines: `handle_frame` (or `handle`) every frame
//! from the vehicle, `poll_request` / `poll_transmit` until `None`, `poll_event` until `None`,
//! and a wake-up at `next_deadline` if nothing arrives first. Its timers count the caller's
//! clock (`now`, the driver's wall clock): a transfer moves at the link's speed, whatever the
//! vehicle's clock does.
//!
//! **Listing.** Entries are taken in any order, each id once (a fixed bitmap of
//! [`LIST_IDS`] ids: a vehicle numbering a log beyond it is [`LogError::TooManyLogs`]). The
//! listing ends when `num_logs` distinct entries came, or with `num_logs` 0 (the MAVLink
//! spec's "no logs"). PX4 (main) numbers its logs from 0 and sends nothing at all when it has
//! none; a list that goes quiet is asked again from the lowest id not yet seen, and a listing
//! that stays quiet ends with what it has ([`LogEvent::Listed`] with `count < expected`), or
//! [`LogError::ListTimeout`] when nothing came.
//!
//! **Downloading.** The log is fetched in windows of [`WINDOW_BINS`] chunks of [`CHUNK_LEN`]
//! bytes ([`WINDOW_LEN`] bytes), each asked for with one LOG_REQUEST_DATA; a bitmap of the
//! window says which chunks came. Each new chunk is handed out at once as
//! [`LogEvent::Data`] with its offset (the machine keeps no log bytes: the caller writes them
//! where they belong), duplicates are dropped. When the window's last requested chunk arrives,
//! or the stream goes quiet for the retry timer, the missing chunks are asked for again from
//! the first one missing, one request covering the gaps that lie within [`MERGE_BINS`] chunks
//! of each other (PX4 serves one request at a time: a new one replaces the one running). A
//! complete window moves on to the next; the last ends the download with
//! [`LogEvent::Downloaded`] and a LOG_REQUEST_END, as QGroundControl ends one. A log larger
//! than [`LogConfig::max_bytes`] is refused before anything is asked
//! ([`LogError::TooLarge`]).
//!
//! **Timers.** A request is resent (a list from its first gap, data from its first missing
//! chunk) after the retry timer of the link's measured round trip
//! ([`crate::offboard::RttEstimator`]: first reply to a request sent once), floored at
//! [`LogConfig::retry_floor_ms`], its back-off capped at [`BACKOFF_CAP_MS`] once measured; [`LogConfig::max_sends`] requests in a row that bring
//! nothing new end the transfer ([`LogError::ListTimeout`], [`LogError::DataTimeout`]).
//!
//! **Back-pressure.** At most [`EVENTS_LEN`] events wait for `poll_event`; a LOG_ENTRY or
//! LOG_DATA that arrives while they are all waiting is not taken in (counted in
//! [`LogStats::refused`]) and is asked for again like a lost one: no chunk is ever marked
//! received without its event. The transfer's end (`Listed`, `Downloaded`, `Failed`) has a slot
//! of its own, handed out after the queued events.

use crate::frame::Encoder;
use crate::frame::RawFrame;
use crate::offboard::wire::Addr;
use crate::offboard::RttEstimator;
use crate::time::Instant;
use heapless::Deque;
use mavlink::dialects::common as mav;
use mavlink::{MavlinkVersion, MessageData};

/// Bytes of log in one LOG_DATA.
pub const CHUNK_LEN: usize = 90;
/// Chunks in one download window (the window's bitmap is `WINDOW_BINS / 8` bytes).
pub const WINDOW_BINS: usize = 1024;
/// Bytes of one download window: what one LOG_REQUEST_DATA asks for at first.
pub const WINDOW_LEN: u32 = (WINDOW_BINS * CHUNK_LEN) as u32;
/// Log ids a listing tracks (`LIST_IDS / 8` bytes of bitmap): ids 0 to `LIST_IDS - 1`.
pub const LIST_IDS: usize = 4096;
/// Missing chunks this close together (received chunks between them) go in one re-request.
pub const MERGE_BINS: u32 = 32;
/// Events held for `poll_event` besides the transfer's end.
pub const EVENTS_LEN: usize = 4;
/// The default [`LogConfig::max_bytes`]: 1 GiB.
pub const DEFAULT_MAX_BYTES: u32 = 1 << 30;
/// Once the round trip is measured, a stalled stream's timer is backed off to at most this,
/// ms (or the measured timer, when longer): a stall mid-download is a lost chunk or request far
/// more often than a slower link, and each one waits the whole timer.
pub const BACKOFF_CAP_MS: u64 = 1_000;

/// How a transfer paces and bounds itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct LogConfig {
    /// The largest log downloaded, bytes; a larger one is [`LogError::TooLarge`].
    pub max_bytes: u32,
    /// The retry timer's floor, ms of the caller's clock (the measured round trip's timer
    /// when that is longer).
    pub retry_floor_ms: u64,
    /// Requests in a row that bring nothing new before the transfer gives up.
    pub max_sends: u8,
}

impl Default for LogConfig {
    fn default() -> Self {
        LogConfig {
            max_bytes: DEFAULT_MAX_BYTES,
            retry_floor_ms: 100,
            max_sends: 8,
        }
    }
}

/// One log the vehicle listed (LOG_ENTRY).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct LogEntry {
    /// The vehicle's id of the log (PX4: 0-based, in its listing's order).
    pub id: u16,
    /// When it was last written, s since the Unix epoch (PX4: the file's mtime; 0: unknown).
    pub time_utc_s: u32,
    /// Its size, bytes.
    pub size_bytes: u32,
}

impl LogEntry {
    /// Whether `self` is newer than `other`: written later, or at the same second with a
    /// higher id.
    pub fn is_newer_than(&self, other: &LogEntry) -> bool {
        (self.time_utc_s, self.id) > (other.time_utc_s, other.id)
    }
}

/// A request the machine wants sent to the vehicle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum LogRequest {
    /// LOG_REQUEST_LIST of ids `start..=end` (`end` 0xffff: to the last).
    List {
        /// First id.
        start: u16,
        /// Last id.
        end: u16,
    },
    /// LOG_REQUEST_DATA: `count` bytes of log `id` from byte `ofs`.
    Data {
        /// The log.
        id: u16,
        /// First byte.
        ofs: u32,
        /// Bytes.
        count: u32,
    },
    /// LOG_REQUEST_END: the vehicle may stop sending.
    End,
}

impl LogRequest {
    /// Encode the request for the vehicle at `to` as the next frame of `enc` into `buf`;
    /// its length, or `None` when `buf` cannot hold it.
    pub fn encode(&self, to: Addr, enc: &mut Encoder, buf: &mut [u8]) -> Option<usize> {
        let (target_system, target_component) = (to.system, to.component);
        match *self {
            LogRequest::List { start, end } => enc.encode(
                &mav::LOG_REQUEST_LIST_DATA {
                    start,
                    end,
                    target_system,
                    target_component,
                },
                buf,
            ),
            LogRequest::Data { id, ofs, count } => enc.encode(
                &mav::LOG_REQUEST_DATA_DATA {
                    ofs,
                    count,
                    id,
                    target_system,
                    target_component,
                },
                buf,
            ),
            LogRequest::End => enc.encode(
                &mav::LOG_REQUEST_END_DATA {
                    target_system,
                    target_component,
                },
                buf,
            ),
        }
        .ok()
    }
}

/// A message of the log protocol from the vehicle.
#[derive(Debug, Clone, Copy)]
pub enum LogMessage<'a> {
    /// LOG_ENTRY.
    Entry(&'a mav::LOG_ENTRY_DATA),
    /// LOG_DATA.
    Data(&'a mav::LOG_DATA_DATA),
}

/// Why a transfer could not start or did not finish.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum LogError {
    /// A listing or download is already running.
    Busy,
    /// The log is larger than [`LogConfig::max_bytes`].
    TooLarge {
        /// The log's size, bytes.
        size: u32,
        /// The limit, bytes.
        cap: u32,
    },
    /// The vehicle numbered a log at or beyond [`LIST_IDS`].
    TooManyLogs {
        /// The id.
        id: u16,
    },
    /// No LOG_ENTRY came for this many LOG_REQUEST_LISTs.
    ListTimeout {
        /// Requests sent.
        sends: u8,
    },
    /// The download stopped bringing chunks for this many requests in a row.
    DataTimeout {
        /// Requests sent without a new chunk.
        sends: u8,
        /// Bytes received so far.
        received: u32,
        /// The log's size, bytes.
        size: u32,
    },
}

impl core::fmt::Display for LogError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            LogError::Busy => write!(f, "a log listing or download is already running"),
            LogError::TooLarge { size, cap } => write!(
                f,
                "the log holds {size} bytes, more than the {cap} a download takes"
            ),
            LogError::TooManyLogs { id } => write!(
                f,
                "the vehicle lists a log with id {id}; a listing tracks ids below {LIST_IDS}"
            ),
            LogError::ListTimeout { sends } => write!(
                f,
                "no LOG_ENTRY answered {sends} LOG_REQUEST_LIST (the vehicle keeps no logs, \
                 or does not serve them on this link)"
            ),
            LogError::DataTimeout {
                sends,
                received,
                size,
            } => write!(
                f,
                "the download stalled at {received} of {size} bytes: {sends} LOG_REQUEST_DATA \
                 in a row brought nothing new"
            ),
        }
    }
}

impl core::error::Error for LogError {}

/// What a download took.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct LogStats {
    /// LOG_REQUEST_LIST sent.
    pub list_requests: u32,
    /// LOG_REQUEST_DATA sent, every window's first request and every re-request.
    pub data_requests: u32,
    /// Of those, the requests for chunks that were missing (lost, or after a stall).
    pub re_requests: u32,
    /// Retry timers that ran out (a stall: nothing came for a whole timer).
    pub timeouts: u32,
    /// New chunks taken in (each handed out once).
    pub chunks: u32,
    /// Chunks received again (re-requested ranges overlap what came).
    pub duplicates: u32,
    /// LOG_DATA of another log, at an offset that is not a chunk's, outside the window, or
    /// shorter than the log's chunk there.
    pub stray: u32,
    /// Messages not taken in because [`EVENTS_LEN`] events were waiting.
    pub refused: u32,
}

/// What the application must know.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum LogEvent {
    /// A log the vehicle listed (each id once).
    Entry(LogEntry),
    /// The listing ended: `count` logs seen of `expected` (`None`: the vehicle never said),
    /// and the newest of them.
    Listed {
        /// Distinct logs listed.
        count: u16,
        /// How many the vehicle said it has.
        expected: Option<u16>,
        /// The newest ([`LogEntry::is_newer_than`]).
        newest: Option<LogEntry>,
    },
    /// `len` new bytes of the log at byte `ofs` (the first `len` of `data`).
    Data {
        /// Offset in the log, bytes.
        ofs: u32,
        /// Bytes of `data` that are the log's (90, or fewer in the last chunk).
        len: u8,
        /// The chunk.
        data: [u8; CHUNK_LEN],
    },
    /// Every byte of `entry` was handed out.
    Downloaded {
        /// The log.
        entry: LogEntry,
        /// What it took.
        stats: LogStats,
    },
    /// The listing or download ended without finishing.
    Failed(LogError),
}

/// Which chunks of one window came.
#[derive(Debug, Clone)]
struct Window {
    /// Its first chunk (log bytes `first * CHUNK_LEN` on).
    first: u32,
    /// Its chunks.
    bins: u32,
    got: [u32; WINDOW_BINS / 32],
    /// Chunks received.
    count: u32,
}

impl Window {
    fn new(first: u32, bins: u32) -> Self {
        Window {
            first,
            bins,
            got: [0; WINDOW_BINS / 32],
            count: 0,
        }
    }

    fn has(&self, i: u32) -> bool {
        self.got
            .get((i / 32) as usize)
            .is_some_and(|w| w & (1 << (i % 32)) != 0)
    }

    fn set(&mut self, i: u32) {
        if let Some(w) = self.got.get_mut((i / 32) as usize) {
            *w |= 1 << (i % 32);
            self.count += 1;
        }
    }

    fn complete(&self) -> bool {
        self.count >= self.bins
    }

    /// The chunks to ask for again, window-relative `[from, to)`: from the first missing one,
    /// over every missing one within [`MERGE_BINS`] received chunks of the last taken.
    fn gap(&self) -> Option<(u32, u32)> {
        let from = (0..self.bins).find(|&i| !self.has(i))?;
        let mut last = from;
        let mut i = from + 1;
        while i < self.bins && i - last <= MERGE_BINS + 1 {
            if !self.has(i) {
                last = i;
            }
            i += 1;
        }
        Some((from, last + 1))
    }
}

/// A download in progress.
#[derive(Debug, Clone)]
struct Download {
    entry: LogEntry,
    /// Chunks in the log.
    total_bins: u32,
    window: Window,
    /// The chunks the last request asked for, window-relative `[from, to)`.
    asked: (u32, u32),
    received: u32,
}

impl Download {
    /// The request for window-relative chunks `[from, to)`.
    fn request(&self, from: u32, to: u32) -> LogRequest {
        let ofs = (self.window.first + from) * CHUNK_LEN as u32;
        let end = ((self.window.first + to) * CHUNK_LEN as u32).min(self.entry.size_bytes);
        LogRequest::Data {
            id: self.entry.id,
            ofs,
            count: end - ofs,
        }
    }

    /// The length of chunk `bin` (absolute): 90, or what is left of the log.
    fn chunk_len(&self, bin: u32) -> u32 {
        let ofs = bin * CHUNK_LEN as u32;
        (self.entry.size_bytes - ofs).min(CHUNK_LEN as u32)
    }
}

/// A listing in progress.
#[derive(Debug, Clone)]
struct Listing {
    seen: [u32; LIST_IDS / 32],
    count: u16,
    expected: Option<u16>,
    newest: Option<LogEntry>,
}

impl Listing {
    fn has(&self, id: u16) -> bool {
        self.seen[id as usize / 32] & (1 << (id % 32)) != 0
    }

    /// The lowest id not yet seen (below `expected`, or any).
    fn first_unseen(&self) -> u16 {
        (0..LIST_IDS as u16).find(|&i| !self.has(i)).unwrap_or(0)
    }
}

/// The machine's phase. Held inline (the core allocates nothing), so the listing's id bitmap
/// sizes the whole enum; one `LogTransfer` exists per download.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone)]
enum State {
    Idle,
    Listing(Listing),
    Downloading(Download),
}

/// The log protocol's client: listing the vehicle's logs and downloading one.
#[derive(Debug, Clone)]
pub struct LogTransfer {
    cfg: LogConfig,
    target: Addr,
    state: State,
    /// The request to send now.
    pending: Option<LogRequest>,
    /// A LOG_REQUEST_END is owed (after a download, or one cut short).
    end_owed: bool,
    /// When a request last went out, and whether it was a resend (no round-trip sample).
    last_tx: Option<(Instant, bool)>,
    /// When the vehicle's last message of this transfer came.
    last_rx: Option<Instant>,
    /// The last request has been answered (its first reply came).
    answered: bool,
    /// Requests in a row that brought nothing new.
    fruitless: u8,
    rtt: RttEstimator,
    stats: LogStats,
    events: Deque<LogEvent, EVENTS_LEN>,
    end: Option<LogEvent>,
}

impl LogTransfer {
    /// A machine for the vehicle at `target`; nothing is asked yet.
    pub fn new(config: LogConfig, target: Addr) -> Self {
        LogTransfer {
            cfg: config,
            target,
            state: State::Idle,
            pending: None,
            end_owed: false,
            last_tx: None,
            last_rx: None,
            answered: false,
            fruitless: 0,
            rtt: RttEstimator::new(),
            stats: LogStats::default(),
            events: Deque::new(),
            end: None,
        }
    }

    /// Whether a listing or download is running.
    pub fn is_busy(&self) -> bool {
        !matches!(self.state, State::Idle)
    }

    /// What the transfers so far took (reset by each [`LogTransfer::download`]).
    pub fn stats(&self) -> LogStats {
        self.stats
    }

    /// The link's round trip as measured by the requests (ms of the caller's clock).
    pub fn link_rtt(&self) -> &RttEstimator {
        &self.rtt
    }

    /// Ask the vehicle for its logs: [`LogEvent::Entry`] for each, then [`LogEvent::Listed`].
    /// [`LogError::Busy`] while a transfer runs or its end has not been polled.
    pub fn list(&mut self, _now: Instant) -> Result<(), LogError> {
        if self.is_busy() || self.end.is_some() {
            return Err(LogError::Busy);
        }
        self.state = State::Listing(Listing {
            seen: [0; LIST_IDS / 32],
            count: 0,
            expected: None,
            newest: None,
        });
        self.start_transfer();
        self.pending = Some(LogRequest::List {
            start: 0,
            end: 0xffff,
        });
        Ok(())
    }

    /// Download `entry` (as listed): [`LogEvent::Data`] for each new chunk, then
    /// [`LogEvent::Downloaded`]. [`LogError::Busy`] as for [`LogTransfer::list`];
    /// [`LogError::TooLarge`] beyond [`LogConfig::max_bytes`].
    pub fn download(&mut self, _now: Instant, entry: LogEntry) -> Result<(), LogError> {
        if self.is_busy() || self.end.is_some() {
            return Err(LogError::Busy);
        }
        if entry.size_bytes > self.cfg.max_bytes {
            return Err(LogError::TooLarge {
                size: entry.size_bytes,
                cap: self.cfg.max_bytes,
            });
        }
        self.stats = LogStats::default();
        if entry.size_bytes == 0 {
            self.end = Some(LogEvent::Downloaded {
                entry,
                stats: self.stats,
            });
            return Ok(());
        }
        let total_bins = entry.size_bytes.div_ceil(CHUNK_LEN as u32);
        let bins = total_bins.min(WINDOW_BINS as u32);
        let d = Download {
            entry,
            total_bins,
            window: Window::new(0, bins),
            asked: (0, bins),
            received: 0,
        };
        self.pending = Some(d.request(0, bins));
        self.state = State::Downloading(d);
        self.start_transfer();
        Ok(())
    }

    /// Stop what runs (a download is ended with LOG_REQUEST_END); no event follows.
    pub fn cancel(&mut self) {
        if matches!(self.state, State::Downloading(_)) {
            self.end_owed = true;
        }
        self.state = State::Idle;
        self.pending = None;
    }

    fn start_transfer(&mut self) {
        self.last_tx = None;
        self.last_rx = None;
        self.answered = false;
        self.fruitless = 0;
    }

    /// Take in a checked frame; only the target system's LOG_ENTRY and LOG_DATA are read.
    pub fn handle_frame(&mut self, now: Instant, raw: &RawFrame<'_>) {
        if raw.header.sysid != self.target.system {
            return;
        }
        let v = match raw.header.version {
            crate::frame::Version::V1 => MavlinkVersion::V1,
            crate::frame::Version::V2 => MavlinkVersion::V2,
        };
        match raw.header.msgid {
            mav::LOG_ENTRY_DATA::ID => {
                if let Ok(m) = mav::LOG_ENTRY_DATA::deser(v, raw.payload) {
                    self.handle(now, LogMessage::Entry(&m));
                }
            }
            mav::LOG_DATA_DATA::ID => {
                if let Ok(m) = mav::LOG_DATA_DATA::deser(v, raw.payload) {
                    self.handle(now, LogMessage::Data(&m));
                }
            }
            _ => {}
        }
    }

    /// Take in one message of the log protocol from the vehicle.
    pub fn handle(&mut self, now: Instant, msg: LogMessage<'_>) {
        match msg {
            LogMessage::Entry(m) => self.on_entry(now, m),
            LogMessage::Data(m) => self.on_data(now, m),
        }
    }

    /// The first reply to the last request: a round-trip sample when it went out once.
    fn replied(&mut self, now: Instant) {
        self.last_rx = Some(now);
        if !self.answered {
            self.answered = true;
            if let Some((at, false)) = self.last_tx {
                self.rtt.sample(now.saturating_since(at).total_millis());
            }
        }
    }

    fn on_entry(&mut self, now: Instant, m: &mav::LOG_ENTRY_DATA) {
        let State::Listing(l) = &mut self.state else {
            return;
        };
        if m.num_logs == 0 {
            let (count, newest) = (l.count, l.newest);
            self.replied(now);
            self.finish(LogEvent::Listed {
                count,
                expected: Some(0),
                newest,
            });
            return;
        }
        if m.id as usize >= LIST_IDS {
            self.fail(LogError::TooManyLogs { id: m.id });
            return;
        }
        l.expected = Some(m.num_logs);
        if l.has(m.id) {
            self.replied(now);
            return;
        }
        if self.events.is_full() {
            self.stats.refused += 1;
            return;
        }
        l.seen[m.id as usize / 32] |= 1 << (m.id % 32);
        l.count += 1;
        let e = LogEntry {
            id: m.id,
            time_utc_s: m.time_utc,
            size_bytes: m.size,
        };
        if l.newest.is_none_or(|n| e.is_newer_than(&n)) {
            l.newest = Some(e);
        }
        let done = l.count >= m.num_logs;
        let (count, newest) = (l.count, l.newest);
        let _ = self.events.push_back(LogEvent::Entry(e));
        self.fruitless = 0;
        self.replied(now);
        if done {
            self.finish(LogEvent::Listed {
                count,
                expected: Some(m.num_logs),
                newest,
            });
        }
    }

    fn on_data(&mut self, now: Instant, m: &mav::LOG_DATA_DATA) {
        let State::Downloading(d) = &mut self.state else {
            return;
        };
        let chunk = CHUNK_LEN as u32;
        if m.id != d.entry.id || m.ofs % chunk != 0 || m.ofs >= d.entry.size_bytes {
            self.stats.stray += 1;
            return;
        }
        let bin = m.ofs / chunk;
        if bin < d.window.first {
            self.stats.duplicates += 1;
            self.last_rx = Some(now);
            return;
        }
        let i = bin - d.window.first;
        // The last chunk of a log still being written may come longer than the log was when
        // listed: its first bytes are the listed log's.
        let len = d.chunk_len(bin);
        if i >= d.window.bins || u32::from(m.count) < len {
            self.stats.stray += 1;
            return;
        }
        if d.window.has(i) {
            self.stats.duplicates += 1;
            self.replied(now);
            return;
        }
        if self.events.is_full() {
            self.stats.refused += 1;
            return;
        }
        d.window.set(i);
        d.received += len;
        let _ = self.events.push_back(LogEvent::Data {
            ofs: m.ofs,
            len: len as u8,
            data: m.data,
        });
        self.stats.chunks += 1;
        self.fruitless = 0;
        let asked_last = i + 1 >= d.asked.1 || d.window.complete();
        self.replied(now);
        if asked_last {
            self.next_request(false);
        }
    }

    /// After the window's last asked-for chunk, or a stall (`stalled`): the next window, the
    /// chunks still missing, or the end.
    fn next_request(&mut self, stalled: bool) {
        let State::Downloading(d) = &mut self.state else {
            return;
        };
        if d.window.complete() {
            let next = d.window.first + d.window.bins;
            if next >= d.total_bins {
                let entry = d.entry;
                self.end_owed = true;
                let stats = self.stats;
                self.finish(LogEvent::Downloaded { entry, stats });
                return;
            }
            let bins = (d.total_bins - next).min(WINDOW_BINS as u32);
            d.window = Window::new(next, bins);
            d.asked = (0, bins);
            self.pending = Some(d.request(0, bins));
            return;
        }
        if let Some((from, to)) = d.window.gap() {
            d.asked = (from, to);
            self.pending = Some(d.request(from, to));
            self.stats.re_requests += 1;
            if stalled {
                self.stats.timeouts += 1;
            }
        }
    }

    fn finish(&mut self, e: LogEvent) {
        self.state = State::Idle;
        self.pending = None;
        self.end = Some(e);
    }

    fn fail(&mut self, e: LogError) {
        if matches!(self.state, State::Downloading(_)) {
            self.end_owed = true;
        }
        self.finish(LogEvent::Failed(e));
    }

    /// The retry timer now, ms of the caller's clock.
    pub fn retry_timer_ms(&self) -> u64 {
        self.rtt
            .timer_capped_ms(self.cfg.retry_floor_ms, BACKOFF_CAP_MS)
    }

    /// When the retry timer runs out: the later of the last request and the last reply, plus
    /// the timer.
    fn timer_due(&self) -> Option<Instant> {
        let (tx, _) = self.last_tx?;
        let from = match self.last_rx {
            Some(rx) if rx > tx => rx,
            _ => tx,
        };
        Some(Instant::from_micros(
            from.total_micros() + self.retry_timer_ms() * 1000,
        ))
    }

    /// The next request to send, if one is due; call until `None`.
    #[must_use = "the request must be sent"]
    pub fn poll_request(&mut self, now: Instant) -> Option<LogRequest> {
        if self.end_owed && !matches!(self.state, State::Downloading(_)) {
            self.end_owed = false;
            return Some(LogRequest::End);
        }
        if !self.is_busy() {
            return None;
        }
        let resend = match self.pending.take() {
            Some(r) => Some((r, false)),
            None if self.timer_due().is_some_and(|t| now >= t) => self.on_timeout(),
            None => None,
        };
        let (r, is_resend) = resend?;
        match r {
            LogRequest::List { .. } => self.stats.list_requests += 1,
            LogRequest::Data { .. } => self.stats.data_requests += 1,
            LogRequest::End => {}
        }
        self.last_tx = Some((now, is_resend));
        self.answered = false;
        Some(r)
    }

    /// The retry timer ran out: the request again (from the first gap), or the give-up.
    fn on_timeout(&mut self) -> Option<(LogRequest, bool)> {
        self.fruitless = self.fruitless.saturating_add(1);
        self.rtt.timed_out();
        let sends = self.fruitless;
        let give_up = sends >= self.cfg.max_sends;
        match &mut self.state {
            State::Idle => None,
            State::Listing(l) => {
                if give_up {
                    if l.count == 0 {
                        self.fail(LogError::ListTimeout { sends });
                    } else {
                        let (count, expected, newest) = (l.count, l.expected, l.newest);
                        self.finish(LogEvent::Listed {
                            count,
                            expected,
                            newest,
                        });
                    }
                    return None;
                }
                self.stats.timeouts += 1;
                Some((
                    LogRequest::List {
                        start: l.first_unseen(),
                        end: 0xffff,
                    },
                    true,
                ))
            }
            State::Downloading(d) => {
                if give_up {
                    let (received, size) = (d.received, d.entry.size_bytes);
                    self.fail(LogError::DataTimeout {
                        sends,
                        received,
                        size,
                    });
                    return None;
                }
                self.next_request(true);
                self.pending.take().map(|r| (r, true))
            }
        }
    }

    /// Encode the next request due for the vehicle into `buf` as `enc`'s next frame; its
    /// length. Call until `None`.
    #[must_use = "the frame written must be sent"]
    pub fn poll_transmit(
        &mut self,
        now: Instant,
        enc: &mut Encoder,
        buf: &mut [u8],
    ) -> Option<usize> {
        let r = self.poll_request(now)?;
        r.encode(self.target, enc, buf)
    }

    /// When to call `poll_request` next if nothing arrives first.
    #[must_use = "the driver must call back by then"]
    pub fn next_deadline(&self) -> Option<Instant> {
        if self.end_owed || self.pending.is_some() {
            return Some(Instant::ZERO);
        }
        if !self.is_busy() {
            return None;
        }
        self.timer_due()
    }

    /// The next thing the application must know, oldest first; the transfer's end last.
    #[must_use = "a polled event is gone from the queue"]
    pub fn poll_event(&mut self) -> Option<LogEvent> {
        self.events.pop_front().or_else(|| self.end.take())
    }
}

#[cfg(test)]
mod tests;
