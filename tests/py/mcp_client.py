"""An MCP client (the official MCP Python SDK) against `nexus serve`, for tests/tests/serve_mcp.rs.

    mcp_client.py stdio NEXUS ROOT INSTANCE     # spawns `NEXUS serve --root ROOT` over stdio
    mcp_client.py http URL TOKEN INSTANCE       # a running `nexus serve --http`, its token
    mcp_client.py many NEXUS ROOT FIRST VEHICLE_PORT
    mcp_client.py reaper NEXUS ROOT INSTANCE
    mcp_client.py records NEXUS ROOT FIRST RECORDS

stdio / http fly the built-in vehicle (instance INSTANCE, and INSTANCE + 1 for the kill test):
start, takeoff, waits capped short enough to end `cap`, continued with since_seq (no text
missed), concurrent waits on one session, land, the box mission (ROOT/box.plan: by path over
stdio, inline over HTTP), close; kill_instance during a wait ends it `closed`; bad inputs get
errors and the server keeps serving. With --leave, leaves one session open at the end (the
server must close it).

many: four sessions started by concurrent calls (instances FIRST..FIRST+3) fly at once; step
programs with an upload (TOML by path, JSON inline), their plans confined to ROOT, capped and
continued; the live report resource; a vehicle attached on udpin:127.0.0.1:VEHICLE_PORT that
says it is hardware is refused every verb that arms or moves it.

reaper: a server with --idle-s 1 closes a session left idle; its wait in progress ends `closed`;
the reaped sessions' tlog and HTML report stay readable (from the server's temporary records
directory, whose path it prints as `records dir: PATH`).

records: a server with --records RECORDS --keep-closed 2. A flight (instance FIRST) whose tlog
is listed and readable while it flies; step programs whose failed steps carry their explanation
(the same words as `nexus run` on instance FIRST + 1, and across a capped, continued call);
closed, its tlog (a base64 blob) parses in pymavlink with the vehicle's frames and ours as the
tlog counted, its HTML report has the verdict, the explanation and the timeline; a session
killed during a wait (FIRST + 2) has its wait `closed` in its report; a third closed session
(FIRST + 3, not recorded: no tlog, a report) pushes the first one's files out; one left open (FIRST + 4) is printed as
`left session ID` for the caller to find its report written when the server ended.

Prints one line a check; exits 1 on the first failure.
"""

import asyncio
import base64
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError


def fail(msg):
    print(f"FAIL: {msg}", flush=True)
    sys.exit(1)


def ok(msg):
    print(f"ok: {msg}", flush=True)


async def call(s, name, **args):
    """A tool call that must succeed: its JSON answer."""
    r = await s.call_tool(name, args)
    text = "".join(c.text for c in r.content if getattr(c, "type", "") == "text")
    if r.is_error:
        fail(f"{name}({args}) failed: {text}")
    return json.loads(text)


async def refused(s, name, args, words=None):
    """A call that must fail: as a tool error (is_error) or a protocol error. Its message."""
    try:
        r = await s.call_tool(name, args)
    except MCPError as e:
        msg = e.message
    else:
        msg = "".join(c.text for c in r.content if getattr(c, "type", "") == "text")
        if not r.is_error:
            fail(f"{name}({args}) was not refused: {msg}")
    if words and words not in msg:
        fail(f"{name}({args}) refused without {words!r}: {msg}")
    # The server keeps serving.
    await call(s, "list_sessions")
    return msg


async def wait_capped(s, session, cap_s, **w):
    """wait_until with a short cap, continued with since_seq until it settles: the final
    result and how many caps came first."""
    caps = 0
    since = w.pop("since_seq", None)
    while True:
        args = dict(session=session, wait_cap_s=cap_s, **w)
        if since is not None:
            args["since_seq"] = since
        r = await call(s, "wait_until", **args)
        if r["reason"] != "cap":
            return r, caps
        caps += 1
        if caps > 2000:
            fail(f"wait {w} capped {caps} times")
        if w["condition"] == "text":
            since = r["snapshot"]["seq"]


