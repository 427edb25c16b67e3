"""The daemon's listen request to the proc connector is withdrawn when it stops, on
Debian 12's kernel (6.1), which counts listeners, not sockets: a count that never comes
back to 0 makes every fork, exec and exit of the machine build an event for no one until
reboot (6.6+ count sockets and reset the count when an event finds none). Runs where the
kernel is older than 6.6, so in tests/guest/run's guest:

    tests/guest/run -- /usr/bin/python3 -m pytest -q -p no:cacheprovider tests/guest/test_event_listeners.py

The count cannot be read, only whether it is above 0: a socket bound to the connector's
group, listening or not, gets the events then. So the test first brings it to 0 itself,
withdrawing listen requests until no event comes: daemons the suite killed before never
withdrew theirs.
"""
import os
import signal
import subprocess
import sys
import threading

import pytest

TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, TESTS)

from lib.build import HELPERS  # noqa: E402
from lib.mount import Mount  # noqa: E402
from lib.proc_connector import PROC_CN_MCAST_IGNORE, ProcEvents  # noqa: E402


def kernel_counts_listeners():
    major, minor = (int(x) for x in os.uname().release.split(".")[:2])
    return (major, minor) < (6, 6)


if not kernel_counts_listeners():
    pytest.skip("kernels 6.6+ count sockets, not listen requests (run it in tests/guest/run)",
                allow_module_level=True)


HANG_S = 60  # a start past this waits for the forking to end (it takes ~1 s in the guest)


@pytest.fixture
def watch():
    """A socket that does not listen, and a listener count brought to 0."""
    w = ProcEvents(listen=False)
    for _ in range(10000):
        if not w.sends_events():
            break
        w.request(PROC_CN_MCAST_IGNORE)  # 6.1 takes one off, whoever asked
    else:
        pytest.fail("the kernel still sends events after 10,000 listen requests withdrawn")
    yield w
    w.close()


def mount_while_forking():
    """A daemon started while a process forks without end. A start that waits until the
    forking stops (a hang, not a slow start: it is not timed) fails the test once the
    forking is stopped, which lets it end."""
    forker = subprocess.Popen([os.path.join(HELPERS, "forker"), "0"], stdout=subprocess.DEVNULL)
    made = []
    starter = threading.Thread(target=lambda: made.append(Mount()))
    starter.start()
    starter.join(HANG_S)
    waited = starter.is_alive()
    forker.kill()
    forker.wait()
    starter.join()
    assert made, "the daemon did not start"
    if waited or forker.returncode != -signal.SIGKILL:
        made[0].close()
        pytest.fail("the daemon's start waited for the forking to stop" if waited else
                    "the forker stopped by itself")
    return made[0]


def test_daemons_withdraw_their_listen_requests(watch):
    """Two daemons: the first to stop leaves the other listening, and listed processes
    still come from its events; the second to stop leaves no listener. The second starts
    while a process forks without end: the first's events reach its socket all along, and
    its wait for an answer to the filtered request, which 6.1 never gives, still ends."""
    first = Mount()
    second = None
    try:
        assert watch.sends_events(), "the kernel sends no events with a daemon mounted"
        second = mount_while_forking()
        first.close()
        first = None
        assert watch.sends_events(), \
            "the daemon still mounted is not counted: the kernel stopped when the first left"
        sleeper = subprocess.Popen(["sleep", "60"])
        try:
            assert str(sleeper.pid) in os.listdir(second.path)
        finally:
            sleeper.kill()
            sleeper.wait()
    finally:
        for m in (first, second):
            if m:
                m.close()
    assert not watch.sends_events(), \
        "events are still sent after every daemon stopped: a listen request was never withdrawn"
