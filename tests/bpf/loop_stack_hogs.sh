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
MATCH=${3:-}
. "$(dirname "$0")/loop_common.sh"
loop_start "${2:-build}"
# case name, test binary, doctest test-case pattern (doctest splits a filter at commas: `?`)
CASES=("node test_requests_node_bpf fastify 5? a CPU hog*"
       "python test_requests_python_bpf uvicorn? a CPU hog*"
       "go test_requests_go_cpp_bpf Go net/http (static)? a CPU hog*"
       "cpp test_requests_go_cpp_bpf cpp-httplib? a CPU hog*")
names=()
for c in "${CASES[@]}"; do
  read -r name bin pattern <<< "$c"
  if [ -n "$MATCH" ] && ! grep -qE -- "$MATCH" <<< "$name"; then continue; fi
  [ -x "$BUILD/tests/$bin" ] || { echo "no $BUILD/tests/$bin: build it first" >&2; exit 2; }
  names+=("$name")
  for i in $(seq 1 "$N"); do
    log="$LOGS/$name.$i.log"
    loop_mark
    "$BUILD/tests/$bin" "--test-case=$pattern" -s > "$log" 2>&1
    rc=$?
    # A pattern that matches no case passes with nothing run: that is a failure here.
    [ $rc = 0 ] && ! grep -qE "test cases: +1 \| +1 passed" "$log" && rc=1
    said=$(grep -ho "cpu_contention: share [^,]*\|naming the hog\|culprit pid [0-9]*" "$log" | tr '\n' ' ')
    loop_count "$name" $rc "$log" "run $i $said"
  done
done
[ "${#names[@]}" -gt 0 ] || { echo "no case matches '$MATCH'" >&2; exit 2; }
loop_end "$N" "${names[@]}"
