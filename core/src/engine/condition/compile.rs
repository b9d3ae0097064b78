//! Compiling a spec: every check, and each threshold in the form the hot path compares.

use super::super::error::SpecError;
use super::eval::{Cmp, CmpMs, Cond};
use super::kind::{ConditionKind, Op};
#[cfg(feature = "extra-conditions")]
use super::spec::Place;
use super::spec::{finite_nonneg, Condition, Needle, Target};
use crate::time::secs_to_ms;

impl Condition {
    /// The numeric target, finite (and not negative when `nonneg`). Not inlined: every
    /// numeric row's arm of [`Condition::compile`] calls it, and one copy serves them all.
    #[inline(never)]
    fn number(&self, nonneg: bool) -> Result<f32, SpecError> {
        match self.target {
            Target::Number(v) if v.is_finite() && (!nonneg || finite_nonneg(v)) => Ok(v),
            _ => Err(SpecError::BadValue { field: "value" }),
        }
    }

    /// Whether the modifiers apply to the row (`op` and `within` to the numeric rows, not
    /// together; `since_seq` to text, `relative` to sim_time) and the tolerance is a distance:
    /// the checks before any target is read. A constructor's defect comes first.
    fn check_modifiers(&self) -> Result<(), SpecError> {
        if let Some(e) = self.defect {
            return Err(e);
        }
        let kind = self.kind;
        if self.op.is_some() && !kind.takes_op() {
            return Err(SpecError::OpNotApplicable(kind));
        }
        if self.within.is_some() && !kind.takes_op() {
            return Err(SpecError::WithinNotApplicable(kind));
        }
        if self.op.is_some() && self.within.is_some() {
            return Err(SpecError::OpWithWithin);
        }
        if self.since_seq.is_some() && kind != ConditionKind::Text {
            return Err(SpecError::SinceSeqNotApplicable(kind));
        }
        if self.relative && kind != ConditionKind::SimTime {
            return Err(SpecError::RelativeNotApplicable(kind));
        }
        if let Some(tol) = self.within {
            if !finite_nonneg(tol) {
                return Err(SpecError::BadValue { field: "within" });
            }
        }
        Ok(())
    }

    /// Check and compile; `last_seq` is the newest text seq now (the default `since_seq`).
    pub(crate) fn compile(&self, last_seq: u32) -> Result<Cond, SpecError> {
        self.check_modifiers()?;
        let kind = self.kind;
        let op = self.op.unwrap_or_default();
        let number = |nonneg: bool| self.number(nonneg);
        let cmp = |v: f32| match self.within {
            Some(tol) => Cmp::Within(v, tol),
            None => match op {
                Op::Ge => Cmp::Ge(v),
                Op::Le => Cmp::Le(v),
                Op::Eq => Cmp::Eq(v),
            },
        };
        Ok(match kind {
            ConditionKind::Altitude => Cond::Height(cmp(number(false)?)),
            ConditionKind::Airspeed => Cond::Airspeed(cmp(number(false)?)),
            ConditionKind::Waypoint => Cond::Waypoint(cmp(number(false)?)),
            ConditionKind::SimTime => {
                let t = secs_to_ms(number(true)?);
                let cmp = match self.within {
                    Some(tol) => CmpMs::Within(t, secs_to_ms(tol)),
                    None => match op {
                        Op::Ge => CmpMs::Ge(t),
                        Op::Le => CmpMs::Le(t),
                        Op::Eq => CmpMs::Eq(t),
                    },
                };
                Cond::SimTime {
                    cmp,
                    relative: self.relative,
                }
            }
            ConditionKind::Time => Cond::Time {
                ms: secs_to_ms(number(true)?),
            },
            ConditionKind::Mode => match self.target {
                Target::Mode(m) => Cond::Mode(m),
                _ => return Err(SpecError::UnknownMode),
            },
            ConditionKind::Text => match &self.target {
                Target::Text(needle) => Cond::Text {
                    needle: {
                        // One copy of the bytes (a clone moves them one by one); always fits.
                        let mut n = Needle::new();
                        let _ = n.push_str(needle);
                        n
                    },
                    cursor: self.since_seq.unwrap_or(last_seq),
                    seen: false,
                },
                _ => return Err(SpecError::NeedleTooLong { len: 0 }),
            },
            ConditionKind::Armed => Cond::Armed,
            ConditionKind::Disarmed => Cond::Disarmed,
            ConditionKind::Landed => Cond::Landed,
            ConditionKind::Reached => Cond::Reached(cmp(number(false)?)),
            ConditionKind::MissionComplete => Cond::MissionComplete,
            ConditionKind::MissionVerified => Cond::MissionVerified,
            #[cfg(feature = "extra-conditions")]
            ConditionKind::AtTarget => Cond::AtTarget,
            #[cfg(feature = "extra-conditions")]
            ConditionKind::Distance => match self.target {
                Target::Distance(m, to) if m.is_finite() && m >= 0.0 => {
                    if !to.is_valid() {
                        return Err(SpecError::BadValue { field: "to" });
                    }
                    Cond::Distance(cmp(m), to)
                }
                _ => return Err(SpecError::BadValue { field: "value" }),
            },
            #[cfg(feature = "extra-conditions")]
            ConditionKind::Groundspeed => Cond::Groundspeed(cmp(number(false)?)),
            #[cfg(feature = "extra-conditions")]
            ConditionKind::ClimbRate => Cond::ClimbRate(cmp(number(false)?)),
            #[cfg(feature = "extra-conditions")]
            ConditionKind::Heading => {
                let deg = number(true)?;
                if deg > 360.0 {
                    return Err(SpecError::BadValue { field: "value" });
                }
                Cond::Heading(cmp(deg))
            }
            #[cfg(feature = "extra-conditions")]
            ConditionKind::BatteryRemaining => Cond::BatteryRemaining(cmp(number(false)?)),
            #[cfg(feature = "extra-conditions")]
            ConditionKind::BatteryVoltage => Cond::BatteryVoltage(cmp(number(false)?)),
            #[cfg(feature = "extra-conditions")]
            ConditionKind::GpsFix => Cond::GpsFix(cmp(number(true)?)),
            #[cfg(feature = "extra-conditions")]
            ConditionKind::Satellites => Cond::Satellites(cmp(number(true)?)),
            #[cfg(feature = "extra-conditions")]
            ConditionKind::LandedState => match self.target {
                Target::Landed(mask) if mask != 0 => Cond::LandedState(mask),
                _ => return Err(SpecError::BadValue { field: "value" }),
            },
            #[cfg(feature = "extra-conditions")]
            ConditionKind::VtolState => match self.target {
                Target::Vtol(mask) if mask != 0 => Cond::VtolState(mask),
                _ => return Err(SpecError::BadValue { field: "value" }),
            },
        })
    }
}

#[cfg(feature = "extra-conditions")]
impl Place {
    /// Whether the place is one: a world point of finite coordinates, a latitude in
    /// [−90, 90] and a longitude in [−180, 180].
    fn is_valid(&self) -> bool {
        match *self {
            Place::World { x_m, y_m, z_m } => x_m.is_finite() && y_m.is_finite() && z_m.is_finite(),
            Place::LatLon { lat_deg, lon_deg } => {
                (-90.0..=90.0).contains(&lat_deg) && (-180.0..=180.0).contains(&lon_deg)
            }
            Place::Home => true,
        }
    }
}
