"""One procfast daemon on a fresh directory, as the tests start and stop it; the
options every daemon of the tests gets (PROCFAST_WITHOUT)."""
import os
import subprocess
import tempfile
import time

from lib.build import BIN
from lib.fuse_conn import abort_connection, connection_of

# PROCFAST_WITHOUT=pidfs:pid_ioctl:...: every daemon the tests start behaves as on a kernel
# without those interfaces (-o without=, fs/lib/kernel_feature.h), to test the fallbacks here.
WITHOUT = os.environ.get("PROCFAST_WITHOUT", "")
# Threads of one uid a test may have in requests at once and none refused: a uid may
# have all but one of a CPU's io_uring queue's threads (4 by default) busy, and a
# request past that fails with EINTR by design (fs/caller/fair.h). The requests of
# four threads can all meet on one CPU's queue (beside a CPU hog, 1 run in many); a
# test that needs more mounts with max_busy_per_uid= (test_snapshot's snap).
SAME_UID_AT_ONCE = 3


def with_without(options):
    """options (-o values) with PROCFAST_WITHOUT's names added to their without=."""
    options = list(options)
    if not WITHOUT:
        return options
    for i, o in enumerate(options):
        if o.startswith("without="):
            options[i] = o + ":" + WITHOUT
            return options
    return options + ["without=" + WITHOUT]


def is_ns_helper(pid):
    """A server's maker of helper processes, or one of them (fs/caller/ns_helper.h): a
    process of the daemon's that is neither supervisor nor server."""
    try:
        with open("/proc/%d/comm" % pid) as f:
            return f.read().strip() == "procfast-nsh"
    except OSError:
        return False


class Mount:
    """One procfast daemon in the foreground (-f) on a fresh directory; `prefix` is a
    command that runs it (nsenter into a pid namespace, say)."""

    def __init__(self, options=(), prefix=(), binary=None):
        self.exit_status = 0  # what close() requires of the daemon
        self.path = tempfile.mkdtemp(prefix="procfast-test-")
        self.log = tempfile.NamedTemporaryFile(prefix="procfast-log-", delete=False)
        args = list(prefix) + [binary or BIN, "-f"]
        for o in with_without(options):
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
        # Served once a listing returns: the start-up line is in the log by then.
        os.listdir(self.path)
        # The rings start after INIT (fs/transport/transport.c), and /dev/fuse serves until
        # they do: wait for the line that says which serves, so that tests know.
        while "once INIT accepts it" in self.output() and "serving through" not in self.output():
            if time.time() > deadline:
                self.close()
                raise RuntimeError("no transport settled: " + self.output())
            time.sleep(0.02)

    def server_pid(self):
        """The process that serves: the supervisor's child (see fs/supervisor/supervisor.c), or the
        daemon itself with -o norestart."""
        deadline = time.time() + 10
        while True:
            kids = [int(k) for k in open("/proc/%d/task/%d/children" % (
                self.proc.pid, self.proc.pid)).read().split() if not is_ns_helper(int(k))]
            if kids:
                return kids[0]
            if self.proc.poll() is not None or time.time() > deadline:
                return self.proc.pid
            time.sleep(0.02)

    def _mounted(self):
        with open("/proc/self/mounts") as f:
            return any(line.split()[1] == self.path for line in f)

    def _connection(self):
        """The FUSE connection number, without a request to a daemon that may not answer."""
        return connection_of(self.path)

    def output(self):
        with open(self.log.name, errors="replace") as f:
            return f.read()

    def p(self, *parts):
        return os.path.join(self.path, *[str(x) for x in parts])

    def over_uring(self):
        """Whether the rings serve (fs/transport/transport.c logs it once they do)."""
        out = self.output()
        return "serving through io_uring" in out or " over io_uring, " in out

    def close(self):
        """Unmount, wait for the daemon, and fail on sanitizer reports or a bad exit."""
        conn = self._connection()
        if self._mounted():
            subprocess.run(["fusermount3", "-u", self.path], check=False,
                           stderr=subprocess.DEVNULL)
            if self._mounted():
                # Busy (a test still holds something): detach it, and if the
                # daemon then waits for the last user, abort the connection.
                subprocess.run(["umount", "-l", self.path], check=False)
        try:
            rc = self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            # Still connected: the daemon waits for the last user of a detached
            # mount, so abort the connection. Already gone: there is nothing to
            # abort, the daemon is only slow to end (a loaded machine: an ASan
            # build's exit-time leak check took 8 s at load 7 on two CPUs).
            # A daemon that never ends is still killed, and fails below.
            if conn is not None:
                abort_connection(conn)
            try:
                rc = self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                rc = self.proc.wait()
        out = self.output()
        os.unlink(self.log.name)
        try:
            os.rmdir(self.path)
        except OSError:
            pass
        bad = [m for m in ("AddressSanitizer", "runtime error:", "LeakSanitizer", "ThreadSanitizer")
               if m in out]
        assert not bad and rc == self.exit_status, "procfast exit %s, log:\n%s" % (rc, out[-4000:])
