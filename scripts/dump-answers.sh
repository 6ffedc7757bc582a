#!/usr/bin/env bash
# Dumps the answers a refactor must keep: `requests --json` (every metric, with and without a
# tenant filter), `explain --json` and the MCP tools get_request_latency / get_causal_chains,
# for every demo scenario and for each trace DB given, from one causeway binary. Run it with
# the binary before a change and after, then `diff -r` the two folders: a difference is
# either a bug the change fixed (say which) or a regression.
#   scripts/dump-answers.sh BINARY OUT_DIR [TRACE.db ...]
set -euo pipefail
bin=$(realpath "$1"); out=$2; shift 2
mkdir -p "$out"
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT

dump_db() {  # name db
  local name=$1 db=$2
  for m in ttft itl e2e; do
    "$bin" requests --db "$db" --metric "$m" --json >"$out/$name.requests.$m.json" 2>&1 || true
  done
  # A tenant filter: the first tenant the DB has (the evidence must not shrink with it).
  local tenant
  tenant=$(sqlite3 "$db" "SELECT tenant FROM requests ORDER BY tenant LIMIT 1" 2>/dev/null || true)
  if [ -n "$tenant" ]; then
    "$bin" requests --db "$db" --metric itl --tenant "$tenant" --json >"$out/$name.requests.itl.tenant.json" 2>&1 || true
  fi
  "$bin" explain --db "$db" --json >"$out/$name.explain.json" 2>&1 || true
  printf '%s\n' \
    '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"dump","version":"1"}}}' \
    '{"jsonrpc":"2.0","method":"notifications/initialized"}' \
    '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"get_request_latency","arguments":{"metric":"itl"}}}' \
    '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"get_causal_chains","arguments":{}}}' |
    timeout 60 "$bin" mcp --db "$db" 2>/dev/null | grep -v '"id":1,' >"$out/$name.mcp.jsonl" || true
}

for s in $("$bin" demo --list | awk '{print $1}'); do
  "$bin" demo "$s" --db "$work/$s.db" >/dev/null 2>&1 || continue
  dump_db "demo-$s" "$work/$s.db"
done
for t in "$@"; do
  cp "$t" "$work/trace.db"
  dump_db "trace-$(basename "$t" .db)" "$work/trace.db"
done
