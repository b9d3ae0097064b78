"""The Python package's tests: flights on the built-in simulated PX4.

SITL instance N uses UDP 14540+N (offboard) and 14580+N (the vehicle): these tests use 90 to 97
(UDP 14630-14637 and 14670-14677), free of the Rust tests' own and of the default 14540, so a
QGroundControl or a SITL on the usual ports does not matter. No two instances here are 40 apart
(N's vehicle port is N+40's offboard port). The tests run one after another, so files share
them:

  90  test_flight, test_readme        94  test_steps
  91  test_died, test_errors, test_readme
  92  test_attach (its vehicle)       95  test_died, test_errors, test_interrupt
  93  test_verbs                      96  test_aio; test_attach's silent port
                                      97  test_attach's fake autopilot (UDP 14637)

Speed 20: a minute of sim time is three wall seconds.
"""

import os
import pathlib

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
SPEED = 20.0
INSTANCES = (90, 91, 92, 93, 94, 95, 96, 97)


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
