#!/usr/bin/env python3
"""No C or C++ function body is longer than 100 lines, outside the declared data tables (issue #38).

A brace-matching scanner: comments, string, raw-string and char literals are blanked first;
then each `{` that opens at namespace or class scope and follows a parameter list `(...)`
(with `const`, `noexcept`, `override`, a trailing return type or a constructor's member
initializers between) opens a function body, which ends at its matching `}`. A body's length is
its line count from the line of `{` to the line of `}`. Lambdas and local classes count toward
the function that holds them. Brace initializers at namespace scope (`kTable = {...}`) are data,
not functions, and are not measured. The kernel side's BPF C (bpf/*.bpf.c, bpf/*.h) follows the
same brace rules and is measured too: a BPF program over the limit is split into
`static __always_inline` helpers, which the verifier sees inlined as before.

  check_function_length.py SOURCE_DIR        exit 0 none too long, 1 with each one printed
  check_function_length.py --self-test       the scanner finds a planted long function
  check_function_length.py --list SOURCE_DIR every function over the limit, allowed or not
"""
import os
import re
import sys

LIMIT = 100
SKIP_DIRS = ("tests", "build", ".git", "node_modules", "dist", "bench", "third_party")
SOURCE_SUFFIXES = (".cpp", ".h", ".cc", ".hpp", ".c")
# Declared data tables: functions whose body is one table of data (a row per entry), where
# splitting would only scatter the rows. "path:function".
DATA_TABLES = {
    # One TableSpec per shipped table (its SELECT, ClickHouse columns, sort key).
    "fleet/tables.cpp:build",
    # One case per decode class: which register or struct field fills which argument slot.
    "collector/decode.cpp:decode_call_args",
}
MEMBER_INIT = "<member brace initializer>"
NOT_FUNCTIONS = {"if", "for", "while", "switch", "catch", "return", "sizeof", "decltype", "alignof", "static_assert",
                 "requires", "noexcept", "throw", "new", "delete"}


