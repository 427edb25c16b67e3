"""The transport group's fixtures: the machine's io_uring switch for FUSE, and a daemon
that serves mounts handed over to it (lib/control.py, shared with the lifecycle group)."""
import pytest

from lib.control import daemon  # noqa: F401 (the fixture)
from lib.uring_switch import PARAM


@pytest.fixture
def allowed():
    """Sets enable_uring for one test; the suite's setting comes back after."""
    with open(PARAM) as f:
        old = f.read().strip()

    def allow(on):
        with open(PARAM, "w") as f:
            f.write("Y" if on else "N")
    yield allow
    allow(old == "Y")
