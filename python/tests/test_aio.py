"""The asyncio face (instance 96): async with, awaited connect and waits, other coroutines run
meanwhile, and a cancelled wait ends on the engine."""

import asyncio

import pytest

import nexus_uav as nx
from nexus_uav import aio
from conftest import SPEED


async def _flight():
    ticks = 0

    async def ticker():
        nonlocal ticks
        while True:
            await asyncio.sleep(0.01)
            ticks += 1

    t = asyncio.ensure_future(ticker())
    async with aio.Sim("astro_max_base", scene="empty", instance=96, speed=SPEED) as sim:
        await sim.start()
        async with await aio.OffboardClient.connect(sim, 10.0) as op:
            assert op.connected
            op.takeoff(2.0)
            w = await op.wait_until(op.at_target, sim_timeout=60.0)
            assert isinstance(w, nx.Waited)
            # The loop keeps running during a wait (it runs in a worker thread): 10 s of sim
            # time is half a second of wall time, fifty periods of the ticker.
            before = ticks
            hover = await sim.wait("time", 10.0, timeout_s=20.0)
            assert hover.reason == "met", hover
            assert ticks > before, (ticks, before)
            r = await sim.wait("altitude", 1.5, timeout_s=10.0, guard="disarmed")
            assert r.reason == "met", r
            report = await sim.run_steps([{"action": "land", "until": "landed",
                                           "timeout_s": 60.0}])
            assert report.passed, report
            assert sim.snapshot().landed == "ON_GROUND"
            with pytest.raises(TimeoutError):
                await sim.wait_until(lambda: False, sim_timeout=0.5)
    t.cancel()


def test_async_flight():
    asyncio.run(_flight())


async def _cancelled():
    async with aio.Sim(instance=96, speed=SPEED) as sim:
        await sim.start()
        async with await aio.OffboardClient.connect(sim, 10.0):
            with pytest.raises(asyncio.TimeoutError):
                await asyncio.wait_for(sim.wait("armed", timeout_s=3600.0), 0.3)
            with pytest.raises(asyncio.TimeoutError):
                await asyncio.wait_for(sim.wait_until(lambda: False, sim_timeout=3600.0), 0.3)
            with pytest.raises(asyncio.TimeoutError):
                await asyncio.wait_for(
                    sim.run_steps([{"until": "armed", "timeout_s": 3600.0}]), 0.3
                )
            # Each cancelled wait ended on the engine within a signal poll: the link is free
            # for the next one (a program still running would refuse another).
            r = await sim.wait("time", 0.5, timeout_s=5.0)
            assert r.reason == "met", r
            report = await sim.run_steps([{"until": {"time": 0.2}, "timeout_s": 5.0}])
            assert report.passed, report


def test_a_cancelled_wait_ends_on_the_engine():
    asyncio.run(_cancelled())
