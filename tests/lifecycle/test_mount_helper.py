"""Mounting the way Linux users do (issue 5): `mount -t fuse procfast DIR`,
`mount -t fuse.procfast procfast DIR -o ro`, an /etc/fstab line, and `umount DIR`.

mount(8) runs mount.fuse3, which runs `procfast` found in the system PATH: a fixture
links the build under test into /usr/local/sbin (first in that PATH) for this module
and removes the link afterwards. It never touches an installed /usr/sbin/procfast, and
refuses to replace a /usr/local/sbin/procfast that is not its own link.
"""
import errno
import os
import signal
import subprocess
import tempfile

import pytest

from lib.bind import over_proc
from lib.build import BIN
from lib.mount import Mount
from lib.system_mount import SystemMount, mount_entry, wait_for

LINK = "/usr/local/sbin/procfast"


@pytest.fixture(scope="module", autouse=True)
def procfast_in_system_path():
    target = os.path.realpath(BIN)

    def ours():
        return os.path.islink(LINK) and os.readlink(LINK) == target

    if os.path.lexists(LINK) and not ours():
        pytest.fail("%s exists and is not a link to %s: not replacing it" % (LINK, target))
    if not ours():
        os.symlink(target, LINK)
    yield
    if ours():
        os.unlink(LINK)


@pytest.fixture
def mountpoint():
    path = tempfile.mkdtemp(prefix="procfast-test-")
    yield path
    os.rmdir(path)


def stat_head(path):
    """pid, comm and ppid from a stat file."""
    with open(path) as f:
        text = f.read()
    pid, rest = text.split(" (", 1)
    comm, rest = rest.rsplit(") ", 1)
    return int(pid), comm, int(rest.split()[1])


def victim_row(ps_output, pid):
    rows = [line for line in ps_output.splitlines()[1:] if int(line.split()[1]) == pid]
    assert len(rows) == 1, "pid %d in ps -ef:\n%s" % (pid, ps_output)
    return rows[0]


def test_mount_type_fuse(mountpoint, victim):
    """`mount -t fuse procfast DIR` runs the build under test, which serves /proc:
    self is the reader, ps lists the victim, threads' fd/ are dedup links; umount ends it."""
    with SystemMount(mountpoint, "-t", "fuse", "procfast") as m:
        source, fstype, _ = mount_entry(mountpoint)
        assert (source, fstype) == ("procfast", "fuse.procfast")
        assert os.readlink("/proc/%d/exe" % m.pid) == os.path.realpath(BIN)

        assert stat_head(m.p("self/stat")) == stat_head("/proc/self/stat") == \
            (os.getpid(), stat_head("/proc/self/stat")[1], os.getppid())

        r = over_proc(m, "ps -ef")
        assert r.returncode == 0, r.stderr
        real = victim_row(subprocess.run(["ps", "-ef"], capture_output=True, text=True,
                                         check=True).stdout, victim.pid)
        assert victim_row(r.stdout, victim.pid).split()[7:] == real.split()[7:]

        thread = next(t for t in victim.tids if t != victim.pid)
        assert os.readlink(m.p(victim.pid, "task", thread, "fd")) == "../../fd"

        assert m.umount(), "mount or daemon %d left after umount" % m.pid


def test_mount_type_fuse_procfast_read_only(mountpoint):
    """`mount -t fuse.procfast procfast DIR -o ro`: mounted read-only, writes fail with
    EROFS where /proc accepts them."""
    with SystemMount(mountpoint, "-t", "fuse.procfast", "procfast", "-o", "ro") as m:
        assert "ro" in mount_entry(mountpoint)[2]
        with open("/proc/self/oom_score_adj", "r+"):
            pass
        with pytest.raises(OSError) as e:
            open(m.p("self/oom_score_adj"), "r+")
        assert e.value.errno == errno.EROFS
        with open(m.p("self/status")) as f:
            assert "Pid:\t%d\n" % os.getpid() in f.read()
        assert m.umount(), "mount or daemon %d left after umount" % m.pid


@pytest.mark.parametrize("device", ["procfast", "/proc"])
def test_fstab_line(mountpoint, victim, device):
    """An fstab line with the words fstab lines carry (defaults, noauto, nofail,
    _netdev, x-systemd.*, relatime) and a procfast option (nodedup), mounted with
    `mount -T FSTAB DIR`: the option reaches procfast (threads' fd/ are directories)."""
    fstab = mountpoint + ".fstab"
    with open(fstab, "w") as f:
        f.write("# test fstab\n%s %s fuse.procfast "
                "defaults,noauto,nofail,_netdev,x-systemd.automount,relatime,nodedup 0 0\n"
                % (device, mountpoint))
    try:
        with SystemMount(mountpoint, "-T", fstab) as m:
            assert mount_entry(mountpoint)[1] == "fuse.procfast"
            thread = next(t for t in victim.tids if t != victim.pid)
            fd_dir = m.p(victim.pid, "task", thread, "fd")
            assert not os.path.islink(fd_dir) and os.path.isdir(fd_dir)
            assert sorted(os.listdir(fd_dir)) == \
                sorted(os.listdir("/proc/%d/task/%d/fd" % (victim.pid, thread)))
            assert m.umount(), "mount or daemon %d left after umount" % m.pid
    finally:
        os.unlink(fstab)


def test_sigterm_unmounts_and_exits_0():
    """`systemctl stop procfast` (the unit runs procfast -f) sends SIGTERM: the daemon
    unmounts and exits 0, so the unit stops cleanly instead of failing."""
    m = Mount()
    m.proc.send_signal(signal.SIGTERM)
    assert wait_for(lambda: mount_entry(m.path) is None, 20), "still mounted after SIGTERM"
    m.close()  # fails unless the exit status is 0 and no sanitizer report
