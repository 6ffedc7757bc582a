#!/usr/bin/env bash
# Dumps what one causeway binary answers on every demo scenario (and on the trace DBs of an
# optional folder), one file per question, so that two binaries can be compared byte for byte:
#
#   tests/golden/dump_outputs.sh BINARY OUTDIR [TRACES_DIR]
#   diff -r OUT_BEFORE OUT_AFTER          # empty when the change left the answers alone
#
# Per scenario S (from `BINARY demo --list`, written with its default seed and, when the binary has
# `demo --start-ns`, a fixed start time DEMO_START_NS, default 2026-01-01T00:00:00Z, so that the
# answers carry no wall-clock time and two binaries compare byte for byte):
#   S.explain.json  explain --json          S.stats.json    stats --json
#   S.requests.json requests --json         (requests-* scenarios)
#   S.mcp.jsonl     the MCP tools over stdio (results only): get_causal_chains, get_request_latency,
#                   get_tail_breakdown (each slow call's cause, from call_causes) and get_trace_stats
#   S.call_causes.tsv  the call_causes table (below)
#   S.perfetto.sha256  the digest of export --format perfetto
# Per TRACES_DIR/*.db T (copied and migrated first; the original is never opened), on the DB as
# stored and again on `merge -o M T` (T.merged.*: the correlator and the request chains re-run
# by this binary):
#   T.explain.json, T.stats.json, T.requests.json (when T holds requests), T.mcp.jsonl, and
#   T.call_causes.tsv (the call_causes table: every slow call's cause, in key order).
# So two binaries compare on the same DB files: a demo DB written twice differs, the writer
# being free to cut its batches where it likes (tests/golden/compare_binaries.sh writes them once).
# SCENARIOS="incident requests-prefill" dumps only those scenarios ("none": only the traces).
# A command's stderr and exit status go to NAME.err / NAME.rc only when it fails, so a failure
# shows in the diff too. Needs bash, coreutils and python3 (for the MCP transcript).
# JOBS=N dumps N DBs at a time (default 4: a dump mostly waits on the disk and on the MCP
# server's answers). PYTHON names the interpreter (default: python3's own executable, resolved
# once: a pyenv shim costs seconds a call).
set -u
bin=${1:?usage: dump_outputs.sh BINARY OUTDIR [TRACES_DIR]}
out=${2:?usage: dump_outputs.sh BINARY OUTDIR [TRACES_DIR]}
traces=${3:-}
[ -x "$bin" ] || { echo "dump_outputs: $bin is not an executable" >&2; exit 1; }
mkdir -p "$out" || exit 1
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
out=$(cd "$out" && pwd)
[ -z "$traces" ] || traces=$(cd "$traces" && pwd)
work=$(mktemp -d) || exit 1
trap 'rm -rf "$work"' EXIT
py=${PYTHON:-$(python3 -c 'import sys; print(sys.executable)')} || exit 1
jobs=${JOBS:-4}
# The DBs are named relative to the work folder, so a path quoted in an answer is the same
# from one run to the next.
cd "$work" || exit 1
export CAUSEWAY_DB=unused.db

# run NAME CMD...: CMD's stdout to $out/NAME; stderr and status kept only when it fails.
run() {
  local name=$1 rc; shift
  "$@" > "$out/$name" 2> "$work/$name.stderr"; rc=$?
  if [ $rc -ne 0 ]; then
    cp "$work/$name.stderr" "$out/$name.err"
    echo "$rc" > "$out/$name.rc"
  fi
  rm -f "$work/$name.stderr"
}

# The MCP tools whose answers are compared (their default arguments: the whole session).
mcp_tools="get_causal_chains get_request_latency get_tail_breakdown get_trace_stats"

