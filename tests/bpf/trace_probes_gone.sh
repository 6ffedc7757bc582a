#!/bin/sh
# Probes on and off in milliseconds (docs/COLLECTOR.md "Uprobe links"). Asserts:
#  1. while a trace runs, cudaLaunchKernel's first probed byte in a running job's memory is the
#     uprobe breakpoint (int3); the trace says when its probes went live and how long it took;
#  2. once `trace` has exited after SIGINT, the same byte is the library's own again (the probe
#     is out of the job's text: no cost left behind), and the trace said how long detaching took;
#  3. a second trace started at once does not wait for the first one's probes and records a
#     new job's calls from its first one (exact count).
# With multi-uprobe links (kernel 6.6+) attach and detach each take one link per library and
# program; CAUSEWAY_UPROBE_LINKS=perf runs the same checks on the per-probe fallback, where the
# detach is handed to a background process (check 2 then waits for it).
# Usage: trace_probes_gone.sh CAUSEWAY CW_WORKLOAD. Exits 77 (skipped) without root/BPF.
set -eu
bin=$1 workload=$2
. "$(dirname "$0")/trace_test_lib.sh"
need_tracing "eBPF uprobes"
command -v readelf >/dev/null || skip "needs readelf (binutils)"
make_tmp
lib=$(dirname "$workload")/libcudart.so.13
[ -f "$lib" ] || fail "no fake libcudart beside $workload"

# probe_byte PID: the byte at cudaLaunchKernel's probe site (past endbr64) in PID's memory,
# then the file's own byte there, as "MEM FILE" in hex.
probe_byte() {
  python3 - "$1" "$lib" <<'PY'
import os, re, subprocess, sys
pid, lib = int(sys.argv[1]), os.path.realpath(sys.argv[2])
syms = subprocess.run(["readelf", "-W", "--dyn-syms", lib], capture_output=True, text=True).stdout
vaddr = next(int(l.split()[1], 16) for l in syms.splitlines() if l.split()[-1:] == ["cudaLaunchKernel"])
segs = subprocess.run(["readelf", "-W", "-l", lib], capture_output=True, text=True).stdout
off = None
for l in segs.splitlines():
    f = l.split()
    if f[:1] == ["LOAD"]:
        o, v, fsz = int(f[1], 16), int(f[2], 16), int(f[4], 16)
        if v <= vaddr < v + fsz: off = vaddr - v + o
assert off is not None, "cudaLaunchKernel not in a LOAD segment"
data = open(lib, "rb").read()
if data[off:off + 4] == b"\xf3\x0f\x1e\xfa": off += 4  # the probe skips endbr64
ino = os.stat(lib).st_ino
addr = None
for l in open(f"/proc/{pid}/maps"):
    m = re.match(r"([0-9a-f]+)-([0-9a-f]+) \S+ ([0-9a-f]+) \S+ (\d+)", l)
    if m and int(m[4]) == ino:
        start, end, moff = int(m[1], 16), int(m[2], 16), int(m[3], 16)
        if moff <= off < moff + (end - start): addr = start + off - moff
assert addr is not None, "libcudart's code is not mapped in the job"
with open(f"/proc/{pid}/mem", "rb") as mem:
    mem.seek(addr)
    print(f"{mem.read(1)[0]:02x} {data[off]:02x}")
PY
}

# A job calling cudaLaunchKernel until killed.
"$workload" --ops launch --iterations 100000000 --rate 2000 > "$tmp/job.out" &
job=$!
pids="$pids $job"
sleep 0.3
set -- $(probe_byte $job)
[ "$1" = "$2" ] || fail "before any trace the probe site reads $1, the file has $2"
file_byte=$2
[ "$file_byte" != "cc" ] || fail "the file itself has int3 at the probe site"

# --- 1. probes live --------------------------------------------------------------------------
start_trace first "$tmp/a.db" --lib "$lib"
first=$tpid
set -- $(probe_byte $job)
[ "$1" = "cc" ] || fail "while tracing the probe site reads $1 (want the int3 breakpoint cc)"
attach_line=$(grep "attached .* probes to $lib" "$tmp/first.err") || fail "no attach line"
echo "probes live: $attach_line"

# --- 2. probes gone when trace has exited ----------------------------------------------------
sleep 0.5
kill -INT $first
rc=0; wait $first || rc=$?
[ $rc -eq 0 ] || fail "trace exited $rc after SIGINT"
if grep -q "handed to a background process" "$tmp/first.err"; then
  # The per-probe fallback: the detach finishes after trace exited, at most a few seconds.
  i=0
  while set -- $(probe_byte $job) && [ "$1" = "cc" ]; do
    i=$((i + 1)); [ $i -lt 300 ] || fail "perf-event probes still in the job's text 30 s after trace exited"
    sleep 0.1
  done
  echo "perf-event fallback: probes out of the text $((i * 100)) ms after trace exited"
else
  set -- $(probe_byte $job)
  [ "$1" = "$file_byte" ] || fail "trace has exited but the probe site reads $1 (the file has $file_byte)"
  grep "uprobes detached in" "$tmp/first.err" || fail "trace did not say when its probes were gone"
fi

# --- 3. a second trace at once records a new job's first call --------------------------------
start_trace second "$tmp/b.db" --lib "$lib"
second=$tpid
if grep -q "waited .* for a previous trace" "$tmp/second.err" && ! grep -q "handed to a background" "$tmp/first.err"; then
  fail "the second trace waited for the first one's probes: $(grep waited "$tmp/second.err")"
fi
"$workload" --ops launch --iterations 1000 > "$tmp/job2.out"
kill -INT $second
rc=0; wait $second || rc=$?
[ $rc -eq 0 ] || fail "second trace exited $rc"
python3 - "$tmp/b.db" <<'PY' || fail "second trace's calls"
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
rows = db.execute("SELECT pid, count(*) FROM v_calls WHERE op = 'cudaLaunchKernel' GROUP BY pid").fetchall()
assert any(n == 1000 for _, n in rows), f"launches per pid: {rows} (want a job with exactly 1000)"
print("second trace: 1000/1000 launches of the new job recorded")
PY
echo "PASS"
