#!/usr/bin/env python3
""""Which entry is the biggest" is written one way: common/argmax.h's `argmax_by` (issue #38).

The argmax of a map or a list of rows was rewritten at each use, as `std::max_element` with a
pair comparator or as a "best so far" loop (`if (x > best) best = x, arg = k;`), each with its
own tie rule. argmax_by keeps the first of equals, as those did. This check fails, in the C++
outside the files allowed below, on:
  - `std::max_element` / `std::min_element` (and their `std::ranges::` forms);
  - a "best so far" update: `if (EXPR > NAME)` (or <, >=, <=) whose statement then assigns NAME
    (or the variable NAME is a member of), the shape of a hand-written argmax.
A running maximum taken while a stream is read (one pass that also does other work per item,
in an order that matters) is not an argmax of a range: such a file is allowed below with the
reason.

  check_argmax.py SOURCE_DIR        exit 0 none, 1 with each one printed
  check_argmax.py --self-test       the checker finds planted argmax loops
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_function_length  # noqa: E402  (blank: source with comments and literals blanked)

SKIP_DIRS = ("tests", "build", ".git", "node_modules", "dist", "bench", "bpf")
# (file, the variable of its running maximum; None: the whole file)
ALLOWED = (
    (r"common/argmax\.h", None),
    # Folds over a stream, not an argmax of a range:
    # ITL's longest gap, found while the token times are rebuilt from the gaps in order.
    (r"diagnosis/request_latency\.cpp", "best"),
    # A claim's culprit kept per key while the claims are summed, in one pass.
    (r"diagnosis/request_latency\.cpp", "largest"),
    # The longest long forward pass, noted while the passes that overlap a long prefill are
    # collected.
    (r"diagnosis/causes/request_prefill\.cpp", "longest"),
    # The worst collective's example timeline, rebuilt only when a later group is worse.
    (r"diagnosis/causes/nccl_straggler\.cpp", "a"),
    # The narrowest of five clock readings, taken in the loop.
    (r"collector/clock\.cpp", "best_width"),
    # The least-sleeping thread, measured as each thread is first looked at.
    (r"diagnosis/data_workers\.cpp", "best"),
    # The longest runnable stretch, found while a thread's lane is cut into segments in time order.
    (r"exporters/report_lanes\.cpp", "best_runnable_"),
    # The rank numbering's anchor and nearest call (argmins whose outputs feed the shift search
    # after them): the engine's code (issue #37), left to its owner.
    (r"diagnosis/rank_inference\.cpp", None),
)
EXTREMUM_CALL = re.compile(r"\bstd\s*::\s*(?:ranges\s*::\s*)?(max|min)_element\b")
# `if (EXPR op NAME)` where NAME is a plain or member name (best, best.w.ns, top_ns_).
BEST_SO_FAR = re.compile(r"\bif\s*\(([^;{}]*?)(?:>=|<=|(?<![-<>])>(?!>)|(?<![<])<(?![<=]))\s*([A-Za-z_]\w*)((?:\s*\.\s*\w+)*)\s*\)")


def allowed(rel, name):
    return any(re.fullmatch(path, rel) and (var is None or var == name) for path, var in ALLOWED)


def statement_after(text, end):
    """The statement an `if (...)` at text[:end] governs: its braced block or up to its `;`."""
    rest = text[end:]
    s = rest.lstrip()
    if s.startswith("{"):
        depth = 0
        for i, ch in enumerate(s):
            depth += ch == "{"
            depth -= ch == "}"
            if depth == 0:
                return s[:i + 1]
        return s
    # Up to the first `;` outside braces (`best = {pid, sh}` has a brace-list).
    depth = 0
    for i, ch in enumerate(s):
        if ch in "{(":
            depth += 1
        elif ch in "})":
            depth -= 1
        elif ch == ";" and depth <= 0:
            return s[:i + 1]
    return s


ASSIGNMENT = re.compile(r"(?<![\w.>])([A-Za-z_]\w*)(?:\s*(?:\.|->)\s*\w+|\[[^\]]*\])*\s*(?<![<>=!+\-*/%&|^])=(?!=)\s*([^,;]*)")


def is_best_so_far(condition, name, body):
    """Whether `if (condition op name) body` keeps a best so far: it replaces `name` with the
    compared value and also records which entry that was (another variable, or `name` taken
    whole as the entry: `best = {k, v}` / `best = w`). A clamp (`if (n > cap) n = cap`), a running
    maximum of a value alone (`if (x > hi) hi = x`) or a timer (`if (now >= next_) next_ = now + k`)
    is not one."""
    left = re.split(r"&&|\|\|", condition)[-1].strip().lstrip("!")
    while left.startswith("(") and left.count("(") > left.count(")"):
        left = left[1:].lstrip()
    left_root = re.match(r"[A-Za-z_]\w*", left.lstrip("*&"))
    assigned = {}
    for a in ASSIGNMENT.finditer(body):
        if re.search(r"[\w&*]\s*$", body[:a.start()]):
            continue  # a declaration (`auto r = ...`), not a record of the entry
        assigned.setdefault(a.group(1), a.group(2).strip())
    if name not in assigned:
        return False
    value = assigned[name]
    if value.startswith("{") or (left_root and value == left_root.group(0) != left):
        return True
    return value == left and any(k != name for k in assigned)


def problems_in(rel, code):
    out = []
    text = check_function_length.blank(code)
    lines = code.split("\n")

    def where(pos):
        n = text.count("\n", 0, pos) + 1
        return n, lines[n - 1].strip()[:120]

    for m in EXTREMUM_CALL.finditer(text):
        if allowed(rel, None):
            continue
        n, src = where(m.start())
        out.append("%s:%d: std::%s_element: use argmax_by of common/argmax.h (or std::ranges::max for a value): %s" %
                   (rel, n, m.group(1), src))
    for m in BEST_SO_FAR.finditer(text):
        name = m.group(2)
        if is_best_so_far(m.group(1), name, statement_after(text, m.end())) and not allowed(rel, name):
            n, src = where(m.start())
            out.append("%s:%d: hand-written \"best so far\" loop on `%s`: use argmax_by of common/argmax.h: %s" %
                       (rel, n, name, src))
    return out


def scan(src):
    found = []
    for rel, code in check_function_length.cpp_sources(src, SKIP_DIRS):
        found += problems_in(rel, code)
    return found


def self_test():
    cases = [
        ("auto t = std::max_element(m.begin(), m.end(), by_second);", 1),
        ("auto t = std::ranges::min_element(v);", 1),
        ("for (auto& [k, v] : m)\n  if (v > best) best = v, top = k;", 1),
        ("for (auto& [k, v] : m)\n  if (v.ns > best.w.ns) best = {k, v};", 1),
        ("for (auto& [k, n] : m)\n  if (n > most) {\n    most = n;\n    op = k;\n  }", 1),
        ("if (n > cap) n = cap;", 0),
        ("if (length > max_body) return refused(413);", 0),
        ("if (a < b) x = b;", 0),
        ("if (a == best) best = 0;", 0),
        ("auto top = argmax_by(m, [](const auto& x) { return x.second; });", 0),
        ("// if (x > best) best = x; in a comment\nconst char* s = \"std::max_element\";", 0),
        ("const auto n = std::ranges::max(bins);", 0),
        ("if (x >= 0 && y > limit_) { limit_ = y; }", 0),
        ("if ((k >> 16) == pid && o.count > most) {\n  most = o.count;\n  op = k;\n}", 1),
        ("if (p.dur_ns() > longest) longest = p.dur_ns(), who = p.pid;", 1),
        ("if (w.sleep_ns < best.sleep_ns) best = w;", 1),
        ("if (until > s.loaded_to) {\n  if (auto r = load(until); !r) return r;\n  s.loaded_to = until;\n}", 0),
        ("if (now >= next_) { next_ = now + k; tick(); }", 0),
        ("std::vector<std::pair<int, int>> v; if (i < n) v.push_back({i, n});", 0),
    ]
    return check_function_length.cases_pass(cases, problems_in)


def report(src):
    found = scan(src)
    for p in found:
        print(p)
    print("check_argmax: %d hand-written argmax loops outside common/argmax.h" % len(found))
    return 1 if found else 0


def main():
    return check_function_length.run_check(__doc__, self_test, report)


if __name__ == "__main__":
    sys.exit(main())
