"""The container recipes of the README and procfast(8), run in real podman containers
with runc (tests/lib/podman.py builds the image and cleans up):

(a) monitoring: the host mount bound at /host/proc and the host's real procfs at
    /realhost/proc of the same container; BusyBox and glibc tools read both.
(b) own view: the OCI hook (podman --hooks-dir) gives the workload its pid namespace's
    view in a second root (procfast-attach --root) that procfast-enter chroots it into;
    the runtime's /proc stays a procfs, so `podman exec` works and sees it, and
    `podman exec ... chroot /.procfast-root` sees the view.
(c) lifecycle: starting and removing containers, and a start that fails after the
    view was mounted, leave no view, daemon or mount behind.

Every comparison is between two readers in the same pid namespace, one through procfast
and one through a real procfs, one after the other, of processes the test made and
holds still (sleeping, stopped, zombie): both must see the same.
"""
import os
import re
import signal
import subprocess
import tempfile
import time
import uuid

import pytest

from lib.build import BIN
from lib.podman import Session, podman, wait_for
from lib.procs import kill_tree

FUSE_MAGIC, PROC_MAGIC = "65735546", "9fa0"
ENTRY_TIMEOUT = 1.5  # a little more than procfast's default entry_timeout (1 s)
ROOT = "/.procfast-root"


@pytest.fixture(scope="session")
def session():
    s = Session(BIN)
    yield s
    s.close()


def stat_fields(pid):
    """(comm, state) of a process seen from here; None once it is gone."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            head, _, rest = f.read().rpartition(")")
    except OSError:
        return None
    return head.partition("(")[2], rest.split()[0]


def asleep(pid, comm):
    """pid runs comm and sleeps in (clock_)nanosleep: it will not change until told."""
    if stat_fields(pid) != (comm, "S"):
        return False
    try:
        with open("/proc/%d/syscall" % pid) as f:
            return f.read().split()[0] in ("35", "230")
    except OSError:
        return False


def in_state(pid, state):
    s = stat_fields(pid)
    return s is not None and s[1] == state


def parent_of(pid):
    with open("/proc/%d/stat" % pid) as f:
        return int(f.read().rpartition(")")[2].split()[1])


def children(pid):
    with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
        return f.read().split()


def lines_of(text, pids, column=0):
    """The lines whose column (whitespace-separated) is one of pids."""
    want = {str(p) for p in pids}
    return [l for l in text.splitlines() if len(l.split()) > column and l.split()[column] in want]


def without_column(lines, index):
    """ps -ef's C column is CPU time over elapsed time: it changes between two runs."""
    return [" ".join(f for i, f in enumerate(l.split()) if i != index) for l in lines]


def top_lines(text, pids):
    """top -b's task counts and the lines of pids."""
    tasks = [l for l in text.splitlines() if l.startswith("Tasks:")]
    return tasks + lines_of(text, pids)


# (a) monitoring -------------------------------------------------------------------

