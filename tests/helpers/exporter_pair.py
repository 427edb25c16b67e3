"""Two node_exporters side by side, one given the real /proc and one the mount, scraped
/proc, mount, /proc; prints the three scrapes as JSON.

Run by tests/tools/test_node_exporter.py in a network namespace of its own: the ports
are private (no other listener can hold them), and /proc/net is that namespace's, for
both exporters (procfs answers /proc/net in its reader's network namespace): the
network devices are read from /proc/net/dev, where they would be from netlink.

argv: MOUNT_PATH [--held SERVER_PID CPU], then the command prefix the exporters run
under (setpriv ...), if any.

--held: the exporters run on CPU, and the mount's scrape is made while a read of kmsg
through the mount, made by this process (root) on CPU, waits in SERVER_PID: with
max_busy_per_uid=1 every request of root's on that CPU is refused meanwhile. The read is
ended one second into the scrape, which must not have finished by then, and must then
finish.
"""
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from lib.kmsg_request import end_kernel_log_waits, reading_kmsg  # noqa: E402

EXPORTER = "prometheus-node-exporter"
PORTS = {"/proc": 9100, "mount": 9101}
START_WAIT_S = 30
SCRAPE_WAIT_S = 60
HELD_S = 1.0
HOLD_TRIES = 5


def scrape(port):
    with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port,
                                timeout=SCRAPE_WAIT_S) as r:
        return r.read().decode()


def wait_listening(port, proc, log):
    deadline = time.time() + START_WAIT_S
    while time.time() < deadline:
        if proc.poll() is not None:
            log.seek(0)
            sys.exit("node_exporter on port %d exited with %d:\n%s"
                     % (port, proc.returncode, log.read()))
        try:
            scrape(port)
            return
        except OSError:
            time.sleep(0.1)
    log.seek(0)
    sys.exit("node_exporter on port %d never answered in %d s:\n%s"
             % (port, START_WAIT_S, log.read()[-4000:]))


def held_scrape(mount, server, cpu):
    """The mount's scrape, made while root's read of kmsg waits on cpu; a kernel message
    that ends the read before the second is up makes the scrape again."""
    for _ in range(HOLD_TRIES):
        reader, _outcome = reading_kmsg(mount, server, cpu)
        got = {}

        def scraping():
            try:
                got["text"] = scrape(PORTS["mount"])
            except OSError as e:
                got["error"] = e
        scraper = threading.Thread(target=scraping, daemon=True)
        scraper.start()
        time.sleep(HELD_S)
        held = reader.is_alive()
        done = not scraper.is_alive()
        end_kernel_log_waits(lambda: not reader.is_alive())
        scraper.join(SCRAPE_WAIT_S)
        if scraper.is_alive():
            sys.exit("the mount's scrape never ended once the read that held root's share "
                     "did")
        if held and done:
            sys.exit("the mount's scrape ended while root's share was held: nothing refused")
        if "error" in got:
            sys.exit("the mount's scrape failed: %s" % got["error"])
        if held:
            return got["text"]
    sys.exit("the kernel log never stayed quiet for %s s" % HELD_S)


def main():
    args = sys.argv[1:]
    mount, held = args.pop(0), None
    if args[:1] == ["--held"]:
        held = (int(args[1]), int(args[2]))
        args = ["taskset", "-c", args[2]] + args[3:]
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    procs, logs = {}, {}
    try:
        for where, procfs in (("/proc", "/proc"), ("mount", mount)):
            logs[where] = tempfile.TemporaryFile("w+")
            procs[where] = subprocess.Popen(
                args + [EXPORTER, "--path.procfs=" + procfs, "--collector.processes",
                        # the devices from /proc/net/dev, not from netlink, and
                        # lo too (the namespace's only one)
                        "--no-collector.netdev.netlink",
                        "--collector.netdev.device-exclude=^$",
                        "--web.listen-address=127.0.0.1:%d" % PORTS[where]],
                stdout=subprocess.DEVNULL, stderr=logs[where])
        for where, p in procs.items():
            wait_listening(PORTS[where], p, logs[where])
        before = scrape(PORTS["/proc"])
        mounted = held_scrape(mount, *held) if held else scrape(PORTS["mount"])
        print(json.dumps([before, mounted, scrape(PORTS["/proc"])]))
    finally:
        for p in procs.values():
            p.kill()
            p.wait()


main()
