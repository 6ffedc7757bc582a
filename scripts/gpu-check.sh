#!/usr/bin/env bash
# The gpu tier in one command (docs/GPU.md): `causeway check`, then each planted incident of
# tests/gpu/gpu_workload.py traced by `causeway trace` in its own session and DB, then explain /
# stats / requests / report on each, and verdict.json saying whether each incident was named
# right. Every step runs under `timeout` inside one overall deadline; a failed step is recorded
# and the rest still run.
#
#   scripts/gpu-check.sh [--fake] [--pkg DIR | --build DIR] [--out DIR] [--seconds S]
#                        [--phases a,b,...] [--budget S] [--python PY] [--no-bench] [--keep] [--which]
#
#   --fake      the fake libcudart (tests/testprogs) through ctypes instead of PyTorch + a GPU,
#               so CI runs the same script; needs root and BPF like any trace (else exit 77)
#   --pkg DIR   causeway from scripts/package.sh's folder (DIR/causeway, DIR/testprogs)
#   --build DIR causeway from a build folder (DIR/causeway, DIR/testprogs)
#               default: the checkout's ${BUILD_DIR:-build} when it holds causeway (with
#               --fake: and its testprogs), else dist/causeway-pkg, else causeway on PATH
#   --out DIR   where the results go: default $OUT when set, else ./gpu-check-out
#   --seconds S each incident's traced run (default 4; 3 with --fake)
#   --phases L  the incidents to run, comma-separated (default: cpu_hog,dataloader,launch_bound,
#               graph_replay,graph_recapture,inference)
#   --budget S  the whole run's deadline (default 450 s); later steps are skipped past it
#   --python PY the python3 that runs the workload (default: one with torch; /usr/bin/python3 with --fake)
#   --no-bench  skip the bench phase (after the incidents, ~2 minutes: the cudaLaunchKernel probe
#               cost and the request-tracing cost with server, load and tracer on separate cores;
#               its figures go into verdict.json "bench", docs/GPU.md "The bench phase")
#   --keep      keep the expanded results folder (its path is printed)
#   --which     print the causeway and testprogs folder it would use, and exit
#   -h, --help  this text
#
# The results folder gets at most 5 files: verdict.json, summary.log, check.json,
# results.tar.gz (every log, JSON and report, nvidia-smi -q, timings) and dbs.tar (the
# trace DBs xz-compressed, as many as fit in 15 MiB). Exit status: 0 every incident right, 1 not, 77 when
# --fake cannot run here (not root, no BTF).
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
mode=gpu pkg="" build="" out="${OUT:-}" seconds="" phases="" budget=450 py="${PYTHON:-}" keep=0 bench=1
# usage STATUS: the header's usage lines; on stdout for --help (exit 0), on stderr for a mistake.
usage() {
  if [ "$1" = 0 ]; then sed -n '8,29p' "$0" | sed 's/^# \{0,1\}//'; else sed -n '8,29p' "$0" | sed 's/^# \{0,1\}//' >&2; fi
  exit "$1"
}
which_only=0
while [ $# -gt 0 ]; do
  case "$1" in
    --fake) mode=fake ;;
    --pkg) pkg=${2:?}; shift ;;
    --build) build=${2:?}; shift ;;
    --out) out=${2:?}; shift ;;
    --seconds) seconds=${2:?}; shift ;;
    --phases) phases=${2:?}; shift ;;
    --budget) budget=${2:?}; shift ;;
    --python) py=${2:?}; shift ;;
    --no-bench) bench=0 ;;
    --keep) keep=1 ;;
    --which) which_only=1 ;;
    -h|--help) usage 0 ;;
    *) echo "gpu-check: unknown argument $1" >&2; usage 2 ;;
  esac
  shift
done
t_start=$(date +%s)
deadline=$((t_start + budget))
[ -n "$seconds" ] || { [ $mode = fake ] && seconds=3 || seconds=4; }
[ -n "$phases" ] || phases="cpu_hog,dataloader,launch_bound,graph_replay,graph_recapture,inference"
[ -n "$out" ] || out="$PWD/gpu-check-out"

