"""pymavlink against the simulated PX4: the messages, commands and parameter answers that
real PX4 gives (docs/px4-wire.md §Parameters, §Commands, §Streams), one event per check.

Usage: sim_conformance.py PORT SYSID. Ends by asking for a shutdown: the vehicle acks and exits.
"""

import struct
import sys
import time

from sim_client import Client, Timeout, M


def main():
    port, sysid = int(sys.argv[1]), int(sys.argv[2])
    c = Client(port, sysid, wall_timeout_s=90.0)
    seen = []
    orig = c._on

    def on(m):
        if m.get_srcSystem() == sysid:
            seen.append(m)
        orig(m)

    c._on = on
    code = 0
    try:
        c.emit("listening")
        c.connect()

        def wait_msg(kind, what, pred=lambda m: True, sim_s=3.0):
            start = len(seen)
            found = []

            def got():
                for m in seen[start:]:
                    if m.get_type() == kind and pred(m):
                        found.append(m)
                        return True
                return False

            c.wait(got, sim_s, what)
            return found[0]

        # Parameters: PX4's multicopter defaults, unknown name and wrong type answered at once.
        for name in ("RTL_RETURN_ALT", "RTL_DESCEND_ALT", "MPC_YAWRAUTO_MAX"):
            with c.lock:
                c.mav.mav.param_request_read_send(sysid, 1, name.encode(), -1)
            m = wait_msg("PARAM_VALUE", name, lambda m, n=name: m.param_id == n)
            c.emit("param_default", name=name, value=m.param_value, type=m.param_type)
        t0 = time.monotonic()
        with c.lock:
            c.mav.mav.param_request_read_send(sysid, 1, b"NO_SUCH_PARAM", -1)
        m = wait_msg("PARAM_ERROR", "PARAM_ERROR for an unknown name")
        c.emit("param_error", op="read", name=m.param_id, error=m.error,
               wall_ms=(time.monotonic() - t0) * 1000)
        c.param_set("COM_RC_IN_MODE", 1.0)  # INT32 set as REAL32
        m = wait_msg("PARAM_ERROR", "PARAM_ERROR for a wrong type")
        c.emit("param_error", op="set", name=m.param_id, error=m.error)
        # TIMESYNC: a request answered with our ts1; PX4's own requests stream.
        with c.lock:
            c.mav.mav.timesync_send(0, 987654321)
        m = wait_msg("TIMESYNC", "TIMESYNC answer", lambda m: m.tc1 != 0)
        c.emit("timesync", tc1=m.tc1, ts1=m.ts1)
        # GET_MESSAGE_INTERVAL -> MESSAGE_INTERVAL.
        c.send_long(M.MAV_CMD_GET_MESSAGE_INTERVAL, 33.0)
        m = wait_msg("MESSAGE_INTERVAL", "MESSAGE_INTERVAL")
        c.emit("message_interval", id=m.message_id, interval_us=m.interval_us)
        # REQUEST_MESSAGE FLIGHT_INFORMATION and AUTOPILOT_VERSION.
        c.send_long(M.MAV_CMD_REQUEST_MESSAGE, 264.0)
        m = wait_msg("FLIGHT_INFORMATION", "FLIGHT_INFORMATION")
        c.emit("flight_information", time_boot_ms=m.time_boot_ms)
        c.send_long(M.MAV_CMD_REQUEST_MESSAGE, 148.0)
        m = wait_msg("AUTOPILOT_VERSION", "AUTOPILOT_VERSION")
        c.emit("autopilot_version", sw=m.flight_sw_version, caps=m.capabilities)
        # GPS_GLOBAL_ORIGIN on request; AVAILABLE_MODES (435, not in pymavlink's common
        # dialect: counted by id) for all modes, then one by index; past the end DENIED.
        c.send_long(M.MAV_CMD_REQUEST_MESSAGE, 49.0)
        m = wait_msg("GPS_GLOBAL_ORIGIN", "GPS_GLOBAL_ORIGIN")
        c.emit("gps_origin", lat=m.latitude, lon=m.longitude, alt=m.altitude)
        start = len(seen)
        c.send_long(M.MAV_CMD_REQUEST_MESSAGE, 435.0)
        c.send_long(M.MAV_CMD_REQUEST_MESSAGE, 435.0, 3.0)
        c.send_long(M.MAV_CMD_REQUEST_MESSAGE, 435.0, 200.0)
        c.run_for(0.5)
        modes = [m for m in seen[start:] if m.get_msgId() == 435]
        c.emit("available_modes", count=len(modes), acks=c.acks(512)[-3:])
        # The stream set over 3 s of sim time, by message id.
        start = len(seen)
        c.run_for(3.0)
        ids = {}
        for m in seen[start:]:
            ids[m.get_msgId()] = ids.get(m.get_msgId(), 0) + 1
        c.emit("streams", counts={str(k): v for k, v in ids.items()})
        # Reboot refused; shutdown accepted, then silence.
        c.send_long(M.MAV_CMD_PREFLIGHT_REBOOT_SHUTDOWN, 1.0)
        c.run_for(1.0)
        c.send_long(M.MAV_CMD_PREFLIGHT_REBOOT_SHUTDOWN, 2.0)
        c.run_for(0.3)
        c.emit("acks_246", results=c.acks(246))
        end = time.monotonic() + 3.0
        while time.monotonic() < end:
            c.pump(0.1)
        c.emit("done", silent_s=time.monotonic() - (c.last_msg_wall or 0))
    except Timeout as e:
        c.emit("timeout", what=str(e))
        code = 1
    finally:
        c.close()
    sys.exit(code)


if __name__ == "__main__":
    main()
