"""The access group's fixtures."""
import os
import subprocess
import time

import pytest

from lib.users import OTHER


@pytest.fixture(scope="module")
def others():
    """A root-owned process and a process of another unprivileged uid."""
    root = subprocess.Popen(["sleep", "3600"])
    other = subprocess.Popen(["setpriv", "--reuid=%d" % OTHER, "--regid=%d" % OTHER,
                              "--clear-groups", "sleep", "3600"])
    deadline = time.time() + 10
    while os.stat("/proc/%d" % other.pid).st_uid != OTHER:
        assert time.time() < deadline
        time.sleep(0.01)
    yield root.pid, other.pid
    for p in (root, other):
        p.kill()
        p.wait()
