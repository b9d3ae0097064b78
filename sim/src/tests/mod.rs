//! Unit tests of the in-memory vehicle: a scripted GCS talks to it frame by frame under
#![allow(deprecated)] // MISSION_ITEM and the *_INT frames are still what clients send PX4.
//! virtual time, no sockets.

mod failsafes;
mod faults;
mod fixed_wing;
mod flight;
mod geofence;
mod mission;
mod protocol;
mod px4_messages;
mod rates;

use super::testutil::for_each_frame;
use super::{Vehicle, VehicleConfig};
use mavlink::dialects::common as mav;
use mavlink::{MavlinkVersion, MessageData};
use nexus_core::frame::{encode_v2, Decoder, MAX_FRAME_LEN};
use nexus_core::Mode;
use std::collections::HashMap;

/// Something the GCS saw, in order.
#[derive(Debug, Clone, PartialEq)]
pub enum Ev {
    Ack {
        cmd: u16,
        result: u8,
    },
    Text {
        sev: u8,
        text: String,
    },
    Mode(Mode),
    Armed(bool),
    Landed(u8),
    Status(u8),
    MissionCurrent {
        seq: u16,
        total: u16,
        state: u8,
    },
    Reached(u16),
    MissionAck {
        result: u8,
        opaque: u32,
    },
    Request {
        seq: u16,
        int: bool,
    },
    Param {
        name: String,
        bits: u32,
        ty: u8,
    },
    ParamError {
        name: String,
        error: u8,
    },
    Timesync {
        tc1: i64,
        ts1: i64,
    },
    MessageInterval {
        id: u16,
        interval_us: i32,
    },
    FlightInformation {
        arming_us: u64,
        takeoff_us: u64,
    },
    MissionCount {
        count: u16,
        opaque: u32,
    },
    ItemInt {
        seq: u16,
        cmd: u16,
        x: i32,
        frame: u8,
    },
    Item {
        seq: u16,
    },
}

pub struct Gcs {
    pub v: Vehicle,
    dec: Decoder,
    seq: u8,
    pub sysid: u8,
    pub compid: u8,
    pub log: Vec<(u64, Ev)>,
    pub hb: Option<mav::HEARTBEAT_DATA>,
    pub first_hb_ms: Option<u64>,
    pub first_gpos_ms: Option<u64>,
    pub gpos: Option<mav::GLOBAL_POSITION_INT_DATA>,
    pub lpos: Option<mav::LOCAL_POSITION_NED_DATA>,
    /// Latest HIL_STATE_QUATERNION (ground truth, when asked for).
    pub truth: Option<mav::HIL_STATE_QUATERNION_DATA>,
    /// Latest AUTOPILOT_VERSION.
    pub version: Option<mav::AUTOPILOT_VERSION_DATA>,
    /// Every HOME_POSITION.altitude received, mm AMSL, with the vehicle's ms.
    pub home_alts: Vec<(u64, i32)>,
    pub prearm_since_ms: Option<u64>,
    pub counts: HashMap<u32, u32>,
    pub last_time_boot_ms: Option<u32>,
    pub self_addressed_cmds: Vec<(u16, u8)>,
    pub raw_texts: Vec<mav::STATUSTEXT_DATA>,
    /// Payloads of the events and standard-modes messages and GPS_GLOBAL_ORIGIN, with the
    /// vehicle's ms: (ms, msgid, payload).
    pub raw: Vec<(u64, u32, Vec<u8>)>,
    partial: HashMap<u16, (u8, String)>,
    landed: Option<u8>,
    pub send_heartbeats: bool,
    next_hb_us: u64,
    pub garbage_bytes: u32,
}

impl Gcs {
    pub fn new() -> Gcs {
        Gcs::with(VehicleConfig::instance(0))
    }

