//! Parameter reads and confirmed sets, one program run on the threaded `OffboardClient` and on
//! nexus-tokio's `AsyncClient` (one read machine, `nexus_host::pump::ParamReads`, under both)
//! against the built-in simulated PX4: what PX4 stored comes back with its type, index and
//! count; PX4's refusals end at once with its code; a read of a name never answered ends at
//! its timeout with the requests it resent; a closed client refuses every read and set.
//! Instances 221 and 222, in real time at the host tests' speed factor.

mod host_support;

use std::time::{Duration, Instant};

use host_support::*;
use nexus_core::mav::MavParamType;
use nexus_host::error::OffboardClientError;
use nexus_host::nexus_core::action::ParamValue;
use nexus_host::prelude::*;
use nexus_host::pump::{Param, ParamError};
use nexus_tokio::AsyncClient;

/// The two parameter calls each client offers (the threaded one blocks, the tokio one is a
/// future), so that the program below is written once.
trait Params {
    fn get(&self, name: &str, timeout: Duration) -> Result<Param, OffboardClientError>;
    fn set(
        &self,
        name: &str,
        value: ParamValue,
        timeout: Duration,
    ) -> Result<Param, OffboardClientError>;

    /// A call that must fail with a parameter error: that error.
    fn get_err(&self, name: &str, timeout: Duration) -> ParamError {
        param_error(self.get(name, timeout))
    }
    fn set_err(&self, name: &str, value: ParamValue, timeout: Duration) -> ParamError {
        param_error(self.set(name, value, timeout))
    }
}

fn param_error(r: Result<Param, OffboardClientError>) -> ParamError {
    match r {
        Err(OffboardClientError::Param(p)) => p,
        other => panic!("not a parameter error: {other:?}"),
    }
}

impl Params for OffboardClient {
    fn get(&self, name: &str, timeout: Duration) -> Result<Param, OffboardClientError> {
        self.param_get(name, timeout)
    }
    fn set(
        &self,
        name: &str,
        value: ParamValue,
        timeout: Duration,
    ) -> Result<Param, OffboardClientError> {
        self.set_param_wait(name, value, timeout)
    }
}

/// The tokio client, called from a blocking section of a multi-thread runtime.
struct OnTokio<'a>(&'a AsyncClient, tokio::runtime::Handle);

impl Params for OnTokio<'_> {
    fn get(&self, name: &str, timeout: Duration) -> Result<Param, OffboardClientError> {
        self.1.block_on(self.0.param_get(name, timeout))
    }
    fn set(
        &self,
        name: &str,
        value: ParamValue,
        timeout: Duration,
    ) -> Result<Param, OffboardClientError> {
        self.1.block_on(self.0.set_param_wait(name, value, timeout))
    }
}

/// The program under test.
fn params(op: &impl Params) {
    let t = Duration::from_secs(10);

    // INT32: confirmed with what PX4 stored, and read back the same.
    let v = op.set("COM_OBL_RC_ACT", ParamValue::Int(3), t).unwrap();
    assert_eq!(v.param_type, MavParamType::MAV_PARAM_TYPE_INT32);
    assert_eq!(v.as_int(), Some(3));
    assert!(v.count > 1, "the echo's param_count: {v:?}");
    let r = op.get("COM_OBL_RC_ACT", t).unwrap();
    assert_eq!((r.as_int(), r.index, r.count), (Some(3), v.index, v.count));

    // REAL32, in its own unit.
    let v = op.set("MPC_XY_CRUISE", ParamValue::Real(7.25), t).unwrap();
    assert_eq!(v.param_type, MavParamType::MAV_PARAM_TYPE_REAL32);
    assert_eq!(op.get("MPC_XY_CRUISE", t).unwrap().as_real(), Some(7.25));

    // Set then read, back to back: each read is the value just set, never an earlier echo.
    for x in 0..6 {
        assert_eq!(
            op.set("COM_OBL_RC_ACT", ParamValue::Int(x), t)
                .unwrap()
                .as_int(),
            Some(x)
        );
        assert_eq!(op.get("COM_OBL_RC_ACT", t).unwrap().as_int(), Some(x));
    }

    // PX4's refusals end at once, with its code.
    let t0 = Instant::now();
    match op.get_err("NO_SUCH_PARAM", Duration::from_secs(5)) {
        ParamError::Refused { name, error } => {
            assert_eq!(name, "NO_SUCH_PARAM");
            assert!(error.contains("DOES_NOT_EXIST"), "{error}");
        }
        other => panic!("{other:?}"),
    }
    match op.set_err("MPC_XY_CRUISE", ParamValue::Int(5), Duration::from_secs(5)) {
        ParamError::Refused { error, .. } => {
            assert_eq!(error, "MAV_PARAM_ERROR_TYPE_MISMATCH")
        }
        other => panic!("{other:?}"),
    }
    assert!(t0.elapsed() < Duration::from_secs(2), "{:?}", t0.elapsed());
    assert_eq!(
        op.get("MPC_XY_CRUISE", t).unwrap().as_real(),
        Some(7.25),
        "a refused set changes nothing"
    );

    // What cannot be sent is refused before anything goes out.
    assert!(matches!(
        op.get_err("A_NAME_LONGER_THAN_16", t),
        ParamError::BadName(_)
    ));
    assert!(matches!(
        op.set_err("MPC_XY_CRUISE", ParamValue::Real(f32::NAN), t),
        ParamError::NotSent { .. }
    ));
    assert!(matches!(
        op.set_err("", ParamValue::Int(1), t),
        ParamError::BadName(_)
    ));
}

