"""An independent MAVLink client (pymavlink) for end-to-end tests of nexus' simulated PX4.

It behaves like a GCS on PX4's offboard link: listens on UDP 14540+N (``udpin``), speaks
first to the vehicle's 14580+N (PX4 above instance 9 sends elsewhere until a client does),
replies to the vehicle's address, heartbeats as a GCS at 1 Hz, and records what PX4 says as a stream of
JSON events on stdout, each stamped with the vehicle's clock (``t_ms``, from time_boot_ms).
The Rust tests in ``tests/tests/sim_*.rs`` run the scenarios and assert the event sequences.

Events: ``mode``, ``armed``, ``landed``, ``status``, ``ack``, ``text`` (chunks reassembled,
trailing tab stripped), ``mission_current``, ``reached``, ``mission_ack``, ``request``,
``param``, plus scenario-specific ones. Stdout carries nothing else.
"""

import json
import math
import os
import struct
import sys
import threading
import time

os.environ.setdefault("MAVLINK20", "1")
from pymavlink import mavutil  # noqa: E402

M = mavutil.mavlink

MODES = {
    "Manual": (1, 0), "Altitude": (2, 0), "Position": (3, 0), "Acro": (5, 0),
    "Offboard": (6, 0), "Stabilized": (7, 0), "Takeoff": (4, 2), "Hold": (4, 3),
    "Mission": (4, 4), "RTL": (4, 5), "Land": (4, 6),
}
NAMES = {v: k for k, v in MODES.items()}
EARTH_R = 6371000.0


def mode_name(custom_mode):
    main = (custom_mode >> 16) & 0xFF
    sub = (custom_mode >> 24) & 0xFF
    if main != 4 and (main, 0) in NAMES:
        return NAMES[(main, 0)]
    return NAMES.get((main, sub), f"main={main},sub={sub}")


class Timeout(Exception):
    pass


def raw_payload(m, length):
    """The message's payload bytes, zero-extended to `length` (MAVLink 2 truncates zeros).

    pymavlink's bundled dialect predates some extension fields (MISSION_ACK/MISSION_COUNT
    opaque_id), so those are read from the bytes."""
    buf = bytes(m.get_msgbuf())
    hl = 10 if buf[0] == 0xFD else 6
    p = buf[hl:hl + buf[1]]
    return p + b"\0" * max(0, length - len(p))


def speak_first(mav, addr):
    """Make a pymavlink ``udpin`` connection send to `addr` before it has heard anyone."""
    if hasattr(mav, "clients"):  # pymavlink 2.4.4x: a udpin link sends to every known client
        mav.clients.add(addr)
        mav.clients_last_alive[addr] = time.time()
    else:  # older pymavlink: replies go to the last sender
        mav.last_address = addr


