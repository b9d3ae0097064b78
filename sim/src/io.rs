//! Everything a vehicle emits: MAVLink frames, queued STATUSTEXTs and console lines.

use super::events::{EventLog, Outgoing};
use super::statustext::{console_level, TextQueue};
use super::wire::Outbox;
use mavlink::dialects::common::MavSeverity;
use std::collections::VecDeque;

/// Console lines kept for a supervisor that reads late.
pub const CONSOLE_CAP: usize = 10_000;

/// The vehicle's outputs, shared by its modules.
#[derive(Debug)]
pub struct Io {
    /// Frames to send.
    pub out: Outbox,
    /// Texts waiting for the STATUSTEXT stream.
    pub texts: TextQueue,
    /// Console (stdout) lines not yet taken by the driver.
    pub console: VecDeque<String>,
    /// The events protocol's buffer (EVENT / CURRENT_EVENT_SEQUENCE).
    pub events: EventLog,
}

impl Io {
    /// Outputs for `sysid`/`compid`.
    pub fn new(sysid: u8, compid: u8, random_start: u64) -> Self {
        Io {
            out: Outbox::new(sysid, compid, random_start),
            texts: TextQueue::default(),
            console: VecDeque::new(),
            events: EventLog::default(),
        }
    }

    /// Print a console line (PX4 stdout).
    pub fn print(&mut self, line: String) {
        if self.console.len() == CONSOLE_CAP {
            self.console.pop_front();
        }
        self.console.push_back(line);
    }

    /// A `mavlink_log_*` text from `module`: console line plus a queued STATUSTEXT.
    pub fn log(&mut self, now_us: u64, sev: MavSeverity, module: &str, text: &str) {
        self.print(format!("{:<5} [{}] {}", console_level(sev), module, text));
        self.texts.push(now_us, sev, text);
    }

    /// `mavlink_log_info`.
    pub fn info(&mut self, now_us: u64, module: &str, text: &str) {
        self.log(now_us, MavSeverity::MAV_SEVERITY_INFO, module, text);
    }

    /// `mavlink_log_warning`.
    pub fn warn(&mut self, now_us: u64, module: &str, text: &str) {
        self.log(now_us, MavSeverity::MAV_SEVERITY_WARNING, module, text);
    }

    /// `mavlink_log_critical`.
    pub fn critical(&mut self, now_us: u64, module: &str, text: &str) {
        self.log(now_us, MavSeverity::MAV_SEVERITY_CRITICAL, module, text);
    }

    /// `events::send`: report event `name` (PX4's event name) with `log_levels` (internal << 4
    /// | external) and its packed arguments; it goes out as EVENT in the mavlink loop.
    pub fn event(&mut self, now_us: u64, name: &str, log_levels: u8, args: &[u8]) {
        self.events.report(now_us, name, log_levels, args);
    }

    /// Send what the events protocol has due (new EVENTs, CURRENT_EVENT_SEQUENCE).
    pub fn events_tick(&mut self, now_us: u64) {
        let Io { out, events, .. } = self;
        events.update(now_us, &mut |o| push_event_frame(out, o));
    }

    /// Answer REQUEST_EVENT from `to` for `first..=last`.
    pub fn request_events(&mut self, first: u16, last: u16, to: (u8, u8)) {
        let Io { out, events, .. } = self;
        events.request(first, last, to, &mut |o| push_event_frame(out, o));
    }
}

fn push_event_frame(out: &mut Outbox, o: Outgoing) {
    match o {
        Outgoing::Event(m) => out.push(&m),
        Outgoing::CurrentSequence(m) => out.push(&m),
        Outgoing::Error(m) => out.push(&m),
    }
}
