"""Least privilege (issue 6): the daemon keeps exactly the capabilities the man page
documents (PRIVILEGES), in every thread, with empty ambient and inheritable sets and
no_new_privs, and servers with an empty bounding set (the supervisor keeps its own, for
the upgrade's execve, which no_new_privs caps at the kept set); the same after an
upgrade; and the mirror still answers as /proc for root, for callers without
capabilities and for callers holding a capability, kept or dropped.
"""
import signal

import json
import os
import re
import subprocess
import tempfile
import time

import pytest

from lib.build import BIN, ROOT
from lib.caps import cap_numbers, documented_caps
from lib.mount import Mount
from lib.users import NOBODY
from test_permissions import PROBE, check

# capability numbers, from the kernel's (uapi) header the daemon is built with


def coded_caps():
    """The capabilities fs/daemon/privileges.h keeps (between its markers)."""
    with open(os.path.join(ROOT, "fs", "daemon", "privileges.h")) as f:
        text = f.read()
    block = re.search(r"BEGIN KEPT CAPABILITIES \*/(.*?)/\* END KEPT", text, re.S)
    assert block, "fs/daemon/privileges.h has no kept-capabilities block"
    return re.findall(r"\b(CAP_\w+)\b", block.group(1).split("PROCFAST_KEPT_CAPS", 1)[1])


def mask(names):
    nums = cap_numbers()
    return sum(1 << nums[n] for n in names)


def status_fields(path):
    with open(path) as f:
        return dict(line.rstrip("\n").split(":\t", 1) for line in f if ":\t" in line)


def test_man_page_and_code_list_the_same_set():
    doc, code = documented_caps(), coded_caps()
    assert len(doc) == len(set(doc)) and len(code) == len(set(code))
    assert doc and set(doc) == set(code)
    unknown = set(doc) - set(cap_numbers())
    assert not unknown, unknown


def test_daemon_keeps_the_documented_set(mnt):
    """Every thread of the daemon: permitted = documented set (as far as it started
    with it), effective within it (workers hold a caller's set during a request; the
    main thread holds all of it), ambient and inheritable empty, no_new_privs; the
    servers' bounding set empty, the supervisor's as it started."""
    os.listdir(mnt.path)  # answered only once serving, so after the drop
    assert_documented_set(mnt)


def assert_documented_set(m):
    runner = status_fields("/proc/self/status")
    started_with = int(runner["CapPrm"], 16)
    want = mask(documented_caps()) & started_with
    assert want, "the test runner has none of the kept capabilities"
    # the supervisor (one thread) and the server it runs (fs/supervisor/supervisor.c)
    supervisor, server = m.proc.pid, m.server_pid()
    assert server != supervisor
    tasks = [(supervisor, t) for t in os.listdir("/proc/%d/task" % supervisor)]
    server_tasks = [(server, t) for t in os.listdir("/proc/%d/task" % server)]
    assert len(server_tasks) >= 3  # main, a worker, the event threads, the resize worker
    for pid, tid in tasks + server_tasks:
        try:
            st = status_fields("/proc/%d/task/%s/status" % (pid, tid))
        except (FileNotFoundError, ProcessLookupError):  # gone before or during the read
            continue  # an idle worker that just exited
        eff = int(st["CapEff"], 16)
        assert int(st["CapPrm"], 16) == want, (tid, st["CapPrm"], hex(want))
        assert eff & ~want == 0, (tid, st["CapEff"])
        bounding = runner["CapBnd"] if pid == supervisor else "0" * 16
        assert st["CapBnd"] == bounding, (pid, tid, st["CapBnd"])
        assert int(st["CapAmb"], 16) == 0, (tid, st["CapAmb"])
        assert int(st["CapInh"], 16) == 0, (tid, st["CapInh"])
        assert st["NoNewPrivs"] == "1", tid
        if tid == str(pid):
            assert eff == want, st["CapEff"]


