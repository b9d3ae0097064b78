"""pymavlink fetches the simulated PX4's whole parameter list (PX4's table, sim/data/sih-quadx.tsv), then reads
by name and by index and sets an INT32 (bytewise) and a REAL32, as QGroundControl does.

Usage: sim_params.py PORT SYSID. One event per check.
"""

import struct
import sys

from sim_client import Client, Timeout, M


def int_of(m):
    return struct.unpack("<i", struct.pack("<f", m.param_value))[0]


def main():
    port, sysid = int(sys.argv[1]), int(sys.argv[2])
    c = Client(port, sysid, wall_timeout_s=90.0)
    values = []
    orig = c._on

    def on(m):
        if m.get_srcSystem() == sysid and m.get_type() == "PARAM_VALUE":
            values.append(m)
        orig(m)

    c._on = on
    code = 0
    try:
        c.emit("listening")
        c.connect()

        def wait_value(what, pred, sim_s=3.0):
            start = len(values)
            found = []

            def got():
                for m in values[start:]:
                    if pred(m):
                        found.append(m)
                        return True
                return False

            c.wait(got, sim_s, what)
            return found[0]

        # The whole list: every index once, param_count the same in each.
        start = len(values)
        with c.lock:
            c.mav.mav.param_request_list_send(sysid, 1)
        by_index = {}
        counts = set()

        hashes = []

        def complete():
            for m in values[start:]:
                if m.param_index == 65535:
                    # PX4's _HASH_CHECK (index -1), ahead of the list: not a parameter.
                    if m not in hashes:
                        hashes.append(m)
                    continue
                by_index[m.param_index] = m
                counts.add(m.param_count)
            return counts and len(by_index) >= max(counts)

        c.wait(complete, 30.0, "the whole parameter list")
        names = [by_index[i].param_id for i in sorted(by_index)]
        first = values[start] if len(values) > start else None
        c.emit("param_list", count=sorted(counts), received=len(by_index),
               indices=sorted(by_index)[:1] + sorted(by_index)[-1:], names=names,
               types={m.param_id: m.param_type for m in by_index.values()},
               values={m.param_id: (int_of(m) if m.param_type == M.MAV_PARAM_TYPE_INT32
                                    else m.param_value) for m in by_index.values()},
               hash=[{"name": h.param_id, "type": h.param_type, "count": h.param_count}
                     for h in hashes],
               first=first.param_id if first else None)

        # Read by name and by index.
        for name in ("NAV_RCL_ACT", "GF_ACTION", "BAT_LOW_THR", "NAV_DLL_ACT"):
            with c.lock:
                c.mav.mav.param_request_read_send(sysid, 1, name.encode(), -1)
            m = wait_value(name, lambda m, n=name: m.param_id == n)
            v = int_of(m) if m.param_type == M.MAV_PARAM_TYPE_INT32 else m.param_value
            c.emit("param_read", name=name, type=m.param_type, value=v, index=m.param_index)
        with c.lock:
            c.mav.mav.param_request_read_send(sysid, 1, b"", 7)
        m = wait_value("index 7", lambda m: m.param_index == 7)
        c.emit("param_by_index", index=7, name=m.param_id)

        # Sets of the right type: echoed with the new value, and read back.
        c.param_set("GF_ACTION", 3, int32=True)
        m = wait_value("GF_ACTION set", lambda m: m.param_id == "GF_ACTION")
        c.emit("param_set", name="GF_ACTION", type=m.param_type, value=int_of(m))
        c.param_set("BAT_LOW_THR", 0.2)
        m = wait_value("BAT_LOW_THR set", lambda m: m.param_id == "BAT_LOW_THR")
        c.emit("param_set", name="BAT_LOW_THR", type=m.param_type, value=m.param_value)
        with c.lock:
            c.mav.mav.param_request_read_send(sysid, 1, b"GF_ACTION", -1)
        m = wait_value("GF_ACTION read back", lambda m: m.param_id == "GF_ACTION")
        c.emit("param_readback", name="GF_ACTION", value=int_of(m))
        c.emit("done")
    except Timeout as e:
        c.emit("timeout", what=str(e))
        code = 1
    finally:
        c.close()
    sys.exit(code)


if __name__ == "__main__":
    main()
