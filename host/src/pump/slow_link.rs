//! Streams for a link slower than PX4's: at 57 600 baud a serial line or telemetry radio moves
//! ~5.7 KB/s, while PX4 streams ~25 KB/s on its offboard link (ATTITUDE at 100 Hz, HIGHRES_IMU
//! and GLOBAL_POSITION_INT at 50 Hz, …, docs/px4-wire.md §Streams). What does not fit is lost at
//! random — among it the answers the engine waits for. So, as QGroundControl does for a radio, the
//! client asks (MAV_CMD_SET_MESSAGE_INTERVAL, 511) for the streams the engine reads at rates
//! the link carries, and turns off the bulk it never reads. The requests are idempotent and
//! are sent more than once: on a lossy link one may be lost.
//!
//! A serial line says its rate; a network link does not (a radio may sit behind
//! mavlink-router or a bridge). There the [`LossMonitor`] watches the vehicle's MAVLink
//! sequence numbers: when more than [`LOSS_THRESHOLD`] of its frames go missing in
//! [`LOSS_WINDOWS`] consecutive windows of [`LOSS_WINDOW_S`], the link asks for the same
//! reduced rates and says why (a [`super::LinkEvent::SlowLink`], with the loss and the byte
//! rate measured).

use nexus_core::mav;
use nexus_core::offboard::wire::{command_long, Addr};
use nexus_core::offboard::OffboardConfig;

use super::{LinkHandle, PumpError};
use crate::transport::ConnString;

/// What PX4 streams on an offboard link, bytes a second (measured order of magnitude).
pub const PX4_STREAM_BYTES_PER_S: u32 = 25_000;

/// Message id and the rate asked for on a slow link, Hz (negative: off). About 1.5 KB/s in
/// all, a quarter of a 57 600 baud line, leaving room for commands and mission transfers.
pub const SLOW_LINK_RATES_HZ: [(u32, f32); 20] = [
    (30, 2.0),     // ATTITUDE: heading
    (31, -1.0),    // ATTITUDE_QUATERNION: not read
    (105, -1.0),   // HIGHRES_IMU: not read
    (331, -1.0),   // ODOMETRY: not read
    (83, -1.0),    // ATTITUDE_TARGET: not read (10 Hz)
    (85, -1.0),    // POSITION_TARGET_LOCAL_NED: not read (10 Hz)
    (87, -1.0),    // POSITION_TARGET_GLOBAL_INT: not read (10 Hz)
    (36, -1.0),    // SERVO_OUTPUT_RAW: not read (10 Hz)
    (132, -1.0),   // DISTANCE_SENSOR: not read (10 Hz)
    (111, -1.0),   // TIMESYNC: not read (10 Hz)
    (230, -1.0),   // ESTIMATOR_STATUS: not read
    (12901, -1.0), // OPEN_DRONE_ID_LOCATION: not read
    (33, 5.0),     // GLOBAL_POSITION_INT: position, height
    (32, 2.0),     // LOCAL_POSITION_NED
    (141, 1.0),    // ALTITUDE
    (24, 1.0),     // GPS_RAW_INT
    (74, 4.0),     // VFR_HUD: airspeed
    (1, 2.0),      // SYS_STATUS: health
    (245, 2.0),    // EXTENDED_SYS_STATE: landed state
    // MISSION_CURRENT: mission progress. Faster than PX4's 1 Hz: a one-shot MISSION_ITEM_REACHED
    // lost on the radio leaves it the only word that the last item was reached, and the disarm
    // that follows a mission's landing must not reach the client first.
    (42, 4.0),
];

/// The offboard machine's settings for a slow, lossy line: the same retry intervals (they
/// already exceed a radio's round trip of a few hundred ms at speed 1), but more resends
/// before a request or a mission transfer is given up, and a longer silence allowed inside
/// an upload — what still drops on a radio is tolerated, not reported as failure.
pub fn slow_link_offboard(c: OffboardConfig) -> OffboardConfig {
    OffboardConfig {
        max_sends: c.max_sends.max(20),
        mission_retries: c.mission_retries.max(12),
        mission_timeout_s: c.mission_timeout_s.max(15.0),
        ..c
    }
}

/// The line's byte rate when `conn` is a serial link slower than PX4's streams (8N1: ten bits
/// a byte); `None` otherwise (a network link, or a fast line).
pub fn slow_line_bytes_per_s(conn: &ConnString) -> Option<u32> {
    match conn {
        ConnString::Serial { baud, .. } => slow_baud_bytes_per_s(*baud),
        _ => None,
    }
}

/// The byte rate of a line of `baud` (8N1) when it is slower than PX4's streams: a serial
/// line, or a radio a user declares behind a network link.
pub fn slow_baud_bytes_per_s(baud: u32) -> Option<u32> {
    (baud / 10 < PX4_STREAM_BYTES_PER_S).then_some(baud / 10)
}

