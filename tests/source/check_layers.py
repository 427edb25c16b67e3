#!/usr/bin/env python3
"""The daemon's include graph keeps the architecture (ARCHITECTURE.md).

Fails (exit 1, one line per fault) when
- a module (a .c and its .h) includes, directly or through others, itself:
  an include circle, within a folder or across folders;
- a folder includes a folder of a higher layer (LAYERS, lowest first): an
  arrow from a lower layer back up;
- a source file sits in a folder that LAYERS does not place.
Includes are the project's own, root-relative ("fs/lib/log.h").
"""
import os
import re
import sys

# Lowest first: a folder may include its own and those before it.
LAYERS = [
    "fs/lib",        # logging, cleanup, clocks, parsers, the settings
    "cache/nodes",   # the node table, its hand-over record, link hints
    "cache/index",   # the process index: events, TGID index, generations, views
    "fs/cgroup",     # where a process's cgroups are, and their numbers
    "fs/caller",     # acting as the caller: identity, namespaces, helpers, shares
    "fs/resources",  # the containers' resource files
    "fs/entries",    # the entry tables: what a name is, its cache lifetimes
    "fs/request",    # the request path: the operation table and the operations
    "fs/transport",  # /dev/fuse and io_uring: how requests come and replies go
    "fs/supervisor", # restarts, upgrades, hand-overs, takeovers
    "fs/daemon",     # the process: options, start-up, the server's steps
]
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def sources(root):
    for top in ("fs", "cache"):
        for dirpath, _, names in os.walk(os.path.join(root, top)):
            for name in names:
                if name.endswith((".c", ".h")):
                    yield os.path.relpath(os.path.join(dirpath, name), root)


def module_graph(root, files):
    graph = {}
    for path in files:
        module = os.path.splitext(path)[0]
        graph.setdefault(module, set())
        with open(os.path.join(root, path)) as f:
            for target in INCLUDE.findall(f.read()):
                if target in files and os.path.splitext(target)[0] != module:
                    graph[module].add(os.path.splitext(target)[0])
    return graph


def circles(graph):
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def faults(root):
    files = set(sources(root))
    graph = module_graph(root, files)
    rank = {folder: i for i, folder in enumerate(LAYERS)}
    out = []
    for module in sorted(graph):
        if os.path.dirname(module) not in rank:
            out.append(f"{module}: in a folder no layer places (tests/source/check_layers.py LAYERS)")
    for component in circles(graph):
        out.append("include circle: " + " -> ".join(component))
    for module, targets in sorted(graph.items()):
        here = rank.get(os.path.dirname(module))
        for target in sorted(targets):
            there = rank.get(os.path.dirname(target))
            if here is not None and there is not None and there > here:
                out.append(f"{module} includes {target}: {LAYERS[there]} is above {LAYERS[here]}")
    return out


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
    found = faults(root)
    for line in found:
        print(line)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