class Client:
    def __init__(self, port, sysid, wall_timeout_s=120.0, source_component=190, vehicle_port=None):
        self.port = port
        self.sysid = sysid
        self.mav = mavutil.mavlink_connection(
            f"udpin:127.0.0.1:{port}", source_system=255, source_component=source_component
        )
        # Speak first: PX4 above instance 9 sends to 14549 until a client speaks to its
        # 14580+N (PX4's vehicle port is the client's port + 40), then latches that client.
        speak_first(self.mav, ("127.0.0.1", port + 40 if vehicle_port is None else vehicle_port))
        self.lock = threading.Lock()
        self.t_ms = 0
        self.hb = None
        self.landed = None
        self.status = None
        self.gpos = None
        self.lpos = None
        self.partial = {}
        self.texts = []
        self.counts = {}
        self.events = []
        self.requests = []
        self.last_msg_wall = None
        self.foreign = 0
        self.deadline_wall = time.monotonic() + wall_timeout_s
        self._stop = False
        self._hb_thread = threading.Thread(target=self._heartbeats, daemon=True)
        self._hb_thread.start()
        self.emit("listening", port=port)

    # -- output -------------------------------------------------------------------------------
    def emit(self, ev, **kw):
        rec = {"t_ms": self.t_ms, "ev": ev}
        rec.update(kw)
        self.events.append(rec)
        print(json.dumps(rec), flush=True)

    # -- link ---------------------------------------------------------------------------------
    def _heartbeats(self):
        while not self._stop:
            with self.lock:
                try:
                    self.mav.mav.heartbeat_send(M.MAV_TYPE_GCS, M.MAV_AUTOPILOT_INVALID, 0, 0, M.MAV_STATE_ACTIVE)
                except OSError:
                    pass
            # 1 Hz of *sim* time even at a 5x speed factor (PX4 times the GCS out after 3 s).
            time.sleep(0.2)

    def close(self):
        self._stop = True
        self.mav.close()

    def pump(self, timeout=0.05):
        """Read and record every message available (waits up to `timeout` for the first)."""
        # recv_match(timeout=0) may return before reading anything: poll without blocking then.
        if timeout > 0:
            m = self.mav.recv_match(blocking=True, timeout=timeout)
        else:
            m = self.mav.recv_match(blocking=False)
        while m is not None:
            self._on(m)
            m = self.mav.recv_match(blocking=False)
        if time.monotonic() > self.deadline_wall:
            raise Timeout("wall-clock budget exhausted")

    def _on(self, m):
        t = m.get_type()
        if t == "BAD_DATA":
            self.counts["BAD_DATA"] = self.counts.get("BAD_DATA", 0) + 1
            return
        if t.startswith("UNKNOWN_"):
            # Not in pymavlink's dialect (PX4 streams LINK_NODE_STATUS, TIME_ESTIMATE_TO_TARGET,
            # …): pymavlink keeps no header for those (source 0), so they say nothing of who sent
            # them.
            self.counts[t] = self.counts.get(t, 0) + 1
            return
        if m.get_srcSystem() != self.sysid:
            self.foreign += 1
            return
        self.last_msg_wall = time.monotonic()
        self.counts[t] = self.counts.get(t, 0) + 1
        if hasattr(m, "time_boot_ms") and t in ("SYSTEM_TIME", "ATTITUDE", "GLOBAL_POSITION_INT", "LOCAL_POSITION_NED"):
            self.t_ms = m.time_boot_ms
        if t == "HEARTBEAT":
            if m.get_srcComponent() != 1:
                return
            prev = self.hb
            self.hb = m
            mode = mode_name(m.custom_mode)
            armed = bool(m.base_mode & 0x80)
            if prev is None or mode_name(prev.custom_mode) != mode:
                self.emit("mode", mode=mode, base_mode=m.base_mode)
            if prev is None or bool(prev.base_mode & 0x80) != armed:
                self.emit("armed", armed=armed)
            if prev is None or prev.system_status != m.system_status:
                self.emit("status", status=m.system_status)
        elif t == "EXTENDED_SYS_STATE":
            if m.landed_state != self.landed:
                self.landed = m.landed_state
                self.emit("landed", state=m.landed_state)
        elif t == "COMMAND_ACK":
            if m.target_system == 255:
                self.emit("ack", cmd=m.command, result=m.result)
        elif t == "COMMAND_LONG":
            # PX4's own gimbal/camera commands: addressed to itself, never to us.
            self.emit("foreign_command", cmd=m.command, target=m.target_system)
        elif t == "STATUSTEXT":
            raw = m.text if isinstance(m.text, str) else m.text.decode("utf-8", "replace")
            key = m.id
            # A chunk of exactly 50 has no terminator: a text in progress under another id is
            # complete once a new id shows up.
            for other in [k for k in self.partial if k != key]:
                self._complete(other)
            sev, acc, n = self.partial.get(key, (m.severity, "", 0))
            self.partial[key] = (sev, acc + raw, n + 1)
            if len(raw) < 50:
                self._complete(key)
        elif t == "GLOBAL_POSITION_INT":
            self.gpos = m
        elif t == "LOCAL_POSITION_NED":
            self.lpos = m
        elif t == "MISSION_CURRENT":
            key = (m.seq, m.total, m.mission_state)
            if getattr(self, "_mc", None) != key:
                self._mc = key
                self.emit("mission_current", seq=m.seq, total=m.total, state=m.mission_state)
        elif t == "MISSION_ITEM_REACHED":
            self.emit("reached", seq=m.seq)
        elif t == "MISSION_ACK":
            opaque = struct.unpack_from("<I", raw_payload(m, 8), 4)[0]
            self.emit("mission_ack", result=m.type, opaque=opaque)
        elif t in ("MISSION_REQUEST_INT", "MISSION_REQUEST"):
            self.requests.append((t, m.seq))
            self.emit("request", seq=m.seq, int=(t == "MISSION_REQUEST_INT"))
        elif t == "MISSION_COUNT":
            opaque = struct.unpack_from("<I", raw_payload(m, 9), 5)[0]
            self.emit("mission_count", count=m.count, opaque=opaque)
        elif t == "PARAM_VALUE":
            # An INT32's bits can read as NaN (e.g. -1): JSON has no NaN, so such a value is null;
            # `bits` always carries it.
            value = m.param_value if math.isfinite(m.param_value) else None
            self.emit("param", name=m.param_id, value=value, type=m.param_type,
                      bits=struct.unpack("<I", struct.pack("<f", m.param_value))[0])

    def _complete(self, key):
        sev, acc, n = self.partial.pop(key)
        txt = acc.rstrip("\t")
        self.texts.append(txt)
        self.emit("text", sev=sev, text=txt, id=key, chunks=n)

    def flush_texts(self):
        for k in list(self.partial):
            self._complete(k)

    def wait(self, pred, sim_s, what):
        """Pump until pred() holds; `sim_s` seconds of vehicle time at most."""
        start = self.t_ms
        while not pred():
            self.pump()
            if self.t_ms - start > sim_s * 1000:
                raise Timeout(f"{what}: not within {sim_s} s of sim time")

    def run_for(self, sim_s):
        start = self.t_ms
        while self.t_ms - start < sim_s * 1000:
            self.pump()

    # -- commands -----------------------------------------------------------------------------
    def send_long(self, cmd, *p):
        p = list(p) + [0.0] * (7 - len(p))
        with self.lock:
            self.mav.mav.command_long_send(self.sysid, 1, cmd, 0, *p)

    def send_int(self, cmd, frame, p1, p2, p3, p4, x, y, z):
        with self.lock:
            self.mav.mav.command_int_send(self.sysid, 1, frame, cmd, 0, 0, p1, p2, p3, p4, x, y, z)

    def set_mode(self, name):
        main, sub = MODES[name]
        self.send_long(M.MAV_CMD_DO_SET_MODE, 1.0, float(main), float(sub))

    def arm(self, force=False):
        self.send_long(M.MAV_CMD_COMPONENT_ARM_DISARM, 1.0, 21196.0 if force else 0.0)

    def param_set(self, name, value, int32=False):
        if int32:
            bits = struct.unpack("<f", struct.pack("<i", int(value)))[0]
            ty = M.MAV_PARAM_TYPE_INT32
        else:
            bits = float(value)
            ty = M.MAV_PARAM_TYPE_REAL32
        with self.lock:
            self.mav.mav.param_set_send(self.sysid, 1, name.encode(), bits, ty)

    def manual_control(self, x=0, y=0, z=500, r=0):
        with self.lock:
            self.mav.mav.manual_control_send(self.sysid, x, y, z, r, 0)

    # -- state --------------------------------------------------------------------------------
    def mode(self):
        return mode_name(self.hb.custom_mode) if self.hb else None

    def armed(self):
        return bool(self.hb and self.hb.base_mode & 0x80)

    def prearm_ok(self):
        return bool(self.hb and self.hb.system_status == M.MAV_STATE_STANDBY)

    def has_text(self, s):
        return s in self.texts

    def acks(self, cmd):
        return [e["result"] for e in self.events if e["ev"] == "ack" and e["cmd"] == cmd]

    def offset_latlon(self, north_m, east_m):
        lat0 = self.gpos.lat / 1e7
        lon0 = self.gpos.lon / 1e7
        lat = lat0 + math.degrees(north_m / EARTH_R)
        lon = lon0 + math.degrees(east_m / (EARTH_R * math.cos(math.radians(lat0))))
        return int(round(lat * 1e7)), int(round(lon * 1e7))

    def connect(self):
        # Before the first heartbeat there is no clock: bound by wall time only. The event's
        # t_ms is the vehicle clock of the first timestamped message after it.
        while self.hb is None:
            self.pump(0.2)
        while self.t_ms == 0:
            self.pump(0.2)
        self.emit("connected")


