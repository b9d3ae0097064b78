//! `Sim(connect=...)`: a vehicle someone else runs (a PX4 SITL, a `nexus sim`, a serial HIL
//! rig), attached over a connection string as the `nexus` command's `--connect` does.
//!
//! `start()` opens the link (a port in use fails there). `OffboardClient.connect(sim, timeout)`
//! then finds the first autopilot heartbeat on it (of `system_id` and `component_id` when
//! given), latches that system and component, puts the link on the run's pump (the run's clock
//! becomes the vehicle's, silence ends waits `died`), and asks the vehicle whether it is a
//! simulator (AUTOPILOT_VERSION). A client commands what it is given, so one that does not
//! identify as PX4 SITL is refused unless `real_vehicle=True`.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use nexus_host::offboard_client::{GroundTruth, OffboardClient as HostClient, OffboardOptions};
use nexus_host::pump::Supervision;
use nexus_host::run::Run as HostRun;
use nexus_host::transport::{discover, port_rule_hint, ConnString, Link, LinkOptions, PeerRule};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::errors::RunError;

/// Wall seconds to wait for an attached vehicle to say whether it is a simulator (the core asks
/// for AUTOPILOT_VERSION up to ten times, a second apart), as `nexus --connect`.
const IDENTIFY_TIMEOUT_S: f64 = 13.0;

/// What attaching found.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Found {
    pub system_id: u8,
    pub component_id: u8,
    /// Whether it identified as PX4 SITL (`None`: it never said).
    pub simulator: Option<bool>,
}

/// An attached vehicle: its connection string, the ids asked for, and the link.
pub(crate) struct Attach {
    pub conn: ConnString,
    system_id: Option<u8>,
    component_id: Option<u8>,
    real_vehicle: bool,
    /// The link `start()` opened, until `connect` hands it to the pump.
    link: Mutex<Option<Link>>,
    pub found: Mutex<Option<Found>>,
}

impl Attach {
    pub fn new(
        conn: &str,
        system_id: Option<u8>,
        component_id: Option<u8>,
        real_vehicle: bool,
    ) -> PyResult<Attach> {
        let conn: ConnString = conn
            .parse()
            .map_err(|e| PyValueError::new_err(format!("connect: {e}")))?;
        Ok(Attach {
            conn,
            system_id,
            component_id,
            real_vehicle,
            link: Mutex::new(None),
            found: Mutex::new(None),
        })
    }

    /// Open our end of the link (`start()`).
    pub fn open(&self) -> PyResult<()> {
        let link = Link::open_with(
            &self.conn,
            &LinkOptions {
                peer: PeerRule::FirstAutopilot {
                    sysid: self.system_id,
                },
                ..LinkOptions::default()
            },
        )
        .map_err(|e| RunError::new_err(e.to_string()))?;
        *self.link.lock().unwrap_or_else(|e| e.into_inner()) = Some(link);
        Ok(())
    }

    /// Close our end of the link if no client took it (`close()`).
    pub fn close(&self) {
        self.link.lock().unwrap_or_else(|e| e.into_inner()).take();
    }

    /// The port in the connection string, if it has one (UDP, TCP).
    pub fn port(&self) -> Option<u16> {
        match &self.conn {
            ConnString::UdpIn { port, .. }
            | ConnString::UdpOut { port, .. }
            | ConnString::Tcp { port, .. }
            | ConnString::TcpIn { port, .. } => Some(*port),
            _ => None,
        }
    }

    /// The system id: the one found, else the one asked for.
    pub fn system_id(&self) -> Option<u8> {
        self.found
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .map(|f| f.system_id)
            .or(self.system_id)
    }

    /// The autopilot's component id: the one found, else the one asked for.
    pub fn component_id(&self) -> Option<u8> {
        self.found
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .map(|f| f.component_id)
            .or(self.component_id)
    }

    /// Whether the vehicle identified as PX4 SITL (None: not connected, or it never said).
    pub fn simulator(&self) -> Option<bool> {
        self.found
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .and_then(|f| f.simulator)
    }

    /// Find the vehicle on the link, within `timeout_s` of wall time, put the link on the run's
    /// pump and return a client on it. Errors are the `nexus --connect` command's words.
    pub fn connect(&self, host: &HostRun, timeout_s: f64) -> Result<HostClient, String> {
        let link = self
            .link
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
            .ok_or_else(|| {
                format!(
                    "the link to {} is not open: start() the run first, once per client",
                    self.conn
                )
            })?;
        let deadline = Instant::now() + Duration::from_secs_f64(timeout_s);
        let (link, sysid, compid) = match discover(
            link,
            Some(deadline),
            self.system_id,
            self.component_id,
            None,
        )? {
            Some(found) => found,
            None => {
                let whose = self.system_id.map_or("an autopilot".to_string(), |s| {
                    format!("system {s}'s autopilot")
                });
                let hint = port_rule_hint(&self.conn).map_or(String::new(), |h| format!("; {h}"));
                // Open again, so a later connect can try once more.
                let _ = self.open();
                return Err(format!(
                    "no heartbeat of {whose} on {} within {timeout_s} s{hint}",
                    self.conn
                ));
            }
        };
        let pump = host.pump().map_err(|e| e.to_string())?;
        // Not ours, so not known to be a simulator: the core asks (AUTOPILOT_VERSION). The
        // component found is the one every command, parameter and mission message addresses.
        let options = OffboardOptions {
            system_id: sysid,
            component_id: Some(compid),
            ground_truth: GroundTruth::Auto,
            ..host.offboard_options()
        };
        let mut supervision = Supervision::default();
        supervision.stall = host.options().client.stall;
        let handle = pump
            .add_link(link, options.client_config(), supervision)
            .map_err(|e| e.to_string())?;
        host.attach(&handle);
        let what = format!("attached vehicle on {}", self.conn);
        while !handle.with_status(|s| s.connected) {
            if let Some(why) = handle.with_status(|s| s.died.clone()) {
                handle.close();
                return Err(format!("{what}: {why}"));
            }
            if Instant::now() >= deadline {
                handle.close();
                return Err(format!(
                    "{what}: system {sysid} sent no heartbeat after the first within {timeout_s} s"
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let simulator = identify(&handle);
        if simulator != Some(true) && !self.real_vehicle {
            handle.close();
            let why = match simulator {
                Some(_) => "AUTOPILOT_VERSION did not identify PX4 SITL",
                None => "no AUTOPILOT_VERSION decided it in time",
            };
            return Err(format!(
                "refusing to fly system {sysid} on {}: it does not identify as a simulator \
                 ({why}), and an OffboardClient can arm, move and reconfigure it; pass \
                 real_vehicle=True to Sim to fly a real vehicle",
                self.conn
            ));
        }
        *self.found.lock().unwrap_or_else(|e| e.into_inner()) = Some(Found {
            system_id: sysid,
            component_id: compid,
            simulator,
        });
        Ok(HostClient::on_link(handle, options))
    }
}

/// Whether the vehicle on `link` identifies as a simulator, as the core decides it (within
/// [`IDENTIFY_TIMEOUT_S`]); `None`: undecided then, or the link died.
fn identify(link: &nexus_host::pump::LinkHandle) -> Option<bool> {
    let wall0 = Instant::now();
    loop {
        let known = link
            .call(|ctx| ctx.client().ground_truth().simulator())
            .ok()
            .flatten();
        if known.is_some() {
            return known;
        }
        if wall0.elapsed().as_secs_f64() > IDENTIFY_TIMEOUT_S
            || link.with_status(|s| s.died.is_some())
        {
            return None;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}
