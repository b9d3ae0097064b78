#!/usr/bin/env python3
"""An independent autopilot for conformance tests: MAVSDK's library (PyPI `mavsdk` >= 4, the
in-process C++ core through ctypes) configured as an AUTOPILOT component, with its server plugins
answering our client: ParamServer (PARAM_SET / PARAM_REQUEST_READ), MissionRawServer (the mission
upload handshake, MISSION_SET_CURRENT), ActionServer (COMPONENT_ARM_DISARM, DO_SET_MODE with PX4's
custom modes) and TelemetryServer (GLOBAL_POSITION_INT, so the client finds a position to arm on).

    mavsdk_autopilot.py PORT [TIMEOUT_S]

MAVSDK sends to udp 127.0.0.1:PORT, where the Rust test's OffboardClient listens (udpin), and
reads the client's replies on the same socket. Every server callback is printed as one JSON line
on stdout ({"ev": ...}); "ready" once the plugins are up. The script ends when its stdin closes
(the test is done or died) or after TIMEOUT_S (default 120), printing {"ev": "timeout"}.

What MAVSDK 4.1 does that the test relies on or checks (measured):
  * HEARTBEAT type 0 / autopilot 0 (generic), custom_mode in PX4's main<<16|sub<<24 once a mode
    was set, base_mode bit 0x80 while armed;
  * DO_SET_MODE: ACCEPTED for the modes AllowableFlightModes permits (Takeoff, Hold, Mission, RTL,
    Land, Offboard, Manual, Stabilized), TEMPORARILY_REJECTED for Altitude and Acro;
  * no COMMAND_ACK at all for DO_REPOSITION, NAV_LAND, NAV_RETURN_TO_LAUNCH; no answer to
    MISSION_REQUEST_LIST (this server only receives missions); PARAM_ERROR (not PARAM_VALUE)
    for an unknown parameter.
"""

import json
import os
import sys
import threading
import time

from mavsdk import ComponentType, Configuration, Mavsdk, log_subscribe
from mavsdk.plugins.action_server import ActionServer, AllowableFlightModes
from mavsdk.plugins.mission_raw_server import MissionRawServer
from mavsdk.plugins.param_server import ParamServer
from mavsdk.plugins.telemetry_server import Heading, Position, TelemetryServer, VelocityNed

HOME = (47.397742, 8.545594, 488.0)  # PX4 SITL's default home

_out = threading.Lock()


def emit(ev, **kw):
    kw["ev"] = ev
    with _out:
        sys.stdout.write(json.dumps(kw) + "\n")
        sys.stdout.flush()


def name_of(enum_value):
    return getattr(enum_value, "name", str(enum_value))


def to_stderr(level, message, file, line):
    # MAVSDK's own log goes to stderr: stdout carries the JSON events only.
    sys.stderr.write(f"[mavsdk {getattr(level, 'name', level)}] {message}\n")
    return True


def main():
    log_subscribe(to_stderr)
    port = int(sys.argv[1])
    timeout_s = float(sys.argv[2]) if len(sys.argv) > 2 else 120.0

    cfg = Configuration.create_with_component_type(ComponentType.AUTOPILOT)
    mavsdk = Mavsdk(cfg)
    mavsdk.add_any_connection(f"udpout://127.0.0.1:{port}")
    component = mavsdk.server_component()

    params = ParamServer(component)
    params.provide_param_int("COM_RC_IN_MODE", 1)
    params.provide_param_float("MIS_TAKEOFF_ALT", 2.5)

    missions = MissionRawServer(component)
    actions = ActionServer(component)
    actions.set_armable(True, True)
    actions.set_disarmable(True, True)
    actions.set_allow_takeoff(True)
    actions.set_allowable_flight_modes(AllowableFlightModes(True, True, True, True, True, True, True))
    telemetry = TelemetryServer(component)

    def on_int(p, _ud=None):
        emit("param_int", name=p.name, value=p.value)

    def on_float(p, _ud=None):
        emit("param_float", name=p.name, value=p.value)

    def on_mission(result, plan, _ud=None):
        items = [
            {
                "seq": it.seq,
                "frame": it.frame,
                "command": it.command,
                "current": it.current,
                "autocontinue": it.autocontinue,
                "x": it.x,
                "y": it.y,
                "z": it.z,
                "mission_type": it.mission_type,
            }
            for it in (plan.mission_items if plan is not None else [])
        ]
        emit("mission", result=name_of(result), items=items)

    def on_current(item, _ud=None):
        emit("current_item", seq=item.seq)

    def on_clear(kind, _ud=None):
        emit("mission_clear", kind=kind)

    def on_arm(result, arm, _ud=None):
        emit("arm", result=name_of(result), arm=bool(arm.arm), force=bool(arm.force))

    def on_mode(result, mode, _ud=None):
        emit("mode", result=name_of(result), mode=name_of(mode))

    params.subscribe_changed_param_int(on_int)
    params.subscribe_changed_param_float(on_float)
    missions.subscribe_incoming_mission(on_mission)
    missions.subscribe_current_item_changed(on_current)
    missions.subscribe_clear_all(on_clear)
    actions.subscribe_arm_disarm(on_arm)
    actions.subscribe_flight_mode_change(on_mode)

    stop = threading.Event()

    def publish():
        # A position estimate at 10 Hz, as an autopilot streams it: the client arms only
        # once it has one.
        while not stop.is_set():
            telemetry.publish_position(
                Position(HOME[0], HOME[1], HOME[2], 0.0), VelocityNed(0.0, 0.0, 0.0), Heading(0.0)
            )
            time.sleep(0.1)

    threading.Thread(target=publish, daemon=True).start()

    def watch_stdin():
        # The test closes our stdin (or dies): stop.
        try:
            sys.stdin.read()
        finally:
            stop.set()

    threading.Thread(target=watch_stdin, daemon=True).start()
    emit("ready", mavsdk=mavsdk.version(), pid=os.getpid(), port=port)

    if not stop.wait(timeout_s):
        emit("timeout", what=f"no end of stdin within {timeout_s} s")
    stop.set()
    mavsdk.destroy()


if __name__ == "__main__":
    main()
