//! A condition as a person would write it: how a guard or a wait is named in a report.

use super::kind::ConditionKind;
#[cfg(feature = "extra-conditions")]
use super::spec::Place;
use super::spec::{Condition, Target};
#[cfg(feature = "extra-conditions")]
use crate::telemetry::LandedState;
#[cfg(feature = "extra-conditions")]
use crate::vehicle::VtolState;

#[cfg(feature = "extra-conditions")]
impl core::fmt::Display for Place {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match *self {
            Place::World { x_m, y_m, z_m } => write!(f, "({x_m}, {y_m}, {z_m}) m"),
            Place::LatLon { lat_deg, lon_deg } => write!(f, "{lat_deg:.7}°, {lon_deg:.7}°"),
            Place::Home => f.write_str("home"),
        }
    }
}

/// The condition as a person would write it (`altitude <= 3 m`, `mode Hold`,
/// `text 'Takeoff detected' after text #2`, `reached >= 4`, `5 s of sim time`): how a wait and
/// its guards are named everywhere, in a step's line, a report and an explanation.
impl core::fmt::Display for Condition {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let kind = self.kind;
        if let (ConditionKind::Time, Target::Number(v)) = (kind, &self.target) {
            // A duration, not a reading compared: said with its clock.
            return write!(f, "{v} s of sim time");
        }
        f.write_str(kind.name())?;
        match &self.target {
            Target::Number(v) => {
                let unit = kind.unit();
                match self.within {
                    Some(tol) => write!(f, " within {tol}{unit} of {v}{unit}")?,
                    None => write!(f, " {} {v}{unit}", self.op.unwrap_or_default().symbol())?,
                }
                if self.relative {
                    f.write_str(" from the step's start")?;
                }
            }
            Target::Mode(m) => write!(f, " {m}")?,
            Target::Text(t) => {
                write!(f, " '{}'", t.as_str())?;
                if let Some(seq) = self.since_seq {
                    write!(f, " after text #{seq}")?;
                }
            }
            #[cfg(feature = "extra-conditions")]
            Target::Distance(v, to) => match self.within {
                Some(tol) => write!(f, " to {to} within {tol} m of {v} m")?,
                None => write!(f, " to {to} {} {v} m", self.op.unwrap_or_default().symbol())?,
            },
            #[cfg(feature = "extra-conditions")]
            Target::Landed(mask) => {
                let mut first = true;
                for v in 0..=4u8 {
                    if mask & (1 << v) != 0 {
                        let sep = if first { " " } else { " | " };
                        write!(f, "{sep}{}", LandedState::from_mav(v).name())?;
                        first = false;
                    }
                }
            }
            #[cfg(feature = "extra-conditions")]
            Target::Vtol(mask) => {
                let mut first = true;
                for s in VtolState::ALL {
                    if mask & (1 << s.to_mav()) != 0 {
                        let sep = if first { " " } else { " | " };
                        write!(f, "{sep}{s}")?;
                        first = false;
                    }
                }
            }
            Target::None => {}
        }
        Ok(())
    }
}
