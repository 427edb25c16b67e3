"""The daemon's life as users run it: in the background, usable as soon as the command
returns, gone after the unmount; and its one-line errors."""
import os
import signal
import subprocess
import tempfile
import time

from lib.build import BIN
from lib.mount import Mount, is_ns_helper


def daemon_pids(mountpoint):
    out = subprocess.run(["pgrep", "-f", "^%s( .*)? %s$" % (BIN, mountpoint)],
                         capture_output=True, text=True).stdout
    return [int(p) for p in out.split() if not is_ns_helper(int(p))]


def test_background_mount_is_usable_then_daemon_exits_on_unmount():
    m = tempfile.mkdtemp(prefix="procfast-test-")
    try:
        r = subprocess.run([BIN, m], capture_output=True, text=True, timeout=30)
        assert r.returncode == 0, r.stderr
        # usable at once: no waiting after the command returned
        with open(os.path.join(m, "self", "stat")) as f:
            assert f.read().split()[0] == str(os.getpid())
        # the supervisor, and the server it runs (fs/supervisor/supervisor.c)
        pids = daemon_pids(m)
        assert len(pids) == 2, pids
        parents = {int(open("/proc/%d/stat" % p).read().split(") ")[1].split()[1]) for p in pids}
        assert len(parents & set(pids)) == 1, (pids, parents)
        subprocess.run(["fusermount3", "-u", m], check=True)
        deadline = time.time() + 10
        for pid in pids:
            while os.path.exists("/proc/%d" % pid) and \
                    open("/proc/%d/stat" % pid).read().split(") ")[1][0] != "Z":
                assert time.time() < deadline, "daemon still running after unmount"
                time.sleep(0.05)
    finally:
        subprocess.run(["umount", "-l", m], capture_output=True)
        os.rmdir(m)


