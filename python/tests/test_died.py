"""A vehicle that dies mid-wait: RunError naming the cause (predicate waits), reason "died"
(engine waits)."""

import threading
import time

import pytest

import nexus_uav as nx
from nexus_uav.px4 import OffboardClient
from conftest import SPEED


def test_killed_vehicle_raises_run_error():
    with nx.Sim(instance=91, speed=SPEED) as sim:
        sim.start()
        with OffboardClient.connect(sim, 10.0) as op:
            threading.Timer(0.3, lambda: sim.inject("exit", code=7)).start()
            t0 = time.monotonic()
            with pytest.raises(nx.RunError, match="exited with code 7"):
                sim.wait_until(lambda: False, sim_timeout=600.0)
            assert time.monotonic() - t0 < 10.0
            r = sim.wait("armed", timeout_s=10.0)
            assert r.reason == "died" and "exited with code 7" in r.snapshot.error, r


def test_engine_wait_ends_died():
    with nx.Sim(instance=95, speed=SPEED) as sim:
        sim.start()
        with OffboardClient.connect(sim, 10.0):
            threading.Timer(0.3, lambda: sim.inject("panic", module="commander", message="boom")).start()
            r = sim.wait("armed", timeout_s=600.0)
            assert r.reason == "died", r
            assert "boom" in r.snapshot.error or "PANIC" in r.snapshot.error, r
            assert sim.death()
