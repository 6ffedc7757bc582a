# Shared by the trace_*.sh tests, sourced right after `set -eu` and the arguments; needs $bin
# (causeway). Gives skip/fail, the host checks, a scratch dir $tmp whose processes ($pids) are
# killed on exit, and start_trace.
skip() { echo "SKIPPED: $*"; exit 77; }
# fail MSG: the failure, then the stderr of every trace started (each $tmp/*.err).
fail() {
  echo "FAIL: $*"
  for f in "${tmp:-/nonexistent}"/*.err; do [ -f "$f" ] && sed "s|^|  $(basename "$f"): |" "$f"; done
  exit 1
}
now_ms() { echo $(( $(date +%s%N) / 1000000 )); }

# need_tracing WHY: skips (77) unless root (for WHY), python3, and `causeway check` passes.
need_tracing() {
  [ "$(id -u)" -eq 0 ] || skip "needs root ($1)"
  command -v python3 >/dev/null || skip "needs python3"
  "$bin" check >/dev/null 2>&1 || skip "causeway check: host not ready for tracing"
}

# make_tmp: sets $tmp (a new directory) and $pids; on exit every pid in $pids is killed and
# reaped, then cleanup_more runs if the test defines it, then $tmp is removed.
make_tmp() {
  tmp=$(mktemp -d)
  pids=""
  trap trace_test_cleanup EXIT
  trap 'exit 1' INT TERM
}
trace_test_cleanup() {
  for p in $pids; do kill -9 "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  if command -v cleanup_more >/dev/null; then cleanup_more; fi
  rm -rf "$tmp"
}

# start_trace NAME DB [flags...]: starts `causeway trace` on DB (stderr in $tmp/NAME.err) and
# waits until its probes are attached; sets tpid. With --record-all: these tests count the
# calls stored as rows (probes gone, faults, a full disk), which fast launches counted in the
# kernel would not be.
start_trace() {
  name=$1 db=$2; shift 2
  rm -f "$tmp/ready"
  "$bin" trace --db "$db" --no-diagnose --record-all --ready-file "$tmp/ready" "$@" 2> "$tmp/$name.err" &
  tpid=$!
  pids="${pids:-} $tpid"
  i=0
  until [ -e "$tmp/ready" ]; do
    i=$((i + 1)); [ $i -lt 600 ] || fail "$name: trace not ready in 60 s"
    kill -0 $tpid 2>/dev/null || fail "$name: trace exited before it was ready"
    sleep 0.1
  done
}