# The causeway to run and the fake libraries beside it.
# The checkout's build comes first: right after scripts/run-demo.sh and scripts/run-tests.sh
# it holds both causeway and (for --fake) the fake libraries, where the installed causeway on
# PATH has no testprogs beside it.
checkout_build="$root/${BUILD_DIR:-build}"
case "${BUILD_DIR:-}" in /*) checkout_build=$BUILD_DIR ;; esac
usable_dir() {  # usable_dir DIR: DIR/causeway runs (and, with --fake, DIR/testprogs has the fakes)
  [ -x "$1/causeway" ] || return 1
  [ $mode = gpu ] || [ -f "$1/testprogs/libcudart.so.13" ]
}
if [ -z "$pkg" ] && [ -z "$build" ]; then
  if usable_dir "$checkout_build"; then build=$checkout_build
  elif usable_dir "$root/dist/causeway-pkg"; then pkg="$root/dist/causeway-pkg"
  elif [ -x "$checkout_build/causeway" ]; then build=$checkout_build; fi
fi
if [ -n "$pkg" ]; then cw=$(cd "$pkg" && pwd)/causeway testprogs=$(cd "$pkg" && pwd)/testprogs
elif [ -n "$build" ]; then cw=$(cd "$build" && pwd)/causeway testprogs=$(cd "$build" && pwd)/testprogs
else cw=$(command -v causeway || true) testprogs="$checkout_build/testprogs"; fi
if [ -z "$cw" ] || [ ! -x "$cw" ]; then
  echo "gpu-check: no causeway binary: build one (scripts/build.sh, or ninja -C build causeway causeway_testprogs)," \
    "or pass --pkg DIR / --build DIR" >&2
  exit 1
fi
if [ $which_only = 1 ]; then
  echo "causeway: $cw"
  echo "testprogs: $testprogs"
  exit 0
fi
# The fake libcudart is called from Debian's CPython in CI; on a GPU host, the python3 with torch.
if [ -z "$py" ]; then
  if [ $mode = fake ] && [ -x /usr/bin/python3 ]; then py=/usr/bin/python3; else py=$(command -v python3 || true); fi
fi
# Where python3 on PATH has no torch, the first python3 of a virtual environment under /opt that has.
if [ $mode = gpu ] && ! timeout 120 "${py:-false}" -c 'import torch' 2>/dev/null; then
  for cand in /opt/*/.venv/bin/python3 /opt/*/bin/python3 /usr/local/bin/python3; do
    [ -x "$cand" ] && timeout 120 "$cand" -c 'import torch' 2>/dev/null && { py=$cand; break; }
  done
fi
workload="$root/tests/gpu/gpu_workload.py"

if [ $mode = fake ]; then
  why=""
  [ "$(id -u)" = 0 ] || why="not root (tracing needs root)"
  [ -r /sys/kernel/btf/vmlinux ] || why="no kernel BTF (/sys/kernel/btf/vmlinux)"
  [ -n "$py" ] || why="no python3"
  [ -f "$testprogs/libcudart.so.13" ] || why="no fake libcudart at $testprogs/libcudart.so.13 (ninja -C ${build:-build} causeway_testprogs)"
  if [ -n "$why" ]; then echo "SKIP: gpu-check --fake: $why" >&2; exit 77; fi
fi

mkdir -p "$out" || exit 1
out=$(cd "$out" && pwd)
# The work folder is on the repo's disk, not /tmp (a tmpfs on some hosts): the DataLoader's
# reads must reach a block device.
work=$(mktemp -d "$root/.gpu-check-work.XXXXXX") || exit 1
res="$work/results"
mkdir -p "$res/env" "$res/phases"
summary="$res/summary.log"
: > "$res/timings.tsv"
children=""
cleanup() {
  local p
  for p in $children; do  # only those still ours (a reaped pid may have been reused)
    [ "$(awk '{print $4}' "/proc/$p/stat" 2>/dev/null)" = $$ ] && kill -KILL "$p" 2>/dev/null
  done
  if [ $keep = 1 ]; then echo "gpu-check: results kept in $res" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'log "interrupted"; exit 130' INT TERM

elapsed() { echo $(( $(date +%s) - t_start )); }
now_ms() { echo $(( $(date +%s%N) / 1000000 )); }
since_s() { local ms=$(( $(now_ms) - $1 )); printf '%d.%03d' $((ms / 1000)) $((ms % 1000)); }  # no bc on every host
log() { echo "[$(printf '%4s' "$(elapsed)")s] $*" | tee -a "$summary" >&2; }
# Seconds left before the deadline, capped at $1 (at least 1).
left() { local l=$((deadline - $(date +%s))); [ "$l" -lt "$1" ] || l=$1; [ "$l" -ge 1 ] || l=1; echo "$l"; }
# step NAME SECONDS CMD...: CMD under timeout, stdout to NAME.out, stderr to NAME.err (in $res
# unless NAME has a slash), its status and wall time in timings.tsv. Returns CMD's status.
step() {
  local name=$1 limit; limit=$(left "$2"); shift 2
  local f="$res/$name" t0 rc; t0=$(now_ms)
  timeout -k 5 "$limit" "$@" > "$f.out" 2> "$f.err"; rc=$?
  printf '%s\t%s\t%s\n' "$name" "$rc" "$(since_s "$t0")" >> "$res/timings.tsv"
  [ $rc -ne 124 ] && [ $rc -ne 137 ] || log "$name: timed out after ${limit}s"
  [ -s "$f.err" ] || rm -f "$f.err"
  return $rc
}
# phase_meta DIR KEY VALUE...: phase.json with string values.
phase_meta() {
  local d=$1; shift
  "$py" - "$d/phase.json" "$@" <<'EOF'
import json, sys
path, kv = sys.argv[1], sys.argv[2:]
try:
    doc = json.load(open(path))
except (OSError, ValueError):
    doc = {}
doc.update(dict(zip(kv[::2], kv[1::2])))
json.dump(doc, open(path, "w"))
EOF
}
wait_file() {  # wait_file FILE SECONDS PID: until FILE exists, PID dies (1) or time runs out (2)
  local f=$1 n=$(( $2 * 10 )) pid=$3
  while [ ! -e "$f" ]; do
    kill -0 "$pid" 2>/dev/null || return 1
    n=$((n - 1)); [ $n -gt 0 ] || return 2
    sleep 0.1
  done
}
wait_pid() {  # wait_pid PID SECONDS: its exit status, or 124 after SIGKILL when it outlived SECONDS
  local pid=$1 n=$(( $2 * 10 ))
  while kill -0 "$pid" 2>/dev/null; do
    n=$((n - 1))
    if [ $n -le 0 ]; then kill -KILL "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; return 124; fi
    sleep 0.1
  done
  wait "$pid"
}

log "gpu-check ($mode) with $cw, python ${py:-none}, $seconds s per incident, budget ${budget}s"

# --- The host: what a reader needs to interpret the verdicts.
step env/uname 10 uname -a
step env/os-release 10 cat /etc/os-release
step env/cpu 10 sh -c 'nproc; grep -m1 "model name" /proc/cpuinfo; free -m; cat /proc/loadavg'
step env/glibc 10 ldd --version
step env/btf 10 ls -la /sys/kernel/btf/vmlinux
step env/mounts 10 sh -c 'grep -E "tracefs|debugfs|bpf|cgroup" /proc/mounts; stat -f -c "%T" "$0"' "$work"
step env/sysctl 10 sh -c 'for f in /proc/sys/kernel/perf_event_paranoid /proc/sys/kernel/unprivileged_bpf_disabled /proc/sys/kernel/kptr_restrict; do echo "$f $(cat $f)"; done'
step env/causeway-version 20 "$cw" version
if [ -n "$pkg" ]; then step env/ldd 20 sh -c 'LD_LIBRARY_PATH="$0/lib" ldd "$0/bin/causeway"' "$(dirname "$cw")"
else step env/ldd 20 ldd "$cw"; fi
gpu_name="" driver=""
if command -v nvidia-smi > /dev/null; then
  step env/nvidia-smi-q 60 nvidia-smi -q
  step env/nvidia-smi 30 nvidia-smi --query-gpu=name,driver_version,memory.total,pci.bus_id --format=csv,noheader
  gpu_name=$(head -1 "$res/env/nvidia-smi.out" 2>/dev/null | cut -d, -f1)
  driver=$(head -1 "$res/env/nvidia-smi.out" 2>/dev/null | cut -d, -f2 | tr -d ' ')
else
  log "no nvidia-smi on PATH"
fi
[ -n "$driver" ] || driver=$(sed -n 's/.*Kernel Module *\([0-9.]*\).*/\1/p' /proc/driver/nvidia/version 2>/dev/null | head -1)
torch_info=""
if [ $mode = gpu ]; then
  step env/torch 120 "$py" -c 'import torch; print(torch.__version__, torch.version.cuda, torch.cuda.is_available(), torch.cuda.get_device_name(0) if torch.cuda.is_available() else "-"); import os, torch.cuda as c; print(os.path.dirname(torch.__file__))'
  torch_info=$(head -1 "$res/env/torch.out" 2>/dev/null)
  log "torch: ${torch_info:-not importable (see env/torch.err)}; GPU: ${gpu_name:-none}, driver ${driver:-?}"
