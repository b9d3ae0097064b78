"""On-demand benchmark of `nexus serve` over stdio with the official MCP Python SDK (not a test:
nothing runs it but you).

    .venv/bin/python tests/py/bench/mcp_bench.py [NEXUS] [--calls N] [--waits N] [--instance I]

NEXUS defaults to target/release/nexus. One session on the built-in vehicle (speed 10). Reports:

* calls per second: N `snapshot` calls one after another (each a full MCP round trip), and the
  same N from 8 concurrent callers;
* a wait's settling tick to the client's reply: N `wait_until time 0.05 s` calls; for each, the
  round trip less the wait itself (`waited_wall_s`, registration to settle, measured on the
  server) is the request's way in plus the reply's way out; less half the median `snapshot`
  round trip (the way in) it is the settle-to-reply latency. p50 / p99 of both, in ms.
"""

import argparse
import asyncio
import json
import os
import statistics
import tempfile
import time

from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


async def call(s, name, **args):
    r = await s.call_tool(name, args)
    text = "".join(c.text for c in r.content if getattr(c, "type", "") == "text")
    if r.is_error:
        raise SystemExit(f"{name} failed: {text}")
    return json.loads(text)


async def bench(s, calls, waits, instance):
    sid = (await call(s, "start_session", instance=instance, speed=10))["session"]
    await call(s, "wait_until", session=sid, condition="time", value=1, timeout_s=10)

    rtts = []
    t0 = time.perf_counter()
    for _ in range(calls):
        t = time.perf_counter()
        await call(s, "snapshot", session=sid)
        rtts.append(time.perf_counter() - t)
    seq_rate = calls / (time.perf_counter() - t0)

    async def worker(n):
        for _ in range(n):
            await call(s, "snapshot", session=sid)

    t0 = time.perf_counter()
    await asyncio.gather(*[worker(calls // 8) for _ in range(8)])
    conc_rate = (calls // 8 * 8) / (time.perf_counter() - t0)

    way_in = statistics.median(rtts) / 2
    raw, settle = [], []
    for _ in range(waits):
        t = time.perf_counter()
        r = await call(s, "wait_until", session=sid, condition="time", value=0.05,
                       timeout_s=5, wait_cap_s=10)
        total = time.perf_counter() - t
        if r["reason"] != "met":
            raise SystemExit(f"wait: {r}")
        extra = total - r["waited_wall_s"]
        raw.append(extra)
        settle.append(max(0.0, extra - way_in))
    await call(s, "close_sitl", session=sid)

    ms = lambda x: f"{x * 1000:.2f}"
    print(f"snapshot round trip: p50 {ms(pct(rtts, 50))} ms, p99 {ms(pct(rtts, 99))} ms "
          f"({calls} calls)")
    print(f"calls per second: {seq_rate:.0f} sequential, {conc_rate:.0f} with 8 concurrent callers")
    print(f"wait round trip less the wait (way in + settle to reply): p50 {ms(pct(raw, 50))} ms, "
          f"p99 {ms(pct(raw, 99))} ms ({waits} waits)")
    print(f"settle tick to the client's reply: p50 {ms(pct(settle, 50))} ms, "
          f"p99 {ms(pct(settle, 99))} ms")


async def main():
    here = os.path.dirname(os.path.abspath(__file__))
    repo = os.path.abspath(os.path.join(here, "..", "..", ".."))
    ap = argparse.ArgumentParser()
    ap.add_argument("nexus", nargs="?", default=os.path.join(repo, "target/release/nexus"))
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--waits", type=int, default=300)
    ap.add_argument("--instance", type=int, default=60)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as root:
        params = StdioServerParameters(command=a.nexus, args=["serve", "--root", root])
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as s:
                await s.initialize()
                await bench(s, a.calls, a.waits, a.instance)


if __name__ == "__main__":
    asyncio.run(main())