async def flight(s, instance, leave, root, box_inline):
    tools = {t.name for t in (await s.list_tools()).tools}
    want = {"start_session", "wait_until", "run_steps", "abort_steps", "snapshot", "texts",
            "arm", "disarm", "set_mode", "takeoff", "land", "goto", "rtl", "hold",
            "pause_mission", "resume_mission", "upload_plan", "start_mission", "param_set",
            "param_get", "close_sitl", "kill_instance", "list_sessions", "verify_mission",
            "upload_geo", "clear_geo", "geo_status", "rc", "stop_rc", "offboard",
            "stop_offboard", "inject_failure"}
    if not want <= tools:
        fail(f"tools missing: {want - tools}")
    ok(f"{len(tools)} tools listed")

    st = await call(s, "start_session", instance=instance, speed=15)
    sid = st["session"]
    if st["system_id"] != instance + 1:
        fail(f"system id {st['system_id']}")
    ok(f"session {sid} on instance {instance}")

    seq0 = (await call(s, "snapshot", session=sid))["seq"]
    await call(s, "takeoff", session=sid, alt_m=5)
    r, caps = await wait_capped(s, sid, 0.02, condition="text", value="Takeoff detected",
                                timeout_s=60, since_seq=seq0)
    if r["reason"] != "met":
        fail(f"text wait: {r}")
    r2, caps2 = await wait_capped(s, sid, 0.02, condition="altitude", value=4.5, timeout_s=60)
    if r2["reason"] != "met" or r2["snapshot"]["height_m"] < 4.0:
        fail(f"altitude wait: {r2}")
    if caps + caps2 == 0:
        fail("no wait ended `cap`")
    ok(f"takeoff text after {caps} caps, altitude after {caps2} caps (continued with since_seq)")
    texts = (await call(s, "texts", session=sid, since_seq=seq0))["texts"]
    seqs = [t["seq"] for t in texts]
    if not any("Takeoff detected" in t["text"] for t in texts):
        fail(f"texts since {seq0}: no takeoff text: {texts}")
    if seqs != sorted(seqs) or any(b != a + 1 for a, b in zip(seqs, seqs[1:])) or seqs[0] != seq0 + 1:
        fail(f"texts since {seq0} have gaps: {seqs}")
    ok(f"texts {seqs[0]}..{seqs[-1]}, none missed")

    # Concurrent waits on one session, each settled once.
    rs = await asyncio.gather(*[
        s.call_tool("wait_until", dict(session=sid, condition="time", value=v, timeout_s=30,
                                       wait_cap_s=20))
        for v in (0.5, 1.0, 1.5)])
    for r in rs:
        d = json.loads(r.content[0].text)
        if r.is_error or d["reason"] != "met":
            fail(f"concurrent wait: {d}")
    ok("3 concurrent waits met")

    # Bad inputs: errors, and the server keeps serving.
    await refused(s, "wait_until", dict(session=sid, condition="altitude", value=1,
                                         timeout_s="soon"))
    await refused(s, "wait_until", dict(session=sid, condition="altitude", value=1,
                                         timeout_s=1e300), "timeout_s")
    await refused(s, "wait_until", dict(session=sid, condition="levitation", value=1,
                                         timeout_s=1), "unknown condition")
    await refused(s, "no_such_tool", {})
    await refused(s, "takeoff", dict(session=sid, alt_m=1e12), "alt_m")
    await refused(s, "start_session", dict(instance=instance + 2, speed=1e9), "speed")
    await refused(s, "start_session", dict(instance=999))
    await refused(s, "upload_plan", dict(session=sid, path="../../../../etc/passwd"))
    await refused(s, "upload_plan", dict(session=sid, path="/etc/hostname"), "outside")
    await refused(s, "upload_plan", dict(session=sid, path="escape.plan"), "outside")
    await refused(s, "snapshot", dict(session=987654))
    ok("malformed arguments, unknown tool, absurd numbers, paths outside the root: refused")

    # A step program, capped.
    prog = '[[step]]\naction = "hold"\nuntil = { time = 1 }\ntimeout_s = 10\n'
    await call(s, "run_steps", session=sid, program=prog, wait_cap_s=20)
    ok("run_steps")

    await call(s, "land", session=sid)
    r, _ = await wait_capped(s, sid, 5, condition="landed", timeout_s=120)
    if r["reason"] != "met":
        fail(f"landed wait: {r}")
    ok(f"landed at t_sim {r['snapshot']['t_sim_s']:.1f} s")
    r, _ = await wait_capped(s, sid, 5, condition="disarmed", timeout_s=60)
    if r["reason"] != "met":
        fail(f"disarmed wait: {r}")

    # The box mission: uploaded by path (inside --root) or inline, verified, flown, landed.
    if box_inline:
        with open(f"{root}/box.plan") as f:
            up = await call(s, "upload_plan", session=sid, plan_json=f.read())
        how = "inline"
    else:
        up = await call(s, "upload_plan", session=sid, path="box.plan")
        how = "by path"
    v = await call(s, "verify_mission", session=sid, wait_cap_s=30)
    if v["reason"] != "met":
        fail(f"verify_mission: {v}")
    seq_m = (await call(s, "snapshot", session=sid))["seq"]
    await call(s, "start_mission", session=sid)
    r, _ = await wait_capped(s, sid, 5, condition="armed", timeout_s=60)
    if r["reason"] != "met":
        fail(f"box mission: not armed: {r}")
    r, caps = await wait_capped(s, sid, 2, condition="mission_complete", timeout_s=600,
                                guards=[{"condition": "disarmed"}])
    if r["reason"] != "met":
        fail(f"box mission: {r}")
    r, _ = await wait_capped(s, sid, 5, condition="landed", timeout_s=300)
    if r["reason"] != "met":
        fail(f"box mission landing: {r}")
    texts = (await call(s, "texts", session=sid, since_seq=seq_m))["texts"]
    ok(f"box mission ({up['items']} items, uploaded {how}, verified) flown and landed at "
       f"t_sim {r['snapshot']['t_sim_s']:.1f} s; {len(texts)} texts")

    # kill_instance during a wait ends it `closed`.
    st2 = await call(s, "start_session", instance=instance + 1, speed=15)
    long_wait = asyncio.ensure_future(s.call_tool("wait_until", dict(
        session=st2["session"], condition="time", value=1000, timeout_s=2000, wait_cap_s=30)))
    await asyncio.sleep(0.5)
    await call(s, "kill_instance", instance=instance + 1)
    r = await asyncio.wait_for(long_wait, 10)
    d = json.loads(r.content[0].text)
    if r.is_error or d["reason"] != "closed":
        fail(f"the wait during kill_instance: {d}")
    ok("kill_instance during a wait: closed")

    await call(s, "close_sitl", session=sid)
    left = (await call(s, "list_sessions"))["sessions"]
    if left:
        fail(f"sessions left: {left}")
    ok("closed")
    if leave:
        await call(s, "start_session", instance=instance + 2, speed=10)
        ok(f"left instance {instance + 2} open")


