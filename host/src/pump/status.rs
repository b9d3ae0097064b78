//! What the pump publishes per link after every batch, so queries never round-trip to the pump
//! thread: the vehicle's state, mission progress, counters, and a bounded log of events.

use std::collections::VecDeque;
use std::net::SocketAddr;

use nexus_core::engine::{ProgramEnd, Reason, StepRecord};
use nexus_core::offboard::{OffboardEvent, Pending, Refusal};
use nexus_core::telemetry::{
    Attitude, Battery, Gps, Home, LandedState, LocalNed, Position, Snapshot, Telemetry,
};
use nexus_core::Mode;

use crate::transport::{ForeignSource, ForeignTraffic};

/// Mission progress, as PX4 reported it to the offboard machine.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive] // more fields may come
pub struct MissionStatus {
    /// Items in the held mission (0 before any upload).
    pub count: usize,
    /// PX4 accepted the last upload (MISSION_ACK type 0).
    pub uploaded: bool,
    /// PX4's MISSION_ACK result for the last upload (0 accepted); `None` before one came.
    pub ack: Option<u8>,
    /// MISSION_ACK.opaque_id of the last accepted upload.
    pub opaque_id: Option<u32>,
    /// Highest item reached in this run (the Python client's -1 is `None`).
    pub reached: Option<u16>,
    /// Item PX4 is flying to (MISSION_CURRENT.seq; 0 before the first report).
    pub current: u16,
    /// PX4 reported the mission's last reachable item reached in this start.
    pub complete: bool,
    /// An upload, download or clear is in flight.
    pub transfer_in_flight: bool,
}

/// The vehicle's telemetry in units (degrees, metres, radians, volts, percent), each `None`
/// until the message it comes from has arrived.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
#[non_exhaustive]
pub struct Vitals {
    /// GLOBAL_POSITION_INT: latitude/longitude, altitude AMSL and above home.
    pub position: Option<Position>,
    /// LOCAL_POSITION_NED: position and velocity, NED.
    pub local_ned: Option<LocalNed>,
    /// ATTITUDE: roll, pitch, NED yaw, rad.
    pub attitude: Option<Attitude>,
    /// Compass heading from ATTITUDE.yaw, rad in [0, 2π).
    pub heading_rad: Option<f32>,
    /// VFR_HUD.groundspeed, m/s.
    pub groundspeed_m_s: Option<f32>,
    /// VFR_HUD.climb, m/s, up positive.
    pub climb_rate_m_s: Option<f32>,
    /// SYS_STATUS: battery voltage and charge.
    pub battery: Option<Battery>,
    /// GPS_RAW_INT: fix type and satellites.
    pub gps: Option<Gps>,
    /// HOME_POSITION.
    pub home: Option<Home>,
}

impl Vitals {
    /// Read them from `tel`.
    pub fn from_telemetry<const T: usize>(tel: &Telemetry<T>) -> Vitals {
        Vitals {
            position: tel.position(),
            local_ned: tel.local_ned(),
            attitude: tel.attitude_rad(),
            heading_rad: tel.heading_rad(),
            groundspeed_m_s: tel.groundspeed_m_s(),
            climb_rate_m_s: tel.climb_rate_m_s(),
            battery: tel.battery(),
            gps: tel.gps(),
            home: tel.home_position(),
        }
    }
}

/// Traffic counters of one link since it opened.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive] // more fields may come
pub struct LinkCounters {
    /// `recv` calls that returned data (datagrams for UDP).
    pub rx_reads: u64,
    /// Bytes received.
    pub rx_bytes: u64,
    /// Frames with a valid checksum, and frames of messages the client does not read (passed
    /// over without their checksum where the stream vouches for their length: see
    /// `nexus_core::frame::Decoder::skipping`).
    pub frames: u64,
    /// Frames from the target autopilot and for us, taken in by the client.
    pub accepted: u64,
    /// Frames whose payload did not decode (out-of-range enum value, …).
    pub decode_errors: u64,
    /// Checksum failures and false frame starts (decoder).
    pub crc_errors: u64,
    /// Bytes skipped while searching for a frame start (decoder).
    pub dropped_bytes: u64,
    /// Frames sent.
    pub tx_frames: u64,
    /// Frames dropped because the link was congested.
    pub tx_dropped: u64,
    /// Frames not sent because no peer was known yet (`udpin` before the vehicle spoke).
    pub tx_no_peer: u64,
    /// Times the peer changed (a new `udpin` sender, a new `tcpin` connection).
    pub peer_changes: u64,
    /// Events the client dropped because they were not drained in time (should stay 0).
    pub events_lost: u64,
    /// What was sent, by request kind: with what the flight asked for, the retries it took.
    pub tx_requests: TxRequests,
    /// A signed link's verdicts on received frames, by cause (`None`: the link does not sign).
    pub signing: Option<crate::signing::SigningStats>,
    /// Times the pump woke for this link's timers (its deadline came): a few a second on a
    /// healthy link; a driver that spun on a deadline would show it here.
    pub timer_wakes: u64,
}

