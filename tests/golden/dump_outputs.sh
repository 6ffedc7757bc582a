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
#   S.mcp.jsonl     the MCP tools get_causal_chains and get_request_latency over stdio (results only)
#   S.perfetto.sha256  the digest of export --format perfetto
# Per TRACES_DIR/*.db T (copied and migrated first; the original is never opened):
#   T.explain.json, T.stats.json, and T.merged.explain.json / T.merged.stats.json (on
#   `merge -o M T`: the correlator re-run by merge).
# SCENARIOS="incident requests-prefill" dumps only those scenarios ("none": only the traces).
# A command's stderr and exit status go to NAME.err / NAME.rc only when it fails, so a failure
# shows in the diff too. Needs bash, coreutils and python3 (for the MCP transcript).
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
# The DBs are named relative to the work folder, so a path quoted in an answer is the same
# from one run to the next.
cd "$work" || exit 1
export CAUSEWAY_DB=unused.db

# run NAME CMD...: CMD's stdout to $out/NAME; stderr and status kept only when it fails.
run() {
  local name=$1 rc; shift
  "$@" > "$out/$name" 2> "$work/err"; rc=$?
  if [ $rc -ne 0 ]; then
    cp "$work/err" "$out/$name.err"
    echo "$rc" > "$out/$name.rc"
  fi
}

# mcp_dump DB NAME: the two tools' results over stdio, one JSON line each (the handshake left out:
# it carries the binary's version).
mcp_dump() {
  local db=$1 name=$2
  # stdin stays open until both answers are in: the server exits on EOF, and a tool call
  # still running then would go unanswered.
  timeout 120 python3 - "$bin" "$db" > "$out/$name.mcp.jsonl" 2> "$work/mcp.err" <<'PY'
import json, subprocess, sys
p = subprocess.Popen([sys.argv[1], "mcp", "--db", sys.argv[2]], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                     stderr=subprocess.DEVNULL, text=True)
def send(m):
    p.stdin.write(json.dumps(m) + "\n")
    p.stdin.flush()
send({"jsonrpc": "2.0", "id": 1, "method": "initialize",
      "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "dump", "version": "1"}}})
send({"jsonrpc": "2.0", "method": "notifications/initialized"})
send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "get_causal_chains", "arguments": {}}})
send({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "get_request_latency", "arguments": {}}})
got = {}
for line in p.stdout:
    if not line.strip():
        continue
    m = json.loads(line)
    if m.get("id") in (2, 3):
        got[m["id"]] = m  # answered as each call finishes: printed by id
    if len(got) == 2:
        break
p.stdin.close()
p.wait()
for i in sorted(got):
    print(json.dumps(got[i], sort_keys=True, ensure_ascii=False))
PY
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
for s in $scenarios; do
  db="$s.db"
  run "$s.demo.txt" "$bin" demo "$s" --db "$db" "${clock[@]}"
  rm -f "$out/$s.demo.txt"  # its text names the DB path; only a failure is kept
  run "$s.explain.json" "$bin" explain --json --db "$db"
  run "$s.stats.json" "$bin" stats --json --db "$db"
  case "$s" in requests*) run "$s.requests.json" "$bin" requests --json --db "$db" ;; esac
  mcp_dump "$db" "$s"
  # The Perfetto export is large: its digest stands for it.
  run "$s.perfetto.txt" "$bin" export --format perfetto --db "$db" -o "$s.perfetto.json"
  { [ -f "$s.perfetto.json" ] && sha256sum < "$s.perfetto.json"; } > "$out/$s.perfetto.sha256"
  rm -f "$out/$s.perfetto.txt" "$s.perfetto.json"
  rm -f "$db" "$db-wal" "$db-shm"
done

if [ -n "$traces" ]; then
  for src in "$traces"/*.db; do
    [ -f "$src" ] || continue
    t=$(basename "$src" .db)
    cp "$src" "$t.db"
    # An older schema is migrated in the copy (readers refuse it otherwise).
    run "$t.migrate.txt" "$bin" migrate --db "$t.db"
    rm -f "$out/$t.migrate.txt"
    run "$t.explain.json" "$bin" explain --json --db "$t.db"
    run "$t.stats.json" "$bin" stats --json --db "$t.db"
    run "$t.merge.txt" "$bin" merge -o "$t.merged.db" "$t.db"
    rm -f "$out/$t.merge.txt"
    run "$t.merged.explain.json" "$bin" explain --json --db "$t.merged.db"
    run "$t.merged.stats.json" "$bin" stats --json --db "$t.merged.db"
    rm -f "$t".*
  done
fi
echo "dump_outputs: $(ls "$out" | wc -l) files in $out"
