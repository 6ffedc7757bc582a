#!/usr/bin/env bash
# Stability of the request causes on the independent engine (tests/bpf/test_requests_engine_bpf):
# runs each planted incident N times and prints the tally per incident. Needs root (real
# eBPF) and a build with the test.
#   sudo tests/bpf/loop_engine_live.sh [N] [BUILD_DIR] [MATCH]   (default 10, build, every case)
# MATCH (a grep -E pattern) keeps only the scenarios it matches (prefill, late_rank, late_cpu,
# cpu_hog, quiet). With LOAD=1 in the environment another process keeps one core busy meanwhile.
# Exit status 0 only when every run passed; logs and trace DBs (<scenario>.<run>.db/) of failed
# runs are kept in the folder printed at the end.
set -u
N=${1:-10}
MATCH=${3:-}
. "$(dirname "$0")/loop_common.sh"
loop_start "${2:-build}"
BIN="$BUILD/tests/test_requests_engine_bpf"
[ -x "$BIN" ] || { echo "no $BIN: build it first (ninja -C $BUILD test_requests_engine_bpf causeway causeway_testprogs)" >&2; exit 2; }
SCENARIOS=()
for s in prefill late_rank late_cpu cpu_hog quiet; do
  if [ -z "$MATCH" ] || grep -qE -- "$MATCH" <<< "$s"; then SCENARIOS+=("$s"); fi
done
[ "${#SCENARIOS[@]}" -gt 0 ] || { echo "no scenario matches '$MATCH'" >&2; exit 2; }
for s in "${SCENARIOS[@]}"; do
  for i in $(seq 1 "$N"); do
    log="$LOGS/$s.$i.log"
    keep="$LOGS/$s.$i.db"
    mkdir -p "$keep"
    loop_mark
    CAUSEWAY_ENGINE_KEEP_DIR="$keep" "$BIN" "--test-case=engine $s:*" > "$log" 2>&1
    rc=$?
    [ $rc = 0 ] && rm -rf "$keep"
    loop_count "$s" $rc "$log" "run $i"
  done
done
loop_end "$N" "${SCENARIOS[@]}"
