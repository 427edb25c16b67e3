#!/usr/bin/python3
"""tests/guest/vcpus.py MONITOR KALLSYMS

What a guest's vCPUs run, asked of qemu's human monitor (a unix socket), for a guest
that runs past its timeout: the guest's own watchdog (tests/guest/init) needs the
guest to schedule, this does not. For each vCPU, twice a few seconds apart: whether it
is halted, its privilege level and instruction pointer, and the kernel text addresses
found on its stack (a crude backtrace: stale frames show too), named from the copy of
/proc/kallsyms the guest's init left at its start. Then an NMI to every vCPU: the guest boots
with unknown_nmi_panic and panic_print, so its kernel prints the stack of the CPU it
interrupted, every CPU's backtrace and every task's state on its console, and stops.
"""
import bisect
import re
import socket
import sys
import time

PROMPT = b"(qemu) "
ESCAPE = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


class Monitor:
    def __init__(self, path):
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.settimeout(30)
        self.sock.connect(path)
        self._until_prompt()  # the banner

    def _until_prompt(self):
        data = b""
        while not data.endswith(PROMPT):
            chunk = self.sock.recv(65536)
            if not chunk:
                break
            data += chunk
        return ESCAPE.sub("", data[:-len(PROMPT)].decode(errors="replace"))

    def ask(self, command):
        self.sock.sendall(command.encode() + b"\n")
        lines = self._until_prompt().replace("\r", "").split("\n")
        return [line for line in lines if line and not line.endswith(command)]


class Symbols:
    def __init__(self, path):
        pairs = []
        with open(path) as f:
            for line in f:
                addr, _, name = line.split()[:3]
                pairs.append((int(addr, 16), name))
        pairs.sort()
        self.addrs = [a for a, _ in pairs]
        self.names = [n for _, n in pairs]

    def name(self, addr):
        """symbol+offset, or None for an address no symbol is near."""
        i = bisect.bisect_right(self.addrs, addr) - 1
        if i < 0 or addr - self.addrs[i] > 0x10000:
            return None
        return "%s+0x%x" % (self.names[i], addr - self.addrs[i])


def registers(mon):
    """{cpu: {'RIP': int, 'RSP': int, 'CPL': str, 'HLT': str}} from info registers -a."""
    cpus, cpu = {}, None
    for line in mon.ask("info registers -a"):
        m = re.match(r"CPU#(\d+)", line)
        if m:
            cpu = cpus.setdefault(int(m.group(1)), {})
        elif cpu is not None:
            for key, value in re.findall(r"\b(RIP|RSP|CPL|HLT)=([0-9a-f]+)", line):
                cpu[key] = value
    return cpus


def stack_text(mon, syms, cpu, rsp):
    """Kernel text addresses among the 96 words above the stack pointer."""
    mon.ask("cpu %d" % cpu)
    found = []
    for line in mon.ask("x /96gx 0x%s" % rsp):
        for word in re.findall(r"0x([0-9a-f]{16})", line.split(":", 1)[-1]):
            name = syms.name(int(word, 16))
            if name and (not found or found[-1] != name):
                found.append(name)
    return found


def snapshot(mon, syms, when):
    print("vCPUs %s (host time %s):" % (when, time.strftime("%H:%M:%S")))
    for line in mon.ask("info cpus"):
        print("  " + line.strip())
    for cpu, regs in sorted(registers(mon).items()):
        rip = int(regs.get("RIP", "0"), 16)
        print("  CPU %d: CPL=%s HLT=%s RIP=%x %s" % (
            cpu, regs.get("CPL"), regs.get("HLT"), rip, syms.name(rip) or "(not kernel text)"))
        if regs.get("CPL") == "0" and "RSP" in regs:
            for name in stack_text(mon, syms, cpu, regs["RSP"]):
                print("      " + name)


def main(monitor, system_map):
    syms = Symbols(system_map)
    mon = Monitor(monitor)
    snapshot(mon, syms, "first")
    time.sleep(5)
    snapshot(mon, syms, "5 s later")
    print("NMI to every vCPU: the guest's panic report follows on its console")
    mon.ask("nmi")


if __name__ == "__main__":
    try:
        main(*sys.argv[1:3])
    except (OSError, ValueError) as e:
        print("vcpus: %s" % e)
