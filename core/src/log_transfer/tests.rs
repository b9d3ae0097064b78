//! The machine against a scripted log handler that serves as PX4's does (one request at a
//! time, a new one replacing it, ids from 0, silence when it has no logs), in virtual time,
//! with seeded loss both ways.

extern crate std;
use super::*;
use std::vec;
use std::vec::Vec;

/// xorshift64*: the same seed loses the same messages.
struct Rng(u64);

impl Rng {
    fn chance(&mut self, pct: u32) -> bool {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 33) % 100 < pct as u64
    }
}

/// PX4's log handler, in memory: `logs` are (time_utc, bytes), listed in this order.
struct Handler {
    logs: Vec<(u32, Vec<u8>)>,
    /// Listing: the next id to send.
    listing: Option<u16>,
    /// Sending: (id, next offset, end offset).
    sending: Option<(u16, u32, u32)>,
    ends: u32,
    requests: Vec<LogRequest>,
}

impl Handler {
    fn new(logs: Vec<(u32, Vec<u8>)>) -> Self {
        Handler {
            logs,
            listing: None,
            sending: None,
            ends: 0,
            requests: Vec::new(),
        }
    }

    fn take(&mut self, r: LogRequest) {
        self.requests.push(r);
        match r {
            LogRequest::List { start, .. } => {
                // PX4 answers nothing at all when it has no logs.
                if !self.logs.is_empty() {
                    self.listing = Some(start);
                }
            }
            LogRequest::Data { id, ofs, count } => {
                let Some((_, bytes)) = self.logs.get(id as usize) else {
                    return;
                };
                let size = bytes.len() as u32;
                if ofs < size {
                    self.sending = Some((id, ofs, ofs.saturating_add(count).min(size)));
                }
            }
            LogRequest::End => {
                self.ends += 1;
                self.sending = None;
            }
        }
    }

    /// Up to `n` messages of one tick of its send loop.
    fn send(&mut self, n: usize) -> Vec<Msg> {
        let mut out = Vec::new();
        while out.len() < n {
            if let Some(id) = self.listing {
                if let Some((t, b)) = self.logs.get(id as usize) {
                    out.push(Msg::Entry(mav::LOG_ENTRY_DATA {
                        time_utc: *t,
                        size: b.len() as u32,
                        id,
                        num_logs: self.logs.len() as u16,
                        // PX4 says num_logs here though its ids end at num_logs - 1.
                        last_log_num: self.logs.len() as u16,
                    }));
                    self.listing = Some(id + 1);
                    continue;
                }
                self.listing = None;
            }
            let Some((id, ofs, end)) = self.sending else {
                break;
            };
            let bytes = &self.logs[id as usize].1;
            let count = (end - ofs).min(CHUNK_LEN as u32);
            let mut data = [0u8; CHUNK_LEN];
            data[..count as usize].copy_from_slice(&bytes[ofs as usize..(ofs + count) as usize]);
            out.push(Msg::Data(mav::LOG_DATA_DATA {
                ofs,
                id,
                count: count as u8,
                data,
            }));
            let next = ofs + count;
            self.sending = (next < end).then_some((id, next, end));
        }
        out
    }
}

enum Msg {
    Entry(mav::LOG_ENTRY_DATA),
    Data(mav::LOG_DATA_DATA),
}

/// The machine and the handler joined by a link losing `loss_pct` each way, 1 ms ticks of
/// virtual time, `per_tick` messages a tick; events drained each tick unless `hold` says not.
struct Pair {
    m: LogTransfer,
    h: Handler,
    rng: Rng,
    loss_pct: u32,
    per_tick: usize,
    now_ms: u64,
    events: Vec<LogEvent>,
    file: Vec<u8>,
}

impl Pair {
    fn new(logs: Vec<(u32, Vec<u8>)>, loss_pct: u32, seed: u64) -> Pair {
        let to = Addr {
            system: 1,
            component: 1,
        };
        Pair {
            m: LogTransfer::new(LogConfig::default(), to),
            h: Handler::new(logs),
            rng: Rng(seed | 1),
            loss_pct,
            per_tick: 20,
            now_ms: 0,
            events: Vec::new(),
            file: Vec::new(),
        }
    }

    fn now(&self) -> Instant {
        Instant::from_millis(self.now_ms)
    }

    fn tick(&mut self, drain: bool) {
        let now = self.now();
        while let Some(r) = self.m.poll_request(now) {
            if !self.rng.chance(self.loss_pct) {
                self.h.take(r);
            }
        }
        for msg in self.h.send(self.per_tick) {
            if self.rng.chance(self.loss_pct) {
                continue;
            }
            match &msg {
                Msg::Entry(e) => self.m.handle(now, LogMessage::Entry(e)),
                Msg::Data(d) => self.m.handle(now, LogMessage::Data(d)),
            }
            // A driver polls the events after every message it hands in.
            if drain {
                self.drain();
            }
        }
        if drain {
            self.drain();
        }
        self.now_ms += 1;
    }

