"""pidns= views on kernels without the nsfs pid ioctls (before Linux 6.8): procfast
translates pids through a process in the view's namespace (cache/index/pid_translator.h).

Here, where the kernel has the ioctls, the translator's answers are compared with
theirs for every task of the host, threads included, with a container that holds a
nested pid namespace: its tasks have pids in the view, the host's others none (0).
"""
import json
import os
import subprocess
import time

import pytest

from lib.build import HELPERS
from lib.container import Container
from lib.mount import Mount
from lib.procs import kill_tree

TRANSLATE = os.path.join(HELPERS, "pid_translate")
COMM = "procfast-pidns"


def comm(pid):
    try:
        with open("/proc/%d/comm" % pid) as f:
            return f.read().strip()
    except OSError:
        return None


def translators_in(nsfile):
    """The host pids of the translators living in that pid namespace."""
    ns = os.stat(nsfile).st_ino
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit() and comm(int(name)) == COMM:
            try:
                if os.stat("/proc/%s/ns/pid" % name).st_ino == ns:
                    found.append(int(name))
            except OSError:
                pass
    return found


def nspid(pid):
    """pid's number in its own pid namespace, as a string."""
    with open("/proc/%d/status" % pid) as f:
        return [l.split()[-1] for l in f if l.startswith("NSpid:")][0]


def wait_for(cond, what, timeout=20):
    deadline = time.time() + timeout
    while not cond():
        assert time.time() < deadline, "timed out waiting for " + what
        time.sleep(0.02)


@pytest.fixture
def nested():
    """A container whose init has threads, and in it a nested pid namespace whose
    process has threads too."""
    c = Container()
    inner = subprocess.Popen(
        ["nsenter", "-t", str(c.host_pid), "-p", "--", "unshare", "--pid", "--fork",
         os.path.join(HELPERS, "threads"), "5"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, start_new_session=True)
    try:
        info = json.loads(inner.stdout.readline())
        assert info["pid"] == 1, info  # its own namespace's init
        yield c
    finally:
        kill_tree(inner)
        c.close()


def test_translator_answers_as_the_ioctls_for_every_task(nested):
    r = subprocess.run([TRANSLATE, "/proc/%d/ns/pid" % nested.host_pid], capture_output=True,
                       text=True, timeout=120)
    if r.returncode == 2 and "no nsfs pid ioctls" in r.stderr:
        pytest.skip("nothing to compare with: this kernel has no nsfs pid ioctls")
    assert r.returncode in (0, 1), r.stderr
    out = json.loads(r.stdout)
    assert out["mismatches"] == 0, out
    # the victim (init, 3 threads), unshare, the nested threads (1 + 5): in the view; everything else on the host: outside it (0)
    assert out["in_view"] >= 4 + 1 + 6, out
    assert out["outside"] > 0, out


def test_a_killed_translator_is_made_again():
    """A container's root may kill the translator, a process of its namespace: the next
    translation makes another, and the view goes on naming its readers."""
    c = Container()
    m = Mount(["pidns=/proc/%d/ns/pid" % c.host_pid, "without=pid_ioctl"])
    try:
        c.attach(m)
        assert "pids translated by a process in the namespace" in m.output(), m.output()
        nsfile = "/proc/%d/ns/pid" % c.host_pid
        me = ["/usr/bin/python3", "-c", "import os; print(os.getpid(), os.readlink('/proc/self'))"]
        r = c.view(me)
        mine, seen = r.stdout.split()
        assert mine == seen, r
        wait_for(lambda: translators_in(nsfile), "a translator in the namespace")
        # the host's forks are translated too (process events): one may be made again at once
        old = set(translators_in(nsfile))
        for pid in old:
            os.kill(pid, 9)
        wait_for(lambda: not old & set(translators_in(nsfile)), "the translators' end")
        r = c.view(me)
        mine, seen = r.stdout.split()
        assert mine == seen, r
        assert translators_in(nsfile), "no translator made again"
        # the view lists the new translator, as the namespace's own procfs does
        # (each listing's own processes come and go)
        new = [nspid(p) for p in translators_in(nsfile)]
        ls = ["sh", "-c", "ls /proc | grep '^[0-9]'"]
        a, b, a2 = (set(r.stdout.split()) for r in (c.real(ls), c.view(ls), c.real(ls)))
        assert set(new) & a & a2 & b, (new, a, b, a2)
    finally:
        c.close()
        m.close()