def blank(code):
    """code with comments and literals replaced by spaces (newlines kept)."""
    out, i, n = [], 0, len(code)

    def keep_lines(s):
        return "".join("\n" if ch == "\n" else " " for ch in s)

    while i < n:
        c = code[i]
        if code.startswith("//", i):
            j = code.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
            continue
        if code.startswith("/*", i):
            j = code.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(keep_lines(code[i:j]))
            i = j
            continue
        m = re.match(r'(?:u8|u|U|L)?R"([^(\s]*)\(', code[i:i + 24]) if c in "uULR" else None
        if m and (i == 0 or not (code[i - 1].isalnum() or code[i - 1] == "_")):
            end = code.find(")" + m.group(1) + '"', i + len(m.group(0)))
            j = n if end < 0 else end + len(m.group(1)) + 2
            out.append('""' + keep_lines(code[i + 2:j]))
            i = j
            continue
        if c == '"' or (c == "'" and not (i > 0 and code[i - 1].isalnum())):  # not a digit separator 1'000
            j = i + 1
            while j < n and code[j] != c and code[j] != "\n":
                j += 2 if code[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(c + keep_lines(code[i + 1:j - 1]) + c)
            i = j
            continue
        out.append(c)
        i += 1
    return "".join(out)


def strip_preprocessor(code):
    """Preprocessor lines (and their continuations) blanked: a #define's braces are not code."""
    lines = code.split("\n")
    cont = False
    for k, line in enumerate(lines):
        if cont or line.lstrip().startswith("#"):
            cont = line.rstrip().endswith("\\")
            lines[k] = ""
    return "\n".join(lines)


HEAD_TAIL = re.compile(
    r"\)\s*(?:const\b|noexcept\b(?:\s*\([^)]*\))?|override\b|final\b|mutable\b|volatile\b|&&|&|"
    r"->\s*[\w:<>,\s*&]+?|\s)*$")


def opens_function(header):
    """Whether the text before a `{` (since the previous `;`, `{` or `}`) is a function head."""
    h = " ".join(header.split())
    if not h or "(" not in h:
        return None
    if re.search(r"=\s*$", h) or h.endswith(","):
        return None  # a brace initializer
    # A constructor's member initializers: `X::X(...) : a_(x), b_{y}` — cut at the first
    # top-level ` : ` after the parameter list.
    depth, cut = 0, None
    for k, ch in enumerate(h):
        if ch in "(<[":
            depth += 1
        elif ch in ")>]":
            depth -= 1
        elif ch == ":" and depth == 0 and (k + 1 >= len(h) or h[k + 1] != ":") and (k == 0 or h[k - 1] != ":"):
            cut = k
            break
    if cut is not None:
        inits = h[cut + 1:].rstrip()
        if inits and (inits[-1].isalnum() or inits[-1] in "_>"):
            return MEMBER_INIT  # `b_{y}` inside the initializer list, not the body
        h = h[:cut].rstrip()
    if not HEAD_TAIL.search(h):
        return None
    # The name before the parameter list.
    depth = 0
    for k in range(len(h) - 1, -1, -1):
        if h[k] == ")":
            depth += 1
        elif h[k] == "(":
            depth -= 1
            if depth == 0:
                m = re.search(r"([~\w:]+(?:<[^()]*>)?|operator\s*\S+)\s*$", h[:k])
                if not m:
                    return None
                name = m.group(1)
                if name.split("::")[-1] in NOT_FUNCTIONS:
                    return None
                return name
    return None


def functions(code):
    """(name, first line, last line) of every function body at namespace or class scope."""
    text = strip_preprocessor(blank(code))
    found = []
    stack = []  # per open brace: "func" or "scope" (namespace, class, enum, initializer, extern)
    last_stop = 0
    func_start = None
    for i, ch in enumerate(text):
        if ch == "{":
            if "func" in stack:
                stack.append("inner")
            else:
                name = opens_function(text[last_stop:i])
                if name == MEMBER_INIT:
                    stack.append("init")
                    continue  # the head goes on after its `}`
                if name:
                    stack.append("func")
                    func_start = (name, text.count("\n", 0, i) + 1, i)
                else:
                    stack.append("scope")
            last_stop = i + 1
        elif ch == "}":
            kind = stack.pop() if stack else "scope"
            if kind == "init":
                continue
            if kind == "func":
                name, line, _ = func_start
                found.append((name, line, text.count("\n", 0, i) + 1))
            last_stop = i + 1
        elif ch == ";":
            last_stop = i + 1
    return found


def cpp_sources(src, skip_dirs=SKIP_DIRS, skip_patterns=()):
    """(path relative to src, text) of each C or C++ source outside skip_dirs (top-level folders, and
    build*/hidden ones) and the files matching skip_patterns."""
    for root, dirs, files in os.walk(src):
        rel_root = os.path.relpath(root, src)
        top = rel_root.split(os.sep)[0]
        if rel_root != "." and (top in skip_dirs or top.startswith("build") or top.startswith(".")):
            dirs[:] = []
            continue
        for f in sorted(files):
            if not f.endswith(SOURCE_SUFFIXES):
                continue
            rel = os.path.relpath(os.path.join(root, f), src)
            if any(re.match(p, rel) for p in skip_patterns):
                continue
            yield rel, open(os.path.join(root, f), encoding="utf-8", errors="replace").read()


def cases_pass(cases, problems_in):
    """A check's self-test: each (code, problems wanted) case against problems_in(path, code)."""
    ok = True
    for code, want in cases:
        got = len(problems_in("x.cpp", code))
        if got != want:
            print("self-test: %r: want %d, got %d" % (code, want, got))
            ok = False
    return ok


def run_check(doc, self_test, check):
    """The checkers' command line: `--self-test`, or SOURCE_DIR: the self-test, then check(src)
    (its exit status)."""
    args = sys.argv[1:]
    if args == ["--self-test"]:
        return 0 if self_test() else 1
    if len(args) != 1:
        sys.exit(doc)
    if not self_test():
        return 1
    return check(args[0])


def scan(src, limit=LIMIT):
    long_ones = []
    for rel, code in cpp_sources(src, SKIP_DIRS):
        for name, first, last in functions(code):
            lines = last - first + 1
            if lines > limit:
                long_ones.append((rel, name, first, lines))
    return long_ones


def self_test():
    body = "\n".join("  x += %d;" % k for k in range(120))
    code = ('namespace a {\nstruct S {\n  int f() const {\n' + body + '\n  }\n};\n'
            'int g(int x) { return x; }\n'
            'static const int kTable[] = {\n' + ",\n".join(str(k) for k in range(150)) + '};\n'
            'S::S(int v) : v_(v), w_{v} {\n' + body + '\n}\n'
            'auto h() -> int {\n  auto l = [] {\n' + body + '\n  };\n  const char* s = "}{";\n  return 0;\n}\n'
            'void k() {\n  if (x) {\n' + body + '\n  }\n}\n'
            '#define M(x) { x }\n'
            'int n = 1\'000;\n}\n')
    # BPF C: a program after its SEC() and a helper, as bpf/*.bpf.h write them; a map's struct is data.
    code += ('struct {\n  __uint(type, BPF_MAP_TYPE_RINGBUF);\n} rb SEC(".maps");\n'
             'static __always_inline int helper(struct pt_regs *ctx)\n{\n' + body + '\n}\n'
             'SEC("uprobe")\nint BPF_UPROBE(on_call, void *p)\n{\n  return helper(ctx);\n}\n')
    got = [(name, last - first + 1) for name, first, last in functions(code)]
    want = [("f", 122), ("g", 1), ("S::S", 122), ("h", 126), ("k", 124), ("helper", 122), ("BPF_UPROBE", 3)]
    if got != want:
        print("self-test: want %s, got %s" % (want, got))
        return False
    return True


def report(src, list_all=False):
    long_ones = scan(src)
    bad = [x for x in long_ones if list_all or "%s:%s" % (x[0], x[1]) not in DATA_TABLES]
    for rel, name, first, lines in bad:
        print("%s:%d: %s is %d lines (over %d): split it, or declare it a data table in %s" %
              (rel, first, name, lines, LIMIT, os.path.basename(__file__)))
    print("check_function_length: %d function bodies over %d lines (%d declared data tables)" %
          (len(bad), LIMIT, len(DATA_TABLES)))
    return 1 if bad else 0


def main():
    if sys.argv[1:2] == ["--list"]:
        del sys.argv[1]
        return run_check(__doc__, self_test, lambda src: report(src, list_all=True))
    return run_check(__doc__, self_test, report)


if __name__ == "__main__":
    sys.exit(main())
