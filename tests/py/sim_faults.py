"""Observe an injected fault the way a client would: SCENARIO is one of stall, silence,
garbage, refuse, exit.

Usage: sim_faults.py PORT SYSID SCENARIO. The Rust test waits for the "ready" event, injects
the fault through the sim handle, then writes "go" on stdin; this script observes and reports.
"""

import sys
import time

from sim_client import main_wrapper


def wall(c, secs):
    end = time.monotonic() + secs
    while time.monotonic() < end:
        c.pump(0.05)


def scenario(c, args):
    kind = args[0]
    c.connect()
    c.wait(lambda: c.prearm_ok(), 10, "armable")
    c.emit("ready")
    if sys.stdin.readline().strip() != "go":
        raise SystemExit(2)
    wall(c, 0.3)  # let the fault take hold
    before = dict(c.counts)
    t_before = c.t_ms
    if kind == "refuse":
        c.arm()
        wall(c, 1.5)
    else:
        wall(c, 2.5)
    c.flush_texts()
    delta = {k: c.counts.get(k, 0) - before.get(k, 0) for k in set(c.counts) | set(before)}
    c.emit("observed", delta=delta, clock_advanced_ms=c.t_ms - t_before,
           armed=c.armed(), acks=c.acks(400), texts=c.texts[-3:])


if __name__ == "__main__":
    main_wrapper(scenario)