async def fly_one(s, instance, aloft):
    """One session of several: start, take off, wait until all are in the air (`aloft`, a
    barrier), land. Unrecorded (tlog false): four recorded vehicles at once cost twice the
    CPU, and the records have their own test."""
    st = await call(s, "start_session", instance=instance, speed=10, tlog=False)
    if st["tlog"] is not None:
        fail(f"an unrecorded session has a tlog: {st}")
    sid = st["session"]
    await call(s, "takeoff", session=sid, alt_m=4)
    r, _ = await wait_capped(s, sid, 1, condition="altitude", value=3.5, timeout_s=60)
    if r["reason"] != "met":
        fail(f"instance {instance}: altitude: {r}")
    up = r["snapshot"]["t_sim_s"]
    await asyncio.wait_for(aloft.wait(), 120)
    await call(s, "land", session=sid)
    r, _ = await wait_capped(s, sid, 1, condition="landed", timeout_s=120)
    if r["reason"] != "met":
        fail(f"instance {instance}: landed: {r}")
    return sid, up


async def many(s, first, vehicle_port):
    # Four sessions, started by concurrent calls, fly at once.
    t0 = time.time()
    aloft = asyncio.Barrier(4)
    flown = await asyncio.gather(*[fly_one(s, first + k, aloft) for k in range(4)])
    listed = (await call(s, "list_sessions"))["sessions"]
    if len(listed) != 4 or len({sid for sid, _ in flown}) != 4:
        fail(f"four sessions at once: {listed}")
    ok(f"four sessions started by concurrent calls, all four in the air at once, landed, "
       f"in {time.time() - t0:.1f} s")
    sid = flown[0][0]

    # The live report resource of each session.
    res = (await s.list_resources()).resources
    uris = {str(r.uri) for r in res}
    if f"nexus://session/{sid}/report" not in uris:
        fail(f"resources: {uris}")
    rep = await s.read_resource(f"nexus://session/{sid}/report")
    report = json.loads(rep.contents[0].text)
    if report["session"] != sid or report["snapshot"] is None or not report["texts"]:
        fail(f"report: {report}")
    ok(f"{len(uris)} report resources; session {sid}'s: {len(report['texts'])} texts")

    # A program uploading a plan (by path: the plan relative to the program, inside --root),
    # verified; refused when its plan is outside the root.
    r = await call(s, "run_steps", session=sid, path="upload-verify.toml", wait_cap_s=60)
    if not r["passed"] or r["running"]:
        fail(f"run_steps with an upload: {r}")
    ok(f"run_steps by path: upload + verify_mission passed ({len(r['steps'])} steps)")
    for plan, words in (("../box.plan", "outside"), ("escape.plan", "outside"),
                        ("/etc/hostname", "outside")):
        prog = json.dumps({"step": [{"action": "upload", "plan": plan}]})
        await refused(s, "run_steps", dict(session=sid, program=prog), words)
    await refused(s, "run_steps", dict(session=sid, path="../etc/passwd"), "outside")
    await refused(s, "run_steps", dict(session=sid, program="[[step]]\naction = \"fly\"\n"),
                  "unknown action")
    ok("upload plans outside the root refused (.., symlink, absolute); a bad program refused")

    # Capped and continued: the program goes on after the cap.
    prog = json.dumps({"step": [
        {"action": "upload", "plan": "box.plan"},
        {"action": "none", "until": {"time": 3}, "timeout_s": 10},
        {"action": "verify_mission"}]})
    r = await call(s, "run_steps", session=sid, program=prog, wait_cap_s=0.05)
    caps = 0
    while r.get("running"):
        caps += 1
        r = await call(s, "run_steps", session=sid, wait_cap_s=0.1, **{"continue": True})
    if caps == 0 or not r["passed"] or len(r["steps"]) != 3:
        fail(f"capped program: caps {caps}, {r}")
    ok(f"a JSON program capped {caps} times, continued, passed")

    # A wait with every kind of modifier, written as a program's until.
    r = await call(s, "wait_until", session=sid, until={"landed_state": ["on_ground"]},
                   timeout_s=5, wait_cap_s=10)
    if r["reason"] != "met":
        fail(f"until landed_state: {r}")
    await refused(s, "wait_until", dict(session=sid, condition="altitude", value=1, op="~",
                                         timeout_s=1), "op")
    # Geofence and rally points alone, sticks, Offboard, a failure injection: sent, answered.
    sid2 = flown[1][0]
    for kind, n in (("fence", 5), ("rally", 2)):  # 4 vertices + 1 circle; 2 points
        up = await call(s, "upload_geo", session=sid2, kind=kind, path="fenced.plan")
        for _ in range(200):
            st = await call(s, "geo_status", session=sid2, kind=kind)
            if st["status"] != "Busy":
                break
            await asyncio.sleep(0.05)
        if up["items"] != n or not st["status"].startswith("Uploaded"):
            fail(f"upload_geo {kind}: {up}, {st}")
    await call(s, "clear_geo", session=sid2, kind="rally")
    await call(s, "rc", session=sid2, throttle=0.5)
    await call(s, "stop_rc", session=sid2)
    await refused(s, "rc", dict(session=sid2, roll=3), "roll")
    await call(s, "offboard", session=sid2, north_m=0, east_m=0, down_m=-3)
    await call(s, "stop_offboard", session=sid2)
    await refused(s, "offboard", dict(session=sid2, north_m=0), "offboard")
    await call(s, "inject_failure", session=sid2, unit="battery", failure="ok")
    await refused(s, "inject_failure", dict(session=sid2, unit="warp", failure="off"), "unit")
    ok("upload_geo fence and rally (fenced.plan) uploaded, clear_geo, rc, offboard, "
       "inject_failure sent; bad sticks, setpoint and unit refused")

    for sid_, _ in flown:
        await call(s, "close_sitl", session=sid_)

    # An attached vehicle that says it is hardware: nothing that arms or moves it is sent.
    st = await call(s, "start_session", connect=f"udpin:127.0.0.1:{vehicle_port}")
    if st["simulator"] is not False or st["may_move"]:
        fail(f"attached: {st}")
    aid = st["session"]
    # Listed as what it is: no instance of ours, the system id it sends from (the vehicle on
    # instance N sends to 14540 + N as system N + 1).
    sysid = vehicle_port - 14540 + 1
    listed = [x for x in (await call(s, "list_sessions"))["sessions"] if x["session"] == aid]
    report = json.loads((await s.read_resource(f"nexus://session/{aid}/report")).contents[0].text)
    if st["instance"] is not None or st["system_id"] != sysid or len(listed) != 1 \
            or listed[0]["instance"] is not None or listed[0]["system_id"] != sysid \
            or listed[0]["vehicle"] != "attached" or not listed[0]["connection"] \
            or report["instance"] is not None or report["vehicle"]["system_id"] != sysid:
        fail(f"the attached session as listed: {st}, {listed}, {report['vehicle']}")
    ok(f"attached session listed with no instance, system id {sysid}, "
       f"{listed[0]['connection']}")
    for name, args in (("takeoff", {}), ("arm", {}), ("goto", dict(x_m=5, y_m=0, z_m=5)),
                       ("set_mode", dict(mode="Position")), ("rc", dict(throttle=0.0, yaw=1.0)),
                       ("offboard", dict(north_m=0, east_m=0, down_m=-5)),
                       ("upload_plan", dict(path="box.plan")),
                       ("param_set", dict(name="COM_ARM_WO_GPS", value=1, kind="int")),
                       ("run_steps", dict(program='[[step]]\naction = "takeoff"\nalt_m = 5\n')),
                       ("wait_until", dict(condition="time", value=1, timeout_s=5,
                                           then_mode="Position"))):
        await refused(s, name, dict(session=aid, **args), "--real-vehicle")
    await call(s, "hold", session=aid)
    r = await call(s, "wait_until", session=aid, condition="time", value=0.2, timeout_s=5)
    if r["reason"] != "met" or r["snapshot"]["armed"]:
        fail(f"attached wait: {r}")
    await call(s, "close_sitl", session=aid)
    ok("attached hardware: arm, takeoff, goto, mode, sticks, offboard, upload, param, program, "
       "then_mode refused without --real-vehicle; hold and waits served")


