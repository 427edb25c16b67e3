"""Capabilities by name: the kernel's numbers, and the set the man page documents as
kept (PRIVILEGES)."""
import os
import re

from lib.build import ROOT

CAP_HEADER = "/usr/include/linux/capability.h"


def cap_numbers():
    with open(CAP_HEADER) as f:
        return {m.group(1): int(m.group(2))
                for m in re.finditer(r"^#define\s+(CAP_\w+)\s+(\d+)\s*$", f.read(), re.M)
                if m.group(1) not in ("CAP_LAST_CAP",)}


def documented_caps():
    """The capabilities the man page's PRIVILEGES section lists as kept (.TP / .B CAP_X)."""
    with open(os.path.join(ROOT, "man", "procfast.8")) as f:
        man = f.read()
    section = re.search(r"^\.SH PRIVILEGES\n(.*?)^\.SH ", man, re.M | re.S)
    assert section, "man page has no PRIVILEGES section"
    return re.findall(r"^\.TP\n\.B (CAP_\w+)\n", section.group(1), re.M)
