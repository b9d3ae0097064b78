"""The verbs the flights do not cover, on the built-in vehicle (instance 93): goto and
at_target, sticks (set_rc/stop_rc) with the stick-gesture arm, parameters set and read back,
the mission queries before any upload, landed_state and relative_altitude."""

import math
from dataclasses import dataclass
from typing import Optional, Tuple

import pytest

import nexus_uav as nx
from nexus_uav.px4 import OffboardClient
from conftest import SPEED


@pytest.fixture
def flight():
    with nx.Sim(instance=93, speed=SPEED) as sim:
        sim.start()
        with OffboardClient.connect(sim, 10.0) as op:
            yield sim, op


@dataclass
class PositionGoal:
    pos: Tuple[float, float, float]
    yaw: Optional[float] = None


def test_goto_and_at_target(flight):
    sim, op = flight
    # Nothing commanded: no target, and no position before the vehicle reports one.
    assert not op.at_target()
    op.takeoff(3.0)
    sim.wait_until(op.at_target, sim_timeout=60.0)
    # at_target reads the height above the pad (alt_tol_m = 1 m); relative_altitude is
    # GLOBAL_POSITION_INT's, the estimate, which lags it on the way up.
    assert sim.snapshot().height_m >= 2.0
    assert op.relative_altitude() > 0.0
    op.goto([12.0, 0.0, 5.0])  # a list (or any sequence of three numbers) will do too
    assert not op.at_target()  # the new target is 12 m away
    went = sim.wait_until(op.at_target, sim_timeout=120.0)
    assert went.waited_sim_s > 1.0, went
    assert abs(sim.snapshot().height_m - 5.0) < 2.0
    # The estimate over home climbed too (it carries the simulated baro's offset: ~1 m).
    assert op.relative_altitude() > 3.0
    assert op.landed_state() == "IN_AIR"
    # A PositionGoal-shaped object with a yaw: world +pi/2 faces +y (west).
    op.goto(PositionGoal(pos=(12.0, 8.0, 5.0), yaw=math.pi / 2))
    assert not op.at_target()
    sim.wait_until(op.at_target, sim_timeout=120.0)
    # The engine's at_target condition agrees.
    r = sim.wait("at_target", timeout_s=5.0)
    assert r.reason == "met", r
    op.land()
    down = sim.wait("landed", timeout_s=120.0)
    assert down.reason == "met", down
    assert op.landed_state() == "ON_GROUND"
    assert op.relative_altitude() < 0.5


def test_goto_before_a_position_is_refused():
    with nx.Sim(instance=93, speed=SPEED) as sim:
        sim.start()
        op = OffboardClient("udpin:127.0.0.1:14633", system_id=94).open()
        try:
            assert not op.connected and op.relative_altitude() is None
            with pytest.raises(RuntimeError, match="position"):
                op.goto((1.0, 0.0, 2.0))
        finally:
            op.close()


def test_sticks_and_the_gesture_arm(flight):
    sim, op = flight
    # A manual mode starts the neutral stick stream itself; the gesture arms in it.
    op.set_mode("Position")
    assert sim.wait("mode", "Position", timeout_s=20.0).reason == "met"
    op.arm(gesture=True)
    armed = sim.wait("armed", timeout_s=30.0)
    assert armed.reason == "met", armed
    assert op.is_armed()
    # Throttle up: Position mode climbs.
    op.set_rc(throttle=0.9)
    up = sim.wait("altitude", 2.0, timeout_s=30.0)
    assert up.reason == "met", up
    # Out-of-range sticks are clamped, not refused.
    op.set_rc(roll=3.0, pitch=-3.0, throttle=0.5, yaw=0.0)
    # No sticks any more: PX4's manual-control-loss failsafe.
    since = sim.snapshot().seq
    op.stop_rc()
    lost = sim.wait("text", "Manual control lost", since_seq=since, timeout_s=30.0)
    assert lost.reason == "met", lost
    op.disarm()


def test_parameters_set_and_read_back(flight):
    sim, op = flight
    op.param_set("MIS_TAKEOFF_ALT", 7.5)
    # Fire-and-forget: read it back once PX4 echoes it.
    sim.wait("time", 1.0, timeout_s=5.0)
    assert op.param_get("MIS_TAKEOFF_ALT") == pytest.approx(7.5)
    op.param_set_int("COM_RC_IN_MODE", 1)
    sim.wait("time", 1.0, timeout_s=5.0)
    got = op.param_get("COM_RC_IN_MODE")
    assert got == 1 and isinstance(got, int), got
    # takeoff writes MIS_TAKEOFF_ALT itself.
    op.takeoff(4.0)
    sim.wait("armed", timeout_s=30.0)
    assert op.param_get("MIS_TAKEOFF_ALT") == pytest.approx(4.0)
    with pytest.raises(ValueError, match="NO_SUCH_PARAM"):
        op.param_get("NO_SUCH_PARAM")


def test_queries_before_anything(flight):
    sim, op = flight
    assert op.connected and not op.is_armed()
    assert op.mission_uploaded() is False
    assert op.mission_ack() is None
    assert op.mission_count() == 0
    assert op.mission_reached() == -1
    assert op.mission_current() == 0
    assert op.mission_complete() is False
    sim.wait("time", 4.0, timeout_s=10.0)  # EXTENDED_SYS_STATE and a position by now
    assert op.landed_state() == "ON_GROUND"
    assert abs(op.relative_altitude()) < 0.5
    assert op.mode() in ("Hold", "Takeoff", "Position", "Manual")
    assert op.last_refusal() is None
    assert "connected=True" in repr(op)
