//! Bring-up check of the serial MAVLink path, both ways, on UART0.
//!
//! The firmware plays a ground station (system 255, component 240) towards an autopilot
//! (system 1) on the other end of the UART. It sends its own HEARTBEAT at 1 Hz and, once the
//! autopilot is heard, asks it for SYSTEM_TIME with MAV_CMD_REQUEST_MESSAGE (repeated each
//! second until answered): the COMMAND_ACK that comes back, addressed to us, is the proof that
//! the autopilot decoded our frames. It exits 0 when it has
//! * [`HEARTBEATS_NEEDED`] HEARTBEATs from the autopilot,
//! * a STATUSTEXT and the autopilot clock (SYSTEM_TIME) in its telemetry,
//! * COMMAND_ACK(REQUEST_MESSAGE, ACCEPTED) for its request;
//!
//! and 1 if the autopilot refuses the request or [`TIMEOUT_MS`] pass first. Garbage, truncated
//! and corrupt frames on the line are skipped by the decoder; nothing in the path panics.

#![no_std]
#![no_main]

use cortex_m_rt::entry;
use nexus_core::frame::Encoder;
use nexus_core::link::{self, Framing, Rx, RxStats, Sink};
use nexus_core::mav;
use nexus_core::offboard::wire;
use nexus_core::telemetry::LinkIds;
use nexus_core::{Duration, Frame, Instant, Msg, Telemetry};
use nexus_firmware::pump::{self, LinkSigning, Node, Outcome, Pump};
use nexus_firmware::{board, clock, info};

/// Who we are, and the autopilot we expect.
const IDS: LinkIds = LinkIds {
    target_sysid: 1,
    own_sysid: 255,
    own_compid: 240,
};
/// HEARTBEATs from the autopilot before the link counts as up.
const HEARTBEATS_NEEDED: u32 = 3;
/// Our HEARTBEAT period, and the request's retry period, ms.
const PERIOD_MS: u64 = 1000;
/// The whole check must pass within this, ms of driver time.
const TIMEOUT_MS: u64 = 5000;
/// STATUSTEXTs kept by the telemetry cache.
const TEXTS: usize = 2;

/// The check's state: the byte path and telemetry of the autopilot, plus our two periodic
/// sends.
struct LinkCheck {
    rx: Rx,
    tel: Telemetry<TEXTS>,
    enc: Encoder,
    heartbeats: u32,
    next_heartbeat: Instant,
    next_request: Option<Instant>,
    deadline: Instant,
}

impl LinkCheck {
    fn new(now: Instant) -> Self {
        LinkCheck {
            rx: Rx::new(),
            tel: Telemetry::new(IDS),
            enc: Encoder::new(IDS.own_sysid, IDS.own_compid),
            heartbeats: 0,
            next_heartbeat: now,
            next_request: None,
            deadline: now + Duration::from_millis(TIMEOUT_MS),
        }
    }

    /// The autopilot's answer to our REQUEST_MESSAGE, if it has come.
    fn ack(&self) -> Option<mav::MavResult> {
        self.tel
            .command_ack()
            .filter(|a| a.command == mav::MavCmd::MAV_CMD_REQUEST_MESSAGE)
            .map(|a| a.result)
    }

    fn request_system_time(&self) -> mav::COMMAND_LONG_DATA {
        let to = wire::Addr {
            system: IDS.target_sysid,
            component: self.tel.target_compid(),
        };
        let id = <mav::SYSTEM_TIME_DATA as mavlink::MessageData>::ID as f32;
        let params = [id, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0];
        wire::command_long(to, mav::MavCmd::MAV_CMD_REQUEST_MESSAGE, params, 0)
    }
}

/// The core's byte path hands the check its frames.
impl Sink for LinkCheck {
    fn rx(&mut self) -> &mut Rx {
        &mut self.rx
    }

    fn take(&mut self, now: Instant, frame: &Frame) -> bool {
        let ours = self.tel.handle(now, frame);
        if ours && matches!(frame.msg, Msg::Heartbeat(_)) {
            self.heartbeats = self.heartbeats.saturating_add(1);
            if self.next_request.is_none() {
                self.next_request = Some(now);
            }
        }
        ours
    }
}

impl Node for LinkCheck {
    fn handle_stream_bytes(&mut self, now: Instant, chunk: &[u8], tap: &mut LinkSigning) {
        link::feed(self, now, chunk, Framing::Stream, tap);
    }

    fn rx_stats(&self) -> RxStats {
        self.rx.stats()
    }

    fn poll_transmit(&mut self, now: Instant, buf: &mut [u8]) -> Option<usize> {
        if now >= self.next_heartbeat {
            self.next_heartbeat = now + Duration::from_millis(PERIOD_MS);
            return self.enc.encode(&wire::gcs_heartbeat(), buf).ok();
        }
        if self.ack().is_none() && self.next_request.is_some_and(|t| now >= t) {
            self.next_request = Some(now + Duration::from_millis(PERIOD_MS));
            let cmd = self.request_system_time();
            return self.enc.encode(&cmd, buf).ok();
        }
        None
    }

    fn next_deadline(&self) -> Option<Instant> {
        let next = match self.next_request {
            Some(r) if self.ack().is_none() => self.next_heartbeat.min(r),
            _ => self.next_heartbeat,
        };
        Some(next.min(self.deadline))
    }

    fn poll_outcome(&mut self, now: Instant) -> Option<Outcome> {
        match self.ack() {
            Some(mav::MavResult::MAV_RESULT_ACCEPTED) => {}
            Some(_) => return Some(Outcome::Failure("autopilot refused REQUEST_MESSAGE")),
            None => {}
        }
        let texts = self.tel.texts().last_seq();
        let done = self.heartbeats >= HEARTBEATS_NEEDED
            && texts >= 1
            && self.tel.sim_ms().is_some()
            && self.ack().is_some();
        if done {
            info!(
                "link up: {} heartbeats, {} texts, sim clock {} ms",
                self.heartbeats,
                texts,
                // Logged as a u32 (saturating): the log lines carry no u64.
                self.tel
                    .sim_ms()
                    .map_or(0, |ms| u32::try_from(ms).unwrap_or(u32::MAX))
            );
            return Some(Outcome::Success);
        }
        if now >= self.deadline {
            info!(
                "timed out: {} heartbeats, {} texts, sim clock known {}, acked {}",
                self.heartbeats,
                texts,
                self.tel.sim_ms().is_some() as u8,
                self.ack().is_some() as u8
            );
            let why = if self.heartbeats == 0 {
                "no heartbeat from the autopilot"
            } else {
                "link incomplete"
            };
            return Some(Outcome::Failure(why));
        }
        None
    }
}

#[entry]
fn main() -> ! {
    let uart = board::bring_up();
    info!("link_check: up, waiting for system {}", IDS.target_sysid);
    let mut pump = Pump::new(uart);
    let mut node = LinkCheck::new(clock::now());
    // The node's own timeout ends the run; the cap is a backstop.
    let outcome = pump.run(&mut node, Duration::from_millis(TIMEOUT_MS + 1000));
    pump::finish(outcome, &pump, &node)
}
