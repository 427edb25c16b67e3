"""Shared fixtures: a real procfast mount, test processes, and tool runners.

Every test compares the mount with the real /proc, so the fixtures here only start
and stop things; they never decide what is "right".
"""
import os
import signal
import subprocess
import tempfile
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.environ.get("PROCFAST_BIN", os.path.join(ROOT, "build", "procfast"))
HELPERS = os.environ.get("PROCFAST_HELPERS", os.path.join(os.path.dirname(BIN), "tests"))


class Mount:
    """One procfast daemon in the foreground (-f) on a fresh directory."""

    def __init__(self, options=()):
        self.path = tempfile.mkdtemp(prefix="procfast-test-")
        self.log = tempfile.NamedTemporaryFile(prefix="procfast-log-", delete=False)
        args = [BIN, "-f"]
        for o in options:
            args += ["-o", o]
        args.append(self.path)
        self.proc = subprocess.Popen(args, stdout=self.log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL)
        deadline = time.time() + 20
        while not self._mounted():
            if self.proc.poll() is not None:
                raise RuntimeError("procfast exited %d: %s" % (self.proc.returncode, self.output()))
            if time.time() > deadline:
                self.close()
                raise RuntimeError("procfast did not mount: " + self.output())
            time.sleep(0.02)

    def _mounted(self):
        with open("/proc/self/mounts") as f:
            return any(line.split()[1] == self.path for line in f)

    def output(self):
        with open(self.log.name, errors="replace") as f:
            return f.read()

    def p(self, *parts):
        return os.path.join(self.path, *[str(x) for x in parts])

    def close(self):
        """Unmount, wait for the daemon, and fail on sanitizer reports or a bad exit."""
        if self._mounted():
            subprocess.run(["fusermount3", "-u", self.path], check=False)
            if self._mounted():
                subprocess.run(["umount", "-l", self.path], check=False)
        try:
            rc = self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = self.proc.wait()
        out = self.output()
        os.unlink(self.log.name)
        try:
            os.rmdir(self.path)
        except OSError:
            pass
        bad = [m for m in ("AddressSanitizer", "runtime error:", "LeakSanitizer") if m in out]
        assert not bad and rc == 0, "procfast exit %s, log:\n%s" % (rc, out[-4000:])


@pytest.fixture(scope="session")
def mnt():
    """The default mount (source=/proc), shared by the read-only tests."""
    m = Mount()
    yield m
    m.close()


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


def over_proc(mount, cmd, **kw):
    """Run a shell command in a private mount namespace with the mount bound over /proc."""
    script = "mount --bind %s /proc && exec %s" % (mount.path, cmd)
    return subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", script],
                          capture_output=True, text=True, timeout=120, **kw)


def on_proc(cmd, **kw):
    """The same command against the real /proc, for comparison."""
    return subprocess.run(["sh", "-c", cmd], capture_output=True, text=True, timeout=120, **kw)


def kill_tree(p):
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    p.wait()