def mission_item(c, seq, cmd, north_m, east_m, rel_alt, frame=None):
    lat, lon = c.offset_latlon(north_m, east_m)
    return dict(seq=seq, frame=M.MAV_FRAME_GLOBAL_RELATIVE_ALT_INT if frame is None else frame,
                command=cmd, current=0, autocontinue=1, p=(0.0, 0.0, 0.0, float("nan")),
                x=lat, y=lon, z=float(rel_alt))


def send_item(c, it, legacy=False):
    with c.lock:
        if legacy:
            c.mav.mav.mission_item_send(c.sysid, 1, it["seq"], M.MAV_FRAME_GLOBAL_RELATIVE_ALT, it["command"],
                                        it["current"], it["autocontinue"], *it["p"],
                                        it["x"] / 1e7, it["y"] / 1e7, it["z"], 0)
        else:
            c.mav.mav.mission_item_int_send(c.sysid, 1, it["seq"], it["frame"], it["command"],
                                            it["current"], it["autocontinue"], *it["p"],
                                            it["x"], it["y"], it["z"], 0)


def upload(c, items, legacy_first=False, sim_s=10.0):
    """MISSION_COUNT, answer each request, wait for the ACK; returns the ACK event."""
    start = len(c.events)
    with c.lock:
        c.mav.mav.mission_count_send(c.sysid, 1, len(items), 0)
    answered = start
    first = True
    t0 = c.t_ms
    while True:
        c.pump()
        for e in c.events[answered:]:
            answered += 1
            if e["ev"] == "request":
                send_item(c, items[e["seq"]], legacy=legacy_first and first)
                first = False
            elif e["ev"] == "mission_ack":
                return e
        if c.t_ms - t0 > sim_s * 1000:
            raise Timeout("mission upload")


def main_wrapper(fn):
    """Run a scenario: argv = port sysid; exit 0 with a final 'done' event, 1 on timeout."""
    port = int(sys.argv[1])
    sysid = int(sys.argv[2])
    c = Client(port, sysid)
    try:
        fn(c, sys.argv[3:])
        c.emit("done")
        code = 0
    except Timeout as e:
        c.emit("timeout", what=str(e))
        code = 1
    finally:
        c.close()
    sys.exit(code)
