//! Limits on every input of the `nexus` commands, in one place so that the documentation, the
//! checks and the tests agree: speeds, durations, instances, input files and output files.
//!
//! Every check returns a message for the user (the caller prints it and exits 2, before
//! anything flies); none panics, on any value.
//!
//! * **Durations** (`--duration`, `--interval`, `--stats-s`, `--timeout-s`, a program's
//!   `timeout_s`, `hold_s`, `sim_time`, `time`): finite, not negative, at most
//!   [`MAX_DURATION_S`] (11.6 days) — larger values overflowed the wall clock (a panic).
//! * **Speeds** (`--speed`, a `speedup` action, a `then_speedup` reaction):
//!   [`SPEED_MIN`]..=[`SIM_SPEED_MAX`] on the built-in vehicle (the library's range: a run
//!   refuses a `speedup` outside it too), [`SPEED_MIN`]..=[`PX4_SPEED_MAX`] on PX4 SITL.
//! * **Instances**: 0..=[`INSTANCE_MAX`], so the vehicle's system id (instance + 1) is never
//!   255, which is ours.
//! * **Input files** (a `.plan`, a program): regular files of at most [`MAX_INPUT_BYTES`];
//!   a FIFO, a device (`/dev/zero`) or a directory is refused without being read
//!   ([`nexus_host::input_file`]).
//! * **Output files** (`--json FILE`): checked writable before anything flies.
//! * **Waits**: every step is also bounded in wall time, the library's bound of a wait
//!   ([`nexus_host::run::wall_bound`]).

use std::fs::OpenOptions;
use std::path::Path;

use nexus_host::run::check_speed;
pub use nexus_host::run::{SIM_SPEED_MAX, SPEED_MIN};

/// Longest duration any option or program value may give, s (sim or wall): 10^6 s, 11.6
/// days — longer than any flight, and far from the wall clock's overflow.
pub const MAX_DURATION_S: f64 = 1e6;

/// Fastest speed factor on PX4 SITL. PX4 itself takes any finite positive
/// `PX4_SIM_SPEED_FACTOR` (it aborts on others); its lockstep then lags rather than stops:
/// PX4 SITL ran ×4 at ×3.9 and ×10 at ×9.2 (docs/px4-wire.md §Launch). ×20 keeps the
/// [`nexus_host::run::wall_bound`] (which allows half the asked speed) clear of that lag; real
/// PX4 above ×10 is not measured.
pub const PX4_SPEED_MAX: f64 = 20.0;

/// Highest SITL instance: system id = instance + 1 must not be 255, nexus's own.
pub const INSTANCE_MAX: u8 = 253;

/// Largest `.plan` or program read, bytes (4 MiB): a plan of the 1000 items a link holds,
/// as QGroundControl writes it (~330 bytes an item), is about 0.35 MB.
pub const MAX_INPUT_BYTES: u64 = 4 << 20;

/// Check a duration option or value named `what` (`--duration`, `timeout_s`, …), s.
pub fn duration_s(what: &str, s: f64) -> Result<f64, String> {
    if s.is_finite() && (0.0..=MAX_DURATION_S).contains(&s) {
        Ok(s)
    } else {
        Err(format!(
            "{what} must be a number of seconds from 0 to {MAX_DURATION_S:e}, got {s}"
        ))
    }
}

/// Check a speed factor named `what` (`--speed`, `factor`, …) for PX4 (`px4`) or the
/// built-in vehicle.
pub fn speed(what: &str, f: f64, px4: bool) -> Result<f64, String> {
    if px4 {
        check_speed(what, f, PX4_SPEED_MAX, "PX4 SITL")
    } else {
        check_speed(what, f, SIM_SPEED_MAX, "the built-in simulated vehicle")
    }
}

/// Check a SITL instance number.
pub fn instance(n: u8) -> Result<u8, String> {
    if n <= INSTANCE_MAX {
        Ok(n)
    } else {
        Err(format!(
            "--instance must be 0 to {INSTANCE_MAX}: the vehicle's system id is instance + 1, \
             and 255 is nexus's own (got {n})"
        ))
    }
}

/// Read an input file (a `.plan`, a program): only a regular file, only up to
/// [`MAX_INPUT_BYTES`] ([`nexus_host::input_file::read`]).
pub fn read_input(path: &Path) -> std::io::Result<Vec<u8>> {
    nexus_host::input_file::read(path, MAX_INPUT_BYTES)
}

/// Check that an output file can be written, before anything flies: it is opened for
/// writing without blocking (created if absent, then removed again, so a failed start leaves
/// nothing), not truncated. A FIFO without a reader is refused.
pub fn check_output(what: &str, path: &Path) -> Result<(), String> {
    use std::os::unix::fs::OpenOptionsExt;
    let existed = path.exists();
    // Non-blocking: opening a FIFO with no reader fails at once (ENXIO) instead of waiting.
    match OpenOptions::new()
        .append(true)
        .create(true)
        .custom_flags(nix::libc::O_NONBLOCK)
        .open(path)
    {
        Ok(_) => {
            if !existed {
                let _ = std::fs::remove_file(path);
            }
            Ok(())
        }
        Err(e) => Err(format!(
            "{what} {}: cannot write there: {e} (nothing was flown)",
            path.display()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_speeds_and_instances_have_edges() {
        assert_eq!(duration_s("d", 0.0), Ok(0.0));
        assert_eq!(duration_s("d", MAX_DURATION_S), Ok(MAX_DURATION_S));
        for bad in [
            -1e-9,
            1e19,
            f64::INFINITY,
            f64::NAN,
            MAX_DURATION_S * 1.0001,
        ] {
            let e = duration_s("--duration", bad).unwrap_err();
            assert!(e.starts_with("--duration must be"), "{e}");
        }
        assert!(speed("s", SIM_SPEED_MAX, false).is_ok());
        assert!(speed("s", SIM_SPEED_MAX + 0.1, false).is_err());
        assert!(speed("s", PX4_SPEED_MAX, true).is_ok());
        assert!(speed("s", PX4_SPEED_MAX + 0.1, true).is_err());
        for bad in [0.0, 1e-9, -1.0, 1e9, f64::NAN, f64::INFINITY] {
            assert!(speed("s", bad, false).is_err(), "{bad}");
        }
        assert_eq!(
            speed("--speed", 21.0, true).unwrap_err(),
            "--speed must be a positive number from 0.1 to 20 on PX4 SITL, got 21"
        );
        assert_eq!(instance(INSTANCE_MAX), Ok(INSTANCE_MAX));
        assert!(instance(254).unwrap_err().contains("255"));
    }

    #[test]
    fn an_output_check_leaves_the_destination_as_it_was() {
        let dir = std::env::temp_dir().join(format!("nexus-limits-out-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let absent = dir.join("r.json");
        assert_eq!(check_output("--json", &absent), Ok(()));
        assert!(!absent.exists(), "the check created the file");
        let present = dir.join("old.json");
        std::fs::write(&present, "old").unwrap();
        assert_eq!(check_output("--json", &present), Ok(()));
        assert_eq!(std::fs::read_to_string(&present).unwrap(), "old");
        let e = check_output("--json", &dir.join("no/such/r.json")).unwrap_err();
        assert!(e.contains("nothing was flown"), "{e}");
        assert!(check_output("--json", &dir).is_err());
        assert_eq!(check_output("--json", Path::new("-")), Ok(()));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