def test_a_stop_signal_while_an_unmount_stops_the_server():
    """systemd's stop, or a script's cleanup, sends SIGTERM right after an unmount: the
    signal's drain and the unmount's stop run together, and both end the event notifier
    (a daemon was left behind, unmounted, joining it twice: tests/unit/
    test_proc_events_stop.c makes that race certain). Each round the signal comes a little
    later into the unmount; the daemon must end, with 0, every time, and without the drain's
    waits for reads (up to 10 s) once its loop is over."""
    m = tempfile.mkdtemp(prefix="procfast-test-")
    try:
        for delay_ms in [d % 8 for d in range(16)]:
            proc = subprocess.Popen([BIN, "-f", "-o", "norestart", m], stdin=subprocess.DEVNULL,
                                    stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            deadline = time.time() + 10
            while not os.path.ismount(m):
                assert proc.poll() is None and time.time() < deadline, proc.stderr.read()
                time.sleep(0.01)
            for name in os.listdir(m)[:40]:  # nodes the kernel holds, and their notices
                try:
                    with open(os.path.join(m, name, "stat")) as f:
                        f.read()
                except OSError:
                    pass
            unmount = subprocess.Popen(["umount", m], stderr=subprocess.DEVNULL)
            time.sleep(delay_ms / 1000)
            proc.send_signal(signal.SIGTERM)
            # 32 (not mounted): the signal came first, and the daemon unmounted
            assert unmount.wait(timeout=10) in (0, 32)
            try:
                rc = proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
                raise AssertionError("the daemon did not end: signal %d ms after the unmount"
                                     % delay_ms)
            err = proc.stderr.read()
            proc.stderr.close()
            assert rc == 0, (delay_ms, err)
            # a drain that waited its seconds for reads of a loop already over says so
            assert "stopping with" not in err, (delay_ms, err)
    finally:
        subprocess.run(["umount", "-l", m], capture_output=True)
        os.rmdir(m)


def run_err(*args):
    r = subprocess.run([BIN] + list(args), capture_output=True, text=True, timeout=30)
    return r.returncode, r.stderr.strip().splitlines()


def test_one_line_errors():
    m = tempfile.mkdtemp(prefix="procfast-test-")
    try:
        for args, word in (((), "no mount point"),
                           (("/nonexistent/procfast",), "No such file"),
                           (("-o", "source=/tmp", m), "not a procfs"),
                           (("-o", "attr_timeout=-1", m), "attr_timeout"),
                           (("-o", "events=maybe", m), "events")):
            rc, lines = run_err(*args)
            assert rc != 0, args
            assert len(lines) == 1 and word in lines[0], (args, lines)
        assert not any(" %s " % m in l for l in open("/proc/self/mounts"))
    finally:
        os.rmdir(m)


def test_busy_mount_point(mnt):
    """A second procfast on a procfast mount point is refused, and the first keeps serving."""
    rc, lines = run_err(mnt.path)
    assert rc != 0 and len(lines) == 1 and "already a procfast mount" in lines[0], lines
    assert sum(" %s " % mnt.path in l for l in open("/proc/self/mounts")) == 1
    with open(mnt.p("self", "stat")) as f:
        assert f.read().split()[0] == str(os.getpid())


def test_version_names_procfast_first():
    r = subprocess.run([BIN, "--version"], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0
    assert r.stdout.splitlines()[0].startswith("procfast version ")


def test_no_fuse_device_one_line():
    """Without a usable /dev/fuse (here a regular file bound over it, in a private mount
    namespace) procfast says so in one line and exits 1, mounting nothing."""
    m = tempfile.mkdtemp(prefix="procfast-test-")
    try:
        script = ("mount -t tmpfs none /dev/shm && touch /dev/shm/fuse && "
                  "mount --bind /dev/shm/fuse /dev/fuse && exec %s %s" % (BIN, m))
        r = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", script],
                           capture_output=True, text=True, timeout=30)
        lines = r.stderr.strip().splitlines()
        assert r.returncode == 1 and len(lines) == 1 and "/dev/fuse" in lines[0], r
        rc, lines = run_err("/etc/passwd")
        assert rc == 1 and len(lines) == 1 and "Not a directory" in lines[0], lines
    finally:
        os.rmdir(m)


def test_no_helper_outlives_the_daemon():
    """A caller in a user namespace of its own is served by a helper process, forked by
    the server's maker of helpers (fs/caller/ns_helper.h); both hold the source procfs
    open. Once the daemon has exited none of them is left, so a procfs mounted for it (a
    container's, a test's) unmounts at once: before, they ended after the daemon, and
    the unmount failed with EBUSY (test_faults' pid namespace, once beside a CPU hog)."""
    procfs = tempfile.mkdtemp(prefix="procfast-test-procfs-")
    subprocess.run(["mount", "-t", "proc", "proc", procfs], check=True)
    try:
        for _ in range(5):
            m = Mount(["source=" + procfs])
            try:
                r = subprocess.run(["unshare", "-U", "-r", "cat", m.p("uptime")],
                                   capture_output=True, text=True, timeout=30)
                assert r.returncode == 0 and r.stdout.strip(), r
                helpers = [p for p in map(int, filter(str.isdigit, os.listdir("/proc")))
                           if is_ns_helper(p) and holds(p, procfs)]
                assert len(helpers) >= 2, "no maker and helper hold the source: %s" % helpers
            finally:
                m.close()
            left = [p for p in helpers if is_ns_helper(p)]
            assert not left, "helpers of the daemon outlived it: %s" % left
            # nothing of the daemon's holds the source now
            r = subprocess.run(["umount", procfs], capture_output=True, text=True)
            assert r.returncode == 0, r.stderr
            subprocess.run(["mount", "-t", "proc", "proc", procfs], check=True)
    finally:
        subprocess.run(["umount", "-l", procfs], capture_output=True)
        os.rmdir(procfs)


def holds(pid, path):
    """Whether process pid has an fd open on path's file system root (its source)."""
    want = os.stat(path)
    try:
        fds = os.listdir("/proc/%d/fd" % pid)
    except OSError:
        return False
    for fd in fds:
        try:
            st = os.stat("/proc/%d/fd/%s" % (pid, fd))
        except OSError:
            continue
        if (st.st_dev, st.st_ino) == (want.st_dev, want.st_ino):
            return True
    return False