fi

# tracefs: request tracing uses the syscall tracepoints when it is mounted (check: http_syscalls).
if [ "$(id -u)" = 0 ] && [ -d /sys/kernel/tracing ] && [ ! -e /sys/kernel/tracing/events ]; then
  mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null && log "mounted tracefs"
fi

# --- (1) causeway check
check_ready=false
step check-json 90 "$cw" check --json --db "$work/check.db" && check_ready=true
mv "$res/check-json.out" "$res/check.json" 2>/dev/null
step check 90 "$cw" check --db "$work/check.db"
log "check: $([ $check_ready = true ] && echo ready || echo NOT ready); $(grep -E '^(FAIL|WARN)' "$res/check.out" 2>/dev/null | tr '\n' ';')"

have_requests=false have_report=false
timeout 20 "$cw" requests --help > /dev/null 2>&1 && have_requests=true
timeout 20 "$cw" report --help > /dev/null 2>&1 && have_report=true
log "causeway requests: $have_requests, report: $have_report"

trace_skip=""
[ -r /sys/kernel/btf/vmlinux ] || trace_skip="no kernel BTF (/sys/kernel/btf/vmlinux): causeway's BPF programs need it (CO-RE)"
[ "$(id -u)" = 0 ] || trace_skip="not root: tracing needs root"
[ -n "$py" ] || trace_skip="no python3 for the workloads"
if [ $mode = gpu ] && [ -z "$trace_skip" ] && ! grep -q ' True ' <<< " $torch_info "; then
  trace_skip="PyTorch cannot use a GPU here: ${torch_info:-import failed}"
