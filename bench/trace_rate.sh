#!/usr/bin/env bash
# `causeway trace` against a workload calling the fake libcudart flat out: calls made vs calls
# recorded, every drop counter, the rate reached, and the collector's peak RSS (VmHWM) with its
# anon/file split sampled every 100 ms. Root.
#
#   sudo bench/trace_rate.sh [BUILD_DIR] [--threads T] [--iterations N] [--rate CALLS_PER_S] [-- trace flags]
#   sudo bench/trace_rate.sh build --rate 500000 -- --no-diagnose
#
# --rate paces the workload to that many calls/s in all (default: flat out, which on a small
# host is a moving target: the less CPU the collector takes, the faster the workload goes).
#
# Calls made = threads × iterations × 2 (stream_sync + launch per iteration). Needs jq and bc.
set -euo pipefail

build=${1:-build}
[[ $# -gt 0 ]] && shift
threads=2
iterations=1500000
rate=0
while [[ $# -gt 0 ]]; do
  case $1 in
    --threads) threads=$2; shift 2 ;;
    --iterations) iterations=$2; shift 2 ;;
    --rate) rate=$2; shift 2 ;;
    --) shift; break ;;
    *) echo "unknown flag $1" >&2; exit 2 ;;
  esac
done
extra=("$@")

cw=$build/causeway
wl=$build/testprogs/cw_workload
lib=$build/testprogs/libcudart.so.13
[[ -x $cw && -x $wl && -f $lib ]] || { echo "build first: $cw, $wl, $lib" >&2; exit 2; }
[[ $(id -u) == 0 ]] || { echo "needs root (eBPF)" >&2; exit 2; }

dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
db=$dir/trace.db

"$cw" trace --db "$db" --quiet --lib "$lib" --ready-file "$dir/ready" "${extra[@]}" >"$dir/trace.out" 2>&1 &
tp=$!
for _ in $(seq 200); do [[ -e $dir/ready ]] && break; sleep 0.05; done
[[ -e $dir/ready ]] || { echo "trace did not start:"; cat "$dir/trace.out"; exit 1; }

peak_anon=0 peak_file=0
sample() {
  local a f
  a=$(awk '/^RssAnon:/ {print $2}' /proc/$tp/status 2>/dev/null || echo 0)
  f=$(awk '/^RssFile:/ {print $2}' /proc/$tp/status 2>/dev/null || echo 0)
  (( a > peak_anon )) && peak_anon=$a
  (( f > peak_file )) && peak_file=$f
  return 0
}

start=$(date +%s.%N)
"$wl" --cudart "$lib" --threads "$threads" --rate "$(echo "$rate / $threads" | bc -l)" --iterations "$iterations" \
  --latency-us 0 --ops stream_sync,launch >"$dir/wl.out" 2>&1 &
wp=$!
while kill -0 $wp 2>/dev/null; do sample; sleep 0.1; done
wait $wp
end=$(date +%s.%N)
sample
hwm=$(awk '/^VmHWM:/ {print $2}' /proc/$tp/status)
kill -INT $tp
wait $tp || { echo "trace exited non-zero:"; cat "$dir/trace.out"; exit 1; }

made=$((threads * iterations * 2))
q() { "$cw" query --db "$db" --json "$1" | jq -r '.rows[] | map(tostring) | join(" = ")'; }
recorded=$(q "SELECT count(*) FROM events e JOIN ops o ON o.id = e.op_id WHERE o.name IN ('cudaStreamSynchronize','cudaLaunchKernel')")
echo "workload: $threads threads × $iterations iterations × 2 ops = $made calls in $(echo "$end - $start" | bc) s"
echo "rate: $(echo "$made / ($end - $start)" | bc) calls/s"
echo "recorded: $recorded ($((made - recorded)) missing)"
echo "counters:"
q "SELECT name, value FROM collector_stats WHERE name LIKE 'dropped%' OR name LIKE 'writer%' OR name = 'calls_received' ORDER BY name" | sed 's/^/  /'
echo "collector peak RSS: VmHWM $((hwm / 1024)) MiB (sampled peaks: anon $((peak_anon / 1024)) MiB, file $((peak_file / 1024)) MiB)"
