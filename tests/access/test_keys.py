"""keys and key-users (issue 10, point 2): never more than /proc shows the caller.

The daemon possesses no keyring (fs/daemon/privileges.c), so a caller sees through the
mount the keys its credentials may view; the keys it sees on /proc only because it
possesses them (its session's) it does not see through the mount."""
import subprocess

NOBODY = ["setpriv", "--reuid", "nobody", "--regid", "nogroup", "--clear-groups"]

# Reads /proc/keys and MOUNT/keys (argv[1]); with argv[2] == "own", first joins a new
# session keyring that it may not see either (as the daemon's), so that it possesses
# nothing.
READ_BOTH = r'''
import ctypes, json, sys
libc = ctypes.CDLL(None)
if sys.argv[2] == "own":
    s = libc.syscall(250, 1, None)   # KEYCTL_JOIN_SESSION_KEYRING
    libc.syscall(250, 5, s, 0)       # KEYCTL_SETPERM 0
def keys(path):
    # serial, flags, perm, uid, gid, type, description (usage counts and timeouts move)
    with open(path) as f:
        return sorted(" ".join(l.split()[i] for i in (0, 1, 4, 5, 6, 7, 8)) for l in f)
def users(path):
    return open(path).read()
print(json.dumps([keys("/proc/keys"), keys(sys.argv[1] + "/keys"), keys("/proc/keys"),
                  users("/proc/key-users"), users(sys.argv[1] + "/key-users"),
                  users("/proc/key-users")]))
'''


def in_session(mnt, who, session):
    """Runs READ_BOTH as `who` in a new session keyring of root's holding a key root
    alone may view (possessor and owner) and one anybody may view."""
    script = ("keyctl add user pf-private secret @s >/dev/null && "
              "k=$(keyctl add user pf-public shown @s) && keyctl setperm $k 0x3f010001 && "
              "exec %s /usr/bin/python3 -c '%s' %s %s"
              % (" ".join(who), READ_BOTH, mnt.path, session))
    r = subprocess.run(["keyctl", "session", "-", "sh", "-c", script],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    import json
    before, mounted, after, ku_before, ku_mounted, ku_after = \
        json.loads(r.stdout.splitlines()[-1])
    return Seen(before, after), mounted, (ku_before, ku_after), ku_mounted


class Seen:
    """/proc/keys read before and after the mount: the key collector frees the keys of
    the sessions that earlier tests left whenever it runs, so a key shown on both reads
    must be on the mount, and the mount may show only keys one of them shows."""

    def __init__(self, before, after):
        self.stable, self.any = set(before) & set(after), set(before) | set(after)

    def same_as(self, mounted):
        return self.stable <= set(mounted) <= self.any

    def __repr__(self):
        return "stable %s, any %s" % (sorted(self.stable), sorted(self.any))


def descriptions(lines):
    return {l.split()[6] for l in lines}


def same_key_users(real, mounted):
    """key-users, read on /proc before and after the mount, lists the same users, with the
    same counts for nobody where /proc's did not change meanwhile (the collector frees
    earlier tests' keys; root's counts move with every key any root process makes)."""
    before, after, on_mount = ({l.split(":")[0].strip(): l for l in t.splitlines()}
                               for t in real + (mounted,))
    if before.get("65534") == after.get("65534") and \
            before.get("65534") != on_mount.get("65534"):
        return False
    return before.keys() & after.keys() <= on_mount.keys() <= before.keys() | after.keys()


def test_nobody_possessing_root_session_sees_no_root_key(mnt):
    """The leak that was: a nobody caller whose session is root's (as setpriv leaves it)
    saw root's session keyring through the mount. /proc shows it the keys it possesses;
    the mount shows only what it may view by its credentials, a subset."""
    real, mounted, ku_real, ku_mounted = in_session(mnt, NOBODY, "inherited")
    assert "pf-private:" in descriptions(real.stable)  # possessed, on /proc
    assert set(mounted) <= real.any, (mounted, real)
    assert "pf-private:" not in descriptions(mounted) and "_ses:" not in descriptions(mounted)
    assert "pf-public:" in descriptions(mounted)  # others may view it: shown
    assert same_key_users(ku_real, ku_mounted), (ku_real, ku_mounted)


def test_nobody_possessing_nothing_sees_what_proc_shows(mnt):
    real, mounted, ku_real, ku_mounted = in_session(mnt, NOBODY, "own")
    assert real.same_as(mounted), (mounted, real)
    assert "pf-public:" in descriptions(mounted) and "pf-private:" not in descriptions(real.any)
    assert same_key_users(ku_real, ku_mounted), (ku_real, ku_mounted)


def test_root_sees_what_proc_shows(mnt):
    """Root owns its keys: it may view them whether it possesses them or not."""
    real, mounted, ku_real, ku_mounted = in_session(mnt, [], "inherited")
    assert real.same_as(mounted), (mounted, real)
    assert {"pf-private:", "pf-public:"} <= descriptions(mounted)
    assert same_key_users(ku_real, ku_mounted), (ku_real, ku_mounted)