fi

# --- (2)(3) one traced session per planted incident
# The libraries the traced process has mapped, passed as --lib so they are probed before
# trace is ready (discovery would also find them, within a second).
mapped_libs() {
  grep -oE '/[^ ]*/(libcudart\.so[.0-9]*|libcuda\.so[.0-9]*|libnccl\.so[.0-9]*)$' "/proc/$1/maps" 2>/dev/null | sort -u
}
run_phase() {
  local ph=$1 d="$res/phases/$1" wargs=() targs=() wpid tpid rc lib
  mkdir -p "$d"
  if [ -n "$trace_skip" ]; then phase_meta "$d" skipped "$trace_skip"; return; fi
  if [ $(( deadline - $(date +%s) )) -lt $(( seconds + 40 )) ]; then
    phase_meta "$d" skipped "time budget (${budget}s) spent before this phase"; log "$ph: skipped (time budget)"; return
  fi
  log "$ph: starting"
  wargs=(--phase "$ph" --seconds "$seconds" --ready-file "$d/w.ready" --wait-file "$d/w.go" --result "$d/workload.json")
  [ $mode = fake ] && wargs+=(--backend fake --cudart "$testprogs/libcudart.so.13")
  # --fake runs in CI beside compilers and other tracers: the workload in a session of its own
  # at nice -10 (root), so a passing cc1plus does not make launch_bound read as cpu_contention.
  [ $mode = fake ] && wargs+=(--nice -10)
  [ "$ph" = dataloader ] && wargs+=(--data "$work/data.bin" --data-mib $([ $mode = fake ] && echo 16 || echo 64))
  local t_ready; t_ready=$(now_ms)
  "$py" "$workload" "${wargs[@]}" > "$d/workload.log" 2>&1 &
  wpid=$!; children="$children $wpid"
  wait_file "$d/w.ready" "$(left 150)" "$wpid"; rc=$?
  phase_meta "$d" workload_ready_s "$(since_s "$t_ready")"
  if [ $rc -ne 0 ]; then
    kill -KILL "$wpid" 2>/dev/null; wait "$wpid" 2>/dev/null
    phase_meta "$d" error "workload not ready ($([ $rc = 1 ] && echo exited || echo timed out)): $(tail -3 "$d/workload.log" | tr '\n' ' ')"
    log "$ph: workload failed before the trace:"; tail -15 "$d/workload.log" | sed 's/^/    /' | tee -a "$summary" >&2
    return
  fi
  if [ $mode = fake ]; then targs=(--lib "$testprogs/libcudart.so.13")
  else for lib in $(mapped_libs "$wpid"); do targs+=(--lib "$lib"); done; fi
  mapped_libs "$wpid" > "$d/libs.txt"
  local try
  t_ready=$(now_ms)
  for try in 1 2; do
    rm -f "$d/trace.db"* "$d/t.ready"
    # --foreground: our SIGTERM reaches trace once. Without it timeout also signals its process
    # group, and a second SIGTERM makes trace exit at once, before the diagnosis is stored.
    timeout --foreground -s TERM -k 15 "$(left $((seconds + 300)))" "$cw" trace --db "$d/trace.db" --quiet --ready-file "$d/t.ready" \
      --max-db 400m --pid "$wpid" "${targs[@]}" > "$d/trace.log" 2>&1 &
    tpid=$!; children="$children $tpid"
    wait_file "$d/t.ready" "$(left 90)" "$tpid"; rc=$?
    [ $rc -ne 0 ] || break
    kill -KILL "$tpid" 2>/dev/null; wait "$tpid" 2>/dev/null
    log "$ph: trace not ready (try $try, --lib ${targs[*]:-none}): $(tail -3 "$d/trace.log" | tr '\n' ' ')"
    cp "$d/trace.log" "$d/trace-try$try.log"
    targs=()  # second try: discovery alone, as a user would run it
  done
  if [ $rc -ne 0 ]; then
    kill -KILL "$wpid" 2>/dev/null; wait "$wpid" 2>/dev/null
    phase_meta "$d" error "causeway trace did not get ready: $(tail -3 "$d/trace.log" | tr '\n' ' ')"
    return
  fi
  phase_meta "$d" trace_ready_s "$(since_s "$t_ready")" trace_libs "${targs[*]}"
  local t0; t0=$(now_ms)
  touch "$d/w.go"
  wait_pid "$wpid" "$(left $((seconds + 90)))"; rc=$?
  phase_meta "$d" workload_rc "$rc" workload_s "$(since_s "$t0")"
  sleep 0.5  # the last records drain
  kill -TERM "$tpid" 2>/dev/null
  local t1; t1=$(now_ms)
  wait_pid "$tpid" "$(left 120)"; local trc=$?
  phase_meta "$d" trace_rc "$trc" trace_stop_s "$(since_s "$t1")"
  if [ $rc -ne 0 ]; then
    phase_meta "$d" error "workload exited $rc: $(tail -3 "$d/workload.log" | tr '\n' ' ')"
    log "$ph: workload exited $rc:"; tail -15 "$d/workload.log" | sed 's/^/    /' | tee -a "$summary" >&2
  fi
  [ $trc -eq 0 ] || log "$ph: trace exited $trc: $(tail -3 "$d/trace.log" | tr '\n' ' ')"
  if [ ! -s "$d/trace.db" ]; then phase_meta "$d" error "no trace DB (trace exited $trc)"; return; fi
  # --- (4) what causeway says about it
  step "phases/$ph/explain-json" 120 "$cw" explain --json --limit 200 --db "$d/trace.db"
  mv "$d/explain-json.out" "$d/explain.json"
  step "phases/$ph/explain" 120 "$cw" explain --limit 20 --db "$d/trace.db"
  step "phases/$ph/stats-json" 120 "$cw" stats --json --db "$d/trace.db"
  mv "$d/stats-json.out" "$d/stats.json"
  step "phases/$ph/stats" 120 "$cw" stats --db "$d/trace.db"
  if [ $have_requests = true ]; then
    step "phases/$ph/requests-json" 120 "$cw" requests --json --db "$d/trace.db"
    mv "$d/requests-json.out" "$d/requests.json"
  elif [ "$ph" = inference ]; then
    phase_meta "$d" requests_skipped "this causeway has no 'requests' command: the inference loop ran traced, requests not checked"
  fi
  [ $have_report = false ] || step "phases/$ph/report" 120 "$cw" report --db "$d/trace.db" -o "$d/report.html"
  log "$ph: done ($(grep -o '"cause":' "$d/explain.json" 2>/dev/null | wc -l) chains)"
}

