"""Sim(connect=...): a vehicle someone else runs, attached over a connection string as
`nexus --connect` does. The vehicle here is a built-in one another Sim runs (instance 92: its
port is UDP 14672; as PX4 SITL above instance 9, it sends to 14549 until a client speaks to
that port, so the client speaks first: udpout). Nothing listens on 14636 (instance 96's port)
in the silent case; a fake autopilot speaks on 14637 (instance 97's)."""

import pytest

import nexus_uav as nx
from nexus_uav.px4 import OffboardClient
from conftest import SPEED

CONN = "udpout:127.0.0.1:14672"


def test_attach_and_fly():
    with nx.Sim(instance=92, speed=SPEED) as owner:
        owner.start()  # nobody of its own listens to its vehicle
        with nx.Sim(connect=CONN) as sim:
            sim.start()
            link = sim.ports["offboard"]
            assert link["conn"] == CONN and link["port"] == 14672
            assert link["system_id"] is None and link["simulator"] is None
            with OffboardClient.connect(sim, 10.0) as op:
                assert op.connected
                link = sim.ports["offboard"]
                assert link["system_id"] == 93 and link["component_id"] == 1, link
                assert link["simulator"] is True  # AUTOPILOT_VERSION said PX4 SITL
                op.takeoff(2.0)
                # The run's clock is the vehicle's: sim seconds, at the vehicle's speed.
                w = sim.wait_until(op.at_target, sim_timeout=60.0)
                assert w.waited_wall_s < w.waited_sim_s, w
                r = sim.wait("altitude", 1.5, timeout_s=10.0, guard="disarmed")
                assert r.reason == "met", r
                op.land()
                assert sim.wait("landed", timeout_s=60.0).reason == "met"
                report = sim.run_steps([{"until": "disarmed", "timeout_s": 30.0}])
                assert report.passed, report


def test_attach_by_system_id_and_errors():
    with pytest.raises(ValueError, match="connect"):
        nx.Sim(connect="bogus:1:2:3")
    with pytest.raises(ValueError, match="speed"):
        nx.Sim(connect=CONN, speed=2.0)
    with pytest.raises(ValueError, match="vehicle"):
        nx.Sim(connect=CONN, vehicle="px4")
    with pytest.raises(ValueError, match="connect"):
        nx.Sim(instance=92, system_id=93)
    with nx.Sim(connect="udpin:127.0.0.1:14636") as silent:
        with pytest.raises(nx.RunError, match="start"):
            silent.ports
        silent.start()
        with pytest.raises(
            nx.RunError, match="no heartbeat of an autopilot on udpin:127.0.0.1:14636 within 0.5 s"
        ) as e:
            OffboardClient.connect(silent, 0.5)
        # The CLI's hint: above instance 9, PX4 sends elsewhere until a client speaks.
        assert 'connect to udpout:127.0.0.1:14676 instead' in str(e.value)
        # The port is still ours after the failure: a vehicle can still be found on it.
        with pytest.raises(nx.RunError, match="no heartbeat"):
            OffboardClient.connect(silent, 0.2)
        # Our end of the link is open, so a second run cannot take the port.
        with nx.Sim(connect="udpin:127.0.0.1:14636") as second:
            with pytest.raises(nx.RunError, match="14636"):
                second.start()
    with nx.Sim(instance=92, speed=SPEED) as owner:
        owner.start()
        with nx.Sim(connect=CONN, system_id=5) as other:
            other.start()
            with pytest.raises(nx.RunError, match="no heartbeat of system 5's autopilot"):
                OffboardClient.connect(other, 1.0)
    # A fresh vehicle (the last one latched on the closed client's port, as PX4 does).
    with nx.Sim(instance=92, speed=SPEED) as owner:
        owner.start()
        with nx.Sim(connect=CONN, system_id=93) as sim:
            sim.start()
            with OffboardClient.connect(sim, 10.0) as op:
                assert op.connected and sim.ports["offboard"]["system_id"] == 93


def test_a_vehicle_that_is_not_a_simulator_is_refused():
    """A fake autopilot (pymavlink, on UDP 14637) that answers AUTOPILOT_VERSION as a flight
    controller would: connect refuses it, as `nexus --connect` refuses to fly one, unless
    real_vehicle=True."""
    import threading
    from pymavlink import mavutil

    stop = threading.Event()

    def fake():
        m = mavutil.mavlink_connection("udpout:127.0.0.1:14637", source_system=42, source_component=1)
        while not stop.is_set():
            m.mav.heartbeat_send(2, 12, 0x51, 0, 3)  # quadrotor, PX4, disarmed, standby
            msg = m.recv_match(blocking=True, timeout=0.1)
            if msg is not None and msg.get_type() == "COMMAND_LONG":
                m.mav.autopilot_version_send(
                    0, 0, 0, 0, 0, [0] * 8, [0] * 8, [0] * 8, 0x26AC, 0x0011, 0, [0] * 18
                )
        m.close()

    t = threading.Thread(target=fake, daemon=True)
    t.start()
    try:
        with nx.Sim(connect="udpin:127.0.0.1:14637") as sim:
            sim.start()
            with pytest.raises(nx.RunError, match="does not identify as a simulator") as e:
                OffboardClient.connect(sim, 10.0)
            assert "real_vehicle=True" in str(e.value) and "system 42" in str(e.value)
        with nx.Sim(connect="udpin:127.0.0.1:14637", real_vehicle=True) as sim:
            sim.start()
            with OffboardClient.connect(sim, 10.0) as op:
                assert op.connected
                assert sim.ports["offboard"]["simulator"] is False
    finally:
        stop.set()
        t.join()
