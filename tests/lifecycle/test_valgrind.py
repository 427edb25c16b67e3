"""One mount -> walk -> unmount cycle of the daemon under valgrind's memcheck: no
memory error and no leak (definite, indirect or possible) when it exits.

tests/run runs this once, against the plain build (PROCFAST_VALGRIND=1); elsewhere it
is skipped, as it needs valgrind and takes a while.
"""
import os
import re
import subprocess
import tempfile
import time

import pytest

from lib.build import BIN
from lib.waiting import mounted

pytestmark = pytest.mark.skipif(os.environ.get("PROCFAST_VALGRIND") != "1",
                                reason="run by tests/run with PROCFAST_VALGRIND=1")

ERROR_EXIT = 99
SUPP = os.path.join(os.path.dirname(os.path.abspath(__file__)), "valgrind.supp")


def walk(mp):
    """A listing of the root, and of this process: its directory, fd/ links, task/,
    and reads of a few files of each kind (short, seq_file, per-thread, global)."""
    me = os.path.join(mp, str(os.getpid()))
    visited = len(os.listdir(mp)) + len(os.listdir(me))
    for name in os.listdir(me + "/fd"):
        try:
            os.readlink(os.path.join(me, "fd", name))
        except OSError:
            pass  # an fd closed meanwhile (the listing's own)
        visited += 1
    for tid in os.listdir(me + "/task"):
        with open(os.path.join(me, "task", tid, "stat"), "rb") as f:
            visited += bool(f.read())
    for rel in ("status", "stat", "cmdline", "environ", "maps", "limits", "mountinfo",
                "../stat", "../meminfo", "../uptime", "../sys/kernel/pid_max"):
        with open(os.path.join(me, rel), "rb") as f:
            visited += bool(f.read())
    for rel in ("cwd", "exe", "../self", "../thread-self"):
        visited += bool(os.readlink(os.path.join(me, rel)))
    return visited


def test_mount_walk_unmount_without_leak_or_error():
    mp = tempfile.mkdtemp(prefix="procfast-test-")
    log = tempfile.NamedTemporaryFile(prefix="procfast-valgrind-", delete=False).name
    started = time.time()
    daemon = subprocess.Popen(
        ["valgrind", "--quiet", "--child-silent-after-fork=yes", "--leak-check=full",
         "--show-leak-kinds=definite,indirect,possible",
         "--errors-for-leak-kinds=definite,indirect,possible",
         "--error-exitcode=%d" % ERROR_EXIT, "--suppressions=" + SUPP, "--log-file=" + log, BIN, "-f", mp],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    try:
        deadline = time.time() + 300  # valgrind is slow to start on a loaded machine
        while not mounted(mp):
            assert daemon.poll() is None, open(log).read()
            assert time.time() < deadline, "procfast did not mount under valgrind"
            time.sleep(0.1)
        t0 = time.time()
        assert walk(mp) > 20
        print("mounted after %.1f s, walked in %.1f s" % (t0 - started, time.time() - t0))
    finally:
        if mounted(mp):
            subprocess.run(["fusermount3", "-u", mp], check=False)
        try:
            rc = daemon.wait(timeout=120)
        except subprocess.TimeoutExpired:
            daemon.kill()
            rc = daemon.wait()
            if mounted(mp):
                subprocess.run(["umount", "-l", mp], check=False)
        os.rmdir(mp)
    print("unmounted and exited after %.1f s" % (time.time() - started))
    with open(log) as f:
        report = f.read()
    os.unlink(log)
    # valgrind 3.19 does not know pidfd_open (434): procfast falls back to reading status
    report = re.sub(r"--\d+-- (WARNING: unhandled amd64-linux syscall: 434|You may be|Read the file|"
                    r"Nevertheless we|it at http).*\n", "", report)
    # --quiet: memcheck prints nothing unless it found an error or a leak
    assert rc == 0, "procfast under valgrind exited %d:\n%s" % (rc, report[:8000])
    assert not re.search(r"definitely lost|indirectly lost|possibly lost|Invalid |"
                         r"uninitialised|ERROR SUMMARY: [1-9]", report), report[:8000]
