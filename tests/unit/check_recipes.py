#!/usr/bin/env python3
"""The newcomer's three recipes in docs/ARCHITECTURE.md ("How to add each kind of thing") name
exactly the files the code makes them touch, and every existing instance has each piece.

A recipe bullet reads `**A request cause** (touches N files: `a`, `b`, ...): ...`. For each of
the three below, this checks that
  - the bullet's file list is the one the code demands (RECIPES: what the compiler, the
    generated registries and the tests refuse to go without, found by adding one of each on a
    scratch tree), and N is its length;
  - every instance in the repository has every piece: each request cause its module, its line
    in the registry, its colour class (present in the report's palette) and its words in
    docs/INFERENCE.md; each MCP tool its schema, its two calls in tests/unit/test_mcp_tools.cpp and
    its entry in docs/MCP.md; each shipped table its row in docs/FLEET.md.
A recipe that grows a file, or a file the code stops needing, fails here until the page says so.

  check_recipes.py SOURCE_DIR       exit 0 all true, 1 with each problem printed
  check_recipes.py --self-test      the parser finds a planted wrong list
"""
import glob
import os
import re
import sys

DOC = os.path.join("docs", "ARCHITECTURE.md")
RECIPES = {
    "A request cause": [
        "diagnosis/causes/request_<cause>.h",        # the module's descriptor
        "diagnosis/causes/request_<cause>.cpp",      # its detector, recommendation and chain words
        "diagnosis/causes/request_cause.h",          # the RequestCause enumerator (and kRequestCauseCount)
        "diagnosis/causes/request_registry.h",       # its include and its line in RequestCauses
        "exporters/report_svg.cpp",                  # its colour class: a switch the compiler checks
        "exporters/report_html.cpp",                 # that class in the palette (one per cause)
        "docs/INFERENCE.md",                         # the cause, its culprit keys
    ],
    "An MCP tool": [
        "mcp/tools/<name>.cpp",            # the handler, registered with CAUSEWAY_TOOL
        "schemas/tools/<name>.json",       # name, description, input and output schemas
        "tests/unit/test_mcp_tools.cpp",   # its call in kCalls (validated) and its largest call in `largest`
        "tests/e2e/lib/common.mjs",        # EXPECTED_TOOLS (the listed tools, compared) and its call in CALLS
        "tests/e2e/mcp_inspector.test.mjs",  # its largest call in LARGEST
        "docs/MCP.md",                     # the tool's entry
    ],
    "A shipped table": [
        "fleet/tables.cpp",  # one TableSpec: its SELECT, ClickHouse columns, sort key
        "docs/FLEET.md",     # its row in "Tables"
    ],
}


def recipe_lists(doc):
    """{recipe: (declared count, [backticked paths])} of the bullets of the form above."""
    out = {}
    for m in re.finditer(r"\*\*([^*]+)\*\* \(touches (\d+) files?: (.*?)\):", doc, re.S):
        out[m.group(1)] = (int(m.group(2)), re.findall(r"`([^`]+)`", m.group(3)))
    return out


def check_doc(doc):
    problems = []
    found = recipe_lists(doc)
    for name, want in RECIPES.items():
        if name not in found:
            problems.append("%s: no bullet `**%s** (touches N files: ...):`" % (DOC, name))
            continue
        count, got = found[name]
        if got != want:
            problems.append("%s: %s touches %s, the code demands %s" % (DOC, name, got, want))
        if count != len(got):
            problems.append("%s: %s says %d files and lists %d" % (DOC, name, count, len(got)))
    return problems


def read(src, rel):
    return open(os.path.join(src, rel), encoding="utf-8").read()


def check_request_causes(src):
    problems = []
    enum = re.search(r"enum class RequestCause[^{]*\{(.*?)\}", read(src, "diagnosis/causes/request_cause.h"), re.S)
    causes = re.findall(r"\b([a-z_]+)\s*,", enum.group(1) + ",") if enum else []
    if not causes:
        return ["diagnosis/causes/request_cause.h: no RequestCause enumerators found"]
    svg, html = read(src, "exporters/report_svg.cpp"), read(src, "exporters/report_html.cpp")
    inference = read(src, "docs/INFERENCE.md")
    for c in causes:
        colour = re.search(r"case RequestCause::%s:\s*return \"(c\d+)\"" % c, svg)
        if not colour:
            problems.append("exporters/report_svg.cpp: request cause %s has no colour class" % c)
        elif not re.search(r"svg \.%s\{" % colour.group(1), html) or not re.search(r"i\.%s\{" % colour.group(1), html):
            problems.append("exporters/report_html.cpp: the palette lacks %s (request cause %s)" % (colour.group(1), c))
        if "`%s`" % c not in inference:
            problems.append("docs/INFERENCE.md: request cause `%s` is not described" % c)
    registry = read(src, "diagnosis/causes/request_registry.h")
    for h in sorted(glob.glob(os.path.join(src, "diagnosis", "causes", "request_*.h"))):
        rel = os.path.relpath(h, src).replace(os.sep, "/")
        text = open(h, encoding="utf-8").read()
        if re.search(r"static constexpr RequestCause id\b", text) and '#include "%s"' % rel not in registry:
            problems.append("diagnosis/causes/request_registry.h: module %s is not included" % rel)
    return problems


