"""nexus_uav: command PX4 over MAVLink and wait, on the autopilot's clock, for what it does.

The run (:class:`Sim`), the wait engine's results (:class:`WaitResult`, :class:`SnapshotPX4`,
:class:`ProgramReport`) and :class:`Session` live here; PX4's own names (``OffboardClient``,
``Plan``, ``MissionItem``, ``read_plan``) in :mod:`nexus_uav.px4`; the asyncio face in
:mod:`nexus_uav.aio`. Everything runs on the Rust engine (nexus-host).

Units: metres, metres per second, radians; sim seconds (the vehicle's clock) wherever a name
says ``sim`` or ``timeout_s``, wall seconds for ``wait_cap_s``, ``stall_s``, ``waited_wall_s``.
"""

from ._native import OFFBOARD_PORT, ProgramReport, RunError, Sim, SnapshotPX4, Waited, WaitResult
from ._session import Session

__all__ = [
    "OFFBOARD_PORT",
    "ProgramReport",
    "RunError",
    "Session",
    "Sim",
    "SnapshotPX4",
    "WaitResult",
    "Waited",
]