def spawn(cmd, uid=None, caps=None):
    """A sleeping process, optionally as uid with an ambient capability."""
    pre = []
    if uid is not None:
        pre = ["setpriv", "--reuid=%d" % uid, "--regid=%d" % uid, "--clear-groups"]
        if caps:
            pre += ["--inh-caps=+" + caps, "--ambient-caps=+" + caps]
    p = subprocess.Popen(pre + ["env", "PROCFAST_SECRET=%d" % os.getpid()] + cmd)
    deadline = time.time() + 10
    while True:
        try:
            with open("/proc/%d/environ" % p.pid, "rb") as f:
                if b"PROCFAST_SECRET" in f.read():
                    break
        except OSError:
            pass
        assert time.time() < deadline, "helper did not start"
        time.sleep(0.01)
    return p


@pytest.fixture
def sleeper():
    started = []

    def start(uid=None, caps=None):
        p = spawn(["sleep", "3600"], uid, caps)
        started.append(p)
        return p.pid
    yield start
    for p in started:
        p.kill()
        p.wait()


SECRETS = ["{pid}/environ", "{pid}/maps", "{pid}/fd", "{pid}/cwd", "{pid}/exe", "{pid}/fd/0"]


def ops_for(pid):
    kinds = {"environ": "read", "maps": "read", "fd": "listdir"}
    return [[kinds.get(t.rsplit("/", 1)[1], "readlink"), t.format(pid=pid), None, False]
            for t in SECRETS]


def probe(ops, mnt, prefix):
    r = subprocess.run(prefix + ["/usr/bin/python3", "-c", PROBE, "/proc", mnt.path,
                                 json.dumps(ops)],
                       capture_output=True, text=True, timeout=60, cwd="/")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_root_still_reads_other_users_secrets(mnt, sleeper):
    """Root through the mount after the drop: another user's environ, maps, fd
    links equal /proc's, as a full root and as a root holding only CAP_SYS_PTRACE and
    CAP_DAC_READ_SEARCH (a caller the worker switches to)."""
    pid = sleeper(uid=NOBODY)
    for prefix in ([], ["setpriv", "--bounding-set=-all,+sys_ptrace,+dac_read_search",
                        "--inh-caps=-all"]):
        res = check(probe(ops_for(pid), mnt, prefix))
        assert all(v[0] == "ok" for v in res.values()), (prefix, res)
        assert "PROCFAST_SECRET" in res[("read", "%d/environ" % pid, None)][1]


def test_upgrade_keeps_the_documented_set(sleeper):
    """SIGHUP executes the binary again (fs/supervisor/supervisor.c): the upgraded supervisor and
    its server hold the same capabilities as before, so root still reads another user's
    secrets (with an empty bounding set the new binary would have none)."""
    m = Mount()
    try:
        pid = sleeper(uid=NOBODY)
        old_server = m.server_pid()
        m.proc.send_signal(signal.SIGHUP)
        deadline = time.time() + 10
        while "serving again" not in m.output() or m.server_pid() in (old_server, m.proc.pid):
            assert time.time() < deadline, "no upgraded server:\n" + m.output()
            time.sleep(0.05)
        os.listdir(m.path)
        assert_documented_set(m)
        res = check(probe(ops_for(pid), m, []))
        assert all(v[0] == "ok" for v in res.values()), res
        assert "PROCFAST_SECRET" in res[("read", "%d/environ" % pid, None)][1]
    finally:
        m.close()


def test_unprivileged_caller_still_refused(mnt, sleeper):
    pid = sleeper()  # root's
    res = check(probe(ops_for(pid), mnt, ["setpriv", "--reuid=%d" % NOBODY,
                                          "--regid=%d" % NOBODY, "--clear-groups",
                                          "--inh-caps=-all"]))
    assert res[("read", "%d/environ" % pid, None)] == ["err", "EACCES"]
    assert res[("listdir", "%d/fd" % pid, None)] == ["err", "EACCES"]