/// Fraction of the vehicle's frames missing (sequence gaps) above which a window counts as
/// lossy: 10 %. A healthy link, loopback or a LAN, loses none; a radio that cannot carry
/// PX4's streams loses far more, and random loss of this much already costs the engine its
/// answers often enough to be worth fewer streams.
pub const LOSS_THRESHOLD: f64 = 0.10;
/// One loss window, wall seconds.
pub const LOSS_WINDOW_S: f64 = 2.0;
/// Consecutive lossy windows before the streams are reduced: the loss has to stay, not be
/// one burst.
pub const LOSS_WINDOWS: u32 = 2;
/// Frames (received and lost) a window needs to count at all.
pub const LOSS_MIN_FRAMES: u64 = 20;
/// How many times the reduced rates are asked for once loss is detected, a window apart
/// (each request may be lost itself).
pub const LOSS_ASKS: u32 = 3;

/// What a [`LossMonitor`] says after a look.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LossStep {
    /// Ask for [`SLOW_LINK_RATES_HZ`] now.
    pub ask: bool,
    /// Loss was just detected: why the rates are reduced, in words.
    pub reason: Option<String>,
}

/// Loss detection on any link from the decoder's sequence counters
/// ([`nexus_core::frame::DecoderStats::seq_frames`], `seq_lost`) and the bytes received.
#[derive(Debug, Clone)]
pub struct LossMonitor {
    enabled: bool,
    /// Start of the current window: (wall, frames, lost, bytes).
    window: Option<(std::time::Instant, u64, u64, u64)>,
    lossy_windows: u32,
    asks_left: u32,
    detected: bool,
}

impl LossMonitor {
    /// A monitor; a disabled one never asks (a vehicle we started, over loopback: loss there
    /// is this host falling behind, not a slow link).
    pub fn new(enabled: bool) -> Self {
        LossMonitor {
            enabled,
            window: None,
            lossy_windows: 0,
            asks_left: 0,
            detected: false,
        }
    }

    /// Whether loss has been detected on this link.
    pub fn detected(&self) -> bool {
        self.detected
    }

    /// Look at the counters now (`frames` and `lost` from the decoder, `bytes` received): at
    /// each window's end, judge it.
    pub fn observe(
        &mut self,
        now: std::time::Instant,
        frames: u64,
        lost: u64,
        bytes: u64,
    ) -> LossStep {
        let mut step = LossStep::default();
        if !self.enabled {
            return step;
        }
        let Some((t0, f0, l0, b0)) = self.window else {
            self.window = Some((now, frames, lost, bytes));
            return step;
        };
        let dt = now.saturating_duration_since(t0).as_secs_f64();
        if dt < LOSS_WINDOW_S {
            return step;
        }
        self.window = Some((now, frames, lost, bytes));
        // Counters that went back (a new decoder for a new peer): start again.
        let (Some(df), Some(dl)) = (frames.checked_sub(f0), lost.checked_sub(l0)) else {
            self.lossy_windows = 0;
            return step;
        };
        let total = df + dl;
        let loss = if total > 0 {
            dl as f64 / total as f64
        } else {
            0.0
        };
        if total >= LOSS_MIN_FRAMES && loss > LOSS_THRESHOLD {
            self.lossy_windows += 1;
        } else {
            self.lossy_windows = 0;
        }
        if !self.detected && self.lossy_windows >= LOSS_WINDOWS {
            self.detected = true;
            self.asks_left = LOSS_ASKS;
            let rate = bytes.saturating_sub(b0) as f64 / dt;
            step.reason = Some(format!(
                "lossy link: {:.0} % of the vehicle's frames missing (MAVLink sequence gaps) \
                 over {} windows of {LOSS_WINDOW_S} s, receiving {rate:.0} B/s (PX4 streams \
                 ~{PX4_STREAM_BYTES_PER_S} B/s): asked the vehicle for the streams the engine \
                 reads at reduced rates (SET_MESSAGE_INTERVAL)",
                loss * 100.0,
                self.lossy_windows
            ));
        }
        if self.asks_left > 0 {
            self.asks_left -= 1;
            step.ask = true;
        }
        step
    }
}

/// The SET_MESSAGE_INTERVAL commands of [`SLOW_LINK_RATES_HZ`] for the vehicle `to`.
pub fn slow_link_requests(to: Addr) -> impl Iterator<Item = mav::COMMAND_LONG_DATA> {
    SLOW_LINK_RATES_HZ.into_iter().map(move |(id, hz)| {
        let interval_us = if hz > 0.0 { 1e6 / hz } else { -1.0 };
        command_long(
            to,
            mav::MavCmd::MAV_CMD_SET_MESSAGE_INTERVAL,
            [id as f32, interval_us, 0.0, 0.0, 0.0, 0.0, 0.0],
            0,
        )
    })
}

