"""sendfile, splice and copy_file_range (issue 10, point 3): from every file they give the
bytes read() gives, or an error as procfs does, never nothing.

On this kernel FUSE's splice_read for direct-io files goes through the page cache: it
reads nothing past the size the kernel holds, and what it caches would serve every
reader of the file. procfast refuses reads for the page cache with EINVAL (procfs's own
answer for most files; callers fall back to read()), and says a regular file's size is
its content's length, so that the kernel asks (fs/request/file_size.c)."""
import errno
import os
import re
import subprocess
import tempfile

import pytest

VICTIM_FILES = ["status", "stat", "cmdline", "environ", "limits", "maps", "mountinfo",
                "io", "net/tcp", "task/{tid}/stat"]
ROOT_FILES = ["meminfo", "cpuinfo", "stat", "uptime", "loadavg", "version", "keys",
              "sys/kernel/hostname", "sys/net/ipv4/ip_default_ttl", "sysvipc/shm"]


def shape(text):
    # numbers, hexadecimal ones too (net/tcp's timers count down: 00000618, 0000061F)
    return [re.sub(rb"[0-9A-Fa-f.]*[0-9][0-9A-Fa-f.]*", b"N", line) for line in text.split(b"\n")]


def read_all(path):
    with open(path, "rb") as f:
        return f.read()


def between_equal_reads(real, produce, tries=10):
    """(the content of real, produce()) with produce() run between two reads of real
    that agree: a sleeping process's counts still move now and then (a context switch
    the kernel makes it take), so one earlier read is not the content produce() saw."""
    for _ in range(tries):
        before, got = read_all(real), produce()
        if read_all(real) == before:
            break
    return before, got


def has_listener(table, port):
    """Whether a socket table lists a listener on 127.0.0.1:port (its other rows come
    and go with the machine's other sockets)."""
    return any(f[1] == b"0100007F:%04X" % port and f[3] == b"0A"
               for f in (line.split() for line in table.split(b"\n")[1:]) if len(f) > 3)


def transfer(path, step, fstat_first=False):
    """Everything step(fd, pipe's write end) moves out of path, or its errno."""
    fd = os.open(path, os.O_RDONLY)
    r, w = os.pipe()
    data = b""
    try:
        if fstat_first:
            os.fstat(fd)
        while True:
            n = step(fd, w)
            if n == 0:
                return data
            data += os.read(r, n)
    except OSError as e:
        return errno.errorcode[e.errno]
    finally:
        for x in (fd, r, w):
            os.close(x)


def by_sendfile(path):
    return transfer(path, lambda fd, w: os.sendfile(w, fd, None, 65536))


def by_splice(path, fstat_first=False):
    """fstat_first: as uutils' cat does it, fstat the input, then splice."""
    return transfer(path, lambda fd, w: os.splice(fd, w, 65536), fstat_first)


def by_copy_file_range(path):
    fd = os.open(path, os.O_RDONLY)
    with tempfile.TemporaryFile() as out:
        try:
            n = os.copy_file_range(fd, out.fileno(), 65536)
            out.seek(0)
            return out.read(n)
        except OSError as e:
            return errno.errorcode[e.errno]
        finally:
            os.close(fd)


def files(victim):
    tid = victim.tids[-1]
    return ([(str(victim.pid), f.format(tid=tid)) for f in VICTIM_FILES]
            + [("", f) for f in ROOT_FILES])


@pytest.mark.parametrize("way", [by_sendfile, by_splice, lambda p: by_splice(p, True)],
                         ids=["sendfile", "splice", "fstat+splice"])
def test_splice_and_sendfile(mnt, victim, way):
    for pid, name in files(victim):
        real, mounted = os.path.join("/proc", pid, name), mnt.p(pid, name)
        got, proc_got = way(mounted), way(real)
        if isinstance(got, bytes):  # a kernel that reads direct-io files directly
            assert got == read_all(mounted) or got[:20] == read_all(mounted)[:20], name
            continue
        # refused, as procfs refuses most of its files (callers read instead); where
        # procfs splices (meminfo, mountinfo...) the mount refuses too (documented)
        assert got == "EINVAL", (name, got)
        assert proc_got == "EINVAL" or isinstance(proc_got, bytes), (name, proc_got)


