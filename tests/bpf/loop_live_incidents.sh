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
MATCH=${3:-}
. "$(dirname "$0")/loop_common.sh"
loop_start "${2:-build}" always-load
for t in test_diagnosis_live test_diagnosis_live_until_stop; do
  [ -x "$BUILD/tests/$t" ] || { echo "no $BUILD/tests/$t: build it first (ninja -C $BUILD $t)" >&2; exit 2; }
done
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
names=()
for c in "${CASES[@]}"; do names+=("$(name "$c")"); done
# Runs outer, cases inner: each run meets every incident under the same load.
for i in $(seq 1 "$N"); do
  for c in "${CASES[@]}"; do
    log="$LOGS/run$i-$(name "$c").log"
    keep="$LOGS/run$i-$(name "$c")-db"
    loop_mark
    CAUSEWAY_KEEP_DB="$keep" "$BUILD/tests/${c%%:*}" -tc="${c#*:}" > "$log" 2>&1
    rc=$?
    [ $rc = 0 ] && rm -rf "$keep"
    loop_count "$(name "$c")" $rc "$log" "run $i"
  done
done
loop_end "$N" "${names[@]}"
