#!/usr/bin/env bash
# Stability of the live diagnosis: runs the planted live incidents (tests/bpf/test_diagnosis_live,
# and those that last until the trace is stopped, tests/bpf/test_diagnosis_live_until_stop) N
# times each while another process keeps one core busy, and prints the tally per incident.
# Needs root (real eBPF) and a build with both tests.
#   sudo tests/bpf/loop_live_incidents.sh [N] [BUILD_DIR] [MATCH]   (default 10, build, every case)
# MATCH (a grep -E pattern) keeps only the cases whose binary:name matches, e.g. 'until SIGINT'.
# Exit status 0 only when every run of every incident passed. Logs of failed runs are kept in
# the folder printed at the end, and so are the trace DBs of the failed until-SIGINT runs
# (CAUSEWAY_KEEP_DB, tests/bpf/test_diagnosis_live_until_stop.cpp).
set -u
N=${1:-10}
BUILD=${2:-build}
MATCH=${3:-}
for t in test_diagnosis_live test_diagnosis_live_until_stop; do
  [ -x "$BUILD/tests/$t" ] || { echo "no $BUILD/tests/$t: build it first (ninja -C $BUILD $t)" >&2; exit 2; }
done
[ "$(id -u)" = 0 ] || { echo "needs root (real eBPF)" >&2; exit 2; }
BUILD=$(cd "$BUILD" && pwd)
# What CTest sets for the test (tests/CMakeLists.txt): the binary under test and the build folder.
export CAUSEWAY_BIN="$BUILD/causeway" CAUSEWAY_BUILD_DIR="$BUILD"
# binary:test case
CASES=("test_diagnosis_live:cpu_contention*" "test_diagnosis_live:nccl_straggler*" "test_diagnosis_live:io_contention*"
       "test_diagnosis_live:quiet baseline*" "test_diagnosis_live_until_stop:until SIGINT: a CPU hog*"
       "test_diagnosis_live_until_stop:until SIGINT: page-fault*")
if [ -n "$MATCH" ]; then
  kept=()
  for c in "${CASES[@]}"; do if grep -qE -- "$MATCH" <<< "$c"; then kept+=("$c"); fi; done
  [ "${#kept[@]}" -gt 0 ] || { echo "no case matches '$MATCH'" >&2; exit 2; }
  CASES=("${kept[@]}")
fi
name() { local c=${1#*:}; c=${c%%\**}; echo "${c// /_}"; }
LOGS=$(mktemp -d "${TMPDIR:-/tmp}/causeway-live-loop.XXXXXX")

# The competing load: one busy core for the whole loop.
yes > /dev/null &
LOAD=$!
trap 'kill "$LOAD" 2>/dev/null' EXIT

declare -A pass fail
for c in "${CASES[@]}"; do pass[$c]=0; fail[$c]=0; done
for i in $(seq 1 "$N"); do
  for c in "${CASES[@]}"; do
    log="$LOGS/run$i-$(name "$c").log"
    keep="$LOGS/run$i-$(name "$c")-db"
    if CAUSEWAY_KEEP_DB="$keep" "$BUILD/tests/${c%%:*}" -tc="${c#*:}" > "$log" 2>&1; then
      pass[$c]=$((pass[$c] + 1))
      rm -rf "$log" "$keep"
    else
      fail[$c]=$((fail[$c] + 1))
    fi
    echo "run $i $(name "$c"): $([ -f "$log" ] && echo FAIL || echo ok)"
  done
done
rc=0
echo "tally over $N runs, with one core kept busy (load: $(cat /proc/loadavg)):"
for c in "${CASES[@]}"; do
  echo "  $(name "$c"): ${pass[$c]}/$N right"
  [ "${fail[$c]}" = 0 ] || rc=1
done
echo "logs of failed runs: $LOGS"
exit $rc