# --- (4b) the bench phase: what tracing costs, with every role on cores of its own
# (docs/GPU.md "The bench phase"). bench/trace_cost: cudaLaunchKernel of the fake libcudart
# as traced by causeway vs an empty bpftrace uprobe+uretprobe pair vs untraced; the caller on
# one core, the tracer on another. bench/request_cost.py: a 1,000 req/s aiohttp server's
# served p50 untraced vs traced by causeway as shipped (the hook it picks), and an untraced
# process's socket syscalls; bench/tls_cost.py: the same rate over TLS (the libssl uprobes);
# the server, the load and the tracer each on their own cores (the method Coroot
# publishes). All are bounded; bench/bench_figures.py reads their
# figures by name into bench/bench.json, which the verdict carries as "bench".
# The cores: server 1, tracer 2, load 3-6 (the tracer and the bench on 0 and 1 with few CPUs;
# fewer than 4 CPUs cannot separate them, and bench.json says so).
run_bench() {
  local d="$res/bench" ncpu srv trc load bdir bpy wrapper cpus
  mkdir -p "$d"
  if [ $bench = 0 ]; then echo '{"skipped": "--no-bench"}' > "$d/bench.json"; return; fi
  if [ -n "$trace_skip" ]; then "$py" -c 'import json,sys; print(json.dumps({"skipped": sys.argv[1]}))' "$trace_skip" > "$d/bench.json"; return; fi
  if [ $(( deadline - $(date +%s) )) -lt 60 ]; then echo '{"skipped": "time budget spent before the bench phase"}' > "$d/bench.json"; log "bench: skipped (time budget)"; return; fi
  ncpu=$(nproc)
  if [ "$ncpu" -ge 7 ]; then srv=1 trc=2 load=3-6
  elif [ "$ncpu" -ge 4 ]; then srv=1 trc=2 load=3
  else srv=0 trc=$((ncpu > 1 ? 1 : 0)) load=$((ncpu > 1 ? 1 : 0)); fi
  cpus="{\"cpus\": $ncpu, \"server\": \"$srv\", \"tracer\": \"$trc\", \"load\": \"$load\", \"separate\": $([ "$ncpu" -ge 4 ] && echo true || echo false)}"
  bdir="$(dirname "$cw")/bench"
  [ -n "$pkg" ] && bdir="$pkg/bench"
  # the tracer, pinned: trace_cost starts it through --causeway
  wrapper="$work/causeway-pinned"
  printf '#!/bin/sh\nexec taskset -c %s %s "$@"\n' "$trc" "$cw" > "$wrapper"; chmod +x "$wrapper"
  log "bench: starting ($ncpu CPUs: server/caller $srv, tracer $trc, load $load)"
  local launch_args=(--calls 100000 --rounds 3) req_args=(--rounds 1 --seconds 8 --syscalls 300000) tls_args=(--rounds 2 --seconds 4)
  local launch_limit=80  # 3 rounds, causeway started in each (~11 s a round on a quiet host)
  # --fake runs in CI on small, busy hosts: a 1 s paced phase (the tracer's CPU per call) and
  # more time; at 50 s with the 3 s paced phase the launch bench was cut off on a loaded
  # 2-vCPU VM (it takes ~27 s there with these arguments).
  [ $mode = fake ] && launch_args=(--calls 30000 --rounds 1 --paced-seconds 1) launch_limit=90 \
    req_args=(--rounds 1 --seconds 3 --syscalls 100000) tls_args=(--rounds 1 --seconds 3)
  if [ ! -x "$bdir/trace_cost" ]; then echo "no $bdir/trace_cost (ninja trace_cost)" > "$d/launch.err"
  elif ! command -v bpftrace > /dev/null; then echo "no bpftrace on PATH: the launch bench compares with its bare probe pair (apt-get install bpftrace)" > "$d/launch.err"
  else
    step bench/launch "$launch_limit" env ${pkg:+LD_LIBRARY_PATH="$pkg/lib"} taskset -c "$srv" "$bdir/trace_cost" --op launch "${launch_args[@]}" --config "--no-stack" \
      --causeway "$wrapper" --lib "$testprogs/libcudart.so.13" || log "bench: launch bench exited $? (bench/launch.err)"
  fi
  # aiohttp: the workload's python, else Debian's
  bpy=$py
  "$bpy" -c 'import aiohttp' 2>/dev/null || bpy=/usr/bin/python3
  if [ ! -x "$bdir/syscall_cost" ]; then echo "no $bdir/syscall_cost (ninja syscall_cost)" > "$d/requests.err"
  elif ! "$bpy" -c 'import aiohttp' 2>/dev/null; then echo "no python3 with aiohttp (apt-get install python3-aiohttp)" > "$d/requests.err"
  else
    step bench/requests 70 "$bpy" "$root/bench/request_cost.py" --causeway "$cw" --syscall-cost "$bdir/syscall_cost" \
      --rate 1000 --connections 8 --hooks auto "${req_args[@]}" --server-cpus "$srv" --load-cpus "$load" --tracer-cpus "$trc" \
      || log "bench: request bench exited $? (bench/requests.err)"
  fi
  # TLS: a 1,000 req/s HTTPS server on the libssl its python maps, untraced and traced (the SSL
  # uprobes), the order rotating per round (bench/tls_cost.py, docs/BENCHMARKS.md "TLS plaintext")
  if ! command -v openssl > /dev/null; then echo "no openssl command: the TLS bench makes its certificate with it (apt-get install openssl)" > "$d/tls.err"
  else
    step bench/tls 90 "$bpy" "$root/bench/tls_cost.py" --causeway "causeway=$cw" --rate 1000 --connections 8 "${tls_args[@]}" \
      --server-cpus "$srv" --load-cpus "$load" --tracer-cpus "$trc" || log "bench: TLS bench exited $? (bench/tls.err)"
  fi
  "$py" "$root/bench/bench_figures.py" --launch "$d/launch.out" --launch-err "$d/launch.err" --requests "$d/requests.out" \
    --requests-err "$d/requests.err" --tls "$d/tls.out" --tls-err "$d/tls.err" --cpus "$cpus" > "$d/bench.json" 2> "$d/figures.err"
  [ -s "$d/figures.err" ] || rm -f "$d/figures.err"
  log "bench: $("$py" -c '
import json, sys
b = json.load(open(sys.argv[1]))
out = []
for name, c in (b.get("launch") or {}).get("configs", {}).items():
    if "ratio" in c: out.append("launch %s %.2fx the bare probes (%.3f us vs %.3f us), %+.3f us over the clock pair (%.3f us)" % (name, c["ratio"], c.get("causeway_us", 0), c.get("bare_probes_us", 0), c.get("added_over_clock_us", 0), c.get("clock_probes_us", 0)))
r = b.get("requests") or {}
if "auto_p50_ratio" in r: out.append("served p50 %.2fx traced (%s hook; %.3f ms vs %.3f ms), untraced socket syscalls %.2fx" % (r["auto_p50_ratio"], r.get("auto_hook_used"), r.get("auto_p50_ms", 0), r.get("bare_p50_ms", 0), r.get("auto_rw_ratio", 0)))
t = b.get("tls") or {}
if "causeway_p50_ratio" in t: out.append("TLS served p50 %.2fx traced (%.3f ms vs %.3f ms, p99 %.3f vs %.3f ms)" % (t["causeway_p50_ratio"], t.get("causeway_p50_ms", 0), t.get("bare_p50_ms", 0), t.get("causeway_p99_ms", 0), t.get("bare_p99_ms", 0)))
print("; ".join(out) or "no figures (see results/bench)")' "$d/bench.json" 2>&1)"
}