class HostProcesses:
    """Host processes in known states, named after a link to sleep: one sleeping, one
    stopped, and one whose child is a zombie it never reaps."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="procfast-test-mon-")
        self.name = "pfmon" + uuid.uuid4().hex[:6]
        self.link = os.path.join(self.dir, self.name)
        os.symlink("/bin/sleep", self.link)
        self.procs = []
        try:
            self._start_all()
        except BaseException:
            self.close()
            raise

    def _start_all(self):
        sleeper = self._start([self.link, "100001"])
        stopped = self._start([self.link, "100002"])
        parent = self._start(["/bin/sh", "-c", "/bin/true & exec %s 100003" % self.link])
        for p in (sleeper, stopped, parent):
            wait_for(lambda: asleep(p.pid, self.name), "%d to sleep" % p.pid)
        os.kill(stopped.pid, signal.SIGSTOP)
        wait_for(lambda: in_state(stopped.pid, "T"), "the stopped process")
        zombie = wait_for(lambda: children(parent.pid), "the zombie's birth")[0]
        wait_for(lambda: in_state(int(zombie), "Z"), "the zombie")
        self.named = [sleeper.pid, stopped.pid, parent.pid]
        self.pids = self.named + [int(zombie)]

    def _start(self, argv):
        p = subprocess.Popen(argv, start_new_session=True)
        self.procs.append(p)
        return p

    def close(self):
        for p in self.procs:
            kill_tree(p)
        os.unlink(self.link)
        os.rmdir(self.dir)


@pytest.fixture(scope="class")
def host_procs():
    h = HostProcesses()
    yield h
    h.close()


@pytest.fixture(scope="class")
def monitor(session, mnt):
    """The monitoring recipe: the host mount at /host/proc, the host's procfs at
    /realhost/proc; both are also the /proc of a mini root (/host, /realhost) for the
    tools that always read /proc. --pid=host: procps reads /proc/<its own pid>."""
    c = session.run(["--pid=host",
                     "-v", "%s:/host/proc:ro,rslave" % mnt.path,
                     "-v", "/proc:/realhost/proc:ro,rslave",
                     "-v", "/usr:/host/usr:ro", "-v", "/usr:/realhost/usr:ro"],
                    ["/bb/sleep", "100000"])
    yield c
    c.remove()


def both(monitor, cmd):
    """cmd (a format with {root}) run in the container for /host and for /realhost:
    (through procfast, through procfs)."""
    return tuple(monitor.exec("/bb/sh", "-c", cmd.format(root=r)).stdout
                 for r in ("/host", "/realhost"))


def steady(text):
    """The lines of a files_script output that do not change between two reads: SigQ
    counts the signals queued for the process's user (root) on the whole machine."""
    return [l for l in text.splitlines() if not l.startswith("SigQ:")]


def files_script(reader, root, pids):
    return "for p in %s; do for f in stat status cmdline; do echo \"== $p $f\"; " \
           "%s %s/proc/$p/$f; echo; done; done" % (" ".join(map(str, pids)), reader, root)


class TestMonitoring:
    """The host's mount at /host/proc, the host's procfs at /realhost/proc."""

    def test_busybox_cat(self, monitor, host_procs):
        fast, real = both(monitor, files_script("/bb/cat", "{root}", host_procs.pids))
        assert steady(fast) == steady(real)

    def test_busybox_head(self, monitor, host_procs):
        fast, real = both(monitor, files_script("/bb/head -n 1000", "{root}", host_procs.pids))
        assert "State:\tT (stopped)" in real
        assert steady(fast) == steady(real)

    def test_busybox_ps(self, monitor, host_procs):
        fast, real = both(monitor, "/bb/chroot {root} /bb/ps -o pid,ppid,user,stat,comm,args")
        mine = lines_of(real, host_procs.pids)
        states = {int(l.split()[0]): l.split()[3] for l in mine}
        assert [states.get(p) for p in host_procs.pids] == ["S", "T", "S", "Z"], real
        assert lines_of(fast, host_procs.pids) == mine

    def test_glibc_ps(self, monitor, host_procs):
        fast, real = both(monitor, "/bb/chroot {root} /usr/bin/ps -eo pid,ppid,user,stat,comm,args")
        assert len(lines_of(real, host_procs.pids)) == 4, real
        assert lines_of(fast, host_procs.pids) == lines_of(real, host_procs.pids)
        fast, real = both(monitor, "/bb/chroot {root} /usr/bin/ps -ef")
        assert without_column(lines_of(fast, host_procs.pids, 1), 3) == \
            without_column(lines_of(real, host_procs.pids, 1), 3)

    def test_top(self, monitor, host_procs):
        pids = ",".join(map(str, host_procs.pids))
        fast, real = both(monitor, "/bb/chroot {root} /usr/bin/top -bn1 -p " + pids)
        assert re.search(r"Tasks: +4 total, +0 running, +2 sleeping, +1 stopped, +1 zombie", real), real
        assert top_lines(fast, host_procs.pids) == top_lines(real, host_procs.pids)

    def test_pgrep(self, monitor, host_procs):
        # -f's pattern cannot match the podman command that carries it (it has "[0-9]",
        # not a digit, there), which --pid=host shows too
        pattern = "^%s 10000[0-9]$" % host_procs.link
        fast, real = both(monitor, "/bb/chroot {root} /usr/bin/pgrep -x %s; "
                          "/bb/chroot {root} /usr/bin/pgrep -l -f '%s'" % (host_procs.name, pattern))
        assert sorted(real.split()) == sorted([str(p) for p in host_procs.named] * 2 +
                                              [host_procs.name] * 3), real
        assert fast == real


    def test_the_containers_own_namespaces(self, monitor):
        """The container's uts, network and ipc namespaces (podman makes them) are what
        /host/proc/sys and /host/proc/sysvipc show it, as the host's procfs bound at
        /realhost/proc shows them: never the host's (the daemon's)."""
        script = ("cd {root}/proc && /bb/cat sys/kernel/hostname sys/net/ipv4/ip_default_ttl"
                  " sys/kernel/msgmax sysvipc/shm self/cgroup && /bb/ls sys/net/ipv4/conf")
        fast, real = both(monitor, script)
        assert fast == real
        assert fast.split()[0] == monitor.inspect("{{.Config.Hostname}}").strip()
        with open("/proc/sys/kernel/hostname") as f:
            assert f.read().strip() != fast.split()[0]
        assert "eth0" in fast.split() or "lo" in fast.split()


