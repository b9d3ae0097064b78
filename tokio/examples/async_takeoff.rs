//! Read and confirm the takeoff altitude parameter, take off, hover at the target, land, with
//! nexus-tokio, on any vehicle that speaks PX4's offboard API: a PX4 SITL booted by hand, a
//! serial-linked rig, a `nexus sim`.
//!
//! ```text
//! cargo run -p nexus-tokio --example async_takeoff -- udpin:127.0.0.1:14540 5 1
//! ```
//!
//! The arguments are a connection string (default `udpin:127.0.0.1:14540`, PX4 instance 0's
//! offboard port), the takeoff altitude in m over home (default 5) and the vehicle's system id
//! (default 1; PX4 instance N is N + 1). Timeouts are wall time (a vehicle run faster than real
//! time takes less).

use std::time::Duration;

use nexus_tokio::prelude::*;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let conn = args
        .next()
        .unwrap_or_else(|| "udpin:127.0.0.1:14540".into());
    let alt_m: f32 = match args.next() {
        Some(a) => a.parse()?,
        None => 5.0,
    };
    let options = OffboardOptions {
        system_id: match args.next() {
            Some(a) => a.parse()?,
            None => 1,
        },
        ..Default::default()
    };
    let op = AsyncClient::open(&conn, options).await?;
    op.until(|c| c.telemetry().connected(), Duration::from_secs(30))
        .await
        .map_err(|_| format!("no heartbeat on {conn} within 30 s"))?;
    // PX4's default takeoff height, read, then set to what it was: PX4's echo confirms it.
    let t = Duration::from_secs(5);
    let default_alt = op.param_get("MIS_TAKEOFF_ALT", t).await?;
    let stored = op
        .set_param_wait("MIS_TAKEOFF_ALT", default_alt.value, t)
        .await?;
    println!(
        "connected on {conn}; MIS_TAKEOFF_ALT = {} (parameter {} of {}); taking off to {alt_m} m",
        stored.value, stored.index, stored.count
    );
    op.takeoff(alt_m)?;
    op.until(
        |c| c.offboard().at_target(c.telemetry()),
        Duration::from_secs(120),
    )
    .await
    .map_err(|_| format!("not at {alt_m} m within 120 s: {:?}", op.events().last()))?;
    println!(
        "at target: {:.2} m over the pad (GLOBAL_POSITION_INT.relative_alt {:?} m)",
        op.height_m().unwrap_or(f32::NAN),
        op.relative_altitude_m()
    );
    op.land()?;
    let landed = op.wait(&Wait::landed().timeout_s(120.0)).await?;
    println!(
        "landed: {} ({:?}) after {:.1} s sim",
        landed.satisfied, landed.reason, landed.waited_sim_s
    );
    if !landed.satisfied {
        return Err("the vehicle did not land".into());
    }
    Ok(())
}
