//! Scripted vehicle for the engine tests: frames from the target autopilot, fed through
//! `Telemetry::handle` then `Engine::evaluate`, events collected per wait.
#![allow(dead_code)]

use nexus_core::engine::{Engine, EngineError, EngineEvent, Reaction, Wait, WaitId, WaitResult};
use nexus_core::telemetry::LinkIds;
use nexus_core::{mav, Frame, Instant, Mode, Msg, Telemetry};

/// The autopilot's system and component id.
pub const SYS: u8 = 1;
pub const COMP: u8 = 1;

pub fn frame(msg: Msg) -> Frame {
    Frame::from_msg(SYS, COMP, msg)
}

pub fn heartbeat(armed: bool, mode: Mode) -> Frame {
    let mut base = mav::MavModeFlag::MAV_MODE_FLAG_CUSTOM_MODE_ENABLED;
    if armed {
        base |= mav::MavModeFlag::MAV_MODE_FLAG_SAFETY_ARMED;
    }
    frame(Msg::Heartbeat(mav::HEARTBEAT_DATA {
        custom_mode: mode.custom_mode(),
        mavtype: mav::MavType::MAV_TYPE_QUADROTOR,
        autopilot: mav::MavAutopilot::MAV_AUTOPILOT_PX4,
        base_mode: base,
        system_status: mav::MavState::MAV_STATE_STANDBY,
        mavlink_version: 3,
    }))
}

pub fn system_time(ms: u32) -> Frame {
    frame(Msg::SystemTime(mav::SYSTEM_TIME_DATA {
        time_unix_usec: 0,
        time_boot_ms: ms,
    }))
}

/// GLOBAL_POSITION_INT with `relative_alt` in mm, stamped `ms`.
pub fn position_mm(ms: u32, rel_alt_mm: i32) -> Frame {
    frame(Msg::GlobalPositionInt(mav::GLOBAL_POSITION_INT_DATA {
        time_boot_ms: ms,
        lat: 473_977_420,
        lon: 85_455_940,
        alt: 488_000 + rel_alt_mm,
        relative_alt: rel_alt_mm,
        vx: 0,
        vy: 0,
        vz: 0,
        hdg: 0,
    }))
}

/// GLOBAL_POSITION_INT with `alt` and `relative_alt` given apart, mm, stamped `ms` (PX4's
/// relative_alt jumps when it re-estimates home; alt does not).
pub fn position_amsl_mm(ms: u32, alt_mm: i32, rel_alt_mm: i32) -> Frame {
    frame(Msg::GlobalPositionInt(mav::GLOBAL_POSITION_INT_DATA {
        time_boot_ms: ms,
        lat: 473_977_420,
        lon: 85_455_940,
        alt: alt_mm,
        relative_alt: rel_alt_mm,
        vx: 0,
        vy: 0,
        vz: 0,
        hdg: 0,
    }))
}

/// HIL_STATE_QUATERNION (a simulator's ground truth) at `alt_mm` AMSL, stamped `ms`.
pub fn ground_truth_mm(ms: u32, alt_mm: i32) -> Frame {
    frame(Msg::HilStateQuaternion(mav::HIL_STATE_QUATERNION_DATA {
        time_usec: ms as u64 * 1000,
        attitude_quaternion: [1.0, 0.0, 0.0, 0.0],
        lat: 473_977_420,
        lon: 85_455_940,
        alt: alt_mm,
        ..Default::default()
    }))
}

pub fn vfr_hud(airspeed: f32) -> Frame {
    frame(Msg::VfrHud(mav::VFR_HUD_DATA {
        airspeed,
        groundspeed: airspeed,
        alt: 0.0,
        climb: 0.0,
        heading: 0,
        throttle: 0,
    }))
}

pub fn mission_current(seq: u16) -> Frame {
    frame(Msg::MissionCurrent(mav::MISSION_CURRENT_DATA {
        seq,
        total: 10,
        ..Default::default()
    }))
}

pub fn landed_state(state: mav::MavLandedState) -> Frame {
    frame(Msg::ExtendedSysState(mav::EXTENDED_SYS_STATE_DATA {
        vtol_state: mav::MavVtolState::MAV_VTOL_STATE_UNDEFINED,
        landed_state: state,
    }))
}

/// EXTENDED_SYS_STATE of a VTOL in the air in `state`.
pub fn vtol_state(state: mav::MavVtolState) -> Frame {
    frame(Msg::ExtendedSysState(mav::EXTENDED_SYS_STATE_DATA {
        vtol_state: state,
        landed_state: mav::MavLandedState::MAV_LANDED_STATE_IN_AIR,
    }))
}

/// A message no condition reads (PARAM_VALUE).
pub fn neutral() -> Frame {
    frame(Msg::ParamValue(mav::PARAM_VALUE_DATA::default()))
}

