"""Waiting for a condition instead of sleeping a fixed time, and whether a path is a
mount point: shared by the test files."""
import time


def wait_for(cond, timeout, what):
    """Polls cond() until it is true and returns its value; fails naming what after
    timeout seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = cond()
        if value:
            return value
        assert time.monotonic() < deadline, "timed out waiting for " + what
        time.sleep(0.02)


def mounted(path):
    with open("/proc/self/mounts") as f:
        return any(line.split()[1] == path for line in f)
