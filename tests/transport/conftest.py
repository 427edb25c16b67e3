"""The transport group's fixtures: the machine's io_uring switch for FUSE, and a daemon
that serves mounts handed over to it (lib/control.py, shared with the lifecycle group)."""
import os

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


@pytest.fixture(params=["dev_fuse", "io_uring"])
def over_each(request, mount_with):
    """A mount over each transport in turn: /dev/fuse, then io_uring where this kernel
    has it."""
    uring = request.param == "io_uring"
    if not os.path.exists(PARAM):
        if uring:
            pytest.skip("a kernel without FUSE over io_uring")
        yield mount_with()
        return
    with open(PARAM) as f:
        old = f.read().strip()
    with open(PARAM, "w") as f:
        f.write("Y" if uring else "N")
    try:
        m = mount_with()
        assert m.over_uring() == uring, m.output()
        yield m
    finally:
        with open(PARAM, "w") as f:
            f.write(old)
