"""Mission protocol and a 3-item mission flight against nexus' simulated PX4.

Usage: sim_mission.py PORT SYSID. Prints JSON events; tests/tests/sim_mission.rs asserts them.
The expected opaque_id is computed here, independently, with PX4's algorithm
(`crc32_for_mission_item`: NuttX crc32part, no inversions, over frame/command/autocontinue and
the seven params as they travel, x/y as their int32 bits).
"""

import struct
import zlib

from sim_client import M, main_wrapper, mission_item, upload


def px4_crc(items, legacy_first=False):
    state = 0
    for i, it in enumerate(items):
        if legacy_first and i == 0:
            # MISSION_ITEM: frame 3, x/y as float degrees; the CRC sees those bits.
            raw = struct.pack("<BHB", M.MAV_FRAME_GLOBAL_RELATIVE_ALT, it["command"], it["autocontinue"])
            raw += struct.pack("<4f", *it["p"]) + struct.pack("<fff", it["x"] / 1e7, it["y"] / 1e7, it["z"])
        else:
            raw = struct.pack("<BHB", it["frame"], it["command"], it["autocontinue"])
            raw += struct.pack("<4f", *it["p"]) + struct.pack("<iif", it["x"], it["y"], it["z"])
        # crc32part(raw, state) == ~zlib.crc32(raw, ~state)
        state = (~zlib.crc32(raw, (~state) & 0xFFFFFFFF)) & 0xFFFFFFFF
    return state


def scenario(c, _args):
    c.connect()
    c.wait(lambda: c.prearm_ok(), 10, "armable")
    c.emit("armable")
    items = [
        mission_item(c, 0, M.MAV_CMD_NAV_TAKEOFF, 0.0, 0.0, 10.0),
        mission_item(c, 1, M.MAV_CMD_NAV_WAYPOINT, 20.0, 0.0, 10.0),
        mission_item(c, 2, M.MAV_CMD_NAV_WAYPOINT, 20.0, 15.0, 10.0),
    ]
    c.emit("expected_crc", crc=px4_crc(items), legacy=px4_crc(items, legacy_first=True))

    # An unanswered upload: retries, then "Operation timeout" and no ACK.
    c.emit("count_unanswered")
    with c.lock:
        c.mav.mav.mission_count_send(c.sysid, 1, 2, 0)
    c.wait(lambda: c.has_text("Operation timeout"), 8, "operation timeout")
    c.run_for(0.5)

    c.emit("upload_legacy")
    upload(c, items, legacy_first=True)
    c.run_for(1.2)
    c.emit("upload_1")
    upload(c, items)
    c.run_for(1.2)

    c.emit("start")
    c.set_mode("Mission")
    c.wait(lambda: c.mode() == "Mission", 3, "Mission mode")
    c.run_for(1.2)
    c.arm()
    c.wait(lambda: c.has_text("Mission finished, loitering"), 90, "mission finished")
    c.wait(lambda: c.mode() == "Hold", 3, "Hold after mission")
    c.run_for(12.0)

    c.emit("rtl")
    c.send_long(M.MAV_CMD_NAV_RETURN_TO_LAUNCH)
    c.wait(lambda: not c.armed(), 120, "RTL landed")
    c.run_for(2.0)

    c.emit("reupload")
    upload(c, items)
    c.run_for(1.2)
    c.emit("set_current_0")
    with c.lock:
        c.mav.mav.mission_set_current_send(c.sysid, 1, 0)
    c.run_for(1.2)

    c.emit("download")
    with c.lock:
        c.mav.mav.mission_request_list_send(c.sysid, 1, 0)
    c.wait(lambda: any(e["ev"] == "mission_count" for e in c.events), 2, "download count")
    c.run_for(0.5)


if __name__ == "__main__":
    main_wrapper(scenario)
