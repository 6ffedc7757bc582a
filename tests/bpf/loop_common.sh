# What the stability loops (tests/bpf/loop_*.sh) share: the checks before a loop, the
# competing load, the tally of each case's runs and the verdict. Sourced, not run.
#   loop_start BUILD_DIR [always-load]   root and build checks, the environment CTest gives a
#                                        test, $LOGS, and one busy core when LOAD=1 (or always)
#   loop_count CASE RC LOG [NOTE]        one run: 0 passed, 77 skipped, else failed (log kept);
#                                        prints the run's line with the time since loop_mark
#   loop_mark                            the start of a run
#   loop_end N CASE...                   the tally per case; exits 0 only when every run passed

loop_start() {
  [ "$(id -u)" = 0 ] || { echo "needs root (real eBPF)" >&2; exit 2; }
  [ -d "$1" ] || { echo "no build folder $1: build first" >&2; exit 2; }
  BUILD=$(cd "$1" && pwd)
  # What CTest sets for a test (tests/CMakeLists.txt): the binary under test, the build and
  # source folders.
  export CAUSEWAY_BIN="$BUILD/causeway" CAUSEWAY_BUILD_DIR="$BUILD"
  CAUSEWAY_SOURCE_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
  export CAUSEWAY_SOURCE_DIR
  LOGS=$(mktemp -d "${TMPDIR:-/tmp}/causeway-loop.XXXXXX")
  # An early exit (no case matched) leaves no empty folder behind.
  trap 'rmdir "$LOGS" 2>/dev/null' EXIT
  if [ "${LOAD:-0}" = 1 ] || [ "${2:-}" = always-load ]; then
    yes > /dev/null &
    LOOP_LOAD_PID=$!
    trap 'kill "$LOOP_LOAD_PID" 2>/dev/null; rmdir "$LOGS" 2>/dev/null' EXIT
  fi
  declare -gA loop_pass loop_fail loop_skip
  loop_status=0
}

loop_mark() { loop_started=$(date +%s); }

loop_count() {
  local case=$1 rc=$2 log=$3 note=${4:-} r
  : "${loop_pass[$case]:=0}" "${loop_fail[$case]:=0}" "${loop_skip[$case]:=0}"
  if [ "$rc" = 0 ]; then loop_pass[$case]=$((loop_pass[$case] + 1)); rm -f "$log"; r=pass
  elif [ "$rc" = 77 ]; then loop_skip[$case]=$((loop_skip[$case] + 1)); r=skipped
  else loop_fail[$case]=$((loop_fail[$case] + 1)); loop_status=1; r="FAIL (log $log)"; fi
  echo "$case: $r in $(( $(date +%s) - loop_started ))s, load $(cut -d' ' -f1 /proc/loadavg)${note:+; $note}"
}

loop_end() {
  local n=$1 c
  shift
  echo "--- tally (N=$n, $([ -n "${LOOP_LOAD_PID:-}" ] && echo "one core kept busy" || echo "no added load"); load now $(cut -d' ' -f1-3 /proc/loadavg))"
  for c in "$@"; do
    echo "$c: ${loop_pass[$c]:-0}/$n passed, ${loop_fail[$c]:-0} failed, ${loop_skip[$c]:-0} skipped"
  done
  if [ "$loop_status" = 0 ]; then rm -rf "$LOGS"; else echo "logs of failed runs: $LOGS"; fi
  exit "$loop_status"
}