impl super::link::LinkState {
    /// Act on what the [`LossMonitor`] said: tell why, ask for the reduced rates.
    pub(crate) fn on_slow_link(&mut self, step: LossStep) {
        if let Some(why) = step.reason {
            self.shared.events().push(super::LinkEvent::SlowLink(why));
        }
        if step.ask {
            let tel = self.client.telemetry();
            let to = Addr {
                system: tel.ids().target_sysid,
                component: tel.target_compid(),
            };
            for cmd in slow_link_requests(to) {
                self.send_message(&cmd);
            }
        }
    }
}

impl LinkHandle {
    /// Ask the vehicle for [`SLOW_LINK_RATES_HZ`] once (call it again to repeat on a lossy
    /// link); how many requests went out.
    pub fn ask_slow_link_streams(&self) -> Result<usize, PumpError> {
        self.call(|ctx| {
            let tel = ctx.client().telemetry();
            let to = Addr {
                system: tel.ids().target_sysid,
                component: tel.target_compid(),
            };
            slow_link_requests(to)
                .filter(|cmd| ctx.send_message(cmd))
                .count()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    /// Loss that stays above the threshold for two windows is detected once, with its
    /// figures, and asked about three times; a lossless link, a single lossy window, too few
    /// frames and a disabled monitor never ask.
    #[test]
    fn loss_that_stays_is_detected_and_asked_about_three_times() {
        let t0 = Instant::now();
        let at = |s: f64| t0 + Duration::from_secs_f64(s);
        // 100 frames a window, `lost` of them missing, 6 000 bytes a window.
        let run = |m: &mut LossMonitor, lost: &[u64]| {
            let (mut f, mut l, mut b) = (0, 0, 0);
            let mut steps = vec![m.observe(at(0.0), 0, 0, 0)];
            for (i, x) in lost.iter().enumerate() {
                f += 100 - x;
                l += x;
                b += 6_000;
                steps.push(m.observe(at(2.0 * (i + 1) as f64), f, l, b));
            }
            steps
        };
        let mut m = LossMonitor::new(true);
        let steps = run(&mut m, &[20, 20, 20, 20, 20, 0]);
        let asks: Vec<bool> = steps.iter().map(|s| s.ask).collect();
        assert_eq!(asks, [false, false, true, true, true, false, false]);
        let why = steps[2].reason.as_deref().unwrap();
        assert!(
            why.contains("20 % of the vehicle's frames missing"),
            "{why}"
        );
        assert!(why.contains("receiving 3000 B/s"), "{why}");
        assert!(steps.iter().filter(|s| s.reason.is_some()).count() == 1);
        assert!(m.detected());
        for lost in [&[0u64, 0, 0][..], &[30, 0, 30, 0, 30], &[5, 5, 5, 5]] {
            let mut m = LossMonitor::new(true);
            assert!(run(&mut m, lost).iter().all(|s| !s.ask), "{lost:?}");
        }
        // Ten frames a window, half lost: too few to judge.
        let mut m = LossMonitor::new(true);
        let few: Vec<LossStep> = (0..5)
            .map(|i| m.observe(at(2.0 * i as f64), 5 * i, 5 * i, 0))
            .collect();
        assert!(few.iter().all(|s| !s.ask));
        let mut off = LossMonitor::new(false);
        assert!(run(&mut off, &[50, 50, 50]).iter().all(|s| !s.ask));
    }

    #[test]
    fn only_slow_serial_lines_are_slow_and_the_plan_fits_a_radio() {
        let s = |baud| ConnString::Serial {
            path: "/dev/ttyUSB0".into(),
            baud,
        };
        assert_eq!(slow_line_bytes_per_s(&s(57_600)), Some(5_760));
        assert_eq!(slow_line_bytes_per_s(&s(921_600)), None);
        assert_eq!(slow_line_bytes_per_s(&ConnString::udp_in_any(14540)), None);
        // Frame sizes: MAVLink 2 header and checksum (12 bytes) plus each payload.
        let payload = |id| match id {
            30 => 28,
            33 => 28,
            32 => 28,
            141 => 32,
            24 => 52,
            74 => 20,
            1 => 43,
            245 => 2,
            42 => 18,
            _ => 0,
        };
        let bytes: f32 = SLOW_LINK_RATES_HZ
            .iter()
            .filter(|(_, hz)| *hz > 0.0)
            .map(|&(id, hz)| hz * (12 + payload(id)) as f32)
            .sum();
        assert!(bytes < 5_760.0 / 3.0, "{bytes} B/s");
        let to = Addr {
            system: 3,
            component: 1,
        };
        let cmds: Vec<_> = slow_link_requests(to).collect();
        assert_eq!(cmds.len(), SLOW_LINK_RATES_HZ.len());
        assert_eq!(cmds[0].param1, 30.0);
        assert_eq!(cmds[0].param2, 500_000.0);
        assert_eq!(cmds[1].param2, -1.0);
        assert!(cmds.iter().all(|c| c.target_system == 3));
        let d = OffboardConfig::default();
        let slow = slow_link_offboard(d);
        assert!(slow.mission_retries > d.mission_retries && slow.max_sends > d.max_sends);
        assert_eq!(slow.mission_retry_s, d.mission_retry_s);
    }
}
