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
print(json.dumps([keys("/proc/keys"), keys(sys.argv[1] + "/keys"),
                  open("/proc/key-users").read(), open(sys.argv[1] + "/key-users").read()]))
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
    return json.loads(r.stdout.splitlines()[-1])


def descriptions(lines):
    return {l.split()[6] for l in lines}


def same_key_users(real, mounted):
    """key-users lists the same users, with the same counts for nobody: root's move
    with every key any root process makes meanwhile."""
    users = [{l.split(":")[0].strip(): l for l in t.splitlines()} for t in (real, mounted)]
    return users[0].keys() == users[1].keys() and \
        users[0].get("65534") == users[1].get("65534")


def test_nobody_possessing_root_session_sees_no_root_key(mnt):
    """The leak that was: a nobody caller whose session is root's (as setpriv leaves it)
    saw root's session keyring through the mount. /proc shows it the keys it possesses;
    the mount shows only what it may view by its credentials, a subset."""
    real, mounted, ku_real, ku_mounted = in_session(mnt, NOBODY, "inherited")
    assert "pf-private:" in descriptions(real)  # possessed, on /proc
    assert set(mounted) <= set(real), (mounted, real)
    assert "pf-private:" not in descriptions(mounted) and "_ses:" not in descriptions(mounted)
    assert "pf-public:" in descriptions(mounted)  # others may view it: shown
    assert same_key_users(ku_real, ku_mounted), (ku_real, ku_mounted)


def test_nobody_possessing_nothing_sees_what_proc_shows(mnt):
    real, mounted, ku_real, ku_mounted = in_session(mnt, NOBODY, "own")
    assert real == mounted
    assert "pf-public:" in descriptions(mounted) and "pf-private:" not in descriptions(real)
    assert same_key_users(ku_real, ku_mounted), (ku_real, ku_mounted)


def test_root_sees_what_proc_shows(mnt):
    """Root owns its keys: it may view them whether it possesses them or not."""
    real, mounted, ku_real, ku_mounted = in_session(mnt, [], "inherited")
    assert real == mounted
    assert {"pf-private:", "pf-public:"} <= descriptions(mounted)
    assert same_key_users(ku_real, ku_mounted), (ku_real, ku_mounted)