def test_copy_file_range(mnt, victim):
    for pid, name in files(victim):
        got = by_copy_file_range(mnt.p(pid, name))
        proc_got = by_copy_file_range(os.path.join("/proc", pid, name))
        assert got == proc_got or got == read_all(mnt.p(pid, name)), (name, got, proc_got)


def settled(read, tries=3):
    """read() until /proc agrees with it: a sleeping victim's status still moves when the
    victim is woken (a context switch counted) between two reads. The last value."""
    for _ in range(tries):
        got = read()
        if got[0]:
            return got
    return got


def test_busybox_cat(mnt, victim):
    """BusyBox cat (sendfile first, read() after an error) prints every file."""
    for pid, name in files(victim):
        out = subprocess.run(["busybox", "cat", mnt.p(pid, name)], capture_output=True,
                             timeout=30)
        assert out.returncode == 0, (name, out.stderr)
        want = read_all(mnt.p(pid, name))
        if pid and name in ("cmdline", "environ", "limits", "status", "maps"):  # stable
            real, got = between_equal_reads(
                os.path.join("/proc", pid, name),
                lambda: subprocess.run(["busybox", "cat", mnt.p(pid, name)],
                                       capture_output=True, timeout=30).stdout)
            assert got == real, name
        elif name == "net/tcp":  # the machine's other sockets come and go
            assert out.stdout.split(b"\n")[0] == want.split(b"\n")[0]
            assert has_listener(out.stdout, victim.port) and has_listener(want, victim.port)
        else:  # numbers move between two reads (one that gains a digit loses padding)
            def same_shape():
                got = subprocess.run(["busybox", "cat", mnt.p(pid, name)],
                                     capture_output=True, timeout=30).stdout
                again = read_all(mnt.p(pid, name))
                return bool(got) and shape(got) == shape(again), (name, got, again)
            ok, why = settled(same_shape)
            assert ok, why


def test_size_is_procfss(mnt, victim):
    """stat shows procfs's size (0), opened or not, so that wc -c, tail, cp and tar treat
    the file as they treat a procfs file (the size the kernel holds for splice is hidden:
    fs/request/file_size.c)."""
    for name in ("cmdline", "environ", "limits", "status", "maps", "pagemap"):
        real, mounted = "/proc/%d/%s" % (victim.pid, name), mnt.p(victim.pid, name)
        assert os.stat(mounted).st_size == os.stat(real).st_size == 0, name
        with open(mounted, "rb") as held:
            assert os.fstat(held.fileno()).st_size == 0
            assert os.stat(mounted).st_size == 0
            assert os.lseek(held.fileno(), 0, os.SEEK_END) == 0
        if name == "pagemap":
            continue
        content, count = between_equal_reads(real, lambda: subprocess.run(
            ["wc", "-c", mounted], capture_output=True, text=True).stdout.split()[0])
        assert count == str(len(content)), name
        for tail, want in ((["tail", "-n", "2"], lambda c: b"".join(c.splitlines(True)[-2:])),
                           (["tail", "-c", "20"], lambda c: c[-20:])):
            content, got = between_equal_reads(real, lambda: subprocess.run(
                tail + [mounted], capture_output=True).stdout)
            assert got == want(content), (name, tail)
        with tempfile.TemporaryDirectory() as d:
            content, _ = between_equal_reads(real, lambda: subprocess.run(
                ["cp", mounted, d + "/copy"], check=True))
            assert read_all(d + "/copy") == content, name


def test_stat_of_an_open_file_keeps_sendfile_working(mnt, victim):
    """Another caller's stat and fstat while a file is open leave the opener's sendfile
    asking the daemon (and falling back to read)."""
    path = mnt.p(victim.pid, "environ")
    fd = os.open(path, os.O_RDONLY)
    try:
        for _ in range(3):
            assert os.stat(path).st_size == 0
            subprocess.run(["setpriv", "--reuid", "nobody", "--regid", "nogroup",
                            "--clear-groups", "stat", path], check=True, capture_output=True)
        r, w = os.pipe()
        try:
            os.sendfile(w, fd, None, 4096)
            pytest.fail("sendfile gave data: the page cache was used")
        except OSError as e:
            assert e.errno == errno.EINVAL
        finally:
            os.close(r)
            os.close(w)
    finally:
        os.close(fd)
    out = subprocess.run(["busybox", "cat", path], capture_output=True, timeout=30)
    assert out.stdout == read_all("/proc/%d/environ" % victim.pid) != b""
