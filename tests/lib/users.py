"""The unprivileged uids the tests act as."""

NOBODY = 65534
OTHER = 23456          # a second unprivileged uid, owns a process the test starts


def setpriv_user(uid, caps=()):
    """A user: its uid and gid, no groups, no capabilities but caps (ambient: kept
    across its execve)."""
    return ["setpriv", "--reuid=%d" % uid, "--regid=%d" % uid, "--clear-groups",
            "--inh-caps=" + ",".join(["-all"] + ["+" + c for c in caps])] + (
        ["--ambient-caps=" + ",".join("+" + c for c in caps)] if caps else [])


def setpriv_root(caps):
    """uid 0 holding only caps: root's execve gives it its bounding set."""
    return ["setpriv", "--inh-caps=-all",
            "--bounding-set=" + ",".join(["-all"] + ["+" + c for c in caps])]
