"""One daemon, several mounts (-o control=SOCKET): the daemon as a fixture, the mounts
handed over to it (procfast -o daemon=SOCKET), and its children, the servers."""
import os
import subprocess
import tempfile

import pytest

from lib.build import BIN
from lib.mount import Mount, with_without
from lib.waiting import mounted


def children(pid):
    with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
        return [int(p) for p in f.read().split()]


def cmdline(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            return f.read().split(b"\0")
    except (FileNotFoundError, ProcessLookupError):  # gone before or during the read
        return []


class Handed:
    """A mount made by `procfast -o daemon=...` and served by the daemon."""

    def __init__(self, daemon, options=()):
        self.daemon = daemon
        self.path = tempfile.mkdtemp(prefix="procfast-test-")
        opts = ",".join(with_without(["daemon=" + daemon.socket] + list(options)))
        self.result = subprocess.run([BIN, "-o", opts, self.path], capture_output=True,
                                     text=True, timeout=60)

    def server(self):
        """The daemon's child that serves this mount."""
        for pid in children(self.daemon.proc.pid):
            if cmdline(pid)[-2:] == [self.path.encode(), b""]:
                return pid
        return None

    def close(self):
        if mounted(self.path):
            subprocess.run(["umount", self.path], check=False)
        os.rmdir(self.path)


@pytest.fixture
def daemon():
    sock = tempfile.mktemp(prefix="procfast-test-", suffix=".sock")
    m = Mount(["control=" + sock])
    m.socket = sock
    handed = []

    def hand_over(options=()):
        h = Handed(m, options)
        handed.append(h)
        return h
    m.hand_over = hand_over
    try:
        yield m
    finally:
        for h in handed:
            h.close()
        m.close()
        assert not os.path.exists(sock), "control socket left behind"