def tlog_by_system(data):
    """Frames per sender system id of a tlog's bytes, read by pymavlink; and the bad ones."""
    os.environ.setdefault("MAVLINK20", "1")
    from pymavlink import mavutil
    with tempfile.NamedTemporaryFile(suffix=".tlog", delete=False) as f:
        f.write(data)
        path = f.name
    try:
        m = mavutil.mavlink_connection(path)
        by_sys, types, bad = {}, set(), 0
        while True:
            x = m.recv_match()
            if x is None:
                break
            if x.get_type() == "BAD_DATA":
                bad += 1
                continue
            # Messages outside pymavlink's dialect come back without a header: read the
            # sender from the frame's own bytes.
            buf = bytes(x.get_msgbuf())
            k = buf[5] if buf[:1] == b"\xfd" else buf[3]
            by_sys[k] = by_sys.get(k, 0) + 1
            if k != 255:
                types.add(x.get_type())
        m.close()
        return by_sys, types, bad
    finally:
        os.unlink(path)


async def read_blob(s, uri):
    r = await s.read_resource(uri)
    c = r.contents[0]
    if getattr(c, "mime_type", None) != "application/octet-stream" or not hasattr(c, "blob"):
        fail(f"{uri}: not an application/octet-stream blob: {c}")
    return base64.b64decode(c.blob)


