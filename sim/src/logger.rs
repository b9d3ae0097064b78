//! PX4's logger and its MAVLink log handler, for the built-in vehicle.
//!
//! **Logger.** The vehicle's own log ([`FlightLog`]) is kept in memory as PX4 SITL keeps its
//! log on disk: from boot until the first disarm after an arming (`SDLOG_MODE` 1, which PX4's
//! posix `rcS` sets for SITL), the last sample written at the disarm, then closed. PX4 would
//! start another log at the next arming; the built-in vehicle keeps the one. The driver copies
//! what was written to a file as it goes ([`Logger::take_written`]), so the file and what the
//! log handler serves are the same bytes. A log that would outgrow [`MAX_LOG_BYTES`] stops
//! there, as PX4's does on a full card.
//!
//! **Log handler.** PX4's `MavlinkLogHandler` (`src/modules/mavlink/mavlink_log_handler.cpp`,
//! PX4 main): LOG_REQUEST_LIST lists the logs (here the one, id 0, its size as it stands,
//! `time_utc` the vehicle's UTC at its last write, on the clock SYSTEM_TIME sends);
//! LOG_REQUEST_DATA (only after a listing) streams LOG_DATA from `ofs`, 90 bytes each (only
//! the log's end as listed makes one shorter: a log still being written is served at its size
//! in the last listing, as PX4 serves it), at least one, until `ofs + count` (PX4's 32-bit sum,
//! wrapping) or the log's end is reached, a new request replacing the one running; LOG_REQUEST_END stops it. Neither checks the target (PX4's does not). Where PX4
//! sends nothing (no log at all), the built-in vehicle answers as the MAVLink spec asks: one
//! LOG_ENTRY with `num_logs` 0. LOG_DATA goes out at the link's data rate, [`LOG_BYTES_PER_S`]
//! of the vehicle's clock (PX4's onboard link's 4 MB/s).

use super::ulog::{FlightLog, FlightSample, WriteError};
use super::wire::Outbox;
use mavlink::dialects::common as mav;

/// The largest log kept, bytes (a day of the built-in vehicle's 10 Hz topics).
pub const MAX_LOG_BYTES: usize = 256 << 20;
/// The log handler's share of the link: bytes of LOG_DATA a second of the vehicle's clock.
pub const LOG_BYTES_PER_S: u64 = 4_000_000;
/// A LOG_DATA frame on the wire (MAVLink 2 header and checksum around its 97 bytes).
const LOG_DATA_FRAME_LEN: u64 = 12 + 97;

/// The vehicle's log and the handler serving it.
#[derive(Debug, Default)]
pub struct Logger {
    /// The log being written.
    open: Option<FlightLog<Vec<u8>>>,
    /// The log once closed (at the disarm, or when it could not go on).
    closed: Option<Vec<u8>>,
    /// The vehicle has armed since the log began.
    armed_seen: bool,
    /// The vehicle's clock at the log's last write, µs.
    last_write_us: u64,
    /// Bytes handed to the driver by [`Logger::take_written`].
    taken: usize,
    /// A LOG_REQUEST_LIST was answered (PX4 serves data only after one).
    listed: bool,
    /// A listing owed: the first id to send.
    listing: Option<u16>,
    /// The log's size when last listed: what a download is served (PX4 reads the size from
    /// its listing, not the file).
    listed_size: u32,
    /// LOG_DATA being sent: (next offset, end offset).
    sending: Option<(u32, u32)>,
    /// Bytes of LOG_DATA the link may still carry this tick, carried over.
    budget: u64,
}

impl Logger {
    /// Begin the log at `now_us` (boot), as the vehicle `sys_name` flying `vehicle`.
    pub fn start(
        &mut self,
        now_us: u64,
        sys_name: &str,
        vehicle: crate::VehicleType,
    ) -> Result<(), WriteError> {
        self.open = Some(FlightLog::for_vehicle(
            Vec::new(),
            now_us,
            sys_name,
            vehicle,
        )?);
        self.closed = None;
        self.armed_seen = false;
        self.last_write_us = now_us;
        self.taken = 0;
        Ok(())
    }

    /// Whether a log is being written.
    pub fn is_open(&self) -> bool {
        self.open.is_some()
    }

    /// Every byte of the log so far (open or closed); `None` without one.
    pub fn bytes(&self) -> Option<&[u8]> {
        match (&self.open, &self.closed) {
            (Some(l), _) => Some(l.get_ref()),
            (None, Some(b)) => Some(b),
            (None, None) => None,
        }
    }

    /// The bytes written since the last call (for the driver's file).
    pub fn take_written(&mut self) -> &[u8] {
        let from = self.taken;
        let all = match (&self.open, &self.closed) {
            (Some(l), _) => l.get_ref().as_slice(),
            (None, Some(b)) => b.as_slice(),
            (None, None) => &[],
        };
        self.taken = all.len();
        all.get(from..).unwrap_or(&[])
    }

    /// The vehicle is armed (a tick without a sample).
    pub fn note_armed(&mut self) {
        self.armed_seen = true;
    }

    /// Whether [`Logger::tick`] has a sample to write at `now_us`: one is due, or this is the
    /// first disarm after an arming.
    pub fn due(&self, now_us: u64, armed: bool) -> bool {
        self.open
            .as_ref()
            .is_some_and(|l| l.due(now_us) || (self.armed_seen && !armed))
    }

