#!/usr/bin/env python3
"""Every SELECT in the code that reads `events` or `v_calls` names only columns those have.

The `events` columns are listed once, in tracedb/event_columns.h (kEventColumns); `v_calls` is
defined in schemas/trace.sql. This check reads both, then every string literal of the C++
sources outside tests/ (adjacent literals joined; code spliced between them, such as
`kCols.sql()`, stands for a column list it cannot see and is skipped), finds each
`SELECT ... FROM events|v_calls` and checks the names of its select list. A column renamed or
dropped in the list then fails here, not in a query at run time (issue #38).

It also fails on a SELECT over `events` that writes row columns by hand in its list (`SELECT
pid, ts_ns FROM events`, outside any aggregate): such a list comes from the one column list,
`EventColumns<N>{...}.sql()` (beside a join too, when the joined table has no such names). An
aggregate (`count(*)`, `max(ts_ns)`) reads no row, and is checked for names only.

  check_event_selects.py SOURCE_DIR          exit 0 all good, 1 with each bad name printed
  check_event_selects.py --self-test         the checker finds a planted bad column
"""
import os
import re
import sys

# importers/ read another tool's database, whose table is also called `events`.
FOREIGN_SCHEMA_DIRS = ("importers",)
SKIP_DIRS = ("tests", "build", ".git", "node_modules", "dist")
SPLICE = " ?X "
KEYWORDS = {
    "case", "when", "then", "else", "end", "and", "or", "not", "null", "is", "in", "distinct", "as", "cast",
    "integer", "real", "text", "like", "glob", "between", "escape", "collate", "nocase", "true", "false", "over",
    "partition", "by", "order", "asc", "desc", "rows", "range", "preceding", "following", "unbounded", "current",
    "row", "filter", "where", "x", "all",
}


def event_columns(src):
    text = open(os.path.join(src, "tracedb", "event_columns.h"), encoding="utf-8").read()
    block = re.search(r"kEventColumns\s*=\s*\{\{(.*?)\}\};", text, re.S)
    if not block:
        sys.exit("check_event_selects: no kEventColumns list in tracedb/event_columns.h")
    return set(re.findall(r'\{\s*"(\w+)"\s*,', block.group(1)))


def split_top(s, sep=","):
    """Split s at `sep` outside parentheses."""
    out, depth, cur = [], 0, []
    for ch in s:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == sep and depth == 0:
            out.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    out.append("".join(cur))
    return out


def view_columns(src, view):
    sql = open(os.path.join(src, "schemas", "trace.sql"), encoding="utf-8").read()
    defs = re.findall(r"CREATE VIEW\s+(?:IF NOT EXISTS\s+)?" + view + r"\s+AS\s+SELECT\s+(.*?)\s+FROM\s", sql, re.S | re.I)
    if not defs:
        sys.exit("check_event_selects: no CREATE VIEW %s in schemas/trace.sql" % view)
    names = set()
    for item in split_top(defs[-1]):
        item = item.strip()
        m = re.search(r"\bAS\s+(\w+)$", item, re.I)
        names.add(m.group(1) if m else item.split(".")[-1])
    return names


def literal_segments(code):
    """The string literals of C++ source, joined into statements: adjacent literals are one
    string, code between them becomes SPLICE, and `;`, `{`, `}` end a statement."""
    segments, cur, gap = [], [], []
    i, n = 0, len(code)

    def close_gap():
        g = "".join(gap)
        gap.clear()
        return g

    while i < n:
        c = code[i]
        if code.startswith("//", i):
            j = code.find("\n", i)
            i = n if j < 0 else j
            continue
        if code.startswith("/*", i):
            j = code.find("*/", i + 2)
            i = n if j < 0 else j + 2
            continue
        if c == "'":  # a char literal ('"', '\'')
            m = re.match(r"'(\\.|[^'\\])'", code[i:])
            i += len(m.group(0)) if m else 1
            continue
        m = re.match(r'(?:u8|u|U|L)?R"([^(\s]*)\(', code[i:]) if c in "uULR" else None
        if m and (i == 0 or not (code[i - 1].isalnum() or code[i - 1] == "_")):
            end = code.find(")" + m.group(1) + '"', i + len(m.group(0)))
            body = code[i + len(m.group(0)):end if end >= 0 else n]
            g = close_gap()
            if cur and g.strip():
                cur.append(SPLICE)
            cur.append(body)
            i = n if end < 0 else end + len(m.group(1)) + 2
            continue
        if c == '"':
            j, buf = i + 1, []
            while j < n and code[j] != '"':
                if code[j] == "\\" and j + 1 < n:
                    buf.append(code[j:j + 2])
                    j += 2
                else:
                    buf.append(code[j])
                    j += 1
            g = close_gap()
            if cur and g.strip():
                cur.append(SPLICE)
            cur.append("".join(buf))
            i = j + 1
            continue
        if c in ";{}":
            if cur:
                segments.append("".join(cur))
            cur = []
            gap.clear()
        else:
            gap.append(c)
        i += 1
    if cur:
        segments.append("".join(cur))
    return segments


