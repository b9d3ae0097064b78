"""Flights from Python on the built-in vehicle: takeoff-hover-land with waits and a guard, the
box mission from examples/box.plan, a text wait with since_seq and a then_mode reaction."""

import math

import pytest

import nexus_uav as nx
from nexus_uav.px4 import MissionItem, OffboardClient, Plan, read_plan
from conftest import SPEED


@pytest.fixture
def flight():
    with nx.Sim(instance=90, speed=SPEED) as sim:
        sim.start()
        with OffboardClient.connect(sim, 10.0) as op:
            yield sim, op


def test_takeoff_hover_land(flight):
    sim, op = flight
    assert op.connected
    assert op.landed_state() in ("ON_GROUND", "UNKNOWN")
    op.takeoff(3.0)
    armed = sim.wait("armed", timeout_s=30.0)
    assert armed.reason == "met", armed
    up = sim.wait("altitude", 2.5, timeout_s=60.0, guard="disarmed")
    assert up.satisfied and up.reason == "met", up
    assert up.snapshot_at == "settle" and up.snapshot.height_m >= 2.5
    assert op.is_armed() and op.mode() in ("Takeoff", "Hold")
    sim.wait_until(op.at_target, sim_timeout=30.0)
    # Hover: 5 s of sim time, ending early if it sinks below 1.5 m.
    hover = sim.wait("time", 5.0, timeout_s=10.0, guard=("altitude", 1.5, "<="))
    assert hover.reason == "met", hover
    assert 4.9 <= hover.waited_sim_s <= 5.5, hover
    assert hover.waited_wall_s < hover.waited_sim_s  # speed 20
    op.land()
    assert not op.at_target()
    down = sim.wait("landed", timeout_s=60.0, guard=["disarmed"])
    # PX4 disarms after touching down: landed comes first.
    assert down.reason == "met", down
    assert down.snapshot.landed == "ON_GROUND"
    assert "WaitResult(satisfied=True" in repr(down)
    assert op.relative_altitude() < 0.5


def test_a_guard_ends_the_wait(flight):
    sim, op = flight
    op.takeoff(3.0)
    # "altitude >= 50" never happens; the guard "altitude >= 1" fires on the way up.
    r = sim.wait("altitude", 50.0, timeout_s=60.0, guard=("altitude", 1.0, ">="))
    assert r.reason == "guard" and r.guard == 0 and not r.satisfied, r
    assert r.explanation, r


def test_box_mission(flight):
    sim, op = flight
    plan = read_plan("examples/box.plan")
    assert isinstance(plan, Plan) and isinstance(plan.items[0], MissionItem)
    assert [it.seq for it in plan.items] == list(range(len(plan.items)))
    assert math.isnan(plan.items[0].params[3])
    op.upload_mission(plan)
    sim.wait_until(op.mission_uploaded, sim_timeout=30.0)
    assert op.mission_ack() == 0 and op.mission_count() == len(plan.items)
    op.start_mission()
    armed = sim.wait("armed", timeout_s=30.0)
    assert armed.reason == "met", armed
    done = sim.wait("mission_complete", timeout_s=900.0, guard="disarmed")
    assert done.reason == "met", done
    assert op.mission_complete()
    assert op.mission_reached() >= 1
    assert op.mission_current() >= 1


def test_upload_items_and_path(flight):
    sim, op = flight
    plan = read_plan("examples/box.plan")
    op.upload_mission(list(plan.items))
    sim.wait_until(op.mission_uploaded, sim_timeout=30.0)
    assert op.mission_count() == len(plan.items)
    op.upload_mission("examples/box.plan")
    assert not op.mission_uploaded()  # a new upload resets the handshake
    sim.wait_until(op.mission_uploaded, sim_timeout=30.0)


def test_text_since_seq_then_mode(flight):
    sim, op = flight
    since = sim.snapshot().seq  # texts after this one count
    op.takeoff(5.0)
    r = sim.wait(
        "text", "Takeoff detected", since_seq=since, timeout_s=60.0, then_mode="Hold", wait_cap_s=10.0
    )
    assert r.reason == "met", r
    assert "Takeoff detected" in r.snapshot.last_text
    assert any("Takeoff detected" in t for (_, _, t) in sim.texts_since(since))
    held = sim.wait("mode", "Hold", timeout_s=10.0)
    assert held.reason == "met", held
    # The text is older than a later since_seq: a second wait does not see it.
    again = sim.wait("text", "Takeoff detected", since_seq=r.snapshot.seq, timeout_s=2.0)
    assert again.reason == "timeout", again


def test_a_cap_then_continue(flight):
    sim, op = flight
    # Nothing arms it: a short wall cap ends the wait first, and it can go on from snapshot.seq.
    r = sim.wait("text", "never said", timeout_s=600.0, wait_cap_s=0.2)
    assert r.reason == "cap" and r.snapshot_at == "return", r
    r2 = sim.wait("text", "never said", since_seq=r.snapshot.seq, timeout_s=1.0)
    assert r2.reason == "timeout", r2


def test_relative_sim_time(flight):
    sim, op = flight
    prev = sim.wait("time", 0.5, timeout_s=2.0)
    # Relative to the tick the previous wait settled: its settle snapshot's clock (a snapshot
    # taken after the call would be some wall milliseconds later, many sim ones at speed 20).
    assert prev.snapshot_at == "settle", prev
    t0 = prev.snapshot.t_sim_s
    r = sim.wait("sim_time", 1.0, relative=True, timeout_s=5.0)
    assert r.reason == "met", r
    assert r.snapshot.t_sim_s >= t0 + 0.95, r
