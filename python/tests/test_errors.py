"""Refusals and bad arguments: the errors the spec names, with the explanation the CLI prints."""

import json
import pathlib

import pytest

import nexus_uav as nx
from nexus_uav.px4 import OffboardClient, read_plan
from conftest import SPEED


def test_refused_arm_is_explained():
    with nx.Sim(instance=91, speed=SPEED, wait_clear_s=1.0) as sim:
        sim.start()
        with OffboardClient.connect(sim, 10.0) as op:
            sim.inject("refuse_arming", text="Arming denied: Resolve system health failures first")
            op.takeoff(2.0)
            r = sim.wait("armed", timeout_s=20.0)
            assert r.reason == "timeout" and not r.satisfied, r
            assert r.explanation and "arm" in r.explanation, r
            with pytest.raises(TimeoutError) as e:
                sim.wait_until(op.at_target, sim_timeout=5.0)
            assert "5 s of sim time" in str(e.value)
            assert "arm" in str(e.value), e.value  # why, as the engine explains it
            assert not op.is_armed()


def test_bad_arguments():
    with pytest.raises(ValueError, match="scene"):
        nx.Sim(scene="forest")
    with pytest.raises(ValueError, match="vehicle"):
        nx.Sim(vehicle="plane")
    with pytest.raises(ValueError, match="speed"):
        nx.Sim(speed=-1.0)
    with pytest.raises(ValueError):
        OffboardClient("tcp:::nonsense:")
    sim = nx.Sim(vehicle="none")
    sim.start()
    with pytest.raises(KeyError, match="offboard"):
        sim.ports
    with pytest.raises(KeyError):
        OffboardClient.connect(sim, 1.0)
    sim.close()
    with nx.Sim(instance=95, speed=SPEED) as sim:
        with pytest.raises(nx.RunError, match="start"):
            sim.ports
        sim.start()
        assert sim.ports["offboard"] == {"port": 14635, "system_id": 96, "px4_port": 14675}
        with pytest.raises(nx.RunError, match="connect"):
            sim.wait("armed", timeout_s=1.0)
        with OffboardClient.connect(sim, 10.0) as op:
            with pytest.raises(ValueError, match="unknown mode"):
                op.set_mode("Cruise")
            with pytest.raises(TypeError):
                op.goto("north")
            with pytest.raises(TypeError):
                op.goto([1.0, 2.0])  # two numbers: not a position
            with pytest.raises(TypeError):
                op.upload_mission(42)
            with pytest.raises(ValueError):
                op.takeoff(float("nan"))
            with pytest.raises(TypeError):
                sim.wait_until(True, sim_timeout=1.0)
            with pytest.raises(ValueError):
                sim.wait_until(op.at_target, sim_timeout=-1.0)
            with pytest.raises(ValueError, match="unknown condition"):
                sim.wait("altitud", 2.0, timeout_s=1.0)
            with pytest.raises(ValueError, match="needs a value"):
                sim.wait("altitude", timeout_s=1.0)
            with pytest.raises(ValueError, match="no op"):
                sim.wait("mode", "Hold", op="<=", timeout_s=1.0)
            with pytest.raises(ValueError, match="op must be"):
                sim.wait("altitude", 1.0, op=">", timeout_s=1.0)
            with pytest.raises(ValueError, match="since_seq"):
                sim.wait("altitude", 1.0, since_seq=3, timeout_s=1.0)
            with pytest.raises(ValueError):
                sim.wait("armed", timeout_s=float("inf"))
            with pytest.raises(TypeError):
                sim.wait("armed")  # timeout_s is required
            # A predicate that raises: its exception, at once.
            with pytest.raises(ZeroDivisionError):
                sim.wait_until(lambda: 1 / 0, sim_timeout=5.0)


def _plan(tmp_path, mutate):
    doc = json.loads(pathlib.Path("examples/box.plan").read_text())
    mutate(doc)
    p = tmp_path / "x.plan"
    p.write_text(json.dumps(doc))
    return p


def test_read_plan_errors(tmp_path):
    def not_a_plan(d):
        d["fileType"] = "Fence"

    def no_mission(d):
        del d["mission"]

    def survey(d):
        d["mission"]["items"][1] = {"type": "ComplexItem", "complexItemType": "survey"}

    def six_params(d):
        d["mission"]["items"][2]["params"] = d["mission"]["items"][2]["params"][:6]

    for mutate, words in [
        (not_a_plan, "not a QGC .plan"),
        (no_mission, "no 'mission'"),
        (survey, "only 'SimpleItem'"),
        (six_params, "6 params, expected 7"),
    ]:
        with pytest.raises(ValueError, match=words):
            read_plan(_plan(tmp_path, mutate))
    with pytest.raises(OSError):
        read_plan(tmp_path / "missing.plan")
