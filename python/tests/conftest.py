"""The Python package's tests: flights on the built-in simulated PX4.

SITL instances 90, 91 and 95 (offboard UDP 14630/14631/14635): free of the Rust tests' own and
of the default 14540, so a QGroundControl or a SITL on the usual ports does not matter. The
tests run one after another, so they share them. Speed 20: a minute of sim time is three wall
seconds.
"""

import os
import pathlib

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
SPEED = 20.0
INSTANCES = (90, 91, 95)


@pytest.fixture
def repo():
    return REPO


@pytest.fixture(autouse=True)
def _in_repo():
    """Run each test from the repository root, so relative paths like examples/box.plan work."""
    old = os.getcwd()
    os.chdir(REPO)
    yield
    os.chdir(old)
