//! The Python OffboardClient's takeoff snippet, in Rust: start a run of the built-in simulated PX4,
//! connect the offboard client, take off to 2 m and wait (in sim time) until the vehicle is there.
//!
//! ```text
//! cargo run -p nexus-host --example takeoff            # 10× real time
//! cargo run -p nexus-host --example takeoff -- 1       # real time
//! cargo run -p nexus-host --example takeoff -- lockstep
//! NEXUS_PX4_BUILD=~/PX4-Autopilot/build/px4_sitl_default \
//!   cargo run -p nexus-host --example takeoff -- px4   # real PX4 SITL (SIH)
//! ```

use nexus_host::groups::{ActionApi, TelemetryApi};
use nexus_host::offboard_client::OffboardClient;
use nexus_host::run::{Run, RunOptions};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let arg = std::env::args().nth(1).unwrap_or_else(|| "10".into());
    let options = match arg.as_str() {
        "lockstep" => RunOptions::simulated(0).lockstep(),
        "px4" => RunOptions::px4(0, None),
        speed => RunOptions::simulated(0).speed(speed.parse()?),
    };

    let sim = Run::new(options);
    sim.start()?;
    // sim.ports()?.get("offboard"): UDP 14540 on instance 0
    let op = OffboardClient::connect(&sim, 10.0)?;
    op.takeoff(2.0)?;
    let waited = sim.until(|| op.at_target(), 60.0)?;

    println!(
        "at target after {:.1} s of sim time ({:.1} s wall): {} m above home, mode {}, armed {}",
        waited.waited_sim_s,
        waited.waited_wall.as_secs_f64(),
        op.relative_altitude_m().unwrap_or(f32::NAN),
        op.mode()
            .map_or_else(|| "unknown".to_owned(), |m| m.to_string()),
        op.is_armed()
    );
    Ok(())
}