    fn drain(&mut self) {
        while let Some(e) = self.m.poll_event() {
            if let LogEvent::Data { ofs, len, data } = &e {
                let (ofs, len) = (*ofs as usize, *len as usize);
                if self.file.len() < ofs + len {
                    self.file.resize(ofs + len, 0);
                }
                self.file[ofs..ofs + len].copy_from_slice(&data[..len]);
            }
            self.events.push(e);
        }
    }

    /// Tick until the transfer ends (its end event drained); the end.
    fn run(&mut self, limit_ms: u64) -> LogEvent {
        let from = self.events.len();
        for _ in 0..limit_ms {
            self.tick(true);
            if let Some(e) = self.events[from..].iter().find(|e| {
                matches!(
                    e,
                    LogEvent::Listed { .. } | LogEvent::Downloaded { .. } | LogEvent::Failed(_)
                )
            }) {
                let e = e.clone();
                // One more tick: the LOG_REQUEST_END owed goes out.
                self.tick(true);
                return e;
            }
            // Never a spin: the machine always names a deadline while it works.
            assert!(!self.m.is_busy() || self.m.next_deadline().is_some());
        }
        panic!("no end within {limit_ms} ms: {:?}", self.m.stats());
    }
}

fn log_bytes(n: usize, salt: u8) -> Vec<u8> {
    (0..n)
        .map(|i| (i as u32).wrapping_mul(2_654_435_761).to_le_bytes()[1] ^ salt)
        .collect()
}

#[test]
fn the_listing_names_the_newest_log_in_any_order() {
    let logs = vec![
        (1_700_000_300, log_bytes(10, 1)),
        (1_700_000_900, log_bytes(20, 2)),
        (1_700_000_100, log_bytes(30, 3)),
    ];
    let mut p = Pair::new(logs, 0, 1);
    p.m.list(p.now()).unwrap();
    let end = p.run(1000);
    assert_eq!(
        end,
        LogEvent::Listed {
            count: 3,
            expected: Some(3),
            newest: Some(LogEntry {
                id: 1,
                time_utc_s: 1_700_000_900,
                size_bytes: 20
            }),
        }
    );
    let entries = p
        .events
        .iter()
        .filter(|e| matches!(e, LogEvent::Entry(_)))
        .count();
    assert_eq!(entries, 3);
}

#[test]
fn a_lossy_download_is_byte_identical_and_ends_with_log_request_end() {
    // 3.3 windows, the last chunk short; 15 % of every message lost each way.
    let bytes = log_bytes(3 * WINDOW_LEN as usize + 12_345, 7);
    let mut p = Pair::new(vec![(1, bytes.clone())], 15, 42);
    p.m.list(p.now()).unwrap();
    let LogEvent::Listed {
        newest: Some(entry),
        ..
    } = p.run(10_000)
    else {
        panic!("no listing: {:?}", p.events);
    };
    p.m.download(p.now(), entry).unwrap();
    let end = p.run(600_000);
    let LogEvent::Downloaded { entry: got, stats } = end else {
        panic!("{end:?}");
    };
    assert_eq!(got, entry);
    assert_eq!(p.file, bytes, "the bytes handed out are the log's");
    let chunks = bytes.len().div_ceil(CHUNK_LEN) as u32;
    assert_eq!(stats.chunks, chunks, "each chunk handed out once");
    assert!(stats.re_requests > 0, "{stats:?}");
    assert!(stats.data_requests > 4, "{stats:?}");
    assert_eq!(p.h.ends, 1, "one LOG_REQUEST_END at the end");
    assert_eq!(p.m.next_deadline(), None);
}

#[test]
fn a_download_without_loss_asks_once_per_window() {
    let bytes = log_bytes(2 * WINDOW_LEN as usize + 1, 9);
    let mut p = Pair::new(vec![(5, bytes.clone())], 0, 3);
    let entry = LogEntry {
        id: 0,
        time_utc_s: 5,
        size_bytes: bytes.len() as u32,
    };
    p.m.download(p.now(), entry).unwrap();
    let LogEvent::Downloaded { stats, .. } = p.run(100_000) else {
        panic!("{:?}", p.events);
    };
    assert_eq!(p.file, bytes);
    assert_eq!(stats.data_requests, 3, "{stats:?}");
    assert_eq!(stats.re_requests, 0, "{stats:?}");
    let asked: Vec<_> =
        p.h.requests
            .iter()
            .filter(|r| matches!(r, LogRequest::Data { .. }))
            .collect();
    assert_eq!(
        asked[2],
        &LogRequest::Data {
            id: 0,
            ofs: 2 * WINDOW_LEN,
            count: 1
        }
    );
}

#[test]
fn a_log_beyond_the_cap_is_refused_before_anything_is_asked() {
    let to = Addr {
        system: 1,
        component: 1,
    };
    let cfg = LogConfig {
        max_bytes: 1000,
        ..LogConfig::default()
    };
    let mut m = LogTransfer::new(cfg, to);
    let entry = LogEntry {
        id: 0,
        time_utc_s: 0,
        size_bytes: 1001,
    };
    assert_eq!(
        m.download(Instant::ZERO, entry),
        Err(LogError::TooLarge {
            size: 1001,
            cap: 1000
        })
    );
    assert_eq!(m.poll_request(Instant::ZERO), None);
    assert!(!m.is_busy());
}