/// Frames sent of the kinds a lossy link makes the client repeat. Each count includes the
/// first send: retries are the count less the requests made.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive] // more fields may come
pub struct TxRequests {
    /// COMMAND_LONG / COMMAND_INT (mode, arm, takeoff, mission start, stream requests, …).
    pub commands: u64,
    /// PARAM_SET.
    pub param_sets: u64,
    /// MISSION_COUNT (an upload's start).
    pub mission_counts: u64,
    /// MISSION_ITEM_INT (upload items, asked for by the vehicle, sent again when asked again).
    pub mission_items: u64,
    /// MISSION_REQUEST_LIST and MISSION_REQUEST_INT (a download's requests).
    pub mission_requests: u64,
}

impl TxRequests {
    /// Count a frame by its MAVLink message id.
    pub fn count(&mut self, msgid: u32) {
        match msgid {
            75 | 76 => self.commands += 1,
            23 => self.param_sets += 1,
            44 => self.mission_counts += 1,
            73 => self.mission_items += 1,
            43 | 51 => self.mission_requests += 1,
            _ => {}
        }
    }
}

/// The link's measured round trip and the retry timers that follow it (the core's RFC 6298
/// estimate, `nexus_core::offboard::RttEstimator`).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct LinkRtt {
    /// Smoothed round trip of commands and mission-protocol requests, ms of the vehicle's
    /// clock (sim time once the vehicle reports it; ×5 makes it five times a wall round trip).
    /// `None` before the first clean sample.
    pub srtt_ms: Option<f32>,
    /// Its variation (RTTVAR), ms of the same clock.
    pub rttvar_ms: Option<f32>,
    /// Clean samples taken (answers to requests sent once).
    pub samples: u32,
    /// Times the retry timer is doubled now (consecutive unanswered resends).
    pub backoff: u8,
    /// Re-command timer of a mode, arm or mission restart now, ms of the vehicle's clock.
    pub command_retry_ms: u64,
    /// Resend timer of a mission-protocol request now, ms of the vehicle's clock.
    pub mission_retry_ms: u64,
    /// Smoothed round trip of parameter reads and sets, wall time (the pump times those on
    /// the wall clock); `None` before the first.
    pub param_srtt_wall: Option<std::time::Duration>,
    /// Re-send timer of a parameter read now, wall time.
    pub param_retry_wall: std::time::Duration,
}

impl LinkRtt {
    /// The figures of the offboard machine's estimate and the pump's parameter one.
    pub fn of<const N: usize>(
        ob: &nexus_core::offboard::Offboard<N>,
        params: &nexus_core::offboard::RttEstimator,
        param_retry_wall: std::time::Duration,
    ) -> LinkRtt {
        let r = ob.link_rtt();
        let (command_retry_ms, mission_retry_ms) = ob.retry_timers_ms();
        LinkRtt {
            srtt_ms: r.srtt_ms(),
            rttvar_ms: r.rttvar_ms(),
            samples: r.samples(),
            backoff: r.backoff(),
            command_retry_ms,
            mission_retry_ms,
            // The estimator's wall ms (never negative; a NaN reads as none).
            param_srtt_wall: params
                .srtt_ms()
                .and_then(|ms| std::time::Duration::try_from_secs_f32(ms / 1000.0).ok()),
            param_retry_wall,
        }
    }
}

