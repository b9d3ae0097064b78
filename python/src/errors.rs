//! The exceptions: `RunError`, and how the engine's errors map onto Python's (`ValueError` for a
//! bad argument, `KeyError` for a missing link, `TimeoutError` for a predicate wait that ran
//! out, `RunError` for a vehicle lost or never reached), each with the message the `nexus`
//! command prints.

use nexus_host::error::{ConnectError, OffboardClientError, RunError as HostRunError};
use pyo3::create_exception;
use pyo3::exceptions::{PyKeyError, PyRuntimeError, PyTimeoutError, PyValueError};
use pyo3::prelude::*;

create_exception!(
    _native,
    RunError,
    PyRuntimeError,
    "The run lost its vehicle (it exited, panicked, went silent or its clock stopped), or could \
     not start or connect to it. The message names the cause and the port."
);

pub(crate) fn run_error(e: HostRunError) -> PyErr {
    let msg = e.to_string();
    match e {
        HostRunError::Timeout { .. } => PyTimeoutError::new_err(msg),
        HostRunError::BadTimeout(_) => PyValueError::new_err(msg),
        HostRunError::NoOffboardLink { .. } | HostRunError::NoSuchLink { .. } => {
            PyKeyError::new_err(msg)
        }
        HostRunError::Wait(_) => PyValueError::new_err(msg),
        _ => RunError::new_err(msg),
    }
}

pub(crate) fn client_error(e: OffboardClientError) -> PyErr {
    let msg = e.to_string();
    match e {
        OffboardClientError::UnknownMode { .. }
        | OffboardClientError::Plan { .. }
        | OffboardClientError::Conn(_) => PyValueError::new_err(msg),
        _ => PyRuntimeError::new_err(msg),
    }
}

pub(crate) fn connect_error(e: ConnectError) -> PyErr {
    let msg = e.to_string();
    match e {
        ConnectError::NoOffboardLink { .. } => PyKeyError::new_err(msg),
        ConnectError::Client(c) => client_error(c),
        _ => RunError::new_err(msg),
    }
}
