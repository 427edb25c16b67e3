"""Commands run with a mount bound over /proc, and the same against the real /proc."""
import subprocess


def over_proc(mount, cmd, **kw):
    """Run a shell command in a private mount namespace with the mount bound over /proc."""
    script = "mount --bind %s /proc && exec %s" % (mount.path, cmd)
    return subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", script],
                          capture_output=True, text=True, timeout=120, **kw)


def on_proc(cmd, **kw):
    """The same command against the real /proc, for comparison."""
    return subprocess.run(["sh", "-c", cmd], capture_output=True, text=True, timeout=120, **kw)