/// The vehicle and link as of the pump's last batch. Cheap to read: it is published, not
/// asked for.
#[derive(Debug, Clone)]
#[non_exhaustive] // more fields may come
pub struct LinkStatus {
    /// PX4's HEARTBEAT has arrived: verbs have somewhere to go.
    pub connected: bool,
    /// Armed flag of the last HEARTBEAT.
    pub armed: bool,
    /// Mode of the last HEARTBEAT.
    pub mode: Option<Mode>,
    /// The vehicle reached what the last verb commanded (takeoff altitude, goto position).
    pub at_target: bool,
    /// EXTENDED_SYS_STATE's landed state.
    pub landed_state: LandedState,
    /// Whether the vehicle reported itself taking off or in the air at any time since the link
    /// opened: kept on the pump thread, which sees every message, so a flight too fast for a
    /// caller's look (`--speed max`) is not missed.
    pub airborne_seen: bool,
    /// On the ground by the wait engine's rule (landed state, or disarmed within 0.3 m of the pad).
    pub landed: Option<bool>,
    /// GLOBAL_POSITION_INT.relative_alt, m.
    pub relative_alt_m: Option<f32>,
    /// Height above the pad, m, as the waits and `at_target` judge it (the core's
    /// `Telemetry::height_m`: ground truth when fresh, else the altitude's rise since arming).
    pub height_m: Option<f32>,
    /// The telemetry in units.
    pub vitals: Vitals,
    /// Autopilot clock (time_boot_ms), ms; `None` before the first timestamped message.
    pub sim_ms: Option<u64>,
    /// Mission progress.
    pub mission: MissionStatus,
    /// Requests the offboard machine is still pursuing.
    pub pending: Pending,
    /// The wait engine's snapshot (sim time, text seq, armed, mode, height, airspeed, waypoint, …).
    pub snapshot: Snapshot,
    /// PX4's last refusal, with the STATUSTEXT that explained it.
    pub last_refusal: Option<Refusal>,
    /// Traffic counters.
    pub counters: LinkCounters,
    /// The measured round trip and the retry timers now.
    pub rtt: LinkRtt,
    /// Where the link sends now.
    pub peer: Option<SocketAddr>,
    /// Why the vehicle or link died, once it has: every wait since ends `died` with this.
    pub died: Option<crate::launcher::DeathCause>,
    /// The link was closed; nothing is published any more.
    pub closed: bool,
    /// Wall time of the last frame received from the target autopilot.
    pub last_rx: Option<std::time::Instant>,
    /// Publications so far (grows with every batch).
    pub generation: u64,
    /// What UDP sources other than the vehicle sent: counted, never applied.
    pub foreign: ForeignTraffic,
}

impl Default for LinkStatus {
    fn default() -> Self {
        LinkStatus {
            connected: false,
            armed: false,
            mode: None,
            at_target: false,
            landed_state: LandedState::Unknown,
            airborne_seen: false,
            landed: None,
            relative_alt_m: None,
            height_m: None,
            vitals: Vitals::default(),
            sim_ms: None,
            mission: MissionStatus::default(),
            pending: Pending::default(),
            snapshot: Snapshot::default(),
            last_refusal: None,
            counters: LinkCounters::default(),
            rtt: LinkRtt::default(),
            peer: None,
            died: None,
            closed: false,
            last_rx: None,
            generation: 0,
            foreign: ForeignTraffic::default(),
        }
    }
}

impl LinkStatus {
    /// Bring the fields the core client itself knows up to date from `client`: the vehicle's
    /// state, mission progress, pending requests, the wait engine's snapshot and the last
    /// refusal (with the death, when the driver set [`LinkStatus::died`] first, as the
    /// snapshot's error). What only a driver knows (counters, round trip, peer, death, wall
    /// times) is left as it is. The one mapping from a client to a status, for every driver.
    pub fn observe(&mut self, client: &super::HostClient) {
        let tel = client.telemetry();
        let ob = client.offboard();
        self.connected = tel.connected();
        self.armed = ob.is_armed(tel);
        self.mode = tel.mode();
        self.at_target = ob.at_target(tel);
        self.landed_state = tel.landed_state();
        self.airborne_seen |= matches!(
            self.landed_state,
            LandedState::InAir | LandedState::TakingOff
        );
        self.landed = tel.landed();
        self.relative_alt_m = tel.relative_alt_m();
        self.height_m = tel.height_m();
        self.vitals = Vitals::from_telemetry(tel);
        self.sim_ms = tel.sim_ms();
        self.mission = MissionStatus {
            count: ob.mission_count(),
            uploaded: ob.mission_uploaded(),
            ack: ob.mission_ack(),
            opaque_id: ob.mission_opaque_id(),
            reached: ob.mission_reached(),
            current: ob.mission_current(),
            complete: ob.mission_complete(),
            transfer_in_flight: ob.pending().transfer,
        };
        self.pending = ob.pending();
        self.snapshot = client.snapshot();
        // The death is the snapshot's error too, whichever driver saw it.
        if let Some(cause) = &self.died {
            self.snapshot.error = Some(nexus_core::telemetry::error_text(&cause.to_string()));
        }
        if self.last_refusal.as_ref() != ob.last_refusal() {
            self.last_refusal = ob.last_refusal().cloned();
        }
    }
}