# --- (5) the verdict and the results, after every phase: whatever stops this script (a
# deadline outside it), the results folder holds the verdicts of the phases done so far.
# publish PHASE...: run.json, verdict.json and the results folder's small files.
publish() {
  GC_MODE=$mode GC_REQUESTED=$phases GC_GPU=$gpu_name GC_DRIVER=$driver GC_HOST=$(uname -n) GC_KERNEL=$(uname -r) \
  GC_CAUSEWAY=$(head -1 "$res/env/causeway-version.out" 2>/dev/null) GC_TORCH=$torch_info GC_READY=$check_ready \
  GC_SKIP=$trace_skip GC_SECONDS=$seconds GC_ELAPSED=$(elapsed) "$py" - "$res/run.json" "$@" <<'EOF'
import json, os, sys
e = os.environ
doc = {"mode": e["GC_MODE"], "phases": sys.argv[2:], "requested": e["GC_REQUESTED"].split(","), "gpu": e["GC_GPU"],
       "driver": e["GC_DRIVER"], "host": e["GC_HOST"], "kernel": e["GC_KERNEL"], "causeway": e["GC_CAUSEWAY"],
       "torch": e["GC_TORCH"], "check_ready": e["GC_READY"] == "true", "trace_skipped": e["GC_SKIP"] or None,
       "seconds_per_incident": float(e["GC_SECONDS"]), "elapsed_s": int(e["GC_ELAPSED"])}
json.dump(doc, open(sys.argv[1], "w"), indent=1)
EOF
  "$py" "$root/tests/gpu/gpu_verdict.py" "$res" > "$res/verdict.txt" 2> "$res/verdict.err"
  local rc=$?
  [ -s "$res/verdict.err" ] || rm -f "$res/verdict.err"
  cp "$res/verdict.json" "$res/summary.log" "$out/" 2>/dev/null
  cp "$res/check.json" "$out/" 2>/dev/null
  tar -C "$work" --exclude='*.db' --exclude='*.db-wal' --exclude='*.db-shm' -czf "$out/results.tar.gz" results 2>/dev/null
  return $rc
}
IFS=, read -r -a phase_list <<< "$phases"
done_phases=()
for ph in "${phase_list[@]}"; do
  run_phase "$ph"
  done_phases+=("$ph")
  publish "${done_phases[@]}"
