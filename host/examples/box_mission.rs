//! A box mission with a guard: upload QGroundControl's box plan, start it, and wait — as one
//! wait — until the mission is complete, failing at once if the vehicle disarms on the way;
//! print progress as PX4 reports it.
//!
//! ```text
//! cargo run -p nexus-host --example box_mission            # lockstep
//! cargo run -p nexus-host --example box_mission -- 10      # 10× real time
//! ```
//!
//! Instance 162 (UDP 14702/14742): clear of a QGroundControl or SITL on the usual 14540.

use nexus_host::prelude::*;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let options = match std::env::args().nth(1) {
        Some(speed) => RunOptions::simulated(162).speed(speed.parse()?),
        None => RunOptions::simulated(162).lockstep(),
    };
    let plan_path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../fixtures/plans/MC_mission_box.plan"
    );
    let plan = read_plan_file(plan_path)?;

    let sim = Run::started(options)?;
    let op = OffboardClient::connect(&sim, 10.0)?;
    op.upload_mission(plan.as_ref())?;
    sim.until(|| op.mission_ack().is_some(), 30.0)?;
    if op.mission_ack() != Some(MissionAck::MAV_MISSION_ACCEPTED) {
        return Err(format!("PX4 refused the mission: {:?}", op.mission_ack()).into());
    }
    op.start_mission()?;
    let armed = sim.wait(&Wait::armed().timeout_s(30.0))?;
    if armed.reason != Reason::Met {
        return Err(format!("the mission did not arm the vehicle: {armed:?}").into());
    }

    let mission = Wait::mission_complete()
        .timeout_s(900.0)
        .guard(Condition::disarmed());
    let mut shown = None;
    let r = sim.wait_reporting(&mission, || {
        let p = op.mission_progress();
        if shown.replace(p.current) != Some(p.current) {
            println!(
                "item {}/{}  alt {:.1} m",
                p.current,
                p.count,
                op.relative_altitude_m().unwrap_or(0.0)
            );
        }
    })?;
    println!("{}: {:.1} s of sim time", r.reason, r.waited_sim_s);
    if r.reason != Reason::Met {
        return Err(format!("mission not complete: {r:?}").into());
    }
    Ok(())
}