# (b) own view ----------------------------------------------------------------------

class Workload:
    """The workload of a container with its own view: PID 1 sleeps and never reaps, so
    its children stay as they are: one asleep, one stopped, one a zombie."""
    SCRIPT = "/bb/true & /bb/sleep 100001 & /bb/sleep 100002 & exec /bb/sleep 100000"

    def __init__(self, container):
        self.container = container
        self.host_pid = container.host_pid
        wait_for(lambda: asleep(self.host_pid, "sleep"), "the workload's PID 1 to sleep")
        kids = wait_for(lambda: len(children(self.host_pid)) == 3 and children(self.host_pid),
                        "the workload's children")
        by_arg = {}
        for k in map(int, kids):
            wait_for(lambda: in_state(k, "Z") or asleep(k, "sleep"), "child %d to settle" % k)
            by_arg[self._arg(k)] = k  # the zombie's command line is empty
        os.kill(by_arg["100002"], signal.SIGSTOP)
        wait_for(lambda: in_state(by_arg["100002"], "T"), "the stopped child")
        self.pids = [1] + [self.ns_pid(by_arg[a]) for a in ("100001", "100002", "")]

    @staticmethod
    def _arg(pid):
        with open("/proc/%d/cmdline" % pid) as f:
            argv = f.read().split("\0")
        return argv[1] if len(argv) > 1 else ""

    @staticmethod
    def ns_pid(host_pid):
        """host_pid's pid in its own (the container's) pid namespace."""
        with open("/proc/%d/status" % host_pid) as f:
            return int([l for l in f if l.startswith("NSpid:")][0].split()[-1])


@pytest.fixture(scope="class")
def view(session):
    c = session.run_with_view(["/bb/sh", "-c", Workload.SCRIPT])
    w = Workload(c)
    yield w
    c.remove()


def compare(view, cmd, check=True):
    """cmd through the view (chrooted into the second root) and through the container's
    procfs (plain podman exec): both outputs."""
    return (view.container.in_view(*cmd, check=check).stdout,
            view.container.exec(*cmd, check=check).stdout)


def statfs_type(path):
    return subprocess.run(["stat", "-f", "-c", "%t", path], capture_output=True, text=True,
                          check=True).stdout.strip()


