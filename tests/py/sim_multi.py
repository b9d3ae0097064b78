"""Several simulated vehicles at once: each client sees only its own vehicle.

Usage: sim_multi.py BASE_PORT BASE_SYSID COUNT. Odd instances take off (each to its own
altitude, 3 + instance m), even ones stay on the ground. Emits one "vehicle" event per instance.
"""

import sys
import time

from sim_client import Client, Timeout


def main():
    base_port, base_sysid, n = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    cs = [Client(base_port + i, base_sysid + i, wall_timeout_s=150.0) for i in range(n)]
    code = 0
    try:
        def pump_all(secs):
            end = time.monotonic() + secs
            while time.monotonic() < end:
                for c in cs:
                    c.pump(0.0)
                time.sleep(0.005)

        deadline = time.monotonic() + 60
        while not all(c.prearm_ok() for c in cs):
            pump_all(0.2)
            if time.monotonic() > deadline:
                raise Timeout("not all armable")
        for i, c in enumerate(cs):
            if i % 2 == 1:
                c.param_set("MIS_TAKEOFF_ALT", 3.0 + i)
                c.set_mode("Takeoff")
        pump_all(1.5)
        for i, c in enumerate(cs):
            if i % 2 == 1:
                c.arm()
        deadline = time.monotonic() + 60
        while not all(c.mode() == "Hold" and c.armed() for i, c in enumerate(cs) if i % 2 == 1):
            pump_all(0.2)
            if time.monotonic() > deadline:
                raise Timeout("odd vehicles did not reach Hold")
        pump_all(4.0)
        for i, c in enumerate(cs):
            c.emit("vehicle", index=i, sysid=c.hb.get_srcSystem(), foreign=c.foreign,
                   armed=c.armed(), mode=c.mode(), rel_alt=c.lpos.z * -1.0 if c.lpos else None,
                   heartbeats=c.counts.get("HEARTBEAT", 0))
        cs[0].emit("done")
    except Timeout as e:
        cs[0].emit("timeout", what=str(e))
        code = 1
    finally:
        for c in cs:
            c.close()
    sys.exit(code)


if __name__ == "__main__":
    main()