def check_mcp_tools(src):
    problems = []
    calls, mcp_doc = read(src, "tests/unit/test_mcp_tools.cpp"), read(src, "docs/MCP.md")
    e2e_common, inspector = read(src, "tests/e2e/lib/common.mjs"), read(src, "tests/e2e/mcp_inspector.test.mjs")
    expected = re.search(r"EXPECTED_TOOLS = \[(.*?)\]", e2e_common, re.S)
    expected = set(re.findall(r"'(\w+)'", expected.group(1))) if expected else set()
    tools = set()
    for path in sorted(glob.glob(os.path.join(src, "mcp", "tools", "*.cpp"))):
        stem = os.path.splitext(os.path.basename(path))[0]
        m = re.search(r"^CAUSEWAY_TOOL\((\w+),", open(path, encoding="utf-8").read(), re.M)
        if not m or m.group(1) != stem:
            problems.append("mcp/tools/%s.cpp: registers no tool named %s (CAUSEWAY_TOOL(%s, ...))" % (stem, stem, stem))
            continue
        tools.add(stem)
        if not os.path.exists(os.path.join(src, "schemas", "tools", stem + ".json")):
            problems.append("schemas/tools/%s.json: missing (the tool's schemas)" % stem)
        # Two calls: in kCalls (validated against its outputSchema) and in `largest` (its
        # biggest answer within the reply budget); each test fails on a tool it does not call.
        if len(re.findall(r'\{"%s",' % stem, calls)) < 2:
            problems.append("tests/unit/test_mcp_tools.cpp: %s needs its call in kCalls and its largest call in "
                            "`largest`" % stem)
        # The e2e clients compare the listed tools with EXPECTED_TOOLS and call each from CALLS;
        # the Inspector test calls each with its LARGEST arguments.
        if stem not in expected or not re.search(r"^\s*%s: \{" % stem, e2e_common, re.M):
            problems.append("tests/e2e/lib/common.mjs: %s needs its name in EXPECTED_TOOLS and its call in CALLS" % stem)
        if not re.search(r"^\s*%s: \{" % stem, inspector, re.M):
            problems.append("tests/e2e/mcp_inspector.test.mjs: %s needs its largest call in LARGEST" % stem)
        if "`%s`" % stem not in mcp_doc:
            problems.append("docs/MCP.md: tool `%s` is not described" % stem)
    for path in sorted(glob.glob(os.path.join(src, "schemas", "tools", "*.json"))):
        stem = os.path.splitext(os.path.basename(path))[0]
        if stem not in tools:
            problems.append("schemas/tools/%s.json: no tool mcp/tools/%s.cpp" % (stem, stem))
    return problems


def check_shipped_tables(src):
    problems = []
    fleet_doc = read(src, "docs/FLEET.md")
    tables = re.findall(r'\{"(\w+)", (?:Snapshot|Append),', read(src, "fleet/tables.cpp"))
    if not tables:
        return ["fleet/tables.cpp: no TableSpec found"]
    for t in tables:
        if not re.search(r"^\|[^|\n]*`%s`" % t, fleet_doc, re.M):
            problems.append("docs/FLEET.md: shipped table `%s` has no row in \"Tables\"" % t)
    return problems


def check(src):
    problems = check_doc(read(src, DOC))
    problems += check_request_causes(src) + check_mcp_tools(src) + check_shipped_tables(src)
    for p in problems:
        print(p)
    print("check_recipes: %d recipes, %d problems" % (len(RECIPES), len(problems)))
    return 1 if problems else 0


def self_test():
    good = "".join("- **%s** (touches %d files: %s): text.\n" % (name, len(files), ", ".join("`%s`" % f for f in files))
                   for name, files in RECIPES.items())
    if check_doc(good):
        print("self-test: a right page fails: %s" % check_doc(good))
        return False
    bad = good.replace("`docs/MCP.md`", "`docs/MCP.md`, `mcp/CMakeLists.txt`", 1)
    if len(check_doc(bad)) != 2:  # the list and its count
        print("self-test: a wrong list passes: %s" % check_doc(bad))
        return False
    return True


def main():
    args = sys.argv[1:]
    if args == ["--self-test"]:
        return 0 if self_test() else 1
    if len(args) != 1:
        sys.exit(__doc__)
    if not self_test():
        return 1
    return check(args[0])


if __name__ == "__main__":
    sys.exit(main())
