#!/usr/bin/env bash
# Stability of the per-stack CPU hog cases (tests/bpf/requests_stacks_support.cpp `hog_case`,
# docs/INFERENCE.md "Tested stacks"): runs each N times and prints the tally per case. Needs
# root (real eBPF) and a build with the tests.
#   tests/bpf/loop_stack_hogs.sh [N] [BUILD_DIR] [MATCH]   (default 10, build, every case)
# MATCH (a grep -E pattern) keeps only the cases it matches (node, python, go, cpp). With
# LOAD=1 in the environment another process keeps one core busy meanwhile. Exit
# status 0 only when every run passed; logs of failed runs are kept in the folder printed at
# the end.
set -u
N=${1:-10}
BUILD=${2:-build}
MATCH=${3:-}
[ "$(id -u)" = 0 ] || { echo "needs root (real eBPF)" >&2; exit 2; }
BUILD=$(cd "$BUILD" && pwd)
export CAUSEWAY_BIN="$BUILD/causeway" CAUSEWAY_BUILD_DIR="$BUILD" CAUSEWAY_SOURCE_DIR=$(cd "$(dirname "$0")/../.." && pwd)
# case name, test binary, doctest test-case pattern (doctest splits a filter at commas: `?`)
CASES=("node test_requests_node_bpf fastify 5? a CPU hog*"
       "python test_requests_python_bpf uvicorn? a CPU hog*"
       "go test_requests_go_cpp_bpf Go net/http (static)? a CPU hog*"
       "cpp test_requests_go_cpp_bpf cpp-httplib? a CPU hog*")
LOGS=$(mktemp -d "${TMPDIR:-/tmp}/causeway-stack-hogs.XXXXXX")
if [ "${LOAD:-0}" = 1 ]; then
  yes > /dev/null &
  LOADPID=$!
  trap 'kill "$LOADPID" 2>/dev/null' EXIT
fi
declare -A pass fail skip
names=()
status=0
for c in "${CASES[@]}"; do
  read -r name bin pattern <<< "$c"
  if [ -n "$MATCH" ] && ! grep -qE -- "$MATCH" <<< "$name"; then continue; fi
  [ -x "$BUILD/tests/$bin" ] || { echo "no $BUILD/tests/$bin: build it first" >&2; exit 2; }
  names+=("$name")
  pass[$name]=0; fail[$name]=0; skip[$name]=0
  for i in $(seq 1 "$N"); do
    log="$LOGS/$name.$i.log"
    start=$(date +%s)
    "$BUILD/tests/$bin" "--test-case=$pattern" -s > "$log" 2>&1
    rc=$?
    # A pattern that matches no case passes with nothing run: that is a failure here.
    [ $rc = 0 ] && ! grep -qE "test cases: +1 \| +1 passed" "$log" && rc=1
    secs=$(( $(date +%s) - start ))
    load=$(cut -d' ' -f1 /proc/loadavg)
    said=$(grep -ho "cpu_contention: share [^,]*\|naming the hog\|culprit pid [0-9]*" "$log" | tr '\n' ' ')
    if [ $rc = 0 ]; then pass[$name]=$((pass[$name] + 1)); rm -f "$log"; r=pass
    elif [ $rc = 77 ]; then skip[$name]=$((skip[$name] + 1)); r=skipped
    else fail[$name]=$((fail[$name] + 1)); status=1; r="FAIL (log $log)"; fi
    echo "$name run $i: $r in ${secs}s, load $load; $said"
  done
done
[ "${#names[@]}" -gt 0 ] || { echo "no case matches '$MATCH'" >&2; exit 2; }
echo "--- tally (N=$N)"
for s in "${names[@]}"; do echo "$s: ${pass[$s]}/$N passed, ${fail[$s]} failed, ${skip[$s]} skipped"; done
[ $status = 0 ] && rm -rf "$LOGS"
[ $status = 0 ] || echo "logs of failed runs: $LOGS"
exit $status