async def read_text(s, uri, mime):
    r = await s.read_resource(uri)
    c = r.contents[0]
    if getattr(c, "mime_type", None) != mime or not hasattr(c, "text"):
        fail(f"{uri}: not {mime} text: {c}")
    return c.text


async def uris(s):
    return {str(r.uri) for r in (await s.list_resources()).resources}


async def not_readable(s, uri):
    try:
        await s.read_resource(uri)
    except MCPError:
        return
    fail(f"{uri} is still readable")


async def records(s, nexus, root, first):
    st = await call(s, "start_session", instance=first, speed=15)
    sid, sysid = st["session"], st["system_id"]
    if st["tlog"] != f"nexus://session/{sid}/tlog":
        fail(f"start_session: {st}")
    await call(s, "takeoff", session=sid, alt_m=5)
    r, _ = await wait_capped(s, sid, 0.05, condition="altitude", value=4.5, timeout_s=60)
    if r["reason"] != "met":
        fail(f"altitude: {r}")
    # The tlog so far, while the session flies.
    if f"nexus://session/{sid}/tlog" not in await uris(s):
        fail("the open session's tlog is not listed")
    if f"nexus://session/{sid}/report.html" in await uris(s):
        fail("an HTML report is listed before the session closed")
    early, _, bad = tlog_by_system(await read_blob(s, f"nexus://session/{sid}/tlog"))
    if bad or early.get(sysid, 0) < 10:
        fail(f"the tlog in flight: {early}, {bad} bad")
    ok(f"open session's tlog readable in flight: {early.get(sysid)} frames from system {sysid}")
    await call(s, "land", session=sid)
    for cond in ("landed", "disarmed"):
        r, _ = await wait_capped(s, sid, 5, condition=cond, timeout_s=120)
        if r["reason"] != "met":
            fail(f"{cond}: {r}")

    # A program whose steps fail: a timeout continued past, then a guard (which stops it).
    prog = ('[[step]]\nname = "too high"\naction = "none"\nuntil = { altitude = 100 }\n'
            'timeout_s = 1\non_timeout = "continue"\n\n'
            '[[step]]\nname = "guarded"\naction = "none"\n'
            'until = { time = 5, guards = ["disarmed"] }\ntimeout_s = 10\n')
    r = await call(s, "run_steps", session=sid, program=prog, wait_cap_s=60)
    steps = r["steps"]
    if r["passed"] or len(steps) != 2 or any(x["passed"] for x in steps):
        fail(f"failing program: {r}")
    why = [x["result"]["explanation"] for x in steps]
    if not all(why) or "guard `disarmed` fired" not in why[1] or "altitude" not in why[0]:
        fail(f"failed steps without their explanation: {steps}")
    # The same words as `nexus run` on the same program.
    path = os.path.join(root, "failing.toml")
    with open(path, "w") as f:
        f.write(prog)
    out = subprocess.run([nexus, "run", path, "--sim", "--instance", str(first + 1),
                          "--speed", "10", "--json", "-"], capture_output=True, text=True)
    if out.returncode != 1:
        fail(f"nexus run: exit {out.returncode}: {out.stderr}")
    run_why = [x["explanation"] for x in json.loads(out.stdout)["steps"]]
    if run_why[1] != why[1] or run_why[1] not in out.stderr:
        fail(f"run_steps explanation {why[1]!r}, nexus run's {run_why[1]!r}")
    ok(f"failed steps explained, as nexus run explains them: {why[0]!r}; {why[1]!r}")
    # Capped, continued: the failed step's explanation comes in the later call.
    prog2 = json.dumps({"step": [
        {"action": "none", "until": {"time": 2}, "timeout_s": 10},
        {"action": "none", "until": {"time": 5, "guards": ["disarmed"]}, "timeout_s": 10}]})
    r = await call(s, "run_steps", session=sid, program=prog2, wait_cap_s=0.05)
    caps = 0
    while r.get("running"):
        caps += 1
        r = await call(s, "run_steps", session=sid, wait_cap_s=0.2, **{"continue": True})
    last = r["steps"][-1]
    if caps == 0 or last["passed"] or last["result"]["explanation"] != why[1]:
        fail(f"capped program: {caps} caps, {r}")
    ok(f"a capped program ({caps} caps) continued: its failed step explained")

    closed = await call(s, "close_sitl", session=sid)
    rec = closed.get("records") or fail(f"close_sitl: no records: {closed}")
    if not (rec["tlog"] and rec["report_html"] and rec["verdict"].startswith("FAIL")):
        fail(f"records: {rec}")
    got = await uris(s)
    for u in (f"nexus://session/{sid}/tlog", f"nexus://session/{sid}/report.html"):
        if u not in got:
            fail(f"{u} not listed after close: {got}")
    if f"nexus://session/{sid}/report" in got:
        fail("the closed session's live report is still listed")
    data = await read_blob(s, f"nexus://session/{sid}/tlog")
    with open(rec["tlog"], "rb") as f:
        if f.read() != data:
            fail("the tlog resource is not the file")
    by_sys, types, bad = tlog_by_system(data)
    if bad or by_sys.get(sysid) != rec["tlog_received"] or by_sys.get(255) != rec["tlog_sent"] \
            or set(by_sys) != {sysid, 255}:
        fail(f"tlog: {by_sys}, {bad} bad; records {rec}")
    for t in ("HEARTBEAT", "STATUSTEXT", "GLOBAL_POSITION_INT"):
        if t not in types:
            fail(f"no {t} from the vehicle in the tlog: {sorted(types)}")
    ok(f"tlog ({len(data)} bytes): {by_sys[sysid]} frames from system {sysid}, "
       f"{by_sys[255]} from us, as counted; pymavlink reads every one")
    html = await read_text(s, f"nexus://session/{sid}/report.html", "text/html")
    for want in ('id="verdict"', f"session {sid} closed (close_sitl)", 'class="fail"', 'id="timeline"',
                 'id="height-line"', "guard `disarmed` fired", "Takeoff detected", "disarmed"):
        if want not in html:
            fail(f"the HTML report has no {want!r}")
    ok(f"HTML report ({len(html)} bytes): {rec['verdict'][:90]}…")

    # kill_instance during a wait: the wait ends `closed`, in the report too.
    st2 = await call(s, "start_session", instance=first + 2, speed=15)
    sid2 = st2["session"]
    long_wait = asyncio.ensure_future(s.call_tool("wait_until", dict(
        session=sid2, condition="time", value=1000, timeout_s=2000, wait_cap_s=30)))
    await asyncio.sleep(0.5)
    k = await call(s, "kill_instance", instance=first + 2)
    d = json.loads((await asyncio.wait_for(long_wait, 10)).content[0].text)
    if d["reason"] != "closed" or k["session"] != sid2 or not k["records"]["report_html"]:
        fail(f"kill during a wait: {d}, {k}")
    html2 = await read_text(s, f"nexus://session/{sid2}/report.html", "text/html")
    if "ended closed" not in k["records"]["verdict"] or "kill_instance" not in html2:
        fail(f"the killed session's report: {k['records']['verdict']}")
    ok(f"killed during a wait: {k['records']['verdict']}")

    # --keep-closed 2: a third closed session pushes the first one's files out. Unrecorded:
    # no tlog, its report all the same.
    st3 = await call(s, "start_session", instance=first + 3, speed=15, tlog=False)
    if st3["tlog"] is not None or f"nexus://session/{st3['session']}/tlog" in await uris(s):
        fail(f"an unrecorded session has a tlog: {st3}")
    c3 = await call(s, "close_sitl", session=st3["session"])
    r3 = c3["records"]
    if not r3["verdict"].startswith("PASS") or "no wait" not in r3["verdict"] or r3["tlog"] \
            or not r3["report_html"]:
        fail(f"an idle unrecorded session's records: {c3}")
    for u in (f"nexus://session/{sid}/tlog", f"nexus://session/{sid}/report.html"):
        await not_readable(s, u)
    if os.path.exists(rec["tlog"]) or os.path.exists(rec["report_html"]):
        fail("the oldest closed session's files are still there")
    kept = [c["session"] for c in (await call(s, "list_sessions"))["closed"]]
    if kept != [sid2, st3["session"]]:
        fail(f"kept: {kept}")
    ok(f"--keep-closed 2: sessions {kept} kept, session {sid}'s files deleted")

    st4 = await call(s, "start_session", instance=first + 4, speed=15)
    print(f"left session {st4['session']}", flush=True)


