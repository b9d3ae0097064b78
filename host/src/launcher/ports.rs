//! The port map of a PX4 SITL instance: where a client finds its offboard link.

use crate::transport::ConnString;

/// UDP port of the offboard client for instance 0; instance `N` uses `14540 + N`.
pub const OFFBOARD_CLIENT_PORT_BASE: u16 = 14540;
/// UDP port PX4 binds for its offboard link on instance 0; instance `N` binds `14580 + N`.
pub const OFFBOARD_PX4_PORT_BASE: u16 = 14580;

/// PX4's offboard (API) link of one instance.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive] // more fields may come
pub struct OffboardPort {
    /// Where the client listens (`udpin`) and PX4 sends: `14540 + N`.
    pub port: u16,
    /// What PX4 binds and sends from: `14580 + N`.
    pub px4_port: u16,
    /// PX4's MAVLink system id, `N + 1` (the autopilot is component 1).
    pub system_id: u8,
}

impl OffboardPort {
    /// The offboard link of instance `instance` (0 to 254).
    pub fn for_instance(instance: u8) -> Self {
        OffboardPort {
            port: OFFBOARD_CLIENT_PORT_BASE + u16::from(instance),
            px4_port: OFFBOARD_PX4_PORT_BASE + u16::from(instance),
            system_id: instance.saturating_add(1),
        }
    }

    /// `udpin:0.0.0.0:<port>`: what a client opens to talk to this PX4.
    pub fn conn(&self) -> ConnString {
        ConnString::udp_in_any(self.port)
    }
}

/// Every link a PX4 SITL instance offers, by name. Today: `"offboard"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive] // more fields may come
pub struct PortMap {
    /// The offboard / API link.
    pub offboard: OffboardPort,
}

impl PortMap {
    /// The port map of instance `instance`.
    pub fn for_instance(instance: u8) -> Self {
        PortMap {
            offboard: OffboardPort::for_instance(instance),
        }
    }

    /// Look a link up by the name the Python client uses (`sim.ports["offboard"]`).
    pub fn get(&self, name: &str) -> Option<OffboardPort> {
        match name {
            "offboard" => Some(self.offboard),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instance_n_maps_to_the_px4_ports() {
        let m = PortMap::for_instance(3);
        assert_eq!(
            m.get("offboard"),
            Some(OffboardPort {
                port: 14543,
                px4_port: 14583,
                system_id: 4
            })
        );
        assert_eq!(m.offboard.conn().to_string(), "udpin:0.0.0.0:14543");
        assert_eq!(m.get("gcs"), None);
        assert_eq!(PortMap::for_instance(254).offboard.system_id, 255);
    }
}