/// After close, a read and a set are `NotOpen` at once, on either client.
fn refused_when_closed(op: &impl Params) {
    let t0 = Instant::now();
    let t = Duration::from_secs(5);
    assert!(matches!(
        op.get("MPC_XY_CRUISE", t),
        Err(OffboardClientError::NotOpen)
    ));
    assert!(matches!(
        op.set("MPC_XY_CRUISE", ParamValue::Real(1.0), t),
        Err(OffboardClientError::NotOpen)
    ));
    assert!(t0.elapsed() < Duration::from_secs(1), "{:?}", t0.elapsed());
}

#[test]
fn the_threaded_client_reads_and_sets() {
    let (_sim, op) = connect(realtime(221));
    params(&op);
    op.close();
    refused_when_closed(&op);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tokio_client_reads_and_sets_the_same() {
    let sim = Run::started(realtime(222)).expect("start the run");
    let op = AsyncClient::connect(&sim, Duration::from_secs(30))
        .await
        .expect("heartbeat");
    let rt = tokio::runtime::Handle::current();
    tokio::task::block_in_place(|| params(&OnTokio(&op, rt.clone())));
    // The round trip the reads measured is published with the status, as on the pump.
    assert!(op.read_status(|s| s.rtt.param_srtt_wall.is_some()));
    op.close();
    tokio::task::block_in_place(|| refused_when_closed(&OnTokio(&op, rt)));
}

/// A read that nobody answers resends on its timer and ends at its timeout with the count;
/// dropping a read's future stops its resends. A UDP socket that heartbeats like an
/// autopilot and never answers a parameter request stands in for the vehicle.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_never_answered_times_out_and_a_dropped_one_stops() {
    use nexus_host::offboard_client::OffboardOptions;
    let vehicle = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    vehicle
        .set_read_timeout(Some(Duration::from_millis(50)))
        .unwrap();
    let op = AsyncClient::open("udpin:127.0.0.1:0", OffboardOptions::default())
        .await
        .unwrap();
    let client_addr = op.local_addr().expect("a UDP link");
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let requests = std::sync::Arc::new(std::sync::atomic::AtomicU32::new(0));
    let (s2, r2) = (stop.clone(), requests.clone());
    let silent = std::thread::spawn(move || quiet_autopilot(vehicle, client_addr, &s2, &r2));
    op.until(|c| c.telemetry().connected(), Duration::from_secs(10))
        .await
        .expect("the stand-in's heartbeat");

    let t0 = Instant::now();
    match op
        .param_get("MPC_XY_CRUISE", Duration::from_millis(2500))
        .await
    {
        Err(OffboardClientError::Param(ParamError::Timeout { sends, .. })) => {
            // 1 s resend timer: sent at 0, 1 and 2 s.
            assert!((2..=4).contains(&sends), "{sends} requests");
        }
        other => panic!("{other:?}"),
    }
    let took = t0.elapsed();
    assert!(
        took >= Duration::from_millis(2400) && took < Duration::from_secs(5),
        "{took:?}"
    );

    // A read whose future is dropped is not resent.
    let fut = op.param_get("MPC_XY_CRUISE", Duration::from_secs(30));
    let _ = tokio::time::timeout(Duration::from_millis(300), fut).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let before = requests.load(std::sync::atomic::Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let after = requests.load(std::sync::atomic::Ordering::SeqCst);
    assert_eq!(before, after, "a dropped read was resent");
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    silent.join().unwrap();
}

/// Heartbeat as PX4's autopilot (system 1) to `client`, count the PARAM_REQUEST_READs,
/// never answer them.
fn quiet_autopilot(
    sock: std::net::UdpSocket,
    client: std::net::SocketAddr,
    stop: &std::sync::atomic::AtomicBool,
    requests: &std::sync::atomic::AtomicU32,
) {
    use nexus_core::mav;
    let mut buf = [0u8; 512];
    let mut seq = 0u8;
    let mut last_hb = Instant::now() - Duration::from_secs(1);
    while !stop.load(std::sync::atomic::Ordering::SeqCst) {
        if let Ok((n, _)) = sock.recv_from(&mut buf) {
            // MAVLink 2: the message id in bytes 7-9.
            if n > 10 && buf[0] == 0xFD && u32::from_le_bytes([buf[7], buf[8], buf[9], 0]) == 20 {
                requests.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            }
        }
        if last_hb.elapsed() >= Duration::from_millis(200) {
            last_hb = Instant::now();
            let hb = mav::MavMessage::HEARTBEAT(mav::HEARTBEAT_DATA {
                mavtype: mav::MavType::MAV_TYPE_QUADROTOR,
                autopilot: mav::MavAutopilot::MAV_AUTOPILOT_PX4,
                system_status: mav::MavState::MAV_STATE_STANDBY,
                ..Default::default()
            });
            let header = mavlink::MavHeader {
                system_id: 1,
                component_id: 1,
                sequence: seq,
            };
            seq = seq.wrapping_add(1);
            let mut out = Vec::new();
            mavlink::write_v2_msg(&mut out, header, &hb).unwrap();
            let _ = sock.send_to(&out, client);
        }
    }
}