def test_caller_holding_a_kept_capability(mnt, sleeper):
    """CAP_KILL (a container default) is kept for the ptrace rule: a caller holding it
    reads a same-user peer holding it, as on /proc."""
    pid = sleeper(uid=NOBODY, caps="kill")
    prefix = ["setpriv", "--reuid=%d" % NOBODY, "--regid=%d" % NOBODY, "--clear-groups",
              "--inh-caps=+kill", "--ambient-caps=+kill"]
    res = check(probe(ops_for(pid) + [["read", "%d/status" % pid, None, True]], mnt, prefix))
    assert res[("read", "%d/environ" % pid, None)][0] == "ok"


def test_caller_holding_a_dropped_capability(mnt, sleeper):
    """CAP_IPC_LOCK is dropped: the caller is still served (with what the daemon kept),
    and sees what the man page says: EACCES on a peer's ptrace-protected files where the
    peer holds the dropped capability, the rest as on /proc."""
    assert "CAP_IPC_LOCK" not in documented_caps()
    pid = sleeper(uid=NOBODY, caps="ipc_lock")
    plain = sleeper(uid=NOBODY)
    prefix = ["setpriv", "--reuid=%d" % NOBODY, "--regid=%d" % NOBODY, "--clear-groups",
              "--inh-caps=+ipc_lock", "--ambient-caps=+ipc_lock"]
    rows = probe(ops_for(pid) + ops_for(plain) + [["read", "%d/status" % pid, None, True]],
                 mnt, prefix)
    by = {r[1]: r for r in rows}
    environ = by["%d/environ" % pid]
    assert environ[3][0] == "ok" and environ[4] == ["err", "EACCES"], environ
    check([r for r in rows if not r[1].startswith("%d/" % pid) or r[1].endswith("/status")])


def test_unprivileged_daemon_keeps_working():
    """A user's own mount (noallow_other, no capabilities): nothing dropped, no
    no_new_privs, serves its user, and unmounts itself on SIGTERM. Needs a /dev/fuse
    the user may open: a private mount namespace gets one."""
    script = r'''
set -eu
dev=$(mktemp -d /tmp/procfast-dev-XXXXXX)
mount -t tmpfs none "$dev"; mknod -m 666 "$dev/fuse" c 10 229; mount --bind "$dev/fuse" /dev/fuse
mp=$(mktemp -d /tmp/procfast-test-XXXXXX); chown 65534:65534 "$mp"
as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all "$@"; }
setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all \
    "$BIN" -f -o noallow_other "$mp" >"$mp.log" 2>&1 & pid=$!
for i in $(seq 400); do grep -q " $mp " /proc/mounts && break; sleep 0.05; done
grep -E '^(CapPrm|CapEff|NoNewPrivs):' /proc/$pid/status
as_nobody sh -c 'cmp /proc/self/cmdline '"$mp"'/self/cmdline && grep -q "^Uid:.*65534" '"$mp"'/self/status' && echo served=1
kill -TERM $pid; rc=0; wait $pid || rc=$?
for i in $(seq 200); do grep -q " $mp " /proc/mounts || break; sleep 0.05; done
echo exit=$rc; echo mounted=$(grep -c " $mp " /proc/mounts || true)
rmdir "$mp" || umount -l "$mp"; cat "$mp.log" >&2; rm -f "$mp.log"
umount /dev/fuse; umount "$dev"; rmdir "$dev"
'''
    r = subprocess.run(["unshare", "-m", "--propagation", "private", "bash", "-c", script],
                       env=dict(os.environ, BIN=BIN), capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    out = dict(line.split(":\t", 1) if ":\t" in line else line.split("=", 1)
               for line in r.stdout.split("\n") if line)
    assert int(out["CapPrm"], 16) == 0 and int(out["CapEff"], 16) == 0, r.stdout
    assert out["NoNewPrivs"] == "0", r.stdout
    assert out.get("served") == "1", r.stdout + r.stderr
    assert out["mounted"] == "0", r.stdout + r.stderr
    bad = [m for m in ("AddressSanitizer", "runtime error:", "ThreadSanitizer") if m in r.stderr]
    assert not bad, r.stderr