    /// One tick of the logger: the vehicle armed or not at `now_us`, and `s` logged when due;
    /// at the first disarm after an arming the last sample is written and the log closed. An
    /// error closes the log with what it holds and is returned for the console.
    pub fn tick(&mut self, now_us: u64, armed: bool, s: &FlightSample) -> Result<(), String> {
        let Some(log) = &mut self.open else {
            return Ok(());
        };
        self.armed_seen |= armed;
        let closing = self.armed_seen && !armed;
        if !closing && !log.due(now_us) {
            return Ok(());
        }
        let r = if closing {
            log.sample_now(s)
        } else {
            log.sample(s)
        };
        self.last_write_us = now_us;
        let full = log.get_ref().len() > MAX_LOG_BYTES;
        match (r, full, closing) {
            (Err(e), _, _) => {
                self.close();
                Err(format!("ERROR [logger] the vehicle's ULog stopped: {e}"))
            }
            (Ok(()), true, _) => {
                self.close();
                Err(format!(
                    "ERROR [logger] the vehicle's ULog stopped at {MAX_LOG_BYTES} bytes"
                ))
            }
            (Ok(()), false, true) => {
                self.close();
                Ok(())
            }
            (Ok(()), false, false) => Ok(()),
        }
    }

    /// Log console lines at `now_us` (PX4 logs its console texts too).
    pub fn console(&mut self, now_us: u64, lines: &[String]) -> Result<(), String> {
        let Some(log) = &mut self.open else {
            return Ok(());
        };
        for l in lines {
            if let Err(e) = log.console(now_us, l) {
                self.close();
                return Err(format!("ERROR [logger] the vehicle's ULog stopped: {e}"));
            }
        }
        Ok(())
    }

    fn close(&mut self) {
        if let Some(log) = self.open.take() {
            self.closed = log.into_inner().ok();
        }
    }

    /// The LOG_ENTRY of the log, as PX4 lists it; `time_utc_base_us` is the vehicle's UTC at
    /// boot (its SYSTEM_TIME's base).
    fn entry(&self, time_utc_base_us: u64) -> mav::LOG_ENTRY_DATA {
        match self.bytes() {
            Some(_) => mav::LOG_ENTRY_DATA {
                time_utc: ((time_utc_base_us + self.last_write_us) / 1_000_000) as u32,
                size: self.listed_size,
                id: 0,
                num_logs: 1,
                last_log_num: 1,
            },
            None => mav::LOG_ENTRY_DATA {
                time_utc: 0,
                size: 0,
                id: 0,
                num_logs: 0,
                last_log_num: 0,
            },
        }
    }

    /// LOG_REQUEST_LIST.
    pub fn on_request_list(&mut self, m: &mav::LOG_REQUEST_LIST_DATA) {
        self.listed = true;
        self.listed_size = self.bytes().map_or(0, |b| b.len() as u32);
        self.listing = Some(m.start);
    }

    /// LOG_REQUEST_DATA: PX4 ignores one before a listing, for an id it does not have, or
    /// from beyond the log's end.
    pub fn on_request_data(&mut self, m: &mav::LOG_REQUEST_DATA_DATA) {
        let size = self.listed_size;
        if !self.listed || self.bytes().is_none() || m.id != 0 || m.ofs >= size {
            return;
        }
        // PX4's end of a request is the 32-bit sum of offset and count.
        self.sending = Some((m.ofs, m.ofs.wrapping_add(m.count)));
    }

    /// LOG_REQUEST_END.
    pub fn on_request_end(&mut self) {
        self.sending = None;
    }

    /// One tick of the handler (`tick_us` of the vehicle's clock): what it sends, queued in
    /// `out`.
    pub fn send(&mut self, tick_us: u64, time_utc_base_us: u64, out: &mut Outbox) {
        if let Some(start) = self.listing.take() {
            let e = self.entry(time_utc_base_us);
            // One log: id 0 (or the "no logs" entry) unless the request starts past it.
            if e.num_logs == 0 || start == 0 {
                out.push(&e);
            }
        }
        let Some((mut ofs, end)) = self.sending else {
            self.budget = 0;
            return;
        };
        let mut budget = (self.budget + LOG_BYTES_PER_S * tick_us / 1_000_000).min(1 << 20);
        let Some(bytes) = self.bytes() else {
            self.sending = None;
            return;
        };
        let size = self.listed_size.min(bytes.len() as u32);
        // As PX4: whole chunks (only the log's end cuts one), at least one per request, until
        // the request's end is reached.
        let mut done = false;
        while budget >= LOG_DATA_FRAME_LEN && ofs < size {
            let count = (size - ofs).min(90);
            let mut data = [0u8; 90];
            data[..count as usize].copy_from_slice(&bytes[ofs as usize..(ofs + count) as usize]);
            out.push(&mav::LOG_DATA_DATA {
                ofs,
                id: 0,
                count: count as u8,
                data,
            });
            ofs += count;
            budget -= LOG_DATA_FRAME_LEN;
            if ofs >= end {
                done = true;
                break;
            }
        }
        self.budget = budget;
        self.sending = (!done && ofs < size).then_some((ofs, end));
    }
}
