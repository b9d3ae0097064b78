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
//!   [`SPEED_MIN`]..=[`SIM_SPEED_MAX`] on the built-in vehicle,
//!   [`SPEED_MIN`]..=[`PX4_SPEED_MAX`] on PX4 SITL.
//! * **Instances**: 0..=[`INSTANCE_MAX`], so the vehicle's system id (instance + 1) is never
//!   255, which is ours.
//! * **Input files** (a `.plan`, a program): regular files of at most [`MAX_INPUT_BYTES`];
//!   a FIFO, a device (`/dev/zero`) or a directory is refused without being read.
//! * **Output files** (`--json FILE`): checked writable before anything flies.
//! * **Waits**: every step is also bounded in wall time, [`wall_bound`].

use std::fs::OpenOptions;
use std::io::Read;
use std::path::Path;
use std::time::Duration;

/// Longest duration any option or program value may give, s (sim or wall): 10^6 s, 11.6
/// days — longer than any flight, and far from the wall clock's overflow.
pub const MAX_DURATION_S: f64 = 1e6;

/// Slowest speed factor: at ×0.1 a 60 s start already takes 10 minutes of wall time.
pub const SPEED_MIN: f64 = 0.1;

/// Fastest speed factor of the built-in vehicle. Its real-time pacing meets ×500: measured
/// (`cargo bench -p nexus-sim --bench pacing`, a vehicle serving one client at full stream
/// rates, 2 shared cores), ×10 to ×500 each achieved 0.999–1.001 of the factor asked. A flight
/// keeps up too since the client's retry timers follow the measured round trip (in the
/// vehicle's clock, so a pump lagging the stream at ×500 makes them longer, not a flood of
/// resends) and the vehicle takes in datagrams while it catches up after a preemption (before,
/// PX4's 5 s mission protocol timeout, 10 ms of wall at ×500, ran out with the client's answer
/// unread): `nexus fly examples/box.plan --speed 500` passed 10 of 10 in a debug build (×94–441
/// achieved on a machine at load 9–10) and 8 of 8 in a release build (×489–500). Before, a
/// debug flight failed above ×250. Faster is `--speed max` (lockstep).
pub const SIM_SPEED_MAX: f64 = 500.0;

/// Fastest speed factor on PX4 SITL. PX4 itself takes any finite positive
/// `PX4_SIM_SPEED_FACTOR` (it aborts on others); its lockstep then lags rather than stops:
/// PX4 SITL ran ×4 at ×3.9 and ×10 at ×9.2 (docs/px4-wire.md §Launch). ×20 keeps the
/// [`wall_bound`] (which allows half the asked speed) clear of that lag; real PX4 above ×10 is
/// not measured.
pub const PX4_SPEED_MAX: f64 = 20.0;

/// Highest SITL instance: system id = instance + 1 must not be 255, nexus's own.
pub const INSTANCE_MAX: u8 = 253;

/// Largest `.plan` or program read, bytes (4 MiB): a plan of the 1000 items a link holds,
/// as QGroundControl writes it (~330 bytes an item), is about 0.35 MB.
pub const MAX_INPUT_BYTES: u64 = 4 << 20;

/// Wall-time margin added to every step's bound, s (a loaded machine, the start of a run).
pub const WALL_MARGIN_S: f64 = 10.0;

/// Check a duration option or value named `what` (`--duration`, `timeout_s`, …).
pub fn duration_s(what: &str, s: f64) -> Result<f64, String> {
    if s.is_finite() && (0.0..=MAX_DURATION_S).contains(&s) {
        Ok(s)
    } else {
        Err(format!(
            "{what} must be a number of seconds from 0 to {MAX_DURATION_S:e}, got {s}"
        ))
    }
}

/// The highest speed factor of the vehicle (PX4 SITL or the built-in one).
pub fn speed_max(px4: bool) -> f64 {
    if px4 {
        PX4_SPEED_MAX
    } else {
        SIM_SPEED_MAX
    }
}

