"""procfast mounted the way users mount it: mount(8) runs mount.fuse3, which runs
`procfast` found in the system PATH; umount(8) ends the daemon.

Used by test_mount_helper.py (the build under test, linked into /usr/local/sbin) and
test_packaging.py (the installed package's /usr/sbin/procfast).
"""
import os
import shutil
import signal
import subprocess
import tempfile
import time

from lib.mount import is_ns_helper

# The PATH mount(8) gives helpers when it sanitizes the environment: only the
# system's directories, so the daemon is the procfast installed there.
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def mount_entry(path):
    """(source, fstype, options) of the mount at path in /proc/self/mounts, or None."""
    with open("/proc/self/mounts") as f:
        for line in f:
            source, target, fstype, options = line.split()[:4]
            if target == path:
                return source, fstype, options.split(",")
    return None


def alive(pid):
    """True while pid runs (a zombie has ended)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


def parent(pid):
    """pid's parent, or None once pid is gone."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except (FileNotFoundError, ProcessLookupError):
        return None


def daemons(mountpoint):
    """Live procfast processes with mountpoint among their arguments."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % name, "rb") as f:
                args = f.read().split(b"\0")
            exe = os.readlink("/proc/%s/exe" % name)
        except OSError:
            continue
        if os.path.basename(exe).startswith("procfast") and mountpoint.encode() in args \
                and alive(int(name)) and not is_ns_helper(int(name)):
            found.append(int(name))
    return found


def wait_for(predicate, seconds):
    deadline = time.time() + seconds
    while not predicate():
        if time.time() > deadline:
            return False
        time.sleep(0.05)
    return True


class SystemMount:
    """`mount ARGS... PATH` with the system PATH; the daemon it started is self.pid.

    The daemon goes to the background, so its stderr is lost: sanitizer reports are
    written under a log directory instead and a report fails close()."""

    def __init__(self, path, *args):
        self.path = path
        self.logdir = tempfile.mkdtemp(prefix="procfast-test-log-")
        san = "log_path=%s/san" % self.logdir
        self.env = dict(os.environ, PATH=SYSTEM_PATH,
                        ASAN_OPTIONS=":".join(filter(None, [os.environ.get("ASAN_OPTIONS"), san])),
                        UBSAN_OPTIONS=":".join(filter(None, [os.environ.get("UBSAN_OPTIONS"), san])))
        self.pid = None
        r = self.run(["mount"] + list(args) + [path])
        if r.returncode:
            self.close()
            raise AssertionError("mount %s %s: rc %d: %s" % (" ".join(args), path, r.returncode,
                                                             r.stderr))
        # the supervisor and the server it runs (fs/supervisor/supervisor.c)
        # (the process mount.fuse3 ran exits once it went to the background: only the
        # two that stay count)
        found = []

        def settled():
            found[:] = daemons(path)
            return len(found) == 2 and all(parent(p) for p in found)
        wait_for(settled, 10)
        self.pids = sorted(found)
        sups = [p for p in self.pids if parent(p) not in self.pids]
        if len(self.pids) != 2 or len(sups) != 1:
            self.pid = None
            self.close()
            raise AssertionError("expected a procfast supervisor and server for %s, found %s"
                                 % (path, self.pids))
        self.pid = sups[0]

    def run(self, cmd):
        return subprocess.run(cmd, capture_output=True, text=True, timeout=60, env=self.env,
                              stdin=subprocess.DEVNULL)

    def p(self, *parts):
        return os.path.join(self.path, *[str(x) for x in parts])

    def umount(self):
        """umount(8); True once the mount is gone and the daemon has exited."""
        r = self.run(["umount", self.path])
        assert r.returncode == 0, "umount %s: %s" % (self.path, r.stderr)
        return mount_entry(self.path) is None and \
            (self.pid is None or wait_for(lambda: not any(map(alive, self.pids)), 20))

    def close(self):
        """Undo everything, whatever state the test left; fails on sanitizer reports."""
        if mount_entry(self.path):
            if self.run(["umount", self.path]).returncode:
                self.run(["umount", "-l", self.path])
        if self.pid and not wait_for(lambda: not any(map(alive, self.pids)), 20):
            for pid in self.pids:  # the daemon this mount started
                if alive(pid):
                    os.kill(pid, signal.SIGKILL)
            wait_for(lambda: not any(map(alive, self.pids)), 10)
        reports = ""
        for name in os.listdir(self.logdir):
            with open(os.path.join(self.logdir, name), errors="replace") as f:
                reports += f.read()
        shutil.rmtree(self.logdir)
        assert not reports, "sanitizer report from the daemon:\n" + reports[-4000:]

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
