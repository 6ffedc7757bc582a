#!/usr/bin/env bash
# Cost per traced CUDA call made from Python with Python frames on, as a ratio to the same call
# with native stacks only, in one run. A CPython (3.10-3.13) calls the real libcudart through
# ctypes from DEPTH nested Python functions; the script measures its own CPU time (user + sys:
# uprobe time is charged to the calling thread) per call, untraced, traced with native stacks
# only (--no-python-frames) and traced with Python frames. Root.
#
#   sudo bench/python_stack_cost.sh [BUILD_DIR] [PYTHON] [CALLS] [DEPTH]
#   sudo bench/python_stack_cost.sh build python3.12 200000 20
set -euo pipefail

build=${1:-build}
python=${2:-python3}
calls=${3:-200000}
depth=${4:-20}
cudart=${CUDA_HOME:-/usr/local/cuda}/lib64/libcudart.so.13
[[ -e $cudart ]] || { echo "no libcudart.so.13 under ${CUDA_HOME:-/usr/local/cuda}" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cat > "$work/load.py" <<'PY'
import ctypes, resource, sys, time
rt = ctypes.CDLL(sys.argv[1])
calls, depth = int(sys.argv[2]), int(sys.argv[3])
f = rt.cudaDeviceSynchronize
def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime
def loop(n):
    for _ in range(n):
        f()
def nest(d, n):
    return loop(n) if d == 0 else nest(d - 1, n)
nest(depth, 2000)      # warm-up: the tracer learns the process on its first call
time.sleep(0.5)
t0 = cpu()
nest(depth, calls)
print((cpu() - t0) / calls * 1e9)
PY

run() { "$python" "$work/load.py" "$cudart" "$calls" "$depth"; }
traced() {
  local ready="$work/ready.$1"
  "$build/causeway" trace --db "$work/$1.db" --quiet --no-diagnose --lib "$cudart" --ready-file "$ready" "${@:2}" \
    > "$work/$1.log" 2>&1 &
  local tp=$!
  for _ in $(seq 600); do [[ -e $ready ]] && break; sleep 0.1; done
  local ns; ns=$(run)
  kill -INT $tp; wait $tp || true
  echo "$ns"
}

base=$(run)
native=$(traced native --no-python-frames)
py=$(traced python)
pyframes=$(sqlite3 "$work/python.db" "SELECT count(*) FROM stacks WHERE frames LIKE '%load.py:%'")
echo "python: $("$python" -VV | head -1); calls: $calls; Python depth: $((depth + 2)) frames; $(nproc) CPUs"
printf 'untraced            %8.0f ns/call\n' "$base"
printf 'native stacks only  %8.0f ns/call (probe cost %6.0f ns)\n' "$native" "$(echo "$native - $base" | bc -l)"
printf 'with Python frames  %8.0f ns/call (probe cost %6.0f ns)\n' "$py" "$(echo "$py - $base" | bc -l)"
printf 'ratio per traced call (Python / native): %.2fx; probe cost ratio: %.2fx; stacks with Python frames: %s\n' \
  "$(echo "$py / $native" | bc -l)" "$(echo "($py - $base) / ($native - $base)" | bc -l)" "$pyframes"