def lsof_records(text):
    """lsof -F output as one tuple per file: (pid, command, fd, access, type, size or
    offset, inode, name)."""
    records, proc, cur = [], {}, None
    for line in text.splitlines():
        tag, value = line[:1], line[1:]
        if tag == "p":
            proc = {"p": value}
        elif tag == "c":
            proc["c"] = value
        elif tag == "f":
            cur = dict(proc, f=value)
            records.append(cur)
        elif cur is not None and tag in "atsoin":
            cur[tag] = value
    return [tuple(r.get(k, "") for k in "pcfatsoin") for r in records]


# The reference reader of test_link_texts: /proc opened, then chroot(argv[1]); "PID
# NAME TEXT" for each PID/NAME in argv[2] (TEXT empty where there is no link).
LINKS_READER = r'''
import os, sys
proc = os.open("/proc", os.O_RDONLY | os.O_DIRECTORY)
os.chroot(sys.argv[1])
os.chdir("/")
for link in sys.argv[2].split():
    try:
        text = os.readlink(link, dir_fd=proc)
    except OSError:
        text = ""
    print("%s %s %s" % (*link.split("/", 1), text))
'''


def mounts_below_proc(mountinfo):
    """(mount point, fstype, mount options) of the mounts below /proc, in order."""
    found = []
    for line in mountinfo.splitlines():
        f = line.split()
        fstype = f[f.index("-") + 1]
        if f[4].startswith("/proc/"):
            found.append((f[4], fstype, f[5]))
    return found


