"""CPU per MAVLink message: a wait on the engine vs the same wait as a pymavlink recv_match loop.

Both wait, on the built-in vehicle in real time (speed 1 by default), for "altitude >= 1000 m",
which never holds, for WALL seconds, while the vehicle streams its telemetry. The engine wait
runs in the Rust pump (the GIL released); the pymavlink loop decodes every message in Python.
Reported: process CPU seconds per message received.

    .venv/bin/python python/bench/wait_cpu.py [WALL_SECONDS] [SPEED]
"""

import resource
import sys
import time

import nexus_uav as nx
from nexus_uav.px4 import OffboardClient

WALL = float(sys.argv[1]) if len(sys.argv) > 1 else 10.0
SPEED = float(sys.argv[2]) if len(sys.argv) > 2 else 1.0
INSTANCE = 90


def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def engine():
    with nx.Sim(instance=INSTANCE, speed=SPEED) as sim:
        sim.start()
        with OffboardClient.connect(sim, 10.0):
            s0 = sim.snapshot()
            c0, t0 = cpu(), time.monotonic()
            r = sim.wait("altitude", 1000.0, timeout_s=WALL * SPEED)
            c1, t1 = cpu(), time.monotonic()
            # Messages: the vehicle's stream rate over the sim seconds waited (measured below).
            return c1 - c0, t1 - t0, r.waited_sim_s, s0


def pymavlink_loop():
    from pymavlink import mavutil

    with nx.Sim(instance=INSTANCE, speed=SPEED) as sim:
        sim.start()
        port = sim.ports["offboard"]["port"]
        mav = mavutil.mavlink_connection(f"udpin:127.0.0.1:{port}", source_system=255, source_component=240)
        # Speak first: PX4 above instance 9 sends to 14549 until a client speaks to its 14580+N.
        vehicle = ("127.0.0.1", sim.ports["offboard"]["px4_port"])
        if hasattr(mav, "clients"):
            mav.clients.add(vehicle)
            mav.clients_last_alive[vehicle] = time.time()
        else:
            mav.last_address = vehicle
        mav.mav.heartbeat_send(6, 8, 0, 0, 0)
        if mav.wait_heartbeat(timeout=10) is None:
            raise SystemExit("no heartbeat from the vehicle")
        n = 0
        c0, t0 = cpu(), time.monotonic()
        deadline = t0 + WALL
        beat = 0.0
        while time.monotonic() < deadline:
            if time.monotonic() - beat >= 1.0:  # a GCS heartbeat, as the engine's client sends
                beat = time.monotonic()
                mav.mav.heartbeat_send(6, 8, 0, 0, 0)
            m = mav.recv_match(blocking=True, timeout=0.05)
            if m is None:
                continue
            n += 1
            if m.get_type() == "GLOBAL_POSITION_INT" and m.relative_alt / 1000.0 >= 1000.0:
                break
        c1, t1 = cpu(), time.monotonic()
        mav.close()
        return c1 - c0, t1 - t0, n


def idle():
    """The built-in vehicle alone (it runs in this process), no client: the CPU both include."""
    with nx.Sim(instance=INSTANCE, speed=SPEED) as sim:
        sim.start()
        c0 = cpu()
        time.sleep(WALL)
        return cpu() - c0


if __name__ == "__main__":
    base = idle()
    pc, pw, n = pymavlink_loop()
    ec, ew, sim_s, _ = engine()
    rate = n / pw
    en = rate * ew
    print(f"speed {SPEED}, {WALL:.0f} s of wall time each, ~{rate:.0f} messages/s from the vehicle")
    print(f"pymavlink recv_match loop: {pc:.3f} s CPU for {n} messages: {pc / n * 1e6:.1f} us/message")
    print(
        f"engine wait (sim.wait):    {ec:.3f} s CPU for ~{en:.0f} messages: {ec / en * 1e6:.1f} us/message "
        f"(whole process: pump thread, the built-in vehicle too)"
    )
    print(
        f"less the vehicle alone ({base:.3f} s CPU): pymavlink {(pc - base) / n * 1e6:.1f} us/message, "
        f"engine {(ec - base) / en * 1e6:.1f} us/message"
    )