/// Check a speed factor named `what` (`--speed`, `factor`, …) for PX4 (`px4`) or the
/// built-in vehicle.
pub fn speed(what: &str, f: f64, px4: bool) -> Result<f64, String> {
    let (max, vehicle) = if px4 {
        (PX4_SPEED_MAX, "PX4 SITL")
    } else {
        (SIM_SPEED_MAX, "the built-in simulated vehicle")
    };
    if f.is_finite() && (SPEED_MIN..=max).contains(&f) {
        Ok(f)
    } else {
        Err(format!(
            "{what} must be a positive number from {SPEED_MIN} to {max} on {vehicle}, got {f}"
        ))
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

/// Read an input file: only a regular file, only up to [`MAX_INPUT_BYTES`]. The type is
/// checked before opening (opening a FIFO blocks until a writer comes) and again on the open
/// file (it could have been replaced in between).
pub fn read_input(path: &Path) -> std::io::Result<Vec<u8>> {
    read_input_max(path, MAX_INPUT_BYTES)
}

/// [`read_input`] with another bound, bytes (a recorded flight is larger than a plan).
pub fn read_input_max(path: &Path, max_bytes: u64) -> std::io::Result<Vec<u8>> {
    use std::io::{Error, ErrorKind};
    let (file, _) = open_input_max(path, max_bytes)?;
    let mut bytes = Vec::new();
    file.take(max_bytes + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max_bytes {
        return Err(Error::new(
            ErrorKind::InvalidInput,
            format!("more than the {max_bytes} bytes an input file may hold"),
        ));
    }
    Ok(bytes)
}

/// Open an input file to read: a regular file (a directory, FIFO, device or socket is refused
/// unopened or unread) of at most `max_bytes`, checked by name and again once open; the file
/// and its length then.
pub fn open_input_max(path: &Path, max_bytes: u64) -> std::io::Result<(std::fs::File, u64)> {
    use std::io::{Error, ErrorKind};
    let regular = |m: &std::fs::Metadata| -> std::io::Result<()> {
        if m.is_dir() {
            return Err(Error::new(ErrorKind::InvalidInput, "it is a directory"));
        }
        if !m.is_file() {
            return Err(Error::new(
                ErrorKind::InvalidInput,
                "not a regular file (a FIFO, a device or a socket is not read)",
            ));
        }
        if m.len() > max_bytes {
            return Err(Error::new(
                ErrorKind::InvalidInput,
                format!(
                    "{} bytes, more than the {max_bytes} an input file may hold",
                    m.len()
                ),
            ));
        }
        Ok(())
    };
    regular(&std::fs::metadata(path)?)?;
    let file = OpenOptions::new().read(true).open(path)?;
    let meta = file.metadata()?;
    regular(&meta)?;
    Ok((file, meta.len()))
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
        .custom_flags(libc::O_NONBLOCK)
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

/// Longest a step may take in wall time: its sim timeout at the speed, twice, plus
/// [`WALL_MARGIN_S`]: `timeout_s / speed × 2 + 10 s`. A vehicle whose clock runs at even half
/// the asked speed ends the step by its own timeout first; past this bound its clock has
/// (nearly) stopped, and the step ends with that reason instead of hanging.
pub fn wall_bound(timeout_s: f64, speed: f64) -> Duration {
    let speed = if speed.is_finite() && speed > 0.0 {
        speed
    } else {
        1.0
    };
    let t = if timeout_s.is_finite() {
        timeout_s.clamp(0.0, MAX_DURATION_S)
    } else {
        MAX_DURATION_S
    };
    Duration::from_secs_f64(t / speed.max(SPEED_MIN) * 2.0 + WALL_MARGIN_S)
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

    #[test]
    fn the_wall_bound_follows_the_timeout_and_the_speed() {
        assert_eq!(wall_bound(60.0, 2.0), Duration::from_secs(60 + 10));
        assert_eq!(wall_bound(0.0, 50.0), Duration::from_secs(10));
        // Bad values give a finite bound, never a panic.
        for (t, s) in [(f64::NAN, 1.0), (1e300, 0.0), (-5.0, f64::NAN)] {
            assert!(wall_bound(t, s) <= Duration::from_secs(30_000_000));
        }
    }
}
