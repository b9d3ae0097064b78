//! `nexus_uav._native`: the Python face of nexus-host. The Python package (`nexus_uav`,
//! `nexus_uav.px4`, `nexus_uav.aio`) re-exports these classes; `Plan`, `MissionItem`, `Session`
//! and the asyncio face are pure Python on top of them.
//!
//! Every blocking call releases the GIL. A wait checks for signals every
//! [`signals::SIGNAL_POLL`] of wall time, so Ctrl-C raises `KeyboardInterrupt` promptly; the
//! pending wait is cancelled on the pump, and the vehicle closes with its `Sim` (on `__exit__`,
//! `close()` or when the object is collected).
//!
//! One module per concept: [`sim`] (the run and its waits), [`attach`] (a vehicle someone else
//! runs), [`client`] (OffboardClient), [`conditions`] (the engine's condition table from
//! Python), [`steps`] (step programs), [`wait`] (driving a wait with the GIL released),
//! [`results`] (what waits return), [`errors`], [`signals`], [`plan`].

mod attach;
mod client;
mod conditions;
mod errors;
mod plan;
mod results;
mod signals;
mod sim;
mod steps;
mod wait;

use pyo3::prelude::*;

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("RunError", m.py().get_type::<errors::RunError>())?;
    m.add_class::<sim::Sim>()?;
    m.add_class::<client::OffboardClient>()?;
    m.add_class::<results::WaitResult_>()?;
    m.add_class::<results::SnapshotPX4>()?;
    m.add_class::<results::Waited>()?;
    m.add_class::<results::ProgramReport>()?;
    m.add_function(wrap_pyfunction!(plan::_read_plan, m)?)?;
    m.add("OFFBOARD_PORT", nexus_host::offboard_client::OFFBOARD_PORT)?;
    Ok(())
}
