#!/usr/bin/env python3
"""No event argument is read by its position outside the code that defines or fills the slots.

An event's generic arguments a0..a5 mean what its op's layout says (tracedb/op_args.h): code
reads them by name through the typed views (`coll_args(e).comm`), and SQL names their column
with CW_ARG_COLUMN("stream", arg_layout::stream) or the column list of tracedb/event_columns.h.
This check fails on the two positional forms outside the files allowed below:
  - `x.a[...]` / `x->a[...]` in code (comments and literals blanked);
  - a bare `a0`..`a5` inside a string literal that reads like SQL (SELECT, WHERE, FROM, AND).

  check_positional_args.py SOURCE_DIR        exit 0 none, 1 with each one printed
  check_positional_args.py --self-test       the checker finds planted reads (issue #38)
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_event_selects  # noqa: E402  (literal_segments: the string literals of C++ source)
import check_function_length  # noqa: E402  (blank: source with comments and literals blanked)

SKIP_DIRS = ("tests", "build", ".git", "node_modules", "dist", "bench")
# Where the slots are defined, filled or mapped to columns: the kernel side fills them
# (bpf/), the decoders fill them from registers (collector/decode.cpp) or from another tool's
# trace (importers/), the column list and the row codec map them to columns and back
# (tracedb/event_columns.h, tracedb/event_row.h), the views read them by name
# (tracedb/op_args.h), and the correlator's row reader fills its events from the column list
# (diagnosis/correlator.cpp, diagnosis/event_row.h).
ALLOWED = (
    r"^bpf/",
    r"^collector/decode\.cpp$",
    # The send-wait record the request capture builds from a served connection's writes.
    r"^requests/send_waits\.cpp$",
    r"^importers/",
    r"^tracedb/event_columns\.h$",
    r"^tracedb/event_row\.h$",
    r"^tracedb/op_args\.h$",
    r"^diagnosis/correlator\.cpp$",
    r"^diagnosis/event_row\.h$",
    # The SQL examples the MCP schema tool shows the model: users query a0..a5 by name there
    # (v_host_events carries arg_names beside them).
    r"^mcp/tools/describe_schema\.cpp$",
)
# Files not yet under this check: none (issue #38 brought collector/session*, requests/ and the
# request causes of diagnosis/ under it).
PENDING = ()
CODE_READ = re.compile(r"(?:\.|->)\s*a\s*\[")
SQL_WORD = re.compile(r"\b(SELECT|WHERE|FROM|AND|ORDER BY|GROUP BY)\b", re.I)
SQL_ARG = re.compile(r"(?<![\w.$])a[0-5]\b")


def problems_in(rel, code):
    out = []
    text = check_function_length.blank(code)
    for m in CODE_READ.finditer(text):
        line = text.count("\n", 0, m.start()) + 1
        out.append("%s:%d: positional argument read `%s`: use the typed view of tracedb/op_args.h" %
                   (rel, line, code.split("\n")[line - 1].strip()[:120]))
    for seg in check_event_selects.literal_segments(code):
        if SQL_WORD.search(seg) and SQL_ARG.search(seg):
            out.append("%s: SQL names argument column `%s` by position: use CW_ARG_COLUMN (tracedb/op_args.h): %s" %
                       (rel, SQL_ARG.search(seg).group(0), " ".join(seg.split())[:160]))
    return out


def scan(src):
    found = []
    for rel, code in check_function_length.cpp_sources(src, SKIP_DIRS, ALLOWED + PENDING):
        found += problems_in(rel, code)
    return found


def self_test():
    cases = [
        ("int x = e.a[3];", 1),
        ("int x = e->a [1];", 1),
        ('q("SELECT ts_ns, a1 FROM events WHERE pid = 1");', 1),
        ('q("SELECT count(*) FROM events WHERE " + CW_ARG_COLUMN("stream", s) + " = 1");', 0),
        ("int a1 = 0; std::string s = \"READ \" + str(a1);", 0),
        ("// e.a[3] in a comment\nconst char* s = \"e.a[3]\";", 0),
        ("auto v = coll_args(e).comm;", 0),
    ]
    return check_function_length.cases_pass(cases, problems_in)


def report(src):
    found = scan(src)
    for p in found:
        print(p)
    print("check_positional_args: %d positional argument reads outside the slot code" % len(found))
    return 1 if found else 0


def main():
    return check_function_length.run_check(__doc__, self_test, report)


if __name__ == "__main__":
    sys.exit(main())
