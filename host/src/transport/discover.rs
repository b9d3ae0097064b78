//! Finding the vehicle on a link before a pump takes it: the first autopilot heartbeat (checked
//! against the link's signing when it has one), and the hint for PX4's port rule above
//! instance 9.

use std::ops::ControlFlow;
use std::time::{Duration, Instant};

use nexus_core::frame::Decoder;

use super::{is_autopilot, mio, scan_frames, ConnString, Link, PeerRule, RECV_BUF_LEN};

/// Read the link until an autopilot's heartbeat (not a GCS's; of system `sysid` and component
/// `compid` when given) names its system and component id. What `--connect`, `watch`,
/// `nexus serve`'s `connect` and the Python package's `Sim(connect=…)` find their vehicle with.
/// Our heartbeat (a GCS's) goes out once a second meanwhile: what makes a vehicle behind
/// `udpout:` or `tcp:` talk. `None` at the deadline.
///
/// On a signed link (`signing`: the link's signer and verifier, and the moment its clock
/// reads zero) only a heartbeat that passes the signature check counts, and a UDP link latches
/// the vehicle's address on that heartbeat, never before: the transport's own latch (the
/// first autopilot heartbeat, unchecked) is held off while looking, so a forger who speaks
/// first takes neither the vehicle's place nor ours. Rejected frames are counted in
/// `signing`'s stats; our heartbeats are signed.
pub fn discover(
    mut link: Link,
    deadline: Option<Instant>,
    sysid: Option<u8>,
    compid: Option<u8>,
    mut signing: Option<(&mut crate::signing::LinkSigning, Instant)>,
) -> Result<Option<(Link, u8, u8)>, String> {
    let mut poll = mio::Poll::new().map_err(|e| e.to_string())?;
    link.register(poll.registry(), mio::Token(0))
        .map_err(|e| e.to_string())?;
    // A signed UDP link takes no peer until a heartbeat passed the check (then its sender).
    let latch_after_check = signing.is_some() && link.peer_rule().latches();
    if latch_after_check {
        link.set_peer_rule(PeerRule::MostRecent);
    }
    let mut events = mio::Events::with_capacity(16);
    let mut buf = vec![0u8; RECV_BUF_LEN];
    let mut decoder = Decoder::new();
    let mut hb = [0u8; nexus_core::frame::MAX_FRAME_LEN];
    let hb_len = nexus_core::frame::encode_v2(
        0,
        crate::offboard_client::OWN_SYSTEM_ID,
        crate::offboard_client::OWN_COMPONENT_ID,
        &nexus_core::offboard::wire::gcs_heartbeat(),
        &mut hb,
    )
    .map_err(|e| format!("{e:?}"))?;
    let since =
        |origin: Instant| nexus_core::Instant::from_micros(origin.elapsed().as_micros() as u64);
    let mut next_hb = Instant::now();
    loop {
        if Instant::now() >= next_hb {
            // Before a peer is known a udpin link has nowhere to send: nothing is lost.
            let mut out = hb;
            let n = match signing.as_mut() {
                Some((s, origin)) => s.sign(since(*origin), &mut out, hb_len),
                None => hb_len,
            };
            let _ = link.send(&out[..n]);
            let _ = link.flush();
            next_hb += Duration::from_secs(1);
        }
        let wait = match deadline {
            Some(d) => match d.checked_duration_since(Instant::now()) {
                Some(left) => left.min(Duration::from_millis(200)),
                None => break,
            },
            None => Duration::from_millis(200),
        }
        .min(next_hb.saturating_duration_since(Instant::now()));
        poll.poll(&mut events, Some(wait))
            .map_err(|e| e.to_string())?;
        while let Some(n) = link.recv(&mut buf).map_err(|e| e.to_string())? {
            if latch_after_check {
                // One datagram, one sender: its frames are judged on their own.
                decoder = Decoder::new();
            }
            let found = scan_frames(&mut decoder, &buf[..n], |raw| {
                if let Some((s, origin)) = signing.as_mut() {
                    if !s.check(since(*origin), raw).accepted() {
                        return ControlFlow::Continue(());
                    }
                }
                match nexus_core::Frame::decode(raw) {
                    Ok(Some(nexus_core::Frame {
                        header,
                        msg: nexus_core::msg::Msg::Heartbeat(hb),
                    })) if is_autopilot(&hb)
                        && sysid.is_none_or(|s| s == header.sysid)
                        && compid.is_none_or(|c| c == header.compid) =>
                    {
                        ControlFlow::Break(header)
                    }
                    _ => ControlFlow::Continue(()),
                }
            });
            if let Some(header) = found {
                if latch_after_check {
                    // The sender of this datagram (a MostRecent link follows it), from now on
                    // the only one.
                    match link.peer() {
                        Some(vehicle) => link.set_peer_rule(PeerRule::Address(vehicle)),
                        None => continue,
                    }
                }
                link.deregister(poll.registry())
                    .map_err(|e| e.to_string())?;
                return Ok(Some((link, header.sysid, header.compid)));
            }
        }
    }
    Ok(None)
}

/// Why a vehicle may be silent on a port that looks like a SITL client port above instance 9:
/// PX4's SITL startup sends the offboard link of every instance above 9 to UDP 14549 (not
/// 14540+N) until a client speaks to the instance's own port 14580+N, where PX4 then latches
/// on the sender.
/// The words name the fix as a connection string (`udpout:127.0.0.1:14580+N`); each face
/// says where it goes (`--connect`, `connect=`).
pub fn port_rule_hint(conn: &ConnString) -> Option<String> {
    let ConnString::UdpIn { port, .. } = conn else {
        return None;
    };
    let instance = port.checked_sub(14540)?;
    if !(10..=253).contains(&instance) {
        return None;
    }
    Some(format!(
        "PX4 SITL instance {instance} sends to UDP 14549 until a client speaks to its port {}: \
         connect to udpout:127.0.0.1:{} instead (or listen on 14549)",
        14580 + instance,
        14580 + instance
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hint_names_the_instance_and_its_port() {
        let conn: ConnString = "udpin:127.0.0.1:14554".parse().unwrap();
        let h = port_rule_hint(&conn).expect("a hint for instance 14");
        assert!(h.contains("instance 14"), "{h}");
        assert!(h.contains("udpout:127.0.0.1:14594"), "{h}");
        // Instances 0..=9 are sent to 14540+N: no hint, nor for other links.
        for c in [
            "udpin:0.0.0.0:14540",
            "udpin:0.0.0.0:14549",
            "udpout:127.0.0.1:14554",
        ] {
            assert_eq!(port_rule_hint(&c.parse().unwrap()), None, "{c}");
        }
    }
}