done
run_bench
publish "${done_phases[@]}"; verdict_rc=$?
sed 's/^/  /' "$res/verdict.txt" | tee -a "$summary" >&2
[ -s "$res/verdict.err" ] && { log "verdict failed:"; tee -a "$summary" < "$res/verdict.err" >&2; }
[ -s "$res/verdict.json" ] || verdict_rc=1
log "finished in $(elapsed)s"

# Out: verdict.json, summary.log, check.json, results.tar.gz (all but the DBs), dbs.tar.
cp "$res/summary.log" "$out/"
tar -C "$work" --exclude='*.db' --exclude='*.db-wal' --exclude='*.db-shm' -czf "$out/results.tar.gz" results
timeout 180 "$py" - "$res/phases" "$out/dbs.tar" <<'EOF' >> "$summary" 2>&1
# Each DB xz-compressed, smallest first, as many as keep the archive under 15 MiB (one returned
# file's limit); `tar xf dbs.tar && unxz *.db.xz` gives them back.
import glob, io, lzma, os, sys, tarfile
dbs = sorted(glob.glob(os.path.join(sys.argv[1], "*", "trace.db")) + glob.glob(os.path.join(sys.argv[1], "*", "trace.db-wal")),
             key=os.path.getsize)
limit, total, kept, left_out = 15 << 20, 0, [], []
with tarfile.open(sys.argv[2], "w") as tar:
    for db in dbs:
        with open(db, "rb") as f:
            buf = lzma.compress(f.read(), preset=3)
        name = os.path.basename(os.path.dirname(db)) + db[db.index(".db"):] + ".xz"
        if total + len(buf) + 4096 > limit:
            left_out.append("%s (%.1f MiB xz)" % (name, len(buf) / 2**20))
            continue
        info = tarfile.TarInfo(name)
        info.size = len(buf)
        tar.addfile(info, io.BytesIO(buf))
        total += len(buf) + 1024
        kept.append("%s (%.1f MiB)" % (name, len(buf) / 2**20))
print("dbs.tar: %s%s" % (", ".join(kept) or "none", "; left out (too big): " + ", ".join(left_out) if left_out else ""))
EOF
cp "$summary" "$out/summary.log"
exit $verdict_rc
