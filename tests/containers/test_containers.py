"""The container recipes of the README and procfast(8), run for real:
(a) a monitoring agent that gets the host's view bound at /host/proc;
(b) a running container that gets its own view over /proc from the OCI hook
    (packaging/containers/procfast-oci-hook), since runc refuses a non-procfs /proc
    at creation."""
import os
import subprocess
import tempfile
import time

import pytest

from lib.build import BIN, ROOT
from lib.container import ATTACH, Container
from lib.mount import Mount, is_ns_helper
from lib.procs import kill_tree

HOOK = os.path.join(ROOT, "packaging", "containers", "procfast-oci-hook")

AGENT = r'''
import os, sys
# what an exporter given --path.procfs=/host/proc does: list, then read each stat
base, want = sys.argv[1], int(sys.argv[2])
pids = sorted(int(p) for p in os.listdir(base) if p.isdigit())
with open("%s/%d/stat" % (base, want)) as f:
    print(want in pids, f.read().split()[1], os.path.ismount(base))
'''


def test_monitoring_agent_reads_host_view_at_host_proc(mnt, victim):
    """The bind a container runtime makes for "-v /run/procfast:/host/proc": a bind of the
    mount in another mount namespace, read by an agent there."""
    root = tempfile.mkdtemp(prefix="procfast-test-agent-")
    host_proc = os.path.join(root, "host", "proc")
    os.makedirs(host_proc)
    try:
        r = subprocess.run(
            ["unshare", "-m", "--propagation", "private", "sh", "-c",
             "mount --bind -o ro %s %s && exec /usr/bin/python3 -c '%s' %s %d"
             % (mnt.path, host_proc, AGENT, host_proc, victim.pid)],
            capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        assert r.stdout.split() == ["True", "(victim)", "True"], r.stdout
    finally:
        os.rmdir(host_proc)
        os.rmdir(os.path.dirname(host_proc))
        os.rmdir(root)


def hook(action, state, views, control="/nonexistent"):
    env = dict(os.environ, PROCFAST_BIN=BIN, PROCFAST_ATTACH=ATTACH, PROCFAST_VIEWS=views,
               PROCFAST_CONTROL=control)
    return subprocess.run([HOOK, action], input=state, capture_output=True, text=True,
                          timeout=60, env=env)


@pytest.fixture(params=["own daemon", "handed over"])
def host_daemon(request):
    """None: each view gets a daemon of its own; else the host's daemon, listening
    for views to serve (as procfast.service does)."""
    if request.param == "own daemon":
        yield None
        return
    sock = tempfile.mktemp(prefix="procfast-test-", suffix=".sock")
    m = Mount(["control=" + sock])
    m.socket = sock
    yield m
    m.close()


def test_oci_hook_gives_a_running_container_its_view(host_daemon):
    views = tempfile.mkdtemp(prefix="procfast-test-views-")
    control = host_daemon.socket if host_daemon else "/nonexistent"
    c = Container()
    try:
        r = hook("start", '{"ociVersion": "1.0.2", "id": "web", "status": "running", '
                          '"pid": %d, "bundle": "/x"}' % c.host_pid, views, control)
        assert r.returncode == 0, r.stderr
        view = os.path.join(views, "web")
        inside = c.real(["sh", "-c", "grep ' /proc ' /proc/self/mounts; ps -eo pid,comm"])
        assert inside.returncode == 0, inside.stderr
        lines = inside.stdout.splitlines()
        assert any("fuse.procfast" in l for l in lines), lines
        ps = [l.split() for l in lines if not l.startswith(("proc", "procfast"))]
        assert ["1", "victim"] in ps, ps
        # the container's processes only, with the container's pids
        assert sorted(p for p in os.listdir(view) if p.isdigit())[0] == "1"
        daemons = [p for p in subprocess.run(["pgrep", "-f", "pidns=/proc/%d/ns/pid" % c.host_pid],
                                             capture_output=True, text=True).stdout.split()
                   if not is_ns_helper(int(p))]
        if host_daemon:  # one process: a server of the host's daemon
            parents = [open("/proc/%s/stat" % p).read().rsplit(")", 1)[1].split()[1]
                       for p in daemons]
            assert parents == [str(host_daemon.proc.pid)], daemons
        else:
            assert len(daemons) == 2, daemons  # supervisor and server
    finally:
        c.close()
        r = hook("stop", '{"id": "web"}', views, control)
    assert r.returncode == 0, r.stderr
    # with the container gone and the view unmounted, its daemons end
    deadline = time.time() + 10
    while subprocess.run(["pgrep", "-f", "pidns=/proc/%d/ns/pid" % c.host_pid],
                         capture_output=True).returncode == 0:
        assert time.time() < deadline, "view daemons left behind"
        time.sleep(0.05)
    assert not os.path.exists(os.path.join(views, "web"))
    os.rmdir(views)


def test_oci_hook_refuses_bad_state():
    views = tempfile.mkdtemp(prefix="procfast-test-views-")
    try:
        for state in ('{"pid": 1}', '{"id": "../etc", "pid": 1}', '{"id": "x"}'):
            r = hook("start", state, views)
            assert r.returncode != 0 and r.stderr.startswith("procfast-oci-hook:"), (state, r)
        assert os.listdir(views) == []
    finally:
        os.rmdir(views)
