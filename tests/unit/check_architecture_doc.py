#!/usr/bin/env python3
"""Every file path and code name docs/ARCHITECTURE.md cites exists in the repository.

The map is only useful while it is true: this reads every `backticked` token of the page and
  - a path (has a slash, or a source file extension): the file or folder must exist; `<name>`
    and `*` match any name, `{h,cpp}` each of the listed endings;
  - a code name (an identifier, `Type::member`, `call(e).field`, `call()`): each identifier in
    it must occur in a source file of the repository (C/C++, Python, shell, CMake, SQL, JSON).
Tokens with spaces (commands, SQL) and flags (`--db`) are prose, not checked.

  check_architecture_doc.py SOURCE_DIR       exit 0 all found, 1 with each missing one printed
"""
import glob
import os
import re
import sys

DOC = os.path.join("docs", "ARCHITECTURE.md")
SOURCE_EXT = (".c", ".h", ".cpp", ".py", ".sh", ".cmake", ".sql", ".json", ".mjs", ".txt")
PATH_EXT = SOURCE_EXT + (".md", ".yaml")
SKIP_DIRS = {".git", "node_modules", "dist"}


def expand_braces(p):
    m = re.search(r"\{([^{}]*)\}", p)
    if not m:
        return [p]
    out = []
    for alt in m.group(1).split(","):
        out += expand_braces(p[:m.start()] + alt + p[m.end():])
    return out


def path_exists(src, token):
    pattern = re.sub(r"<[^<>]*>", "*", token.rstrip("/"))
    for p in expand_braces(pattern):
        full = os.path.join(src, p)
        if not (glob.glob(full) if any(c in p for c in "*?[") else os.path.exists(full)):
            return False
    return True


def source_identifiers(src):
    names = set()
    for root, dirs, files in os.walk(src):
        dirs[:] = [d for d in dirs if d not in SKIP_DIRS and not d.startswith("build")]
        for f in files:
            if f.endswith(SOURCE_EXT) or f == "CMakeLists.txt":
                try:
                    text = open(os.path.join(root, f), encoding="utf-8", errors="replace").read()
                except OSError:
                    continue
                names.update(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", text))
    return names


TOP_LEVEL = set()


def classify(token):
    """'path', 'code' or None (prose)."""
    if not token or " " in token or token.startswith("-") or token.startswith("$"):
        return None
    if token.startswith("/"):
        return None  # a URL path (`/mcp`), not a file
    if token.endswith(PATH_EXT):
        return "path"
    if "/" in token:
        # A repository path starts with one of its folders; `server/discover` is an MCP method.
        return "path" if token.split("/")[0] in TOP_LEVEL else None
    if re.fullmatch(r"[A-Za-z_][\w:]*(\([\w, ]*\))?(\.[A-Za-z_]\w*)*", token):
        return "code"
    return None


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    src = sys.argv[1]
    TOP_LEVEL.update(os.listdir(src))
    doc = open(os.path.join(src, DOC), encoding="utf-8").read()
    # Fenced blocks are pictures, not citations.
    prose = re.sub(r"```.*?```", "", doc, flags=re.S)
    tokens = re.findall(r"`([^`\n]+)`", prose)
    idents = source_identifiers(src)
    missing, paths, codes = [], 0, 0
    for t in tokens:
        kind = classify(t)
        if kind == "path":
            paths += 1
            if not path_exists(src, t):
                missing.append("path `%s`" % t)
        elif kind == "code":
            codes += 1
            for name in re.findall(r"[A-Za-z_]\w*", t):
                if name not in idents:
                    missing.append("code name `%s` (in `%s`)" % (name, t))
    for m in missing:
        print("%s cites %s: not in the repository" % (DOC, m))
    if paths < 20 or codes < 10:
        print("check_architecture_doc: only %d paths and %d code names found: the page lost its map" % (paths, codes))
        return 1
    print("check_architecture_doc: %d paths and %d code names checked, %d missing" % (paths, codes, len(missing)))
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
