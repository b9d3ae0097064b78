//! The queries: what the vehicle reports and how far the machine's requests have got. All
//! measured against what PX4 says (the telemetry), never a simulator's ground truth.

use super::clock::Stamp;
use super::geo::{ne_offset_m, wrap_pi};
use super::requests::ArmWait;
use super::{Anchor, GaveUp, MissionError, Offboard, Refusal, Target};
use crate::mission::{MissionItem, MissionProgress};
use crate::mode::Mode;
use crate::telemetry::{LandedState, Telemetry};
use crate::time::Instant;

/// How near a fixed-wing's goto point counts as there, horizontally, m: PX4's loiter radius
/// (NAV_LOITER_RAD, 80 m) plus its acceptance radius (NPFG's switch distance, ~34 m at cruise):
/// `mission_block.cpp` counts a loiter reached from that distance.
pub const FW_LOITER_REACH_M: f64 = 115.0;
/// The altitude tolerance of a fixed-wing's goto point, m (NAV_FW_ALT_RAD: PX4's TECS flies
/// the SIH airplane's loiter 2–3 m short of it).
pub const FW_ALT_ACCEPT_M: f64 = 10.0;

/// The newest failing news of each kind, with the sim time it came at (`None` inside: the
/// clock was not known then), kept whether or not the application drained the events.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct News {
    /// When the newest refusal came ([`Offboard::last_refusal`] holds it).
    pub refused_at: Option<Option<u64>>,
    /// The newest request given up.
    pub gave_up: Option<(Option<u64>, GaveUp)>,
    /// The newest failed mission upload.
    pub upload_failed: Option<(Option<u64>, MissionError)>,
}

/// The requests still outstanding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Pending {
    /// A mode not yet shown by the heartbeat.
    pub mode: Option<Mode>,
    /// An arm not yet shown (true for a gesture arm too).
    pub arm: bool,
    /// A MISSION_SET_CURRENT 0 not yet confirmed.
    pub restart: bool,
    /// A mission upload, download or clear in flight.
    pub transfer: bool,
}

impl<const ITEMS: usize> Offboard<ITEMS> {
    /// Whether the vehicle's HEARTBEAT has arrived, so verbs have somewhere to go.
    pub fn connected<const T: usize>(&self, tel: &Telemetry<T>) -> bool {
        tel.connected()
    }

    /// Whether the vehicle has reached what the last verb commanded: within `alt_tol_m` of a
    /// takeoff altitude, or within `arrive_m` (3D) of a goto position and, if it commanded a
    /// yaw, within `yaw_tol_rad` of it. Heights are the telemetry's height above the pad
    /// ([`Telemetry::height_m`]: ground truth, else AMSL since arming), never `relative_alt`,
    /// whose home PX4 keeps re-estimating in flight. False with no target, after land or RTL,
    /// and before the first position report.
    ///
    /// While a setpoint streams, it measures that instead ([`super::Setpoint::reached`]).
    pub fn at_target<const T: usize>(&self, tel: &Telemetry<T>) -> bool {
        #[cfg(feature = "setpoints")]
        if let Some(sp) = self.sp {
            return sp.reached(tel, &self.cfg);
        }
        let (Some(target), Some(rel_alt)) = (self.target, tel.height_m()) else {
            return false;
        };
        match target {
            Target::Climb { rel_alt_m } => libm::fabsf(rel_alt - rel_alt_m) <= self.cfg.alt_tol_m,
            Target::Goto {
                lat_deg,
                lon_deg,
                rel_alt_m,
                yaw_ned_rad,
            } => {
                let (Some(pos), Some(anchor)) = (tel.global_position(), self.anchor) else {
                    return false;
                };
                let here = (pos.lat as f64 / 1e7, pos.lon as f64 / 1e7);
                let (dn, de) = ne_offset_m(anchor.lat0_deg, (lat_deg, lon_deg), here);
                let dz = (rel_alt - rel_alt_m) as f64;
                if super::verbs::fixed_wing(tel) {
                    // A fixed-wing circles the point: there once on the circle, at the
                    // altitude within NAV_FW_ALT_RAD; it has no heading to hold.
                    return libm::sqrt(dn * dn + de * de) <= FW_LOITER_REACH_M
                        && libm::fabs(dz) <= FW_ALT_ACCEPT_M;
                }
                if libm::sqrt(dn * dn + de * de + dz * dz) >= self.cfg.arrive_m as f64 {
                    return false;
                }
                let Some(want) = yaw_ned_rad else {
                    return true;
                };
                let Some(att) = tel.attitude() else {
                    return false;
                };
                libm::fabs(wrap_pi(att.yaw as f64 - want as f64)) < self.cfg.yaw_tol_rad as f64
            }
        }
    }

    /// Armed flag of the last HEARTBEAT (false before one).
    pub fn is_armed<const T: usize>(&self, tel: &Telemetry<T>) -> bool {
        tel.armed().unwrap_or(false)
    }

    /// Mode of the last HEARTBEAT (its Display is the friendly name or `main=…,sub=…`).
    pub fn mode<const T: usize>(&self, tel: &Telemetry<T>) -> Option<Mode> {
        tel.mode()
    }

    /// EXTENDED_SYS_STATE's landed state (`Unknown` before one).
    pub fn landed_state<const T: usize>(&self, tel: &Telemetry<T>) -> LandedState {
        tel.landed_state()
    }

