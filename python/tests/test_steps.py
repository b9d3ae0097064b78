"""Step programs from Python (instance 94): steps shaped like nexus run's [[step]] tables, each
step's WaitResult, on_timeout stop/continue, a guard that stops the program, abort_steps from
another thread, and the errors a bad step gets."""

import threading

import pytest

import nexus_uav as nx
from nexus_uav.px4 import OffboardClient
from conftest import SPEED

TAKEOFF_HOVER_LAND = [
    {"name": "climb", "action": "takeoff", "alt_m": 4.0,
     "until": {"altitude": 3.5, "op": ">=", "hold_s": 1.0}, "timeout_s": 60.0},
    {"name": "hover",
     "until": {"time": 3.0, "guards": ["disarmed", {"altitude": 1.0, "op": "<="}]},
     "timeout_s": 10.0},
    {"name": "over there", "action": "goto", "x_m": 8.0, "y_m": 0.0, "z_m": 4.0,
     "until": "at_target", "timeout_s": 60.0},
    {"name": "down", "action": "land", "until": "landed", "timeout_s": 90.0},
]


@pytest.fixture
def flight():
    with nx.Sim(instance=94, speed=SPEED) as sim:
        sim.start()
        with OffboardClient.connect(sim, 10.0) as op:
            yield sim, op


def test_takeoff_hover_goto_land(flight):
    sim, op = flight
    report = sim.run_steps(TAKEOFF_HOVER_LAND)
    assert report.passed and report.end == "completed", report
    assert report.ended_at is None and report.error is None
    assert len(report.steps) == 4
    assert all(r.reason == "met" for r in report.steps), report.steps
    climb, hover, goto, down = report.steps
    assert climb.snapshot.height_m >= 3.5
    assert 2.9 <= hover.waited_sim_s <= 3.5, hover
    assert down.snapshot.landed == "ON_GROUND"
    assert bool(report)


def test_the_toml_document_shape_and_a_timeout_that_continues(flight):
    sim, op = flight
    doc = {"name": "waits", "step": [
        # Nobody arms it: this one times out after 1 s of sim time and the program goes on.
        {"until": "armed", "timeout_s": 1.0, "on_timeout": "continue"},
        {"action": "param", "param": "MIS_TAKEOFF_ALT", "real": 6.0},
        {"until": {"sim_time": 0.5, "relative": True}, "timeout_s": 5.0},
    ]}
    report = sim.run_steps(doc)
    assert report.end == "completed" and not report.passed, report
    assert [r.reason for r in report.steps] == ["timeout", "met", "met"], report.steps
    assert op.param_get("MIS_TAKEOFF_ALT") == pytest.approx(6.0)


def test_a_timeout_stops_and_a_guard_stops(flight):
    sim, op = flight
    stopped = sim.run_steps([
        {"until": "armed", "timeout_s": 1.0},
        {"action": "takeoff", "alt_m": 3.0, "until": "armed", "timeout_s": 30.0},
    ])
    assert stopped.end == "stopped" and stopped.ended_at == 0, stopped
    assert len(stopped.steps) == 1 and stopped.steps[0].reason == "timeout"
    # Why, as nexus run prints it: nothing asked for an arm.
    assert stopped.steps[0].explanation, stopped.steps[0]
    guarded = sim.run_steps([
        {"action": "takeoff", "alt_m": 5.0,
         "until": {"altitude": 50.0, "guards": [{"altitude": 1.5}]}, "timeout_s": 60.0},
    ])
    assert guarded.end == "stopped" and guarded.steps[0].reason == "guard", guarded
    assert guarded.steps[0].guard == 0
    assert "guard" in guarded.steps[0].explanation, guarded.steps[0]


def test_abort_steps_from_another_thread(flight):
    sim, op = flight
    with pytest.raises(nx.RunError, match="abort_steps"):
        sim.abort_steps()  # nothing is running
    threading.Timer(0.3, sim.abort_steps).start()
    report = sim.run_steps([{"until": {"text": "never said"}, "timeout_s": 3600.0}])
    assert report.end == "aborted" and report.ended_at == 0, report
    assert report.error, report
    assert report.steps[0].reason == "aborted"
    # A wall cap aborts too.
    capped = sim.run_steps([{"until": "armed", "timeout_s": 3600.0}], wait_cap_s=0.2)
    assert capped.end == "aborted", capped


def test_session_runs_steps():
    with nx.Session(instance=94, speed=SPEED) as s:
        report = s.run_steps([{"action": "takeoff", "alt_m": 3.0, "until": "armed",
                               "timeout_s": 30.0}])
        assert report.passed, report
        assert s.wait_until("altitude", 2.0, timeout_s=30.0).reason == "met"