/// A single-chunk STATUSTEXT (id 0), at most 50 bytes.
pub fn statustext(text: &str) -> Frame {
    frame(Msg::Statustext(mav::STATUSTEXT_DATA {
        severity: mav::MavSeverity::MAV_SEVERITY_INFO,
        text: text.into(),
        id: 0,
        chunk_seq: 0,
    }))
}

/// One chunk of a long STATUSTEXT.
pub fn statustext_chunk(text: &str, id: u16, chunk_seq: u8) -> Frame {
    frame(Msg::Statustext(mav::STATUSTEXT_DATA {
        severity: mav::MavSeverity::MAV_SEVERITY_CRITICAL,
        text: text.into(),
        id,
        chunk_seq,
    }))
}

/// The usual rig: eight wait slots.
pub type Rig = RigN<8>;

/// Telemetry + engine + a virtual clock (wall advances with sim, 1×) and every event seen.
pub struct RigN<const N: usize> {
    pub tel: Telemetry<16>,
    pub engine: Engine<N>,
    pub now: Instant,
    pub sim_ms: u32,
    /// Drain events after every call (off: results stay in the engine).
    pub auto_poll: bool,
    pub events: Vec<EngineEvent>,
}

impl<const N: usize> Default for RigN<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> RigN<N> {
    /// No message received yet: sim clock unknown.
    pub fn new() -> Self {
        RigN {
            tel: Telemetry::new(LinkIds::default()),
            engine: Engine::new(),
            now: Instant::from_millis(100_000),
            sim_ms: 0,
            auto_poll: true,
            events: Vec::new(),
        }
    }

    /// Sim clock at 1 s, disarmed in Hold on the ground: the first position (the pad, from
    /// which the height counts until an arming) has come.
    pub fn booted() -> Self {
        let mut r = Self::new();
        r.sim_ms = 1000;
        r.feed(system_time(1000));
        r.feed(heartbeat(false, Mode::Hold));
        r.feed(position_mm(1000, 0));
        r
    }

    pub fn feed(&mut self, f: Frame) {
        assert!(self.tel.handle(self.now, &f), "frame refused by telemetry");
        self.engine.evaluate(self.now, &self.tel);
        if self.auto_poll {
            self.poll();
        }
    }

    /// Advance sim and wall time by `ms` and send SYSTEM_TIME.
    pub fn tick(&mut self, ms: u32) {
        self.sim_ms += ms;
        self.now = self.now + nexus_core::Duration::from_millis(ms as u64);
        self.feed(system_time(self.sim_ms));
    }

    /// Advance in `step`-ms SYSTEM_TIMEs until `ms` have passed.
    pub fn run(&mut self, ms: u32, step: u32) {
        let mut done = 0;
        while done < ms {
            let d = step.min(ms - done);
            self.tick(d);
            done += d;
        }
    }

    pub fn register(&mut self, w: &Wait) -> Result<WaitId, EngineError> {
        let r = self.engine.register(self.now, &self.tel, w);
        if self.auto_poll {
            self.poll();
        }
        r
    }

    pub fn poll(&mut self) {
        while let Some(e) = self.engine.poll_event() {
            self.events.push(e);
        }
    }

    pub fn cap(&mut self, id: WaitId) -> Result<(), EngineError> {
        let r = self.engine.cap(self.now, &self.tel, id);
        self.poll();
        r
    }

    pub fn abort(&mut self, id: WaitId) -> Result<(), EngineError> {
        let r = self.engine.abort(self.now, &self.tel, id);
        self.poll();
        r
    }

    pub fn died(&mut self, error: &str) -> usize {
        let n = self.engine.died(self.now, &self.tel, error);
        self.poll();
        n
    }

    pub fn close(&mut self) -> usize {
        let n = self.engine.close(self.now, &self.tel);
        self.poll();
        n
    }

    /// Every `Settled` result of `id` seen so far.
    pub fn results(&self, id: WaitId) -> Vec<&WaitResult> {
        self.events
            .iter()
            .filter_map(|e| match e {
                EngineEvent::Settled { id: i, result } if *i == id => Some(result),
                _ => None,
            })
            .collect()
    }

    /// The one result of `id`, if settled (panics if it settled twice).
    pub fn result(&self, id: WaitId) -> Option<&WaitResult> {
        let r = self.results(id);
        assert!(r.len() <= 1, "wait settled {} times", r.len());
        r.into_iter().next()
    }

    /// Reactions emitted for `id`, in order.
    pub fn reactions(&self, id: WaitId) -> Vec<Reaction> {
        self.events
            .iter()
            .filter_map(|e| match e {
                EngineEvent::Reaction { id: i, reaction } if *i == id => Some(*reaction),
                _ => None,
            })
            .collect()
    }
}
