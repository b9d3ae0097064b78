//! How to start one PX4 SITL instance: instance number, speed, parameter overrides.

use std::path::PathBuf;
use std::time::Duration;

use nexus_core::action::ParamValue;

use super::{Airframe, LaunchError};

/// Default time between SIGTERM and SIGKILL when closing PX4.
pub const DEFAULT_KILL_GRACE: Duration = Duration::from_secs(2);

/// Options for [`super::Px4Process::spawn`].
///
/// The environment PX4 gets is the caller's, minus any inherited `PX4_SIMULATOR`,
/// `PX4_SIM_MODEL`, `PX4_SIM_SPEED_FACTOR` and `PX4_PARAM_*` (a stale export in a shell must not
/// silently change the vehicle), plus the SIH airframe's settings, the speed factor, the
/// parameter overrides and `extra_env`, in that order.
#[derive(Debug, Clone, PartialEq)]
#[must_use = "options do nothing until a launch takes them"]
pub struct LaunchOptions {
    /// PX4 instance `N` (`px4 -i N`): system id `N + 1`, offboard ports `14540 + N`/`14580 + N`.
    /// 0 to 254.
    pub instance: u8,
    /// The SIH airframe (`PX4_SIM_MODEL`); the quadrotor by default.
    pub airframe: Airframe,
    /// `PX4_SIM_SPEED_FACTOR`: sim seconds per wall second under lockstep. `None` = real time.
    pub speed_factor: Option<f32>,
    /// Parameter overrides, `PX4_PARAM_<NAME>=<value>`.
    pub params: Vec<(String, ParamValue)>,
    /// More environment for PX4 (e.g. `PX4_HOME_LAT`), set last.
    pub extra_env: Vec<(String, String)>,
    /// Keep the working directory (parameters, logs, `console.log`) after close.
    pub keep_workdir: bool,
    /// Where the fresh working directory is created; the system temp dir by default.
    pub workdir_parent: Option<PathBuf>,
    /// Time between SIGTERM and SIGKILL on close.
    pub kill_grace: Duration,
    /// Check before starting that PX4's offboard UDP port (`14580 + N`) is free, so a second
    /// PX4 on the same instance is refused with a clear error instead of failing later.
    pub check_ports: bool,
    /// Keep PX4's own log of the run: on close, after PX4 has stopped (and so closed it), the
    /// ULog it wrote in its working directory (`log/<date>/<time>.ulg`, the newest if several)
    /// is copied here, before the directory goes.
    pub keep_ulog: Option<PathBuf>,
}

impl Default for LaunchOptions {
    fn default() -> Self {
        LaunchOptions {
            instance: 0,
            airframe: Airframe::Quad,
            speed_factor: None,
            params: Vec::new(),
            extra_env: Vec::new(),
            keep_workdir: false,
            workdir_parent: None,
            kill_grace: DEFAULT_KILL_GRACE,
            check_ports: true,
            keep_ulog: None,
        }
    }
}

impl LaunchOptions {
    /// Defaults for instance `instance`.
    pub fn new(instance: u8) -> Self {
        LaunchOptions {
            instance,
            ..LaunchOptions::default()
        }
    }

    /// Fly this SIH airframe.
    pub fn airframe(mut self, airframe: Airframe) -> Self {
        self.airframe = airframe;
        self
    }

    /// Set the speed factor.
    pub fn speed_factor(mut self, factor: f32) -> Self {
        self.speed_factor = Some(factor);
        self
    }

    /// Add a parameter override.
    pub fn param(mut self, name: &str, value: impl Into<ParamValue>) -> Self {
        self.params.push((name.to_string(), value.into()));
        self
    }

    /// Add an environment variable.
    pub fn env(mut self, key: &str, value: &str) -> Self {
        self.extra_env.push((key.to_string(), value.to_string()));
        self
    }

    /// Keep the working directory after close.
    pub fn keep_workdir(mut self, keep: bool) -> Self {
        self.keep_workdir = keep;
        self
    }

    /// Copy PX4's ULog of the run to `path` on close ([`LaunchOptions::keep_ulog`]).
    pub fn keep_ulog(mut self, path: impl Into<PathBuf>) -> Self {
        self.keep_ulog = Some(path.into());
        self
    }

