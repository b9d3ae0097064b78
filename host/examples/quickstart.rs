//! The Python client's first program, in Rust: start the built-in simulated PX4, connect, take
//! off to 2 m, wait until there (60 s of sim time at most), land, wait until landed.
//!
//! ```text
//! cargo run -p nexus-host --example quickstart             # lockstep: as fast as the CPU
//! cargo run -p nexus-host --example quickstart -- 10       # 10× real time
//! ```
//!
//! Instance 161 (UDP 14701/14741): clear of a QGroundControl or SITL on the usual 14540.

use nexus_host::prelude::*;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let options = match std::env::args().nth(1) {
        Some(speed) => RunOptions::simulated(161).speed(speed.parse()?),
        None => RunOptions::simulated(161).lockstep(),
    };
    let sim = Run::started(options)?;
    let op = OffboardClient::connect(&sim, 10.0)?;

    op.takeoff(2.0)?;
    let r = sim.until(|| op.at_target(), 60.0)?;
    println!("at 2 m after {:.1} s of sim time", r.waited_sim_s);

    op.land()?;
    let r = sim.wait(&Wait::landed().timeout_s(60.0))?;
    println!("{} after {:.1} s of sim time", r.reason, r.waited_sim_s);
    if r.reason != Reason::Met {
        return Err(format!("not landed: {r:?}").into());
    }
    Ok(())
}
