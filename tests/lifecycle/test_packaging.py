"""The Debian package round trip (issue 5), run once per tests/run: build the .deb with
packaging/build-deb.sh, install it with apt-get, check its files, mount through
`mount -t fuse procfast DIR` (now /usr/sbin/procfast), run ps through it, unmount,
purge, and check that nothing is left: files, mount or process.

A procfast package installed before the test is someone's: the test does not touch it
and is skipped for that reason only.
"""
import gzip
import os
import shutil
import subprocess
import tempfile

import pytest

from lib.bind import over_proc
from lib.build import ROOT
from lib.system_mount import SYSTEM_PATH, SystemMount, wait_for

FILES = ["/usr/sbin/procfast", "/usr/share/man/man8/procfast.8.gz",
         "/usr/lib/systemd/system/procfast.service", "/usr/sbin/procfast-attach",
         "/usr/sbin/procfast-enter", "/usr/sbin/procfast-oci-hook"]


def installed():
    r = subprocess.run(["dpkg-query", "-W", "-f=${Status}", "procfast"],
                       capture_output=True, text=True)
    return r.returncode == 0 and r.stdout.endswith(" installed")


def apt_get(*args):
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive", PATH=SYSTEM_PATH)
    r = subprocess.run(["apt-get", "-y", "-q", "-o", "DPkg::Lock::Timeout=300"] + list(args),
                       capture_output=True, text=True, timeout=600, env=env,
                       stdin=subprocess.DEVNULL)
    assert r.returncode == 0, "apt-get %s: rc %d\n%s\n%s" % (" ".join(args), r.returncode,
                                                            r.stdout[-3000:], r.stderr)
    return r


def processes_of(path):
    """Pids whose executable is path (or was, if it has been removed)."""
    found = []
    for name in filter(str.isdigit, os.listdir("/proc")):
        try:
            exe = os.readlink("/proc/%s/exe" % name)
        except OSError:
            continue
        if exe in (path, path + " (deleted)"):
            found.append(int(name))
    return found


@pytest.fixture
def package():
    """Builds the .deb and installs it; purges it afterwards if the test has not."""
    if installed():
        pytest.skip("a procfast package is already installed on this machine (packaging/quickstart.sh "
                    "installs it): not replacing it; apt-get purge procfast to run this test")
    for path in FILES + ["/usr/local/sbin/procfast"]:
        assert not os.path.lexists(path), \
            "%s exists without the package: it would be overwritten or shadow the package" % path
    work = tempfile.mkdtemp(prefix="procfast-test-deb-")
    try:
        r = subprocess.run([os.path.join(ROOT, "packaging", "build-deb.sh"),
                            os.path.join(work, "build")],
                           capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, "build-deb.sh: %s%s" % (r.stdout, r.stderr)
        deb = r.stdout.strip().splitlines()[-1]
        assert os.path.basename(deb).startswith("procfast_") and deb.endswith(".deb")
        apt_get("install", "--no-install-recommends", deb)
        yield deb
    finally:
        if installed():
            apt_get("purge", "procfast")
        shutil.rmtree(work)


def test_deb_round_trip(package):
    assert installed()
    assert os.access("/usr/sbin/procfast", os.X_OK)
    with gzip.open("/usr/share/man/man8/procfast.8.gz", "rt") as f:
        assert f.read().startswith(".TH PROCFAST 8")
    with open("/usr/lib/systemd/system/procfast.service") as f:
        unit = f.read()
    assert "\nExecStart=/usr/sbin/procfast -f -o control=/run/procfast.control /run/procfast\n" \
        in unit
    assert "\nExecReload=/bin/kill -HUP $MAINPID\n" in unit
    directives = [l.split("=", 1)[0] for l in unit.splitlines()
                  if l and not l.startswith(("#", "["))]
    assert len(directives) == len(set(directives)), directives  # each given once
    assert "\nRestart=on-failure\n" in unit
    listed = subprocess.run(["dpkg", "-L", "procfast"], capture_output=True, text=True,
                            check=True).stdout.split()
    # /lib/systemd/system is where merged-/usr Debian lists a unit shipped in /usr/lib
    assert all(p in listed or p.replace("/usr/lib/", "/lib/") in listed for p in FILES), listed

    path = tempfile.mkdtemp(prefix="procfast-test-")
    sleeper = subprocess.Popen(["sleep", "3600"], stdin=subprocess.DEVNULL)
    try:
        with SystemMount(path, "-t", "fuse", "procfast") as m:
            assert os.readlink("/proc/%d/exe" % m.pid) == "/usr/sbin/procfast"
            r = over_proc(m, "ps -ef")
            assert r.returncode == 0, r.stderr
            rows = [line.split() for line in r.stdout.splitlines()[1:]]
            assert [row[7:] for row in rows if int(row[1]) == sleeper.pid] == \
                [["sleep", "3600"]], r.stdout
            assert m.umount(), "mount or daemon %d left after umount" % m.pid
    finally:
        sleeper.kill()
        sleeper.wait()
        os.rmdir(path)

    apt_get("purge", "procfast")
    assert not installed()
    assert [p for p in FILES if os.path.lexists(p)] == []
    assert not os.path.lexists("/etc/systemd/system/multi-user.target.wants/procfast.service")
    assert wait_for(lambda: not processes_of("/usr/sbin/procfast"), 10), \
        processes_of("/usr/sbin/procfast")
