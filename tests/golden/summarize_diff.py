#!/usr/bin/env python3
"""What differs between two JSON answers, by path (tests/golden/compare_binaries.sh).

  summarize_diff.py BEFORE AFTER    (a .json document, or .jsonl: one document a line)

Prints one line per kind of change and path, array indices folded ([]), with a count and the
first example: ADDED / REMOVED keys, LEN of arrays, VAL of values, TYPE; a string holding JSON
is compared as JSON, a multi-line string (MCP text) line by line (-/+ lines). So a field added
on purpose reads apart from a value that moved.
"""
import collections
import difflib
import json
import re
import sys


def load(path):
    with open(path, encoding="utf-8") as f:
        if path.endswith(".jsonl"):
            return [json.loads(line) for line in f if line.strip()]
        return json.load(f)


class Changes:
    def __init__(self):
        self.count = collections.Counter()
        self.example = {}

    def add(self, kind, path, before, after):
        key = (kind, re.sub(r"\[\d+\]", "[]", path))
        self.count[key] += 1
        self.example.setdefault(key, (str(before)[:160], str(after)[:160]))

    def walk(self, a, b, path=""):
        numbers = (int, float)
        if type(a) is not type(b) and not (isinstance(a, numbers) and isinstance(b, numbers)):
            self.add("TYPE", path, a, b)
        elif isinstance(a, dict):
            for k in sorted(set(a) | set(b)):
                if k not in a:
                    self.add("ADDED", f"{path}/{k}", "", b[k])
                elif k not in b:
                    self.add("REMOVED", f"{path}/{k}", a[k], "")
                else:
                    self.walk(a[k], b[k], f"{path}/{k}")
        elif isinstance(a, list):
            if len(a) != len(b):
                self.add("LEN", path, len(a), len(b))
            for i, (u, v) in enumerate(zip(a, b)):
                self.walk(u, v, f"{path}[{i}]")
        elif a != b:
            if isinstance(a, str) and a[:1] in "{[":
                try:
                    self.walk(json.loads(a), json.loads(b), f"{path}(json)")
                    return
                except ValueError:
                    pass
            if isinstance(a, str) and "\n" in a + b:
                for d in difflib.unified_diff(a.splitlines(), b.splitlines(), lineterm="", n=0):
                    if not d.startswith(("---", "+++", "@@")):
                        # One entry per line shape (digits folded): each changed sentence apart.
                        shape = re.sub(r"[0-9.]+", "N", d[1:])[:80]
                        self.add("LINE" + d[0], f"{path} {shape}", d[1:], "")
                return
            self.add("VAL", path, a, b)


def main():
    if len(sys.argv) != 3:
        print("usage: summarize_diff.py BEFORE AFTER", file=sys.stderr)
        return 2
    try:
        before, after = load(sys.argv[1]), load(sys.argv[2])
    except (OSError, ValueError) as e:
        print(f"  (not JSON: {e})")
        return 0
    changes = Changes()
    changes.walk(before, after)
    for (kind, path), n in sorted(changes.count.items()):
        was, now = changes.example[(kind, path)]
        if kind.startswith("LINE"):
            print(f"  {kind[4]} {path.split(' ', 1)[0]} x{n}: {was}")
        else:
            print(f"  {kind} {path} x{n}: {was} | {now}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