    /// Altitude over the launch point from GLOBAL_POSITION_INT, m; `None` before one.
    pub fn relative_altitude<const T: usize>(&self, tel: &Telemetry<T>) -> Option<f32> {
        tel.relative_alt_m()
    }

    /// Whether PX4 accepted the last upload (MISSION_ACK type 0). False while in flight and
    /// when rejected: `mission_ack` tells the two apart.
    pub fn mission_uploaded(&self) -> bool {
        self.mission.ack == Some(0)
    }

    /// PX4's MISSION_ACK result (MAV_MISSION_RESULT, 0 accepted) for the last upload; `None`
    /// until one came.
    pub fn mission_ack(&self) -> Option<u8> {
        self.mission.ack
    }

    /// MISSION_ACK.opaque_id of the last accepted upload (PX4's checksum of its mission).
    pub fn mission_opaque_id(&self) -> Option<u32> {
        self.mission.opaque_id
    }

    /// Items in the held mission (0 before any).
    pub fn mission_count(&self) -> usize {
        self.mission.items.len()
    }

    /// The held mission: lodged, uploaded or downloaded.
    pub fn mission_items(&self) -> &[MissionItem] {
        &self.mission.items
    }

    /// Highest item PX4 reported reached in this mission run; `None` before any (the Python
    /// client's -1). Never decreases within a run; reset by an upload, a lodge or a start.
    pub fn mission_reached(&self) -> Option<u16> {
        self.mission.reached
    }

    /// Item PX4 is flying to (MISSION_CURRENT.seq); 0 before the first report.
    pub fn mission_current(&self) -> u16 {
        self.mission.current
    }

    /// Whether PX4 reported reaching the mission's last reachable item in this run
    /// ([`crate::mission::last_reachable`]: a final RTL reports no arrival, nothing after a
    /// LAND is flown), by MISSION_ITEM_REACHED or by a fresh MISSION_CURRENT state COMPLETE
    /// (never by a COMPLETE left over from an earlier flight). False with no mission.
    pub fn mission_complete(&self) -> bool {
        self.mission.complete()
    }

    /// This run's progress as the wait engine reads it (`reached`, `mission_complete`,
    /// `mission_verified`): `None` until PX4 sent a MISSION_CURRENT or MISSION_ITEM_REACHED in
    /// this run or a verifying download found the mission identical (a verification needs no
    /// progress report: it is met in the tick its last item compares equal, also from a vehicle
    /// that never sends MISSION_CURRENT).
    pub fn mission_progress(&self) -> Option<MissionProgress> {
        let m = &self.mission;
        (m.progress_known || m.verified).then(|| MissionProgress {
            reached: m.reached,
            complete: m.complete(),
            verified: m.verified,
            settling: m.settling(),
        })
    }

    /// The newest refusal, give-up and failed upload, with when they came (for explanations).
    pub fn news(&self) -> News {
        News {
            refused_at: self.events.refused_at,
            gave_up: self.events.gave_up,
            upload_failed: self.events.upload_failed,
        }
    }

    /// Whether the last verb was a takeoff (its climb is what `at_target` measures).
    pub fn climbing(&self) -> bool {
        matches!(self.target, Some(Target::Climb { .. }))
    }

    /// The last refusal PX4 gave (with its STATUSTEXT), if any.
    pub fn last_refusal(&self) -> Option<&Refusal> {
        self.req.last_refusal.as_ref()
    }

    /// The outstanding requests.
    pub fn pending(&self) -> Pending {
        Pending {
            mode: self.req.mode.as_ref().map(|m| m.mode),
            arm: self.req.arm.is_some(),
            restart: self.req.restart.is_some(),
            transfer: !matches!(self.mission.transfer, super::mission::Transfer::Idle),
        }
    }

    /// Why a pending arm has not gone out yet; `None` when no arm is pending or it is armable.
    pub fn arm_wait<const T: usize>(&self, now: Instant, tel: &Telemetry<T>) -> Option<ArmWait> {
        self.req.arm_wait(Stamp::at(now, tel), tel, &self.t)
    }

    /// Parameter sets PX4 has not answered yet (always 0 without `confirmed-params`, whose
    /// sets are not followed).
    pub fn param_sets_pending(&self) -> usize {
        #[cfg(feature = "confirmed-params")]
        return self.params.len();
        #[cfg(not(feature = "confirmed-params"))]
        0
    }

    /// Whether a set of `name` is still waiting for PX4's answer.
    #[cfg(feature = "confirmed-params")]
    pub fn param_set_pending(&self, name: &str) -> bool {
        self.params.pending(name)
    }

    /// How the newest set of `name` ended, among the last [`super::PARAM_SETS_LEN`] that ended
    /// (`None` while it is outstanding, or when it is older).
    #[cfg(feature = "confirmed-params")]
    pub fn param_set_outcome(&self, name: &str) -> Option<&super::ParamSetOutcome> {
        self.params.outcome(name)
    }

    /// The world frame's anchor, once captured (first goto) or set.
    pub fn anchor(&self) -> Option<Anchor> {
        self.anchor
    }

    /// The MANUAL_CONTROL sticks the application set (`None`: not streaming).
    pub fn rc(&self) -> Option<crate::rc::RcSticks> {
        self.rc
    }
}
