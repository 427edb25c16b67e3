"""Many readers against the event thread: readers walk the mount (root listings,
stat, stat files, task/ and fd/ listings, fd link texts) while processes fork and exit
and a 200-thread process lives. Run under ThreadSanitizer by tests/run (the
daemon's log is checked for reports when the mount closes).

Afterwards: every reader finished, no request failed with an errno /proc would not
give for a process that vanished mid-walk, and the listing equals /proc's.
"""
import errno
import os
import subprocess
import threading
import time

import pytest

from lib.build import HELPERS
from test_index import NUMERIC, Threads, assert_matches, stop_all

WALK_SECONDS = 4
BUSY_ALL = 64  # more than any pool's threads (uring_threads= is at most 64)
WALKERS = 4            # C readers: list, stat, read stat
DEEP_READERS = 2       # Python readers: task/, fd/, link texts, status
# what /proc answers for a process that exits while it is being walked; other
# errors must be the ones /proc gives for the same path
VANISHED = {errno.ENOENT, errno.ESRCH}


def do(op, path):
    if op == "listdir":
        os.listdir(path)
    elif op == "read":
        with open(path, "rb") as f:
            f.read()
    else:
        os.readlink(path)


def proc_errno(op, rel):
    """The errno /proc gives for the same operation now, None if it succeeds."""
    try:
        do(op, os.path.join("/proc", rel))
        return None
    except OSError as e:
        return e.errno


def deep_walk(root, until, errors, counts):
    while time.time() < until:
        try:
            names = [n for n in os.listdir(root) if NUMERIC.match(n)]
        except OSError as e:
            errors.append(("listdir", "", e.errno))
            continue
        for name in names:
            if time.time() >= until:
                break
            for op, rel in (("listdir", name + "/task"), ("listdir", name + "/fd"),
                            ("read", name + "/status"), ("readlink", name + "/fd/0"),
                            ("readlink", name + "/exe")):
                try:
                    do(op, os.path.join(root, rel))
                    counts[0] += 1
                except OSError as e:
                    if e.errno not in VANISHED and proc_errno(op, rel) not in (e.errno, *VANISHED):
                        errors.append((op, rel, e.errno))


# uring_threads=1: over io_uring, one thread serves each CPU's requests. A request that
# waited there for the kernel (a name dropped at the root waits for the root's lock,
# which a lookup holds until it is answered) would hang the mount when that lookup is
# queued behind it: a request only expires a name, which takes no lock
# (fs/request/invalidate.h).
@pytest.mark.parametrize("options", [(), ("uring_threads=1",)], ids=["default", "one_thread"])
def test_many_readers_while_processes_fork_and_exit(mount_with, options):
    # Six readers of one uid (root) at once are more than a uid's share of a CPU's threads
    # over io_uring (3 of 4, fs/caller/fair.h), which refuses some of their requests with
    # EINTR by design (tests/transport/test_fairness.py): here one uid may use every thread.
    m = mount_with("max_busy_per_uid=%d" % BUSY_ALL, *options)
    churn, walkers, threads, errors, counts = [], [], None, [], [0]
    try:
        threads = Threads(200)
        churn = [subprocess.Popen([os.path.join(HELPERS, "forker"), "0"],
                                  stdout=subprocess.DEVNULL) for _ in range(2)]
        walkers = [subprocess.Popen([os.path.join(HELPERS, "walker"), m.path,
                                     str(WALK_SECONDS)], stdout=subprocess.PIPE, text=True)
                   for _ in range(WALKERS)]
        until = time.time() + WALK_SECONDS
        deep = [threading.Thread(target=deep_walk, args=(m.path, until, errors, counts))
                for _ in range(DEEP_READERS)]
        for t in deep:
            t.start()
        for t in deep:
            t.join()
        visits = []
        for w in walkers:
            out, _ = w.communicate(timeout=120)
            assert w.returncode == 0, out
            visits.append(int(out.split()[0]))
    finally:
        stop_all([w for w in walkers if w.poll() is None])
        stop_all(churn)
        if threads:
            threads.stop()
    assert all(v > 0 for v in visits) and counts[0] > 0, (visits, counts)
    assert not errors, "errors /proc would not give: %s" % sorted(set(errors))[:20]
    assert_matches(m, settle=5.0)