    pub fn with(cfg: VehicleConfig) -> Gcs {
        Gcs {
            v: Vehicle::new(cfg),
            dec: Decoder::new(),
            seq: 0,
            sysid: 255,
            compid: 190,
            log: Vec::new(),
            hb: None,
            first_hb_ms: None,
            first_gpos_ms: None,
            gpos: None,
            lpos: None,
            truth: None,
            version: None,
            home_alts: Vec::new(),
            prearm_since_ms: None,
            counts: HashMap::new(),
            last_time_boot_ms: None,
            self_addressed_cmds: Vec::new(),
            raw_texts: Vec::new(),
            raw: Vec::new(),
            partial: HashMap::new(),
            landed: None,
            send_heartbeats: true,
            next_hb_us: 0,
            garbage_bytes: 0,
        }
    }

    pub fn now_ms(&self) -> u64 {
        self.v.now_us() / 1000
    }

    pub fn send<M: MessageData>(&mut self, m: &M) {
        let mut b = [0u8; MAX_FRAME_LEN];
        let n = encode_v2(self.seq, self.sysid, self.compid, m, &mut b).unwrap();
        self.seq = self.seq.wrapping_add(1);
        self.v.handle_datagram(&b[..n]);
        self.drain();
    }

    pub fn cmd_long(&mut self, cmd: mav::MavCmd, p: [f32; 7]) {
        self.send(&mav::COMMAND_LONG_DATA {
            param1: p[0],
            param2: p[1],
            param3: p[2],
            param4: p[3],
            param5: p[4],
            param6: p[5],
            param7: p[6],
            command: cmd,
            target_system: self.v.cfg.sysid(),
            target_component: 1,
            confirmation: 0,
        });
    }

    #[allow(clippy::too_many_arguments)]
    pub fn cmd_int(
        &mut self,
        cmd: mav::MavCmd,
        frame: mav::MavFrame,
        p: [f32; 4],
        x: i32,
        y: i32,
        z: f32,
    ) {
        self.send(&mav::COMMAND_INT_DATA {
            param1: p[0],
            param2: p[1],
            param3: p[2],
            param4: p[3],
            x,
            y,
            z,
            command: cmd,
            target_system: 1,
            target_component: 1,
            frame,
            current: 0,
            autocontinue: 0,
        });
    }

    pub fn set_mode(&mut self, m: Mode) {
        let (main, sub) = m.main_sub();
        self.cmd_long(
            mav::MavCmd::MAV_CMD_DO_SET_MODE,
            [1.0, main as f32, sub as f32, 0.0, 0.0, 0.0, 0.0],
        );
    }