    /// The `PX4_*` environment these options give PX4, in order, after validation.
    pub fn px4_env(&self) -> Result<Vec<(String, String)>, LaunchError> {
        if self.instance == u8::MAX {
            return Err(LaunchError::BadInstance {
                instance: self.instance,
            });
        }
        let mut env = vec![
            ("PX4_SIMULATOR".to_string(), "sihsim".to_string()),
            (
                "PX4_SIM_MODEL".to_string(),
                self.airframe.sih_model().to_string(),
            ),
        ];
        if let Some(f) = self.speed_factor {
            if !(f.is_finite() && f > 0.0) {
                return Err(LaunchError::BadSpeedFactor { factor: f });
            }
            env.push(("PX4_SIM_SPEED_FACTOR".to_string(), f.to_string()));
        }
        for (name, value) in &self.params {
            let valid = !name.is_empty()
                && name.len() <= 16
                && name
                    .bytes()
                    .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_');
            if !valid {
                return Err(LaunchError::BadParamName { name: name.clone() });
            }
            if let ParamValue::Real(v) = value {
                if !v.is_finite() {
                    return Err(LaunchError::BadParamValue {
                        name: name.clone(),
                        value: v.to_string(),
                    });
                }
            }
            env.push((format!("PX4_PARAM_{name}"), value.to_string()));
        }
        Ok(env)
    }
}

/// Inherited variables the launcher owns and so removes before adding its own.
pub(crate) fn is_owned_env(key: &str) -> bool {
    matches!(
        key,
        "PX4_SIMULATOR" | "PX4_SIM_MODEL" | "PX4_SIM_SPEED_FACTOR"
    ) || key.starts_with("PX4_PARAM_")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_is_sih_quad_then_speed_then_params() {
        let env = LaunchOptions::new(2)
            .speed_factor(2.5)
            .param("MIS_TAKEOFF_ALT", 5.0f32)
            .param("COM_RC_IN_MODE", 1)
            .px4_env()
            .unwrap();
        let want = [
            ("PX4_SIMULATOR", "sihsim"),
            ("PX4_SIM_MODEL", "sihsim_quadx"),
            ("PX4_SIM_SPEED_FACTOR", "2.5"),
            ("PX4_PARAM_MIS_TAKEOFF_ALT", "5"),
            ("PX4_PARAM_COM_RC_IN_MODE", "1"),
        ];
        let got: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        assert_eq!(got, want);
        let hex = LaunchOptions::new(2)
            .airframe(Airframe::Hex)
            .px4_env()
            .unwrap();
        assert_eq!(hex[1], ("PX4_SIM_MODEL".into(), "sihsim_hex".into()));
    }

    #[test]
    fn bad_options_are_refused_with_the_reason() {
        let e = |o: LaunchOptions| o.px4_env().unwrap_err().to_string();
        assert_eq!(
            e(LaunchOptions::new(255)),
            "PX4 instance 255 is out of range (0-254: the system id is instance + 1)"
        );
        assert_eq!(
            e(LaunchOptions::new(0).speed_factor(0.0)),
            "speed factor 0 must be a positive finite number"
        );
        assert_eq!(
            e(LaunchOptions::new(0).speed_factor(f32::NAN)),
            "speed factor NaN must be a positive finite number"
        );
        assert_eq!(
            e(LaunchOptions::new(0).param("mis_takeoff_alt", 1)),
            "parameter name 'mis_takeoff_alt' is not a PX4 name (1-16 characters of A-Z, 0-9, _)"
        );
        assert_eq!(
            e(LaunchOptions::new(0).param("A_VERY_LONG_NAME_X", 1)),
            "parameter name 'A_VERY_LONG_NAME_X' is not a PX4 name (1-16 characters of A-Z, 0-9, _)"
        );
        assert_eq!(
            e(LaunchOptions::new(0).param("X", f32::INFINITY)),
            "parameter X = inf is not a finite number"
        );
    }

    #[test]
    fn owned_env_is_recognised() {
        assert!(is_owned_env("PX4_PARAM_FOO"));
        assert!(is_owned_env("PX4_SIM_SPEED_FACTOR"));
        assert!(!is_owned_env("PX4_HOME_LAT"));
    }
}