class TestOwnView:
    """The workload's view in the second root, the container's procfs for podman exec."""

    def test_is_the_workloads_proc(self, view):
        # the workload's own root is the second root, whose proc is the view
        assert statfs_type("/proc/%d/root/proc" % view.host_pid) == FUSE_MAGIC
        fast, real = compare(view, ["/bb/stat", "-f", "-c", "%t", "/proc"])
        assert (fast.strip(), real.strip()) == (FUSE_MAGIC, PROC_MAGIC)

    def test_lists_the_containers_pids(self, view):
        listed = []
        for out in compare(view, ["/bb/sh", "-c", "echo $$; exec /bb/ls /proc"]):
            self_pid, *names = out.split()
            listed.append(sorted(int(n) for n in names if n.isdigit() and n != self_pid))
        assert listed[0] == listed[1] == sorted(view.pids)

    def test_busybox_cat(self, view):
        script = files_script("/bb/cat", "", view.pids)
        fast, real = compare(view, ["/bb/sh", "-c", script])
        assert steady(fast) == steady(real)

    def test_busybox_head(self, view):
        script = files_script("/bb/head -n 1000", "", view.pids)
        fast, real = compare(view, ["/bb/sh", "-c", script])
        assert "State:\tT (stopped)" in real
        assert steady(fast) == steady(real)

    def test_ps(self, view):
        fast, real = compare(view, ["/bb/ps", "-o", "pid,ppid,user,stat,comm,args"])
        states = {int(l.split()[0]): l.split()[3] for l in lines_of(real, view.pids)}
        assert [states.get(p) for p in view.pids] == ["S", "S", "T", "Z"], real
        assert lines_of(fast, view.pids) == lines_of(real, view.pids)
        fast, real = compare(view, ["/usr/bin/ps", "-eo", "pid,ppid,user,stat,comm,args"])
        assert len(lines_of(real, view.pids)) == 4
        assert lines_of(fast, view.pids) == lines_of(real, view.pids)
        fast, real = compare(view, ["/usr/bin/ps", "-ef"])
        assert without_column(lines_of(fast, view.pids, 1), 3) == \
            without_column(lines_of(real, view.pids, 1), 3)

    def test_top(self, view):
        fast, real = compare(view, ["/usr/bin/top", "-bn1", "-p", ",".join(map(str, view.pids))])
        assert re.search(r"Tasks: +4 total, +0 running, +2 sleeping, +1 stopped, +1 zombie", real), real
        assert top_lines(fast, view.pids) == top_lines(real, view.pids)

    def test_link_texts(self, view):
        """readlink of cwd, root, exe and fds through the view, chrooted into the second
        root, against the container's procfs read by a process chrooted there too: it
        opened that procfs before its chroot and reads it through the open directory
        (procfs writes a link's text relative to its reader's root)."""
        links = [(p, x) for p in view.pids for x in ("cwd", "root", "exe", "fd/0", "fd/1")]
        fast = view.container.in_view("/bb/sh", "-c", "".join(
            "echo \"%d %s $(/bb/readlink /proc/%d/%s)\"; " % (p, x, p, x) for p, x in links))
        real = view.container.exec("/usr/bin/python3", "-c", LINKS_READER, ROOT,
                                   " ".join("%d/%s" % l for l in links))
        assert len(real.stdout.splitlines()) == len(links)
        assert fast.stdout.splitlines() == real.stdout.splitlines()

    def test_lsof(self, view):
        """lsof through the view, chrooted into the second root, against lsof on the
        container's procfs (lsof reads /proc only, so not chrooted). procfs names a file
        relative to its reader's root: a reader chrooted into the second root sees the
        names the exec'd reader sees less the second root's prefix (test_link_texts
        checks that rule against such a reader). DEVICE is left out: through FUSE every
        st_dev is the mount's (README, "What differs")."""
        cmd = ["/usr/bin/lsof", "-n", "-P", "-F", "pcfatsoin", "-p", ",".join(map(str, view.pids))]
        fast, real = compare(view, cmd, check=False)  # lsof exits 1 when it could not stat one
        expected = []
        for rec in lsof_records(real):
            name = rec[-1]
            if name == ROOT or name.startswith(ROOT + "/"):
                name = name[len(ROOT):] or "/"
            expected.append(rec[:-1] + (name,))
        assert len(expected) >= 3 * 6, real  # cwd, rtd, txt, 0, 1, 2 of each sleeper
        assert lsof_records(fast) == expected

    def test_keeps_the_runtimes_masks(self, view):
        fast, real = compare(view, ["/bb/head", "-n", "100000", "/proc/self/mountinfo"])
        masks = mounts_below_proc(real)
        assert ("/proc/sys", "proc", "ro,nosuid,nodev,noexec,relatime") in masks, real
        assert mounts_below_proc(fast) == masks
        # /proc/sys is read-only as on the container's /proc: the write fails the same way
        write = ["/bb/sh", "-c", "echo procfast > /proc/sys/kernel/hostname"]
        fast = view.container.in_view(*write, check=False)
        real = view.container.exec(*write, check=False)
        assert real.returncode != 0 and "Read-only file system" in real.stderr, real
        assert (fast.returncode, fast.stderr) == (real.returncode, real.stderr)

    def test_exec_keeps_working(self, view):
        for _ in range(3):
            assert view.container.exec("/bb/true").returncode == 0
        assert view.container.exec("/bb/stat", "-f", "-c", "%t", "/proc/self/fd").stdout.strip() \
            == PROC_MAGIC


def test_masks_survive_a_server_restart(session):
    """The masks are mounts on the view's dentries. A new server (the old one killed)
    does not know the old node ids: the kernel looks the names up again, and a name
    that comes back as another node is dropped, with the mounts on it."""
    c = session.run_with_view(["/bb/sleep", "100000"])
    try:
        write = ["/bb/sh", "-c", "echo procfast > /proc/sys/kernel/hostname"]
        masks = mounts_below_proc(c.exec("/bb/head", "-n", "100000", "/proc/self/mountinfo").stdout)
        daemons = session.view_daemons(c.id)
        supervisor = [p for p in daemons if parent_of(p) not in daemons][0]
        server = int(wait_for(lambda: children(supervisor), "the view's server")[0])
        os.kill(server, signal.SIGKILL)
        killed = time.monotonic()
        wait_for(lambda: children(supervisor) not in ([], [str(server)]), "a new server")
        # The kernel asks again about a name it holds once the name's entry_timeout
        # (procfast's default: 1 s) has run out: not a guess at a delay but the
        # lifetime of its cache, after which the new server must be asked.
        wait_for(lambda: time.monotonic() > killed + ENTRY_TIMEOUT, "the names' cache to expire")
        c.in_view("/bb/ls", "/proc", "/proc/sys")
        fast = c.in_view(*write, check=False)
        assert "Read-only file system" in fast.stderr, fast
        after = c.in_view("/bb/head", "-n", "100000", "/proc/self/mountinfo").stdout
        assert mounts_below_proc(after) == masks
    finally:
        c.remove()