/// Something that happened on a link that the application may want to see.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive] // more variants may come; match with a `_` arm
pub enum LinkEvent {
    /// The offboard machine's news: a refusal, a request given up, a mission transfer's end.
    Offboard(OffboardEvent),
    /// A program step ended.
    Step {
        /// Step index.
        step: usize,
        /// Its condition was met.
        passed: bool,
        /// Why its wait ended.
        reason: Reason,
        /// Why it did not pass, in words (what was pending, PX4's words): built by the core
        /// ([`nexus_core::explain::Explanation`]) in the tick the step settled.
        explanation: Option<String>,
    },
    /// The running program ended.
    ProgramFinished(ProgramEnd),
    /// A `then_speedup` reaction (or a program step) asked for a speed factor.
    Speedup {
        /// The factor asked for.
        factor: f32,
        /// Why the vehicle could not take it, if it could not.
        error: Option<String>,
    },
    /// The vehicle or link died.
    Died(crate::launcher::DeathCause),
    /// The link now sends to a new peer.
    PeerChanged(Option<SocketAddr>),
    /// A UDP source that is not the vehicle sent something: it is ignored (counted in
    /// [`LinkStatus::foreign`]). Once per source, when it first sends after the vehicle's
    /// address is known (or, for a source past the first
    /// [`FOREIGN_SOURCES`](crate::transport::FOREIGN_SOURCES), once for all of them with
    /// `None`).
    Ignored(Option<ForeignSource>),
    /// Loss on the link stayed above [`super::slow_link::LOSS_THRESHOLD`]: the streams the
    /// engine reads were asked for at reduced rates. Why, in words (loss and byte rate).
    SlowLink(String),
}

/// Why a `then_speedup` failed on a link without a vehicle whose speed can change.
pub const NO_SPEED_CONTROL: &str = "this link has no vehicle whose speed can change";

impl LinkEvent {
    /// A program step ended: with the core's explanation, built now (in the tick it settled),
    /// if it did not pass. What every driver of a [`super::HostClient`] logs for the core's
    /// `Event::Step`.
    pub fn step(
        client: &super::HostClient,
        now: nexus_core::Instant,
        step: usize,
        passed: bool,
        reason: Reason,
    ) -> Self {
        LinkEvent::Step {
            step,
            passed,
            reason,
            explanation: (!passed)
                .then(|| client.explain_step(now, step))
                .flatten()
                .map(|e| e.to_string()),
        }
    }
}

/// Events kept per link; older ones are dropped (and counted) when it is full.
pub const EVENT_LOG_LEN: usize = 1024;

/// A bounded, numbered log of [`LinkEvent`]s (numbers from 1).
#[derive(Debug, Default)]
pub(crate) struct EventLog {
    events: VecDeque<(u64, LinkEvent)>,
    next: u64,
    pub lost: u64,
}

impl EventLog {
    pub fn push(&mut self, e: LinkEvent) {
        if self.events.len() == EVENT_LOG_LEN {
            self.events.pop_front();
            self.lost += 1;
        }
        self.next += 1;
        self.events.push_back((self.next, e));
    }

    /// Events numbered after `seq`, oldest first.
    pub fn since(&self, seq: u64) -> Vec<(u64, LinkEvent)> {
        self.events
            .iter()
            .filter(|(n, _)| *n > seq)
            .cloned()
            .collect()
    }

    /// Number of the newest event (0 before any).
    pub fn last_seq(&self) -> u64 {
        self.next
    }
}

/// How a step program ended, with every step's record.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive] // more fields may come
pub struct ProgramReport {
    /// How it ended.
    pub end: ProgramEnd,
    /// Each step's outcome, in order (steps never reached are absent).
    pub records: Vec<StepRecord>,
    /// Why it did not complete (a failed action, "aborted", the died error, …).
    pub error: Option<String>,
}

impl ProgramReport {
    /// Every step ran and each passed.
    pub fn passed(&self) -> bool {
        self.end == ProgramEnd::Completed && self.records.iter().all(|r| r.passed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::launcher::DeathCause;

    #[test]
    fn the_log_numbers_events_and_drops_the_oldest() {
        let mut log = EventLog::default();
        for i in 0..(EVENT_LOG_LEN + 5) {
            log.push(LinkEvent::Died(DeathCause::Other(format!("{i}"))));
        }
        assert_eq!(log.lost, 5);
        assert_eq!(log.last_seq(), (EVENT_LOG_LEN + 5) as u64);
        let tail = log.since(log.last_seq() - 2);
        assert_eq!(tail.len(), 2);
        assert_eq!(
            tail[1].1,
            LinkEvent::Died(DeathCause::Other(format!("{}", EVENT_LOG_LEN + 4)))
        );
        assert_eq!(log.since(0).len(), EVENT_LOG_LEN);
    }
}
