"""procfs's own options (hidepid=, gid=, subset=pid) with the kernel's semantics.

Each case mounts procfast with the options and a real procfs with the same options, then
an unprivileged probe (test_permissions.py) performs the same operations on both. Root
reads the hidden entries through the mount first, so that a name or attributes cached
in the kernel for root would show up for the unprivileged caller.
"""
import os
import subprocess
import tempfile

import pytest

from lib.users import NOBODY
from test_permissions import as_user, check


@pytest.fixture
def real_procfs():
    made = []

    def make(options):
        d = tempfile.mkdtemp(prefix="procfast-test-realproc-")
        subprocess.run(["mount", "-t", "proc", "-o", options, "proc", d], check=True)
        made.append(d)
        return d
    yield make
    for d in made:
        subprocess.run(["umount", d], check=False)
        os.rmdir(d)


def ops_for(root_pid, other_pid):
    r, o = str(root_pid), str(other_pid)
    names = [r, o, "1", "{self}", "self", "thread-self", "meminfo", "sys", "net"]
    return [
        ["listdir_subset", "", names, False],
        ["stat", r, None, False], ["stat", o, None, False], ["stat", "{self}", None, False],
        ["stat", "1", None, False], ["stat", "meminfo", None, False],
        ["read", r + "/status", None, False], ["read", o + "/cmdline", None, False],
        ["listdir", r, None, False], ["listdir", r + "/task", None, False],
        ["stat", r + "/task/" + r, None, False], ["readlink", r + "/exe", None, False],
        ["readlink", r + "/cwd", None, False], ["listdir", r + "/fd", None, False],
        ["read_drop", "{self}/status", ["voluntary_ctxt", "nonvoluntary_ctxt"], True],
        ["readlink", "self", None, False], ["listdir", "self/fd", None, False],
    ]


def warm_as_root(mnt, pids):
    """Root's lookups fill the kernel's caches with names the probe must not see."""
    for p in pids:
        for rel in ("", "status", "task", "exe", "task/%d" % p):
            try:
                os.stat(os.path.join(mnt.path, str(p), rel))
            except OSError:
                pass
        os.listdir(mnt.path)


CASES = [
    "hidepid=noaccess",
    "hidepid=invisible",
    "hidepid=ptraceable",
    "hidepid=2",
    "subset=pid",
    "hidepid=invisible,subset=pid",
    "hidepid=invisible,gid=%d" % NOBODY,
]


@pytest.mark.parametrize("options", CASES)
def test_same_as_procfs(options, mount_with, real_procfs, others):
    root_pid, other_pid = others
    mnt = mount_with(*options.split(","))
    real = real_procfs(options)
    warm_as_root(mnt, (root_pid, other_pid, 1))
    rows = as_user(NOBODY, ops_for(root_pid, other_pid), mnt, proc=real)
    check(rows)
    # the case really hides something where the kernel does (the comparison is not idle)
    listed = [r for r in rows if r[0] == "listdir_subset"][0][3]
    if "invisible" in options or "ptraceable" in options or options.startswith("hidepid=2"):
        expect_hidden = "gid=" not in options
        assert (str(root_pid) not in listed[1]) == expect_hidden, listed
    if "subset=pid" in options:
        assert "meminfo" not in listed[1] and "sys" not in listed[1], listed


def test_bad_values(tmp_path):
    from lib.build import BIN
    for opt, word in (("hidepid=sometimes", "hidepid"), ("subset=sys", "subset"),
                      ("gid=wheel", "gid"), ("gid= 5", "gid"), ("gid=-1", "gid")):
        r = subprocess.run([BIN, "-o", opt, str(tmp_path)], capture_output=True, text=True,
                           timeout=30)
        lines = r.stderr.strip().splitlines()
        assert r.returncode != 0 and len(lines) == 1 and word in lines[0], (opt, lines)


GROUP = 4321  # nobody's group nowhere but in the readers below


def _sees(mnt_path, pid, uid, gid, groups):
    """Whether a reader of those ids (and no capabilities) finds pid under mnt_path."""
    r = subprocess.run(["setpriv", "--reuid=%d" % uid, "--regid=%d" % gid,
                        "--groups=" + ",".join(map(str, groups)) if groups else "--clear-groups",
                        "--inh-caps=-all", "sh", "-c", 'test -e "$0/$1" && echo yes || echo no',
                        mnt_path, str(pid)],
                       capture_output=True, text=True, timeout=30, cwd="/")
    assert r.returncode == 0, r.stderr
    return r.stdout.strip() == "yes"


def test_supplementary_groups_follow_each_caller(mount_with, real_procfs, others):
    """gid= exempts the group's members from hidepid: a member by its supplementary groups
    sees, a reader whose only group is its primary one does not, nor does one served right
    after a member (the groups a worker took for one caller are not left to the next)."""
    root_pid, _ = others
    options = "hidepid=invisible,gid=%d" % GROUP
    mnt = mount_with(*options.split(","))
    real = real_procfs(options)
    readers = [(NOBODY, NOBODY, [GROUP]), (NOBODY, NOBODY, [NOBODY]), (NOBODY, GROUP, []),
               (NOBODY, NOBODY, [])] * 4
    seen = [(_sees(real, root_pid, *r), _sees(mnt.path, root_pid, *r)) for r in readers]
    assert all(a == b for a, b in seen), list(zip(readers, seen))
    # the kernel's answer differs by reader: the comparison is not idle
    assert {a for a, _ in seen} == {True, False}, seen
