//! Fly a QGroundControl `.plan` on the built-in simulated PX4 (or PX4 SITL): upload it, start
//! it, print progress as PX4 reports it, then wait for the mission to complete and the vehicle
//! to land.
//!
//! ```text
//! cargo run -p nexus-host --example fly_plan                        # the box mission, 10×
//! cargo run -p nexus-host --example fly_plan -- my.plan 20          # a plan, at 20×
//! cargo run -p nexus-host --example fly_plan -- my.plan lockstep
//! ```

use nexus_host::groups::{MissionApi, TelemetryApi};
use std::path::PathBuf;

use nexus_host::offboard_client::{read_plan_file, OffboardClient};
use nexus_host::pump::LinkEvent;
use nexus_host::run::{Run, RunOptions};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let path = args.next().map(PathBuf::from).unwrap_or_else(|| {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../fixtures/plans/MC_mission_box.plan")
    });
    let options = match args.next().as_deref() {
        Some("lockstep") => RunOptions::simulated(0).lockstep(),
        Some("px4") => RunOptions::px4(0, None),
        Some(speed) => RunOptions::simulated(0).speed(speed.parse()?),
        None => RunOptions::simulated(0).speed(10.0),
    };

    let plan = read_plan_file(&path)?;
    println!("{}: {} items", path.display(), plan.items.len());

    let sim = Run::started(options)?;
    let op = OffboardClient::connect(&sim, 10.0)?;
    op.upload_mission(plan.as_ref())?;
    sim.until(|| op.mission_uploaded() || op.mission_ack().is_some(), 30.0)?;
    if !op.mission_uploaded() {
        return Err(format!(
            "PX4 refused the mission: MISSION_ACK {:?}",
            op.mission_ack()
        )
        .into());
    }
    println!("uploaded ({} items); starting", op.mission_count());
    op.start_mission()?;

    // Progress: print each new current item and everything the link reports (refusals, …).
    let mut last = None;
    let mut seen_events = 0;
    let mut report = || {
        let p = op.mission_progress();
        if last != Some((p.current, p.reached)) {
            last = Some((p.current, p.reached));
            println!(
                "t={:6.1} s  item {}/{}  reached {}  alt {:5.1} m  mode {}",
                sim.sim_time_s().unwrap_or(0.0),
                p.current,
                p.count,
                op.mission_reached()
                    .map_or_else(|| "none".to_owned(), |r| r.to_string()),
                op.relative_altitude_m().unwrap_or(0.0),
                op.mode()
                    .map_or_else(|| "unknown".to_owned(), |m| m.to_string())
            );
        }
        for (n, e) in op.events_since(seen_events) {
            seen_events = n;
            if !matches!(e, LinkEvent::PeerChanged(_)) {
                println!("            {e:?}");
            }
        }
    };
    sim.until(
        || {
            report();
            op.mission_complete()
        },
        900.0,
    )?;
    println!("mission complete; waiting for the landing");
    sim.until(
        || {
            report();
            op.landed() == Some(true) && !op.is_armed()
        },
        600.0,
    )?;
    println!(
        "landed and disarmed at t={:.1} s ({})",
        sim.sim_time_s()?,
        op.landed_state().name()
    );
    Ok(())
}