async def reaper(s, instance):
    st = await call(s, "start_session", instance=instance, speed=10)
    sid = st["session"]
    # A wait longer than the idle limit is reaped too: it ends `closed`.
    r = await call(s, "wait_until", session=sid, condition="time", value=100, timeout_s=200,
                   wait_cap_s=30)
    if r["reason"] != "closed":
        fail(f"a wait past --idle-s: {r}")
    left = (await call(s, "list_sessions"))["sessions"]
    if left:
        fail(f"the idle session is still listed: {left}")
    await refused(s, "snapshot", dict(session=sid), "no session")
    st = await call(s, "start_session", instance=instance, speed=10)
    await asyncio.sleep(2.5)
    listed = await call(s, "list_sessions")
    if listed["sessions"]:
        fail(f"an idle session outlived --idle-s 1: {listed['sessions']}")
    ok("the idle reaper closed a session left idle and one waiting past --idle-s (closed)")
    # Their records stay: tlog and HTML report, the reaper named as why they closed.
    closed = {c["session"]: c for c in listed["closed"]}
    if set(closed) != {sid, st["session"]}:
        fail(f"reaped sessions' records: {listed['closed']}")
    for c in closed.values():
        if "idle reaper" not in c["closed"] or not c["report_html"]:
            fail(f"reaped: {c}")
        html = await read_text(s, f"nexus://session/{c['session']}/report.html", "text/html")
        if "idle reaper" not in html:
            fail("the reaped session's report does not say why it closed")
        by_sys, _, bad = tlog_by_system(await read_blob(s, f"nexus://session/{c['session']}/tlog"))
        if bad or by_sys.get(instance + 1, 0) == 0:
            fail(f"the reaped session's tlog: {by_sys}")
    print(f"records dir: {os.path.dirname(closed[sid]['tlog'])}", flush=True)
    ok("the reaped sessions' tlog and HTML report are readable")


