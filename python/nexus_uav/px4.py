"""PX4's own names: what a script that commands PX4 imports.

:class:`OffboardClient` is the host end of PX4's offboard link; :class:`Plan`,
:class:`MissionItem` and :func:`read_plan` describe what :meth:`OffboardClient.upload_mission`
hands PX4.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Tuple, Union

from ._native import OFFBOARD_PORT, OffboardClient, RunError
from ._native import _read_plan

__all__ = ["OFFBOARD_PORT", "MissionItem", "OffboardClient", "Plan", "RunError", "read_plan"]


@dataclass(frozen=True)
class MissionItem:
    """One mission item, in the shape MISSION_ITEM_INT carries it.

    Attributes:
        seq: Position in the mission, from the item's index in the file.
        frame: MAV_FRAME; 3 (GLOBAL_RELATIVE_ALT) means ``z`` is metres over home.
        command: MAV_CMD, e.g. 16 NAV_WAYPOINT, 22 NAV_TAKEOFF, 20 NAV_RETURN_TO_LAUNCH.
        autocontinue: Whether PX4 proceeds to the next item on arrival.
        params: param1..param4; a null in the file is NaN, MAVLink's "no value".
        x: Latitude, degrees x 1e7.
        y: Longitude, degrees x 1e7.
        z: Altitude in metres, in this item's frame.
    """

    seq: int
    frame: int
    command: int
    autocontinue: bool
    params: Tuple[float, float, float, float]
    x: int
    y: int
    z: float


@dataclass(frozen=True)
class Plan:
    """A parsed .plan: where the vehicle starts, and the items it flies.

    Attributes:
        home: plannedHomePosition as (lat [deg], lon [deg], alt [m] over mean sea level).
        items: The mission items in file order, ``seq`` matching the index.
    """

    home: Tuple[float, float, float]
    items: Tuple[MissionItem, ...]


def read_plan(path: Union[str, "os.PathLike[str]"]) -> Plan:
    """Read a QGroundControl ``.plan`` file (the mission only; geoFence and rallyPoints skipped).

    Items keep their file order and get ``seq`` from their index; there is no implicit home item.

    Raises:
        ValueError: The file isn't a plan (``fileType`` isn't "Plan"), carries no ``mission``
            object, has an item that isn't a "SimpleItem" (a survey ComplexItem), or an item
            without exactly seven ``params``. The message names the file, line and column.
        OSError: The file cannot be read.
    """
    home, items = _read_plan(os.fspath(path))
    return Plan(
        home=tuple(home),
        items=tuple(
            MissionItem(
                seq=seq,
                frame=frame,
                command=command,
                autocontinue=autocontinue,
                params=tuple(params),
                x=x,
                y=y,
                z=z,
            )
            for (seq, frame, command, autocontinue, params, x, y, z) in items
        ),
    )


# The default heading tolerance of OffboardClient, rad.
DEFAULT_YAW_TOL_RAD = math.radians(5.0)
