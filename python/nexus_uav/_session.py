"""Session: one run and its offboard client, served as the wait engine's ``wait_until``."""

from __future__ import annotations

from typing import Any, List, Optional, Tuple

from ._native import ProgramReport, Sim, SnapshotPX4, WaitResult
from ._native import OffboardClient


class Session:
    """A started run and the :class:`~nexus_uav.px4.OffboardClient` connected to it.

    ``Session(instance=91, speed=10.0)`` starts the built-in vehicle (keyword arguments go to
    :class:`~nexus_uav.Sim`) and connects, waiting up to ``connect_timeout`` sim seconds for
    PX4's heartbeat. Close it with :meth:`close_sitl` or as a context manager.
    """

    def __init__(self, *, connect_timeout: float = 10.0, **sim_options: Any) -> None:
        self.sim = Sim(**sim_options)
        self.sim.start()
        try:
            self.client = OffboardClient.connect(self.sim, connect_timeout)
        except BaseException:
            self.sim.close()
            raise

    def wait_until(self, condition: str, value: Any = None, **kw: Any) -> WaitResult:
        """The wait engine's wait: see :meth:`nexus_uav.Sim.wait` for the arguments."""
        return self.sim.wait(condition, value, **kw)

    def run_steps(self, steps: Any, *, wait_cap_s: Optional[float] = None) -> ProgramReport:
        """Run a step program to its end: see :meth:`nexus_uav.Sim.run_steps`."""
        return self.sim.run_steps(steps, wait_cap_s=wait_cap_s)

    def abort_steps(self) -> None:
        """Abort the running step program (from another thread): its step ends ``aborted``."""
        self.sim.abort_steps()

    def snapshot(self) -> SnapshotPX4:
        """The vehicle now."""
        return self.sim.snapshot()

    def texts_since(self, since_seq: int) -> List[Tuple[int, int, str]]:
        """PX4's STATUSTEXTs after ``since_seq``, as (seq, severity, text)."""
        return self.sim.texts_since(since_seq)

    def close_sitl(self) -> None:
        """Close the client and stop the vehicle. Idempotent."""
        self.client.close()
        self.sim.close()

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc: Optional[object]) -> None:
        self.close_sitl()
