"""A "container" made with unshare (a pid + mount namespace whose init is the victim
helper, its /proc a real procfs mounted inside), a process of it whose /proc is a
procfast view (procfast-attach), and a tool's output compared in the two."""
import json
import os
import subprocess
import time

import pytest

from lib.build import BIN, HELPERS
from lib.procs import kill_tree

ATTACH = os.path.join(os.path.dirname(BIN), "procfast-attach")
TRIES = 8


class Container:
    def __init__(self, extra=()):
        """extra: more namespaces for it (unshare's options)."""
        self.init = subprocess.Popen(
            ["unshare", "--pid", "--fork", "--mount", "--mount-proc", "--propagation", "private"]
            + list(extra) + [os.path.join(HELPERS, "victim"), "--threads", "3"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, start_new_session=True)
        self.info = json.loads(self.init.stdout.readline())
        assert self.info["pid"] == 1, self.info
        # the victim's pid outside: the child of unshare's forked child
        self.host_pid = int(open("/proc/%d/task/%d/children" % (self.init.pid, self.init.pid))
                            .read().split()[0])
        self.viewer = None

    def nsenter(self, target, cmd, **kw):
        return subprocess.run(["nsenter", "-t", str(target), "-a", "--"] + cmd,
                              capture_output=True, text=True, timeout=60, **kw)

    def attach(self, mount):
        """A process of the namespace with a private mount namespace whose /proc is the view."""
        self.viewer = subprocess.Popen(
            ["nsenter", "-t", str(self.host_pid), "-a", "--",
             "unshare", "-m", "--propagation", "private", "sleep", "3600"],
            start_new_session=True)
        deadline = time.time() + 10
        while True:
            kids = open("/proc/%d/task/%d/children" % (self.viewer.pid, self.viewer.pid)).read()
            if kids.split():
                sleeper = int(kids.split()[0])
                if os.readlink("/proc/%d/exe" % sleeper).endswith("sleep"):
                    break
            assert time.time() < deadline, "viewer never started"
            time.sleep(0.02)
        self.viewer_pid = sleeper
        r = subprocess.run([ATTACH, str(sleeper), mount.path, "/proc"], capture_output=True,
                           text=True, timeout=30)
        assert r.returncode == 0, r.stderr

    def real(self, cmd):
        return self.nsenter(self.host_pid, cmd)

    def view(self, cmd):
        return self.nsenter(self.viewer_pid, cmd)

    def close(self):
        if self.viewer:
            kill_tree(self.viewer)
        self.init.stdin.close()
        try:
            self.init.wait(timeout=10)
        except subprocess.TimeoutExpired:
            kill_tree(self.init)
        self.init.stdout.close()


def compare(c, cmd, transform):
    """Retry until two runs on the real procfs agree; the view's run must agree with them."""
    for _ in range(TRIES):
        a = transform(c.real(cmd))
        b = transform(c.view(cmd))
        a2 = transform(c.real(cmd))
        if a == a2:
            assert b == a, "%r differs in the view\nprocfs:\n%s\nview:\n%s" % (cmd, a, b)
            return a
    pytest.fail("%r never stable on the real procfs" % cmd)


def without_self(cmdname):
    """Output lines split in fields, minus the tool's own process (its pid differs)."""
    def transform(r):
        assert r.returncode == 0, r.stderr
        return [l.split() for l in r.stdout.splitlines() if cmdname not in l]
    return transform


def ps_ef_rows(cmdname):
    """without_self for `ps -ef`, minus its C column. A view serves the container's own
    uptime (resources=init, its default): ps divides a process's CPU time by the uptime
    less the process's start time, which is negative in a container younger than the
    host's boot, and prints 0 there, as under LXCFS; a real procfs inside prints the
    host-relative figure. The view's ps rounds to 0 what that figure shows for a process
    that used CPU at start (a sanitized victim)."""
    rows = without_self(cmdname)
    return lambda r: [row[:3] + row[4:] for row in rows(r)]
