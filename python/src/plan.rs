//! `read_plan`'s native half: a QGroundControl `.plan` read by the core's reader, handed to
//! `nexus_uav.px4` as tuples it turns into `Plan` and `MissionItem`.

use std::path::PathBuf;

use nexus_host::error::OffboardClientError;
use nexus_host::offboard_client::read_plan_file;
use pyo3::prelude::*;

use crate::errors::client_error;

pub(crate) type ItemTuple = (u16, u8, u16, bool, (f32, f32, f32, f32), i32, i32, f32);

/// Read a QGroundControl .plan: (home (lat, lon, alt AMSL), items as tuples).
#[pyfunction]
pub(crate) fn _read_plan(
    py: Python<'_>,
    path: PathBuf,
) -> PyResult<((f64, f64, f64), Vec<ItemTuple>)> {
    let plan = py
        .allow_threads(|| read_plan_file(&path))
        .map_err(|e| match e {
            OffboardClientError::Plan { message, .. } if message.starts_with("cannot read it") => {
                match std::fs::metadata(&path) {
                    Err(io) => {
                        pyo3::exceptions::PyOSError::new_err(format!("{}: {io}", path.display()))
                    }
                    Ok(_) => client_error(OffboardClientError::Plan {
                        path: path.clone(),
                        message,
                    }),
                }
            }
            other => client_error(other),
        })?;
    let h = plan.home;
    let items = plan
        .items
        .iter()
        .map(|i| {
            (
                i.seq,
                i.frame,
                i.command,
                i.autocontinue,
                (i.params[0], i.params[1], i.params[2], i.params[3]),
                i.x,
                i.y,
                i.z,
            )
        })
        .collect();
    Ok(((h.lat_deg, h.lon_deg, h.alt_amsl_m), items))
}
