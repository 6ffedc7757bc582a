#!/usr/bin/env python3
"""Fails when the modules of a source folder include each other in a cycle.

A module is a header and its .cpp (diagnosis/correlator.h + diagnosis/correlator.cpp): module A
depends on module B when any file of A has `#include "B.h"`. The diagnosis wing is layered
(docs/DIAGNOSIS.md "Layers"): cause modules below the correlator, never the other way round,
so a cycle is a back-arrow to remove, not to live with.

    check_include_cycles.py SOURCE_ROOT FOLDER     (e.g. . diagnosis)

Prints each cycle (its modules and the #include lines that close it) and exits 1; exits 0
when there is none; 2 on bad arguments.
"""
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def modules(root, folder):
    """module -> {included module -> 'file:line' of the first include}"""
    deps = {}
    for d, _, files in os.walk(os.path.join(root, folder)):
        for f in sorted(files):
            if not f.endswith((".h", ".hpp", ".cpp", ".cc")):
                continue
            path = os.path.join(d, f)
            rel = os.path.relpath(path, root)
            mod = os.path.splitext(rel)[0]
            out = deps.setdefault(mod, {})
            with open(path, encoding="utf-8", errors="replace") as fh:
                for n, line in enumerate(fh, 1):
                    m = INCLUDE.match(line)
                    if not m or not m.group(1).startswith(folder + "/"):
                        continue
                    target = os.path.splitext(m.group(1))[0]
                    if target != mod:
                        out.setdefault(target, f"{rel}:{n}")
    return deps


def cycles(deps):
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index, low, on, stack, found = {}, {}, set(), [], []
    counter = 0
    for start in sorted(deps):
        if start in index:
            continue
        work = [(start, iter(sorted(deps.get(start, {}))))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on.add(start)
        while work:
            v, it = work[-1]
            advanced = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(deps.get(w, {})))))
                    advanced = True
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    found.append(sorted(comp))
    return found


def main(argv):
    if len(argv) != 3:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    root, folder = argv[1], argv[2].rstrip("/")
    if not os.path.isdir(os.path.join(root, folder)):
        print(f"no folder {folder} under {root}", file=sys.stderr)
        return 2
    deps = modules(root, folder)
    found = cycles(deps)
    for comp in found:
        members = set(comp)
        print(f"include cycle among {len(comp)} modules of {folder}/:")
        for m in comp:
            for target, where in sorted(deps.get(m, {}).items()):
                if target in members:
                    print(f"  {where}: {m} -> {target}")
    if not found:
        print(f"{folder}/: {len(deps)} modules, no include cycle")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