def test_bad_steps(flight):
    sim, op = flight
    cases = [
        ([{"action": "fly"}], ValueError, 'step 1: unknown action "fly"'),
        ([{"action": "upload", "plan": "x.plan"}], ValueError, "upload_mission"),
        ([{"action": "takeoff"}], ValueError, 'needs "alt_m"'),
        ([{"action": "land", "alt_m": 3}], ValueError, 'belongs to "takeoff"'),
        ([{"action": "land", "until": "landed"}], ValueError, 'no "timeout_s"'),
        ([{"action": "land", "timeout_s": 5}], ValueError, "nothing to time out"),
        ([{"until": {"altitude": 3, "mode": "Hold"}, "timeout_s": 5}], ValueError,
         "one condition"),
        ([{"until": {"altitud": 3}, "timeout_s": 5}], ValueError, "unknown key"),
        ([{"until": "hovering", "timeout_s": 5}], ValueError, "unknown condition"),
        ([{"until": {"mode": "Cruise"}, "timeout_s": 5}], ValueError, "Cruise"),
        ([{"until": "armed", "timeout_s": 5, "on_timeout": "retry"}], ValueError,
         "on_timeout"),
        ([{"name": "p", "action": "param", "param": "MIS_TAKEOFF_ALT"}], ValueError,
         r'step 1 \(p\): needs "real"'),
        ([], ValueError, "no steps"),
        ("land", TypeError, "list"),
        ([["land"]], TypeError, "step 1"),
        ([{"action": "none"}] * 100, ValueError, "at most"),
    ]
    for steps, exc, words in cases:
        with pytest.raises(exc, match=words):
            sim.run_steps(steps)


def test_every_condition_the_cli_reads(flight):
    """The conditions beyond the basic table, as nexus run reads them: battery, heading, GPS,
    landed state and distance, on the vehicle standing on its pad."""
    sim, op = flight
    assert sim.wait("time", 3.0, timeout_s=10.0).reason == "met"  # telemetry by now
    assert sim.wait("battery_remaining", 50.0, op=">=", timeout_s=10.0).reason == "met"
    assert sim.wait("battery_voltage", 1.0, timeout_s=10.0).reason == "met"
    assert sim.wait("heading", 360.0, op="<=", timeout_s=10.0).reason == "met"
    assert sim.wait("gps_fix", "3d", timeout_s=10.0).reason == "met"
    assert sim.wait("satellites", 4, timeout_s=10.0).reason == "met"
    assert sim.wait("landed_state", ["ON_GROUND", "LANDING"], timeout_s=10.0).reason == "met"
    # No fix is better than RTK fixed on the simulator: this one runs out.
    assert sim.wait("gps_fix", "rtk_fixed", timeout_s=0.5).reason == "timeout"
    report = sim.run_steps([
        {"until": {"distance": 3.0, "op": "<=", "to": "home"}, "timeout_s": 10.0},
        {"until": {"battery_remaining": 100.0, "op": "<=",
                   "guards": [{"landed_state": "IN_AIR"}]}, "timeout_s": 10.0},
        {"until": {"vtol_state": ["mc", "undefined"]}, "timeout_s": 0.5,
         "on_timeout": "continue"},
    ])
    assert report.end == "completed", report
    assert [r.reason for r in report.steps[:2]] == ["met", "met"], report.steps


def test_bad_extra_conditions(flight):
    sim, op = flight
    cases = [
        ([{"until": "hovering", "timeout_s": 5}], "battery_remaining"),
        ([{"until": {"heading": 400}, "timeout_s": 5}], r"heading.*\[0, 360\]"),
        ([{"until": {"battery_remaining": -1}, "timeout_s": 5}], "battery_remaining"),
        ([{"until": {"gps_fix": "4d"}, "timeout_s": 5}], "gps_fix"),
        ([{"until": {"landed_state": "FLYING"}, "timeout_s": 5}], "ON_GROUND"),
        ([{"until": {"vtol_state": []}, "timeout_s": 5}], "names no state"),
        ([{"until": {"altitude": 3, "to": "home"}, "timeout_s": 5}], "distance"),
        ([{"until": {"distance": 3, "to": "there"}, "timeout_s": 5}], "home"),
        ([{"until": {"landed_state": "ON_GROUND", "op": "<="}, "timeout_s": 5}], "takes no op"),
        ([{"action": "vtol_transition", "to": "fw"}], "not available from Python"),
    ]
    for steps, words in cases:
        with pytest.raises(ValueError, match=words):
            sim.run_steps(steps)