#[test]
fn a_vehicle_without_logs_ends_the_listing_with_a_reason() {
    // PX4 is silent: the list is asked max_sends times, then given up, never a hang.
    let mut p = Pair::new(Vec::new(), 0, 5);
    p.m.list(p.now()).unwrap();
    let end = p.run(120_000);
    let sends = LogConfig::default().max_sends;
    assert_eq!(end, LogEvent::Failed(LogError::ListTimeout { sends }));
    assert_eq!(p.h.requests.len(), sends as usize);
    // The MAVLink spec's answer (num_logs 0) ends it at once.
    let mut p = Pair::new(Vec::new(), 0, 5);
    p.m.list(p.now()).unwrap();
    let _ = p.m.poll_request(p.now());
    let none = mav::LOG_ENTRY_DATA {
        time_utc: 0,
        size: 0,
        id: 0,
        num_logs: 0,
        last_log_num: 0,
    };
    p.m.handle(p.now(), LogMessage::Entry(&none));
    assert_eq!(
        p.m.poll_event(),
        Some(LogEvent::Listed {
            count: 0,
            expected: Some(0),
            newest: None
        })
    );
}

#[test]
fn a_stalled_download_gives_up_with_what_it_received() {
    let bytes = log_bytes(5_000, 1);
    let mut p = Pair::new(vec![(1, bytes)], 0, 8);
    let entry = LogEntry {
        id: 0,
        time_utc_s: 1,
        size_bytes: 5_000,
    };
    p.m.download(p.now(), entry).unwrap();
    // Two ticks of chunks, then the vehicle stops answering.
    p.per_tick = 10;
    p.tick(true);
    p.tick(true);
    p.h.logs.clear();
    p.h.sending = None;
    let end = p.run(120_000);
    assert_eq!(
        end,
        LogEvent::Failed(LogError::DataTimeout {
            sends: LogConfig::default().max_sends,
            received: 20 * 90,
            size: 5_000
        })
    );
    assert_eq!(p.h.ends, 1, "the vehicle is told to stop");
}

#[test]
fn chunks_that_find_the_event_queue_full_are_refused_and_fetched_again() {
    let bytes = log_bytes(50 * CHUNK_LEN, 4);
    let mut p = Pair::new(vec![(1, bytes.clone())], 0, 9);
    let entry = LogEntry {
        id: 0,
        time_utc_s: 1,
        size_bytes: bytes.len() as u32,
    };
    p.m.download(p.now(), entry).unwrap();
    // A driver that does not drain: only EVENTS_LEN chunks are taken in.
    p.tick(false);
    assert_eq!(p.m.stats().chunks, EVENTS_LEN as u32);
    assert_eq!(p.m.stats().refused, 20 - EVENTS_LEN as u32);
    let LogEvent::Downloaded { stats, .. } = p.run(100_000) else {
        panic!("{:?}", p.events);
    };
    assert_eq!(p.file, bytes);
    assert!(stats.re_requests >= 1, "{stats:?}");
}

#[test]
fn busy_and_other_vehicles() {
    let to = Addr {
        system: 3,
        component: 1,
    };
    let mut m = LogTransfer::new(LogConfig::default(), to);
    m.list(Instant::ZERO).unwrap();
    assert_eq!(m.list(Instant::ZERO), Err(LogError::Busy));
    // A LOG_ENTRY of system 2 is not read.
    let mut enc = crate::frame::Encoder::new(2, 1);
    let mut buf = [0u8; crate::frame::MAX_FRAME_LEN];
    let e = mav::LOG_ENTRY_DATA {
        time_utc: 1,
        size: 1,
        id: 0,
        num_logs: 1,
        last_log_num: 1,
    };
    let n = enc.encode(&e, &mut buf).unwrap();
    let mut dec = crate::frame::Decoder::new();
    let (_, raw) = dec.feed(&buf[..n]);
    m.handle_frame(Instant::ZERO, &raw.unwrap());
    assert_eq!(m.poll_event(), None);
    // The same from system 3 is.
    let mut enc = crate::frame::Encoder::new(3, 1);
    let n = enc.encode(&e, &mut buf).unwrap();
    let (_, raw) = dec.feed(&buf[..n]);
    m.handle_frame(Instant::ZERO, &raw.unwrap());
    assert!(matches!(m.poll_event(), Some(LogEvent::Entry(_))));
    assert!(matches!(
        m.poll_event(),
        Some(LogEvent::Listed { count: 1, .. })
    ));
    // The request encodes for system 3.
    m.list(Instant::ZERO).unwrap();
    let n = m.poll_transmit(Instant::ZERO, &mut enc, &mut buf).unwrap();
    let (_, raw) = dec.feed(&buf[..n]);
    let raw = raw.unwrap();
    assert_eq!(raw.header.msgid, mav::LOG_REQUEST_LIST_DATA::ID);
    let r = mav::LOG_REQUEST_LIST_DATA::deser(MavlinkVersion::V2, raw.payload).unwrap();
    assert_eq!((r.target_system, r.start, r.end), (3, 0, 0xffff));
}
