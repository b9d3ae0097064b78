//! `nexus sim`: run simulated PX4 vehicles on the network until interrupted.
//!
//! Each instance N binds UDP 14580+N and talks to 14540+N (system id N+1), exactly like
//! `px4 -i N`; point QGroundControl, MAVSDK or pymavlink (`udpin:0.0.0.0:14540`) at it. Above
//! instance 9 it sends to 14549 until a client speaks first to 14580+N, as PX4 does
//! (`--offboard-port-per-instance` keeps 14540+N for every instance).
//! Console output of every vehicle is printed, prefixed with its instance when there are several.

use nexus_sim::server::{SimConfig, SimHandle};
use std::net::IpAddr;
use std::process::ExitCode;
use std::time::Duration;

/// Arguments of `nexus sim`.
#[derive(Debug, Clone, clap::Args)]
pub struct SimArgs {
    /// First SITL instance N (ports 14580+N / 14540+N, system id N+1).
    #[arg(long, short = 'i', default_value_t = 0)]
    pub instance: u8,
    /// Speed factor: sim time runs this many times faster than the wall clock.
    #[arg(long, short = 's', default_value_t = 1.0)]
    pub speed: f64,
    /// Number of vehicles (instances N, N+1, …).
    #[arg(long, short = 'c', default_value_t = 1)]
    pub count: u8,
    /// Address to bind.
    #[arg(long, default_value = "127.0.0.1")]
    pub bind: IpAddr,
    /// Address to send to until a client speaks.
    #[arg(long, default_value = "127.0.0.1")]
    pub remote: IpAddr,
    /// Report a smooth GLOBAL_POSITION_INT.relative_alt (real PX4 steps it after takeoff).
    #[arg(long)]
    pub smooth_relative_alt: bool,
    /// Identify as PX4 on a flight controller (a Pixhawk's AUTOPILOT_VERSION), not as SITL: a
    /// stand-in for a real vehicle, to rehearse what `fly` and `run` refuse to do to one.
    #[arg(long)]
    pub identify_as_hardware: bool,
    /// Send to 14540+N until a client speaks, for every instance N. By default an instance
    /// above 9 sends to 14549 until a client speaks first to 14580+N, as `px4 -i N` does.
    #[arg(long)]
    pub offboard_port_per_instance: bool,
    /// The autopilot's MAVLink component id (PX4: 1): another rehearses a client that must
    /// find the autopilot by its heartbeat, or be told it with `--compid`.
    #[arg(long, default_value_t = 1, value_name = "ID")]
    pub component_id: u8,
    /// Sign and verify as PX4 main does, with the key in FILE (32 raw bytes, 64 hex digits, or
    /// a passphrase); without it a key may still be installed with SETUP_SIGNING.
    #[arg(long, value_name = "FILE")]
    pub signing_key: Option<std::path::PathBuf>,
    /// PX4's MAV_SIGN_CFG: 0 optional, 1 all but USB, 2 always (the simulated link is UDP).
    /// Given alone (no key), the vehicle signs once SETUP_SIGNING installs one.
    #[arg(long, value_name = "MODE", value_parser = clap::value_parser!(i32).range(0..=2))]
    pub sign_mode: Option<i32>,
    /// PX4's key file (32 key bytes + 8 timestamp bytes): read at start, written by
    /// SETUP_SIGNING.
    #[arg(long, value_name = "FILE")]
    pub signing_key_store: Option<std::path::PathBuf>,
    /// Write the vehicle's own log (PX4's ULog: from boot until its first disarm after an
    /// arming, as PX4 SITL logs) to FILE, and serve it to LOG_REQUEST_LIST / LOG_REQUEST_DATA
    /// as PX4 serves its logs. With `--count` above 1, a directory: `<instance>.ulg` each.
    #[arg(long, value_name = "FILE")]
    pub ulog: Option<std::path::PathBuf>,
    /// The airframe: quad (default), hex or airplane (PX4 SIH's, as the built-in vehicle
    /// models them); the VTOLs and the rover fly on PX4 SITL only.
    #[arg(long, value_name = "MODEL")]
    pub model: Option<nexus_host::launcher::Airframe>,
}