def test_view_for_another_user(session):
    """podman --user cannot chroot: procfast-enter runs as root and switches (-u)."""
    c = session.run_with_view(["/bb/sleep", "100000"], enter=["-u", "1000:1000"])
    try:
        pid = c.host_pid
        wait_for(lambda: asleep(pid, "sleep"), "the workload to sleep")
        with open("/proc/%d/status" % pid) as f:
            status = dict(l.split(":", 1) for l in f)
        assert status["Uid"].split() == ["1000"] * 4
        assert status["Gid"].split() == ["1000"] * 4
        assert status["Groups"].split() == ["1000"]
        assert status["CapEff"].strip() == "0" * 16
        assert statfs_type("/proc/%d/root/proc" % pid) == FUSE_MAGIC
        out = c.in_view("/bb/sh", "-c", "echo $$; exec /bb/ls /proc").stdout.split()
        assert sorted(int(n) for n in out[1:] if n.isdigit() and n != out[0]) == [1]
    finally:
        c.remove()


def test_view_in_a_read_only_container(session):
    """--read-only: the second root goes where the container can write (/dev)."""
    c = session.run_with_view(["/bb/sleep", "100000"], options=["--read-only"],
                              root="/dev/.procfast-root")
    try:
        pid = c.host_pid
        wait_for(lambda: asleep(pid, "sleep"), "the workload to sleep")
        assert statfs_type("/proc/%d/root/proc" % pid) == FUSE_MAGIC
        assert c.exec("/bb/stat", "-f", "-c", "%t", "/proc").stdout.strip() == PROC_MAGIC
    finally:
        c.remove()


def test_enter_gives_up_without_a_view(session):
    """No hook, no view: procfast-enter waits its -t seconds and exits 125, not running
    the workload without its view."""
    enter = os.path.join(session.bin_dir, "procfast-enter")
    c = session.run(["-v", "%s:/procfast-enter:ro" % enter],
                    ["/procfast-enter", "-t", "1", ROOT, "/bb/true"])
    try:
        assert int(podman("wait", c.id).stdout) == 125
        assert podman("logs", c.id).stderr == \
            "procfast-enter: no procfast view at %s/proc after 1 s\n" % ROOT
    finally:
        c.remove()


# (c) lifecycle ---------------------------------------------------------------------

def test_start_remove_cycles_leave_nothing(session):
    for i in range(50):
        c = session.run_with_view(["/bb/sleep", "100000"])
        assert session.view_mounts() == [os.path.join(session.views, c.id)], i
        c.remove()
    assert session.leftovers() == {}


def test_failed_start_leaves_nothing(session):
    """On a read-only root the second root cannot be made: the hook fails after it
    mounted the view, runc fails the start, and no poststop hook runs."""
    r = session.run(["--read-only", "--annotation", "io.procfast.view=root",
                     "-v", "%s:/procfast-enter:ro" % os.path.join(session.bin_dir, "procfast-enter")],
                    ["/procfast-enter", ROOT, "/bb/true"], hooks=True, check=False)
    assert r.returncode != 0
    assert "procfast-attach: %s: Read-only file system" % ROOT in r.stderr, r.stderr
    session.remove_containers()
    assert session.leftovers() == {}
