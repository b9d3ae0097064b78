"""The asyncio face: the same run, client and waits, awaited.

Every wait runs the engine's blocking wait in a worker thread with the GIL released, so the
event loop keeps running other coroutines (a second vehicle, a web socket, a timer) while the
vehicle flies. Verbs and queries return at once, as in the blocking API, and are plain calls.
Cancelling a coroutine that awaits a wait (``asyncio.wait_for``, a task's ``cancel()``, Ctrl-C
in ``asyncio.run``) cancels the wait on the engine within about 50 ms::

    import asyncio
    from nexus_uav.aio import Sim, OffboardClient

    async def main():
        async with Sim("astro_max_base", scene="empty") as sim:
            await sim.start()
            async with await OffboardClient.connect(sim, 10.0) as op:
                op.takeoff(2.0)
                await op.wait_until(op.at_target, sim_timeout=60.0)
                r = await sim.wait("altitude", 1.5, timeout_s=10.0)

    asyncio.run(main())

Units as everywhere in nexus_uav: metres, radians; ``sim_timeout`` and ``timeout_s`` in sim
seconds, ``wait_cap_s`` in wall seconds.
"""

from __future__ import annotations

import asyncio
import functools
import threading
from typing import Any, Callable, Optional

from . import _native
from ._native import ProgramReport, RunError, Waited, WaitResult

__all__ = ["OffboardClient", "ProgramReport", "RunError", "Sim", "WaitResult", "Waited"]


async def _in_thread(fn: Callable[..., Any], *args: Any, **kw: Any) -> Any:
    """Run a blocking call of the engine in the loop's executor; cancelling the awaiting
    coroutine sets the call's cancel event, which ends it on the engine."""
    cancel = threading.Event()
    loop = asyncio.get_running_loop()
    fut = loop.run_in_executor(None, functools.partial(fn, *args, _cancel=cancel, **kw))
    try:
        return await asyncio.shield(fut)
    except asyncio.CancelledError:
        cancel.set()
        try:
            await fut  # ends within one signal poll (50 ms) of the event
        except BaseException:
            pass
        raise


async def _plain(fn: Callable[..., Any], *args: Any, **kw: Any) -> Any:
    """A blocking call without a cancel event (start, connect, close)."""
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(None, functools.partial(fn, *args, **kw))


class Sim:
    """:class:`nexus_uav.Sim`, awaited: the same arguments; ``await sim.start()``,
    ``await sim.wait_until(...)``, ``await sim.wait(...)``, ``await sim.run_steps(...)``.
    Everything else (``ports``, ``snapshot()``, ``texts_since()``, ``abort_steps()``, ``inject()``,
    ``death()``, ``console()``) is the blocking object's own, and returns at once.
    ``async with`` closes the run on the way out."""

    def __init__(self, model: Optional[str] = None, **options: Any) -> None:
        self.sync = _native.Sim(model, **options)

    async def start(self) -> "Sim":
        """Start the vehicle (PX4: spawn it and wait for its startup script). Returns self."""
        await _plain(self.sync.start)
        return self

    async def close(self) -> None:
        """Stop the vehicle and close the run. Idempotent."""
        await _plain(self.sync.close)

    async def __aenter__(self) -> "Sim":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def wait_until(self, predicate: Callable[[], object], *, sim_timeout: float) -> Waited:
        """:meth:`nexus_uav.Sim.wait_until`, awaited: until ``predicate()`` is true, at most
        ``sim_timeout`` sim seconds. Raises TimeoutError, RunError, as the blocking one."""
        return await _in_thread(self.sync.wait_until, predicate, sim_timeout=sim_timeout)

    async def wait(self, condition: str, value: Any = None, **kw: Any) -> WaitResult:
        """:meth:`nexus_uav.Sim.wait`, awaited: the engine's condition, ``timeout_s`` sim
        seconds at most; a WaitResult whatever the reason."""
        return await _in_thread(self.sync.wait, condition, value, **kw)

    async def run_steps(self, steps: Any, *, wait_cap_s: Optional[float] = None) -> ProgramReport:
        """:meth:`nexus_uav.Sim.run_steps`, awaited. Cancelling it aborts the program."""
        return await _in_thread(self.sync.run_steps, steps, wait_cap_s=wait_cap_s)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.sync, name)

    def __repr__(self) -> str:
        return f"aio.{self.sync!r}"


class OffboardClient:
    """:class:`nexus_uav.px4.OffboardClient` on an :class:`aio.Sim <Sim>`: every verb and
    query is the blocking client's own (they return at once); ``await
    OffboardClient.connect(sim, timeout)`` and ``await op.wait_until(...)`` are awaited."""

    def __init__(self, client: _native.OffboardClient, sim: Sim) -> None:
        self.sync = client
        self.sim = sim

    @classmethod
    async def connect(cls, sim: Sim, timeout: float) -> "OffboardClient":
        """:meth:`nexus_uav.px4.OffboardClient.connect`, awaited: open a client on the run's
        offboard link and wait up to ``timeout`` sim seconds for PX4's heartbeat.

        Raises:
            KeyError: The run has no offboard link.
            RunError: No heartbeat within ``timeout``, naming the port, or the run lost PX4.
        """
        client = await _plain(_native.OffboardClient.connect, sim.sync, timeout)
        return cls(client, sim)

    async def wait_until(self, predicate: Callable[[], object], *, sim_timeout: float) -> Waited:
        """Wait on this client's run: ``await op.wait_until(op.at_target, sim_timeout=60.0)``."""
        return await self.sim.wait_until(predicate, sim_timeout=sim_timeout)

    async def close(self) -> None:
        """Close the link. Idempotent."""
        await _plain(self.sync.close)

    async def __aenter__(self) -> "OffboardClient":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.sync, name)

    def __repr__(self) -> str:
        return f"aio.{self.sync!r}"
