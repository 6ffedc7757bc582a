# Shared by the trace_*.sh tests (sourced): needs $bin (causeway), $tmp, fail(); keeps pids
# to kill in $pids.
now_ms() { echo $(( $(date +%s%N) / 1000000 )); }

# start_trace NAME DB [flags...]: starts `causeway trace` on DB (stderr in $tmp/NAME.err) and
# waits until its probes are attached; sets tpid.
start_trace() {
  name=$1 db=$2; shift 2
  rm -f "$tmp/ready"
  "$bin" trace --db "$db" --no-diagnose --ready-file "$tmp/ready" "$@" 2> "$tmp/$name.err" &
  tpid=$!
  pids="${pids:-} $tpid"
  i=0
  until [ -e "$tmp/ready" ]; do
    i=$((i + 1)); [ $i -lt 600 ] || fail "$name: trace not ready in 60 s"
    kill -0 $tpid 2>/dev/null || fail "$name: trace exited before it was ready"
    sleep 0.1
  done
}
