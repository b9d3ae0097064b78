//! `OffboardClient::set_param` with a wait, against the simulated vehicle (instance 143): it
//! returns once PX4 echoes the value, with what PX4 stored; PX4's PARAM_ERROR fails it at once
//! with the code.

mod host_support;

use std::time::{Duration, Instant};

use host_support::*;
use nexus_core::mav::MavParamType;
use nexus_host::error::OffboardClientError;
use nexus_host::nexus_core::action::ParamValue;
use nexus_host::pump::ParamError;

#[test]
fn set_param_is_confirmed_or_refused_as_px4_answers() {
    let (_sim, op) = connect(realtime(143));
    let t = Duration::from_secs(10);

    // INT32: confirmed with the value PX4 stored, and read back the same.
    let v = op
        .set_param_wait("COM_OBL_RC_ACT", ParamValue::Int(3), t)
        .unwrap();
    assert_eq!(v.param_type, MavParamType::MAV_PARAM_TYPE_INT32);
    assert_eq!(v.as_int(), Some(3));
    assert!(v.count > 1, "the echo's param_count: {v:?}");
    assert_eq!(op.param_get("COM_OBL_RC_ACT", t).unwrap().as_int(), Some(3));

    // REAL32.
    let v = op
        .set_param_wait("MPC_XY_CRUISE", ParamValue::Real(7.25), t)
        .unwrap();
    assert_eq!(v.as_real(), Some(7.25));
    assert_eq!(
        op.param_get("MPC_XY_CRUISE", t).unwrap().as_real(),
        Some(7.25)
    );

    // Back to back, each set confirmed with its own value (never an earlier set's echo).
    for x in 0..10 {
        let v = op
            .set_param_wait("COM_OBL_RC_ACT", ParamValue::Int(x), t)
            .unwrap();
        assert_eq!(v.as_int(), Some(x));
    }

    // An unknown name: PX4's DOES_NOT_EXIST at once, not at the timeout.
    let t0 = Instant::now();
    match op.set_param_wait(
        "NO_SUCH_PARAM",
        ParamValue::Real(1.0),
        Duration::from_secs(5),
    ) {
        Err(OffboardClientError::Param(ParamError::Refused { name, error })) => {
            assert_eq!(name, "NO_SUCH_PARAM");
            assert_eq!(error, "MAV_PARAM_ERROR_DOES_NOT_EXIST");
        }
        other => panic!("{other:?}"),
    }
    assert!(t0.elapsed() < Duration::from_secs(1), "{:?}", t0.elapsed());

    // The wrong type (MPC_XY_CRUISE is REAL32): TYPE_MISMATCH at once, the value unchanged.
    let t0 = Instant::now();
    match op.set_param_wait("MPC_XY_CRUISE", ParamValue::Int(5), Duration::from_secs(5)) {
        Err(OffboardClientError::Param(ParamError::Refused { error, .. })) => {
            assert_eq!(error, "MAV_PARAM_ERROR_TYPE_MISMATCH");
        }
        other => panic!("{other:?}"),
    }
    assert!(t0.elapsed() < Duration::from_secs(1), "{:?}", t0.elapsed());
    assert_eq!(
        op.param_get("MPC_XY_CRUISE", t).unwrap().as_real(),
        Some(7.25)
    );

    // What cannot be a PARAM_SET is refused before anything is sent.
    assert!(matches!(
        op.set_param_wait("A_NAME_LONGER_THAN_16", ParamValue::Int(1), t),
        Err(OffboardClientError::Param(ParamError::BadName(_)))
    ));
    assert!(matches!(
        op.set_param_wait("MPC_XY_CRUISE", ParamValue::Real(f32::NAN), t),
        Err(OffboardClientError::Param(ParamError::NotSent { .. }))
    ));
}