def strip_subqueries(s):
    """s without parenthesized sub-selects (their names are another table's)."""
    out, i = [], 0
    while i < len(s):
        if s[i] == "(" and re.match(r"\(\s*SELECT\b", s[i:], re.I):
            depth = 0
            while i < len(s):
                depth += s[i] == "("
                depth -= s[i] == ")"
                i += 1
                if depth == 0:
                    break
            out.append(" ?X ")
            continue
        out.append(s[i])
        i += 1
    return "".join(out)


def selects_from(sql, table):
    """(select list, alias, joined) for each `SELECT list FROM table` of sql at one nesting level."""
    for m in re.finditer(r"\bFROM\s+" + table + r"\b(?:\s+(?:AS\s+)?(\w+))?", sql, re.I):
        # Walk back to the SELECT of the same parenthesis depth.
        depth, j = 0, m.start() - 1
        start = None
        while j >= 0:
            ch = sql[j]
            if ch == ")":
                depth += 1
            elif ch == "(":
                if depth == 0:
                    break
                depth -= 1
            elif depth == 0 and re.match(r"SELECT\b", sql[j:j + 7], re.I) and (j == 0 or not sql[j - 1].isalnum()):
                start = j + 6
                break
            j -= 1
        if start is None:
            continue
        alias = m.group(1)
        if alias and alias.upper() in ("WHERE", "JOIN", "LEFT", "INNER", "ORDER", "GROUP", "LIMIT", "ON", "CROSS", "NATURAL"):
            alias = None
        rest = sql[m.end():]
        clause_end = re.search(r"\b(WHERE|ORDER|GROUP|LIMIT|UNION)\b|\)", rest, re.I)
        joined = re.search(r"\bJOIN\b|,", rest[:clause_end.start()] if clause_end else rest, re.I) is not None
        yield sql[start:m.start()], alias, joined


def bad_names(select_list, alias, joined, columns):
    bad = []
    body = strip_subqueries(select_list)
    for item in split_top(body):
        item = re.sub(r"'(?:[^']|'')*'", " ", item)
        item = re.sub(r"\bAS\s+\w+\s*$", " ", item.strip(), flags=re.I)
        for q, name, call in re.findall(r"(?:(\w+)\.)?([A-Za-z_]\w*)\s*(\(?)", item):
            if call or name.lower() in KEYWORDS or name.startswith("X"):
                continue
            if q:
                if alias and q == alias and name not in columns:
                    bad.append(q + "." + name)
                continue
            if not joined and name not in columns:
                bad.append(name)
    return bad


# Files whose row-column SELECT over events is not the code reading rows (with the reason).
ROW_SELECT_ALLOWED = {
    # The user's own query that the sqlguard bench times through the guard: a user writes SQL.
    "bench/sqlguard_bench.cpp",
}


def row_columns(select_list, alias, columns):
    """The `events` columns select_list names outside any call or sub-select: a row read by hand."""
    body, depth, top = strip_subqueries(select_list), 0, []
    for ch in body:
        depth += ch == "("
        if depth == 0:
            top.append(ch)
        depth -= ch == ")"
    names = []
    for item in split_top("".join(top)):
        item = re.sub(r"'(?:[^']|'')*'", " ", item)
        item = re.sub(r"\bAS\s+\w+\s*$", " ", item.strip(), flags=re.I)
        for q, name in re.findall(r"(?:(\w+)\.)?([A-Za-z_]\w*)", item):
            if name in columns and (not q or q == alias):
                names.append((q + "." if q else "") + name)
    return names


