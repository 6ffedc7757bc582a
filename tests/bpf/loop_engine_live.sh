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
BUILD=${2:-build}
MATCH=${3:-}
BIN="$BUILD/tests/test_requests_engine_bpf"
[ -x "$BIN" ] || { echo "no $BIN: build it first (ninja -C $BUILD test_requests_engine_bpf causeway causeway_testprogs)" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "needs root (real eBPF)" >&2; exit 2; }
BUILD=$(cd "$BUILD" && pwd)
export CAUSEWAY_BIN="$BUILD/causeway" CAUSEWAY_BUILD_DIR="$BUILD" CAUSEWAY_SOURCE_DIR=$(cd "$(dirname "$0")/../.." && pwd)
SCENARIOS=()
for s in prefill late_rank late_cpu cpu_hog quiet; do
  if [ -z "$MATCH" ] || grep -qE -- "$MATCH" <<< "$s"; then SCENARIOS+=("$s"); fi
done
[ "${#SCENARIOS[@]}" -gt 0 ] || { echo "no scenario matches '$MATCH'" >&2; exit 2; }
LOGS=$(mktemp -d "${TMPDIR:-/tmp}/causeway-engine-loop.XXXXXX")
if [ "${LOAD:-0}" = 1 ]; then
  yes > /dev/null &
  LOADPID=$!
  trap 'kill "$LOADPID" 2>/dev/null' EXIT
fi
declare -A pass fail skip
status=0
for s in "${SCENARIOS[@]}"; do
  pass[$s]=0; fail[$s]=0; skip[$s]=0
  for i in $(seq 1 "$N"); do
    log="$LOGS/$s.$i.log"
    start=$(date +%s)
    keep="$LOGS/$s.$i.db"
    mkdir -p "$keep"
    CAUSEWAY_ENGINE_KEEP_DIR="$keep" "$BIN" "--test-case=engine $s:*" > "$log" 2>&1
    rc=$?
    [ $rc = 0 ] && rm -rf "$keep"
    secs=$(( $(date +%s) - start ))
    load=$(cut -d' ' -f1 /proc/loadavg)
    if [ $rc = 0 ]; then pass[$s]=$((pass[$s] + 1)); rm -f "$log"; r=pass
    elif [ $rc = 77 ]; then skip[$s]=$((skip[$s] + 1)); r=skipped
    else fail[$s]=$((fail[$s] + 1)); status=1; r="FAIL (log $log)"; fi
    echo "$s run $i: $r in ${secs}s, load $load"
  done
done
echo "--- tally (N=$N)"
for s in "${SCENARIOS[@]}"; do echo "$s: ${pass[$s]}/$N passed, ${fail[$s]} failed, ${skip[$s]} skipped"; done
[ $status = 0 ] && rm -rf "$LOGS"
[ $status = 0 ] || echo "logs of failed runs: $LOGS"
exit $status
