//! Where PX4 SITL lives: a build directory holding `bin/px4` and `etc/`.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use super::LaunchError;

/// The environment variable naming the PX4 build directory when none is passed.
pub const PX4_BUILD_ENV: &str = "NEXUS_PX4_BUILD";

/// A PX4 SITL build directory (e.g. `PX4-Autopilot/build/px4_sitl_default`), checked to hold
/// an executable `bin/px4` and an `etc/` directory. The path is made absolute, because PX4
/// changes into its working directory before it reads `etc/`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Px4Build {
    root: PathBuf,
}

impl Px4Build {
    /// Check `root` and keep it.
    pub fn new(root: impl AsRef<Path>) -> Result<Self, LaunchError> {
        let given = root.as_ref();
        let bin = given.join("bin").join("px4");
        let etc = given.join("etc");
        let mut missing = Vec::new();
        if !given.is_dir() {
            missing.push("the directory does not exist".to_string());
        } else {
            if !bin.is_file() {
                missing.push(format!("{} is missing", bin.display()));
            }
            if !etc.is_dir() {
                missing.push(format!("{} is missing", etc.display()));
            }
        }
        if !missing.is_empty() {
            return Err(LaunchError::NoBuild {
                path: given.to_path_buf(),
                missing: missing.join(", "),
            });
        }
        let mode = std::fs::metadata(&bin)
            .map(|m| m.permissions().mode())
            .unwrap_or(0);
        if mode & 0o111 == 0 {
            return Err(LaunchError::NotExecutable { path: bin });
        }
        let root = given.canonicalize().map_err(|e| LaunchError::NoBuild {
            path: given.to_path_buf(),
            missing: e.to_string(),
        })?;
        Ok(Px4Build { root })
    }

    /// The build named by [`PX4_BUILD_ENV`].
    pub fn from_env() -> Result<Self, LaunchError> {
        match std::env::var_os(PX4_BUILD_ENV) {
            Some(v) if !v.is_empty() => Px4Build::new(PathBuf::from(v)),
            _ => Err(LaunchError::NoBuildGiven),
        }
    }

    /// `path` if given, else [`PX4_BUILD_ENV`].
    pub fn locate(path: Option<&Path>) -> Result<Self, LaunchError> {
        match path {
            Some(p) => Px4Build::new(p),
            None => Px4Build::from_env(),
        }
    }

    /// The build directory (absolute).
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `<build>/bin/px4`.
    pub fn px4_binary(&self) -> PathBuf {
        self.root.join("bin").join("px4")
    }

    /// `<build>/etc`, PX4's startup scripts and mixers.
    pub fn etc_dir(&self) -> PathBuf {
        self.root.join("etc")
    }
}