def scan(src, tables):
    problems, checked = [], 0
    for root, dirs, files in os.walk(src):
        rel_root = os.path.relpath(root, src)
        top = rel_root.split(os.sep)[0]
        if top in SKIP_DIRS or top in FOREIGN_SCHEMA_DIRS or top.startswith("build"):
            dirs[:] = []
            continue
        for f in files:
            if not f.endswith((".cpp", ".h", ".cc", ".hpp")):
                continue
            path = os.path.join(root, f)
            code = open(path, encoding="utf-8", errors="replace").read()
            for seg in literal_segments(code):
                for table, columns in tables.items():
                    for select_list, alias, joined in selects_from(seg, table):
                        checked += 1
                        rel = os.path.relpath(path, src)
                        for name in bad_names(select_list, alias, joined, columns):
                            problems.append("%s: SELECT ... FROM %s names `%s`, not a column of %s: %s" %
                                            (rel, table, name, table, " ".join(seg.split())[:200]))
                        by_hand = row_columns(select_list, alias, columns) if table == "events" else []
                        if by_hand and rel not in ROW_SELECT_ALLOWED:
                            problems.append("%s: SELECT ... FROM events lists row columns by hand (%s): use an "
                                            "EventColumns list (tracedb/event_columns.h): %s" %
                                            (rel, ", ".join(by_hand), " ".join(seg.split())[:200]))
    return problems, checked


def self_test():
    cols = {"id", "ts_ns", "dur_ns", "pid", "a0", "a1"}
    cases = [
        ('x("SELECT id, ts_ns, a7 FROM events WHERE id > 1");', ["a7"]),
        ('x("SELECT e.pid, e.nope, o.name FROM events e JOIN ops o ON o.id = e.op_id");', ["e.nope"]),
        ('x("SELECT " + cols.sql() + " FROM events");', []),
        ('x("SELECT count(*), max(dur_ns) AS m FROM events");', []),
        ('x("SELECT max(ts_ns) FROM (SELECT ts_ns FROM events WHERE pid = 1)");', []),
        ('x("SELECT ts_ns, " "a1 FROM events");', []),
        ('x("SELECT (SELECT name FROM ops) FROM events");', []),
        ('x("SELECT pid, size FROM events");', ["size"]),
    ]
    ok = True
    for code, want in cases:
        got = []
        for seg in literal_segments(code):
            for sl, alias, joined in selects_from(seg, "events"):
                got += bad_names(sl, alias, joined, cols)
        if got != want:
            print("self-test: %s: want %s, got %s" % (code, want, got))
            ok = False
    by_hand = [
        ('x("SELECT pid, ts_ns FROM events WHERE id > 1");', ["pid", "ts_ns"]),
        ('x("SELECT e.pid, o.name FROM events e JOIN ops o ON o.id = e.op_id");', ["e.pid"]),
        ('x("SELECT max(ts_ns) FROM (SELECT ts_ns FROM events WHERE pid = 1 LIMIT 9)");', ["ts_ns"]),
        ('x("SELECT count(*), max(dur_ns) AS m FROM events");', []),
        ('x("SELECT " + cols.sql() + " FROM events");', []),
        ('x("SELECT " + cols.sql() + ", 0, o.name FROM events e JOIN ops o ON o.id = e.op_id");', []),
    ]
    for code, want in by_hand:
        got = []
        for seg in literal_segments(code):
            for sl, alias, joined in selects_from(seg, "events"):
                got += row_columns(sl, alias, cols)
        if got != want:
            print("self-test (row columns): %s: want %s, got %s" % (code, want, got))
            ok = False
    return ok


def main():
    if sys.argv[1:] == ["--self-test"]:
        return 0 if self_test() else 1
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    if not self_test():
        return 1
    src = sys.argv[1]
    tables = {"events": event_columns(src), "v_calls": view_columns(src, "v_calls")}
    problems, checked = scan(src, tables)
    for p in problems:
        print(p)
    if checked == 0:
        print("check_event_selects: found no SELECT ... FROM events in the sources: the scan is broken")
        return 1
    print("check_event_selects: %d SELECTs over events/v_calls checked, %d problems (bad names, row columns by hand)" %
          (checked, len(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