def http_status(url, token):
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}).encode()
    req = urllib.request.Request(url, data=body, method="POST", headers={
        "Content-Type": "application/json", "Accept": "application/json, text/event-stream"})
    if token is not None:
        req.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(req, timeout=5) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


async def main():
    mode = sys.argv[1]
    leave = "--leave" in sys.argv
    if mode == "stdio":
        nexus, root, instance = sys.argv[2], sys.argv[3], int(sys.argv[4])
        params = StdioServerParameters(command=nexus, args=["serve", "--root", root])
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as s:
                await s.initialize()
                await flight(s, instance, leave, root, box_inline=False)
    elif mode == "many":
        nexus, root, first, port = sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
        params = StdioServerParameters(command=nexus, args=["serve", "--root", root])
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as s:
                await s.initialize()
                await many(s, first, port)
    elif mode == "records":
        nexus, root, first, rec = sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
        params = StdioServerParameters(command=nexus, args=[
            "serve", "--root", root, "--records", rec, "--keep-closed", "2"])
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as s:
                await s.initialize()
                await records(s, nexus, root, first)
    elif mode == "reaper":
        nexus, root, instance = sys.argv[2], sys.argv[3], int(sys.argv[4])
        params = StdioServerParameters(command=nexus,
                                       args=["serve", "--root", root, "--idle-s", "1"])
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as s:
                await s.initialize()
                await reaper(s, instance)
    else:
        import httpx2

        url, token, instance, root = sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
        for t, what in ((None, "no token"), ("wrong-token-123", "a wrong token")):
            code = http_status(url, t)
            if code != 401:
                fail(f"{what}: HTTP {code}, not 401")
        ok("no token, wrong token: HTTP 401")
        client = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"},
                                    timeout=httpx2.Timeout(60.0))
        async with client:
            async with streamable_http_client(url, http_client=client) as streams:
                read, write = streams[0], streams[1]
                async with ClientSession(read, write) as s:
                    await s.initialize()
                    await flight(s, instance, leave, root, box_inline=True)
    ok("done")


if __name__ == "__main__":
    t0 = time.time()
    asyncio.run(main())
    print(f"ok: {time.time() - t0:.1f} s", flush=True)