/// Start the vehicles and print their console until they all exit (or the process is killed).
pub fn run(args: &SimArgs) -> ExitCode {
    if let Err(e) = crate::limits::speed("--speed", args.speed, false) {
        eprintln!("nexus sim: {e}");
        return ExitCode::from(2);
    }
    let last = args.instance as u16 + args.count.max(1) as u16 - 1;
    if last > crate::limits::INSTANCE_MAX as u16 {
        eprintln!(
            "nexus sim: instances must be 0 to {} (system id = instance + 1; 255 is a ground \
             station's), these reach {last}",
            crate::limits::INSTANCE_MAX
        );
        return ExitCode::from(2);
    }
    let ulog_of = |n: u8| -> Option<std::path::PathBuf> {
        let p = args.ulog.as_ref()?;
        Some(if args.count > 1 {
            p.join(format!("{n}.ulg"))
        } else {
            p.clone()
        })
    };
    if let Some(p) = &args.ulog {
        let checked = if args.count > 1 {
            std::fs::create_dir_all(p)
                .map_err(|e| format!("--ulog {}: cannot make the directory: {e}", p.display()))
        } else {
            crate::limits::check_output("--ulog", p)
        };
        if let Err(e) = checked {
            eprintln!("nexus sim: {e}");
            return ExitCode::from(2);
        }
    }
    let model = args.model.unwrap_or_default();
    let Some(vehicle) = model.simulated() else {
        eprintln!(
            "nexus sim: --model {model}: the built-in vehicle models the quad, the hex and the \
             airplane, not the {model}; fly it on PX4 SITL (nexus fly/run --px4 BUILD_DIR)"
        );
        return ExitCode::from(2);
    };
    // A signal stops the vehicles in order and exits 128 + its number (crate::interrupt).
    let _interrupts = crate::interrupt::handle();
    let mut sims = Vec::new();
    for k in 0..args.count.max(1) {
        // In range: checked above.
        let n = args.instance + k;
        let mut cfg = SimConfig::realtime(n, args.speed);
        cfg.vehicle.vehicle = vehicle;
        cfg.bind_ip = args.bind;
        cfg.remote_ip = args.remote;
        cfg.vehicle.relative_alt_steps = !args.smooth_relative_alt;
        cfg.vehicle.hardware_identity = args.identify_as_hardware;
        cfg.vehicle.component_id = args.component_id;
        cfg.offboard_port_per_instance = args.offboard_port_per_instance;
        cfg.ulog = ulog_of(n);
        match sim_signing(args) {
            Ok(s) => cfg.vehicle.signing = s,
            Err(e) => {
                eprintln!("nexus sim: {e}");
                return ExitCode::from(2);
            }
        }
        let first = cfg.first_remote_port();
        match SimHandle::start(cfg) {
            Ok(h) => {
                let p = h.ports();
                let until = if first != p.offboard.port {
                    format!(
                        " (sends to UDP {first} until a client speaks to UDP {})",
                        p.vehicle_port
                    )
                } else {
                    String::new()
                };
                eprintln!(
                    "nexus sim: instance {n}: system id {}, vehicle UDP {}, offboard link UDP {}{until} ({}x)",
                    p.offboard.system_id, p.vehicle_port, p.offboard.port, args.speed
                );
                sims.push(h);
            }
            Err(e) => {
                eprintln!("nexus sim: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    let many = sims.len() > 1;
    loop {
        if let Some(c) = crate::interrupt::caught() {
            eprintln!("nexus sim: {}: stopping", c.reason());
            drop(sims);
            return ExitCode::from(c.exit_code());
        }
        let mut running = 0;
        for h in &sims {
            for line in h.output_lines() {
                if many {
                    println!("[{}] {line}", h.instance());
                } else {
                    println!("{line}");
                }
            }
            if h.is_running() {
                running += 1;
            } else if let Some(st) = h.exit_status() {
                eprintln!("nexus sim: instance {} ended: {st}", h.instance());
            }
        }
        if running == 0 {
            return ExitCode::FAILURE;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The built-in vehicle's signing from `nexus sim`'s options (`None`: none asked for).
fn sim_signing(args: &SimArgs) -> Result<Option<nexus_host::sim::signing::SigningConfig>, String> {
    use nexus_host::sim::signing::{SignMode, SigningConfig};
    if args.signing_key.is_none() && args.sign_mode.is_none() && args.signing_key_store.is_none() {
        return Ok(None);
    }
    let key = args
        .signing_key
        .as_deref()
        .map(|p| nexus_host::signing::load_key(p).map_err(|e| format!("--signing-key: {e}")))
        .transpose()?;
    let mode = args.sign_mode.map_or(
        if key.is_some() {
            SignMode::Always
        } else {
            SignMode::Optional
        },
        SignMode::from_param,
    );
    Ok(Some(SigningConfig {
        key,
        key_file: args.signing_key_store.clone(),
        mode,
        usb: false,
    }))
}
