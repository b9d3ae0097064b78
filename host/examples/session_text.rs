//! A session waiting for a text: take off, wait (at most 10 s of wall time) for PX4's
//! "Takeoff detected" among the texts after a given sequence number, and switch to Hold in
//! the same tick it arrives.
//!
//! ```text
//! cargo run -p nexus-host --example session_text           # lockstep
//! cargo run -p nexus-host --example session_text -- 10     # 10× real time
//! ```
//!
//! Instance 163 (UDP 14703/14743): clear of a QGroundControl or SITL on the usual 14540.

use std::time::Duration;

use nexus_host::prelude::*;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let options = match std::env::args().nth(1) {
        Some(speed) => RunOptions::simulated(163).speed(speed.parse()?),
        None => RunOptions::simulated(163).lockstep(),
    };
    let session = Session::start(options, 10.0)?;
    let since = session.snapshot()?.seq; // texts after this one count
    session.client().takeoff(5.0)?;

    let wait = Wait::text("Takeoff detected")
        .since_seq(since)
        .timeout_s(60.0)
        .then_mode(Mode::Hold);
    let r = session.wait(&wait, Some(Duration::from_secs(10)))?; // wall cap
    println!("{} after {:.1} s of sim time", r.reason, r.waited_sim_s);
    if r.reason != Reason::Met {
        return Err(format!("no takeoff text: {r:?}").into());
    }
    let held = session.wait(
        &Wait::mode(Mode::Hold).timeout_s(10.0),
        Some(Duration::from_secs(10)),
    )?;
    println!("mode Hold: {}", held.reason);
    if held.reason != Reason::Met {
        return Err(format!("the Hold reaction did not take: {held:?}").into());
    }
    Ok(())
}