    pub fn arm(&mut self) {
        self.cmd_long(
            mav::MavCmd::MAV_CMD_COMPONENT_ARM_DISARM,
            [1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
        );
    }

    pub fn param_set(&mut self, name: &str, wire: f32, ty: mav::MavParamType) {
        let mut id = [0u8; 16];
        id[..name.len()].copy_from_slice(name.as_bytes());
        self.send(&mav::PARAM_SET_DATA {
            param_value: wire,
            target_system: 1,
            target_component: 1,
            param_id: id.into(),
            param_type: ty,
        });
    }

    /// Advance `ms` of sim time in 10 ms steps, sending a GCS heartbeat every second.
    pub fn run(&mut self, ms: u64) {
        self.run_with(ms, |_| {});
    }

    /// Like `run`, calling `each` every 10 ms (e.g. to stream MANUAL_CONTROL).
    pub fn run_with(&mut self, ms: u64, mut each: impl FnMut(&mut Gcs)) {
        for _ in 0..ms.div_ceil(10) {
            if self.send_heartbeats && self.v.elapsed_us() >= self.next_hb_us {
                self.next_hb_us = self.v.elapsed_us() + 1_000_000;
                self.send(&mav::HEARTBEAT_DATA {
                    custom_mode: 0,
                    mavtype: mav::MavType::MAV_TYPE_GCS,
                    autopilot: mav::MavAutopilot::MAV_AUTOPILOT_INVALID,
                    base_mode: mav::MavModeFlag::empty(),
                    system_status: mav::MavState::MAV_STATE_ACTIVE,
                    mavlink_version: 3,
                });
            }
            each(self);
            self.v.step(10_000);
            self.drain();
        }
    }

    /// Run until `pred` or `limit_ms`; returns whether `pred` held.
    pub fn run_until(&mut self, limit_ms: u64, mut pred: impl FnMut(&Gcs) -> bool) -> bool {
        for _ in 0..limit_ms.div_ceil(10) {
            if pred(self) {
                return true;
            }
            self.run(10);
        }
        pred(self)
    }

    fn push(&mut self, e: Ev) {
        let t = self.now_ms();
        self.log.push((t, e));
    }

    pub fn drain(&mut self) {
        let mut buf = [0u8; 1400];
        let mut frames: Vec<(u32, Vec<u8>)> = Vec::new();
        while let Some(n) = self.v.poll_transmit(&mut buf) {
            let before = self.dec.stats().dropped_bytes;
            for_each_frame(&mut self.dec, &buf[..n], |h, p| {
                assert_eq!((h.sysid, h.compid), (self.v.cfg.sysid(), 1));
                frames.push((h.msgid, p.to_vec()));
            });
            self.garbage_bytes += self.dec.stats().dropped_bytes - before;
        }
        for (id, p) in frames {
            self.on_frame(id, &p);
        }
    }

    fn on_frame(&mut self, id: u32, p: &[u8]) {
        let v = MavlinkVersion::V2;
        *self.counts.entry(id).or_default() += 1;
        let now = self.now_ms();
        if matches!(
            id,
            mav::GPS_GLOBAL_ORIGIN_DATA::ID
                | mav::EVENT_DATA::ID
                | mav::CURRENT_EVENT_SEQUENCE_DATA::ID
                | mav::RESPONSE_EVENT_ERROR_DATA::ID
                | mav::AVAILABLE_MODES_DATA::ID
                | mav::CURRENT_MODE_DATA::ID
                | mav::AVAILABLE_MODES_MONITOR_DATA::ID
        ) {
            self.raw.push((now, id, p.to_vec()));
        }
        match id {
            0 => {
                let hb = mav::HEARTBEAT_DATA::deser(v, p).unwrap();
                self.first_hb_ms.get_or_insert(now);
                let mode = Mode::from_custom_mode(hb.custom_mode);
                let armed = hb.base_mode.bits() & 0x80 != 0;
                let prev = self.hb.clone();
                if prev.as_ref().map(|h| Mode::from_custom_mode(h.custom_mode)) != Some(mode) {
                    self.push(Ev::Mode(mode));
                }
                if prev.as_ref().map(|h| h.base_mode.bits() & 0x80 != 0) != Some(armed) {
                    self.push(Ev::Armed(armed));
                }
                if prev.as_ref().map(|h| h.system_status as u8) != Some(hb.system_status as u8) {
                    self.push(Ev::Status(hb.system_status as u8));
                }
                self.hb = Some(hb);
            }
            1 => {
                let s = mav::SYS_STATUS_DATA::deser(v, p).unwrap();
                let ok = s.onboard_control_sensors_health.bits() & 0x1000_0000 != 0;
                if ok {
                    self.prearm_since_ms.get_or_insert(now);
                } else {
                    self.prearm_since_ms = None;
                }
            }
            2 => {
                let t = mav::SYSTEM_TIME_DATA::deser(v, p).unwrap();
                self.last_time_boot_ms = Some(t.time_boot_ms);
            }
            33 => {
                let g = mav::GLOBAL_POSITION_INT_DATA::deser(v, p).unwrap();
                self.first_gpos_ms.get_or_insert(now);
                self.last_time_boot_ms = Some(g.time_boot_ms);
                self.gpos = Some(g);
            }
            32 => self.lpos = Some(mav::LOCAL_POSITION_NED_DATA::deser(v, p).unwrap()),
            115 => self.truth = Some(mav::HIL_STATE_QUATERNION_DATA::deser(v, p).unwrap()),
            148 => self.version = Some(mav::AUTOPILOT_VERSION_DATA::deser(v, p).unwrap()),
            242 => {
                let h = mav::HOME_POSITION_DATA::deser(v, p).unwrap();
                self.home_alts.push((now, h.altitude));
            }
            77 => {
                let a = mav::COMMAND_ACK_DATA::deser(v, p).unwrap();
                assert_eq!(
                    (a.target_system, a.target_component),
                    (self.sysid, self.compid)
                );
                self.push(Ev::Ack {
                    cmd: a.command as u16,
                    result: a.result as u8,
                });
            }
            76 => {
                let c = mav::COMMAND_LONG_DATA::deser(v, p).unwrap();
                self.self_addressed_cmds
                    .push((c.command as u16, c.target_system));
            }
            253 => {
                let t = mav::STATUSTEXT_DATA::deser(v, p).unwrap();
                self.raw_texts.push(t.clone());
                let end = t.text.iter().position(|&b| b == 0);
                let chunk = String::from_utf8_lossy(&t.text[..end.unwrap_or(50)]).into_owned();
                let e = self
                    .partial
                    .entry(t.id)
                    .or_insert((t.severity as u8, String::new()));
                e.1.push_str(&chunk);
                if end.is_some() {
                    let (sev, text) = self.partial.remove(&t.id).unwrap();
                    self.push(Ev::Text {
                        sev,
                        text: text.trim_end_matches('\t').to_owned(),
                    });
                }
            }
            245 => {
                let e = mav::EXTENDED_SYS_STATE_DATA::deser(v, p).unwrap();
                let ls = e.landed_state as u8;
                if self.landed != Some(ls) {
                    self.landed = Some(ls);
                    self.push(Ev::Landed(ls));
                }
            }
            42 => {
                let m = mav::MISSION_CURRENT_DATA::deser(v, p).unwrap();
                let ev = Ev::MissionCurrent {
                    seq: m.seq,
                    total: m.total,
                    state: m.mission_state as u8,
                };
                if self
                    .log
                    .iter()
                    .rev()
                    .find(|(_, e)| matches!(e, Ev::MissionCurrent { .. }))
                    .map(|(_, e)| e)
                    != Some(&ev)
                {
                    self.push(ev);
                }
            }
            46 => {
                let m = mav::MISSION_ITEM_REACHED_DATA::deser(v, p).unwrap();
                self.push(Ev::Reached(m.seq));
            }
            47 => {
                let m = mav::MISSION_ACK_DATA::deser(v, p).unwrap();
                self.push(Ev::MissionAck {
                    result: m.mavtype as u8,
                    opaque: m.opaque_id,
                });
            }
            40 | 51 => {
                let seq = u16::from_le_bytes([p[0], *p.get(1).unwrap_or(&0)]);
                self.push(Ev::Request { seq, int: id == 51 });
            }
            22 => {
                let m = mav::PARAM_VALUE_DATA::deser(v, p).unwrap();
                let end = m.param_id.iter().position(|&b| b == 0).unwrap_or(16);
                self.push(Ev::Param {
                    name: String::from_utf8_lossy(&m.param_id[..end]).into_owned(),
                    bits: m.param_value.to_bits(),
                    ty: m.param_type as u8,
                });
            }
            345 => {
                let m = mav::PARAM_ERROR_DATA::deser(v, p).unwrap();
                let end = m.param_id.iter().position(|&b| b == 0).unwrap_or(16);
                self.push(Ev::ParamError {
                    name: String::from_utf8_lossy(&m.param_id[..end]).into_owned(),
                    error: m.error as u8,
                });
            }
            111 => {
                let m = mav::TIMESYNC_DATA::deser(v, p).unwrap();
                // PX4's own requests (tc1 0) stream at 10 Hz; only answers are events.
                if m.tc1 != 0 {
                    self.push(Ev::Timesync {
                        tc1: m.tc1,
                        ts1: m.ts1,
                    });
                }
            }
            244 => {
                let m = mav::MESSAGE_INTERVAL_DATA::deser(v, p).unwrap();
                self.push(Ev::MessageInterval {
                    id: m.message_id,
                    interval_us: m.interval_us,
                });
            }
            264 => {
                let m = mav::FLIGHT_INFORMATION_DATA::deser(v, p).unwrap();
                self.push(Ev::FlightInformation {
                    arming_us: m.arming_time_utc,
                    takeoff_us: m.takeoff_time_utc,
                });
            }
            44 => {
                let m = mav::MISSION_COUNT_DATA::deser(v, p).unwrap();
                self.push(Ev::MissionCount {
                    count: m.count,
                    opaque: m.opaque_id,
                });
            }
            73 => {
                let m = mav::MISSION_ITEM_INT_DATA::deser(v, p).unwrap();
                self.push(Ev::ItemInt {
                    seq: m.seq,
                    cmd: m.command as u16,
                    x: m.x,
                    frame: m.frame as u8,
                });
            }
            39 => {
                let m = mav::MISSION_ITEM_DATA::deser(v, p).unwrap();
                self.push(Ev::Item { seq: m.seq });
            }
            _ => {}
        }
    }

    /// Events (without times) from index `from`.
    pub fn events(&self, from: usize) -> Vec<Ev> {
        self.log[from..].iter().map(|(_, e)| e.clone()).collect()
    }

    /// Texts seen.
    pub fn texts(&self) -> Vec<String> {
        self.log
            .iter()
            .filter_map(|(_, e)| match e {
                Ev::Text { text, .. } => Some(text.clone()),
                _ => None,
            })
            .collect()
    }

    /// Time of the first event matching `pred`, ms.
    pub fn when(&self, pred: impl Fn(&Ev) -> bool) -> Option<u64> {
        self.log.iter().find(|(_, e)| pred(e)).map(|(t, _)| *t)
    }

    pub fn mode(&self) -> Option<Mode> {
        self.hb
            .as_ref()
            .map(|h| Mode::from_custom_mode(h.custom_mode))
    }

    pub fn armed(&self) -> bool {
        self.hb
            .as_ref()
            .is_some_and(|h| h.base_mode.bits() & 0x80 != 0)
    }

    /// Boot, connect and wait until armable.
    pub fn booted() -> Gcs {
        let mut g = Gcs::new();
        g.run(5_000);
        assert!(g.prearm_since_ms.is_some());
        g
    }

    /// Takeoff to `alt` m and wait for Hold.
    pub fn airborne(alt: f32) -> Gcs {
        let mut g = Gcs::booted();
        g.param_set(
            "MIS_TAKEOFF_ALT",
            alt,
            mav::MavParamType::MAV_PARAM_TYPE_REAL32,
        );
        g.set_mode(Mode::Takeoff);
        g.arm();
        assert!(g.run_until(30_000, |g| g.mode() == Some(Mode::Hold)
            && g.v.true_height_m() > alt - 0.2));
        g.run(2_000);
        g
    }
}

/// Ordered-subsequence check: every `want` item appears in `got`, in order.
pub fn assert_subsequence(got: &[Ev], want: &[Ev]) {
    let mut it = got.iter();
    for w in want {
        assert!(
            it.any(|g| g == w),
            "missing {w:?} (in order) in:\n{}",
            got.iter()
                .map(|e| format!("  {e:?}"))
                .collect::<Vec<_>>()
                .join("\n")
        );
    }
}

pub fn text(s: &str) -> impl Fn(&Ev) -> bool + '_ {
    move |e| matches!(e, Ev::Text { text, .. } if text == s)
}
