"""Boot, early arm refusal, takeoff, reposition and land against nexus' simulated PX4.

Usage: sim_flight.py PORT SYSID. Prints JSON events (see sim_client.py); the Rust test
tests/tests/sim_flight.rs asserts them against docs/px4-wire.md.
"""

import math

from sim_client import M, main_wrapper


def scenario(c, _args):
    c.connect()
    # Too early: PX4 refuses with ACK 1 and a two-chunk CRITICAL text.
    c.arm()
    c.wait(lambda: c.acks(400), 2, "early arm ack")
    c.wait(lambda: c.prearm_ok(), 10, "armable")
    c.emit("armable")

    c.param_set("MIS_TAKEOFF_ALT", 5.0)
    c.wait(lambda: any(e["ev"] == "param" and e["name"] == "MIS_TAKEOFF_ALT" for e in c.events), 2, "param echo")
    c.set_mode("Takeoff")
    c.wait(lambda: c.mode() == "Takeoff", 3, "Takeoff mode")
    c.arm()
    c.emit("arm_sent")
    c.wait(lambda: c.mode() == "Hold" and c.armed(), 30, "takeoff then Hold")
    c.wait(lambda: c.lpos is not None and abs(-c.lpos.z - 5.0) < 0.3, 10, "at 5 m")
    c.emit("at_altitude", z=c.lpos.z)

    # Reposition 15 m north at the current AMSL altitude, yaw NaN (keep).
    x0 = c.lpos.x
    lat, lon = c.offset_latlon(15.0, 0.0)
    alt_amsl = c.gpos.alt / 1000.0
    c.emit("reposition_sent")
    c.send_int(M.MAV_CMD_DO_REPOSITION, M.MAV_FRAME_GLOBAL_INT, -1.0, 1.0, 0.0, math.nan, lat, lon, alt_amsl)
    c.wait(lambda: abs(c.lpos.x - x0 - 15.0) < 0.3, 15, "reposition arrival")
    c.emit("arrived", dx=c.lpos.x - x0, z=c.lpos.z, mode=c.mode())
    # PX4's error results for the wrong frame and param2.
    c.send_int(M.MAV_CMD_DO_REPOSITION, M.MAV_FRAME_GLOBAL_RELATIVE_ALT_INT, -1.0, 1.0, 0.0, math.nan, lat, lon, 5.0)
    c.send_int(M.MAV_CMD_DO_REPOSITION, M.MAV_FRAME_GLOBAL_INT, -1.0, 0.0, 0.0, math.nan, lat, lon, alt_amsl)
    c.run_for(1.0)

    c.emit("land_sent")
    c.set_mode("Land")
    c.wait(lambda: not c.armed(), 40, "landed and disarmed")
    c.run_for(2.0)


if __name__ == "__main__":
    main_wrapper(scenario)
