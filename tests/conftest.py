"""Fixtures every group shares: a real procfast mount, a mount factory, and the victim
process. A group's own fixtures are in its folder's conftest.py; the code the groups
share is the package tests/lib (tests/README.md).

Every test compares the mount with the real /proc, so the fixtures here only start
and stop things; they never decide what is "right".
"""
import os
import sys

import pytest

# tests/ on the path once, for every group: `from lib.mount import Mount`. (pytest puts
# each test file's own folder first too, which is how a group's files import one another.)
TESTS = os.path.dirname(os.path.abspath(__file__))
if TESTS not in sys.path:
    sys.path.insert(0, TESTS)

from lib.mount import Mount  # noqa: E402
from lib.procs import start_victim  # noqa: E402


@pytest.fixture(scope="session")
def mnt():
    """The default mount (source=/proc), shared by the read-only tests."""
    m = Mount()
    yield m
    out = m.output()
    m.close()
    # A server that died is replaced unseen (the supervisor), and most tests would pass
    # on: its death is a failure of the session, with what it printed.
    assert "starting another" not in out, "the session's server died:\n" + out


@pytest.fixture
def mount_with():
    """Factory for mounts with options; each is unmounted after the test."""
    made = []

    def make(*options):
        m = Mount(options)
        made.append(m)
        return m
    yield make
    for m in made:
        m.close()


@pytest.fixture(scope="module")
def victim():
    """A victim with 4 extra threads, shared by a test module."""
    v = start_victim("--threads", 4)
    yield v
    v.stop()
