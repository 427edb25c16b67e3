"""The soak (issue 6), bounded for the suite: 16 readers walk the whole mount (4 of them
as nobody) for SOAK_SECONDS (default 15; the whole test takes ~25 s) while a churn process forks and exits and a
5,000-thread process lives (tests/lib/soak.py; bench/soak.sh runs the same for minutes).
Afterwards the daemon's fds are back to their idle count exactly and its RSS within 1 MiB
of idle (once the kernel dropped the names it caches),
no request failed with an errno /proc would not give, and the root listing equals /proc's.
"""
import os

from lib import soak

SECONDS = float(os.environ.get("SOAK_SECONDS", "15"))
BUSY_ALL = 64  # more than any pool's threads (uring_threads= is at most 64)


def test_soak(mount_with):
    # 12 readers of one uid (root) at once are more than a uid's share of a CPU's
    # threads over io_uring (fs/caller/fair.h: 3 of 4), which refuses some of their requests
    # with EINTR by design (tests/transport/test_fairness.py): here one uid may use every thread.
    m = mount_with("max_busy_per_uid=%d" % BUSY_ALL)
    r = soak.run(m.path, m.server_pid(), SECONDS)
    summary = "ops %s, errors %s, classes %s, idle %s, end of load %s, after %s, " \
        "after a dentry drop %s" % (r["ops"], r["errors"], r["classes"], r["idle"],
                                    r["end_of_load"], r["after"], r["after_dentry_drop"])
    print(summary)
    assert r["reader_failures"] == 0, summary
    assert sum(r["ops"].values()) > 1000, "the readers did little: " + summary
    assert r["ops"].get("read") and r["ops"].get("readlink") and r["ops"].get("list"), summary
    assert not r["bad"], "errnos /proc would not give:\n%s\n%s" % ("\n".join(r["bad"]), summary)
    assert r["listing"] == [[], []], "listing (missing, extra): %s" % (r["listing"],)
    assert r["after"]["fds"] == r["idle"]["fds"], summary
    assert r["after_dentry_drop"]["fds"] == r["idle"]["fds"], summary
    # RSS within 1 MiB of idle once the kernel has dropped the names it caches (the
    # nodes of live processes' entries live as long as those; see soak.run). Under
    # AddressSanitizer freed memory sits in its quarantine: RSS says nothing there, and
    # LeakSanitizer checks the exit instead (Mount.close).
    if not soak.sanitized(m.server_pid()):
        assert r["after_dentry_drop"]["rss_kib"] <= r["idle"]["rss_kib"] + 1024, summary
    assert m.proc.poll() is None
