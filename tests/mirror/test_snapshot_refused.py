"""-o snapshot where the kernel cannot read a snapshot (no FUSE passthrough: Linux
before 6.9, as Debian 12's 6.1 in the guest run; or taken away by -o without=passthrough
here): the mount is refused, with why, rather than served otherwise."""
import os
import subprocess
import tempfile

from lib.build import BIN
from lib.kernel import has_fuse_passthrough



def test_snapshot_refused_without_passthrough():
    options = "snapshot" if not has_fuse_passthrough() else "snapshot,without=passthrough"
    why = ("this kernel has no FUSE passthrough (Linux 6.9 or later)" if not has_fuse_passthrough()
           else "taken away by without=passthrough")
    target = tempfile.mkdtemp(prefix="procfast-snapshot-refused-")
    try:
        r = subprocess.run([BIN, "-f", "-o", options, target], capture_output=True, text=True,
                           timeout=30, stdin=subprocess.DEVNULL)
        with open("/proc/self/mounts") as f:
            mounted = any(line.split()[1] == target for line in f)
    finally:
        subprocess.run(["fusermount3", "-u", target], stderr=subprocess.DEVNULL, check=False)
        os.rmdir(target)
    assert r.returncode != 0 and not mounted
    assert "procfast: snapshot needs FUSE passthrough: " + why in r.stderr, r.stderr
