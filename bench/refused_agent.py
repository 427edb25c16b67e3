"""One round of bench/refused_agent.sh: a Go agent (node_exporter) whose uid's share of the
daemon's threads is taken. Run as root in a network namespace of its own.

argv: MOUNT SERVER_PID CPU HOLD_S. The exporter runs on CPU with the mount as its procfs;
one scrape unheld, then one made while a read of kmsg of root's, on CPU, waits in the
daemon (with max_busy_per_uid=1, every further request of root's on that CPU is refused)
for HOLD_S seconds. Prints one JSON object: each scrape's outcome, the failed collectors,
and the daemon's and the exporter's CPU seconds per second of the hold.
"""
import json
import os
import re
import subprocess
import sys
import threading
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
from lib.kmsg_request import end_kernel_log_waits, reading_kmsg  # noqa: E402

URL = "http://127.0.0.1:9101/metrics"
SCRAPE_WAIT_S = 15
FAILED = re.compile(r'^node_scrape_collector_success\{collector="([^"]+)"\} 0$', re.M)


def cpu_s(pid):
    total = 0
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/stat" % (pid, tid)) as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def scraping(out):
    t0 = time.monotonic()
    try:
        with urllib.request.urlopen(URL, timeout=SCRAPE_WAIT_S) as r:
            text = r.read().decode()
        out.update(ok=True, bytes=len(text), failed=sorted(FAILED.findall(text)))
    except OSError as e:
        out.update(ok=False, error=str(e))
    out["end"] = time.monotonic()
    out["s"] = out["end"] - t0


def main():
    mount, server, cpu, hold = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    exporter = subprocess.Popen(["taskset", "-c", str(cpu), "prometheus-node-exporter",
                                 "--path.procfs=" + mount, "--collector.processes",
                                 "--web.listen-address=127.0.0.1:9101"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(300):
            try:
                urllib.request.urlopen(URL.replace("/metrics", "/"), timeout=5).read()
                break
            except OSError:
                time.sleep(0.1)
        unheld = {}
        scraping(unheld)
        reader, _ = reading_kmsg(mount, server, cpu)
        held = {}
        c0, e0, t0 = cpu_s(server), cpu_s(exporter.pid), time.monotonic()
        scraper = threading.Thread(target=scraping, args=(held,), daemon=True)
        scraper.start()
        time.sleep(hold)
        c1, e1, t1 = cpu_s(server), cpu_s(exporter.pid), time.monotonic()
        still_held = reader.is_alive()
        ended_in_hold = not scraper.is_alive()
        end_kernel_log_waits(lambda: not reader.is_alive())
        scraper.join(SCRAPE_WAIT_S + 5)
        print(json.dumps({
            "unheld": unheld, "held": {k: v for k, v in held.items() if k != "end"},
            "hold_kept": still_held, "ended_in_hold": ended_in_hold,
            "after_release_s": held["end"] - t1 if held.get("ok") and not ended_in_hold else None,
            "daemon_cpu": (c1 - c0) / (t1 - t0), "exporter_cpu": (e1 - e0) / (t1 - t0)}))
    finally:
        exporter.kill()
        exporter.wait()


main()
