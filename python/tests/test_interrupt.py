"""Ctrl-C during a wait: SIGINT to a Python process in a wait raises KeyboardInterrupt within
about a second, and the process leaves no vehicle behind."""

import os
import signal
import socket
import subprocess
import sys
import textwrap
import time

import pytest

SCRIPT = textwrap.dedent(
    """
    import sys
    import nexus_uav as nx
    from nexus_uav.px4 import OffboardClient

    kind = sys.argv[1]
    with nx.Sim(instance=95, speed=10.0) as sim:
        sim.start()
        with OffboardClient.connect(sim, 10.0) as op:
            print("waiting", flush=True)
            try:
                if kind == "engine":
                    sim.wait("armed", timeout_s=3600.0)
                elif kind == "steps":
                    sim.run_steps([{"until": "armed", "timeout_s": 3600.0}])
                else:
                    sim.wait_until(lambda: False, sim_timeout=3600.0)
            except KeyboardInterrupt:
                print("interrupted", flush=True)
                raise
    """
)


@pytest.mark.parametrize("kind", ["engine", "predicate", "steps"])
def test_ctrl_c_during_a_wait(kind):
    p = subprocess.Popen(
        [sys.executable, "-c", SCRIPT, kind],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert p.stdout.readline().strip() == "waiting"
        time.sleep(0.5)  # well inside the wait
        t0 = time.monotonic()
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=10)
        took = time.monotonic() - t0
    finally:
        if p.poll() is None:
            p.kill()
    assert "interrupted" in out, (out, err)
    assert "KeyboardInterrupt" in err, err
    assert p.returncode != 0
    assert took < 1.5, took
    # Nothing is left holding the vehicle's ports (offboard 14635, the vehicle's 14675).
    for port in (14635, 14675):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            s.bind(("127.0.0.1", port))
        finally:
            s.close()