# mcp_dump DB NAME: the tools' results over stdio, one JSON line each (the handshake left out:
# it carries the binary's version).
mcp_dump() {
  local db=$1 name=$2
  # stdin stays open until every answer is in: the server exits on EOF, and a tool call
  # still running then would go unanswered.
  # shellcheck disable=SC2086 # the tool names are words
  timeout 120 "$py" - "$bin" "$db" $mcp_tools > "$out/$name.mcp.jsonl" 2> /dev/null <<'PY'
import json, subprocess, sys
p = subprocess.Popen([sys.argv[1], "mcp", "--db", sys.argv[2]], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                     stderr=subprocess.DEVNULL, text=True)
def send(m):
    p.stdin.write(json.dumps(m) + "\n")
    p.stdin.flush()
send({"jsonrpc": "2.0", "id": 1, "method": "initialize",
      "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "dump", "version": "1"}}})
send({"jsonrpc": "2.0", "method": "notifications/initialized"})
tools = sys.argv[3:]
ids = range(2, 2 + len(tools))
for i, tool in zip(ids, tools):
    send({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": tool, "arguments": {}}})
got = {}
for line in p.stdout:
    if not line.strip():
        continue
    m = json.loads(line)
    if m.get("id") in ids:
        got[m["id"]] = m  # answered as each call finishes: printed by id
    if len(got) == len(tools):
        break
p.stdin.close()
p.wait()
for i in sorted(got):
    print(json.dumps(got[i], sort_keys=True, ensure_ascii=False))
PY
}

# call_causes_dump DB OUTFILE: the call_causes rows, op by name, in key order, tab-separated.
call_causes_dump() {
  "$py" - "$1" > "$2" 2> "$2.stderr" <<'PY' || cp "$2.stderr" "$2.err"
import sqlite3, sys
db = sqlite3.connect("file:" + sys.argv[1] + "?mode=ro", uri=True)
rows = db.execute("SELECT c.session_id, coalesce(o.name, c.op_id), c.pid, c.tid, c.ts_ns, c.gap, c.dur_ns, "
                  "c.lost_ns, c.cause, c.chain_id FROM call_causes c LEFT JOIN ops o ON o.id = c.op_id "
                  "ORDER BY c.session_id, c.op_id, c.pid, c.tid, c.ts_ns, c.gap")
for r in rows:
    print("\t".join(str(v) for v in r))
PY
  rm -f "$2.stderr"
}

# has_requests DB: true when the DB stores inference requests.
has_requests() {
  "$py" -c 'import sqlite3, sys
db = sqlite3.connect("file:" + sys.argv[1] + "?mode=ro", uri=True)
sys.exit(0 if db.execute("SELECT count(*) FROM requests").fetchone()[0] else 1)' "$1" 2> /dev/null
}

# dump_db DB NAME: what the binary answers on one stored DB.
dump_db() {
  local db=$1 name=$2
  run "$name.explain.json" "$bin" explain --json --db "$db"
  run "$name.stats.json" "$bin" stats --json --db "$db"
  if has_requests "$db"; then run "$name.requests.json" "$bin" requests --json --db "$db"; fi
  mcp_dump "$db" "$name"
  call_causes_dump "$db" "$out/$name.call_causes.tsv"
}

if [ -n "${SCENARIOS:-}" ]; then
  scenarios=$SCENARIOS
  [ "$scenarios" != none ] || scenarios=""
else
  scenarios=$("$bin" demo --list | awk 'NF { print $1 }')
  [ -n "$scenarios" ] || { echo "dump_outputs: $bin demo --list listed nothing" >&2; exit 1; }
fi
clock=()
if "$bin" demo --help 2>/dev/null | grep -q -- --start-ns; then
  clock=(--start-ns "${DEMO_START_NS:-1767225600000000000}")
fi
# dump_scenario S: the demo written by this binary, then its answers.
dump_scenario() {
  local s=$1 db="$1.db"
  run "$s.demo.txt" "$bin" demo "$s" --db "$db" "${clock[@]}"
  rm -f "$out/$s.demo.txt"  # its text names the DB path; only a failure is kept
  run "$s.explain.json" "$bin" explain --json --db "$db"
  run "$s.stats.json" "$bin" stats --json --db "$db"
  case "$s" in requests*) run "$s.requests.json" "$bin" requests --json --db "$db" ;; esac
  mcp_dump "$db" "$s"
  call_causes_dump "$db" "$out/$s.call_causes.tsv"
  # The Perfetto export is large: its digest stands for it.
  run "$s.perfetto.txt" "$bin" export --format perfetto --db "$db" -o "$s.perfetto.json"
  { [ -f "$s.perfetto.json" ] && sha256sum < "$s.perfetto.json"; } > "$out/$s.perfetto.sha256"
  rm -f "$out/$s.perfetto.txt"
}

# dump_trace SRC: a copy of a stored DB (migrated) and its merge, each answered.
dump_trace() {
  local src=$1 t
  t=$(basename "$src" .db)
  cp "$src" "$t.db"
  # An older schema is migrated in the copy (readers refuse it otherwise).
  run "$t.migrate.txt" "$bin" migrate --db "$t.db"
  rm -f "$out/$t.migrate.txt"
  run "$t.merge.txt" "$bin" merge -o "$t.merged.db" "$t.db"
  rm -f "$out/$t.merge.txt"
  dump_db "$t.db" "$t"
  dump_db "$t.merged.db" "$t.merged"
}

# in_own_folder NAME FUNCTION ARG: FUNCTION run in the background in a folder of its own (a DB
# keeps the same relative name whatever else runs), at most $jobs at a time.
in_own_folder() {
  local name=$1; shift
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n; done
  (mkdir -p "$work/$name.d" && cd "$work/$name.d" && "$@"; rm -rf "$work/$name.d") &
}

for s in $scenarios; do in_own_folder "demo-$s" dump_scenario "$s"; done
if [ -n "$traces" ]; then
  for src in "$traces"/*.db; do
    [ -f "$src" ] && in_own_folder "trace-$(basename "$src" .db)" dump_trace "$src"
  done
fi
wait
echo "dump_outputs: $(ls "$out" | wc -l) files in $out"
